"""Command-line interface: ``sdceval list|anonymize|evaluate|compare|run|hierarchy|tradeoff|lattice``.

``sdceval compare`` with no options runs the main job on the bundled ``census`` data:
MDAV, correlated noise, multiplicative noise and rank swapping matched to the linkage
risk of ``mdav:k=5``, ranked by propensity and EMD utility.

The process (exit codes, signals, output order):

- exit 0 on success, 2 on a usage or input error (one line naming the fix), 130 on
  Ctrl-C (SIGINT), 143 on SIGTERM, 141 when stdout is a closed pipe (``| head``), the
  codes a shell reports for a process ended by those signals.
- SIGTERM is turned into an exception, like Ctrl-C, so every ``finally`` block runs:
  partial output files are removed (`sdceval.core.fileio`), worker processes are killed
  (`sdceval.experiments.executor`); child processes still alive afterwards are
  terminated.  One exception: inside a method or measure running on more than one
  thread (`sdceval.core.threads.parallel_native`), scipy's ``workers=`` threads keep
  running native code that unwinding would pull memory from under (the segfault of
  ``cKDTree.query`` on Ctrl-C), so the process ends there and then with ``os._exit``
  (no file is being written and no executor runs inside a method or measure); the same
  if helper threads are still alive after the clean-up.  A second signal during the
  clean-up exits at once, after removing partial files.
- result files are written before anything is printed on stdout, so ``| head`` never
  loses them.
- heavy libraries (pandas, scikit-learn, POT, matplotlib) are imported by the commands
  that use them, so ``sdceval --help`` and ``sdceval list`` start fast.
"""
from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
import time
import warnings
from contextlib import contextmanager
from pathlib import Path

from sdceval.core import interrupts, threads
from sdceval.core.errors import SdcevalError, plain

BUNDLED_NAMES = ("census", "eia", "adult", "adult-train", "adult-arx")  # = loaders.BUNDLED
EXIT_ERROR, EXIT_SIGINT, EXIT_SIGPIPE, EXIT_SIGTERM = 2, 130, 141, 143


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised in the main thread like Ctrl-C's ``KeyboardInterrupt`` so that
    clean-up code written for an interrupt runs for both."""


# -- shared options ----------------------------------------------------------------
class _HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Shows every option's default (``(default: ...)``) unless it has none to show."""

    def _get_help_string(self, action):
        text = action.help or ""
        d = action.default
        if ("default" in text or not action.option_strings or d is None or d is False
                or d == [] or d is argparse.SUPPRESS):
            return text
        return text + " (default: %(default)s)"


def _add_common_options(p: argparse.ArgumentParser, top: bool) -> None:
    """``--threads`` and ``--quiet``, accepted before or after the command (the
    command's copies default to SUPPRESS so that they do not undo the top-level one)."""
    keep = {} if top else {"default": argparse.SUPPRESS}
    p.add_argument("--threads", type=int, metavar="N", **({"default": None} if top else keep),
                   help="CPU threads sdceval may use, shared by worker processes "
                        f"(0 = all cores) (default: ${threads.ENV} if set, else "
                        f"{threads.DEFAULT})")
    p.add_argument("-q", "--quiet", action="store_true", **keep,
                   help="no progress messages or notes on stderr")


def _add_data_options(p: argparse.ArgumentParser, default: str | None = "census",
                      keep: bool = False) -> None:
    g = p.add_argument_group("data")
    g.add_argument("--data", default=default, required=default is None,
                   help="bundled data set (%s) or a CSV/Parquet file"
                        % ", ".join(BUNDLED_NAMES))
    roles = " (default: the schema's; for a bundled data set its own roles)"
    g.add_argument("--schema", help="TOML file with column roles and hierarchies (see "
                                    "README, 'Your own data') (default: none: roles from "
                                    "the options below, or inferred from the data)")
    g.add_argument("--qi", help="comma-separated quasi-identifier columns" + roles)
    g.add_argument("--sensitive", help="sensitive column" + roles)
    g.add_argument("--numeric", help="comma-separated numeric columns (perturbative "
                                     "methods)" + roles)
    g.add_argument("--label", help="class label column (for the classification metric)"
                                   + roles)
    if keep:
        g.add_argument("--keep", metavar="COLS",
                       help="comma-separated columns to publish unchanged beside what the "
                            "method protects (role passthrough); every other column is "
                            "dropped from the release (default: none)")


def _add_suppression_options(p: argparse.ArgumentParser) -> None:
    """The lattice's suppression rule and limit (``lattice`` and ``pbg``)."""
    p.add_argument("--rule", default="dewri", choices=["dewri", "arx"],
                   help="suppression rule: dewri (Dewri et al. 2010 §6) or arx (suppress "
                        "every violating class)")
    p.add_argument("--max-suppression", type=float, default=0.01,
                   help="suppression limit: a fraction of the records if < 1, else a count")


def _split(text):
    return [t.strip() for t in text.split(",") if t.strip()] if text else None


