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
        return Release.perturbative(ds, ds.frame[ds.schema.numeric], method="toy",
                                    info={"level": level})

    def risk(ds, rel):
        # decreasing distance (= more risk) as level grows? no: protection grows with level,
        # linkage distance (larger = safer) grows with it
        return Measurement("toy_risk", math.log1p(rel.info["level"]), direction="higher_is_better")

    monkeypatch.setitem(METHODS, "toy_float", MethodSpec(
        "toy_float", make, (Param("level", float, 1.0, low=0, high=1000, low_inclusive=False,
                                  protection="increasing", grid=(0.1, 10.0), scale="log"),),
        "toy"))
    monkeypatch.setitem(METHODS, "toy_int", MethodSpec(
        "toy_int", make, (Param("level", int, 5, low=2, high="n", protection="increasing",
                                grid=(3, 10)),), "toy"))
    monkeypatch.setitem(MEASURES, "toy_risk", MeasureSpec(
        "toy_risk", risk, (), "toy", "risk", direction="higher_is_better"))
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
                           direction="higher_is_better")
    monkeypatch.setitem(MEASURES, "toy_risk", MeasureSpec(
        "toy_risk", bumpy, (), "toy", "risk", direction="higher_is_better"))
    res = bisect_risk(small_numeric, "toy_int", 50.0, risk="toy_risk")
    assert not res.bracketed and res.evaluations <= 40 and len(res.steps) <= 40


# -- the range over the whole domain; non-monotone curves (issue 6) --------------------
def _curve(monkeypatch, fn):
    """Replace the toy risk by ``fn(level)`` (larger = less risk, as linkage_risk)."""
    def risk(ds, rel):
        return Measurement("toy_risk", float(fn(rel.info["level"])), direction="higher_is_better")
    monkeypatch.setitem(MEASURES, "toy_risk", MeasureSpec(
        "toy_risk", risk, (), "toy", "risk", direction="higher_is_better"))


def test_reachable_range_includes_the_domain_ends(toy, small_numeric):
    # above the curve: the search climbs to k = n, but k = 2 (below the grid's 3) is the
    # low end of the domain and must be in the reported range
    res = bisect_risk(small_numeric, "toy_int", math.log1p(10 ** 6), risk="toy_risk")
    assert not res.bracketed and res.monotone
    assert res.reachable == pytest.approx((math.log1p(2), math.log1p(small_numeric.n)))
    # below the curve: the top end n is evaluated as well as the bottom 2
    res = bisect_risk(small_numeric, "toy_int", -1.0, risk="toy_risk")
    assert not res.bracketed and res.value == 2
    assert res.reachable == pytest.approx((math.log1p(2), math.log1p(small_numeric.n)))
    assert "level in [2, 300]" in res.describe_reach()


def test_reachable_range_of_an_open_bound(toy, small_numeric):
    # level in (0, 1000]: the low end is approached (the smallest value above 0)
    res = bisect_risk(small_numeric, "toy_float", math.log1p(5000.0), risk="toy_risk")
    assert not res.bracketed
    lo, hi = res.reachable
    assert lo < 1e-6 and hi == pytest.approx(math.log1p(1000.0))


def test_curve_falling_against_the_registry_direction_is_searched(monkeypatch, toy,
                                                                  small_numeric):
    # protection grows with level, yet this "risk" falls: the target lies on the side the
    # registry does not expect
    _curve(monkeypatch, lambda lv: -math.log1p(lv))
    res = bisect_risk(small_numeric, "toy_float", -math.log1p(200.0), risk="toy_risk",
                      rtol=1e-6)
    assert res.bracketed and not res.monotone
    assert res.value == pytest.approx(200.0, rel=1e-4)
    assert "not monotone" in res.describe_reach()


def test_hump_shaped_curve_reaches_a_target_above_its_sampled_points(monkeypatch, toy,
                                                                     small_numeric):
    # peak at level 5 (risk 0); the grid ends (0.1, 10) and every bracket step miss it
    _curve(monkeypatch, lambda lv: -abs(math.log(lv) - math.log(5.0)))
    res = bisect_risk(small_numeric, "toy_float", -0.1, risk="toy_risk", rtol=1e-6)
    assert res.bracketed and not res.monotone
    assert abs(res.risk + 0.1) <= 1e-6 * 0.1
    assert res.value == pytest.approx(5 * math.exp(-0.1), rel=1e-4) or \
        res.value == pytest.approx(5 * math.exp(0.1), rel=1e-4)
    assert res.evaluations <= 40


