"""Worst-case attribute-disclosure risk P_loss (Li & Li 2009, §4.1) and its two baselines.

The adversary's prior about any record's sensitive value is the table's distribution
``Q`` (it survives even when every QI is suppressed); after seeing the release, the
posterior about record ``t`` is the sensitive distribution ``P(t)`` of ``t``'s equivalence
class (generalization) or bucket (bucketization).  The privacy loss of ``t`` is

    P_loss(t) = JS(Q, P(t)),    P_loss = max_t P_loss(t)          (natural log)

Li & Li §4.3 give the two special cases used as baselines: the fully suppressed table
(one class, ``P(t) = Q``, ``P_loss = 0``) and the original table (maximal ``P_loss``,
``U_loss = 0``); `suppressed_release` and `identity_release` build them as releases.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from sdceval.core.errors import SdcevalError
from sdceval.core.measurement import Measurement
from sdceval.core.registry import register_measure
from sdceval.core.release import Release
from sdceval.core.divergence import js_divergence, normalize


def class_sensitive_counts(classes: np.ndarray, n_classes: int, sensitive: np.ndarray,
                           m: int) -> np.ndarray:
    """``(C, m)`` matrix: number of records of class ``c`` with sensitive value ``s``."""
    return np.bincount(classes * m + sensitive, minlength=n_classes * m).reshape(n_classes, m)


# -- baselines -----------------------------------------------------------------------
def _qi_codes(dataset, who: str) -> dict[str, np.ndarray]:
    qis = dataset.schema.qis
    if not qis:
        raise SdcevalError(f"{who}: data set {dataset.name!r} has no quasi-identifiers; "
                           "give some columns role 'qi'")
    return {q: dataset.codes(q) for q in qis}


def identity_release(dataset) -> Release:
    """The original table as a generalized release (Li & Li §4.3, second baseline).

    Cells are exact (``lo = hi = code``); classes are the distinct combinations of QI
    values, so ``P_loss`` is the adversary's gain from the unprotected table and
    ``U_loss = 0``.
    """
    codes = _qi_codes(dataset, "identity_release")
    mat = np.stack(list(codes.values()), axis=1)
    _, classes = np.unique(mat, axis=0, return_inverse=True)
    return Release.generalized(
        dataset, dataset.frame[list(codes)], method="identity",
        classes=classes.ravel(), cells={q: (c, c) for q, c in codes.items()},
        info={"baseline": "original table (Li & Li 2009 §4.3)"})


def suppressed_release(dataset) -> Release:
    """Every QI fully suppressed (Li & Li §4.3, first baseline).

    One class; every cell is the whole leaf range ``[0, n_leaves - 1]`` of its QI, so
    ``P(t) = Q`` for every record (``P_loss = 0``) and every population is estimated
    by ``Q``.
    """
    codes = _qi_codes(dataset, "suppressed_release")
    n = dataset.n
    data = pd.DataFrame({q: np.full(n, dataset.hierarchy(q).labels[-1][0], dtype=object)
                         for q in codes})
    cells = {q: (np.zeros(n, dtype=np.int64),
                 np.full(n, dataset.hierarchy(q).n_leaves - 1, dtype=np.int64)) for q in codes}
    return Release.generalized(
        dataset, data, method="suppressed", classes=np.zeros(n, dtype=np.int64),
        cells=cells, suppressed=np.ones(n, dtype=bool),
        info={"baseline": "all quasi-identifiers suppressed (Li & Li 2009 §4.3)"})


# -- the measure ----------------------------------------------------------------------
@register_measure(
    "p_loss", category="risk", direction="lower_is_better", aggregate="max",
    label="worst-case attribute disclosure (P_loss)",
    kinds=("generalized", "bucketized"), needs=("sensitive",),
    description="worst-case attribute disclosure (Li & Li 2009 §4.1): max over records of "
                "JS(Q, P(t)), Q the table's sensitive distribution, P(t) that of t's "
                "class/bucket; per record the JS value")
def p_loss(dataset, release: Release) -> Measurement:
    """Worst-case privacy loss ``P_loss = max_t JS(Q, P(t))`` (Li & Li 2009, §4.1).

    Parameters
    ----------
    dataset : Dataset
        The original data; must have a sensitive attribute.
    release : Release
        A generalized or bucketized release (its classes or buckets).

    Returns
    -------
    Measurement
        ``value`` = the maximum, ``per_record`` = ``JS(Q, P(t))`` of every record,
        ``details`` = ``mean`` (the average record's loss) and ``n_classes``.

    Notes
    -----
    ``Q`` is the original table's sensitive distribution; ``P(t)`` the distribution of
    the *released* sensitive values (`Release.sensitive`) in ``t``'s class, which for
    bucketization (values permuted within a bucket) is the same multiset.  JS uses
    the natural log, so values lie in ``[0, ln 2]``; revealing a value of frequency
    ``q`` costs ``JS(Q, e_v)`` (0.488 for Craft-repair, 0.692 for Armed-Forces on Adult).
    """
    col = dataset.schema.sensitive
    m = dataset.hierarchy(col).n_leaves
    classes, n_classes = release.class_index()
    q = np.bincount(dataset.codes(col), minlength=m) / dataset.n
    p = normalize(class_sensitive_counts(classes, n_classes, release.sensitive(dataset), m))
    per_class = js_divergence(q[None, :], p)
    per_record = per_class[classes]
    return Measurement("p_loss", float(per_class.max()), per_record,
                       details={"mean": float(per_record.mean()), "n_classes": int(n_classes)})
