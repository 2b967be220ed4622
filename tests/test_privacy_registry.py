"""The privacy-model registry (issue 7 item 4) and recursive (c, ℓ)-diversity.

Recursive (c, ℓ)-diversity (Machanavajjhala et al. 2007, Def. 4.2): with a class's
sensitive counts sorted descending r_1 >= r_2 >= ... >= r_m, the class satisfies it iff
r_1 < c · (r_ℓ + r_{ℓ+1} + ... + r_m); fewer than ℓ values present: violated.
"""
import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import sdceval
from sdceval import Dataset, Release, Schema, SdcevalError
from sdceval.catalog import get_method
from sdceval.core.registry import Param
from sdceval.privacy import (KAnonymity, PrivacyModel, RecursiveCLDiversity,
                             check_feasible, make_model, model_class, model_names,
                             register_model)


# -- registry --------------------------------------------------------------------------
def test_model_names_and_classes():
    assert model_names()[:4] == ("k", "l", "t", "delta")
    assert "cl" in model_names()
    for name in model_names():
        cls = model_class(name)
        assert cls.name == name and issubclass(cls, PrivacyModel)
        assert cls.params and all(isinstance(p, Param) for p in cls.params)
        assert cls.parameter == cls.params[0].name
        assert isinstance(cls.needs_sensitive, bool)
        assert isinstance(cls.monotone_generalization, bool)
        assert isinstance(cls.monotone_suppression, bool)
        # the example builds a model: one line documents how to call it
        m = make_model(name, **cls.example)
        assert isinstance(m, cls) and m.min_class_size(np.array([0.5, 0.5])) >= 1
        spec = cls.spec()
        assert spec["name"] == name and spec["params"][0]["name"] == cls.parameter


def test_flags_per_model():
    flags = {n: (model_class(n).monotone_generalization, model_class(n).monotone_suppression)
             for n in model_names()}
    assert flags == {"k": (True, True), "l": (True, False), "t": (True, False),
                     "delta": (True, False), "cl": (True, False), "kmap": (True, True)}
    # the instance refines the class: distinct ℓ-diversity is monotone with suppression
    assert make_model("l", l=3, variant="distinct").monotone_suppression is True
    assert make_model("l", l=3, variant="entropy").monotone_suppression is False
    assert make_model("l", l=3).monotone_suppression is False
    assert make_model("k", k=3).needs_sensitive is False
    assert make_model("cl", c=2, l=3).needs_sensitive is True


def test_model_class_unknown_suggests():
    with pytest.raises(SdcevalError, match=r"unknown privacy model 'c1'.*Did you mean 'cl'"):
        model_class("c1")
    with pytest.raises(SdcevalError, match="Models: k, l, t, delta, cl"):
        make_model("zeta", zeta=1)


def test_make_model_parameter_messages():
    with pytest.raises(SdcevalError, match=r"'cl' needs its parameter 'c' \(e\.g\. "
                                           r"make_model\('cl', c=.*l="):
        make_model("cl", l=3)
    with pytest.raises(SdcevalError, match="'cl' needs its parameter 'l'"):
        make_model("cl", c=3)
    with pytest.raises(SdcevalError, match=r"has no parameter 'variant'\. Its parameters: "
                                           r"c, l \(e\.g\. make_model"):
        make_model("cl", c=3, l=2, variant="distinct")
    with pytest.raises(SdcevalError, match=r"no parameter 'lvl'.*Did you mean 'l'"):
        make_model("cl", c=3, lvl=2)
    # bounds, with the parameter and the model named
    with pytest.raises(SdcevalError, match=r"parameter 'l' of privacy model 'cl'.*>= 2"):
        make_model("cl", c=3, l=1)
    with pytest.raises(SdcevalError, match=r"parameter 'l' of privacy model 'cl'.*type int"):
        make_model("cl", c=3, l=2.5)
    with pytest.raises(SdcevalError, match=r"parameter 'c' of privacy model 'cl'.*> 0"):
        make_model("cl", c=0, l=2)
    with pytest.raises(SdcevalError, match=r"parameter 'k' of privacy model 'k'.*type int"):
        KAnonymity(2.5)
    with pytest.raises(SdcevalError, match=r"parameter 'c' .*type float, got 'x'"):
        RecursiveCLDiversity("x", 2)
    # a bound message carries no numpy repr
    with pytest.raises(SdcevalError) as e:
        make_model("cl", c=np.float64(-1.0), l=np.int64(3))
    assert "np." not in str(e.value)


