"""Utilities and column treatment of whole-file (composite) releases (issue 28 item 1):
`query_error` and `ml_utility` read every column of a composite release as it is
published — QI cells, numeric attributes generalized into interval cells, masked numbers,
the released sensitive values (a bucket's distribution when they are permuted within
buckets) — and `column_treatment` says what was done to each column."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from sdceval.core.frames import as_dataset
from sdceval.core.release import Release
from sdceval.core.treatment import TREATMENTS, column_treatment
from sdceval.measures.ml_utility import design, feature_columns, ml_utility
from sdceval.measures.queries import (CountQueries, query_attributes, query_error,
                                      random_queries, reconstructed_counts)
from sdceval.measures.utility_loss import Predicates, published_sensitive


def exact(ds, cols):
    return {c: (ds.codes(c), ds.codes(c)) for c in cols}


def labels(ds, cells):
    """The published labels of ``cells`` (what a strategy writes: `Hierarchy.labels_of`)."""
    return {c: ds.hierarchy(c).labels_of(lo, hi) for c, (lo, hi) in cells.items()}


# -- a tiny table, reconstructed by hand ------------------------------------------------
@pytest.fixture(scope="module")
def tiny():
    df = pd.DataFrame({"sex": ["F", "M", "F", "M", "F", "M"],
                       "age": [20, 30, 40, 50, 60, 70],
                       "income": [10.0, 20.0, 30.0, 40.0, 50.0, 60.0],
                       "hours": [1, 2, 3, 4, 5, 6],
                       "diagnosis": ["a", "b", "a", "b", "a", "a"]})
    return as_dataset(df, qi=["sex", "age"], numeric=["income", "hours"],
                      sensitive="diagnosis")


#: a known generalized release of the tiny table: sex suppressed on records 0 and 1, age
#: and hours in two intervals of three leaves; income masked to these numbers
MASKED_INCOME = np.array([12.0, 22.0, 29.0, 41.0, 50.0, 61.0])


def tiny_cells():
    two = (np.array([0, 0, 0, 3, 3, 3]), np.array([2, 2, 2, 5, 5, 5]))
    return {"sex": (np.array([0, 0, 0, 1, 0, 1]), np.array([1, 1, 0, 1, 0, 1])),
            "age": two, "hours": two}


def tiny_composite(ds):
    cells = tiny_cells()
    data = pd.DataFrame(labels(ds, cells))
    data["income"] = MASKED_INCOME
    return Release.composite(ds, data, cells=cells, method="hand")


def tiny_queries(ds):
    """Three queries over (sex, age, income, hours), leaf sets written out:
    q0: sex=F & age in {30,40,50} & income in [20, 30] & s=a,
    q1: hours in {3, 4} & s=a,  q2: sex=M & hours in {3, 4} & s=b."""
    attrs = query_attributes(ds)
    assert attrs == ("sex", "age", "income", "hours")
    rows = [np.array([[True, False], [False, True]]),               # F ; M
            np.array([[False, True, True, True, False, False]]),    # age 30..50
            np.array([[False, True, True, False, False, False]]),   # income 20..30
            np.array([[False, False, True, True, False, False]])]   # hours 3..4
    select = np.array([[0, 0, 0, -1], [-1, -1, -1, 0], [1, -1, -1, 0]])
    a, b = ds.hierarchy("diagnosis").encode(["a", "b"])
    return CountQueries(Predicates(attrs, rows, select), np.array([a, a, b]),
                        np.zeros(3))


def test_composite_reconstruction_by_hand(tiny):
    """Record by record: q0 — sex weighs 1/2 on the suppressed records 0, 1, age 2/3 on
    [20-40] and 1/3 on [50-70], income counts the masked 22 and 29 only: record 1 has
    s=b, record 2 gives 1 · 2/3 · 1 = 2/3.  q1 — hours {3,4} is 1/3 of both cells: the
    four records with s=a give 4/3.  q2 — records 1 (sex 1/2, hours 1/3) and 3 (sex 1,
    hours 1/3) with s=b: 1/6 + 1/3 = 1/2."""
    rel = tiny_composite(tiny)
    got = reconstructed_counts(tiny, rel, tiny_queries(tiny))
    np.testing.assert_allclose(got, [2 / 3, 4 / 3, 1 / 2], rtol=1e-12)


def test_composite_reads_its_sensitive_values(tiny):
    rel = tiny_composite(tiny)
    np.testing.assert_array_equal(published_sensitive(tiny, rel), tiny.codes("diagnosis"))


def test_composite_qi_queries_are_the_generalized_release_s(tiny):
    """On queries over the QIs only, the composite answers as the generalized release
    it was built from (the numbers it adds are not queried)."""
    cells = tiny_cells()
    gen = Release.generalized(tiny, pd.DataFrame(labels(tiny, {q: cells[q] for q in
                                                               ("sex", "age")})),
                              classes=np.array([0, 0, 1, 2, 3, 2]),
                              cells={q: cells[q] for q in ("sex", "age")})
    comp = tiny_composite(tiny)
    qs = random_queries(tiny, n_queries=200, qd=2, sel=0.5, seed=3)
    on_qis = (qs.predicates.select[:, 2:] < 0).all(axis=1)
    assert on_qis.sum() > 10
    a = reconstructed_counts(tiny, comp, qs)[on_qis]
    b = reconstructed_counts(tiny, gen, qs)[on_qis]
    np.testing.assert_allclose(a, b, rtol=1e-12)


def test_ml_features_of_a_composite(tiny):
    """Interval cells of a numeric attribute are their midpoints in original units, as
    a numeric QI's; masked numbers are taken as they are."""
    rel = tiny_composite(tiny)
    d = design(tiny, ["age", "income", "hours"], rel)
    np.testing.assert_allclose(d.values[:, 0], [30, 30, 30, 60, 60, 60])
    np.testing.assert_allclose(d.values[:, 1], MASKED_INCOME)
    np.testing.assert_allclose(d.values[:, 2], [2, 2, 2, 5, 5, 5])


