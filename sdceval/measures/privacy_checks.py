"""Privacy checks: the level of k-anonymity, ℓ-diversity, t-closeness and δ-disclosure a
release actually achieves (SPEC §4, "Privacy checks"; Li & Li §2.2).

Each check evaluates the *same* model objects Mondrian enforces (`sdceval.privacy`) on
the release's classes: equivalence classes (generalization, Mondrian), buckets
(bucketization, Anatomy) or groups (microaggregation: a perturbative release with
classes; the registry refuses one without).  The sensitive counts per class come from
`Release.sensitive` (bucketized releases: the permuted codes, whose multiset per bucket
is the original's; otherwise the data set's).  ``Q`` is the whole table's sensitive
distribution.

* ``k_anonymity``: value = min class size; per record = its class size.
* ``l_diversity``: value = min over classes of the achieved ℓ (``variant``).
* ``t_closeness``: value = max over classes of D(P_class, Q) (``distance``, ``ground``).
* ``delta_disclosure``: value = max over classes of max_s |ln(P_class(s)/Q(s))|
  (∞ if a class lacks a value of the table).
* ``recursive_cl_diversity``: value = max over classes of r_1 / (r_ℓ + … + r_m), the
  class's sorted sensitive counts (``l``, default 2; ∞ for a class with fewer than ℓ
  values); a class satisfies recursive (c, ℓ)-diversity iff its value < c
  (Machanavajjhala et al. 2007, Def. 4.2; `sdceval.privacy.RecursiveCLDiversity`).

Suppressed records (generalization with η > 0) are published as ``*`` rows and are
excluded from the value by default, so that an η-suppressed release reads as the
(j+1)-anonymous table SPEC §3 says it is; ``include_suppressed=True`` counts their
class too.  ``per_record`` always holds every record's class level.
If the threshold parameter (``k``, ``l``, ``t``, ``delta``, ``c``) is given, ``details``
reports ``satisfies`` and the number of violating classes and records.

The checks are generated from the privacy-model registry (issue 18): one measure per
registered model, named by the model's ``check_name``, whose parameters are the model's
own (the threshold optional), so a model registered later — in a user's own module —
is a check in ``evaluate`` with no change here.  Each check declares its partial form
(`sdceval.measures._partial`: the classes' sensitive counts merged over parts of a
table), so every check — a user's model's too — is computed by
`sdceval.experiments.partitioned.evaluate_partitioned` as well.
"""
from __future__ import annotations

import inspect
from dataclasses import replace

import numpy as np

from sdceval import privacy
from sdceval.core.errors import SdcevalError
from sdceval.core.measurement import Measurement
from sdceval.core.registry import MEASURES, Param, register_measure
from sdceval.measures._partial import class_form, class_table

_SUPP = Param("include_suppressed", bool, False,
              description="count the class of suppressed ('*') records in the value")


#: releases with classes: equivalence classes, buckets, microaggregation groups
_KINDS = ("generalized", "bucketized", "perturbative")


def _check(dataset, release, model: privacy.PrivacyModel, who: str,
           include_suppressed: bool, threshold_given: bool) -> Measurement:
    sens = dataset.schema.sensitive
    if model.needs_sensitive:
        S = dataset.hierarchy(sens).n_leaves
        codes = release.sensitive(dataset)
        Q = privacy.table_distribution(dataset.codes(sens), S)
    else:
        S, codes, Q = 1, np.zeros(dataset.n, dtype=np.int64), np.ones(1)
    # the release's class index (sorted order of the ids, as class_counts numbers
    # them) is O(n) and shared by every check and class measure of the release
    classes, n_classes = release.class_index()
    counts, inverse = privacy.class_counts(classes, codes, S, n_classes)
    n_supp = 0
    only_supp = np.zeros(len(counts), dtype=bool)
    if release.suppressed is not None and release.suppressed.any():
        n_supp = int(release.suppressed.sum())
        only_supp = np.bincount(inverse, weights=(~release.suppressed).astype(float),
                                minlength=len(counts)) == 0
    if getattr(model, "reads_cells", False):
        model = _AtCells(model, release, dataset, inverse, len(counts))
    value, details, values = check_classes(model, counts, Q, only_supp, n_supp,
                                           include_suppressed, threshold_given)
    return Measurement(who, value, values[inverse].astype(np.float64), details=details)


class _AtCells:
    """A model that judges classes by their cells (`PrivacyModel.reads_cells`: k-map
    with a population table) read at a release's classes: its ``value``/``satisfied``
    on the classes' counts are `value_cells` on the release's cells."""

    def __init__(self, model, release, dataset, inverse, n_classes: int):
        if release.cells is None:
            raise SdcevalError(f"{model.describe()}: the release has no generalized cells "
                               "(a perturbative or external release), which this check "
                               "counts the population in; check a generalized release")
        first = np.full(n_classes, -1, dtype=np.int64)
        first[inverse[::-1]] = np.arange(len(inverse))[::-1]   # a record of each class
        qis = dataset.schema.qis
        self.lo = np.stack([np.asarray(release.cells[q][0])[first] for q in qis], axis=1)
        self.hi = np.stack([np.asarray(release.cells[q][1])[first] for q in qis], axis=1)
        self.model = model
        self.larger_is_safer, self.threshold = model.larger_is_safer, model.threshold

    def value(self, counts, Q):
        return np.asarray(self.model.value_cells(counts, Q, self.lo, self.hi), np.float64)

    def satisfied(self, counts, Q):
        return self.model.satisfied_level(self.value(counts, Q))


