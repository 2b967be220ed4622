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
"""
from __future__ import annotations

import numpy as np

from sdceval import privacy
from sdceval.core.measurement import Measurement
from sdceval.core.registry import Param, register_measure

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
    counts, inverse = privacy.class_counts(release.classes, codes, S)
    values = model.value(counts, Q)
    ok = model.satisfied(counts, Q)
    per_record = values[inverse]
    counted = np.ones(len(counts), dtype=bool)
    n_supp = 0
    if release.suppressed is not None and release.suppressed.any():
        n_supp = int(release.suppressed.sum())
        if not include_suppressed:
            only_supp = np.bincount(inverse, weights=(~release.suppressed).astype(float),
                                    minlength=len(counts)) == 0
            if not only_supp.all():
                counted = ~only_supp
    v = values[counted]
    value = float(v.min() if model.larger_is_safer else v.max())
    details = {"n_classes": int(len(counts)), "suppressed": n_supp}
    if threshold_given:
        bad = counted & ~ok
        details.update(satisfies=bool(not bad.any()), threshold=model.threshold,
                       violating_classes=int(bad.sum()),
                       violating_records=int(np.bincount(inverse, minlength=len(counts))[bad].sum()))
    return Measurement(who, value, per_record.astype(np.float64), details=details)


@register_measure(
    "k_anonymity", category="privacy", direction="higher_is_better", kinds=_KINDS,
    needs=("classes",),
    params=[Param("k", int, None, low=1, description="if given, report whether every "
                                                     "class has >= k records"), _SUPP],
    description="k-anonymity achieved: the smallest equivalence class / bucket size")
def k_anonymity(dataset, release, *, k=None, include_suppressed=False) -> Measurement:
    model = privacy.KAnonymity(1 if k is None else k)
    return _check(dataset, release, model, "k_anonymity", include_suppressed, k is not None)


@register_measure(
    "l_diversity", category="privacy", direction="higher_is_better", kinds=_KINDS,
    needs=("classes", "sensitive"),
    params=[Param("variant", str, "probabilistic", choices=privacy.L_VARIANTS,
                  description="probabilistic (n / max count, Li & Li), distinct "
                              "(number of values) or entropy (exp of the entropy)"),
            Param("l", float, None, low=1.0, description="if given, report whether every "
                                                         "class reaches ℓ"), _SUPP],
    description="ℓ-diversity achieved: the smallest ℓ over classes")
def l_diversity(dataset, release, *, variant="probabilistic", l=None,  # noqa: E741
                include_suppressed=False) -> Measurement:
    model = privacy.LDiversity(1.0 if l is None else l, variant)
    return _check(dataset, release, model, "l_diversity", include_suppressed, l is not None)


@register_measure(
    "t_closeness", category="privacy", direction="lower_is_better", kinds=_KINDS,
    needs=("classes", "sensitive"),
    params=[Param("distance", str, "emd", choices=privacy.DISTANCES,
                  description="emd (Li, Li & Venkatasubramanian) or js (Jensen–Shannon, "
                              "natural log, Li & Li)"),
            Param("ground", str, "auto", choices=privacy.GROUNDS,
                  description="EMD ground distance; auto = ordered for a numeric "
                              "sensitive attribute, else its hierarchy"),
            Param("t", float, None, low=0.0, low_inclusive=False,
                  description="if given, report whether every class is within t"), _SUPP],
    description="t-closeness achieved: the largest distance between a class's sensitive "
                "distribution and the table's")
def t_closeness(dataset, release, *, distance="emd", ground="auto", t=None,
                include_suppressed=False) -> Measurement:
    h = dataset.hierarchy(dataset.schema.sensitive)
    model = privacy.TCloseness(1.0 if t is None else t, distance, ground, h)
    return _check(dataset, release, model, "t_closeness", include_suppressed, t is not None)


@register_measure(
    "delta_disclosure", category="privacy", direction="lower_is_better", kinds=_KINDS,
    needs=("classes", "sensitive"),
    params=[Param("delta", float, None, low=0.0, low_inclusive=False,
                  description="if given, report whether every class is within δ"), _SUPP],
    description="δ-disclosure achieved: the largest |ln(P_class(s)/Q(s))| over classes "
                "and values (infinite if a class lacks a value of the table)")
def delta_disclosure(dataset, release, *, delta=None, include_suppressed=False
                     ) -> Measurement:
    model = privacy.DeltaDisclosure(1.0 if delta is None else delta)
    return _check(dataset, release, model, "delta_disclosure", include_suppressed,
                  delta is not None)


@register_measure(
    "recursive_cl_diversity", category="privacy", direction="lower_is_better", kinds=_KINDS,
    needs=("classes", "sensitive"),
    params=[Param("l", int, 2, low=2,
                  description="ℓ: the tail r_ℓ + ... + r_m of each class's sorted "
                              "sensitive counts"),
            Param("c", float, None, low=0.0, low_inclusive=False,
                  description="if given, report whether every class satisfies "
                              "r_1 < c (r_ℓ + ... + r_m)"), _SUPP],
    description="recursive (c,ℓ)-diversity achieved: the largest r_1 / (r_ℓ + ... + r_m) "
                "over classes (a class satisfies (c,ℓ) iff its value < c; infinite if a "
                "class has fewer than ℓ sensitive values)")
def recursive_cl_diversity(dataset, release, *, l=2, c=None,  # noqa: E741
                           include_suppressed=False) -> Measurement:
    model = privacy.RecursiveCLDiversity(1.0 if c is None else c, l)
    return _check(dataset, release, model, "recursive_cl_diversity", include_suppressed,
                  c is not None)
