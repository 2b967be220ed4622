"""SUDA2 special uniques and DIS-SUDA scores (issue 29 items 2 and 5):
`sdceval.privacy.suda2` and the ``suda2`` measure, against sdcMicro 5.8.1.

Acceptance values: sdcMicro's ``tests/testthat/test_suda2.R`` (its tests are commented
out there; every value they assert is reproduced here), and per-record SUDA scores,
DIS-SUDA scores and contributions of the real sdcMicro 5.8.1 on ``testdata`` (4 and 9
keys), on ``testdata2`` with correlated keys and on a synthetic file with missing
values, made by ``Rscript tests/data/suda2_sdcmicro.R`` (its commands are in that file;
the CSVs ``tests/data/suda2_sdcmicro_*.csv`` hold the keys and sdcMicro's results).
"""
from __future__ import annotations

from itertools import combinations
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sdceval.core.errors import SdcevalError
from sdceval.core.frames import as_dataset
from sdceval.core.registry import MEASURES
from sdceval.core.release import Release
from sdceval.measures.suda2 import BAND_LABELS, dis_bands
from sdceval.measures.suda2 import suda2 as suda2_measure
from sdceval.privacy.suda2 import score_weights, sdcmicro_unique_count, suda2

DATA = Path(__file__).parent / "data"


def codes(df: pd.DataFrame) -> np.ndarray:
    """Integer keys as sdcMicro's C++ receives them (NA as our -1)."""
    return df.fillna(-1).to_numpy().astype(np.int64)


def factor_codes(df: pd.DataFrame) -> np.ndarray:
    """``as.numeric(as.factor(x))`` per column: 1-based codes of the sorted levels."""
    return np.stack([pd.factorize(df[c], sort=True)[0] + 1 for c in df], axis=1)


# -- sdcMicro's tests/testthat/test_suda2.R ------------------------------------------------

def test_book_example():
    """test_suda2.R "suda2 book example": ``su$score[5:8] == c(4, 2, 6, 8)``."""
    tab = pd.DataFrame({"age": ["20s"] * 7 + ["60s"],
                        "gender": ["male"] * 4 + ["female"] * 3 + ["male"],
                        "income": ["50k+", "50k+"] + ["50k-"] * 6,
                        "education": ["highschool"] * 4 + ["university", "highschool",
                                                           "middleschool", "university"]})
    r = suda2(factor_codes(tab))
    np.testing.assert_array_equal(r.score, [0, 0, 0, 0, 4, 2, 6, 8])


def test_sdc_guideline_example():
    """test_suda2.R "suda2 sdc guideline": scores c(0,0,6,0,12,0,6,10,0,0)."""
    t = pd.DataFrame({
        "Residence": ["Urban"] * 4 + ["Rural"] + ["Urban"] * 5,
        "Gender": ["Female", "Female", "Female", "Male", "Female", "Male", "Female",
                   "Male", "Female", "Female"],
        "Education": ["Secondary incomplete", "Secondary incomplete", "Primary incomplete",
                      "Secondary complete", "Secondary complete", "Secondary complete",
                      "Primary complete", "Post-secondary", "Secondary incomplete",
                      "Secondary incomplete"],
        "Labor": ["Employed", "Employed", "Non-LF", "Employed", "Unemployed", "Employed",
                  "Non-LF", "Unemployed", "Non-LF", "Non-LF"]})
    np.testing.assert_array_equal(suda2(factor_codes(t)).score,
                                  [0, 0, 6, 0, 12, 0, 6, 10, 0, 0])


@pytest.mark.parametrize("order, expected", [
    ("abc", [50, 37.5, 37.5]), ("acb", [50, 37.5, 37.5]),
    ("cab", [37.5, 50, 37.5]), ("cba", [37.5, 37.5, 50])])
def test_simple_contribution_examples(order, expected):
    """test_suda2.R "suda2 simple example contrubtion" 1-4 (exact equality there)."""
    cols = {"a": [2, 1, 1], "b": [0, 3, 0], "c": [0, 6, 0]}
    keys = np.array([cols[v] for v in order]).T
    assert list(suda2(keys).attribute_contributions) == expected


