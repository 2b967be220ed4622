"""Checks of a comparison's options before any work (`sdceval.compare.ranking.
plan_comparison` and `run_comparison`): the target as a number or a reference release,
the extra risks, and every measure against the releases it will read."""
from __future__ import annotations

import numpy as np

from sdceval.catalog import get_measure, get_method
from sdceval.compare.composite import risk_spec
from sdceval.compare.measure_text import parse_measure_list, parse_reference
from sdceval.core.errors import SdcevalError


def _parse_target(target) -> dict:
    """``target`` as `ComparisonPlan`'s fields: a number, or a reference release
    (checked against the methods' registry)."""
    if target is None:
        return {}
    if isinstance(target, bool):
        raise SdcevalError(f"target must be a number or method:param=value, got {target!r}")
    if isinstance(target, (int, float, np.number)):
        return {"target": float(target)}
    text = str(target).strip()
    try:
        return {"target": float(text)}
    except ValueError:
        pass
    name, params = parse_reference(text)
    get_method(name).resolve(params)
    return {"reference": text, "reference_release": (name, params)}


def check_risks(risks) -> dict[str, tuple[str, dict]]:
    """Parse and validate extra risk measures (``None`` -> none)."""
    if not risks:
        return {}
    parsed = parse_measure_list(risks)
    for label, (name, params) in parsed.items():
        spec = get_measure(name)
        if spec.category != "risk":
            raise SdcevalError(f"risks: measure {name!r} is not a risk measure (category "
                               f"{spec.category!r}); list it under utilities instead")
        spec.resolve(params)
    return parsed


def check_needs(dataset, plan) -> None:
    """Before the first evaluation, every measure of a plan filled in (`ComparisonPlan.on`)
    against every release it will read (`MeasureSpec.check_data`: the release kinds it
    accepts, the data-set roles it needs — label, sensitive attribute, QIs, numeric
    attributes — under its parameters); the methods' own needs were checked by
    `comparison_defaults`; an extra risk reading is checked against the data set only
    (a release it does not read shows "n/a" and why).  The first that fails is one
    error naming the measure, the method and the fix, instead of a failure after minutes
    of matching."""
    measures = [("risk measure", plan.risk, plan.risk, plan.risk_params,
                 "--risk-measure, risk="),
                *[("utility", label, n, p, "--utility, utilities=")
                  for label, (n, p) in plan.utilities.items()],
                *[("extra risk", label, n, p, "risks=")
                  for label, (n, p) in plan.risks.items()]]
    reference = [plan.reference_release[0]] if plan.reference_release else []
    for role, label, name, params, option in measures:
        spec = risk_spec(name)
        try:   # the data set's roles: no method can help
            spec.check_data(dataset, params)
        except SdcevalError as exc:
            raise SdcevalError(f"compare: {role} {label!r}: {exc}; or choose another "
                               f"({option})") from None
        if role == "extra risk":  # read where it applies, "n/a" and why elsewhere
            continue
        for method in dict.fromkeys([*plan.methods,
                                     *(reference if role == "risk measure" else [])]):
            try:
                spec.check_data(dataset, params, get_method(method).kind, method)
            except SdcevalError as exc:
                raise SdcevalError(f"compare: {role} {label!r}: {exc}; choose another "
                                   f"({option}) or drop the method (--methods, methods=)"
                                   ) from None
