"""Shared plumbing of the perturbative methods (MDAV, noise, rank swapping).

They all read the ``numeric``-role columns as one float64 matrix and publish exactly
those columns, masked, plus the columns the user asked to pass through
(`Release.perturbative`: identifiers, QIs, the sensitive value and every other column
are dropped and listed in ``Release.dropped``; issue 6 §1).
"""
from __future__ import annotations

import numpy as np

from sdceval.core.release import Release


def numeric_release(dataset, masked: np.ndarray, *, classes: np.ndarray | None = None,
                    info: dict | None = None, method: str = "") -> Release:
    """A perturbative `Release` publishing the columns of ``masked`` (float64,
    row-aligned, same column order as ``dataset.schema.numeric``) under the numeric
    columns' names.  The dataset's own frame is never modified."""
    import pandas as pd  # here, not at the top: `sdceval list methods` loads no pandas
    masked = np.asarray(masked, dtype=np.float64)
    data = pd.DataFrame({col: masked[:, j].copy()
                         for j, col in enumerate(dataset.schema.numeric)})
    return Release.perturbative(dataset, data, method=method, classes=classes,
                                info=dict(info or {}))