def _dataset(args):
    """Open the data set of the data options, protect every file it was read from
    against being overwritten, and print its notes (e.g. the roles inferred)."""
    from sdceval.core.fileio import protect
    from sdceval.core.loaders import open_dataset
    protect(args.data if Path(args.data).exists() else None, args.schema)
    ds = open_dataset(args.data, schema_file=args.schema, qi=_split(args.qi),
                      sensitive=args.sensitive, numeric=_split(args.numeric),
                      label=args.label, passthrough=_split(getattr(args, "keep", None)))
    protect(*ds.input_files)
    for note in ds.messages:
        _say(args, f"note: {note}")
    return ds


def _say(args, msg: str) -> None:
    if not getattr(args, "quiet", False):
        print(msg, file=sys.stderr, flush=True)


def _fmt_table(df) -> str:
    def fmt(v):
        if isinstance(v, float):
            return f"{v:.4g}"
        return str(v)
    return df.to_string(index=False, formatters={c: fmt for c in df.columns
                                                 if df[c].dtype == float})


# -- commands ----------------------------------------------------------------------
def direction_words(spec) -> str:
    """What a larger value of a measure means, in words (``sdceval list measures``),
    from its registered ``direction`` and category.

    linkage_risk is a distance (records far from their originals are hard to link), so
    larger means less risk; utility and information-loss measures are losses; privacy
    checks report the model's parameter the release attains (larger k or ℓ means more
    protection, larger t or δ less)."""
    lower_better = spec.direction == "lower_is_better"
    if spec.category == "risk":
        if lower_better:
            return "larger = more risk"
        return ("larger distance = less risk" if "distance" in spec.description
                else "larger = less risk")
    if spec.category in ("utility", "information_loss"):
        return f"larger = {'more' if lower_better else 'less'} loss"
    if spec.category == "privacy":
        return f"larger = {'less' if lower_better else 'more'} protection"
    return "smaller = better" if lower_better else "larger = better"


def cmd_list(args) -> int:
    # each list imports only its own plugins (the measures load more of scipy)
    if args.what == "methods":
        import sdceval.methods  # noqa: F401  (registers the methods)
        from sdceval.core.registry import METHODS
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
        import sdceval.measures  # noqa: F401  (registers the measures)
        from sdceval.core.registry import MEASURES
        for spec in MEASURES.all():
            print(f"{spec.name:20s} [{spec.category}; {direction_words(spec)}] "
                  f"{spec.description}")
            for p in spec.params:
                print(f"    {p.name:18s} {p.type.__name__:5s} {p.describe_bounds():18s} "
                      f"default {p.default!s:8s} {p.description}")
    else:
        from sdceval.core.loaders import BUNDLED
        for info in BUNDLED.values():
            print(f"{info.name:12s} {info.description}")
    return 0


def cmd_anonymize(args) -> int:
    from sdceval.catalog import get_method
    from sdceval.core.fileio import write_csv
    from sdceval.core.registry import parse_assignments
    ds = _dataset(args)
    spec = get_method(args.method)
    params = parse_assignments(args.param)
    t0 = time.perf_counter()
    rel = spec.apply(ds, params, seed=args.seed)
    dt = time.perf_counter() - t0
    summary = rel.summary()
    shown = {k: plain(v) for k, v in rel.params.items()
             if k in params or k == spec.tunable_for(rel.params).name}
    _say(args, f"{spec.name} {shown} on {ds.name} ({ds.n} records) in {dt:.2f} s"
         + (f"; {summary['classes']} classes" if "classes" in summary else "")
         + (f"; {summary['suppressed']} suppressed" if summary.get("suppressed") else ""))
    if rel.dropped:
        _say(args, f"dropped {len(rel.dropped)} column(s) that {spec.name} does not protect: "
                   f"{', '.join(map(str, rel.dropped))} (publish a column unchanged with "
                   "--keep or 'passthrough' in the schema)")
    for w in rel.info.get("warnings", []):
        warnings.warn(w)  # main() prints each distinct warning once
    _say(args, f"writing {args.out}")
    out = write_csv(rel.data, args.out)
    _say(args, f"wrote {out}")
    return 0


def cmd_evaluate(args) -> int:
    from sdceval.catalog import get_measure
    from sdceval.compare.ranking import parse_measure_list
    from sdceval.core.fileio import protect, write_json
    from sdceval.core.release_io import read_release
    ds = _dataset(args)
    protect(args.release)
    measures = parse_measure_list(args.measures)
    rel = read_release(ds, args.release)
    rows, lines = [], []
    for label, (name, params) in measures.items():
        _say(args, f"measuring {label} ...")
        m = get_measure(name).evaluate(ds, rel, params)
        rows.append({**m.to_dict(), "label": label, "params": params})
        lines.append(f"{label:20s} {m.value:.6g}" + "".join(
            f"  {k}={v:.4g}" if isinstance(v, float) else f"  {k}={plain(v)}"
            for k, v in m.details.items() if isinstance(v, (int, float, str))))
    if args.out:  # the file first: a closed stdout must not lose it
        write_json({"data": ds.name, "release": str(args.release), "measurements": rows},
                   args.out, protected=[args.release])
        _say(args, f"wrote {args.out}")
    print("\n".join(lines))
    return 0


