"""Read a release table back (``sdceval evaluate --release FILE``).

A release file written by ``sdceval anonymize`` is published in a random row order; its
private key file beside it puts the rows back in record order
(`sdceval.core.release_order`: `write_release`, the key's format and checks).

A release written by ``sdceval anonymize`` is a plain table that any tool can read.
Reading it back recovers what measures need.  Every published label is mapped back to
its leaf-code range (a cell): the labels of the QI columns (hierarchy node names,
intervals ``[40-49]``, sets ``{a,b}``, ``*``, or the values themselves), and those of a
``numeric``-role column that holds labels — text that is not all numbers, such as
``[30-39]`` or ``*``: a numeric attribute a whole-file strategy generalized into
intervals — in that column's hierarchy (`numeric_label_columns`).  A numeric-role column
of numbers is published numbers (masked, or as they are), also when written as text (a
DataFrame or Parquet file: read as numbers, as from a CSV file).  The kind is decided from the
columns (SPEC §1 and §5, release kinds):

- no QI column -> external;
- a ``bucket`` column that is not a column of the data set -> bucketized (exact QIs,
  sensitive values permuted per bucket) when no numeric-role column is published, else
  composite with ``buckets`` (a bucketization step of a whole-file strategy beside the
  numeric attributes); a data-set column named ``bucket`` (kept with ``--keep bucket``)
  is the user's data, never read as structure;
- numeric-role columns of numbers only, and QI columns holding exactly the original
  values (a perturbative release, QIs at most passed through) -> external (perturbative
  numbers);
- numeric-role columns present otherwise (QI columns with generalized labels, or a
  numeric-role column of labels) -> composite: the cells of the QIs and of the labelled
  numeric columns, the numbers of the others, the sensitive column as published; the
  classes are the distinct combinations of cells.  Read as generalized, the numbers
  beside the labels would be ignored by the measures of generalized releases, which
  would overstate protection;
- no numeric-role column: QI columns of which at least one holds generalized labels ->
  generalized (the equivalence classes are the distinct combinations of QI cells); QI
  columns with the original values -> generalized at the leaf level (every record its
  own cell).

A record is suppressed when every one of its cells is the whole domain (``*``).  An
empty cell of a QI column is a missing value: the record's own where its original value
was missing (``missing = "keep"``: the missing-value leaf of the QI's hierarchy,
`sdceval.core.hierarchy.Hierarchy.missing_leaf`), else a suppressed cell (the whole
domain, as sdcMicro publishes a suppressed value); so a release read back gives the
risks of the release in memory.

Labels are parsed once per distinct label, never per record: a column is hashed into
integer codes (`pandas.factorize`) and the per-label Python work is mapped back through
them.  QI, sensitive and bucket columns are read as text, exactly as written, so codes
such as ``02310`` keep their leading zeros.
"""
from __future__ import annotations

import os
import re

import numpy as np
import pandas as pd

from sdceval.core.combos import combine
from sdceval.core.errors import SdcevalError
from sdceval.core.hierarchy import Hierarchy
from sdceval.core.tables import load_table
from sdceval.core.release import Release
from sdceval.core.schema import column_names
from sdceval.core.release_checks import (BUCKET_COLUMN, check_cells, check_record_order,
                                         is_bucketized)
from sdceval.core.release_order import (file_sha256, key_beside, key_path_for,
                                        key_permutation, public_beside_key, read_key,
                                        to_record_order, write_release)
from sdceval.core.release_public import (SYNTHETIC, public_info, public_path_for,
                                         read_public)

#: a number as Python writes one (``repr``: ``-1.5``, ``1e-07``, ``2.5e+22``)
_NUMBER = r"-?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][-+]?[0-9]+)?"
_INTERVAL = re.compile(rf"^\[\s*({_NUMBER})\s*[-,]\s*({_NUMBER})\s*[\])]$")
#: a right-closed interval ``(a,b]`` (R's ``cut``; ``recode`` with breaks)
_LEFT_OPEN = re.compile(rf"^\(\s*({_NUMBER})\s*,\s*({_NUMBER})\s*\]$")


def _label_ranges(h: Hierarchy) -> dict[str, tuple[int, int]]:
    out: dict[str, tuple[int, int]] = {}
    for j in range(h.height, -1, -1):  # leaves win over equally named inner nodes
        for lab, a, b in zip(h.labels[j], h.lo[j], h.hi[j]):
            out[str(lab)] = (int(a), int(b))
    return out


