"""Recursive (c, ℓ)-diversity (Machanavajjhala et al. 2007, Def. 4.2), model ``"cl"``.

References
----------
Machanavajjhala, Kifer, Gehrke, Venkitasubramaniam (2007). ℓ-diversity: privacy beyond
k-anonymity. ACM TKDD 1(1), Def. 4.2 (recursive (c, ℓ)-diversity), §5 (monotonicity).
"""
from __future__ import annotations

import math

import numpy as np

from sdceval.core.registry import Param
from sdceval.privacy.base import _RTOL, PrivacyModel, register_model


@register_model
class RecursiveCLDiversity(PrivacyModel):
    """Recursive (c, ℓ)-diversity (Machanavajjhala et al. 2007, Def. 4.2).

    With a class's sensitive counts sorted descending, r_1 ≥ r_2 ≥ … ≥ r_m (m values
    present), the class satisfies it iff

        r_1 < c · (r_ℓ + r_{ℓ+1} + … + r_m),

    violated when m < ℓ (an empty sum).  c > 0 real, ℓ ≥ 2 integer.  A tie
    (r_1 = c · Σ) violates, also for a decimal c such as 0.1 (compared with a relative
    tolerance of 1e-9, as the other thresholds).

    ``value`` per class = r_1 / (r_ℓ + … + r_m) (∞ when m < ℓ): the class satisfies the
    model iff value < c, so it is the class's achieved c (lower is safer; Mondrian's
    ``achieved["c"]`` and the ``recursive_cl_diversity`` check report its maximum).
    `largest_l` gives the other reading: the largest ℓ the class reaches at this c.

    Monotonicity with generalization — yes (Machanavajjhala et al. §5 prove it): the
    condition is r_1 + c·(r_1 + … + r_{ℓ−1}) < c·n, and a sum of the j largest counts
    is subadditive over merged classes (the top j of a sum are at most the sum of the
    tops), so the left side of a union is at most the sum of its parts' while c·n adds
    up.  ARX: the same.

    Monotonicity with suppression — no: c = 2, ℓ = 2: (1, 1) satisfies (1 < 2),
    (5, 0) violates (one value), their union (6, 1) violates (6 < 2 fails).  ARX: the
    same.

    Minimal class size: a satisfying class has m ≥ ℓ − 1 + j values with j > 1/c tail
    values (each tail count is ≤ r_1, so r_1 < c·j·r_1): m ≥ ℓ − 1 + ⌊1/c⌋ + 1, and
    n ≥ m.  That is ℓ for c > 1, tighter than ARX's ℓ for c ≤ 1.
    """

    name = "cl"
    title = "recursive (c,ℓ)-diversity"
    params = (Param("c", float, None, low=0.0, low_inclusive=False, protection="decreasing",
                    grid=(0.5, 0.75, 1.0, 1.5, 2.0, 3.0, 4.0, 5.0),
                    description="the most frequent sensitive value of a class has fewer "
                                "than c times the records of its ℓ-th, (ℓ+1)-th, ... "
                                "most frequent values together"),
              Param("l", int, None, low=2,
                    description="ℓ: the tail r_ℓ + ... + r_m starts at the ℓ-th most "
                                "frequent value (an integer >= 2)"))
    monotone_generalization = True
    monotone_suppression = False
    larger_is_safer = False
    example = {"c": 3, "l": 3}
    check_name = "recursive_cl_diversity"
    check_defaults = {"l": 2}

    def __init__(self, c: float, l: int):  # noqa: E741
        self.c = self.check_param("c", c)
        self.l = self.check_param("l", l)
        self.threshold = self.c

    @staticmethod
    def _sorted(counts) -> np.ndarray:
        # each row descending: one vectorized sort over all classes
        return np.sort(np.asarray(counts, dtype=np.float64), axis=1)[:, ::-1]

    def _head_tail(self, counts) -> tuple[np.ndarray, np.ndarray]:
        srt = self._sorted(counts)
        return srt[:, 0], srt[:, self.l - 1:].sum(axis=1)

    def value(self, counts, table_dist=None):
        r1, tail = self._head_tail(counts)
        return np.divide(r1, tail, out=np.full_like(r1, np.inf), where=tail > 0)

    def satisfied(self, counts, table_dist=None):
        r1, tail = self._head_tail(counts)
        return r1 < self.c * tail * (1 - _RTOL)

    def largest_l(self, counts) -> np.ndarray:
        """Per class, the largest ℓ' ≥ 1 with r_1 < c · Σ_{i≥ℓ'} r_i at this c (0 if
        none; ℓ' = 1 is the whole class, r_1 < c·n).  The tails Σ_{i≥ℓ'} are the
        cumulative sums of the sorted counts from the right; they shrink as ℓ' grows,
        so the ℓ' that hold are a prefix and their number is the answer."""
        srt = self._sorted(counts)
        tails = np.cumsum(srt[:, ::-1], axis=1)[:, ::-1]
        ok = srt[:, :1] < self.c * tails * (1 - _RTOL)
        return ok.sum(axis=1).astype(np.int64)

    def min_class_size(self, table_dist=None) -> int:
        x = 1.0 / (self.c * (1 - _RTOL))
        # rounding x down a little more only weakens the bound (it must stay a bound)
        j = math.floor(x * (1 - 1e-12)) + 1
        return self.l - 1 + j

    def infeasible_message(self, best, total_counts) -> str:
        srt = np.sort(np.asarray(total_counts))[::-1]
        m = int((srt > 0).sum())
        head = f"recursive (c,ℓ)-diversity with c={self.c:g}, l={self.l} cannot be met " \
               "even by the whole table as one class: "
        if m == 1:
            return head + ("the sensitive attribute has a single value, so no ℓ >= 2 can "
                           "be met (recursive (c,ℓ)-diversity needs at least 2 values)")
        if m < self.l:
            return head + (f"the sensitive attribute has only {m} distinct sensitive "
                           f"values; choose l <= {m}")
        r1, tail = int(srt[0]), int(srt[self.l - 1:].sum())
        best_l = int(self.largest_l(np.asarray(total_counts)[None, :])[0])
        alt = f", or l <= {best_l}" if best_l >= 2 else ""
        return head + (f"r_1 / (r_{self.l} + ... + r_{m}) = {r1} / {tail} = {best:.4g} "
                       f"(c must exceed it); choose c > {best:.4g}{alt}")

    def describe(self) -> str:
        return f"c={self.c:g}, l={self.l}"
