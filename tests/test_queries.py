"""Aggregate query answering (Li & Li 2009 §5.2): random COUNT queries, relative error."""
import dataclasses
import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import sdceval
from sdceval import Dataset, Hierarchy, Release, Schema, SdcevalError
from sdceval.measures.attribute_disclosure import identity_release, suppressed_release
from sdceval.measures.queries import query_error, random_queries

COLOR = Hierarchy([["red", "warm", "*"], ["yellow", "warm", "*"], ["green", "cool", "*"],
                   ["blue", "cool", "*"], ["black", "dark", "*"]], name="color")


@pytest.fixture(scope="module")
def ds():
    rng = np.random.default_rng(7)
    n = 400
    frame = pd.DataFrame({
        "age": rng.integers(20, 60, n),
        "color": rng.choice(["red", "yellow", "green", "blue", "black"], n),
        "sex": rng.choice(["M", "F"], n),
        "s": rng.choice(["a", "b", "c"], n, p=[0.5, 0.3, 0.2]),
    })
    hier = {"age": Hierarchy.intervals(range(20, 60), [5, 10, 20], name="age"),
            "color": COLOR}
    return Dataset(frame, Schema.from_roles(frame, qi=["age", "color", "sex"],
                                            sensitive="s", hierarchies=hier), name="q")


def brute_count(ds, rel, queries, i):
    """Reconstructed count of query i, record by record (uniform assumption)."""
    w = np.ones(ds.n)
    for a, q in enumerate(ds.schema.qis):
        r = queries.predicates.select[i, a]
        if r >= 0:
            row = queries.predicates.rows[a][r]
            lo, hi = rel.cells[q]
            w *= np.array([row[x:y + 1].sum() / (y - x + 1) for x, y in zip(lo, hi)])
    sens = rel.sensitive_codes
    return float(w[sens == queries.sensitive[i]].sum())


def test_overall_selectivity_covers_sel_to_the_1_over_qd(ds):
    # Anatomy's workload: each QI covers sel^(1/qd) of its domain
    qs = random_queries(ds, n_queries=30, qd=2, sel=0.09, seed=1)
    age_rows = qs.predicates.rows[0]
    assert (age_rows.sum(axis=1) == math.ceil(0.3 * 40)).all()
    with pytest.raises(SdcevalError, match="selectivity"):
        random_queries(ds, qd=2, sel=0.1, selectivity="both")


def test_workload_shape(ds):
    qs = random_queries(ds, n_queries=50, qd=2, sel=0.3, seed=1, selectivity="per_qi")
    used = qs.predicates.select >= 0
    assert (used.sum(axis=1) == 2).all()
    age_rows = qs.predicates.rows[0]
    assert (age_rows.sum(axis=1) == math.ceil(0.3 * 40)).all()
    for row in age_rows:                      # numeric QI: a contiguous range
        idx = np.flatnonzero(row)
        assert (np.diff(idx) == 1).all()
    assert (qs.predicates.rows[1].sum(axis=1) == 2).all()     # ceil(0.3 * 5)
    assert (qs.predicates.rows[2].sum(axis=1) == 1).all()     # ceil(0.3 * 2)
    # actual counts are the original's, record by record
    codes = {q: ds.codes(q) for q in ds.schema.qis}
    for i in range(10):
        mask = ds.codes("s") == qs.sensitive[i]
        for a, q in enumerate(ds.schema.qis):
            r = qs.predicates.select[i, a]
            if r >= 0:
                mask &= qs.predicates.rows[a][r][codes[q]]
        assert qs.actual[i] == mask.sum()


def test_same_seed_same_queries(ds):
    a = random_queries(ds, n_queries=20, qd=2, sel=0.2, seed=3)
    assert random_queries(ds, n_queries=20, qd=2, sel=0.2, seed=3) is a     # cached
    c = random_queries(ds, n_queries=20, qd=2, sel=0.2, seed=4)
    assert not np.array_equal(a.predicates.select, c.predicates.select) or \
        not np.array_equal(a.sensitive, c.sensitive)


def test_original_is_exact_and_suppressed_is_not(ds):
    assert query_error(ds, identity_release(ds), qd=2, sel=0.2).value == 0.0
    m = query_error(ds, suppressed_release(ds), qd=2, sel=0.2)
    assert m.value > 0 and m.larger_is_worse
    assert 0 < m.details["n_answered"] <= m.details["n_queries"] == 1000


