"""Loading data sets: the bundled ones (offline) and users' CSV/Parquet files.

Bundled data sets, SPEC §2: ``census`` (CASC Census, 1080 x 13 numeric), ``eia`` (CASC
EIA, 4092 records, 11 numeric attributes), ``adult`` (UCI Adult train+test without rows
holding ``?``, 45222 records), ``adult-train`` (30162 records) and ``adult-arx`` (ARX's
Adult: adult-train in ARX's column order with ARX's hierarchies, docs/arx.md).
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Callable, Iterable, Mapping

import numpy as np
import pandas as pd

from sdceval.core.dataset import Dataset, identifier_range
from sdceval.core.errors import SdcevalError, suggest, unknown
from sdceval.core.hierarchy import Hierarchy
from sdceval.core.schema import ROLE_KEYS, Schema, load_hierarchies, role_names, text_columns

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


ADULT_NUMBERS = ["age", "fnlwgt", "education-num", "capital-gain", "capital-loss",
                 "hours-per-week"]


def _read_adult(train_only: bool) -> pd.DataFrame:
    """Adult without the records holding ``?`` (SPEC §2); text columns as Python
    strings (object), read as such rather than converted afterwards."""
    parts = ["adult.data.csv.gz"] + ([] if train_only else ["adult.test.csv.gz"])
    text = [c for c in ADULT_COLUMNS if c not in ADULT_NUMBERS]
    frames = []
    for part in parts:
        with _data_file(part).open("rb") as fh:
            frames.append(pd.read_csv(fh, compression="gzip", keep_default_na=False,
                                      dtype={c: object for c in text}))
    df = pd.concat(frames, ignore_index=True)
    unknown_value = np.zeros(len(df), dtype=bool)
    for c in text:
        unknown_value |= df[c].to_numpy() == "?"
    return df[~unknown_value].reset_index(drop=True)


def _adult(name: str, train_only: bool) -> Dataset:
    df = _read_adult(train_only)
    hier = {c: load_adult_hierarchy(c) for c in ADULT_HIERARCHIES}
    schema = Schema.from_roles(df, qi=ADULT_QIS, sensitive=ADULT_SENSITIVE, label="income",
                               hierarchies=hier)
    return Dataset(df, schema, name=name)


#: ARX's ``data/adult.csv`` (docs/arx.md): the columns in ARX's order, under ARX's names
#: (``salary-class`` is our ``income``); all nine are QIs of ARX's Adult test cases
ARX_ADULT_COLUMNS = ["sex", "age", "race", "marital-status", "education", "native-country",
                     "workclass", "occupation", "salary-class"]


def _adult_arx(name: str) -> Dataset:
    """ARX's Adult: the 30 162 records of ``adult-train`` in the same order, ARX's nine
    columns, and ARX's hierarchies (``hierarchies/arx``), read through the schema file
    ``hierarchies/arx/adult.toml`` exactly as a user's ``--schema`` file is read."""
    df = _read_adult(True).rename(columns={"income": "salary-class"})[ARX_ADULT_COLUMNS]
    with resources.as_file(resources.files("sdceval") / "hierarchies" / "arx") as base:
        schema = Schema.from_mapping(df, read_schema_file(base / "adult.toml"), base)
    return Dataset(df, schema, name=name)


def load_arx_adult(sensitive: str | None = None) -> Dataset:
    """ARX's Adult (bundled data set ``adult-arx``): nine QIs in ARX's order, as in ARX's
    k-anonymity tests; with ``sensitive`` (ARX's ℓ-diversity tests use
    ``"occupation"``) that column is the sensitive attribute and the other eight are the
    QIs, in the same order."""
    ds = load_dataset("adult-arx")
    if sensitive is None:
        return ds
    if sensitive not in ARX_ADULT_COLUMNS:
        raise unknown("column of adult-arx", sensitive, ARX_ADULT_COLUMNS)
    return Dataset(ds.frame, ds.schema.with_roles(sensitive=sensitive), name=ds.name)


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
    "adult-arx": DatasetInfo("adult-arx", lambda: _adult_arx("adult-arx"),
                             "ARX's Adult: adult-train's 30162 records, ARX's 9 columns "
                             "(income as salary-class), all QIs with ARX's hierarchies"),
}