def cmd_compare(args) -> int:
    from sdceval.compare.ranking import compare, parse_measure_list, parse_reference
    from sdceval.core.fileio import write_csv, write_json
    from sdceval.experiments.plots import plot_risk_curves
    ds = _dataset(args)
    methods = _split(args.methods)
    risk_name, risk_params = parse_reference(args.risk_measure)
    t0 = time.perf_counter()
    comp = compare(ds, methods, target=args.target, risk=risk_name,
                   risk_params=risk_params, utilities=parse_measure_list(args.utility),
                   seed=args.seed, repeats=args.repeats, progress=lambda m: _say(args, m))
    dt = time.perf_counter() - t0
    table = comp.table()
    out = Path(args.out)
    files = [write_csv(table, out / "ranking.csv"), write_json(comp.to_dict(),
                                                                out / "results.json"),
             plot_risk_curves(comp, out / "risk_curves.png")]
    _say(args, "wrote " + ", ".join(str(f) for f in files))
    print(f"\n{ds.name}: methods matched to {comp.risk_measure} = {comp.target:.4g}"
          + (f" (risk of {comp.reference})" if comp.reference else "") + f"; {dt:.1f} s")
    print(_fmt_table(table))
    notes = comp.footnotes()
    if notes:
        print("\n" + "\n".join(f"note: {n}" for n in notes))
    return 0


def _protect_experiment_inputs(path, reduced: bool):
    """The experiment file and every file its jobs read (data, schema, hierarchies);
    returns the parsed file."""
    from sdceval.core.fileio import protect
    from sdceval.core.loaders import open_ref
    from sdceval.experiments.spec import load_spec
    protect(path)
    spec = load_spec(path, reduced=reduced)
    for job in spec.jobs:
        ref = job.data_ref()
        protect(*(v for k, v in ref.items() if k in ("data", "schema")
                  and isinstance(v, str) and Path(v).exists()))
        # opened here once (and cached for the serial executor) for its hierarchy files
        protect(*open_ref(ref).input_files)
    return spec


def _note_worker_cap(args, workers: int) -> None:
    procs, each = threads.per_worker(workers)
    if procs < workers:
        _say(args, f"note: {procs} worker process(es) x {each} thread(s) instead of "
                   f"{workers}: the thread budget is {threads.budget()} (raise --threads / "
                   f"{threads.ENV} to use more cores)")


def cmd_run(args) -> int:
    from sdceval.experiments.runner import run_experiment
    spec = _protect_experiment_inputs(args.file, args.reduced)
    if (args.executor or spec.executor) != "serial" and not spec.scheduler:
        _note_worker_cap(args, args.workers or spec.workers)
    result = run_experiment(args.file, out=args.out, executor=args.executor,
                            workers=args.workers, reduced=args.reduced,
                            progress=lambda m: _say(args, m))
    print(result.summary())
    return 0


def cmd_hierarchy(args) -> int:
    from sdceval.core.loaders import open_dataset
    ds = open_dataset(args.dataset)
    if args.column not in ds.frame.columns:
        from sdceval.core.errors import suggest
        raise SdcevalError(f"data set {ds.name!r} has no column {args.column!r}."
                           f"{suggest(args.column, ds.frame.columns)}")
    h = ds.hierarchy(args.column)
    if args.action == "export":
        if not args.out:
            raise SdcevalError("hierarchy export needs --out FILE")
        from sdceval.core.fileio import atomic_write, protect
        protect(*ds.input_files)
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
    _note_worker_cap(args, args.workers)
    result = run_tradeoff(ds, models=_split(args.models), method=args.method,
                          seed=args.seed, out=args.out, grids=args.grid,
                          measures=_split(args.measures), workers=args.workers,
                          progress=lambda m: _say(args, m))
    _say(args, "wrote " + ", ".join(str(f) for f in result.files))
    print(result)
    return 0


def _models(ds, specs):
    """Privacy models from ``--model`` options: ``k=5`` (a model and its threshold),
    ``l=3,variant=distinct``, or ``NAME:param=value,...`` (e.g. ``cl:c=3,l=2``); the
    syntax of `sdceval.privacy.parse_model_spec`, shared with experiment files."""
    from sdceval.privacy import parse_model_spec
    sens = ds.schema.sensitive
    hierarchy = ds.hierarchy(sens) if sens else None
    out = []
    for spec in specs or []:
        try:
            out.append(parse_model_spec(spec, hierarchy=hierarchy))
        except SdcevalError as exc:
            raise SdcevalError(f"--model {spec!r}: {exc}") from None
    return out


def _lattice_problem(args, ds):
    from sdceval.lattice.search import LatticeProblem
    return LatticeProblem(ds, _models(ds, args.model), rule=args.rule,
                          limit=args.max_suppression)


def _export_format(out) -> str:
    """``csv``, ``csv.gz`` or ``parquet`` from ``lattice export --out``'s name."""
    if not out:
        raise SdcevalError("lattice export needs --out FILE (.csv, .csv.gz or .parquet)")
    name = Path(out).name.lower()
    if name.endswith(".parquet"):
        try:
            import pyarrow  # noqa: F401
        except ImportError:
            from sdceval.core.loaders import PARQUET_EXTRA
            raise SdcevalError(f"lattice export to Parquet needs pyarrow, an optional "
                               f"extra: {PARQUET_EXTRA}; or write .csv") from None
        return "parquet"
    for fmt in ("csv", "csv.gz"):
        if name.endswith("." + fmt):
            return fmt
    raise SdcevalError(f"lattice export: --out {str(out)!r} must end in .csv, .csv.gz or "
                       ".parquet")


