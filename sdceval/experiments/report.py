"""Markdown report of an experiment: tables, figures and, where the file gives the
published values (``[paper]``), a side-by-side comparison with pairwise-order agreement.
Reports hold aggregates only, never records.

``target_risk`` is the paper's printed matched risk; sdceval's default linkage scale
(SPEC §4) is not the paper's, so the report sets it beside the target's value on the
fitted per-attribute scale (`sdceval.measures.linkage`).  A ranking shown with a fitted
default (`sdceval.compare.ranking.FITTED_CHOICES`) is footnoted as such, and pairs of
values that are numerically 0 (< `NUMERICAL_ZERO`) are flagged in the agreement lines.

``[paper.<data>]`` layout::

    [paper.census]
    target_risk = 0.45
    [paper.census.methods.mdav]
    parameter = 5
    propensity = 4.28e-4
    emd = 0.16
"""
from __future__ import annotations

from itertools import combinations
from pathlib import Path

import numpy as np
import pandas as pd

from sdceval.compare.frontier import describe_composition
from sdceval.compare.ranking import fitted_notes, parse_measure_list
from sdceval.core.fileio import write_text
from sdceval.experiments.evaluation_job import DEFAULT_MEASURES

#: Below this a loss value is numerically zero: a propensity fit that cannot tell the
#: tables apart leaves p̂ − ½ at rounding level (1e-16), so U is at most ~1e-30 (values
#: of 1e-35..1e-30 are measured); the order of such values is rounding noise and can
#: differ between machines, so the agreement lines flag the pairs that rest on it.
NUMERICAL_ZERO = 1e-20


def pairwise_agreement(paper: dict[str, float], ours: dict[str, float]) -> tuple[int, int]:
    """Number of method pairs ordered the same way by ``paper`` and ``ours`` (out of all
    pairs present in both)."""
    common = [m for m in paper if m in ours and paper[m] is not None
              and ours[m] is not None and np.isfinite(ours[m])]
    agree = total = 0
    for a, b in combinations(common, 2):
        total += 1
        agree += int(np.sign(paper[a] - paper[b]) == np.sign(ours[a] - ours[b]))
    return agree, total


def _md(df: pd.DataFrame) -> str:
    def fmt(v):
        if isinstance(v, (float, np.floating)):
            return "" if np.isnan(v) else f"{v:.4g}"
        return "" if v is None or (isinstance(v, float) and np.isnan(v)) else str(v)
    cols = list(df.columns)
    lines = ["| " + " | ".join(map(str, cols)) + " |", "|" + "---|" * len(cols)]
    for _, row in df.iterrows():
        lines.append("| " + " | ".join(fmt(row[c]) for c in cols) + " |")
    return "\n".join(lines)


def paper_side_by_side(data: str, ours: dict[str, dict[str, float]], params: dict[str, float],
                       paper: dict, label: str = "ours") -> tuple[pd.DataFrame, list[str]]:
    """Table paper vs ours for one data set plus agreement lines per utility."""
    pm = paper.get(data, {}).get("methods", {})
    utils = sorted({k for v in pm.values() for k in v if k != "parameter"})
    rows, notes = [], []
    for m in pm:
        row = {"method": m, "paper parameter": pm[m].get("parameter"),
               f"{label} parameter": params.get(m)}
        for u in utils:
            row[f"paper {u}"] = pm[m].get(u)
            match = [k for k in ours.get(m, {}) if k == u or k.startswith(f"{u}(")]
            for k in match:
                row[f"{label} {k}"] = ours[m][k]
        rows.append(row)
    df = pd.DataFrame(rows)
    for u in utils:
        paper_vals = {m: pm[m].get(u) for m in pm}
        variants = sorted({k for m in ours for k in ours[m] if k == u or k.startswith(f"{u}(")})
        for k in variants:
            a, t = pairwise_agreement(paper_vals, {m: ours[m].get(k) for m in ours})
            order_p = " < ".join(sorted((m for m in paper_vals if paper_vals[m] is not None),
                                        key=paper_vals.get))
            order_o = " < ".join(sorted((m for m in ours if k in ours[m]),
                                        key=lambda m: ours[m][k]))
            zeros = [m for m in ours if ours[m].get(k) is not None
                     and abs(ours[m][k]) < NUMERICAL_ZERO]
            caveat = ""
            if len(zeros) >= 2:
                pairs = len(zeros) * (len(zeros) - 1) // 2
                caveat = (f"; {len(zeros)} of our values are numerically 0 (< "
                          f"{NUMERICAL_ZERO:g}: {', '.join(zeros)}), so {pairs} of these "
                          f"pairs {'is' if pairs == 1 else 'are'} ordered by rounding "
                          "noise, not by the data")
            notes.append(f"- {data} {k}: {a}/{t} pairwise orderings agree with the paper "
                         f"(paper: {order_p}; {label}: {order_o}){caveat}")
    return df, notes


