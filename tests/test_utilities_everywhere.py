"""Utility on every release (SPEC §4): `query_error` answers its COUNT queries from any
kind of release, and `ml_utility` trains a classifier on any release.

query_error: a per-record reference written from the definition (published numbers
exactly, cells under the uniform assumption, buckets by their distributions,
unpublished columns and sensitive values uniform) gives every reconstructed count, for a
release of every method; the Li & Li workload and values on Adult are those recorded
before numeric attributes joined the workload.
"""
from __future__ import annotations

import hashlib

import numpy as np
import pandas as pd
import pytest

import sdceval
import sdceval.measures.ml_utility as mlu
from sdceval import Dataset, Hierarchy, Release, Schema, SdcevalError
from sdceval.measures.attribute_disclosure import identity_release, suppressed_release
from sdceval.measures.queries import (original_release, query_attributes, random_queries,
                                      reconstructed_counts)
from sdceval.measures.utility_loss import Predicates, UniformEstimator, published

REGION = Hierarchy([[f"r{i}", f"R{i // 2}", "*"] for i in range(6)], name="region")
EDU = Hierarchy([[f"e{i}", f"g{i // 3}", "*"] for i in range(6)], name="education")


def mixed(n: int = 300, seed: int = 0, qis=("age", "region", "education"),
          sensitive: str | None = "disease") -> Dataset:
    """Numeric attributes (income with ties, spend), QIs with hierarchies (age numeric),
    a sensitive attribute depending on education, a label depending on income and
    education."""
    rng = np.random.default_rng(seed)
    edu = rng.integers(0, 6, n)
    income = np.round(rng.lognormal(3, 0.5, n))
    score = income + 4 * edu + rng.normal(0, 4, n)
    frame = pd.DataFrame({
        "age": rng.integers(20, 60, n),
        "region": [f"r{i}" for i in rng.integers(0, 6, n)],
        "education": [f"e{i}" for i in edu],
        "income": income, "spend": income * rng.uniform(0.5, 1.5, n) + edu,
        "disease": [f"d{(e + r) % 6}" for e, r in zip(edu, rng.integers(0, 3, n))],
        "rich": np.where(score > np.median(score), "yes", "no"),
    })
    age = Hierarchy.intervals(frame["age"], [5, 10, 20], name="age")
    schema = Schema.from_roles(frame, qi=list(qis), sensitive=sensitive,
                               numeric=["income", "spend"], label="rich",
                               hierarchies={"region": REGION, "education": EDU, "age": age})
    return Dataset(frame, schema, name="mixed")


@pytest.fixture(scope="module")
def ds():
    return mixed()


METHODS = [("mdav", {"k": 3}), ("noise", {"gamma": 0.5}), ("rank_swap", {"p": 0.3}),
           ("multiplicative_noise", {}), ("mondrian", {"models": ["k=5"]}),
           ("generalization", {"models": ["k=3"], "max_suppression": 0.1}),
           ("bucketization", {"models": ["k=4"]}), ("anatomy", {"l": 3})]


@pytest.fixture(scope="module")
def releases(ds):
    return {m: sdceval.anonymize(ds, m, seed=0, **p) for m, p in METHODS}


# -- query_error --------------------------------------------------------------------------
def reference_counts(ds, rel, qs) -> np.ndarray:
    """Every query's reconstructed count, record by record, from the definition."""
    n, s = ds.n, ds.schema
    if s.sensitive is None:
        dist = np.ones((n, 1))
    else:
        m = ds.hierarchy(s.sensitive).n_leaves
        if rel.kind == "bucketized":
            codes, b = np.asarray(rel.sensitive_codes), rel.classes
            dist = np.array([np.bincount(codes[b == b[i]], minlength=m) / (b == b[i]).sum()
                             for i in range(n)])
        elif rel.kind == "generalized":
            dist = np.eye(m)[rel.sensitive(ds)]
        else:                                   # not published: uniform
            dist = np.full((n, m), 1.0 / m)
    out = np.zeros(len(qs))
    for i in range(len(qs)):
        w = np.ones(n)
        for a, col in enumerate(qs.predicates.qis):
            r = qs.predicates.select[i, a]
            if r < 0:
                continue
            row = qs.predicates.rows[a][r]
            if rel.cells is not None and col in rel.cells:
                lo, hi = rel.cells[col]
                w *= np.array([row[x:y + 1].mean() for x, y in zip(lo, hi)])
            elif col in rel.data.columns:        # a published (perturbed) number
                leaves = np.flatnonzero(row)
                assert (np.diff(leaves) == 1).all()      # a range predicate
                v = ds.hierarchy(col).leaf_values
                y = rel.data[col].to_numpy(float)
                w *= (y >= v[leaves[0]]) & (y <= v[leaves[-1]])
            else:                                 # not published: fully suppressed
                w *= row.mean()
        out[i] = (w * dist[:, max(qs.sensitive[i], 0)]).sum()
    return out


