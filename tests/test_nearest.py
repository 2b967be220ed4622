"""The nearest-neighbour search of the risk measures and the sample of records they link
on large tables (`sdceval.measures._nearest`, issue 21 item 7).

The search is exact: brute force over every (query, point) pair is the reference, on
points with duplicates and exact ties.  On a sample, every linked record's value is the
one the exact run gives it (the sample changes which records are averaged, nothing
else), the estimate's standard error is the textbook formula, and the same records are
drawn for every release of a data set.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings, strategies as st

import sdceval
from sdceval import Dataset, Release, Schema
from sdceval.core.errors import SdcevalError
from sdceval.measures import _nearest
from sdceval.measures._nearest import NearestIndex, record_sample, sample_summary


def brute(points, q):
    d = np.sqrt(((q[:, None, :] - points[None, :, :]) ** 2).sum(axis=2))
    return d


@settings(max_examples=40, deadline=None)
@given(n=st.integers(1, 120), m=st.integers(1, 60), d=st.integers(1, 4),
       grid=st.booleans(), seed=st.integers(0, 2**16))
def test_nearest_and_ties_equal_brute_force(n, m, d, grid, seed):
    rng = np.random.default_rng(seed)
    make = ((lambda k: rng.integers(0, 3, (k, d)).astype(float)) if grid
            else (lambda k: rng.normal(size=(k, d))))
    points, q = make(m), make(n)
    idx = NearestIndex(points)
    full = brute(points, q)
    dist, nearest = idx.nearest(q)
    np.testing.assert_allclose(dist, full.min(axis=1), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(full[np.arange(n), nearest], dist, rtol=1e-12, atol=1e-12)
    radius_of = (lambda r: r * (1 + 1e-9) + 1e-12)
    dist2, nearest2, tied, hits = idx.nearest_ties(q, radius_of)
    np.testing.assert_array_equal(dist2, dist)
    within = full <= radius_of(dist)[:, None]
    expect_tied = np.flatnonzero(within.sum(axis=1) > 1)
    np.testing.assert_array_equal(tied, expect_tied)
    for i, h in zip(tied, hits):
        assert sorted(h) == list(np.flatnonzero(within[i]))
    assert (within[np.arange(n), nearest2]).all()


def test_queries_come_back_in_their_own_order():
    """The queries are searched in space order; the answers are returned per query."""
    rng = np.random.default_rng(0)
    points = rng.normal(size=(500, 3))
    q = rng.normal(size=(3000, 3))
    dist, nearest = NearestIndex(points).nearest(q)
    for i in rng.choice(len(q), 50, replace=False):
        assert nearest[i] == np.argmin(((points - q[i]) ** 2).sum(axis=1))
    order = _nearest.space_order(q)
    assert sorted(order) == list(range(len(q)))


def test_record_sample():
    assert record_sample(100, 0, 0) is None
    assert record_sample(100, 100, 0) is None
    assert record_sample(100, 500, 3) is None
    a = record_sample(1000, 50, 7)
    assert len(a) == 50 and len(set(a)) == 50 and (np.diff(a) > 0).all()
    np.testing.assert_array_equal(a, record_sample(1000, 50, 7))
    assert not np.array_equal(a, record_sample(1000, 50, 8))
    with pytest.raises(SdcevalError, match="sample must be 0"):
        record_sample(10, -1, 0)


def test_sample_summary_is_the_textbook_estimate():
    v = np.array([1.0, 2.0, 4.0, 7.0])
    s = sample_summary(v, 10)
    assert s["estimate"] == pytest.approx(3.5)
    se = np.sqrt((1 - 4 / 10) * np.var(v, ddof=1) / 4)
    assert s["standard_error"] == pytest.approx(se)
    assert s["ci95"] == pytest.approx([3.5 - 1.959964 * se, 3.5 + 1.959964 * se])
    assert sample_summary(v, 4)["standard_error"] == 0.0     # the whole population


def numeric_pair(n=400, seed=0, ties=True):
    rng = np.random.default_rng(seed)
    x = rng.lognormal(size=(n, 3))
    if ties:
        x = np.round(x, 1)
    cols = ["a", "b", "c"]
    frame = pd.DataFrame(x, columns=cols)
    ds = Dataset(frame, Schema.from_roles(frame, numeric=cols), name="pair")
    return ds, cols, x, rng


@pytest.mark.parametrize("measure", ["linkage_risk", "reidentification"])
def test_a_sample_links_its_records_as_the_exact_run_does(measure):
    ds, cols, x, rng = numeric_pair()
    rel = Release(pd.DataFrame(x + rng.normal(0, 0.3, x.shape), columns=cols),
                  method="noise", kind="external")
    exact = sdceval.evaluate(ds, rel, measure, sample=0)
    est = sdceval.evaluate(ds, rel, measure, sample=120, seed=4)
    rows = record_sample(len(x), 120, 4)
    assert np.isnan(est.per_record).sum() == len(x) - 120
    np.testing.assert_array_equal(est.per_record[rows], exact.per_record[rows])
    s = est.details["sample"]
    assert s["sampled_records"] == 120 and s["records"] == len(x) and s["seed"] == 4
    assert s["standard_error"] > 0
    lo, hi = s["ci95"]
    assert lo < est.value < hi
    if measure == "reidentification":
        assert est.value == pytest.approx(exact.per_record[rows].mean())
    else:
        assert est.value == pytest.approx(np.log1p(exact.per_record[rows]).mean())
        assert s["reidentification_rate_se"] > 0
    # the same records for every release of the data set: paired comparisons
    other = Release(pd.DataFrame(x + rng.normal(0, 1.0, x.shape), columns=cols),
                    method="noise", kind="external")
    again = sdceval.evaluate(ds, other, measure, sample=120, seed=4)
    np.testing.assert_array_equal(np.isnan(again.per_record), np.isnan(est.per_record))


def test_the_default_sample_leaves_tables_up_to_its_size_exact():
    ds, cols, x, rng = numeric_pair(300)
    rel = Release(pd.DataFrame(x + rng.normal(0, 0.3, x.shape), columns=cols),
                  method="noise", kind="external")
    m = sdceval.evaluate(ds, rel, "linkage_risk")
    assert "sample" not in m.details and not np.isnan(m.per_record).any()
    assert _nearest.SAMPLE >= 50_000


def test_cells_are_linked_exactly_whatever_the_sample():
    """A generalized release is linked on its cells (linear cost): never sampled."""
    from tests.test_reidentification import mixed
    ds = mixed(300, 1)
    rel = sdceval.anonymize(ds, "mondrian", k=5)
    a = sdceval.evaluate(ds, rel, "reidentification", sample=10)
    b = sdceval.evaluate(ds, rel, "reidentification", sample=0)
    assert a.value == b.value and "sample" not in a.details
    assert not np.isnan(a.per_record).any()


def test_attribute_inference_on_a_sample():
    from tests.test_reidentification import mixed
    ds = mixed(300, 2, numeric_sensitive=True)
    rel = sdceval.anonymize(ds, "mdav", k=3)
    rel = Release(pd.concat([rel.data.reset_index(drop=True),
                             ds.frame[["disease"]].reset_index(drop=True)], axis=1),
                  method="mdav+sens", kind="external")
    exact = sdceval.evaluate(ds, rel, "attribute_inference", sample=0)
    est = sdceval.evaluate(ds, rel, "attribute_inference", sample=100, seed=1)
    rows = record_sample(300, 100, 1)
    np.testing.assert_array_equal(est.per_record[rows], exact.per_record[rows])
    assert est.value == pytest.approx(exact.per_record[rows].mean())


def test_property_vectors_link_every_record():
    """A property vector compares records one by one: it never uses the sample."""
    from sdceval.vectors.properties import _View
    ds, cols, x, rng = numeric_pair(200)
    rel = Release(pd.DataFrame(x + rng.normal(0, 0.3, x.shape), columns=cols),
                  method="noise", kind="external")
    calls = []
    from sdceval.core import registry
    original = registry.MeasureSpec.evaluate

    def spy(self, dataset, release, params=None):
        calls.append((self.name, params))
        return original(self, dataset, release, params)

    registry.MeasureSpec.evaluate = spy
    try:
        view = _View.__new__(_View)
        view.dataset, view.release = ds, rel
        view.measure("linkage_risk")
        view.measure("reidentification")
    finally:
        registry.MeasureSpec.evaluate = original
    assert calls == [("linkage_risk", {"sample": 0}), ("reidentification", {"sample": 0})]
