"""Every attack at the matched point (issue 28 item 5, SPEC §5): where methods matched on
one risk still differ on another.

"Equal risk" holds for the measure matched.  At each matched release a comparison also
reads every attack the measure registry declares (`MeasureSpec.attack`:
re-identification, attribute inference on the sensitive attribute, sample uniques on the
published keys; `sdceval.compare.families.default_readings`).  `attack_differences`
finds, per attack, the ranked method most and least exposed, and whether they differ by
more than the reading's interval:

* with repeats (common random numbers: every method sees the same seeds), on their
  per-repeat *paired* differences: the 95 % t-interval of the mean difference excludes
  0 (the paired test of `sdceval.compare.paired`, `interval` with ``of="mean"``);
* with one repeat nothing is tested: a difference of at least `SINGLE_SEED_THRESHOLD`
  (5 percentage points of the records) is named, and the sentence says it is a
  single-seed reading.

`attack_sentence` turns them into the answer's second sentence ("Equal on the
re-identification rate, but Mondrian's attribute inference rate is 19 points higher
than Bucketization's ...").
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sdceval.catalog import MEASURES
from sdceval.compare.composite import is_composite, risk_spec
from sdceval.compare.paired import interval
from sdceval.core.glossary import and_list, display_name

#: with one repeat, the smallest difference (share of records) named: a stated
#: threshold, not a test
SINGLE_SEED_THRESHOLD = 0.05


@dataclass(frozen=True)
class AttackDifference:
    """On ``reading``, ``worse`` exposes ``difference`` (a share of records) more than
    ``better``; ``lo``/``hi``: the 95 % t-interval of the paired per-repeat
    differences (NaN with one repeat)."""

    reading: str
    worse: str
    better: str
    worse_value: float
    better_value: float
    difference: float
    lo: float
    hi: float
    repeats: int

    def to_dict(self) -> dict:
        return {"reading": self.reading, "worse": self.worse, "better": self.better,
                "worse_value": self.worse_value, "better_value": self.better_value,
                "difference": self.difference,
                "difference_lo": None if np.isnan(self.lo) else self.lo,
                "difference_hi": None if np.isnan(self.hi) else self.hi,
                "repeats": self.repeats,
                "test": ("paired t-interval excludes 0" if self.repeats > 1 else
                         f"single seed: difference >= {SINGLE_SEED_THRESHOLD:g}")}


def _spec(label: str):
    """The measure a reading's label names (``attribute_inference`` or
    ``attribute_inference(tol=0.1)``), None for another label."""
    return MEASURES.get(str(label).split("(")[0])


def is_attack(label: str) -> bool:
    """Whether a reading's label names an attack measure."""
    spec = _spec(label)
    return bool(spec is not None and spec.attack)


def attack_differences(comp) -> list[AttackDifference]:
    """Per attack reading of ``comp`` (a `Comparison`), the largest gap between two
    ranked methods when it exceeds the reading's interval (module notes)."""
    ranked = comp.ranked()
    if len(ranked) < 2:
        return []
    labels = dict.fromkeys(k for m in ranked for k in comp.risk_readings.get(m, {}))
    out = []
    for label in labels:
        if not is_attack(label) or label == comp.risk_measure:
            continue
        vals = {m: comp.risk_readings.get(m, {}).get(label) for m in ranked}
        vals = {m: v for m, v in vals.items() if v is not None and np.isfinite(v)}
        if len(vals) < 2:
            continue
        worse, better = max(vals, key=vals.get), min(vals, key=vals.get)
        diff = float(vals[worse] - vals[better])
        a = comp.samples.get(worse, {}).get(label)
        b = comp.samples.get(better, {}).get(label)
        if comp.repeats > 1 and a is not None and b is not None and len(a) == len(b) > 1:
            lo, hi = interval(np.asarray(a) - np.asarray(b), of="mean")
            clear = lo > 0
        else:
            lo = hi = np.nan
            clear = diff >= SINGLE_SEED_THRESHOLD
        if clear:
            out.append(AttackDifference(label, worse, better, float(vals[worse]),
                                        float(vals[better]), diff, lo, hi,
                                        comp.repeats))
    return out


def attack_sentence(comp) -> str:
    """The answer's second sentence: on which attacks the methods matched on one risk
    differ by more than the reading's interval ("" when on none)."""
    found = attack_differences(comp)
    if not found:
        return ""
    parts = []
    for d in found:
        how = (f"paired 95 % interval of the difference {100 * d.lo:.1f} to "
               f"{100 * d.hi:.1f} points over {d.repeats} repeats" if d.repeats > 1 else
               "a single-seed reading, not tested: run with repeats to get an interval")
        # an attack risk is a rate beyond the control attack's, not a share of records
        unit = ("of attack risk" if getattr(_spec(d.reading), "unit", "") == "attack risk"
                else "percent of records")
        parts.append(f"{display_name(d.worse)}'s {display_name(d.reading)} is "
                     f"{100 * d.difference:.1f} points ({unit}) higher than "
                     f"{display_name(d.better)}'s ({d.worse_value:.1%} against "
                     f"{d.better_value:.1%}; {how})")
    matched = (risk_spec(comp.risk_measure).label if is_composite(comp.risk_measure)
               else display_name(comp.risk_measure))
    return (f"Equal on the {matched}, but not on every attack: "
            + and_list(parts) + ".")


__all__ = ["SINGLE_SEED_THRESHOLD", "AttackDifference", "attack_differences",
           "attack_sentence", "is_attack"]
