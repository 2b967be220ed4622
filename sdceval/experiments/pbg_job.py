"""``[[pbg]]`` jobs and ``sdceval pbg``: PBG-EA runs scored against the minimal PBGs
(issue 9; Dewri et al. 2010 §7), one orchestration (`pbg_result`).

A job is one objective set and discretization vector on one lattice::

    [[pbg]]
    title = "k, GLM (Table 1(b) row 1)"
    data = "adult-train"
    qi = ["age", "workclass", "education", "marital-status", "race", "sex",
          "native-country", "income"]
    objectives = ["k", "glm"]          # the paper's names work too: k, l, S_k, S_l, GLM, CM
    eps = [1, 1]                       # discretization vector (default all ones)
    runs = 20                          # seeds seed .. seed + 19 (the experiment's seed)
    rule = "dewri"                     # suppression rule and limit (D10 §6: 1 %)
    max_suppression = 0.01
    baseline = false                   # also NSGA-II (pymoo), same node budget per seed
    exact = false                      # also the exact search for M (its node count)
    [pbg.paper]                        # the paper's values, printed beside ours
    ce = 3.7e-4
    ce_var = 6.5e-9
    rr = 0.94
    rr_var = 8e-4
    nodes = 916

The runs are split over the executor's workers (the exhaustive table is computed once
first, then read from the disk cache by every worker).  Files (``<key>`` the job's key):
``<key>_generalizations.csv`` (the generalizations found that none beats, best first:
`generalizations`), ``<key>_runs.csv`` (one row per run and algorithm),
``<key>_summary.csv`` (mean and variance), ``<key>_front.csv`` (the minimal PBGs M),
``<key>_archive.csv`` (every run's archive, with its seed) and ``<key>_front.png`` (M
and the first run's archive, every pair of objectives: the paper's Figs. 1–3).
``sdceval pbg`` writes the same files without the prefix, and ``metrics.json``.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from sdceval.core.errors import SdcevalError, plain
from sdceval.core.fileio import write_csv
from sdceval.core.loaders import open_ref
from sdceval.core.glossary import axis_label, display_name
from sdceval.core.registry import Param
from sdceval.core.suppression import MAX_SUPPRESSION
from sdceval.core.text_table import console_table, fill
from sdceval.core.timings import TIMING_KEYS, without_timings
from sdceval.experiments.report_html import Section, heading, paragraph
from sdceval.experiments.jobs import register_job_kind
from sdceval.experiments.lattice_job import RULE

PAPER_KEYS = ("ce", "ce_var", "rr", "rr_var", "nodes")
RUNS = Param("runs", int, default=20, low=1,
             description="seeded runs: seeds seed .. seed + runs - 1")
BASELINE = Param("baseline", bool, default=False,
                 description="also NSGA-II (pymoo) with the same node budget per run")
EXACT = Param("exact", bool, default=False,
              description="also the exact search for the minimal PBGs (its node count)")


def validate_pbg_options(opts: dict) -> dict:
    """Check a ``[[pbg]]`` job's options before anything runs; returns them with the
    defaults."""
    from sdceval.lattice.objectives import get_objective
    from sdceval.lattice.suppression import suppression_options
    from sdceval.pbg.study import resolve_objectives
    objectives = opts.get("objectives")
    if not isinstance(objectives, (list, str)):
        raise SdcevalError("'objectives' is required: a list such as [\"k\", \"glm\"]")
    names = resolve_objectives(objectives)
    if len(names) < 2:
        raise SdcevalError("'objectives' needs at least two objectives; with one, the "
                           "optimal node is the job of a [[lattice]] job (metric = ...)")
    for n in names:
        if get_objective(n).goal is None:
            raise SdcevalError(f"objective {n!r} is a count, not an objective to optimize")
    eps = opts.get("eps", 1.0)
    eps_list = eps if isinstance(eps, list) else [eps] * len(names)
    if len(eps_list) != len(names) or not all(
            isinstance(e, (int, float)) and not isinstance(e, bool) and e > 0
            for e in eps_list):
        raise SdcevalError(f"'eps' must be one positive number per objective "
                           f"({len(names)}: {', '.join(names)}), got {eps!r}")
    runs = opts.get("runs", RUNS.default)
    if isinstance(runs, bool) or not isinstance(runs, int) or runs < 1:
        raise SdcevalError(f"'runs' must be a positive integer, got {runs!r}")
    rule, limit = suppression_options(opts)
    flags = {p.name: opts.get(p.name, p.default) for p in (BASELINE, EXACT)}
    for key, v in flags.items():
        if not isinstance(v, bool):  # not Param.parse: it would read "yes" as true
            raise SdcevalError(f"'{key}' must be true or false, got {v!r}")
    paper = opts.get("paper", {})
    bad = [k for k in paper if k not in PAPER_KEYS]
    if bad:
        raise SdcevalError(f"[pbg.paper] unknown key {bad[0]!r} ({', '.join(PAPER_KEYS)})")
    return {"objectives": names, "eps": [float(e) for e in eps_list], "runs": runs,
            "rule": rule, "max_suppression": limit, **flags}


def _problem(data_ref, rule, max_suppression):
    from sdceval.lattice.search import LatticeProblem
    return LatticeProblem(open_ref(data_ref), rule=rule, max_suppression=max_suppression)


def task_pbg_table(data_ref, objectives, rule, max_suppression) -> int:
    """Fill the disk cache with the exhaustive table the runs read (a pure task)."""
    from sdceval.lattice.search import MAX_EXHAUSTIVE_NODES, evaluate_all
    from sdceval.pbg.study import table_objectives
    problem = _problem(data_ref, rule, max_suppression)
    if problem.lattice.size > MAX_EXHAUSTIVE_NODES:
        return 0
    return len(evaluate_all(problem, table_objectives(problem, objectives), progress=False))


def task_pbg(data_ref, objectives, eps, rule, max_suppression, seed, runs, baseline,
             exact, progress=None, bar=False):
    """PBG-EA runs ``seed .. seed + runs − 1`` (a pure task for the executors; a
    ``progress`` callable and a ``bar`` only for a task run in this process)."""
    from sdceval.pbg.study import pbg_study
    return pbg_study(_problem(data_ref, rule, max_suppression), objectives, eps,
                     runs=runs, seed=seed, baseline=baseline, exact=exact,
                     progress=progress, bar=bar)


def merge_studies(parts: list):
    """One study from studies of consecutive seed ranges (the first carries the exact
    search)."""
    first = parts[0]
    for p in parts[1:]:
        first.runs += p.runs
        first.unit_runs += p.unit_runs
        first.baseline += p.baseline
        first.metrics = pd.concat([first.metrics, p.metrics], ignore_index=True)
        first.seconds = max(first.seconds, p.seconds)
    return first


def paper_rows(study, paper: dict) -> pd.DataFrame:
    """Ours (mean / variance over the runs) beside the paper's printed values."""
    s = study.summary().set_index("algorithm").loc["pbg_ea"]
    ours = {"ce": s.get("ce_mean"), "ce_var": s.get("ce_var"),
            "ce per member (an interpretation)": s.get("ce_mean_mean"),
            "ce_mean_var": s.get("ce_mean_var"),
            "rr": s.get("rr_mean"), "rr_var": s.get("rr_var"),
            "nodes": s.get("nodes_evaluated_mean"),
            "nodes %": 100 * s.get("nodes_evaluated_mean") / study.lattice_size,
            "minimal PBGs |M|": None if study.front is None else len(study.front),
            "archive |A|": s.get("archive_mean")}
    if "rr_unit_archive_mean" in s:
        ours["rr (reading ii)"] = s.get("rr_unit_archive_mean")
    rows = [{"metric": k, "ours": plain(v), "paper": plain(paper.get(k))}
            for k, v in ours.items()]
    return pd.DataFrame(rows)