_cache: dict[str, Dataset] = {}


def load_dataset(name: str) -> Dataset:
    """A bundled data set by name (cached; Datasets are never mutated)."""
    if name not in BUNDLED:
        raise unknown("data set", name, BUNDLED)
    if name not in _cache:
        _cache[name] = BUNDLED[name].loader()
    return _cache[name]


#: pandas' default missing-value markers, applied to every column not read as text
try:
    from pandas._libs.parsers import STR_NA_VALUES as _NA_MARKERS
except ImportError:  # pragma: no cover - moved in a future pandas
    _NA_MARKERS = {"", "#N/A", "#N/A N/A", "#NA", "-1.#IND", "-1.#QNAN", "-NaN", "-nan",
                   "1.#IND", "1.#QNAN", "<NA>", "N/A", "NA", "NULL", "NaN", "None", "n/a",
                   "nan", "null"}
PARQUET_EXTRA = 'pip install "sdceval[parquet]"'


def load_table(path, text: Iterable[str] = ()) -> pd.DataFrame:
    """Read a user's CSV or Parquet file with clear errors.

    Columns in ``text`` (codes: those with a categorical hierarchy or declared
    categorical) are read as text exactly as written, so ``02310`` stays ``02310`` and a
    code ``NA`` stays ``NA``; in them only an empty field is a missing value.  Other
    columns get pandas' usual types and missing-value markers.  Column names are text.
    """
    path = Path(path)
    shown = str(path)
    if not path.exists():
        raise SdcevalError(f"data file {shown!r} does not exist")
    text = [str(c) for c in text]
    suffixes = "".join(path.suffixes).lower()
    try:
        if suffixes.endswith((".parquet", ".pq")):
            df = _read_parquet(path, text)
        else:
            df = _read_csv(path, text)
    except SdcevalError:
        raise
    except pd.errors.EmptyDataError:
        raise SdcevalError(f"data file {shown!r} is empty") from None
    except (ValueError, OSError, ImportError, pd.errors.ParserError) as exc:
        raise SdcevalError(f"cannot read {shown!r}: {exc}") from None
    if df.empty:
        raise SdcevalError(f"data file {shown!r} has no records")
    return df


def _read_parquet(path: Path, text: list) -> pd.DataFrame:
    try:
        df = pd.read_parquet(path)
    except ImportError:
        raise SdcevalError(
            f"reading the Parquet file {str(path)!r} needs pyarrow, an optional extra: "
            f"{PARQUET_EXTRA} (or pip install pyarrow), or give a CSV file") from None
    df.columns = [str(c) for c in df.columns]
    for c in text:
        if c in df.columns and not _is_text(df[c]):
            df[c] = df[c].astype(str).where(df[c].notna())
    return df


def _read_csv(path: Path, text: list) -> pd.DataFrame:
    # the header as written: pandas renames a repeated name 'a' to 'a.1' silently
    first = pd.read_csv(path, nrows=1, header=None, dtype=str, keep_default_na=False)
    names = [str(v) for v in first.iloc[0].tolist()]
    seen, dup = set(), []
    for n in names:
        if n in seen and n not in dup:
            dup.append(n)
        seen.add(n)
    if dup:
        raise SdcevalError(
            f"data file {str(path)!r}: duplicated column name(s) {', '.join(map(repr, dup))} "
            "in the header; every column needs its own name: rename them in the file")
    if not text:
        return pd.read_csv(path)
    header = [str(c) for c in pd.read_csv(path, nrows=0).columns]
    codes = [c for c in header if c in text]
    na = {c: ([""] if c in codes else sorted(_NA_MARKERS)) for c in header}
    df = pd.read_csv(path, keep_default_na=False, na_values=na)
    # a column pandas parsed as text holds the cells as written; one it parsed as
    # numbers (02310 -> 2310) or booleans is read again as text (asking for dtype=str
    # up front costs three times the parse on every column)
    parsed = [c for c in codes if not _is_text(df[c])]
    if parsed:
        raw = pd.read_csv(path, usecols=parsed, dtype={c: str for c in parsed},
                          keep_default_na=False, na_values={c: [""] for c in parsed})
        for c in parsed:
            df[c] = raw[c]
    return df


