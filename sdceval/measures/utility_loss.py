"""Aggregate utility loss U_loss (Li & Li 2009, §4.2) and the uniform-assumption estimator.

A *large population* is a conjunction of generalized predicates, at most one per QI,
each a node of that QI's hierarchy (a leaf value or an inner node such as ``[40-49]`` or
``Government``, never the root ``*``), whose support in the original table is at least
``min_support``.  For every large population ``y``

    U_loss(y) = JS(P_y, P̄_y),        U_loss = mean_y U_loss(y)        (natural log)

where ``P_y`` is the sensitive distribution of the original records satisfying ``y`` and
``P̄_y`` its reconstruction from the release under the uniform assumption (§4.2, §6):
every leaf of a generalized cell is equally likely, and every sensitive value of a
bucket is equally likely for each of its records.  Released record ``i`` therefore adds

    w_i(y) = Π_a |cell_a(i) ∩ pred_a(y)| / |cell_a(i)|     (counted in leaves)

times its sensitive distribution: the one-hot of its released value for generalized
releases, its bucket's distribution for bucketized ones.  Cells and predicates are both
leaf-code ranges (see `Hierarchy`), so the weights are range overlaps.

Li & Li mine the populations with FP-growth; here a level-wise (Apriori) search over
record bitsets (``uint64`` words, ``np.bitwise_count``) does the same in about a second
on Adult and is cached per data set, so evaluating many releases only pays for the
reconstruction.  Reconstruction groups records by their combination of cells (a
Mondrian release of Adult has a few thousand), so its cost is (populations × groups).
"""
from __future__ import annotations

import math
import weakref
from dataclasses import dataclass

import numpy as np
import pandas as pd

from sdceval.core.errors import SdcevalError
from sdceval.core.measurement import Measurement
from sdceval.core.registry import Param, register_measure
from sdceval.core.release import Release, publishable_columns, require
from sdceval.core.combos import combine
from sdceval.measures._compatibility import first
from sdceval.measures.attribute_disclosure import class_sensitive_counts
from sdceval.core.divergence import js_divergence, normalize

#: elements of one (predicates x groups) weight block; bounds the estimator's memory
_BLOCK = 1 << 22


