"""``sdceval compare``: match methods to one risk level and rank their utility (the
main job, on the bundled ``census`` data by default).

The command is a ``[[comparison]]`` job run alone (`sdceval.experiments.comparison_job`,
serial executor): its options become the job's (``--risk-measure`` is ``risk``,
``--utility`` ``utilities``, ``--model`` the ``models`` of ``method_params`` for every
method that enforces privacy models); it adds the printing and the file names."""
from __future__ import annotations

import time
from pathlib import Path

from sdceval.cli.common import (_add_command, _add_data_options, _add_model_option,
                                _add_wide_option, _answer, _dataset, _say, _split, _table,
                                _write_report)
from sdceval.core.errors import SdcevalError


def add_parser(sub):
    s = _add_command(sub, "compare", "match methods to one risk level, rank utilities",
                     cmd_compare)
    _add_data_options(s)
    s.add_argument("--methods",
                   help="comma-separated methods or whole-file strategies to match and rank "
                        "(e.g. mdav+recode,mondrian+intervals; sdceval list methods); "
                        "default: every method the data set's roles allow, of both "
                        "families; on a file with numeric attributes and quasi-identifiers, "
                        "the built-in whole-file strategies, and a method named alone is "
                        "read as its strategy (mdav -> mdav+recode, mondrian -> "
                        "mondrian+intervals) so that every candidate publishes every column")
    s.add_argument("--families",
                   help="draw the default candidates from these families, comma-separated: "
                        "sdc (classical SDC), synthetic (cart_synthesis, gaussian_copula), "
                        "dp (dp_histogram); with synthetic or dp every candidate is matched "
                        "on the worst of the attacks singling_out, linkability and "
                        "inference, on records the candidates never saw (default: sdc)")
    s.add_argument("--control", type=float,
                   help="share of the records held out before anonymization as the "
                        "attacks' control set, when a measure needs one (default 0.2)")
    s.add_argument("--intruder",
                   help="the columns the intruder knows, comma-separated, the same for "
                        "every candidate (default: every quasi-identifier and numeric "
                        "attribute, and the kept columns)")
    s.add_argument("--risk-measure",
                   help="risk measure, parameters after a colon (e.g. "
                        "linkage_risk:aggregate=mean), or the worse of several shares, "
                        "'max(reidentification,attribute_inference)' (default: "
                        "reidentification, the share of records re-identified; the other "
                        "attacks, and linkage_risk when every release is numeric, are read "
                        "beside it)")
    s.add_argument("--max-risk", action="append", metavar="MEASURE=LIMIT",
                   help="a risk every ranked candidate must keep at or below LIMIT at its "
                        "matched point, repeatable: global=0.01 (the global risk: "
                        "expected re-identifications in the population per record, at "
                        "most 1 %%, sdcMicro's rule; needs --weight for a sample), "
                        "household=0.02, or any risk measure (default: none)")
    s.add_argument("--guideline", metavar="NAME",
                   help="rank only candidates whose matched release meets this guideline "
                        "profile (sdceval check --list; e.g. ema-0070, sdcmicro-global; "
                        "population assumptions after a colon, "
                        "ema-0070:population_size=300000): its metric at most its threshold "
                        "as it reads it (0.09 read as ARX does: class size >= 12); those "
                        "that fail are listed with by how much.  The guideline's metric "
                        "may also be the matched risk: --risk-measure "
                        "risk_summary:attacker=journalist --target 0.0833 matches every "
                        "candidate at the bound (default: none)")
    s.add_argument("--target",
                   help="target risk: a number on the risk measure's scale, or a reference "
                        "method:param=value whose risk is the target (default: mdav:k=5); "
                        "mondrian:k=5 for a data set without numeric attributes, "
                        "mondrian+intervals:k=5 (k = 5 over every key) for whole-file "
                        "strategies")
    _add_model_option(s)
    s.add_argument("--utility",
                   help="utility measures (comma-separated, parameters after a colon) "
                        "(default: propensity,emd when every method is perturbative, else "
                        "query_error,ml_utility, which apply to every release)")
    s.add_argument("--tolerance",
                   help="a method is matched, hence ranked, only when its risk is within "
                        "this share of the target (default 0.05 = ±5 %%), or within its "
                        "knob's smallest step when that is larger; otherwise it is listed "
                        "as nearest reachable")
    s.add_argument("--seed", type=int, default=0,
                   help="root of the seed tree: the random methods' seeds and every "
                        "measure's (query workload, ML split, linkage sample), per repeat "
                        "(docs/across_families.md)")
    s.add_argument("--repeats", type=int, default=5,
                   help="repeat with this many seeds (common random numbers across methods; "
                        "default 5, which separates the differences measured on the bundled "
                        "data): every risk and utility gets a 95 %% interval, and a method "
                        "ties with the best only when the paired 95 %% t-interval of their "
                        "per-seed differences contains 0 (1: no test, ranks order the values)")
    s.add_argument("--out", default="out/compare", help="output folder")
    _add_wide_option(s)
    return s