def test_numeric_attributes_join_the_workload(ds):
    assert query_attributes(ds) == ("age", "region", "education", "income", "spend")
    qs = random_queries(ds, n_queries=200, qd=2, sel=0.2, seed=1)
    used = qs.predicates.select >= 0
    assert used[:, 3:].any() and used[:, :3].any()
    for a in (3, 4):                              # numeric: contiguous runs of leaves
        for row in qs.predicates.rows[a]:
            assert (np.diff(np.flatnonzero(row)) == 1).all()
    # the actual counts are the original's, record by record
    assert np.array_equal(qs.actual, reference_counts(ds, original_release(ds), qs))


@pytest.mark.parametrize("method", [m for m, _ in METHODS])
def test_every_method_matches_the_reference(ds, releases, method):
    rel = releases[method]
    qs = random_queries(ds, n_queries=60, qd=2, sel=0.2, seed=3)
    rec = reconstructed_counts(ds, rel, qs)
    np.testing.assert_allclose(rec, reference_counts(ds, rel, qs), rtol=1e-9, atol=1e-9)
    m = sdceval.evaluate(ds, rel, "query_error", n_queries=60, qd=2, sel=0.2, seed=3)
    ok = qs.actual > 0
    assert np.isfinite(m.value) and m.value > 0
    assert m.value == pytest.approx(
        np.mean(np.abs(rec[ok] - qs.actual[ok]) / qs.actual[ok]) * 100)


def test_perturbative_counts_use_the_released_values_exactly(ds, releases):
    """A perturbed value counts when it lies in the closed interval [v_i, v_j]: a value
    on an edge counts, one between two leaves outside the run does not."""
    qs = random_queries(ds, n_queries=80, qd=1, sel=0.3, seed=5)
    num = [a for a, c in enumerate(query_attributes(ds)) if c in ds.schema.numeric]
    for method in ("mdav", "noise", "rank_swap", "multiplicative_noise"):
        rel = releases[method]
        rec = reconstructed_counts(ds, rel, qs)
        m = ds.hierarchy(ds.schema.sensitive).n_leaves
        for i in range(len(qs)):
            a = int(np.flatnonzero(qs.predicates.select[i] >= 0)[0])
            if a not in num:
                continue
            col = query_attributes(ds)[a]
            row = qs.predicates.rows[a][qs.predicates.select[i, a]]
            v = ds.hierarchy(col).leaf_values[np.flatnonzero(row)]
            y = rel.data[col].to_numpy(float)
            assert rec[i] == pytest.approx(((y >= v[0]) & (y <= v[-1])).sum() / m)
    # edges: values on the interval's ends count, values just outside do not
    v = ds.hierarchy("income").leaf_values
    frame = ds.frame[["income", "spend"]].copy()
    frame.loc[:3, "income"] = [v[2], v[5], (v[5] + v[6]) / 2, (v[1] + v[2]) / 2]
    rel = Release.perturbative(ds, frame, method="hand")
    assert published(ds, rel, "income")[0] == "value"
    attrs = query_attributes(ds)
    a = attrs.index("income")
    rows = [np.zeros((0, ds.hierarchy(c).n_leaves), bool) for c in attrs]
    rows[a] = (np.arange(len(v)) >= 2) & (np.arange(len(v)) <= 5)
    rows[a] = rows[a][None, :]
    select = np.full((1, len(attrs)), -1)
    select[0, a] = 0
    got = UniformEstimator(ds, rel, "t", columns=attrs).counts(Predicates(attrs, rows, select))
    y = frame["income"].to_numpy()[4:]
    assert got.sum() == pytest.approx(((y >= v[2]) & (y <= v[5])).sum() + 2)