# -- a larger table: identity and buckets -----------------------------------------------
@pytest.fixture(scope="module")
def mixed():
    rng = np.random.default_rng(11)
    n = 300
    age = rng.integers(20, 70, n)
    df = pd.DataFrame({"zip": rng.choice(["101", "102", "201", "202"], n),
                       "age": age, "sex": rng.choice(["F", "M"], n),
                       "income": (age * 800 + rng.normal(0, 4000, n)).round(-2),
                       "hours": rng.integers(10, 60, n),
                       "diagnosis": np.where(age + rng.normal(0, 10, n) > 45, "copd",
                                             rng.choice(["flu", "asthma"], n))})
    return as_dataset(df, qi=["zip", "age", "sex"], numeric=["income", "hours"],
                      sensitive="diagnosis")


def identity_composite(ds):
    """The original as a composite release: exact QI cells, hours as exact interval
    cells, income as its original numbers, the sensitive values unchanged."""
    cells = exact(ds, ["zip", "age", "sex", "hours"])
    data = ds.frame[["zip", "age", "sex", "income", "hours"]]
    return Release.composite(ds, data, cells=cells, method="identity")


def test_identity_composite_loses_no_query_utility(mixed):
    rel = identity_composite(mixed)
    assert query_error(mixed, rel, n_queries=300, seed=2).value == 0.0


def test_identity_composite_loses_no_ml_utility(mixed):
    rel = identity_composite(mixed)
    m = ml_utility(mixed, rel, target="sensitive")
    assert m.value == 0.0
    assert m.details["auc_release"] == m.details["auc_original"]


def bucket_pair(ds):
    """A bucketized release and a composite with buckets (the same QIs, buckets and
    permuted sensitive values; the composite adds the numeric attributes as published
    by the original)."""
    rng = np.random.default_rng(4)
    n = ds.n
    classes = np.arange(n) // 10
    sens = np.array(ds.codes("diagnosis"))
    for b in range(classes.max() + 1):
        idx = np.flatnonzero(classes == b)
        sens[idx] = rng.permutation(sens[idx])
    assert (sens != ds.codes("diagnosis")).any()
    leaves = ds.hierarchy("diagnosis").leaves
    qis = ds.frame[["zip", "age", "sex"]].assign(diagnosis=leaves[sens], bucket=classes)
    buck = Release.bucketized(ds, qis, classes=classes, sensitive_codes=sens)
    comp = Release.composite(ds, qis.assign(income=ds.frame["income"],
                                            hours=ds.frame["hours"]),
                             cells=exact(ds, ["zip", "age", "sex"]), classes=classes,
                             sensitive_codes=sens, buckets=True)
    return buck, comp


