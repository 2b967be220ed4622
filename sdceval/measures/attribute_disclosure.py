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

from sdceval.core.errors import SdcevalError
from sdceval.core.measurement import Measurement
from sdceval.core.registry import register_measure
from sdceval.core.release import Release
from sdceval.core.divergence import js_divergence, normalize


# -- release structure shared by the Li & Li measures ---------------------------------
def require_sensitive(dataset, who: str) -> tuple[str, np.ndarray, int]:
    """The sensitive column, its original codes and its domain size (clear error if none)."""
    col = dataset.schema.sensitive
    if col is None:
        raise SdcevalError(
            f"{who} needs a sensitive attribute but data set {dataset.name!r} has none; "
            "give one column role 'sensitive' (e.g. --sensitive occupation)")
    return col, dataset.codes(col), dataset.hierarchy(col).n_leaves


def released_sensitive(dataset, release: Release, who: str) -> np.ndarray:
    """The released sensitive codes, checked against the data set.

    Generalized and perturbative releases publish the sensitive column unchanged, so a
    release that does not carry ``sensitive_codes`` means the original codes; a
    bucketized release permutes them and must carry them.
    """
    col, codes, m = require_sensitive(dataset, who)
    _check_rows(dataset, release, who)
    s = release.sensitive_codes
    if s is None:
        if release.kind == "bucketized":
            raise SdcevalError(
                f"{who}: bucketized release of {release.method!r} carries no sensitive_codes "
                "(the permuted sensitive values); the method must set Release.sensitive_codes")
        return codes
    s = np.asarray(s)
    if s.shape != (dataset.n,) or not np.issubdtype(s.dtype, np.integer):
        raise SdcevalError(
            f"{who}: release of {release.method!r} has sensitive_codes of shape {s.shape} and "
            f"dtype {s.dtype}; expected {dataset.n} integer codes of column {col!r}")
    if len(s) and (s.min() < 0 or s.max() >= m):
        raise SdcevalError(
            f"{who}: release of {release.method!r} has sensitive codes outside 0..{m - 1} "
            f"(the {m} values of column {col!r})")
    return s.astype(np.int64, copy=False)


def release_classes(dataset, release: Release, who: str) -> tuple[np.ndarray, int]:
    """Class/bucket of every record as ``0..C-1`` (``np.unique`` inverse) and ``C``."""
    _check_rows(dataset, release, who)
    if release.classes is None:
        raise SdcevalError(
            f"{who} needs equivalence classes or buckets, but the {release.kind} release of "
            f"{release.method!r} has none (Release.classes is None). Use a generalization, "
            "Mondrian or bucketization release; for the unprotected table use "
            "sdceval.measures.attribute_disclosure.identity_release(dataset)")
    c = np.asarray(release.classes)
    if c.shape != (dataset.n,):
        raise SdcevalError(
            f"{who}: release of {release.method!r} has {c.shape} class ids; expected one per "
            f"record ({dataset.n})")
    uniq, inv = np.unique(c, return_inverse=True)
    return inv.ravel().astype(np.int64), len(uniq)


def class_sensitive_counts(classes: np.ndarray, n_classes: int, sensitive: np.ndarray,
                           m: int) -> np.ndarray:
    """``(C, m)`` matrix: number of records of class ``c`` with sensitive value ``s``."""
    return np.bincount(classes * m + sensitive, minlength=n_classes * m).reshape(n_classes, m)


def _check_rows(dataset, release: Release, who: str) -> None:
    if release.n != dataset.n:
        raise SdcevalError(
            f"{who}: release has {release.n} records but data set {dataset.name!r} has "
            f"{dataset.n}; a release must be row-aligned with its original")


# -- baselines -----------------------------------------------------------------------
def _qi_codes(dataset, who: str) -> dict[str, np.ndarray]:
    qis = dataset.schema.qis
    if not qis:
        raise SdcevalError(f"{who}: data set {dataset.name!r} has no quasi-identifiers; "
                           "give some columns role 'qi'")
    return {q: dataset.codes(q) for q in qis}


