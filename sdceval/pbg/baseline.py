"""NSGA-II from pymoo on the generalization lattice: a baseline for PBG-EA (issue 9,
beyond the paper).

Dewri et al. 2010 compare PBG-EA only with the exhaustive search.  A user choosing a
method wants to know whether its box archive is worth having over the standard
multi-objective algorithm, so `nsga2` runs pymoo's NSGA-II (Deb et al. 2002) on the
same lattice, the same quality vectors and the same budget of distinct nodes, and
returns the same kind of result (`sdceval.pbg.ea.EARun`), which the same metrics (CE,
RR, nodes evaluated; `sdceval.pbg.metrics`) score.

Encoding and operators: one integer gene per QI, its level in ``0..N_i``; pymoo's
integer set-up (random integer sampling; simulated binary crossover, probability 0.9,
and polynomial mutation, each followed by rounding to integers; duplicate elimination),
the minimized objectives (a ``max`` objective negated).  The run goes generation by
generation (pymoo's ask-and-tell interface) until ``budget`` distinct nodes have been
evaluated; the last generation may pass the budget by less than one population.  Its
answer is NSGA-II's own: the non-dominated members of the final population
(``algorithm.opt``), duplicates by quality vector removed.  pymoo draws every random
number from ``numpy.random.default_rng(seed)``, so a seed reproduces a run exactly.

References
----------
Deb, Pratap, Agarwal, Meyarivan (2002). A fast and elitist multiobjective genetic
algorithm: NSGA-II. IEEE TEC 6(2).
Blank, Deb (2020). pymoo: Multi-objective optimization in Python. IEEE Access 8.
"""
from __future__ import annotations

import time

import numpy as np

from sdceval.core.errors import SdcevalError
from sdceval.pbg.ea import EARun
from sdceval.pbg.quality import NodeQuality


ANSWERS = ("population", "evaluated")


def nsga2(quality: NodeQuality, budget: int, *, pop_size: int = 25, seed: int = 0,
          p_cross: float = 0.9, answer: str = "population") -> EARun:
    """NSGA-II with one answer (`nsga2_answers` documents the parameters)."""
    if answer not in ANSWERS:
        raise SdcevalError(f"answer must be one of {', '.join(ANSWERS)}, got {answer!r}")
    return nsga2_answers(quality, budget, pop_size=pop_size, seed=seed, p_cross=p_cross,
                         answers=(answer,))[answer]


def nsga2_answers(quality: NodeQuality, budget: int, *, pop_size: int = 25,
                  seed: int = 0, p_cross: float = 0.9, answers=ANSWERS) -> dict:
    """NSGA-II (pymoo) over ``quality``'s lattice until ``budget`` distinct nodes have
    been evaluated (module docstring).

    Parameters
    ----------
    quality : NodeQuality
        The objectives and where their values come from (engine or exhaustive table);
        its ``n_evaluated`` counts the nodes.
    budget : int
        Distinct nodes to evaluate (e.g. PBG-EA's count for the same seed).
    pop_size : int
        NSGA-II's population (default 25, PBG-EA's ``N_pop``).
    seed : int
    p_cross : float
        Crossover probability of the simulated binary crossover.
    answers : sequence of {"population", "evaluated"}
        NSGA-II's own answer, the non-dominated members of its final population (at
        most ``pop_size``), and/or the non-dominated set of every node it evaluated (an
        external archive without boxes, which PBG-EA's archive approximates); one run
        gives both.

    Returns
    -------
    dict answer -> EARun
        ``levels``/``values`` of that answer, ``nodes_evaluated``, ``eps`` all ones
        (NSGA-II has no boxes), ``n_iterations`` the generations run.
    """
    try:
        from pymoo.algorithms.moo.nsga2 import NSGA2
        from pymoo.core.problem import Problem
        from pymoo.operators.crossover.sbx import SBX
        from pymoo.operators.mutation.pm import PM
        from pymoo.operators.repair.rounding import RoundingRepair
        from pymoo.operators.sampling.rnd import IntegerRandomSampling
        from pymoo.core.termination import NoTermination
    except ImportError as exc:  # pragma: no cover - pymoo is a dependency
        raise SdcevalError(f"the NSGA-II baseline needs pymoo (pip install pymoo): {exc}"
                           ) from None
    if isinstance(budget, bool) or not isinstance(budget, (int, np.integer)) or budget < 1:
        raise SdcevalError(f"budget must be a positive number of nodes, got {budget!r}")
    if isinstance(pop_size, bool) or not isinstance(pop_size, (int, np.integer)) \
            or pop_size < 2:
        raise SdcevalError(f"pop_size must be an integer >= 2, got {pop_size!r}")
    bad = [a for a in answers if a not in ANSWERS]
    if bad or not answers:
        raise SdcevalError(f"answer must be one of {', '.join(ANSWERS)}, got "
                           f"{bad[0] if bad else 'none'!r}")
    lat = quality.lattice
    heights = lat.heights.astype(np.float64)
    seen_before = len(quality.evaluated_ids)
    sign = np.array([-1.0 if g == "max" else 1.0 for g in quality.goals])
    t0 = time.perf_counter()
    start = quality.n_evaluated

    class _Lattice(Problem):
        def __init__(self):
            super().__init__(n_var=lat.n_qis, n_obj=len(sign), xl=np.zeros(lat.n_qis),
                             xu=heights, vtype=int)

        def _evaluate(self, x, out, *args, **kwargs):
            levels = np.clip(np.rint(x), 0, heights).astype(np.int64)
            out["F"] = quality.evaluate(levels) * sign

    algorithm = NSGA2(pop_size=int(pop_size), sampling=IntegerRandomSampling(),
                      crossover=SBX(prob=p_cross, eta=3.0, vtype=float,
                                    repair=RoundingRepair()),
                      mutation=PM(eta=3.0, vtype=float, repair=RoundingRepair()),
                      eliminate_duplicates=True)
    problem = _Lattice()
    algorithm.setup(problem, termination=NoTermination(), seed=int(seed), verbose=False)
    generations = 0
    while quality.n_evaluated - start < budget:
        pop = algorithm.ask()
        algorithm.evaluator.eval(problem, pop)
        algorithm.tell(infills=pop)
        generations += 1
        if generations > 100 * budget:  # pragma: no cover - a lattice smaller than budget
            break
    out = {}
    for answer in answers:
        if answer == "population":
            levels = np.clip(np.rint(algorithm.opt.get("X")), 0, heights).astype(np.int64)
            values = quality.evaluate(levels)
        else:
            from sdceval.pbg.dominance import pareto_mask
            levels = lat.decode(quality.evaluated_ids[seen_before:])
            values = quality.evaluate(levels)
            best = pareto_mask(values, quality.goals)
            levels, values = levels[best], values[best]
        _, first = np.unique(values, axis=0, return_index=True)
        keep = np.sort(first)
        out[answer] = EARun(
            levels=levels[keep], values=values[keep], objectives=quality.objectives,
            goals=quality.goals, eps=tuple(1.0 for _ in quality.objectives),
            nodes_evaluated=int(quality.n_evaluated - start), seed=int(seed),
            qis=tuple(lat.names), n_pop=int(pop_size), n_iterations=generations,
            p_cross=float(p_cross), p_mut=float("nan"), lattice_size=int(lat.size),
            seconds=time.perf_counter() - t0)
    return out