@dataclass
class PBGJobResult:
    """One ``[[pbg]]`` job's study and the paper's values it is compared with."""

    key: str
    title: str
    data: str
    study: Any
    paper: dict = field(default_factory=dict)
    files: list[Path] = field(default_factory=list)

    @property
    def headline(self) -> str:
        return self.title

    def to_dict(self) -> dict:
        return {"title": self.title, "data": self.data, "paper": self.paper,
                **self.study.to_dict(),
                "paper_vs_ours": [{k: plain(v) for k, v in r.items()} for r in
                                  paper_rows(self.study, self.paper).to_dict("records")]}

    def __str__(self) -> str:
        s = self.study
        eps = ",".join(f"{e:g}" for e in s.eps)
        head = (f"{', '.join(s.objectives)} (ε = {eps}) on {s.lattice_size:,} nodes; "
                f"{len(s.runs)} runs"
                + ("" if s.front is None else f"; |M| = {len(s.front)}"))
        where = f"{self.key}_generalizations.csv"
        lines = [fill(pbg_answer(s)), shown_generalizations(s, where), head,
                 paper_rows(s, self.paper).to_string(
                     index=False, float_format=lambda v: f"{v:.4g}")]
        if s.exact:
            e = s.exact
            lines.append(f"exact search: {e['minimal_pbgs']} minimal PBGs from "
                         f"{e['nodes_evaluated']:,} nodes ({100 * e['share_evaluated']:.1f} %)"
                         f" in {e['seconds']:.1f} s")
        lines += [f"note: {n}" for n in s.notes]
        return "\n".join(lines)


