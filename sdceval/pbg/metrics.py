"""Performance metrics of PBG-EA (Dewri et al. 2010 §7; DEWRI.md §1.12, A20–A22, A35).

``M`` is the set of all minimal PBGs (exhaustive evaluation, `minimal_set` /
`sdceval.pbg.quality.minimal_pbgs`), ``M′`` the archive at the end of a run.  Values
are in their natural orientation with ``goals`` (`sdceval.pbg.dominance`).

* **CE**, convergence error, exactly as printed (A20): every objective of ``M`` and
  ``M′`` is divided by its largest absolute value over ``M`` (by 1 when that is 0; the
  paper says "the corresponding maximum in M", which for the non-negative objectives
  of the paper is the same), then ``CE = Σ_{x ∈ M′} min_{y ∈ M} ‖x − y‖₂``.  A sum
  over the archive: 0 iff every member lies on a minimal PBG's quality vector.
  `ce_mean` is ``CE / |M′|``, the reading the paper's magnitudes suggest (A20 a).
* **RR**, representation ratio (A21): the distinct boxes ``⌊y/ε⌋`` of ``M``, their
  non-dominated subset ``ND`` (strict Pareto on box vectors, better in the goal's
  sense), and ``RR = |{b ∈ ND : some x ∈ M′ has ⌊x/ε⌋ = b}| / |ND|``.  The member
  occupying a box need not itself be in ``M``.  With ``ε = 1`` on integer objectives
  RR is the fraction of the distinct minimal quality vectors found (the paper's "94 %
  of all minimal PBGs").  ``front_values`` may also be every node's values: a
  dominated node's box is either a box of ``M`` or dominated by one, so ``ND`` is the
  same.
* **Two readings of Table 2(a)** (A35), both with this one function — the caller
  chooses how the archive was built:

  (i) *literal* (the paper's, and the reproduction's default): the EA keeps its
      archive with the coarse ``ε`` and RR is measured at that ``ε``:
      ``rr(run(ε).values, M, ε, goals)``;
  (ii) *diagnostic*: the archive is kept at ``ε = 1`` and RR is measured on the coarse
      boxes: ``rr(run(1).values, M, ε, goals)``.

  They can give opposite trends as ``ε`` grows.
* **Nodes evaluated** (A22) is counted by the EA (`sdceval.pbg.ea.EARun.nodes_evaluated`):
  distinct lattice nodes whose quality vector a run asked for, ``P_0`` included.
"""
from __future__ import annotations

import numpy as np

from sdceval.core.errors import SdcevalError
from sdceval.pbg.dominance import boxes, check_goals, check_values, pareto_mask

#: most floats of one block of archive-to-front distances
_BLOCK = 1 << 22


def minimal_set(values, goals) -> np.ndarray:
    """The strictly non-dominated rows of ``values`` (copies of one kept), ``(k, r)``."""
    goals = check_goals(goals)
    v = check_values(values, len(goals))
    return v[pareto_mask(v, goals)]


def _pair(archive_values, front_values, goals):
    goals = check_goals(goals)
    a = check_values(archive_values, len(goals), "archive values")
    f = check_values(front_values, len(goals), "front values")
    if not len(f):
        raise SdcevalError("the front M (minimal PBGs) is empty; CE and RR need the "
                           "exhaustive minimal set of at least one node")
    return a, f, goals


def ce(archive_values, front_values, goals) -> float:
    """Convergence error as printed (module docstring): Σ over the archive of the
    Euclidean distance to the nearest front point, each objective divided by its
    largest absolute value over the front (1 if that is 0).  0 for an empty archive.
    ``goals`` only fixes the number of objectives (distances have no direction)."""
    a, f, _ = _pair(archive_values, front_values, goals)
    if not np.isfinite(f).all() or not np.isfinite(a).all():
        raise SdcevalError("CE: objective values must be finite (an infinite objective "
                           "has no distance); leave that objective out")
    scale = np.abs(f).max(axis=0)
    scale[scale == 0] = 1.0
    a, f = a / scale, f / scale
    total = 0.0
    step = max(1, _BLOCK // max(len(f) * a.shape[1], 1))
    for lo in range(0, len(a), step):
        blk = a[lo:lo + step]
        d2 = ((blk[:, None, :] - f[None, :, :]) ** 2).sum(axis=2)
        total += float(np.sqrt(d2.min(axis=1)).sum())
    return total


def ce_mean(archive_values, front_values, goals) -> float:
    """``ce / |archive|`` (A20 a); `SdcevalError` for an empty archive."""
    a, _, goals = _pair(archive_values, front_values, goals)
    if not len(a):
        raise SdcevalError("ce_mean: the archive is empty (no member to average over)")
    return ce(a, front_values, goals) / len(a)


def rr(archive_values, front_values, eps, goals) -> float:
    """Representation ratio (module docstring): the fraction of the non-dominated boxes
    of the front (at discretization ``eps``) that some archive member occupies."""
    a, f, goals = _pair(archive_values, front_values, goals)
    fb = np.unique(boxes(f, eps), axis=0)
    nd = fb[pareto_mask(fb, goals)]
    if not len(a):
        return 0.0
    ab = boxes(a, eps)
    # a box vector as one key per row: compare rows of the two int64 arrays
    both = np.concatenate([nd, np.unique(ab, axis=0)])
    _, inv, counts = np.unique(both, axis=0, return_inverse=True, return_counts=True)
    occupied = counts[np.asarray(inv).reshape(-1)[:len(nd)]] > 1
    return float(occupied.sum()) / len(nd)