def _label_cell(h: Hierarchy, label: str, known: dict, column: str) -> tuple[int, int]:
    """Leaf-code range ``(lo, hi)`` of one released label: a leaf or node label, a number
    naming a numeric leaf (``40`` or ``40.0``), an interval ``[a-b]`` / ``[a, b)`` /
    ``(a,b]`` of a numeric hierarchy, or a set ``{a,b}`` of categorical leaves."""
    if label in known:
        return known[label]
    if h.numeric:
        try:
            v = float(label)
        except ValueError:
            v = None
        if v is not None:
            pos = int(np.searchsorted(h.leaf_values, v))
            if pos < h.n_leaves and h.leaf_values[pos] == v:
                return pos, pos
        m = _INTERVAL.match(label)
        if m:
            a, b = float(m.group(1)), float(m.group(2))
            lo = int(np.searchsorted(h.leaf_values, a, side="left"))
            if label.endswith(")"):  # half-open [a, b)
                hi = int(np.searchsorted(h.leaf_values, b, side="left")) - 1
            else:
                hi = int(np.searchsorted(h.leaf_values, b, side="right")) - 1
            if lo <= hi:
                return lo, hi
        m = _LEFT_OPEN.match(label)
        if m:
            lo = int(np.searchsorted(h.leaf_values, float(m.group(1)), side="right"))
            hi = int(np.searchsorted(h.leaf_values, float(m.group(2)), side="right")) - 1
            if lo <= hi:
                return lo, hi
    elif label.startswith("{") and label.endswith("}"):
        codes = h.encode([v.strip() for v in label[1:-1].split(",")], column=column)
        return int(codes.min()), int(codes.max())
    raise SdcevalError(f"release column {column!r}: label {label!r} is neither a value nor a "
                       "node of its hierarchy nor an interval; was the release made with the "
                       "same hierarchy?")


