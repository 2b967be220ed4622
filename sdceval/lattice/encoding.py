"""Keys of the node engine (`sdceval.lattice.engine`) and their grouping.

A class is keyed by one int64: its *packed* key ``Σ_q id_q · W_q`` (fixed strides over
the QIs' leaf counts, `ClassTable.keys`) or a mixed radix over the node counts of a
node's levels (`RollupMixin._keys`); an item of the batched roll-up by the bit fields of
`_Layout`.  `group_keys` groups such keys, by counting or by sorting; `_sum_by` and
`_group_pairs` sum counts per group and per (class, code).
"""
from __future__ import annotations

import numpy as np

# group by counting (O(key space)) while the key space is at most
# _COUNT_SLACK * items + _COUNT_MIN, by sorting (O(items log items)) beyond
_COUNT_SLACK = 4
_COUNT_MIN = 1 << 12
# combined keys stay below this; larger spaces are re-ranked on the way
_KEY_LIMIT = 1 << 62
# a rolled-up table's keys are the sorted keys of its source with some digits changed:
# long ascending runs, which a stable sort (timsort/radix) merges rather than re-sorts
SORT_KIND = "stable"
#: item keys use at most this many bits, so that the difference of two keys is an int64
_KEY_BITS = 62


def group_keys(keys: np.ndarray, space: int, kind: str = SORT_KIND
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Group int64 ``keys`` in ``0..space-1``.

    Returns ``(inverse, first, uniq)``: the group of each key (groups numbered in
    increasing key order), the index of one key of each group, and the sorted distinct
    keys.  Counting (a presence mask over the key space) when the space is at most a few
    times the number of keys, else one sort of kind ``kind`` (stable, for keys in long
    sorted runs; quicksort for keys in no order, e.g. the records').
    """
    m = len(keys)
    if space <= _COUNT_SLACK * m + _COUNT_MIN:
        present = np.zeros(space, dtype=bool)
        present[keys] = True
        uniq = np.flatnonzero(present)
        rank = np.empty(space, dtype=np.int64)
        rank[uniq] = np.arange(len(uniq), dtype=np.int64)
        inverse = rank[keys]
        first = np.empty(len(uniq), dtype=np.int64)
        first[inverse] = np.arange(m, dtype=np.int64)  # any member represents its group
        return inverse, first, uniq
    order = np.argsort(keys, kind=kind)
    sk = keys[order]
    new = np.empty(m, dtype=bool)
    if m:
        new[0] = True
        np.not_equal(sk[1:], sk[:-1], out=new[1:])
    inverse = np.empty(m, dtype=np.int64)
    inverse[order] = np.cumsum(new) - 1
    return inverse, order[new], sk[new]


def _sum_by(groups: np.ndarray, values: np.ndarray, n_groups: int) -> np.ndarray:
    """Σ of int ``values`` per group (exact: float64 sums of counts ≤ 2**53)."""
    return np.bincount(groups, weights=values, minlength=n_groups).astype(np.int64)


def _group_pairs(cls_idx, value, count, n_classes, n_values):
    """(class, value, Σ count) per (class, value) present, sorted by class then value."""
    key = cls_idx * n_values + value
    space = n_classes * n_values
    if space <= _COUNT_SLACK * len(key) + _COUNT_MIN:
        dense = np.bincount(key, weights=count, minlength=space).reshape(n_classes, n_values)
        pc, pv = np.nonzero(dense)  # row-major: by class, then value
        return pc.astype(np.int64), pv.astype(np.int64), dense[pc, pv].astype(np.int64)
    inv, _, uniq = group_keys(key, space)
    return uniq // n_values, uniq % n_values, _sum_by(inv, count, len(uniq))


class _Layout:
    """Bit fields of an item key of the batched roll-up, most significant first: one
    field per QI (the node id at the node's level; as many bits as its leaf codes
    need), the sensitive code, the label code, the record count."""

    def __init__(self, n_leaves, n_sensitive, n_labels, n):
        self.cb = int(n).bit_length()
        self.lb = int(n_labels - 1).bit_length() if n_labels else 0
        self.sb = int(n_sensitive - 1).bit_length() if n_sensitive else 0
        self.cshift = self.cb + self.lb + self.sb  # the class key: the QI fields
        self.qbits = [int(k - 1).bit_length() for k in n_leaves]
        self.off = [0] * len(self.qbits)
        acc = self.cshift
        for q in range(len(self.qbits) - 1, -1, -1):
            self.off[q] = acc
            acc += self.qbits[q]
        self.bits = acc
        self.qmask = [(1 << b) - 1 for b in self.qbits]
