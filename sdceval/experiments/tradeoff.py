"""``[[tradeoff]]`` jobs and ``sdceval tradeoff``: the trade-off points of
`sdceval.compare.tradeoff` (Li & Li 2009), their efficient frontier, written out as CSV
and plots.

One orchestration (`tradeoff_result`, then `write_tradeoff`) serves both: a job's files
are ``<key>_points.csv``, ``<key>_frontier.csv`` and ``<key>_tradeoff*.png``; the
command (`run_tradeoff`) writes them without the prefix, plus ``results.json``.
"""
from __future__ import annotations

from pathlib import Path
from typing import Callable

from sdceval.compare.frontier import efficient_frontier
from sdceval.compare.ranking import parse_measure_list
from sdceval.compare.tradeoff import (DEFAULT_MEASURES, DEFAULT_METHOD, METHODS,
                                      TradeoffResult, compute_tradeoff, frontier_axes,
                                      validate_tradeoff_options)
from sdceval.core.errors import plain
from sdceval.core.fileio import write_csv, write_json
from sdceval.core.timings import TIMING_KEYS, split_timings, without_timings
from sdceval.core.registry import Param
from sdceval.experiments.executors import make_executor
from sdceval.core.glossary import axis_label, display_name
from sdceval.experiments.report_html import Section, heading, paragraph
from sdceval.experiments.jobs import command_job, register_job_kind
from sdceval.experiments.plots import plot_tradeoff

METHOD = Param("method", str, default=DEFAULT_METHOD, choices=tuple(METHODS),
               description="how releases are made: mondrian (Li & Li's "
                           "\"generalization\"), bucketization, or both")


def tradeoff_result(job, executor, say, seed: int) -> TradeoffResult:
    """The job's points (one task per model, threshold and method) and their efficient
    frontier in (P_loss, the first utility measure; U_loss when asked)."""
    o = job.options
    meas = o.get("measures", DEFAULT_MEASURES)
    points = compute_tradeoff(job.data_ref(), models=o.get("models"),
                              method=o.get("method", METHOD.default),
                              grids=o.get("grids", {}), measures=meas,
                              model_params=o.get("model_params", {}), seed=seed,
                              executor=executor, progress=say)
    labels = list(parse_measure_list(meas))
    x, _, y = frontier_axes(labels)
    frontier = efficient_frontier(points, x=x, y=y) if x in points and y in points else points
    return TradeoffResult(points, frontier, labels, job.title,
                          data=job.dataset.name if job.dataset is not None
                          else Path(str(o.get("data", ""))).name)


def write_tradeoff(res: TradeoffResult, out, prefix: str = "") -> TradeoffResult:
    """``<prefix>points.csv``, ``<prefix>frontier.csv`` and one plot per utility
    measure (``<prefix>tradeoff.png`` for the frontier's); appended to ``res.files``."""
    out = Path(out)
    points = res.points
    x, utilities, y = frontier_axes(res.measures)
    # wall-clock columns are timings, not results (sdceval.core.timings)
    res.files.append(write_csv(without_timings(points), out / f"{prefix}points.csv"))
    res.files.append(write_csv(without_timings(res.frontier), out / f"{prefix}frontier.csv"))
    if x not in points:
        return res
    style = "method" if points["method"].nunique() > 1 else None
    bases: dict[str, list[str]] = {}
    for u in utilities:
        bases.setdefault(u.split("(")[0], []).append(u)
    for base, variants in bases.items():
        name = "tradeoff" if y in variants else f"tradeoff_{_slug(base)}"
        if len(variants) == 1:
            data, yy, by = points, variants[0], "model"
        else:  # e.g. query error at several sel / qd values: one curve per variant
            data = points.melt(id_vars=[x, "model", "method"], value_vars=variants,
                               var_name="variant", value_name=base)
            yy, by = base, "variant"
        per = "privacy model" if by == "model" else "setting of the measure"
        title = (f"{res.data + ': ' if res.data else ''}{display_name(base)} against "
                 f"{display_name(x)}, one curve per {per}")
        res.files.append(plot_tradeoff(data, out / f"{prefix}{name}.png", x=x, y=yy,
                                       by=by, style=style, title=title,
                                       xlabel=axis_label(x), ylabel=axis_label(base)))
    return res


