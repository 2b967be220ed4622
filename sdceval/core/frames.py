"""DataFrames with roles as keywords: the pandas-first Python API (issue 19 item 8).

`sdceval.anonymize`, `sdceval.evaluate` and `sdceval.compare` take a `Dataset` or a
pandas DataFrame with its roles as keywords::

    import pandas as pd, sdceval
    df = pd.read_csv("patients.csv", dtype={"zip": str})
    rel = sdceval.anonymize(df, "mdav", k=5, numeric=["income", "visits"])
    sdceval.evaluate(df, rel, "linkage_risk", numeric=["income", "visits"]).value
    sdceval.compare(df, numeric=["income", "visits"]).table()

Role keywords (`ROLE_KEYWORDS`; no method or measure parameter may be named like one,
which the contract suite checks): ``qi``, ``sensitive``, ``numeric``, ``label``,
``passthrough``, ``ignore`` (a column name or a list), ``hierarchies`` (``{column:
Hierarchy}``), ``schema`` (a `Schema`, or the path of a schema TOML file, which the role
keywords override) and ``name``; also ``identifier`` (columns that identify the records:
never used nor published).  A DataFrame given without any role gets the roles a file
given without any gets on the command line (`sdceval.core.inference.infer_roles`: its
numeric columns become ``numeric``, a column that identifies the records
``identifier``); the roles inferred are in ``Dataset.messages``.  The caller's DataFrame
is never modified.  Column names are text: integer names (``pd.DataFrame(array)``)
become ``"0"``, ``"1"``, ..., and a role may name them either way (``numeric=[0, 1]`` or
``["0", "1"]``); duplicated names and a MultiIndex on the columns are refused, naming
them and the fix.  The same frame and roles give the same `Dataset` (same codes and
hierarchies), so a release made by `anonymize` is evaluated against what it was made
from.  A release may also be
given as a DataFrame (a table read from disk) with its private key, ``key=`` (`as_release`).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

import pandas as pd

from sdceval.core.dataset import Dataset
from sdceval.core.errors import SdcevalError
from sdceval.core.inference import assign_roles
from sdceval.core.release import Release
from sdceval.core.schema import (Schema, column_names, load_hierarchies,
                                 missing_policy)

#: keywords that give a DataFrame's roles (never passed to a method or a measure)
ROLE_KEYWORDS = ("qi", "sensitive", "numeric", "label", "passthrough", "ignore",
                 "identifier", "weight", "household", "household_keys", "hierarchies",
                 "schema", "name", "missing")


def split_roles(kwargs: Mapping[str, Any]) -> tuple[dict, dict]:
    """``(roles, rest)``: the role keywords of ``kwargs`` and everything else."""
    roles = {k: v for k, v in kwargs.items() if k in ROLE_KEYWORDS}
    return roles, {k: v for k, v in kwargs.items() if k not in ROLE_KEYWORDS}


def as_dataset(data, *, qi=None, sensitive=None, numeric=None, label=None, passthrough=None,
               ignore=None, identifier=None, weight=None, household=None,
               household_keys=None, hierarchies=None, schema=None, name=None,
               missing=None) -> Dataset:
    """A `Dataset` from a `Dataset` (roles given replace its own) or from a DataFrame
    and its roles (module docstring).  ``weight`` and ``household`` name a survey's
    design columns, ``household_keys`` its household-level QIs (`sdceval.core.schema`).
    ``missing``: the missing-value policy (``refuse``, ``drop`` or ``keep``:
    `sdceval.core.schema.MISSING_POLICIES`; default: the schema's, else refuse)."""
    given = {k: v for k, v in dict(qi=qi, sensitive=sensitive, numeric=numeric, label=label,
                                   passthrough=passthrough, ignore=ignore,
                                   identifier=identifier, weight=weight,
                                   household=household).items()
             if v is not None}
    if isinstance(data, Dataset):
        if schema is not None or hierarchies is not None or ignore is not None \
                or identifier is not None:
            raise SdcevalError("schema=, hierarchies= and ignore= describe a DataFrame; a "
                               "Dataset has its schema (change its roles with qi=, "
                               "numeric=, sensitive=, ...)")
        if not given and household_keys is None and missing is None:
            return data
        return Dataset(data.frame, _design(data.schema.with_roles(**given), household_keys,
                                           missing), name=name or data.name)
    if not isinstance(data, pd.DataFrame):
        raise SdcevalError(f"expected a pandas DataFrame or an sdceval Dataset, got "
                           f"{type(data).__name__}; e.g. sdceval.anonymize(df, 'mdav', k=5, "
                           "numeric=['income', 'visits'])")
    frame = data.copy(deep=True)  # the Dataset keeps it; the caller's frame stays theirs
    # names as text, on the copy (a role may name column 0 as 0 or "0"); duplicated
    # names and a MultiIndex are refused, naming them and the fix (issue 27 item 9)
    frame.columns = column_names(frame)
    name = name or "DataFrame"
    if isinstance(schema, Schema):
        if hierarchies is not None:
            raise SdcevalError("hierarchies= with a Schema: the Schema holds them")
        return Dataset(frame, _design(schema.with_roles(**given) if given else schema,
                                      household_keys, missing), name=name)
    spec: dict = {}
    if schema is not None:
        if not isinstance(schema, (str, Path)):
            raise SdcevalError(f"schema= must be a Schema or the path of a schema TOML "
                               f"file, got {type(schema).__name__}")
        from sdceval.core.loaders import read_schema_file
        spec = dict(read_schema_file(schema))
        spec["hierarchies"] = {**load_hierarchies(spec, Path(schema).parent, frame=frame),
                               **{str(c): h for c, h in dict(hierarchies or {}).items()}}
    elif hierarchies is not None:
        spec["hierarchies"] = {str(c): h for c, h in dict(hierarchies).items()}
    for role, columns in given.items():
        spec[role] = columns
    if household_keys is not None:
        spec["household_keys"] = household_keys
    if missing is not None:
        spec["missing"] = missing_policy(missing, "missing=")
    spec, notes = assign_roles(frame, spec)
    ds = Dataset(frame, Schema.from_mapping(frame, spec), name=name)
    ds.messages = tuple(notes) + ds.messages
    return ds


def _design(schema: Schema, household_keys, missing=None) -> Schema:
    """``schema`` with its household-level keys replaced when ``household_keys`` is
    given, and its missing-value policy when ``missing`` is."""
    if household_keys is None and missing is None:
        return schema
    return Schema(schema.columns,
                  missing=schema.missing if missing is None else missing_policy(
                      missing, "missing="),
                  household_keys=(schema.household_keys if household_keys is None
                                  else household_keys),
                  kept=schema.kept)


def as_release(dataset: Dataset, release, key=None) -> Release:
    """``release`` as a `Release` of ``dataset``, in record order: a `Release` as it is,
    the path of a release file or a DataFrame of released records (a file read with
    pandas) read and checked exactly as ``sdceval evaluate`` reads a file, with its
    private ``key`` (`sdceval.core.release_io.release_of`: a shuffled DataFrame without
    its key is refused)."""
    from sdceval.core.release_io import release_of
    return release_of(dataset, release, key=key)


__all__ = ["ROLE_KEYWORDS", "as_dataset", "as_release", "split_roles"]
