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


def frontier_composition(frontier: pd.DataFrame, by: str = "model") -> dict[str, int]:
    """How many frontier points each group (privacy model by default) contributes,
    largest first: ``{"t": 8, "delta": 5, "k": 1}``.  A statement such as "the frontier
    lies along the t-closeness curve" should be read against this count."""
    if frontier.empty or by not in frontier.columns:
        return {}
    counts = frontier[by].astype(str).value_counts(sort=False)
    return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


def describe_composition(frontier: pd.DataFrame, total: int | None = None,
                         by: str = "model") -> str:
    """One line: ``14 of 40 points: 8 t, 5 delta, 1 k (k = 5000)``; single points are
    named with their parameter value when the frame has one."""
    comp = frontier_composition(frontier, by)
    parts = []
    for group, count in comp.items():
        text = f"{count} {group}"
        if count == 1 and "value" in frontier.columns:
            v = frontier.loc[frontier[by].astype(str) == group, "value"].iloc[0]
            param = (frontier.loc[frontier[by].astype(str) == group, "parameter"].iloc[0]
                     if "parameter" in frontier.columns else group)
            if isinstance(v, float) and float(v).is_integer():
                v = int(v)
            text += f" ({param} = {v:g})" if isinstance(v, (int, float)) else f" ({v})"
        parts.append(text)
    head = f"{len(frontier)}" + (f" of {total}" if total is not None else "") + " points"
    return head + (": " + ", ".join(parts) if parts else "")