def cmd_lattice(args) -> int:
    import numpy as np
    ds = _dataset(args)
    if args.action == "info":
        from sdceval.lattice import Lattice, NodeEngine
        lat = Lattice.of(ds)
        print(f"{ds.name}: {ds.n} records; lattice of {lat.size:,} nodes, heights 0..{lat.max_height}")
        for q, h in zip(lat.names, lat.heights.tolist()):
            hier = ds.hierarchy(q)
            print(f"  {q:20s} {h + 1} levels ({hier.n_leaves} leaves"
                  + (", numeric)" if hier.numeric else ")"))
        print(f"  {NodeEngine(ds).n_distinct} distinct quasi-identifier rows")
        from sdceval.lattice.objectives import OBJECTIVES
        print("objectives: " + ", ".join(OBJECTIVES))
        return 0
    if args.action == "export":
        fmt = _export_format(args.out)  # before the evaluation, which may take long
    problem = _lattice_problem(args, ds)
    if args.action == "evaluate":
        from sdceval.methods.generalization import parse_levels
        levels = parse_levels(ds, args.levels)
        names = _split(args.objectives)
        row = problem.evaluate_node(levels, names)
        print(f"node {','.join(map(str, levels))} ({problem.describe()})")
        for k, v in row.items():
            print(f"  {k:16s} {v:.10g}" if isinstance(v, float) else f"  {k:16s} {v}")
        return 0
    if args.action == "search":
        from sdceval.lattice.search import optimal
        res = optimal(problem, args.metric)
        if args.out:
            from sdceval.core.fileio import write_json
            write_json({"data": ds.name, "problem": problem.describe(), **res.as_dict()},
                       args.out)
            _say(args, f"wrote {args.out}")
        print(f"optimum ({args.metric}, {problem.describe()}):")
        print(f"  levels {','.join(map(str, res.levels))}  "
              + "  ".join(f"{q}={v}" for q, v in zip(problem.lattice.names, res.levels)))
        print(f"  {args.metric} = {res.value:.10g}; suppressed {res.evaluation['suppressed']}"
              + (f"; k = {plain(res.evaluation['k'])}" if args.metric != "k" else ""))
        if len(res.ties) > 1:
            print(f"  {len(res.ties)} tied optimal nodes: "
                  + "; ".join(",".join(map(str, t)) for t in res.ties[:10])
                  + (" ..." if len(res.ties) > 10 else ""))
        print(f"  {res.checked} of {res.lattice_size:,} nodes checked in {res.seconds:.2f} s")
        return 0
    # export
    from sdceval.core.fileio import atomic_write
    from sdceval.lattice.search import evaluate_all
    table = evaluate_all(problem, _split(args.objectives), cache=not args.no_cache)
    if fmt == "parquet":
        atomic_write(args.out, lambda p: table.to_parquet(p, index=False))
    else:
        atomic_write(args.out, lambda p: table.to_csv(
            p, index=False, compression="gzip" if fmt == "csv.gz" else None))
    feas = int(np.asarray(table["feasible"]).sum())
    _say(args, f"wrote {args.out}")
    print(f"{len(table):,} nodes, {feas:,} feasible ({problem.describe()}) -> {args.out}")
    return 0


def _numbers(text, what: str):
    if text is None:
        return None
    try:
        return [float(t) for t in _split(text)]
    except ValueError:
        raise SdcevalError(f"{what} must be comma-separated numbers, got {text!r}") from None


def _property_map(items, what: str, cast) -> dict | None:
    out = {}
    for item in items or ():
        if "=" not in item:
            raise SdcevalError(f"{what} {item!r} must look like PROPERTY=VALUE")
        k, v = item.split("=", 1)
        try:
            out[k.strip()] = cast(v.strip())
        except ValueError:
            raise SdcevalError(f"{what} {item!r}: {v.strip()!r} is not valid") from None
    return out or None