def write_pbg(study, out: Path, prefix: str = "") -> list[Path]:
    """The study's tables and its figure (module docstring)."""
    from sdceval.experiments.plots import plot_pbg_front
    out = Path(out)
    # wall-clock seconds are timings, not results (sdceval.core.timings)
    files = [write_csv(generalizations(study), out / f"{prefix}generalizations.csv"),
             write_csv(without_timings(study.metrics), out / f"{prefix}runs.csv"),
             write_csv(without_timings(study.summary()), out / f"{prefix}summary.csv")]
    # every run's archive, one row per member, with the run's seed
    archives = [r.to_frame().assign(seed=r.seed) for r in study.runs]
    files.append(write_csv(pd.concat(archives, ignore_index=True) if archives
                           else pd.DataFrame(), out / f"{prefix}archive.csv"))
    archive = study.runs[0].to_frame() if study.runs else pd.DataFrame()
    if study.front is not None:
        files.append(write_csv(study.front, out / f"{prefix}front.csv"))
    files.append(plot_pbg_front(study.front, archive, study.objectives, study.goals,
                                out / f"{prefix}front.png",
                                title=f"{', '.join(map(display_name, study.objectives))}: "
                                      "minimal PBGs and the PBG-EA archive of seed "
                                      f"{study.runs[0].seed}"))
    return files


def pbg_result(job, executor, say, seed: int, progress=None, bar=False) -> PBGJobResult:
    """The runs of one job, split over the executor's workers, the exhaustive table
    cached first for them; no file written.  ``progress`` and ``bar`` reach
    `pbg_study`: for the serial executor only (a command's messages per run)."""
    o = validate_pbg_options(job.options)
    ref = job.data_ref()
    common = dict(data_ref=ref, rule=o["rule"], max_suppression=o["max_suppression"])
    say(f"{job.tag}PBG-EA: {', '.join(o['objectives'])}, ε = {o['eps']}, "
        f"{o['runs']} runs")
    parts = max(1, min(getattr(executor, "workers", 1), o["runs"]))
    if parts > 1:  # once, before the workers that would each compute it read it
        executor.map(task_pbg_table, [dict(objectives=o["objectives"], **common)])
    bounds = np.linspace(0, o["runs"], parts + 1).astype(int)
    tasks = [dict(objectives=o["objectives"], eps=o["eps"], seed=seed + int(lo),
                  runs=int(hi - lo), baseline=o["baseline"], exact=o["exact"] and i == 0,
                  progress=progress, bar=bar, **common)
             for i, (lo, hi) in enumerate(zip(bounds[:-1], bounds[1:])) if hi > lo]
    study = merge_studies(executor.map(task_pbg, tasks))
    return PBGJobResult(job.key, job.title, open_ref(ref).name, study,
                        dict(job.options.get("paper", {})))


