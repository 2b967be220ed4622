"""Command-line interface: ``sdceval list|anonymize|evaluate|compare|run|hierarchy|tradeoff``.

``sdceval compare`` with no options runs the main job on the bundled ``census`` data:
MDAV, correlated noise, multiplicative noise and rank swapping matched to the linkage
risk of ``mdav:k=5``, ranked by propensity and EMD utility.
"""
from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

import pandas as pd

from sdceval import __version__
from sdceval.core.loaders import BUNDLED, open_dataset
from sdceval.core.errors import SdcevalError
from sdceval.core.fileio import protect, write_csv, write_json
from sdceval.catalog import MEASURES, METHODS, get_measure, get_method
from sdceval.core.registry import parse_assignments


# -- shared options ----------------------------------------------------------------
def _add_data_options(p: argparse.ArgumentParser, default: str | None = "census") -> None:
    g = p.add_argument_group("data")
    g.add_argument("--data", default=default, required=default is None,
                   help="bundled data set (%s) or a CSV/Parquet file" % ", ".join(BUNDLED)
                   + (f"; default {default}" if default else ""))
    g.add_argument("--schema", help="TOML file with column roles and hierarchies")
    g.add_argument("--qi", help="comma-separated quasi-identifier columns")
    g.add_argument("--sensitive", help="sensitive column")
    g.add_argument("--numeric", help="comma-separated numeric columns (perturbative methods)")
    g.add_argument("--label", help="class label column (for the classification metric)")


def _split(text):
    return [t.strip() for t in text.split(",") if t.strip()] if text else None


def _dataset(args):
    protect(args.data if Path(args.data).exists() else None, args.schema)
    return open_dataset(args.data, schema_file=args.schema, qi=_split(args.qi),
                        sensitive=args.sensitive, numeric=_split(args.numeric),
                        label=args.label)


def _say(args, msg: str) -> None:
    if not getattr(args, "quiet", False):
        print(msg, file=sys.stderr, flush=True)


def _fmt_table(df: pd.DataFrame) -> str:
    def fmt(v):
        if isinstance(v, float):
            return f"{v:.4g}"
        return str(v)
    return df.to_string(index=False, formatters={c: fmt for c in df.columns
                                                 if df[c].dtype == float})


# -- commands ----------------------------------------------------------------------
def cmd_list(args) -> int:
    if args.what == "methods":
        for spec in METHODS.all():
            print(f"{spec.name:22s} [{spec.family}{', random' if spec.random else ''}] "
                  f"{spec.description}")
            for p in spec.params:
                bounds = p.describe_bounds()
                extra = []
                if p.protection:
                    extra.append(f"protection {p.protection}"
                                 + (f" when {dict(p.when)}" if p.when else ""))
                if p.unit:
                    extra.append(f"unit: {p.unit}")
                if p.grid:
                    extra.append("grid " + ",".join(f"{g:g}" if isinstance(g, float) else str(g)
                                                    for g in p.grid))
                print(f"    {p.name:18s} {p.type.__name__:5s} {bounds:18s} default "
                      f"{p.default!s:8s} {p.description}"
                      + (f" ({'; '.join(extra)})" if extra else ""))
    elif args.what == "measures":
        for spec in MEASURES.all():
            direction = "larger = worse" if spec.larger_is_worse else "larger = better"
            print(f"{spec.name:20s} [{spec.category}; {direction}] {spec.description}")
            for p in spec.params:
                print(f"    {p.name:18s} {p.type.__name__:5s} {p.describe_bounds():18s} "
                      f"default {p.default!s:8s} {p.description}")
    else:
        for info in BUNDLED.values():
            print(f"{info.name:12s} {info.description}")
    return 0


def cmd_anonymize(args) -> int:
    ds = _dataset(args)
    spec = get_method(args.method)
    params = parse_assignments(args.param)
    t0 = time.perf_counter()
    rel = spec.apply(ds, params, seed=args.seed)
    dt = time.perf_counter() - t0
    out = write_csv(rel.data, args.out)
    summary = rel.summary()
    shown = {k: v for k, v in rel.params.items() if k in params or k == spec.tunable_for(
        rel.params).name}
    _say(args, f"{spec.name} {shown} on {ds.name} ({ds.n} records) in {dt:.2f} s"
         + (f"; {summary['classes']} classes" if "classes" in summary else "")
         + (f"; {summary['suppressed']} suppressed" if summary.get("suppressed") else ""))
    for w in rel.info.get("warnings", []):
        warnings.warn(w)  # main() prints each distinct warning once
    _say(args, f"wrote {out}")
    return 0