def cmd_vectors(args) -> int:
    from sdceval.core.fileio import protect, write_json
    from sdceval.experiments.vectors_job import (describe_release, resolve_release,
                                                 write_comparison)
    from sdceval.vectors.comparison import compare_releases
    ds = _dataset(args)
    if len(args.release) < 2:
        raise SdcevalError("give at least two releases to compare, e.g. --release "
                           "mondrian:k=10 --release generalization:k=10")
    releases = {}
    for text in args.release:
        if Path(text).is_file():
            protect(text)
        if text in releases:
            raise SdcevalError(f"release {text!r} is given twice")
        _say(args, f"release {text} ...")
        releases[text] = resolve_release(ds, text, args.seed)
        _say(args, "  " + describe_release(text, releases[text]))
    directions = _property_map(args.direction, "--direction",
                               lambda v: {"higher": "higher_is_better",
                                          "lower": "lower_is_better"}.get(v, v))
    comp = compare_releases(
        ds, releases, _split(args.properties), suppressed=args.suppressed,
        directions=directions, index=args.index, weights=_numbers(args.weights, "--weights"),
        significance=_numbers(args.significance, "--significance"),
        order=_split(args.lex_order), goal=_numbers(args.goal, "--goal"),
        normalize=args.normalize, rank_point=_property_map(args.rank_point, "--rank-point",
                                                           float))
    if args.out:  # the files first: a closed stdout must not lose them
        out = Path(args.out)
        files = write_comparison(comp, out)
        files.append(write_json({"data": ds.name, **comp.to_dict()}, out / "vectors.json",
                                protected=[r for r in args.release if Path(r).is_file()]))
        _say(args, "wrote " + ", ".join(str(f) for f in files))
    print(f"{ds.name}: {ds.n} records; suppressed records: {args.suppressed}")
    cols = ["release", "property", "direction", "n", "worst", "mean", "sum"]
    cols += [c for c in comp.unary.columns if c not in cols]
    print(_fmt_table(comp.unary[cols]))
    for (a, b), rows in comp.pairs.groupby(["first", "second"], sort=False):
        print(f"\n{a}  vs  {b}   (12: {a} over {b}; 21: the reverse)")
        show = rows[["property", "relation", "n_compared", "share_better_first",
                     "share_better_second", "p_binary_12", "p_binary_21", "p_cov_12",
                     "p_cov_21", "p_spr_12", "p_spr_21", "log_p_hv_12", "log_p_hv_21"]]
        print(_fmt_table(show.rename(columns={"share_better_first": "better_1",
                                              "share_better_second": "better_2"})))
        over = comp.overall[(comp.overall["first"] == a) & (comp.overall["second"] == b)]
        verdicts = {k: v for k, v in over.iloc[0].items() if k not in ("first", "second")}
        print("  over all properties: " + "; ".join(f"{k}: {v}" for k, v in verdicts.items()))
    return 0


def cmd_pbg(args) -> int:
    from sdceval.core.fileio import write_json
    from sdceval.experiments.pbg_job import write_pbg
    from sdceval.lattice.search import LatticeProblem
    from sdceval.pbg.study import pbg_study, resolve_objectives
    ds = _dataset(args)
    objectives = resolve_objectives(args.objectives)
    eps = _numbers(args.eps, "--eps") if args.eps else 1.0
    if isinstance(eps, list) and len(eps) == 1:
        eps = eps[0]
    problem = LatticeProblem(ds, rule=args.rule, limit=args.max_suppression)
    _say(args, f"{ds.name}: lattice of {problem.lattice.size:,} nodes over "
               f"{', '.join(problem.lattice.names)}; {problem.describe()}")
    study = pbg_study(problem, objectives, eps, runs=args.runs, seed=args.seed,
                      baseline=args.baseline, exact=args.exact,
                      progress=None if args.quiet else (lambda m: _say(args, m)),
                      bar=None)
    if args.out:  # the files first: a closed stdout must not lose them
        out = Path(args.out)
        files = write_pbg(study, out)
        files.append(write_json({"data": ds.name, **study.to_dict()}, out / "metrics.json"))
        _say(args, "wrote " + ", ".join(str(f) for f in files))
    eps_txt = ",".join(f"{e:g}" for e in study.eps)
    print(f"{ds.name}: {', '.join(study.objectives)} (goals {', '.join(study.goals)}), "
          f"eps {eps_txt}, {len(study.runs)} runs, lattice {study.lattice_size:,} nodes"
          + ("" if study.front is None else f", {len(study.front)} minimal PBGs"))
    print(_fmt_table(study.summary()))
    if study.exact:
        e = study.exact
        print(f"exact search: {e['minimal_pbgs']} minimal PBGs from {e['nodes_evaluated']:,}"
              f" nodes ({100 * e['share_evaluated']:.1f} %) in {e['seconds']:.1f} s")
    for n in study.notes:
        print(f"note: {n}")
    return 0