def _cells(h: Hierarchy, values: pd.Series, column: str, own: np.ndarray | None = None
           ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(lo, hi, cell_id)`` per record of a released QI column; ``cell_id`` numbers the
    distinct cells (two labels naming the same cell, e.g. ``40`` and ``40.0``, share one).

    An empty cell (missing, or blank text) of a QI column (``own``: the records' leaf
    codes in the original, in record order) is the record's missing value where the
    original had none (``missing = "keep"``: the missing-value leaf, ``lo = hi =
    missing_leaf``), else a suppressed cell (the whole domain, as sdcMicro publishes a
    suppressed value: ``NA``).  In any other column (``own`` None) it is refused."""
    inv, uniq = pd.factorize(values, use_na_sentinel=True)
    labels = [str(u).strip() for u in uniq]
    blank = np.array([lab == "" for lab in labels] + [True], dtype=bool)
    empty = blank[inv]  # inv = -1 (a missing value) reads the last entry
    if empty.any() and own is None:
        raise SdcevalError(f"release column {column!r} has {int(empty.sum())} missing "
                           "value(s); a released cell is a value, a label or '*'")
    known = _label_ranges(h)
    ranges = np.array([(0, 0) if lab == "" else _label_cell(h, lab, known, column)
                       for lab in labels] + [(0, 0)], dtype=np.int64).reshape(-1, 2)
    lo, hi = ranges[inv, 0], ranges[inv, 1]
    if empty.any():
        lo, hi = lo.copy(), hi.copy()
        ml = h.missing_leaf
        was_missing = (np.asarray(own) == ml) if ml is not None else np.zeros(len(lo), bool)
        lo[empty] = np.where(was_missing[empty], ml if ml is not None else 0, 0)
        hi[empty] = np.where(was_missing[empty], ml if ml is not None else 0,
                             h.n_leaves - 1)
    cell_id = pd.factorize(lo * h.n_leaves + hi)[0].astype(np.int64)
    return lo, hi, cell_id


def class_ids(keys: list[np.ndarray]) -> np.ndarray:
    """Class id of each record: the distinct combinations of per-column codes,
    numbered in order of first appearance (`sdceval.core.combos.combine`)."""
    return combine(keys)[0]


def _is_numbers(col: pd.Series) -> bool:
    return pd.api.types.is_numeric_dtype(col) and not pd.api.types.is_bool_dtype(col)


def numeric_label_columns(dataset, frame: pd.DataFrame) -> list[str]:
    """The ``numeric``-role columns of ``frame`` that hold labels (cells), not numbers:
    a column that is not of a numeric type and has a value that is not a number
    (``[30-39]``, ``*``; a missing value counts, and is refused by `_cells`)."""
    return [c for c in dataset.schema.numeric if c in frame.columns
            and not _is_numbers(frame[c])
            and pd.to_numeric(frame[c], errors="coerce").isna().any()]


def _numbers_read_as_numbers(dataset, frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with its numeric-role columns of numbers written as text (a DataFrame
    or Parquet file holding the labels of exact cells, ``"40"``) as numbers, as a CSV
    file of the same table reads them: one reading whatever the file's format.  A copy
    when a column changes; the caller's frame is never changed."""
    text = [c for c in dataset.schema.numeric if c in frame.columns
            and not _is_numbers(frame[c]) and c not in numeric_label_columns(dataset, frame)]
    if not text:
        return frame
    return frame.assign(**{c: pd.to_numeric(frame[c]) for c in text})


def published_cells(dataset, frame: pd.DataFrame, cells: dict | None = None) -> dict:
    """`_cells` of every published QI column and of every numeric-role column of labels
    (`numeric_label_columns`), in schema order; ``cells``: those already parsed."""
    cells = dict(cells or {})
    columns = [q for q in dataset.schema.qis if q in frame.columns]
    columns += numeric_label_columns(dataset, frame)
    qis = set(dataset.schema.qis)
    return {c: cells[c] if c in cells else
            _cells(dataset.hierarchy(c), frame[c], c,
                   own=dataset.codes(c) if c in qis and len(frame) == dataset.n else None)
            for c in columns}


def read_release(dataset, path, key=None) -> Release:
    """Load a release table, in record order (row-aligned with ``dataset``).

    ``key``: the release's private key file (`sdceval.core.release_order`); by default
    the one beside the release (`key_beside`: ``masked.csv`` ->
    ``masked.csv.private-key.csv``, or a key of the older naming,
    ``masked.private-key.csv``, that names this file) if it exists.  With a key, the key
    is checked against this release file and this data set and the rows are put back in
    record order; without one, the release must be in record order already (written with
    ``--keep-order``, or by another tool) and a shuffled one is refused, naming the key
    file expected.  ``key=False``: the release is in record order, read as it is (no
    key looked for, the order not checked); refused when a key lies beside the file
    (its rows are shuffled: measured in file order they would be matched with the wrong
    records, issue 27 item 2).

    The method's public parameters (`sdceval.core.release_public`: ``masked.csv`` ->
    ``masked.csv.method.json``), when that file lies beside the release, are checked
    against this release file and data set: the keys PRAM redrew must publish
    categories of their domain that the published matrix can draw from the record's
    value (not cells containing the record's value) and prove nothing about the order,
    and the release read back carries them in ``info`` (``perturbed_keys``, ``pram``)
    as the method's own does.  Without it a key
    published as other records' categories is refused, naming the missing file.

    A public file of kind ``"synthetic"`` (`sdceval.core.release_public`: written with
    every synthetic release) makes the file a synthetic release
    (`Release.synthetic`: new records, any row count, no record correspondence), read
    as it is: there is no key (one given is refused) and no record order to check;
    its ``info["dp"]`` is the public file's DP budget when it has one.
    """
    public_path = public_path_for(path)
    public = (read_public(public_path, dataset, file_sha256(path))
              if public_path.exists() else None)
    if public is not None and public.get("kind") == SYNTHETIC:
        return _read_synthetic(dataset, path, key, public, public_path)
    beside = key_beside(path)
    if key is False and beside is not None:
        raise SdcevalError(
            f"release {str(path)!r} has a private key beside it ({str(beside)!r}): its rows "
            "are shuffled, and read without the key (--no-key, key=False) they would be "
            "measured against the wrong records; drop --no-key to use that key, give "
            "another with --key FILE, or move the key away if it belongs to another file")
    if key is None:
        key = beside
    perm = read_key(key, path, dataset) if key not in (None, False) else None
    frame = load_table(path, text=_text_columns(dataset))
    return _in_record_order(dataset, frame, perm, check_order=key is None, name=str(path),
                            release_path=path, key_path=key_path_for(path),
                            public=public, public_path=public_path)


def _text_columns(dataset) -> list[str]:
    """The columns of a release file read as text, exactly as written (module
    docstring): the QIs, the sensitive column and the bucket column."""
    schema = dataset.schema
    text = schema.qis + ([schema.sensitive] if schema.sensitive else [])
    if BUCKET_COLUMN not in dataset.frame.columns:  # else the user's column, read as such
        text.append(BUCKET_COLUMN)
    return text


def _read_synthetic(dataset, path, key, public: dict, public_path) -> Release:
    """`read_release` of a file its public file marks as synthetic."""
    if key not in (None, False):
        raise SdcevalError(
            f"release {str(path)!r} is synthetic (its public file {str(public_path)!r} "
            f"says so: new records drawn by {public['method']!r}, no record "
            "correspondence): it has no key, as no row is the release of a record; drop "
            "--key / key=")
    frame = load_table(path, text=_text_columns(dataset))
    info = {"dp": public["dp"]} if public.get("dp") else {}
    return Release.synthetic(dataset, _in_original_types(dataset, frame),
                             method=public["method"], info=info)


def _in_original_types(dataset, frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with each column read as text (`_text_columns`) whose original column
    holds numbers (an integer QI such as an age) as numbers of the original's dtype,
    as the method published them (`sdceval.methods._synthesis`: the original's values
    and dtypes), so that a synthetic release read back measures as it did in memory.  A
    column with a value that is not a number stays text (the measures name it)."""
    out = {}
    for c in frame.columns:
        want = dataset.frame[c].dtype if c in dataset.frame.columns else None
        if want is None or not pd.api.types.is_numeric_dtype(want) \
                or pd.api.types.is_bool_dtype(want) or _is_numbers(frame[c]):
            continue
        numbers = pd.to_numeric(frame[c], errors="coerce")
        whole = not pd.api.types.is_integer_dtype(want) or bool(
            (numbers.dropna() % 1 == 0).all())  # never 77.5 cut to 77
        if numbers.isna().equals(frame[c].isna()) and whole:  # every value a number
            try:
                out[c] = numbers.astype(want)
            except (TypeError, ValueError):  # a missing value in an integer column
                out[c] = numbers
    return frame.assign(**out) if out else frame


def release_of(dataset, release, key=None) -> Release:
    """``release`` as a `Release` of ``dataset``, in record order, whatever form it has
    (the Python API's one entry, `sdceval.evaluate`):

    - a `Release` (from `sdceval.anonymize`: always in record order) as it is;
    - the path of a release file: `read_release` (the key beside it, or ``key``);
    - a DataFrame of published rows (a release file read with pandas): checked as a
      file (issue 27 item 1).  ``key``: its private key (the key file's path, the key
      read as a table, or its ``record`` column: `key_permutation`) puts the rows in
      record order.  A key file whose ``release_sha256`` is that of the DataFrame
      written as the release file (`frame_sha256`: the file read back unchanged) is
      tied to it as to the file; any other key must yield rows that fit their records
      (`check_record_order`, as without a key), or the DataFrame is refused and the
      error asks for the release file's path.  ``key=False``: the rows are in record
      order, taken as they are.  Every cell must fit its record (`check_cells`).  A
      shuffled DataFrame is refused, saying how to pass the key: measured in its own
      order it would link rows to the wrong records and understate the risk.  The
      method's public parameters (PRAM's keys and matrices, `read_release`) are those
      of the release file the key file names, beside the key: a DataFrame given with
      its key as a table or an array has none, so a PRAM-ed one is refused.
    """
    if isinstance(release, Release):
        if key is not None:
            raise SdcevalError("key= puts the rows of a release given as a DataFrame or a "
                               "file in record order; a Release from sdceval.anonymize is "
                               "in record order already: drop key=")
        return release
    if isinstance(release, (str, os.PathLike)):
        return read_release(dataset, release, key=key)
    if not isinstance(release, pd.DataFrame):
        raise SdcevalError(f"release must be a Release (from sdceval.anonymize), the path "
                           f"of a release file or a DataFrame of released records, got "
                           f"{type(release).__name__}")
    frame = release.copy(deep=True)  # the caller's frame stays theirs
    frame.columns = column_names(frame)  # as the data set's: text, one column per name
    if key is False:
        return _in_record_order(dataset, frame, None, check_order=False, name="DataFrame",
                                release_path="DataFrame", in_file=False,
                                public_path=_NO_PUBLIC)
    perm, tied = (None, False) if key is None else key_permutation(key, dataset, frame)
    public, public_path = None, None
    if isinstance(key, (str, os.PathLike)):
        public_path, sha = public_beside_key(key)
        if public_path.exists():
            public = read_public(public_path, dataset, sha)
            if public.get("kind") == SYNTHETIC:  # a key of a file now synthetic
                raise SdcevalError(f"key {str(key)!r}: the release beside it is "
                                   "synthetic (no record correspondence) and has no key; "
                                   "give the synthetic release's file path instead")
    if key is None:
        fix = ("no key was given: a release written by 'sdceval anonymize' has its rows "
               "shuffled; give its key, sdceval.evaluate(df, release_df, ..., "
               "key='masked.csv.private-key.csv') (the key file, the key read with "
               "pd.read_csv(KEY, comment='#'), or its 'record' column), or give the "
               "release file's path instead of a DataFrame (its key beside it is found "
               "and checked).  A DataFrame known to be in record order is measured with "
               "key=False")
    else:
        fix = ("was put in order by the key given, which is not tied to this DataFrame (its "
               "bytes are not those of the file the key was written for), so its rows "
               "must fit their records: the key belongs to another release, or the "
               "DataFrame was changed, or much noise hides the order; give this "
               "release's key, or the release file's path instead of the DataFrame "
               "(its key is then checked against the file)")
    return _in_record_order(dataset, frame, perm, check_order=not tied, name="DataFrame",
                            release_path="DataFrame", fix=fix, in_file=False,
                            public=public, public_path=public_path or _NO_PUBLIC)


#: what a DataFrame given without its key file lacks to find its public file
_NO_PUBLIC = ("give the release file's path, or its key file as key=, so that the public "
              "file of the method's parameters beside it (RELEASE.method.json) is found")


def _missing_public(public_path) -> str:
    if not isinstance(public_path, os.PathLike):
        return public_path
    return (f"the public file of the method's parameters, {str(public_path)!r}, is "
            "missing: 'sdceval anonymize' writes it beside the release; put it there")


def _in_record_order(dataset, frame: pd.DataFrame, perm, *, check_order: bool, name: str,
                     release_path, fix=None, key_path=None, in_file: bool = True,
                     public: dict | None = None, public_path=None) -> Release:
    """The one path from a published table to a `Release` (a file read back, a
    DataFrame): its size checked, its rows put in record order by ``perm`` (the key's
    permutation) if given, its order checked (``check_order``: `check_record_order`,
    failing with ``fix``; the keys ``public`` lists as PRAM-ed are no evidence) and
    every cell checked against its record (`check_cells`, in `release_from_frame`;
    ``public_path``: the public file, named when it is missing)."""
    if len(frame) != dataset.n:
        synthetic = (f"; a synthetic release (new records, any count) is recognized by "
                     f"its public file {str(public_path)!r}, which 'sdceval anonymize' "
                     "writes beside it: put it there"
                     if isinstance(public_path, os.PathLike) and public is None else
                     "; a synthetic table (new records, any count) is evaluated as "
                     "sdceval.Release.synthetic(dataset, frame)"
                     if not isinstance(public_path, os.PathLike) else "")
        raise SdcevalError(
            f"release {str(release_path)!r} has {len(frame)} records but data set "
            f"{dataset.name!r} has {dataset.n}; a release must be row-aligned (one row per "
            f"original record){synthetic}")
    file_row = None
    if perm is not None:
        frame = to_record_order(frame, perm)
        file_row = np.argsort(perm, kind="stable")
    frame = _numbers_read_as_numbers(dataset, frame.reset_index(drop=True))
    cells = published_cells(dataset, frame)
    hint = _missing_public(public_path) if public is None and public_path else None
    if check_order:
        check_record_order(dataset, frame, cells, release_path=release_path,
                           key_path=key_path, fix=fix,
                           perturbed=public["perturbed_keys"] if public else (),
                           public_hint=hint)
    return release_from_frame(dataset, frame, name=name, cells=cells, file_row=file_row,
                              release_path=release_path, in_file=in_file, public=public,
                              public_hint=hint)


def release_from_frame(dataset, frame: pd.DataFrame, name: str = "external",
                       cells: dict | None = None, file_row=None,
                       release_path=None, in_file: bool = True,
                       public: dict | None = None, public_hint: str | None = None
                       ) -> Release:
    """A `Release` from a published table in record order (see the module docstring for
    the kinds); ``cells``: the `_cells` of its QI columns (and numeric-role columns of
    labels) if already parsed.  Every published cell must fit its record (`check_cells`:
    an error names the first that does not, by its row in the file, ``file_row``), but
    a key PRAM redrew (``public``: the checked public parameters,
    `sdceval.core.release_public.read_public`) must publish categories of its domain;
    the release then carries them in ``info``.  ``public_hint``: where the public file
    was expected (absent), said by the error of a key that looks PRAM-ed."""
    schema = dataset.schema
    frame = _numbers_read_as_numbers(dataset, frame.reset_index(drop=True))
    present = [q for q in schema.qis if q in frame.columns]
    cells = published_cells(dataset, frame, cells)
    perturbed = public["pram"] if public else {}
    check_cells(dataset, frame, cells, release_path=release_path or name,
                file_row=file_row, in_file=in_file, perturbed=perturbed,
                public_hint=public_hint)
    info = public_info(dataset, public, cells) if public else {}
    if not present:
        return _make_release(dataset, frame, name, "external")
    missing = [q for q in perturbed if q not in frame.columns]
    if missing:
        raise SdcevalError(f"release lacks the column(s) {', '.join(map(repr, missing))} "
                           "its public file lists as keys PRAM redrew; give the public "
                           "file written with this release")
    bucketized = is_bucketized(dataset, frame)
    numeric = any(c in frame.columns for c in schema.numeric)
    intervals = [c for c in cells if c not in schema.qis]
    if not bucketized and numeric and not intervals:
        original = all(((lo == dataset.codes(q)) & (hi == lo)).all()
                       for q, (lo, hi, _) in cells.items())
        if original:  # QIs passed through unchanged beside masked numbers
            return _make_release(dataset, frame, name, "external")
    composite = numeric  # beside published numeric attributes: a whole-file release
    missing = [q for q in schema.qis if q not in frame.columns]
    if missing:
        raise SdcevalError(f"release lacks quasi-identifier column(s) "
                           f"{', '.join(map(repr, missing))}; a generalized, bucketized or "
                           "whole-file (composite) release publishes every QI")
    sens = schema.sensitive
    sensitive_codes = None
    if sens is not None:
        if sens not in frame.columns:
            raise SdcevalError(f"release lacks the sensitive column {sens!r}")
        sensitive_codes = dataset.hierarchy(sens).encode(frame[sens], column=sens)
    structure = {}
    if bucketized:
        classes = pd.factorize(frame[BUCKET_COLUMN])[0].astype(np.int64)
        suppressed = np.zeros(len(frame), bool)
        kind = "bucketized"
        if composite:  # a bucketization step beside the numeric attributes
            kind, structure["buckets"] = "composite", True
    else:
        classes = class_ids([cells[c][2] for c in cells])
        suppressed = np.ones(len(frame), bool)
        for c, (lo, hi, _) in cells.items():
            suppressed &= (lo == 0) & (hi == dataset.hierarchy(c).n_leaves - 1)
        kind = "composite" if composite else "generalized"
    return _make_release(dataset, frame, name, kind, classes=classes,
                         cells={c: (lo, hi) for c, (lo, hi, _) in cells.items()},
                         suppressed=suppressed, sensitive_codes=sensitive_codes,
                         info=info, **structure)


def _make_release(dataset, frame: pd.DataFrame, name: str, kind: str, **structure) -> Release:
    """The one place a read-back release is constructed: published as read (the table
    is what was published, so nothing is added or dropped), checked against the data
    set once."""
    if kind == "external":
        return Release.external(dataset, frame, method=name)
    dropped = tuple(c for c in dataset.frame.columns if c not in frame.columns)
    return Release(frame, name, kind=kind, dropped=dropped, **structure).check(dataset)


__all__ = ["class_ids", "read_release", "release_from_frame", "release_of", "write_release"]
