"""Find the parameter at which a method reaches a target risk (Domingo-Ferrer et al. §3).

The methodology compares methods *at equal risk*: for each method M with protection
parameter α, find α* such that R(X, M_α*(X)) = r, then compare utilities.  Risk is
expected to be a monotone function of α (protection grows in the direction the registry
gives); we bracket the target and bisect.

Decisions (SPEC §5):
- The initial bracket is the parameter's default grid [min, max]; when the target is
  outside it, the bracket grows outward in the direction the registry predicts (×4 on
  log-scale parameters, span doubling on linear ones) up to the registry bounds.  It
  stops early when two steps in a row move the risk away from the target (the curve
  does not go the predicted way).
- When that finds no bracket, both sides of the whole domain are searched before the
  target is declared unreachable: the domain's finite end points are evaluated (k = 2
  and k = n; the smallest value above an open bound such as noise γ > 0, i.e. γ = 1e-12),
  an unbounded side is expanded stepwise, and any two neighbouring evaluated values
  whose risks straddle the target form the bracket (the least protective such pair: the
  parameter a data controller would publish).  If none does and the curve is not
  monotone, its interior extremum (the evaluated point closest to the target, between
  two others) is refined by halving the wider gap next to it, which finds a target
  just above a hump or below a dip.  A curve that is monotone as predicted never gets
  here, so these steps change nothing when the first bracket is found.
- Integer parameters (MDAV's k) search integers; the result is the evaluated integer
  whose risk is closest to the target.
- Step-valued knobs (`Param.step`: rank swapping's p acts through the window
  floor(p·n)) are searched by steps: the curve makes one release per step (a value in
  a step already evaluated reads its risk, `RiskCurve.key`), and bisection stops as
  soon as two adjacent steps straddle the target, as it does for integers, instead of
  halving a flat step until the evaluation budget runs out (40 evaluations on a
  300-record table before, 10 now).  The search path and the value reported (the
  first value evaluated in its step) are those of a continuous search.
- Matched (issue 28 item 3): the point found counts as matched only within a
  tolerance of the target, never at a knob value that gives no protection
  (`sdceval.compare.tolerance`).
- Stochastic methods use a fixed seed for every evaluation (common random numbers), so
  the risk curve is a deterministic function of α; ``repeats > 1`` averages the risk over
  the repeats of the seed tree rooted at ``seed`` (`sdceval.core.rng`: method seeds
  ``seed, seed+1, ...``, and the risk measure's own seed moved with them).
- A target outside the reachable range is reported (``bracketed=False``) rather than
  silently matched, with the range of the risks evaluated, which then covers the
  domain's finite ends, and whether the evaluated curve is monotone in the predicted
  direction (`BisectionResult.describe_reach`).
- Precision: bisection stops at ``rtol`` of the target, or sooner when the risk is
  estimated on a sample of records (large tables) and the point is within the
  estimate's own standard error (capped at half the match tolerance, so that a point
  stopped at is matched): below it the steps chase the sample's noise, not the
  curve (on 1 000 000 records, rank swapping spent 5 of its 30 evaluations refining a
  gap of 0.6 % when the standard error was 1 %).
- The most protective end first (``protective_end``, whole-file strategies: each of
  their evaluations makes and measures a whole file): when the grid's ends need more
  protection, the knob's most protective end (k = n, γ's bound) is evaluated at once;
  if even that release is riskier than the target beyond the tolerance, the target is
  unreachable and nothing else is evaluated (bucketization over every key re-identifies
  everyone at any k: 3 evaluations instead of 9 on 1 000 000 records), else it brackets
  the target with the grid, and an integer knob's bracket wider than a factor `WIDE`
  is halved on the log scale (k from 50 to 1 000 000: 4 geometric steps reach the
  target's octave where linear halving takes 12; rank swapping's p, a real knob acting
  in steps, took 6 more evaluations that way, so real knobs are halved as before).  This assumes the risk is lowest at the most protective
  end, as the joint search of a strategy's grid does (`sdceval.compare.joint`).
- A jump: when `JUMP` midpoints in a row give exactly the risk of one end of the
  bracket, the curve between the ends is two plateaus and a jump (MDAV at k near n/2,
  where the release has one or two groups), and bisection stops: halving further only
  locates the jump (19 more evaluations on 1 000 000 records), it finds no risk nearer
  the target.
- ``max_evaluations`` bounds the distinct parameter values evaluated; the domain's
  finite ends are kept out of the bracket search's share so that they are always
  evaluated before a target is declared unreachable.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from sdceval.core.errors import SdcevalError
from sdceval.core.registry import Knob, MethodSpec, Param
from sdceval.catalog import get_method
from sdceval.compare.composite import risk_spec
from sdceval.compare.risk_curve import RiskCurve, midpoint as _mid
from sdceval.compare.tolerance import (MAX_STEP, check_tolerance, tolerance_of,
                                      unprotected_value)


#: midpoints in a row on a plateau (their risk exactly an end's) that end the bisection
JUMP = 3
#: a bracket wider than this ratio is halved on the log scale (``protective_end``)
WIDE = 16


@dataclass
class Step:
    value: float
    risk: float
    # "bracket" | "domain" (an end of the domain) | "refine" | "bisect" | "step" (a
    # neighbour of the point found, measuring the knob's smallest step)
    phase: str

    def to_dict(self):
        return {"value": self.value, "risk": self.risk, "phase": self.phase}


@dataclass
class BisectionResult:
    """Outcome of `bisect_risk` for one method.

    ``reachable`` is the (min, max) of the risks evaluated; when the target was not
    bracketed they include the domain's finite ends.  ``monotone`` says whether the
    risks evaluated, in parameter order, move in the direction the registry predicts;
    ``domain`` is the parameter's domain on this data set (``"[2, 300]"``)."""

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
    monotone: bool = True
    domain: str = ""

    #: why the method refused part of its domain on this data set (`RiskCurve.limits`)
    limit_note: str = ""
    #: the tolerance the risk found is held to (module notes): its size on the risk's
    #: scale, which rule gave it (``"relative"`` or ``"step"``), the relative share
    #: asked, and the knob's smallest step at the point found (NaN: not measured)
    tolerance_size: float = float("nan")
    tolerance_rule: str = "relative"
    tolerance: float = 0.05
    step_risk: float = float("nan")
    #: the point found gives no protection (`Param.unprotected`) and the target is a
    #: protective one: not matched, whatever its risk
    unprotected: bool = False
    #: within the tolerance and not an unprotected release: the method is ranked
    matched: bool = True
    #: a strategy with several knobs (`sdceval.compare.ranking.joint_search`): every
    #: grid configuration tried, ``{"settings", "value", "risk", "matched",
    #: "utility", "chosen"}``; empty for one knob
    grid: list = field(default_factory=list)

    @property
    def relative_gap(self) -> float:
        return abs(self.risk - self.target) / max(abs(self.target), 1e-300)

    def describe_tolerance(self) -> str:
        """``"±5 % of the target (±0.00835)"`` or ``"one step of k (±0.0123), larger
        than ±5 % of the target"``: the tolerance applied, for the output."""
        rel = f"±{100 * self.tolerance:g} % of the target"
        if self.tolerance_rule == "step":
            capped = (f", capped at ±{100 * MAX_STEP:g} % of the target"
                      if self.step_risk > self.tolerance_size else "")
            return (f"one step of {self.parameter} (±{self.tolerance_size:.3g}{capped}), "
                    f"larger than {rel}")
        return f"{rel} (±{self.tolerance_size:.3g})"

    def nearest_note(self) -> str:
        """``"nearest reachable: 0.056 (k=5), 66.5 % from the target, outside the
        tolerance ±5 % of the target (±0.00835)"``: why an unmatched point is not
        ranked."""
        if self.unprotected:
            why = (f"{self.parameter}={self.value:g} gives no protection at all (the data "
                   "as they are), which never matches a protective target")
        else:
            why = (f"{100 * self.relative_gap:.3g} % from the target, outside the "
                   f"tolerance {self.describe_tolerance()}")
        return (f"nearest reachable: {self.risk:.4g} ({self.parameter}={self.value:g}), "
                f"{why}")

    def describe_reach(self) -> str:
        """``"reached 0.419..0.541 with k in [2, 300]"``, plus a note when the curve is
        not monotone; for messages about an unreached target."""
        where = f" with {self.parameter} in {self.domain}" if self.domain else ""
        text = f"reached {self.reachable[0]:.4g}..{self.reachable[1]:.4g}{where}"
        if not self.monotone:
            text += f", a risk curve not monotone in {self.parameter} (both sides searched)"
        if self.limit_note:
            text += f"; {self.limit_note}"
        return text

    def to_dict(self) -> dict[str, Any]:
        return {"method": self.method, "parameter": self.parameter, "value": self.value,
                "risk": self.risk, "target": self.target, "evaluations": self.evaluations,
                "bracketed": self.bracketed, "reachable": list(self.reachable),
                "monotone": self.monotone, "domain": self.domain,
                **({"limit_note": self.limit_note} if self.limit_note else {}),
                "relative_gap": self.relative_gap, "params": self.params,
                "matched": self.matched, "tolerance": self.tolerance,
                "tolerance_size": self.tolerance_size, "tolerance_rule": self.tolerance_rule,
                "step_risk": None if math.isnan(self.step_risk) else self.step_risk,
                "unprotected": self.unprotected,
                **({"grid": self.grid} if self.grid else {}),
                "steps": [s.to_dict() for s in self.steps]}


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