# -- bitsets ----------------------------------------------------------------------------
def _pack(masks: np.ndarray) -> np.ndarray:
    """Boolean ``(k, n)`` -> ``(k, ceil(n/64))`` uint64 bitsets."""
    k, n = masks.shape
    words = -(-n // 64)
    packed = np.packbits(masks, axis=1, bitorder="little")
    out = np.zeros((k, words * 8), dtype=np.uint8)
    out[:, :packed.shape[1]] = packed
    return out.view(np.uint64)


def _popcount(bits: np.ndarray) -> np.ndarray:
    return np.bitwise_count(bits).sum(axis=-1, dtype=np.int64)


# -- large populations --------------------------------------------------------------------
@dataclass(frozen=True)
class LargePopulations:
    """Frequent conjunctions of hierarchy nodes (the large populations of Li & Li §4.2).

    Attributes
    ----------
    qis : tuple of str
    n_leaves : tuple of int
        Leaves of each QI's hierarchy.
    min_support : float
    item_qi, item_level, item_node, item_lo, item_hi : ndarray
        The frequent single predicates ("items"): QI index, hierarchy level, node id at
        that level and the node's leaf-code range.
    members : ndarray, shape (n_itemsets, n_qis)
        Item index of each itemset's predicate on each QI, ``-1`` = no condition.
    support : ndarray, shape (n_itemsets,)
    counts : ndarray, shape (n_itemsets, m)
        Original sensitive counts of each itemset's records.
    first : ndarray of bool, shape (n_itemsets,)
        True for the first itemset (fewest predicates, then search order) of each
        distinct record set; the populations counted when duplicates are merged.
    """

    qis: tuple
    n_leaves: tuple
    min_support: float
    item_qi: np.ndarray
    item_level: np.ndarray
    item_node: np.ndarray
    item_lo: np.ndarray
    item_hi: np.ndarray
    members: np.ndarray
    support: np.ndarray
    counts: np.ndarray
    first: np.ndarray

    @property
    def n_itemsets(self) -> int:
        return len(self.members)

    @property
    def n_populations(self) -> int:
        return int(self.first.sum())

    def predicates(self, dedupe: bool = True) -> "Predicates":
        """The populations as `Predicates` (distinct record sets only if ``dedupe``)."""
        members = self.members[self.first] if dedupe else self.members
        rows, select = [], np.full(members.shape, -1, dtype=np.int64)
        for a in range(len(self.qis)):
            ids = np.flatnonzero(self.item_qi == a)
            leaves = np.arange(self.n_leaves[a])
            rows.append((leaves[None, :] >= self.item_lo[ids, None]) &
                        (leaves[None, :] <= self.item_hi[ids, None]))
            local = np.full(len(self.item_qi), -1, dtype=np.int64)
            local[ids] = np.arange(len(ids))
            has = members[:, a] >= 0
            select[has, a] = local[members[has, a]]
        return Predicates(self.qis, rows, select)

    def describe(self, dataset, i: int) -> str:
        """Readable predicate of itemset ``i``, e.g. ``age=[40-49] & sex=Male``."""
        parts = []
        for a, it in enumerate(self.members[i]):
            if it >= 0:
                h = dataset.hierarchy(self.qis[a])
                parts.append(f"{self.qis[a]}={h.labels[self.item_level[it]][self.item_node[it]]}")
        return " & ".join(parts)


#: Li & Li's minSup, declared once: the measure and `large_populations` parse with it
MIN_SUPPORT = Param("min_support", float, default=0.05, low=0, high=1, low_inclusive=False,
                    unit="fraction of records",
                    description="minimum support of a large population (Li & Li's minSup)")

_POPULATIONS: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def large_populations(dataset, min_support: float = 0.05) -> LargePopulations:
    """All large populations of ``dataset`` (cached per data set and ``min_support``).

    Level-wise search: the frequent single predicates are every non-root node of every
    QI hierarchy with support ``>= ceil(min_support * n)``; a frequent ``k``-itemset is
    extended by each frequent predicate on a later QI and kept if the AND of the two
    record bitsets has enough records.  Nodes are items even when two of them cover the
    same leaves (a one-child node), exactly as a hierarchy lists them; duplicates are
    flagged in ``first``.
    """
    # the measure's own Param checks it: one definition of its bounds
    min_support = MIN_SUPPORT.parse(min_support, "measure 'u_loss'")
    require(dataset, ("qis", "sensitive"), "u_loss")
    per_ds = _POPULATIONS.setdefault(dataset, {})
    key = (tuple(dataset.schema.qis), float(min_support))
    if key not in per_ds:
        per_ds[key] = _search(dataset, float(min_support))
    return per_ds[key]


def _search(dataset, min_support: float) -> LargePopulations:
    qis = tuple(dataset.schema.qis)
    col = dataset.schema.sensitive
    sens, m = dataset.codes(col), dataset.hierarchy(col).n_leaves
    n = dataset.n
    # support / n >= min_support, robust to 0.05 * n landing a hair above an integer
    threshold = max(1, math.ceil(min_support * n - 1e-9))
    iq, il, inode, ilo, ihi, masks = [], [], [], [], [], []
    for a, q in enumerate(qis):
        h, codes = dataset.hierarchy(q), dataset.codes(q)
        # node supports from leaf counts; masks only for the (few) frequent nodes
        cum = np.r_[0, np.cumsum(np.bincount(codes, minlength=h.n_leaves))]
        for j in range(h.height):          # level h.height is the root '*'
            lo, hi = h.lo[j], h.hi[j]
            keep = np.flatnonzero(cum[hi + 1] - cum[lo] >= threshold)
            iq.append(np.full(len(keep), a))
            il.append(np.full(len(keep), j))
            inode.append(keep)
            ilo.append(lo[keep])
            ihi.append(hi[keep])
            masks.append((codes[None, :] >= lo[keep, None]) & (codes[None, :] <= hi[keep, None]))
    item_qi, item_level, item_node, item_lo, item_hi = (
        np.concatenate(x).astype(np.int64) for x in (iq, il, inode, ilo, ihi))
    n_items = len(item_qi)
    item_bits = _pack(np.concatenate(masks))
    sens_bits = _pack(sens[None, :] == np.arange(m)[:, None])

    members_all, support_all, counts_all, first_all = [], [], [], []
    seen: set[bytes] = set()     # record sets met so far (itemsets in level-wise order)
    # level 1
    members = np.full((n_items, len(qis)), -1, dtype=np.int64)
    members[np.arange(n_items), item_qi] = np.arange(n_items)
    bits, last_qi, support = item_bits, item_qi, _popcount(item_bits)
    while len(members):
        members_all.append(members)
        support_all.append(support)
        counts_all.append(np.stack([_popcount(bits & sens_bits[s]) for s in range(m)], axis=1)
                          if len(bits) else np.zeros((0, m), dtype=np.int64))
        first = np.zeros(len(bits), dtype=bool)
        for i, row in enumerate(bits):   # one pass over itemsets (thousands), not records
            key = row.tobytes()
            if key not in seen:
                seen.add(key)
                first[i] = True
        first_all.append(first)
        # candidates: each itemset x each frequent item on a later QI (items sorted by QI)
        start = np.searchsorted(item_qi, last_qi, side="right")
        cnt = n_items - start
        total = int(cnt.sum())
        if total == 0:
            break
        parent = np.repeat(np.arange(len(members)), cnt)
        item = start[parent] + (np.arange(total) - np.repeat(np.cumsum(cnt) - cnt, cnt))
        keep_p, keep_i, keep_b = [], [], []
        step = max(1, _BLOCK // max(1, bits.shape[1]))
        for c0 in range(0, total, step):
            p, it = parent[c0:c0 + step], item[c0:c0 + step]
            b = bits[p] & item_bits[it]
            ok = _popcount(b) >= threshold
            keep_p.append(p[ok])
            keep_i.append(it[ok])
            keep_b.append(b[ok])
        p, it = np.concatenate(keep_p), np.concatenate(keep_i)
        members = members[p].copy()
        members[np.arange(len(it)), item_qi[it]] = it
        bits = np.concatenate(keep_b)
        last_qi = item_qi[it]
        support = _popcount(bits)

    def cat(parts, shape):
        return np.concatenate(parts) if parts else np.zeros(shape, np.int64)

    return LargePopulations(
        qis=qis, n_leaves=tuple(dataset.hierarchy(q).n_leaves for q in qis),
        min_support=min_support, item_qi=item_qi, item_level=item_level,
        item_node=item_node, item_lo=item_lo, item_hi=item_hi,
        members=cat(members_all, (0, len(qis))), support=cat(support_all, (0,)),
        counts=cat(counts_all, (0, m)), first=cat(first_all, (0,)).astype(bool))


# -- what a release publishes, attribute by attribute ---------------------------------------
def _label_ranges(h) -> dict:
    """Leaf-code range of every label of ``h`` (leaves win over equally named nodes)."""
    out = {}
    for j in range(h.height, -1, -1):
        for lab, a, b in zip(h.labels[j], h.lo[j], h.hi[j]):
            out[str(lab)] = (int(a), int(b))
    return out


def published(dataset, release: Release, column: str):
    """How ``release`` publishes ``column`` for the uniform assumption, per record.

    Returns ``("cell", lo, hi)`` (leaf-code ranges of the column's hierarchy) or
    ``("value", x)`` (float64 numbers, compared with value intervals):

    * a column with `Release.cells` (the QIs of generalized, bucketized and composite
      releases; the numeric attributes a composite release generalized into intervals,
      cells of the column's own hierarchy): its cells;
    * a published ``numeric``-role column, or a numeric column of numbers whose
      hierarchy is numeric (a QI of an external table): its values, taken exactly;
    * another published column (a QI of an external table): each label's leaf or node
      range; a label that is neither (not read back with ``read_release``) tells
      nothing: the whole domain;
    * a column the release does not publish is *fully suppressed*: the whole domain
      ``[0, n_leaves - 1]``, i.e. uniform over the hierarchy's leaves.
    """
    h, n = dataset.hierarchy(column), release.n   # a synthetic release: any row count
    if release.cells is not None and column in release.cells:
        lo, hi = release.cells[column]
        return "cell", lo, hi
    data = release.data
    if column in data.columns:
        values = data[column]
        if column in dataset.schema.numeric or (
                h.numeric and pd.api.types.is_numeric_dtype(values)
                and not pd.api.types.is_bool_dtype(values)):
            return "value", release.numeric_matrix([column])[:, 0]
        inv, uniq = pd.factorize(values.astype(str).str.strip(), use_na_sentinel=False)
        known = _label_ranges(h)
        ranges = np.array([known.get(u, (0, h.n_leaves - 1)) for u in uniq],
                          dtype=np.int64).reshape(-1, 2)
        return "cell", ranges[inv, 0], ranges[inv, 1]
    return "cell", np.zeros(n, dtype=np.int64), np.full(n, h.n_leaves - 1, dtype=np.int64)


def publishes_cells(dataset, release: Release) -> bool:
    """Whether ``release`` must give its QIs as `Release.cells` for `published` to read
    them: its kind publishes the QIs by the publication rule (`publishable_columns`:
    generalized, bucketized and composite releases).  A perturbative release publishes
    none, and an external table's or a synthetic release's values are read from its
    columns."""
    if release.kind in ("external", "synthetic"):
        return False
    return bool(set(dataset.schema.qis) & set(publishable_columns(dataset, release.kind)))


def published_sensitive(dataset, release: Release) -> np.ndarray | None:
    """Released sensitive code per record, ``-1`` where the release does not publish it
    (fully suppressed: uniform over the sensitive values); None without a sensitive
    attribute.  A release carrying released codes (`Release.sensitive_codes`: permuted
    within buckets, or as a method left them), or one whose kind publishes the column
    unchanged (`publishable_columns`: generalized, bucketized, composite):
    `Release.sensitive`; an external table or a synthetic release (its own records):
    its column when present (`value_codes`; a value outside the domain: ``-1``);
    perturbative releases drop it."""
    col = dataset.schema.sensitive
    if col is None:
        return None
    read = ("external", "synthetic")
    if release.sensitive_codes is not None or (
            release.kind not in read and col in publishable_columns(dataset, release.kind)):
        return np.asarray(release.sensitive(dataset), dtype=np.int64)
    if release.kind in read and col in release.data.columns:
        return value_codes(dataset, col, release.data[col])
    return np.full(release.n, -1, dtype=np.int64)


def value_codes(dataset, column: str, values) -> np.ndarray:
    """Leaf code of each published value of ``column`` (a number equal to a leaf value
    of a numeric hierarchy, or a leaf's label), ``-1`` for a value outside the domain."""
    h = dataset.hierarchy(column)
    values = pd.Series(values)
    if h.numeric:
        num = pd.to_numeric(values, errors="coerce").to_numpy(np.float64)
        pos = np.searchsorted(h.leaf_values, num).clip(0, h.n_leaves - 1)
        return np.where(h.leaf_values[pos] == num, pos, -1).astype(np.int64)
    inv, uniq = pd.factorize(values.astype(str), use_na_sentinel=False)
    index = {str(v): i for i, v in enumerate(h.leaves)}
    return np.array([index.get(u, -1) for u in uniq], dtype=np.int64).reshape(-1)[inv]


# -- predicates and the uniform-assumption estimator ------------------------------------------
@dataclass(frozen=True)
class Predicates:
    """A batch of conjunctive predicates on attributes (the QIs for ``u_loss``; QIs and
    numeric attributes for ``query_error``).

    ``rows[a]`` is a boolean ``(R_a, n_leaves_a)`` matrix of leaf sets on attribute
    ``a``; ``select[p, a]`` picks predicate ``p``'s row on attribute ``a`` (``-1`` = no
    condition).  Leaf sets need not be contiguous (random value sets in `query_error`).
    On an attribute published as values (`published`), a leaf set selects the values
    within the closed interval ``[v_first, v_last]`` of each of its runs of consecutive
    leaves.
    """

    qis: tuple
    rows: list
    select: np.ndarray

    def __len__(self) -> int:
        return len(self.select)


def _sorted_ids(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(values, return_inverse=True)`` by hashing (linear in n) and sorting
    only the distinct values: on 10 M records the sort of every value dominated."""
    codes, uniq = pd.factorize(np.asarray(values).ravel(), use_na_sentinel=False)
    order = np.argsort(uniq, kind="stable")
    rank = np.empty(len(uniq), dtype=np.int64)
    rank[order] = np.arange(len(uniq))
    return np.asarray(uniq)[order], rank[codes]


def _sorted_rows(cols: list, n: int) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(np.stack(cols, axis=1), axis=0, return_inverse=True)`` (the distinct
    rows in lexicographic order and each row's index among them) by hashing: the
    distinct rows are sorted, not the n rows (n x k void sort: ~50 s on 10 M)."""
    gid, count = combine(cols, n)
    rows = np.stack(cols, axis=1)[first(gid, count)]
    order = np.lexsort(rows.T[::-1])
    rank = np.empty(count, dtype=np.int64)
    rank[order] = np.arange(count)
    return rows[order], rank[gid]


class UniformEstimator:
    """Reconstructs sensitive counts of predicates from a release (Li & Li §4.2), for
    every kind of release.

    Records are grouped by their combination of released cells and values (`published`);
    each group carries the sum of its records' sensitive distributions (one-hot of the
    released value, the bucket's distribution where the values are permuted within
    buckets — `Release.sensitive_in_buckets` —, uniform where the release does not
    publish the sensitive value).  The estimate for predicate ``y`` is
    ``Σ_g w_g(y) · S_g`` with ``w_g(y) = Π_a w_ga(y)``: ``|cell_a ∩ pred_a| / |cell_a|``
    (in leaves) for a cell, ``1`` or ``0`` for a value inside or outside ``pred_a``'s
    value intervals.  Without a sensitive attribute the one "value" is the record
    itself (``m = 1``): plain counts.

    Parameters
    ----------
    dataset : Dataset
    release : Release
        Any release; u_loss passes generalized and bucketized ones (the registry checks
        their cells), query_error every kind.
    who : str
        Measure name for error messages.
    columns : sequence of str, optional
        The attributes predicates constrain; default the QIs.
    """

    def __init__(self, dataset, release: Release, who: str, columns=None):
        release.check(dataset, who=who)
        columns = tuple(dataset.schema.qis) if columns is None else tuple(columns)
        sens = published_sensitive(dataset, release)
        m = 1 if sens is None else dataset.hierarchy(dataset.schema.sensitive).n_leaves
        n = release.n   # a synthetic release: its own records, any number
        if sens is None:
            sens = np.zeros(n, dtype=np.int64)
        self.qis, self.m = columns, m
        hier = [dataset.hierarchy(c) for c in columns]
        self.n_leaves = tuple(h.n_leaves for h in hier)
        self.leaf_values = [h.leaf_values if h.numeric else None for h in hier]
        self.cell_lo, self.cell_hi, self.cell_value, cell_ids = [], [], [], []
        for c in columns:
            how = published(dataset, release, c)
            if how[0] == "value":
                if not dataset.hierarchy(c).numeric:
                    raise SdcevalError(
                        f"{who}: column {c!r} is published as numbers but its hierarchy "
                        "is not numeric; give it a numeric (interval) hierarchy")
                # a value's weight depends only on where it lies among the leaves (on
                # leaf p, or strictly between leaves p and p + 1): records are grouped
                # by that position class, not by the value, so the weights are looked
                # up in a row of 2L + 1 classes, not of every distinct value (on 10^6
                # records of masked numbers: 107 s per query_error call before)
                leaves = dataset.hierarchy(c).leaf_values
                v = how[1]
                pos = np.searchsorted(leaves, v, side="right") - 1     # last leaf <= v
                exact = (pos >= 0) & (leaves[pos.clip(0)] == v)
                cls = np.where(pos < 0, 0, 2 * pos + 2 - exact).astype(np.int64)
                key, inv = _sorted_ids(cls)
                self.cell_lo.append(None)
                self.cell_hi.append(None)
                self.cell_value.append(key)
                cell_ids.append(inv.ravel())
                continue
            lo, hi = how[1], how[2]
            key, inv = _sorted_ids(lo * (hi.max() + 1) + hi)
            first = np.zeros(len(key), dtype=np.int64)
            first[inv] = np.arange(n)
            self.cell_lo.append(lo[first])
            self.cell_hi.append(hi[first])
            self.cell_value.append(None)
            cell_ids.append(inv.ravel())
        groups, g = _sorted_rows(cell_ids, n)
        self.group_cell = [groups[:, a] for a in range(len(columns))]
        self.n_groups = len(groups)
        if release.sensitive_in_buckets:   # bucketization, alone or as a strategy's step
            classes, n_classes = release.class_index()
            dist = normalize(class_sensitive_counts(classes, n_classes, sens, m))
            pairs, cnt = np.unique(g * n_classes + classes, return_counts=True)
            mass = np.zeros((self.n_groups, m))
            np.add.at(mass, pairs // n_classes, cnt[:, None] * dist[pairs % n_classes])
        else:
            known = sens >= 0
            if known.all():
                mass = np.bincount(g * m + sens, minlength=self.n_groups * m).reshape(
                    self.n_groups, m).astype(np.float64)
            else:   # unpublished values: uniform over the sensitive domain
                mass = np.bincount(g[known] * m + sens[known],
                                   minlength=self.n_groups * m).reshape(
                    self.n_groups, m).astype(np.float64)
                mass += np.bincount(g[~known], minlength=self.n_groups)[:, None] / m
        self.mass = mass

    def _fraction(self, a: int, rows: np.ndarray) -> np.ndarray:
        """``(R, distinct cells or values)``: weight of each of attribute ``a``'s
        distinct released cells / values in each predicate row."""
        if self.cell_value[a] is not None:
            # a value counts when it lies in [v_first, v_last] of a run of selected
            # leaves: it equals a selected leaf or lies between two consecutive ones.
            # Its class (`__init__`): 0 below every leaf, 2p + 1 on leaf p, 2p + 2
            # strictly between leaves p and p + 1 (or above the last)
            cls, n_leaves = self.cell_value[a], len(self.leaf_values[a])
            inside = cls > 0
            p = ((cls - 1) // 2).clip(0, None)
            nxt = (p + 1).clip(None, n_leaves - 1)
            exact = inside & (cls % 2 == 1)
            between = inside & ~exact & (p + 1 < n_leaves)
            return (rows[:, p] & (exact | (between & rows[:, nxt]))).astype(np.float64)
        lo, hi = self.cell_lo[a], self.cell_hi[a]
        ind = np.zeros((len(rows), self.n_leaves[a] + 1))
        ind[:, 1:] = rows
        cs = np.cumsum(ind, axis=1)           # leaves of each row in [0, c) = cs[:, c]
        return (cs[:, hi + 1] - cs[:, lo]) / (hi - lo + 1)

    def counts(self, preds: Predicates, sensitive: np.ndarray | None = None) -> np.ndarray:
        """Reconstructed sensitive counts, shape ``(len(preds), m)``; with ``sensitive``
        (one value code per predicate) only those counts, shape ``(len(preds),)``."""
        if tuple(preds.qis) != self.qis:
            raise SdcevalError(f"predicates are over {preds.qis}, the estimator's "
                               f"attributes are {self.qis}")
        # fraction of each distinct cell inside each predicate row
        frac = []
        for a in range(len(self.qis)):
            rows = np.asarray(preds.rows[a], dtype=bool)
            if rows.ndim != 2 or rows.shape[1] != self.n_leaves[a]:
                raise SdcevalError(f"predicate rows of attribute {self.qis[a]!r} must have "
                                   f"one column per leaf ({self.n_leaves[a]})")
            f = self._fraction(a, rows)
            # expand to groups once when small (few predicate rows, as in u_loss)
            expand = f.shape[0] * self.n_groups <= _BLOCK
            frac.append((f[:, self.group_cell[a]] if expand else f, expand))
        out = np.empty((len(preds), self.m) if sensitive is None else len(preds))
        step = max(1, _BLOCK // max(1, self.n_groups))
        # blocks of predicates on the same QIs: a block multiplies only its QIs' weights
        used = preds.select >= 0
        pattern = used @ (1 << np.arange(len(self.qis), dtype=np.int64))
        order = np.argsort(pattern, kind="stable")
        bounds = np.flatnonzero(np.diff(pattern[order])) + 1
        blocks = [b[i:i + step] for b in np.split(order, bounds) for i in range(0, len(b), step)]
        for idx in blocks:
            sel = preds.select[idx]
            w = None
            for a in np.flatnonzero(used[idx[0]]):
                f, expanded = frac[a]
                fa = f[sel[:, a]] if expanded else f[sel[:, a]][:, self.group_cell[a]]
                if w is None:
                    w = fa
                else:
                    w *= fa
            if sensitive is not None:
                mass = self.mass[:, sensitive[idx]].T
                out[idx] = mass.sum(axis=1) if w is None else np.einsum("pg,pg->p", w, mass)
            else:
                out[idx] = self.mass.sum(axis=0) if w is None else w @ self.mass
        return out


# -- the measure ----------------------------------------------------------------------
@register_measure(
    "u_loss", category="utility", direction="lower_is_better",
    label="aggregate utility loss (U_loss)",
    kinds=("generalized", "bucketized"), needs=("qis", "sensitive", "cells"),
    params=[
        MIN_SUPPORT,
        Param("dedupe", bool, default=True,
              description="count populations that select the same records once"),
    ],
    description="aggregate utility loss (Li & Li 2009 §4.2): mean over large populations "
                "(frequent conjunctions of hierarchy nodes) of JS(P_y, reconstructed P_y) "
                "under the uniform assumption")
def u_loss(dataset, release: Release, min_support: float = 0.05,
           dedupe: bool = True) -> Measurement:
    """Utility loss ``U_loss = mean_y JS(P_y, P̄_y)`` over the large populations ``y``.

    Parameters
    ----------
    dataset : Dataset
        Original data with QIs (each with a hierarchy; numeric QIs without one use the
        automatic interval hierarchy) and a sensitive attribute.
    release : Release
        Must carry `Release.cells` for every QI (generalization, Mondrian,
        bucketization, `identity_release`, `suppressed_release`).
    min_support : float
        Li & Li's minSup (a fraction of ``n``; the paper uses 0.05).
    dedupe : bool
        Itemsets selecting exactly the same records (e.g. a node and its one-child
        node, or ``HS-grad`` as a leaf and as its own level-1 group) form one
        population, represented by its first itemset (fewest predicates).

    Returns
    -------
    Measurement
        ``value`` = U_loss; ``per_record`` = None (an aggregate over populations);
        ``details``: ``n_populations``, ``n_itemsets``, ``max`` (worst population).

    Notes
    -----
    Checked on Adult (SPEC §2 hierarchies, six QIs, minSup 0.05): 5608 itemsets,
    3011 distinct populations; fully suppressed QIs give 0.0489 (0.0515 over all
    itemsets), Li & Li's 0.05; the original table gives 0.
    """
    pops = large_populations(dataset, min_support)
    if pops.n_itemsets == 0:
        raise SdcevalError(
            f"u_loss: no population of data set {dataset.name!r} has support >= "
            f"min_support={min_support}; lower min_support")
    est = UniformEstimator(dataset, release, "u_loss").counts(pops.predicates(dedupe))
    true = pops.counts[pops.first] if dedupe else pops.counts
    per_pop = js_divergence(normalize(true), normalize(est))
    return Measurement("u_loss", float(per_pop.mean()), None,
                       details={"n_populations": int(len(per_pop)),
                        "n_itemsets": int(pops.n_itemsets),
                        "max": float(per_pop.max())})
