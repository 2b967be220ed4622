"""``sdceval pbg``: property-based generalizations, PBG-EA runs scored against the
minimal PBGs (Dewri et al. 2010).

The command is a ``[[pbg]]`` job run alone (`sdceval.experiments.pbg_job.pbg_result`,
with a message per run and a progress bar); it adds the printing, ``metrics.json`` and
the file names."""
from __future__ import annotations

from pathlib import Path

from sdceval.cli.common import (_add_command, _add_data_options, _add_suppression_options,
                                _add_wide_option, _answer, _dataset, _numbers, _say, _table,
                                _write_report)


def add_parser(sub):
    s = _add_command(sub, "pbg", "property-based generalizations: PBG-EA runs scored "
                     "against the minimal PBGs (Dewri et al. 2010)", cmd_pbg)
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
                                 "front.csv, front.png, metrics.json and report.html "
                                 "(default: none)")
    _add_wide_option(s)
    return s


def cmd_pbg(args) -> int:
    from sdceval.core.fileio import write_json
    from sdceval.experiments.executor import Executor
    from sdceval.experiments.jobs import command_job, report_section
    from sdceval.experiments.pbg_job import (pbg_answer, pbg_result, shown_generalizations,
                                              summary_by_metric, write_pbg)
    ds = _dataset(args)
    eps = _numbers(args.eps, "--eps")
    job = command_job("pbg", ds, "pbg", objectives=args.objectives,
                      eps=eps[0] if eps and len(eps) == 1 else eps, runs=args.runs,
                      rule=args.rule, max_suppression=args.max_suppression,
                      baseline=args.baseline, exact=args.exact)
    say = lambda m: _say(args, m)  # noqa: E731
    result = pbg_result(job, Executor(), say, seed=args.seed,
                        progress=None if args.quiet else say, bar=None)
    study = result.study
    if args.out:  # the files first: a closed stdout must not lose them
        out = Path(args.out)
        files = write_pbg(study, out)
        files.append(write_json({"data": ds.name, **study.to_dict()}, out / "metrics.json"))
        result.files = list(files)
        files.append(_write_report(
            args, out / "report.html", f"Property-based generalizations: {ds.name}",
            [report_section("pbg", result)], ds,
            {"objectives": args.objectives, "runs": str(args.runs),
             "first seed": str(args.seed)}))
        _say(args, "wrote " + ", ".join(str(f) for f in files))
    print(_answer(pbg_answer(study)) + "\n")
    print(shown_generalizations(study) + "\n")
    eps_txt = ",".join(f"{e:g}" for e in study.eps)
    print(f"{ds.name}: {', '.join(study.objectives)} (goals {', '.join(study.goals)}), "
          f"eps {eps_txt}, {len(study.runs)} runs, lattice {study.lattice_size:,} nodes"
          + ("" if study.front is None else f", {len(study.front)} minimal PBGs"))
    by_metric = summary_by_metric(study)
    print(_table(args, by_metric, where="summary.csv",
                 labels={c: c for c in by_metric.columns if c != "figure"} | {"figure": " "}))
    if study.exact:
        e = study.exact
        print(f"exact search: {e['minimal_pbgs']} minimal PBGs from {e['nodes_evaluated']:,}"
              f" nodes ({100 * e['share_evaluated']:.1f} %) in {e['seconds']:.1f} s")
    for n in study.notes:
        print(_answer(f"note: {n}"))
    if args.out:
        print(f"\nreport: {Path(args.out) / 'report.html'}")
    return 0