def test_seed3_sdc_object_example():
    """test_suda2.R "sdc without missing": set.seed(3) keys (printed by the R script),
    scores c(0,1,0,2,2,0,4,0,3,2) and contributionPercent[,1]; DIS scores of the same
    sdcMicro call (the keys are factors there: 1-based level codes)."""
    raw = pd.DataFrame([[2, 2, 1], [2, 5, 1], [2, 2, 3], [2, 4, 3], [2, 3, 3], [2, 2, 3],
                        [4, 1, 2], [2, 2, 1], [3, 3, 1], [2, 5, 2]])
    r = suda2(factor_codes(raw))
    np.testing.assert_array_equal(r.score, [0, 1, 0, 2, 2, 0, 4, 0, 3, 2])
    np.testing.assert_allclose(r.contributions[:, 0],
                               [0, 0, 0, 0, 0.5, 0, 0.5, 0, 2 / 3, 0.5], rtol=1e-15)
    dis = [0, 0.0067505837217940118, 0, 0.015907661988641263, 0.015907661988641263, 0,
           0.037023189297026748, 0, 0.026132704597193229, 0.015907661988641263]
    np.testing.assert_allclose(r.dis_score, dis, rtol=1e-9)


@pytest.fixture(scope="module")
def testdata2():
    return pd.read_csv(DATA / "sdcmicro_testdata2.csv")


def test_testdata2_scores(testdata2):
    """test_suda2.R: createSdcObj(testdata2, keyVars = 7 keys): score[1] rounds to 2.73
    (original_scores = FALSE; sdcMicro 5.8.1 prints 2.733333) and 180 (TRUE);
    suda2(testdata2, variables = 5 keys)$score[1] == 2."""
    k7 = codes(testdata2[["urbrur", "roof", "walls", "water", "electcon", "relat", "sex"]])
    assert round(suda2(k7, original_scores=False).score[0], 2) == 2.73
    assert suda2(k7, original_scores=False).score[0] == pytest.approx(2.733333, abs=1e-6)
    assert suda2(k7, original_scores=True).score[0] == 180
    k5 = codes(testdata2[["urbrur", "roof", "walls", "water", "sex"]])
    assert suda2(k5).score[0] == 2


# -- the real sdcMicro 5.8.1 on testdata and own files (tests/data/suda2_sdcmicro.R) ------

@pytest.fixture(scope="module")
def td():
    return pd.read_csv(DATA / "suda2_sdcmicro_testdata.csv")


@pytest.fixture(scope="module")
def attrs():
    return pd.read_csv(DATA / "suda2_sdcmicro_attributes.csv")


K4 = ["urbrur", "water", "sex", "age"]
K9 = ["urbrur", "roof", "walls", "water", "electcon", "relat", "sex", "age", "hhcivil"]


def test_testdata_4_keys_equal_sdcmicro(td, attrs):
    """suda2(testdata, variables = urbrur, water, sex, age): per-record SUDA and DIS
    scores and contributions, attribute contributions, to 1e-9 relative."""
    r = suda2(codes(td[K4]))
    np.testing.assert_array_equal(r.score, td["score4"])
    np.testing.assert_allclose(r.dis_score, td["dis4"], rtol=1e-9, atol=0)
    np.testing.assert_allclose(r.contributions, td[[f"c4_{v}" for v in K4]], rtol=1e-9,
                               atol=1e-15)
    ref = attrs[attrs.case == "testdata4"]
    np.testing.assert_allclose(r.attribute_contributions, ref.contribution, rtol=1e-9)
    assert (r.uniques, r.pairs) == (330, 344)


def test_testdata_9_keys_equal_sdcmicro(td, attrs):
    """9 keys, DisFraction = 0.05, original_scores = FALSE.  sdcMicro counts the sample
    uniques as the records alone in their hash bucket (152 here, 1693 really) and
    computes DIS in single precision: with the true count the DIS scores differ by 9e-8
    relative, with sdcMicro's they agree to 1e-9."""
    keys = codes(td[K9])
    assert sdcmicro_unique_count(keys) == 152
    r = suda2(keys, dis_fraction=0.05, original_scores=False)
    np.testing.assert_allclose(r.score, td["score9"], rtol=1e-12, atol=0)
    np.testing.assert_allclose(r.dis_score, td["dis9"], rtol=1e-9, atol=0)
    ref = attrs[attrs.case == "testdata9"]
    np.testing.assert_allclose(r.attribute_contributions, ref.contribution, rtol=1e-9)
    # sdcMicro's print.suda2 table of this call
    assert list(dis_bands(r.dis_score).values()) == [2887, 582, 416, 254, 260, 110, 42,
                                                     18, 11]


