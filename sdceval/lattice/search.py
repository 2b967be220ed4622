"""Exhaustive evaluation and exact optimal search over the generalization lattice.

`LatticeProblem` ties a data set's `NodeEngine` to privacy models and a suppression
rule.  On it:

`evaluate_all` — every node (or given nodes), any objectives, as a DataFrame: one row
    per node with its levels, ``height``, ``suppressed``, ``feasible`` and the
    objectives; cached on disk (``SDCEVAL_CACHE_DIR``, default
    ``~/.cache/sdceval/lattice``) keyed by a hash of the data's distinct QI rows and
    their sensitive/label counts, the hierarchies, the objectives, the rule, its limit
    and the models.

`optimal` — the node minimizing an objective (maximizing a ``max`` one) among the
    *feasible* nodes (every kept class satisfies every model, the suppressed records
    within the limit).  Exact; it prunes only with proven properties:

    1. **Feasibility by monotonicity** (Flash, Kohlmayer et al. 2012; OLA, El Emam et
       al. 2009), when the rule says feasibility is monotone for these models
       (`SuppressionRule.feasibility_monotone`): nodes are visited bottom-up by height;
       from each untagged node a path goes up through untagged successors, and a binary
       search on it finds its lowest feasible node.  A feasible node tags every node
       above it feasible, an infeasible one every node below it infeasible (the tags
       are boxes of the lattice, set by slicing a d-dimensional array), so most nodes
       are never evaluated.
    2. **Objective by monotonicity**, when the objective is monotone under the rule and
       models (`Objective.monotone`): a node above a feasible node is never better, so
       only feasible nodes with no feasible node below need a value.
    3. **Lower bounds**: an objective with a monotone lower bound computable from the
       levels (``glm``) is evaluated on candidates in increasing bound order, stopping
       once the bound exceeds the best value found.

    Values within a relative ``1e-9`` of the best are ties; all tied nodes are reported
    (those above an optimal node that pruning skipped are found by walking up from it:
    with a monotone objective and monotone feasibility every node between two ties is a
    tie) and the pick is the lowest (height, then levels in lexicographic order).  The
    exhaustive minimum with the same tie rule is the same node (tests/test_lattice_search).

Modules
-------
The search's parts, one concept per module:

* `sdceval.lattice.problem`: `LatticeProblem`, the models and rule on a `NodeEngine`,
  and one node's or one batch's evaluation;
* `sdceval.lattice.exhaustive`: `evaluate_all`'s sweep of the nodes in batches (on
  processes, `sdceval.lattice.parallel`) and its on-disk cache (`cache_dir`,
  `cache_key`, `CACHE_ENV`, `CACHE_VERSION`);
* `sdceval.lattice.tags`: `_Tags`, the feasible / infeasible / dominated boxes, and
  `_nd_sum`, a per-level sum for every node;
* this module: `evaluate_all` and the size check of both searches (`check_exhaustive`,
  `MAX_EXHAUSTIVE_NODES`), `optimal` (`SearchResult`, `_Search`, the Flash paths, the
  bound-order and candidate strategies, the tie walk, the message when nothing is
  feasible).

`LatticeProblem`, `cache_dir`, `cache_key`, `CACHE_ENV`, `CACHE_VERSION`, `_Tags` and
`_nd_sum` are re-exported here.

References
----------
Kohlmayer, Prasser, Eckert, Kemper, Kuhn (2012). Flash: efficient, stable and optimal
k-anonymity. SocialCom/PASSAT.
El Emam et al. (2009). A globally optimal k-anonymity method for the de-identification
of health data. JAMIA 16(5).
Dewri, Ray, Ray, Whitley (2010). On the identification of property based
generalizations in microdata anonymization. DBSec, §6–7.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np
import pandas as pd

# besides what this module uses, re-exported for the code and tests that import them from
# here: `LatticeProblem`, `cache_dir`, `cache_key`, `CACHE_ENV`, `CACHE_VERSION`,
# `_nd_sum`.  `MAX_EXHAUSTIVE_NODES`, `MAX_SEARCH_NODES` and `progress_bar` are read here
# (`check_exhaustive`, `optimal`, `evaluate_all` and `_Search`), where tests patch them
from sdceval.core.errors import SdcevalError
from sdceval.core.fileio import atomic_write
from sdceval.core.progress import progress_bar
from sdceval.lattice.batch import ClassBatch
from sdceval.lattice.exhaustive import (  # noqa: F401
    CACHE_ENV, CACHE_VERSION, _sweep, cache_dir, cache_key)
from sdceval.lattice.objectives import evaluate, get_objective, objective_names
from sdceval.lattice.problem import LatticeProblem
from sdceval.lattice.suppression import needs_sensitive
from sdceval.lattice.tags import _nd_sum, _Tags

#: relative tolerance under which two objective values are a tie
TIE_RTOL = 1e-9
#: largest lattice `optimal` tags (three boolean arrays of this many bytes)
MAX_SEARCH_NODES = 50_000_000
#: largest lattice searched in bound order (two arrays of 8 bytes per node)
BOUND_FIRST_NODES = 5_000_000
#: most nodes evaluated one by one (`evaluate_all`, or a search that cannot prune by
#: feasibility); Adult's 17 920-node lattice takes seconds, see docs/lattice.md
MAX_EXHAUSTIVE_NODES = 2_000_000
#: rough cost of one node evaluated alone, for the message when a lattice is too large
_SECONDS_PER_NODE = (2e-4, 2e-3)


# -- exhaustive ---------------------------------------------------------------------------
def check_exhaustive(lat, count: int, what: str) -> None:
    """A `SdcevalError` with the size, a time estimate and the ways out when ``count``
    nodes are more than `MAX_EXHAUSTIVE_NODES`."""
    if count <= MAX_EXHAUSTIVE_NODES:
        return
    lo, hi = (count * t / 3600 for t in _SECONDS_PER_NODE)
    raise SdcevalError(
        f"lattice: {count:,} nodes would have to be {what} one by one (lattice of "
        f"{lat.size:,} nodes; levels per quasi-identifier: {lat._per_qi()}), about "
        f"{lo:.1f}–{hi:.1f} hours, more than the {MAX_EXHAUSTIVE_NODES:,} allowed. Use "
        "coarser hierarchies (fewer levels: give a hierarchy file for each numeric QI), "
        "fewer quasi-identifiers, the optimal search with monotone privacy models "
        "(k-anonymity, distinct ℓ-diversity) which evaluates few nodes, or a method "
        "without a lattice (mondrian)")


def evaluate_all(problem: LatticeProblem, objectives: Sequence[str] | None = None,
                 nodes=None, cache: bool = True, progress: bool | None = None
                 ) -> pd.DataFrame:
    """Every node's (or ``nodes``') objectives, one row per node (module docstring).

    Parameters
    ----------
    objectives : sequence of str, optional
        Names (`sdceval.lattice.objectives`); default every one the data set supports.
    nodes : (m, d) array, optional
        Default: the whole lattice, in node-id order (lexicographic levels).
    cache : bool
        Read and write the on-disk cache.

    Returns
    -------
    DataFrame
        One column per QI (its level), ``height``, ``suppressed``, ``feasible``, the
        objectives; rows in the order of ``nodes`` (node-id order by default).
    """
    lat = problem.lattice
    names = problem.check_objectives(objectives if objectives is not None
                                     else problem.objectives_available())
    given = None if nodes is None else lat.check(np.atleast_2d(nodes))
    check_exhaustive(lat, lat.size if given is None else len(given), "evaluated")
    path = None
    if cache:
        path = cache_dir() / f"{cache_key(problem, names, given)}.npz"
        if path.exists():
            try:
                with np.load(path, allow_pickle=False) as z:
                    return pd.DataFrame({c: z[c] for c in z["__columns__"]})
            except (OSError, ValueError, KeyError):
                pass  # unreadable cache entry: recompute and overwrite it
    all_nodes = lat.nodes() if given is None else given
    bar = progress_bar("lattice: evaluating nodes", total=len(all_nodes), enabled=progress)
    try:
        done, cols = _sweep(problem, names, all_nodes, bar.update)
    finally:
        bar.close()
    levels = np.concatenate(done) if done else np.zeros((0, lat.n_qis), dtype=np.int64)
    # batches may come in any order: back to the order asked for
    ids = lat.encode(levels)
    want = lat.encode(all_nodes)
    pos = np.argsort(ids, kind="stable")
    order = pos[np.searchsorted(ids[pos], want)]
    frame = {q: levels[order, i] for i, q in enumerate(lat.names)}
    frame["height"] = levels[order].sum(axis=1)
    for k in ["suppressed", "feasible", *names]:
        v = np.concatenate(cols[k]) if k in cols else np.zeros(0)
        frame[k] = v[order]
    table = pd.DataFrame(frame)
    if path is not None:
        def write(p):
            with open(p, "wb") as fh:
                np.savez(fh, __columns__=np.array(list(table.columns)),
                         **{c: table[c].to_numpy() for c in table.columns})
        try:
            atomic_write(path, write)
        except OSError:
            pass  # a read-only home must not break the evaluation
    return table


# -- optimal search -----------------------------------------------------------------------
@dataclass
class SearchResult:
    """The optimum of `optimal`.

    Attributes
    ----------
    levels : tuple of int
        The picked optimal node (lowest height, then lexicographic, among ties).
    value : float
        Its objective value.
    ties : list of tuple
        Every optimal node found (the pick first, then by height and levels).
    objective : str
    checked : int
        Distinct nodes whose classes were computed.
    feasible_found : int
        Feasible nodes among them.
    lattice_size : int
    seconds : float
    strategy : dict
        What the search could prune with (feasibility/objective monotone, bound).
    evaluation : dict
        The picked node's ``suppressed``, ``k`` and objective.
    """

    levels: tuple
    value: float
    ties: list
    objective: str
    checked: int
    feasible_found: int
    lattice_size: int
    seconds: float
    strategy: dict = field(default_factory=dict)
    evaluation: dict = field(default_factory=dict)

    def as_dict(self) -> dict:
        return {"levels": list(self.levels), "value": self.value,
                "ties": [list(t) for t in self.ties], "objective": self.objective,
                "checked": self.checked, "feasible_found": self.feasible_found,
                "lattice_size": self.lattice_size, "seconds": self.seconds,
                "strategy": self.strategy, "evaluation": self.evaluation}


class _Search:
    def __init__(self, problem: LatticeProblem, objective: str, progress):
        self.p = problem
        self.lat = problem.lattice
        self.obj = get_objective(objective)
        if self.obj.goal is None:
            raise SdcevalError(f"lattice: {objective!r} is a count, not an objective to "
                               f"optimize; choose one of "
                               f"{', '.join(n for n in objective_names() if get_objective(n).goal)}")
        problem.check_objectives([objective])
        self.name = objective
        self.values: dict[int, float] = {}     # node id -> minimized value (feasible)
        self.feasible: dict[int, bool] = {}    # node id -> evaluated feasibility
        self.bar = progress_bar("lattice: optimal search", total=self.lat.size,
                                enabled=progress)
        self.best = np.inf  # best (minimized) value of a feasible node so far
        self.tol = 0.0      # the tie tolerance at that value
        self._step = None   # per-QI, per-level bound terms guiding the Flash paths
        self._strides = [int(x) for x in self.lat.strides]
        self._heights = [int(h) for h in self.lat.heights]
        self._rel = [1.0 / max(h, 1) for h in self._heights]
        self._radices = [int(x) for x in self.lat.radices]
        # the objective's value from the levels, when its bound is exact
        self._terms = (self.obj.bound(problem.ctx).tolist() if self.obj.bound_exact
                       else None)

    def check(self, node_id: int) -> bool:
        """Evaluate a node (classes, rule, objective if feasible); memoized."""
        hit = self.feasible.get(node_id)
        if hit is not None:
            return hit
        levels = tuple((node_id // st) % r for st, r in zip(self._strides, self._radices))
        table = self.p.engine.classes_of(levels)
        ok = self.p.feasible(table)
        self.feasible[node_id] = ok
        if ok:
            if self.obj.bound_exact:  # a sum of the bound's terms: no outcome needed
                v = 0.0
                for q, lv in enumerate(levels):
                    v += self._terms[q][lv]
            else:
                batch = ClassBatch.of_tables([table])
                v = float(evaluate(batch, self.p.outcome(batch), [self.name],
                                   self.p.ctx)[self.name][0])
            self.values[node_id] = float(self.obj.minimized(np.float64(v)))
            if self.values[node_id] < self.best:
                self.best = self.values[node_id]
                self.tol = _tol(self.best)
        self.bar.update()
        return ok

    def evaluation(self, node_id: int) -> dict:
        """The suppressed records, the smallest kept class and the objective of an
        evaluated feasible node (the pick's, reported with the result)."""
        levels = tuple((node_id // st) % r for st, r in zip(self._strides, self._radices))
        batch = ClassBatch.of_tables([self.p.engine.classes_of(levels)])
        out = self.p.outcome(batch)
        return {"suppressed": int(out.suppressed[0]), "k": int(out.k[0]),
                self.name: float(self.obj.minimized(np.float64(self.values[node_id])))}


def optimal(problem: LatticeProblem, objective: str = "glm",
            progress: bool | None = None, strategy: str = "auto") -> SearchResult:
    """The feasible node with the best ``objective`` (module docstring).

    ``strategy`` (for benchmarks and tests; every strategy is exact): ``"auto"``
    searches in bound order when the objective has a bound and is not monotone (and
    the lattice has at most `BOUND_FIRST_NODES` nodes), else Flash first; ``"flash"``
    and ``"bound"`` force one.

    Raises `SdcevalError` when no node is feasible, with what the most general node
    achieves.
    """
    t0 = time.perf_counter()
    lat = problem.lattice
    lat._need_ids()
    if lat.size > MAX_SEARCH_NODES:
        raise SdcevalError(
            f"lattice: {lat.size:,} nodes is more than the {MAX_SEARCH_NODES:,} the optimal "
            "search can track; use coarser hierarchies or fewer quasi-identifiers")
    s = _Search(problem, objective, progress)
    mono_f = bool(s.obj.monotone(problem.rule, problem.models, problem.n))
    mono_F = bool(problem.feasibility_monotone)
    bound = s.obj.bound
    tags = _Tags(lat.radices)
    try:
        if strategy not in ("auto", "flash", "bound"):
            raise SdcevalError(f"lattice: unknown search strategy {strategy!r}; "
                               "auto, flash or bound")
        use_bound = (bound is not None and not mono_f and lat.size <= BOUND_FIRST_NODES
                     if strategy == "auto" else strategy == "bound")
        if use_bound and bound is None:
            raise SdcevalError(f"lattice: objective {objective!r} has no lower bound; "
                               "use strategy 'flash'")
        if use_bound:
            _bound_first(s, tags, mono_F, bound)
        else:
            if mono_F:
                _flash(s, tags)
                if not tags.feas_flat.any():
                    raise _infeasible(problem, s)
            _by_candidates(s, tags, mono_F, mono_f, bound)
        if not any(s.feasible.values()):
            raise _infeasible(problem, s)
        ties = [i for i, v in s.values.items() if v <= s.best + s.tol]
        if mono_f:
            ties = _walk_ties(s, ties)
    finally:
        s.bar.close()
    tie_levels = lat.decode(np.array(ties, dtype=np.int64))
    order = np.lexsort((np.array(ties), tie_levels.sum(axis=1)))
    ties_sorted = [tuple(int(x) for x in tie_levels[i]) for i in order]
    pick = int(np.array(ties)[order[0]])
    value = float(s.obj.minimized(np.float64(s.values[pick])))
    return SearchResult(
        levels=ties_sorted[0], value=value, ties=ties_sorted, objective=objective,
        checked=len(s.feasible), feasible_found=sum(s.feasible.values()),
        lattice_size=lat.size, seconds=time.perf_counter() - t0,
        strategy={"feasibility_monotone": mono_F, "objective_monotone": mono_f,
                  "bound": bound is not None, "rule": problem.rule.name,
                  "limit_records": problem.limit_records},
        evaluation=s.evaluation(pick))


def _bound_first(s: _Search, tags: _Tags, mono_F: bool, bound) -> None:
    """Every node in increasing order of the objective's lower bound (then height,
    id), until the bound exceeds the best value found; infeasibility tags skip nodes
    without evaluating them when feasibility is monotone (module docstring, 3)."""
    lat = s.lat
    b = _nd_sum(lat, bound(s.p.ctx))
    heights = _nd_sum(lat, [np.arange(r) for r in lat.radices.tolist()], np.int64)
    order = np.lexsort((heights, b))
    for nid in order:
        nid = int(nid)
        if b[nid] > s.best + s.tol:
            break
        if tags.infeas_flat[nid]:
            continue
        ok = s.check(nid)
        if mono_F:
            levels = lat.decode(nid)
            if ok:
                tags.up(tags.feas, levels)
            else:
                tags.down(tags.infeas, levels)


def _by_candidates(s: _Search, tags: _Tags, mono_F: bool, mono_f: bool, bound) -> None:
    """The objective on the candidates of `_candidates`, in increasing bound order
    when there is a bound, else by height; with a monotone objective a node above an
    evaluated feasible one is skipped."""
    lat = s.lat
    cand = _candidates(s, tags, mono_F, mono_f, bound)
    cand_levels = lat.decode(cand)
    b = None
    if bound is not None:
        terms = bound(s.p.ctx)
        b = terms[np.arange(lat.n_qis), cand_levels].sum(axis=1)
        order = np.lexsort((cand, cand_levels.sum(axis=1), b))
    else:
        order = np.lexsort((cand, cand_levels.sum(axis=1)))
    for j in order:
        nid = int(cand[j])
        if b is not None and b[j] > s.best + s.tol:
            break  # every later candidate's bound is at least this one's
        if mono_f and tags.dom_flat[nid]:
            continue
        if not s.check(nid):
            continue
        if mono_f:
            tags.up(tags.dom, cand_levels[j])
            tags.dom_flat[nid] = False


def _candidates(s: _Search, tags: _Tags, mono_F: bool, mono_f: bool, bound) -> np.ndarray:
    """Node ids that may be optimal, before the objective is evaluated (module
    docstring, 2 and 3)."""
    lat = s.lat
    if mono_F and mono_f:
        # the optimum is a feasible node with no feasible node below: one Flash checked
        return np.array(sorted(i for i, ok in s.feasible.items() if ok), dtype=np.int64)
    if mono_F:
        mask = tags.feas
        if bound is not None and s.values:
            # the best value so far caps the bound: Σ_q terms[q, level_q] over the
            # lattice as a d-dimensional sum of broadcast vectors
            mask = mask.reshape(-1) & (_nd_sum(lat, bound(s.p.ctx)) <= s.best + s.tol)
        cand = np.flatnonzero(mask)
        if bound is None:
            check_exhaustive(lat, len(cand), "evaluated (feasible nodes; the objective "
                             "is not monotone under this rule)")
        return cand
    check_exhaustive(lat, lat.size, "checked (the privacy models are not monotone under "
                     "this suppression rule)")
    return np.arange(lat.size, dtype=np.int64)


def _tol(best: float) -> float:
    return TIE_RTOL * max(1.0, abs(best)) if np.isfinite(best) else 0.0


def _flash(s: _Search, tags: _Tags, chunk: int = 1 << 16) -> None:
    """Tag every node that may be optimal feasible or infeasible, evaluating few
    (module docstring, 1).

    With a lower bound of the objective (and at most `BOUND_FIRST_NODES` nodes), start
    nodes are taken in increasing bound order until the bound exceeds the best value
    found: a good feasible node is met early and every node above a start whose bound
    is too high is skipped.  Otherwise they are taken in node-id order, a linear
    extension of the lattice order (lowering one level lowers the id), found by
    scanning the tags a chunk at a time, so nothing of the size of the lattice is
    enumerated, and the down-set boxes are only written from the start node on."""
    lat = s.lat
    d = lat.n_qis
    strides = [int(x) for x in lat.strides]
    radices = [int(r) for r in lat.radices]
    feas, infeas = tags.feas_flat, tags.infeas_flat
    # a node whose lower bound exceeds the best value found cannot be optimal, nor can
    # any node above it (the bound never decreases upward): tagged like a feasible node
    terms = None if s.obj.bound is None else np.nan_to_num(s.obj.bound(s.p.ctx))
    if terms is not None and lat.size <= BOUND_FIRST_NODES:
        b = _nd_sum(lat, terms)
        s._step = terms.tolist()
        order = np.argsort(b, kind="stable")
        for lo in range(0, len(order), 256):
            # the untagged nodes of the next slice, in bound order (tags and the best
            # value change as paths are searched, so each is looked at again below)
            part = order[lo:lo + 256]
            if b[part[0]] > s.best + s.tol:
                return
            for start in part[~(feas[part] | infeas[part])].tolist():
                if b[start] > s.best + s.tol:
                    return
                if not (feas[start] or infeas[start]):
                    cur = [(start // strides[q]) % radices[q] for q in range(d)]
                    _path(s, tags, start, cur, None)
        return
    terms = None if terms is None else terms.tolist()
    s._step = terms
    pos = 0
    while pos < lat.size:
        stop = min(pos + chunk, lat.size)
        todo = np.flatnonzero(~(feas[pos:stop] | infeas[pos:stop]))
        if not len(todo):
            pos = stop
            continue
        start = pos + int(todo[0])
        cur = [(start // strides[q]) % radices[q] for q in range(d)]
        if terms is not None and (sum(t[v] for t, v in zip(terms, cur))
                                  > s.best + s.tol):
            tags.up(tags.feas, cur)
        else:
            # every node below ``start`` in id order is tagged already
            _path(s, tags, start, cur, tuple(cur))
        pos = start  # the start node is tagged now; scan on from it


def _path(s: _Search, tags: _Tags, start: int, cur: list, scanned_to) -> None:
    """One Flash step: a path up from ``start`` through untagged successors, a binary
    search for its lowest feasible node, then one box per side (the boxes are the
    costly part on large lattices: a box is written element by element).
    ``scanned_to``: levels below which (in id order) every node is tagged, or None."""
    lat = s.lat
    feas, infeas = tags.feas_flat, tags.infeas_flat
    path, path_levels = [start], [tuple(cur)]
    while True:
        # untagged successors; go up the QI whose next level adds the least to the
        # objective's bound (so the path's lowest feasible node is a good one), else
        # the least generalized QI (relative to its height): paths cross evenly
        best, best_key = -1, None
        step = s._step
        for q in range(lat.n_qis):
            if cur[q] < s._heights[q]:
                nid = path[-1] + s._strides[q]
                if not (feas[nid] or infeas[nid]):
                    key = (cur[q] * s._rel[q] if step is None
                           else step[q][cur[q] + 1] - step[q][cur[q]])
                    if best_key is None or key < best_key:
                        best, best_key = q, key
        if best < 0:
            break
        cur[best] += 1
        path.append(path[-1] + s._strides[best])
        path_levels.append(tuple(cur))
    lo, hi = 0, len(path)
    while lo < hi:
        mid = (lo + hi) // 2
        nid = path[mid]
        if feas[nid]:
            ok = True
        elif infeas[nid]:
            ok = False
        else:
            ok = s.check(nid)
        if ok:
            hi = mid
        else:
            lo = mid + 1
    # the highest infeasible node covers the path below it, the lowest feasible one the
    # path above
    if lo > 0 and not infeas[path[lo - 1]]:
        if scanned_to is None:
            tags.down(tags.infeas, path_levels[lo - 1])
        else:
            tags.down_from(tags.infeas, path_levels[lo - 1], scanned_to)
    if lo < len(path) and not feas[path[lo]]:
        tags.up(tags.feas, path_levels[lo])


def _walk_ties(s: _Search, ties: list) -> list:
    """Tied nodes above the tied ones (module docstring): breadth-first up through
    feasible successors whose value is within the tie tolerance."""
    lat = s.lat
    seen = set(ties)
    queue = list(ties)
    while queue:
        nid = queue.pop()
        for succ in lat.successors(lat.decode(nid)):
            sid = int(lat.encode(succ))
            if sid in seen:
                continue
            seen.add(sid)
            if s.check(sid) and s.values[sid] <= s.best + s.tol:
                ties.append(sid)
                queue.append(sid)
    return ties


def _infeasible(problem: LatticeProblem, s: _Search) -> SdcevalError:
    """No feasible node: say what the most general node achieves."""
    lat = problem.lattice
    top = lat.top
    batch = ClassBatch.of_tables([problem.engine.classes(top)])
    out = problem.outcome(batch)
    parts = []
    for m in problem.models:
        counts = (batch.sensitive_matrix() if needs_sensitive(m)
                  else batch.sizes[:, None])
        v = np.asarray(m.value_nodes(counts, problem.ctx.table_dist,
                                     batch.levels[batch.node_of_class], batch.node_ids)
                       if getattr(m, "reads_cells", False)
                       else m.value(counts, problem.ctx.table_dist), dtype=np.float64)
        worst = v.min() if getattr(m, "larger_is_safer", True) else v.max()
        worst = float(worst)
        shown = str(int(worst)) if worst.is_integer() else f"{worst:.4g}"
        parts.append(f"{m.parameter} = {shown} (asked {m.describe()})")
    achieved = "; ".join(parts) if parts else "nothing to satisfy"
    return SdcevalError(
        f"lattice: no node satisfies the privacy models within the suppression limit "
        f"({problem.describe()}). The most general node ({', '.join(map(str, top))}) "
        f"has {batch.n_classes} class(es) and would need {int(out.suppressed[0])} "
        f"suppressed records; its worst class achieves {achieved}. Relax the model "
        "parameters, allow more suppression, or use coarser hierarchies")