def cmd_evaluate(args) -> int:
    from sdceval.core.release_io import read_release
    ds = _dataset(args)
    protect(args.release)
    from sdceval.compare.ranking import parse_measure_list
    measures = parse_measure_list(args.measures)
    rel = read_release(ds, args.release)
    rows = []
    for label, (name, params) in measures.items():
        m = get_measure(name).evaluate(ds, rel, params)
        rows.append({**m.to_dict(), "label": label, "params": params})
        print(f"{label:20s} {m.value:.6g}" + "".join(
            f"  {k}={v:.4g}" if isinstance(v, float) else f"  {k}={v}"
            for k, v in m.details.items() if isinstance(v, (int, float, str))))
    if args.out:
        write_json({"data": ds.name, "release": str(args.release), "measurements": rows},
                   args.out, protected=[args.release])
        _say(args, f"wrote {args.out}")
    return 0


def cmd_compare(args) -> int:
    from sdceval.compare.ranking import compare, parse_measure_list
    from sdceval.experiments.plots import plot_risk_curves
    ds = _dataset(args)
    methods = _split(args.methods)
    risk_name, risk_params = args.risk_measure, {}
    if ":" in risk_name:
        from sdceval.compare.ranking import parse_reference
        risk_name, risk_params = parse_reference(risk_name)
    t0 = time.perf_counter()
    comp = compare(ds, methods, target=args.target, risk=risk_name,
                   risk_params=risk_params, utilities=parse_measure_list(args.utility),
                   seed=args.seed, repeats=args.repeats, progress=lambda m: _say(args, m))
    dt = time.perf_counter() - t0
    table = comp.table()
    print(f"\n{ds.name}: methods matched to {comp.risk_measure} = {comp.target:.4g}"
          + (f" (risk of {comp.reference})" if comp.reference else "") + f"; {dt:.1f} s")
    print(_fmt_table(table))
    out = Path(args.out)
    write_csv(table, out / "ranking.csv")
    write_json(comp.to_dict(), out / "results.json")
    plot_risk_curves(comp, out / "risk_curves.png")
    _say(args, f"wrote {out / 'ranking.csv'}, {out / 'results.json'}, {out / 'risk_curves.png'}")
    return 0


def cmd_run(args) -> int:
    from sdceval.experiments.runner import run_experiment
    protect(args.file)
    result = run_experiment(args.file, out=args.out, executor=args.executor,
                            workers=args.workers, reduced=args.reduced,
                            progress=lambda m: _say(args, m))
    print(result.summary())
    return 0


def cmd_hierarchy(args) -> int:
    ds = open_dataset(args.dataset)
    if args.column not in ds.frame.columns:
        from sdceval.core.errors import suggest
        raise SdcevalError(f"data set {ds.name!r} has no column {args.column!r}."
                           f"{suggest(args.column, ds.frame.columns)}")
    h = ds.hierarchy(args.column)
    if args.action == "export":
        if not args.out:
            raise SdcevalError("hierarchy export needs --out FILE")
        from sdceval.core.fileio import atomic_write
        atomic_write(args.out, lambda p: h.to_csv(p))
        _say(args, f"wrote {args.out}")
        return 0
    print(f"{args.column}: {h.n_leaves} leaves, {h.height} levels above the leaf"
          + (" (numeric intervals)" if h.numeric else ""))
    print(h.to_frame().to_string(index=False))
    return 0


def cmd_tradeoff(args) -> int:
    from sdceval.experiments.tradeoff import run_tradeoff
    ds = _dataset(args)
    result = run_tradeoff(ds, models=_split(args.models), method=args.method,
                          seed=args.seed, out=args.out, grids=args.grid,
                          measures=_split(args.measures), workers=args.workers,
                          progress=lambda m: _say(args, m))
    print(result)
    _say(args, "wrote " + ", ".join(str(f) for f in result.files))
    return 0


