"""The risk a comparison matches on, by name: a registered risk measure, or the worse of
several, ``max(reidentification,attribute_inference)`` (issue 28 item 5, SPEC §5).

A composite risk is ``R(X, Y) = max_m R_m(X, Y)`` over the named measures, evaluated on
each release bisection makes (`sdceval.compare.bisection.RiskCurve`), so a candidate is
matched where its *worst* risk reaches the target: a release equal on re-identification
but open to attribute inference is matched at more protection.  Only measures on one
scale can be maxed (`MAXABLE_UNITS`): each must be a risk, higher = riskier, and all of
one unit — shares of the records (``reidentification``, ``attribute_inference``,
``sample_uniques``) or attack risks (``singling_out``, ``linkability``, ``inference``:
``max(singling_out,linkability,inference)`` is WP29's three criteria at once); anything
else is refused, naming the measure.  The composite takes the union of its parts'
parameters (``intruder`` reaches both ``reidentification`` and ``attribute_inference``)
and gives each part the ones it declares; each part's seed follows the seed tree as if
it were matched alone (`sdceval.core.rng.measure_params`).

`knowing` hands a comparison's declared intruder (the columns known, issue 28 item 2)
to every risk that takes it as its ``knows`` parameter.

`risk_spec` is the one resolver of a risk name, used wherever a comparison evaluates or
checks its risk (the plan, the target, the bisection, the matched release).
"""
from __future__ import annotations

import functools
import re

from sdceval.catalog import get_measure
from sdceval.core.errors import SdcevalError
from sdceval.core.glossary import worst_of
from sdceval.core.measurement import Measurement

_MAX = re.compile(r"^\s*max\s*\((?P<parts>[^()]*)\)\s*$")
#: the scales on which the worse of several risks means something: shares of the
#: records (re-identification, attribute inference, sample uniques) and anonymeter's
#: attack risks (the success rate beyond the control attack's, issue 32)
MAXABLE_UNITS = ("share of records", "attack risk")


class CompositeRisk:
    """``max`` of registered risk measures, with the interface of a `MeasureSpec` that a
    comparison reads (``name``, ``params``, ``resolve``, ``evaluate``, ``check_data``,
    ``category``, ``direction``, ``larger_is_worse``, ``kinds``, ``unit``)."""

    category = "risk"
    direction = "lower_is_better"
    larger_is_worse = True
    unit = "share of records"
    attack = False

    def __init__(self, parts):
        self.parts = tuple(parts)
        self.unit = self.parts[0].unit
        self.name = f"max({','.join(p.name for p in self.parts)})"
        self.label = worst_of(p.label or p.name for p in self.parts)
        params = {}
        for p in self.parts:
            for q in p.params:
                params.setdefault(q.name, q)
        self.params = tuple(params.values())
        self.kinds = tuple(k for k in self.parts[0].kinds
                           if all(k in p.kinds for p in self.parts))

    def _split(self, params: dict | None) -> list[dict]:
        params = dict(params or {})
        stray = [k for k in params if k not in {q.name for q in self.params}]
        if stray:
            raise SdcevalError(f"risk {self.name!r}: unknown parameter {stray[0]!r}; its "
                               f"parameters: {', '.join(q.name for q in self.params)}")
        return [{k: v for k, v in params.items() if k in {q.name for q in p.params}}
                for p in self.parts]

    def resolve(self, params: dict | None) -> dict:
        out = {}
        for p, given in zip(self.parts, self._split(params)):
            out.update({k: v for k, v in p.resolve(given).items() if k not in out})
        return out

    def check_data(self, dataset, params=None, kind=None, method: str = "",
                   deferred: tuple = ()) -> None:
        for p, given in zip(self.parts, self._split(params)):
            p.check_data(dataset, given, kind, method, deferred)

    def evaluate(self, dataset, release, params: dict | None = None) -> Measurement:
        """The largest of the parts' values on ``release``; ``details["parts"]`` holds
        each part's value (no per-record vector: a max of means is no mean)."""
        values = {p.name: float(p.evaluate(dataset, release, given).value)
                  for p, given in zip(self.parts, self._split(params))}
        worst = max(values, key=values.get)
        m = Measurement(self.name, values[worst], None,
                        details={"parts": values, "worst": worst})
        m.direction = self.direction
        return m


@functools.lru_cache(maxsize=64)
def _composite(text: str) -> CompositeRisk:
    names = [n.strip() for n in _MAX.match(text)["parts"].split(",") if n.strip()]
    if len(names) < 2 or len(set(names)) < len(names):
        raise SdcevalError(f"risk {text!r}: max(...) takes two or more different risk "
                           "measures, e.g. max(reidentification,attribute_inference)")
    parts = [get_measure(n) for n in names]
    unit = parts[0].unit
    for p in parts:
        if p.category != "risk" or p.direction != "lower_is_better" \
                or p.unit not in MAXABLE_UNITS or p.unit != unit:
            raise SdcevalError(
                f"risk {text!r}: measure {p.name!r} ({p.unit or 'no unit'}) is not on the "
                f"scale of {parts[0].name!r} ({unit or 'no unit'}) with higher = riskier, "
                "so it cannot be maxed with it; max measures of one scale: "
                "reidentification, attribute_inference, sample_uniques (shares of "
                "records), or singling_out, linkability, inference (attack risks)")
    return CompositeRisk(parts)


def is_composite(name: str) -> bool:
    return bool(_MAX.match(str(name)))


def risk_spec(name: str):
    """The risk measure named ``name``: a registered measure (`get_measure`) or a
    `CompositeRisk` for ``max(a,b,...)`` (module notes)."""
    return _composite(str(name).replace(" ", "")) if is_composite(name) \
        else get_measure(name)


#: the parameter by which a risk measure takes the intruder's knowledge (the columns
#: known: `sdceval.measures.reidentification`)
KNOWS = "knows"


def knowing(measure: str, params: dict, intruder) -> dict:
    """``params`` of ``measure`` with the comparison's intruder (a tuple of columns)
    as its ``knows`` parameter, when it declares one and the user set neither."""
    if not intruder or KNOWS in (params or {}):
        return dict(params or {})
    if not any(p.name == KNOWS for p in risk_spec(measure).params):
        return dict(params or {})
    return {**(params or {}), KNOWS: ",".join(intruder)}


__all__ = ["KNOWS", "knowing", "CompositeRisk", "is_composite", "risk_spec"]
