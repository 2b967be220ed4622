"""Reading the original and the release of a partitioned evaluation
(`sdceval.experiments.partitioned`): files or dask DataFrames opened lazily, each
partition turned into what `sdceval.core.tables.load_table` gives for the whole file,
and the ``schema`` argument as given (a `Schema`, a TOML file or its mapping).

Dask is imported only when a table is opened (`dask_dataframe`).
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

import numpy as np
import pandas as pd

from sdceval.core.errors import SdcevalError
from sdceval.core.loaders import read_schema_file
from sdceval.core.tables import _NA_MARKERS
from sdceval.core.schema import (ROLE_KEYS, UNUSED_ROLES, Schema, load_hierarchies,
                                 role_names, schema_kinds, text_columns)

_COMPRESSED = (".gz", ".bz2", ".xz", ".zip", ".zst")


def dask_dataframe():
    try:
        import dask.dataframe as dd
    except ImportError:
        raise SdcevalError("evaluating in partitions needs dask.dataframe: pip install "
                           "'dask[dataframe]' pyarrow") from None
    return dd


def shown(source) -> str:
    return repr(str(source)) if isinstance(source, (str, Path)) else "(a dask DataFrame)"


@dataclass(frozen=True)
class Reading:
    """How a partition becomes what `sdceval.core.tables.load_table` gives for the whole
    file: ``text`` columns as written, ``numbers`` (CSV columns read as text to look
    for leading zeros, which have none) as numbers again."""

    text: tuple = ()
    numbers: tuple = ()


def open_table(dd, source, what: str, text, floats, blocksize, declared=None):
    """``source`` as a dask DataFrame, and the CSV columns read as text to look for
    leading zeros (`sdceval.experiments.partitioned._scan`).

    Text columns (codes, labels) are read as written; numeric-role columns of a CSV as
    float64 (dask infers the other types from the first block, where a column of
    integers may have decimals further on).  With ``declared`` (the columns a schema
    file declares numeric), a CSV column dask reads as integers and not declared is
    read as text, as `load_table` reads a whole file: a code written with a leading
    zero (``02116``) stays text, the others become numbers again once pass 1 has looked
    at every cell."""
    zeros: list = []
    if isinstance(source, dd.DataFrame):
        frame = source
    elif isinstance(source, (str, Path)):
        path = Path(source)
        if not path.exists():
            raise SdcevalError(f"{what} {str(path)!r} does not exist")
        suffixes = "".join(path.suffixes).lower()
        try:
            if path.is_dir() or suffixes.endswith((".parquet", ".pq", ".parq")):
                frame = dd.read_parquet(str(path), blocksize=blocksize)
            elif suffixes.endswith(_COMPRESSED):
                raise SdcevalError(
                    f"{what} {str(path)!r} is compressed, so it cannot be read in parts: "
                    "decompress it, or write it as a directory of Parquet files")
            else:
                header = [str(c) for c in pd.read_csv(path, nrows=0).columns]
                text = [c for c in text if c in header]
                dtype = {**{c: "float64" for c in floats if c in header},
                         **{c: str for c in text}}

                def read(dtype):
                    na = {c: ([""] if dtype.get(c) is str else sorted(_NA_MARKERS))
                          for c in header}
                    return dd.read_csv(str(path), blocksize=blocksize, dtype=dtype,
                                       keep_default_na=False, na_values=na)
                frame = read(dtype)
                if declared is not None:
                    zeros = [c for c in header if c not in dtype and c not in declared
                             and pd.api.types.is_integer_dtype(frame._meta[c])]
                    if zeros:
                        frame = read({**dtype, **{c: str for c in zeros}})
        except SdcevalError:
            raise
        except (ValueError, OSError, ImportError, pd.errors.ParserError) as exc:
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else repr(exc)
            raise SdcevalError(f"cannot read {what} {str(path)!r}: {first}") from None
    else:
        raise SdcevalError(f"{what} must be a CSV or Parquet file, a directory of Parquet "
                           f"files or a dask DataFrame, not {type(source).__name__}")
    if any(not isinstance(c, str) for c in frame.columns):  # a new frame: not the caller's
        frame = frame.rename(columns={c: str(c) for c in frame.columns})
    return frame, zeros



def normalize(frame: pd.DataFrame, reading: Reading) -> pd.DataFrame:
    """One partition as `sdceval.core.tables.load_table` reads a whole file: dask's
    Arrow strings as pandas' own (what ``pd.read_csv`` gives), text columns stored as
    other types as text (`_read_parquet`), whole numbers read as text as numbers."""
    out = frame.copy(deep=False)  # a release partition may serve two chunks: not in place
    for c in out.columns:
        s = out[c]
        if c in reading.numbers:
            out[c] = pd.to_numeric(s) if len(s) else s.astype(np.int64)
        elif isinstance(s.dtype, pd.StringDtype) and s.dtype.na_value is pd.NA:
            out[c] = s.astype(str).where(s.notna())
        elif c in reading.text and not (pd.api.types.is_string_dtype(s) or s.dtype == object):
            out[c] = s.astype(str).where(s.notna())
    return out.reset_index(drop=True)


class SchemaSource:
    """The ``schema`` argument as given: the columns to read as text before the table
    is read (codes such as ``02116`` keep their zeros), and the `Schema` once the
    table's columns are known.  A schema file's kinds are inferred from the columns'
    types as ``sdceval evaluate --schema`` infers them (`declared`: the columns it
    declares numeric, whose integers are never codes); a `Schema` fixes them."""

    def __init__(self, given: Schema | None, spec: Mapping | None, base: Path | None):
        self.given, self.spec, self.base = given, spec, base
        if given is not None:
            self.hierarchies = {}
            self.text = [c.name for c in given.columns if c.role not in UNUSED_ROLES and (
                (c.hierarchy is not None and not c.hierarchy.numeric)
                or (c.hierarchy is None and c.kind == "categorical"))]
            self.floats = list(given.numeric)
            self.declared = None
        else:
            self.hierarchies = load_hierarchies(spec, base)
            self.text = text_columns(spec, self.hierarchies)
            self.floats = role_names(spec.get("numeric"), "numeric")
            self.declared = ([c for c, h in self.hierarchies.items() if h.numeric]
                             + [c for c, k in schema_kinds(spec).items() if k == "numeric"])

    @classmethod
    def of(cls, schema) -> "SchemaSource":
        if isinstance(schema, Schema):
            return cls(schema, None, None)
        if isinstance(schema, (str, Path)):
            path = Path(schema)
            if not path.exists():
                raise SdcevalError(f"schema file {str(path)!r} does not exist")
            spec, base = dict(read_schema_file(path)), path.parent
        elif isinstance(schema, Mapping):
            spec, base = dict(schema), None
        else:
            raise SdcevalError("schema must be a Schema, a TOML schema file or its mapping "
                               f"(roles and hierarchies), not {type(schema).__name__}")
        if not any(spec.get(k) for k in ROLE_KEYS):
            raise SdcevalError("the schema gives no roles: name the columns' roles (qi, "
                               "sensitive, numeric, ...), which the partitioned path "
                               "does not infer (that would need the whole table)")
        return cls(None, spec, base)

    def schema(self, meta: pd.DataFrame) -> Schema:
        if self.given is not None:
            return self.given
        return Schema.from_mapping(meta, {**self.spec, "hierarchies": self.hierarchies},
                                   self.base)
