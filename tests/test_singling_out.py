"""Singling out's generation of predicates (issue 32 item 1): the bit-set filter, the
scan of a small space and the control's size correction, each against a brute-force or
scipy recomputation."""
from itertools import combinations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import sdceval
from sdceval import Release
from sdceval.core.control import hold_out
from sdceval.measures import singling_out as so
from sdceval.measures._attack import read_release


def _people(n, seed=0):
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame({
        "age": rng.integers(18, 90, n), "zip": rng.choice([f"z{i}" for i in range(30)], n),
        "sex": rng.choice(["F", "M"], n), "income": rng.lognormal(10, 1, n).round(0),
        "disease": rng.choice([f"d{i}" for i in range(5)], n)})
    ds = sdceval.as_dataset(frame, qi=["age", "zip", "sex"], numeric=["income"],
                            sensitive="disease", name="people")
    return hold_out(ds, fraction=0.25, seed=seed)


def _release(train, kind):
    if kind == "mondrian":           # cells, some of them '*'
        return sdceval.anonymize(train, "mondrian", k=4)
    if kind == "noise":
        return sdceval.anonymize(train, "noise", seed=0)
    return Release.synthetic(train, train.frame, method="copy")


def _reading(train, rel):
    r = read_release(train, rel, "test")
    both = so.distinct_rows(np.concatenate([r.lo, r.hi], axis=1))
    d = r.lo.shape[1]
    return both[:, :d], both[:, d:], r.numeric


@pytest.fixture(scope="module", params=[(300, "mondrian"), (300, "copy"),
                                        (3600, "copy"), (3600, "noise")])
def reading(request):
    n, kind = request.param
    train = _people(n, seed=n)
    return _reading(train, _release(train, kind))


def test_the_bit_set_filter_keeps_exactly_the_predicates_that_single_out(reading,
                                                                       monkeypatch):
    """Bit sets over 256 and 2 048 rows, then comparisons over all rows in chunks: the
    same answer as counting every predicate over every released row (files of 225 and
    2 700 rows)."""
    monkeypatch.setattr(so, "CHUNK", 500)
    lo, hi, numeric = reading
    w = so._Writer(lo, hi, numeric)
    rng = np.random.default_rng(0)
    found = 0
    for p in (1, 2, 3):
        rows = rng.integers(0, len(lo), 3000)
        cols = so._columns(rng, 3000, lo.shape[1], p)
        want = so._from_rows(lo, hi, numeric, w.median, rows, cols).count(lo, hi) == 1
        assert (w.singling(rows, cols) == want).all()
        found += want.sum()
    assert found


def _every_predicate(lo, hi, numeric):
    """Every multivariate predicate (3 columns) that singles out a released row, by
    counting each over every row."""
    median = so._Writer(lo, hi, numeric).median
    everything = []
    for cols in combinations(range(lo.shape[1]), 3):
        c = np.tile(cols, (len(lo), 1))
        q = so._from_rows(lo, hi, numeric, median, np.arange(len(lo)), c)
        everything += [tuple(k) for k in q.key()[q.count(lo, hi) == 1]]
    return everything


def test_a_small_space_is_scanned_whole():
    """Far fewer (row, columns) pairs than attempts: every predicate that singles out
    is found, each once, as a brute-force pass over all pairs finds them."""
    lo, hi, numeric = _reading(t := _people(200, seed=3), _release(t, "mondrian"))
    everything = _every_predicate(lo, hi, numeric)
    q, attempts = so._multivariate(lo, hi, numeric, 10 ** 6, 3, 10_000_000,
                                   np.random.default_rng(0))
    assert sorted(map(tuple, q.key())) == sorted(everything)
    assert attempts == len(lo) * len(list(combinations(range(lo.shape[1]), 3)))
    # the same draw, budget-capped: the first predicates of the same random order
    few, _ = so._multivariate(lo, hi, numeric, 7, 3, 10_000_000, np.random.default_rng(0))
    assert (few.key() == q.key()[:7]).all()


def test_a_scan_skips_the_pairs_anonymeters_draws_would_miss():
    """As many attempts as pairs: anonymeter's draws with replacement meet a share
    1 - (1 - 1/S)^S ≈ 63.2 % of the S pairs, and so of the predicates that single out;
    the scan finds that share (binomial bounds, 4 standard errors)."""
    lo, hi, numeric = _reading(t := _people(300, seed=7), _release(t, "copy"))
    everything = set(_every_predicate(lo, hi, numeric))
    space = len(lo) * len(list(combinations(range(lo.shape[1]), 3)))
    p = 1 - (1 - 1 / space) ** space
    for seed in range(3):
        q, attempts = so._multivariate(lo, hi, numeric, 10 ** 6, 3, space,
                                       np.random.default_rng(seed))
        got = set(map(tuple, q.key()))
        assert got <= everything and attempts == space
        n = len(everything)
        assert abs(len(got) - p * n) < 4 * np.sqrt(n * p * (1 - p)), (len(got), n)


def test_draws_stop_at_max_attempts():
    lo, hi, numeric = _reading(t := _people(400, seed=5), _release(t, "copy"))
    # 300 rows x 10 sets of 3 of the 5 columns = 3 000 pairs: a budget of 2 000 draws
    q, attempts = so._multivariate(lo, hi, numeric, 10 ** 6, 3, 2000,
                                   np.random.default_rng(1))
    assert attempts == 2000 and 0 < len(q) <= 2000
    assert (q.count(lo, hi) == 1).all()


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3), st.sampled_from([0.5, -np.inf, 2.0]),
                          st.integers(0, 1)), min_size=1, max_size=40))
def test_distinct_rows_are_numpys_unique_rows_in_first_order(rows):
    x = np.array(rows, dtype=float)
    got = so.distinct_rows(x)
    _, first = np.unique(x, axis=0, return_index=True)
    assert (got == x[np.sort(first)]).all()


def test_expected_singles_are_the_hypergeometric_probabilities():
    from scipy.stats import hypergeom
    rng = np.random.default_rng(0)
    counts = rng.integers(1, 60, 300)
    sizes = np.linspace(400, 2500, 10).astype(int)
    want = hypergeom.pmf(1, 2500, counts[None, :], sizes[:, None]).sum(axis=1)
    assert np.allclose(so._singles(2500, counts, sizes), want, rtol=1e-9, atol=0)


@pytest.mark.parametrize("n_control, n_train, seed", [(750, 3000, 0), (2400, 9000, 1),
                                                      (3000, 12000, 2), (5000, 6000, 3)])
def test_the_size_correction_is_anonymeters_fit(n_control, n_train, seed):
    """anonymeter's fit (scipy's curve_fit over 10 sizes, 5 draws each, here their
    expected values) and ours (each size once, the same model and start) agree."""
    from scipy.optimize import curve_fit
    from scipy.stats import hypergeom
    rng = np.random.default_rng(seed)
    counts = rng.geometric(0.4, 500)
    sizes = np.repeat(np.linspace(min(1000, n_control), n_control, 10).astype(int), 5)
    y = hypergeom.pmf(1, n_control, counts[None, :], sizes[:, None]).sum(axis=1)
    w0 = 1 / sizes.max()
    (w, norm), _ = curve_fit(so._model, sizes.astype(float), y, bounds=(0, (1, np.inf)),
                             p0=(w0, 1 / so._model(sizes.max(), w0, 1.0)))
    want = so._model(n_train, w, norm) / so._model(n_control, w, norm)
    got, note = so.size_correction(counts, n_control, n_train)
    assert not note and got == pytest.approx(want, rel=0.02)
