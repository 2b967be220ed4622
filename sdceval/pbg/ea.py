"""PBG-EA, Dewri et al. 2010's evolutionary search for property-based generalizations
(Algorithm 2, D10 §6; DEWRI.md §1.11, A22–A29).

    1. 𝒜 ← ∅, t ← 0;  2. initialize P_0;  3. evaluate P_0;
    4. update 𝒜 with every node of P_0 (Algorithm 1, `BoxArchive`), in population order;
    5. fitness of the nodes of P_t ∪ 𝒜;  6. selection in P_t ∪ 𝒜;
    7. P_{t+1} by recombination;  8. evaluate P_{t+1}, update 𝒜 with it;
    9. t ← t + 1, back to 5 until t = ``n_iterations``;  10. return 𝒜.

Operators, as decided in DEWRI.md:

* **P_0** (A24): the bottom node (all levels 0), the top node (every QI at its
  hierarchy's height) — "trivially minimal PBGs" — then ``n_pop − 2`` nodes with
  every level uniform in ``0..N_i`` (duplicates allowed).
* **Fitness** (A25, `spea2_fitness`): on the multiset P_t ∪ 𝒜 (a node in both counts
  twice), strict Pareto dominance on the raw quality vectors (not box-dominance);
  ``fitness(P) = Σ dom(P′)`` over the points dominating ``P``; no density term.
* **Selection** (A26): ``n_pop`` binary tournaments; both contestants drawn uniformly
  *with replacement* from P_t ∪ 𝒜; the lower fitness wins, a tie is broken by a fair
  coin.
* **Crossover** (A27): the selected nodes are shuffled and taken in consecutive pairs
  (choice "without replacement"); each pair is crossed with probability ``p_cross``:
  a cut ``c`` uniform in ``1..d−1`` and the tails from ``c`` on are swapped; else both
  are copied.  With an odd ``n_pop`` the last node is copied; with one QI there is
  no cut point and nodes are copied.
* **Mutation** (A28): every level of every offspring independently with probability
  ``p_mut`` (default ``1/d``, the paper's 0.125 for 8 QIs) moves by −1 or +1 with
  probability ½ each, clipped to ``0..N_i`` (a −1 at level 0 does nothing).
* **Archive updates** in population order (A29); **iterations** literal (A23):
  ``n_iterations`` recombination steps after P_0, so at most ``n_pop·(n_iterations+1)``
  nodes (2525 with the paper's parameters; the text's "2500" counts 100 × 25).
* **Nodes evaluated** (A22): the distinct nodes whose quality vector the run asked for,
  P_0 included (a table-backed `NodeQuality` still counts them).

One ``numpy.random.default_rng(seed)`` drives every random choice, in a fixed order
per generation (tournament contestants, tie coins, shuffle, crossover coins, cuts,
mutation coins, directions), so a seed gives the same archive and node count.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable

import numpy as np
import pandas as pd

from sdceval.core.errors import SdcevalError, plain
from sdceval.core.progress import progress_bar
from sdceval.core.rng import check_random_state
from sdceval.pbg.archive import BoxArchive
from sdceval.pbg.dominance import check_eps, spea2_fitness
from sdceval.pbg.quality import NodeQuality


@dataclass(eq=False)
class EARun:
    """The result of one PBG-EA run.

    Attributes
    ----------
    levels : ndarray of int64, shape (m, d)
        The archive's nodes (archive order: the order they entered, survivors only).
    values : ndarray of float64, shape (m, r)
        Their quality vectors, natural orientation.
    objectives : tuple of str
    goals : tuple of str
    eps : tuple of float
        The discretization vector the archive was kept with.
    nodes_evaluated : int
        Distinct lattice nodes the run evaluated (A22).
    seed : int
    qis : tuple of str
        QI names (the columns of ``levels``).
    n_pop, n_iterations : int
    p_cross, p_mut : float
    lattice_size : int
    seconds : float
        Wall time of the run (evaluations included).
    """

    levels: np.ndarray
    values: np.ndarray
    objectives: tuple
    goals: tuple
    eps: tuple
    nodes_evaluated: int
    seed: int
    qis: tuple = ()
    n_pop: int = 25
    n_iterations: int = 100
    p_cross: float = 0.8
    p_mut: float = 0.125
    lattice_size: int = 0
    seconds: float = 0.0

    def to_frame(self) -> pd.DataFrame:
        """One row per archive member: its QI levels, then its objective values."""
        cols = {q: self.levels[:, i] for i, q in enumerate(self.qis)}
        for j, name in enumerate(self.objectives):
            cols[name] = self.values[:, j]
        return pd.DataFrame(cols, columns=[*self.qis, *self.objectives])


# -- operators -------------------------------------------------------------------------------
def initial_population(rng: np.random.Generator, heights: np.ndarray, n_pop: int
                       ) -> np.ndarray:
    """P_0 (A24): bottom, top, then ``n_pop − 2`` uniform nodes, ``(n_pop, d)`` int64."""
    heights = np.asarray(heights, dtype=np.int64)
    rand = rng.integers(0, heights + 1, size=(n_pop - 2, len(heights)), dtype=np.int64)
    return np.vstack([np.zeros_like(heights), heights, rand]).astype(np.int64)


def binary_tournament(rng: np.random.Generator, fitness: np.ndarray, n_select: int
                      ) -> np.ndarray:
    """Indices of ``n_select`` tournament winners (A26): contestants uniform with
    replacement, lower fitness wins, ties by a fair coin."""
    m = len(fitness)
    a = rng.integers(0, m, n_select)
    b = rng.integers(0, m, n_select)
    coin = rng.random(n_select) < 0.5
    fa, fb = fitness[a], fitness[b]
    return np.where(fa < fb, a, np.where(fb < fa, b, np.where(coin, a, b)))


def single_point_crossover(rng: np.random.Generator, selected: np.ndarray,
                           p_cross: float) -> np.ndarray:
    """Offspring of the selected nodes (A27): shuffled, consecutive pairs crossed with
    probability ``p_cross`` at a cut uniform in ``1..d−1`` (tails swapped), else
    copied; an odd last node copied.  Same shape as ``selected``."""
    sel = np.asarray(selected)[rng.permutation(len(selected))]
    n, d = sel.shape
    n_pairs = n // 2
    cross = rng.random(n_pairs) < p_cross
    out = sel.copy()
    if d < 2 or not n_pairs:
        return out
    cuts = rng.integers(1, d, n_pairs)
    first, second = sel[0:2 * n_pairs:2], sel[1:2 * n_pairs:2]
    tail = (np.arange(d)[None, :] >= cuts[:, None]) & cross[:, None]
    out[0:2 * n_pairs:2] = np.where(tail, second, first)
    out[1:2 * n_pairs:2] = np.where(tail, first, second)
    return out


def single_step_mutation(rng: np.random.Generator, nodes: np.ndarray,
                         heights: np.ndarray, p_mut: float) -> np.ndarray:
    """Each level moves by ±1 (½ each) with probability ``p_mut``, clipped to
    ``0..N_i`` (A28).  A new array."""
    nodes = np.asarray(nodes, dtype=np.int64)
    hit = rng.random(nodes.shape) < p_mut
    step = np.where(rng.random(nodes.shape) < 0.5, -1, 1)
    return np.clip(nodes + hit * step, 0, np.asarray(heights, dtype=np.int64))


# -- the algorithm ---------------------------------------------------------------------------
def _check_params(n_pop, n_iterations, p_cross, p_mut, d):
    def integer(name, v, lo):
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)) or v < lo:
            raise SdcevalError(f"PBG-EA: {name} must be an integer >= {lo}, got {plain(v)!r}")
        return int(v)

    def prob(name, v):
        try:
            x = float(v)
        except (TypeError, ValueError):
            x = float("nan")
        if isinstance(v, (bool, np.bool_)) or not 0.0 <= x <= 1.0:
            raise SdcevalError(f"PBG-EA: {name} must be a probability in [0, 1], got "
                               f"{plain(v)!r}")
        return x

    n_pop = integer("n_pop (population size)", n_pop, 2)
    n_iterations = integer("n_iterations", n_iterations, 0)
    p_cross = prob("p_cross", p_cross)
    p_mut = 1.0 / d if p_mut is None else prob("p_mut", p_mut)
    return n_pop, n_iterations, p_cross, p_mut


def pbg_ea(quality: NodeQuality, eps, *, n_pop: int = 25, n_iterations: int = 100,
           p_cross: float = 0.8, p_mut: float | None = None, seed: int = 0,
           progress: bool | None | Callable[[int, int], None] = None) -> EARun:
    """One run of PBG-EA (module docstring) on ``quality``'s lattice and objectives.

    Parameters
    ----------
    quality : NodeQuality
        Evaluates nodes (computed by the lattice engine, or looked up in an exhaustive
        table with `NodeQuality.from_table`).
    eps : float or sequence of float
        Discretization vector of the archive, one positive number per objective (a
        single number for all; the paper's default is all ones).
    n_pop, n_iterations, p_cross, p_mut :
        The paper's 25, 100, 0.8 and ``1/d`` (d QIs) by default.
    seed : int
        Seed of the one generator that drives the run.
    progress : bool, None or callable
        A progress bar over the iterations (None: only on a terminal, for long runs),
        or a callable ``progress(done, total)`` called after each iteration.
    """
    if not isinstance(quality, NodeQuality):
        raise SdcevalError("PBG-EA: quality must be a NodeQuality (sdceval.pbg.quality)")
    lat = quality.lattice
    heights = lat.heights
    d, r = lat.n_qis, len(quality.objectives)
    n_pop, n_iterations, p_cross, p_mut = _check_params(n_pop, n_iterations, p_cross,
                                                        p_mut, d)
    eps = check_eps(eps, r, quality.objectives)
    if isinstance(seed, (bool, np.bool_)) or not isinstance(seed, (int, np.integer)):
        raise SdcevalError(f"PBG-EA: seed must be an integer (runs are reproducible from "
                           f"it), got {plain(seed)!r}")
    rng = check_random_state(seed)
    t0 = time.perf_counter()
    goals = quality.goals
    archive = BoxArchive(eps, goals, quality.objectives)
    seen: set[int] = set()
    strides = lat.strides

    def evaluate_and_archive(pop: np.ndarray) -> np.ndarray:
        vals = quality.evaluate(pop)
        ids = (pop @ strides).tolist()
        seen.update(ids)
        for nid, v in zip(ids, vals):
            archive.update(nid, v)
        return vals

    callback = progress if callable(progress) else None
    bar = None if callback or progress is False else progress_bar("PBG-EA", total=n_iterations,
                                             unit=" iterations", enabled=progress)
    try:
        pop = initial_population(rng, heights, n_pop)
        vals = evaluate_and_archive(pop)
        for t in range(n_iterations):
            a_ids = np.asarray(archive.keys, dtype=np.int64)
            union = np.vstack([pop, lat.decode(a_ids)]) if len(a_ids) else pop
            union_vals = np.vstack([vals, archive.values])
            fit = spea2_fitness(union_vals, goals)
            parents = union[binary_tournament(rng, fit, n_pop)]
            children = single_point_crossover(rng, parents, p_cross)
            pop = single_step_mutation(rng, children, heights, p_mut)
            vals = evaluate_and_archive(pop)
            if callback:
                callback(t + 1, n_iterations)
            elif bar is not None:
                bar.update()
    finally:
        if bar is not None:
            bar.close()
    keys = np.asarray(archive.keys, dtype=np.int64)
    return EARun(
        levels=lat.decode(keys) if len(keys) else np.zeros((0, d), dtype=np.int64),
        values=archive.values, objectives=tuple(quality.objectives), goals=tuple(goals),
        eps=tuple(float(e) for e in eps), nodes_evaluated=len(seen), seed=int(seed),
        qis=tuple(lat.names), n_pop=n_pop, n_iterations=n_iterations, p_cross=p_cross,
        p_mut=p_mut, lattice_size=int(lat.size), seconds=time.perf_counter() - t0)
