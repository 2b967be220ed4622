"""Strict Pareto dominance, boxes and box-dominance, SPEA2-style fitness (Dewri et al.
2010 §4–6; DEWRI.md §1.7, §1.9, §1.11, A18, A25).

Orientation: every function takes objective values in their **natural** form (a loss
as a loss, k as k) together with ``goals``, one ``"min"`` or ``"max"`` per objective
(the lattice objectives' `Objective.goal`).  Nobody negates anything by hand.

* **Dominance** (D10 §4.2, the paper's ⪰; D09's ≻): ``a`` dominates ``b`` iff ``a`` is
  no worse than ``b`` on every objective and strictly better on at least one.  Equal
  vectors do not dominate each other, so nodes with identical quality vectors are all
  minimal (DEWRI §1.7).
* **Boxes** (D10 §5, A18, X4): ``B(x) = ⌊x / ε⌋`` per objective, on the natural value
  (never ``⌊−x/ε⌋``, which is ``−⌈x/ε⌉`` and moves the boundaries); a box index is
  better when larger for a ``max`` objective and when smaller for a ``min`` one.
  ``ε = 1`` on integer values is plain dominance (D10 §5); floating-point division is
  used as is (``0.3 / 0.1`` floors to 2).
* **Box-dominance** (D10 §5): ``a ⪰_box b`` iff ``B(a)`` dominates ``B(b)`` when the
  boxes differ, else ``a`` dominates ``b``.  It is transitive (DEWRI §1.9).
* **Fitness** (D10 §6 after SPEA2, A25): on a *multiset* of points (the population and
  the archive together; a node in both counts twice), ``dom(P)`` = the number of
  points ``P`` strictly dominates, ``fitness(P) = Σ dom(P′)`` over the points ``P′``
  that strictly dominate ``P``.  Non-dominated points have fitness 0; lower is better.
  Copies of one point do not dominate each other and get the same values.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from sdceval.core.errors import SdcevalError, plain

GOALS = ("min", "max")
#: most booleans of one block of pairwise comparisons (bounds the memory of the
#: blockwise numpy passes)
_BLOCK = 1 << 22


# -- validation ---------------------------------------------------------------------------
def check_goals(goals, n_objectives: int | None = None) -> tuple[str, ...]:
    """``goals`` as a tuple of ``"min"``/``"max"`` (one per objective), else a
    `SdcevalError` naming the bad entry."""
    if isinstance(goals, str):
        goals = [goals]
    try:
        goals = tuple(goals)
    except TypeError:
        raise SdcevalError(f"goals must be a sequence of 'min'/'max', one per objective, "
                           f"got {plain(goals)!r}") from None
    for g in goals:
        if g not in GOALS:
            raise SdcevalError(f"goal {plain(g)!r} is not 'min' or 'max'; give one of them "
                               "per objective")
    if n_objectives is not None and len(goals) != n_objectives:
        raise SdcevalError(f"{len(goals)} goals for {n_objectives} objectives; give one "
                           "'min' or 'max' per objective")
    if not goals:
        raise SdcevalError("goals: at least one objective is needed")
    return tuple(str(g) for g in goals)


def check_values(values, n_objectives: int | None = None, what: str = "values"
                 ) -> np.ndarray:
    """``values`` as an ``(m, r)`` float64 array (a single vector becomes one row);
    `SdcevalError` for NaN, a wrong shape or a wrong number of objectives."""
    try:
        arr = np.array(values, dtype=np.float64)
    except (TypeError, ValueError):
        raise SdcevalError(f"{what} must be numbers (one column per objective)") from None
    if arr.ndim == 1:
        arr = arr[None, :] if arr.size or n_objectives is None else arr.reshape(0, n_objectives)
    if arr.ndim != 2:
        raise SdcevalError(f"{what} must be a (points × objectives) array, got shape "
                           f"{tuple(int(s) for s in arr.shape)}")
    if n_objectives is not None and arr.shape[1] != n_objectives:
        raise SdcevalError(f"{what} have {arr.shape[1]} objective(s) per point, expected "
                           f"{n_objectives} (one per goal)")
    if np.isnan(arr).any():
        raise SdcevalError(f"{what} contain NaN; every objective value must be a number")
    return arr


def check_eps(eps, n_objectives: int, names: Sequence[str] | None = None) -> np.ndarray:
    """The discretization vector as ``(r,)`` float64: one positive finite number per
    objective (a single number is used for every objective), else a `SdcevalError`."""
    what = f" ({', '.join(names)})" if names else ""
    try:
        arr = np.array(eps, dtype=np.float64)
    except (TypeError, ValueError):
        raise SdcevalError(f"eps (discretization vector) must be numbers, got "
                           f"{plain(eps)!r}; give one positive number per objective"
                           f"{what}") from None
    if arr.ndim == 0:
        arr = np.full(n_objectives, float(arr))
    if arr.ndim != 1 or len(arr) != n_objectives:
        n = arr.size if arr.ndim == 1 else f"shape {tuple(int(s) for s in arr.shape)}"
        raise SdcevalError(f"eps (discretization vector) has {n} entries for "
                           f"{n_objectives} objectives{what}; give one positive number per "
                           f"objective, e.g. eps={tuple([1] * n_objectives)}")
    bad = ~(np.isfinite(arr) & (arr > 0))
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        label = f" for {names[i]!r}" if names else f" at position {i}"
        raise SdcevalError(f"eps (discretization vector) entry {float(arr[i])!r}{label} "
                           "must be a positive finite number (box side length)")
    return arr


def _signs(goals: Sequence[str]) -> np.ndarray:
    return np.array([-1.0 if g == "max" else 1.0 for g in goals])


def _minimized(values, goals) -> np.ndarray:
    """Values in the minimized sense (``max`` columns negated), internal only."""
    goals = check_goals(goals)
    return check_values(values, len(goals)) * _signs(goals)


# -- single vectors -----------------------------------------------------------------------
def dominates(a, b, goals) -> bool:
    """Strict Pareto dominance (D10 §4.2): ``a`` no worse than ``b`` on every objective
    and strictly better on one (module docstring)."""
    goals = check_goals(goals)
    x = _minimized(a, goals)[0]
    y = _minimized(b, goals)[0]
    return bool(np.all(x <= y) and np.any(x < y))


def boxes(values, eps) -> np.ndarray:
    """``⌊x_i / ε_i⌋`` of every value, int64, same shape as ``values`` (``(r,)`` or
    ``(m, r)``) (D10 §5; floor, not rounding: DEWRI X4, A18)."""
    try:
        single = np.ndim(values) == 1
    except ValueError:  # ragged input: check_values says what is wrong
        single = False
    arr = check_values(values)
    e = check_eps(eps, arr.shape[1])
    if not np.isfinite(arr).all():
        raise SdcevalError("boxes: objective values must be finite to be placed in boxes "
                           "(an infinite value has no box); leave that objective out")
    out = np.floor(arr / e).astype(np.int64)
    return out[0] if single else out


def box_dominates(a, b, eps, goals) -> bool:
    """``a ⪰_box b`` (D10 §5): the box of ``a`` dominates the box of ``b`` if they
    differ, else ``a`` dominates ``b`` (a box index is better in the goal's sense)."""
    goals = check_goals(goals)
    a = check_values(a, len(goals))[0]
    b = check_values(b, len(goals))[0]
    ba, bb = boxes(a, eps), boxes(b, eps)
    if np.array_equal(ba, bb):
        return dominates(a, b, goals)
    return dominates(ba, bb, goals)


# -- many points ----------------------------------------------------------------------------
def _unique_rows(w: np.ndarray):
    """Distinct rows in lexicographic order, the row of each point and the counts."""
    m = len(w)
    order = np.lexsort(w.T[::-1])  # first column most significant
    srt = w[order]
    new = np.ones(m, dtype=bool)
    new[1:] = (srt[1:] != srt[:-1]).any(axis=1)
    group = np.cumsum(new) - 1
    inv = np.empty(m, dtype=np.int64)
    inv[order] = group
    return srt[new], inv, np.bincount(group)


def _nondominated_sorted(u: np.ndarray) -> np.ndarray:
    """Non-dominated mask of distinct rows sorted lexicographically (minimized sense).

    A row's dominators are lexicographically smaller, so they come before it.  Two
    objectives: a row is dominated iff the smallest second value before it is no
    larger (one sweep).  More: rows are taken in chunks in order and compared with the
    non-dominated rows found so far and with the chunk (a dominated row's dominator is
    itself dominated by a non-dominated row, by transitivity), so the cost is about
    m · |front| · r comparisons in numpy.
    """
    m, r = u.shape
    if m == 0:
        return np.zeros(0, dtype=bool)
    if r == 1:
        out = np.zeros(m, dtype=bool)
        out[0] = True
        return out
    if r == 2:
        y = u[:, 1]
        before = np.r_[np.inf, np.minimum.accumulate(y)[:-1]]
        return ~(before <= y)
    keep = np.zeros(m, dtype=bool)
    front = np.zeros((0, r))
    chunk = 256
    for lo in range(0, m, chunk):
        c = u[lo:lo + chunk]
        # distinct rows: "all ≤" is strict dominance (they differ somewhere)
        bad = np.zeros(len(c), dtype=bool)
        step = max(1, _BLOCK // (len(c) * r))
        for f in range(0, len(front), step):
            fb = front[f:f + step]
            bad |= (c[:, None, :] >= fb[None, :, :]).all(axis=2).any(axis=1)
        # within the chunk only the survivors matter: a row dominated by a dominated
        # row is dominated by that row's dominator in the front (transitivity)
        idx = np.flatnonzero(~bad)
        s = c[idx]
        dom = (s[:, None, :] >= s[None, :, :]).all(axis=2)  # [i, j]: j dominates i
        np.fill_diagonal(dom, False)
        bad[idx[dom.any(axis=1)]] = True
        keep[lo:lo + len(c)] = ~bad
        front = np.concatenate([front, c[~bad]])
    return keep


def pareto_mask(values, goals) -> np.ndarray:
    """Boolean ``(m,)``: the points no other point strictly dominates (the minimal PBGs
    of D10 Def. 4 when ``values`` are node quality vectors).  Duplicates of a
    non-dominated point are all kept.  Vectorized (`_nondominated_sorted`)."""
    w = _minimized(values, goals)
    if not len(w):
        return np.zeros(0, dtype=bool)
    uniq, inv, _ = _unique_rows(w)
    return _nondominated_sorted(uniq)[inv]


def _pairwise_blocks(u: np.ndarray):
    """Blocks ``(lo, D)`` with ``D[i, j]`` = distinct row ``lo + i`` dominates row
    ``j`` (minimized sense)."""
    m, r = u.shape
    step = max(1, _BLOCK // max(m, 1))
    for lo in range(0, m, step):
        blk = u[lo:lo + step]
        # one 2-D comparison per objective: faster than reducing a 3-D array over its
        # short last axis
        d = blk[:, None, 0] <= u[None, :, 0]
        for k in range(1, r):
            d &= blk[:, None, k] <= u[None, :, k]
        d[np.arange(len(blk)), lo + np.arange(len(blk))] = False  # distinct rows
        yield lo, d


def _counts_and_fitness(values, goals):
    w = _minimized(values, goals)
    if not len(w):
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    uniq, inv, mult = _unique_rows(w)
    mult = mult.astype(np.int64)
    dom_u = np.zeros(len(uniq), dtype=np.int64)
    blocks = list(_pairwise_blocks(uniq)) if len(uniq) * len(uniq) <= _BLOCK else None
    for lo, d in (blocks if blocks is not None else _pairwise_blocks(uniq)):
        dom_u[lo:lo + len(d)] = d.astype(np.int64) @ mult
    fit_u = np.zeros(len(uniq), dtype=np.int64)
    for lo, d in (blocks if blocks is not None else _pairwise_blocks(uniq)):
        # every copy of a dominator adds its count
        fit_u += (mult[lo:lo + len(d)] * dom_u[lo:lo + len(d)]) @ d.astype(np.int64)
    return dom_u[inv], fit_u[inv]


def dominance_counts(values, goals) -> np.ndarray:
    """``dom(P)``: the number of points of the multiset ``values`` that ``P`` strictly
    dominates (D10 §6; copies counted), int64 ``(m,)``."""
    return _counts_and_fitness(values, goals)[0]


def spea2_fitness(values, goals) -> np.ndarray:
    """D10 §6's raw fitness (after SPEA2, no density term; A25): ``Σ dom(P′)`` over the
    points ``P′`` of the multiset that strictly dominate ``P``; int64 ``(m,)``, 0 for
    non-dominated points, lower is better."""
    return _counts_and_fitness(values, goals)[1]