def test_relative_error_matches_brute_force(ds):
    h = ds.hierarchy("age")
    lo, hi = h.generalize(ds.codes("age"), 2)            # 20-year intervals
    cl, ch = COLOR.generalize(ds.codes("color"), 1)
    n = ds.n
    cells = {"age": (lo, hi), "color": (cl, ch), "sex": (ds.codes("sex"), ds.codes("sex"))}
    _, classes = np.unique(np.stack([lo, cl, ds.codes("sex")], 1), axis=0,
                           return_inverse=True)
    rel = Release(data=ds.frame, method="hand", kind="generalized", classes=classes.ravel(),
                  cells=cells, suppressed=np.zeros(n, bool), sensitive_codes=ds.codes("s"))
    qs = random_queries(ds, n_queries=40, qd=2, sel=0.2, seed=9)
    rec = np.array([brute_count(ds, rel, qs, i) for i in range(len(qs))])
    ok = qs.actual > 0
    expected = np.mean(np.abs(rec[ok] - qs.actual[ok]) / qs.actual[ok]) * 100
    m = sdceval.evaluate(ds, rel, "query_error", n_queries=40, qd=2, sel=0.2, seed=9)
    assert m.value == pytest.approx(expected)
    assert m.details["n_answered"] == ok.sum()


def test_errors(ds):
    with pytest.raises(SdcevalError, match="qd=4 must be between 1 and the number of"):
        query_error(ds, identity_release(ds), qd=4)
    spec = sdceval.get_measure("query_error")
    with pytest.raises(SdcevalError, match="'sel'"):
        spec.resolve({"sel": 0})
    with pytest.raises(SdcevalError, match="'n_queries'"):
        spec.resolve({"n_queries": 0})
    plain = Release(data=ds.frame, method="noise", kind="perturbative")
    with pytest.raises(SdcevalError, match="'query_error' does not apply to a perturbative"):
        query_error(ds, plain, qd=2)
    rel = identity_release(ds)
    cells = {q: c for q, c in rel.cells.items() if q != "sex"}
    with pytest.raises(SdcevalError, match="'sex'"):
        query_error(ds, dataclasses.replace(rel, cells=cells), qd=2)
    nocells = Release(data=ds.frame, method="hand", kind="generalized",
                      classes=rel.classes)
    with pytest.raises(SdcevalError, match="Release.cells"):
        query_error(ds, nocells, qd=2)


def test_no_answerable_query():
    # the sensitive domain has 40 values, only 'v0' occurs; one query for another value
    frame = pd.DataFrame({"x": ["u", "v"] * 5, "s": ["v0"] * 10})
    sens = Hierarchy.flat([f"v{i}" for i in range(40)], name="s")
    ds = Dataset(frame, Schema.from_roles(frame, qi=["x"], sensitive="s",
                                          hierarchies={"s": sens}))
    seed = next(s for s in range(100)
                if random_queries(ds, n_queries=1, qd=1, sel=0.5, seed=s).sensitive[0] != 0)
    with pytest.raises(SdcevalError, match="raise sel or lower qd"):
        query_error(ds, identity_release(ds), n_queries=1, qd=1, sel=0.5, seed=seed)


def test_adult_defaults():
    adult = sdceval.load_dataset("adult")
    assert query_error(adult, identity_release(adult)).value == 0.0
    assert query_error(adult, suppressed_release(adult)).value > 50


def test_qd_defaults_to_min_4_and_the_number_of_qis(ds):
    # ds has 3 QIs: the paper's qd = 4 does not fit, the default takes all 3
    spec = sdceval.get_measure("query_error")
    qd = next(p for p in spec.params if p.name == "qd")
    assert qd.default is None and "min(4" in qd.description
    m = sdceval.evaluate(ds, suppressed_release(ds), "query_error", n_queries=50)
    assert m.details["qd"] == 3
    same = sdceval.evaluate(ds, suppressed_release(ds), "query_error", n_queries=50, qd=3)
    assert m.value == same.value
    assert random_queries(ds, n_queries=5).predicates.select.shape == (5, 3)
    assert ((random_queries(ds, n_queries=5).predicates.select >= 0).sum(axis=1) == 3).all()
    # one QI: one QI per query
    one = Dataset(ds.frame, ds.schema.with_roles(qi=["color"]), name="one")
    assert sdceval.evaluate(one, identity_release(one), "query_error",
                            n_queries=20).details["qd"] == 1


def test_explicit_qd_above_the_number_of_qis_is_still_an_error(ds):
    with pytest.raises(SdcevalError, match="qd=5 must be between 1 and the number of"):
        sdceval.evaluate(ds, identity_release(ds), "query_error", qd=5)


