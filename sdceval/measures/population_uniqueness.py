"""Population uniqueness of a released sample (issue 30 item 1): the estimated share
of population units that are unique on the release's published keys, by Pitman's,
Zayatz's or the SNB model, or Dankar's rule choosing among them as ARX does
(``RiskModelPopulationUniqueness``).  The estimators, their formulas, when each is
reliable and where this reading differs from ARX are in the kernel's notes,
`sdceval.privacy.population_models`; docs/population_models.md explains them.

The classes are the combinations of published key values read as `sample_uniques`
reads them (`linkage_attributes`: a generalized cell by its leaf-code range, an exact
value by its code; masked numbers are no keys), so a class of size 1 here is a sample
unique there.  ARX leaves records suppressed as a whole out of its histograms; here
they form the class of the all-suppressed key, as in `sample_uniques` (never fewer
uniques than ARX: evaluation does not overstate protection).

The population: ``sampling_fraction`` ``f`` (``N = round(n / f)``, ARX's
``ARXPopulationModel.create(n, f)``) or ``population_size`` ``N``; without either, the
sum of the design weights when the data set has a weight role (the Horvitz-Thompson
population size), else the file is the population (``f = 1``: population uniqueness =
sample uniqueness); ``details["population"]`` says which.

The value is ARX's ``U / N`` capped at the sample uniqueness ``c1 / n``: each population
unique is in the sample with probability ``f`` and is then a sample unique, so
``f U <= c1`` in expectation, i.e. ``U / N <= c1 / n`` (ARX's own tests assert this of
its estimates).  A model whose estimate breaks the bound (``details["capped"]``) has
failed on these class sizes; ARX reports the estimate.  Per record: for a sample
unique ``min(1, f U / c1)``, the probability that it is a population unique, else 0;
the value is their mean.  A model asked for by name without a solution on these class
sizes gives the sample uniqueness, the upper bound (``model_used = "bound"``, a note
says so), where ARX reports 0; Dankar's rule falls back to Zayatz as ARX's.
"""
from __future__ import annotations

import numpy as np

from sdceval.core.measurement import Measurement
from sdceval.core.registry import Param, register_measure
from sdceval.core.release import Release
from sdceval.core.combos import combine
from sdceval.measures.population_risk import CELL_KINDS
from sdceval.measures.reidentification import KEPT, KNOWS, linkage_attributes
from sdceval.privacy.population_models import (
    MODELS,
    SNB_VARIANTS,
    Histogram,
    estimate_uniqueness,
    population_size,
)

MODEL = Param("model", str, "dankar", choices=MODELS,
              description="population model: pitman (Hoshino 2001), zayatz (1991), snb "
                          "(Chen & Keller-McNulty 1998) or dankar (Dankar et al. 2012's "
                          "rule choosing among them, as ARX)")
SAMPLING_FRACTION = Param("sampling_fraction", float, None, low=0.0, high=1.0,
                          low_inclusive=False,
                          description="share of the population in the file (0 < f <= 1); "
                                      "N = round(n / f) as ARX")
POPULATION_SIZE = Param("population_size", float, None, low=1.0, unit="units",
                        description="size of the population the file was drawn from "
                                    "(at least the number of records)")
SNB_VARIANT = Param("snb_variant", str, "arx", choices=SNB_VARIANTS,
                    description="SNB as ARX codes it (arx: ARX's values) or as published "
                                "(docs/population_models.md)")
NO_PARTIAL = "the class sizes and the population count every record of the file"


def published_classes(dataset, release: Release, *, knows=(), kept: bool = True,
                      who: str = "the measure") -> tuple[np.ndarray, int, object]:
    """Class id per record (``0..count-1``) of its published key combination, the
    number of classes and the `Linkage` read (`linkage_attributes`, keys compared as
    `sample_uniques` compares them: cells and exact values, no masked numbers)."""
    lk = linkage_attributes(dataset, release, kept=kept, knows=knows, who=who)
    cols = [lk.lo[:, j] for j in range(lk.lo.shape[1])]
    cols += [lk.hi[:, j] for j in range(lk.hi.shape[1])]
    ids, count = combine(cols, dataset.n)
    return ids, count, lk