def test_register_model_rejects_bad_declarations():
    with pytest.raises(TypeError, match="already registered"):
        @register_model
        class Again(PrivacyModel):
            name = "k"
            params = (Param("k", int, None, low=1),)

            def __init__(self, k):
                self.k = k
    with pytest.raises(TypeError, match="lacks keyword parameter.*'q'"):
        @register_model
        class Bad(PrivacyModel):
            name = "bad"
            params = (Param("q", float, None),)

            def __init__(self, z):
                self.z = z


def test_adding_a_model_is_one_class():
    """A new model registers with one class and is then built by name."""
    from sdceval.privacy import base

    @register_model
    class MaxShare(PrivacyModel):
        """No sensitive value above share ``p`` in any class (a toy model)."""

        name = "toy_share"
        title = "toy max share"
        params = (Param("p", float, None, low=0.0, high=1.0, protection="decreasing",
                        grid=(0.5,)),)
        larger_is_safer = False
        monotone_generalization = True
        example = {"p": 0.5}

        def __init__(self, p):
            self.p = self.check_param("p", p)
            self.threshold = self.p

        def value(self, counts, table_dist=None):
            c = np.asarray(counts, float)
            return c.max(axis=1) / c.sum(axis=1)
    try:
        assert "toy_share" in model_names()
        m = make_model("toy_share", p=0.6)
        assert m.satisfied(np.array([[3, 2], [4, 1]]), None).tolist() == [True, False]
        assert m.describe() == "p=0.6"
    finally:
        base._unregister("toy_share")
    assert "toy_share" not in model_names()


# -- recursive (c, ℓ)-diversity: hand counts ---------------------------------------------
def test_recursive_cl_hand():
    m = RecursiveCLDiversity(2, 3)  # c = 2, ℓ = 3
    counts = np.array([
        [5, 3, 2, 1],   # sorted 5,3,2,1: tail from r_3 = 2+1 = 3; 5 < 2*3 = 6 -> holds
        [6, 3, 2, 1],   # 6 < 6? no (tie: strict inequality) -> violated
        [1, 1, 1, 0],   # 1,1,1: tail r_3 = 1; 1 < 2 -> holds
        [4, 4, 0, 0],   # m = 2 < ℓ = 3: tail empty -> violated
        [0, 2, 7, 2],   # unsorted input: 7,2,2 -> tail 2; 7 < 4? no -> violated
        [2, 2, 2, 2],   # ties: 2,2,2,2 -> tail 2+2 = 4; 2 < 8 -> holds
    ])
    assert m.satisfied(counts).tolist() == [True, False, True, False, False, True]
    # value = r_1 / Σ_{i>=ℓ} r_i: the class satisfies (c, ℓ) iff value < c
    np.testing.assert_allclose(m.value(counts), [5 / 3, 2, 1, np.inf, 3.5, 0.5])
    # ℓ = 2: tails 6, 6, 2, 4, 4, 6
    m2 = RecursiveCLDiversity(1, 2)
    assert m2.satisfied(counts).tolist() == [True, False, True, False, False, True]
    #  5 < 6 yes; 6 < 6 no; 1 < 2 yes; 4 < 4 no; 7 < 4 no; 2 < 6 yes
    # the largest ℓ satisfied at c: row 0 at c=2: ℓ=3 (tail 3: 5<6), ℓ=4 (tail 1: 5<2 no)
    # row 1: ℓ=2 tail 6: 6<12 yes, ℓ=3 no; row 2: ℓ=3 tail 1: 1<2 yes, ℓ=4 absent;
    # row 3: ℓ=2 tail 4: 4<8 yes; row 4: ℓ=2 tail 4: 7<8 yes, ℓ=3: 7<4 no; row 5: ℓ=4
    assert m.largest_l(counts).tolist() == [3, 2, 3, 2, 2, 4]
    assert m.describe() == "c=2, l=3"


