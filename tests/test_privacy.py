"""Privacy models (sdceval.privacy) and the privacy-check measures: hand examples,
independent recomputation (scipy JS, POT EMD), errors."""
import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import sdceval
from sdceval import Hierarchy, Release, SdcevalError
from sdceval.privacy import (DeltaDisclosure, KAnonymity, LDiversity, TCloseness,
                             check_feasible, class_counts, make_model, table_distribution)

from privacy_data import OCCUPATION, emd, ground_matrix, js, synthetic

TREE = Hierarchy([["a", "X", "*"], ["b", "X", "*"], ["c", "Y", "*"]], name="s")


# -- hand examples -----------------------------------------------------------------
def test_k_anonymity_hand():
    m = KAnonymity(3)
    c = np.array([[3, 0], [1, 1], [0, 5]])
    assert m.satisfied(c, None).tolist() == [True, False, True]
    assert m.value(c, None).tolist() == [3, 2, 5]
    assert m.min_class_size(None) == 3


def test_l_diversity_probabilistic_hand():
    m = LDiversity(2)
    c = np.array([[2, 2, 0], [3, 1, 0], [1, 1, 1]])
    assert m.satisfied(c).tolist() == [True, False, True]
    np.testing.assert_allclose(m.value(c), [2, 4 / 3, 3])
    # real ℓ (Li & Li use 4.25): 17 records, most frequent 4 -> ℓ = 4.25 exactly
    c = np.array([[4, 4, 4, 4, 1], [5, 4, 4, 4, 0]])
    assert LDiversity(4.25).satisfied(c).tolist() == [True, False]
    assert LDiversity(4.26).satisfied(c).tolist() == [False, False]
    assert LDiversity(4.1).satisfied(c).tolist() == [True, False]


def test_l_diversity_distinct_and_entropy_hand():
    c = np.array([[2, 2, 0, 0], [1, 1, 1, 1], [3, 1, 0, 0]])
    d = LDiversity(3, "distinct")
    assert d.value(c).tolist() == [2, 4, 2]
    assert d.satisfied(c).tolist() == [False, True, False]
    e = LDiversity(2, "entropy")
    h = -(0.75 * math.log(0.75) + 0.25 * math.log(0.25))
    np.testing.assert_allclose(e.value(c), [2, 4, math.exp(h)])
    assert e.satisfied(c).tolist() == [True, True, False]


def test_t_closeness_equal_ordered_hierarchical_hand():
    q = np.array([1 / 3, 1 / 3, 1 / 3])
    c = np.array([[1, 0, 0], [0, 0, 1], [1, 1, 0], [1, 1, 1]])
    eq = TCloseness(0.4, "emd", "equal")
    np.testing.assert_allclose(eq.value(c, q), [2 / 3, 2 / 3, 1 / 3, 0])
    od = TCloseness(0.4, "emd", "ordered")
    # P=(1,0,0): cumulative differences 2/3, 1/3 -> (2/3 + 1/3) / 2;
    # P=(½,½,0): cumulative differences 1/6, 1/3 -> (1/6 + 1/3) / 2
    np.testing.assert_allclose(od.value(c, q), [0.5, 0.5, 0.25, 0])
    hi = TCloseness(0.4, "emd", hierarchy=TREE)
    assert hi.ground == "hierarchical"
    # P=(1,0,0): 1/3 moves a->b inside X (distance 1/2), 1/3 moves X->Y (distance 1)
    np.testing.assert_allclose(hi.value(c, q), [1 / 6 + 1 / 3, 2 / 3, 1 / 3, 0])
    assert hi.satisfied(c, q).tolist() == [False, False, True, True]


def test_t_closeness_js_hand():
    q = np.array([0.5, 0.5])
    m = TCloseness(0.2, "js")
    v = m.value(np.array([[1, 0], [1, 1]]), q)
    # JS((1,0),(.5,.5)) = ½ ln 2 + ½ (½ ln(2/3) + ½ ln 2) ... computed independently:
    np.testing.assert_allclose(v, [js([1, 0], q), 0.0])
    assert v[0] == pytest.approx(0.2158, abs=1e-4)
    assert m.satisfied(np.array([[1, 0], [1, 1]]), q).tolist() == [False, True]


def test_delta_disclosure_hand():
    q = np.array([0.25, 0.75])
    m = DeltaDisclosure(0.7)
    c = np.array([[1, 1], [1, 3], [0, 4]])
    v = m.value(c, q)
    np.testing.assert_allclose(v[:2], [math.log(2), 0.0])
    assert v[2] == np.inf  # a class lacking a value of the table
    assert m.satisfied(c, q).tolist() == [True, True, False]
    assert DeltaDisclosure(0.69).satisfied(c, q).tolist() == [False, True, False]
    # values absent from the table are ignored, not a division by zero
    np.testing.assert_allclose(m.value(np.array([[1, 3, 0]]), np.array([.25, .75, 0])), [0])
    assert m.min_class_size(np.array([.25, .75, 0])) == 2


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(0, 6), min_size=10, max_size=10),
       st.lists(st.integers(1, 6), min_size=10, max_size=10))
