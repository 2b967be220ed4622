"""Loading data sets: the bundled ones (offline) and users' CSV/Parquet files.

Bundled data sets, SPEC §2: ``census`` (CASC Census, 1080 x 13 numeric), ``eia`` (CASC
EIA, 4092 records, 11 numeric attributes), ``adult`` (UCI Adult train+test without rows
holding ``?``, 45222 records) and ``adult-train`` (30162 records).
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Callable, Mapping

import pandas as pd

from sdceval.core.dataset import Dataset
from sdceval.core.errors import SdcevalError, suggest, unknown
from sdceval.core.hierarchy import Hierarchy
from sdceval.core.schema import Schema

EIA_NUMERIC = ["MONTH", "RESREVENUE", "RESSALES", "COMREVENUE", "COMSALES", "INDREVENUE",
               "INDSALES", "OTHREVENUE", "OTHRSALES", "TOTREVENUE", "TOTSALES"]
ADULT_COLUMNS = ["age", "workclass", "fnlwgt", "education", "education-num", "marital-status",
                 "occupation", "relationship", "race", "sex", "capital-gain", "capital-loss",
                 "hours-per-week", "native-country", "income"]
#: Li & Li's setting: six QIs, Occupation sensitive.
ADULT_QIS = ["age", "workclass", "education", "marital-status", "race", "sex"]
ADULT_SENSITIVE = "occupation"
#: columns of Adult that ship with a hierarchy (files ``hierarchies/adult_<col>.csv``)
ADULT_HIERARCHIES = ["age", "workclass", "education", "marital-status", "race", "sex",
                     "native-country", "income", "occupation"]


def _data_file(name: str):
    return resources.files("sdceval") / "data" / name


def hierarchy_file(dataset: str, column: str):
    """Path (Traversable) of a bundled hierarchy CSV."""
    return resources.files("sdceval") / "hierarchies" / f"{dataset}_{column}.csv"


def load_adult_hierarchy(column: str) -> Hierarchy:
    """A bundled Adult hierarchy (SPEC §2)."""
    if column not in ADULT_HIERARCHIES:
        raise unknown("Adult hierarchy", column, ADULT_HIERARCHIES)
    with resources.as_file(hierarchy_file("adult", column)) as p:
        return Hierarchy.from_csv(p, name=column, numeric=(column == "age"))


def _read_adult(train_only: bool) -> pd.DataFrame:
    parts = ["adult.data.csv.gz"] + ([] if train_only else ["adult.test.csv.gz"])
    frames = []
    for part in parts:
        with _data_file(part).open("rb") as fh:
            frames.append(pd.read_csv(fh, compression="gzip", na_values="?",
                                      keep_default_na=False))
    df = pd.concat(frames, ignore_index=True).dropna().reset_index(drop=True)
    for c in df.columns:
        if not pd.api.types.is_numeric_dtype(df[c]):
            df[c] = df[c].astype(object)
    return df


def _adult(name: str, train_only: bool) -> Dataset:
    df = _read_adult(train_only)
    hier = {c: load_adult_hierarchy(c) for c in ADULT_HIERARCHIES}
    schema = Schema.from_roles(df, qi=ADULT_QIS, sensitive=ADULT_SENSITIVE, label="income",
                               hierarchies=hier)
    return Dataset(df, schema, name=name)


def _casc(name: str) -> Dataset:
    with _data_file(f"{name}.csv.gz").open("rb") as fh:
        df = pd.read_csv(fh, compression="gzip")
    numeric = EIA_NUMERIC if name == "eia" else list(df.columns)
    return Dataset(df, Schema.from_roles(df, numeric=numeric), name=name)


@dataclass(frozen=True)
class DatasetInfo:
    name: str
    loader: Callable[[], Dataset]
    description: str


BUNDLED: dict[str, DatasetInfo] = {
    "census": DatasetInfo("census", lambda: _casc("census"),
                          "CASC Census: 1080 records, 13 numeric attributes"),
    "eia": DatasetInfo("eia", lambda: _casc("eia"),
                       "CASC EIA: 4092 records, 11 numeric attributes (MONTH..TOTSALES)"),
    "adult": DatasetInfo("adult", lambda: _adult("adult", False),
                         "UCI Adult train+test without '?' rows: 45222 records; QIs age, "
                         "workclass, education, marital-status, race, sex; sensitive occupation"),
    "adult-train": DatasetInfo("adult-train", lambda: _adult("adult-train", True),
                               "UCI Adult train split without '?' rows: 30162 records"),
}

_cache: dict[str, Dataset] = {}


def load_dataset(name: str) -> Dataset:
    """A bundled data set by name (cached; Datasets are never mutated)."""
    if name not in BUNDLED:
        raise unknown("data set", name, BUNDLED)
    if name not in _cache:
        _cache[name] = BUNDLED[name].loader()
    return _cache[name]


def load_table(path) -> pd.DataFrame:
    """Read a user's CSV or Parquet file with clear errors."""
    path = Path(path)
    if not path.exists():
        raise SdcevalError(f"data file {str(path)!r} does not exist")
    suffixes = "".join(path.suffixes).lower()
    try:
        if suffixes.endswith((".parquet", ".pq")):
            df = pd.read_parquet(path)
        else:
            df = pd.read_csv(path)
    except pd.errors.EmptyDataError:
        raise SdcevalError(f"data file {str(path)!r} is empty") from None
    except (ValueError, OSError, ImportError) as exc:
        raise SdcevalError(f"cannot read {str(path)!r}: {exc}") from None
    if df.empty:
        raise SdcevalError(f"data file {str(path)!r} has no records")
    return df


