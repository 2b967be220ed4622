"""Which methods, risk, target and utilities a comparison uses on a data set
(SPEC §5, "Across families"; issue 19 item 4).

A data controller with their own file (numeric attributes, quasi-identifiers, a
sensitive attribute) faces methods of both families at once: perturbative ones (MDAV,
noise, swapping) and syntactic ones (Mondrian, full-domain generalization,
bucketization, Anatomy).  `sdceval compare` without ``--methods`` therefore takes every
registered method whose needs the schema meets (`applicable_methods`), and the defaults
of the risk, the target and the utilities follow the data set:

* methods: a method's family declares what it needs (`FAMILY_NEEDS`: numeric
  attributes for the perturbative family; quasi-identifiers for generalization; QIs and
  a sensitive attribute for bucketization) and it must have a knob to tune
  (`MethodSpec.tunable_for`: its own parameter or its first privacy model's threshold);
  the order is `DEFAULT_METHODS` first (the paper's four), then the others by name;
* risk: ``reidentification`` (SPEC §4, the expected share of records re-identified, one
  meaning for every release kind: a figure a data controller can read), on every data
  set (issue 28 item 8: on Census, releases at "equal" record-linkage distance
  re-identify from 12.6 % to 61.4 % of the records); where every release is numeric,
  Domingo-Ferrer et al.'s ``linkage_risk`` is read at each matched release
  (`default_readings`), beside every attack the registry declares (re-identification,
  attribute inference, sample uniques: SPEC §5, every attack at the matched point); the
  reproduction of the paper matches on it explicitly
  (experiments/domingo_ferrer_table1.toml);
* target: the risk of ``mdav:k=5`` where numeric attributes exist, else of
  ``mondrian:k=5``;
* utilities: the paper's ``propensity,emd`` when every compared method is perturbative;
  otherwise the utilities that apply to every release kind, ``query_error`` (COUNT
  queries answered from any release) and ``ml_utility`` (a classifier trained on the
  release, scored on held-out original records).
"""
from __future__ import annotations

from sdceval.catalog import MEASURES, METHODS, get_measure, get_method
from sdceval.core.errors import SdcevalError

#: the paper's four perturbative methods and its two utilities (Domingo-Ferrer et al.)
DEFAULT_METHODS = ("mdav", "noise", "rank_swap", "multiplicative_noise")
DEFAULT_UTILITIES = ("propensity", "emd")

#: what the methods of each family need of the schema (Dataset.schema attributes)
FAMILY_NEEDS = {"perturbative": ("numeric",), "generalization": ("qis",),
                "bucketization": ("qis", "sensitive")}
#: the utilities that apply to a release of any kind (SPEC §4 "Utility on every release")
EVERY_RELEASE_UTILITIES = "query_error,ml_utility"


def _has(dataset, need: str) -> bool:
    value = getattr(dataset.schema, need)
    return bool(value) if need != "sensitive" else value is not None


def missing_needs(dataset, method: str) -> list[str]:
    """What ``dataset`` lacks for ``method`` (empty: it applies)."""
    family = get_method(method).family
    return [n for n in FAMILY_NEEDS.get(family, ()) if not _has(dataset, n)]


def applicable_methods(dataset) -> list[str]:
    """Every registered method whose family's needs the schema meets (module notes)."""
    names = [m for m in DEFAULT_METHODS if m in METHODS] + sorted(
        m for m in METHODS if m not in DEFAULT_METHODS)
    out = []
    for m in names:
        if missing_needs(dataset, m):
            continue
        try:
            get_method(m).tunable_for({})
        except SdcevalError:  # nothing to tune: it cannot be matched to a risk
            continue
        out.append(m)
    if not out:
        raise SdcevalError(
            f"no method applies to data set {dataset.name!r}: give numeric attributes "
            "(--numeric) for the perturbative methods, or quasi-identifiers (--qi, and a "
            "--sensitive attribute for bucketization)")
    return out


def default_risk(dataset) -> str:
    return "reidentification"


def default_readings(methods, risk: str, dataset=None) -> list[str]:
    """The extra risks read at every matched release when none are given (module
    notes): every measure its registry entry declares an attack (`MeasureSpec.attack`:
    ``reidentification``, ``attribute_inference``, ``sample_uniques``) other than the
    risk matched, that the data set's roles allow (``attribute_inference`` needs a
    sensitive attribute) and that accepts the release of at least one of ``methods``
    (a method whose release it does not read shows "n/a" and why); then the paper's
    record-linkage distance (``linkage_risk``) when every release is one it reads."""
    kinds = {get_method(m).kind for m in methods}
    out = []
    for spec in MEASURES.values():
        if not spec.attack or spec.name == risk or not kinds & set(spec.kinds):
            continue
        if dataset is not None:
            try:
                spec.check_data(dataset)
            except SdcevalError:  # the schema lacks what it reads: not an attack here
                continue
        out.append(spec.name)
    linkage = get_measure("linkage_risk")
    if risk != linkage.name and all(k in linkage.kinds for k in kinds):
        out.append(linkage.name)
    return out


def default_target(dataset) -> str:
    return "mdav:k=5" if dataset.schema.numeric else "mondrian:k=5"


def default_utilities(methods) -> str:
    if all(get_method(m).family == "perturbative" for m in methods):
        return DEFAULT_UTILITIES
    return EVERY_RELEASE_UTILITIES


def comparison_defaults(dataset, methods=None, risk=None, target=None, utilities=None
                        ) -> dict:
    """The options of a comparison on ``dataset``, each given one or its default
    (module notes): ``{"methods", "risk", "target", "utilities"}``."""
    methods = list(methods) if methods else applicable_methods(dataset)
    for m in methods:
        lacking = missing_needs(dataset, m)
        if lacking:
            raise SdcevalError(f"method {m!r} needs {' and '.join(lacking)} attributes, "
                               f"which data set {dataset.name!r} does not have; give them "
                               "(--qi, --numeric, --sensitive or a schema) or drop the "
                               "method")
    return {"methods": methods, "risk": risk or default_risk(dataset),
            "target": target or default_target(dataset),
            "utilities": utilities or default_utilities(methods)}


__all__ = ["DEFAULT_METHODS", "DEFAULT_UTILITIES", "EVERY_RELEASE_UTILITIES", "FAMILY_NEEDS",
           "applicable_methods", "comparison_defaults", "default_readings", "default_risk",
           "default_target", "default_utilities", "missing_needs"]
