"""``sdceval tradeoff`` and ``[[tradeoff]]`` jobs: the trade-off points of
`sdceval.compare.tradeoff` written out as CSV, JSON and plots."""
from __future__ import annotations

from pathlib import Path
from typing import Callable

import pandas as pd

from sdceval.compare.frontier import efficient_frontier
from sdceval.compare.ranking import parse_measure_list
from sdceval.compare.tradeoff import (DEFAULT_MEASURES, DEFAULT_METHOD, TradeoffResult,
                                      compute_tradeoff)
from sdceval.core.fileio import write_csv, write_json
from sdceval.core.loaders import ref_of
from sdceval.experiments.executor import make_executor
from sdceval.experiments.plots import plot_tradeoff


def _finish(points: pd.DataFrame, meas_labels: list[str], out: Path, prefix: str, title: str
            ) -> TradeoffResult:
    x = "p_loss"
    utilities = [m for m in meas_labels if m != x]
    y = "u_loss" if "u_loss" in utilities else (utilities[0] if utilities else x)
    frontier = efficient_frontier(points, x=x, y=y) if x in points and y in points else points
    res = TradeoffResult(points, frontier, meas_labels, title)
    res.files.append(write_csv(points, out / f"{prefix}points.csv"))
    res.files.append(write_csv(frontier, out / f"{prefix}frontier.csv"))
    if x in points:
        style = "method" if points["method"].nunique() > 1 else None
        bases: dict[str, list[str]] = {}
        for u in utilities:
            bases.setdefault(u.split("(")[0], []).append(u)
        ylabels = {"u_loss": "utility loss U_loss",
                   "query_error": "average relative error (%)"}
        for base, variants in bases.items():
            name = "tradeoff" if y in variants else f"tradeoff_{_slug(base)}"
            if len(variants) == 1:
                data, yy, by = points, variants[0], "model"
            else:  # e.g. query error at several sel / qd values: one curve per variant
                data = points.melt(id_vars=[x, "model", "method"], value_vars=variants,
                                   var_name="variant", value_name=base)
                yy, by = base, "variant"
            res.files.append(plot_tradeoff(data, out / f"{prefix}{name}.png", x=x, y=yy,
                                           by=by, style=style, title=title,
                                           ylabel=ylabels.get(base, base)))
    return res


def _slug(s: str) -> str:
    return "".join(c if c.isalnum() else "_" for c in s).strip("_")


def run_tradeoff(dataset, *, models=None, method: str = DEFAULT_METHOD, grids=None,
                 measures=None, seed: int = 0, out="out/tradeoff",
                 progress: Callable[[str], None] | None = None, workers: int = 1
                 ) -> TradeoffResult:
    """``sdceval tradeoff``: compute the points, the frontier, the plot, the JSON."""
    ex = make_executor("processes" if workers > 1 else "serial", workers)
    ref = ref_of(dataset)
    points = compute_tradeoff(ref, models=models, method=method, grids=grids,
                              measures=measures, seed=seed, executor=ex, progress=progress)
    out = Path(out)
    labels = list(parse_measure_list(measures or DEFAULT_MEASURES))
    res = _finish(points, labels, out, "", f"{dataset.name}: P_loss vs U_loss ({method})")
    res.files.append(write_json({"data": dataset.name, "method": method, "seed": seed,
                                 **res.to_dict()}, out / "results.json"))
    return res


def run_tradeoff_job(job, spec, executor, say, out: Path) -> TradeoffResult:
    o = job.options
    meas = o.get("measures", DEFAULT_MEASURES)
    points = compute_tradeoff(job.data_ref(), models=o.get("models"),
                              method=o.get("method", DEFAULT_METHOD),
                              grids=o.get("grids", {}), measures=meas,
                              model_params=o.get("model_params", {}), seed=spec.seed,
                              executor=executor, progress=say)
    labels = list(parse_measure_list(meas))
    return _finish(points, labels, Path(out), f"{job.key}_", o.get("title", job.key))
