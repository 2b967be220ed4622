"""The id of each row's combination of column values: one implementation for every
grouping of records by their keys (equivalence classes of a release, the key
combinations of the population risks and SUDA2, the groups of the linkage measures).

Each column is turned into dense codes ``0..m-1`` and the columns are joined as one
mixed-radix number per row, ``id = (...(c_1 m_2 + c_2) m_3 + ...)``, which identifies the
combination exactly while the product of the radices stays below 2^62; when the next
column would pass it, the ids so far are made dense first (``0..count-1``), so that
the number never overflows whatever the number of columns.  The final ids are dense.

Two numberings: ``order="first"`` numbers the combinations in order of their first
row (hashing, pandas' ``factorize``: O(n), the fast one), ``order="sorted"`` in the
lexicographic order of the columns' values (``np.unique``: O(n log n)), which does not
depend on the order of the rows (the population-risk kernel promises it).
"""
from __future__ import annotations

import numpy as np

#: the largest mixed-radix range used before the ids are made dense again
LIMIT = 2 ** 62
ORDERS = ("first", "sorted")


def dense(values, order: str = "first") -> tuple[np.ndarray, int]:
    """Codes ``0..m-1`` of ``values`` (int64) and ``m``: in order of first appearance
    (``order="first"``) or of the sorted values (``"sorted"``)."""
    values = np.asarray(values).reshape(-1)
    if order == "sorted":
        uniq, codes = np.unique(values, return_inverse=True)
        return codes.reshape(-1).astype(np.int64, copy=False), len(uniq)
    if order != "first":
        raise ValueError(f"order must be one of {ORDERS}, got {order!r}")
    import pandas as pd  # imported where used (the registry listing loads no pandas)
    codes, uniq = pd.factorize(values)
    return codes.astype(np.int64, copy=False), len(uniq)


def combine(cols, n: int | None = None, *, order: str = "first", sizes=None
            ) -> tuple[np.ndarray, int]:
    """Id ``0..count-1`` of each row's combination of the values of ``cols`` (a
    sequence of equal-length columns, or a 2-d array whose columns they are) and
    ``count``.  ``n``: the number of rows (needed when there is no column: every row
    is then one combination).  ``sizes``: the columns are dense codes already,
    ``0..sizes[j]-1`` (no re-coding).  ``order``: module notes."""
    if isinstance(cols, np.ndarray) and cols.ndim == 2:
        cols = [cols[:, j] for j in range(cols.shape[1])]
    cols = list(cols)
    if n is None:
        n = len(cols[0]) if cols else 0
    ids, count = np.zeros(n, dtype=np.int64), (1 if n else 0)
    if not n:
        return ids, 0
    for j, c in enumerate(cols):
        if sizes is not None:
            codes, m = np.asarray(c, dtype=np.int64), int(sizes[j])
        else:
            codes, m = dense(c, order)
        if count * m >= LIMIT:
            ids, count = dense(ids, order)
        ids = ids * m + codes
        count *= m
    return dense(ids, order)


__all__ = ["LIMIT", "ORDERS", "combine", "dense"]
