"""Prosecutor, journalist and marketer risk of a release (issue 30 item 1): ARX's
``RiskModelSampleSummary`` and El Emam's attacker models (El Emam 2013, "Guide to the
De-Identification of Personal Health Information", ch. 16; El Emam & Dankar 2008,
"Protecting privacy using k-anonymity", JAMIA 15(5)).

* **Prosecutor**: knows that the person is in the file; a record's risk is ``1/f_k``,
  ``f_k`` the size of its class in the release.
* **Journalist**: links a person from the population to the file; a record's risk is
  ``1/F_k``, ``F_k`` the number of population units in its class.
* **Marketer**: links everyone; the expected share re-identified, ``Σ_k f_k/F_k / n``
  (per record ``1/F_k``).

Readings (ARX's ``RiskSummary``): ``highest`` (the largest record risk), ``average``
(ARX's success rate: prosecutor ``u/n``, the mean of ``1/f_k`` over records;
journalist ``max(u / Σ F_k, Σ f_k/F_k / n)``; marketer ``Σ f_k/F_k / n``) and
``records_at_risk`` (the share of records whose risk is strictly above ``threshold``,
default 0.2 as ARX's risk view).  ARX gives the marketer only an average; the
marketer's record risks are the journalist's ``1/F_k``, so its highest risk and
records at risk are the journalist's.

The journalist's population class sizes ``F_k``: from a population table
(``population=path``, a CSV with the key columns: with a column ``count`` that is not
a key it is a table of counts, one row per combination; without, microdata, one row
per person), counting the units whose values fall in the record's published cells (a
value the data set's hierarchy does not know matches only a suppressed cell); else
``f_k / f`` with ``sampling_fraction`` (or ``f = n / population_size``); else the sum
of the design weights in the class when the data set has a weight role; else the file
is the population (``F_k = f_k``, the journalist is the prosecutor: ARX without a
population).  The classes are those of `population_uniqueness` (`published_classes`).

Where this differs from ARX: ARX reads a population from its data subset's superset
(``handle.getSuperset()``) generalized like the sample; here a table of original
values is matched against the published cells, which is the same for a release
generalized by one hierarchy level per attribute and also reads locally recoded cells.
Records suppressed as a whole form one class (`population_uniqueness` notes), where
ARX leaves them out.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from sdceval.core.errors import SdcevalError
from sdceval.core.measurement import Measurement
from sdceval.core.registry import Param, register_measure
from sdceval.core.release import Release
from sdceval.core.combos import combine
from sdceval.measures._compatibility import CHUNK, first
from sdceval.measures.population_risk import CELL_KINDS
from sdceval.measures.population_uniqueness import (
    NO_PARTIAL,
    POPULATION_SIZE,
    SAMPLING_FRACTION,
    published_classes,
    sample_population,
)
from sdceval.measures.reidentification import KEPT, KNOWS, encode
from sdceval.privacy.population_models import ATTACKERS, READINGS, attacker_risks

ATTACKER = Param("attacker", str, "prosecutor", choices=ATTACKERS,
                 description="prosecutor (knows the person is in the file: 1/f_k), "
                             "journalist (links from the population: 1/F_k) or marketer "
                             "(expected share re-identified)")
READING = Param("reading", str, "highest", choices=READINGS,
                description="highest record risk, average (ARX's success rate) or "
                            "records_at_risk (share of records with risk > threshold)")
THRESHOLD = Param("threshold", float, 0.2, low=0.0, high=1.0, low_inclusive=False,
                  unit="record risk",
                  description="records whose risk is strictly above it are at risk "
                              "(ARX's default 0.2)")
POPULATION = Param("population", str, None,
                   description="CSV population table for the journalist: the key columns "
                               "plus a 'count' column, or microdata (one row per person)")
COUNT = "count"


def _aggregate(params: dict) -> str | None:
    """The value is the per-record mean or max under these readings."""
    if params.get("reading") == "highest":
        return "max"
    if params.get("reading") == "average" and params.get("attacker") != "journalist":
        return "mean"
    return None


def read_population(path: str, keys, who: str) -> tuple[pd.DataFrame, np.ndarray]:
    """The key columns of the population table at ``path`` and one count per row
    (module notes: a ``count`` column, else 1 per row)."""
    p = Path(path)
    if not p.is_file():
        raise SdcevalError(f"{who}: population table {path!r} does not exist; give a CSV "
                           "with the key columns (and a 'count' column for counts)")
    table = pd.read_csv(p, dtype=str, keep_default_na=False)
    missing = [k for k in keys if k not in table.columns]
    if missing:
        raise SdcevalError(f"{who}: population table {path!r} lacks the key column(s) "
                           f"{', '.join(map(repr, missing))} that the release publishes; "
                           "add them (or restrict knows=)")
    if COUNT in table.columns and COUNT not in keys:
        counts = pd.to_numeric(table[COUNT], errors="coerce").to_numpy(np.float64)
        bad = ~np.isfinite(counts) | (counts < 0) | (counts != np.round(counts))
        if bad.any():
            row = int(np.flatnonzero(bad)[0])
            raise SdcevalError(f"{who}: population table {path!r}: column 'count' must "
                               f"hold whole numbers >= 0, row {row + 2} has "
                               f"{table[COUNT].iloc[row]!r}")
    else:
        counts = np.ones(len(table))
    return table[list(keys)], counts


def population_class_sizes(dataset, lk, keys, table, counts, rep) -> np.ndarray:
    """``F`` per class (``rep``: a record of each class): the population units whose
    codes fall in the class's published cells on every key.  Keys whose published
    cells do not overlap are joined exactly (a unit's code names its cell); otherwise
    the units are tested against every class, in chunks of bounded memory."""
    names = list(lk.how)
    cols = [names.index(k) for k in keys]
    lo, hi, m = lk.lo[rep][:, cols], lk.hi[rep][:, cols], lk.m[cols]
    pcodes = np.stack([encode(dataset.hierarchy(k), table[k]) for k in keys], axis=1) \
        if keys else np.zeros((len(table), 0), dtype=np.int64)
    ids, count = combine([pcodes[:, j] for j in range(len(keys))], len(table))
    w = np.bincount(ids, weights=counts, minlength=count)
    P = pcodes[first(ids, count)] if len(table) else pcodes
    u = len(rep)
    # the cell each population code falls in, per key, when the cells are disjoint
    cell_of, cell_ids = [], []
    for j in range(len(keys)):
        cid, uniq = pd.factorize(pd.MultiIndex.from_arrays([lo[:, j], hi[:, j]]))
        a, b = uniq.get_level_values(0).to_numpy(), uniq.get_level_values(1).to_numpy()
        order = np.argsort(a)
        if np.any(a[order][1:] <= b[order][:-1]):
            break                                   # overlapping cells: general path
        lut = np.full(int(m[j]) + 1, -1, dtype=np.int64)   # index m: unknown value
        for k, (x, y) in enumerate(zip(a, b)):
            lut[x:y + 1] = k
            if x == 0 and y == m[j] - 1:
                lut[m[j]] = k
        cell_of.append(lut[np.where(P[:, j] < 0, m[j], P[:, j])])
        cell_ids.append(cid.astype(np.int64))
    else:
        hit = (np.all(np.stack(cell_of, axis=1) >= 0, axis=1) if keys
               else np.ones(count, dtype=bool))
        both = [np.concatenate([cell_ids[j], cell_of[j][hit]]) for j in range(len(keys))]
        joint, nj = combine(both, u + int(hit.sum()))
        sizes = np.bincount(joint[u:], weights=w[hit], minlength=nj)
        return sizes[joint[:u]]
    whole = (lo == 0) & (hi == m - 1)
    F = np.zeros(u)
    step = max(1, CHUNK // max(1, count * max(1, len(keys))))
    for s in range(0, u, step):
        sl = slice(s, s + step)
        Pb = P[None, :, :]
        ok = ((Pb >= lo[sl, None, :]) & (Pb <= hi[sl, None, :])) | \
             ((Pb < 0) & whole[sl, None, :])
        F[sl] = ok.all(axis=2) @ w
    return F


@register_measure(
    "risk_summary", category="risk", direction="lower_is_better", kinds=CELL_KINDS,
    needs=("qis", "cells"), aggregate=_aggregate, no_partial=NO_PARTIAL,
    params=[ATTACKER, READING, THRESHOLD, POPULATION, SAMPLING_FRACTION, POPULATION_SIZE,
            KNOWS, KEPT],
    label="re-identification risk of an attacker (ARX's risk summary)",
    unit="probability / share of records",
    description="prosecutor (1/f_k), journalist (1/F_k in the population) or marketer "
                "risk on the published keys: highest, average (success rate) or records "
                "at risk above a threshold; per record the attacker's risk")
def risk_summary(dataset, release: Release, *, attacker: str = "prosecutor",
                 reading: str = "highest", threshold: float = 0.2,
                 population: str | None = None, sampling_fraction: float | None = None,
                 population_size: float | None = None, knows=(), kept: bool = True
                 ) -> Measurement:
    """The ``attacker``'s ``reading`` of the release's re-identification risk
    (module notes; `sdceval.privacy.population_models.attacker_risks`).

    Returns
    -------
    Measurement
        ``per_record``: ``1/f_k`` (prosecutor) or ``1/F_k`` (journalist, marketer).
        ``details``: ``prosecutor`` / ``journalist`` / ``marketer`` (each attacker's
        readings), ``records_above`` / ``classes_above`` (the chosen attacker's counts
        above ``threshold``), ``threshold``, ``population`` (how F_k was set),
        ``population_size``, ``sampling_fraction``, ``readings`` (flat:
        ``"<attacker>_<reading>"``).
    """
    who = "measure 'risk_summary'"
    if population is not None and (sampling_fraction is not None
                                   or population_size is not None):
        raise SdcevalError(f"{who}: give population=TABLE or sampling_fraction / "
                           "population_size, not both")
    ids, count, lk = published_classes(dataset, release, knows=knows, kept=kept, who=who)
    n = dataset.n
    f = np.bincount(ids, minlength=count).astype(np.float64)
    rep = first(ids, count)
    if population is not None:
        keys = [a for a, h in lk.how.items() if h != "distance"]
        table, counts = read_population(population, keys, who)
        F = population_class_sizes(dataset, lk, keys, table, counts, rep)
        small = F < f
        if small.any():
            raise SdcevalError(
                f"{who}: population table {population!r} holds fewer units than the "
                f"release in {int(small.sum())} class(es) (e.g. {int(F[small][0])} < "
                f"{int(f[small][0])}); the population must contain the sample")
        N, how = float(counts.sum()), f"population table {population!r}"
    elif sampling_fraction is not None or population_size is not None:
        N, how = sample_population(dataset, sampling_fraction, population_size, who)
        F = f * (N / n) if n else f
    elif dataset.weights is not None:
        F = np.bincount(ids, weights=dataset.weights, minlength=count)
        N, how = sample_population(dataset, None, None, who)
        F = np.maximum(F, f)   # a class's population holds at least its sample
    else:
        F, (N, how) = f, sample_population(dataset, None, None, who)
    risks = attacker_risks(f, F, threshold)
    per = 1.0 / (f if attacker == "prosecutor" else F)[ids] if n else np.zeros(0)
    # the marketer's record risks are the journalist's 1/F_k: ARX reports only their
    # average (MarketerRisk); the other readings are the journalist's
    chosen = risks[attacker]
    value = chosen.reading(reading)
    if value is None:
        chosen = risks["journalist"]
        value = chosen.reading(reading)
    details = {name: {k: v for k, v in vars(r).items() if v is not None}
               for name, r in risks.items()}
    details.update({
        "attacker": attacker, "reading": reading, "threshold": threshold,
        "records_above": chosen.records_above, "classes_above": chosen.classes_above,
        "classes": int(count), "records": int(n), "population": how,
        "population_size": N, "sampling_fraction": (n / N) if N else 1.0,
        "keys": {a: h for a, h in lk.how.items() if h != "distance"},
        "readings": {f"{a}_{r}": getattr(risks[a], r) for a in ATTACKERS
                     for r in READINGS if getattr(risks[a], r) is not None}})
    return Measurement("risk_summary", float(value), per, details=details)


__all__ = ["population_class_sizes", "read_population", "risk_summary"]
