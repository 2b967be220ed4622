"""Shared plumbing of the synthetic-data methods (`cart_synthesis`, `gaussian_copula`).

A synthetic release publishes every column the schema uses (`Release.synthetic`,
``publishable_columns(dataset, "synthetic")``), each as values of the original's domain
and dtype.  Both methods work on *ordered integer codes* of the columns and publish a
code as the original value it stands for, read from one original row that holds it
(`column_codes`, `synthetic_release`), so that no method invents a category, turns an
integer column into floats or changes a dtype:

* a numeric-kind column (schema kind ``numeric``): its distinct values in increasing
  order (the dense rank of each record's value);
* a categorical-kind column: the leaf codes of its hierarchy (`Dataset.codes`: a user
  hierarchy's leaf order, which puts related categories side by side; a flat one's
  sorted labels otherwise), renumbered over the categories the data hold.  A kept
  missing value (``missing = "keep"``) is a category of its own (the hierarchy's
  missing-value leaf), published as missing.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from sdceval.core.errors import SdcevalError, suggest
from sdceval.core.params import Param
from sdceval.core.release import Release, publishable_columns

if TYPE_CHECKING:  # imported where used: `sdceval list methods` loads no pandas
    import pandas

__all__ = ["N_RECORDS", "MAX_RECORDS", "synthesized_columns", "column_codes",
           "record_count", "synthetic_release"]

#: the most records a synthetic release may have (memory: one int64 code per cell)
MAX_RECORDS = 10_000_000

N_RECORDS = Param("n_records", int, None, low=1, high=MAX_RECORDS, unit="records",
                  description="number of synthetic records (default: the original's "
                              "count)")


def synthesized_columns(dataset, visit=()) -> list[str]:
    """The columns a synthetic release publishes (`publishable_columns`), in the order
    they are synthesized: the ``visit`` columns first, in the order given, then the
    others in the data set's order.  A ``visit`` name that is not one of them is
    refused, naming it and the columns it may name."""
    cols = publishable_columns(dataset, "synthetic")
    if not cols:
        raise SdcevalError(f"data set {dataset.name!r} has no column to synthesize: give "
                           "columns a role (qi, numeric, sensitive, label or passthrough)")
    for c in visit:
        if c not in cols:
            role = (f" (role {dataset.schema[c].role!r}, never published)"
                    if c in dataset.schema else "")
            raise SdcevalError(f"visit names {c!r}{role}, which is not a column the "
                               f"synthetic release publishes.{suggest(c, cols)} Columns: "
                               f"{', '.join(map(repr, cols))}")
    return list(visit) + [c for c in cols if c not in visit]


def column_codes(dataset, column: str) -> tuple[np.ndarray, np.ndarray]:
    """``(codes, rep)``: per record the code ``0..m-1`` of its value in ``column``
    (module docstring: value order for a numeric column, hierarchy leaf order for a
    categorical one, over the values the data hold), and per code one original row
    that holds it (the first), by which a code is published as its original value."""
    if dataset.schema[column].kind == "numeric":
        raw = dataset.frame[column].to_numpy(np.float64)
    else:
        raw = np.asarray(dataset.codes(column))
    _, first, codes = np.unique(raw, return_index=True, return_inverse=True)
    return codes.ravel().astype(np.int64), first.astype(np.int64)


def record_count(dataset, n_records) -> int:
    """The number of synthetic records: ``n_records`` or the original's count."""
    return dataset.n if n_records is None else int(n_records)


def synthetic_release(dataset, rows: dict, *, method: str, info: dict) -> Release:
    """The synthetic `Release` whose column ``c`` publishes, at synthetic record ``i``,
    the value of original record ``rows[c][i]`` (a donor row, or the row that stands for
    a drawn code): the original's values, dtype and domain."""
    import pandas as pd
    frame = dataset.frame
    data: dict[str, "pandas.Series"] = {
        c: frame[c].take(np.asarray(r, dtype=np.int64)).reset_index(drop=True)
        for c, r in rows.items()}
    return Release.synthetic(dataset, pd.DataFrame(data), method=method, info=info)