def read_schema_file(path) -> Mapping:
    """Column roles from a TOML file (top level or a ``[schema]`` table)."""
    from sdceval.core.fileio import read_toml
    spec = read_toml(path, "schema")
    return spec.get("schema", spec)


def open_dataset(data: str, *, schema_file=None, qi=None, sensitive=None, numeric=None,
                 label=None, passthrough=None) -> Dataset:
    """A bundled data set by name, or a CSV/Parquet path with roles from a TOML schema
    file and/or role options (options override the file).  A bundled data set's roles can
    be changed the same way."""
    overrides = {k: v for k, v in dict(qi=qi, sensitive=sensitive, numeric=numeric,
                                       label=label, passthrough=passthrough).items()
                 if v is not None}
    if data in BUNDLED and not Path(data).exists():
        ds = load_dataset(data)
        if schema_file is None and not overrides:
            return ds
        spec = dict(read_schema_file(schema_file)) if schema_file else {}
        spec.update(overrides)
        old = ds.schema
        # roles not named keep the bundled schema's; hierarchies from the file add to
        # (or replace) the bundled ones
        merged = {"qi": old.qis, "sensitive": old.sensitive, "numeric": old.numeric,
                  "label": old.label, "passthrough": old.passthrough, **spec,
                  "hierarchies": {**{c.name: c.hierarchy for c in old.columns
                                     if c.hierarchy is not None},
                                  **dict(spec.get("hierarchies", {}))}}
        base = Path(schema_file).parent if schema_file else None
        return Dataset(ds.frame, Schema.from_mapping(ds.frame, merged, base_dir=base),
                       name=ds.name)
    path = Path(data)
    if not path.exists():
        raise SdcevalError(
            f"{data!r} is neither a bundled data set nor an existing file."
            f"{suggest(data, BUNDLED)} Bundled: {', '.join(BUNDLED)}")
    frame = load_table(path)
    spec = dict(read_schema_file(schema_file)) if schema_file else {}
    spec.update(overrides)
    if not spec:
        numeric_cols = [c for c in frame.columns if pd.api.types.is_numeric_dtype(frame[c])]
        spec = {"numeric": numeric_cols}
    base = Path(schema_file).parent if schema_file else None
    return Dataset(frame, Schema.from_mapping(frame, spec, base_dir=base), name=path.stem)


def ref_of(dataset) -> dict | Dataset:
    """A picklable reference to ``dataset`` for worker processes: bundled data sets
    travel by name; others as the object itself."""
    if dataset.name in BUNDLED and load_dataset(dataset.name) is dataset:
        return {"data": dataset.name}
    return dataset


def _freeze(ref: dict) -> tuple:
    return tuple(sorted((k, tuple(v) if isinstance(v, list) else v) for k, v in ref.items()))


@lru_cache(maxsize=8)
def _open_frozen(frozen: tuple) -> Dataset:
    ref = dict(frozen)
    split = (lambda v: list(v) if isinstance(v, tuple) else
             ([s.strip() for s in v.split(",")] if isinstance(v, str) else v))
    return open_dataset(ref["data"], schema_file=ref.get("schema"),
                        qi=split(ref["qi"]) if "qi" in ref else None,
                        sensitive=ref.get("sensitive"),
                        numeric=split(ref["numeric"]) if "numeric" in ref else None,
                        label=ref.get("label"))


def open_ref(ref) -> Dataset:
    """Open (and cache per process) the data set a reference names (``{"data": ...,
    "schema": ..., "qi": ...}``); a `Dataset` is returned as it is."""
    if isinstance(ref, Dataset):
        return ref
    return _open_frozen(_freeze(ref))