def generalizations(study) -> pd.DataFrame:
    """The generalizations PBG-EA found that none of them beats on every objective (the
    minimal PBGs of the union of the runs' archives, D10 Def. 4: `minimal_pbgs`), best
    first, one row each: its level per quasi-identifier (``level_<qi>``, 0 = the
    original values), its objective values, ``runs``: how many runs kept it,
    ``minimal``: whether it is one of the minimal PBGs of the whole lattice (when they
    are known), and ``distance``: its distance to the ideal point, the best value of
    every objective among the rows.

    Best first: the smallest ``distance``, Euclidean over the objectives, each measured
    by its rank among the rows scaled to 0 (the best) .. 1 (the worst): ranks, not
    values, so that no objective weighs more for its units or its range (k spans four
    orders of magnitude where a loss spans one: scaled by value, the top of the lattice
    would come first); ties by the objectives in order, each best first."""
    from sdceval.pbg.quality import minimal_pbgs
    qis, names = list(study.qis), list(study.objectives)
    levels = [f"level_{q}" for q in qis]
    columns = [*levels, *names, "runs", "minimal", "distance"]
    found = [r.to_frame().assign(run=i) for i, r in enumerate(study.runs) if len(r.values)]
    if not found:
        return pd.DataFrame(columns=columns)
    every = pd.concat(found, ignore_index=True).rename(columns=dict(zip(qis, levels)))
    kept = every.groupby(levels, sort=False).agg(
        {**{n: "first" for n in names}, "run": "nunique"}).reset_index()
    out = minimal_pbgs(kept, names, study.goals).rename(columns={"run": "runs"})
    # every objective minimized, then its rank (ties: their mean) scaled to 0 .. 1
    w = out[names].to_numpy(dtype=float) * np.where(
        np.asarray(study.goals) == "max", -1.0, 1.0)
    ranks = pd.DataFrame(w).rank(method="average").to_numpy() - 1.0
    scaled = ranks / max(len(out) - 1, 1)
    out["distance"] = np.sqrt((scaled ** 2).sum(axis=1))
    if study.front is not None:
        minimal = set(map(tuple, study.front[qis].to_numpy(dtype=np.int64)))
        out["minimal"] = [tuple(r) in minimal for r in out[levels].to_numpy(dtype=np.int64)]
    else:
        out["minimal"] = None
    order = np.lexsort([*(w[:, j] for j in reversed(range(len(names)))), out["distance"]])
    return out.iloc[order][columns].reset_index(drop=True)


#: the generalizations a console shows (all are in ``generalizations.csv``)
CONSOLE_ROWS = 10


def shown_generalizations(study, where: str = "generalizations.csv") -> str:
    """The first `CONSOLE_ROWS` of `generalizations` as console lines (``runs``,
    ``minimal`` and ``distance`` are left to ``where``, the file with every row)."""
    table = generalizations(study)
    shown = table.head(CONSOLE_ROWS).drop(columns=["runs", "minimal", "distance"])
    more = len(table) - len(shown)
    return "\n".join([console_table(shown, keep=len(study.qis) + 1, glosses=False),
                      *([f"({more} more in {where})"] if more > 0 else [])])


def _levels_text(row, qis) -> str:
    return ", ".join(f"{q} at level {int(row[f'level_{q}'])}" for q in qis)


