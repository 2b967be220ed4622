"""Bucketization over Mondrian's buckets and Anatomy: exact QIs, per-bucket multisets of
sensitive values kept, permutation seeded, Anatomy buckets ℓ-diverse."""
import numpy as np
import pandas as pd
import pytest

import sdceval
from sdceval import Dataset, Schema, SdcevalError
from sdceval.methods.bucketization import anatomy_groups, permute_within

from privacy_data import QIS, SENS, class_distributions, js, synthetic


@pytest.fixture(scope="module")
def ds():
    return synthetic(2000, seed=2)


def multisets(classes, values):
    df = pd.DataFrame({"b": classes, "v": np.asarray(values)})
    return df.groupby("b")["v"].apply(lambda s: tuple(sorted(s))).to_dict()


@pytest.mark.parametrize("params", [dict(k=10), dict(model="l", l=3.0),
                                    dict(model="t", t=0.15, distance="js"),
                                    dict(model="delta", delta=1.5)],
                         ids=["k", "l", "t", "delta"])
def test_buckets_are_mondrian_classes(ds, params):
    gen = sdceval.anonymize(ds, "mondrian", **params)
    rel = sdceval.anonymize(ds, "bucketization", seed=3, **params)
    assert rel.kind == "bucketized" and np.array_equal(rel.classes, gen.classes)
    assert rel.data["bucket"].tolist() == rel.classes.tolist()
    # QIs exact, cells exact
    for c in QIS:
        assert rel.data[c].tolist() == ds.frame[c].tolist()
        lo, hi = rel.cells[c]
        assert np.array_equal(lo, ds.codes(c)) and np.array_equal(hi, ds.codes(c))
    # each bucket keeps its multiset of sensitive values (labels and codes agree)
    assert multisets(rel.classes, rel.data[SENS]) == multisets(rel.classes, ds.frame[SENS])
    assert np.array_equal(ds.domain(SENS)[rel.sensitive_codes], rel.data[SENS].to_numpy())
    assert (rel.data[SENS].to_numpy() != ds.frame[SENS].to_numpy()).mean() > 0.5
    # hence the same privacy levels, recomputed independently from the published buckets
    P, Q = class_distributions(ds, rel.data[SENS], rel.data["bucket"])
    P0, _ = class_distributions(ds, ds.frame[SENS], pd.Series(gen.classes))
    np.testing.assert_allclose(P, P0)
    if params.get("model") == "t":
        assert max(js(p, Q) for p in P) <= 0.15 + 1e-9
    for m in ["k_anonymity", "l_diversity", "delta_disclosure"]:
        assert sdceval.evaluate(ds, rel, m).value == sdceval.evaluate(ds, gen, m).value


def test_bucketization_seeded(ds):
    a = sdceval.anonymize(ds, "bucketization", k=10, seed=7)
    b = sdceval.anonymize(ds, "bucketization", k=10, seed=7)
    c = sdceval.anonymize(ds, "bucketization", k=10, seed=8)
    pd.testing.assert_frame_equal(a.data, b.data)
    assert not a.data[SENS].equals(c.data[SENS])
    assert list(a.data.columns) == QIS + [SENS, "bucket"]


def test_permute_within_is_a_permutation_inside_classes():
    rng = np.random.default_rng(0)
    classes = np.repeat([2, 0, 1], [5, 3, 400])
    src = permute_within(classes, rng)
    assert sorted(src) == list(range(len(classes)))
    assert np.array_equal(classes[src], classes)
    # roughly uniform: in the big class each record keeps its own value ~1/400 of times
    assert (src == np.arange(len(classes)))[8:].sum() < 10


def test_bucketization_needs_sensitive():
    frame = pd.DataFrame({"x": range(10)})
    d = Dataset(frame, Schema.from_roles(frame, qi=["x"]))
    with pytest.raises(SdcevalError, match="bucketization permutes the sensitive attribute"):
        sdceval.anonymize(d, "bucketization", k=2)


# -- Anatomy -------------------------------------------------------------------------
@pytest.mark.parametrize("l", [2, 3, 5])
def test_anatomy_buckets_l_diverse(ds, l):  # noqa: E741
    rel = sdceval.anonymize(ds, "anatomy", l=l, seed=1)
    assert rel.kind == "bucketized"
    df = pd.DataFrame({"b": rel.data["bucket"], "s": rel.data[SENS]})
    g = df.groupby("b")["s"]
    # every bucket: ℓ or ℓ+1 records, all with distinct sensitive values
    assert (g.nunique() == g.size()).all()
    assert set(g.size()) <= {l, l + 1}
    assert g.size().sum() == ds.n
    assert (g.size() == l + 1).sum() < l  # at most ℓ-1 residual records
    assert multisets(rel.classes, rel.data[SENS]) == multisets(rel.classes, ds.frame[SENS])
    assert sdceval.evaluate(ds, rel, "l_diversity", l=l).details["satisfies"]
    for c in QIS:
        assert rel.data[c].tolist() == ds.frame[c].tolist()


def test_anatomy_hand():
    rng = np.random.default_rng(0)
    # counts a:3 b:2 c:2, ℓ=2, ties to the smaller code: {a,b}, then {a,c}, then {a,b};
    # the residual c joins one of the two {a,b} buckets
    codes = np.array([0, 0, 0, 1, 1, 2, 2])
    out = anatomy_groups(codes, 2, 3, rng)
    df = pd.DataFrame({"g": out, "v": codes})
    sets = sorted(tuple(sorted(s)) for s in df.groupby("g")["v"].apply(list))
    assert sets == [(0, 1), (0, 1, 2), (0, 2)]
    assert (out >= 0).all()


def test_anatomy_eligibility_and_seed(ds):
    top = ds.frame[SENS].value_counts(normalize=True).iloc[0]
    bad = int(np.floor(1 / top)) + 1
    with pytest.raises(SdcevalError, match=rf"l={bad} is impossible.*choose l <= {bad - 1}"):
        sdceval.anonymize(ds, "anatomy", l=bad)
    with pytest.raises(SdcevalError, match=">= 2"):
        sdceval.anonymize(ds, "anatomy", l=1)
    a = sdceval.anonymize(ds, "anatomy", l=3, seed=4)
    b = sdceval.anonymize(ds, "anatomy", l=3, seed=4)
    c = sdceval.anonymize(ds, "anatomy", l=3, seed=5)
    pd.testing.assert_frame_equal(a.data, b.data)
    assert not np.array_equal(a.classes, c.classes)