def test_bucketized_composite_reads_bucket_distributions(mixed):
    """Each row of a composite with buckets carries its bucket's sensitive distribution,
    as a bucketized release's: on queries over the QIs both reconstruct the same
    counts (and not those of the permuted values read row by row)."""
    buck, comp = bucket_pair(mixed)
    qs = random_queries(mixed, n_queries=300, qd=2, sel=0.3, seed=5)
    on_qis = (qs.predicates.select[:, 3:] < 0).all(axis=1)
    a = reconstructed_counts(mixed, comp, qs)[on_qis]
    b = reconstructed_counts(mixed, buck, qs)[on_qis]
    np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-9)
    rowwise = Release.composite(mixed, comp.data, cells=dict(comp.cells),
                                sensitive_codes=comp.sensitive_codes)
    assert not np.allclose(reconstructed_counts(mixed, rowwise, qs)[on_qis], b)


def test_bucketized_composite_trains_on_the_released_values(mixed):
    """ml_utility trains on the sensitive values the release publishes (permuted within
    the buckets), as for a bucketized release: the same loss when the features agree."""
    buck, comp = bucket_pair(mixed)
    np.testing.assert_array_equal(published_sensitive(mixed, comp), comp.sensitive_codes)
    # no numeric features, so the two releases publish the same features
    qis_only = as_dataset(mixed.frame.drop(columns=["income", "hours"]),
                          qi=["zip", "age", "sex"], sensitive="diagnosis")
    sens = buck.sensitive_codes
    b2 = Release.bucketized(qis_only, buck.data, classes=buck.classes, sensitive_codes=sens)
    c2 = Release.composite(qis_only, buck.data, cells=dict(buck.cells),
                           classes=buck.classes, sensitive_codes=sens, buckets=True)
    a = ml_utility(qis_only, c2, target="sensitive")
    b = ml_utility(qis_only, b2, target="sensitive")
    assert a.value == b.value and a.value != 0.0


def test_features_of_composite_are_the_linkage_attributes(mixed):
    assert feature_columns(mixed, "diagnosis") == ["zip", "age", "sex", "income", "hours"]


# -- column treatment ---------------------------------------------------------------------
def test_treatment_of_a_composite(tiny):
    rel = tiny_composite(tiny)
    t = column_treatment(tiny, rel)
    assert t == {"sex": "generalized", "age": "generalized", "income": "masked",
                 "hours": "generalized", "diagnosis": "as is"}
    assert all(v.split(",")[0] in TREATMENTS for v in t.values())


def test_treatment_of_exact_cells_and_suppression(tiny):
    """A suppressed record is '*' in every cell column, numeric intervals included."""
    flags = np.array([True, False, False, False, False, False])
    cells = dict(tiny_cells(), sex=(np.where(flags, 0, tiny.codes("sex")),
                                    np.where(flags, 1, tiny.codes("sex"))))
    cells["age"] = (np.where(flags, 0, cells["age"][0]), np.where(flags, 5, cells["age"][1]))
    cells["hours"] = (np.where(flags, 0, cells["hours"][0]),
                      np.where(flags, 5, cells["hours"][1]))
    data = pd.DataFrame(labels(tiny, cells)).assign(income=tiny.frame["income"])
    rel = Release.composite(tiny, data, cells=cells, suppressed=flags)
    t = column_treatment(tiny, rel)
    assert t["income"] == "as is"
    assert t["sex"] == t["age"] == t["hours"] == "generalized, 1 suppressed cells"


def test_treatment_of_a_bucketized_composite(mixed):
    _, comp = bucket_pair(mixed)
    t = column_treatment(mixed, comp)
    assert t["diagnosis"] == "permuted within buckets"
    assert t["zip"] == t["age"] == t["sex"] == "as is"
    assert t["income"] == "as is" and t["hours"] == "as is"