def pbg_answer(study) -> str:
    """A PBG study in one sentence: how many generalizations PBG-EA found that none
    beats (`generalizations`; how many are minimal PBGs, when those are known), and the
    first of them: its levels and objective values."""
    from sdceval.experiments.report_html import fmt
    table = generalizations(study)
    if table.empty:
        return search_answer(study)
    n, first = len(table), table.iloc[0]
    text = (f"PBG-EA found {n} generalization{'s' * (n != 1)} that no other it found "
            "beats on every objective")
    if study.front is not None:
        text += f" ({int(table['minimal'].sum())} of the {len(study.front)} minimal PBGs)"
    values = ", ".join(f"{display_name(o)} {fmt(first[o])}" for o in study.objectives)
    return (text + f", and the closest to the best value of every objective is "
            f"{_levels_text(first, study.qis)}: {values}.")


def search_answer(study) -> str:
    """How well the search did, in one sentence: how much of the lattice PBG-EA
    evaluated, and how well its archive represents the minimal PBGs (RR, CE) when they
    are known."""
    s = study.summary().set_index("algorithm")
    if "pbg_ea" not in s.index:
        return ""
    r = s.loc["pbg_ea"]
    nodes = r.get("nodes_evaluated_mean")
    text = (f"Over {len(study.runs)} runs, PBG-EA evaluated on average {nodes:,.0f} of "
            f"{study.lattice_size:,} lattice nodes ({nodes / study.lattice_size:.0%}) and "
            f"kept {r.get('archive_mean'):.3g} generalizations")
    if study.front is None:
        return text + "; the lattice is too large for the exhaustive minimal PBGs, so its " \
                      "archive is not scored."
    # summary columns are <figure>_<statistic>: ce_mean is the mean over runs of CE
    rr, ce = r.get("rr_mean"), r.get("ce_mean")
    return (text + f"; its archive represents {rr:.0%} of the {len(study.front)} minimal "
            f"PBGs' boxes (representation ratio, 1 = all) with convergence error {ce:.3g} "
            "(0 = every member minimal).")


def summary_by_metric(study) -> pd.DataFrame:
    """`PBGStudy.summary` turned on its side for people: one row per figure (display
    name), a mean and a variance column per algorithm."""
    summary = study.summary().set_index("algorithm")
    bases = list(dict.fromkeys(c.rsplit("_", 1)[0] for c in summary.columns))
    rows = []
    for b in bases:
        row = {"figure": axis_label(b)}
        for alg in summary.index:
            name = "PBG-EA" if alg == "pbg_ea" else "NSGA-II" if alg == "nsga2" else alg
            row[f"{name} mean"] = summary.loc[alg].get(f"{b}_mean")
            row[f"{name} variance"] = summary.loc[alg].get(f"{b}_var")
        rows.append(row)
    return pd.DataFrame(rows)


#: the rows of `paper_rows` that no glossary term names
_PAPER_ROW_LABELS = {"ce per member (an interpretation)": "CE per member (an interpretation)",
                     "nodes": "nodes evaluated", "nodes %": "nodes evaluated, % of the lattice",
                     "rr (reading ii)": "RR, second reading (unit-box archive)"}