# -- parser ------------------------------------------------------------------------
def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="sdceval", description=__doc__.split("\n\n")[0])
    p.add_argument("--version", action="version", version=f"sdceval {__version__}")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress messages")
    sub = p.add_subparsers(dest="command", required=True)

    s = sub.add_parser("list", help="list methods, measures or bundled data sets")
    s.add_argument("what", choices=["methods", "measures", "datasets"])
    s.set_defaults(func=cmd_list)

    s = sub.add_parser("anonymize", help="apply one method and write the release")
    _add_data_options(s)
    s.add_argument("--method", required=True, help="method name (sdceval list methods)")
    s.add_argument("--param", action="append", default=[], metavar="NAME=VALUE",
                   help="method parameter, repeatable (e.g. --param k=5)")
    s.add_argument("--seed", type=int, default=0)
    s.add_argument("--out", required=True, help="output CSV (never an input file)")
    s.set_defaults(func=cmd_anonymize)

    s = sub.add_parser("evaluate", help="measure a release against the original")
    _add_data_options(s)
    s.add_argument("--release", required=True, help="release CSV written by anonymize")
    s.add_argument("--measures", default="linkage_risk,propensity,emd",
                   help="comma-separated measures, parameters after a colon "
                        "(e.g. propensity:model=linear,emd)")
    s.add_argument("--out", help="write the measurements as JSON")
    s.set_defaults(func=cmd_evaluate)

    s = sub.add_parser("compare", help="match methods to one risk level, rank utilities")
    _add_data_options(s)
    s.add_argument("--methods", default="mdav,noise,rank_swap,multiplicative_noise")
    s.add_argument("--risk-measure", default="linkage_risk",
                   help="risk measure, parameters after a colon "
                        "(e.g. linkage_risk:aggregate=mean)")
    s.add_argument("--target", default="mdav:k=5",
                   help="target risk: a number or a reference method:param=value")
    s.add_argument("--utility", default="propensity,emd",
                   help="utility measures (comma-separated, parameters after a colon)")
    s.add_argument("--seed", type=int, default=0)
    s.add_argument("--repeats", type=int, default=1,
                   help="average risk and utility over this many seeds")
    s.add_argument("--out", default="out/compare", help="output folder")
    s.set_defaults(func=cmd_compare)

    s = sub.add_parser("run", help="run a declarative experiment file (TOML)")
    s.add_argument("file")
    s.add_argument("--out", help="output folder (overrides the file's)")
    s.add_argument("--executor", choices=["serial", "processes", "dask"],
                   help="overrides the file's executor")
    s.add_argument("--workers", type=int, help="worker processes")
    s.add_argument("--reduced", action="store_true",
                   help="run the file's reduced grid (for CI)")
    s.set_defaults(func=cmd_run)

    s = sub.add_parser("hierarchy", help="show or export a generalization hierarchy")
    s.add_argument("action", choices=["show", "export"])
    s.add_argument("dataset")
    s.add_argument("column")
    s.add_argument("--out")
    s.set_defaults(func=cmd_hierarchy)

    s = sub.add_parser("tradeoff", help="P_loss / U_loss trade-off of privacy models "
                                        "(Li & Li 2009)")
    _add_data_options(s, default="adult")
    s.add_argument("--models", default="k,l,t,delta")
    s.add_argument("--method", default="generalization",
                   choices=["generalization", "bucketization", "both"])
    s.add_argument("--grid", action="append", default=[], metavar="MODEL=V1,V2,...",
                   help="override a model's grid, e.g. --grid k=10,100")
    s.add_argument("--measures", default="p_loss,u_loss,query_error",
                   help="measures per release (parameters after a colon)")
    s.add_argument("--workers", type=int, default=2, help="worker processes")
    s.add_argument("--seed", type=int, default=0)
    s.add_argument("--out", default="out/tradeoff")
    s.set_defaults(func=cmd_tradeoff)
    return p


def main(argv=None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            code = args.func(args)
        except SdcevalError as exc:
            code, error = 2, exc
        except KeyboardInterrupt:
            code, error = 130, "interrupted"
        except BrokenPipeError:  # output piped into e.g. `head`: not an error
            import os
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            code, error = 0, None
        else:
            error = None
    seen = set()
    for w in caught:  # each distinct warning once, after the progress messages
        msg = str(w.message)
        if msg not in seen and not issubclass(w.category, (DeprecationWarning,
                                                           PendingDeprecationWarning)):
            seen.add(msg)
            print(f"sdceval: warning: {msg}", file=sys.stderr)
    if error is not None:
        print(f"sdceval: error: {error}", file=sys.stderr)
    return code


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
