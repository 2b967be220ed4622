"""Risk-equalized comparison: match every method to one risk level, then rank utilities.

Domingo-Ferrer, Ricci & Soria-Comas, §3: M¹ is more utility-preserving than M² at risk r
if U(X, M¹_α(X)) is better than U(X, M²_β(X)) for α, β with R(X, M¹_α(X)) =
R(X, M²_β(X)) = r.  The target r is given as a number or as the risk of a reference
``method:param=value`` (default ``mdav:k=5``).
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np
import pandas as pd

from sdceval.core.errors import SdcevalError
from sdceval.catalog import get_measure, get_method
from sdceval.core.registry import parse_assignments
from sdceval.compare.bisection import BisectionResult, RiskCurve, bisect_risk

DEFAULT_METHODS = ("mdav", "noise", "rank_swap", "multiplicative_noise")
DEFAULT_UTILITIES = ("propensity", "emd")


def parse_reference(text: str) -> tuple[str, dict]:
    """``"mdav:k=5"`` -> ``("mdav", {"k": "5"})``."""
    if ":" in text:
        name, rest = text.split(":", 1)
        return name.strip(), parse_assignments([p for p in rest.split(",") if p.strip()],
                                               "target")
    return text.strip(), {}


def measure_label(name: str, params: dict) -> str:
    """Column label of a measure variant: ``propensity`` or ``propensity(model=linear)``."""
    if not params:
        return name
    return f"{name}(" + ",".join(f"{k}={v}" for k, v in params.items()) + ")"


def parse_measure_list(text) -> dict[str, tuple[str, dict]]:
    """``"propensity:model=quadratic,emd"`` or a list -> ``{label: (name, params)}``.

    A measure's own parameters follow a colon; measures are separated by commas (a
    ``name=value`` item after a colon belongs to the preceding measure).  The same
    measure may appear with different parameters (each variant gets its own label)."""
    if isinstance(text, dict):
        if all(isinstance(v, tuple) for v in text.values()):
            return dict(text)  # already parsed
        return {measure_label(n, p): (n, dict(p)) for n, p in text.items()}
    items = text if isinstance(text, (list, tuple)) else str(text).split(",")
    parsed: list[tuple[str, dict]] = []
    for raw in items:
        item = str(raw).strip()
        if not item:
            continue
        if "=" in item and ":" not in item and parsed:
            parsed[-1][1].update(parse_assignments([item], "measure parameter"))
            continue
        name, params = parse_reference(item)
        get_measure(name)  # unknown names fail here, with a suggestion
        parsed.append((name, params))
    if not parsed:
        raise SdcevalError("no measure given")
    return {measure_label(n, p): (n, p) for n, p in parsed}


@dataclass
class Comparison:
    """Result of `compare`: one matched release per method and its utilities."""

    dataset: str
    risk_measure: str
    risk_params: dict
    target: float
    reference: str | None
    seed: int
    repeats: int
    matches: list[BisectionResult]
    utilities: dict[str, dict[str, float]]  # method -> measure -> value
    utility_directions: dict[str, bool]
    curves: dict[str, list[tuple[float, float]]] = field(default_factory=dict)
    measure_details: dict[str, dict[str, dict]] = field(default_factory=dict)

    def table(self) -> pd.DataFrame:
        """One row per method: ``method, parameter, value, risk, <utilities>, rank_<u>``.

        Ranks are 1 = best utility (least loss) among methods that reached the target;
        a method whose target was not bracketed gets no rank."""
        rows = []
        for m in self.matches:
            row = {"method": m.method, "parameter": m.parameter, "value": m.value,
                   "risk": m.risk, "bracketed": m.bracketed, "evaluations": m.evaluations}
            row.update(self.utilities[m.method])
            rows.append(row)
        df = pd.DataFrame(rows)
        ok = df["bracketed"].to_numpy(bool)
        for u, larger_worse in self.utility_directions.items():
            vals = df[u].where(ok)
            df[f"rank_{u}"] = (vals if larger_worse else -vals).rank(method="min").astype("Int64")
        return df

    def to_dict(self) -> dict[str, Any]:
        table = self.table()
        return {"dataset": self.dataset, "risk_measure": self.risk_measure,
                "risk_params": self.risk_params, "target": self.target,
                "reference": self.reference, "seed": self.seed, "repeats": self.repeats,
                "matches": [m.to_dict() for m in self.matches],
                "utilities": self.utilities, "utility_details": self.measure_details,
                "risk_curves": {k: [list(p) for p in v] for k, v in self.curves.items()},
                "ranking": table.astype(object).where(table.notna(), None)
                .to_dict(orient="records")}


def resolve_target(dataset, target, risk: str, risk_params: dict, seed: int
                   ) -> tuple[float, str | None]:
    """A number, or the risk of a reference ``method:param=value``."""
    if isinstance(target, (int, float)) and not isinstance(target, bool):
        return float(target), None
    text = str(target).strip()
    try:
        return float(text), None
    except ValueError:
        pass
    name, params = parse_reference(text)
    rel = get_method(name).apply(dataset, params, seed=seed)
    return float(get_measure(risk).evaluate(dataset, rel, risk_params).value), text


@dataclass
class MethodMatch:
    """One method matched to the target: the bisection, its risk curve and utilities."""

    result: BisectionResult
    curve: list[tuple[float, float]]
    utilities: dict[str, float]
    details: dict[str, dict]


def match_method(dataset, method: str, target_value: float, *, risk: str,
                 risk_params: dict, utilities: dict[str, tuple[str, dict]], seed: int = 0,
                 repeats: int = 1, curves: bool = True, fixed_params: dict | None = None,
                 **bisect_kw) -> MethodMatch:
    """Bisection for one method, its risk curve on the default grid (paper Fig. 1) and
    its utilities at the matched parameter (averaged over ``repeats`` seeds).  A pure
    task: the experiment executors run one per method in parallel."""
    spec = get_method(method)
    risk_spec = get_measure(risk)
    fixed = dict(fixed_params or {})
    param = spec.tunable_for(spec.resolve(fixed, dataset.n))
    curve = RiskCurve(dataset, spec, param, risk_spec, risk_params, fixed, seed, repeats)
    if curves:
        hi = param.bounds(dataset.n)[1]
        for v in param.grid:
            if hi is None or v <= hi:
                curve(v)
    res = bisect_risk(dataset, method, target_value, risk=risk, risk_params=risk_params,
                      fixed_params=fixed, seed=seed, repeats=repeats, curve=curve,
                      **bisect_kw)
    vals: dict[str, list] = {u: [] for u in utilities}
    det: dict[str, dict] = {}
    for s in ([seed + r for r in range(repeats)] if spec.random else [seed]):
        rel = spec.apply(dataset, res.params, seed=s)
        for label, (name, up) in utilities.items():
            m = get_measure(name).evaluate(dataset, rel, up)
            vals[label].append(m.value)
            det[label] = m.to_dict()
    return MethodMatch(res, sorted(curve.cache.items()),
                       {u: float(np.mean(v)) for u, v in vals.items()}, det)


def assemble(dataset_name: str, matches: list[MethodMatch], *, target: float,
             reference: str | None, risk: str, risk_params: dict,
             utilities: dict[str, tuple[str, dict]], seed: int, repeats: int) -> Comparison:
    """Collect per-method matches into a `Comparison` (warn on unreachable targets)."""
    for mm in matches:
        res = mm.result
        if not res.bracketed:
            warnings.warn(
                f"{res.method}: target {risk} {target:.4g} not reachable with "
                f"{res.parameter} in its bounds; reached {res.reachable[0]:.4g}.."
                f"{res.reachable[1]:.4g} (closest: {res.parameter}={res.value:g}); "
                "it is left unranked", stacklevel=2)
    if not any(mm.result.bracketed for mm in matches):
        ranges = "; ".join(f"{mm.result.method}: {mm.result.reachable[0]:.4g}.."
                           f"{mm.result.reachable[1]:.4g}" for mm in matches)
        raise SdcevalError(f"target {risk} {target:.4g} is reached by no method within "
                           f"its parameter bounds (reachable: {ranges})")
    return Comparison(
        dataset=dataset_name, risk_measure=risk, risk_params=risk_params, target=target,
        reference=reference, seed=seed, repeats=repeats,
        matches=[mm.result for mm in matches],
        utilities={mm.result.method: mm.utilities for mm in matches},
        utility_directions={u: get_measure(n).larger_is_worse
                            for u, (n, _) in utilities.items()},
        curves={mm.result.method: mm.curve for mm in matches},
        measure_details={mm.result.method: mm.details for mm in matches})


def compare(dataset, methods=DEFAULT_METHODS, *, target="mdav:k=5",
            risk: str = "linkage_risk", risk_params: dict | None = None,
            utilities=DEFAULT_UTILITIES, seed: int = 0, repeats: int = 1,
            curves: bool = True, method_params: dict | None = None,
            progress: Callable[[str], None] | None = None, **bisect_kw) -> Comparison:
    """Match each method to the target risk by bisection, then evaluate utilities.

    Parameters
    ----------
    dataset : Dataset
    methods : sequence of str
    target : float or str
        A risk value, or ``"method:param=value"`` whose risk is the target.
    risk, risk_params : risk measure (default ``linkage_risk``) and its parameters.
    utilities : str, list or dict
        Utility measures (``"propensity,emd"`` or ``{"propensity": {"model": ...}}``).
    seed, repeats : common random numbers for bisection; utilities are averaged over the
        same ``repeats`` seeds.
    curves : also evaluate each method's risk on its default grid (paper Fig. 1).
    method_params : ``{method: {param: value}}`` held fixed during the search.

    Returns
    -------
    Comparison
    """
    risk_spec, risk_params, utils = check_comparison(methods, risk, risk_params, utilities)
    say = progress or (lambda msg: None)
    target_value, reference = resolve_target(dataset, target, risk, risk_params, seed)
    say(f"target {risk} = {target_value:.6g}" + (f" (risk of {reference})" if reference else ""))
    matches = []
    for name in methods:
        mm = match_method(dataset, name, target_value, risk=risk, risk_params=risk_params,
                          utilities=utils, seed=seed, repeats=repeats, curves=curves,
                          fixed_params=(method_params or {}).get(name), **bisect_kw)
        r = mm.result
        say(f"{name}: {r.parameter}={r.value:g} risk={r.risk:.6g} "
            f"({r.evaluations} evaluations{'' if r.bracketed else ', NOT bracketed'})")
        matches.append(mm)
    return assemble(dataset.name, matches, target=target_value, reference=reference,
                    risk=risk, risk_params=risk_params, utilities=utils, seed=seed,
                    repeats=repeats)


def check_comparison(methods, risk, risk_params, utilities):
    """Validate names and parameters before any work: (risk spec, risk params, utilities)."""
    if not methods:
        raise SdcevalError("no method to compare")
    for m in methods:
        get_method(m)
    risk_spec = get_measure(risk)
    if risk_spec.category != "risk":
        raise SdcevalError(f"measure {risk!r} is not a risk measure (category "
                           f"{risk_spec.category!r}); use e.g. linkage_risk")
    risk_params = risk_spec.resolve(risk_params)
    utils = parse_measure_list(utilities)
    for label, (name, params) in utils.items():
        get_measure(name).resolve(params)
    return risk_spec, risk_params, utils
