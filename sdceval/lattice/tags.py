"""The optimal search's arrays over the whole lattice (`sdceval.lattice.search.optimal`):
`_Tags`, the known-feasible / known-infeasible / dominated nodes as d-dimensional
boolean arrays whose up- and down-sets are boxes, and `_nd_sum`, a per-QI, per-level
sum for every node without a levels array of the lattice's size.  Re-exported by
`sdceval.lattice.search`.
"""
from __future__ import annotations

import numpy as np


class _Tags:
    """Known-feasible / known-infeasible / dominated nodes as d-dimensional boolean
    arrays; the nodes above (below) a node are one box, set by slicing."""

    def __init__(self, radices):
        shape = tuple(int(r) for r in radices)
        self.feas = np.zeros(shape, dtype=bool)
        self.infeas = np.zeros(shape, dtype=bool)
        self.dom = np.zeros(shape, dtype=bool)
        self.feas_flat = self.feas.reshape(-1)
        self.infeas_flat = self.infeas.reshape(-1)
        self.dom_flat = self.dom.reshape(-1)

    def up(self, arr, levels):
        arr[tuple(slice(int(v), None) for v in levels)] = True

    def down(self, arr, levels):
        arr[tuple(slice(0, int(v) + 1) for v in levels)] = True

    def down_from(self, arr, levels, start):
        """`down`, restricted to the nodes whose id is at least that of ``start``
        (lexicographically ≥ its levels): the box split into one slab per QI — equal
        to ``start`` on the QIs before it, above it on this one — so a scan that has
        tagged everything below ``start`` writes only what it will still read."""
        prefix = ()
        d = len(levels)
        for i in range(d):
            v, p = int(levels[i]), int(start[i])
            if p > v:
                return
            if v > p:
                arr[prefix + (slice(p + 1, v + 1),)
                    + tuple(slice(0, int(levels[j]) + 1) for j in range(i + 1, d))] = True
            prefix += (p,)
        arr[prefix] = True


def _nd_sum(lat, terms, dtype=np.float64) -> np.ndarray:
    """``Σ_q terms[q][level_q]`` for every node, flat in id order: a d-dimensional sum
    of broadcast vectors (no levels array of the lattice's size)."""
    total = np.zeros((1,) * lat.n_qis, dtype=dtype)
    for q, r in enumerate(lat.radices.tolist()):
        shape = [1] * lat.n_qis
        shape[q] = r
        total = total + np.asarray(terms[q][:r], dtype=dtype).reshape(shape)
    return total.reshape(-1)
