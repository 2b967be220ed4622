"""`ml_utility` fits on a sparse design matrix (issue 28): the values equal those of the
dense computation it replaced, and a high-cardinality categorical (a ZIP-like code)
never becomes a dense n x levels matrix.

The dense reference below is the measure's former design (every column z-scored,
constant columns dropped by their range, a dense one-hot of the leaves) with the
package's solver settings; it lives here only.
"""
from __future__ import annotations

import tracemalloc
import warnings

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
from test_utilities_everywhere import METHODS, mixed

import sdceval
import sdceval.measures.ml_utility as mlu
from sdceval import Dataset, Hierarchy, Release, Schema


# -- the dense reference (the former computation) --------------------------------------------
def dense_one_hot(lo, hi, m):
    out = np.zeros((len(lo), m + 1))
    w = 1.0 / (hi - lo + 1)
    np.add.at(out, (np.arange(len(lo)), lo), w)
    np.add.at(out, (np.arange(len(lo)), hi + 1), -w)
    return np.cumsum(out, axis=1)[:, :m]


def dense_encode(dataset, columns, release=None):
    blocks = []
    for c in columns:
        h = dataset.hierarchy(c)
        how = mlu.feature_source(dataset, c, release)
        if how[0] == "value":
            blocks.append(np.asarray(how[1], dtype=np.float64)[:, None])
        elif h.numeric:
            v = h.leaf_values
            blocks.append(((v[how[1]] + v[how[2]]) / 2.0)[:, None])
        else:
            blocks.append(dense_one_hot(np.asarray(how[1]), np.asarray(how[2]), h.n_leaves))
    return np.hstack(blocks)


def dense_fit_predict(x_train, y_train, x_test, m):
    from sklearn.linear_model import LogisticRegression

    keep = np.ptp(x_train, axis=0) > 0
    xt, xs = x_train[:, keep], x_test[:, keep]
    mu, sd = xt.mean(axis=0), xt.std(axis=0)
    two = len(np.unique(y_train)) == 2
    fit = LogisticRegression(**(mlu.CLASSIFIER if two else mlu.CLASSIFIER_MULTI))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit.fit((xt - mu) / sd, y_train)
        p = fit.predict_proba((xs - mu) / sd)
    proba = np.zeros((len(xs), m))
    proba[:, fit.classes_] = p
    return proba, int(keep.sum())


@pytest.fixture(scope="module")
def ds():
    return mixed()


@pytest.fixture(scope="module")
def releases(ds):
    return {m: sdceval.anonymize(ds, m, seed=0, **p) for m, p in METHODS}


# -- the design matrix ---------------------------------------------------------------------
@pytest.mark.parametrize("method", [m for m, _ in METHODS])
def test_the_design_is_sparse_and_holds_the_dense_values(ds, releases, method):
    features = mlu.feature_columns(ds, "rich")
    for rel in (None, releases[method]):
        d = mlu.design(ds, features, rel)
        x = mlu._Standardizer(d).matrix(d)
        assert sp.issparse(x) and x.format == "csr"
        # the former design less its constant columns, z-scored, up to a shift of each
        # column (leaf columns are scaled, not centred) and the merging of equal leaf
        # columns (k of them: one, times sqrt(k)): the same Gram matrix once centred
        dense = dense_encode(ds, features, rel)
        kept = dense[:, np.ptp(dense, axis=0) > 0]
        z = (kept - kept.mean(axis=0)) / kept.std(axis=0)
        got = x.toarray()
        got -= got.mean(axis=0)
        assert got.shape[1] <= z.shape[1]
        np.testing.assert_allclose(got @ got.T, z @ z.T, rtol=0, atol=1e-9)
        np.testing.assert_array_equal(mlu.encode(ds, features, rel), dense)


@pytest.mark.parametrize("target", ["label", "sensitive"])
@pytest.mark.parametrize("method", [m for m, _ in METHODS])
def test_the_fit_equals_the_dense_fit(ds, releases, method, target):
    role, column = mlu.resolve_target(ds, target)
    features = mlu.feature_columns(ds, column)
    y = np.asarray(ds.codes(column), dtype=np.int64)
    m = ds.hierarchy(column).n_leaves
    train, test, _ = mlu.split(y, 0.3, 0)
    rel = releases[method]
    t = mlu.release_target(ds, rel, role, column)
    x_rel, x_orig = mlu.design(ds, features, rel), mlu.design(ds, features)
    pred, proba, used = mlu.fit_predict(x_rel.rows(train), t[train], x_orig.rows(test), m)
    ref, ref_used = dense_fit_predict(dense_encode(ds, features, rel)[train], t[train],
                                      dense_encode(ds, features)[test], m)
    assert used == ref_used
    # two classes: Newton's method, invariant to the parametrization (centred or not,
    # merged columns): the optimum to rounding; more: lbfgs, to its stopping error
    # (module notes, "Classifier")
    tol = 1e-9 if m == 2 else 5e-3
    np.testing.assert_allclose(proba, ref, rtol=0, atol=tol)
    # the measure's values: AUC and accuracy of the same predictions
    assert mlu.macro_auc(y[test], proba) == pytest.approx(mlu.macro_auc(y[test], ref),
                                                          abs=tol)
    if m == 2:
        np.testing.assert_array_equal(pred, np.argmax(ref, axis=1))


