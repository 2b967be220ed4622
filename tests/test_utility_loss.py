"""U_loss (Li & Li 2009 §4.2): large populations, uniform-assumption reconstruction."""
import dataclasses
import itertools
import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings, strategies as st

import sdceval
from sdceval import Dataset, Hierarchy, Release, Schema, SdcevalError
from sdceval.measures.attribute_disclosure import identity_release, suppressed_release
from sdceval.core.divergence import js_divergence, normalize
from sdceval.measures.utility_loss import (Predicates, UniformEstimator, large_populations,
                                           u_loss)

COLOR = Hierarchy([["red", "warm", "*"], ["yellow", "warm", "*"], ["green", "cool", "*"],
                   ["blue", "cool", "*"], ["black", "dark", "*"]], name="color")


def make(seed, n=200):
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame({
        "age": rng.integers(20, 40, n),
        "color": rng.choice(["red", "yellow", "green", "blue", "black"], n,
                            p=[0.4, 0.1, 0.2, 0.2, 0.1]),
        "sex": rng.choice(["M", "F"], n, p=[0.7, 0.3]),
        "s": rng.choice(["a", "b", "c"], n, p=[0.6, 0.3, 0.1]),
    })
    hier = {"age": Hierarchy.intervals(range(20, 40), [5, 10], name="age"), "color": COLOR}
    schema = Schema.from_roles(frame, qi=["age", "color", "sex"], sensitive="s",
                               hierarchies=hier)
    return Dataset(frame, schema, name=f"rand{seed}")


def brute_itemsets(ds, min_support):
    """Every conjunction of <= 1 non-root node per QI with support >= min_support."""
    qis = ds.schema.qis
    options = []
    for a, q in enumerate(qis):
        h, codes = ds.hierarchy(q), ds.codes(q)
        opts = [None] + [(a, j, node, (codes >= h.lo[j][node]) & (codes <= h.hi[j][node]))
                         for j in range(h.height) for node in range(len(h.lo[j]))]
        options.append(opts)
    out = {}
    sens = ds.codes(ds.schema.sensitive)
    for combo in itertools.product(*options):
        chosen = [c for c in combo if c is not None]
        if not chosen:
            continue
        mask = np.logical_and.reduce([c[3] for c in chosen])
        if mask.sum() >= math.ceil(min_support * ds.n - 1e-9):
            key = tuple((a, j, node) for a, j, node, _ in chosen)
            out[key] = (mask, np.bincount(sens[mask], minlength=3))
    return out


def keyed(pops):
    out = {}
    for i, mem in enumerate(pops.members):
        key = tuple((a, int(pops.item_level[it]), int(pops.item_node[it]))
                    for a, it in enumerate(mem) if it >= 0)
        out[key] = i
    return out


@pytest.mark.parametrize("seed,min_support", [(0, 0.05), (1, 0.1), (2, 0.02), (3, 0.3)])
def test_population_search_matches_brute_force(seed, min_support):
    ds = make(seed)
    pops = large_populations(ds, min_support)
    brute = brute_itemsets(ds, min_support)
    got = keyed(pops)
    assert set(got) == set(brute)
    for key, i in got.items():
        mask, counts = brute[key]
        assert pops.support[i] == mask.sum()
        np.testing.assert_array_equal(pops.counts[i], counts)
    distinct = {np.packbits(m).tobytes() for m, _ in brute.values()}
    assert pops.n_populations == len(distinct)
    if min_support <= 0.05:
        # 'black' (~10 %) and its one-child node 'dark' select the same records
        assert pops.n_populations < pops.n_itemsets


def test_population_search_is_cached():
    ds = make(0)
    assert large_populations(ds, 0.05) is large_populations(ds, 0.05)
    assert large_populations(ds, 0.1) is not large_populations(ds, 0.05)


def test_representative_has_fewest_predicates():
    ds = make(0)
    pops = large_populations(ds, 0.05)
    sizes = (pops.members >= 0).sum(axis=1)
    assert (np.diff(sizes) >= 0).all()             # level-wise order
    assert pops.first[0] and pops.describe(ds, 0).startswith("age=")