# -- actual counts: grouped and exact (issue 21 item 7) ----------------------------------
def numeric_ds(sensitive: bool = True, seed: int = 2):
    """QIs, numeric attributes with ties (published values) and, optionally, a
    sensitive attribute with a value no record has."""
    rng = np.random.default_rng(seed)
    n = 500
    frame = pd.DataFrame({
        "age": rng.integers(20, 60, n),
        "color": rng.choice(["red", "yellow", "green", "blue", "black"], n),
        "income": np.round(rng.lognormal(3, 0.5, n)),
        "spend": rng.normal(50, 10, n),
        "s": rng.choice(["a", "b", "c"], n, p=[0.5, 0.3, 0.2]),
    })
    hier = {"age": Hierarchy.intervals(range(20, 60), [5, 10, 20], name="age"),
            "color": COLOR, "s": Hierarchy.flat(["a", "b", "c", "d"], name="s")}
    schema = Schema.from_roles(frame, qi=["age", "color"], numeric=["income", "spend"],
                               sensitive="s" if sensitive else None,
                               hierarchies=hier if sensitive else
                               {k: v for k, v in hier.items() if k != "s"})
    return Dataset(frame, schema, name=f"numeric-{sensitive}")


@pytest.mark.parametrize("kw", [dict(), dict(qd=1, sel=0.3, seed=2),
                                dict(qd=3, sel=0.2, seed=1, selectivity="per_qi"),
                                dict(n_queries=300, qd=2, sel=0.5, seed=4)])
@pytest.mark.parametrize("which", ["qis", "numeric", "numeric_no_sensitive"])
def test_actual_counts_equal_the_reconstruction_of_the_original(ds, which, kw):
    # the grouped exact count (original_counts) against the computation it replaced:
    # the uniform-assumption reconstruction of the original, rounded
    from sdceval.measures.queries import (CountQueries, original_release,
                                          reconstructed_counts)
    data = {"qis": ds, "numeric": numeric_ds(),
            "numeric_no_sensitive": numeric_ds(sensitive=False)}[which]
    qs = random_queries(data, **kw)
    zero = CountQueries(qs.predicates, qs.sensitive, np.zeros(len(qs)))
    before = np.rint(reconstructed_counts(data, original_release(data), zero))
    assert qs.actual.dtype == before.dtype and np.array_equal(qs.actual, before)
    assert qs.actual.sum() > 0


def test_group_ids_renumber_before_the_key_overflows():
    from sdceval.measures.queries import _group_ids
    rng = np.random.default_rng(0)
    # 6 columns of up to 10**4 codes: the mixed-radix key (10**24) needs renumbering
    cols = [rng.integers(0, 3, 2000) * 5000 + rng.integers(0, 2, 2000) for _ in range(6)]
    for c in cols:
        c[0] = 9999
    ids, n_groups = _group_ids(cols, 2000)
    _, ref = np.unique(np.stack(cols, axis=1), axis=0, return_inverse=True)
    assert n_groups == ref.max() + 1
    # the same partition: one reference group per id and one id per reference group
    pairs = np.unique(np.stack([ids, ref.ravel()], axis=1), axis=0)
    assert len(pairs) == n_groups


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 10_000))
def test_published_numbers_count_by_their_place_among_the_leaves(seed):
    """A released number counts when it lies in the predicate's closed value interval
    [v_first, v_last]: on a leaf, between two selected leaves, never below the first
    leaf or above the last (the position classes of `UniformEstimator`), recomputed
    here record by record for values on, between, below and above the leaves."""
    from sdceval.measures.queries import random_queries, reconstructed_counts
    rng = np.random.default_rng(seed)
    n = 60
    frame = pd.DataFrame({"x": rng.integers(0, 8, n).astype(float),
                          "y": rng.integers(0, 5, n).astype(float) * 10,
                          "s": rng.choice(list("ab"), n)})
    ds = sdceval.as_dataset(frame, numeric=["x", "y"], sensitive="s")
    noise = rng.choice([0.0, 0.5, -0.5, -3.0, 20.0, 100.0], size=(n, 2))
    rel = Release.perturbative(ds, frame[["x", "y"]] + noise)
    qs = random_queries(ds, n_queries=30, qd=2, sel=0.4, seed=seed)
    got = reconstructed_counts(ds, rel, qs)
    m = ds.hierarchy("s").n_leaves
    for q in range(len(qs.actual)):
        keep = np.ones(n, dtype=bool)
        for a, col in enumerate(qs.predicates.qis):
            row = qs.predicates.select[q, a]
            if row < 0:
                continue
            leaves = ds.hierarchy(col).leaf_values
            sel = np.flatnonzero(qs.predicates.rows[a][row])
            v = rel.data[col].to_numpy()
            keep &= (leaves[sel[0]] <= v) & (v <= leaves[sel[-1]])
        # a perturbative release does not publish s: uniform over its values
        assert got[q] == pytest.approx(keep.sum() / m)
