"""Property vectors of releases and their comparison (issue 8; Dewri et al. 2009 §3–5,
DEWRI.md §2.1–2.2, A17).

The toy data is D09's Table 1 (𝒯₁, ten records) with the three published partitions
𝒯_3a, 𝒯_3b and 𝒯_4 (D09 Tables 2–3); every expected vector is printed in the paper
(E1, E2) or derived from it by hand (DEWRI §2.2).
"""
import math

import numpy as np
import pandas as pd
import pytest

import sdceval
from sdceval import Dataset, Schema, SdcevalError
from sdceval.core.release import Release
from sdceval.vectors.comparison import compare_releases
from sdceval.vectors.properties import (defined_properties, get_property, property_names,
                                        property_vectors)

ZIP = [13053, 13268, 13268, 13053, 13253, 13253, 13250, 13052, 13269, 13250]
AGE = [28, 41, 39, 26, 50, 55, 49, 31, 42, 47]
MARITAL = ["CF-Spouse", "Separated", "Never Married", "CF-Spouse", "Divorced",
           "Spouse Absent", "Divorced", "Spouse Present", "Separated", "Separated"]
# D09 Table 2 (left, right) and Table 3: class of every record (records 1..10)
T3A = [0, 1, 1, 0, 2, 2, 2, 0, 1, 2]
T3B = [0, 1, 1, 0, 1, 1, 1, 0, 1, 1]
T4 = [0, 1, 0, 0, 1, 1, 1, 0, 1, 1]


@pytest.fixture(scope="module")
def toy():
    frame = pd.DataFrame({"zip": [str(z) for z in ZIP], "age": AGE, "marital": MARITAL})
    schema = Schema.from_roles(frame, qi=["zip", "age"], sensitive="marital")
    return Dataset(frame, schema, name="dewri2009-table1")


def _release(ds, classes, suppressed=None, name="t"):
    cells = {q: (ds.codes(q), ds.codes(q)) for q in ds.schema.qis}
    data = pd.DataFrame({q: ds.frame[q].astype(str) for q in ds.schema.qis})
    return Release.generalized(ds, data, classes=np.asarray(classes), cells=cells,
                               suppressed=suppressed, method=name)


@pytest.fixture(scope="module")
def tables(toy):
    return {"T3a": _release(toy, T3A, name="T3a"), "T3b": _release(toy, T3B, name="T3b"),
            "T4": _release(toy, T4, name="T4")}


def test_class_size_vectors_e1_e8(toy, tables):
    got = {k: property_vectors(toy, r, ["class_size"])["class_size"].tolist()
           for k, r in tables.items()}
    assert got["T3a"] == [3, 3, 3, 3, 4, 4, 4, 3, 3, 4]          # E1
    assert got["T3b"] == [3, 7, 7, 3, 7, 7, 7, 3, 7, 7]          # E6
    assert got["T4"] == [4, 6, 4, 4, 6, 6, 6, 4, 6, 6]           # E8 [D]


def test_sensitive_count_vectors_e2(toy, tables):
    got = {k: property_vectors(toy, r, ["sensitive_count"])["sensitive_count"].tolist()
           for k, r in tables.items()}
    assert got["T3a"] == [2, 2, 1, 2, 2, 1, 2, 1, 2, 1]          # E2
    assert got["T3b"] == got["T4"] == [2, 3, 1, 2, 2, 1, 2, 1, 3, 3]  # [D]


def test_unary_indices_e3_e5(toy, tables):
    comp = compare_releases(toy, tables, ["class_size", "sensitive_count"])
    u = comp.unary.set_index(["release", "property"])
    assert u.loc[("T3a", "class_size"), "worst"] == 3             # E3
    assert u.loc[("T3a", "class_size"), "mean"] == pytest.approx(3.4)  # E4
    assert u.loc[("T3a", "sensitive_count"), "worst"] == 1        # E5
    assert u.loc[("T3b", "class_size"), "sum"] == 58              # S_k [D]
    assert u.loc[("T4", "class_size"), "sum"] == 52


