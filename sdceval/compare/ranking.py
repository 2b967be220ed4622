"""Risk-equalized comparison: match every method to one risk level, then rank utilities.

Domingo-Ferrer, Ricci & Soria-Comas, §3: M¹ is more utility-preserving than M² at risk r
if U(X, M¹_α(X)) is better than U(X, M²_β(X)) for α, β with R(X, M¹_α(X)) =
R(X, M²_β(X)) = r.  The target r is given as a number or as the risk of a reference
``method:param=value`` (default ``mdav:k=5``).

"Equal risk" holds for the one measure matched.  At the matched point every method's
release is also read on the other risk figures (``risk_readings``: each risk measure's
``details["readings"]``, e.g. linkage_risk's re-identification rates and its value in
the other scale, plus any extra ``risks`` measures), and `Comparison.table`,
``ranking.csv`` and ``results.json`` carry them: on Census, methods matched on the
linkage aggregate re-identify from 2.7 % (noise) to 57.2 % (rank swapping) of the
records (docs/reproduction.md).

One home (issue 27 item 20): a comparison's options are parsed and checked once, into
a `ComparisonPlan` (`plan_comparison`, from `compare`'s keywords or from a
``[[comparison]]`` job's table when the job is built), and `run_comparison` holds the
steps: the data set's defaults (`sdceval.compare.families`), the target's risk, every
method matched by bisection (one task each, `task_match`, which an experiment's
executor runs in parallel), the matches assembled into a `Comparison`
(`sdceval.compare.comparison`).  `compare` (``sdceval.compare(df, ...)``) and the job
(`sdceval.experiments.comparison_job`, hence ``sdceval compare``) both call it.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from sdceval.catalog import get_measure, get_method
from sdceval.compare.bisection import (BisectionResult, check_tolerance)
from sdceval.compare.composite import is_composite, knowing, risk_spec
from sdceval.compare.joint import joint_search, search_knob
from sdceval.compare.comparison import (FITTED_CHOICES, Comparison,  # noqa: F401
                                        fitted_notes, interval, typed_params, typed_value,
                                        unreached_note)
from sdceval.compare.control_set import reopen, reserve
from sdceval.compare.plan_checks import _parse_target, check_needs, check_risks
from sdceval.compare.families import (DEFAULT_METHODS, DEFAULT_UTILITIES,  # noqa: F401
                                      as_strategy, comparison_defaults, default_readings,
                                      left_out, parse_families)
from sdceval.compare.constraints import guideline_constraint, merge, parse_constraints
from sdceval.compare.measure_text import (measure_label, parse_measure_list,  # noqa: F401
                                          parse_reference)
from sdceval.core.errors import SdcevalError, suggest
from sdceval.core.frames import ROLE_KEYWORDS, as_dataset, split_roles
from sdceval.core.loaders import open_ref
from sdceval.core.progress import RunProgress, active, reporting
from sdceval.core.rng import measure_params, method_seed
from sdceval.core.treatment import column_treatment
from sdceval.methods.strategy import strategy_spec

@dataclass
class MethodMatch:
    """One method matched to the target: the bisection, its risk curve, utilities and
    the other risk readings of the matched release."""

    result: BisectionResult
    curve: list[tuple[float, float]]
    utilities: dict[str, float]
    details: dict[str, dict]
    risks: dict[str, float] = field(default_factory=dict)
    #: per repeat, the matched risk (``"risk"``) and every utility at the matched point
    samples: dict[str, list[float]] = field(default_factory=dict)
    #: the matched risk's sample of records (its ``details["sample"]``), if it had one
    risk_sample: dict | None = None
    #: extra risk label -> why it does not read this method's release ("n/a")
    not_applicable: dict[str, str] = field(default_factory=dict)
    #: column -> what the matched release did to it (`sdceval.core.treatment`; first
    #: repeat), plain data so results.json and the results store keep it
    treatment: dict[str, str] = field(default_factory=dict)


def _readings(label: str, m) -> dict[str, float]:
    """A risk measurement's figures for the comparison table: its own ``readings``
    (linkage_risk: re-identification rates, other scale) or, for an extra risk measure,
    its value under ``label``."""
    got = m.details.get("readings") if isinstance(m.details, dict) else None
    out = {label: float(m.value)} if label else {}
    for k, v in (got or {}).items():
        out[k] = float(v)
    return out


def match_method(dataset, method: str, target_value: float, *, risk: str,
                 risk_params: dict, utilities: dict[str, tuple[str, dict]], seed: int = 0,
                 repeats: int = 1, curves: bool = True, fixed_params: dict | None = None,
                 risks: dict[str, tuple[str, dict]] | None = None,
                 **bisect_kw) -> MethodMatch:
    """Bisection for one method, its risk curve on the default grid (paper Fig. 1),
    its utilities and its other risk readings at the matched parameter (averaged over
    ``repeats`` seeds).  ``risks`` are extra risk measures evaluated there.  A pure
    task: the experiment executors run one per method in parallel."""
    spec = get_method(method)
    fixed_params = spec.experiment(fixed_params)   # reproducible from the seed tree
    rspec = risk_spec(risk)
    # progress per evaluation, to the run being reported (`sdceval.core.progress`)
    run = active()
    run.candidate(method)
    search = dict(dataset=dataset, spec=spec, rspec=rspec, target_value=target_value,
                  risk=risk, risk_params=risk_params, seed=seed, repeats=repeats,
                  run=run, bisect_kw={**bisect_kw,
                                      # a whole file per evaluation: its most protective
                                      # end first (`bisect_risk`)
                                      "protective_end": spec.family == "strategy"})
    grid = spec.grid_knobs(fixed_params)
    known: dict = {}   # utility label -> its Measurement at the first repeat, if made
    if grid:   # a strategy with several knobs: bisection per grid configuration
        res, curve, known = joint_search(grid, fixed_params, utilities, **search)
    else:
        res, curve = search_knob(fixed_params, **search)
    if curves:
        param = curve.param
        hi = param.bounds(dataset.n)[1]
        for v in param.grid:
            if hi is None or v <= hi:
                curve(v)
    vals: dict[str, list] = {u: [] for u in utilities}
    rvals: dict[str, list] = {}
    det: dict[str, dict] = {}
    risk_samples: list[float] = []
    # an extra risk that does not read this method's release: "n/a" and why
    not_applicable = {label: why for label, (name, _) in (risks or {}).items()
                      if (why := _not_read(name, spec))}
    rel = None
    treatment: dict[str, str] = {}
    for r in range(repeats):
        # common random numbers from the seed tree (sdceval.core.rng): repeat r draws
        # every method's release and seeds every measure's query workload, k-means, data
        # split or linkage sample from (seed, r), the same for every method; a
        # deterministic method's release is the same at every repeat
        if rel is None or spec.random:
            rel = spec.apply(dataset, res.params, seed=method_seed(seed, r))
        treatment = treatment or column_treatment(dataset, rel)
        for label, (name, up) in utilities.items():
            m = known[label] if r == 0 and label in known else get_measure(name).evaluate(
                dataset, rel, _reseeded(name, up, seed, r))
            vals[label].append(m.value)
            det[label] = m.to_dict()
        matched = rspec.evaluate(dataset, rel, _reseeded(risk, risk_params, seed, r))
        risk_samples.append(float(matched.value))
        sampled = matched.details.get("sample") if isinstance(matched.details, dict) else None
        # the matched measure itself: only its readings (its value is the `risk` column)
        measured = [("", matched)]
        measured += [(label, get_measure(name).evaluate(dataset, rel,
                                                        _reseeded(name, rp, seed, r)))
                     for label, (name, rp) in (risks or {}).items()
                     if label not in not_applicable]
        for label, m in measured:
            for k, v in _readings(label, m).items():
                rvals.setdefault(k, []).append(v)
    return MethodMatch(res, sorted(curve.cache.items()),
                       {u: float(np.mean(v)) for u, v in vals.items()}, det,
                       {k: float(np.mean(v)) for k, v in rvals.items()},
                       {"risk": risk_samples, **{u: [float(x) for x in v]
                                                 for u, v in vals.items()},
                        **{k: [float(x) for x in v] for k, v in rvals.items()}},
                       sampled, not_applicable, treatment)


def _not_read(measure: str, method) -> str:
    """Why ``measure`` does not read releases of ``method`` ("" when it does)."""
    kinds = get_measure(measure).kinds
    if method.kind in kinds:
        return ""
    return f"{measure} does not read {method.kind} releases"


def _reseeded(measure: str, params: dict, seed: int, repeat: int) -> dict:
    """``params`` of ``measure`` at ``repeat`` of the seed tree rooted at ``seed``: its
    seed parameters, as its registry entry declares them, moved by ``seed + repeat``
    (`sdceval.core.rng.measure_params`)."""
    return measure_params(risk_spec(measure), params, seed, repeat)


def assemble(dataset_name: str, matches: list[MethodMatch], *, target: float,
             reference: str | None, risk: str, risk_params: dict,
             utilities: dict[str, tuple[str, dict]], seed: int, repeats: int) -> Comparison:
    """Collect per-method matches into a `Comparison` (a method whose target was not
    bracketed is listed, unranked, with a note: `Comparison.footnotes`)."""
    if not any(mm.result.bracketed for mm in matches):
        ranges = "; ".join(f"{mm.result.method}: {mm.result.describe_reach()}"
                           for mm in matches)
        top = max(mm.result.reachable[1] for mm in matches)
        if risk_spec(risk).larger_is_worse and top < target:
            raise SdcevalError(
                f"the file meets the target {risk} {target:.4g} as it is: every release, "
                f"the least protective included, is below it (at most {top:.4g}), so no "
                "protection is needed to meet it; give a lower target (--target) to "
                f"compare protection (reachable: {ranges})")
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
        measure_details={mm.result.method: mm.details for mm in matches},
        risk_readings={mm.result.method: mm.risks for mm in matches},
        not_applicable={mm.result.method: mm.not_applicable for mm in matches
                        if mm.not_applicable},
        risk_sample={mm.result.method: mm.risk_sample for mm in matches
                     if mm.risk_sample and mm.result.bracketed},
        utility_params=dict(utilities),
        samples={mm.result.method: mm.samples for mm in matches},
        treatment={mm.result.method: mm.treatment for mm in matches if mm.treatment})


#: `bisect_risk`'s own keywords, which `compare` passes on to every method's search
#: (``tolerance``: how close to the target a match must be, `bisect_risk`)
SEARCH_KEYWORDS = ("rtol", "max_evaluations", "tolerance")


@dataclass(frozen=True)
class ComparisonPlan:
    """A comparison's options, parsed and checked once against the registries
    (`plan_comparison`): what `run_comparison` runs.

    ``None`` (or empty) is "the data set decides" (`sdceval.compare.families`);
    `on` fills those in.  ``target`` is a number on the risk measure's scale, or
    ``None`` with ``reference`` the text of a release ``method:param=value`` whose risk
    is the target and ``reference_release`` its parsed ``(method, params)``;
    ``utilities`` and ``risks`` map a label to ``(measure, params)``
    (`parse_measure_list`); ``search`` holds bisection's own keywords
    (`SEARCH_KEYWORDS`)."""

    methods: tuple[str, ...] | None = None
    risk: str | None = None
    risk_params: dict = field(default_factory=dict)
    target: float | None = None
    reference: str | None = None
    reference_release: tuple[str, dict] | None = None
    utilities: dict[str, tuple[str, dict]] | None = None
    risks: dict[str, tuple[str, dict]] = field(default_factory=dict)
    method_params: dict[str, dict] = field(default_factory=dict)
    seed: int = 0
    repeats: int = 1
    curves: bool = True
    search: dict = field(default_factory=dict)
    #: the columns the intruder knows, declared once for every candidate (SPEC §5; issue
    #: 28 item 2); None: every QI and numeric attribute (and the kept columns)
    intruder: tuple[str, ...] | None = None
    #: risk constraints every ranked candidate meets at its matched point
    #: (`sdceval.compare.constraints`): label -> (measure, params, limit)
    constraints: dict = field(default_factory=dict)
    #: the families the default candidates come from (`sdceval.compare.families.
    #: FAMILIES`: sdc, synthetic, dp); None: classical SDC
    families: tuple[str, ...] | None = None
    #: the share of the records held out as the attacks' control set when one is needed
    #: (`sdceval.compare.control_set`); None: `sdceval.core.control.FRACTION`
    control: float | None = None

    def on(self, dataset) -> ComparisonPlan:
        """This plan with what the data set decides filled in (the methods its roles
        allow, the default risk, target and utilities: `comparison_defaults`; the
        default extra readings, `default_readings`) and the risk's parameters resolved
        with their defaults."""
        chosen = comparison_defaults(dataset, self.methods, self.risk, None,
                                     self.utilities, families=self.families)
        risk = chosen["risk"]
        readings = default_readings(chosen["methods"], risk, dataset)
        risks = dict(self.risks or check_risks(readings))
        # a constraint's measure is read at every matched release (its bound checked)
        for label, (name, params, _) in self.constraints.items():
            risks.setdefault(label, (name, params))
        out = dataclasses.replace(
            self, methods=tuple(chosen["methods"]), risk=risk,
            risk_params=_risk_spec(risk).resolve(
                knowing(risk, self.risk_params, self.intruder)),
            utilities=parse_measure_list(chosen["utilities"]),
            risks={label: (name, knowing(name, params, self.intruder))
                   for label, (name, params) in risks.items()})
        if self.target is None and self.reference is None:
            return dataclasses.replace(out, **_parse_target(chosen["target"]))
        return out


def plan_comparison(methods=None, *, risk: str | None = None, risk_params: dict | None = None,
                    target=None, utilities=None, risks=None, method_params: dict | None = None,
                    seed: int = 0, repeats: int = 1, curves: bool = True, intruder=None,
                    max_risk=None, guideline=None, families=None, control=None,
                    **search) -> ComparisonPlan:
    """Parse and check a comparison's options once (names and parameters against their
    registries, the closest name suggested), before any work: the one parse of
    `compare`'s keywords and of a ``[[comparison]]`` job's table.

    ``risk`` may carry its parameters after a colon (``linkage_risk:aggregate=mean``);
    ``risk_params`` adds to them.  ``target`` is a number or ``method:param=value``;
    ``utilities`` and ``risks`` are measure lists (``"propensity,emd:n_clusters=5"``,
    a list or a dict); ``method_params`` is ``{method: {param: value}}``, held fixed
    during that method's search; ``max_risk`` bounds other risks at the matched point
    (``"global=0.01"``: `sdceval.compare.constraints`), and so does ``guideline``
    (``"ema-0070"``: its metric at most its threshold as it reads it); ``families``
    (``"sdc,synthetic,dp"``) draws the default candidates from those families, matched
    on the attacks (`sdceval.compare.families`), ``control`` is the share of the records
    held out for the attacks (`sdceval.compare.control_set`); ``search`` takes
    `SEARCH_KEYWORDS` only."""
    stray = [k for k in search if k not in SEARCH_KEYWORDS]
    if stray:
        known = [*PLAN_KEYWORDS, *SEARCH_KEYWORDS, *ROLE_KEYWORDS]
        raise SdcevalError(f"compare: unknown keyword {stray[0]!r}."
                           f"{suggest(stray[0], known)} Keywords: {', '.join(known)}")
    search = dict(search)
    if search.get("tolerance") is not None:
        search["tolerance"] = check_tolerance(search["tolerance"])
    else:
        search.pop("tolerance", None)
    if methods is not None:
        methods = tuple(m.strip() for m in methods.split(",") if m.strip()) \
            if isinstance(methods, str) else tuple(methods)
        if not methods:
            raise SdcevalError("no method to compare")
        # a strategy may be given as its list of steps (texts or objects): its name
        methods = tuple(get_method(m).name if isinstance(m, str)
                        else strategy_spec(m).name for m in methods)
    if not isinstance(method_params or {}, dict) or not all(
            isinstance(p, dict) for p in (method_params or {}).values()):
        raise SdcevalError("method_params must map a method to its parameters, e.g. "
                           f"{{'mondrian': {{'models': ['k=5']}}}}; got {method_params!r}")
    method_params = {m: dict(p) for m, p in (method_params or {}).items()}
    for m, params in method_params.items():
        get_method(m).resolve(params)
    rparams = dict(risk_params or {})
    if risk is not None:
        risk, given = parse_reference(str(risk))
        if is_composite(risk):  # max(a,b): the worse of several risks (composite.py)
            risk = risk_spec(risk).name
        rparams = {**given, **rparams}
        _risk_spec(risk).resolve(rparams)
    if utilities is not None:
        utilities = parse_measure_list(utilities)
        for name, params in utilities.values():
            get_measure(name).resolve(params)
    for name, value, low in (("seed", seed, 0), ("repeats", repeats, 1)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) \
                or value < low:
            raise SdcevalError(f"{name} must be a whole number >= {low}, got {value!r}")
    if intruder is not None:
        intruder = tuple(c.strip() for c in intruder.split(",") if c.strip()) \
            if isinstance(intruder, str) else tuple(str(c) for c in intruder)
        if not intruder:
            raise SdcevalError("intruder: give the columns the intruder knows, e.g. "
                               "intruder='zip,age,sex,income'")
    if control is not None and (isinstance(control, bool) or not isinstance(
            control, (int, float)) or not 0 < control < 1):
        raise SdcevalError(f"control must be the share of the records held out, between "
                           f"0 and 1 (e.g. 0.2), got {control!r}")
    return ComparisonPlan(methods=methods, risk=risk, risk_params=rparams,
                          families=parse_families(families),
                          control=None if control is None else float(control),
                          intruder=intruder, utilities=utilities, risks=check_risks(risks),
                          method_params=method_params, seed=int(seed),
                          repeats=int(repeats), curves=bool(curves), search=dict(search),
                          constraints=merge(parse_constraints(max_risk),
                                            guideline_constraint(guideline)
                                            if guideline else {}),
                          **_parse_target(target))


#: the keywords of `plan_comparison` (and of `compare`), for the suggestion
PLAN_KEYWORDS = ("methods", "risk", "risk_params", "target", "utilities", "risks",
                 "method_params", "seed", "repeats", "curves", "progress", "intruder",
                 "max_risk", "guideline", "families", "control")


def _risk_spec(risk: str):
    spec = risk_spec(risk)
    if spec.category != "risk":
        raise SdcevalError(f"measure {risk!r} is not a risk measure (category "
                           f"{spec.category!r}); use e.g. linkage_risk")
    return spec


def target_risk(dataset, plan: ComparisonPlan) -> float:
    """The target of a plan filled in (`ComparisonPlan.on`): its number, or the risk of
    its reference release at the first repeat of the plan's seed tree (the release and
    the risk measure's own seed, as every candidate's first repeat)."""
    if plan.reference_release is None:
        return float(plan.target)
    name, params = plan.reference_release
    spec = get_method(name)
    rel = spec.apply(dataset, spec.experiment(params), seed=method_seed(plan.seed, 0))
    return float(risk_spec(plan.risk).evaluate(
        dataset, rel, _reseeded(plan.risk, plan.risk_params, plan.seed, 0)).value)


def task_match(data_ref, method, target_value, risk, risk_params, utilities, seed, repeats,
               fixed_params, risks=None, curves=True, search=None, control=None
               ) -> MethodMatch:
    """One method matched to the target (a pure task, by name and plain values, for the
    experiments' executors; ``data_ref`` is what `sdceval.core.loaders.open_ref`
    opens, or the data set itself; ``control`` how its control set was held out,
    `sdceval.compare.control_set.reopen`)."""
    return match_method(reopen(open_ref(data_ref), control), method, target_value, risk=risk,
                        risk_params=risk_params, utilities=utilities, seed=seed,
                        repeats=repeats, curves=curves, fixed_params=fixed_params,
                        risks=risks, **(search or {}))


def run_comparison(dataset, plan: ComparisonPlan, *, data_ref=None,
                   map_tasks: Callable | None = None,
                   say: Callable[[str], None] | None = None) -> Comparison:
    """The steps of every comparison (`compare` and the ``[[comparison]]`` job): the
    data set's defaults, the target's risk, one `task_match` per method, then
    `assemble`.  ``map_tasks(fn, tasks) -> results`` runs the tasks (an executor's
    ``map``; default: one after another, here); ``data_ref`` is what the tasks open
    (default: the data set itself); ``say`` gets the progress messages."""
    say = say or (lambda msg: None)
    given = plan.methods
    dataset, control = reserve(dataset, plan, say)   # the attacks' control set, if any
    plan = plan.on(dataset)
    if given and tuple(given) != plan.methods:   # methods read as whole-file strategies
        say("every candidate publishes every column: "
            + ", ".join(f"{a} read as {as_strategy(a)}" for a in given if as_strategy(a) != a))
    if plan.intruder:
        say(f"the intruder knows {', '.join(plan.intruder)} (every candidate)")
    if not given:
        for m, why in left_out(dataset, plan.families).items():
            say(f"{m} left out of the default candidates ({why}); name it in --methods "
                "to run it anyway")
    check_needs(dataset, plan)
    target = target_risk(dataset, plan)
    say(f"target {plan.risk} = {target:.6g}"
        + (f" (risk of {plan.reference})" if plan.reference else "")
        + f"; matching {len(plan.methods)} methods")
    if target == 0 and control is not None:
        import warnings
        warnings.warn(
            f"the target {plan.risk} is 0: on the {dataset.n} training records no attack "
            f"did better against the reference than against the {dataset.control.n} "
            "held-out ones, so candidates are matched where their attacks show nothing "
            "either; on a small file the attacks' intervals are wide: give a number "
            "(--target 0.05) or a less protective reference", UserWarning, stacklevel=2)
    tasks = [dict(data_ref=dataset if data_ref is None else data_ref, method=m,
                  target_value=target, risk=plan.risk, risk_params=plan.risk_params,
                  utilities=plan.utilities, seed=plan.seed, repeats=plan.repeats,
                  fixed_params=plan.method_params.get(m), risks=plan.risks,
                  curves=plan.curves, search=plan.search, control=control)
             for m in plan.methods]
    # progress per candidate and per evaluation (tasks run in this process report it)
    with reporting(RunProgress(say, len(tasks), "methods")):
        if map_tasks is None:  # each method's line as soon as it is matched
            matches = [_said(say, task_match(**t)) for t in tasks]
        else:
            matches = [_said(say, mm) for mm in map_tasks(task_match, tasks)]
    comp = assemble(dataset.name, matches, target=target, reference=plan.reference,
                    risk=plan.risk, risk_params=plan.risk_params, utilities=plan.utilities,
                    seed=plan.seed, repeats=plan.repeats)
    comp.constraints = {label: bound for label, (_, _, bound) in plan.constraints.items()}
    # the risks count the kept columns (their default): say so under the table
    from sdceval.measures._kept_keys import comparison_note
    comp.kept_note = comparison_note(
        dataset, [(plan.risk, plan.risk_params), *(plan.risks or {}).values()])
    return comp


def _said(say, mm: MethodMatch) -> MethodMatch:
    r = mm.result
    say(f"{r.method}: {r.parameter}={r.value:g} risk={r.risk:.6g} "
        f"({r.evaluations} evaluations{'' if r.bracketed else ', NOT bracketed'}; "
        + (f"matched within {r.describe_tolerance()})" if r.matched
           else f"NOT matched, {r.nearest_note()})"))
    return mm


def compare(dataset, methods=None, *, target=None, risk: str | None = None,
            risk_params: dict | None = None, utilities=None, seed: int = 0, repeats: int = 1,
            curves: bool = True, method_params: dict | None = None, risks=None,
            intruder=None, max_risk=None, guideline=None, families=None, control=None,
            progress: Callable[[str], None] | None = None,
            **kwargs) -> Comparison:
    """Match each method to the target risk by bisection, then evaluate utilities.

    Parameters
    ----------
    dataset : Dataset or pandas.DataFrame
        A DataFrame takes its roles as keywords (``qi=``, ``numeric=``, ``sensitive=``,
        ... : `sdceval.core.frames.ROLE_KEYWORDS`); `SEARCH_KEYWORDS` go to
        `bisect_risk`; any other keyword is an error naming the closest one.
    methods : sequence of str, optional
        Methods or whole-file strategies (``"mdav+recode"``, or a strategy as its list
        of steps: `sdceval.methods.strategy`).  Default: every method the data set's
        roles allow, of both families; on a file with numeric attributes and QIs, the
        built-in whole-file strategies, and a method named alone is read as its
        strategy (`sdceval.compare.families`).
    target : float or str, optional
        A risk value, or ``"method:param=value"`` whose risk is the target; default
        ``mondrian+intervals:k=5`` (k = 5 over every key) for whole-file strategies,
        else ``mdav:k=5`` with numeric attributes, ``mondrian:k=5`` without.
    risk, risk_params : risk measure (parameters may follow a colon,
        ``linkage_risk:aggregate=mean``) and its parameters; default
        ``reidentification`` (the share of records re-identified), with ``linkage_risk``
        read beside it when every release is numeric (`default_readings`).
    utilities : str, list or dict
        Utility measures (``"propensity,emd"`` or ``{"propensity": {"model": ...}}``).
    seed, repeats : the root of the seed tree and its repeats (`sdceval.core.rng`):
        repeat r draws every method's release and every measure's own randomness (query
        workload, ML split, linkage sample) from ``(seed, r)``, the same for every
        method; risks and utilities are averaged over the ``repeats``.
    curves : also evaluate each method's risk on its default grid (paper Fig. 1).
    method_params : ``{method: {param: value}}`` held fixed during the search.
    risks : str, list or dict, optional
        Extra risk measures to read at each matched release (same syntax as
        ``utilities``).
    intruder : str or sequence of str, optional
        The columns the intruder knows, the same for every candidate and every risk
        that takes them (``knows``); default every QI and numeric attribute, and the
        kept columns.  The matched measure's own readings (linkage_risk: both
        re-identification rates and the value in the other scale) are always reported.
    max_risk : str or dict, optional
        Risk constraints every ranked candidate meets at its matched point:
        ``"global=0.01"`` (sdcMicro's global risk, expected re-identifications per
        record, at most 1 %), ``{"household_risk": 0.02}``; a candidate that fails one
        is listed, not ranked (`sdceval.compare.constraints`).
    guideline : str, optional
        A guideline profile (`sdceval.guidelines`: ``"ema-0070"``, a profile file, its
        population assumptions after a colon, ``"ema-0070:population_size=300000"``):
        its metric, at most its threshold as its rounding reading reads it, is one more
        constraint; a candidate whose matched release fails it is listed with by how
        much, not ranked.  Its metric may also be the matched ``risk``.
    families : str or sequence of str, optional
        Draw the default candidates from these families (``"sdc,synthetic,dp"``):
        classical SDC, synthetic data (``cart_synthesis``, ``gaussian_copula``),
        differential privacy (``dp_histogram``).  With a synthetic or DP family the
        default risk is the worst of anonymeter's attacks,
        ``max(singling_out,linkability,inference)``, each candidate matched by its own
        knob (minbucket, shrinkage, ε), and record-linkage readings are "n/a" for
        releases with no record correspondence (`sdceval.compare.families`).
    control : float, optional
        The share of the records held out before anonymization as the attacks' control
        set (default 0.2), when a measure needs one (`sdceval.compare.control_set`).

    Returns
    -------
    Comparison
    """
    roles, search = split_roles(kwargs)
    plan = plan_comparison(methods, risk=risk, risk_params=risk_params, target=target,
                           utilities=utilities, risks=risks, method_params=method_params,
                           seed=seed, repeats=repeats, curves=curves, intruder=intruder,
                           max_risk=max_risk, guideline=guideline, families=families,
                           control=control, **search)
    return run_comparison(as_dataset(dataset, **roles), plan, say=progress)


# `Comparison` and its helpers live in `sdceval.compare.comparison`; they are named here
# too, where the callers of the comparison import them from
__all__ = ["ComparisonPlan", "Comparison", "FITTED_CHOICES", "MethodMatch", "SEARCH_KEYWORDS",
           "assemble", "check_needs", "check_risks", "compare", "fitted_notes", "interval",
           "match_method", "parse_measure_list", "parse_reference", "plan_comparison", "run_comparison",
           "target_risk", "task_match", "typed_params", "typed_value", "unreached_note"]
