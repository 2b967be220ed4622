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
  QIs, value the sum over records (the scale of Dewri et al. 2010's ε_GLM = 100..10000
  on Adult, DEWRI A15).  This is *not* Dewri et al. 2009's utility vector ``u_a = (2.03,
  1.7, ...)`` (§5.5): those values are reproduced by Σ_a (1 − m_a/M_a) with ``m_a`` the
  distinct values *present in the data* that fall in the cell and ``M_a`` those of the
  whole column (6 zips, 10 ages, 6 statuses; DEWRI A14), a different formula from
  Iyengar's ``(M_cell − 1)/(M − 1)`` over hierarchy leaves, which gives tuples 1, 4, 8
  of 𝒯_3a a loss of 0.572 (age numeric) or 0.622 (age categorical), neither 2.03 nor
  3 − 2.03.  Dewri et al.'s comparisons are tested on the printed u-vectors as given
  (tests/test_vector_comparators.py).
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

from sdceval.core.hierarchy import cell_loss
from sdceval.core.measurement import Measurement
from sdceval.core.registry import Param, register_measure
from sdceval.core.release import Release
from sdceval.measures._partial import class_form, class_table

#: the release kinds these measures read (classes and generalized cells; a bucketized
#: release's cells are exact)
_KINDS = ("generalized", "bucketized")


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


# -- measures -------------------------------------------------------------------------
@register_measure(
    "glm", category="information_loss", direction="lower_is_better", kinds=_KINDS,
    aggregate=lambda p: "mean" if p["normalized"] else "sum",
    label="generalization loss (GLM)",
    needs=("qis", "cells"),
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
    supp = release.suppressed
    losses = qi_losses(dataset, release.cells, supp)
    per = sum(losses.values())
    if normalized:
        per = per / len(losses)
    value = float(per.mean() if normalized else per.sum())
    return Measurement("glm", value, per,
                       details={"per_qi": {q: float(v.mean()) for q, v in losses.items()},
                                "suppressed": int(supp.sum()),
                                "normalized": normalized})


@register_measure(
    "cm", category="information_loss", direction="lower_is_better", kinds=_KINDS,
    aggregate="mean",
    label="classification metric (CM)",
    needs=("label",),
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
    classes, n_classes = release.class_index()
    supp = release.suppressed
    lab, _ = pd.factorize(dataset.frame[label], sort=False)
    n_lab = int(lab.max()) + 1
    counts = np.bincount(classes * n_lab + lab, weights=(~supp).astype(float),
                         minlength=n_classes * n_lab).reshape(n_classes, n_lab)
    majority = counts.argmax(axis=1)
    minority = (lab != majority[classes]) & ~supp
    per = (minority | supp).astype(np.float64)
    return Measurement("cm", float(per.mean()), per,
                       details={"minority": int(minority.sum()), "suppressed": int(supp.sum())})


def _discernibility_of_parts(prep, merged, params) -> Measurement:
    """``DM`` from the class sizes merged over parts of a table (`_partial.class_form`):
    ``Σ_{E kept} |E|² + N · #suppressed``."""
    sizes, supp = class_table(prep, merged)
    sizes = sizes[:, 0]
    n, n_supp = int(sizes.sum()), int(sizes[supp].sum())
    value = float(int((sizes[~supp].astype(object) ** 2).sum()) + n * n_supp)
    return Measurement("discernibility", value, None,
                       details={"normalized": value / n ** 2, "suppressed": n_supp})


def _avg_class_size_of_parts(prep, merged, params) -> Measurement:
    """``C_avg`` from the class sizes merged over parts of a table: kept records / kept
    classes (every class when every record is suppressed: the one ``*`` class)."""
    sizes, supp = class_table(prep, merged)
    sizes = sizes[:, 0]
    kept, k = sizes[~supp], params["k"]
    if len(kept):
        records, n_classes = int(kept.sum()), len(kept)
    else:
        records, n_classes = int(sizes.sum()), len(sizes)
    value = records / n_classes / (k if k is not None else 1)
    return Measurement("avg_class_size", float(value), None,
                       details={"n_classes": int(n_classes), "kept": int(kept.sum()),
                                **({"k": k} if k is not None else {})})


@register_measure(
    "discernibility", category="information_loss", direction="lower_is_better",
    aggregate="sum",
    label="discernibility",
    kinds=_KINDS, partial=class_form(_discernibility_of_parts),
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
    classes, n_classes = release.class_index()
    supp = release.suppressed
    sizes = np.bincount(classes, weights=(~supp).astype(float), minlength=n_classes)
    n = dataset.n
    per = np.where(supp, float(n), sizes[classes])
    value = float(per.sum())
    return Measurement("discernibility", value, per,
                       details={"normalized": value / n ** 2, "suppressed": int(supp.sum())})


@register_measure(
    "avg_class_size", category="information_loss", direction="lower_is_better",
    label="average class size",
    kinds=_KINDS, partial=class_form(_avg_class_size_of_parts),
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
    classes, _ = release.class_index()
    supp = release.suppressed
    kept = classes[~supp] if (~supp).any() else classes
    n_classes = len(np.unique(kept))
    value = len(kept) / n_classes / (k if k is not None else 1)
    return Measurement("avg_class_size", float(value), None,
                       details={"n_classes": int(n_classes), "kept": int((~supp).sum()),
                                **({"k": k} if k is not None else {})})