def sample_population(dataset, sampling_fraction, population_size_, who: str
                      ) -> tuple[float, str]:
    """``(N, how)``: the population size from the parameters, else the design weights,
    else the file (module notes), and the sentence saying which."""
    n = dataset.n
    if sampling_fraction is not None or population_size_ is not None:
        N = population_size(n, sampling_fraction=sampling_fraction,
                            population=population_size_, who=who)
        given = (f"sampling fraction {sampling_fraction}" if sampling_fraction is not None
                 else f"population size {population_size_:g}")
        return N, f"a sample of a population of {N:g} units ({given})"
    if dataset.weights is not None:
        N = float(dataset.weights.sum())
        return N, (f"a sample of a population of {N:g} units (the sum of the weights "
                   f"{dataset.schema.weight!r})")
    return float(n), ("the file itself (no sampling_fraction, population_size or weight "
                      "role: f = 1, population uniqueness = sample uniqueness)")


@register_measure(
    "population_uniqueness", category="risk", direction="lower_is_better",
    kinds=CELL_KINDS, needs=("qis", "cells"), no_partial=NO_PARTIAL,
    aggregate="mean",
    params=[MODEL, SAMPLING_FRACTION, POPULATION_SIZE, SNB_VARIANT, KNOWS, KEPT],
    label="population uniqueness (estimated share of population uniques)",
    unit="share of the population",
    description="estimated share of the population unique on the published keys "
                "(Pitman, Zayatz, SNB or Dankar's rule as ARX); per record the "
                "probability that a sample unique is a population unique (0 in classes "
                "of size > 1)")
def population_uniqueness(dataset, release: Release, *, model: str = "dankar",
                          sampling_fraction: float | None = None,
                          population_size: float | None = None,
                          snb_variant: str = "arx", knows=(), kept: bool = True
                          ) -> Measurement:
    """``min(U / N, c1 / n)``: the estimated number ``U`` of population uniques on the
    published keys under ``model`` over the population size ``N`` (ARX's
    ``getFractionOfUniqueTuples``), capped at the sample uniqueness (module notes).

    Returns
    -------
    Measurement
        ``per_record``: for a sample unique ``min(1, f U / c1)`` (the probability that
        it is a population unique: each population unique is in the sample with
        probability ``f``), else 0; the value is their mean.
        ``details``: ``model``, ``model_used`` (Dankar's pick), ``estimates`` (the
        models computed, as shares), ``sample_uniqueness``, ``sample_uniques``,
        ``population_uniques`` (``U``, uncapped), ``population_size``,
        ``sampling_fraction``, ``population`` (how N was set), ``capped``, ``note``,
        ``readings``.
    """
    who = "measure 'population_uniqueness'"
    ids, count, lk = published_classes(dataset, release, knows=knows, kept=kept, who=who)
    size = np.bincount(ids, minlength=count)
    N, how = sample_population(dataset, sampling_fraction, population_size, who)
    est = estimate_uniqueness(Histogram.of(size), N, model, snb_variant=snb_variant)
    unique = size[ids] == 1
    per = np.where(unique, est.conditional, 0.0)
    # = U / N, capped at the sample uniqueness (module notes)
    value = float(per.mean()) if len(per) else 0.0
    details = {
        "model": model, "model_used": est.model_used,
        "estimates": {m: v / N for m, v in est.estimates.items()},
        "sample_uniqueness": est.sample_uniqueness, "sample_uniques": int(unique.sum()),
        "population_uniques": est.uniques, "population_size": N,
        "sampling_fraction": est.sampling_fraction, "population": how,
        "snb_variant": snb_variant, "note": est.note,
        "capped": bool(est.share > est.sample_uniqueness),
        "keys": {a: h for a, h in lk.how.items() if h != "distance"},
        "readings": {"sample_uniqueness": est.sample_uniqueness,
                     "population_uniques": est.uniques}}
    return Measurement("population_uniqueness", float(value), per, details=details)


__all__ = ["population_uniqueness", "published_classes", "sample_population"]