def _expand(param: Param, value: float, outward: int, anchor: float) -> float:
    """One outward step from ``value`` (``outward`` = +1 up, -1 down)."""
    if param.scale == "log" and value > 0:
        return value * 4.0 if outward > 0 else value / 4.0
    span = max(abs(value - anchor), 1.0 if param.type is int else abs(value) or 1.0)
    return value + outward * span


def domain_ends(param: Param, n: int) -> tuple[float | None, float | None]:
    """The lowest and highest values the search may evaluate (``_clip`` of the bounds:
    just inside an open bound), ``None`` on an unbounded side."""
    lo, hi = param.bounds(n)
    return (None if lo is None else _clip(param, lo, n),
            None if hi is None else _clip(param, hi, n))


def _domain_text(param: Param, n: int) -> str:
    lo, hi = param.bounds(n)
    return (("[" if param.low_inclusive and lo is not None else "(")
            + f"{'-inf' if lo is None else f'{lo:g}'}, {'inf' if hi is None else f'{hi:g}'}"
            + ("]" if param.high_inclusive and hi is not None else ")"))


def _splittable(param: Param, a: float, b: float) -> bool:
    """Whether ``_mid(a, b)`` is a new value worth evaluating (integers: a gap of 2 or
    more; floats: wider than 1e-4 relative, the resolution of the extremum search)."""
    if param.type is int:
        return abs(int(b) - int(a)) >= 2
    return abs(b - a) > 1e-4 * max(abs(a), abs(b), 1e-12)


