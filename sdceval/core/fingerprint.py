"""Content fingerprints: what a result depends on, as a short hash (issue 21).

`dataset_fingerprint` hashes what a data set *is*, not where it came from: every value
of its frame (pandas' row hashes, in column order, with the column names and dtypes),
its schema (each column's role and kind, the missing-value policy) and every hierarchy
(its whole table).  The same file read from another path, or the same table given as
a DataFrame, has the same fingerprint; one edited cell, role or hierarchy label changes
it.  `spec_hash` hashes a job's resolved specification (canonical JSON).  The results
store (`sdceval.experiments.store`) keys finished jobs by both.
"""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pandas as pd


def _update_frame(h, frame: pd.DataFrame) -> None:
    h.update(json.dumps([[str(c), str(frame[c].dtype)] for c in frame.columns]).encode())
    if len(frame):
        rows = pd.util.hash_pandas_object(frame, index=False).to_numpy()
        h.update(np.ascontiguousarray(rows).tobytes())


def dataset_fingerprint(dataset) -> str:
    """sha256 (hex) of a `Dataset`'s values, schema and hierarchies (module docstring);
    computed once per object."""
    cached = getattr(dataset, "_fingerprint", None)
    if cached is not None:
        return cached
    h = hashlib.sha256(b"sdceval-dataset-1\0")
    _update_frame(h, dataset.frame)
    schema = dataset.schema
    design = {k: list(v) for k, v in (("household_keys", schema.household_keys),
                                      ("kept", schema.kept)) if v}
    # the design's keys only when set: fingerprints of data sets without them unchanged
    h.update(json.dumps({"missing": schema.missing,
                         "columns": [[c.name, c.role, c.kind] for c in schema.columns],
                         **design}).encode())
    for c in schema.columns:
        if c.hierarchy is not None:
            h.update(f"\0hierarchy {c.name} numeric={c.hierarchy.numeric}\0".encode())
            _update_frame(h, c.hierarchy.to_frame().astype(str))
    digest = h.hexdigest()
    try:
        dataset._fingerprint = digest
    except AttributeError:  # a frozen object: recomputed next time
        pass
    return digest


def file_fingerprint(path) -> str:
    """sha256 (hex) of a file's bytes, read in 1 MiB blocks."""
    h = hashlib.sha256()
    with open(Path(path), "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _plain(obj):
    """JSON-ready form with a stable order: sets sorted, tuples as lists, paths and
    other objects as text."""
    if isinstance(obj, dict):
        return {str(k): _plain(v) for k, v in sorted(obj.items(), key=lambda kv: str(kv[0]))}
    if isinstance(obj, (list, tuple)):
        return [_plain(v) for v in obj]
    if isinstance(obj, (set, frozenset)):
        return sorted(_plain(v) for v in obj)
    if isinstance(obj, (np.integer,)):
        return int(obj)
    if isinstance(obj, (np.floating,)):
        return float(obj)
    if obj is None or isinstance(obj, (bool, int, float, str)):
        return obj
    return str(obj)


def spec_hash(spec) -> str:
    """sha256 (hex) of ``spec`` as canonical JSON (sorted keys, no whitespace)."""
    text = json.dumps(_plain(spec), sort_keys=True, separators=(",", ":"),
                      ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


__all__ = ["dataset_fingerprint", "file_fingerprint", "spec_hash"]