def test_identity_and_suppressed(ds, releases):
    kw = dict(n_queries=200, qd=2, sel=0.2, seed=2)
    qs = random_queries(ds, **kw)
    # the original table published whole (an external table) answers exactly
    full = Release.external(ds, ds.frame)
    assert sdceval.evaluate(ds, full, "query_error", **kw).value == 0.0
    # identity_release publishes the QIs and the sensitive values exactly but not the
    # numeric attributes (fully suppressed): exact on every query without them
    ident = identity_release(ds)
    rec = reconstructed_counts(ds, ident, qs)
    numeric = (qs.predicates.select[:, 3:] >= 0).any(axis=1)
    assert np.array_equal(rec[~numeric], qs.actual[~numeric])
    assert not np.allclose(rec[numeric], qs.actual[numeric])
    # on the data set without numeric attributes, identity gives 0
    plain = Dataset(ds.frame, ds.schema.with_roles(numeric=[]), name="plain")
    assert sdceval.evaluate(plain, identity_release(plain), "query_error",
                            **kw).value == 0.0
    # fully suppressed: more error than mild protection of either family
    worst = sdceval.evaluate(ds, suppressed_release(ds), "query_error", **kw).value
    mild = [sdceval.evaluate(ds, r, "query_error", **kw).value for r in
            (ident, releases["mondrian"], releases["bucketization"],
             sdceval.anonymize(ds, "noise", gamma=0.01, seed=0))]
    assert worst > max(mild)
    # and more noise, more error (same workload)
    strong = sdceval.anonymize(ds, "noise", gamma=50.0, seed=0)
    assert sdceval.evaluate(ds, strong, "query_error", **kw).value > mild[-1]


def test_without_sensitive_attribute_queries_have_no_sensitive_term():
    ds = mixed(150, 4, qis=(), sensitive=None)       # numeric attributes only
    qs = random_queries(ds, n_queries=50, qd=2, sel=0.3, seed=0)
    assert (qs.sensitive == -1).all()
    x = ds.frame[["income", "spend"]].to_numpy()
    for i in range(len(qs)):
        mask = np.ones(ds.n, bool)
        for a, col in enumerate(("income", "spend")):
            row = qs.predicates.rows[a][qs.predicates.select[i, a]]
            v = ds.hierarchy(col).leaf_values[np.flatnonzero(row)]
            mask &= (x[:, a] >= v[0]) & (x[:, a] <= v[-1])
        assert qs.actual[i] == mask.sum()
    rel = sdceval.anonymize(ds, "mdav", k=3)
    np.testing.assert_allclose(reconstructed_counts(ds, rel, qs),
                               reference_counts(ds, rel, qs), rtol=1e-12)
    m = sdceval.evaluate(ds, rel, "query_error", n_queries=50, qd=2, sel=0.3)
    assert np.isfinite(m.value) and m.details["attributes"] == ["income", "spend"]


def test_external_labels_are_read_as_cells(ds):
    """An external table's generalized labels are node ranges; an unknown label is the
    whole domain (it tells nothing)."""
    lo, hi = REGION.generalize(ds.codes("region"), 1)
    frame = ds.frame[["age", "region", "education", "disease"]].copy()
    frame["region"] = REGION.labels[1][REGION.node_of[1][ds.codes("region")]]
    frame.loc[:9, "region"] = "somewhere"
    ext = Release.external(ds, frame)
    lo, hi = lo.copy(), hi.copy()
    lo[:10], hi[:10] = 0, REGION.n_leaves - 1
    codes = {q: ds.codes(q) for q in ("age", "education")}
    gen = Release(frame, "hand", kind="generalized", classes=np.zeros(ds.n, np.int64),
                  cells={"age": (codes["age"], codes["age"]), "region": (lo, hi),
                         "education": (codes["education"], codes["education"])})
    qs = random_queries(ds, n_queries=60, qd=2, sel=0.3, seed=8)
    np.testing.assert_allclose(reconstructed_counts(ds, ext, qs),
                               reconstructed_counts(ds, gen, qs), rtol=1e-12)