def _gap(param: Param, a: float, b: float) -> float:
    """Width of ``[a, b]`` on the parameter's search scale."""
    if param.scale == "log" and a > 0 and b > 0:
        return abs(math.log(b / a))
    return abs(b - a)


def _is_monotone(points: list[tuple[float, float]], increasing: bool) -> bool:
    risks = np.array([r for _, r in sorted(points)])
    d = np.diff(risks)
    return bool((d >= 0).all() if increasing else (d <= 0).all())


def _straddling(points: list[tuple[float, float]], target: float, least_first: bool
                ) -> tuple[tuple[float, float], tuple[float, float]] | None:
    """Two neighbouring evaluated points (in parameter order) whose risks straddle the
    target; of several, the least protective (lowest values when ``least_first``)."""
    pts = sorted(points)
    pairs = [(p, q) for p, q in zip(pts, pts[1:])
             if min(p[1], q[1]) <= target <= max(p[1], q[1])]
    if not pairs:
        return None
    return pairs[0] if least_first else pairs[-1]


def tuning(spec: MethodSpec, fixed_params: dict | None) -> tuple[Knob, dict]:
    """The knob bisection tunes and the parameters held fixed around it.  A plain
    parameter must not be fixed; a model's threshold inside ``models`` may be given
    (it is where the search starts replacing it), and the models are resolved to their
    canonical texts (shorthands such as ``model="l"`` folded in) so that the knob can
    set the threshold."""
    fixed = dict(fixed_params or {})
    knob = spec.tunable_for(fixed)
    if knob.carrier != knob.param.name:
        return knob, spec.resolve(fixed)
    if knob.param.name in fixed:
        raise SdcevalError(f"parameter {knob.param.name!r} of {spec.name!r} is the one "
                           "bisection searches; do not fix it")
    return knob, fixed


