"""Node quality vectors of property-based generalizations (Dewri et al. 2010 §4, §7;
DEWRI.md §1.7, §1.13, A15–A17, A22).

The quality vector of a lattice node is ``I_P(T) = [I_P1(T), …, I_Pr(T)]``: one value
per objective of the lattice engine (`sdceval.lattice.objectives.OBJECTIVES`), computed
from the node's equivalence classes under the problem's suppression rule (D10 §6:
``dewri``, η = 1 % of the records), in its natural orientation with the objective's
``goal``.  The paper's properties are lattice objectives already, with the readings
of DEWRI.md (nothing is re-implemented here):

=========  =============  ====  ===============================================================
paper      objective      goal  reading
=========  =============  ====  ===============================================================
k          ``k``          max   smallest kept class = ``j + 1`` under Dewri's rule (§1.8, A17)
ℓ          ``l_distinct`` max   fewest distinct sensitive values of a kept class (A12, A17)
S_k        ``s_k``        max   ``Σ_E |E|²`` over kept classes = Σ over kept tuples of k_i (A17)
S_ℓ        ``s_l``        max   ``Σ_E Σ_s c_E(s)²`` over kept classes = Σ over kept tuples
                                of c_i (A13, A17)
GLM        ``glm``        min   un-normalized total: Σ over records and QIs of Iyengar's cell
                                loss, a suppressed record 1 per QI (A15)
CM         ``cm``         min   a count: kept records not of their class's majority label,
                                plus the suppressed (A16; ε = 1 is plain dominance)
=========  =============  ====  ===============================================================

Any other objective with a goal (``t``, ``nu_entropy``, …) works the same way.  The
problem's privacy models only decide which nodes `evaluate_all` marks ``feasible`` (and,
under the ``arx`` rule, which classes are suppressed); PBGs treat privacy as
objectives, so every node has a quality vector (D10 §7).

`NodeQuality` evaluates nodes on demand and remembers every node it was asked for:
``n_evaluated`` is the number of distinct nodes (A22).  Backed by an exhaustive table
(`NodeQuality.from_table`, the `evaluate_all` DataFrame) it only looks values up, so
repeated PBG-EA runs cost the EA's own work, while still counting the distinct nodes a
run asks for.  `minimal_pbgs` gives the minimal PBGs (D10 Def. 4: the strictly
non-dominated nodes, copies of a quality vector all kept) of an exhaustive table.
"""
from __future__ import annotations


import numpy as np
import pandas as pd

from sdceval.core.errors import SdcevalError
from sdceval.lattice.batch import ClassBatch
from sdceval.lattice.objectives import get_objective
from sdceval.lattice.search import LatticeProblem, evaluate_all
from sdceval.pbg.dominance import check_goals, pareto_mask

#: most nodes computed in one batch of class tables
_CHUNK = 256


def objective_names(objectives) -> list[str]:
    """Objective names from a sequence or a comma-separated string."""
    if isinstance(objectives, str):
        return [s.strip() for s in objectives.split(",") if s.strip()]
    return [str(s) for s in objectives]


def check_pbg_objectives(problem: LatticeProblem, objectives) -> tuple[list[str], tuple]:
    """The names (checked against the registry and the data set: unknown names get a
    suggestion) and their goals; `SdcevalError` for fewer than two, repeats, or an
    objective without a goal."""
    names = objective_names(objectives)
    if len(names) < 2:
        got = f" (got {', '.join(repr(n) for n in names)})" if names else ""
        raise SdcevalError(
            f"property-based generalizations need at least two objectives{got}; with one "
            "objective the optimal node is found exactly by `sdceval lattice search` "
            "(sdceval.lattice.search.optimal)")
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise SdcevalError(f"objective {twice[0]!r} is given twice; give each objective once")
    problem.check_objectives(names)
    goals = []
    for n in names:
        goal = get_objective(n).goal
        if goal is None:
            raise SdcevalError(f"lattice objective {n!r} is a count that is reported, not "
                               "optimized (it has no min/max goal); choose objectives with "
                               "a goal, e.g. k, l_distinct, s_k, s_l, glm, cm")
        goals.append(goal)
    return names, check_goals(goals)


