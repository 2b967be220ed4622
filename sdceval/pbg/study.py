"""Many seeded PBG-EA runs on one problem, scored against the exhaustive minimal PBGs
(Dewri et al. 2010 §7; issue 9 items 6–8).

`pbg_study(problem, objectives, eps, runs=20, seed=0)`:

1. evaluates every node once (`evaluate_all`, disk-cached; the table holds the
   objectives of every D10 objective set the data supports, so all the settings on one
   lattice share one cached table) and takes the minimal PBGs ``M`` (strict Pareto);
2. runs PBG-EA ``runs`` times with seeds ``seed, seed+1, …`` on a `NodeQuality`
   backed by that table (each run counts its own distinct nodes);
3. scores each archive: ``|𝒜|``, nodes evaluated, CE (the printed sum), ``ce_mean``,
   RR at the run's ``ε`` (A35 reading i) and, when ``ε`` is not all ones, RR at ``ε``
   of the archive of an ``ε = 1`` run with the same seed (reading ii);
4. optionally the same for NSGA-II (`sdceval.pbg.baseline.nsga2`, the same budget of
   nodes as the PBG-EA run with the same seed) and the exact search
   (`sdceval.pbg.exact.exact_minimal_pbgs`).

A lattice larger than the exhaustive limit has no ``M``: the study says so, runs
PBG-EA on the engine, and reports CE and RR as missing.

Summaries are mean and variance over the runs; the variance is the unbiased sample
variance (``ddof = 1``) — the paper does not say which it prints.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable

import numpy as np
import pandas as pd

from sdceval.core.errors import SdcevalError, plain
from sdceval.core.glossary import register_term

#: a few words for the console legend
_SHORT = {"ce": "distance of the archive to the minimal PBGs (0 = all minimal)",
          "ce_mean": "CE / archive size (an interpretation)",
          "rr": "share of the minimal PBGs' boxes the archive holds"}
for _name, _label, _gloss, _dir in (
        ("algorithm", "algorithm", "pbg_ea: Dewri et al.'s PBG-EA; nsga2: pymoo's NSGA-II "
         "with the same node budget", None),
        ("archive", "archive size", "nodes kept in the run's final archive", None),
        ("nodes_evaluated", "nodes evaluated", "lattice nodes the run evaluated", "worse"),
        ("share_evaluated", "share of the lattice evaluated", "nodes evaluated / lattice "
         "size", "worse"),
        ("ce", "convergence error (CE, sum)", "sum over the archive of each member's "
         "normalized distance to the nearest minimal PBG (0 = every member is minimal; "
         "Dewri et al. 2010 §7)", "worse"),
        ("ce_mean", "CE per member", "CE divided by the archive size (an interpretation "
         "of the paper's CE, not its printed definition)", "worse"),
        ("rr", "representation ratio (RR)", "share of the minimal PBGs' ε-boxes that the "
         "archive occupies (1 = every box represented; Dewri et al. 2010 §7)", "better"),
        ("rr_unit_archive", "RR, unit-box archive", "the representation ratio of a second "
         "run with unit boxes (the second reading of the paper's RR)", "better"),
        ("seconds", "seconds", "wall-clock time of the run", "worse"),
        ("seed", "seed", "the run's random seed", None)):
    register_term(_name, _label, _gloss, _dir, short=_SHORT.get(_name, ""))
from sdceval.lattice.search import MAX_EXHAUSTIVE_NODES, LatticeProblem, evaluate_all
from sdceval.pbg import metrics
from sdceval.pbg.dominance import check_eps
from sdceval.pbg.ea import EARun, pbg_ea
from sdceval.pbg.quality import NodeQuality, check_pbg_objectives, minimal_pbgs

#: the paper's names of its objectives -> the lattice objectives (DEWRI §1.13)
PAPER_ALIASES = {"l": "l_distinct", "ℓ": "l_distinct", "S_k": "s_k", "S_l": "s_l",
                 "S_ℓ": "s_l", "GLM": "glm", "CM": "cm"}
#: objectives of every D10 set, evaluated together so that one cached table serves all
TABLE_OBJECTIVES = ("k", "l_distinct", "s_k", "s_l", "glm", "cm")


def table_objectives(problem: LatticeProblem, names) -> list[str]:
    """``names`` and every `TABLE_OBJECTIVES` entry the data set supports: the columns
    of the exhaustive table, the same for every setting on one lattice (one cache
    entry)."""
    avail = problem.objectives_available()
    return list(dict.fromkeys([*names, *(o for o in TABLE_OBJECTIVES if o in avail)]))


def resolve_objectives(objectives) -> list[str]:
    """Names from a list or a comma-separated string, the paper's aliases mapped
    (``k,l,glm`` -> ``k, l_distinct, glm``)."""
    items = (objectives.split(",") if isinstance(objectives, str) else list(objectives))
    return [PAPER_ALIASES.get(str(o).strip(), str(o).strip()) for o in items if str(o).strip()]


@dataclass
class PBGStudy:
    """Everything `pbg_study` computed (module docstring)."""

    objectives: list
    goals: list
    eps: list
    lattice_size: int
    qis: list
    problem: str
    runs: list = field(default_factory=list)            # EARun per seed
    unit_runs: list = field(default_factory=list)       # ε = 1 runs (reading ii)
    baseline: list = field(default_factory=list)        # NSGA-II runs
    front: pd.DataFrame | None = None                   # M (None: lattice too large)
    exact: dict | None = None
    metrics: pd.DataFrame | None = None
    notes: list = field(default_factory=list)
    seconds: float = 0.0

    def summary(self) -> pd.DataFrame:
        """Mean and variance (ddof 1) of every metric over the runs, per algorithm."""
        m = self.metrics
        cols = [c for c in ("archive", "nodes_evaluated", "ce", "ce_mean", "rr",
                            "rr_unit_archive", "seconds") if c in m.columns]
        out = m.groupby("algorithm", sort=False)[cols].agg(["mean", "var"])
        out.columns = [f"{c}_{s}" for c, s in out.columns]
        return out.reset_index()

    def to_dict(self) -> dict:
        return {"objectives": self.objectives, "goals": self.goals, "eps": self.eps,
                "lattice_size": self.lattice_size, "qis": self.qis,
                "problem": self.problem,
                "minimal_pbgs": None if self.front is None else int(len(self.front)),
                "exact": self.exact, "notes": self.notes, "seconds": self.seconds,
                "summary": [{k: plain(v) for k, v in r.items()}
                            for r in self.summary().to_dict("records")],
                "runs": [{k: plain(v) for k, v in r.items()}
                         for r in self.metrics.to_dict("records")]}


def _score(run: EARun, front: np.ndarray | None, eps, goals, algorithm: str,
           unit: EARun | None = None) -> dict:
    row = {"algorithm": algorithm, "seed": run.seed, "archive": len(run.values),
           "nodes_evaluated": run.nodes_evaluated,
           "share_evaluated": run.nodes_evaluated / run.lattice_size,
           "seconds": run.seconds}
    if front is not None:
        row["ce"] = metrics.ce(run.values, front, goals) if len(run.values) else np.nan
        row["ce_mean"] = (metrics.ce_mean(run.values, front, goals) if len(run.values)
                          else np.nan)
        row["rr"] = metrics.rr(run.values, front, eps, goals)
        if unit is not None:
            row["rr_unit_archive"] = metrics.rr(unit.values, front, eps, goals)
    return row


def pbg_study(problem: LatticeProblem, objectives, eps=1.0, *, runs: int = 20,
              seed: int = 0, baseline: bool = False, exact: bool = False,
              n_pop: int = 25, n_iterations: int = 100, p_cross: float = 0.8,
              p_mut: float | None = None, cache: bool = True,
              progress: Callable[[str], None] | None = None,
              bar: bool | None = False) -> PBGStudy:
    """Seeded PBG-EA runs scored against the exhaustive minimal PBGs (module docstring).

    Parameters
    ----------
    problem : LatticeProblem
        Data, rule and limit (D10: ``rule="dewri"``, ``max_suppression=0.01``).
    objectives : sequence or comma-separated str
        At least two; the paper's names are accepted (``k,l,glm``).
    eps : float or sequence
        The archive's discretization vector (one per objective; all ones by default).
    runs, seed : int
        Runs with seeds ``seed .. seed + runs − 1``.
    baseline : bool
        Also NSGA-II with the same node budget per seed.
    exact : bool
        Also the exact search for ``M`` (its node count).
    progress : callable, optional
        Called with one line per step (``print``-like).
    bar : bool or None
        A progress bar over the runs (`sdceval.core.progress`; None: on a terminal).
    """
    t0 = time.perf_counter()
    say = progress or (lambda m: None)
    names, goals = check_pbg_objectives(problem, resolve_objectives(objectives))
    eps_arr = check_eps(eps, len(names), names)
    if isinstance(runs, bool) or not isinstance(runs, (int, np.integer)) or runs < 1:
        raise SdcevalError(f"runs must be a positive integer, got {runs!r}")
    lat = problem.lattice
    study = PBGStudy(list(names), list(goals), [float(e) for e in eps_arr], int(lat.size),
                     list(lat.names), problem.describe())
    table = front = None
    if lat.size > MAX_EXHAUSTIVE_NODES:
        study.notes.append(
            f"the lattice has {lat.size:,} nodes, more than the {MAX_EXHAUSTIVE_NODES:,} "
            "evaluated exhaustively: the minimal PBGs M are unknown, so CE and RR cannot "
            "be computed; PBG-EA ran on the lattice engine")
        quality_of = lambda: NodeQuality(problem, names)  # noqa: E731
    else:
        cols = table_objectives(problem, names)
        say(f"evaluating all {lat.size:,} nodes ({', '.join(cols)}) ...")
        table = evaluate_all(problem, cols, cache=cache, progress=False)
        study.front = minimal_pbgs(table, names, goals).reset_index(drop=True)
        front = study.front[list(names)].to_numpy(dtype=float)
        quality_of = lambda: NodeQuality.from_table(problem, names, table)  # noqa: E731
    rows = []
    unit_eps = np.ones(len(names))
    coarse = not np.array_equal(eps_arr, unit_eps)
    from sdceval.core.progress import progress_bar
    pbar = progress_bar("PBG-EA runs", total=runs, unit=" runs", enabled=bar)
    for i in range(runs):
        pbar.update(1 if i else 0)
        s = seed + i
        run = pbg_ea(quality_of(), eps_arr, n_pop=n_pop, n_iterations=n_iterations,
                     p_cross=p_cross, p_mut=p_mut, seed=s, progress=False)
        unit = None
        if coarse and front is not None:
            unit = pbg_ea(quality_of(), unit_eps, n_pop=n_pop, n_iterations=n_iterations,
                          p_cross=p_cross, p_mut=p_mut, seed=s, progress=False)
            study.unit_runs.append(unit)
        study.runs.append(run)
        rows.append(_score(run, front, eps_arr, goals, "pbg_ea", unit))
        if baseline:
            from sdceval.pbg.baseline import nsga2_answers
            both = nsga2_answers(quality_of(), run.nodes_evaluated, pop_size=n_pop, seed=s)
            study.baseline.append(both["population"])
            rows.append(_score(both["population"], front, eps_arr, goals, "nsga2"))
            rows.append(_score(both["evaluated"], front, eps_arr, goals,
                               "nsga2_all_evaluated"))
        say(f"run {i + 1}/{runs}: archive {len(run.values)}, {run.nodes_evaluated} nodes"
            + (f", RR {rows[-1 - 2 * baseline]['rr']:.3f}" if front is not None else ""))
    pbar.update(1)
    pbar.close()
    study.metrics = pd.DataFrame(rows)
    if exact and table is not None:
        from sdceval.pbg.exact import exact_minimal_pbgs
        res = exact_minimal_pbgs(problem, names, progress=False)
        study.exact = res.as_dict()
    study.seconds = time.perf_counter() - t0
    return study
