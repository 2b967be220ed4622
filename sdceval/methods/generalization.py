"""Full-domain generalization with bounded suppression (SPEC §3; Dewri et al. 2010 §6).

A *lattice node* is one hierarchy level per QI (schema order); every value of QI ``q``
is replaced by its ancestor at level ``levels[q]`` (full-domain recoding: the same level
for the whole column).  Records with equal generalized QIs form an equivalence class.

Suppression rule (Dewri et al. 2010, §6 "Node evaluation").  Let ``E_i`` be the records
in classes of size ``i`` and ``η`` the suppression limit.  Records of ``E_1, ..., E_j``
are suppressed, ``j`` the smallest integer with

    Σ_{i=1}^{j+1} |E_i| > η,

and the remaining table is ``(j+1)``-anonymous.  Equivalently, with ``R(s)`` the number
of records in classes of size ≤ ``s``: ``j + 1 = s*``, the smallest class size with
``R(s*) > η``; the classes smaller than ``s*`` are suppressed and the smallest kept class
has exactly ``s*`` records.  Suppressed records stay in the release as fully generalized
``*`` rows (Dewri et al. 2009 §3) and form one class.

Decisions where the paper is silent:

* ``η`` (``max_suppression``) is a fraction of the records if < 1, else a record count
  (so ``1`` means one record).  Dewri et al. use ``η`` = 1 % of 30162 = 301; since
  class totals are integers, ``R > 0.01·N`` and ``R > ⌊0.01·N⌋`` coincide.
* If no ``j`` exists (``η ≥ N``: the whole table could be suppressed), the largest
  class(es) are kept and every smaller class is suppressed; the rule never publishes a
  table of ``*`` rows only.
* ``levels`` defaults to all zeros (no recoding: only the suppression rule acts).
* ``suppression_rule="arx"`` applies ARX's rule instead: every class violating the
  privacy model is suppressed, allowed when they are at most ``⌊limit⌋`` records
  (`sdceval.lattice.suppression`).

Choosing the node (issue 7).  Given privacy models instead of ``levels`` (``models``, a
list as for ``mondrian``: ``("k=5",)``, ``("l=3,variant=distinct", "k=5")``, or the
shorthands ``k=5``, ``model="l", l=3``; `sdceval.privacy.model_list`), the method
publishes the *optimal* node: among the nodes whose kept classes all satisfy the model
within the suppression limit, the one with the lowest ``metric`` (default ``glm``,
Iyengar's loss with suppressed records losing 1 per QI; any optimizable objective of
`sdceval.lattice.objectives`, e.g. ``nu_entropy``, ARX's).  Ties (values within 1e-9
relative) go to the lowest node, then the lexicographically smallest levels.  The
search is exact (`sdceval.lattice.search.optimal`: Flash-style tagging with the models'
monotonicity, the metric's monotonicity or lower bound; equal to the exhaustive minimum
on every case tested); ``generalization(k=5)`` and ``generalization(levels=<the node
found>)`` with the same rule are the same release, and every kept class satisfies the
model.  Before issue 7 the method took the *lowest* k-anonymous node (ties by GLM) and
refused lattices above 50 000 nodes; the optimum by GLM is a different, better node,
and the search handles lattices of millions of nodes (9 numeric QIs with automatic
6-level hierarchies: 10 077 696 nodes; benchmarks/bench_lattice_search.py).  A long
search shows a progress bar (`sdceval.core.progress`).

Households (issue 29 item 4).  When the data set has a household role and
household-level keys, a suppressed record's household would be split (its members
published with ``*`` and with their keys): `rule_node` closes the suppression over
households (`sdceval.core.households.close_suppression`): the household of every
suppressed record is suppressed whole, and a class that the removed mates leave with
fewer records than the node's smallest kept class ``k``, or failing a model, is
suppressed in turn, to a fixed point (numpy bincounts per round).  ``Node.k`` is then
the smallest class left, never below the rule's.  The search counts the suppressed
records of a node from its class table, without households (counting them needs the
records: a few bincounts over them per node), so the closure is applied to the node
chosen.  When it takes the suppression past ``max_suppression``, the method applies the
rule (and reruns the search, with a model) under the largest smaller limit, found by
bisection, whose closed suppression fits; with none (a model no node satisfies without
suppression) it raises an error.  The release never exceeds the user's limit; its
``info["household_closure"]`` gives the records the closure added and the rule's limit
used, and ``info["search"]["value"]`` stays the search's value (without the closure).

Building blocks: `rule_node` (a node under either rule, its classes from the lattice
engine, `sdceval.lattice.engine`), `evaluate_node` (the same under Dewri's rule),
`suppression_threshold` (Dewri's ``s*`` of one node's class sizes), `node_cells`,
`node_release` (the published table), `search_node` (the optimal node).  GLM of a node without building a
release: `sdceval.measures.information_loss.glm_per_record(dataset, node.cells,
node.suppressed)`.

References
----------
Dewri, Ray, Ray, Whitley (2010). On the identification of property based
generalizations in microdata anonymization. DBSec, §6.
Kohlmayer et al. (2012). Flash: efficient, stable and optimal k-anonymity.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Sequence

import numpy as np

if TYPE_CHECKING:
    import pandas as pd

from sdceval.core.errors import SdcevalError, suggest
from sdceval.core.households import close_suppression
from sdceval.core.registry import Param, register_method
from sdceval.core.release import Release
from sdceval import privacy
from sdceval.lattice.suppression import (DEFAULT_MAX_SUPPRESSION, DEFAULT_RULE,
                                         MAX_SUPPRESSION, SUPPRESSION_RULE, limit_records)
from sdceval.lattice.suppression import dewri_threshold as suppression_threshold

# -- lattice -------------------------------------------------------------------------
def qi_heights(dataset) -> dict[str, int]:
    """Height of each QI's hierarchy, in schema order (a node's levels run 0..height)."""
    qis = dataset.schema.qis
    if not qis:
        raise SdcevalError(
            f"generalization needs quasi-identifiers, but data set {dataset.name!r} has "
            "none; give some columns role 'qi' (e.g. --qi age,sex)")
    return {q: dataset.hierarchy(q).height for q in qis}


def lattice_size(dataset) -> int:
    """Number of lattice nodes: Π (height_q + 1)."""
    return int(np.prod([h + 1 for h in qi_heights(dataset).values()], dtype=object))


def per_qi_integers(qis, raw, *, who: str, param: str, unit: str, example: str,
                    fill: int) -> list[int] | None:
    """One integer per QI (``qis``, schema order) from ``"age=2,education=1"`` (the QIs
    not named get ``fill``), ``"1,2,0"`` or a sequence (one per QI), or a mapping; None
    when nothing is given (None, ``""``).  Errors name ``who``, the parameter ``param``,
    the QI and the fix (``unit``: what one value is, e.g. "level")."""
    if raw is None:
        return None
    if isinstance(raw, dict):
        raw = ",".join(f"{k}={v}" for k, v in raw.items())
    elif not isinstance(raw, str):
        raw = ",".join(map(str, raw))
    # tolerate str() of a Python list/dict, which is what reaches us from Param.parse
    text = re.sub(r"[\[\](){}'\"\s]", "", raw).replace(":", "=")
    items = [t for t in text.split(",") if t != ""]
    if not items:
        return None
    named = ["=" in t for t in items]
    if all(named):
        out = [fill] * len(qis)
        seen = set()
        for t in items:
            name, val = t.split("=", 1)
            if name not in qis:
                raise SdcevalError(
                    f"{who}: {param} names {name!r}, which is not a quasi-identifier."
                    f"{suggest(name, qis)} QIs: {', '.join(qis)}")
            if name in seen:
                raise SdcevalError(f"{who}: {param} gives QI {name!r} twice")
            seen.add(name)
            out[qis.index(name)] = _qi_int(val, name, who, unit)
        return out
    if not any(named):
        if len(items) != len(qis):
            raise SdcevalError(
                f"{who}: {param} has {len(items)} value(s) but the data set has "
                f"{len(qis)} quasi-identifiers ({', '.join(qis)}); give one {unit} per QI "
                f"in this order, or name them (e.g. {param}='{example}')")
        return [_qi_int(v, q, who, unit) for v, q in zip(items, qis)]
    raise SdcevalError(f"{who}: {param} {raw!r} mixes named (qi={unit}) and positional "
                       "entries; use one form")


def _qi_int(text: str, qi: str, who: str, unit: str) -> int:
    try:
        f = float(text)
        if not f.is_integer():
            raise ValueError
        return int(f)
    except ValueError:
        raise SdcevalError(f"{who}: {unit} {text!r} for QI {qi!r} is not an "
                           "integer") from None


def parse_levels(dataset, levels) -> tuple[int, ...]:
    """A lattice node from ``"1,2,0,1,0,1"`` (one level per QI in schema order),
    ``"age=2,education=1"`` (unnamed QIs at level 0), a sequence of ints or a mapping.
    ``None`` or ``""`` is the bottom node (all zeros)."""
    heights = qi_heights(dataset)
    qis = list(heights)
    out = per_qi_integers(qis, levels, who="generalization", param="levels", unit="level",
                          example="age=2,education=1", fill=0)
    if out is None:
        return (0,) * len(qis)
    for q, lv in zip(qis, out):
        if not 0 <= lv <= heights[q]:
            raise SdcevalError(
                f"generalization: level {lv} for QI {q!r} is outside 0..{heights[q]} "
                f"(its hierarchy has {heights[q]} level(s) above the leaves)")
    return tuple(out)


# -- one node --------------------------------------------------------------------------
def node_cells(dataset, levels: Sequence[int]) -> dict:
    """Generalized cells ``{qi: (lo, hi)}`` (leaf-code ranges) of every record."""
    return {q: dataset.hierarchy(q).generalize(dataset.codes(q), lv)
            for q, lv in zip(dataset.schema.qis, levels)}


@dataclass
class Node:
    """A lattice node applied to a data set, after suppression.

    Attributes
    ----------
    levels : tuple of int
    classes : ndarray of int64
        ``0..C-1``; kept classes first (in the class table's order), then, if any record is
        suppressed, one last class holding every suppressed record.
    sizes : ndarray of int64
        Size of each class of ``classes``.
    suppressed : ndarray of bool
    cells : dict or None
        ``{qi: (lo, hi)}``; suppressed records get the whole leaf range.
    k : int
        Smallest kept class (``j + 1`` of the rule).
    eta : float
        Suppression limit in records (of the rule as applied).
    household_added : int
        Records suppressed beyond the rule's classes to close the suppression over
        households (`sdceval.core.households.close_suppression`; module notes).
    """

    levels: tuple
    classes: np.ndarray
    sizes: np.ndarray
    suppressed: np.ndarray
    cells: dict | None
    k: int
    eta: float
    household_added: int = 0

    @property
    def n_suppressed(self) -> int:
        return int(self.suppressed.sum())


def evaluate_node(dataset, levels: Sequence[int],
                  max_suppression: float = DEFAULT_MAX_SUPPRESSION,
                  cells: bool = True) -> Node:
    """Apply a lattice node and Dewri et al.'s suppression rule (module docstring):
    `rule_node` with ``rule="dewri"``.  ``levels`` must be valid (see `parse_levels`);
    ``cells=False`` skips the cells (the class structure alone is enough for
    k-anonymity and the discernibility metric)."""
    return rule_node(dataset, levels, DEFAULT_RULE, max_suppression, cells=cells)


def _published_frame(dataset, node: Node) -> pd.DataFrame:
    """QIs as the labels of their level's nodes (the root label for suppressed rows),
    in the original column order.
    A label lookup per level, not per class: full-domain cells are always nodes."""
    schema = dataset.schema
    levels = dict(zip(schema.qis, node.levels))
    out = {}
    for c in dataset.frame.columns:
        if c in levels:
            h = dataset.hierarchy(c)
            labels = np.append(h.labels[levels[c]], h.labels[-1][0]).astype(object)
            ids = h.node_of[levels[c]][dataset.codes(c)]
            out[c] = labels[np.where(node.suppressed, len(labels) - 1, ids)]
    # the sensitive and passthrough columns are added unchanged by `Release.generalized`
    import pandas as pd  # here, not at the top: `sdceval list methods` loads no pandas
    return pd.DataFrame(out)


def node_release(dataset, node: Node) -> Release:
    """The published release of an evaluated node (generalized-release contract)."""
    if node.cells is None:
        raise SdcevalError("node_release needs a node evaluated with cells=True")
    qis = dataset.schema.qis
    return Release.generalized(
        dataset, _published_frame(dataset, node), method="generalization",
        classes=node.classes, cells=node.cells, suppressed=node.suppressed,
        info={"levels": dict(zip(qis, node.levels)), "height": int(sum(node.levels)),
              "n_classes": int(len(node.sizes)), "suppressed": node.n_suppressed,
              "eta": node.eta, "k": node.k, "j": node.k - 1})


# -- a node under any rule, and the optimal node ----------------------------------------------
def rule_node(dataset, levels: Sequence[int], rule: str = DEFAULT_RULE,
              max_suppression: float = DEFAULT_MAX_SUPPRESSION, models: Sequence = (),
              engine=None, cells: bool = True) -> Node:
    """A lattice node under a suppression rule of `sdceval.lattice.suppression` (Dewri
    et al.'s, or ARX's: every class violating a model is suppressed), from the node
    engine's class table.  ``Node.k`` is the smallest kept class; ``Node.eta`` the
    limit in records; ``cells=False`` skips the cells."""
    from sdceval.lattice import NodeEngine
    from sdceval.lattice.batch import ClassBatch
    from sdceval.lattice.objectives import LatticeContext
    from sdceval.lattice.suppression import make_rule

    levels = tuple(int(v) for v in levels)
    engine = engine if engine is not None else NodeEngine(dataset)
    rule_obj = make_rule(rule, max_suppression)
    table = engine.classes(levels)
    ctx = LatticeContext(engine, dataset)
    out = rule_obj.apply(ClassBatch.of_tables([table]), list(models), ctx.table_dist,
                         dataset.n)
    raw = engine.record_classes(table)
    keep = out.kept
    supp = ~keep[raw]
    k = int(out.k[0])
    added = 0
    if supp.any() and dataset.households is not None and dataset.schema.household_keys:
        closed = close_suppression(raw, supp, dataset.households,
                                   _class_requirement(dataset, raw, table, k, models,
                                                      ctx.table_dist))
        added = int(closed.sum() - supp.sum())
        if added:
            supp = closed
            left = np.bincount(raw[~supp], minlength=len(table.sizes))
            keep = left > 0
            k = int(left[keep].min()) if keep.any() else dataset.n
    relabel = np.cumsum(keep) - 1
    n_kept = int(keep.sum())
    relabel[~keep] = n_kept
    sizes = np.bincount(raw[~supp], minlength=len(table.sizes))
    out_sizes = sizes[keep]
    if supp.any():
        out_sizes = np.r_[out_sizes, int(supp.sum())]
    cell_map = None
    if cells:
        cell_map = {}
        for q, (lo, hi) in node_cells(dataset, levels).items():
            if supp.any():  # lo, hi are fresh arrays (fancy indexing)
                lo[supp], hi[supp] = 0, dataset.hierarchy(q).n_leaves - 1
            cell_map[q] = (lo, hi)
    return Node(levels, relabel[raw], out_sizes, supp, cell_map, k,
                float(rule_obj.records(dataset.n)), added)


def _class_requirement(dataset, raw, table, k: int, models, table_dist):
    """``class_ok(kept)`` of `close_suppression` for a node whose rule kept classes of
    at least ``k`` records satisfying ``models``: per class, the records of ``kept`` in
    it still number ``k`` or more and still satisfy every model (the class's sensitive
    counts recounted over those records)."""
    from sdceval.lattice.batch import ClassBatch
    from sdceval.lattice.suppression import class_satisfied

    n_classes = len(table.sizes)
    sens = dataset.schema.sensitive
    s_codes = (np.asarray(dataset.codes(sens), dtype=np.int64) if sens is not None
               else None)
    n_s = dataset.hierarchy(sens).n_leaves if sens is not None else 0

    def ok(kept):
        sizes = np.bincount(raw[kept], minlength=n_classes)
        good = sizes >= k
        if not models:
            return good
        pairs = {}
        if s_codes is not None:
            counts = np.bincount(raw[kept] * n_s + s_codes[kept],
                                 minlength=n_classes * n_s)
            flat = np.flatnonzero(counts)
            pairs = {"pair_class": flat // n_s, "pair_value": flat % n_s,
                     "pair_count": counts[flat], "n_sensitive": n_s}
        batch = ClassBatch(np.zeros((1, 0), dtype=np.int64),
                           np.array([0, n_classes], dtype=np.int64), sizes,
                           np.zeros((0, n_classes), dtype=np.int64), **pairs)
        # an emptied class is no class: the models are asked about the others only
        return good & (class_satisfied(batch, models, table_dist) | (sizes == 0))
    return ok


def search_node(dataset, models: Sequence, rule: str = DEFAULT_RULE,
                max_suppression: float = DEFAULT_MAX_SUPPRESSION, metric: str = "glm",
                progress: bool | None = None, engine=None):
    """The optimal node (`sdceval.lattice.search.optimal`): the feasible node with the
    best ``metric`` under ``models`` and the suppression rule.  Returns
    ``(levels, SearchResult)``.  ``engine``: a `NodeEngine` of ``dataset`` to reuse."""
    from sdceval.lattice.search import LatticeProblem, optimal

    problem = LatticeProblem(dataset, models, rule=rule, max_suppression=max_suppression,
                             engine=engine)
    result = optimal(problem, metric, progress=progress)
    return result.levels, result


def _metric_choices() -> tuple[str, ...]:
    from sdceval.lattice.objectives import OBJECTIVES
    return tuple(n for n, o in OBJECTIVES.items() if o.goal is not None)


#: the largest lattice `generalization` is a default candidate of a comparison on: a
#: comparison searches the optimal node at every evaluation of its bisection, and on
#: 9 keys (3 QIs and 6 numeric attributes as intervals: 3 359 232 nodes) one search
#: took more than 5 minutes on 2 000 records (issue 28's benchmark)
DEFAULT_LATTICE_LIMIT = 200_000


def _lattice_cost(dataset) -> str:
    """`MethodSpec.cost_check` of ``generalization``: its lattice above
    `DEFAULT_LATTICE_LIMIT` nodes."""
    if not dataset.schema.qis:
        return ""
    size = lattice_size(dataset)
    if size <= DEFAULT_LATTICE_LIMIT:
        return ""
    return (f"its lattice over the {len(dataset.schema.qis)} keys has {size:,} nodes "
            f"(more than {DEFAULT_LATTICE_LIMIT:,}), searched at every evaluation")


# -- the method ---------------------------------------------------------------------------
@register_method(
    "generalization", family="generalization", random=False,
    label="full-domain generalization", cost_check=_lattice_cost,
    params=[
        Param("levels", str, None,
              description="lattice node: one hierarchy level per QI in schema order "
                          "('1,2,0,1,0,1') or named ('age=2,education=1', others 0); "
                          "default all zeros (only suppression acts); not with a model"),
        privacy.models_param((), "privacy models the published node satisfies (text "
                             "such as 'k=5', 'l=3,variant=distinct', or model objects; "
                             "shorthands k=5, model=l l=4, ...): the optimal node is "
                             "searched; not with levels"),
        MAX_SUPPRESSION,
        SUPPRESSION_RULE,
        Param("metric", str, "glm", choices=_metric_choices(),
              description="with a model: the objective the chosen node optimizes "
                          "(sdceval.lattice.objectives; glm = Iyengar's loss, "
                          "nu_entropy = ARX's)"),
    ],
    description="full-domain generalization to a lattice node (one hierarchy level per "
                "QI) with bounded suppression; or the optimal node (lowest metric) under "
                "a privacy model (k, l, t, delta, cl)")
def generalization(dataset, *, seed, levels, models, max_suppression, suppression_rule,
                   metric) -> Release:
    """Full-domain generalization (see the module docstring).

    Parameters
    ----------
    dataset : Dataset
    seed : numpy.random.Generator
        Unused (the method is deterministic); accepted for the common interface.
    levels : str or None
        The lattice node (`parse_levels`); exclusive with a privacy model.
    models : tuple of str
        Privacy models (`sdceval.privacy.model_list`); when given, the optimal node
        under them is searched.
    max_suppression : float
        The limit (`sdceval.lattice.suppression.MAX_SUPPRESSION`): a fraction (< 1) or
        a count (≥ 1) of records.
    suppression_rule : str
        A rule of `sdceval.lattice.suppression.RULES` (``dewri``, ``arx``).
    metric : str
        Objective of the search (`sdceval.lattice.objectives`).

    Returns
    -------
    Release
        kind ``"generalized"``; ``classes`` 0..C-1 (suppressed records share the last
        class), ``cells`` per QI, ``suppressed``, ``sensitive_codes`` unchanged; ``info``:
        ``levels``, ``height``, ``n_classes``, ``suppressed``, ``eta`` (records),
        ``k`` (smallest kept class), ``j`` (= k − 1), ``rule``; after a search also
        ``search`` (metric, value, ties, nodes checked, seconds, models).
    """
    wants_search = bool(models)
    if wants_search and levels not in (None, ""):
        raise SdcevalError(
            "generalization: give either levels (a lattice node) or a privacy model "
            "(k=..., or model=l/t/delta/cl with its threshold) to search the optimal "
            "node, not both")
    from sdceval.lattice import NodeEngine

    qi_heights(dataset)  # a data set without QIs: the method's own message
    engine = NodeEngine(dataset)
    models = privacy.bind_models(dataset, models, "generalization")
    eta = limit_records(max_suppression, dataset.n)

    def attempt(limit):
        """The node (searched under ``limit`` with a model) and its search record."""
        found = None
        if wants_search:
            at, result = search_node(dataset, models, suppression_rule, limit, metric,
                                     engine=engine)
            found = {"metric": metric, "value": result.value,
                     "ties": [list(v) for v in result.ties],
                     "nodes_checked": result.checked,
                     "lattice_size": result.lattice_size, "seconds": result.seconds,
                     "models": [m.describe() for m in models]}
        else:
            at = parse_levels(dataset, levels)
        return rule_node(dataset, at, suppression_rule, limit, models,
                         engine=engine), found

    node, search = attempt(max_suppression)
    rule_limit = eta
    if node.household_added and node.n_suppressed > eta:
        # whole households take the suppression past the user's limit: the largest
        # limit of the rule (by bisection) whose household-closed suppression fits
        # (module notes, "Households")
        first, best, fits, fails = node, None, -1, eta
        while fails - fits > 1:
            mid = (fits + fails) // 2
            try:
                cand = attempt(float(mid))
            except SdcevalError:  # no node satisfies the models under this limit
                fails = mid
                continue
            if cand[0].n_suppressed <= eta:
                fits, best = mid, cand
            else:
                fails = mid
        if best is None:
            raise SdcevalError(
                f"generalization: suppressing whole households (role "
                f"{dataset.schema.household!r}) at node {list(first.levels)} suppresses "
                f"{first.n_suppressed} records, more than max_suppression="
                f"{max_suppression:g} ({eta} records), under any smaller limit of the "
                f"{suppression_rule!r} rule too; raise max_suppression or choose a more "
                "general node (levels)")
        (node, search), rule_limit = best, fits
    node.eta = float(eta)
    release = node_release(dataset, node)
    release.info["rule"] = suppression_rule
    if dataset.households is not None and dataset.schema.household_keys:
        release.info["household_closure"] = {
            "added": node.household_added, "rule_limit": rule_limit}
    if search is not None:
        release.info["search"] = search
    return release


__all__ = ["generalization", "qi_heights", "lattice_size", "parse_levels", "per_qi_integers",
           "node_cells",
           "suppression_threshold", "Node", "evaluate_node", "rule_node", "node_release",
           "search_node"]