@pytest.mark.parametrize("case, kw", [("corr", {}), ("syn", {"dis_fraction": 0.02}),
                                      ("syn2", {})])
def test_own_files_equal_sdcmicro(case, kw, attrs):
    """``corr``: testdata2 with water2/water3 recoding water and relat2 recoding relat
    (correlated items: sdcMicro's way of crediting their contributions); ``syn``: 400
    records, 6 keys, missing values in 3, an item held by the same records as another;
    ``syn2``: 2 keys (sdcMicro pads to 3)."""
    df = pd.read_csv(DATA / f"suda2_sdcmicro_{case}.csv", na_values="NA")
    keys_ = [c for c in df.columns if c not in ("score", "dis") and not c.startswith("c_")]
    r = suda2(codes(df[keys_]), **kw)
    np.testing.assert_allclose(r.score, df["score"], rtol=1e-12, atol=0)
    np.testing.assert_allclose(r.dis_score, df["dis"], rtol=1e-9, atol=0)
    np.testing.assert_allclose(r.contributions, df[[f"c_{v}" for v in keys_]], rtol=1e-9,
                               atol=1e-15)
    ref = attrs[attrs.case == case]
    np.testing.assert_allclose(r.attribute_contributions, ref.contribution, rtol=1e-9)


# -- brute force --------------------------------------------------------------------------

def brute_force(keys: np.ndarray, max_size: int, original: bool = True):
    """MSUs by enumerating every subset of every record's non-missing keys, and the
    contributions by sdcMicro's rule for correlated items (module notes of
    `sdceval.privacy.suda2`, 3), record by record."""
    n, d = keys.shape
    w = score_weights(max(d, 3), original)
    counts = np.zeros((n, max_size), dtype=np.int64)
    contrib = np.zeros((n, d))

    def holders(v, a):
        return frozenset(np.flatnonzero(keys[:, v] == a))

    def unique(i, s):
        return s and (keys[:, list(s)] == keys[i, list(s)]).all(axis=1).sum() == 1

    for i in range(n):
        own = [v for v in range(d) if keys[i, v] >= 0]
        # class representative of each item: the first key holding the same records
        rep, size = {}, {}
        for v in own:
            hv = holders(v, keys[i, v])
            same = [x for x in own if len(hv) >= 2 and holders(x, keys[i, x]) == hv]
            rep[v] = min(same) if same else v
        for v in own:
            size[v] = sum(rep[x] == v for x in own)
        for k in range(1, max_size + 1):
            for s in combinations(own, k):
                if not unique(i, s) or any(unique(i, s[:j] + s[j + 1:]) for j in range(k)):
                    continue
                counts[i, k - 1] += 1
                if any(rep[v] != v for v in s):
                    continue  # sdcMicro credits a class of MSUs once, at its representative
                if k == 1:
                    contrib[i, s[0]] += w[0]
                elif k == 2:
                    a, b = s
                    contrib[i, a] += size[b] * w[1]
                    contrib[i, b] += size[a] * w[1]
                    for x in own:
                        if x not in s and rep[x] in s:
                            contrib[i, x] += w[1]
                else:
                    for v in s:
                        contrib[i, v] += np.prod([size[x] for x in s]) * w[k - 1]
    score = counts @ w[:max_size]
    pos = score > 0
    contrib[pos] /= score[pos, None]
    return counts, score, contrib


@st.composite
def key_arrays(draw):
    n = draw(st.integers(1, 14))
    d = draw(st.integers(1, 5))
    cells = draw(st.lists(st.integers(-1, 2), min_size=n * d, max_size=n * d))
    keys = np.array(cells, dtype=np.int64).reshape(n, d)
    if d >= 2 and draw(st.booleans()):  # a recoded copy of a key: correlated items
        keys[:, d - 1] = np.where(keys[:, 0] >= 0, keys[:, 0] + 5, -1)
    return keys