def tradeoff_section(res) -> Section:
    """The HTML section of a trade-off: the answer, the frontier, the figures, every
    point."""
    x, utilities, y = frontier_axes(res.measures)
    s = Section(res.title or "Privacy / utility trade-off", answer=res.answer())
    s.add(paragraph(f"Each privacy model's threshold is swept over its grid; every release "
                    f"is measured with {', '.join(axis_label(m) for m in res.measures)}. "
                    "The efficient frontier keeps the releases that no other beats on "
                    f"both {display_name(x)} and {display_name(y)}."))
    s.add(heading("Efficient frontier"))
    s.add_table(res.display_table(res.frontier.sort_values(x) if x in res.frontier
                               else res.frontier), css="ranking", text_columns=("release",))
    s.add_figures(res.files)
    s.add(heading("Every release"))
    s.add_table(res.display_table(res.points), text_columns=("release",))
    s.terms += list(res.measures) + list(dict.fromkeys(res.points["model"]))
    return s


def _slug(s: str) -> str:
    return "".join(c if c.isalnum() else "_" for c in s).strip("_")


def write_tradeoff_job(res: TradeoffResult, out, prefix: str) -> list[Path]:
    res.files = []
    return list(write_tradeoff(res, out, prefix).files)


def tradeoff_rows(res: TradeoffResult) -> list[dict]:
    """One measurement per release and measure (and its class count), with the model,
    its parameter, its threshold and the method: the points' ``value`` column (the
    threshold) is kept as ``threshold``, since ``value`` is the measurement's (k = 10
    and k = 5000 rows must not look alike)."""
    rows = []
    keep = [c for c in res.points.columns if c not in res.measures and c != "classes"
            and c not in TIMING_KEYS]
    for _, p in res.points.iterrows():
        base = {"data": res.data,
                **{"threshold" if c == "value" else c: plain(p[c]) for c in keep}}
        rows += [{**base, "measure": m, "value": plain(p[m])}
                 for m in [*res.measures, "classes"] if m in p]
    return rows


@register_job_kind(
    "tradeoff", section="tradeoffs", report=tradeoff_section,
    write=write_tradeoff_job, rows=tradeoff_rows,
    description="P_loss / U_loss trade-off of privacy models over their grids "
                "(Li & Li 2009; sdceval tradeoff)",
    keys=("models", "method", "grids", "measures", "model_params"),
    example={"models": ["k"], "grids": {"k": [2, 10]}},
    validate=validate_tradeoff_options,
    params=(METHOD,))
def run_tradeoff_job(job, spec, executor, say) -> TradeoffResult:
    return tradeoff_result(job, executor, say, job.seed(spec))


def run_tradeoff(dataset, *, models=None, method: str = DEFAULT_METHOD, grids=None,
                 measures=None, seed: int = 0, out="out/tradeoff",
                 progress: Callable[[str], None] | None = None, workers: int = 1
                 ) -> TradeoffResult:
    """``sdceval tradeoff``: the ``[[tradeoff]]`` orchestration on ``dataset`` (local
    worker processes when ``workers`` > 1), its files without a prefix, and
    ``results.json``."""
    job = command_job("tradeoff", dataset, "tradeoff", models=models, method=method,
                      grids=grids, measures=measures,
                      title=f"{dataset.name}: privacy / utility trade-off ({method})")
    with make_executor("processes" if workers > 1 else "serial", workers) as ex:
        res = write_tradeoff(tradeoff_result(job, ex, progress or (lambda m: None), seed),
                             out)
    payload, timings = split_timings({"data": dataset.name, "method": method, "seed": seed,
                                      **res.to_dict()})
    res.files.append(write_json(payload, Path(out) / "results.json"))
    res.files.append(write_json(timings, Path(out) / "timings.json"))
    return res
