"""MDAV's scalable variant (issue 21 item 7): ``block_size`` splits the records into the
blocks of a k-d partition (`kd_blocks`) and runs exact MDAV within each block."""
import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import sdceval
from sdceval import Dataset, Schema, SdcevalError, get_method
from sdceval.methods.microaggregation import group_means, kd_blocks, mdav_groups


def correlated(n, m=4, seed=0, skew=True):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, 2)) @ rng.normal(0, 1, (2, m)) + \
        0.5 * rng.standard_normal((n, m))
    if skew:
        x[:, ::2] = np.exp(x[:, ::2] / 2)
    return x


def zscores(x):
    return (x - x.mean(0)) / x.std(0)


def check_blocked(z, k, block_size):
    """The invariants of the blocked variant; returns (labels, blocks)."""
    n = len(z)
    labels = mdav_groups(z, k, block_size)
    blocks = kd_blocks(z, k, block_size)
    cap = max(block_size, 2 * k - 1)
    bsizes = np.bincount(blocks)
    assert (bsizes >= k).all() and (bsizes <= max(cap, k)).all() and bsizes.sum() == n
    sizes = np.bincount(labels)
    assert (labels >= 0).all() and sizes.sum() == n
    assert sizes.min() >= k and sizes.max() <= 2 * k - 1 or len(sizes) == 1
    offset = 0
    for b in range(len(bsizes)):
        rows = np.flatnonzero(blocks == b)
        g = labels[rows]
        # no group crosses the block border: the block's groups are its own, numbered
        # after those of the previous blocks, and they are exact MDAV on the block
        assert not np.isin(np.flatnonzero(np.isin(labels, g)), rows, invert=True).any()
        assert np.array_equal(g, mdav_groups(z[rows], k) + offset)
        offset = g.max() + 1
    assert offset == len(sizes)
    return labels, blocks