# -- parser ------------------------------------------------------------------------
def build_parser() -> argparse.ArgumentParser:
    from sdceval import __version__
    p = argparse.ArgumentParser(
        prog="sdceval", formatter_class=_HelpFormatter,
        description="Anonymize microdata, measure disclosure risk and utility loss, and "
                    "compare methods at equal risk.  'sdceval compare' alone runs the "
                    "main job on the bundled Census data.",
        epilog=f"environment: {threads.ENV}=N sets the thread budget (like --threads).\n"
               "exit codes: 0 done, 2 bad input (the message names the fix), "
               "130 Ctrl-C, 141 output pipe closed, 143 SIGTERM.")
    p.add_argument("--version", action="version", version=f"sdceval {__version__}")
    _add_common_options(p, top=True)
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def command(name, help_text, func):
        s = sub.add_parser(name, help=help_text, description=help_text,
                           formatter_class=_HelpFormatter)
        _add_common_options(s, top=False)
        s.set_defaults(func=func)
        return s

    s = command("list", "list methods, measures or bundled data sets", cmd_list)
    s.add_argument("what", choices=["methods", "measures", "datasets"],
                   help="what to list")

    s = command("anonymize", "apply one method and write the release", cmd_anonymize)
    _add_data_options(s, keep=True)
    s.add_argument("--method", required=True, help="method name (sdceval list methods)")
    s.add_argument("--param", action="append", default=[], metavar="NAME=VALUE",
                   help="method parameter, repeatable (e.g. --param k=5); "
                        "default: the method's defaults")
    s.add_argument("--seed", type=int, default=0, help="seed of the random methods")
    s.add_argument("--out", required=True, help="output CSV (never an input file)")

    s = command("evaluate", "measure a release against the original", cmd_evaluate)
    _add_data_options(s)
    s.add_argument("--release", required=True, help="release CSV written by anonymize")
    s.add_argument("--measures", default="linkage_risk,propensity,emd",
                   help="comma-separated measures, parameters after a colon "
                        "(e.g. propensity:model=linear,emd)")
    s.add_argument("--out", help="write the measurements as JSON (default: not written)")

    s = command("compare", "match methods to one risk level, rank utilities", cmd_compare)
    _add_data_options(s)
    s.add_argument("--methods", default="mdav,noise,rank_swap,multiplicative_noise",
                   help="comma-separated methods to match and rank")
    s.add_argument("--risk-measure", default="linkage_risk",
                   help="risk measure, parameters after a colon "
                        "(e.g. linkage_risk:aggregate=mean)")
    s.add_argument("--target", default="mdav:k=5",
                   help="target risk: a number on the risk measure's scale, or a reference "
                        "method:param=value whose risk is the target")
    s.add_argument("--utility", default="propensity,emd",
                   help="utility measures (comma-separated, parameters after a colon)")
    s.add_argument("--seed", type=int, default=0, help="seed of the random methods")
    s.add_argument("--repeats", type=int, default=1,
                   help="average risk and utility over this many seeds")
    s.add_argument("--out", default="out/compare", help="output folder")

    s = command("run", "run a declarative experiment file (TOML)", cmd_run)
    s.add_argument("file", help="experiment file (e.g. experiments/domingo_ferrer_table1.toml)")
    s.add_argument("--out", help="output folder (default: the file's 'output')")
    s.add_argument("--executor", choices=["serial", "processes", "dask"],
                   help="where tasks run (default: the file's 'executor')")
    s.add_argument("--workers", type=int,
                   help="worker processes, at most the thread budget (default: the "
                        "file's 'workers')")
    s.add_argument("--reduced", action="store_true",
                   help="run the file's reduced grid (for CI)")

    s = command("hierarchy", "show or export a generalization hierarchy", cmd_hierarchy)
    s.add_argument("action", choices=["show", "export"], help="print it, or write it as CSV")
    s.add_argument("dataset", help="bundled data set or data file")
    s.add_argument("column", help="column whose hierarchy to show")
    s.add_argument("--out", help="CSV file for export (ARX layout) (default: none; "
                                 "required by export)")

    s = command("tradeoff", "P_loss / U_loss trade-off of privacy models (Li & Li 2009)",
                cmd_tradeoff)
    _add_data_options(s, default="adult")
    s.add_argument("--models", default="k,l,t,delta",
                   help="comma-separated privacy models (k, l, t, delta; also cl: "
                        "recursive (c,l)-diversity) (default: k,l,t,delta)")
    s.add_argument("--method", default="mondrian",
                   choices=["mondrian", "bucketization", "both"],
                   help="how releases are made: mondrian (Li & Li's \"generalization\"), "
                        "bucketization, or both")
    s.add_argument("--grid", action="append", default=[], metavar="MODEL=V1,V2,...",
                   help="override a model's grid, e.g. --grid k=10,100 "
                        "(default: each model's grid)")
    s.add_argument("--measures", default="p_loss,u_loss,query_error",
                   help="measures per release (parameters after a colon)")
    s.add_argument("--workers", type=int, default=2,
                   help="worker processes, at most the thread budget (--threads)")
    s.add_argument("--seed", type=int, default=0, help="seed of the random steps")
    s.add_argument("--out", default="out/tradeoff", help="output folder")

    s = command("lattice", "full-domain generalization lattice: size, one node's "
                "objectives, the optimal node, all nodes", cmd_lattice)
    s.add_argument("action", choices=["info", "evaluate", "search", "export"],
                   help="info: lattice size and hierarchies; evaluate: one node "
                        "(--levels); search: the optimal node (--metric, --model); "
                        "export: every node's objectives to --out")
    _add_data_options(s, default="adult-train")
    s.add_argument("--model", action="append", default=[], metavar="SPEC",
                   help="privacy model to enforce, repeatable: k=5, l=3,variant=distinct, "
                        "t=0.2, delta=1.5, cl:c=3,l=2 (default: none)")
    _add_suppression_options(s)
    s.add_argument("--levels", help="evaluate: the node, one level per QI "
                                    "(e.g. 1,0,2) or named (age=2,sex=1) (default: "
                                    "the bottom node, all levels 0)")
    s.add_argument("--objectives", help="evaluate/export: comma-separated objectives "
                                        "(default: all the data set supports)")
    s.add_argument("--metric", default="glm", help="search: objective to optimize")
    s.add_argument("--out", help="search: JSON of the optimum; export: .csv, .csv.gz or "
                                 ".parquet (default: none)")
    s.add_argument("--no-cache", action="store_true",
                   help="export: neither read nor write the on-disk cache")

    s = command("vectors", "compare releases record by record: property vectors, quality "
                "indices, dominance (Dewri et al. 2009)", cmd_vectors)
    _add_data_options(s, default="adult-train")
    s.add_argument("--release", action="append", default=[], metavar="FILE|SPEC",
                   help="a release CSV written by anonymize, or a method spec such as "
                        "mondrian:k=10; repeat for each release (default: none; give at least two)")
    s.add_argument("--properties", help="comma-separated properties: class_size, "
                                        "sensitive_count, glm, p_loss, linkage_distance or "
                                        "any measure with a per-record vector (default: "
                                        "those defined for every release)")
    s.add_argument("--suppressed", default="exclude",
                   choices=["exclude", "own_class", "value"],
                   help="suppressed records: left out, one class of their own, or the "
                        "value of a fully generalized record")
    s.add_argument("--direction", action="append", default=[], metavar="PROP=higher|lower",
                   help="override a property's direction (default: the property's own)")
    s.add_argument("--index", default="p_cov", choices=["p_binary", "p_cov", "p_spr", "p_hv"],
                   help="binary index of the WTD / LEX / GOAL decisions")
    s.add_argument("--weights", help="WTD decision: one weight per property, summing to 1 (default: no WTD "
                        "decision)")
    s.add_argument("--normalize", choices=["share"], help="WTD: normalize each index pair "
                                                           "to shares (default: none)")
    s.add_argument("--lex-order", help="LEX decision: properties by decreasing relevance (default: no "
                        "LEX decision unless --significance is given; then the "
                        "properties' order)")
    s.add_argument("--significance", help="LEX decision: significance per property "
                                          "(default: zeros)")
    s.add_argument("--goal", help="GOAL decision: target index value per property (default: no GOAL "
                        "decision)")
    s.add_argument("--rank-point", action="append", default=[], metavar="PROP=VALUE",
                   help="P_rank: the point of interest D_max of a property (every record "
                        "at VALUE) (default: no P_rank)")
    s.add_argument("--seed", type=int, default=0, help="seed of the random methods")
    s.add_argument("--out", help="folder for unary.csv, pairs.csv, overall.csv, "
                                 "vectors.json and one figure per property (default: none)")

    s = command("pbg", "property-based generalizations: PBG-EA runs scored against the "
                "minimal PBGs (Dewri et al. 2010)", cmd_pbg)
    _add_data_options(s, default="adult-train")
    s.add_argument("--objectives", default="k,glm",
                   help="two or more lattice objectives, comma-separated; the paper's "
                        "names work: k, l, S_k, S_l, GLM, CM")
    s.add_argument("--eps", help="discretization vector: one positive number per "
                                 "objective, or one for all (default: all ones)")
    s.add_argument("--runs", type=int, default=20, help="seeded runs (seeds seed, seed+1, ...)")
    s.add_argument("--seed", type=int, default=0, help="seed of the first run")
    _add_suppression_options(s)
    s.add_argument("--baseline", action="store_true",
                   help="also NSGA-II (pymoo) with the same node budget per run")
    s.add_argument("--exact", action="store_true",
                   help="also the exact search for the minimal PBGs (its node count)")
    s.add_argument("--out", help="folder for runs.csv, summary.csv, archive.csv, "
                                 "front.csv, front.png and metrics.json (default: none)")
    return p


