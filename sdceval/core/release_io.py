"""Read a release table back (``sdceval evaluate --release FILE``).

A release file written by ``sdceval anonymize`` is published in a random row order; its
private key file beside it puts the rows back in record order
(`sdceval.core.release_order`: `write_release`, the key's format and checks).

A release written by ``sdceval anonymize`` is a plain table that any tool can read.
Reading it back recovers what measures need.  The kind is decided from the columns
(SPEC §1, release kinds):

- a ``bucket`` column that is not a column of the data set -> bucketized (exact QIs,
  sensitive values permuted per bucket); a data-set column named ``bucket`` (kept with
  ``--keep bucket``) is the user's data, never read as structure;
- QI columns of which at least one holds generalized labels (hierarchy node names,
  intervals ``[40-49]``, sets ``{a,b}``, ``*``) -> generalized: each label is mapped back
  to its leaf-code range and the equivalence classes are the distinct combinations of
  QI cells;
- numeric-role columns present, and the QI columns absent or holding exactly the
  original values (a perturbative release, QIs at most passed through) -> external
  (perturbative numbers);
- QI columns with the original values and no numeric-role column -> generalized at the
  leaf level (every record its own cell).

Labels are parsed once per distinct label, never per record: a column is hashed into
integer codes (`pandas.factorize`) and the per-label Python work is mapped back through
them.  QI, sensitive and bucket columns are read as text, exactly as written, so codes
such as ``02310`` keep their leading zeros.
"""
from __future__ import annotations

import re

import numpy as np
import pandas as pd

from sdceval.core.errors import SdcevalError
from sdceval.core.hierarchy import Hierarchy
from sdceval.core.loaders import load_table
from sdceval.core.release import Release
from sdceval.core.release_order import (BUCKET_COLUMN, check_cells, check_record_order,
                                        is_bucketized, key_path_for, read_key,
                                        to_record_order, write_release)

_INTERVAL = re.compile(r"^\[\s*(-?[0-9.eE+]+)\s*[-,]\s*(-?[0-9.eE+]+)\s*[\])]$")


def _label_ranges(h: Hierarchy) -> dict[str, tuple[int, int]]:
    out: dict[str, tuple[int, int]] = {}
    for j in range(h.height, -1, -1):  # leaves win over equally named inner nodes
        for lab, a, b in zip(h.labels[j], h.lo[j], h.hi[j]):
            out[str(lab)] = (int(a), int(b))
    return out


def _label_cell(h: Hierarchy, label: str, known: dict, column: str) -> tuple[int, int]:
    """Leaf-code range ``(lo, hi)`` of one released label: a leaf or node label, a number
    naming a numeric leaf (``40`` or ``40.0``), an interval ``[a-b]`` / ``[a, b)`` of a
    numeric hierarchy, or a set ``{a,b}`` of categorical leaves."""
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
    elif label.startswith("{") and label.endswith("}"):
        codes = h.encode([v.strip() for v in label[1:-1].split(",")], column=column)
        return int(codes.min()), int(codes.max())
    raise SdcevalError(f"release column {column!r}: label {label!r} is neither a value nor a "
                       "node of its hierarchy nor an interval; was the release made with the "
                       "same hierarchy?")