class NodeQuality:
    """Quality vectors of lattice nodes, each node computed once (module docstring).

    Parameters
    ----------
    problem : LatticeProblem
        The data set's lattice, suppression rule (D10: ``rule="dewri"``,
        ``max_suppression=0.01``) and engine.
    objectives : sequence of str or str
        At least two lattice objective names (or one comma-separated string).

    Attributes
    ----------
    problem : LatticeProblem
    lattice : Lattice
    objectives : tuple of str
    goals : tuple of str
        ``"min"``/``"max"`` per objective (the registry's).
    """

    def __init__(self, problem: LatticeProblem, objectives):
        names, goals = check_pbg_objectives(problem, objectives)
        self.problem = problem
        self.lattice = problem.lattice
        self.lattice._need_ids()
        self.objectives = tuple(names)
        self.goals = goals
        self._index: dict[int, int] = {}   # node id -> row of _store
        self._store = np.zeros((64, len(names)))
        # a table-backed quality looks values up here (`from_table`)
        self._table_ids: np.ndarray | None = None
        self._table_values: np.ndarray | None = None

    @classmethod
    def from_table(cls, problem: LatticeProblem, objectives, table: pd.DataFrame
                   ) -> "NodeQuality":
        """A quality whose values come from ``table`` (`evaluate_all`'s DataFrame: one
        column per QI level and one per objective); `evaluate` is a lookup and
        ``n_evaluated`` still counts the distinct nodes asked for."""
        q = cls(problem, objectives)
        if not isinstance(table, pd.DataFrame):
            raise SdcevalError("from_table: table must be the DataFrame of evaluate_all")
        need = list(q.lattice.names) + list(q.objectives)
        missing = [c for c in need if c not in table.columns]
        if missing:
            raise SdcevalError(
                f"from_table: the table has no column {missing[0]!r}; build it with "
                f"evaluate_all(problem, {list(q.objectives)!r}) on the same problem")
        ids = q.lattice.encode(table[list(q.lattice.names)].to_numpy())
        vals = table[list(q.objectives)].to_numpy(dtype=np.float64)
        ids, first = np.unique(ids, return_index=True)
        q._table_ids, q._table_values = ids, vals[first]
        return q

    @property
    def n_evaluated(self) -> int:
        """Distinct nodes whose quality vector was computed or looked up (A22),
        cumulative over every `evaluate` call of this object."""
        return len(self._index)

    @property
    def evaluated_ids(self) -> np.ndarray:
        """Node ids asked for so far, in the order first asked (int64)."""
        return np.fromiter(self._index, dtype=np.int64, count=len(self._index))

    def __repr__(self) -> str:
        src = "table" if self._table_ids is not None else "engine"
        return (f"NodeQuality({', '.join(self.objectives)}; goals {', '.join(self.goals)}; "
                f"{self.n_evaluated} nodes evaluated, from the {src})")

    def evaluate(self, levels) -> np.ndarray:
        """Quality vectors of the nodes ``levels`` (``(m, d)`` or one ``(d,)``) as an
        ``(m, r)`` float64 array; only nodes never seen before are computed, in one
        batch."""
        lv = self.lattice.check(levels)
        if lv.ndim == 1:
            lv = lv[None, :]
        ids = self.lattice.encode(lv).tolist()
        rows = np.empty(len(ids), dtype=np.int64)
        new = []
        index = self._index
        for j, nid in enumerate(ids):
            r = index.get(nid)
            if r is None:
                r = index[nid] = len(index)
                new.append(j)
            rows[j] = r
        if new:
            vals = self._compute(lv[new], np.asarray([ids[j] for j in new], dtype=np.int64))
            need = len(index)
            if need > len(self._store):
                grown = np.zeros((max(need, 2 * len(self._store)), self._store.shape[1]))
                grown[:len(self._store)] = self._store
                self._store = grown
            self._store[rows[new]] = vals
        return self._store[rows]

    def _compute(self, levels: np.ndarray, ids: np.ndarray) -> np.ndarray:
        if self._table_ids is not None:
            pos = np.searchsorted(self._table_ids, ids)
            pos = np.minimum(pos, len(self._table_ids) - 1)
            miss = self._table_ids[pos] != ids
            if miss.any():
                # forget the nodes not computed, so the count stays right
                for nid in ids.tolist():
                    self._index.pop(nid, None)
                bad = tuple(int(x) for x in levels[int(np.flatnonzero(miss)[0])])
                raise SdcevalError(f"node quality: node {bad} is not in the table; "
                                   "evaluate the whole lattice with evaluate_all")
            return self._table_values[pos]
        out = np.empty((len(levels), len(self.objectives)))
        engine = self.problem.engine
        for lo in range(0, len(levels), _CHUNK):
            part = levels[lo:lo + _CHUNK]
            batch = ClassBatch.of_tables([engine.classes(v) for v in part])
            cols = self.problem.evaluate_batch(batch, self.objectives)
            out[lo:lo + len(part)] = np.column_stack(
                [np.asarray(cols[n], dtype=np.float64) for n in self.objectives])
        return out

    def exhaustive(self, cache: bool = True, progress: bool | None = None) -> pd.DataFrame:
        """Every node's objectives (`evaluate_all`; its on-disk cache).  Not counted in
        ``n_evaluated``."""
        return evaluate_all(self.problem, list(self.objectives), cache=cache,
                            progress=progress)

    def minimal(self, table: pd.DataFrame | None = None) -> pd.DataFrame:
        """The minimal PBGs of ``table`` (default: `exhaustive`)."""
        return minimal_pbgs(self.exhaustive() if table is None else table,
                            self.objectives, self.goals)


def minimal_pbgs(table: pd.DataFrame, objectives, goals=None) -> pd.DataFrame:
    """The rows of ``table`` (an `evaluate_all` DataFrame, or any frame with the
    objective columns) that no row strictly dominates in ``objectives`` (D10 Def. 4,
    DEWRI §1.7: Pareto-non-dominated in quality space, rows with equal vectors all
    kept), in table order with the table's index.  ``goals`` default to the lattice
    objectives' goals."""
    names = objective_names(objectives)
    if not isinstance(table, pd.DataFrame):
        raise SdcevalError("minimal_pbgs: table must be a DataFrame (from evaluate_all)")
    missing = [c for c in names if c not in table.columns]
    if missing:
        raise SdcevalError(f"minimal_pbgs: the table has no column {missing[0]!r}; "
                           f"columns: {', '.join(map(str, table.columns))}")
    if goals is None:
        goals = [get_objective(n).goal for n in names]
    goals = check_goals(goals, len(names))
    mask = pareto_mask(table[names].to_numpy(dtype=np.float64), goals)
    return table[mask]