def _published_columns(dataset) -> list[str]:
    s = dataset.schema
    return s.qis + [c for c in (s.sensitive, s.label) if c is not None]


def identity_release(dataset) -> Release:
    """The original table as a generalized release (Li & Li §4.3, second baseline).

    Cells are exact (``lo = hi = code``); classes are the distinct combinations of QI
    values, so ``P_loss`` is the adversary's gain from the unprotected table and
    ``U_loss = 0``.
    """
    codes = _qi_codes(dataset, "identity_release")
    mat = np.stack(list(codes.values()), axis=1)
    _, classes = np.unique(mat, axis=0, return_inverse=True)
    sens = dataset.schema.sensitive
    return Release(
        data=dataset.frame[_published_columns(dataset)].copy(), method="identity",
        kind="generalized", classes=classes.ravel().astype(np.int64),
        cells={q: (c.copy(), c.copy()) for q, c in codes.items()},
        suppressed=np.zeros(dataset.n, dtype=bool),
        sensitive_codes=None if sens is None else dataset.codes(sens).copy(),
        info={"baseline": "original table (Li & Li 2009 §4.3)"})


def suppressed_release(dataset) -> Release:
    """Every QI fully suppressed (Li & Li §4.3, first baseline).

    One class; every cell is the whole leaf range ``[0, n_leaves - 1]`` of its QI, so
    ``P(t) = Q`` for every record (``P_loss = 0``) and every population is estimated
    by ``Q``.
    """
    codes = _qi_codes(dataset, "suppressed_release")
    n = dataset.n
    data = dataset.frame[_published_columns(dataset)].copy()
    for q in codes:
        data[q] = dataset.hierarchy(q).labels[-1][0]
    cells = {q: (np.zeros(n, dtype=np.int64),
                 np.full(n, dataset.hierarchy(q).n_leaves - 1, dtype=np.int64)) for q in codes}
    sens = dataset.schema.sensitive
    return Release(
        data=data, method="suppressed", kind="generalized",
        classes=np.zeros(n, dtype=np.int64), cells=cells, suppressed=np.ones(n, dtype=bool),
        sensitive_codes=None if sens is None else dataset.codes(sens).copy(),
        info={"baseline": "all quasi-identifiers suppressed (Li & Li 2009 §4.3)"})


# -- the measure ----------------------------------------------------------------------
@register_measure(
    "p_loss", category="risk", larger_is_worse=True,
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
        Any release with equivalence classes or buckets (`Release.classes`).

    Returns
    -------
    Measurement
        ``value`` = the maximum, ``per_record`` = ``JS(Q, P(t))`` of every record,
        ``details`` = ``mean`` (the average record's loss) and ``n_classes``.

    Notes
    -----
    ``Q`` is the original table's sensitive distribution; ``P(t)`` the distribution of
    the *released* sensitive values (`Release.sensitive_codes`) in ``t``'s class, which
    for bucketization (values permuted within a bucket) is the same multiset.  JS uses
    the natural log, so values lie in ``[0, ln 2]``; revealing a value of frequency
    ``q`` costs ``JS(Q, e_v)`` (0.488 for Craft-repair, 0.692 for Armed-Forces on Adult).
    """
    who = "p_loss"
    _, orig, m = require_sensitive(dataset, who)
    sens = released_sensitive(dataset, release, who)
    classes, n_classes = release_classes(dataset, release, who)
    q = np.bincount(orig, minlength=m) / dataset.n
    p = normalize(class_sensitive_counts(classes, n_classes, sens, m))
    per_class = js_divergence(q[None, :], p)
    per_record = per_class[classes]
    return Measurement("p_loss", float(per_class.max()), per_record, True,
                       {"mean": float(per_record.mean()), "n_classes": int(n_classes)})
