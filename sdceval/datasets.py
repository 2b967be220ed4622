"""Data sets: a DataFrame plus a `Schema`, validated once, integer-coded once.

Bundled (offline) data sets, SPEC §2: ``census`` (CASC Census, 1080 x 13 numeric),
``eia`` (CASC EIA, 4092 records, 11 numeric attributes), ``adult`` (UCI Adult train+test
without rows holding ``?``, 45222 records) and ``adult-train`` (30162 records).
Users load their own CSV/Parquet with `load_table` + a schema.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from importlib import resources
from pathlib import Path
from typing import Callable, Mapping

import numpy as np
import pandas as pd

from .errors import SdcevalError, suggest, unknown
from .hierarchy import Hierarchy
from .schema import Schema


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


class Dataset:
    """A validated table with a schema.

    The caller's frame is copied and never modified.  Columns used by a role are checked
    here (missing values, numeric kind for ``numeric`` columns, hierarchy coverage for
    QIs), so methods and measures can trust them.

    Parameters
    ----------
    frame : DataFrame
    schema : Schema
    name : str
    """

    def __init__(self, frame: pd.DataFrame, schema: Schema, name: str = "data"):
        if not isinstance(frame, pd.DataFrame):
            raise SdcevalError(f"data set {name!r}: expected a pandas DataFrame")
        if len(frame) == 0:
            raise SdcevalError(f"data set {name!r} has no records (empty file?)")
        if len(frame) < 2:
            raise SdcevalError(
                f"data set {name!r} has a single record; disclosure control needs at least 2")
        self.name = name
        self.schema = schema
        self._frame = frame.reset_index(drop=True).copy()
        used = [c.name for c in schema.columns if c.role != "ignore"]
        for c in used:
            if c not in self._frame.columns:
                raise SdcevalError(f"data set {name!r}: schema column {c!r} is not in the data."
                                   f"{suggest(c, self._frame.columns)}")
        na = self._frame[used].isna().sum()
        na = na[na > 0]
        if len(na):
            cols = ", ".join(f"{c!r} ({n} missing)" for c, n in na.items())
            raise SdcevalError(
                f"data set {name!r}: missing values in {cols}; drop or impute those records "
                "first (e.g. frame.dropna(subset=[...])), sdceval does not guess them")
        for c in schema.numeric:
            if not pd.api.types.is_numeric_dtype(self._frame[c]) or \
                    pd.api.types.is_bool_dtype(self._frame[c]):
                bad = pd.to_numeric(self._frame[c], errors="coerce").isna()
                example = self._frame[c][bad].iloc[0] if bad.any() else self._frame[c].iloc[0]
                raise SdcevalError(
                    f"column {c!r} has role 'numeric' but holds non-numeric values "
                    f"(e.g. {example!r}); give it role 'qi'/'ignore' or convert it to numbers")
            if not np.isfinite(self._frame[c].to_numpy(float)).all():
                raise SdcevalError(f"column {c!r} holds infinite values")
        for c in schema.qis + ([schema.sensitive] if schema.sensitive else []):
            self.codes(c)  # validates hierarchy coverage now, not deep inside a method

    # -- views ----------------------------------------------------------------------
    @property
    def frame(self) -> pd.DataFrame:
        """The data (a private copy; treat as read-only)."""
        return self._frame

    @property
    def n(self) -> int:
        return len(self._frame)

    def __len__(self) -> int:
        return self.n

    def __repr__(self) -> str:
        s = self.schema
        return (f"Dataset({self.name!r}, n={self.n}, numeric={len(s.numeric)}, "
                f"qi={s.qis}, sensitive={s.sensitive!r})")

    @cached_property
    def _numeric(self) -> np.ndarray:
        x = self._frame[self.schema.numeric].to_numpy(dtype=np.float64, copy=True)
        x.setflags(write=False)
        return x

    def numeric_matrix(self, who: str | None = None, require_variance: bool = False
                       ) -> np.ndarray:
        """The ``numeric``-role columns as a read-only float64 (n, m) array.

        ``who`` names the method/measure asking, for the error when there are no numeric
        columns; ``require_variance`` rejects constant columns (e.g. for z-scoring).
        """
        if not self.schema.numeric:
            raise SdcevalError(
                f"{who or 'this operation'} needs numeric attributes but data set "
                f"{self.name!r} has none with role 'numeric'; pass --numeric COLS or a schema")
        x = self._numeric
        if require_variance:
            const = [c for c, sd in zip(self.schema.numeric, x.std(axis=0)) if sd == 0]
            if const:
                raise SdcevalError(
                    f"{who or 'this operation'}: column(s) {', '.join(map(repr, const))} are "
                    "constant (zero variance); drop them or give them role 'ignore'")
        return x

    def hierarchy(self, column: str) -> Hierarchy:
        """The column's hierarchy; numeric QIs without one get an interval hierarchy."""
        return self._hierarchies[column]

    @cached_property
    def _hierarchies(self) -> dict:
        return _HierarchyCache(self)

    def codes(self, column: str) -> np.ndarray:
        """Integer codes of a QI or the sensitive column (leaf codes of its hierarchy,
        or ranks among the sorted distinct values).  Computed once."""
        return self._codes[column]

    def domain(self, column: str) -> np.ndarray:
        """Labels of the codes of ``column`` (index = code)."""
        return self.hierarchy(column).leaves

    @cached_property
    def _codes(self) -> dict:
        return _CodeCache(self)


class _HierarchyCache(dict):
    def __init__(self, ds: Dataset):
        super().__init__()
        self.ds = ds

    def __missing__(self, col):
        ds = self.ds
        if col not in ds.schema:
            raise SdcevalError(f"unknown column {col!r}.{suggest(col, ds.frame.columns)}")
        spec = ds.schema[col]
        values = ds.frame[col]
        if spec.hierarchy is not None:
            h = spec.hierarchy
        elif spec.kind == "numeric":
            h = Hierarchy.auto_intervals(values.to_numpy(float), name=col)
        else:
            h = Hierarchy.flat(sorted(pd.unique(values.astype(str))), name=col)
        self[col] = h
        return h


class _CodeCache(dict):
    def __init__(self, ds: Dataset):
        super().__init__()
        self.ds = ds

    def __missing__(self, col):
        h = self.ds.hierarchy(col)
        codes = h.encode(self.ds.frame[col], column=col)
        codes.setflags(write=False)
        self[col] = codes
        return codes


# -- loading -----------------------------------------------------------------------
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
    from .io import read_toml
    spec = read_toml(path, "schema")
    return spec.get("schema", spec)


def open_dataset(data: str, *, schema_file=None, qi=None, sensitive=None, numeric=None,
                 label=None) -> Dataset:
    """A bundled data set by name, or a CSV/Parquet path with roles from a TOML schema
    file and/or role options (options override the file).  A bundled data set's roles can
    be changed the same way."""
    overrides = {k: v for k, v in dict(qi=qi, sensitive=sensitive, numeric=numeric,
                                       label=label).items() if v is not None}
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
                  "label": old.label, **spec,
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
