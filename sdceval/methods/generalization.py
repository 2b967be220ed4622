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
* ``k`` (when given instead of ``levels``) selects the node: the lowest node (smallest
  sum of levels) whose table is k-anonymous after suppression — the rule's ``j + 1`` is
  at least ``k``: the records in classes smaller than ``k`` number at most ``η`` *and*
  some class has ``k`` or more records (when ``η ≥ N`` the rule keeps the largest
  classes, so a node whose classes are all smaller than ``k`` is not k-anonymous however
  many records may be suppressed) — ties broken by the lowest GLM (mean per
  record, suppressed records losing 1, `sdceval.measures.information_loss`), then by
  the lexicographically smallest levels.  The release is then the one of that node
  under the rule above (it may suppress more than the classes below ``k``, and its
  achieved ``k`` may exceed the one asked for): ``generalization(k=5)`` and
  ``generalization(levels=<the node found>)`` are the same release.  k-anonymity after
  suppression is monotone along generalization (merging classes never creates small
  classes, nor shrinks the largest), so the lowest height is found by bisection over
  heights (Samarati 2001).  Every kept class of the release has at least ``k`` records.
* The search with ``k`` refuses lattices of more than `MAX_LATTICE_NODES` = 50,000
  nodes (Π (height_q + 1)), before any node is evaluated.  The last height it visits
  is evaluated node by node: 6 numeric QIs with automatic 6-level hierarchies (46,656
  nodes) take 4–7 s on 2,000 records and 38–57 s on 20,000 (benchmarks/
  bench_generalization.py, shared 2-core machine), and 9 such QIs (10,077,696 nodes)
  would take hours.
  Adult's lattices (Dewri et al. 2010 §7: 8,960 and 17,920 nodes) are inside.  The
  message gives the size and the ways out: coarser hierarchies (fewer levels), fewer
  quasi-identifiers, or ``mondrian`` (multidimensional, no lattice).  A single node
  (``levels``) has no bound.  A long search shows a progress bar (tqdm, on stderr) when stderr is a
  terminal and the environment variable ``SDCEVAL_QUIET`` (set by ``sdceval -q``) is
  not set.

Reusable core for the lattice search (SPEC §5): `node_classes` (class ids and sizes of a
node: per-QI level lookup tables on the integer leaf codes, one mixed-radix int64 key,
one grouping pass; optionally on the `distinct_rows` of the data, weighted),
`generalize_node` (class ids and cells), `suppression_threshold`, `evaluate_node`
(classes after suppression, cells, suppressed mask; about 1–4 ms on Adult) and
`node_release` (the published table); `nodes_at_height` enumerates the lattice by height.
GLM of a node without building a release: `sdceval.measures.information_loss.
glm_per_record(dataset, node.cells, node.suppressed)`.

