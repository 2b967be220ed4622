"""Risk constraints of a comparison (issue 29 item 2): ``--max-risk global=0.01``.

A comparison matches every candidate on one risk measure; a *constraint* is a bound on
another risk that every ranked candidate must also meet at its matched point, as a
statistical office's rule does (sdcMicro's default: global risk, the expected share of
re-identifications in the population, at most 1 %).  Each constraint's measure is read
at every matched release beside the other risk readings (averaged over the repeats, as
they are), and a candidate is ranked only when every constraint's reading is at most
its bound.  A reading that does not apply to a candidate's release ("n/a") does not
meet the bound: evaluation never takes unmeasured protection for granted.

Text form: ``MEASURE=LIMIT`` (the last ``=`` separates the limit, so a measure's
parameters may precede it: ``individual_risk:method=exact=0.01``), several separated by
``;``; or a mapping ``{measure: limit}``.  The words a statistical office uses name
sdcMicro's risks: ``global`` is the global risk (`individual_risk`'s value, the mean
individual risk), ``household`` the household risk (`household_risk`).

A guideline (``guideline="ema-0070"``, `sdceval.guidelines`) is one more constraint:
its metric (measure, parameters, attacker, the population assumptions given after a
colon, ``ema-0070:population_size=300000``) bounded by its threshold as its rounding
reading reads it (0.09 read as ARX does: at most ``1/12``; `guideline_constraint`).
A value is over its bound when it exceeds it beyond floating-point rounding
(`sdceval.guidelines.rounding.exceeds`, the verdict's comparison).
"""
from __future__ import annotations

from typing import Mapping

import numpy as np

from sdceval.catalog import get_measure
from sdceval.compare.measure_text import measure_label, parse_reference
from sdceval.core.errors import SdcevalError
from sdceval.guidelines import effective_bound, exceeds, metric_of
from sdceval.guidelines.verdict import settle

#: the words of sdcMicro's reports for its population risks -> the measures
WORDS = {"global": "individual_risk", "household": "household_risk"}


def parse_constraints(max_risk) -> dict[str, tuple[str, dict, float]]:
    """``max_risk`` (module notes) as ``{label: (measure, params, limit)}`` (``label``
    the reading's, `ranking.measure_label`), checked
    against the measures' registry (a risk measure where larger is worse, a limit that
    is a finite number); None or empty -> {}."""
    if not max_risk:
        return {}
    if isinstance(max_risk, Mapping):
        items = [(str(k), v) for k, v in max_risk.items()]
    else:
        parts = [max_risk] if isinstance(max_risk, str) else list(max_risk)
        items = []
        for part in parts:
            for text in str(part).split(";"):
                if not text.strip():
                    continue
                if "=" not in text:
                    raise SdcevalError(
                        f"max_risk {text.strip()!r}: give MEASURE=LIMIT, e.g. global=0.01 "
                        "(the global risk, expected re-identifications / records, at "
                        "most 1 %)")
                name, limit = text.rsplit("=", 1)
                items.append((name.strip(), limit.strip()))
    out = {}
    for text, limit in items:
        name, params = parse_reference(text)
        name = WORDS.get(name, name)   # global, global:method=exact, ...
        spec = get_measure(name)
        if spec.category != "risk" or not spec.larger_is_worse:
            raise SdcevalError(f"max_risk: {name!r} is not a risk measure that grows with "
                               "the risk; bound e.g. global (individual_risk), household "
                               "(household_risk) or reidentification")
        spec.resolve(params)
        try:
            bound = float(limit)
        except (TypeError, ValueError):
            bound = float("nan")
        if not np.isfinite(bound) or isinstance(limit, bool):
            raise SdcevalError(f"max_risk {text}: the limit must be a number, got "
                               f"{limit!r} (e.g. {text}=0.01)")
        # the label of the reading, as `compare`'s risks= names it
        label = measure_label(name, params)
        out[label] = (name, params, bound)
    return out


def guideline_constraint(guideline) -> dict[str, tuple[str, dict, float]]:
    """A guideline (a profile's name or file, parameters after a colon: `settle`'s
    overrides) as a constraint ``{label: (measure, params, bound)}``: its metric and the
    threshold as its rounding reading reads it (`sdceval.guidelines.effective_bound`).
    A rule profile (HIPAA) or a lower bound is no risk bound: an error saying so."""
    if not isinstance(guideline, str):
        profile, population = settle(guideline)
    else:
        name, overrides = parse_reference(guideline)
        profile, population = settle(name, **overrides)
    where = f"guideline {profile.name!r}"
    if profile.kind != "threshold" or profile.comparison != "at_most":
        raise SdcevalError(f"{where} is no upper bound on a risk (it checks "
                           f"{'rules on columns' if profile.kind == 'rules' else 'a lower bound'}"
                           f"): check each release with sdceval check --guideline "
                           f"{profile.name}")
    spec, params = metric_of(profile, population, record_bound=False)
    if spec.category != "risk" or not spec.larger_is_worse:
        raise SdcevalError(f"{where}: its metric {spec.name!r} is not a risk measure that "
                           "grows with the risk, so it cannot bound a comparison")
    return {measure_label(spec.name, params): (spec.name, params, effective_bound(profile))}


def merge(*constraint_sets) -> dict[str, tuple[str, dict, float]]:
    """Several constraint sets as one; a reading bounded twice keeps the tighter bound."""
    out: dict = {}
    for cs in constraint_sets:
        for label, (name, params, bound) in cs.items():
            if label not in out or bound < out[label][2]:
                out[label] = (name, params, bound)
    return out


def failures(constraints: Mapping[str, float], readings: Mapping[str, float],
             not_applicable: Mapping[str, str]) -> list[str]:
    """The constraints a candidate's matched release fails, as phrases
    (``"individual_risk 0.013 > 0.01 (+30 %)"``); [] when it meets every one."""
    out = []
    for label, bound in constraints.items():
        if label in not_applicable:
            out.append(f"{label} not measured ({not_applicable[label]})")
            continue
        v = readings.get(label)
        if v is None or not np.isfinite(v):
            out.append(f"{label} not measured")
        elif exceeds(v, bound):
            over = f" (+{(v - bound) / bound:.0%})" if bound > 0 else ""
            out.append(f"{label} {v:.4g} > {bound:.4g}{over}")
    return out


__all__ = ["WORDS", "failures", "guideline_constraint", "merge", "parse_constraints"]
