"""When a method's search has *matched* the target (issue 28 item 3; SPEC §5).

`sdceval.compare.bisection` finds the evaluated point closest to the target; this
module decides whether it counts:

- The point found counts as matched only when its risk is within a tolerance of the
  target: ``tolerance`` relative (default ±5 %) or the knob's smallest step at that
  point (integers and step-valued knobs: the smaller of the risk changes one step down
  and one step up make, evaluated if needed), whichever is larger
  (`bisection.BisectionResult.tolerance_rule` says which, ``tolerance_size`` its
  size).  Otherwise the point is the *nearest reachable* one and the method is not
  ranked (`bisection.BisectionResult.nearest_note`).  Bracketing alone is not
  matching: a knob whose adjacent steps jump across the target (full-domain
  generalization jumping from 0.25 to 0.056 around a target of 0.167) is not matched,
  since the smaller of its steps there (0 on the flat side) does not cover the gap.
- A step is no licence for any gap: the step tolerance is capped at `MAX_STEP` (±50 %)
  of the target.  A knob whose one step moves the risk by more than that (global
  recoding of every key on 100 000 records: 0.31 at level 2, 0.007 at level 3, around a
  target of 0.168) reaches no release at "equal" risk, and the point nearest the
  target is listed as nearest reachable; ranking a release at 1.8 times the target's
  risk against others at the target would credit it with the utility its extra risk
  buys.  The cap is a judgement of ours, not the issue's rule (which has no cap).
- No protection is never a match: the value at which a knob gives no protection
  (`Param.unprotected`: k-anonymity's k = 1, the data as they are) is not chosen as
  the point found, and when it is the only point it is not matched, unless the target
  *is* the risk of the unprotected release (within ``rtol``) — the only target for
  which publishing the data as they are is the honest answer.  Bounds that exclude
  no protection (MDAV's k >= 2, p > 0, noise γ > 0) need no declaration.
"""
from __future__ import annotations

from sdceval.core.errors import SdcevalError
from sdceval.core.registry import Param

#: the largest step tolerance, relative to the target (module notes)
MAX_STEP = 0.5


def check_tolerance(tolerance) -> float:
    """``tolerance`` as a float in [0, 1), or a one-line error naming the option."""
    try:
        value = float(tolerance)
    except (TypeError, ValueError):
        value = float("nan")
    if isinstance(tolerance, bool) or not 0 <= value < 1:
        raise SdcevalError(f"tolerance must be a relative share in [0, 1) (0.05 = ±5 % of "
                           f"the target), got {tolerance!r}")
    return value


def unprotected_value(param: Param, f, target: float, rtol: float):
    """The knob's no-protection value (`Param.unprotected`) when it was evaluated and
    the target is not its risk (a protective target), else None."""
    if param.unprotected is None:
        return None
    u = f.lookup(param.unprotected)
    if u is None or abs(f.cache[u] - target) <= rtol * abs(target):
        return None
    return u


def tolerance_of(param: Param, ends: tuple, f, best, target: float, tolerance: float,
                 ev, bracketed: bool = True) -> tuple[float, str, float]:
    """``(size, rule, step)``: the tolerance of the point ``best`` (module
    notes).  The knob's smallest step at ``best`` is the smaller of the risk changes
    one step down and one step up make (the sides inside the domain ``ends`` and the
    method's limits); it is measured (at most two more evaluations, ``ev(value,
    phase)``) only when the relative tolerance alone does not cover the point."""
    rel = tolerance * abs(target)
    value, risk = best
    if abs(risk - target) <= rel or (not bracketed
                                     and abs(risk - target) > MAX_STEP * abs(target)):
        # within the relative tolerance, or a target the curve never reaches and
        # beyond what any step may cover: the steps are not measured (two releases
        # fewer; a bracketed point's steps are, to say how large the jump is)
        return rel, "relative", float("nan")
    step = param.step_of(value, f.dataset.n, f.fixed)
    if step is None:
        return rel, "relative", float("nan")
    lo_end, hi_end = ends
    changes = []
    for nb in (step[0] - 1 if param.type is int else step[0] * (1 - 1e-9) - 1e-12,
               step[1]):
        if (lo_end is not None and nb < lo_end) or (hi_end is not None and nb > hi_end):
            continue
        if f.same(nb, value):  # beyond the method's limit on this data set
            continue
        if param.unprotected is not None and f.same(nb, param.unprotected):
            continue  # a step to no protection is not the knob's resolution
        known = f.lookup(f.clamped(nb))
        changes.append(abs((f.cache[known] if known is not None else ev(nb, "step"))
                           - risk))
    if not changes or min(changes) <= rel:
        return rel, "relative", min(changes) if changes else float("nan")
    return min(min(changes), MAX_STEP * abs(target)), "step", min(changes)


__all__ = ["MAX_STEP", "check_tolerance", "tolerance_of", "unprotected_value"]
