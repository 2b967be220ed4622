"""The memoized risk curve of one method's protection knob (`RiskCurve`), which the
bisection (`sdceval.compare.bisection`) and the joint search of a strategy's knobs
(`sdceval.compare.joint`) evaluate: one release and one risk per knob value (per step
of a step-valued knob), common random numbers over the repeats of the seed tree, the
method's feasibility limits found once, and the standard error of a risk estimated on
a sample of records (large tables), which sets how close to the target is close
enough."""
from __future__ import annotations

import math

import numpy as np

from sdceval.core.errors import SdcevalError
from sdceval.core.registry import Knob, MeasureSpec, MethodSpec, Param
from sdceval.core.rng import measure_params, method_seed


def midpoint(param: Param, a: float, b: float) -> float:
    """The value halfway between ``a`` and ``b`` on the parameter's scale (integers:
    the floor of the mean; log scale: the geometric mean)."""
    if param.type is int:
        return (int(a) + int(b)) // 2
    if param.scale == "log" and a > 0 and b > 0:
        return math.sqrt(a * b)
    return 0.5 * (a + b)



class RiskCurve:
    """Memoized α -> risk for one method, with common random numbers.  ``knob`` is the
    method's protection knob (`MethodSpec.tunable_for`): a parameter of the method, or
    the threshold of its first privacy model.

    Feasibility.  A method may refuse a value the registry's bounds allow, because of
    the data (Anatomy's ℓ above 1 / the largest sensitive share, a k-anonymity beyond
    what a sensitive attribute allows).  Refusals are monotone in the knob (more
    protection is refused first), so at the first refusal the curve finds the boundary
    between it and the nearest value it could evaluate (halving: integers exactly,
    reals to 1e-3 relative) and from then on evaluates every value beyond the boundary
    at the boundary (`limits`; `limit_note` says why).  Bisection then sees a flat curve
    there: a target beyond it is reported unreachable, with the reason."""

    def __init__(self, dataset, method: MethodSpec, knob: Knob, risk: MeasureSpec,
                 risk_params: dict | None, fixed: dict, seed: int, repeats: int):
        self.dataset, self.method, self.risk = dataset, method, risk
        self.knob, self.param = knob, knob.param
        self.risk_params = dict(risk_params or {})
        self.fixed, self.seed, self.repeats = dict(fixed), seed, repeats
        self.cache: dict[float, float] = {}
        #: value -> standard error of its risk when the risk is estimated on a sample
        #: of records (large tables: `sdceval.measures._nearest`); absent when exact
        self.noise: dict[float, float] = {}
        #: (lowest, highest) value the method accepts on this data (None: unlimited)
        self.limits: list = [None, None]
        self.limit_note = ""
        #: called with ``(value, risk)`` after each new evaluation (progress)
        self.on_evaluation = None
        #: step-valued knob: the step (`key`) -> the value evaluated in it
        self._by_step: dict = {}

    def _typed(self, value):
        return int(value) if self.param.type is int else float(value)

    def key(self, value):
        """``value`` in the parameter's type; for a step-valued knob (`Param.step`) the
        step that holds it (its lowest value), which names the release it gives."""
        value = self._typed(value)
        if self.param.step is None:
            return value
        return float(self.param.step_of(value, self.dataset.n, self.fixed)[0])

    def lookup(self, value):
        """The evaluated value whose release ``value`` gives (itself, or the value
        evaluated in its step), or None."""
        if self.param.step is None:
            value = self._typed(value)
            return value if value in self.cache else None
        return self._by_step.get(self.key(value))

    def same(self, u, v) -> bool:
        """``u`` and ``v`` give one release (inside the limits found so far)."""
        return self.key(self.clamped(u)) == self.key(self.clamped(v))

    def clamped(self, value):
        """``value`` in the parameter's type, moved inside the limits found so far."""
        value = self._typed(value)
        lo, hi = self.limits
        if lo is not None and value < lo:
            return lo
        if hi is not None and value > hi:
            return hi
        return value

    def _store(self, value, risk: float) -> None:
        self.cache[value] = risk
        if self.param.step is not None:
            self._by_step[self.key(value)] = value
        if self.on_evaluation is not None:
            self.on_evaluation(value, risk)

    def _risk(self, value) -> float:
        # the one evaluation of the risk: ``self.risk`` is a measure or the worse of
        # several (`sdceval.compare.composite.CompositeRisk`, the max of their values)
        # the repeats of the seed tree (sdceval.core.rng): the method's seed and the
        # risk measure's own (its linkage sample) at each; one repeat for a
        # deterministic method
        risks, errors = [], []
        for r in range(self.repeats if self.method.random else 1):
            rel = self.method.apply(self.dataset, self.knob.set(self.fixed, value),
                                    seed=method_seed(self.seed, r))
            m = self.risk.evaluate(self.dataset, rel, measure_params(
                self.risk, self.risk_params, self.seed, r))
            risks.append(m.value)
            sample = m.details.get("sample") if isinstance(m.details, dict) else None
            if sample and sample.get("standard_error") is not None:
                errors.append(float(sample["standard_error"]))
        if errors:   # the mean's standard error over the repeats
            self.noise[self._typed(value)] = float(np.sqrt(np.sum(np.square(errors)))
                                                   / len(risks))
        return float(np.mean(risks))

    def close_enough(self, value, target: float, rtol: float, tolerance: float) -> bool:
        """The risk at ``value`` (evaluated) is within ``rtol`` of the target, or, when
        it is estimated on a sample of records, within its standard error but no
        further than half the match ``tolerance``: refining further would chase the
        sample's noise, not the curve (module notes)."""
        known = self.lookup(self.clamped(value))
        gap = abs(self.cache[known] - target)
        noise = min(self.noise.get(known, 0.0), tolerance * abs(target) / 2)
        return gap <= max(rtol * abs(target), noise)

    def __call__(self, value) -> float:
        value = self.clamped(value)
        known = self.lookup(value)  # this value, or another of its step, evaluated
        if known is not None:
            return self.cache[known]
        try:
            self._store(value, self._risk(value))
        except SdcevalError as exc:  # refused: the nearest value the method accepts
            value = self._limit(value, exc)
        return self.cache[value]

    def _limit(self, bad, exc: SdcevalError):
        """The feasibility boundary between ``bad`` (refused) and the nearest value
        evaluated (or, before any, the grid's and the default's), which becomes a
        limit; returns it (its risk is in the cache)."""
        tried = sorted(self.cache)
        below, above = [v for v in tried if v < bad], [v for v in tried if v > bad]
        if not below and not above:
            for v in sorted({self._typed(g) for g in (self.param.grid or ())}
                            | ({self._typed(self.param.default)}
                               if self.param.default is not None else set()),
                            key=lambda g: abs(g - bad)):
                if v == bad:
                    continue
                try:
                    self._store(v, self._risk(v))
                except SdcevalError:
                    continue
                (below if v < bad else above).append(v)
                break
            else:
                raise SdcevalError(f"{self.method.name}: no value of {self.param.name} it "
                                   f"accepts on this data set ({exc})") from None
        good = max(below) if below else min(above)
        while True:
            if self.param.type is int:
                if abs(bad - good) <= 1:
                    break
                mid = (good + bad) // 2
            else:
                if abs(bad - good) <= 1e-3 * max(abs(good), abs(bad), 1e-12):
                    break
                mid = midpoint(self.param, good, bad)
                if self.param.step is not None and self.key(mid) in (self.key(good),
                                                                     self.key(bad)):
                    break  # adjacent steps of a step-valued knob
            try:
                self._store(mid, self._risk(mid))
                good = mid
            except SdcevalError:
                bad = mid
        self.limits[0 if good > bad else 1] = good
        self.limit_note = (f"{self.param.name} is limited to "
                           f"{'>=' if good > bad else '<='} {good:g} on this data set: {exc}")
        return good


__all__ = ["RiskCurve", "midpoint"]