def seed_agreement_lines(df: pd.DataFrame, paper: dict) -> list[str]:
    """For an evaluation run over several seeds: per measure, the paper-order agreement
    of each seed separately (the pivot table averages the seeds)."""
    data = df["data"].iloc[0]
    pm = paper.get(data, {}).get("methods", {})
    seeds = sorted(df["seed"].unique())
    if len(seeds) < 2 or not pm:
        return []
    lines = []
    for label in df["measure"].unique():
        base = label.split("(")[0]
        if not any(base in v for v in pm.values()):
            continue
        paper_vals = {m: pm[m].get(base) for m in pm}
        counts = []
        for seed in seeds:
            sub = df[(df["measure"] == label) & (df["seed"] == seed)]
            ours = dict(zip(sub["method"], sub["value"]))
            a, t = pairwise_agreement(paper_vals, ours)
            counts.append(f"{a}")
        lines.append(f"- {data} {label}: pairwise orderings agreeing with the paper, "
                     f"seeds {seeds[0]}..{seeds[-1]}: {', '.join(counts)} (of {t})")
    return lines


def write_report(result, out: Path) -> list[Path]:
    from sdceval.experiments.plots import plot_risk_curves
    spec = result.spec
    files = []
    lines = [f"# {spec.name}", "", spec.description, "",
             f"Experiment file `{spec.path}`, seed {spec.seed}, repeats {spec.repeats}.", ""]
    if result.comparisons:
        png = plot_risk_curves(list(result.comparisons.values()), out / "risk_curves.png",
                               title=spec.name)
        files.append(png)
        lines += ["## Risk-equalized comparisons", "", f"![risk curves]({png.name})", ""]
        for key, comp in result.comparisons.items():
            lines += [f"### {key}: target {comp.risk_measure} = {comp.target:.4g}"
                      + (f" (risk of `{comp.reference}`)" if comp.reference else ""), "",
                      "Every risk reading of each matched release is shown next to the "
                      "matched `risk`.", "", _md(comp.table()), ""]
            lines += [f"* {note}" for note in comp.footnotes()] + [""]
            if spec.paper.get(comp.dataset):
                params = {m.method: m.value for m in comp.matches}
                df, notes = paper_side_by_side(comp.dataset, comp.utilities, params,
                                               spec.paper, label="ours (bisection)")
                target = spec.paper[comp.dataset].get("target_risk")
                ref = comp.reference.split(":")[0] if comp.reference else None
                other = {k: v for k, v in comp.risk_readings.get(ref, {}).items()
                         if k.startswith(f"{comp.risk_measure}(")}
                same = "".join(f"; our target {comp.target:.4g} is {k} = {v:.4g}"
                               for k, v in other.items())
                lines += [f"Paper vs ours (paper's printed matched risk: {target}{same}):",
                          "", _md(df), ""]
                lines += notes + [""]
    if result.evaluations:
        lines += ["## Evaluations at fixed parameters", ""]
        for key, df in result.evaluations.items():
            if df.empty:
                continue
            wide, t, notes = evaluation_beside_paper(df, spec.paper)
            lines += [f"### {key}", "", _md(wide), ""]
            if t is not None:
                lines += ["Paper vs ours at the paper's parameters"
                          + (" (values averaged over the seeds)"
                             if df["seed"].nunique() > 1 else "") + ":", "", _md(t), ""]
                lines += notes + seed_agreement_lines(df, spec.paper) + [""]
                job = next((j for j in spec.jobs if j.key == key), None)
                used = parse_measure_list(job.options.get("measures", DEFAULT_MEASURES)) \
                    if job else {}
                lines += [f"* {n}" for n in fitted_notes(used.values())] + [""]
    for key, tr in result.tradeoffs.items():
        lines += tradeoff_lines(tr)
    for key, lat in result.lattices.items():
        lines += lattice_lines(lat)
    for key, vec in result.vectors.items():
        lines += vectors_lines(vec)
    for key, pbg in result.pbgs.items():
        lines += pbg_lines(pbg)
    files.append(write_text("\n".join(lines) + "\n", out / "report.md"))
    return files


def evaluation_beside_paper(df: pd.DataFrame, paper: dict):
    """An evaluation job's rows as one row per release (means over the seeds) and, when
    ``paper`` has values for its data set, the paper beside them with the agreement
    lines (`paper_side_by_side`); else ``(wide, None, [])``."""
    wide = df.pivot_table(index=["data", "release"], columns="measure", values="value",
                          aggfunc="mean", sort=False).reset_index()
    data = df["data"].iloc[0]
    if not paper.get(data):
        return wide, None, []
    ours = {r["release"].split(":")[0]: {k: r[k] for k in wide.columns
                                         if k not in ("data", "release")}
            for _, r in wide.iterrows()}
    params = {r["release"].split(":")[0]: r["release"].split("=")[-1]
              for _, r in wide.iterrows()}
    t, notes = paper_side_by_side(data, ours, params, paper,
                                  label="ours (paper's parameters)")
    return wide, t, notes


