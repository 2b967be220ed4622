"""sdceval: compare statistical disclosure control methods at equal risk.

The flow (SPEC §1): ``Dataset --method.apply--> Release --measure--> Measurement``,
then comparison (bisection to a common risk, ranking, frontiers).

>>> import sdceval
>>> ds = sdceval.load_dataset("census")
>>> rel = sdceval.anonymize(ds, "mdav", k=5)
>>> sdceval.evaluate(ds, rel, "linkage_risk").value  # doctest: +SKIP
"""
from __future__ import annotations

from sdceval.core.dataset import Dataset
from sdceval.core.loaders import load_dataset, open_dataset
from sdceval.core.errors import SdcevalError
from sdceval.core.hierarchy import Hierarchy
from sdceval.core.measurement import Measurement
from sdceval.catalog import get_measure, get_method
from sdceval.core.release import Release
from sdceval.core.schema import Schema

__version__ = "0.1.0"


def anonymize(dataset: Dataset, method: str, seed=0, **params) -> Release:
    """Apply a registered method: ``anonymize(ds, "mdav", k=5)``."""
    return get_method(method).apply(dataset, params, seed=seed)


def evaluate(dataset: Dataset, release: Release, measure: str, **params) -> Measurement:
    """Evaluate a registered measure: ``evaluate(ds, rel, "propensity", model="quadratic")``."""
    return get_measure(measure).evaluate(dataset, release, params)


__all__ = ["Dataset", "Schema", "Hierarchy", "Release", "Measurement", "SdcevalError",
           "load_dataset", "open_dataset", "anonymize", "evaluate", "get_method",
           "get_measure", "__version__"]
