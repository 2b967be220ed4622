"""Read a release table back (``sdceval evaluate --release FILE``).

A release written by ``sdceval anonymize`` is a plain table that any tool can read.
Reading it back recovers what measures need.  The kind is decided from the columns
(SPEC §1, release kinds):

- a ``bucket`` column -> bucketized (exact QIs, sensitive values permuted per bucket);
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


def read_release(dataset, path) -> Release:
    """Load a release table row-aligned with ``dataset``."""
    schema = dataset.schema
    text = schema.qis + ([schema.sensitive] if schema.sensitive else []) + ["bucket"]
    frame = load_table(path, text=text)
    if len(frame) != dataset.n:
        raise SdcevalError(
            f"release {str(path)!r} has {len(frame)} records but data set {dataset.name!r} has "
            f"{dataset.n}; a release must be row-aligned (one row per original record)")
    return release_from_frame(dataset, frame, name=str(path))


def release_from_frame(dataset, frame: pd.DataFrame, name: str = "external") -> Release:
    """A `Release` from a published table (see the module docstring for the kinds)."""
    schema = dataset.schema
    frame = frame.reset_index(drop=True)
    present = [q for q in schema.qis if q in frame.columns]
    if not present:
        return _make_release(dataset, frame, name, "external")
    cells = {}
    for q in present:
        cells[q] = _cells(dataset.hierarchy(q), frame[q], q)
    bucketized = "bucket" in frame.columns
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
        classes = pd.factorize(frame["bucket"])[0].astype(np.int64)
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


__all__ = ["read_release", "release_from_frame"]