def test_pairs_and_dominance(toy, tables):
    comp = compare_releases(toy, tables, ["class_size"])
    p = comp.pairs.set_index(["first", "second"])
    ab = p.loc[("T3a", "T3b")]
    assert (ab["p_binary_12"], ab["p_binary_21"]) == (0, 7)       # E6
    assert (ab["p_cov_12"], ab["p_cov_21"]) == pytest.approx((0.3, 1.0))  # E13
    assert (ab["p_spr_12"], ab["p_spr_21"]) == (0, 24)            # [D]
    assert ab["relation"] == "dominated"                          # 𝒯_3b ≻ 𝒯_3a
    assert ab["share_better_second"] == pytest.approx(0.7)
    b4 = p.loc[("T3b", "T4")]
    assert (b4["p_cov_12"], b4["p_cov_21"]) == pytest.approx((0.7, 0.3))  # E9
    assert (b4["p_spr_12"], b4["p_spr_21"]) == (9, 3)
    assert b4["relation"] == "incomparable"
    assert b4["log_p_hv_12"] == pytest.approx(math.log(17196813), abs=1e-9)
    a4 = p.loc[("T3a", "T4")]
    assert a4["relation"] == "dominated" and a4["log_p_hv_12"] == -math.inf
    over = comp.overall.set_index(["first", "second"])
    assert over.loc[("T3b", "T4"), "relation"] == "incomparable"


def test_loss_properties_compare_in_the_right_direction(toy, tables):
    # glm is a loss: exact cells lose 0 everywhere, so every pair is 'equal' and no
    # record is better on either side
    comp = compare_releases(toy, tables, ["glm"])
    assert set(comp.pairs["relation"]) == {"equal"}
    assert comp.pairs["p_binary_12"].sum() == 0
    # p_loss: a larger class with a closer sensitive distribution loses less
    v = {k: property_vectors(toy, r, ["p_loss"])["p_loss"].to_numpy()
         for k, r in tables.items()}
    comp = compare_releases(toy, tables, ["p_loss"])
    row = comp.pairs.set_index(["first", "second"]).loc[("T3a", "T3b")]
    assert row["p_binary_12"] == int((v["T3a"] < v["T3b"]).sum())
    assert comp.vectors["T3a"].attrs["higher_is_better"]["p_loss"] is False


def test_wtd_lex_goal_decisions(toy, tables):
    comp = compare_releases(toy, {"T3a": tables["T3a"], "T3b": tables["T3b"]},
                            ["class_size", "sensitive_count"], weights=[0.5, 0.5],
                            order=["class_size", "sensitive_count"], goal=[1.0, 1.0])
    over = comp.overall.iloc[0]
    assert over["wtd"] == "T3b" and over["lex"] == "T3b"
    assert {d["method"] for d in comp.decisions} == {"wtd", "lex", "goal"}


def test_suppressed_modes(toy):
    # records 3 and 8 suppressed (one '*' class, id 9); the kept classes are as in 𝒯_3a
    classes = np.array([0, 1, 9, 0, 2, 2, 2, 9, 1, 2])
    supp = np.zeros(10, dtype=bool)
    supp[[2, 7]] = True
    rel = _release(toy, classes, suppressed=supp)
    ex = property_vectors(toy, rel, ["class_size", "sensitive_count", "glm"])
    assert ex["class_size"].isna().tolist() == supp.tolist()
    assert ex["class_size"].min() == 2                    # j + 1: the smallest kept class
    assert ex.attrs["excluded"] == 2
    own = property_vectors(toy, rel, ["class_size"], suppressed="own_class")
    assert own["class_size"].tolist() == [2, 2, 2, 2, 4, 4, 4, 2, 2, 4]
    val = property_vectors(toy, rel, ["class_size", "sensitive_count", "glm"],
                           suppressed="value")
    assert val["class_size"].iloc[[2, 7]].tolist() == [10, 10]
    # Never Married occurs once in the table, Spouse Present once
    assert val["sensitive_count"].iloc[[2, 7]].tolist() == [1, 1]
    assert val["glm"].iloc[[2, 7]].tolist() == [2, 2]     # 1 per QI, d = 2
    given = property_vectors(toy, rel, ["class_size"], suppressed="value",
                             suppressed_values={"class_size": 0})
    assert given["class_size"].iloc[[2, 7]].tolist() == [0, 0]
    # a pair leaves out the records suppressed in either release
    comp = compare_releases(toy, {"s": rel, "T3a": _release(toy, T3A)}, ["class_size"])
    assert comp.pairs["n_compared"].iloc[0] == 8