def pbg_section(result) -> Section:
    """The HTML section of a PBG study: the answer (`pbg_answer`) and the
    generalizations found, best first (`generalizations`); then how well the search
    did: the per-algorithm summary, ours beside the paper when the job gives the
    paper's values, the exact search, the figure, the notes (interpretations labelled
    as such)."""
    st = result.study
    s = Section(result.title if result.title != result.key
                else f"{result.data}: property-based generalizations (PBG-EA)",
                answer=pbg_answer(st))
    eps = ", ".join(f"{e:g}" for e in st.eps)
    found = generalizations(st)
    if st.front is None:
        found = found.drop(columns=["minimal"])
    s.add_table(found, caption=(
        "The generalizations found that no other found beats on every objective, one "
        "per row: the level of each quasi-identifier (0 = its original values, higher = "
        "coarser), the objective values, how many runs kept it"
        + ("" if st.front is None else ", whether it is a minimal PBG of the whole "
           "lattice") + ". Best first: by the distance to the ideal point (the best value "
        "of every objective among these rows), each objective measured by its rank "
        "among them scaled to 0 (the best) .. 1 (the worst)."),
        css="ranking", labels={"runs": f"runs that kept it (of {len(st.runs)})",
                               "minimal": "a minimal PBG",
                               "distance": "distance to the ideal"})
    s.add(heading("How well PBG-EA searched"), paragraph(search_answer(st)), paragraph(
        "Objectives " + ", ".join(f"{display_name(o)} ({g}imized)"
                                  for o, g in zip(st.objectives, st.goals))
        + f"; ε = ({eps}); {len(st.runs)} seeded runs on a lattice of {st.lattice_size:,} "
        f"nodes; {st.problem}."))
    summary = summary_by_metric(st)
    s.add_table(summary, css="ranking", text_columns=("figure",),
                labels={c: c for c in summary.columns if c != "figure"} | {"figure": ""})
    s.terms += [c.rsplit("_", 1)[0] for c in st.summary().columns if c != "algorithm"]
    s.terms += list(st.objectives)
    if result.paper:
        s.add(heading("Ours beside the paper"))
        rows = paper_rows(st, result.paper)
        rows["metric"] = [_PAPER_ROW_LABELS.get(m) or display_name(m) for m in rows["metric"]]
        s.add_table(rows, text_columns=("metric",),
                    labels={"metric": "figure", "ours": "ours", "paper": "paper"})
    if st.exact:
        e = st.exact
        s.add(paragraph(f"Exact search (monotonicity bounds): {e['minimal_pbgs']} minimal "
                        f"PBGs from {e['nodes_evaluated']:,} nodes "
                        f"({100 * e['share_evaluated']:.1f} %) in {e['seconds']:.1f} s."))
    s.add_figures(result.files)
    s.notes = list(st.notes) + [
        "CE is printed as the paper defines it, a sum over the archive; the per-member "
        "reading (CE divided by the archive size) is an interpretation, shown as "
        "\"CE per member\"."]
    return s


def write_pbg_job(result: PBGJobResult, out, prefix: str) -> list[Path]:
    return write_pbg(result.study, out, prefix=prefix)


def pbg_rows(result: PBGJobResult) -> list[dict]:
    """Every run's figures (archive size, nodes evaluated, CE, RR, ...), one
    measurement each, with the algorithm and the run's seed."""
    st = result.study
    base = {"data": result.data, "objectives": ",".join(st.objectives),
            "eps": ",".join(f"{e:g}" for e in st.eps)}
    rows = []
    for r in st.metrics.to_dict("records"):
        fields = {**base, "algorithm": r["algorithm"], "run_seed": plain(r["seed"])}
        rows += [{**fields, "measure": k, "value": plain(v)} for k, v in r.items()
                 if k not in ("algorithm", "seed") and k not in TIMING_KEYS]
    return rows


@register_job_kind(
    "pbg", section="pbg", report=pbg_section, write=write_pbg_job, rows=pbg_rows,
    description="PBG-EA runs scored against the minimal property-based generalizations "
                "(Dewri et al. 2010; sdceval pbg)",
    keys=("objectives", "eps", "runs", "rule", "max_suppression", "baseline", "exact",
          "paper"),
    example={"objectives": ["k", "glm"], "runs": 1},
    validate=validate_pbg_options, params=(RUNS, RULE, MAX_SUPPRESSION, BASELINE, EXACT))
def run_pbg_job(job, spec, executor, say) -> PBGJobResult:
    return pbg_result(job, executor, say, job.seed(spec))
