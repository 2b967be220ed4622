"""The control set of a comparison (issue 32 item 1, anonymeter's protocol): records
held out before any candidate runs, for every candidate and every repeat alike.

A comparison holds one out (`reserve`) when a measure it reads needs one (the attacks
`singling_out`, `linkability`, `inference`, `membership_inference` declare the need
``control``) or when synthetic or DP candidates take part (they are matched on the
attacks).  Every candidate, the reference whose risk is the target and every measure
then see the *training* records only (`sdceval.core.control.hold_out`: the whole data
set's hierarchies, so codes agree); the attacks compare what they achieve on them with
what they achieve on the held-out ones.  The records are drawn with the root seed
(`sdceval.core.rng.control_seed`); a task run in another process opens the data set
and draws the same records again (`reopen`).
"""
from __future__ import annotations

from sdceval.compare.composite import risk_spec
from sdceval.compare.families import ATTACKED_FAMILIES
from sdceval.core.control import FRACTION, hold_out
from sdceval.core.rng import control_seed


def _needs(name: str) -> bool:
    spec = risk_spec(name)
    parts = getattr(spec, "parts", (spec,))
    return any("control" in getattr(p, "needs", ()) for p in parts)


def wants_control(plan) -> bool:
    """Whether the comparison ``plan`` (`ComparisonPlan`, before `ComparisonPlan.on`)
    needs a control set: a measure it names needs one, or it draws candidates from the
    synthetic or DP family."""
    if set(plan.families or ()) & set(ATTACKED_FAMILIES):
        return True
    names = [plan.risk] if plan.risk else []
    names += [n for n, _ in (plan.risks or {}).values()]
    names += [n for n, _ in (plan.utilities or {}).values()]
    names += [n for n, _, _ in (plan.constraints or {}).values()]
    return any(_needs(n) for n in names)


def reserve(dataset, plan, say=lambda msg: None):
    """``(training data set, spec)``: ``dataset`` with its control set held out when
    ``plan`` wants one (`wants_control`; ``spec`` then says how to draw it again in
    another process, `reopen`), else ``(dataset, None)``."""
    if dataset.control is not None or not wants_control(plan):
        return dataset, None
    spec = {"fraction": plan.control or FRACTION, "seed": control_seed(plan.seed)}
    training = hold_out(dataset, **spec)
    say(f"held out {training.control.n} of {dataset.n} records as the attacks' control "
        f"set (the same for every candidate); the candidates anonymize the other "
        f"{training.n}")
    return training, spec


def reopen(dataset, spec: dict | None):
    """The training data set of ``spec`` (`reserve`) from the whole ``dataset`` opened
    again (an executor's task); the data set itself without one."""
    if spec is None or dataset.control is not None:
        return dataset
    return hold_out(dataset, **spec)


__all__ = ["reserve", "reopen", "wants_control"]
