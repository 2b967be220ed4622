"""Bisection to a target risk, on toy methods with a known risk curve."""
import math

import pytest

from sdceval import SdcevalError
from sdceval.compare.bisection import bisect_risk
from sdceval.core.measurement import Measurement
from sdceval.catalog import MEASURES, METHODS
from sdceval.core.registry import MeasureSpec, MethodSpec, Param
from sdceval.core.release import Release


@pytest.fixture
def toy(monkeypatch, small_numeric):
    """Toy methods whose 'risk' is a known monotone function of their parameter."""
    calls = []

    def make(ds, *, seed, level, **_):
        calls.append(level)
        return Release(data=ds.frame, method="toy", info={"level": level})

    def risk(ds, rel):
        # decreasing distance (= more risk) as level grows? no: protection grows with level,
        # linkage distance (larger = safer) grows with it
        return Measurement("toy_risk", math.log1p(rel.info["level"]), larger_is_worse=False)

    monkeypatch.setitem(METHODS, "toy_float", MethodSpec(
        "toy_float", make, (Param("level", float, 1.0, low=0, high=1000, low_inclusive=False,
                                  protection="increasing", grid=(0.1, 10.0), scale="log"),),
        "toy"))
    monkeypatch.setitem(METHODS, "toy_int", MethodSpec(
        "toy_int", make, (Param("level", int, 5, low=2, high="n", protection="increasing",
                                grid=(3, 10)),), "toy"))
    monkeypatch.setitem(MEASURES, "toy_risk", MeasureSpec(
        "toy_risk", risk, (), "toy", "risk", larger_is_worse=False))
    return calls


def test_float_parameter_reaches_target(toy, small_numeric):
    target = math.log1p(2.5)
    res = bisect_risk(small_numeric, "toy_float", target, risk="toy_risk", rtol=1e-6)
    assert res.bracketed
    assert res.value == pytest.approx(2.5, rel=1e-4)
    assert abs(res.risk - target) <= 1e-6 * target
    assert res.evaluations == len(set(s.value for s in res.steps))
    assert res.evaluations <= 40


def test_bracket_expands_beyond_grid(toy, small_numeric):
    target = math.log1p(200.0)  # grid tops out at 10: needs outward expansion
    res = bisect_risk(small_numeric, "toy_float", target, risk="toy_risk", rtol=1e-4)
    assert res.bracketed
    assert res.value == pytest.approx(200.0, rel=1e-3)
    assert any(s.phase == "bracket" and s.value > 10 for s in res.steps)


def test_integer_parameter_searches_integers(toy, small_numeric):
    target = math.log1p(7.4)
    res = bisect_risk(small_numeric, "toy_int", target, risk="toy_risk")
    assert isinstance(res.value, int) and res.value == 7
    assert all(float(s.value).is_integer() for s in res.steps)


def test_unreachable_target_is_reported(toy, small_numeric):
    res = bisect_risk(small_numeric, "toy_int", math.log1p(10 ** 6), risk="toy_risk")
    assert not res.bracketed
    assert res.value == small_numeric.n  # the bound
    lo, hi = res.reachable
    assert hi == pytest.approx(math.log1p(small_numeric.n))


def test_memoized_evaluations(toy, small_numeric):
    bisect_risk(small_numeric, "toy_int", math.log1p(6), risk="toy_risk")
    assert len(toy) == len(set(toy))


def test_fixing_the_tuned_parameter_is_an_error(toy, small_numeric):
    with pytest.raises(SdcevalError, match="level"):
        bisect_risk(small_numeric, "toy_int", 1.0, risk="toy_risk", fixed_params={"level": 3})


def test_non_monotone_curve_terminates(monkeypatch, toy, small_numeric):
    """A risk curve that dips (as MDAV's does at large k) must not make the bracket
    search oscillate: it stops at the bound and reports the target as unreached."""
    from sdceval.catalog import MEASURES
    from sdceval.core.registry import MeasureSpec

    def bumpy(ds, rel):
        lv = rel.info["level"]
        return Measurement("toy_risk", math.log1p(lv) - (0.5 if lv > 150 else 0.0),
                           larger_is_worse=False)
    monkeypatch.setitem(MEASURES, "toy_risk", MeasureSpec(
        "toy_risk", bumpy, (), "toy", "risk", larger_is_worse=False))
    res = bisect_risk(small_numeric, "toy_int", 50.0, risk="toy_risk")
    assert not res.bracketed and res.evaluations <= 40 and len(res.steps) <= 40