@settings(max_examples=150, deadline=None)
@given(key_arrays(), st.integers(1, 5), st.booleans())
def test_msus_equal_brute_force(keys, max_size, original):
    d = keys.shape[1]
    size = min(max_size, d)
    counts, score, contrib = brute_force(keys, size, original)
    r = suda2(keys, max_size=max_size, original_scores=original)
    np.testing.assert_array_equal(r.msu_counts, counts)
    np.testing.assert_allclose(r.score, score, rtol=1e-12)
    np.testing.assert_allclose(r.contributions, contrib, rtol=1e-12, atol=1e-15)
    # DIS (double precision here; sdcMicro's arithmetic is single precision)
    pos = r.score > 0
    if pos.any():
        q = 1 + (8 - max(d, 3)) / 20
        c = r.pairs * (1 - 0.01) / 0.01
        adj = np.sum(r.score[pos] ** -q)
        np.testing.assert_allclose(r.dis_score[pos],
                                   1 / (1 + c / (r.score[pos] ** q * adj)), rtol=1e-5)
    assert (r.dis_score[~pos] == 0).all()


def test_smaller_max_size_only_lowers_scores(td):
    keys = codes(td[K9][:600])
    full, two = suda2(keys), suda2(keys, max_size=2)
    assert (two.score <= full.score).all() and (two.score < full.score).any()
    np.testing.assert_array_equal(two.msu_counts, full.msu_counts[:, :2])


def test_one_record_and_missing_only():
    """One record: each of its items is an MSU (as sdcMicro's C++: Freq == 1); a record
    missing on every key has none."""
    assert suda2(np.array([[1, 2, 3]])).msu_counts.tolist() == [[3, 0, 0]]
    r = suda2(np.array([[-1, -1, -1], [0, 1, 1], [0, 1, 2]]))
    assert r.score[0] == 0 and r.uniques == 3


@pytest.mark.parametrize("kw, match", [
    ({"dis_fraction": 0.0}, "dis_fraction"), ({"dis_fraction": 1.0}, "dis_fraction"),
    ({"max_size": 0}, "max_size")])
def test_bad_parameters_refused(kw, match):
    with pytest.raises(SdcevalError, match=match):
        suda2(np.zeros((3, 3), dtype=np.int64), **kw)


def test_bad_keys_refused():
    with pytest.raises(SdcevalError, match="-1 for a missing"):
        suda2(np.array([[0, -2, 1]]))
    with pytest.raises(SdcevalError, match="integer codes"):
        suda2(np.array([[0.5, 1.0, 2.0]]))


# -- the measure ------------------------------------------------------------------------

def exact_release(ds, cells=None, suppressed=None):
    qis = ds.schema.qis
    cells = cells or {q: (ds.codes(q), ds.codes(q)) for q in qis}
    frame = pd.DataFrame({q: ds.hierarchy(q).labels_of(*cells[q]) for q in qis})
    classes = pd.factorize(pd.MultiIndex.from_arrays([cells[q][0] * 10_000 + cells[q][1]
                                                      for q in qis]))[0]
    return Release.generalized(ds, frame, classes=classes, cells=cells,
                               suppressed=suppressed, method="toy")


@pytest.fixture(scope="module")
def td4_dataset(td):
    return as_dataset(td[K4].astype(str), qi=K4)


def test_measure_on_testdata_equals_sdcmicro(td4_dataset, td):
    """The measure on the unchanged keys of testdata: per record sdcMicro's DIS scores
    (the release's codes are not sdcMicro's values, so its hash count, hence the
    single-precision rounding, may differ: 1e-6), value their mean, the print table."""
    m = suda2_measure(td4_dataset, exact_release(td4_dataset))
    np.testing.assert_allclose(m.per_record, td["dis4"], rtol=1e-6, atol=0)
    assert m.value == pytest.approx(td["dis4"].mean(), rel=1e-6)
    assert list(m.details["dis_bands"].values()) == [4250, 330, 0, 0, 0, 0, 0, 0, 0]
    assert m.details["special_uniques"] == 330
    assert m.details["attribute_contributions"] == pytest.approx(
        {"urbrur": 33.40040, "water": 84.10463, "sex": 39.63783, "age": 99.79879}, abs=1e-5)
    assert list(m.details["dis_bands"]) == list(BAND_LABELS)


