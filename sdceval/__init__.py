"""sdceval: compare statistical disclosure control methods at equal risk.

The flow (SPEC §1): ``Dataset --method.apply--> Release --measure--> Measurement``,
then comparison (bisection to a common risk, ranking, frontiers).

>>> import sdceval
>>> ds = sdceval.load_dataset("census")
>>> rel = sdceval.anonymize(ds, "mdav", k=5)
>>> sdceval.evaluate(ds, rel, "linkage_risk").value  # doctest: +SKIP

A pandas DataFrame works wherever a data set does, its roles given as keywords
(`sdceval.core.frames`): ``sdceval.anonymize(df, "mdav", k=5, numeric=[...])``,
``sdceval.evaluate(df, rel, "linkage_risk", numeric=[...])``, ``sdceval.compare(df,
numeric=[...])``.
"""
from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING

from sdceval._version import __version__

# The public names are imported on first use (PEP 562), not with the package: importing
# pandas, scipy and every method and measure costs seconds, which `sdceval --help` (the
# CLI lives in this package) must not pay.  ``from sdceval import Dataset`` works as
# before.
_EXPORTS = {
    "Dataset": "sdceval.core.dataset", "Schema": "sdceval.core.schema",
    "Hierarchy": "sdceval.core.hierarchy", "Release": "sdceval.core.release",
    "Measurement": "sdceval.core.measurement", "SdcevalError": "sdceval.core.errors",
    "load_dataset": "sdceval.core.loaders", "open_dataset": "sdceval.core.loaders",
    "get_method": "sdceval.catalog", "get_measure": "sdceval.catalog",
    "property_vectors": "sdceval.vectors.properties", "as_dataset": "sdceval.core.frames",
    "compare_releases": "sdceval.vectors.comparison",
}


def results(out, **where) -> "pandas.DataFrame":
    """Every measurement an experiment's output folder holds (its results store, written
    by ``sdceval run``) as one tidy pandas DataFrame: one row per measurement, with the
    job (``job``, ``kind``), the data set, the job's parameters (method, parameter value,
    a trade-off's model and threshold, seed, sweep variables, ...), ``measure`` (the
    measure's name), ``measure_params`` (its parameters, e.g. ``min_support=0.05``) and
    ``value``; ``where`` keeps the rows whose column equals the value
    (``results("out", measure="u_loss")``); docs/store.md."""
    from sdceval.experiments.store import read_measurements
    return read_measurements(out, {k: str(v) for k, v in where.items()})

if TYPE_CHECKING:  # pragma: no cover
    from sdceval.catalog import get_measure, get_method
    from sdceval.core.dataset import Dataset
    from sdceval.core.errors import SdcevalError
    from sdceval.core.hierarchy import Hierarchy
    from sdceval.core.loaders import load_dataset, open_dataset
    from sdceval.core.measurement import Measurement
    from sdceval.core.release import Release
    from sdceval.core.schema import Schema
    from sdceval.vectors.comparison import compare_releases
    from sdceval.vectors.properties import property_vectors


def __getattr__(name: str):
    if name == "compare":  # the subpackage, callable: sdceval.compare(df, numeric=[...])
        return import_module("sdceval.compare")
    if name in _EXPORTS:
        value = getattr(import_module(_EXPORTS[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'sdceval' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))


def anonymize(data, method: str, seed=0, **kwargs) -> "Release":
    """Apply a registered method: ``anonymize(ds, "mdav", k=5)``, or on a pandas
    DataFrame with its roles as keywords, ``anonymize(df, "mdav", k=5,
    numeric=["income", "visits"])`` (`sdceval.core.frames`); every other keyword is a
    parameter of the method.  When columns kept unchanged (``passthrough=``, the CLI's
    ``--keep``) raise re-identification, a `UserWarning` names them and the figures with
    and without them (`sdceval.measures._kept_keys`; one extra evaluation)."""
    from sdceval.catalog import get_method
    from sdceval.core.frames import as_dataset, split_roles
    from sdceval.measures._kept_keys import warn
    roles, params = split_roles(kwargs)
    dataset = as_dataset(data, **roles)
    release = get_method(method).apply(dataset, params, seed=seed)
    warn(dataset, release, seed=seed, stacklevel=2)
    return release


def evaluate(data, release, measure: str, *, key=None, **kwargs) -> "Measurement":
    """Evaluate a registered measure: ``evaluate(ds, rel, "propensity",
    model="quadratic")``, or on a DataFrame with its roles, ``evaluate(df, rel,
    "reidentification", qi=["zip", "age"])``.  ``release`` is a `Release` (from
    `anonymize`), the path of a release file written by ``sdceval anonymize`` (its
    private key beside it is found and checked, as by ``sdceval evaluate``), or a
    DataFrame of the published rows with ``key=`` its private key (the key file's path,
    the key read with ``pd.read_csv(KEY, comment="#")``, or its ``record`` column).  A
    DataFrame without a key must be in record order (row ``i`` protects record ``i``):
    its rows are checked against their records and a shuffled one is refused
    (``key=False``: known to be in record order, taken as it is).  See
    `sdceval.core.release_io.release_of`."""
    from sdceval.catalog import get_measure
    from sdceval.core.frames import as_dataset, as_release, split_roles
    roles, params = split_roles(kwargs)
    dataset = as_dataset(data, **roles)
    return get_measure(measure).evaluate(dataset, as_release(dataset, release, key=key),
                                         params)


__all__ = ["Dataset", "Schema", "Hierarchy", "Release", "Measurement", "SdcevalError",
           "load_dataset", "open_dataset", "anonymize", "evaluate", "compare", "as_dataset",
           "results",
           "get_method",
           "get_measure", "property_vectors", "compare_releases", "__version__"]