def _is_text(values: pd.Series) -> bool:
    return pd.api.types.is_string_dtype(values) or values.dtype == object


def read_schema_file(path) -> Mapping:
    """Column roles from a TOML file (top level or a ``[schema]`` table)."""
    from sdceval.core.fileio import read_toml
    spec = read_toml(path, "schema")
    return spec.get("schema", spec)


def open_dataset(data: str, *, schema_file=None, qi=None, sensitive=None, numeric=None,
                 label=None, passthrough=None) -> Dataset:
    """A bundled data set by name, or a CSV/Parquet path with roles from a TOML schema
    file and/or role options (options override the file).  A bundled data set's roles can
    be changed the same way.

    A file given without any role (no schema roles, no options) gets role ``numeric``
    for its numeric columns, reported in `Dataset.messages`; a column holding the
    distinct integers 0..n-1 or 1..n (a record number) is then refused rather than
    masked and measured as an attribute.  `Dataset.input_files` lists every file read
    (data, schema, hierarchies), so that outputs never overwrite them.
    """
    overrides = {k: v for k, v in dict(qi=qi, sensitive=sensitive, numeric=numeric,
                                       label=label, passthrough=passthrough).items()
                 if v is not None}
    file_spec = dict(read_schema_file(schema_file)) if schema_file else {}
    moved: list = []
    spec = _override(file_spec, overrides, moved)
    base = Path(schema_file).parent if schema_file else None
    schema_files = [Path(schema_file).resolve()] if schema_file else []
    if data in BUNDLED and not Path(data).exists():
        ds = load_dataset(data)
        if schema_file is None and not overrides:
            return ds
        old = ds.schema
        hier = load_hierarchies(spec, base, frame=ds.frame)
        # roles not named keep the bundled schema's; hierarchies from the file add to
        # (or replace) the bundled ones
        bundled = {"qi": old.qis, "sensitive": old.sensitive, "numeric": old.numeric,
                   "label": old.label, "passthrough": old.passthrough}
        moved_file: list = []
        moved = []
        merged = {**_override(_override(bundled, file_spec, moved_file), overrides, moved),
                  "hierarchies": {**{c.name: c.hierarchy for c in old.columns
                                     if c.hierarchy is not None}, **hier}}
        out = Dataset(ds.frame, Schema.from_mapping(ds.frame, merged), name=ds.name)
        out.input_files = tuple(schema_files + _sources(hier))
        notes = (_moved_notes(moved_file, f"bundled data set {data!r}",
                              "the schema file's roles")
                 + _moved_notes(moved, f"bundled data set {data!r}"
                                + (" or the schema file" if schema_file else "")))
        out.messages = tuple(notes) + out.messages
        return out
    path = Path(data)
    if not path.exists():
        raise SdcevalError(
            f"{data!r} is neither a bundled data set nor an existing file."
            f"{suggest(data, BUNDLED)} Bundled: {', '.join(BUNDLED)}")
    # hierarchies first: a column with a categorical hierarchy is read as text
    hier = load_hierarchies(spec, base)
    frame = load_table(path, text=text_columns(spec, hier))
    notes = []
    if not any(k in spec for k in ROLE_KEYS):
        ignored = role_names(spec.get("ignore"), "ignore")
        spec["numeric"], note = _infer_numeric(frame, path, ignored)
        notes.append(note)
    ds = Dataset(frame, Schema.from_mapping(frame, {**spec, "hierarchies": hier}),
                 name=path.stem)
    ds.input_files = tuple([path.resolve()] + schema_files + _sources(hier))
    ds.messages = tuple(notes + _moved_notes(moved, "the schema file")) + ds.messages
    return ds


#: roles whose columns a method protects; options never move them to passthrough
PROTECTED_ROLES = ("qi", "sensitive", "numeric")


