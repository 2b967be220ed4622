"""Ranks on an original's scale, for record linkage (`sdceval.measures.linkage`, whose
module notes give the definitions): average ranks of a table (`rank_matrix`), and the
rank scale of an original (`OriginalScale`: its values' mid-ranks, interpolated and
extrapolated for released values), built from the records or from value counts merged
over parts of a table (`OriginalScale.from_counts`).
"""
from __future__ import annotations

import weakref

import numpy as np


def rank_matrix(a: np.ndarray) -> np.ndarray:
    """Column-wise average ranks of ``a`` (1..n; ties share the mean of their ranks).

    A tie block occupying sorted positions ``f..l`` (0-based) gets rank
    ``(f + l) / 2 + 1``; this equals ``scipy.stats.rankdata(a, "average", axis=0)``
    (tested), one sort per column (temporaries of one column, not of the table),
    without importing scipy.stats (~0.5 s)."""
    a = np.asarray(a, dtype=np.float64)
    ranks = np.empty(a.shape, dtype=np.float64)
    for j in range(a.shape[1]):
        ranks[:, j] = _column_ranks(a[:, j])[0]
    return ranks


def _column_ranks(col: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Average ranks of ``col``, its sorted distinct values and their mid-ranks, from
    one sort."""
    n = len(col)
    order = np.argsort(col, kind="stable")
    s = col[order]
    new_block = np.ones(n, dtype=bool)
    new_block[1:] = s[1:] != s[:-1]
    starts = np.flatnonzero(new_block)
    counts = np.diff(np.r_[starts, n])
    mid = _mid_ranks(counts)
    ranks = np.empty(n, dtype=np.float64)
    ranks[order] = np.repeat(mid, counts)
    return ranks, s[starts], mid


def _mid_ranks(counts) -> np.ndarray:
    """Mid-ranks of consecutive blocks of ``counts`` tied values: a block at sorted
    positions ``f..l`` (0-based) gets ``(f + l) / 2 + 1`` = (values up to and including
    it) − (its count − 1) / 2."""
    counts = np.asarray(counts)
    return np.cumsum(counts) - (counts - 1) / 2.0


#: extrapolated ranks are capped at +-2**400 (~2.6e120), so that squared rank distances
#: stay finite; a released value reaches the cap only 1e120 gaps beyond the original's range
RANK_CAP = 2.0 ** 400


class OriginalScale:
    """The rank scale of an original ``X``: its mid-ranks, and per attribute the sorted
    distinct values ``v_1 < ... < v_K`` with their mid-ranks ``r_1 < ... < r_K``
    (``r_k`` = number of values below ``v_k`` + (number equal to ``v_k`` + 1) / 2)."""

    __slots__ = ("ranks", "values", "mid_ranks")

    def __init__(self, x: np.ndarray):
        x = np.asarray(x, dtype=np.float64)
        self.ranks = np.empty(x.shape, dtype=np.float64)
        self.values, self.mid_ranks = [], []
        for j in range(x.shape[1]):
            self.ranks[:, j], v, mid = _column_ranks(x[:, j])
            self.values.append(v)
            self.mid_ranks.append(mid)
        self.ranks.setflags(write=False)

    @classmethod
    def from_counts(cls, values: list, counts: list) -> "OriginalScale":
        """The scale from each attribute's sorted distinct values and their counts
        (what a table read in parts gives: `sdceval.experiments.partitioned`), without
        the records' own ranks (``ranks`` is None): rank the records with `rank`,
        which gives an original value exactly its mid-rank."""
        self = cls.__new__(cls)
        self.ranks = None
        self.values = [np.asarray(v, dtype=np.float64) for v in values]
        self.mid_ranks = [_mid_ranks(c) for c in counts]
        return self

    @property
    def shape(self) -> tuple[int, int]:
        return self.ranks.shape

    def rank(self, y: np.ndarray) -> np.ndarray:
        """Ranks of the released values ``y`` (n', m) on this scale (module notes).

        Per attribute, the piecewise-linear function through the points ``(v_k, r_k)``,
        extended beyond ``v_1`` and ``v_K`` by its first and last segments (a constant
        attribute, ``K = 1``, gives every value its one mid-rank).  A value equal to
        ``v_k`` gets exactly ``r_k``; strictly increasing in ``y`` when ``K >= 2``
        (up to rounding)."""
        y = np.asarray(y, dtype=np.float64)
        out = np.empty(y.shape, dtype=np.float64)
        for j, (v, r) in enumerate(zip(self.values, self.mid_ranks)):
            out[:, j] = _interpolate(v, r, y[:, j])
        return out


def _interpolate(v: np.ndarray, r: np.ndarray, y: np.ndarray) -> np.ndarray:
    if len(v) == 1:  # no gap to interpolate or extrapolate with
        return np.full(len(y), r[0])
    # segment [v_a, v_a+1] holding y (v_a <= y < v_a+1), or an end segment outside
    a = np.clip(np.searchsorted(v, y, side="right") - 1, 0, len(v) - 2)
    va, vb, ra, rb = v[a], v[a + 1], r[a], r[a + 1]
    with np.errstate(over="ignore", invalid="ignore"):
        # y == v_a gives t = 0 and y == v_b gives t = 1 exactly, hence exactly r_a, r_b
        # (mid-ranks are multiples of 1/2, their differences exact)
        num, gap = y - va, vb - va
        t = num / gap
        bad = ~(np.isfinite(num) & np.isfinite(gap))
        if bad.any():  # a difference overflowed (values near 1.8e308): halving is exact
            t[bad] = (0.5 * y[bad] - 0.5 * va[bad]) / (0.5 * vb[bad] - 0.5 * va[bad])
        ranks = ra + t * (rb - ra)
    return np.clip(ranks, -RANK_CAP, RANK_CAP)


def ranks_on_original(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """The ranks ``y`` (n', m) would have among the values of ``x`` (n, m), attribute by
    attribute: mid-ranks, interpolated between neighbours and extrapolated linearly
    with the end gaps (`OriginalScale.rank`).  ``ranks_on_original(x, x)`` equals
    ``rank_matrix(x)``."""
    return OriginalScale(x).rank(y)


# the original's scale is the same for every release of a data set (bisection
# evaluates dozens of releases): build it once per data set
_ORIGINAL_SCALES: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def _original_scale(dataset, x: np.ndarray) -> OriginalScale:
    s = _ORIGINAL_SCALES.get(dataset)
    if s is None or s.shape != x.shape:
        s = OriginalScale(x)
        _ORIGINAL_SCALES[dataset] = s
    return s