def _cells(h: Hierarchy, values: pd.Series, column: str
           ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(lo, hi, cell_id)`` per record of a released QI column; ``cell_id`` numbers the
    distinct cells (two labels naming the same cell, e.g. ``40`` and ``40.0``, share one)."""
    inv, uniq = pd.factorize(values, use_na_sentinel=True)
    if (inv < 0).any():
        raise SdcevalError(f"release column {column!r} has {int((inv < 0).sum())} missing "
                           "value(s); a released cell is a value, a label or '*'")
    known = _label_ranges(h)
    ranges = np.array([_label_cell(h, str(u).strip(), known, column) for u in uniq],
                      dtype=np.int64).reshape(-1, 2)
    cell_of_label = pd.factorize(ranges[:, 0] * h.n_leaves + ranges[:, 1])[0]
    return ranges[inv, 0], ranges[inv, 1], cell_of_label[inv]


def _combine(keys: list[np.ndarray]) -> np.ndarray:
    """Class id of each record: the distinct combinations of per-column codes, numbered
    in order of first appearance (re-factorized after each column, so no overflow)."""
    out = np.zeros(len(keys[0]), dtype=np.int64)
    for k in keys:
        out = pd.factorize(out * (int(k.max()) + 1) + k)[0].astype(np.int64)
    return out


def read_release(dataset, path, key=None) -> Release:
    """Load a release table, in record order (row-aligned with ``dataset``).

    ``key``: the release's private key file (`sdceval.core.release_order`); by default
    the one beside the release (``masked.csv`` -> ``masked.private-key.csv``) if it
    exists.  With a key, the key is checked against this release file and this data set
    and the rows are put back in record order; without one, the release must be in
    record order already (written with ``--keep-order``, or by another tool) and a
    shuffled one is refused, naming the key file expected.  ``key=False``: the release
    is in record order, read as it is (no key looked for, the order not checked).
    """
    schema = dataset.schema
    expected = key_path_for(path)
    if key is None and expected.exists():
        key = expected
    perm = read_key(key, path, dataset) if key not in (None, False) else None
    text = schema.qis + ([schema.sensitive] if schema.sensitive else [])
    if BUCKET_COLUMN not in dataset.frame.columns:  # else the user's column, read as such
        text.append(BUCKET_COLUMN)
    frame = load_table(path, text=text)
    if len(frame) != dataset.n:
        raise SdcevalError(
            f"release {str(path)!r} has {len(frame)} records but data set {dataset.name!r} has "
            f"{dataset.n}; a release must be row-aligned (one row per original record)")
    if perm is not None:
        return release_from_frame(dataset, to_record_order(frame, perm), name=str(path),
                                  file_row=np.argsort(perm, kind="stable"),
                                  release_path=path)
    frame = frame.reset_index(drop=True)
    cells = {q: _cells(dataset.hierarchy(q), frame[q], q)
             for q in schema.qis if q in frame.columns}
    if key is None:
        check_record_order(dataset, frame, cells, release_path=path, key_path=expected)
    return release_from_frame(dataset, frame, name=str(path), cells=cells,
                              release_path=path)


def release_from_frame(dataset, frame: pd.DataFrame, name: str = "external",
                       cells: dict | None = None, file_row=None,
                       release_path=None) -> Release:
    """A `Release` from a published table in record order (see the module docstring for
    the kinds); ``cells``: the `_cells` of its QI columns if already parsed.  Every
    published cell must fit its record (`check_cells`: an error names the first that
    does not, by its row in the file, ``file_row``)."""
    schema = dataset.schema
    frame = frame.reset_index(drop=True)
    present = [q for q in schema.qis if q in frame.columns]
    cells = dict(cells or {})
    for q in present:
        if q not in cells:
            cells[q] = _cells(dataset.hierarchy(q), frame[q], q)
    check_cells(dataset, frame, {q: cells[q] for q in present},
                release_path=release_path or name, file_row=file_row)
    if not present:
        return _make_release(dataset, frame, name, "external")
    bucketized = is_bucketized(dataset, frame)
    if not bucketized and any(c in frame.columns for c in schema.numeric):
        original = all(((lo == dataset.codes(q)) & (hi == lo)).all()
                       for q, (lo, hi, _) in cells.items())
        if original:  # QIs passed through unchanged beside masked numbers
            return _make_release(dataset, frame, name, "external")
    missing = [q for q in schema.qis if q not in frame.columns]
    if missing:
        raise SdcevalError(f"release lacks quasi-identifier column(s) "
                           f"{', '.join(map(repr, missing))}; a generalized or bucketized "
                           "release publishes every QI")
    sens = schema.sensitive
    sensitive_codes = None
    if sens is not None:
        if sens not in frame.columns:
            raise SdcevalError(f"release lacks the sensitive column {sens!r}")
        sensitive_codes = dataset.hierarchy(sens).encode(frame[sens], column=sens)
    if bucketized:
        classes = pd.factorize(frame[BUCKET_COLUMN])[0].astype(np.int64)
        suppressed = np.zeros(len(frame), bool)
        kind = "bucketized"
    else:
        classes = _combine([cells[q][2] for q in schema.qis])
        suppressed = np.ones(len(frame), bool)
        for q in schema.qis:
            lo, hi, _ = cells[q]
            suppressed &= (lo == 0) & (hi == dataset.hierarchy(q).n_leaves - 1)
        kind = "generalized"
    return _make_release(dataset, frame, name, kind, classes=classes,
                         cells={q: (cells[q][0], cells[q][1]) for q in schema.qis},
                         suppressed=suppressed, sensitive_codes=sensitive_codes)


def _make_release(dataset, frame: pd.DataFrame, name: str, kind: str, **structure) -> Release:
    """The one place a read-back release is constructed: published as read (the table
    is what was published, so nothing is added or dropped), checked against the data
    set once."""
    if kind == "external":
        return Release.external(dataset, frame, method=name)
    dropped = tuple(c for c in dataset.frame.columns if c not in frame.columns)
    return Release(frame, name, kind=kind, dropped=dropped, **structure).check(dataset)


__all__ = ["read_release", "release_from_frame", "write_release"]
