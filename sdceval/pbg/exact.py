"""The exact set of minimal PBGs, skipping nodes that are provably dominated (issue 9,
beyond the paper).

Dewri et al. 2010 (§7) find the minimal PBGs M by evaluating every node.  Many nodes
need not be evaluated: a node whose *best possible* quality vector (an optimistic
bound of each objective, from nodes already evaluated or from its levels alone) is
strictly dominated by an evaluated node cannot be minimal, and neither can anything it
would dominate.  `exact_minimal_pbgs` visits the lattice top-down, one height at a
time, and evaluates only the nodes whose optimistic vector no evaluated node strictly
dominates.  The result is exactly M (the strict-Pareto rows of the exhaustive table;
tests/test_pbg_exact.py checks this against `minimal_pbgs` of `evaluate_all`), so its
RR is 1 and CE 0; what it reports is how many nodes it needed.

Optimistic bounds (``X`` a node, ``Y ≥ X`` any more general node; all proven, never
estimated):

* ``k`` under Dewri's rule: ``k(X) ≤ k(Y)``.  ``k = s* = min{s : R(s) > η}`` with
  ``R(s)`` the records in classes of size ≤ ``s``; a class of ``Y`` is a union of
  classes of ``X``, so a record in a ``Y``-class of size ≤ ``s`` is in an ``X``-class of
  size ≤ ``s``: ``R_Y(s) ≤ R_X(s)`` for every ``s``, hence ``s*_Y ≥ s*_X``.  The
  bound of ``X`` is the smallest value (or bound) over its immediate successors.
* ``l_distinct`` under Dewri's rule: ``ℓ(X) ≤ k(X)`` (the smallest kept class holds at
  most ``k`` distinct values) and ``ℓ ≤`` the number of sensitive values.
* ``s_k``: ``S_k(X) ≤ Σ_E |E|²`` over *all* classes of ``X`` (``s_k_all``), which
  never decreases upward (merging classes of sizes a, b adds 2ab); likewise ``s_l`` with
  ``s_l_all`` (``Σ_E Σ_s c²``).  Bounds from the successors as for ``k``.
* an objective with a level bound (``glm``, ``glm_normalized``, ``nu_entropy``,
  ``nu_entropy_nm``; `sdceval.lattice.objectives`): that bound (GLM: every record's
  generalization loss with nothing suppressed; a suppressed record loses the maximum).
* ``cm``: no bound from above.  ``cm(X) ≥`` the minority records over all of X's
  classes, which never decrease upward, bounds it only from *below* X — from nodes a
  top-down pass has not evaluated yet; from the bottom node alone it is too weak to
  skip anything on Adult (measured: all 8 960 nodes evaluated), so ``cm`` counts as
  unbounded.
* anything else: no bound (the best value imaginable), so no node can be skipped; the
  search then evaluates every node bottom-up in the engine's batches (`evaluate_all`),
  several times faster than node by node.

The skip test is strict: a node is skipped only when an evaluated node is at least as
good as its optimistic vector on every objective and strictly better on one, so a node
that could tie an evaluated one is evaluated (ties are all minimal, DEWRI §1.7).
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np
import pandas as pd

from sdceval.core.errors import SdcevalError
from sdceval.core.progress import progress_bar
from sdceval.lattice.objectives import get_objective
from sdceval.lattice.search import LatticeProblem, check_exhaustive, evaluate_all
from sdceval.lattice.suppression import DewriRule
from sdceval.pbg.dominance import pareto_mask

#: objectives bounded by the values of more general nodes: objective -> the column whose
#: value at a successor bounds it (upper bound, never decreasing upward)
_FROM_ABOVE = {"k": "k", "s_k": "s_k_all", "s_l": "s_l_all"}
#: how each kind of bound is described in `ExactResult.bounds`
_BOUND_WORDS = {"above": "the successors' values (never better below)",
                "k": "ℓ ≤ k ≤ the successors' k",
                "levels": "a sum of per-level terms (nothing suppressed)",
                "none": "none: every node is evaluated, bottom-up in batches"}


@dataclass
class ExactResult:
    """The minimal PBGs and what it took to find them.

    Attributes
    ----------
    front : DataFrame
        The minimal PBGs: QI levels, ``height``, ``suppressed``, the objectives.
    objectives, goals : list of str
    nodes_evaluated : int
        Distinct nodes whose quality vector was computed.
    lattice_size : int
    bounds : dict
        How each objective was bounded (module docstring).
    seconds : float
    """

    front: pd.DataFrame
    objectives: list
    goals: list
    nodes_evaluated: int
    lattice_size: int
    bounds: dict = field(default_factory=dict)
    seconds: float = 0.0

    @property
    def share_evaluated(self) -> float:
        return self.nodes_evaluated / self.lattice_size

    def as_dict(self) -> dict:
        return {"objectives": self.objectives, "goals": self.goals,
                "minimal_pbgs": int(len(self.front)),
                "nodes_evaluated": int(self.nodes_evaluated),
                "lattice_size": int(self.lattice_size),
                "share_evaluated": float(self.share_evaluated),
                "bounds": self.bounds, "seconds": float(self.seconds)}


def _bound_kinds(problem: LatticeProblem, names: Sequence[str]) -> dict[str, str]:
    dewri = isinstance(problem.rule, DewriRule)
    kinds = {}
    for name in names:
        obj = get_objective(name)
        if name == "k" and dewri:
            kinds[name] = "above"
        elif name in ("s_k", "s_l"):
            kinds[name] = "above"
        elif name == "l_distinct" and dewri:
            kinds[name] = "k"
        elif obj.bound is not None:
            kinds[name] = "levels"
        else:
            kinds[name] = "none"
    return kinds


def exact_minimal_pbgs(problem: LatticeProblem, objectives: Sequence[str],
                       progress: bool | None = None) -> ExactResult:
    """The minimal PBGs of ``problem``'s lattice for ``objectives``, evaluating only
    nodes not provably dominated (module docstring).

    Parameters
    ----------
    problem : LatticeProblem
        Data, suppression rule and limit (Dewri et al. 2010: ``rule="dewri"``,
        ``max_suppression=0.01``); models, if any, do not restrict the set (D10 has none).
    objectives : sequence of str
        At least two lattice objectives with a goal (``k``, ``l_distinct``, ``s_k``,
        ``s_l``, ``glm``, ``cm``, ...).
    """
    t0 = time.perf_counter()
    names = problem.check_objectives(objectives)
    if len(names) < 2:
        raise SdcevalError("minimal PBGs need at least two objectives; one objective is "
                           "the optimal search's job (sdceval lattice search --metric NAME)")
    goals = [get_objective(n).goal for n in names]
    if None in goals:
        bad = names[goals.index(None)]
        raise SdcevalError(f"objective {bad!r} is a count, not an objective to optimize")
    lat = problem.lattice
    check_exhaustive(lat, lat.size, "searched for minimal PBGs")
    kinds = _bound_kinds(problem, names)
    if "none" in kinds.values():
        # an objective without any bound makes every node's optimistic vector
        # undominated: nothing can be skipped, so evaluate bottom-up in batches (the
        # engine's fast path) instead of top-down node by node
        table = evaluate_all(problem, names, cache=False, progress=progress)
        front = table[pareto_mask(table[names].to_numpy(dtype=float), goals)]
        bounds = {n: _BOUND_WORDS[k] for n, k in kinds.items()}
        return ExactResult(front.reset_index(drop=True), list(names), goals, int(lat.size),
                           int(lat.size), bounds, time.perf_counter() - t0)
    # the columns whose values at a successor bound a node from above (ℓ needs k's)
    above = sorted({_FROM_ABOVE[n] for n, k in kinds.items() if k == "above"}
                   | ({"k"} if "k" in kinds.values() else set()))
    aux = [a for a in above if a not in names]
    problem.check_objectives(aux)
    evaluated_cols = [*names, *aux]
    sign = np.array([-1.0 if g == "max" else 1.0 for g in goals])  # minimized sense
    size, d = lat.size, lat.n_qis
    strides = lat.strides
    # per "above" column: the best known upper bound (value if evaluated) of every node
    upper = {c: np.full(size, np.inf) for c in above}
    ctx = problem.ctx
    level_bound = {n: get_objective(n).bound(ctx) for n, k in kinds.items()
                   if k == "levels"}
    # distinct ℓ cannot exceed the number of sensitive values present
    n_sensitive = (int((ctx.table_counts > 0).sum()) if ctx.table_counts is not None
                   else np.inf)
    front_vals = np.zeros((0, len(names)))
    rows: list[pd.DataFrame] = []
    n_eval = 0
    bar = progress_bar("pbg: exact minimal PBGs", total=lat.max_height + 1, enabled=progress)
    try:
        for h in range(lat.max_height, -1, -1):
            lv = lat.nodes_at_height(h)
            ids = lat.encode(lv)
            for c, arr in upper.items():
                best = np.full(len(ids), np.inf)
                for q in range(d):
                    ok = lv[:, q] < lat.heights[q]
                    best[ok] = np.minimum(best[ok], arr[ids[ok] + strides[q]])
                arr[ids] = best
            opt = np.empty((len(ids), len(names)))
            for j, n in enumerate(names):
                kind = kinds[n]
                if kind == "above":
                    opt[:, j] = upper[_FROM_ABOVE[n]][ids]
                elif kind == "k":
                    opt[:, j] = np.minimum(upper["k"][ids], n_sensitive)
                elif kind == "levels":
                    terms = level_bound[n]
                    opt[:, j] = terms[np.arange(d), lv].sum(axis=1)
                else:
                    opt[:, j] = np.inf if goals[j] == "max" else -np.inf
            todo = ~_dominated(opt * sign, front_vals * sign)
            if todo.any():
                table = evaluate_all(problem, evaluated_cols, nodes=lv[todo], cache=False,
                                     progress=False)
                n_eval += int(todo.sum())
                done = ids[todo]
                for c, arr in upper.items():
                    arr[done] = table[c].to_numpy(dtype=float)
                vals = table[names].to_numpy(dtype=float)
                rows.append(table)
                both = np.vstack([front_vals, vals])
                front_vals = both[pareto_mask(both, goals)]
            bar.update(1)
    finally:
        bar.close()
    every = pd.concat(rows, ignore_index=True)
    front = every[pareto_mask(every[names].to_numpy(dtype=float), goals)]
    front = front.drop(columns=[c for c in aux if c not in names]).reset_index(drop=True)
    bounds = {n: _BOUND_WORDS[k] for n, k in kinds.items()}
    return ExactResult(front, list(names), goals, n_eval, int(size), bounds,
                       time.perf_counter() - t0)


def _dominated(opt: np.ndarray, front: np.ndarray, chunk: int = 4096) -> np.ndarray:
    """Per row of ``opt`` (minimized sense): some row of ``front`` is ≤ everywhere and
    < somewhere."""
    out = np.zeros(len(opt), dtype=bool)
    if not len(front):
        return out
    for s in range(0, len(opt), chunk):
        o = opt[s:s + chunk, None, :]
        le = (front[None, :, :] <= o).all(axis=2)
        lt = (front[None, :, :] < o).any(axis=2)
        out[s:s + chunk] = (le & lt).any(axis=1)
    return out
