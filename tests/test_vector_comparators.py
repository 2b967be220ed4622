"""Multi-property comparators WTD, LEX and GOAL (Dewri et al. 2009 §5.5-5.7; DEWRI.md
§1.5, §2.2 E13 and the [C] cases, §3.1 A8-A10, §4.1 item 8)."""
import dataclasses
import json
import math

import numpy as np
import pandas as pd
import pytest

from sdceval.core.errors import SdcevalError
from sdceval.vectors.comparators import Decision, goal, goal_unary, lex, wtd
from sdceval.vectors.indices import log_p_hv, p_cov, p_mean, p_min, p_spr

T3A = (3, 3, 3, 3, 4, 4, 4, 3, 3, 4)
T3B = (3, 7, 7, 3, 7, 7, 7, 3, 7, 7)
UA = (2.03, 1.7, 1.7, 2.03, 1.6, 1.6, 1.6, 2.03, 1.7, 1.6)
UB = (2.03, 0.97, 0.97, 2.03, 0.97, 0.97, 0.97, 2.03, 0.97, 0.97)
# D09 §5.5 (E13): privacy p = class size, utility u (Iyengar-style, higher is better)
YA = {"p": T3A, "u": UA}
YB = {"p": T3B, "u": UB}


# ---------------------------------------------------------------- WTD (§5.5, A8)

def test_wtd_equal_weights_is_a_tie_at_0_65():
    d = wtd(YA, YB, (0.5, 0.5))
    assert d.method == "wtd"
    assert d.per_property["p"] == pytest.approx((0.3, 1.0), abs=1e-12)
    assert d.per_property["u"] == pytest.approx((1.0, 0.3), abs=1e-12)
    assert d.score_first == pytest.approx(0.65, abs=1e-12)
    assert d.score_second == pytest.approx(0.65, abs=1e-12)
    assert d.preferred == "tie"                    # "equally good" (E13)


def test_wtd_unequal_weights_prefers_3b():
    d = wtd(YA, YB, {"u": 0.3, "p": 0.7})          # a mapping, any order
    assert (d.score_first, d.score_second) == (pytest.approx(0.51, abs=1e-12),
                                               pytest.approx(0.79, abs=1e-12))
    assert d.preferred == "second"
    assert wtd(YB, YA, [0.7, 0.3]).preferred == "first"


def test_wtd_share_normalization():
    # P/(P+P'): 0.3/1.3 and 1/1.3, symmetric here, so equal weights tie again
    d = wtd(YA, YB, (0.5, 0.5), normalize="share")
    assert d.score_first == pytest.approx(0.5, abs=1e-12)
    assert d.preferred == "tie"
    d = wtd(YA, YB, (0.7, 0.3), normalize="share")
    assert d.score_first == pytest.approx(0.7 * 0.3 / 1.3 + 0.3 * 1 / 1.3, abs=1e-12)
    assert d.score_second == pytest.approx(0.7 * 1 / 1.3 + 0.3 * 0.3 / 1.3, abs=1e-12)
    # both P = 0 (identical vectors under P_spr) -> 0.5 each (A8)
    same = wtd({"p": T3A, "u": UA}, {"p": T3A, "u": UB}, (0.5, 0.5), index="p_spr",
               normalize="share")
    assert same.score_first == pytest.approx(0.5 * 0.5 + 0.5 * 1.0)
    assert same.preferred == "first"
    # a callable normalizer gets (P(D1,D2), P(D2,D1))
    d = wtd(YA, YB, (0.7, 0.3), normalize=lambda p, q: p - q)
    assert d.score_first == pytest.approx(0.7 * -0.7 + 0.3 * 0.7, abs=1e-12)


def test_wtd_share_on_p_hv_is_computed_from_logs():
    big_a = {"k": np.full(30_000, 5.0)}
    big_b = {"k": np.r_[np.full(29_999, 5.0), 4.0]}
    d = wtd(big_a, big_b, [1.0], index="p_hv", normalize="share")
    assert d.score_first == 1.0 and d.score_second == 0.0
    assert d.per_property["k"][1] == -math.inf
    with pytest.raises(SdcevalError, match="share"):
        wtd(big_a, big_b, [1.0], index="p_hv")


