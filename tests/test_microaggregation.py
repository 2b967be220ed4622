"""MDAV microaggregation: group sizes, the algorithm itself, moments, errors."""
import numpy as np
import pandas as pd
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

import sdceval
from sdceval import Dataset, Schema, SdcevalError, get_method
from sdceval.methods import microaggregation as ma
from sdceval.methods.microaggregation import group_means, mdav_groups


def mdav_reference(z, k):
    """Textbook MDAV (exact squared differences, ties to the lowest index)."""
    z = np.asarray(z, float)
    left, labels, g = np.arange(len(z)), np.full(len(z), -1), 0

    def sq(rows, v):
        return ((z[rows] - v) ** 2).sum(axis=1)

    def farthest(rows, v):
        d = sq(rows, v)
        return rows[np.flatnonzero(d == d.max())[0]]

    def group(rows, p):
        d = sq(rows, z[p])
        d[rows == p] = -1
        return rows[np.argsort(d, kind="stable")[:k]]

    def take(sel):
        nonlocal left, g
        labels[sel] = g
        g += 1
        left = np.setdiff1d(left, sel)

    while len(left) >= 3 * k:
        r = farthest(left, z[left].mean(axis=0))
        take(group(left, r))
        s = farthest(left, z[r])
        take(group(left, s))
    if len(left) >= 2 * k:
        r = farthest(left, z[left].mean(axis=0))
        take(group(left, r))
    if len(left):
        take(left)
    return labels


def frame_dataset(frame, numeric=None):
    return Dataset(frame, Schema.from_roles(frame, numeric=numeric or list(frame.columns)))


def canonical(labels):
    """Group ids renumbered by first record, to compare partitions."""
    _, first, inv = np.unique(labels, return_index=True, return_inverse=True)
    return np.argsort(np.argsort(first))[inv]


def check_sizes(labels, n, k):
    sizes = np.bincount(labels)
    assert sizes.sum() == n and (labels >= 0).all()
    assert sizes.min() >= k and sizes.max() <= max(2 * k - 1, k)
    # all groups have exactly k records except possibly the last one formed
    assert (sizes[:-1] == k).all()


def test_worked_example_two_clusters():
    # two tight clusters of 3 on a line: MDAV with k=3 must recover them
    z = np.array([[0.0], [0.1], [0.2], [10.0], [10.1], [10.2]])
    labels = mdav_groups(z, 3)
    assert labels[0] == labels[1] == labels[2] != labels[3] == labels[4] == labels[5]
    # first group is formed around the record farthest from the centroid (5.1):
    # 0.0 and 10.2 are both 5.1 away -> the lowest index (record 0) wins the tie
    assert labels[0] == 0


def test_worked_example_order_of_groups():
    # 9 points, k=3: r = 100 (farthest from the mean), its 2 nearest are 90, 80;
    # s = the point farthest from 100, i.e. 0, grouped with 1, 2; the rest is the last group
    z = np.array([[0.0], [1.0], [2.0], [40.0], [41.0], [42.0], [80.0], [90.0], [100.0]])
    labels = mdav_groups(z, 3)
    assert labels.tolist() == [1, 1, 1, 2, 2, 2, 0, 0, 0]


@pytest.mark.parametrize("n,k", [(2, 2), (3, 2), (5, 2), (6, 3), (7, 3), (8, 3), (9, 3),
                                 (11, 3), (17, 5), (29, 5), (30, 5), (31, 7), (100, 10),
                                 (101, 50), (150, 50)])
def test_group_sizes(n, k):
    z = np.random.default_rng(n * 100 + k).standard_normal((n, 3))
    labels = mdav_groups(z, k)
    check_sizes(labels, n, k)
    assert np.array_equal(labels, mdav_reference(z, k))


def _sse(z, labels):
    means = np.array([z[labels == g].mean(axis=0) for g in range(labels.max() + 1)])
    return float(((z - means[labels]) ** 2).sum())


def test_fewer_than_2k_records_make_one_group():
    z = np.random.default_rng(0).standard_normal((9, 2))
    assert (mdav_groups(z, 5) == 0).all()


@settings(max_examples=60, deadline=None)
@given(n=st.integers(2, 120), k=st.integers(2, 40), m=st.integers(1, 4),
       dup=st.booleans(), seed=st.integers(0, 2 ** 16))
