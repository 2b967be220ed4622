"""Rank swapping: multisets, rank windows, the pairing walk, ties, options, errors."""
import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import sdceval
from sdceval import Dataset, Schema, SdcevalError, get_method
from sdceval.methods.swapping import rank_swap_column, swap_ranks, swap_window


def numeric_dataset(x):
    frame = pd.DataFrame(x, columns=[f"v{j}" for j in range(x.shape[1])])
    return Dataset(frame, Schema.from_roles(frame, numeric=list(frame.columns)))


def rank_displacement(x, y):
    """For each record, how many ranks its value moved (ties: the closest position of an
    equal value, ranks from a stable sort of the original)."""
    order = np.argsort(x, kind="stable")
    rank = np.empty(len(x), dtype=int)
    rank[order] = np.arange(len(x))
    srt = x[order]
    lo = np.searchsorted(srt, y, side="left")
    hi = np.searchsorted(srt, y, side="right") - 1
    return np.maximum(0, np.maximum(lo - rank, rank - hi))


def test_swap_ranks_worked_examples():
    rng = np.random.default_rng(0)
    assert swap_ranks(2, 1, rng).tolist() == [1, 0]
    # window 1: each free rank pairs with the next; the last one is left alone
    assert swap_ranks(5, 1, rng).tolist() == [1, 0, 3, 2, 4]
    assert swap_ranks(1, 3, rng).tolist() == [0]


@settings(max_examples=80, deadline=None)
@given(n=st.integers(1, 400), w=st.integers(1, 400), seed=st.integers(0, 2 ** 16))
def test_swap_ranks_is_a_windowed_involution(n, w, seed):
    perm = swap_ranks(n, w, np.random.default_rng(seed))
    i = np.arange(n)
    assert np.array_equal(perm[perm], i)                 # pairs of exchanges
    assert np.abs(perm - i).max(initial=0) <= w
    # a rank left alone had no free partner when visited: every later rank in its
    # window had already been taken by an earlier rank
    for a in np.flatnonzero(perm == i):
        later = np.arange(a + 1, min(a + w, n - 1) + 1)
        assert (perm[later] < a).all()


def test_swap_ranks_partner_is_uniform():
    # rank 0 is always free when visited: its partner is uniform over ranks 1..5
    partners = [swap_ranks(30, 5, np.random.default_rng(s))[0] for s in range(3000)]
    counts = np.bincount(partners, minlength=6)[1:]
    assert counts.sum() == 3000 and (np.abs(counts - 600) < 90).all()
    # rank 1 is free iff rank 0 did not pick it; then it picks uniformly among the free
    # ranks of 2..6, i.e. all except rank 0's partner
    later = [swap_ranks(30, 5, np.random.default_rng(s)) for s in range(3000)]
    ok = [p for p in later if p[0] != 1]
    c = np.bincount([p[1] for p in ok], minlength=7)[2:]
    expected = np.array([sum(1 / (5 - (p[0] in range(2, 7))) for p in ok
                             if p[0] != j) for j in range(2, 7)])
    assert (np.abs(c - expected) < 5 * np.sqrt(expected)).all()


@pytest.mark.parametrize("p", [0.01, 0.05, 0.2, 0.5, 1.0])
def test_rank_swap_release_invariants(p):
    ds = sdceval.load_dataset("census")
    x = ds.numeric_matrix()
    rel = sdceval.anonymize(ds, "rank_swap", p=p, seed=5)
    y = rel.numeric_matrix(ds.schema.numeric)
    w = int(np.floor(p * ds.n + 1e-9))
    assert rel.info["window"] == max(1, w)
    for j in range(x.shape[1]):
        assert np.array_equal(np.sort(y[:, j]), np.sort(x[:, j]))   # same multiset
        assert rank_displacement(x[:, j], y[:, j]).max() <= p * ds.n
    # records are really perturbed, and attributes independently
    assert (y != x).mean() > 0.5
    assert rel.kind == "perturbative" and rel.classes is None


def test_rank_swap_ties_and_constant_columns():
    rng = np.random.default_rng(1)
    x = np.column_stack([rng.integers(0, 4, 500).astype(float), np.full(500, 3.0),
                         rng.normal(size=500)])
    ds = numeric_dataset(x)
    y = sdceval.anonymize(ds, "rank_swap", p=0.05, seed=2).numeric_matrix(ds.schema.numeric)
    assert (y[:, 1] == 3.0).all()
    for j in range(3):
        assert np.array_equal(np.sort(y[:, j]), np.sort(x[:, j]))
        assert rank_displacement(x[:, j], y[:, j]).max() <= 25
    # ties are ranked in record order (stable sort): the walk sees the same ranks
    col = rank_swap_column(x[:, 0], 0.05, np.random.default_rng(9))
    order = np.argsort(x[:, 0], kind="stable")
    perm = swap_ranks(500, 25, np.random.default_rng(9))
    expect = np.empty(500)
    expect[order] = x[order, 0][perm]
    assert np.array_equal(col, expect)


def test_rank_swap_reproducible_and_input_untouched(small_numeric):
    ds = small_numeric
    before = ds.frame.copy()
    a = sdceval.anonymize(ds, "rank_swap", p=0.1, seed=3)
    b = sdceval.anonymize(ds, "rank_swap", p=0.1, seed=3)
    c = sdceval.anonymize(ds, "rank_swap", p=0.1, seed=4)
    pd.testing.assert_frame_equal(a.data, b.data)
    assert not a.data.equals(c.data)
    pd.testing.assert_frame_equal(ds.frame, before)
    assert "name" not in a.data and a.dropped == ("name",)


def test_window_floor_is_robust():
    assert swap_window(100, 0.29) == (0, 29)      # 0.29 * 100 = 28.999999999999996
    assert swap_window(1080, 0.2) == (0, 216)
    assert swap_window(10, 0.01) == (0, 1)        # at least one rank
    assert swap_window(100, 0.5, 10) == (10, 40)


def test_top_bottom_coding():
    x = np.arange(100.0)
    rng = np.random.default_rng(0)
    y = rank_swap_column(x, 0.1, rng, top_bottom_percent=10)
    # the lowest and highest 10 values are replaced by their means and not swapped
    assert (y[:10] == 4.5).all() and (y[90:] == 94.5).all()
    mid = y[10:90]
    assert np.array_equal(np.sort(mid), np.arange(10.0, 90.0))
    assert np.abs(mid - x[10:90]).max() <= 8           # window floor(0.1 * 80)
    ds = numeric_dataset(np.column_stack([x, x[::-1]]))
    rel = sdceval.anonymize(ds, "rank_swap", p=0.1, top_bottom_percent=10, seed=0)
    assert rel.info == {"window": 8, "coded_each_end": 10}


@pytest.mark.parametrize("params,name", [({"p": 0}, "'p'"), ({"p": 1.5}, "'p'"),
                                         ({"p": -0.2}, "'p'"), ({"p": "x"}, "'p'"),
                                         ({"top_bottom_percent": 50}, "top_bottom_percent"),
                                         ({"top_bottom_percent": -1}, "top_bottom_percent")])
def test_bad_parameters(small_numeric, params, name):
    with pytest.raises(SdcevalError, match=name):
        get_method("rank_swap").apply(small_numeric, params, seed=0)


def test_registry_entry():
    spec = get_method("rank_swap")
    assert spec.family == "perturbative" and spec.random
    p = spec.tunable
    assert p.name == "p" and p.protection == "increasing" and p.unit == "fraction of n"
    assert p.grid == (0.01, 0.05, 0.075, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)
