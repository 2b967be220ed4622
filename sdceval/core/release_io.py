"""Read a release table back (``sdceval evaluate --release FILE``).

A release written by ``sdceval anonymize`` is a plain table that any tool can read.
Reading it back recovers what measures need:

- a ``bucket`` column -> a bucketized release (exact QIs, sensitive values per bucket);
- QI columns holding generalized labels (hierarchy node names, intervals ``[40-49]``,
  ``*``) -> a generalized release: each label is mapped back to its leaf-code range
  and the equivalence classes are the distinct combinations of QI labels;
- otherwise -> an external (perturbative) release of numbers.
"""
from __future__ import annotations

import re

import numpy as np
import pandas as pd

from sdceval.core.loaders import load_table
from sdceval.core.errors import SdcevalError
from sdceval.core.hierarchy import Hierarchy
from sdceval.core.release import Release, external_release

_INTERVAL = re.compile(r"^\[\s*(-?[0-9.eE+]+)\s*[-,]\s*(-?[0-9.eE+]+)\s*[\])]$")


def _label_ranges(h: Hierarchy) -> dict[str, tuple[int, int]]:
    out: dict[str, tuple[int, int]] = {}
    for j in range(h.height, -1, -1):  # leaves win over equally named inner nodes
        for lab, a, b in zip(h.labels[j], h.lo[j], h.hi[j]):
            out[str(lab)] = (int(a), int(b))
    return out


def _parse_cell(h: Hierarchy, label: str, known: dict, column: str) -> tuple[int, int]:
    if label in known:
        return known[label]
    m = _INTERVAL.match(label)
    if m and h.numeric:
        a, b = float(m.group(1)), float(m.group(2))
        lo = int(np.searchsorted(h.leaf_values, a, side="left"))
        hi = int(np.searchsorted(h.leaf_values, b, side="right")) - 1
        if label.endswith(")"):  # half-open [a, b)
            hi = int(np.searchsorted(h.leaf_values, b, side="left")) - 1
        if lo <= hi:
            return lo, hi
    if label.startswith("{") and label.endswith("}") and not h.numeric:
        codes = h.encode([v.strip() for v in label[1:-1].split(",")], column=column)
        return int(codes.min()), int(codes.max())
    raise SdcevalError(f"release column {column!r}: label {label!r} is neither a value nor a "
                       "node of its hierarchy nor an interval; was the release made with the "
                       "same hierarchy?")


def read_release(dataset, path) -> Release:
    """Load a release table row-aligned with ``dataset``."""
    frame = load_table(path)
    if len(frame) != dataset.n:
        raise SdcevalError(
            f"release {str(path)!r} has {len(frame)} records but data set {dataset.name!r} has "
            f"{dataset.n}; a release must be row-aligned (one row per original record)")
    return release_from_frame(dataset, frame, name=str(path))


def release_from_frame(dataset, frame: pd.DataFrame, name: str = "external") -> Release:
    schema = dataset.schema
    qis = [q for q in schema.qis if q in frame.columns]
    if not qis:
        return external_release(dataset, frame, name=name)
    missing = [q for q in schema.qis if q not in frame.columns]
    if missing:
        raise SdcevalError(f"release lacks quasi-identifier column(s) {missing}")
    sens = schema.sensitive
    sensitive_codes = None
    if sens is not None:
        if sens not in frame.columns:
            raise SdcevalError(f"release lacks the sensitive column {sens!r}")
        sensitive_codes = dataset.hierarchy(sens).encode(frame[sens], column=sens)
    cells = {}
    for q in qis:
        h = dataset.hierarchy(q)
        labels = frame[q].astype(str).str.strip()
        if h.numeric:
            # numbers written by pandas may read back as "40" or "40.0"
            num = pd.to_numeric(labels, errors="coerce")
            as_leaf = num.notna()
            labels = labels.where(~as_leaf, num.map(lambda v: f"{v:g}" if pd.notna(v) else v))
        uniq, inv = np.unique(labels.to_numpy(str), return_inverse=True)
        known = _label_ranges(h)
        ranges = np.array([_parse_cell(h, u, known, q) for u in uniq], dtype=np.int64)
        cells[q] = (ranges[inv, 0], ranges[inv, 1])
    if "bucket" in frame.columns:
        classes = pd.factorize(frame["bucket"])[0].astype(np.int64)
        kind = "bucketized"
        suppressed = np.zeros(len(frame), bool)
    else:
        key = pd.MultiIndex.from_arrays([frame[q].astype(str) for q in qis])
        classes = pd.factorize(key)[0].astype(np.int64)
        kind = "generalized"
        suppressed = np.ones(len(frame), bool)
        for q in qis:
            h = dataset.hierarchy(q)
            suppressed &= (cells[q][0] == 0) & (cells[q][1] == h.n_leaves - 1)
    return Release(data=frame.reset_index(drop=True), method=name, kind=kind,
                   classes=classes, cells=cells, suppressed=suppressed,
                   sensitive_codes=sensitive_codes)


__all__ = ["read_release", "release_from_frame"]
