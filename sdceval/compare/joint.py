"""Matching a strategy with several knobs (SPEC §5; issue 28 item 3): the main knob
bisected to the target (`search_knob`) at every configuration of the other knobs' grids
(`joint_search`), the configuration with the best utility among those matched kept.

Why a grid and not a joint bisection.  A whole-file strategy's risk depends on the
perturbative knob (MDAV's k, noise's γ) and on how coarse the QIs are published
(recoding's level): many configurations reach one risk, and they differ in utility
(coarse QIs and little noise, or exact QIs and much noise).  The categorical knob has a
handful of values (hierarchy levels), so each is tried and the numeric knob bisected at
it; the choice among the matched ones is the data controller's criterion, utility.  The
utility compared is the first one asked, on the first repeat of the seed tree (the
repeats of the chosen configuration are measured after, as for any candidate).
"""
from __future__ import annotations

import itertools

from sdceval.catalog import get_measure
from sdceval.compare.bisection import RiskCurve, domain_ends, bisect_risk, tuning
from sdceval.compare.composite import risk_spec
from sdceval.core.rng import measure_params, method_seed


def _curve(fixed_params, *, dataset, spec, rspec, target_value, risk, risk_params, seed,
           repeats, run, settings: str = "", **_):
    """The memoized risk curve of ``spec``'s knob with ``fixed_params`` held, reporting
    each evaluation to the run: ``(curve, fixed)``."""
    knob, fixed = tuning(spec, fixed_params)
    param = knob.param
    curve = RiskCurve(dataset, spec, knob, rspec, risk_params, fixed, seed, repeats)
    curve.on_evaluation = lambda v, r: run.evaluation(
        f"{settings}{param.name}={v:g} -> {risk} {r:.4g} (target {target_value:.4g})")
    return curve, fixed


def search_knob(fixed_params, *, curve=None, settings: str = "", **search):
    """One bisection of ``spec``'s knob to the target, with ``fixed_params`` held (on
    ``curve`` when given, its evaluations reused): ``(BisectionResult, RiskCurve)``."""
    made, fixed = _curve(fixed_params, settings=settings, **search)
    curve = curve or made
    res = bisect_risk(search["dataset"], search["spec"].name, search["target_value"],
                      risk=search["risk"], risk_params=search["risk_params"],
                      fixed_params=fixed, seed=search["seed"], repeats=search["repeats"],
                      curve=curve, **search["bisect_kw"])
    return res, curve


def _short_of_target(curve, dataset, target: float, tolerance: float):
    """``(value, risk)`` at the knob's most protective end when even that release is
    riskier than the target beyond the tolerance (the configuration cannot reach it:
    e.g. QIs so detailed that they alone identify), else None.  One evaluation; an
    unbounded knob is not judged (None)."""
    param = curve.param
    end = domain_ends(param, dataset.n)[1 if param.protection == "increasing" else 0]
    if end is None:
        return None
    risk = curve(end)
    return (end, risk) if risk > target + tolerance * abs(target) else None


def joint_search(grid, fixed_params, utilities, **search):
    """Match a strategy with several knobs (SPEC §5; issue 28 item 3): for every
    configuration of the grid knobs (`MethodSpec.grid_knobs`: recoding's level 0, 1,
    2, ...) the main knob is bisected to the target; among the configurations matched
    within the tolerance, the one whose release loses least on the first utility (its
    first repeat, at the point its search reached) is the strategy's matched point,
    refined (``"refined"`` in its entry); if none is matched, the one nearest
    the target (it is then listed as "nearest reachable", unranked).  A configuration
    whose most protective knob value is still riskier than the target (beyond the
    tolerance) is not searched further: one evaluation says it cannot reach it (on
    100 000 records, MDAV with the QIs as they are spent 38 evaluations establishing
    that); the others are bisected to half the tolerance, which is all the choice
    needs, and only the configuration chosen is refined to ``rtol``.  Every configuration tried is kept in ``BisectionResult.grid``.  Returns
    ``(BisectionResult, RiskCurve)`` of the configuration chosen."""
    dataset, spec, seed = search["dataset"], search["spec"], search["seed"]
    tolerance = search["bisect_kw"].get("tolerance", 0.05)
    # each level is bisected only until it is inside half the tolerance; the level
    # chosen is then refined to the caller's precision on the same (memoized) curve
    fine = search["bisect_kw"].get("rtol", 1e-3)
    coarse = {**search, "bisect_kw": {**search["bisect_kw"],
                                      "rtol": max(fine, tolerance / 2)}}
    first = next(iter(utilities.items()), None)
    tried, found, curves, measured = [], [], [], []
    for values in itertools.product(*[v for _, v in grid]):
        cfg = {p.name: v for (p, _), v in zip(grid, values)}
        said = ", ".join(f"{k}={v}" for k, v in cfg.items()) + ": "
        fixed = {**(fixed_params or {}), **cfg}
        curve, _ = _curve(fixed, settings=said, **search)
        short = _short_of_target(curve, dataset, search["target_value"], tolerance)
        curves.append((fixed, said, curve))
        if short is not None:
            tried.append({"settings": cfg, "value": short[0], "risk": short[1],
                          "matched": False, "utility": None, "chosen": False,
                          "reachable": False})
            found.append(None)
            measured.append(None)
            continue
        res, curve = search_knob(fixed, curve=curve, settings=said, **coarse)
        loss, m = None, None
        if res.matched and first is not None:
            label, (name, params) = first
            rel = spec.apply(dataset, res.params, seed=method_seed(seed, 0))
            m = get_measure(name).evaluate(dataset, rel,
                                           measure_params(risk_spec(name), params, seed, 0))
            loss = float(m.value)
        tried.append({"settings": cfg, "value": res.value, "risk": res.risk,
                      "matched": res.matched, "utility": loss, "chosen": False})
        found.append((res, curve))
        measured.append(m)
    matched = [i for i, t in enumerate(tried) if t["matched"]]
    if matched:
        sign = 1.0 if first is None or get_measure(first[1][0]).larger_is_worse else -1.0
        best = min(matched, key=lambda i: (sign * tried[i]["utility"]
                                           if tried[i]["utility"] is not None else 0.0, i))
    else:
        searched = [i for i, f in enumerate(found) if f is not None]
        if searched:
            best = min(searched, key=lambda i: (found[i][0].relative_gap, i))
        else:   # no configuration reaches the target: the nearest, searched for its report
            best = min(range(len(tried)), key=lambda i: (tried[i]["risk"], i))
            fixed, said, curve = curves[best]
            found[best] = search_knob(fixed, curve=curve, settings=said, **search)
            tried[best].update(value=found[best][0].value, risk=found[best][0].risk)
    tried[best]["chosen"] = True
    res, curve = found[best]
    if res.matched and not curve.close_enough(res.value, res.target, fine, tolerance):
        fixed, said, _ = curves[best]
        coarse_params = found[best][0].params
        res, curve = search_knob(fixed, curve=curve, settings=said, **search)
        tried[best]["refined"] = {"value": res.value, "risk": res.risk,
                                  "matched": res.matched}
        if res.params != coarse_params:
            measured[best] = None   # the utility chosen on was measured elsewhere
    res.grid = tried
    res.evaluations = sum(len(c.cache) for _, _, c in curves)
    # the first utility at the first repeat of the configuration chosen, measured here:
    # the caller reuses it rather than measuring that release again
    known = {first[0]: measured[best]} if first is not None and measured[best] else {}
    return res, curve, known


__all__ = ["joint_search", "search_knob"]