@example(n=98, k=3, m=2, dup=True, seed=0)   # the mirror-image partition (below)
def test_sizes_and_reference_property(n, k, m, dup, seed):
    k = min(k, n)
    rng = np.random.default_rng(seed)
    z = rng.standard_normal((n, m))
    if dup:  # many exact duplicates
        z = z[rng.integers(0, max(1, n // 4), n)]
    labels = mdav_groups(z, k)
    check_sizes(labels, n, k)
    if dup:
        # duplicates can leave records exactly equidistant from the centroid (two
        # distinct points left: both are), where rounding of the distance formula picks
        # which is the farthest record, hence which group is formed first.  Mostly the
        # partition is the same; when not (n=98, k=3, m=2, seed=0: 4 + 4 copies of two
        # points end as 4A+1B, 3B or as 3A, 4B+1A) it is the mirror image, with the
        # same within-group sum of squares
        ref = mdav_reference(z, k)
        if not np.array_equal(canonical(labels), canonical(ref)):
            assert _sse(z, labels) == pytest.approx(_sse(z, ref), rel=1e-9, abs=1e-12)
            assert sorted(np.bincount(labels)) == sorted(np.bincount(ref))
    else:
        assert np.array_equal(labels, mdav_reference(z, k))


def test_bounded_centroid_search_and_compaction(monkeypatch):
    # shrink the thresholds so that the candidate-list search, its refreshes and the
    # compaction remap all run on a small input; the result must equal the textbook
    monkeypatch.setattr(ma, "_TOP", 16)
    monkeypatch.setattr(ma, "_BOUNDED_MIN", 64)
    rng = np.random.default_rng(7)
    x = np.exp(rng.standard_normal((1500, 4)) @ rng.normal(0, 0.7, (4, 4)))
    x = np.vstack([x, x[:300]])                       # duplicates too
    z = (x - x.mean(0)) / x.std(0)
    for k in (2, 3, 5):
        assert np.array_equal(mdav_groups(z, k), mdav_reference(z, k))


def test_duplicates_deterministic_lowest_index():
    # 12 identical records, k=5: groups are taken in index order
    z = np.zeros((12, 2))
    labels = mdav_groups(z, 5)
    assert labels.tolist() == [0] * 5 + [1] * 7
    frame = pd.DataFrame({"a": [1.0] * 6 + [2.0] * 6, "b": [3.0] * 6 + [5.0] * 6})
    ds = frame_dataset(frame)
    a = sdceval.anonymize(ds, "mdav", k=3, seed=0)
    b = sdceval.anonymize(ds, "mdav", k=3, seed=99)
    pd.testing.assert_frame_equal(a.data, b.data)
    assert np.array_equal(a.classes, b.classes)
    # the duplicates fall in groups of identical records, so nothing changes
    pd.testing.assert_frame_equal(a.data, frame)


def test_release_census(small_numeric):
    ds = small_numeric
    before = ds.frame.copy()
    rel = sdceval.anonymize(ds, "mdav", k=5)
    pd.testing.assert_frame_equal(ds.frame, before)          # input untouched
    assert rel.kind == "perturbative" and rel.method == "mdav"
    assert rel.info["n_groups"] == len(np.unique(rel.classes)) == 60
    x = ds.numeric_matrix()
    y = rel.numeric_matrix(ds.schema.numeric)
    # every published vector is its group's mean in original units
    assert np.allclose(y, group_means(x, rel.classes))
    for g in np.unique(rel.classes):
        rows = y[rel.classes == g]
        assert (rows == rows[0]).all()
        assert np.allclose(rows[0], x[rel.classes == g].mean(axis=0))
    np.testing.assert_allclose(y.mean(axis=0), x.mean(axis=0), rtol=1e-12)
    # only the masked columns are published (issue 6 §1), dtypes float64
    assert list(rel.data.columns) == ds.schema.numeric and rel.dropped == ("name",)
    assert all(rel.data[c].dtype == np.float64 for c in ds.schema.numeric)
    # the partition is computed on z-scores: rescaling a column changes nothing
    frame = ds.frame.copy()
    frame["b"] = frame["b"] * 1000
    rel2 = sdceval.anonymize(frame_dataset(frame, ["a", "b", "c"]), "mdav", k=5)
    assert np.array_equal(rel.classes, rel2.classes)


def test_mdav_on_census_matches_reference():
    ds = sdceval.load_dataset("census")
    x = ds.numeric_matrix()
    z = (x - x.mean(0)) / x.std(0)
    rel = sdceval.anonymize(ds, "mdav", k=5)
    assert np.array_equal(rel.classes, mdav_reference(z, 5))
    check_sizes(rel.classes, ds.n, 5)


def test_errors():
    frame = pd.DataFrame({"a": np.arange(10.0), "b": np.ones(10)})
    with pytest.raises(SdcevalError, match="'b'.*constant"):
        sdceval.anonymize(frame_dataset(frame), "mdav", k=2)
    ds = frame_dataset(frame, ["a"])
    with pytest.raises(SdcevalError, match="'k'.*<= 10"):
        get_method("mdav").apply(ds, {"k": 11})
    with pytest.raises(SdcevalError, match="'k'.*>= 2"):
        get_method("mdav").apply(ds, {"k": 1})
    with pytest.raises(SdcevalError, match="'k'"):
        mdav_groups(np.zeros((3, 2)), 4)
    no_numeric = Dataset(frame, Schema.from_roles(frame, qi=["a"]))
    with pytest.raises(SdcevalError, match="mdav needs numeric"):
        sdceval.anonymize(no_numeric, "mdav", k=2)


def test_registry_entry():
    spec = get_method("mdav")
    assert spec.family == "perturbative" and not spec.random
    k = spec.tunable
    assert k.name == "k" and k.protection == "increasing" and k.high == "n"
    assert {5, 10, 15, 20, 25, 50} <= set(k.grid)


@pytest.mark.slow
def test_large_input_matches_reference():
    # above the size where the bounded centroid search is used with default settings
    rng = np.random.default_rng(11)
    x = np.exp(rng.standard_normal((11000, 5)) @ rng.normal(0, 0.6, (5, 5)))
    x = np.vstack([x, x[:1000]])
    z = (x - x.mean(0)) / x.std(0)
    assert np.array_equal(mdav_groups(z, 5), mdav_reference(z, 5))
