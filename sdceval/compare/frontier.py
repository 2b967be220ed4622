"""Efficient (Pareto) frontier of releases in (risk, loss) space (Li & Li §5, Fig. 2).

A point dominates another if it is no worse in both coordinates and better in one
(both coordinates are "smaller is better": P_loss and U_loss).  The frontier is the
set of non-dominated points; computed by one sort, O(n log n).
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from sdceval.core.errors import SdcevalError


def efficient_frontier(points: pd.DataFrame, x: str = "p_loss", y: str = "u_loss"
                       ) -> pd.DataFrame:
    """Rows of ``points`` not dominated in (``x``, ``y``), sorted by ``x``.

    Both columns are minimized.  Ties (identical points) are all kept.
    """
    for c in (x, y):
        if c not in points.columns:
            raise SdcevalError(f"frontier: column {c!r} missing; have {list(points.columns)}")
    df = points.dropna(subset=[x, y])
    if df.empty:
        return df.copy()
    order = np.lexsort((df[y].to_numpy(), df[x].to_numpy()))
    xs, ys = df[x].to_numpy()[order], df[y].to_numpy()[order]
    keep = np.zeros(len(df), bool)
    best_y = np.inf
    best_x = None
    for i in range(len(xs)):  # one pass over sorted points (not per record)
        if ys[i] < best_y or (ys[i] == best_y and xs[i] == best_x):
            keep[i] = True
            if ys[i] < best_y:
                best_y, best_x = ys[i], xs[i]
    return df.iloc[order[keep]].reset_index(drop=True)
