"""The result of a risk-equalized comparison (`sdceval.compare.ranking`): every
method's matched release, its utilities and its other risk readings, ranked, and the
words and tables people read it in.

`Comparison.table` ranks the methods that reached the target (1 = least loss); with
repeats a rank is 1 + the number of methods whose 95 % interval over the seeds lies
entirely on the better side (`interval`: a prediction interval, Student's t), so methods
whose intervals overlap share a rank.  "Equal risk" holds for the one measure matched:
`Comparison.footnotes` says how far the other risk readings spread at the matched point
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
from sdceval.compare.bisection import BisectionResult
from sdceval.core.glossary import (axis_label, display_name, register_term, release_label,
                                   term)
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

    def intervals(self) -> dict[str, dict[str, tuple[float, float]]]:
        """method -> "risk" / utility -> its 95 % interval over the repeats (`interval`;
        NaN with one repeat)."""
        return {m: {k: interval(v) for k, v in got.items()}
                for m, got in self.samples.items()}

    def ranked(self) -> list[str]:
        """The methods that reached the target (the ones ranked)."""
        return [m.method for m in self.matches if m.bracketed]

    def ties(self) -> dict[str, list[list[str]]]:
        """utility -> groups of ranked methods whose intervals overlap (with repeats)."""
        out: dict[str, list[list[str]]] = {}
        table = self.table()
        for u in self.utility_directions:
            col = f"rank_{u}"
            groups = [sorted(g.method) for _, g in table.dropna(subset=[col]).groupby(col)
                      if len(g) > 1]
            if groups:
                out[u] = groups
        return out

    def table(self) -> pd.DataFrame:
        """One row per method: ``method, parameter, value, risk, <risk readings>,
        bracketed, evaluations, <utilities>, rank_<u>``; with repeats, also
        ``risk_lo, risk_hi`` and ``<u>_lo, <u>_hi``, the 95 % intervals over seeds.

        ``value`` keeps the parameter's registered type (object column: k is ``5``,
        not ``5.0``).  Ranks are 1 = best utility (least loss) among methods that reached
        the target; a method whose target was not bracketed gets no rank.  With
        repeats, a method's rank is 1 + the number of methods whose interval lies
        entirely on the better side of its own: methods whose intervals overlap share a
        rank (a tie that the noise of the seeds cannot break)."""
        readings = list(dict.fromkeys(k for m in self.matches
                                      for k in self.risk_readings.get(m.method, {})))
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
            row.update({"bracketed": m.bracketed, "evaluations": m.evaluations})
            for u, v in self.utilities[m.method].items():
                row[u] = v
                if with_intervals:
                    row[f"{u}_lo"], row[f"{u}_hi"] = ci[m.method][u]
            rows.append(row)
        df = pd.DataFrame(rows)
        df["value"] = pd.Series([r["value"] for r in rows], dtype=object, index=df.index)
        ok = df["bracketed"].to_numpy(bool)
        for u, larger_worse in self.utility_directions.items():
            if with_intervals:
                df[f"rank_{u}"] = _overlap_ranks(df, u, ok, larger_worse)
                continue
            vals = df[u].where(ok)
            df[f"rank_{u}"] = (vals if larger_worse else -vals).rank(method="min").astype("Int64")
        return df

    def footnotes(self) -> list[str]:
        """Sentences to print under the ranking: methods left unranked and what to try,
        ties the seeds cannot break, risk readings that differ at "equal" risk, and
        every fitted default the ranking depends on (`FITTED_CHOICES`)."""
        notes = [unreached_note(m, self.risk_measure, self.target)
                 for m in self.matches if not m.bracketed]
        for u, groups in self.ties().items():
            notes.append(f"Tied on {display_name(u)} (95 % intervals over {self.repeats} "
                         "seeds overlap): "
                         + "; ".join(", ".join(map(display_name, g)) for g in groups) + ".")
        ok = [m for m in self.matches if m.bracketed]
        for key, name in (("reidentification_rate", "re-identification rate"),):
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
        return notes + fitted_notes(used)

    def order(self) -> dict[str, list[list[str]]]:
        """Per utility label, the ranked methods as groups of equal rank, best first
        (`table`'s ``rank_<u>``: with repeats, methods whose intervals overlap share a
        group)."""
        df = self.table()
        out = {}
        for u in self.utilities_shown():
            ranks = df[["method", f"rank_{u}"]].dropna()
            groups = {}
            for m, r in zip(ranks["method"], ranks[f"rank_{u}"]):
                groups.setdefault(int(r), []).append(m)
            out[u] = [groups[r] for r in sorted(groups)]
        return out

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
        ref = self.reference.split(":")[0] if self.reference else None
        rate = self.risk_readings.get(ref, {}).get("reidentification_rate") if ref else None
        if rate is not None and np.isfinite(rate):
            bits.append(f"{rate:.1%} of records re-identified by nearest-record linkage")
        where = (f"the {label} of {release_label(self.reference)}" if self.reference
                 else f"{label} = {self.target:.4g}")
        return f"{where} ({'; '.join(bits)})"

    def answer(self) -> str:
        """The ranking in one sentence (issue 20): which method keeps the most utility at
        the matched risk, who follows, and where the utility measures disagree."""
        at = f"At {self.target_words()}"
        ranked = self.ranked()
        if not ranked:
            return f"{at}, no method reached the target, so nothing is ranked."
        if len(ranked) == 1:
            return (f"{at}, only {display_name(ranked[0])} reached the target, so nothing "
                    "is ranked against it.")
        order = self.order()
        names = lambda g: _and([display_name(m) for m in g])  # noqa: E731
        bests = {u: tuple(g[0]) for u, g in order.items() if g}
        firsts = set(bests.values())
        if len(firsts) == 1:
            best = next(iter(firsts))
            u0 = next(iter(order))
            on = ("" if len(order) == 1 else " on every utility measure ("
                  + _and([display_name(u) for u in order]) + ")")
            if len(best) > 1:
                text = f"{at}, {names(best)} are tied for the most utility{on}"
            else:
                text = f"{at}, {names(best)} keeps the most utility{on}"
            rest = order[u0][1:]
            if rest and all(order[u][1:2] == rest[:1] for u in order):
                second = rest[0]
                text += (f"; {names(second)} {'are tied' if len(second) > 1 else 'is'} "
                         "second")
            return text + "."
        parts = [f"{names(best)}{' (tied)' if len(best) > 1 else ''} on {display_name(u)}"
                 for u, best in bests.items()]
        return (f"{at}, no method keeps the most utility on every measure: "
                f"{parts[0].replace(' on ', ' loses least on ', 1)}, "
                f"{', '.join(parts[1:])}.")

    def display_table(self) -> pd.DataFrame:
        """The ranking as people read it (report and console): display names, the
        setting as ``k = 5``, every value with its 95 % interval when there are
        repeats; columns named by glossary terms."""
        df = self.table()
        out = pd.DataFrame({"method": [display_name(m) for m in df["method"]],
                            "setting": [f"{p} = {_short(v)}" for p, v in
                                        zip(df["parameter"], df["value"])]})
        with_ci = self.repeats > 1 and "risk_lo" in df
        readings = [c for c in df.columns if c not in (
            "method", "parameter", "value", "bracketed", "evaluations", "risk_lo", "risk_hi")
            and not c.startswith("rank_") and not c.endswith(("_lo", "_hi"))
            and c not in self.utilities_shown()]
        readings.remove("risk")
        readings.insert(0, "risk")
        # what the ranking rests on first (utilities and their ranks, the matched
        # risk), the other risk readings after: a console too narrow drops those
        for c in self.utilities_shown() + readings:
            share = _is_share(self.risk_measure if c == "risk" else c)
            if with_ci and f"{c}_lo" in df:
                out[c] = [_with_interval(v, a, b, share) for v, a, b in
                          zip(df[c], df[f"{c}_lo"], df[f"{c}_hi"])]
            else:
                out[c] = df[c].to_numpy()
            if c in self.utilities_shown():
                out[f"rank_{c}"] = df[f"rank_{c}"].to_numpy()
        out["bracketed"] = df["bracketed"].to_numpy()
        return out

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
                "risk_readings": self.risk_readings,
                "samples": self.samples,
                "risk_curves": {k: [list(p) for p in v] for k, v in self.curves.items()},
                "ranking": table.astype(object).where(table.notna(), None)
                .to_dict(orient="records"),
                "notes": self.footnotes()}


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


def _and(items: list[str]) -> str:
    items = list(items)
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + " and " + items[-1]


def _overlap_ranks(df: pd.DataFrame, u: str, ok: np.ndarray, larger_worse: bool):
    """1 + the number of ranked methods whose interval of ``u`` lies entirely on the
    better side of this method's (`Comparison.table`); NA for unranked methods."""
    lo, hi = df[f"{u}_lo"].to_numpy(float), df[f"{u}_hi"].to_numpy(float)
    if not larger_worse:  # higher is better: negate so that lower is better
        lo, hi = -hi, -lo
    same = ~np.isfinite(lo) | ~np.isfinite(hi)  # no interval: the value itself
    v = df[u].to_numpy(float) * (1 if larger_worse else -1)
    lo, hi = np.where(same, v, lo), np.where(same, v, hi)
    ranks = [1 + int(((hi < lo[i]) & ok).sum()) if ok[i] else pd.NA for i in range(len(df))]
    return pd.array(ranks, dtype="Int64")