# -- the process ---------------------------------------------------------------------
def _children() -> list[int]:
    """Process ids of this process's descendants (psutil when installed, else /proc)."""
    try:
        import psutil
        return [c.pid for c in psutil.Process().children(recursive=True)]
    except ImportError:
        pass
    parent: dict[int, int] = {}
    for d in os.listdir("/proc") if os.path.isdir("/proc") else ():
        if d.isdigit():
            fields = _stat_fields(int(d))
            if fields:
                parent[int(d)] = int(fields[1])
    found, frontier = [], [os.getpid()]
    while frontier:
        kids = [pid for pid, pp in parent.items() if pp in frontier]
        found += kids
        frontier = kids
    return found


def _end_children(grace: float = 2.0) -> None:
    """Terminate (then kill) every descendant still running after an interrupt: the
    executors stop their workers, this is the net under them."""
    # resource trackers (multiprocessing's, loky's) ignore SIGTERM by design and end by
    # themselves when this process exits, after unlinking what workers left behind
    pids = [pid for pid in _children() if "resource_tracker" not in _cmdline(pid)]
    for sig in (signal.SIGTERM, getattr(signal, "SIGKILL", signal.SIGTERM)):
        for pid in pids:
            try:
                os.kill(pid, sig)
            except (ProcessLookupError, PermissionError):
                pass
        deadline = time.monotonic() + grace
        while pids and time.monotonic() < deadline:
            for pid in list(pids):
                try:  # reap our own children; others vanish when their parent exits
                    if os.waitpid(pid, os.WNOHANG)[0] == pid:
                        pids.remove(pid)
                        continue
                except ChildProcessError:
                    pass
                if not os.path.exists(f"/proc/{pid}") or _is_zombie(pid):
                    pids.remove(pid)
            time.sleep(0.05)
        if not pids:
            return