def test_uniform_weight_hand_example():
    # one released record per cell: age [20-29] (10 leaves), sex '*', s = 'a'
    frame = pd.DataFrame({"age": [20, 29], "sex": ["M", "F"], "s": ["a", "b"]})
    ds = Dataset(frame, Schema.from_roles(
        frame, qi=["age", "sex"], sensitive="s",
        hierarchies={"age": Hierarchy.intervals(range(20, 30), [5], name="age")}))
    rel = Release(data=frame, method="hand", kind="generalized", classes=np.array([0, 0]),
                  cells={"age": (np.array([0, 0]), np.array([9, 9])),
                         "sex": (np.array([0, 0]), np.array([1, 1]))})
    est = UniformEstimator(ds, rel, "test")
    leaves = np.arange(10)
    # predicate age in [20-24] (5 of 10 leaves) and sex = M (1 of 2): weight 1/2 * 1/2
    pred = Predicates(("age", "sex"), [(leaves < 5)[None, :], np.array([[True, False]])],
                      np.array([[0, 0], [0, -1], [-1, -1]]))
    np.testing.assert_allclose(est.counts(pred), [[0.25, 0.25], [0.5, 0.5], [1.0, 1.0]])
    # a non-contiguous leaf set: ages 20, 22, 27 -> 3/10 of each record
    pred2 = Predicates(("age", "sex"), [np.isin(leaves, [0, 2, 7])[None, :],
                                        np.zeros((0, 2), bool)], np.array([[0, -1]]))
    np.testing.assert_allclose(est.counts(pred2), [[0.3, 0.3]])
    np.testing.assert_allclose(est.counts(pred, np.array([1, 0, 1])), [0.25, 0.5, 1.0])


def test_bucketized_estimate_uses_bucket_distribution():
    frame = pd.DataFrame({"x": ["u", "v", "w", "u"], "s": ["a", "a", "b", "b"]})
    ds = Dataset(frame, Schema.from_roles(frame, qi=["x"], sensitive="s"))
    codes = ds.codes("x")
    rel = Release(data=frame, method="hand", kind="bucketized",
                  classes=np.array([0, 0, 0, 1]), cells={"x": (codes, codes)},
                  sensitive_codes=ds.codes("s"))
    est = UniformEstimator(ds, rel, "test")
    # x = u: record 0 (bucket 0: a, a, b -> 2/3, 1/3) + record 3 (bucket 1: b)
    pred = Predicates(("x",), [np.array([[True, False, False]])], np.array([[0]]))
    np.testing.assert_allclose(est.counts(pred), [[2 / 3, 1 / 3 + 1]])


def test_hand_release_matches_per_record_brute_force():
    ds = make(4)
    # a Mondrian-like release: classes by (age decade, warm/cool/dark), sex suppressed
    h_age, h_col = ds.hierarchy("age"), ds.hierarchy("color")
    alo, ahi = h_age.generalize(ds.codes("age"), 2)
    clo, chi = h_col.generalize(ds.codes("color"), 1)
    n = ds.n
    cells = {"age": (alo, ahi), "color": (clo, chi),
             "sex": (np.zeros(n, int), np.ones(n, int))}
    _, classes = np.unique(np.stack([alo, clo], 1), axis=0, return_inverse=True)
    rel = Release(data=ds.frame, method="hand", kind="generalized", classes=classes.ravel(),
                  cells=cells, sensitive_codes=ds.codes("s"))
    pops = large_populations(ds, 0.05)
    preds = pops.predicates(dedupe=False)
    sens = ds.codes("s")
    brute = np.zeros((pops.n_itemsets, 3))
    for i in range(pops.n_itemsets):
        w = np.ones(n)
        for a, q in enumerate(ds.schema.qis):
            it = pops.members[i, a]
            if it < 0:
                continue
            lo, hi = cells[q]
            ov = np.minimum(hi, pops.item_hi[it]) - np.maximum(lo, pops.item_lo[it]) + 1
            w *= np.clip(ov, 0, None) / (hi - lo + 1)
        brute[i] = np.bincount(sens, weights=w, minlength=3)
    np.testing.assert_allclose(UniformEstimator(ds, rel, "t").counts(preds), brute)
    expected = js_divergence(normalize(pops.counts), normalize(brute)).mean()
    assert u_loss(ds, rel, dedupe=False).value == pytest.approx(expected)
    assert 0 < u_loss(ds, rel).value < u_loss(ds, suppressed_release(ds)).value


