"""``sdceval check --guideline NAME``: does a release meet a guideline (issue 30 item 2)?

Reads the data and the release as ``sdceval evaluate`` does (its key puts the rows back
in record order; without ``--release``, the data set as it is: the risk before any
protection) and prints the verdict of `sdceval.guidelines.evaluate_guideline`:
PASS or FAIL, the value against the threshold as the profile reads it, the margin, the
records and classes that violate it (counts only) and the assumptions.  Exit codes: 0
PASS, 1 FAIL, 2 bad input.  ``--list`` (or ``--guideline list``) lists the profiles.
"""
from __future__ import annotations

import argparse

from sdceval.cli.common import (
    _add_command,
    _add_data_options,
    _add_release_options,
    _dataset,
    _release,
    _say,
    _split,
)

#: the exit code of a release that does not meet the guideline
EXIT_FAIL = 1


class _List(argparse.Action):
    """``--list`` / ``--guideline list``: list the profiles; the options a check needs
    (``--release``) are then not required."""

    def __call__(self, parser, namespace, values, option_string=None):
        setattr(namespace, self.dest, values if self.nargs is None else True)
        if self.nargs == 0 or values == "list":
            for action in parser._actions:
                action.required = False


def add_parser(sub):
    s = _add_command(sub, "check", "does a release meet a guideline (EMA 0070, HIPAA, ...)?",
                     cmd_check)
    s.description = (
        "Check a release against a guideline profile (docs/guidelines.md): the profile's "
        "metric, attacker, threshold and rounding reading; prints PASS or FAIL, the "
        "value, the margin, the violating records and classes, and the assumptions.\n"
        "exit codes: 0 PASS, 1 FAIL (the release does not meet the guideline), 2 bad "
        "input (the message names the fix).")
    s.add_argument("--guideline", action=_List, metavar="NAME",
                   help="a guideline profile (sdceval check --list), a profile file "
                        "(.toml), or 'list' to list the profiles (default: none: give one, "
                        "or --list)")
    s.add_argument("--list", action=_List, nargs=0, dest="list_profiles", default=False,
                   help="list the guideline profiles and exit")
    _add_data_options(s)
    _add_release_options(s, required=False,
                         absent="none: the data set as it is, every column published "
                                "unprotected (the risk before anonymization)")
    g = s.add_argument_group("the profile's settings (default: the profile's)")
    g.add_argument("--measure", metavar="NAME[:PARAMS]",
                   help="the metric: a risk measure, parameters after a colon "
                        "(custom: required, e.g. risk_summary:reading=average) (default: "
                        "the profile's)")
    g.add_argument("--threshold", type=float,
                   help="the threshold (custom: required) (default: the profile's)")
    g.add_argument("--attacker", choices=("prosecutor", "journalist", "marketer"),
                   help="the attacker (custom: required) (default: the profile's)")
    g.add_argument("--comparison", choices=("at_most", "at_least"),
                   help="at_most: the value must not exceed the threshold (a risk); "
                        "at_least: not fall below it (a measure where larger is safer, "
                        "e.g. linkage_risk) (default: the profile's)")
    g.add_argument("--rounding", help="how the threshold is read against a risk 1/k: "
                                      "arx (0.09 -> class size 12), cell-size (El Emam: "
                                      "0.09 -> 11) or literal (default: the profile's)")
    pop = s.add_argument_group("population assumptions (measures that take them)")
    pop.add_argument("--population-size", type=float, metavar="N",
                     help="the population the file is a sample of (default: the "
                          "measure's: the design weights, else the file itself)")
    pop.add_argument("--sampling-fraction", type=float, metavar="F",
                     help="the file's share of the population (default: the "
                          "measure's: the design weights, else 1)")
    pop.add_argument("--population", metavar="CSV",
                     help="a population table (risk_summary's journalist) (default: "
                          "none)")
    roles = s.add_argument_group("column roles of rule profiles (hipaa-safe-harbor)")
    roles.add_argument("--age", metavar="COL",
                       help="the age column (default: the profile's [roles], else "
                            "not checked)")
    roles.add_argument("--dates", metavar="COLS",
                       help="comma-separated date columns (default: the profile's "
                            "[roles], else not checked)")
    roles.add_argument("--zip", metavar="COL",
                       help="the ZIP code column (default: the profile's [roles], else "
                            "not checked)")
    roles.add_argument("--zip-population", metavar="CSV",
                       help="population of three-digit ZIP areas: a CSV of prefix, "
                            "population (default: none: the 20 000-people condition is "
                            "not checked)")
    s.add_argument("--out", help="write the verdict as JSON (default: not written)")
    return s


def _overrides(args) -> dict:
    out = {"threshold": args.threshold, "attacker": args.attacker,
           "rounding": args.rounding, "comparison": args.comparison,
           "population_size": args.population_size,
           "sampling_fraction": args.sampling_fraction, "population": args.population,
           "age": args.age, "dates": _split(args.dates), "zip": args.zip,
           "zip_population": args.zip_population}
    if args.measure:
        from sdceval.compare.measure_text import parse_reference
        name, params = parse_reference(args.measure)
        out.update(measure=name, params=params)
    return {k: v for k, v in out.items() if v is not None}


def _list() -> int:
    from sdceval.guidelines import list_profiles
    for p in list_profiles():
        print(f"{p.name:18s} {p.describe()}")
    return 0


def cmd_check(args) -> int:
    from sdceval.core.errors import SdcevalError
    if getattr(args, "list_profiles", False) or args.guideline == "list":
        return _list()
    if not args.guideline:
        raise SdcevalError("check: which guideline? give --guideline NAME (sdceval check "
                           "--list lists them)")
    from sdceval.guidelines import evaluate_guideline, get_profile
    profile = get_profile(args.guideline)   # a bad name is an error before any reading
    ds = _dataset(args)
    if args.release:
        rel = _release(args, ds)
    else:   # the file as it is: what publishing it unprotected would risk
        from sdceval.measures.attribute_disclosure import identity_release
        _say(args, "no --release: checking the data set as it is (unprotected)")
        rel = identity_release(ds)
    _say(args, f"checking {profile.name} ...")
    verdict = evaluate_guideline(profile, ds, rel, **_overrides(args))
    if args.out:  # the file first: a closed stdout must not lose it
        from sdceval.core.fileio import write_json
        write_json({"data": ds.name, "release": str(args.release), **verdict.to_dict()},
                   args.out, protected=[args.release, args.key])
        _say(args, f"wrote {args.out}")
    print(verdict.text())
    return 0 if verdict.passed else EXIT_FAIL
