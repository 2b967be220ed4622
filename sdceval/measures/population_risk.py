"""Population risk of a release of a sample file (issue 29 item 2): sdcMicro's
individual risk, global risk and household risk, on the release's keys.

A statistical office's file is a *sample*: record ``i`` stands for ``w_i`` population
units (its design weight, role ``weight``).  The risk that matters is that an intruder
who knows a population unit's keys finds it among the units that share them in the
*population*: ``1 / F`` for a combination held by ``F`` population units, of which the
sample shows ``f_k`` records and estimates ``F_k = Σ w`` (Benedetti & Franconi 1998;
Franconi & Polettini 2004; sdcMicro's ``measure_risk``, Templ, Kowarik & Meindl 2015,
§3).  The formulas, the counting of missing values (``alpha``) and every place where the
computation differs from sdcMicro 5.8.1 are in the kernel's notes,
`sdceval.privacy.population_risk`.

* ``individual_risk``: per record ``r_i = E[1/F | f_k, F_k]`` (``method="approx"``:
  sdcMicro's default; ``"exact"``); value = the **global risk** ``mean r_i`` (sdcMicro's
  ``global$risk``), details: the expected number of re-identifications in the population
  ``Σ r_i`` (``global$risk_ER``), the records whose risk exceeds ``threshold``.
* ``household_risk``: a household is re-identified when one of its members is: per
  record ``1 - Π_household (1 - r_j)``; value = their mean (sdcMicro's
  ``global$hier_risk``), details: their sum (``hier_risk_ER``), the percentage.

The keys are the release's QIs as published (`release_keys`): each record's cell, a
cell covering the whole domain being a missing value (sdcMicro's ``NA``, as local
suppression leaves it).  Every release that carries QI cells is read: generalized
(recoded, locally suppressed, PRAM-ed), bucketized (exact QIs) and whole-file
(composite) releases; perturbed numbers are no keys.

Perturbed keys (PRAM).  The intruder matches a population unit's true keys against
the published ones, so a record whose published keys do not hold its own (PRAM drew
another category for one of them) is not found by that match: its risk is 0, and the
risk of the others is that of their published combination (whose frequencies count
the records PRAM moved into it, as the intruder sees them).  sdceval knows which
records changed from the release's link to its records (in memory, or through the
private key file); the published file and PRAM's public matrices do not say it.
sdcMicro computes the risk of the PRAM-ed keys as if they were true (and warns that
its risk measures are not meaningful after PRAM): there the risk of a PRAM-ed file is
that of any file with those keys.  This reading credits PRAM with the matches it
breaks for an intruder who matches keys exactly; a probabilistic matcher who knows the
transition matrix can do better, which no measure here models (attacks: issue 32).
Recoding, generalization and suppression publish cells that hold every record's own
value, so this changes nothing for them.

Without a weight role the file is taken as the population, ``F_k = f_k`` and
``r_i = 1/f_k`` (sdcMicro without ``w``) — the sample-based risk, never lower than the
population risk of the same keys, so a forgotten ``--weight`` overstates risk, never
protection; ``details["population"]`` says which reading was made.  ``survey=false``
asks for ``1/f_k`` even with weights (sdcMicro's ``survey = FALSE``).
"""
from __future__ import annotations

import numpy as np

from sdceval.core.errors import SdcevalError
from sdceval.core.glossary import register_term
from sdceval.core.measurement import Measurement
from sdceval.core.registry import Param, register_measure
from sdceval.core.release import Release
from sdceval.privacy.population_risk import (
    RISK_METHODS,
    global_risk,
    household_risks,
    individual_risks,
    release_keys,
)

#: release kinds whose QIs are published as cells (the keys read here)
CELL_KINDS = ("generalized", "bucketized", "composite")

METHOD = Param("method", str, "approx", choices=RISK_METHODS,
               description="Benedetti-Franconi risk: approx = p/(f - 1 + p) for f > 2 "
                           "(sdcMicro's default), exact = E[1/F | f] (sdcMicro's "
                           "method='exact')")
SURVEY = Param("survey", bool, True,
               description="true: the file is a sample weighted by the weight role "
                           "(population risk); false: the file is the population, "
                           "r = 1/f_k (sdcMicro's survey = FALSE)")
ALPHA = Param("alpha", float, 1.0, low=0.0, high=1.0,
              description="how much a key combination with missing (suppressed) values "
                          "counts towards the combinations it matches (sdcMicro's alpha)")
THRESHOLD = Param("threshold", float, 0.1, low=0.0, high=1.0, low_inclusive=False,
                  unit="individual risk",
                  description="details count the records whose risk exceeds it")
register_term("expected_reidentifications", "expected re-identifications in the population",
              "the number of records an intruder is expected to re-identify in the "
              "population: the sum of the records' risks (sdcMicro's risk_ER / "
              "hier_risk_ER)", "riskier", unit="records")

register_term("expected_household_reidentifications",
              "expected members of re-identified households",
              "the sum over records of their household's risk (sdcMicro's hier_risk_ER: "
              "each household counted once per member)", "riskier", unit="records")

NO_PARTIAL = ("the frequencies f_k and F_k count every record of the file, and records "
              "with missing keys match others anywhere in it")