def check_classes(model: privacy.PrivacyModel, counts: np.ndarray, Q, only_suppressed,
                  n_suppressed: int, include_suppressed: bool, threshold_given: bool
                  ) -> tuple[float, dict, np.ndarray]:
    """A check's value, details and per-class values from its classes' sensitive counts
    (``counts``: classes × sensitive values; ``only_suppressed``: the classes of
    suppressed records only, left out of the value unless ``include_suppressed`` or
    every class is one).  The value is the least safe class's: the minimum where larger
    is safer, else the maximum.  Shared with the partitioned form (`_partial_form`),
    which merges the class counts over parts of a table."""
    values = model.value(counts, Q)
    ok = model.satisfied(counts, Q)
    counted = np.ones(len(counts), dtype=bool)
    if n_suppressed and not include_suppressed and not only_suppressed.all():
        counted = ~only_suppressed
    v = values[counted]
    value = float(v.min() if model.larger_is_safer else v.max())
    details = {"n_classes": int(len(counts)), "suppressed": n_suppressed}
    if threshold_given:
        bad = counted & ~ok
        details.update(satisfies=bool(not bad.any()), threshold=model.threshold,
                       violating_classes=int(bad.sum()),
                       violating_records=int(counts.sum(axis=1)[bad].sum()))
    return value, details, values


def _check_params(cls) -> list[Param]:
    """The check's parameters: the model's, its threshold optional ("if given, report
    whether every class satisfies it"), a required non-threshold parameter defaulting
    to ``check_defaults``; then ``include_suppressed``."""
    out = []
    for i, p in enumerate(cls.params):
        if i == 0:
            # a check of any level, even beyond the records: "n" bounds only enforcement
            out.append(replace(p, default=None, grid=(), scale="linear", protection=None,
                               high=None if p.high == "n" else p.high,
                               description=f"if given, report whether every class "
                                           f"satisfies {p.name} ({p.description})"))
        elif p.default is None:
            out.append(replace(p, default=cls.check_defaults.get(p.name)))
        else:
            out.append(p)
    return out + [_SUPP]


def _model(name: str, cls, params: dict, hierarchy) -> tuple:
    """``(model, threshold given, include_suppressed)`` of a check's parameters."""
    kwargs = dict(params)
    given = kwargs.pop(cls.parameter)
    include_suppressed = kwargs.pop("include_suppressed")
    model = privacy.make_model(
        name, hierarchy=hierarchy if cls.uses_hierarchy else None, **kwargs,
        **({cls.parameter: given} if given is not None else cls.placeholder_threshold()))
    return model, given is not None, include_suppressed


def _partial_form(name: str, cls):
    """The check computed in parts of a table (`sdceval.measures._partial`): the
    classes' sensitive counts (sizes, for a model without a sensitive attribute) merged
    over the parts, then `check_classes` on them, as in memory.  ``Q`` is the merged
    counts' column sums over the table (the in-memory check's `table_distribution`)."""
    def finish(prep, merged, params) -> Measurement:
        model, given, include_suppressed = _model(name, cls, params, prep.hierarchy)
        counts, only_supp = class_table(prep, merged)
        Q = np.ones(1)   # as `_check`: a model without a sensitive attribute
        if cls.needs_sensitive:
            total = counts.sum(axis=0).astype(np.float64)
            Q = total / total.sum()
        n_supp = int(counts[only_supp].sum())
        value, details, _ = check_classes(model, counts, Q, only_supp, n_supp,
                                          include_suppressed, given)
        return Measurement(cls.check_name, value, None, details=details)
    return class_form(finish, sensitive=cls.needs_sensitive)


def _make_check(name: str, cls) -> None:
    params = _check_params(cls)
    threshold = cls.parameter

    def check(dataset, release, **kwargs) -> Measurement:
        sens = dataset.schema.sensitive
        hierarchy = dataset.hierarchy(sens) if cls.uses_hierarchy and sens else None
        model, given, include_suppressed = _model(name, cls, kwargs, hierarchy)
        model = model.bind(dataset)   # what it reads of the data set (k-map's population)
        return _check(dataset, release, model, cls.check_name, include_suppressed, given)

    check.__name__ = check.__qualname__ = cls.check_name
    check.__module__ = cls.__module__
    check.__doc__ = (f"{cls.title or name} achieved by a release: per class the model's "
                     f"value (`{cls.__module__}.{cls.__name__}.value`), per record its "
                     "class's (module docstring).")
    check.__signature__ = inspect.Signature(
        [inspect.Parameter("dataset", inspect.Parameter.POSITIONAL_OR_KEYWORD),
         inspect.Parameter("release", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
        + [inspect.Parameter(p.name, inspect.Parameter.KEYWORD_ONLY, default=p.default)
           for p in params])
    worst = "smallest" if cls.larger_is_safer else "largest"
    register_measure(
        cls.check_name, category="privacy",
        direction="higher_is_better" if cls.larger_is_safer else "lower_is_better",
        kinds=_KINDS, needs=("classes",) + (("sensitive",) if cls.needs_sensitive else ()),
        params=params, label=f"{cls.title or name} achieved",
        # the least safe class's value: over the kept records' classes (`check_classes`)
        aggregate=lambda p: ("min" if cls.larger_is_safer else "max")
        + ("" if p["include_suppressed"] else "_kept"),
        partial=_partial_form(name, cls),
        description=f"{cls.title or name} achieved: the {worst} {threshold} over classes "
                    f"(privacy model {name!r})")(check)


def _drop_check(name: str, cls) -> None:
    """A removed model's check goes with it."""
    MEASURES.remove(cls.check_name)


# one check per registered privacy model, including models registered later
privacy.MODELS.watch(_make_check, removed=_drop_check)
