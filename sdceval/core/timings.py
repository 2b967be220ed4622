"""Timings apart from results (issue 21): wall-clock figures differ between identical
runs, so the files that hold results never carry them; a run writes them to
``timings.json`` and the results store keeps them beside each job.

A timing is a value under one of `TIMING_KEYS` (a dict key or a table column).
"""
from __future__ import annotations

from typing import Any

import pandas as pd

#: the names results use for wall-clock seconds
TIMING_KEYS = frozenset({"seconds", "anonymize_s", "total_s", "seconds_mean",
                         "seconds_var"})


def split_timings(obj: Any, path: str = "") -> tuple[Any, dict[str, Any]]:
    """``(obj without timings, {path: timing})`` for nested dicts and lists (a JSON
    payload): every value under a `TIMING_KEYS` key is moved out, named by its path
    (``jobs.pbg0.runs.3.seconds``)."""
    timings: dict[str, Any] = {}
    if isinstance(obj, dict):
        out = {}
        for k, v in obj.items():
            where = f"{path}.{k}" if path else str(k)
            if k in TIMING_KEYS:
                timings[where] = v
                continue
            out[k], got = split_timings(v, where)
            timings.update(got)
        return out, timings
    if isinstance(obj, list):
        out_list = []
        for i, v in enumerate(obj):
            clean, got = split_timings(v, f"{path}.{i}")
            out_list.append(clean)
            timings.update(got)
        return out_list, timings
    return obj, timings


def without_timings(df: pd.DataFrame) -> pd.DataFrame:
    """``df`` without its timing columns."""
    return df.drop(columns=[c for c in df.columns if c in TIMING_KEYS])


__all__ = ["TIMING_KEYS", "split_timings", "without_timings"]
