"""Does this release meet the guideline?  The verdict (issue 30 item 2).

`evaluate_guideline(name_or_profile, dataset, release, **overrides)` reads a profile
(`sdceval.guidelines.profiles`) and returns a `Verdict`:

* ``threshold`` profiles: the profile's measure (looked up in the registry; one not
  registered is an error, never a pass) is evaluated on the release with the profile's
  parameters, its ``attacker`` (when the measure takes one) and the user's population
  assumptions (``population_size``, ``sampling_fraction``, ``population``: passed to a
  measure that takes them, an error for one that does not).  The threshold is read by
  the profile's rounding reading (`sdceval.guidelines.rounding`): the effective bound
  ``b`` (``1/k`` of the implied minimum class size, or the threshold as written).
  ``passed``: ``value <= b`` (``at_most``; `rounding.exceeds`) or ``value >= b``
  (``at_least``).  ``margin = b - value`` (``value - b`` for ``at_least``): positive
  is room left, negative the excess; ``relative_margin = margin / b``.  The records
  that violate it: those whose own per-record value is beyond ``b`` (for a measure
  with a ``threshold`` parameter whose value is a share of records at risk, that
  parameter's per-record bound); the classes: the release's equivalence classes (or
  published key combinations) holding such a record.  Counts only.
* ``rules`` profiles (HIPAA Safe Harbor): `sdceval.guidelines.hipaa`.

A measure that takes a ``threshold`` parameter (records above it counted in its
details) gets the effective bound, unless the profile sets it.
"""
from __future__ import annotations

import math

import numpy as np

from sdceval.core.errors import SdcevalError
from sdceval.guidelines.outcome import Verdict, classes_of
from sdceval.guidelines.profiles import Profile, get_profile
from sdceval.guidelines.rounding import exceeds, get_rounding

#: the user's assumptions, passed to a measure that has the parameter
POPULATION_KEYS = ("population_size", "sampling_fraction", "population")
#: overrides of the profile itself
PROFILE_KEYS = ("measure", "threshold", "attacker", "rounding", "comparison", "params",
                "roles")


def evaluate_guideline(name_or_profile, dataset, release, **overrides) -> Verdict:
    """The `Verdict` of ``release`` of ``dataset`` under a guideline: a registered
    profile's name, a profile file (``.toml``) or a `Profile`.  ``overrides``: the
    profile's ``measure``, ``threshold``, ``attacker``, ``rounding``, ``comparison``,
    ``params`` (the measure's; any other name of a measure parameter goes there too),
    ``roles`` (``rules`` profiles), the population assumptions ``population_size``,
    ``sampling_fraction``, ``population``, and, for ``rules`` profiles, the roles
    ``age``, ``dates``, ``zip``, ``zip_population`` as keywords too."""
    profile, population = settle(name_or_profile, **overrides)
    if profile.kind == "rules":
        from sdceval.guidelines.hipaa import rule_verdict
        return rule_verdict(profile, dataset, release)
    return threshold_verdict(profile, dataset, release, population)


def settle(name_or_profile, **overrides) -> tuple[Profile, dict]:
    """The profile with the user's ``overrides`` (`evaluate_guideline`) and the
    population assumptions given: the one reading of a guideline's settings, for a
    verdict and for a comparison's constraint (`sdceval.compare.constraints`)."""
    from sdceval.guidelines.profiles import ROLE_KEYS
    profile = get_profile(name_or_profile)
    overrides = {k: v for k, v in overrides.items() if v is not None}
    roles = {k: overrides.pop(k) for k in ROLE_KEYS if k in overrides}
    population = {k: overrides.pop(k) for k in POPULATION_KEYS if k in overrides}
    stray = {k: overrides.pop(k) for k in list(overrides) if k not in PROFILE_KEYS}
    if profile.kind == "rules":
        extra = [*population, *stray]
        if extra:
            raise SdcevalError(f"guideline {profile.name!r} checks rules on columns: it "
                               f"takes no {extra[0]!r}; its settings are the roles "
                               f"{', '.join(ROLE_KEYS)}")
        if roles:
            overrides["roles"] = {**(overrides.get("roles") or {}), **roles}
    else:
        if roles:
            raise SdcevalError(f"guideline {profile.name!r} bounds a risk measure: "
                               f"{next(iter(roles))!r} is a role of rule profiles "
                               "(hipaa-safe-harbor)")
        if stray:   # the measure's own parameters (checked against it when it is read)
            overrides["params"] = {**(overrides.get("params") or {}), **stray}
    return profile.with_overrides(**overrides), population