def test_measure_reads_whole_domain_cells_as_missing():
    """A suppressed cell (the whole domain) is sdcMicro's NA: no item."""
    df = pd.DataFrame({"a": list("xxyyz"), "b": list("pqpqq"), "c": list("uuvvw")})
    ds = as_dataset(df, qi=["a", "b", "c"])
    lo, hi = ds.codes("c").copy(), ds.codes("c").copy()
    lo[4], hi[4] = 0, ds.hierarchy("c").n_leaves - 1
    cells = {q: (ds.codes(q), ds.codes(q)) for q in ("a", "b")}
    cells["c"] = (lo, hi)
    m = suda2_measure(ds, exact_release(ds, cells))
    keys = np.stack([ds.codes("a"), ds.codes("b"), np.where(lo == hi, lo, -1)], axis=1)
    np.testing.assert_allclose(m.per_record, suda2(keys).dis_score, rtol=1e-12)
    assert m.details["msus_by_size"][1] == 1  # z only; w is suppressed


def test_measure_registered_and_refuses_perturbative():
    spec = MEASURES.get("suda2")
    # perturbative releases are read with numeric keys (tests/test_population_keys.py)
    assert set(spec.kinds) == {"generalized", "bucketized", "composite", "perturbative"}
    df = pd.DataFrame({"a": list("xxyy"), "b": list("pqpq"), "x": [1.0, 2.0, 3.0, 4.0]})
    ds = as_dataset(df, qi=["a", "b"], numeric=["x"])
    rel = Release.perturbative(ds, ds.frame[["x"]], method="toy")
    # the QIs it does not publish are missing: no record has an MSU
    m = suda2_measure(ds, rel)
    assert m.details["unpublished_keys"] == ["a", "b"] and m.details["special_uniques"] == 0
    with pytest.raises(SdcevalError, match="dis_fraction"):
        suda2_measure(ds, exact_release(ds), dis_fraction=1.5)


def test_measure_reads_every_cell_kind():
    """Generalized, bucketized and composite releases with the same cells: same scores;
    fewer than 3 QIs are noted (sdcMicro pads them and warns)."""
    df = pd.DataFrame({"a": list("xxyyzx"), "b": list("pqpqqp"), "s": list("mnmnmn")})
    ds = as_dataset(df, qi=["a", "b"], sensitive="s")
    cells = {q: (ds.codes(q), ds.codes(q)) for q in ("a", "b")}
    frame = pd.DataFrame({q: ds.hierarchy(q).labels_of(*cells[q]) for q in cells})
    frame["s"] = df["s"]
    gen = suda2_measure(ds, exact_release(ds))
    buck = Release.bucketized(ds, frame, classes=np.arange(6),
                              sensitive_codes=ds.codes("s"), method="toy")
    comp = Release.composite(ds, frame, cells=cells, method="toy")
    for rel in (buck, comp):
        np.testing.assert_array_equal(suda2_measure(ds, rel).per_record, gen.per_record)
    assert gen.details["special_uniques"] == 4 and "note" in gen.details


def test_no_record_alone_in_its_hash_bucket():
    """Both sample uniques share sdcMicro's hash bucket (0,0,2 and 0,1,0 hash alike), so
    sdcMicro counts U = 0 and returns NaN DIS scores (sdcMicro 5.8.1:
    ``suda2(data.frame(a=c(0,0,5,5), b=c(0,1,7,7), c=c(2,0,1,1)))$disScore`` is
    ``NaN NaN 0 0``); the true U is used instead: DIS = 1 / (1 + P (1-f)/f / 2)."""
    keys = np.array([[0, 0, 2], [0, 1, 0], [5, 7, 1], [5, 7, 1]])
    assert sdcmicro_unique_count(keys) == 0
    r = suda2(keys)
    np.testing.assert_array_equal(r.score, [4, 4, 0, 0])
    np.testing.assert_allclose(r.dis_score, [0.01, 0.01, 0, 0], rtol=1e-6)