@pytest.mark.parametrize("weights, what", [
    ((0.5,), "2 weights"),
    ((0.5, 0.3, 0.2), "2 weights"),
    ((1.2, -0.2), "negative"),
    ((0.5, 0.6), "sum to 1"),
    ({"p": 0.5, "x": 0.5}, "'x'"),
    ({"p": 1.0}, "'u'"),
    ((0.5, float("nan")), "finite"),
    ("ab", "weights"),
])
def test_wtd_bad_weights(weights, what):
    with pytest.raises(SdcevalError, match=what):
        wtd(YA, YB, weights)


def test_wtd_bad_index_and_normalize():
    with pytest.raises(SdcevalError, match="p_cov"):
        wtd(YA, YB, (0.5, 0.5), index="p_covv")
    with pytest.raises(SdcevalError, match="normalize"):
        wtd(YA, YB, (0.5, 0.5), normalize="sum")


# ---------------------------------------------------------------- LEX (§5.6, A9)

def test_lex_cases():
    d = lex(YA, YB)                                    # order (p, u), significance 0
    assert (d.score_first, d.score_second, d.preferred) == (2, 1, "second")
    d = lex(YA, YB, significance=(0.8, 0))
    assert (d.score_first, d.score_second, d.preferred) == (2, math.inf, "first")
    d = lex(YA, YB, significance={"p": 0.8, "u": 0.8})
    assert (d.score_first, d.score_second, d.preferred) == (math.inf, math.inf, "tie")
    d = lex(YA, YB, order=("u", "p"))
    assert (d.score_first, d.score_second, d.preferred) == (1, 2, "first")
    # the significance follows `order` when given as a sequence
    d = lex(YA, YB, significance=(0, 0.8), order=("u", "p"))
    assert (d.score_first, d.score_second) == (1, math.inf)
    assert list(d.per_property) == ["u", "p"]


def test_lex_bad_input():
    with pytest.raises(SdcevalError, match="2 values"):
        lex(YA, YB, significance=(0.1,))
    with pytest.raises(SdcevalError, match="negative"):
        lex(YA, YB, significance=(0.1, -0.1))
    with pytest.raises(SdcevalError, match="order"):
        lex(YA, YB, order=("p",))
    with pytest.raises(SdcevalError, match="order"):
        lex(YA, YB, order=("p", "p"))
    with pytest.raises(SdcevalError, match="'q'"):
        lex(YA, YB, order=("p", "q"))


def test_lex_p_hv_significance_applies_to_the_raw_difference():
    a, b = {"k": (3, 3, 3, 5, 5, 5, 5, 5)}, {"k": (4,) * 8}   # P_hv 56727 vs 37888
    # P_hv(a,b) − P_hv(b,a) = 18839, recovered from the logs without forming products
    assert lex(a, b, index="p_hv", significance=(18838.5,)).preferred == "first"
    assert lex(a, b, index="p_hv", significance=(18839.5,)).preferred == "tie"
    d = lex(a, b, index="p_hv")
    assert d.per_property["k"] == pytest.approx((math.log(56727), math.log(37888)))


# ---------------------------------------------------------------- GOAL (§5.7, A10)

def test_goal_cases():
    d = goal(YA, YB, (1, 1))
    assert d.score_first == pytest.approx(0.49, abs=1e-12)
    assert d.score_second == pytest.approx(0.49, abs=1e-12)
    assert d.preferred == "tie"
    d = goal(YA, YB, {"p": 1, "u": 0.5})
    assert d.score_first == pytest.approx(0.74, abs=1e-12)
    assert d.score_second == pytest.approx(0.04, abs=1e-12)
    assert d.preferred == "second"                   # lower wins


def test_goal_bad_input():
    with pytest.raises(SdcevalError, match="2 values"):
        goal(YA, YB, (1, 1, 1))
    with pytest.raises(SdcevalError, match="finite"):
        goal(YA, YB, (1, float("inf")))
    with pytest.raises(SdcevalError, match="p_hv"):
        goal(YA, YB, (1, 1), index="p_hv")


