"""What bisection spends on a large table (`sdceval.compare.bisection`, module
notes): it stops at a sampled risk's own standard error (below it, refining chases the
sample's noise, not the curve), at a jump between two plateaus, and, for a whole-file
strategy, after the most protective end when even that is short of the target."""
from __future__ import annotations

import numpy as np
import pandas as pd

import sdceval
from sdceval.compare.bisection import RiskCurve, bisect_risk


def _data():
    rng = np.random.default_rng(0)
    n = 400
    return sdceval.as_dataset(pd.DataFrame({c: rng.normal(size=n).round(4) for c in "xyz"}),
                              numeric=["x", "y", "z"])


def test_sampled_risk_stops_within_its_standard_error(monkeypatch):
    ds = _data()
    kw = dict(risk="reidentification", risk_params={"sample": 200}, rtol=1e-6,
              tolerance=0.05)
    res = bisect_risk(ds, "noise", 0.25, **kw)
    curve_noise = [s for s in res.steps]
    # stopped within the estimate's standard error, capped at half the tolerance (so
    # that the point is matched), not within rtol
    assert res.matched and 1e-6 * 0.25 < abs(res.risk - 0.25) <= 0.025 * 0.25
    # the same search told the risk is exact refines further: more evaluations
    monkeypatch.setattr(RiskCurve, "close_enough",
                        lambda self, v, t, rtol, tol: abs(self.cache[self.lookup(
                            self.clamped(v))] - t) <= rtol * abs(t))
    exact = bisect_risk(ds, "noise", 0.25, **kw)
    assert exact.evaluations > res.evaluations
    assert len(curve_noise) < len(exact.steps)


def test_the_noise_is_the_mean_standard_error_over_repeats():
    ds = _data()
    from sdceval.catalog import get_measure, get_method
    from sdceval.compare.bisection import tuning
    spec = get_method("noise")
    knob, fixed = tuning(spec, None)
    one = RiskCurve(ds, spec, knob, get_measure("reidentification"), {"sample": 60},
                    fixed, 0, 1)
    one(0.5)
    three = RiskCurve(ds, spec, knob, get_measure("reidentification"), {"sample": 60},
                      fixed, 0, 3)
    three(0.5)
    assert 0 < three.noise[0.5] < one.noise[0.5]
    exact = RiskCurve(ds, spec, knob, get_measure("reidentification"), {"sample": 0},
                      fixed, 0, 1)
    exact(0.5)
    assert exact.noise == {}


def test_a_jump_between_two_plateaus_ends_the_bisection(monkeypatch):
    """MDAV at k near n/2: one or two groups, two risks and a jump between them;
    bisection stops after `JUMP` midpoints on the plateaus instead of locating the jump
    to the integer."""
    from sdceval.compare import bisection
    ds = _data()
    calls = []

    def two_plateaus(self, value):
        calls.append(value)
        return 0.8 if value < 0.4321 else 0.1

    monkeypatch.setattr(bisection.RiskCurve, "_risk", two_plateaus)
    res = bisect_risk(ds, "noise", 0.4, risk="reidentification", tolerance=0.05)
    assert not res.matched and res.risk in (0.8, 0.1)
    on_plateaus = [s for s in res.steps if s.phase == "bisect"]
    assert len(on_plateaus) == bisection.JUMP


def test_the_most_protective_end_first(monkeypatch):
    """A whole-file strategy's search (``protective_end``): when the grid needs more
    protection, the most protective end is evaluated at once; short of the target
    there, nothing else is evaluated; else it brackets the target with the grid."""
    from sdceval.compare import bisection
    ds = _data()
    monkeypatch.setattr(bisection.RiskCurve, "_risk", lambda self, v: 1.0)
    res = bisect_risk(ds, "noise", 0.2, risk="reidentification", protective_end=True)
    assert not res.bracketed and not res.matched and res.evaluations == 3
    assert [s.phase for s in res.steps] == ["bracket", "bracket", "domain"]
    # without it, the search expands and looks at both sides before giving up
    assert bisect_risk(ds, "noise", 0.2, risk="reidentification").evaluations > 3
    # reachable: the end brackets the target, bisection inside, no expansion steps
    monkeypatch.setattr(bisection.RiskCurve, "_risk",
                        lambda self, v: 1.0 / (1.0 + 10.0 * float(v)))
    res = bisect_risk(ds, "noise", 0.02, risk="reidentification", protective_end=True)
    assert res.matched and "bracket" not in [s.phase for s in res.steps[2:]]


def test_a_wide_bracket_is_halved_on_the_log_scale(monkeypatch):
    """From the grid to the most protective end (k from 3 to n): geometric midpoints
    while the bracket spans more than `WIDE`, so the search reaches the target's octave
    in a few steps."""
    from sdceval.compare import bisection
    rng = np.random.default_rng(1)
    ds = sdceval.as_dataset(pd.DataFrame({c: rng.normal(size=200_000).round(3)
                                          for c in "xy"}), numeric=["x", "y"])
    monkeypatch.setattr(bisection.RiskCurve, "_risk",
                        lambda self, v: 1.0 / float(v) ** 0.5)
    target = 1.0 / 700 ** 0.5   # k = 700, far above MDAV's grid
    wide = bisect_risk(ds, "mdav", target, risk="reidentification", protective_end=True)
    assert wide.matched and abs(wide.value - 700) <= 40
    steps = [s.value for s in wide.steps if s.phase == "bisect"]
    assert len(steps) <= 10
    # the first midpoints are geometric: between the grid's top and n
    top = max(s.value for s in wide.steps if s.phase == "bracket")
    assert abs(steps[0] - np.sqrt(top * ds.n)) <= 1


def test_no_step_is_measured_for_a_target_out_of_reach(monkeypatch):
    """A point farther from the target than any step may cover (`MAX_STEP`): its
    neighbouring steps are not evaluated (two releases fewer)."""
    from sdceval.compare import bisection
    ds = _data()
    monkeypatch.setattr(bisection.RiskCurve, "_risk", lambda self, v: 1.0)
    res = bisect_risk(ds, "mdav", 0.2, risk="reidentification", protective_end=True)
    assert "step" not in [s.phase for s in res.steps] and res.evaluations == 3