def test_groups_within_blocks_and_sizes():
    z = zscores(correlated(3000, seed=1))
    for k, b in [(5, 500), (3, 700), (5, 1000), (7, 2999)]:
        labels, blocks = check_blocked(z, k, b)
        assert blocks.max() + 1 == -(-3000 // b)       # balanced leaves: ceil(n / b)


@pytest.mark.parametrize("k", [2, 5])
def test_zero_or_large_block_size_is_exact_mdav(k):
    z = zscores(correlated(1200, seed=2))
    exact = mdav_groups(z, k)
    for b in (0, 1200, 1201, 10 ** 9):
        assert np.array_equal(mdav_groups(z, k, b), exact)
    assert (kd_blocks(z, k, 1200) == 0).all()
    assert not np.array_equal(mdav_groups(z, k, 400), exact)


def test_deterministic():
    z = zscores(correlated(2500, seed=3))
    a, b = mdav_groups(z, 5, 300), mdav_groups(z.copy(), 5, 300)
    assert np.array_equal(a, b)
    assert np.array_equal(kd_blocks(z, 5, 300), kd_blocks(z, 5, 300))
    # the same z in column-major memory (as the method's z-scores are)
    assert np.array_equal(kd_blocks(np.asfortranarray(z), 5, 300), kd_blocks(z, 5, 300))


def test_ties_go_to_the_lower_index():
    # identical records: every projection is equal, so the blocks are index ranges
    z = np.zeros((40, 3))
    assert kd_blocks(z, 2, 10).tolist() == np.repeat(np.arange(4), 10).tolist()
    labels = mdav_groups(z, 2, 10)
    check_blocked(z, 2, 10)
    assert labels.tolist() == np.repeat(np.arange(20), 2).tolist()
    # many duplicates of a few points: still valid, duplicates grouped together
    rng = np.random.default_rng(4)
    z = rng.standard_normal((8, 2))[rng.integers(0, 8, 600)]
    labels, _ = check_blocked(z, 5, 100)
    # duplicates are grouped together, except the leftovers of a point's copies
    pure = (group_means(z, labels) == z).all(axis=1)
    assert pure.mean() > 0.7


def test_one_attribute_blocks_are_intervals():
    x = np.random.default_rng(5).standard_normal((1000, 1))
    blocks = kd_blocks(x, 4, 130)
    order = np.argsort(x[:, 0])
    sorted_blocks = blocks[order]
    # sorted by the value the block ids change monotonically (one direction or the other)
    steps = np.diff(sorted_blocks)
    assert (steps >= 0).all() or (steps <= 0).all()
    assert np.count_nonzero(steps) == blocks.max()


def test_small_block_size_gives_one_group_per_block():
    # below 2k - 1 a block is not split once it has k .. 2k - 1 records
    z = zscores(correlated(500, seed=6))
    for b in (1, 3, 9):
        labels, blocks = check_blocked(z, 5, b)
        assert np.array_equal(labels, blocks)
        assert np.bincount(blocks).min() >= 5 and np.bincount(blocks).max() <= 9


def test_bad_block_size():
    z = np.zeros((10, 2))
    with pytest.raises(SdcevalError, match="'block_size'"):
        mdav_groups(z, 2, -1)
    with pytest.raises(SdcevalError, match="block_size"):
        kd_blocks(z, 2, 0)
    with pytest.raises(SdcevalError, match="'k'"):
        kd_blocks(z, 11, 5)


@settings(max_examples=80, deadline=None)
@given(n=st.integers(2, 160), k=st.integers(2, 6), m=st.integers(1, 4),
       block=st.integers(1, 200), dup=st.booleans(), seed=st.integers(0, 2 ** 16))
def test_invariants_property(n, k, m, block, dup, seed):
    k = min(k, n)
    rng = np.random.default_rng(seed)
    z = rng.standard_normal((n, m)) * rng.uniform(0.1, 3, m)
    if dup:
        z = z[rng.integers(0, max(1, n // 4), n)]
    labels, blocks = check_blocked(z, k, block)
    if block >= n:
        assert np.array_equal(labels, mdav_groups(z, k))
        assert (blocks == 0).all()


def dataset(n, seed=0):
    x = correlated(n, m=4, seed=seed)
    frame = pd.DataFrame(x, columns=list("abcd"))
    frame["name"] = [f"r{i}" for i in range(n)]
    return Dataset(frame, Schema.from_roles(frame, numeric=list("abcd")), name="blocks")


def test_method_release():
    ds = dataset(6000, seed=7)
    spec = get_method("mdav")
    rel = spec.apply(ds, {"k": 5, "block_size": 2000})
    again = spec.apply(ds, {"k": 5, "block_size": 2000}, seed=3)
    assert rel.kind == "perturbative" and rel.method == "mdav"
    assert rel.params["block_size"] == 2000 and rel.params["k"] == 5
    pd.testing.assert_frame_equal(rel.data, again.data)
    assert np.array_equal(rel.classes, again.classes)
    sizes = np.bincount(rel.classes)
    assert sizes.min() >= 5 and sizes.max() <= 9
    assert rel.info["n_groups"] == len(sizes)
    x = ds.numeric_matrix()
    y = rel.numeric_matrix(ds.schema.numeric)
    assert np.allclose(y, group_means(x, rel.classes))
    np.testing.assert_allclose(y.mean(axis=0), x.mean(axis=0), rtol=1e-12)
    # the partition uses the global z-scores: the same groups as mdav_groups on them
    z = zscores(x)
    blocks = kd_blocks(z, 5, 2000)
    assert blocks.max() == 2
    assert np.array_equal(rel.classes, mdav_groups(z, 5, 2000))
    # a group never spans two blocks
    for g in np.unique(rel.classes)[::50]:
        assert len(np.unique(blocks[rel.classes == g])) == 1
    # the default and a block as large as the data set are exact MDAV
    exact = spec.apply(ds, {"k": 5})
    assert exact.params["block_size"] == 0
    for b in (0, 6000):
        assert np.array_equal(spec.apply(ds, {"k": 5, "block_size": b}).classes,
                              exact.classes)


def test_method_bad_parameter_and_registry():
    ds = dataset(50)
    with pytest.raises(SdcevalError, match="'block_size'.*>= 0"):
        sdceval.anonymize(ds, "mdav", k=5, block_size=-1)
    spec = get_method("mdav")
    p = spec.param("block_size")
    assert p.default == 0 and p.low == 0 and p.protection is None and p.unit
    assert "n x block_size" in p.description
    assert spec.tunable.name == "k" and not spec.random