def paper_sections(result) -> list:
    """HTML sections of the paper comparisons a run's file asks for (``[paper]``): the
    same tables and agreement lines as ``report.md``."""
    from sdceval.experiments.report_html import Section, paragraph
    spec, out = result.spec, []
    for key, comp in result.comparisons.items():
        if not spec.paper.get(comp.dataset):
            continue
        params = {m.method: m.value for m in comp.matches}
        df, notes = paper_side_by_side(comp.dataset, comp.utilities, params, spec.paper,
                                       label="ours (bisection)")
        s = Section(f"{comp.dataset}: the paper beside ours (matched by bisection)")
        s.add(paragraph(f"The paper's printed matched risk: "
                        f"{spec.paper[comp.dataset].get('target_risk')}; ours: "
                        f"{comp.risk_measure} = {comp.target:.4g}."))
        s.add_table(df, text_columns=("method",), labels={c: c for c in df.columns})
        s.notes = [n.lstrip("- ") for n in notes]
        out.append(s)
    for key, df in result.evaluations.items():
        if df.empty:
            continue
        _, t, notes = evaluation_beside_paper(df, spec.paper)
        if t is None:
            continue
        s = Section(f"{df['data'].iloc[0]}: the paper beside ours at the paper's "
                    f"parameters ({key})")
        s.add_table(t, text_columns=("method",), labels={c: c for c in t.columns})
        job = next((j for j in spec.jobs if j.key == key), None)
        used = parse_measure_list(job.options.get("measures", DEFAULT_MEASURES)) \
            if job else {}
        s.notes = [n.lstrip("- ") for n in notes + seed_agreement_lines(df, spec.paper)]
        s.notes += fitted_notes(used.values())
        out.append(s)
    return out


def tradeoff_lines(res) -> list[str]:
    """Markdown section of one trade-off job."""
    lines = [f"## Trade-off: {res.title}", ""]
    lines += [f"![{f.stem}]({f.name})" for f in res.files if f.suffix == ".png"]
    cols = [c for c in ["model", "value", "method", *res.measures, "classes"]
            if c in res.points.columns]
    lines += ["", _md(res.points[cols]), "",
              f"Efficient frontier (P_loss, {res.measures[1] if len(res.measures) > 1 else ''}"
              f"): {describe_composition(res.frontier, len(res.points))}", "",
              _md(res.frontier[cols]), ""]
    return lines


def lattice_lines(res) -> list[str]:
    """Markdown section of one ``[[lattice]]`` job: the problem, the optimal node and
    its objectives, where every node was written."""
    lines = [f"## Generalization lattice: {res.title}", "",
             f"`{res.data}`, quasi-identifiers {', '.join(res.qis)} "
             f"({res.lattice_size:,} nodes); {res.problem}.", ""]
    if res.optimum is not None:
        lines += [res.optimum_line() + ".", "",
                  _md(pd.DataFrame([res.at_optimum])), ""]
    if res.nodes is not None:
        lines += [res.nodes_line() + ".", ""]
    return lines


def vectors_lines(res) -> list[str]:
    """Markdown section of one ``[[vectors]]`` job: the releases, the unary indices,
    every pair's indices and dominance verdicts, the figures."""
    comp = res.comparison
    lines = [f"## Property vectors: {res.title}", ""]
    lines += [f"* {d}" for d in res.described]
    lines += ["", f"Suppressed records: {comp.settings['suppressed']}.", "",
              _md(comp.unary), "",
              "Pairs (12: first vs second, 21: second vs first; shares of the records "
              "compared):", "", _md(comp.pairs), "",
              "Over all properties:", "", _md(comp.overall), ""]
    lines += [f"![{f.stem}]({f.name})" for f in res.files if f.suffix == ".png"]
    return lines + [""]


def pbg_lines(res) -> list[str]:
    """Markdown section of one ``[[pbg]]`` job: ours beside the paper, per-algorithm
    summary, the exact search, the figure."""
    from sdceval.experiments.pbg_job import paper_rows
    s = res.study
    eps = ", ".join(f"{e:g}" for e in s.eps)
    lines = [f"## PBG-EA: {res.title}", "",
             f"{', '.join(s.objectives)} (goals {', '.join(s.goals)}), ε = ({eps}), "
             f"{len(s.runs)} runs on {s.lattice_size:,} nodes; {s.problem}.", "",
             _md(paper_rows(s, res.paper)), "", "Per algorithm (mean and variance over the "
             "runs; nsga2: pymoo's NSGA-II with the same node budget):", "",
             _md(s.summary()), ""]
    if s.exact:
        e = s.exact
        lines += [f"Exact search (monotonicity bounds): {e['minimal_pbgs']} minimal PBGs "
                  f"from {e['nodes_evaluated']:,} nodes ({100 * e['share_evaluated']:.1f} %) "
                  f"in {e['seconds']:.1f} s.", ""]
    lines += [f"* {n}" for n in s.notes]
    lines += [f"![{f.stem}]({f.name})" for f in res.files if f.suffix == ".png"]
    return lines + [""]