def test_a_perturbative_release_needs_numeric_attributes(ds):
    plain = Dataset(ds.frame, ds.schema.with_roles(numeric=[]), name="plain")
    rel = Release(data=plain.frame, method="hand", kind="perturbative")
    for measure in ("query_error", "ml_utility"):
        with pytest.raises(SdcevalError, match="perturbative release .* no numeric"):
            sdceval.evaluate(plain, rel, measure)


# -- the Li & Li workload on Adult is unchanged -------------------------------------------
def _digest(qs) -> str:
    h = hashlib.sha256()
    h.update(np.ascontiguousarray(qs.predicates.select, dtype=np.int64).tobytes())
    for r in qs.predicates.rows:
        h.update(np.ascontiguousarray(r, dtype=bool).tobytes())
    h.update(np.ascontiguousarray(qs.sensitive, dtype=np.int64).tobytes())
    h.update(np.ascontiguousarray(qs.actual, dtype=np.float64).tobytes())
    return h.hexdigest()


def test_adult_workload_and_values_unchanged():
    """Recorded with the code before numeric attributes joined the workload."""
    adult = sdceval.load_dataset("adult")
    qs = random_queries(adult)
    assert _digest(qs) == "bd1a1987e0dddb827cde8557aadb2b4b15d3fb83464c0c2035abbce99cfb5465"
    assert qs.actual[:10].tolist() == [1079, 95, 219, 25, 1050, 502, 21, 2628, 31, 83]
    assert qs.sensitive[:10].tolist() == [10, 0, 1, 7, 3, 1, 6, 5, 2, 0]
    other = random_queries(adult, n_queries=200, qd=3, sel=0.1, seed=3,
                           selectivity="per_qi")
    assert _digest(other) == \
        "dac5dd83446cdefcefcb4d1fb41f420122adab1a2c2261c7487336aa8fb56d4f"
    rel = sdceval.anonymize(adult, "mondrian", models=["k=10"])
    m = sdceval.evaluate(adult, rel, "query_error")
    assert m.value == 99.20455439254707
    assert (m.details["n_answered"], m.details["qd"]) == (923, 4)
    assert sdceval.evaluate(adult, rel, "query_error", seed=5, qd=2,
                            sel=0.1).value == 71.85201326744101


# -- ml_utility ----------------------------------------------------------------------------
def test_ml_utility_the_original_loses_nothing(ds):
    full = Release.external(ds, ds.frame)
    for target in ("label", "sensitive"):
        m = sdceval.evaluate(ds, full, "ml_utility", target=target)
        assert m.value == 0.0 and m.details["accuracy_loss"] == 0.0
        assert m.details["n_features"] == m.details["n_features_release"] == 15
    plain = Dataset(ds.frame, ds.schema.with_roles(numeric=[]), name="plain")
    m = sdceval.evaluate(plain, identity_release(plain), "ml_utility")
    assert m.value == 0.0 and m.details["target"] == "rich"


@pytest.mark.parametrize("method", [m for m, _ in METHODS])
def test_ml_utility_on_every_method(ds, releases, method):
    for score in ("auc", "accuracy"):
        m = sdceval.evaluate(ds, releases[method], "ml_utility", score=score)
        assert -1 <= m.value <= 1 and m.per_record is None
        assert m.value == m.details[f"{score}_loss"]
        d = m.details
        assert d["target"] == "rich" and d["target_role"] == "label"
        assert d["n_train"] + d["n_test"] == ds.n and d["n_test"] == 90
        for key in ("accuracy_original", "accuracy_release", "auc_original", "auc_release"):
            assert 0 <= d[key] <= 1


