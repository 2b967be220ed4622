"""Loading data sets: the bundled ones (offline) and users' CSV/Parquet files.

Bundled data sets, SPEC §2: ``census`` (CASC Census, 1080 x 13 numeric), ``eia`` (CASC
EIA, 4092 records, 11 numeric attributes), ``adult`` (UCI Adult train+test without rows
holding ``?``, 45222 records), ``adult-train`` (30162 records) and ``adult-arx`` (ARX's
Adult: adult-train in ARX's column order with ARX's hierarchies, docs/arx.md).

A user's own file (`open_dataset`) is read safely:

* **identifiers**: a column that identifies the records (`identifier_reason`) gets role
  ``identifier`` (never used, never published) unless a role names it explicitly (a
  schema role, ``--qi``/``--numeric``/...: respected, with a note).  It identifies the
  records when its name says so (`named_like_identifier`: the words ``id``, ``ssn``,
  ``email``, ``phone``, ... of `IDENTIFIER_WORDS`, or a name/number word after a word
  of `OWNER_WORDS`: ``patient_id``, ``PatientID``, ``first_name``, ``record_no``), or
  when its values do (`unique_reason`): the record numbers 0..n-1 or 1..n; at least
  `UNIQUE_MIN` whole numbers, all distinct; at least `UNIQUE_MIN` texts, more than
  `TEXT_DISTINCT` of them distinct.  ``--keep`` (``passthrough=``) of such a column is
  refused unless forced (``--keep-identifier``, ``keep_identifiers=``).
* **codes with leading zeros** stay text: a CSV column that pandas reads as whole
  numbers but whose cells, as written, include a number with a leading zero (``02116``,
  ``007``) is read again as text, exactly as written
  (`sdceval.core.tables.LEADING_ZERO`), so that it is categorical and a hierarchy masks
  it (``0211*``); a ``[kinds]`` entry or a numeric hierarchy in the schema decides
  instead.
* **roles inferred** when none is given: numeric columns get role ``numeric``,
  identifiers role ``identifier``, the others ``ignore``; one note says so.
* **missing values**: refused (the default) or, with ``missing="drop"`` (``--missing
  drop``, ``missing = "drop"`` in the schema), the incomplete records are removed
  (`Dataset`), with a note; ``missing="keep"`` keeps those whose missing values are in
  categorical quasi-identifiers (the missing value a leaf of its own,
  `sdceval.core.hierarchy.Hierarchy.missing_leaf`) and refuses any other.
* **formats**: CSV and Parquet, read by `sdceval.core.tables.load_table`: a CSV file's
  separator is found from its first lines unless given (``sep=``, ``--sep``), and
  Stata, SPSS, SAS or binary files are refused, naming the supported formats.
* `schema_toml` writes the schema a data set was read with as the TOML file
  ``--schema`` reads (``--print-schema``).
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Callable, Mapping

import numpy as np
import pandas as pd

from sdceval.core.dataset import Dataset
from sdceval.core.errors import SdcevalError, suggest, unknown
from sdceval.core.hierarchy import Hierarchy
from sdceval.core.inference import (assign_roles, identifier_columns,
                                    refuse_kept_identifiers)
from sdceval.core.schema import (DESIGN_ROLES, ROLE_KEYS, SINGLE_ROLES, Schema,
                                 load_hierarchies, missing_policy,
                                 role_names, schema_kinds, text_columns)
from sdceval.core.tables import _load_table

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


#: the bundled survey's roles (docs/examples/make_survey.py made it; docs/survey.md)
SURVEY_ROLES = dict(qi=["region", "urbrur", "hhsize", "sex", "age", "marital", "education"],
                    numeric=["income"], sensitive="activity", weight="weight",
                    household="hid", household_keys=["region", "urbrur", "hhsize"])


def _survey(name: str) -> Dataset:
    with _data_file(f"{name}.csv.gz").open("rb") as fh:
        df = pd.read_csv(fh, compression="gzip")
    # the coded keys are categories (as sdcMicro reads its factors); age is a number
    kinds = {c: "categorical" for c in SURVEY_ROLES["qi"] if c != "age"}
    return Dataset(df, Schema.from_roles(df, **SURVEY_ROLES, kinds=kinds), name=name)


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
    "survey": DatasetInfo("survey", lambda: _survey("survey"),
                          "synthetic household survey: 13577 persons in 5001 sampled "
                          "households, design weights (population about 1.08 million); "
                          "keys region, urbrur, hhsize, sex, age, marital, education"),
}

_cache: dict[str, Dataset] = {}


def load_dataset(name: str) -> Dataset:
    """A bundled data set by name (cached; Datasets are never mutated)."""
    if name not in BUNDLED:
        raise unknown("data set", name, BUNDLED)
    if name not in _cache:
        _cache[name] = BUNDLED[name].loader()
    return _cache[name]


def read_schema_file(path) -> Mapping:
    """Column roles from a TOML file (top level or a ``[schema]`` table)."""
    from sdceval.core.fileio import read_toml
    spec = read_toml(path, "schema")
    return spec.get("schema", spec)


def open_dataset(data: str, *, schema_file=None, qi=None, sensitive=None, numeric=None,
                 label=None, passthrough=None, keep_identifiers=None, missing=None,
                 unused_roles=(), user: str = "", sep: str | None = None, weight=None,
                 household=None, household_keys=None) -> Dataset:
    """A bundled data set by name, or a CSV/Parquet path with roles from a TOML schema
    file and/or role options (options override the file).  A bundled data set's roles can
    be changed the same way.

    A file given without any role (no schema roles, no options) gets its roles inferred
    (`infer_roles`): ``numeric`` for its numeric columns, ``identifier`` for the columns
    that identify the records (`identifier_reason`: a record number, a patient id,
    names), reported in `Dataset.messages`.  With roles given, a column they do not name
    that identifies the records gets role ``identifier`` too (it is dropped either way),
    and one they name is used as they say, with a note.  ``passthrough`` (``--keep``) of
    such a column is refused unless it is also in ``keep_identifiers`` (or only there:
    ``--keep-identifier``, which implies passthrough).  ``missing``: the missing-value
    policy (``refuse``, ``drop`` or ``keep``; default: the schema file's ``missing``,
    else refuse).  ``unused_roles``: roles the caller (``user``, a method) does not use; their
    columns with missing values are set aside (role ``ignore``) rather than counted by
    the policy.  A CSV column of numbers written with leading zeros is read as text
    (`sdceval.core.tables.load_table`).  ``sep``: a CSV file's separator (default:
    found from its first lines, with a note when it is not a comma:
    `sdceval.core.tables.csv_separator`).  `Dataset.input_files` lists every file read
    (data, schema, hierarchies), so that outputs never overwrite them.  ``weight``,
    ``household`` and ``household_keys``: a survey's design (`sdceval.core.schema`;
    ``--weight``, ``--household``, ``--household-keys``), never inferred.
    """
    asked = role_names(passthrough, "passthrough")
    forced = role_names(keep_identifiers, "passthrough")
    if forced:
        passthrough = asked + [c for c in forced if c not in asked]
    overrides = {k: v for k, v in dict(qi=qi, sensitive=sensitive, numeric=numeric,
                                       label=label, passthrough=passthrough, weight=weight,
                                       household=household,
                                       household_keys=household_keys).items()
                 if v is not None}
    if missing is not None:
        overrides["missing"] = missing_policy(missing, "--missing")
    file_spec = dict(read_schema_file(schema_file)) if schema_file else {}
    declared = role_names(file_spec.get("identifier"), "identifier")
    moved: list = []
    spec = _override(file_spec, overrides, moved)
    base = Path(schema_file).parent if schema_file else None
    schema_files = [Path(schema_file).resolve()] if schema_file else []
    if data in BUNDLED and not Path(data).exists():
        ds = load_dataset(data)
        if schema_file is None and not overrides:
            return ds
        refuse_kept_identifiers(ds.frame, asked, forced, declared)
        old = ds.schema
        hier = load_hierarchies(spec, base, frame=ds.frame)
        # roles not named keep the bundled schema's; hierarchies from the file add to
        # (or replace) the bundled ones
        bundled = {"qi": old.qis, "sensitive": old.sensitive, "numeric": old.numeric,
                   "label": old.label, "passthrough": old.passthrough + list(old.kept),
                   "identifier": old.identifiers, "missing": old.missing,
                   "weight": old.weight, "household": old.household,
                   "household_keys": old.household_keys}
        moved_file: list = []
        moved = []
        merged = {**_override(_override(bundled, file_spec, moved_file), overrides, moved),
                  "hierarchies": {**{c.name: c.hierarchy for c in old.columns
                                     if c.hierarchy is not None}, **hier}}
        out = Dataset(ds.frame, Schema.from_mapping(ds.frame, merged), name=ds.name)
        out.input_files = tuple(schema_files + _sources(hier))
        out.read_as_text = tuple(c for c in ds.frame.columns
                                 if not pd.api.types.is_numeric_dtype(ds.frame[c]))
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
    # hierarchies first: a column with a categorical hierarchy is read as text, one with
    # a numeric hierarchy or declared numeric as numbers
    hier = load_hierarchies(spec, base)
    text = text_columns(spec, hier)
    numbers = ([c for c, h in hier.items() if h.numeric]
               + [c for c, k in schema_kinds(spec).items() if k == "numeric"])
    frame, zeros, found = _load_table(path, text=text, numeric=numbers, sep=sep)
    notes = [f"column{'s' if len(zeros) > 1 else ''} "
             + ", ".join(f"{c!r} (e.g. {v!r})" for c, v in zeros.items())
             + " read as text, exactly as written: numbers written with leading zeros "
             "are codes (categorical: a hierarchy masks them, "
             f"{next(iter(zeros.values()))[:-1]}*); declare [kinds] "
             f"{next(iter(zeros))} = \"numeric\" in a schema to read numbers"] if zeros else []
    if sep is None and found not in (None, ","):
        notes.append(f"{path.name}: read as separated by {found!r}, as its first lines "
                     "are; give --sep (sep=) to choose")
    ids = identifier_columns(frame)
    refuse_kept_identifiers(frame, asked, forced, declared, ids)
    spec, more = assign_roles(frame, spec, ids, forced)
    notes += more
    notes += _set_aside(frame, spec, unused_roles, user)
    ds = Dataset(frame, Schema.from_mapping(frame, {**spec, "hierarchies": hier}),
                 name=path.stem)
    ds.input_files = tuple([path.resolve()] + schema_files + _sources(hier))
    ds.read_as_text = tuple(dict.fromkeys(list(text) + list(zeros)))
    ds.messages = tuple(notes + _moved_notes(moved, "the schema file")) + ds.messages
    return ds


def _set_aside(frame: pd.DataFrame, spec: dict, roles, user: str) -> list[str]:
    """Columns of ``roles`` (roles the caller does not use: a method drops them) that
    hold missing values become ``ignore`` in ``spec``, so that the missing-value policy
    counts only the columns that are used (issue 22 item 16); returns the note."""
    moved = []
    for role in roles:
        names = role_names(spec.get(role), role)
        holes = [c for c in names if c in frame.columns and frame[c].isna().any()]
        if not holes:
            continue
        kept = [c for c in names if c not in holes]
        spec[role] = kept[0] if role in ("sensitive", "label") and kept else (
            None if role in ("sensitive", "label") else kept)
        spec["ignore"] = role_names(spec.get("ignore"), "ignore") + holes
        moved += [(c, role) for c in holes]
    if not moved:
        return []
    cols = ", ".join(f"{c!r} ({r})" for c, r in moved)
    return [f"{cols}: missing values, in a column {user or 'the method'} does not use "
            "(it is dropped from the release): not counted by the missing-value policy"]


#: roles whose columns a method protects; options never move them to passthrough
PROTECTED_ROLES = ("qi", "sensitive", "numeric")


def _override(spec: Mapping, changes: Mapping, moved: list | None = None) -> dict:
    """``spec`` with the roles in ``changes`` replacing its own; a column named in
    ``changes`` leaves the role ``spec`` gave it (``--qi diag`` on a schema where diag is
    sensitive makes it a QI, as `Schema.with_roles` does), so that options override the
    file rather than conflict with it, except that a protected column (`PROTECTED_ROLES`)
    is never moved to passthrough: that is an error.  Each move is appended to ``moved``
    as ``(column, old role, new role)``, for a note to the user."""
    roles = ROLE_KEYS + DESIGN_ROLES + ("identifier", "ignore")
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
            out[r] = (kept[0] if kept else None) if r in SINGLE_ROLES else kept
    out.update(changes)
    return out


def _moved_notes(moved: list, source: str, by: str = "the options") -> list[str]:
    return [f"column {c!r} has role {new}, as {by} ask, instead of role {old} from "
            f"{source}" + (" (published unchanged, not protected)"
                           if new == "passthrough" else "")
            for c, old, new in moved]


def _sources(hierarchies: Mapping[str, Hierarchy]) -> list[Path]:
    return list(dict.fromkeys(h.source for h in hierarchies.values() if h.source is not None))


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
    ref.pop("_stamp", None)
    split = (lambda v: list(v) if isinstance(v, tuple) else
             ([s.strip() for s in v.split(",")] if isinstance(v, str) else v))
    return open_dataset(ref["data"], schema_file=ref.get("schema"),
                        qi=split(ref["qi"]) if "qi" in ref else None,
                        sensitive=ref.get("sensitive"),
                        numeric=split(ref["numeric"]) if "numeric" in ref else None,
                        label=ref.get("label"),
                        passthrough=(split(ref["passthrough"]) if "passthrough" in ref
                                     else None),
                        keep_identifiers=(split(ref["keep_identifiers"])
                                          if "keep_identifiers" in ref else None),
                        missing=ref.get("missing"), sep=ref.get("sep"),
                        weight=ref.get("weight"), household=ref.get("household"),
                        household_keys=(split(ref["household_keys"])
                                        if "household_keys" in ref else None))


def open_ref(ref) -> Dataset:
    """Open (and cache per process) the data set a reference names (``{"data": ...,
    "schema": ..., "qi": ...}``); a `Dataset` is returned as it is."""
    if isinstance(ref, Dataset):
        return ref
    return _open_frozen(_freeze(ref) + (("_stamp", _stamp(ref)),))


def _stamp(ref: dict) -> tuple:
    """The modification times and sizes of the files a reference reads: a file edited
    since it was opened is opened again, not served from the cache."""
    out = []
    for key in ("data", "schema"):
        v = ref.get(key)
        if isinstance(v, str) and v not in BUNDLED:
            try:
                st = Path(v).stat()
            except OSError:
                continue
            out.append((key, st.st_mtime_ns, st.st_size))
    return tuple(out)