def test_baselines_small():
    ds = make(5)
    assert u_loss(ds, identity_release(ds)).value == 0.0
    pops = large_populations(ds, 0.05)
    q = np.bincount(ds.codes("s"), minlength=3) / ds.n
    m = u_loss(ds, suppressed_release(ds))
    first = pops.counts[pops.first]
    assert m.value == pytest.approx(js_divergence(normalize(first), q).mean())
    assert m.details == {"n_populations": pops.n_populations, "n_itemsets": pops.n_itemsets,
                         "max": pytest.approx(js_divergence(normalize(first), q).max())}
    assert m.per_record is None and m.larger_is_worse


def test_parameters_and_errors():
    ds = make(6)
    spec = sdceval.get_measure("u_loss")
    with pytest.raises(SdcevalError, match="min_support"):
        spec.resolve({"min_support": 0})
    with pytest.raises(SdcevalError, match="min_support"):
        spec.resolve({"min_support": 1.5})
    with pytest.raises(SdcevalError, match="lower min_support"):
        u_loss(ds, suppressed_release(ds), min_support=1.0)
    plain = Release(data=ds.frame, method="noise", kind="perturbative")
    with pytest.raises(SdcevalError, match="'u_loss' does not apply to a perturbative"):
        u_loss(ds, plain)
    rel = suppressed_release(ds)
    cells = dict(rel.cells)
    del cells["color"]
    with pytest.raises(SdcevalError, match="no cells for QI.*'color'"):
        u_loss(ds, dataclasses.replace(rel, cells=cells))
    cells = dict(rel.cells, age=(rel.cells["age"][0], rel.cells["age"][1] + 1))
    with pytest.raises(SdcevalError, match="cells of QI 'age' are not leaf-code ranges"):
        u_loss(ds, dataclasses.replace(rel, cells=cells))
    # a cell array of the wrong length cannot even be built into a release
    cells = dict(rel.cells, sex=(rel.cells["sex"][0][:5], rel.cells["sex"][1][:5]))
    with pytest.raises(SdcevalError, match=r"cells\['sex'\] lo has shape \(5,\)"):
        dataclasses.replace(rel, cells=cells)


# -- Adult (SPEC §2, §4 checked figures) ------------------------------------------------
@pytest.fixture(scope="module")
def adult():
    return sdceval.load_dataset("adult")


def test_adult_populations_and_baselines(adult):
    pops = large_populations(adult, 0.05)
    assert (pops.n_itemsets, pops.n_populations) == (5608, 3011)
    sup = sdceval.evaluate(adult, suppressed_release(adult), "u_loss")
    assert sup.value == pytest.approx(0.0489, abs=5e-5)            # Li & Li: 0.05
    assert sup.details["n_populations"] == 3011
    every = sdceval.evaluate(adult, suppressed_release(adult), "u_loss", dedupe=False)
    assert every.value == pytest.approx(0.0515, abs=5e-5)
    assert every.details["n_populations"] == 5608
    assert sdceval.evaluate(adult, identity_release(adult), "u_loss").value == 0.0


@settings(max_examples=60, deadline=None)
@given(n=st.integers(1, 300), k=st.integers(1, 4), top=st.integers(1, 30),
       seed=st.integers(0, 2**16))
def test_hashed_grouping_equals_numpy_unique(n, k, top, seed):
    """The estimator groups records by hashing (linear in n) and sorts only the
    distinct rows: the same groups, in the same order, as ``np.unique``'s sort of every
    row (so reconstructed counts are summed in the same order)."""
    from sdceval.measures.utility_loss import _sorted_ids, _sorted_rows
    rng = np.random.default_rng(seed)
    cols = [rng.integers(-3, top, n) for _ in range(k)]
    want_rows, want_inv = np.unique(np.stack(cols, axis=1), axis=0, return_inverse=True)
    rows, inv = _sorted_rows(cols, n)
    np.testing.assert_array_equal(rows, want_rows)
    np.testing.assert_array_equal(inv, want_inv.ravel())
    v = np.round(rng.normal(size=n), 1)
    v[rng.random(n) < 0.1] = np.nan
    want_v, want_vi = np.unique(v, return_inverse=True)
    got_v, got_vi = _sorted_ids(v)
    np.testing.assert_array_equal(got_v, want_v)
    np.testing.assert_array_equal(got_vi, want_vi.ravel())