def test_emd_variants_match_pot(cls, tab):
    """All three EMD ground distances against POT's exact transport with the explicit
    ground matrix (Li, Li & Venkatasubramanian's closed forms vs an LP)."""
    c = np.array([cls], dtype=float)
    if c.sum() == 0:
        c[0, 0] = 1
    q = np.array(tab, float) / sum(tab)
    p = c[0] / c.sum()
    for ground in ("equal", "ordered", "hierarchical"):
        m = TCloseness(0.1, "emd", ground, hierarchy=OCCUPATION)
        expected = emd(p, q, ground_matrix(OCCUPATION, ground))
        assert m.value(c, q)[0] == pytest.approx(expected, abs=1e-9), ground
    assert TCloseness(0.1, "js").value(c, q)[0] == pytest.approx(js(p, q), abs=1e-12)


def test_ground_auto():
    assert TCloseness(0.1, "emd").ground == "equal"
    assert TCloseness(0.1, "emd", hierarchy=OCCUPATION).ground == "hierarchical"
    num = Hierarchy.intervals(range(10), [5], name="n")
    assert TCloseness(0.1, "emd", hierarchy=num).ground == "ordered"
    # a flat hierarchy's hierarchical EMD is the total variation
    flat = Hierarchy.flat(list("abcd"))
    c, q = np.array([[3, 1, 0, 0]]), np.full(4, 0.25)
    assert TCloseness(0.1, "emd", hierarchy=flat).value(c, q)[0] == pytest.approx(0.5)


# -- factory and feasibility -------------------------------------------------------
def test_make_model():
    assert isinstance(make_model("k", k=5), KAnonymity)
    m = make_model("l", l=4.25, variant="entropy")
    assert (m.l, m.variant) == (4.25, "entropy")
    m = make_model("t", t=0.2, distance="js")
    assert m.distance == "js" and m.describe() == "t=0.2 (js)"
    assert make_model("delta", delta=1.5).delta == 1.5


@pytest.mark.parametrize("args, match", [
    (("z",), {}), (("l",), {}), (("l",), {"l": 3, "k": 2}), (("l",), {"l": 3, "variant": "x"}),
    (("l",), {"l": 0.5}), (("t",), {"t": 0}), (("t",), {"t": 0.1, "distance": "kl"}),
    (("t",), {"t": 0.1, "distance": "js", "ground": "ordered"}),
    (("t",), {"t": 0.1, "ground": "hierarchical"}), (("delta",), {"delta": -1}),
    (("k",), {"k": 2.5}),
])
def test_make_model_errors(args, match):
    with pytest.raises(SdcevalError):
        make_model(*args, **match)


def test_make_model_error_messages():
    with pytest.raises(SdcevalError, match="Did you mean 'delta'"):
        make_model("detla", delta=1)
    with pytest.raises(SdcevalError, match="needs its parameter 'l'"):
        make_model("l")
    with pytest.raises(SdcevalError, match="has no parameter 'k'"):
        make_model("t", t=0.1, k=3)


def test_check_feasible():
    total = np.array([50, 30, 20])
    q = total / total.sum()
    check_feasible(LDiversity(2), total, q)
    with pytest.raises(SdcevalError, match=r"l=2\.5.*maximum achievable ℓ is 2(?!\d)"):
        check_feasible(LDiversity(2.5), total, q)
    with pytest.raises(SdcevalError, match="l=4.*maximum achievable ℓ is 3 .*distinct"):
        check_feasible(LDiversity(4, "distinct"), total, q)
    with pytest.raises(SdcevalError, match="k=101"):
        check_feasible(KAnonymity(101), total, q)
    # the whole table is at distance 0 from itself: any t, δ > 0 is feasible
    check_feasible(TCloseness(1e-9, "js"), total, q)
    check_feasible(DeltaDisclosure(1e-9), total, q)


def test_class_counts_and_table_distribution():
    counts, inv = class_counts(np.array([7, 3, 7, 7]), np.array([0, 1, 1, 1]), 3)
    assert counts.tolist() == [[0, 1, 0], [1, 2, 0]]
    assert inv.tolist() == [1, 0, 1, 1]
    np.testing.assert_allclose(table_distribution(np.array([0, 1, 1, 1]), 3), [.25, .75, 0])


# -- privacy-check measures ---------------------------------------------------------
@pytest.fixture(scope="module")
def tiny():
    frame = pd.DataFrame({"q": [1, 2, 3, 4, 5, 6, 7, 8],
                          "s": list("aabbaabc")})
    ds = sdceval.Dataset(frame, sdceval.Schema.from_roles(frame, qi=["q"], sensitive="s"))
    rel = Release(data=frame, method="hand", kind="generalized",
                  classes=np.array([0, 0, 0, 0, 1, 1, 1, 1]),
                  suppressed=np.zeros(8, bool))
    return ds, rel


