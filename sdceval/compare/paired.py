"""The statistics of a comparison's ranks (issue 28 item 4, SPEC §5): paired
differences over common random numbers, the noise floor of a loss, each figure's own
interval.

Every candidate of a comparison sees the same seeds at each repeat (common random
numbers: the method's seed, the query workload, the ML split, the linkage sample), so
two methods are compared on their per-repeat *differences* — what a seed moves for
every method (a hard query workload) cancels.  `rank_utility` builds one utility's rank
structure (`UtilityRanks`): the best, the methods whose paired 95 % t-interval of
differences from it contains 0 (a paired t-test, Student 1908; e.g. Montgomery,
*Design and Analysis of Experiments*, §2.5.1), then the same rule among the rest;
`repeats_to_separate` reads how many repeats would separate a difference of the size
measured.  `interval` is the interval shown beside each figure.  The table, the notes
and the answer sentence of `sdceval.compare.comparison.Comparison` all read this one
structure.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from sdceval.core.glossary import and_list, display_name


@dataclass(frozen=True)
class PairedTest:
    """One ranked method against the best of the methods left when its group was
    formed (`rank_utility`), on one utility: the mean of the per-repeat differences
    ``method - best`` in loss orientation (> 0: ``method`` loses more) and its 95 %
    t-interval; ``separated`` when the interval excludes 0; ``needed``: the repeats that
    would separate a difference of this size (`repeats_to_separate`)."""

    best: str
    method: str
    mean: float
    lo: float
    hi: float
    repeats: int
    separated: bool
    needed: int | None

    def to_dict(self) -> dict:
        return {"best": self.best, "method": self.method, "mean_difference": self.mean,
                "difference_lo": self.lo, "difference_hi": self.hi,
                "separated": self.separated, "repeats_to_separate": self.needed}


#: the statistic the ranks rest on, as results.json and the notes name it
PAIRED_TEST = ("paired t-test: the 95 % t-interval of the per-repeat differences "
               "(common seeds) contains 0")
NO_TEST = "none: one repeat, methods ordered by their values"


@dataclass(frozen=True)
class UtilityRanks:
    """The rank structure of one utility over the ranked methods (`rank_utility`):
    ``groups`` of equal rank, best first; ``ranks`` (1 + the methods in the groups
    before); the methods with ``no_measurable_loss``; the ``pairs`` tested (each
    method against the best of its group, each later group's best against the one
    before); ``ranked_values``: the per-repeat values compared (loss orientation,
    smaller = better, a loss below its noise floor as 0)."""

    utility: str
    repeats: int
    groups: list[list[str]]
    ranks: dict[str, int]
    no_measurable_loss: list[str]
    pairs: list[PairedTest]
    ranked_values: dict[str, list[float]]
    values: dict[str, float]

    @property
    def paired(self) -> bool:
        return self.repeats > 1

    def notes(self) -> list[str]:
        """The sentences under the table for this utility: the ties with the repeats
        that would separate each, and the losses below their noise floor."""
        name, out = display_name(self.utility), []
        floor = set(self.no_measurable_loss)
        # two losses below the floor tie by definition: the floor's note says so
        tied = [p for p in self.pairs if not p.separated
                and not {p.best, p.method} <= floor]
        if tied and self.paired:
            out.append(f"Tied on {name} (paired 95 % t-interval of the per-repeat "
                       f"differences over {self.repeats} repeats contains 0): " + "; ".join(
                           f"{display_name(p.method)} − {display_name(p.best)} = "
                           f"{p.mean:.3g} [{p.lo:.3g}, {p.hi:.3g}], "
                           + (f"about {p.needed} repeats would separate a difference of "
                              "this size" if p.needed else "no difference measured"
                              if p.mean == 0 else f"more than {MAX_REPEATS:,} repeats "
                              "would not separate it")
                           for p in tied) + " (a reading: if the spread of the differences "
                       "stays the same).")
        if self.no_measurable_loss:
            rule = ("a mean loss of 0 or less, or a repeat at 0 or less with 0 inside the "
                    "95 % t-interval of the mean" if self.paired
                    else "with one repeat: a loss of 0 or less")
            out.append(f"On {name}, {and_list([display_name(m) for m in self.no_measurable_loss])}"
                       f" show no measurable loss ("
                       + ", ".join(f"{self.values[m]:.3g}" for m in self.no_measurable_loss)
                       + f"; {rule}): below the measure's noise floor, counted as 0 for "
                       "ranking, never as a gain.")
        return out

    def to_dict(self) -> dict:
        return {"test": PAIRED_TEST if self.paired else NO_TEST, "repeats": self.repeats,
                "groups": self.groups, "ranks": self.ranks,
                "no_measurable_loss": self.no_measurable_loss,
                "pairs": [p.to_dict() for p in self.pairs]}


def rank_rule_note(repeats: int) -> str:
    """The sentence naming the test the ranks rest on."""
    if repeats > 1:
        return ("Ranks: on each utility, a method shares the best's rank when the 95 % "
                "t-interval of their per-repeat differences contains 0 (a paired t-test "
                f"over the {repeats} repeats, every method at the same seeds); the "
                "methods left are ranked by the same rule. A figure's own [interval] is "
                "its 95 % prediction interval over seeds (what another seed would give).")
    return ("Ranks: with one repeat no difference can be tested; the ranks order the "
            "values measured at one seed, and methods share a rank only when their values "
            "are equal. --repeats 3 or more tests each difference (a paired t-interval "
            "over common seeds).")


def rank_utility(utility: str, values: dict[str, float],
                 samples: dict[str, list[float] | None], larger_is_worse: bool,
                 level: float = 0.95) -> UtilityRanks:
    """The rank structure of one utility over the ranked methods (issue 28, SPEC §5).

    Values are turned to losses (``-value`` when larger is better).  A loss is below
    its noise floor — **no measurable loss**, counted as 0 at every repeat — when its
    mean is ≤ 0, or when some repeat measured a loss ≤ 0 and the ``level`` t-interval of
    its mean, mean ± t · sd / √n, contains 0: the measure's noise then reaches 0 (a
    classifier's AUC lost of −0.02 is the regularization of coarsened one-hots, not a
    gain).  A loss above 0 at every repeat is measured, however wide its interval (a
    query error's spread is the workload's, common to every method and taken out by
    the pairing); one repeat: a loss ≤ 0.  A measure where larger is better has no
    floor.  With two repeats or more every method is paired with the others by repeat
    (common random numbers): the best (smallest mean loss) heads the first group, and
    every method whose per-repeat differences from it have a ``level`` t-interval
    containing 0 joins it (a paired t-test; an interval of width 0 is a difference
    known exactly); the rest are grouped by the same rule.  Groups are ranked
    1 + the methods in the groups before.  With one repeat (or values without their
    repeats) nothing is tested: methods are ordered by value, equal values sharing a
    rank.  A method whose value is not finite gets no rank."""
    finite = [m for m, v in values.items() if v is not None and np.isfinite(v)]
    sign = 1.0 if larger_is_worse else -1.0
    lengths = {len(samples[m]) for m in finite if samples.get(m) is not None}
    n = lengths.pop() if len(lengths) == 1 and all(samples.get(m) is not None
                                                   for m in finite) else 1
    if n > 1:
        loss = {m: sign * np.asarray(samples[m], dtype=np.float64) for m in finite}
        if not all(np.isfinite(x).all() for x in loss.values()):
            n, loss = 1, {m: np.array([sign * values[m]]) for m in finite}
    else:
        loss = {m: np.array([sign * values[m]]) for m in finite}
    floor = []
    if larger_is_worse:
        floor = [m for m in finite if loss[m].mean() <= 0 or (
            loss[m].min() <= 0 and _mean_interval(loss[m], level)[0] <= 0)]
    for m in floor:
        loss[m] = np.zeros_like(loss[m])
    left = sorted(finite, key=lambda m: float(loss[m].mean()))  # stable: table order
    groups, ranks, pairs, before = [], {}, [], None
    while left:
        best = left[0]
        if before is not None:
            pairs.append(_paired(loss, before, best, level))
        group, rest = [best], []
        for m in left[1:]:
            test = _paired(loss, best, m, level)
            if test.separated:
                rest.append(m)
            else:
                group.append(m)
                pairs.append(test)
        for m in group:
            ranks[m] = 1 + sum(len(g) for g in groups)
        groups.append(group)
        before, left = best, rest
    return UtilityRanks(utility, n, groups, ranks, floor, pairs,
                        {m: [float(x) for x in loss[m]] for m in finite},
                        {m: float(values[m]) for m in finite})


def _mean_interval(x: np.ndarray, level: float) -> tuple[float, float]:
    """`interval` of the mean of ``x`` (a single value: the value itself)."""
    return interval(x, level, of="mean") if len(x) > 1 else (float(x[0]), float(x[0]))


def _paired(loss: dict[str, np.ndarray], best: str, method: str, level: float
            ) -> PairedTest:
    """``method`` against ``best`` on their per-repeat differences (`PairedTest`)."""
    d = loss[method] - loss[best]
    lo, hi = _mean_interval(d, level)
    mean = float(d.mean())
    separated = not lo <= 0 <= hi
    sd = float(d.std(ddof=1)) if len(d) > 1 else 0.0
    needed = None if separated else repeats_to_separate(mean, sd, level)
    return PairedTest(best, method, mean, lo, hi, len(d), separated, needed)


#: beyond this many repeats a difference is called not measurable (`repeats_to_separate`)
MAX_REPEATS = 1_000_000


def repeats_to_separate(mean: float, sd: float, level: float = 0.95) -> int | None:
    """The fewest repeats ``n`` at which a mean difference ``mean`` with per-repeat
    standard deviation ``sd`` would be separated from 0: t(n − 1) · sd / √n < |mean|,
    i.e. n ≈ (t · sd / mean)² (a reading: it assumes the spread stays the same).
    ``None`` when no difference was measured (mean 0) or it would take more than
    `MAX_REPEATS`."""
    if mean == 0 or not np.isfinite(mean) or not np.isfinite(sd):
        return None
    if sd == 0:
        return 2
    def separates(n: int) -> bool:
        return _t(level, n - 1) * sd / math.sqrt(n) < abs(mean)
    if not separates(MAX_REPEATS):
        return None
    lo, hi = 2, 4
    while not separates(hi):  # ends by MAX_REPEATS
        lo, hi = hi, hi * 2
    if separates(lo):
        return lo
    while hi - lo > 1:  # separates(hi), not separates(lo)
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if separates(mid) else (mid, hi)
    return hi


def interval(samples, level: float = 0.95, of: str = "seed") -> tuple[float, float]:
    """The ``level`` Student-t interval (n − 1 degrees of freedom) of a figure measured
    at ``n`` seeds.  ``of="seed"`` (shown beside every figure): the prediction interval
    of the value at one more seed, mean ± t · sd · √(1 + 1/n), "what would this release
    give with another seed?".  ``of="mean"``: the confidence interval of the mean,
    mean ± t · sd / √n, which shrinks with n: the paired test of `rank_utility` applies
    it to per-seed differences.  NaN for fewer than two samples; a width of 0 where the
    figure does not depend on the seed."""
    x = np.asarray(samples, dtype=np.float64)
    n = len(x)
    if n < 2 or not np.isfinite(x).all():
        return (np.nan, np.nan)
    scale = math.sqrt(1 + 1 / n) if of == "seed" else 1 / math.sqrt(n)
    half = float(_t(level, n - 1) * x.std(ddof=1) * scale)
    return (float(x.mean() - half), float(x.mean() + half))


def _t(level: float, df: int) -> float:
    """Student's t quantile of a two-sided ``level`` interval with ``df`` degrees of
    freedom."""
    from scipy import stats
    return float(stats.t.ppf(0.5 + level / 2, df))


__all__ = ["MAX_REPEATS", "NO_TEST", "PAIRED_TEST", "PairedTest", "UtilityRanks",
           "interval", "rank_rule_note", "rank_utility", "repeats_to_separate"]
