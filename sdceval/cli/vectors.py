"""``sdceval vectors``: compare releases record by record (property vectors, quality
indices, dominance; Dewri et al. 2009).

The command is a ``[[vectors]]`` job run alone (`sdceval.experiments.vectors_job`; the
decision options are the job's options of the same names, ``--lex-order`` its
``order``); it adds the printing, ``vectors.json`` and the file names."""
from __future__ import annotations

from pathlib import Path

from sdceval.cli.common import (_add_command, _add_data_options, _dataset, _add_wide_option, _answer, _table, _write_report,
                                _numbers, _say, _split)
from sdceval.core.errors import SdcevalError


def add_parser(sub):
    s = _add_command(sub, "vectors", "compare releases record by record: property "
                     "vectors, quality indices, dominance (Dewri et al. 2009)",
                     cmd_vectors)
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
                                 "vectors.json, one figure per property and report.html "
                                 "(default: none)")
    _add_wide_option(s)
    return s


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
    from sdceval.experiments.executor import Executor
    from sdceval.core.glossary import display_name, release_label
    from sdceval.experiments.jobs import command_job, report_section
    from sdceval.experiments.vectors_job import vectors_result, write_comparison
    ds = _dataset(args)
    if len(args.release) < 2:
        raise SdcevalError("give at least two releases to compare, e.g. --release "
                           "mondrian:k=10 --release generalization:k=10")
    protect(*(r for r in args.release if Path(r).is_file()))
    directions = _property_map(args.direction, "--direction",
                               lambda v: {"higher": "higher_is_better",
                                          "lower": "lower_is_better"}.get(v, v))
    job = command_job(
        "vectors", ds, "vectors", releases=list(args.release),
        properties=_split(args.properties), suppressed=args.suppressed,
        directions=directions, index=args.index,
        weights=_numbers(args.weights, "--weights"),
        significance=_numbers(args.significance, "--significance"),
        order=_split(args.lex_order), goal=_numbers(args.goal, "--goal"),
        normalize=args.normalize,
        rank_point=_property_map(args.rank_point, "--rank-point", float))
    res = vectors_result(job, Executor(), lambda m: _say(args, m), seed=args.seed)
    for line in res.described:
        _say(args, "  " + line)
    comp = res.comparison
    if args.out:  # the files first: a closed stdout must not lose them
        out = Path(args.out)
        files = write_comparison(comp, out)
        files.append(write_json({"data": ds.name, **comp.to_dict()}, out / "vectors.json",
                                protected=[r for r in args.release if Path(r).is_file()]))
        res.files = list(files)
        files.append(_write_report(
            args, out / "report.html", f"Who bears the risk? {ds.name}",
            [report_section("vectors", res)], ds,
            {"releases": ", ".join(args.release), "seed": str(args.seed),
             "suppressed records": args.suppressed}))
        _say(args, "wrote " + ", ".join(str(f) for f in files))
    from sdceval.experiments.vectors_job import pair_answer, shown_summary, vectors_answer
    pairs = list(dict.fromkeys(zip(comp.pairs["first"], comp.pairs["second"])))
    print(_answer(vectors_answer(comp)) + "\n")
    print(_table(args, shown_summary(comp), keep=2))
    print(f"\n{ds.name}: {ds.n} records; suppressed records: {args.suppressed}")
    cols = ["release", "property", "n", "worst", "mean", "sum"]
    cols += [c for c in comp.unary.columns if c not in cols and c != "direction"]
    unary = comp.unary[cols].assign(property=[display_name(p) for p in comp.unary["property"]],
                                    release=[release_label(r) for r in comp.unary["release"]])
    print(_table(args, unary, keep=2, where="unary.csv"))
    for a, b in pairs:
        rows = comp.pairs[(comp.pairs["first"] == a) & (comp.pairs["second"] == b)]
        print(f"\n{release_label(a)} (first)  vs  {release_label(b)} (second)")
        print(_answer(pair_answer(comp, a, b)))
        show = rows[["property", "relation", "share_better_first", "share_better_second",
                     "n_compared", "p_binary_12", "p_binary_21", "p_cov_12", "p_cov_21",
                     "p_spr_12", "p_spr_21", "log_p_hv_12", "log_p_hv_21"]]
        show = show.assign(property=[display_name(p) for p in show["property"]])
        print(_table(args, show, keep=2, where="pairs.csv"))
        over = comp.overall[(comp.overall["first"] == a) & (comp.overall["second"] == b)]
        verdicts = {k: v for k, v in over.iloc[0].items() if k not in ("first", "second")}
        print("  over all properties: " + "; ".join(f"{display_name(k)}: {v}"
                                                    for k, v in verdicts.items()))
    if args.out:
        print(f"\nreport: {Path(args.out) / 'report.html'}")
    return 0
