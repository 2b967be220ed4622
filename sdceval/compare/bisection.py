"""Find the parameter at which a method reaches a target risk (Domingo-Ferrer et al. §3).

The methodology compares methods *at equal risk*: for each method M with protection
parameter α, find α* such that R(X, M_α*(X)) = r, then compare utilities.  Risk is
treated as a monotone function of α (protection grows in the direction the registry
gives); we bracket the target and bisect.

Decisions (SPEC §5):
- The initial bracket is the parameter's default grid [min, max]; when the target is
  outside it, the bracket grows outward (×4 on log-scale parameters, span doubling on
  linear ones) up to the registry bounds.
- Integer parameters (MDAV's k) search integers; the result is the evaluated integer
  whose risk is closest to the target.
- Stochastic methods use a fixed seed for every evaluation (common random numbers), so
  the risk curve is a deterministic function of α; ``repeats > 1`` averages the risk over
  seeds ``seed, seed+1, ...``.
- A target outside the reachable range is reported (``bracketed=False``, with the range
  reached) rather than silently matched.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from sdceval.core.errors import SdcevalError
from sdceval.core.registry import MeasureSpec, MethodSpec, Param
from sdceval.catalog import get_measure, get_method


@dataclass
class Step:
    value: float
    risk: float
    phase: str  # "bracket" | "bisect"

    def to_dict(self):
        return {"value": self.value, "risk": self.risk, "phase": self.phase}


@dataclass
class BisectionResult:
    """Outcome of `bisect_risk` for one method."""

    method: str
    parameter: str
    value: float
    risk: float
    target: float
    evaluations: int
    bracketed: bool
    reachable: tuple[float, float]
    params: dict
    steps: list[Step] = field(default_factory=list)

    @property
    def relative_gap(self) -> float:
        return abs(self.risk - self.target) / max(abs(self.target), 1e-300)

    def to_dict(self) -> dict[str, Any]:
        return {"method": self.method, "parameter": self.parameter, "value": self.value,
                "risk": self.risk, "target": self.target, "evaluations": self.evaluations,
                "bracketed": self.bracketed, "reachable": list(self.reachable),
                "relative_gap": self.relative_gap, "params": self.params,
                "steps": [s.to_dict() for s in self.steps]}


class RiskCurve:
    """Memoized α -> risk for one method, with common random numbers."""

    def __init__(self, dataset, method: MethodSpec, param: Param, risk: MeasureSpec,
                 risk_params: dict | None, fixed: dict, seed: int, repeats: int):
        self.dataset, self.method, self.param, self.risk = dataset, method, param, risk
        self.risk_params = dict(risk_params or {})
        self.fixed, self.seed, self.repeats = dict(fixed), seed, repeats
        self.cache: dict[float, float] = {}

    def __call__(self, value) -> float:
        value = int(value) if self.param.type is int else float(value)
        if value not in self.cache:
            seeds = [self.seed + r for r in range(self.repeats)] if self.method.random \
                else [self.seed]
            risks = []
            for s in seeds:
                rel = self.method.apply(self.dataset, {**self.fixed, self.param.name: value},
                                        seed=s)
                risks.append(self.risk.evaluate(self.dataset, rel, self.risk_params).value)
            self.cache[value] = float(np.mean(risks))
        return self.cache[value]


def _clip(param: Param, value: float, n: int) -> float:
    lo, hi = param.bounds(n)
    eps = 1e-12
    if lo is not None:
        value = max(value, lo if param.low_inclusive else lo * (1 + 1e-9) + eps)
    if hi is not None:
        value = min(value, hi if param.high_inclusive else hi * (1 - 1e-9))
    if param.type is int:
        value = int(round(value))
    return value


def _mid(param: Param, a: float, b: float) -> float:
    if param.type is int:
        return (int(a) + int(b)) // 2
    if param.scale == "log" and a > 0 and b > 0:
        return math.sqrt(a * b)
    return 0.5 * (a + b)


def _expand(param: Param, value: float, outward: int, anchor: float) -> float:
    """One outward step from ``value`` (``outward`` = +1 up, -1 down)."""
    if param.scale == "log" and value > 0:
        return value * 4.0 if outward > 0 else value / 4.0
    span = max(abs(value - anchor), 1.0 if param.type is int else abs(value) or 1.0)
    return value + outward * span


def bisect_risk(dataset, method: str, target: float, *, risk: str = "linkage_risk",
                risk_params: dict | None = None, fixed_params: dict | None = None,
                seed: int = 0, repeats: int = 1, rtol: float = 1e-3,
                max_evaluations: int = 40, curve: RiskCurve | None = None) -> BisectionResult:
    """Search the protection parameter of ``method`` for risk ``target``.

    Parameters
    ----------
    dataset : Dataset
    method : str
        Registered method name; its tuned parameter is ``tunable_for(fixed_params)``.
    target : float
        Target value of the risk measure.
    risk, risk_params : the risk measure and its parameters.
    fixed_params : other method parameters, held fixed.
    seed, repeats : common random numbers (see module notes).
    rtol : stop when ``|R - target| <= rtol * |target|``.
    max_evaluations : budget of distinct parameter values evaluated.

    Returns
    -------
    BisectionResult
    """
    spec = get_method(method)
    rspec = get_measure(risk)
    fixed = dict(fixed_params or {})
    param = spec.tunable_for(spec.resolve(fixed, dataset.n))
    if param.name in fixed:
        raise SdcevalError(f"parameter {param.name!r} of {method!r} is the one bisection "
                           "searches; do not fix it")
    if repeats < 1:
        raise SdcevalError(f"repeats must be >= 1, got {repeats}")
    f = curve or RiskCurve(dataset, spec, param, rspec, risk_params, fixed, seed, repeats)
    steps: list[Step] = []

    def ev(v, phase):
        r = f(v)
        if not steps or steps[-1].value != v or steps[-1].phase != phase:
            steps.append(Step(float(v), r, phase))
        return r

    grid = sorted(param.grid) if param.grid else [param.default, param.default]
    a, b = _clip(param, grid[0], dataset.n), _clip(param, grid[-1], dataset.n)
    g_lo, g_hi = a, b  # expansion doubles the distance from the far end of the grid
    ra, rb = ev(a, "bracket"), ev(b, "bracket")
    # grow the bracket outward until the target lies between ra and rb.  The direction
    # is the registry's (protection direction x measure direction), fixed once: risk
    # curves are only roughly monotone (MDAV at large k is not), and re-deciding the
    # direction from noisy values can oscillate forever.
    increasing = (param.protection == "increasing") != rspec.larger_is_worse
    for _ in range(max_evaluations):
        if min(ra, rb) <= target <= max(ra, rb) or len(f.cache) >= max_evaluations:
            break
        if (target > max(ra, rb)) == increasing:
            nb = _clip(param, _expand(param, b, +1, g_lo), dataset.n)
            if nb == b:
                break
            a, ra, b = b, rb, nb
            rb = ev(b, "bracket")
        else:
            na = _clip(param, _expand(param, a, -1, g_hi), dataset.n)
            if na == a:
                break
            b, rb, a = a, ra, na
            ra = ev(a, "bracket")
    bracketed = min(ra, rb) <= target <= max(ra, rb)
    if bracketed:
        for _ in range(max_evaluations):
            if len(f.cache) >= max_evaluations:
                break
            if min(abs(ra - target), abs(rb - target)) <= rtol * abs(target):
                break
            m = _mid(param, a, b)
            if param.type is int and m in (a, b):
                break
            if param.type is float and abs(b - a) <= 1e-9 * max(abs(a), abs(b), 1e-12):
                break
            rm = ev(m, "bisect")
            if (rm - target) * (ra - target) <= 0 and rm != target:
                b, rb = m, rm
            else:
                a, ra = m, rm
            if rm == target:
                a, ra = m, rm
                break
    # report the evaluated point closest to the target
    best = min(f.cache.items(), key=lambda kv: (abs(kv[1] - target), kv[0]))
    values = list(f.cache.values())
    return BisectionResult(
        method=method, parameter=param.name, value=best[0], risk=best[1], target=target,
        evaluations=len(f.cache), bracketed=bracketed,
        reachable=(float(min(values)), float(max(values))),
        params={**fixed, param.name: best[0]}, steps=steps)
