"""One implementation of "the id of each row's combination of column values"
(`sdceval.core.combos`): the partition equals a pandas groupby's, the two numberings,
no overflow on many wide columns, and the four former copies now answer with it."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sdceval.core.combos import LIMIT, combine, dense


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 40), st.integers(0, 4), st.integers(1, 5), st.integers(0, 10**6))
def test_partition_and_numbering_against_a_groupby(n, d, m, seed):
    rng = np.random.default_rng(seed)
    cols = [rng.integers(-1, m, n) for _ in range(d)]
    frame = pd.DataFrame({f"c{j}": c for j, c in enumerate(cols)})
    for order in ("first", "sorted"):
        ids, count = combine(cols, n, order=order)
        assert ids.dtype == np.int64 and count == (len(frame.drop_duplicates()) if d else 1)
        # rows share an id exactly when they share every value
        same_ids = ids[:, None] == ids[None, :]
        same_vals = np.ones((n, n), dtype=bool)
        for c in cols:
            same_vals &= c[:, None] == c[None, :]
        assert (same_ids == same_vals).all()
        if order == "first":   # ids in order of the combinations' first rows
            firsts = [ids[i] for i in range(n) if ids[i] not in ids[:i]]
            assert firsts == list(range(count))
        elif d:                # ids in lexicographic order of the values
            key = [tuple(c[i] for c in cols) for i in range(n)]
            assert all((key[i] < key[j]) == (ids[i] < ids[j]) for i in range(n)
                       for j in range(n))


def test_many_wide_columns_never_overflow():
    rng = np.random.default_rng(1)
    n = 2000
    cols = [rng.integers(0, 10**6, n) for _ in range(6)]   # 10^36 > 2^62
    assert float(10**6) ** 6 > LIMIT
    for order in ("first", "sorted"):
        ids, count = combine(cols, n, order=order)
        assert count == len(pd.DataFrame(np.stack(cols, 1)).drop_duplicates())
        assert ids.min() == 0 and ids.max() == count - 1


def test_dense_codes_sizes_and_errors():
    assert dense(np.array([5, 3, 5, 9]), "sorted")[0].tolist() == [1, 0, 1, 2]
    assert dense(np.array([5, 3, 5, 9]), "first")[0].tolist() == [0, 1, 0, 2]
    codes = np.array([[0, 1], [1, 0], [0, 1]])
    assert combine(codes, sizes=[2, 2])[0].tolist() == [0, 1, 0]
    assert combine([], 3) [1] == 1 and combine([], 0)[1] == 0
    with pytest.raises(ValueError, match="order"):
        dense([1], "nope")


def test_the_former_copies_use_it():
    from sdceval.core.release_io import class_ids
    from sdceval.privacy import population_risk, suda2
    cols = [np.array([2, 0, 2, 1]), np.array([1, 1, 1, 0])]
    assert class_ids(cols).tolist() == combine(cols)[0].tolist() == [0, 1, 0, 2]
    assert population_risk.combine(cols, 4)[0].tolist() == [2, 0, 2, 1]
    assert suda2._combine(np.stack(cols, 1))[0].tolist() == [0, 1, 0, 2]