def metric_of(profile: Profile, population: dict | None = None, record_bound: bool = True):
    """``(spec, params)``: the profile's measure from the registry and its parameters
    (the attacker, the population assumptions, with ``record_bound`` the per-record
    bound of a measure with a ``threshold`` parameter), checked; a
    profile that still needs the user's measure, threshold or attacker, or names a
    measure not registered, is an error that says so."""
    from sdceval.catalog import get_measure
    if profile.needs:
        raise SdcevalError(
            f"guideline {profile.name!r} needs your {', '.join(profile.needs)}: e.g. "
            "measure=individual_risk, threshold=0.01, attacker=journalist (sdceval "
            "check: --measure, --threshold, --attacker)")
    try:
        spec = get_measure(profile.measure)
    except SdcevalError as exc:
        raise SdcevalError(f"guideline {profile.name!r}: its metric {profile.measure!r} is "
                           f"not a registered measure, so it cannot be checked ({exc})"
                           ) from None
    worse = "at_most" if spec.larger_is_worse else "at_least"
    if profile.comparison != worse:
        raise SdcevalError(
            f"guideline {profile.name!r}: a larger value of {spec.name!r} is "
            f"{'riskier' if spec.larger_is_worse else 'safer'}, so its bound is "
            f"comparison = {worse!r}, not {profile.comparison!r}")
    names = {p.name for p in spec.params}
    params = dict(profile.metric_params)
    if "attacker" in names:
        params["attacker"] = profile.attacker
    for k, v in (population or {}).items():
        if k not in names:
            raise SdcevalError(
                f"guideline {profile.name!r}: its metric {spec.name!r} takes no {k} "
                f"({describe_population(spec)}); leave {k} out")
        params[k] = v
    bound = effective_bound(profile)
    if record_bound and "threshold" in names and "threshold" not in params and \
            params.get("reading") != "records_at_risk" and 0 < bound <= 1:
        params["threshold"] = bound
    spec.resolve(params)
    return spec, params


def describe_population(spec) -> str:
    names = {p.name for p in spec.params}
    if names & set(POPULATION_KEYS):
        return "it takes " + ", ".join(k for k in POPULATION_KEYS if k in names)
    return ("it takes no population assumption: a population, if it reads one, comes "
            "from the data set's design weights")


def effective_bound(profile: Profile) -> float:
    return get_rounding(profile.rounding).effective(profile.threshold) \
        if profile.comparison == "at_most" else float(profile.threshold)


def threshold_verdict(profile: Profile, dataset, release, population: dict) -> Verdict:
    spec, params = metric_of(profile, population)
    m = spec.evaluate(dataset, release, params)
    value = float(m.value)
    reading = get_rounding(profile.rounding)
    bound = effective_bound(profile)
    at_most = profile.comparison == "at_most"
    k = reading.min_class_size(profile.threshold) if at_most else None
    if not math.isfinite(value):
        passed = False
    else:
        passed = not exceeds(value, bound) if at_most else not exceeds(-value, -bound)
    margin = (bound - value) if at_most else (value - bound)
    rel = margin / bound if bound else None
    details = m.details if isinstance(m.details, dict) else {}
    record_bound = params.get("threshold", bound) if at_most else bound
    if isinstance(details.get("records_above"), int) and \
            details.get("threshold") == record_bound:
        # the measure counts them itself (risk_summary: over its own classes)
        records, classes = details["records_above"], details.get("classes_above")
    else:
        records, classes = _violations(m, release, record_bound, at_most)
    resolved = spec.resolve(params)
    assumptions = {"attacker": profile.attacker}
    for key in ("population_size", "sampling_fraction"):  # as the measure read them
        v = details.get(key, resolved.get(key))
        if v is not None:
            assumptions[key] = v
    if resolved.get("population") is not None:
        assumptions["population table"] = resolved["population"]
    if isinstance(details.get("population"), str):
        assumptions["population read"] = details["population"]
    elif not any(k in resolved for k in POPULATION_KEYS):
        assumptions["population read"] = describe_population(spec)
    return Verdict(
        guideline=profile.name, title=profile.title, kind="threshold",
        metric=_label(spec.name, profile.metric_params), attacker=profile.attacker,
        value=value, threshold=profile.threshold, rounding=profile.rounding,
        effective_threshold=bound, min_class_size=None if k in (None, math.inf) else k,
        comparison=profile.comparison, passed=bool(passed), margin=margin,
        relative_margin=rel, violating_records=records, violating_classes=classes,
        records=int(release.n), assumptions=assumptions,
        source={"citation": profile.citation, "url": profile.url, "note": profile.note})


def _label(name: str, params: dict) -> str:
    inner = ",".join(f"{k}={v}" for k, v in params.items())
    return f"{name}:{inner}" if inner else name


def _violations(m, release, bound: float, at_most: bool) -> tuple[int | None, int | None]:
    """Records whose per-record value is beyond ``bound`` and the classes holding one
    (None when the measure has no per-record values)."""
    r = m.per_record
    if r is None:
        return None, None
    r = np.asarray(r, dtype=np.float64)
    slack = 1e-9 * abs(bound)
    bad = (r > bound + slack) if at_most else (r < bound - slack)
    bad &= ~np.isnan(r)
    return int(bad.sum()), classes_of(release, bad)


__all__ = ["Verdict", "effective_bound", "evaluate_guideline", "metric_of", "settle"]