def test_recursive_cl_hand_row_3_detail():
    # [4, 4]: ℓ = 2 tail = r_2 = 4, 4 < 2*4 holds, so the largest ℓ at c = 2 is 2
    m = RecursiveCLDiversity(2, 2)
    assert m.satisfied(np.array([[4, 4, 0, 0]])).tolist() == [True]
    assert m.largest_l(np.array([[4, 4, 0, 0]])).tolist() == [2]
    # at c = 1 even ℓ = 2 fails (4 < 4 is false); ℓ = 1 (tail = n = 8) holds
    assert RecursiveCLDiversity(1, 2).largest_l(np.array([[4, 4, 0, 0]])).tolist() == [1]
    # c <= r_1 / n: not even ℓ = 1
    assert RecursiveCLDiversity(0.5, 2).largest_l(np.array([[4, 4, 0, 0]])).tolist() == [0]


def test_recursive_cl_decimal_c_ties():
    # c given as a decimal: 1 < 0.1 * 10 is false (a tie), whatever 0.1 is in binary
    m = RecursiveCLDiversity(0.1, 2)
    assert m.satisfied(np.array([[1] * 11])).tolist() == [False]
    assert m.satisfied(np.array([[1] * 12])).tolist() == [True]
    # so its minimal class size is 12 (ℓ - 1 + the smallest j with j > 1/c)
    assert m.min_class_size(None) == 12
    assert RecursiveCLDiversity(2, 3).min_class_size(None) == 3
    assert RecursiveCLDiversity(1, 3).min_class_size(None) == 4
    assert RecursiveCLDiversity(0.4, 2).min_class_size(None) == 4


def _brute_cl(row, c, l):  # noqa: E741
    r = sorted((int(x) for x in row if x > 0), reverse=True)
    if len(r) < l:
        return False
    return r[0] < c * sum(r[l - 1:])


@settings(max_examples=60, deadline=None)
@given(hnp.arrays(np.int64, st.tuples(st.integers(1, 12), st.integers(1, 8)),
                  elements=st.integers(0, 9)),
       st.sampled_from([0.25, 0.5, 1, 1.5, 2, 3, 7]), st.integers(2, 6))
def test_recursive_cl_matches_brute_force(counts, c, l):  # noqa: E741
    counts = counts[counts.sum(axis=1) > 0]
    if not len(counts):
        return
    m = RecursiveCLDiversity(c, l)
    expected = [_brute_cl(row, c, l) for row in counts]
    assert m.satisfied(counts).tolist() == expected
    v = m.value(counts)
    assert ((v < c) == np.array(expected)).all()
    best = []
    for row in counts:
        ok = [ll for ll in range(1, counts.shape[1] + 1) if _brute_cl(row, c, ll)]
        best.append(max(ok) if ok else 0)
    assert m.largest_l(counts).tolist() == best
    # every satisfying class is at least min_class_size large
    sizes = counts.sum(axis=1)
    assert (sizes[np.array(expected, bool)] >= m.min_class_size(None)).all()


def test_recursive_cl_feasibility():
    total = np.array([50, 30, 20])
    q = total / total.sum()
    check_feasible(RecursiveCLDiversity(3, 2), total, q)  # 50 < 3 * 50
    with pytest.raises(SdcevalError, match=r"c=2\.5, l=3.*50 / 20 = 2\.5.*choose c > 2\.5"):
        check_feasible(RecursiveCLDiversity(2.5, 3), total, q)
    with pytest.raises(SdcevalError, match="only 3 distinct sensitive values.*l <= 3"):
        check_feasible(RecursiveCLDiversity(9, 4), total, q)