def bisect_risk(dataset, method: str, target: float, *, risk: str = "linkage_risk",
                risk_params: dict | None = None, fixed_params: dict | None = None,
                seed: int = 0, repeats: int = 1, rtol: float = 1e-3,
                max_evaluations: int = 40, tolerance: float = 0.05,
                curve: RiskCurve | None = None, protective_end: bool = False
                ) -> BisectionResult:
    """Search the protection parameter of ``method`` for risk ``target``.

    Parameters
    ----------
    dataset : Dataset
    method : str
        Registered method name; its tuned knob is ``tunable_for(fixed_params)``: a
        parameter of the method (MDAV's k, noise's γ) or, for a method that enforces
        privacy models, the threshold of the first model in ``models`` as the model
        declares it (bounds, grid, scale, protection direction), so any registered
        model — one defined outside sdceval too — is matched on its threshold.
    target : float
        Target value of the risk measure.
    risk, risk_params : the risk measure and its parameters.
    fixed_params : other method parameters, held fixed.
    seed, repeats : common random numbers (see module notes).
    rtol : stop when ``|R - target| <= rtol * |target|``.
    max_evaluations : budget of distinct parameter values evaluated (module notes).
    tolerance : relative tolerance of a match (`sdceval.compare.tolerance`): the point
        found is matched when its risk is within ``tolerance * |target|`` of the
        target, or within the knob's smallest step there if that is larger.
    protective_end : when the grid's ends need more protection, evaluate the knob's
        most protective end at once (module notes) instead of expanding toward it.

    Returns
    -------
    BisectionResult
    """
    spec = get_method(method)
    rspec = risk_spec(risk)  # a registered measure or max(a,b) (composite.py)
    knob, fixed = tuning(spec, fixed_params)
    param = knob.param
    if repeats < 1:
        raise SdcevalError(f"repeats must be >= 1, got {repeats}")
    check_tolerance(tolerance)
    n = dataset.n
    f = curve or RiskCurve(dataset, spec, knob, rspec, risk_params, fixed, seed, repeats)
    steps: list[Step] = []

    def ev(v, phase):
        r = f(v)
        if not steps or steps[-1].value != v or steps[-1].phase != phase:
            steps.append(Step(float(v), r, phase))
        return r

    def spent(reserve=0):
        return len(f.cache) >= max_evaluations - reserve

    grid = sorted(param.grid) if param.grid else [param.default, param.default]
    a, b = _clip(param, grid[0], n), _clip(param, grid[-1], n)
    # a step-valued knob keeps its values here (the path of a continuous search); the
    # curve makes one release per step and `same` compares steps (`RiskCurve.key`)
    same = f.same if param.step is not None else (lambda u, v: u == v)
    ends = [e for e in domain_ends(param, n) if e is not None]
    # the domain's finite ends are evaluated before a target is declared unreachable:
    # keep budget for them
    reserve = len({e for e in ends if (int(e) if param.type is int else float(e))
                   not in f.cache and e not in (a, b)})
    g_lo, g_hi = a, b  # expansion doubles the distance from the far end of the grid
    ra, rb = ev(a, "bracket"), ev(b, "bracket")
    # grow the bracket outward until the target lies between ra and rb.  The direction
    # is the registry's (protection direction x measure direction), fixed once: risk
    # curves are only roughly monotone (MDAV at large k is not), and re-deciding the
    # direction from noisy values can oscillate forever.  Two steps in a row away from
    # the target end it: the curve does not go the predicted way (both sides are
    # searched below).
    increasing = (param.protection == "increasing") != rspec.larger_is_worse
    away = 0
    expanded = set()  # directions the bracket grew in (+1 up, -1 down)
    short = False     # the most protective release is still short of the target
    if not min(ra, rb) <= target <= max(ra, rb):
        riskier = (target < min(ra, rb)) if rspec.larger_is_worse else \
            (target > max(ra, rb))
        end = domain_ends(param, n)[1 if param.protection == "increasing" else 0]
        if protective_end and riskier and end is not None:
            held = f.lookup(f.clamped(end))   # the joint search may have evaluated it
            re_ = f.cache[held] if held is not None else ev(end, "domain")
            gap = (re_ - target) if rspec.larger_is_worse else (target - re_)
            short = gap > tolerance * abs(target)
        # values the curve already holds (the most protective end, evaluated here or
        # by a strategy's joint search) may bracket the target: no expansion needed
        known = _straddling(list(f.cache.items()), target,
                            param.protection != "decreasing")
        if known is not None:
            (a, ra), (b, rb) = known
    for _ in range(max_evaluations):
        if min(ra, rb) <= target <= max(ra, rb) or spent(reserve) or away >= 2 or short:
            break
        if (target > max(ra, rb)) == increasing:
            nb = _clip(param, _expand(param, b, +1, g_lo), n)
            if same(nb, b):
                break
            a, ra, b = b, rb, nb
            rb = ev(b, "bracket")
            expanded.add(+1)
            away = away + 1 if abs(rb - target) > abs(ra - target) else 0
        else:
            na = _clip(param, _expand(param, a, -1, g_hi), n)
            if same(na, a):
                break
            b, rb, a = a, ra, na
            ra = ev(a, "bracket")
            expanded.add(-1)
            away = away + 1 if abs(ra - target) > abs(rb - target) else 0
    bracketed = min(ra, rb) <= target <= max(ra, rb)
    if not bracketed and not short:
        found = _search_both_sides(param, n, target, ends, increasing, f, ev, spent,
                                   expanded)
        if found is not None:
            (a, ra), (b, rb) = found
            bracketed = True
    if bracketed:
        plateau = 0   # midpoints in a row whose risk repeats an end's exactly
        for _ in range(max_evaluations):
            if spent():
                break
            if f.close_enough(a, target, rtol, tolerance) or \
                    f.close_enough(b, target, rtol, tolerance):
                break
            m = _mid(param, a, b)
            if protective_end and param.type is int and min(a, b) > 0 and \
                    max(a, b) > WIDE * min(a, b):
                # a bracket reaching the protective end spans orders of magnitude (k
                # from 50 to n): halved on the log scale until it is narrow
                m = int(round(math.sqrt(float(a) * float(b))))
            # integers and step-valued knobs: two adjacent steps straddle the target,
            # the step is found
            if param.type is int and m in (a, b):
                break
            if param.step is not None and (same(m, a) or same(m, b)):
                break
            if param.type is float and abs(b - a) <= 1e-9 * max(abs(a), abs(b), 1e-12):
                break
            rm = ev(m, "bisect")
            # a jump between two plateaus: the releases between the ends give one of
            # their two risks, so halving finds where the jump is, never a risk nearer
            # the target (module notes)
            plateau = plateau + 1 if rm in (ra, rb) else 0
            if plateau >= JUMP:
                break
            if (rm - target) * (ra - target) <= 0 and rm != target:
                b, rb = m, rm
            else:
                a, ra = m, rm
            if rm == target:
                a, ra = m, rm
                break
    # report the evaluated point closest to the target; never the unprotected value
    # unless the target is its risk (module notes)
    unprotected = unprotected_value(param, f, target, rtol)
    protective = {v: r for v, r in f.cache.items() if v != unprotected} or f.cache
    best = min(protective.items(), key=lambda kv: (abs(kv[1] - target), kv[0]))
    size, rule, step_risk = tolerance_of(param, domain_ends(param, n), f, best, target,
                                         tolerance, ev, bracketed)
    no_protection = unprotected is not None and best[0] == unprotected
    return BisectionResult(
        method=method, parameter=param.name, value=best[0], risk=best[1], target=target,
        evaluations=len(f.cache), bracketed=bracketed,
        reachable=(float(min(f.cache.values())), float(max(f.cache.values()))),
        params=knob.set(fixed, best[0]), steps=steps,
        monotone=_is_monotone(list(f.cache.items()), increasing),
        domain=_domain_text(param, n), limit_note=f.limit_note,
        tolerance_size=size, tolerance_rule=rule, tolerance=tolerance,
        step_risk=step_risk, unprotected=no_protection,
        matched=abs(best[1] - target) <= size and not no_protection)