References
----------
Dewri, Ray, Ray, Whitley (2010). On the identification of property based
generalizations in microdata anonymization. DBSec, §6.
Samarati (2001). Protecting respondents' identities in microdata release. IEEE TKDE.
"""
from __future__ import annotations

import os
import re
import sys
from dataclasses import dataclass
from typing import Iterator, Sequence

import numpy as np
import pandas as pd

from sdceval.core.errors import SdcevalError, suggest
from sdceval.core.registry import Param, register_method
from sdceval.core.release import Release

# grouping counts (np.bincount over the key space) while the key space is at most
# _BINCOUNT_SLACK * items + _BINCOUNT_MIN, and sorts (np.unique) beyond: counting costs
# O(space), sorting O(items log items)
_BINCOUNT_SLACK = 4
_BINCOUNT_MIN = 1 << 16

#: Largest lattice (Π (height_q + 1) nodes) the search for ``k`` accepts; module notes.
MAX_LATTICE_NODES = 50_000
#: environment variable that silences progress bars (``sdceval -q`` sets it)
QUIET_ENV = "SDCEVAL_QUIET"
#: a progress bar appears only once the search has run this long (seconds)
_PROGRESS_DELAY = 2.0


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


def parse_levels(dataset, levels) -> tuple[int, ...]:
    """A lattice node from ``"1,2,0,1,0,1"`` (one level per QI in schema order),
    ``"age=2,education=1"`` (unnamed QIs at level 0), a sequence of ints or a mapping.
    ``None`` or ``""`` is the bottom node (all zeros)."""
    heights = qi_heights(dataset)
    qis = list(heights)
    if levels is None:
        return (0,) * len(qis)
    if isinstance(levels, dict):
        levels = ",".join(f"{k}={v}" for k, v in levels.items())
    elif not isinstance(levels, str):
        levels = ",".join(map(str, levels))
    # tolerate str() of a Python list/dict, which is what reaches us from Param.parse
    text = re.sub(r"[\[\](){}'\"\s]", "", levels).replace(":", "=")
    if not text:
        return (0,) * len(qis)
    items = [t for t in text.split(",") if t != ""]
    named = ["=" in t for t in items]
    out: list[int]
    if all(named):
        out = [0] * len(qis)
        seen = set()
        for t in items:
            name, val = t.split("=", 1)
            if name not in heights:
                raise SdcevalError(
                    f"generalization: levels names {name!r}, which is not a quasi-identifier."
                    f"{suggest(name, qis)} QIs: {', '.join(qis)}")
            if name in seen:
                raise SdcevalError(f"generalization: levels gives QI {name!r} twice")
            seen.add(name)
            out[qis.index(name)] = _level_int(val, name)
    elif not any(named):
        if len(items) != len(qis):
            raise SdcevalError(
                f"generalization: levels has {len(items)} value(s) but the data set has "
                f"{len(qis)} quasi-identifiers ({', '.join(qis)}); give one level per QI in "
                "this order, or name them (e.g. levels='age=2,education=1')")
        out = [_level_int(v, q) for v, q in zip(items, qis)]
    else:
        raise SdcevalError(
            f"generalization: levels {levels!r} mixes named (qi=level) and positional "
            "entries; use one form")
    for q, lv in zip(qis, out):
        if not 0 <= lv <= heights[q]:
            raise SdcevalError(
                f"generalization: level {lv} for QI {q!r} is outside 0..{heights[q]} "
                f"(its hierarchy has {heights[q]} level(s) above the leaves)")
    return tuple(out)


def _level_int(text: str, qi: str) -> int:
    try:
        f = float(text)
        if not f.is_integer():
            raise ValueError
        return int(f)
    except ValueError:
        raise SdcevalError(f"generalization: level {text!r} for QI {qi!r} is not an "
                           "integer") from None


def nodes_at_height(heights: Sequence[int], height: int) -> Iterator[tuple[int, ...]]:
    """All lattice nodes whose levels sum to ``height``, in lexicographic order."""
    heights = list(heights)
    # rest[i]: the most the QIs after i can absorb, to prune dead branches
    rest = np.r_[np.cumsum(heights[::-1])[::-1][1:], 0]

    def rec(i, left, prefix):
        if i == len(heights):
            if left == 0:
                yield tuple(prefix)
            return
        for lv in range(max(0, left - rest[i]), min(heights[i], left) + 1):
            yield from rec(i + 1, left - lv, prefix + [lv])

    yield from rec(0, height, [])


# -- one node --------------------------------------------------------------------------
@dataclass(frozen=True)
class DistinctRows:
    """The distinct QI-code combinations of a data set (the classes of the bottom node).

    Evaluating many lattice nodes on these rows, weighted by ``counts``, is cheaper than
    on the records (Adult: 12 546 distinct rows for 45 222 records).

    Attributes
    ----------
    codes : dict qi -> ndarray of int64
        Leaf codes of each distinct row.
    counts : ndarray of int64
        Records per distinct row.
    inverse : ndarray of int64, shape (n,)
        Distinct row of each record.
    """

    codes: dict
    counts: np.ndarray
    inverse: np.ndarray


def distinct_rows(dataset) -> DistinctRows:
    """`DistinctRows` of ``dataset`` (one grouping pass at the bottom node)."""
    qis = list(qi_heights(dataset))
    inverse, counts = node_classes(dataset, (0,) * len(qis))
    first = np.empty(len(counts), dtype=np.int64)
    first[inverse] = np.arange(dataset.n)
    return DistinctRows({q: dataset.codes(q)[first] for q in qis}, counts, inverse)


def node_classes(dataset, levels: Sequence[int], rows: DistinctRows | None = None
                 ) -> tuple[np.ndarray, np.ndarray]:
    """Equivalence classes of a lattice node (before suppression).

    Each QI's leaf codes go through the level's lookup table ``node_of[level]``; the
    node ids are combined into one int64 key by mixed radix (radix = number of nodes
    at that level) and grouped once: by counting (``np.bincount``) when the key space is
    small, else by sorting (``np.unique``).  Keys that would overflow int64 are
    re-factorized on the way.

    Parameters
    ----------
    dataset : Dataset
    levels : sequence of int
        One level per QI, schema order (validated by `parse_levels`).
    rows : DistinctRows, optional
        Work on the data set's distinct rows (`distinct_rows`) instead of its records.

    Returns
    -------
    classes : ndarray of int64, shape (n,) or (len(rows.counts),)
        Class id ``0..C-1`` of each record (of each distinct row if ``rows`` is given);
        classes are ordered by their node ids, QI by QI.
    sizes : ndarray of int64, shape (C,)
        Number of records of each class.
    """
    codes = rows.codes if rows is not None else {q: dataset.codes(q) for q in dataset.schema.qis}
    weights = rows.counts if rows is not None else None
    m = dataset.n if rows is None else len(rows.counts)
    key = np.zeros(m, dtype=np.int64)
    space = 1
    for q, lv in zip(dataset.schema.qis, levels):
        h = dataset.hierarchy(q)
        radix = len(h.labels[lv])
        if radix == 1:
            continue
        if space * radix >= 2 ** 62:
            uniq, key = np.unique(key, return_inverse=True)
            key, space = key.ravel().astype(np.int64), len(uniq)
        key = key * radix + h.node_of[lv][codes[q]]
        space *= radix
    if space <= _BINCOUNT_SLACK * m + _BINCOUNT_MIN:
        counts = np.bincount(key, weights=weights, minlength=space)
        present = counts > 0
        relabel = np.cumsum(present) - 1
        return relabel[key], counts[present].astype(np.int64)
    _, classes, sizes = np.unique(key, return_inverse=True, return_counts=True)
    classes = classes.ravel().astype(np.int64)
    if weights is not None:
        sizes = np.bincount(classes, weights=weights, minlength=len(sizes))
    return classes, sizes.astype(np.int64)


def node_cells(dataset, levels: Sequence[int]) -> dict:
    """Generalized cells ``{qi: (lo, hi)}`` (leaf-code ranges) of every record."""
    return {q: dataset.hierarchy(q).generalize(dataset.codes(q), lv)
            for q, lv in zip(dataset.schema.qis, levels)}


def generalize_node(dataset, levels: Sequence[int]) -> tuple[np.ndarray, dict]:
    """Class ids (before suppression) and cells of a lattice node: `node_classes` +
    `node_cells`."""
    return node_classes(dataset, levels)[0], node_cells(dataset, levels)


def suppression_count(max_suppression: float, n: int) -> float:
    """``η`` as a number of records: a fraction of ``n`` if < 1, else a count."""
    eta = float(max_suppression)
    if eta < 0 or not np.isfinite(eta):
        raise SdcevalError(f"generalization: max_suppression must be >= 0, got {eta}")
    if eta < 1:
        return eta * n
    if not eta.is_integer():
        raise SdcevalError(
            f"generalization: max_suppression={eta} is >= 1, so it is a number of records "
            "and must be a whole number (fractions are < 1, e.g. 0.01 for 1 %)")
    return eta


def suppression_threshold(sizes: np.ndarray, eta: float) -> int:
    """``s* = j + 1`` of the rule: classes smaller than ``s*`` are suppressed.

    ``s*`` is the smallest class size with ``R(s*) > η``, ``R(s)`` the number of records
    in classes of size ≤ ``s``; when ``R`` never exceeds ``η`` (``η ≥ N``) it is the
    largest class size.

    Parameters
    ----------
    sizes : ndarray of int
        Class sizes.
    eta : float
        Suppression limit in records (see `suppression_count`).
    """
    u, mult = np.unique(sizes, return_counts=True)
    over = np.flatnonzero(np.cumsum(u * mult) > eta)
    return int(u[over[0]] if len(over) else u[-1])


@dataclass
class Node:
    """A lattice node applied to a data set, after suppression.

    Attributes
    ----------
    levels : tuple of int
    classes : ndarray of int64
        ``0..C-1``; kept classes first (in `node_classes` order), then, if any record is
        suppressed, one last class holding every suppressed record.
    sizes : ndarray of int64
        Size of each class of ``classes``.
    suppressed : ndarray of bool
    cells : dict or None
        ``{qi: (lo, hi)}``; suppressed records get the whole leaf range.
    k : int
        Smallest kept class (``j + 1`` of the rule).
    eta : float
        Suppression limit in records.
    """

    levels: tuple
    classes: np.ndarray
    sizes: np.ndarray
    suppressed: np.ndarray
    cells: dict | None
    k: int
    eta: float

    @property
    def n_suppressed(self) -> int:
        return int(self.suppressed.sum())


def evaluate_node(dataset, levels: Sequence[int], max_suppression: float = 0.01,
                  cells: bool = True) -> Node:
    """Apply a lattice node and the suppression rule (module docstring).

    ``levels`` must be valid (see `parse_levels`); ``cells=False`` skips the cells (the
    class structure alone is enough for k-anonymity and the discernibility metric).
    """
    levels = tuple(int(v) for v in levels)
    eta = suppression_count(max_suppression, dataset.n)
    raw, sizes = node_classes(dataset, levels)
    s_star = suppression_threshold(sizes, eta)
    keep = sizes >= s_star
    supp = ~keep[raw]
    n_kept = int(keep.sum())
    relabel = np.cumsum(keep) - 1
    relabel[~keep] = n_kept
    classes = relabel[raw]
    out_sizes = sizes[keep]
    if supp.any():
        out_sizes = np.r_[out_sizes, int(sizes[~keep].sum())]
    cell_map = None
    if cells:
        cell_map = {}
        for q, (lo, hi) in node_cells(dataset, levels).items():
            if supp.any():  # lo, hi are fresh arrays (fancy indexing)
                lo[supp], hi[supp] = 0, dataset.hierarchy(q).n_leaves - 1
            cell_map[q] = (lo, hi)
    return Node(levels, classes, out_sizes, supp, cell_map, s_star, eta)


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


# -- choosing a node for k --------------------------------------------------------------
def check_lattice_size(dataset, limit: int = MAX_LATTICE_NODES) -> int:
    """The lattice size, or a `SdcevalError` naming it and the ways out when it exceeds
    ``limit`` (`MAX_LATTICE_NODES`; see the module notes).  Evaluates no node."""
    size = lattice_size(dataset)
    if size > limit:
        per_qi = ", ".join(f"{q} {h + 1}" for q, h in qi_heights(dataset).items())
        raise SdcevalError(
            f"generalization: the lattice of full-domain generalizations has {size:,} "
            f"nodes (levels per quasi-identifier: {per_qi}), more than the {limit:,} the "
            "search for k accepts. Use coarser hierarchies (fewer levels: give a "
            "hierarchy file for each numeric QI), fewer quasi-identifiers, or "
            "--method mondrian (multidimensional generalization, no lattice); or give "
            "the node itself with levels=...")
    return size


def _quiet() -> bool:
    return os.environ.get(QUIET_ENV, "").strip().lower() not in ("", "0", "false", "no")


def _progress_bar(enabled: bool | None):
    """A tqdm bar on stderr counting evaluated nodes.  ``None``: shown only on a terminal,
    when not quiet (`QUIET_ENV`), and only once the search has run `_PROGRESS_DELAY`
    seconds; ``True`` / ``False`` force it on / off."""
    from tqdm import tqdm  # imported here: only searches need it

    if enabled is None:
        disable = True if _quiet() else None  # None: tqdm turns itself off off a terminal
        delay = _PROGRESS_DELAY
    else:
        disable, delay = not enabled, 0.0
    return tqdm(desc="generalization: lattice search", unit=" nodes", file=sys.stderr,
                disable=disable, delay=delay, leave=False, dynamic_ncols=True)


def min_k_node(dataset, k: int, max_suppression: float = 0.01,
               progress: bool | None = None) -> tuple[tuple[int, ...], dict]:
    """The lowest lattice node that is k-anonymous after suppression (module docstring).

    A node is feasible when the suppression rule's ``j + 1`` (`suppression_threshold`)
    is at least ``k``: at most ``η`` records lie in classes smaller than ``k``, and some
    class has ``k`` or more records.  Feasibility is monotone in the height (merging
    classes neither creates small classes nor shrinks the largest), so the lowest
    feasible height is found by bisection over heights, stopping at the first feasible
    node of each height tried; all nodes of that height are then compared by GLM.
    Nodes are evaluated on the distinct rows (`distinct_rows`).  Lattices larger than
    `MAX_LATTICE_NODES` are refused before any node is evaluated (`check_lattice_size`).

    Parameters
    ----------
    progress : bool or None
        Progress bar (`_progress_bar`): ``None`` decides from the terminal and
        `QUIET_ENV`.

    Returns
    -------
    levels : tuple of int
    info : dict
        ``height``, ``nodes_evaluated`` and ``glm`` (mean per record) of the node.
    """
    # imported here: importing sdceval.measures imports every measure module
    from sdceval.core.hierarchy import cell_loss

    check_lattice_size(dataset)
    heights = qi_heights(dataset)
    qis = list(heights)
    eta = suppression_count(max_suppression, dataset.n)
    if k > dataset.n:
        raise SdcevalError(f"generalization: k={k} is larger than the number of records "
                           f"({dataset.n}); no table of them is {k}-anonymous")
    rows = distinct_rows(dataset)
    evaluated = 0
    bar = _progress_bar(progress)

    def sizes_of(levels):
        nonlocal evaluated
        evaluated += 1
        bar.update()
        return node_classes(dataset, levels, rows)

    def feasible(levels):
        return suppression_threshold(sizes_of(levels)[1], eta) >= k

    def glm(levels):
        classes, sizes = sizes_of(levels)
        loss = sum(cell_loss(dataset.hierarchy(q), *dataset.hierarchy(q).generalize(
            rows.codes[q], lv)) for q, lv in zip(qis, levels)) / len(qis)
        loss[sizes[classes] < suppression_threshold(sizes, eta)] = 1.0
        return float(loss @ rows.counts) / dataset.n

    h_lists = list(heights.values())
    lo, hi = 0, sum(h_lists)  # the top node is one class of n >= k records: feasible
    try:
        while lo < hi:
            bar.set_postfix_str(f"height {lo}..{hi}", refresh=False)
            mid = (lo + hi) // 2
            if any(feasible(v) for v in nodes_at_height(h_lists, mid)):
                hi = mid
            else:
                lo = mid + 1
        bar.set_postfix_str(f"height {lo}: lowest GLM", refresh=False)
        best, best_glm = None, np.inf
        for levels in nodes_at_height(h_lists, lo):
            if feasible(levels):
                loss = glm(levels)
                if loss < best_glm - 1e-12:  # strictly lower: lexicographic order breaks ties
                    best, best_glm = levels, loss
    finally:
        bar.close()
    return best, {"height": lo, "nodes_evaluated": evaluated, "glm": best_glm}


# -- the method ---------------------------------------------------------------------------
@register_method(
    "generalization", family="generalization", random=False,
    params=[
        Param("levels", str, None,
              description="lattice node: one hierarchy level per QI in schema order "
                          "('1,2,0,1,0,1') or named ('age=2,education=1', others 0); "
                          "default all zeros (only suppression acts); not with k"),
        Param("k", int, None, low=2, high="n", protection="increasing", unit="records",
              grid=(2, 5, 10, 20, 50, 100, 200, 500), scale="log",
              description="instead of levels: use the lowest node that is k-anonymous "
                          "after suppression (ties: lowest GLM); every kept class has "
                          f">= k records; lattices of more than {MAX_LATTICE_NODES:,} "
                          "nodes are refused (coarser hierarchies, fewer QIs, or mondrian)"),
        Param("max_suppression", float, 0.01, low=0.0, unit="fraction or records",
              description="η of Dewri et al. §6: a fraction of the records if < 1, else "
                          "a record count; classes E_1..E_j are suppressed for the "
                          "smallest j with |E_1|+...+|E_{j+1}| > η"),
    ],
    description="full-domain generalization to a lattice node (one hierarchy level per "
                "QI) with Dewri et al.'s bounded suppression; or the lowest k-anonymous "
                "node for a given k")
def generalization(dataset, *, seed, levels, k, max_suppression) -> Release:
    """Full-domain generalization (see the module docstring).

    Parameters
    ----------
    dataset : Dataset
    seed : numpy.random.Generator
        Unused (the method is deterministic); accepted for the common interface.
    levels : str or None
        The lattice node (`parse_levels`).
    k : int or None
        Pick the node with `min_k_node` instead (exclusive with ``levels``): every kept
        class then has at least ``k`` records; lattices of more than
        `MAX_LATTICE_NODES` nodes are refused before any node is evaluated.
    max_suppression : float
        ``η``: fraction (< 1) or count (≥ 1) of records that may be suppressed.

    Returns
    -------
    Release
        kind ``"generalized"``; ``classes`` 0..C-1 (suppressed records share the last
        class), ``cells`` per QI, ``suppressed``, ``sensitive_codes`` unchanged; ``info``:
        ``levels``, ``height``, ``n_classes``, ``suppressed``, ``eta`` (records),
        ``k`` (smallest kept class = j + 1), ``j``; with ``k`` also ``search``.
    """
    if k is not None and levels not in (None, ""):
        raise SdcevalError(
            "generalization: give either levels (a lattice node) or k (pick the lowest "
            "k-anonymous node), not both")
    search = None
    if k is not None:
        node_levels, search = min_k_node(dataset, k, max_suppression)
    else:
        node_levels = parse_levels(dataset, levels)
    release = node_release(dataset, evaluate_node(dataset, node_levels, max_suppression))
    if search is not None:
        release.info["search"] = search
    return release


__all__ = ["generalization", "qi_heights", "lattice_size", "check_lattice_size",
           "MAX_LATTICE_NODES", "parse_levels",
           "nodes_at_height", "DistinctRows", "distinct_rows", "node_classes",
           "node_cells", "generalize_node", "suppression_count", "suppression_threshold",
           "Node", "evaluate_node", "node_release", "min_k_node"]