def test_goal_unary():
    # Σ (P_i(D_i) − g_i)², lower is better; D09 §5.7 builds G from goal property vectors
    got = goal_unary(YA, (4, 2), ("min", "mean"))
    assert got == pytest.approx((3 - 4) ** 2 + (1.759 - 2) ** 2, abs=1e-12)
    g = (p_min((4,) * 10), p_mean((2.0,) * 10))
    assert goal_unary(YA, g, {"p": "min", "u": "mean"}) == got
    assert goal_unary(YA, {"p": 3, "u": 3}, "min") == pytest.approx(0 + (3 - 1.6) ** 2)
    # the direction reaches the unary index: the worst loss is the largest
    assert goal_unary({"loss": (0.1, 0.4)}, [0.0], "min",
                      higher_is_better={"loss": False}) == pytest.approx(0.16)
    with pytest.raises(SdcevalError, match="2 values"):
        goal_unary(YA, (1,), "min")
    with pytest.raises(SdcevalError, match="unary"):
        goal_unary(YA, (1, 1), "p_cov")
    with pytest.raises(SdcevalError, match="2 values"):
        goal_unary(YA, (1, 1), ("min",))


# ---------------------------------------------------------------- shared behaviour

def test_direction_and_references_reach_the_indices():
    loss_a, loss_b = (0.1, 0.5, 0.2), (0.2, 0.2, 0.2)
    ya, yb = {"k": (3, 3, 4), "loss": loss_a}, {"k": (3, 4, 3), "loss": loss_b}
    d = wtd(ya, yb, (0.5, 0.5), index="p_spr", higher_is_better={"loss": False})
    assert d.per_property["loss"] == (p_spr(loss_a, loss_b, False),
                                      p_spr(loss_b, loss_a, False))
    neg = wtd({"k": (3, 3, 4), "loss": [-x for x in loss_a]},
              {"k": (3, 4, 3), "loss": [-x for x in loss_b]}, (0.5, 0.5), index="p_spr")
    assert d.score_first == pytest.approx(neg.score_first)
    assert d.score_second == pytest.approx(neg.score_second)
    with pytest.raises(SdcevalError, match=r"'loss'.*reference"):
        lex(ya, yb, index="p_hv", higher_is_better={"loss": False})
    d = lex(ya, yb, index="p_hv", higher_is_better={"loss": False},
            references={"loss": 1.0})
    assert d.per_property["loss"] == (log_p_hv(loss_a, loss_b, False, 1.0),
                                      log_p_hv(loss_b, loss_a, False, 1.0))
    with pytest.raises(SdcevalError, match=r"references.*'los'"):
        lex(ya, yb, index="p_hv", references={"los": 1.0})


def test_callable_index():
    d = lex(YA, YB, index=lambda d1, d2, higher_is_better, name: p_cov(d1, d2))
    assert (d.score_first, d.score_second) == (2, 1)


def test_mismatched_properties_and_lengths():
    with pytest.raises(SdcevalError, match="same properties") as info:
        wtd(YA, {"p": T3B, "utility": UB}, (0.5, 0.5))
    assert "'u'" in str(info.value) and "'utility'" in str(info.value)
    with pytest.raises(SdcevalError, match=r"'u'.*length"):
        goal(YA, {"p": T3B, "u": UB[:9]}, (1, 1))
    with pytest.raises(SdcevalError, match=r"'u'.*NaN"):
        lex(YA, {"p": T3B, "u": (np.nan,) + UB[1:]})


def test_dataframes_are_accepted():
    d = wtd(pd.DataFrame(YA), pd.DataFrame(YB), (0.5, 0.5))
    assert d.preferred == "tie" and list(d.per_property) == ["p", "u"]


def test_decision_is_frozen_and_serializable():
    d = lex(YA, YB, significance=(0.8, 0))
    with pytest.raises(dataclasses.FrozenInstanceError):
        d.preferred = "first"
    out = d.as_dict()
    assert out["method"] == "lex" and out["preferred"] == "first"
    assert out["score_second"] == math.inf
    assert type(out["per_property"]["p"][0]) is float
    assert json.loads(json.dumps(out))["per_property"]["u"] == pytest.approx([1.0, 0.3])
    assert isinstance(d, Decision)