def _override(spec: Mapping, changes: Mapping, moved: list | None = None) -> dict:
    """``spec`` with the roles in ``changes`` replacing its own; a column named in
    ``changes`` leaves the role ``spec`` gave it (``--qi diag`` on a schema where diag is
    sensitive makes it a QI, as `Schema.with_roles` does), so that options override the
    file rather than conflict with it, except that a protected column (`PROTECTED_ROLES`)
    is never moved to passthrough: that is an error.  Each move is appended to ``moved``
    as ``(column, old role, new role)``, for a note to the user."""
    roles = ROLE_KEYS + ("ignore",)
    new_role = {n: r for r, v in changes.items() if r in roles for n in role_names(v, r)}
    out = dict(spec)
    for r in roles:
        if r in out and r not in changes:
            old = role_names(out[r], r)
            unprotect = [n for n in old if new_role.get(n) == "passthrough"
                         and r in PROTECTED_ROLES]
            if unprotect:
                # a release must never be less protected than asked: a column the
                # schema protects is not published in clear because of an option
                raise SdcevalError(
                    f"column {unprotect[0]!r} has role {r} (it is protected), so it cannot "
                    "also be kept unchanged (--keep / passthrough); to publish it "
                    f"unprotected, take it out of the {r} columns first (e.g. --{r} "
                    "without it) or give it role passthrough in the schema file")
            kept = [n for n in old if n not in new_role]
            if moved is not None:
                moved.extend((n, r, new_role[n]) for n in old if n in new_role)
            out[r] = (kept[0] if kept else None) if r in ("sensitive", "label") else kept
    out.update(changes)
    return out


def _moved_notes(moved: list, source: str, by: str = "the options") -> list[str]:
    return [f"column {c!r} has role {new}, as {by} ask, instead of role {old} from "
            f"{source}" + (" (published unchanged, not protected)"
                           if new == "passthrough" else "")
            for c, old, new in moved]


def _sources(hierarchies: Mapping[str, Hierarchy]) -> list[Path]:
    return list(dict.fromkeys(h.source for h in hierarchies.values() if h.source is not None))


def _infer_numeric(frame: pd.DataFrame, path: Path, ignored=()) -> tuple[list[str], str]:
    """Roles for a file given without any: its numeric columns (but the ``ignored``)
    become ``numeric``.  A record-number column (`identifier_range`) is refused: masking
    it would publish a perturbed row number and let it dominate the distance-based
    risk."""
    numeric = [c for c in frame.columns if pd.api.types.is_numeric_dtype(frame[c])
               and not pd.api.types.is_bool_dtype(frame[c]) and c not in ignored]
    ids = {c: r for c in numeric if (r := identifier_range(frame[c])) is not None}
    if ids:
        rest = [c for c in numeric if c not in ids]
        c, (a, b) = next(iter(ids.items()))
        others = (f"--numeric {','.join(rest)}" if rest else "--numeric COLUMNS")
        quoted = ", ".join('"' + i + '"' for i in ids)
        raise SdcevalError(
            f"column{'s' if len(ids) > 1 else ''} {', '.join(map(repr, ids))} of "
            f"{str(path)!r} look{'' if len(ids) > 1 else 's'} like a record identifier "
            f"({c!r} holds the distinct integers {a}..{b}, one per record), and no roles were "
            f"given, so it would be masked as an attribute; name the columns to protect "
            f"with {others} (or --qi/--schema), or give it role 'ignore' in a schema file "
            f"(ignore = [{quoted}])")
    other = [c for c in frame.columns if c not in numeric and c not in ignored]
    note = ("roles inferred from the data: numeric = " + (", ".join(numeric) or "(none)")
            + (f"; ignored (not numeric) = {', '.join(other)}" if other else "")
            + (f"; ignored (schema) = {', '.join(ignored)}" if ignored else "")
            + "; give --numeric/--qi or --schema to choose")
    return numeric, note


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
                        label=ref.get("label"),
                        passthrough=(split(ref["passthrough"]) if "passthrough" in ref
                                     else None))


def open_ref(ref) -> Dataset:
    """Open (and cache per process) the data set a reference names (``{"data": ...,
    "schema": ..., "qi": ...}``); a `Dataset` is returned as it is."""
    if isinstance(ref, Dataset):
        return ref
    return _open_frozen(_freeze(ref))