def test_vectors_are_row_aligned_and_do_not_touch_the_data(toy, tables):
    before = toy.frame.copy()
    v = property_vectors(toy, tables["T3a"])
    assert v.index.equals(toy.frame.index)
    assert list(v.columns) == defined_properties(toy, tables["T3a"])
    pd.testing.assert_frame_equal(toy.frame, before)


def test_mdav_groups_and_bucketization(toy):
    census = sdceval.load_dataset("census")
    rel = sdceval.anonymize(census, "mdav", k=5)
    size = property_vectors(census, rel, ["class_size"])["class_size"]
    assert size.min() >= 5 and size.max() <= 9
    adult = sdceval.load_dataset("adult-train")
    mond = sdceval.anonymize(adult, "mondrian", k=50)
    buck = sdceval.anonymize(adult, "bucketization", k=50)
    a = property_vectors(adult, mond, ["class_size", "sensitive_count"])
    b = property_vectors(adult, buck, ["class_size", "sensitive_count"])
    # bucketization publishes Mondrian's partition with the values permuted inside each
    # bucket: the counts of each record's own (true) value are the same
    pd.testing.assert_frame_equal(a, b, check_like=True)


def test_generic_measure_property():
    adult = sdceval.load_dataset("adult-train")
    rel = sdceval.anonymize(adult, "mondrian", k=50)
    v = property_vectors(adult, rel, ["cm"])
    m = sdceval.evaluate(adult, rel, "cm")
    assert np.array_equal(v["cm"].to_numpy(), m.per_record)
    assert v.attrs["higher_is_better"]["cm"] is False
    assert "cm" not in property_names()  # measures are accepted by name, not listed


def test_bad_input(toy, tables):
    census = sdceval.load_dataset("census")
    noise = sdceval.anonymize(census, "noise", gamma=1.0)
    with pytest.raises(SdcevalError, match="class_size.*equivalence classes"):
        property_vectors(census, noise, ["class_size"])
    mdav = sdceval.anonymize(census, "mdav", k=5)
    with pytest.raises(SdcevalError, match="'glm' is not defined for a perturbative.*"
                                           "generalized, bucketized"):
        property_vectors(census, mdav, ["glm"])
    with pytest.raises(SdcevalError, match="unknown property 'class_sise'.*class_size"):
        get_property("class_sise")
    with pytest.raises(SdcevalError, match="suppressed must be one of"):
        property_vectors(toy, tables["T3a"], suppressed="drop")
    with pytest.raises(SdcevalError, match="listed twice"):
        property_vectors(toy, tables["T3a"], ["class_size", "class_size"])
    with pytest.raises(SdcevalError, match="directions"):
        property_vectors(toy, tables["T3a"], ["class_size"], directions={"class_size": "up"})
    with pytest.raises(SdcevalError, match="at least two releases"):
        compare_releases(toy, {"T3a": tables["T3a"]})
    # releases of different data sets
    other = property_vectors(census, mdav, ["class_size"])
    mine = property_vectors(toy, tables["T3a"], ["class_size"])
    with pytest.raises(SdcevalError, match="different data sets"):
        compare_releases(toy, {"a": mine, "b": other})
    with pytest.raises(SdcevalError, match="weights"):
        compare_releases(toy, tables, ["class_size"], weights=[0.5, 0.6])
    with pytest.raises(SdcevalError, match="rank_point names 'glm'"):
        compare_releases(toy, tables, ["class_size"], rank_point={"glm": 1.0})
    with pytest.raises(SdcevalError, match="must be a number"):
        compare_releases(toy, tables, ["class_size"], rank_point={"class_size": [1, 2]})