def test_hump_shaped_integer_curve(monkeypatch, toy, small_numeric):
    _curve(monkeypatch, lambda lv: -abs(lv - 40))
    res = bisect_risk(small_numeric, "toy_int", -2.0, risk="toy_risk")
    assert res.bracketed and not res.monotone and res.value in (38, 42)
    assert res.risk == -2.0


def test_unreachable_target_on_a_hump_reports_the_peak(monkeypatch, toy, small_numeric):
    _curve(monkeypatch, lambda lv: -abs(lv - 40))
    res = bisect_risk(small_numeric, "toy_int", 1.0, risk="toy_risk")
    assert not res.bracketed and not res.monotone
    assert res.reachable[1] == 0.0 and res.value == 40  # the refinement finds the peak
    assert res.evaluations <= 40
    assert "not monotone" in res.describe_reach()


def test_monotone_search_is_unchanged(toy, small_numeric):
    # a bracketed monotone target never evaluates the domain's ends
    res = bisect_risk(small_numeric, "toy_int", math.log1p(7.4), risk="toy_risk")
    assert res.monotone and {s.value for s in res.steps} >= {3, 10}
    assert 2 not in {s.value for s in res.steps}
    assert small_numeric.n not in {s.value for s in res.steps}


def test_unbounded_side_is_searched_when_the_curve_goes_the_other_way(monkeypatch, toy,
                                                                      small_numeric):
    # protection is declared to *decrease* with level (as Mondrian's t), level in (0, inf),
    # but the curve rises: the target is reached by stepping up the unbounded side
    def make(ds, *, seed, level, **_):
        return Release.perturbative(ds, ds.frame[ds.schema.numeric], method="toy",
                                    info={"level": level})
    monkeypatch.setitem(METHODS, "toy_open", MethodSpec(
        "toy_open", make, (Param("level", float, 1.0, low=0, low_inclusive=False,
                                 protection="decreasing", grid=(0.1, 10.0), scale="log"),),
        "toy"))
    res = bisect_risk(small_numeric, "toy_open", math.log1p(200.0), risk="toy_risk",
                      rtol=1e-6)
    assert res.bracketed and not res.monotone and res.domain == "(0, inf)"
    assert res.value == pytest.approx(200.0, rel=1e-4)
    down = [s.value for s in res.steps if s.phase == "bracket" and s.value < 0.1]
    assert len(down) == 2  # two steps away from the target end the predicted direction


def test_a_method_refusing_part_of_its_domain_is_limited(monkeypatch, small_numeric):
    """A method that refuses values beyond a data-dependent limit (Anatomy's ℓ above
    1 / the largest sensitive share) on an unbounded knob: the curve finds the limit,
    the search ends (no endless stepping outward), and the result says why."""
    def make(ds, *, seed, level):
        if level > 7:
            raise SdcevalError(f"toy: level={level} is impossible here; choose level <= 7")
        return Release.perturbative(ds, ds.frame[ds.schema.numeric], method="toy",
                                    info={"level": level})

    def flat(ds, rel):  # a risk the knob does not move (bucketization on identity)
        return Measurement("toy_flat", 0.5, direction="lower_is_better")

    monkeypatch.setitem(METHODS, "toy_limited", MethodSpec(
        "toy_limited", make, (Param("level", int, 4, low=2, protection="increasing",
                                    grid=(2, 12)),), "toy"))
    monkeypatch.setitem(MEASURES, "toy_flat", MeasureSpec(
        "toy_flat", flat, (), "toy", "risk", direction="lower_is_better"))
    res = bisect_risk(small_numeric, "toy_limited", 0.1, risk="toy_flat")
    assert not res.bracketed and res.value <= 7
    assert "limited to <= 7" in res.limit_note and "limited to <= 7" in res.describe_reach()
    assert res.params["level"] <= 7 and res.evaluations <= 40