def interval(samples, level: float = 0.95) -> tuple[float, float]:
    """The ``level`` interval over seeds of a figure measured at ``n`` seeds: the
    prediction interval of the value at one more seed, mean ± t · sd · √(1 + 1/n)
    (Student's t with n − 1 degrees of freedom).  It answers "what would this release
    give with another seed?", which is what decides whether two methods' order is real
    or noise (a confidence interval of the mean, ± t · sd / √n, shrinks with n and
    would call methods different whose releases overlap).  NaN for fewer than two
    samples; a width of 0 where the figure does not depend on the seed."""
    x = np.asarray(samples, dtype=np.float64)
    n = len(x)
    if n < 2 or not np.isfinite(x).all():
        return (np.nan, np.nan)
    from scipy import stats
    half = float(stats.t.ppf(0.5 + level / 2, n - 1) * x.std(ddof=1) * np.sqrt(1 + 1 / n))
    return (float(x.mean() - half), float(x.mean() + half))


def unreached_note(res: BisectionResult, risk: str, target: float) -> str:
    """Why a method is left unranked and what to try: the range of the risk it reaches
    and, on the side the target lies, a target within it, another risk measure or
    another parameter (for a method that enforces privacy models: another model)."""
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
            f"in its bounds; {res.describe_reach()} (closest: {res.parameter}="
            f"{res.value:g}); it is left unranked; try {', or '.join(tries)}")


__all__ = ["FITTED_CHOICES", "Comparison", "fitted_notes", "interval", "typed_params",
           "typed_value", "unreached_note"]
