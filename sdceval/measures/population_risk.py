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

The keys (``keys``, sdcMicro's ``keyVars``; default every QI) are read as the release
publishes them (`key_array`): a QI by its cell (`release_keys`), a cell covering the
whole domain being a missing value (sdcMicro's ``NA``, as local suppression leaves it).
Every release that carries QI cells is read: generalized (recoded, locally suppressed,
PRAM-ed), bucketized (exact QIs) and whole-file (composite) releases.

Numeric keys.  A statistical office may count a numeric attribute (role ``numeric``,
e.g. income) among the keys: ``keys=region,sex,income``.  It is read as categories, as
sdcMicro reads a key variable: a masked number (MDAV, noise, a perturbative step of a
whole-file strategy) by its released value — records that publish the same number share
the category, so MDAV with ``k`` on that key alone gives ``f_k >= k`` —, an interval (a
syntactic step's ``+intervals``, recoding breaks) by its cell, and an attribute the
release does not publish (a generalized release drops the numeric attributes; a
perturbative one the QIs) as missing (``-1``, matching every category: sdcMicro's
``NA``; ``details["unpublished_keys"]`` names them).  Perturbative releases are read too:
with the default keys (the QIs, which they do not publish) every record matches every
other, so name the numeric keys (``keys=income``) to read their numbers; a comparison on
a survey matches perturbative candidates on re-identification unless asked otherwise
(`sdceval.compare.families.default_risk`).  A perturbed number is read *as if it were
true*, as sdcMicro reads a microaggregated key variable: the PRAM reading below (risk 0
for a record whose published key is not its own) does not apply to numbers, because an
intruder matches numbers approximately (to the nearest published value), not exactly,
so a perturbed number does not break the match.  Reading the masked value as the record's
own never overstates protection: it keeps every match the exact reading would make.

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
value, so this changes nothing for them.  It applies to the categorical keys (the QIs)
only; numeric keys are read as if true (above).

Without a weight role the file is taken as the population, ``F_k = f_k`` and
``r_i = 1/f_k`` (sdcMicro without ``w``) — the sample-based risk, never lower than the
population risk of the same keys, so a forgotten ``--weight`` overstates risk, never
protection; ``details["population"]`` says which reading was made.  ``survey=false``
asks for ``1/f_k`` even with weights (sdcMicro's ``survey = FALSE``).
"""
from __future__ import annotations

import numpy as np

from sdceval.core.errors import SdcevalError, suggest
from sdceval.core.glossary import register_term
from sdceval.core.measurement import Measurement
from sdceval.core.registry import Param, register_measure
from sdceval.core.release import Release
from sdceval.measures.reidentification import ColumnNames
from sdceval.privacy.population_risk import (
    RISK_METHODS,
    cell_codes,
    global_risk,
    household_risks,
    individual_risks,
    release_keys,
)

#: release kinds whose QIs are published as cells (the keys read by default)
CELL_KINDS = ("generalized", "bucketized", "composite")
#: release kinds read with numeric keys too (module notes, "Numeric keys")
KEY_KINDS = CELL_KINDS + ("perturbative",)
#: roles a key may have
KEY_ROLES = ("qi", "numeric")

KEYS = Param("keys", ColumnNames(), (),
             description="the key variables (sdcMicro's keyVars): QIs and numeric "
                         "attributes, a masked number read by its released value "
                         "(comma-separated, or joined by + in a measure list: "
                         "keys=region+sex+income); default: every quasi-identifier")

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


def key_columns(dataset, keys=(), who: str = "population risk") -> list:
    """The key variables: ``keys`` checked against the data set (each a QI or a numeric
    attribute; an error names any other column and its role), or every QI."""
    s = dataset.schema
    if not keys:
        if not s.qis:
            raise SdcevalError(
                f"{who} needs key variables, but data set {dataset.name!r} has no "
                "quasi-identifiers; give some columns role 'qi' (e.g. --qi age,sex) or "
                "name numeric attributes with keys=...")
        return list(s.qis)
    for c in keys:
        if c not in dataset.frame.columns:
            raise SdcevalError(f"{who}: keys names {c!r}, which is not a column of data "
                               f"set {dataset.name!r}.{suggest(c, dataset.frame.columns)}")
        role = s[c].role if c in s else "ignore"
        if role not in KEY_ROLES:
            raise SdcevalError(
                f"{who}: keys names {c!r}, a column of role {role!r}; a key is a "
                "quasi-identifier or a numeric attribute (give it role 'qi' or "
                "'numeric', or leave it out of keys)")
    return list(keys)


def check_keys(dataset, params) -> None:
    """`MeasureSpec.data_check`: the ``keys`` parameter names keys of the data set."""
    key_columns(dataset, params.get("keys", ()))


def _number_codes(release: Release, column: str) -> np.ndarray:
    """One code per record for a masked number: records publishing the same value share
    a code; a missing value (NaN) is ``-1``."""
    import pandas as pd
    col = release.data[column]
    if not pd.api.types.is_numeric_dtype(col):
        raise SdcevalError(f"release column {column!r} is not numeric, so it cannot be "
                           "read as a numeric key; publish numbers or leave it out of "
                           "keys")
    x = col.to_numpy(dtype=np.float64)
    codes = np.full(len(x), -1, dtype=np.int64)
    seen = ~np.isnan(x)
    codes[seen] = np.unique(x[seen], return_inverse=True)[1].reshape(-1)
    return codes


def unpublished_keys(dataset, release: Release, keys=()) -> list:
    """The keys (`key_columns`) that ``release`` does not publish: neither as cells nor,
    for a numeric attribute, as a column of numbers (read as missing by `key_array`)."""
    s, cells = dataset.schema, release.cells or {}
    return [c for c in key_columns(dataset, keys) if c not in cells
            and not (c in s.numeric and c in release.data.columns)]


def key_array(dataset, release: Release, keys=(), who: str = "population risk"
              ) -> tuple[np.ndarray, list]:
    """``(key array, columns)``: one column per key (`key_columns`), read as the release
    publishes it (module notes, "Numeric keys"): a QI's cell (`release_keys`), a
    numeric attribute's interval cell or masked value, ``-1`` where the release does not
    publish the key (`unpublished_keys`) or suppressed the record as a whole."""
    cols = key_columns(dataset, keys, who)
    s, cells = dataset.schema, release.cells or {}
    out = np.full((release.n, len(cols)), -1, dtype=np.int64)
    qi_keys = release_keys(dataset, release) if release.cells is not None else None
    for j, c in enumerate(cols):
        if c in s.qis and qi_keys is not None:
            out[:, j] = qi_keys[:, s.qis.index(c)]
        elif c in cells:
            out[:, j] = cell_codes(dataset.hierarchy(c), *cells[c])
        elif c in s.numeric and c in release.data.columns:
            out[:, j] = _number_codes(release, c)
    if release.suppressed is not None and release.suppressed.any():
        out[release.suppressed] = -1
    return out, cols


def _risks(dataset, release: Release, method: str, survey: bool, alpha: float,
           keys=(), who: str = "population risk"):
    """Per-record ``(r, f_k, F_k)`` of the release's keys and the data set's weights;
    ``r = 0`` for a record whose published categorical keys do not hold its own (module
    notes: PRAM; numeric keys are read as if true)."""
    k, cols = key_array(dataset, release, keys, who)
    r, fk, Fk = individual_risks(k, dataset.weights, method=method, survey=survey,
                                 alpha=alpha)
    own = np.ones(release.n, dtype=bool)
    for q in cols:
        if q not in dataset.schema.qis or release.cells is None:
            continue
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


def _common(dataset, release, r, fk, method, survey, alpha, threshold, keys) -> dict:
    mean, total = global_risk(r)
    return {"keys": key_columns(dataset, keys),
            "unpublished_keys": unpublished_keys(dataset, release, keys),
            "expected_reidentifications": total, "global_risk_pct": 100.0 * mean,
            "above_threshold": int((r > threshold).sum()), "threshold": threshold,
            "sample_unique_records": int((fk == 1).sum()),
            "max_risk": float(r.max()) if len(r) else 0.0,
            "method": method if survey else "1/f_k", "alpha": alpha,
            "population": _population(dataset, survey)}


@register_measure(
    "individual_risk", category="risk", direction="lower_is_better", kinds=KEY_KINDS,
    aggregate="mean", no_partial=NO_PARTIAL, data_check=check_keys,
    label="global risk (expected share re-identified in the population)",
    unit="share of records", params=[METHOD, SURVEY, ALPHA, THRESHOLD, KEYS],
    description="sdcMicro's individual risk (Benedetti-Franconi) on the released keys "
                "with the design weights: per record r = E[1/F | f_k, F_k]; value = "
                "global risk (mean r), details: expected re-identifications in the "
                "population (sum r), records above threshold")
def individual_risk(dataset, release: Release, *, method: str = "approx",
                    survey: bool = True, alpha: float = 1.0, threshold: float = 0.1,
                    keys=()) -> Measurement:
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
    r, fk, _ = _risks(dataset, release, method, survey, alpha, keys,
                      "measure 'individual_risk'")
    mean, total = global_risk(r)
    details = _common(dataset, release, r, fk, method, survey, alpha, threshold, keys)
    # the figure a statistical office reports, beside the value in comparisons
    details["readings"] = {"expected_reidentifications": total}
    return Measurement("individual_risk", mean, r, details=details)


def _need_households(dataset, params=None) -> None:
    if params is not None:
        check_keys(dataset, params)
    if dataset.households is None:
        raise SdcevalError(
            f"measure 'household_risk' needs households, but data set {dataset.name!r} "
            "has no household column; name it with --household COLUMN (or "
            "household= in the Python API)")


@register_measure(
    "household_risk", category="risk", direction="lower_is_better", kinds=KEY_KINDS,
    aggregate="mean", no_partial=NO_PARTIAL, data_check=_need_households,
    label="household risk (expected share of records in a re-identified household)",
    unit="share of records", params=[METHOD, SURVEY, ALPHA, THRESHOLD, KEYS],
    description="sdcMicro's hierarchical risk: per record 1 - prod(1 - r_j) over the "
                "members j of its household (r: individual_risk); value = their mean "
                "(sdcMicro's hier_risk), details: their sum (hier_risk_ER)")
def household_risk(dataset, release: Release, *, method: str = "approx",
                   survey: bool = True, alpha: float = 1.0, threshold: float = 0.1,
                   keys=()) -> Measurement:
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
    r, fk, _ = _risks(dataset, release, method, survey, alpha, keys,
                      "measure 'household_risk'")
    h = household_risks(r, dataset.households)
    mean, _ = global_risk(h)
    details = _common(dataset, release, h, fk, method, survey, alpha, threshold, keys)
    details["households"] = len(np.unique(dataset.households))
    details["individual_global_risk"] = global_risk(r)[0]
    details["readings"] = {"expected_household_reidentifications":
                           details["expected_reidentifications"]}
    return Measurement("household_risk", mean, h, details=details)


__all__ = [
    "CELL_KINDS",
    "KEYS",
    "KEY_KINDS",
    "check_keys",
    "household_risk",
    "individual_risk",
    "key_array",
    "key_columns",
    "unpublished_keys",
]
