"""Multivariate microaggregation with MDAV (SPEC §3; Domingo-Ferrer et al. §5).

MDAV (Maximum Distance to Average Vector; Domingo-Ferrer & Mateo-Sanz 2002) partitions
the records into groups of ``k`` to ``2k - 1`` similar records and publishes every record
as its group's mean, so each published vector is shared by at least ``k`` records.

The partition is computed on z-scored attributes (each column centred and divided by its
standard deviation, so that no attribute dominates the Euclidean distance because of its
unit); the published means are taken in the original units.
"""
from __future__ import annotations

import numpy as np

from ..errors import SdcevalError
from ..registry import Param, register_method
from ._numeric import numeric_release

__all__ = ["mdav", "mdav_groups"]

# Size of the candidate list kept for the "farthest from the centroid" query; below
# ``_BOUNDED_MIN`` remaining records a full scan is cheap enough.
_TOP = 1024
_BOUNDED_MIN = 8 * _TOP
# Share of grouped (dead) rows in the working arrays that triggers a compaction.
_COMPACT_SHARE = 0.25


class _Remaining:
    """The records not yet grouped, with everything MDAV's three queries need.

    Distances use the expanded form ``|x - v|^2 = |x|^2 - 2 x.v + |v|^2``: one
    ``einsum`` pass per query and no ``n x m`` temporaries.  ``einsum`` evaluates every
    row with the same instruction sequence, so identical records get bit-identical
    distances and ties are broken by the lowest original index, as intended (a BLAS
    ``gemv`` may round rows differently depending on their position in a block).

    Grouped records stay in the arrays as "dead" rows (``+inf`` in ``near``, ``-inf`` in
    ``far``), so nearest / farthest queries skip them without masking; the arrays are
    compacted, order preserved, once a quarter of the rows are dead.
    """

    def __init__(self, z: np.ndarray, k: int):
        self.z = np.array(z, dtype=np.float64, order="C")
        n = len(self.z)
        self.k = k
        self.pos = np.arange(n)
        self.nrm = np.einsum("ij,ij->i", self.z, self.z)
        self.near = self.nrm.copy()   # |x|^2, +inf once grouped
        self.far = self.nrm.copy()    # |x|^2, -inf once grouped
        self.total = self.z.sum(axis=0)
        self.n_alive = n
        self.labels = np.full(n, -1, dtype=np.int64)
        self.n_groups = 0
        self._b = np.empty(n)
        self._d = np.empty(n)
        # rounding allowance (squared units) for the distance bounds below
        self.slack = 1e-9 * (1.0 + float(self.nrm.max()))
        self.top = None

    # -- primitives ------------------------------------------------------------------
    def minus2_dot(self, v: np.ndarray) -> np.ndarray:
        """``-2 Z v`` for all working rows (a reused buffer)."""
        b = self._b[:len(self.z)]
        np.einsum("ij,j->i", self.z, v, out=b)
        b *= -2.0
        return b

    def _sq(self, rows: np.ndarray, v: np.ndarray) -> np.ndarray:
        """Squared distances of ``rows`` to ``v``, rounded exactly as a full scan."""
        return (self.nrm[rows] + (-2.0 * np.einsum("ij,j->i", self.z[rows], v))) + v @ v

    def nearest(self, b: np.ndarray, p: int) -> np.ndarray:
        """Working positions of record ``p`` and its ``k - 1`` nearest remaining records
        (``b = -2 Z z_p``); ties go to the lowest index."""
        k = self.k
        d = np.add(self.near, b, out=self._d[:len(b)])
        d[p] = -np.inf
        # threshold from a strided sample: at least k values lie below it, and only
        # ~k * stride candidates survive, so the exact selection below is tiny
        stride = max(1, min(32, len(d) // (8 * k)))
        t = np.partition(d[::stride], k - 1)[k - 1] if stride > 1 else np.inf
        cand = np.flatnonzero(d <= t) if np.isfinite(t) else np.flatnonzero(d < np.inf)
        dc = d[cand]
        if len(cand) > k:
            kth = np.partition(dc, k - 1)[k - 1]
            below = cand[dc < kth]
            tied = cand[dc == kth]            # ascending positions = ascending index
            cand = np.concatenate([below, tied[:k - len(below)]])
        return cand

    def farthest_from(self, b: np.ndarray) -> int:
        """Working position of the remaining record farthest from ``v`` (``b = -2 Z v``)."""
        return int(np.argmax(np.add(self.far, b, out=self._d[:len(b)])))

    def take(self, sel: np.ndarray) -> None:
        """Make the records at working positions ``sel`` a group."""
        self.labels[self.pos[sel]] = self.n_groups
        self.n_groups += 1
        self.near[sel] = np.inf
        self.far[sel] = -np.inf
        self.total -= self.z[sel].sum(axis=0)
        self.n_alive -= len(sel)

    def maybe_compact(self) -> None:
        """Drop the grouped rows once they are a quarter of the working arrays (called
        between rounds, so positions held by the caller stay valid within a round)."""
        if len(self.z) - self.n_alive > _COMPACT_SHARE * len(self.z) and self.n_alive:
            self._compact()

    def rest(self) -> np.ndarray:
        return np.flatnonzero(np.isfinite(self.near))

    def _compact(self) -> None:
        keep = np.isfinite(self.near)
        new_pos = np.cumsum(keep) - 1
        if self.top is not None:
            alive = keep[self.top]
            self.top, self.top_r = new_pos[self.top[alive]], self.top_r[alive]
        self.z = self.z[keep]
        self.pos, self.nrm = self.pos[keep], self.nrm[keep]
        self.near, self.far = self.near[keep], self.far[keep]
        self.total = self.z.sum(axis=0)   # also resets accumulated rounding

    # -- the centroid query ------------------------------------------------------------
    def farthest_from_centroid(self) -> int:
        """Working position of the remaining record farthest from the remaining
        records' centroid (ties: lowest index).

        The centroid moves little between rounds, so instead of a full scan per round
        this keeps the ``_TOP`` records farthest from a reference centroid ``c_ref``
        (distances ``R``) and uses ``|x - c| <= R(x) + |c - c_ref|``: only records
        whose bound reaches the best exact distance found are evaluated exactly; a
        full scan (and a new reference) happens when records outside the list could
        qualify.  The result is the same as a full scan's.
        """
        c = self.total / self.n_alive
        if self.n_alive <= _BOUNDED_MIN or self.top is None:
            return self._refresh(c)
        alive = np.isfinite(self.near[self.top])
        self.top, self.top_r = self.top[alive], self.top_r[alive]
        if len(self.top) == 0:
            return self._refresh(c)
        delta = float(np.linalg.norm(c - self.c_ref))
        upper = (self.top_r + delta) ** 2 + self.slack
        j = min(len(self.top), 32)
        d2 = self._sq(self.top[:j], c)
        best = d2.max()
        need = int(np.count_nonzero(upper >= best))   # a prefix: top_r is sorted
        if need > j:
            d2 = np.concatenate([d2, self._sq(self.top[j:need], c)])
            best = d2.max()
        if (self.rest_r + delta) ** 2 + self.slack >= best:
            return self._refresh(c)
        return int(self.top[:len(d2)][d2 == best].min())

    def _refresh(self, c: np.ndarray) -> int:
        b = self.minus2_dot(c)
        d2 = np.add(self.far, b, out=self._d[:len(b)])
        d2 += c @ c
        r = int(np.argmax(d2))
        if self.n_alive > _BOUNDED_MIN:
            part = np.argpartition(-d2, _TOP)
            top = part[:_TOP]
            top = top[np.lexsort((top, -d2[top]))]
            self.top = top
            self.top_r = np.sqrt(np.maximum(d2[top], 0.0))
            self.rest_r = float(np.sqrt(max(d2[part[_TOP]], 0.0)))
            self.c_ref = c
        else:
            self.top = None
        return r


def mdav_groups(z: np.ndarray, k: int) -> np.ndarray:
    """MDAV partition of the rows of ``z`` into groups of ``k`` to ``2k - 1`` rows.

    Parameters
    ----------
    z : ndarray, shape (n, m)
        Records (already standardized by the caller if wanted).  Not modified.
    k : int
        Minimum group size, ``1 <= k <= n``.

    Returns
    -------
    labels : ndarray of int64, shape (n,)
        Group id of each row, numbered in the order the groups are formed.

    Notes
    -----
    SPEC §3, after Domingo-Ferrer & Mateo-Sanz (2002).  While at least ``3k`` records
    remain: ``c`` = centroid of the remaining records; ``r`` = the record farthest from
    ``c``; ``r`` and its ``k - 1`` nearest remaining records form a group; ``s`` = the
    remaining record farthest from ``r``; ``s`` and its ``k - 1`` nearest form a group.
    Then, with ``2k .. 3k-1`` records left, one more group around the record farthest
    from their centroid and the rest form the last group; with fewer than ``2k`` left
    they form one group.  Every group has ``k`` records except the last (``k .. 2k-1``).

    Ties (equal distances, e.g. duplicate records) are broken by the lowest row index,
    so the result is a deterministic function of ``z``.  Cost: ``O(n^2 m / k)`` time,
    ``O(n m)`` memory.
    """
    z = np.asarray(z, dtype=np.float64)
    if z.ndim != 2:
        raise SdcevalError(f"mdav needs a 2-d matrix of records, got shape {z.shape}")
    n = len(z)
    if not 1 <= k <= n:
        raise SdcevalError(f"mdav parameter 'k' must be between 1 and the number of "
                           f"records ({n}), got {k}")
    rem = _Remaining(z, k)
    while rem.n_alive >= 3 * k:
        r = rem.farthest_from_centroid()
        b = rem.minus2_dot(rem.z[r].copy())
        rem.take(rem.nearest(b, r))
        s = rem.farthest_from(b)          # the same scan gives s, farthest from r
        b = rem.minus2_dot(rem.z[s].copy())
        rem.take(rem.nearest(b, s))
        rem.maybe_compact()
    if rem.n_alive >= 2 * k:
        r = rem.farthest_from_centroid()
        rem.take(rem.nearest(rem.minus2_dot(rem.z[r].copy()), r))
    if rem.n_alive:
        rem.take(rem.rest())
    return rem.labels