def test_check_measures_hand(tiny):
    ds, rel = tiny
    k = sdceval.evaluate(ds, rel, "k_anonymity")
    assert k.value == 4 and k.per_record.tolist() == [4] * 8 and not k.larger_is_worse
    assert "satisfies" not in k.details
    k5 = sdceval.evaluate(ds, rel, "k_anonymity", k=5)
    assert k5.details["satisfies"] is False and k5.details["violating_records"] == 8
    # class 0: a a b b -> ℓ 2; class 1: a a b c -> ℓ 2, distinct 3
    assert sdceval.evaluate(ds, rel, "l_diversity").value == 2
    assert sdceval.evaluate(ds, rel, "l_diversity", variant="distinct").value == 2
    d = sdceval.evaluate(ds, rel, "l_diversity", variant="distinct", l=3)
    assert d.details["violating_classes"] == 1 and d.per_record.tolist() == [2] * 4 + [3] * 4
    q = np.array([4, 3, 1]) / 8
    t = sdceval.evaluate(ds, rel, "t_closeness", distance="js", t=0.1)
    assert t.value == pytest.approx(max(js([.5, .5, 0], q), js([.5, .25, .25], q)))
    assert t.larger_is_worse and t.details["satisfies"] is True
    tv = sdceval.evaluate(ds, rel, "t_closeness")
    assert tv.value == pytest.approx(0.125)  # total variation: flat hierarchy of s
    dd = sdceval.evaluate(ds, rel, "delta_disclosure", delta=1)
    assert dd.value == np.inf and dd.details["satisfies"] is False
    assert dd.per_record[4:].tolist() == [pytest.approx(math.log(2))] * 4


def test_check_measures_suppressed_class(tiny):
    ds, _ = tiny
    rel = Release(data=ds.frame, method="gen", kind="generalized",
                  classes=np.array([0, 0, 0, 0, 0, 1, 1, 2]),
                  suppressed=np.array([False] * 7 + [True]))
    # class 1 (2 records) counts, the suppressed class (1 record) does not by default
    assert sdceval.evaluate(ds, rel, "k_anonymity").value == 2  # class 1; class 2 is suppressed
    m = sdceval.evaluate(ds, rel, "k_anonymity", include_suppressed=True)
    assert m.value == 1 and m.details["suppressed"] == 1
    assert m.per_record[-1] == 1


def test_check_measures_use_released_sensitive_codes(tiny):
    ds, rel = tiny
    swapped = Release(data=ds.frame, method="b", kind="bucketized", classes=rel.classes,
                      sensitive_codes=np.array([0, 0, 0, 0, 0, 1, 1, 1]))
    assert sdceval.evaluate(ds, swapped, "l_diversity").value == 1


def test_check_measure_errors(tiny):
    ds, _ = tiny
    rel = Release(data=ds.frame, method="noise", kind="perturbative")
    with pytest.raises(SdcevalError, match="needs a release with equivalence classes"):
        sdceval.evaluate(ds, rel, "k_anonymity")
    nosens = sdceval.Dataset(ds.frame, sdceval.Schema.from_roles(ds.frame, qi=["q"]))
    rel = Release(data=ds.frame, method="x", kind="generalized", classes=np.zeros(8, int))
    assert sdceval.evaluate(nosens, rel, "k_anonymity").value == 8
    with pytest.raises(SdcevalError, match="needs a sensitive attribute"):
        sdceval.evaluate(nosens, rel, "l_diversity")
    with pytest.raises(SdcevalError, match="one of probabilistic"):
        sdceval.evaluate(ds, rel, "l_diversity", variant="recursive")


def test_check_measures_on_synthetic_match_independent():
    ds = synthetic(800, seed=3)
    rel = sdceval.anonymize(ds, "mondrian", k=20)
    keys = pd.Series(rel.classes)
    tab = pd.crosstab(keys, ds.frame["occupation"]).reindex(
        columns=list(ds.hierarchy("occupation").leaves), fill_value=0)
    P = tab.to_numpy(float) / tab.to_numpy().sum(axis=1, keepdims=True)
    Q = ds.frame["occupation"].value_counts(normalize=True).reindex(tab.columns).to_numpy()
    D = ground_matrix(ds.hierarchy("occupation"), "hierarchical")
    assert sdceval.evaluate(ds, rel, "t_closeness").value == pytest.approx(
        max(emd(p, Q, D) for p in P), abs=1e-9)
    assert sdceval.evaluate(ds, rel, "l_diversity").value == pytest.approx(
        (1 / P.max(axis=1)).min())
