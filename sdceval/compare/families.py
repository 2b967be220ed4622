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

Surveys (issue 29).  A file with design weights (role ``weight``) is a sample of a
population, and what a statistical office bounds is the risk in the population: there
the risk matched is ``individual_risk`` (the global risk: expected re-identifications
in the population per record, sdcMicro's), the target sdcMicro's rule of 1 %
(`GLOBAL_RISK_RULE`), and the candidates on a whole file the statistical office's
toolkit on the keys (`SURVEY_STRATEGIES`: global recoding, local suppression to an
individual-risk threshold and PRAM, each with the numeric attributes top-coded, and
Mondrian over every key).  A risk named with ``--risk-measure`` keeps its own default
target.

Whole files (issue 28 item 1, SPEC §5).  On a file with both numeric attributes and
quasi-identifiers a single method publishes only its own columns (MDAV the numbers,
Mondrian the QIs), so its utility would rank a column set.  There the candidates are
whole-file strategies (`sdceval.methods.strategy`), which all publish the same columns:

* by default the built-in strategies the schema allows (`DEFAULT_STRATEGIES`: MDAV,
  noise, multiplicative noise and rank swapping on the numeric attributes, each with the
  QIs recoded along their hierarchies; full-domain generalization, Mondrian and
  bucketization over the QIs with the numeric attributes as intervals);
* methods named on their own whose releases would publish different columns
  (``--methods mdav,mondrian``) are read as their whole-file strategies
  (`as_strategy`): a perturbative method with the QIs recoded (``mdav+recode``), a
  syntactic one with the numeric attributes as intervals (``mondrian+intervals``);
  ``compare`` says so.  Methods that publish the same columns (``--methods
  mdav,noise``: the numeric attributes) are compared as they are (`same_columns`);
* the target is the risk of ``mondrian+intervals:k=5``: k-anonymity with k = 5 over
  every key the intruder knows (about 15 % of records re-identified on the test files),
  the whole-file meaning of "k = 5".  This departs from SPEC §5, whose reference is
  MDAV k = 5 on the numeric attributes beside the QIs at their first level
  (``mdav+recode:k=5,level=1``): on a whole file that release re-identifies 97.7 % of
  the records (2 000-record patient file of tests/test_compare_families.py: MDAV's
  groups of 5 are split by the QI cells, so most records are alone in their cell with
  their group's mean), which is a finding about that release, not a level of
  protection anyone would target; it remains available as ``--target
  mdav+recode:k=5,level=1``.
"""
from __future__ import annotations

from sdceval.catalog import MEASURES, METHODS, get_measure, get_method
from sdceval.core.errors import SdcevalError
from sdceval.methods.strategy import BUILTIN, INTERVALS, GROUP, SURVEY

#: the paper's four perturbative methods and its two utilities (Domingo-Ferrer et al.)
DEFAULT_METHODS = ("mdav", "noise", "rank_swap", "multiplicative_noise")
DEFAULT_UTILITIES = ("propensity", "emd")

#: what the methods of each family need of the schema (Dataset.schema attributes)
FAMILY_NEEDS = {"perturbative": ("numeric",), "generalization": ("qis",),
                "bucketization": ("qis", "sensitive")}
#: the utilities that apply to a release of any kind (SPEC §4 "Utility on every release")
EVERY_RELEASE_UTILITIES = "query_error,ml_utility"
#: the default candidates on a file with numeric attributes and QIs (module notes)
DEFAULT_STRATEGIES = tuple(BUILTIN)
#: the default candidates on a survey file (a weight role), with Mondrian over every
#: key (module notes)
SURVEY_STRATEGIES = (*SURVEY, "mondrian+intervals")
#: the default target on a survey file: sdcMicro's rule, a global risk of 1 % (the
#: expected re-identifications in the population, 1 % of the records)
GLOBAL_RISK_RULE = 0.01
#: the default reference of such a file: k-anonymity with k = 5 over every key the
#: intruder knows (Mondrian over the QIs and the numeric attributes as intervals); see
#: the module notes for why not MDAV k = 5 beside the QIs at their first level
WHOLE_FILE_TARGET = "mondrian+intervals:k=5"


#: the families of candidates a comparison draws from (issue 32): classical SDC (the
#: methods and whole-file strategies above), synthetic data, differential privacy
FAMILIES = ("sdc", "synthetic", "dp")
#: the families whose releases are new records (no record-linkage risk reads them):
#: their candidates are matched on the attacks
ATTACKED_FAMILIES = ("synthetic", "dp")
#: the risk every candidate is matched on when synthetic or DP candidates take part: the
#: worst of anonymeter's three attacks (WP29's criteria), which read every release; on a
#: data set an attack cannot run on (inference without a sensitive attribute) the worst
#: of the others (`attack_risk`)
ATTACKS = ("singling_out", "linkability", "inference")
ATTACK_RISK = f"max({','.join(ATTACKS)})"


def attack_risk(dataset=None) -> str:
    """`ATTACK_RISK` less the attacks ``dataset``'s roles do not allow (each checked as
    a comparison checks a measure: `MeasureSpec.check_data`)."""
    if dataset is None:
        return ATTACK_RISK
    parts = []
    for name in ATTACKS:
        try:   # the roles only: the control set is held out when the comparison runs
            get_measure(name).check_data(dataset, deferred=("control",))
        except SdcevalError:
            continue
        parts.append(name)
    if not parts:
        raise SdcevalError(f"no attack applies to data set {dataset.name!r}: they read "
                           "the quasi-identifiers, numeric attributes and the sensitive "
                           "attribute; give the columns their roles")
    return parts[0] if len(parts) == 1 else f"max({','.join(parts)})"


def family_of(method: str) -> str:
    """The family a candidate belongs to (`FAMILIES`): its registry family for
    synthetic and DP methods, else ``sdc``."""
    family = get_method(method).family
    return family if family in ATTACKED_FAMILIES else "sdc"


def _attacked_methods(families) -> list[str]:
    """The registered methods of the synthetic and DP families among ``families``."""
    return [m for f in ATTACKED_FAMILIES if f in (families or ())
            for m in sorted(METHODS) if get_method(m).family == f]


def parse_families(families) -> tuple[str, ...] | None:
    """``"sdc,synthetic,dp"`` (text or names) as a tuple of `FAMILIES`; None: none
    given.  An unknown family is an error naming the known ones."""
    if families is None:
        return None
    from sdceval.core.errors import suggest
    names = [f.strip() for f in (families.split(",") if isinstance(families, str)
                                 else families) if str(f).strip()]
    for f in names:
        if f not in FAMILIES:
            raise SdcevalError(f"families: unknown family {f!r}.{suggest(f, FAMILIES)} "
                               f"Families: {', '.join(FAMILIES)}")
    if not names:
        raise SdcevalError(f"families: give one or more of {', '.join(FAMILIES)}")
    return tuple(dict.fromkeys(names))


def family_candidates(dataset, families) -> list[str]:
    """The default candidates of ``families`` on ``dataset``: for ``sdc`` those of
    `applicable_methods`; for ``synthetic`` and ``dp`` every registered method of the
    family that is not too costly there (`MethodSpec.too_costly`: a DP histogram whose
    table would be too large) and has a knob."""
    out = list(applicable_methods(dataset)) if "sdc" in families else []
    for m in _attacked_methods(families):
        if get_method(m).too_costly(dataset):
            continue
        try:
            get_method(m).tunable_for({})
        except SdcevalError:
            continue
        out.append(m)
    if not out:
        raise SdcevalError(f"no candidate of the families {', '.join(families)} applies to "
                           f"data set {dataset.name!r}")
    return out


def whole_file(dataset) -> bool:
    """Whether candidates on ``dataset`` are whole-file strategies (module notes): it
    has both numeric attributes and quasi-identifiers."""
    return bool(dataset.schema.numeric) and bool(dataset.schema.qis)


def same_columns(dataset, methods) -> bool:
    """Whether the releases of ``methods`` on ``dataset`` publish the same columns
    (methods of one family: ``mdav`` and ``noise`` both publish the numeric attributes,
    so they are compared as they are, e.g. on the paper's ``linkage_risk``)."""
    from sdceval.core.release import publishable_columns
    return len({tuple(publishable_columns(dataset, get_method(m).kind))
                for m in methods}) <= 1


def as_strategy(method: str) -> str:
    """The whole-file strategy of a method named on its own (module notes): a
    perturbative method with the QIs recoded, a syntactic one with the numeric
    attributes as intervals; a strategy is itself."""
    family = get_method(method).family
    if family not in GROUP:
        return method
    return f"{method}+recode" if GROUP[family] == "numeric" else f"{method}+{INTERVALS}"


def _has(dataset, need: str) -> bool:
    value = getattr(dataset.schema, need)
    return bool(value) if need != "sensitive" else value is not None


def missing_needs(dataset, method: str) -> list[str]:
    """What ``dataset`` lacks for ``method`` (empty: it applies); a strategy needs what
    each of its steps needs."""
    spec = get_method(method)
    steps = [m for _, m in spec.step_specs()] if spec.family == "strategy" else [spec]
    out = []
    for s in steps:
        out += [n for n in FAMILY_NEEDS.get(s.family, ())
                if not _has(dataset, n) and n not in out]
    return out


def applicable_methods(dataset) -> list[str]:
    """Every registered method whose family's needs the schema meets, or on a whole
    file every built-in strategy it meets (module notes)."""
    if whole_file(dataset):
        pool = SURVEY_STRATEGIES if survey(dataset) else DEFAULT_STRATEGIES
        names = [m for m in pool if m in METHODS and not get_method(m).too_costly(dataset)]
    else:
        # a method whose registry entry leaves it out of the default candidates
        # (`MethodSpec.too_costly`: a huge lattice; `MethodSpec.alone`: a step such as
        # top/bottom coding) runs only when named
        # a synthetic or DP method neither (issue 32: none of the record-linkage risks a
        # comparison matches applies to its releases)
        names = [m for m in DEFAULT_METHODS if m in METHODS] + sorted(
            m for m in METHODS if m not in DEFAULT_METHODS
            and get_method(m).family != "strategy" and get_method(m).alone
            and get_method(m).kind != "synthetic"
            and not get_method(m).too_costly(dataset))
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


def left_out(dataset, families=None) -> dict[str, str]:
    """The built-in strategies, and the synthetic and DP methods of ``families``, left
    out of the default candidates on ``dataset`` because they are too costly or do not
    apply there (`MethodSpec.cost_check`), and why."""
    pool = _attacked_methods(families)
    if whole_file(dataset) and (not families or "sdc" in families):
        pool = [*(SURVEY_STRATEGIES if survey(dataset) else DEFAULT_STRATEGIES), *pool]
    return {m: why for m in pool if m in METHODS
            and (why := get_method(m).too_costly(dataset))}


def survey(dataset) -> bool:
    """Whether ``dataset`` is a sample with design weights (role ``weight``): its
    comparison matches the population risk (module notes)."""
    return dataset.schema.weight is not None


#: the risk a survey's comparison matches (module notes)
SURVEY_RISK = "individual_risk"


def default_risk(dataset, methods=()) -> str:
    """`ATTACK_RISK` when a candidate's release has no record correspondence (synthetic
    or DP: no record-linkage risk reads it); ``individual_risk`` (the population's
    global risk) on a survey whose candidates all publish keys it reads, else
    ``reidentification`` (module notes)."""
    if any(get_method(m).kind == "synthetic" for m in methods):
        return attack_risk(dataset)
    # the kinds whose QIs it reads with its default keys (a perturbative release is
    # read with numeric keys only: `sdceval.measures.population_risk`)
    from sdceval.measures.population_risk import CELL_KINDS
    if survey(dataset) and all(get_method(m).kind in CELL_KINDS for m in methods):
        return SURVEY_RISK
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


def default_target(dataset, methods=(), risk: str | None = None) -> str:
    """The reference whose risk is the target (module notes): on a survey matched on
    its global risk, sdcMicro's 1 % rule; else k = 5 over every key when the candidates
    are whole-file strategies, MDAV k = 5 with numeric attributes, Mondrian k = 5
    without."""
    if survey(dataset) and (risk is None or risk == SURVEY_RISK):
        return str(GLOBAL_RISK_RULE)
    families = {get_method(m).family for m in methods}
    if "strategy" in families:
        return WHOLE_FILE_TARGET
    # the reference publishes what the candidates publish: numbers when they are
    # perturbative, the QIs when they are syntactic (mondrian and bucketization on a
    # mixed file)
    if methods and "perturbative" not in families:
        return "mondrian:k=5"
    return "mdav:k=5" if dataset.schema.numeric else "mondrian:k=5"


def default_utilities(methods, dataset=None) -> str:
    """The default utilities of a comparison of ``methods`` (the paper's for
    perturbative methods, else those that read every release), with ``dataset`` only
    those its roles allow (`usable_utilities`)."""
    names = (DEFAULT_UTILITIES if all(get_method(m).family == "perturbative"
                                      for m in methods) else EVERY_RELEASE_UTILITIES)
    if dataset is None:
        return names
    usable = usable_utilities(dataset, names)
    # every default fits: the defaults as they are declared
    return names if usable == ",".join(names.split(",") if isinstance(names, str)
                                       else names) else usable


def usable_utilities(dataset, utilities) -> str:
    """Of ``utilities`` (a text or names), those ``dataset``'s roles allow
    (`MeasureSpec.check_data`: ``ml_utility`` needs a label or a sensitive attribute,
    ``propensity`` numeric attributes); all of them when none is allowed, so that the
    comparison still says what is missing."""
    from sdceval.compare.composite import risk_spec
    names = [u for u in (utilities.split(",") if isinstance(utilities, str)
                         else list(utilities or ())) if u]
    kept = []
    for name in names:
        try:
            risk_spec(name).check_data(dataset)
        except SdcevalError:
            continue
        kept.append(name)
    return ",".join(kept or names)


def comparison_defaults(dataset, methods=None, risk=None, target=None, utilities=None,
                        families=None) -> dict:
    """The options of a comparison on ``dataset``, each given one or its default
    (module notes): ``{"methods", "risk", "target", "utilities"}``; without methods,
    the candidates of ``families`` (`family_candidates`) or `applicable_methods`."""
    methods = list(methods) if methods else (
        family_candidates(dataset, families) if families else applicable_methods(dataset))
    if whole_file(dataset) and not same_columns(dataset, methods):
        # like with like: every candidate publishes every column
        methods = list(dict.fromkeys(as_strategy(m) for m in methods))
    for m in methods:
        lacking = missing_needs(dataset, m)
        if lacking:
            raise SdcevalError(f"method {m!r} needs {' and '.join(lacking)} attributes, "
                               f"which data set {dataset.name!r} does not have; give them "
                               "(--qi, --numeric, --sensitive or a schema) or drop the "
                               "method")
    risk = risk or default_risk(dataset, methods)
    target = target or default_target(dataset, methods, risk)
    return {"methods": methods, "risk": risk, "target": target,
            "utilities": utilities or default_utilities(methods, dataset)}


__all__ = ["ATTACK_RISK", "ATTACKED_FAMILIES", "FAMILIES", "attack_risk", "family_candidates", "family_of", "parse_families",
           "DEFAULT_METHODS", "DEFAULT_STRATEGIES", "DEFAULT_UTILITIES",
           "EVERY_RELEASE_UTILITIES", "FAMILY_NEEDS", "WHOLE_FILE_TARGET", "applicable_methods",
           "as_strategy", "left_out", "whole_file", "comparison_defaults", "default_readings", "default_risk",
           "default_target", "default_utilities", "missing_needs", "survey", "usable_utilities",
           "SURVEY_STRATEGIES", "GLOBAL_RISK_RULE"]