def test_the_measure_equals_the_dense_computation(ds, releases):
    for method in ("mondrian", "noise", "anatomy"):
        m = sdceval.evaluate(ds, releases[method], "ml_utility", score="auc")
        train, test, _ = mlu.split(ds.codes("rich"), 0.3, 0)
        y = np.asarray(ds.codes("rich"), dtype=np.int64)
        f = mlu.feature_columns(ds, "rich")
        x_orig = dense_encode(ds, f)
        a, _ = dense_fit_predict(x_orig[train], y[train], x_orig[test], 2)
        b, _ = dense_fit_predict(dense_encode(ds, f, releases[method])[train], y[train],
                                 x_orig[test], 2)
        assert m.value == pytest.approx(mlu.macro_auc(y[test], a) - mlu.macro_auc(y[test], b),
                                        abs=1e-6)


# -- a high-cardinality categorical ------------------------------------------------------------
def zip_table(n: int, levels: int, seed: int = 0) -> Dataset:
    rng = np.random.default_rng(seed)
    code = rng.integers(0, levels, n)
    effect = rng.normal(0, 1, levels)
    income = rng.lognormal(3, 0.5, n)
    frame = pd.DataFrame({
        "zip": [f"z{c:04d}" for c in code], "income": income,
        "rich": np.where(effect[code] + np.log(income) + rng.logistic(size=n) > 3,
                         "yes", "no")})
    leaves = [f"z{c:04d}" for c in range(levels)]
    zips = Hierarchy([[z, z[:3], "*"] for z in leaves], name="zip")
    schema = Schema.from_roles(frame, qi=["zip"], numeric=["income"], label="rich",
                               hierarchies={"zip": zips})
    return Dataset(frame, schema, name="zips")


def measured_peak(ds, rel) -> tuple[int, object]:
    """Peak bytes traced while evaluating ``ml_utility`` (the data set's lazily built
    hierarchies and the measure's imports are made before: they are not the measure's)."""
    for c in ds.frame.columns:
        ds.hierarchy(c)
        ds.codes(c)
    small = zip_table(200, 10)
    sdceval.evaluate(small, Release.external(small, small.frame), "ml_utility")
    tracemalloc.start()
    try:
        m = sdceval.evaluate(ds, rel, "ml_utility")
        return tracemalloc.get_traced_memory()[1], m
    finally:
        tracemalloc.stop()


def test_a_thousand_level_code_is_never_a_dense_matrix():
    n, levels = 20_000, 1_000
    ds = zip_table(n, levels)
    dense_bytes = n * levels * 8                 # one dense one-hot: 160 MB
    # the original itself (one leaf per record), then Mondrian cells of ~100 leaves
    for rel in (Release.external(ds, ds.frame),
                sdceval.anonymize(ds, "mondrian", models=["k=50"])):
        peak, m = measured_peak(ds, rel)
        assert m.details["n_features"] == levels + 1
        assert m.details["n_features_release"] >= 100
        # the former design peaked near 3 dense copies (~480 MB here); now ~4 MB and
        # ~26 MB (the ~100 leaves of each Mondrian cell are stored entries)
        assert peak < dense_bytes / 4, (rel.method, peak)
        assert 0 <= m.value < 0.5


def test_a_column_the_release_drops_is_never_expanded():
    # every row's cell is the whole domain: its leaves are constant, dropped before any
    # row is expanded (the expansion would hold n x levels entries, 120 MB here)
    ds = zip_table(10_000, 1_000)
    rel = sdceval.anonymize(ds, "noise", gamma=0.5, seed=0)
    d = mlu.design(ds, ["zip", "income"], rel)
    assert mlu._Standardizer(d).matrix(d).nnz == ds.n      # income only
    peak, m = measured_peak(ds, rel)
    assert m.details["n_features_release"] == 1 and m.details["n_features"] > 500
    assert peak < 10_000 * 1_000 * 8 / 4