def _cmdline(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def _stat_fields(pid: int) -> list[str]:
    """The fields of /proc/PID/stat after the command name (state, parent pid, ...);
    empty if the process is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            # the command name (2nd field) may hold spaces: parse after its ')'
            return f.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return []


def _is_zombie(pid: int) -> bool:
    fields = _stat_fields(pid)
    return not fields or fields[0] == "Z"


def _hard_exit(code: int) -> None:
    """Leave now: no partial files, no children, buffered output flushed."""
    from sdceval.core.fileio import remove_partial_files
    remove_partial_files()
    _end_children(grace=0.5)
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(code)


@contextmanager
def _signal_handling():
    """SIGTERM raises `Terminated`, SIGINT ``KeyboardInterrupt`` (unless the process
    was started with SIGINT ignored, e.g. in the background); a second signal while the
    first is being cleaned up exits at once.  Previous handlers are restored, so that
    calling `main` from Python leaves the caller's handlers as they were."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    watched = [signal.SIGTERM]
    if signal.getsignal(signal.SIGINT) is not signal.SIG_IGN:
        watched.append(signal.SIGINT)
    previous = {s: signal.getsignal(s) for s in watched}

    def again(signum, frame):
        _hard_exit(128 + signum)

    def first(signum, frame):
        for s in watched:
            signal.signal(s, again)
        if threads.parallel_native():
            # native helper threads (e.g. cKDTree.query(workers=2)) would keep writing
            # into memory that unwinding frees: leave without unwinding.  Inside a
            # method or a measure no file is being written and no executor runs.
            print("sdceval: error: " + ("terminated (SIGTERM)" if signum == signal.SIGTERM
                                        else "interrupted"), file=sys.stderr)
            _hard_exit(128 + signum)
        exc = Terminated() if signum == signal.SIGTERM else KeyboardInterrupt()
        interrupts.record(exc)  # raised again at the next safe point if swallowed
        if interrupts.deferring():
            # inside a call that must not be cut in half (loky's submit): raised as
            # soon as it returns; a second signal still leaves at once (`again`)
            interrupts.defer(exc)
            return
        raise exc

    for s in watched:
        signal.signal(s, first)
    try:
        yield
    finally:
        for s, h in previous.items():
            signal.signal(s, h)
        interrupts.clear()  # what this scope received ended it; the caller starts afresh


def _silence_stdout() -> None:
    """stdout is a closed pipe: point it at /dev/null so that the interpreter's last
    flush does not fail again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):
        pass


def main(argv=None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    threads_before = set(threading.enumerate())
    quiet_before = os.environ.get("SDCEVAL_QUIET")
    error = None
    with warnings.catch_warnings(record=True) as caught, _signal_handling():
        warnings.simplefilter("always")
        try:
            import numpy as np
            # messages are built from numpy values in many places: print them as the
            # values they are ('A', 1.5), not as np.str_('A') / np.float64(1.5)
            with np.printoptions(legacy="1.25"):
                if args.threads is not None:
                    threads.set_budget(args.threads)
                threads.budget()  # a bad SDCEVAL_THREADS is an error before any work
                if args.quiet:  # read by the progress bars of long searches, in workers too
                    os.environ["SDCEVAL_QUIET"] = "1"
                from sdceval.core.fileio import protection_scope
                with protection_scope():  # this command's inputs, not the next one's
                    code = args.func(args)
                    # a signal whose exception was swallowed (raised inside a gc
                    # callback, say) still ends the command as interrupted
                    interrupts.check()
                sys.stdout.flush()  # a closed pipe shows here, not at interpreter exit
        except SdcevalError as exc:
            code, error = EXIT_ERROR, exc
        except Terminated:
            code, error = EXIT_SIGTERM, "terminated (SIGTERM)"
        except KeyboardInterrupt:
            code, error = EXIT_SIGINT, "interrupted"
        except BrokenPipeError:  # piped into e.g. `head`: files are already written
            _silence_stdout()
            code = EXIT_SIGPIPE
        finally:  # leave a calling Python process as it was
            if args.threads is not None:
                threads.set_budget(None)
            if quiet_before is None:
                os.environ.pop("SDCEVAL_QUIET", None)
            else:
                os.environ["SDCEVAL_QUIET"] = quiet_before
    seen = set()
    for w in caught:  # each distinct warning once, after the progress messages
        msg = str(w.message)
        if msg not in seen and not issubclass(w.category, (DeprecationWarning,
                                                           PendingDeprecationWarning)):
            seen.add(msg)
            print(f"sdceval: warning: {msg}", file=sys.stderr)
    if error is not None:
        print(f"sdceval: error: {error}", file=sys.stderr, flush=True)
    if code in (EXIT_SIGINT, EXIT_SIGTERM):
        _end_children()
        lingering = [t for t in threading.enumerate()
                     if t not in threads_before and t.is_alive()]
        deadline = time.monotonic() + 0.2
        for t in lingering:
            t.join(max(0.0, deadline - time.monotonic()))
        if any(t.is_alive() for t in lingering):
            _hard_exit(code)  # threads still in native code: never finalize under them
    return code


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
