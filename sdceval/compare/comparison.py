"""The result of a risk-equalized comparison (`sdceval.compare.ranking`): every
method's matched release, its utilities and its other risk readings, ranked, and the
words and tables people read it in.

`Comparison.table` ranks the methods that reached the target (1 = least loss) by one
rank structure (`Comparison.rank_structure`, `rank_utility`), which the answer sentence
reads too.  Every method sees the same seeds at each repeat (common random numbers), so
with repeats two methods are compared on their per-repeat *differences*: a method ties
with the best when the 95 % t-interval of those differences contains 0 (a paired
t-test, SPEC §5); the rest are grouped by the same rule.  A loss below its noise floor
(a mean ≤ 0, or repeats reaching 0 with 0 inside the t-interval of the mean) counts as
0: "no measurable loss", never a gain.  Each figure still carries its own 95 % interval
(`interval`).  "Equal risk" holds for the one measure matched: `Comparison.footnotes`
says how far the other risk readings spread at the matched point
and names every default chosen because it reproduces the paper (`FITTED_CHOICES`).

Parameters are stored with their registered types (MDAV's ``k`` stays an int in the
table, the CSV and the JSON).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from sdceval.catalog import get_measure, get_method
from sdceval.compare.attacks import attack_differences, attack_sentence
from sdceval.compare.bisection import BisectionResult
from sdceval.compare.constraints import failures
from sdceval.compare.paired import (MAX_REPEATS, NO_TEST, PAIRED_TEST,  # noqa: F401
                                    PairedTest, UtilityRanks, interval,
                                    rank_rule_note, rank_utility, repeats_to_separate)
from sdceval.core.glossary import (and_list, axis_label, display_name, register_term,
                                   release_label, term)
from sdceval.core.treatment import differing_columns
from sdceval.measures._nearest import sample_phrase

register_term("method", "method", "the anonymization method (sdceval list methods)")
register_term("parameter", "tuned parameter",
              "the parameter bisection tuned to reach the target risk")
register_term("value", "value", "the value of the tuned parameter, or of the measure")
register_term("setting", "setting", "the tuned parameter at the matched point")
register_term("risk", "matched risk",
              "the risk measure the methods are matched on, at each method's matched point")
register_term("bracketed", "reached the target",
              "whether bisection found parameter values on both sides of the target (a "
              "method that did not is left unranked)")
register_term("matched", "matched",
              "whether the risk found is within the tolerance of the target (±5 % or the "
              "knob's smallest step, whichever is larger) with some protection; only "
              "matched methods are ranked (sdceval.compare.bisection)")
register_term("column", "column",
              "a column of the data set; the methods' columns say what each matched "
              "release did to it (sdceval.core.treatment)")
register_term("evaluations", "evaluations",
              "releases made and measured while searching for the matched point")

#: Defaults that were chosen because they reproduce the paper's figures, stated next to
#: every ranking that uses them (measure -> (parameters, why)).  A ranking under these
#: settings is partly a product of the fit (docs/reproduction.md, "Readings adopted").
FITTED_CHOICES = {
    "propensity": ({"model": "pairwise", "ridge": 0.01},
                   "The propensity default (main effects + pairwise products, ridge 0.01) is "
                   "a fitted choice: it was picked because it reproduces the paper's "
                   "ranking (with ridge=0 MDAV ranks third on EIA; main effects alone give "
                   "about 0 for every mean-preserving method)"),
    "linkage_risk": ({"scale": "fitted_per_attribute"},
                     "The linkage_risk scale=fitted_per_attribute divides by the number of "
                     "attributes, a scale fitted to land on the paper's printed 0.45 / "
                     "0.58 (the default scale=spec is SPEC's mean log(1+d))"),
}

def fitted_notes(measures) -> list[str]:
    """One sentence per measure in ``measures`` (``(name, params)`` pairs) that runs
    with a setting of `FITTED_CHOICES`: a ranking shown with it must say so."""
    notes, seen = [], set()
    for name, params in measures:
        fitted = FITTED_CHOICES.get(name)
        if fitted is None or name in seen:
            continue
        resolved = get_measure(name).resolve(params)
        if all(resolved.get(k) == v for k, v in fitted[0].items()):
            seen.add(name)
            notes.append(fitted[1] + ".")
    return notes


def typed_params(method: str, params: dict) -> dict:
    """``params`` with each value in its registered type (``{"k": "5"}`` -> ``{"k": 5}``;
    a float parameter given as ``1`` -> ``1.0``), so outputs never store numbers as
    strings or integers as floats."""
    spec = get_method(method)
    return {k: v if v is None else spec.param(k).parse(v, f"method {method!r}")
            for k, v in params.items()}


def typed_value(method: str, parameter: str, value):
    """One parameter value in its registered type (``5.0`` for MDAV's k -> ``5``)."""
    return get_method(method).param(parameter).parse(value, f"method {method!r}")


@dataclass
class Comparison:
    """Result of `compare`: one matched release per method and its utilities.

    ``risk_readings`` holds, per method, the other risk figures of the matched release
    (re-identification rates, the matched measure in its other scale, extra risk
    measures), averaged over the same seeds as the utilities."""

    dataset: str
    risk_measure: str
    risk_params: dict
    target: float
    reference: str | None
    seed: int
    repeats: int
    matches: list[BisectionResult]
    utilities: dict[str, dict[str, float]]  # method -> measure -> value
    utility_directions: dict[str, bool]
    curves: dict[str, list[tuple[float, float]]] = field(default_factory=dict)
    measure_details: dict[str, dict[str, dict]] = field(default_factory=dict)
    risk_readings: dict[str, dict[str, float]] = field(default_factory=dict)
    utility_params: dict[str, tuple[str, dict]] = field(default_factory=dict)
    #: method -> "risk" / utility label -> the value at each repeat (`MethodMatch`)
    samples: dict[str, dict[str, list[float]]] = field(default_factory=dict)
    #: method -> the matched risk's ``details["sample"]`` when it was estimated from a
    #: sample of records (large tables: `sdceval.measures._nearest`)
    risk_sample: dict[str, dict] = field(default_factory=dict)
    #: method -> risk reading -> why it is not read on that method's release ("n/a")
    not_applicable: dict[str, dict[str, str]] = field(default_factory=dict)
    #: the footnote when kept columns are in the intruder's knowledge
    #: (`sdceval.measures._kept_keys.comparison_note`, set by `run_comparison`)
    kept_note: str | None = None
    #: method -> column -> what its matched release did to the column
    #: (`sdceval.core.treatment.column_treatment`)
    treatment: dict[str, dict[str, str]] = field(default_factory=dict)
    #: risk label -> the largest value a ranked candidate may read at its matched
    #: point (`sdceval.compare.constraints`; set by `run_comparison`)
    constraints: dict[str, float] = field(default_factory=dict)

    def intervals(self) -> dict[str, dict[str, tuple[float, float]]]:
        """method -> "risk" / utility -> its 95 % interval over the repeats (`interval`;
        NaN with one repeat)."""
        return {m: {k: interval(v) for k, v in got.items()}
                for m, got in self.samples.items()}

    def ranked(self) -> list[str]:
        """The methods matched within the tolerance that meet every risk constraint
        (the ones ranked)."""
        failed = self.constraint_failures()
        return [m.method for m in self.matches if m.matched and m.method not in failed]

    def constraint_failures(self) -> dict[str, list[str]]:
        """method -> the constraints its matched release fails (matched methods only;
        `sdceval.compare.constraints.failures`)."""
        if not self.constraints:
            return {}
        out = {}
        for m in self.matches:
            if m.matched:
                got = failures(self.constraints, self.risk_readings.get(m.method, {}),
                               self.not_applicable.get(m.method, {}))
                if got:
                    out[m.method] = got
        return out

    def rank_structure(self) -> dict[str, UtilityRanks]:
        """utility label -> its `UtilityRanks` over the ranked methods (`rank_utility`):
        the one structure the table's rank columns, the ties, the notes and the answer
        sentence all read."""
        ranked = self.ranked()
        out = {}
        for u in self.utilities_shown():
            values = {m: self.utilities[m].get(u, np.nan) for m in ranked}
            samples = {m: self.samples.get(m, {}).get(u) for m in ranked}
            out[u] = rank_utility(u, values, samples,
                                  self.utility_directions.get(u, True))
        return out

    def ties(self) -> dict[str, list[list[str]]]:
        """utility -> groups of ranked methods that share a rank (`rank_structure`:
        with repeats, not separated by their paired differences)."""
        return {u: [sorted(g) for g in s.groups if len(g) > 1]
                for u, s in self.rank_structure().items()
                if any(len(g) > 1 for g in s.groups)}

    def table(self) -> pd.DataFrame:
        """One row per method: ``method, parameter, value, risk, <risk readings>,
        bracketed, evaluations, <utilities>, rank_<u>``; with repeats, also
        ``risk_lo, risk_hi`` and ``<u>_lo, <u>_hi``, each figure's own 95 % interval
        over seeds (`interval`).

        ``value`` keeps the parameter's registered type (object column: k is ``5``,
        not ``5.0``).  Ranks are 1 = best utility (least loss) among the methods
        matched, read from `rank_structure` (a method not matched gets no rank): with
        repeats, the methods whose paired differences
        from the best are not separated from 0 share its rank, then the same rule
        among the rest (`rank_utility`)."""
        # a reading that reads no candidate's release is still a column ("n/a" and why
        # in `display_table`), never silently absent
        readings = list(dict.fromkeys(
            [k for m in self.matches for k in self.risk_readings.get(m.method, {})]
            + [k for m in self.matches for k in self.not_applicable.get(m.method, {})]))
        with_intervals = self.repeats > 1 and bool(self.samples)
        ci = self.intervals() if with_intervals else {}
        rows = []
        for m in self.matches:
            row = {"method": m.method, "parameter": m.parameter,
                   "value": typed_value(m.method, m.parameter, m.value), "risk": m.risk}
            if with_intervals:
                row["risk_lo"], row["risk_hi"] = ci[m.method]["risk"]
            got = self.risk_readings.get(m.method, {})
            row.update({k: got.get(k, np.nan) for k in readings})
            row.update({"bracketed": m.bracketed, "matched": m.matched,
                        "evaluations": m.evaluations})
            for u, v in self.utilities[m.method].items():
                row[u] = v
                if with_intervals:
                    row[f"{u}_lo"], row[f"{u}_hi"] = ci[m.method].get(u, (np.nan, np.nan))
            rows.append(row)
        df = pd.DataFrame(rows)
        df["value"] = pd.Series([r["value"] for r in rows], dtype=object, index=df.index)
        for u, s in self.rank_structure().items():
            df[f"rank_{u}"] = pd.array([s.ranks.get(m, pd.NA) for m in df["method"]],
                                       dtype="Int64")
        return df

    def footnotes(self) -> list[str]:
        """Sentences to print under the ranking: methods left unranked and what to try,
        the test the ranks rest on, ties (with the repeats that would separate them),
        losses below their noise floor, risk readings that differ at "equal" risk, and
        every fitted default the ranking depends on (`FITTED_CHOICES`)."""
        notes = [unreached_note(m, self.risk_measure, self.target)
                 for m in self.matches if not m.matched]
        notes += [f"{display_name(m)} is unranked: at its matched point it fails the "
                  f"risk constraint{'s' if len(f) > 1 else ''} {'; '.join(f)}"
                  for m, f in self.constraint_failures().items()]
        structure = self.rank_structure()
        if len(self.ranked()) >= 2 and structure:
            notes.append(rank_rule_note(next(iter(structure.values())).repeats))
        for s in structure.values():
            notes += s.notes()
        ok = [m for m in self.matches if m.matched]
        # linkage_risk's reading: named apart from the `reidentification` measure
        for key, name in (("reidentification_rate", "nearest-record re-identification rate"),):
            vals = {m.method: self.risk_readings.get(m.method, {}).get(key) for m in ok}
            vals = {k: v for k, v in vals.items() if v is not None and np.isfinite(v)}
            if len(vals) >= 2:
                lo, hi = min(vals, key=vals.get), max(vals, key=vals.get)
                notes.append(
                    f"Methods are matched on {display_name(self.risk_measure)} only, and "
                    "equal risk on one measure is not equal risk on another: at the "
                    f"matched point the {name} ranges from {vals[lo]:.1%} "
                    f"({display_name(lo)}) to {vals[hi]:.1%} ({display_name(hi)}).")
        if self.risk_sample:
            s = next(iter(self.risk_sample.values()))
            se = max(v["standard_error"] for v in self.risk_sample.values())
            notes.append(
                f"The risk ({display_name(self.risk_measure)}) is "
                f"{sample_phrase(s['sampled_records'], s['records'])} (the same records "
                f"for every method at each seed; standard error at most {se:.3g} at the "
                "matched points); "
                "sample=0 links every record, exactly but slowly on large tables.")
        used = [(self.risk_measure, self.risk_params)] + list(self.utility_params.values())
        return notes + ([self.kept_note] if self.kept_note else []) + fitted_notes(used)

    def order(self) -> dict[str, list[list[str]]]:
        """Per utility label, the ranked methods as groups of equal rank, best first
        (`rank_structure`, which the table's ``rank_<u>`` reads too)."""
        return {u: [list(g) for g in s.groups] for u, s in self.rank_structure().items()}

    def utilities_shown(self) -> list[str]:
        """The utility labels, in the order asked."""
        return list(dict.fromkeys(u for m in self.utilities.values() for u in m))

    def target_words(self) -> str:
        """The target as a person reads it: "the record-linkage distance of MDAV
        microaggregation k = 5 (5.84; higher = safer; 12.6 % of records re-identified
        by nearest-record linkage)"."""
        t = term(self.risk_measure)
        label = t.label if t else self.risk_measure
        bits = [f"{self.target:.3g}" if not _is_share(self.risk_measure)
                else f"about {self.target:.0%} of records"]
        if t and t.words and not _is_share(self.risk_measure):
            bits.append(t.words)
        # a population risk: the expected re-identifications the target means
        er = [(self.risk_readings.get(m.method, {}).get("expected_reidentifications"),
               m.risk) for m in self.matches if m.matched and m.risk > 0]
        er = [(e, r) for e, r in er if e is not None and np.isfinite(e)]
        if er:
            n = er[0][0] / er[0][1]
            bits.append(f"{self.target * n:.0f} expected re-identifications in the "
                        f"population among {n:.0f} records")
        ref = self.reference.split(":")[0] if self.reference else None
        rate = self.risk_readings.get(ref, {}).get("reidentification_rate") if ref else None
        if rate is not None and np.isfinite(rate):
            bits.append(f"{rate:.1%} of records re-identified by nearest-record linkage")
        where = (f"the {label} of {release_label(self.reference)}" if self.reference
                 else f"{label} = {self.target:.4g}")
        return f"{where} ({'; '.join(bits)})"

    def answer(self) -> str:
        """The ranking sentence (`ranking_sentence`), then, when methods matched on
        one risk differ on another attack by more than its interval, a second sentence
        naming it (`sdceval.compare.attacks.attack_sentence`)."""
        first = self.ranking_sentence()
        second = attack_sentence(self) if len(self.ranked()) >= 2 else ""
        return f"{first} {second}" if second else first

    def ranking_sentence(self) -> str:
        """The ranking in one sentence (issue 20), read from `order` (the rank structure
        the table's ranks come from, issue 28): the methods first on every utility
        measure, tied or not, and who is next; else who is first on each measure.  A
        property test over random tables checks that it never contradicts the table."""
        at = f"At {self.target_words()}"
        ranked = self.ranked()
        # with constraints, "reached" is reaching the target and meeting every bound
        reached = ("reached the target within the risk constraints" if self.constraints
                   else "reached the target")
        if not ranked:
            return f"{at}, no method {reached}, so nothing is ranked."
        if len(ranked) == 1:
            return (f"{at}, only {display_name(ranked[0])} {reached}, so nothing "
                    "is ranked against it.")
        order = {u: g for u, g in self.order().items() if g}
        if not order:
            return f"{at}, no utility measure ranks the methods."
        names = lambda g: and_list([display_name(m) for m in g])  # noqa: E731
        firsts = {u: g[0] for u, g in order.items()}
        shown = [display_name(u) for u in order]
        on = (f" on {shown[0]}" if len(order) == 1
              else f" on every utility measure ({and_list(shown)})")
        common = [m for m in next(iter(firsts.values()))
                  if all(m in f for f in firsts.values())]
        if not common:
            parts = [names(g) + (" (tied)" if len(g) > 1 else "")
                     + ((" lose least" if len(g) > 1 else " loses least") if i == 0 else "")
                     + f" on {display_name(u)}" for i, (u, g) in enumerate(firsts.items())]
            return (f"{at}, no method ranks first on every utility measure: "
                    f"{', '.join(parts)}.")
        if all(set(f) == set(common) for f in firsts.values()):
            verb = "are tied for" if len(common) > 1 else "keeps"
            text = f"{at}, {names(common)} {verb} the most utility{on}"
            seconds = [g[1] for g in order.values() if len(g) > 1]
            if len(seconds) == len(order) and all(set(g) == set(seconds[0])
                                                  for g in seconds):
                text += (f"; {names(seconds[0])} "
                         f"{'are tied' if len(seconds[0]) > 1 else 'is'} next")
            return text + "."
        others = [f"{names([m for m in f if m not in common])} on {display_name(u)}"
                  for u, f in firsts.items() if set(f) != set(common)]
        verb = "rank" if len(common) > 1 else "ranks"
        return (f"{at}, {names(common)} {verb} first{on}, tied with "
                + " and with ".join(others) + ".")

    def display_table(self) -> pd.DataFrame:
        """The ranking as people read it (report and console): display names, the
        setting as ``k = 5``, every value with its 95 % interval when there are
        repeats; columns named by glossary terms."""
        df = self.table()
        out = pd.DataFrame({"method": [display_name(m) for m in df["method"]],
                            "setting": [f"{p} = {_short(v)}" + _grid_setting(m)
                                        for p, v, m in zip(df["parameter"], df["value"],
                                                           self.matches)]})
        with_ci = self.repeats > 1 and "risk_lo" in df
        readings = [c for c in df.columns if c not in (
            "method", "parameter", "value", "bracketed", "matched", "evaluations", "risk_lo",
            "risk_hi")
            and not c.startswith("rank_") and not c.endswith(("_lo", "_hi"))
            and c not in self.utilities_shown()]
        readings.remove("risk")
        readings.insert(0, "risk")
        # what the ranking rests on first (utilities and their ranks, the matched
        # risk), the other risk readings after: a console too narrow drops those
        structure = self.rank_structure()
        for c in self.utilities_shown() + readings:
            share = _is_share(self.risk_measure if c == "risk" else c)
            if with_ci and f"{c}_lo" in df:
                out[c] = [_with_interval(v, a, b, share) for v, a, b in
                          zip(df[c], df[f"{c}_lo"], df[f"{c}_hi"])]
            else:
                out[c] = df[c].to_numpy()
            missing = {m: why for m, got in self.not_applicable.items()
                       for k, why in got.items() if k == c}
            if missing:  # never a silently missing number
                out[c] = pd.Series([f"n/a ({missing[m]})" if m in missing else v
                                    for m, v in zip(df["method"], out[c])],
                                   dtype=object, index=out.index)
            if c in structure:
                # a loss below its noise floor reads as none, its figure kept beside
                floor = set(structure[c].no_measurable_loss)
                cells = [f"no measurable loss ({_short(v) if not isinstance(v, str) else v})"
                         if m in floor else v for m, v in zip(df["method"], out[c])]
                out[c] = pd.Series(cells, dtype=object, index=out.index) if floor \
                    else out[c]
                out[f"rank_{c}"] = df[f"rank_{c}"].to_numpy()
        out["matched"] = df["matched"].to_numpy()
        if self.constraints:   # whether each matched release meets every bound
            failed = self.constraint_failures()
            out["meets constraints"] = ["no" if m in failed else "yes" if ok else ""
                                        for m, ok in zip(df["method"], df["matched"])]
        return out

    def treatment_table(self) -> pd.DataFrame:
        """What each method's release did to each column: one row per column of the
        schema, one column per method (`sdceval.core.treatment`; empty when no method
        recorded it)."""
        methods = [m.method for m in self.matches if m.method in self.treatment]
        columns = list(dict.fromkeys(c for m in methods for c in self.treatment[m]))
        table = pd.DataFrame({m: [self.treatment[m].get(c, "") for c in columns]
                              for m in methods}, index=pd.Index(columns, name="column"))
        return table

    def treatment_note(self) -> str:
        """The sentence saying the methods publish different columns, naming them (""
        when every release publishes the same ones)."""
        differ = differing_columns(self.treatment)
        if not differ:
            return ""
        return ("The methods publish different columns (" + ", ".join(differ) + " "
                "published by some and dropped by others), so their utilities compare "
                "different columns, not only different methods.")

    def labels(self) -> dict[str, str]:
        """Headers of `display_table` that depend on the comparison: the matched risk
        named, each rank column just "rank" (it follows its utility)."""
        return {"risk": f"matched risk: {axis_label(self.risk_measure)}",
                **{f"rank_{u}": "rank" for u in self.utilities_shown()}}

    def to_dict(self) -> dict[str, Any]:
        table = self.table()
        matches = []
        for m in self.matches:
            d = m.to_dict()
            d["value"] = typed_value(m.method, m.parameter, m.value)
            d["params"] = typed_params(m.method, m.params)
            for step in d["steps"]:
                step["value"] = typed_value(m.method, m.parameter, step["value"])
            matches.append(d)
        return {"dataset": self.dataset, "risk_measure": self.risk_measure,
                "risk_params": self.risk_params, "target": self.target,
                "reference": self.reference, "seed": self.seed, "repeats": self.repeats,
                "matches": matches,
                "utilities": self.utilities, "utility_details": self.measure_details,
                "risk_readings": self.risk_readings, "constraints": self.constraints,
                "constraint_failures": self.constraint_failures(),
                "readings_not_applicable": self.not_applicable,
                "attack_differences": [d.to_dict() for d in attack_differences(self)],
                "samples": self.samples, "treatment": self.treatment,
                "ranks": {u: r.to_dict() for u, r in self.rank_structure().items()},
                "risk_curves": {k: [list(p) for p in v] for k, v in self.curves.items()},
                "ranking": table.astype(object).where(table.notna(), None)
                .to_dict(orient="records"),
                "notes": self.footnotes()}


def _grid_setting(res: BisectionResult) -> str:
    """``", level = 1"``: the grid knobs of the configuration a strategy was matched at
    (`sdceval.compare.ranking.joint_search`); "" for one knob."""
    chosen = [t for t in res.grid if t.get("chosen")]
    if not chosen:
        return ""
    return "".join(f", {k} = {v}" for k, v in chosen[0]["settings"].items())


def _is_share(measure: str) -> bool:
    """A risk measured as a share of the records (re-identification, inference)."""
    t = term(measure)
    return bool(t and t.unit == "share of records")


def _with_interval(v, lo, hi, share: bool) -> str:
    """``value [low, high]``; a share of the records as percents, its interval kept
    within 0..100 % (a prediction interval over few seeds can overshoot)."""
    if share:
        lo, hi = max(float(lo), 0.0), min(float(hi), 1.0)
        return f"{100 * v:.3g} % [{100 * lo:.2g}, {100 * hi:.2g}]"
    return f"{_short(v)} [{lo:.2g}, {hi:.2g}]"


def _short(v) -> str:
    if isinstance(v, (float, np.floating)):
        return f"{float(v):.4g}"
    return str(v)


def unreached_note(res: BisectionResult, risk: str, target: float) -> str:
    """Why a method is left unranked and what to try: the range of the risk it reaches
    and, on the side the target lies, a target within it, another risk measure or
    another parameter (for a method that enforces privacy models: another model).  A
    method that reached the target's side but not within the tolerance is listed as
    "nearest reachable" (`BisectionResult.nearest_note`)."""
    if res.bracketed or res.unprotected:
        model = " or privacy model" if res.params.get("models") is not None else ""
        tries = [f"a finer knob (another parameter{model})", "another risk measure"]
        if not res.unprotected:
            wider = min(1.1 * res.relative_gap, 0.99)
            tries.append(f"a wider tolerance (tolerance={wider:.2g} would accept it)")
        return (f"{display_name(res.method)} ({res.method}): {res.nearest_note()}; it is "
                f"left unranked; try {', or '.join(tries)}")
    lo, hi = res.reachable
    side = "below" if target < lo else "above" if target > hi else "inside"
    if lo == hi:
        # a flat curve: the knob does not move this risk (bucketization and Anatomy
        # publish the QIs exactly: they protect attributes, not identity)
        tries = [f"a risk measure that {res.parameter} moves (e.g. attribute_inference "
                 f"for a method that protects the sensitive attribute, not identity)"]
    else:
        tries = [f"a target within {lo:.4g}..{hi:.4g}"]
    if side == "inside":
        tries.append("more evaluations (the curve is not monotone)")
    if res.params.get("models") is not None and lo != hi:
        tries.append("another privacy model (--model), whose threshold reaches further")
    return (f"{display_name(res.method)} ({res.method}): target {display_name(risk)} "
            f"{target:.4g} not reachable with {res.parameter} "
            f"in its bounds; {res.describe_reach()} (nearest reachable: {res.risk:.4g} "
            f"({res.parameter}={res.value:g})); it is left unranked; try "
            f"{', or '.join(tries)}")


__all__ = ["FITTED_CHOICES", "NO_TEST", "PAIRED_TEST", "Comparison", "PairedTest",
           "UtilityRanks", "fitted_notes", "interval", "rank_rule_note", "rank_utility",
           "repeats_to_separate", "typed_params", "typed_value", "unreached_note"]
