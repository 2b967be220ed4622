"""Information-loss measures of generalized releases (SPEC §4, "Information loss").

* ``glm`` — Iyengar's general loss metric (Iyengar 2002, §3; used by Dewri et al. 2009
  §3 and 2010 §7).  The loss of a generalized cell of QI ``q``:

  - categorical: ``(M_cell − 1) / (M_q − 1)``, ``M`` the number of hierarchy leaves
    under the cell / in the whole hierarchy;
  - numeric: ``(U_cell − L_cell) / (U_q − L_q)`` in value units, the cell's largest and
    smallest leaf values over the hierarchy's (a cell ``[15-19]`` of ages 17..90 covers
    the leaves 17, 18, 19 and loses 2/73);
  - a domain of a single value loses 0; a suppressed record loses 1 on every QI.

  Normalization (our decision; Iyengar sums): by default ``per_record`` is the mean
  over the QIs (in [0, 1]) and the value the mean over records, so the original table
  gives 0 and a fully suppressed one 1 whatever the number of QIs and records;
  ``normalized=False`` gives Iyengar's and Dewri et al.'s scale: per record the sum over
  QIs (Dewri et al. 2009's ``u_a = (2.03, 1.7, ...)`` on three QIs), value the sum over
  records (the scale of Dewri et al. 2010's ε_GLM = 100..10000 on Adult).
* ``cm`` — classification metric (Iyengar 2002, §3): a record is penalized if it is
  suppressed or its class label differs from the majority label of its equivalence
  class; ``CM = Σ penalties / N``.  The majority is taken over the class's
  non-suppressed records; among tied labels the first in data order wins (the number of
  penalized records does not depend on that choice).  Needs ``schema.label``.
* ``discernibility`` — Bayardo & Agrawal (2005): ``Σ_E |E|²`` over the classes of kept
  records, plus ``N`` for every suppressed record; per record ``|E|`` or ``N``, so the
  vector sums to the value.
* ``avg_class_size`` — LeFevre et al. (2006) ``C_avg``: kept records / number of
  classes of kept records, divided by ``k`` if ``k`` is given (1 = every class exactly
  k); when every record is suppressed the release is one ``*`` class of N records.

References
----------
Iyengar (2002). Transforming data to satisfy privacy constraints. KDD.
Bayardo & Agrawal (2005). Data privacy through optimal k-anonymization. ICDE.
LeFevre, DeWitt, Ramakrishnan (2006). Mondrian multidimensional k-anonymity. ICDE.
Dewri, Ray, Ray, Whitley (2009). A comparison of disclosure control algorithms. EDBT, §3.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from sdceval.core.errors import SdcevalError
from sdceval.core.hierarchy import cell_loss
from sdceval.core.measurement import Measurement
from sdceval.core.registry import Param, register_measure
from sdceval.core.release import Release
from sdceval.measures.attribute_disclosure import release_classes


# -- building blocks (also used by the lattice search) ------------------------------
def qi_losses(dataset, cells: dict, suppressed: np.ndarray | None = None) -> dict:
    """``{qi: per-record cell_loss}``, 1 for suppressed records."""
    out = {}
    for q in dataset.schema.qis:
        loss = cell_loss(dataset.hierarchy(q), *cells[q])
        if suppressed is not None:
            loss = np.where(suppressed, 1.0, loss)
        out[q] = loss
    return out


def glm_per_record(dataset, cells: dict, suppressed: np.ndarray | None = None,
                   normalized: bool = True) -> np.ndarray:
    """Per-record GLM: mean (``normalized``) or sum over the QIs of `cell_loss`;
    suppressed records lose 1 per QI.  ``cells`` = ``{qi: (lo, hi)}`` for every QI."""
    total = sum(qi_losses(dataset, cells, suppressed).values())
    return total / len(dataset.schema.qis) if normalized else total


def _suppressed(dataset, release: Release) -> np.ndarray:
    s = release.suppressed
    if s is None:
        return np.zeros(dataset.n, dtype=bool)
    s = np.asarray(s, dtype=bool)
    if s.shape != (dataset.n,):
        raise SdcevalError(f"release of {release.method!r} has {s.shape} suppression flags; "
                           f"expected one per record ({dataset.n})")
    return s


def _cells(dataset, release: Release, who: str) -> dict:
    qis = dataset.schema.qis
    if not qis:
        raise SdcevalError(f"{who}: data set {dataset.name!r} has no quasi-identifiers; "
                           "give some columns role 'qi'")
    if release.cells is None:
        raise SdcevalError(
            f"{who} needs generalized cells, but the {release.kind} release of "
            f"{release.method!r} has none (Release.cells is None); use a generalization, "
            "Mondrian or bucketization release")
    missing = [q for q in qis if q not in release.cells]
    if missing:
        raise SdcevalError(f"{who}: release of {release.method!r} has no cells for QI(s) "
                           f"{', '.join(map(repr, missing))}")
    out = {}
    for q in qis:
        lo, hi = (np.asarray(a) for a in release.cells[q])
        m = dataset.hierarchy(q).n_leaves
        if lo.shape != (dataset.n,) or hi.shape != (dataset.n,):
            raise SdcevalError(f"{who}: cells of QI {q!r} have shape {lo.shape}; expected "
                               f"one per record ({dataset.n})")
        if len(lo) and (lo.min() < 0 or hi.max() >= m or (lo > hi).any()):
            raise SdcevalError(f"{who}: cells of QI {q!r} are not leaf-code ranges "
                               f"0 <= lo <= hi <= {m - 1}")
        out[q] = (lo, hi)
    return out


# -- measures -------------------------------------------------------------------------
@register_measure(
    "glm", category="information_loss", larger_is_worse=True,
    params=[Param("normalized", bool, True,
                  description="per record the mean over QIs and value the mean over "
                              "records (0..1); false: sums (Iyengar, Dewri et al.)")],
    description="Iyengar's general loss metric: per QI (leaves under cell − 1)/(leaves − 1) "
                "or interval width / range; suppressed records lose 1")
def glm(dataset, release: Release, *, normalized: bool = True) -> Measurement:
    """General loss metric (see the module docstring).

    Returns
    -------
    Measurement
        ``value`` mean (or sum) of ``per_record``; ``details``: ``per_qi`` (mean loss of
        each QI over all records, suppressed ones counting 1) and ``suppressed``.
    """
    cells = _cells(dataset, release, "glm")
    supp = _suppressed(dataset, release)
    losses = qi_losses(dataset, cells, supp)
    per = sum(losses.values())
    if normalized:
        per = per / len(losses)
    value = float(per.mean() if normalized else per.sum())
    return Measurement("glm", value, per, larger_is_worse=True,
                       details={"per_qi": {q: float(v.mean()) for q, v in losses.items()},
                                "suppressed": int(supp.sum()),
                                "normalized": normalized})


@register_measure(
    "cm", category="information_loss", larger_is_worse=True,
    description="classification metric (Iyengar): share of records that are suppressed or "
                "whose label differs from their class's majority label")
def cm(dataset, release: Release) -> Measurement:
    """Classification metric ``CM = Σ_r penalty(r) / N`` (see the module docstring).

    Returns
    -------
    Measurement
        ``per_record`` the 0/1 penalty; ``details``: ``minority`` (non-majority kept
        records) and ``suppressed``.
    """
    label = dataset.schema.label
    if label is None:
        raise SdcevalError(
            f"cm needs a class label, but data set {dataset.name!r} has none; give one "
            "column role 'label' (e.g. --label income)")
    classes, n_classes = release_classes(dataset, release, "cm")
    supp = _suppressed(dataset, release)
    lab, _ = pd.factorize(dataset.frame[label], sort=False)
    n_lab = int(lab.max()) + 1
    counts = np.bincount(classes * n_lab + lab, weights=(~supp).astype(float),
                         minlength=n_classes * n_lab).reshape(n_classes, n_lab)
    majority = counts.argmax(axis=1)
    minority = (lab != majority[classes]) & ~supp
    per = (minority | supp).astype(np.float64)
    return Measurement("cm", float(per.mean()), per, larger_is_worse=True,
                       details={"minority": int(minority.sum()), "suppressed": int(supp.sum())})


@register_measure(
    "discernibility", category="information_loss", larger_is_worse=True,
    description="discernibility metric (Bayardo & Agrawal): sum of squared class sizes, "
                "N per suppressed record")
def discernibility(dataset, release: Release) -> Measurement:
    """``DM = Σ_E |E|² + N · #suppressed`` (see the module docstring).

    Returns
    -------
    Measurement
        ``per_record`` = the record's class size (``N`` if suppressed), summing to the
        value; ``details``: ``normalized`` = DM / N² (1/N for distinct records, 1 for a
        single class or full suppression).
    """
    classes, n_classes = release_classes(dataset, release, "discernibility")
    supp = _suppressed(dataset, release)
    sizes = np.bincount(classes, weights=(~supp).astype(float), minlength=n_classes)
    n = dataset.n
    per = np.where(supp, float(n), sizes[classes])
    value = float(per.sum())
    return Measurement("discernibility", value, per, larger_is_worse=True,
                       details={"normalized": value / n ** 2, "suppressed": int(supp.sum())})


@register_measure(
    "avg_class_size", category="information_loss", larger_is_worse=True,
    params=[Param("k", int, None, low=1,
                  description="if given, divide by k (LeFevre et al.'s C_avg)")],
    description="average equivalence class size: kept records / classes of kept records "
                "(divided by k if given)")
def avg_class_size(dataset, release: Release, *, k: int | None = None) -> Measurement:
    """Average class size ``C_avg = (N_kept / C_kept) / k`` (see the module docstring).

    Returns
    -------
    Measurement
        No per-record vector; ``details``: ``n_classes`` and ``kept`` (records).
    """
    classes, _ = release_classes(dataset, release, "avg_class_size")
    supp = _suppressed(dataset, release)
    kept = classes[~supp] if (~supp).any() else classes
    n_classes = len(np.unique(kept))
    value = len(kept) / n_classes / (k if k is not None else 1)
    return Measurement("avg_class_size", float(value), None, larger_is_worse=True,
                       details={"n_classes": int(n_classes), "kept": int((~supp).sum()),
                                **({"k": k} if k is not None else {})})