# -- users: Mondrian, bucketization, the check measure --------------------------------
@pytest.fixture(scope="module")
def small():
    rng = np.random.default_rng(5)
    n = 600
    frame = pd.DataFrame({"x": rng.integers(0, 40, n), "y": rng.integers(0, 30, n),
                          "s": rng.choice(list("abcdef"), n, p=[.3, .2, .2, .1, .1, .1])})
    return Dataset(frame, Schema.from_roles(frame, qi=["x", "y"], sensitive="s"))


def test_mondrian_and_bucketization_take_cl(small):
    for method in ("mondrian", "bucketization"):
        rel = sdceval.anonymize(small, method, model="cl", c=2, l=3, seed=0)
        counts = pd.crosstab(rel.classes, small.frame["s"]).to_numpy()
        assert rel.info["n_classes"] > 1
        assert all(_brute_cl(row, 2, 3) for row in counts)
        assert rel.info["achieved"]["c"] == pytest.approx(
            max(sorted(r, reverse=True)[0] / sum(sorted(r, reverse=True)[2:])
                for r in counts))
    spec = get_method("mondrian")
    assert spec.param("model").choices == model_names()
    assert spec.tunable_for({"model": "cl"}).name == "c"


def test_mondrian_cl_parameter_errors(small):
    with pytest.raises(SdcevalError, match="'c' applies to model='cl' only"):
        sdceval.anonymize(small, "mondrian", model="l", c=5)
    with pytest.raises(SdcevalError, match="parameter 'l' of privacy model 'cl'.*type int"):
        sdceval.anonymize(small, "mondrian", model="cl", l=2.5)
    with pytest.raises(SdcevalError, match="'l_variant' applies to model='l'"):
        sdceval.anonymize(small, "mondrian", model="cl", l_variant="entropy")


def test_tradeoff_takes_models_from_registry(small):
    from sdceval.compare.tradeoff import (DEFAULT_GRIDS, MODEL_PARAM, compute_tradeoff,
                                          validate_tradeoff_options)
    for name in model_names():
        assert DEFAULT_GRIDS[name] == list(model_class(name).default_grid())
        assert MODEL_PARAM[name] == model_class(name).parameter
    assert MODEL_PARAM["cl"] == "c"
    assert validate_tradeoff_options({})[0] == ["k", "l", "t", "delta"]  # Li & Li's four
    models, grids, _ = validate_tradeoff_options({"models": ["cl"], "grids": {"cl": [1, 2]}})
    assert models == ["cl"] and grids["cl"] == [1.0, 2.0]
    with pytest.raises(SdcevalError, match="Did you mean 'cl'"):
        validate_tradeoff_options({"models": ["cll"]})
    pts = compute_tradeoff(small, models=["cl"], grids={"cl": [1.5, 4]}, measures=["p_loss"],
                           model_params={"cl": {"l": 3}})
    assert pts["parameter"].tolist() == ["c", "c"] and pts["value"].tolist() == [1.5, 4.0]


def test_recursive_cl_check_measure(small):
    frame = pd.DataFrame({"q": range(8), "s": list("aabcaaab")})
    ds = Dataset(frame, Schema.from_roles(frame, qi=["q"], sensitive="s"))
    rel = Release(data=frame, method="hand", kind="generalized",
                  classes=np.array([0, 0, 0, 0, 1, 1, 1, 1]), suppressed=np.zeros(8, bool))
    # class 0: a a b c -> 2,1,1; ℓ = 2 tail 2: value 1; class 1: a a a b -> 3,1: value 3
    m = sdceval.evaluate(ds, rel, "recursive_cl_diversity", l=2)
    assert m.value == 3 and m.per_record.tolist() == [1] * 4 + [3] * 4
    assert m.larger_is_worse and "satisfies" not in m.details
    m = sdceval.evaluate(ds, rel, "recursive_cl_diversity", l=2, c=2)
    assert m.details["satisfies"] is False and m.details["violating_classes"] == 1
    m = sdceval.evaluate(ds, rel, "recursive_cl_diversity", l=3)
    assert m.per_record.tolist() == [2] * 4 + [math.inf] * 4  # class 1 has 2 values
