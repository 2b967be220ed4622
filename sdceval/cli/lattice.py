"""``sdceval lattice info|evaluate|search|export``: the full-domain generalization
lattice of a data set.

``search`` and ``export`` are a ``[[lattice]]`` job run alone (its search, its export of
every node: `sdceval.experiments.lattice_job.lattice_result`); the command adds the
printing and its output files (the optimum as JSON, the nodes as CSV or Parquet)."""
from __future__ import annotations

from pathlib import Path

from sdceval.cli.common import (_add_command, _add_data_options, _add_model_option,
                                _add_suppression_options, _answer, _dataset, _models, _say,
                                _split, _write_report)
from sdceval.core.errors import SdcevalError, plain


def add_parser(sub):
    s = _add_command(sub, "lattice", "full-domain generalization lattice: size, one "
                     "node's objectives, the optimal node, all nodes", cmd_lattice)
    s.add_argument("action", choices=["info", "evaluate", "search", "export"],
                   help="info: lattice size and hierarchies; evaluate: one node "
                        "(--levels); search: the optimal node (--metric, --model); "
                        "export: every node's objectives to --out")
    _add_data_options(s, default="adult-train")
    _add_model_option(s)
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
    return s


def _export_format(out) -> str:
    """``csv``, ``csv.gz`` or ``parquet`` from ``lattice export --out``'s name."""
    if not out:
        raise SdcevalError("lattice export needs --out FILE (.csv, .csv.gz or .parquet)")
    name = Path(out).name.lower()
    if name.endswith(".parquet"):
        try:
            import pyarrow  # noqa: F401
        except ImportError:
            from sdceval.core.tables import PARQUET_EXTRA
            raise SdcevalError(f"lattice export to Parquet needs pyarrow, an optional "
                               f"extra: {PARQUET_EXTRA}; or write .csv") from None
        return "parquet"
    for fmt in ("csv", "csv.gz"):
        if name.endswith("." + fmt):
            return fmt
    raise SdcevalError(f"lattice export: --out {str(out)!r} must end in .csv, .csv.gz or "
                       ".parquet")


def cmd_lattice(args) -> int:
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
    models = _models(ds, args.model)  # parsed here too, so that errors name --model
    if args.action == "evaluate":
        from sdceval.lattice.search import LatticeProblem
        from sdceval.methods.generalization import parse_levels
        problem = LatticeProblem(ds, models, rule=args.rule,
                                 max_suppression=args.max_suppression)
        levels = parse_levels(ds, args.levels)
        names = _split(args.objectives)
        row = problem.evaluate_node(levels, names)
        print(f"node {','.join(map(str, levels))} ({problem.describe()})")
        for k, v in row.items():
            print(f"  {k:16s} {v:.10g}" if isinstance(v, float) else f"  {k:16s} {v}")
        return 0
    from sdceval.experiments.executor import Executor
    from sdceval.experiments.jobs import command_job
    from sdceval.experiments.lattice_job import lattice_result
    search = args.action == "search"
    job = command_job("lattice", ds, f"lattice {args.action}", models=args.model,
                      rule=args.rule, max_suppression=args.max_suppression,
                      metric=args.metric if search else None,
                      objectives=[] if search else _split(args.objectives),
                      export=not search,
                      cache=not args.no_cache)
    res = lattice_result(job, Executor(), lambda m: _say(args, m))
    return _print_search(args, res, ds) if search else _write_export(args, res, fmt)


def _print_search(args, res, ds) -> int:
    """The optimum: to ``--out`` as JSON, then on stdout."""
    o = res.optimum
    report = None
    if args.out:
        from sdceval.core.fileio import write_json
        from sdceval.experiments.jobs import report_section
        out = Path(args.out)
        write_json({"data": res.data, "problem": res.problem, **o}, out)
        res.files = [out]
        # beside the result, named after it: several searches may share a folder
        report = _write_report(args, out.with_name(out.stem + ".report.html"),
                               f"Optimal generalization: {res.data}",
                               [report_section("lattice", res)], ds,
                               {"models": "; ".join(res.models) or "none",
                                "suppression rule": res.rule,
                                "suppression limit": str(res.max_suppression)})
        _say(args, f"wrote {args.out}, {report}")
    from sdceval.experiments.lattice_job import lattice_answer
    print(_answer(lattice_answer(res)) + "\n")
    levels, ev = o["levels"], o["evaluation"]
    print(f"optimum ({args.metric}, {res.problem}):")
    print(f"  levels {','.join(map(str, levels))}  "
          + "  ".join(f"{q}={v}" for q, v in zip(res.qis, levels)))
    print(f"  {args.metric} = {o['value']:.10g}; suppressed {ev['suppressed']}"
          + (f"; k = {plain(ev['k'])}" if args.metric != "k" else ""))
    ties = o["ties"]
    if len(ties) > 1:
        print(f"  {len(ties)} tied optimal nodes: "
              + "; ".join(",".join(map(str, t)) for t in ties[:10])
              + (" ..." if len(ties) > 10 else ""))
    print(f"  {o['checked']} of {o['lattice_size']:,} nodes checked in {o['seconds']:.2f} s")
    if report is not None:
        print(f"\nreport: {report}")
    return 0


def _write_export(args, res, fmt: str) -> int:
    """Every node to ``--out`` (CSV, gzipped CSV or Parquet), then one line."""
    import numpy as np

    from sdceval.core.fileio import atomic_write
    table = res.nodes
    if fmt == "parquet":
        atomic_write(args.out, lambda p: table.to_parquet(p, index=False))
    else:
        atomic_write(args.out, lambda p: table.to_csv(
            p, index=False, compression="gzip" if fmt == "csv.gz" else None))
    feas = int(np.asarray(table["feasible"]).sum())
    _say(args, f"wrote {args.out}")
    print(f"{len(table):,} nodes, {feas:,} feasible ({res.problem}) -> {args.out}")
    return 0