def test_rank_point_orders_releases(toy, tables):
    # DEWRI §2.2: D_max = 10 ranks 𝒯_3b first, D_max = 7 ranks 𝒯_4 first
    for d_max, best in ((10.0, "T3b"), (7.0, "T4")):
        comp = compare_releases(toy, {"T3b": tables["T3b"], "T4": tables["T4"]},
                                ["class_size"], rank_point={"class_size": d_max})
        assert comp.overall["rank_class_size"].iloc[0] == best
        ranks = comp.unary.set_index("release")["p_rank"]
        assert ranks.idxmin() == best


def test_flipped_direction(toy, tables):
    comp = compare_releases(toy, {"T3b": tables["T3b"], "T4": tables["T4"]},
                            ["sensitive_count"],
                            directions={"sensitive_count": "lower_is_better"})
    row = comp.pairs.iloc[0]
    assert row["relation"] == "equal"  # the same count vectors (DEWRI §2.2)
    assert comp.vectors["T3b"].attrs["reference"]["sensitive_count"] is None


@pytest.mark.parametrize("higher", [True, False])
def test_pair_indices_equal_the_single_indices(higher):
    from sdceval.vectors import indices as ix
    rng = np.random.default_rng(3)
    for _ in range(20):
        n = int(rng.integers(1, 40))
        a = rng.integers(1, 6, n).astype(float)
        b = rng.integers(1, 6, n).astype(float)
        ref = None if higher else 7.0
        got = ix.pair_indices(a, b, higher, ref)
        kw = {"higher_is_better": higher}
        assert got["p_binary_12"] == ix.p_binary(a, b, **kw)
        assert got["p_binary_21"] == ix.p_binary(b, a, **kw)
        assert got["p_cov_12"] == pytest.approx(ix.p_cov(a, b, **kw))
        assert got["p_cov_21"] == pytest.approx(ix.p_cov(b, a, **kw))
        assert got["p_spr_12"] == pytest.approx(ix.p_spr(a, b, **kw))
        assert got["p_spr_21"] == pytest.approx(ix.p_spr(b, a, **kw))
        assert got["log_p_hv_12"] == ix.log_p_hv(a, b, reference=ref, **kw)
        assert got["log_p_hv_21"] == ix.log_p_hv(b, a, reference=ref, **kw)
        assert got["relation"] == ix.relation(a, b, **kw)
    # a loss without a worst point has no hypervolume: reported missing, not refused
    assert math.isnan(ix.pair_indices([1.0, 2.0], [2.0, 1.0], False)["log_p_hv_12"])


def test_perturbative_release_linkage_distance():
    census = sdceval.load_dataset("census")
    noise = sdceval.anonymize(census, "noise", gamma=1.0, seed=2)
    mdav = sdceval.anonymize(census, "mdav", k=5)
    assert defined_properties(census, noise) == ["linkage_distance"]
    assert defined_properties(census, mdav) == ["class_size", "linkage_distance"]
    v = property_vectors(census, noise)
    m = sdceval.evaluate(census, noise, "linkage_risk")
    assert np.array_equal(v["linkage_distance"].to_numpy(), m.per_record)
    assert v.attrs["higher_is_better"]["linkage_distance"] is True
    comp = compare_releases(census, {"noise": noise, "mdav": mdav})
    assert comp.settings["properties"] == ["linkage_distance"]
    row = comp.pairs.iloc[0]
    assert row["p_binary_12"] + row["p_binary_21"] <= census.n
