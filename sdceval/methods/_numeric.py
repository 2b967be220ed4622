"""Shared plumbing of the perturbative methods (MDAV, noise, rank swapping).

They all read the ``numeric``-role columns as one float64 matrix and publish the
original table with exactly those columns replaced by masked values.
"""
from __future__ import annotations

import numpy as np

from sdceval.core.release import Release


def numeric_release(dataset, masked: np.ndarray, *, classes: np.ndarray | None = None,
                    info: dict | None = None) -> Release:
    """A perturbative `Release`: a copy of ``dataset.frame`` whose numeric columns are
    replaced by the columns of ``masked`` (float64, row-aligned, same column order as
    ``dataset.schema.numeric``).  The dataset's own frame is never modified."""
    data = dataset.frame.copy()
    masked = np.asarray(masked, dtype=np.float64)
    for j, col in enumerate(dataset.schema.numeric):
        data[col] = masked[:, j].copy()
    return Release(data=data, method="", kind="perturbative", classes=classes,
                   info=dict(info or {}))