def test_ml_utility_noise_and_suppression_lose_utility():
    # numeric attributes only: the label depends on income
    ds = mixed(300, 1, qis=())
    kw = dict(target="label")
    mild = sdceval.evaluate(ds, sdceval.anonymize(ds, "noise", gamma=0.01, seed=0),
                            "ml_utility", **kw).value
    huge = sdceval.evaluate(ds, sdceval.anonymize(ds, "noise", gamma=100.0, seed=0),
                            "ml_utility", **kw).value
    assert huge > 0.1 and huge > mild
    full = mixed()
    gone = sdceval.evaluate(full, suppressed_release(full), "ml_utility")
    assert gone.details["n_features_release"] == 0 and gone.details["auc_release"] == 0.5
    assert gone.value > 0.2


def test_ml_utility_is_deterministic_and_seeded(ds, releases):
    rel = releases["mondrian"]
    a = sdceval.evaluate(ds, rel, "ml_utility", seed=3)
    b = sdceval.evaluate(ds, rel, "ml_utility", seed=3)
    assert a.value == b.value and a.details == b.details
    c = sdceval.evaluate(ds, rel, "ml_utility", seed=4)
    assert c.details != a.details
    train, test, stratified = mlu.split(ds.codes("rich"), 0.3, 3)
    assert stratified and len(np.intersect1d(train, test)) == 0
    share = np.bincount(ds.codes("rich")[test]) / len(test)
    assert share == pytest.approx(np.bincount(ds.codes("rich")) / ds.n, abs=0.02)


def test_ml_utility_features_and_targets(ds, releases):
    # generalized cells: numeric midpoints, categorical leaves spread uniformly
    rel = releases["mondrian"]
    x = mlu.encode(ds, ["age", "region"], rel)
    lo, hi = rel.cells["age"]
    v = ds.hierarchy("age").leaf_values
    np.testing.assert_allclose(x[:, 0], (v[lo] + v[hi]) / 2)
    rlo, rhi = rel.cells["region"]
    np.testing.assert_allclose(x[:, 1:].sum(axis=1), 1.0)
    i = int(np.argmax(rhi - rlo))
    assert (x[i, 1 + rlo[i]:2 + rhi[i]] == 1 / (rhi[i] - rlo[i] + 1)).all()
    # a perturbative release: published numbers; dropped QIs constant (suppressed)
    x = mlu.encode(ds, ["age", "income"], releases["noise"])
    assert np.ptp(x[:, 0]) == 0
    np.testing.assert_array_equal(x[:, 1], releases["noise"].data["income"])
    # the sensitive target of a bucketized release is its permuted values; the label,
    # and the sensitive attribute a perturbative release drops, are the original's
    b = releases["anatomy"]
    np.testing.assert_array_equal(mlu.release_target(ds, b, "sensitive", "disease"),
                                  b.sensitive(ds))
    np.testing.assert_array_equal(
        mlu.release_target(ds, releases["mdav"], "sensitive", "disease"),
        ds.codes("disease"))
    m = sdceval.evaluate(ds, b, "ml_utility", target="sensitive")
    assert m.details["n_classes"] == 6 and m.details["features"] == \
        ["age", "region", "education", "income", "spend"]


def test_ml_utility_errors(ds):
    bare = Dataset(ds.frame, ds.schema.with_roles(sensitive=[], label=[]), name="bare")
    with pytest.raises(SdcevalError, match="neither a label nor a sensitive"):
        sdceval.evaluate(bare, identity_release(bare), "ml_utility")
    nolabel = Dataset(ds.frame, ds.schema.with_roles(label=[]), name="nolabel")
    assert sdceval.evaluate(nolabel, identity_release(nolabel),
                            "ml_utility").details["target"] == "disease"
    with pytest.raises(SdcevalError, match="label"):
        sdceval.evaluate(nolabel, identity_release(nolabel), "ml_utility", target="label")
    with pytest.raises(SdcevalError, match="'score'"):
        sdceval.evaluate(ds, identity_release(ds), "ml_utility", score="f1")