def _model_params(ds, methods, models) -> dict | None:
    """``--model`` as ``method_params``: the privacy models for every method with a
    ``models`` parameter among ``methods`` (default: the ones the data set's roles
    allow; bisection then tunes the first model's threshold)."""
    if not models:
        return None
    from sdceval.catalog import get_method
    from sdceval.compare.families import applicable_methods
    methods = methods or applicable_methods(ds)
    takers = [m for m in methods if any(p.name == "models" for p in get_method(m).params)]
    if not takers:
        raise SdcevalError(f"--model: none of the methods ({', '.join(methods)}) enforces "
                           "privacy models; compare e.g. mondrian, bucketization or "
                           "generalization")
    return {m: {"models": list(models)} for m in takers}


def cmd_compare(args) -> int:
    from sdceval.core.fileio import write_json
    from sdceval.experiments.comparison_job import (ComparisonJobResult, comparison_result,
                                                    write_ranking)
    from sdceval.experiments.executor import Executor
    from sdceval.experiments.jobs import command_job, report_section
    from sdceval.experiments.plots import plot_risk_curves
    ds = _dataset(args)
    methods = _split(args.methods)
    job = command_job("comparison", ds, "compare", methods=methods, risk=args.risk_measure,
                      target=args.target, utilities=args.utility, tolerance=args.tolerance,
                      intruder=args.intruder, families=args.families,
                      control=args.control,
                      max_risk=";".join(args.max_risk) if args.max_risk else None,
                      guideline=args.guideline,
                      method_params=_model_params(ds, methods, args.model))
    t0 = time.perf_counter()
    comp = comparison_result(job, Executor(), lambda m: _say(args, m), seed=args.seed,
                             repeats=args.repeats)
    dt = time.perf_counter() - t0
    out = Path(args.out)
    files = [write_ranking(comp, out), write_json(comp.to_dict(), out / "results.json"),
             plot_risk_curves(comp, out / "risk_curves.png")]
    section = report_section("comparison", ComparisonJobResult("compare", comp, files))
    files.append(_write_report(args, out / "report.html",
                               f"Which method at this risk? {ds.name}", [section], ds,
                               {"seed": str(args.seed), "repeats": str(args.repeats),
                                "time": f"{dt:.1f} s"}))
    _say(args, "wrote " + ", ".join(str(f) for f in files))
    print(_answer(comp.answer()))
    print()
    print(_table(args, comp.display_table(), keep=2, labels=comp.labels(),
                 where="ranking.csv"))
    _print_treatment(args, comp)
    notes = comp.footnotes()
    if notes:
        print("\n" + "\n".join(_answer(f"note: {n}") for n in notes))
    if args.guideline:
        print("\n" + _answer(_guideline_line(args.guideline, comp)))
    print(f"\nreport: {out / 'report.html'}")
    ranked = comp.ranked()
    if len(ranked) < 2 <= len(comp.matches):  # files and table are out; no ranking to use
        raise SdcevalError(
            f"only {len(ranked)} method reached the target ({', '.join(ranked) or 'none'}), "
            "so nothing is ranked: " + "; ".join(n for n in notes if "unranked" in n))
    return 0


def _guideline_line(guideline: str, comp) -> str:
    """What ``--guideline`` bounded, as its profile reads the threshold, and which
    candidates fail it (`sdceval.compare.constraints.guideline_constraint`)."""
    from sdceval.compare.constraints import guideline_constraint
    from sdceval.compare.measure_text import parse_reference
    from sdceval.guidelines import get_profile, get_rounding
    profile = get_profile(parse_reference(guideline)[0])
    (label, (_, _, bound)), = guideline_constraint(guideline).items()
    k = get_rounding(profile.rounding).min_class_size(profile.threshold)
    read = f"{profile.threshold:g} read {profile.rounding}" + (
        f", minimum class size {k}" if k else "")
    failed = [m for m, why in comp.constraint_failures().items()
              if any(w.startswith(label + " ") for w in why)]
    return (f"guideline {profile.name}: ranked only candidates whose {label} is at most "
            f"{bound:.4g} ({read}); "
            + (f"failing it: {', '.join(failed)}" if failed else "none fails it"))


def _print_treatment(args, comp) -> None:
    """When the methods publish different columns: the rows of the column × method
    table where they differ (the full table is in results.json and the report), and
    the note naming those columns."""
    note = comp.treatment_note()
    if not note:
        return
    table = comp.treatment_table()
    differ = table[table.nunique(axis=1) > 1].reset_index()
    print("\nwhat each method publishes (columns treated differently):")
    print(_table(args, differ, keep=1))
    print(_answer(f"note: {note}"))