def _search_both_sides(param: Param, n: int, target: float, ends: list, increasing: bool,
                       f: RiskCurve, ev, spent, expanded: set):
    """When the predicted direction found no bracket (module notes): the domain's ends,
    an unbounded side stepwise (unless the bracket search already grew that way, in
    ``expanded``), then the interior extremum of a non-monotone curve.  Returns two
    neighbouring ``(value, risk)`` points straddling the target, or None."""
    # least protective first: low values when protection grows with the value
    least_first = param.protection != "decreasing"

    def straddle():
        return _straddling(list(f.cache.items()), target, least_first)

    for e in ends:
        if (int(e) if param.type is int else float(e)) not in f.cache:
            ev(e, "domain")
    found = straddle()
    lo_end, hi_end = domain_ends(param, n)
    for outward, end in ((-1, lo_end), (+1, hi_end)):
        if found is not None or end is not None or outward in expanded:
            continue
        # an unbounded side: step outward from the extreme evaluated value
        anchor = (max if outward < 0 else min)(f.cache)
        v = (min if outward < 0 else max)(f.cache)
        while found is None and not spent():
            nv = _clip(param, _expand(param, v, outward, anchor), n)
            # no progress: the bound, or the method's feasibility limit (RiskCurve)
            if nv == v or f.same(nv, v):
                break
            ev(nv, "domain")
            v = nv
            found = straddle()
    # a hump or a dip: refine around the interior point closest to the target
    while found is None and not spent() and not _is_monotone(list(f.cache.items()),
                                                             increasing):
        pts = sorted(f.cache.items())
        i = min(range(len(pts)), key=lambda j: (abs(pts[j][1] - target), pts[j][0]))
        if not 0 < i < len(pts) - 1:
            break
        sides = sorted(((pts[i - 1][0], pts[i][0]), (pts[i][0], pts[i + 1][0])),
                       key=lambda ab: -_gap(param, *ab))
        sides = [ab for ab in sides if _splittable(param, *ab)
                 and f.lookup(f.clamped(_mid(param, *ab))) is None]
        if not sides:
            break
        ev(_mid(param, *sides[0]), "refine")
        found = straddle()
    return found
