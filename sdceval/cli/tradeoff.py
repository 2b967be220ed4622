"""``sdceval tradeoff``: the P_loss / U_loss trade-off of privacy models (Li & Li
2009), a ``[[tradeoff]]`` job run alone (`sdceval.experiments.tradeoff.run_tradeoff`)."""
from __future__ import annotations

from sdceval.cli.common import (_add_command, _add_data_options, _add_wide_option, _answer,
                                _dataset, _note_worker_cap, _say, _split, _table,
                                _write_report)


def add_parser(sub):
    s = _add_command(sub, "tradeoff",
                     "P_loss / U_loss trade-off of privacy models (Li & Li 2009)",
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
    _add_wide_option(s)
    return s


def cmd_tradeoff(args) -> int:
    from sdceval.experiments.tradeoff import run_tradeoff
    ds = _dataset(args)
    _note_worker_cap(args, args.workers)
    result = run_tradeoff(ds, models=_split(args.models), method=args.method,
                          seed=args.seed, out=args.out, grids=args.grid,
                          measures=_split(args.measures), workers=args.workers,
                          progress=lambda m: _say(args, m))
    from pathlib import Path

    from sdceval.experiments.jobs import report_section
    report = _write_report(args, Path(args.out) / "report.html",
                           f"Privacy / utility trade-off: {ds.name}",
                           [report_section("tradeoff", result)], ds,
                           {"models": args.models, "method": args.method,
                            "measures": args.measures, "seed": str(args.seed)})
    _say(args, "wrote " + ", ".join(str(f) for f in [*result.files, report]))
    print(_answer(result.answer()) + "\n")
    print(_table(args, result.display_table(), where="points.csv"))
    print(f"\nreport: {report}")
    return 0