def _risks(dataset, release: Release, method: str, survey: bool, alpha: float):
    """Per-record ``(r, f_k, F_k)`` of the release's keys and the data set's weights;
    ``r = 0`` for a record whose published keys do not hold its own (module notes:
    PRAM)."""
    keys = release_keys(dataset, release)
    r, fk, Fk = individual_risks(keys, dataset.weights, method=method, survey=survey,
                                 alpha=alpha)
    own = np.ones(release.n, dtype=bool)
    for q in dataset.schema.qis:
        lo, hi = release.cells[q]
        codes = dataset.codes(q)
        own &= (lo <= codes) & (codes <= hi)
    return np.where(own, r, 0.0), fk, Fk


def _population(dataset, survey: bool) -> str:
    w = dataset.schema.weight
    if not survey:
        return "the file itself (survey=false: r = 1/f_k)"
    if w is None:
        return "the file itself (no weight role: r = 1/f_k; give --weight for a sample)"
    return f"sample weighted by {w!r}"


def _common(dataset, r, fk, method, survey, alpha, threshold) -> dict:
    mean, total = global_risk(r)
    return {"expected_reidentifications": total, "global_risk_pct": 100.0 * mean,
            "above_threshold": int((r > threshold).sum()), "threshold": threshold,
            "sample_unique_records": int((fk == 1).sum()),
            "max_risk": float(r.max()) if len(r) else 0.0,
            "method": method if survey else "1/f_k", "alpha": alpha,
            "population": _population(dataset, survey)}


@register_measure(
    "individual_risk", category="risk", direction="lower_is_better", kinds=CELL_KINDS,
    needs=("qis", "cells"), aggregate="mean", no_partial=NO_PARTIAL,
    label="global risk (expected share re-identified in the population)",
    unit="share of records", params=[METHOD, SURVEY, ALPHA, THRESHOLD],
    description="sdcMicro's individual risk (Benedetti-Franconi) on the released keys "
                "with the design weights: per record r = E[1/F | f_k, F_k]; value = "
                "global risk (mean r), details: expected re-identifications in the "
                "population (sum r), records above threshold")
def individual_risk(dataset, release: Release, *, method: str = "approx",
                    survey: bool = True, alpha: float = 1.0, threshold: float = 0.1
                    ) -> Measurement:
    """``mean_i r_i`` with ``r_i`` the Benedetti–Franconi risk of record ``i``'s
    released key combination (module notes; `sdceval.privacy.population_risk`).

    Returns
    -------
    Measurement
        ``per_record`` ``r_i``; ``details``: ``expected_reidentifications`` (``Σ r_i``,
        sdcMicro's ``risk_ER``), ``global_risk_pct``, ``above_threshold`` (records with
        ``r_i > threshold``), ``sample_unique_records`` (``f_k = 1``), ``max_risk``,
        ``method``, ``alpha``, ``population`` (how the file was read).
    """
    r, fk, _ = _risks(dataset, release, method, survey, alpha)
    mean, total = global_risk(r)
    details = _common(dataset, r, fk, method, survey, alpha, threshold)
    # the figure a statistical office reports, beside the value in comparisons
    details["readings"] = {"expected_reidentifications": total}
    return Measurement("individual_risk", mean, r, details=details)


def _need_households(dataset, params=None) -> None:
    if dataset.households is None:
        raise SdcevalError(
            f"measure 'household_risk' needs households, but data set {dataset.name!r} "
            "has no household column; name it with --household COLUMN (or "
            "household= in the Python API)")


@register_measure(
    "household_risk", category="risk", direction="lower_is_better", kinds=CELL_KINDS,
    needs=("qis", "cells"), aggregate="mean", no_partial=NO_PARTIAL,
    data_check=_need_households,
    label="household risk (expected share of records in a re-identified household)",
    unit="share of records", params=[METHOD, SURVEY, ALPHA, THRESHOLD],
    description="sdcMicro's hierarchical risk: per record 1 - prod(1 - r_j) over the "
                "members j of its household (r: individual_risk); value = their mean "
                "(sdcMicro's hier_risk), details: their sum (hier_risk_ER)")
def household_risk(dataset, release: Release, *, method: str = "approx",
                   survey: bool = True, alpha: float = 1.0, threshold: float = 0.1
                   ) -> Measurement:
    """``mean_i (1 - Π_{j in household(i)} (1 - r_j))`` (sdcMicro's ``hier_risk``;
    module notes).

    Returns
    -------
    Measurement
        ``per_record`` the household risk of each record's household; ``details``:
        ``expected_reidentifications`` (their sum, sdcMicro's ``hier_risk_ER``: each
        household counted once per member), ``global_risk_pct`` (``hier_risk_pct``),
        ``households``, ``individual_global_risk`` (the mean ``r_i``),
        ``above_threshold`` (records whose household risk exceeds ``threshold``), ...
    """
    _need_households(dataset)
    r, fk, _ = _risks(dataset, release, method, survey, alpha)
    h = household_risks(r, dataset.households)
    mean, _ = global_risk(h)
    details = _common(dataset, h, fk, method, survey, alpha, threshold)
    details["households"] = len(np.unique(dataset.households))
    details["individual_global_risk"] = global_risk(r)[0]
    details["readings"] = {"expected_household_reidentifications":
                           details["expected_reidentifications"]}
    return Measurement("household_risk", mean, h, details=details)


__all__ = ["CELL_KINDS", "household_risk", "individual_risk"]
