"""Class tables of many lattice nodes at once (what the objectives are computed from).

A `ClassBatch` holds the equivalence classes of ``m`` nodes back to back: the classes of
node ``i`` are ``offsets[i]:offsets[i+1]``.  Objectives (`sdceval.lattice.objectives`)
reduce per class and then per node with one segment reduction, so evaluating a whole
lattice costs a few numpy calls per *batch*, not per node.  A single node is a batch of
one (`ClassBatch.of_tables([table])`).

Counts of the sensitive attribute and of the class label are kept sparse, one entry per
(class, code) present, sorted by class then code (CSR-like), with *batch* class indices.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Sequence

import numpy as np

from sdceval.core.errors import SdcevalError


@dataclass(frozen=True, eq=False)
class ClassBatch:
    """Equivalence classes (before suppression) of ``m`` nodes of one engine.

    Attributes
    ----------
    levels : ndarray of int64, shape (m, d)
        The nodes.
    offsets : ndarray of int64, shape (m + 1,)
        Classes of node ``i`` are ``offsets[i]:offsets[i+1]`` (in each node: increasing
        node ids, QI by QI, as `ClassTable`).
    sizes : ndarray of int64, shape (C,)
        Records per class.
    node_ids : ndarray of int, shape (d, C)
        Node id of every class at its node's level of each QI.
    pair_class, pair_value, pair_count : ndarray of int64 or None
        Sensitive counts: ``pair_count`` records of batch class ``pair_class`` have
        sensitive code ``pair_value`` (sorted by class, then code).
    n_sensitive : int
        Sensitive codes S (0 without a sensitive attribute).
    label_class, label_value, label_count : ndarray of int64 or None
        The same for the class label (the CM metric).
    n_labels : int
    """

    levels: np.ndarray
    offsets: np.ndarray
    sizes: np.ndarray
    node_ids: np.ndarray
    pair_class: np.ndarray | None = None
    pair_value: np.ndarray | None = None
    pair_count: np.ndarray | None = None
    n_sensitive: int = 0
    label_class: np.ndarray | None = None
    label_value: np.ndarray | None = None
    label_count: np.ndarray | None = None
    n_labels: int = 0
    #: index of every class's first sensitive pair, when the producer knows it (the
    #: engine's sweeps do); else derived from ``pair_class`` (`pair_starts`)
    given_pair_starts: np.ndarray | None = field(default=None, repr=False)
    #: values computed once per batch and shared by the objectives (`memo`)
    _memo: dict = field(default_factory=dict, repr=False, compare=False)

    def memo(self, key, compute):
        """``compute()``, once per batch and key (objectives share per-class values)."""
        if key not in self._memo:
            self._memo[key] = compute()
        return self._memo[key]

    def memo_for(self, owner, key, compute):
        """`memo` of a value that depends on ``owner`` too (a suppression outcome): the
        entry keeps ``owner`` alive, so its ``id`` cannot be reused by another object
        while the batch lives."""
        full = (key, id(owner))
        if full not in self._memo:
            self._memo[full] = (owner, compute())
        return self._memo[full][1]

    @property
    def n_nodes(self) -> int:
        return len(self.offsets) - 1

    @property
    def n_classes(self) -> int:
        return len(self.sizes)

    @cached_property
    def node_of_class(self) -> np.ndarray:
        """Batch node index ``0..m-1`` of every class, shape (C,)."""
        return np.repeat(np.arange(self.n_nodes, dtype=np.int64), np.diff(self.offsets))

    @cached_property
    def pair_per_class(self) -> np.ndarray:
        """Number of sensitive pairs (distinct sensitive values) of every class."""
        if self.given_pair_starts is not None:
            return np.diff(self.given_pair_starts, append=len(self.pair_class))
        return np.bincount(self.pair_class, minlength=self.n_classes)

    @cached_property
    def pair_starts(self) -> np.ndarray:
        """Index of every class's first sensitive pair (pairs are sorted by class and
        every class has at least one)."""
        if self.given_pair_starts is not None:
            return self.given_pair_starts
        return _run_starts(self.pair_per_class)

    @cached_property
    def label_starts(self) -> np.ndarray:
        """Index of every class's first class-label pair (as `pair_starts`)."""
        return _run_starts(np.bincount(self.label_class, minlength=self.n_classes))

    @cached_property
    def pair_share(self) -> np.ndarray:
        """``p`` of every sensitive pair: its count over its class's size."""
        return self.pair_count / self.sizes[self.pair_class].astype(np.float64)

    def node_of(self, classes: np.ndarray) -> np.ndarray:
        """Batch node index of the given class indices (a search in ``offsets``: cheaper
        than `node_of_class` for a few classes)."""
        return np.searchsorted(self.offsets, classes, side="right") - 1

    def node_sum(self, per_class: np.ndarray) -> np.ndarray:
        """Σ of a per-class array over each node's classes, shape (m,), float64."""
        per_class = np.asarray(per_class, dtype=np.float64)
        if self._all_nonempty:
            # a node's classes are contiguous and many: a segment sum reads them in
            # order (the same additions in the same order as bincount, ~10x faster)
            return np.add.reduceat(per_class, self.offsets[:-1])
        return np.bincount(self.node_of_class, weights=per_class, minlength=self.n_nodes)

    def pair_sum(self, per_pair: np.ndarray) -> np.ndarray:
        """Σ of a per-pair array over each class's sensitive pairs, shape (C,), float64
        (a class has a few pairs: a weighted count beats a segment sum here)."""
        return np.bincount(self.pair_class, weights=per_pair, minlength=self.n_classes)

    @cached_property
    def _all_nonempty(self) -> bool:
        return bool(self.n_nodes) and bool(np.all(self.offsets[1:] > self.offsets[:-1]))

    def node_min(self, per_class: np.ndarray, empty=np.inf) -> np.ndarray:
        """Minimum of a per-class array over each node's classes (``empty`` for a node
        without classes)."""
        return node_segments(np.minimum, per_class, self.offsets, empty)

    def node_max(self, per_class: np.ndarray, empty=-np.inf) -> np.ndarray:
        """Maximum of a per-class array over each node's classes."""
        return node_segments(np.maximum, per_class, self.offsets, empty)

    def sensitive_matrix(self) -> np.ndarray:
        """Dense ``(C, S)`` counts of each sensitive code in each class."""
        if self.pair_class is None:
            raise SdcevalError(
                "lattice objectives: the data set has no sensitive attribute; give one "
                "column role 'sensitive' (the ℓ, t, δ and S_ℓ objectives need it)")
        return _dense(self.pair_class, self.pair_value, self.pair_count, self.n_classes,
                      self.n_sensitive)

    def label_matrix(self) -> np.ndarray:
        """Dense ``(C, L)`` counts of each class-label code in each class."""
        if self.label_class is None:
            raise SdcevalError(
                "lattice objectives: the data set has no class label; give one column "
                "role 'label' (the CM objective needs it)")
        return _dense(self.label_class, self.label_value, self.label_count,
                      self.n_classes, self.n_labels)

    def ids_of(self, classes: np.ndarray) -> np.ndarray:
        """``(d, len(classes))`` node ids of the given classes (decoded for those only
        when the batch's are `LazyIds`)."""
        if isinstance(self.node_ids, LazyIds):
            return self.node_ids.take(classes)
        return np.asarray(self.node_ids)[:, classes]

    def _ids_subset(self, classes: np.ndarray):
        if isinstance(self.node_ids, LazyIds):
            return self.node_ids.select(classes)
        return np.asarray(self.node_ids)[:, classes]

    def class_mask(self, nodes: np.ndarray) -> np.ndarray:
        """Per class: its node is selected by the boolean ``nodes`` (m,)."""
        return np.repeat(np.asarray(nodes, dtype=bool), np.diff(self.offsets))

    def subset(self, nodes: np.ndarray) -> "ClassBatch":
        """The batch of the nodes selected by the boolean ``nodes`` (m,), classes and
        pairs renumbered (only what the objectives read: sizes, node ids, pairs)."""
        nodes = np.asarray(nodes, dtype=bool)
        cmask = self.class_mask(nodes)
        new_index = np.cumsum(cmask) - 1
        counts = np.diff(self.offsets)[nodes]
        offsets = np.r_[0, np.cumsum(counts)].astype(np.int64)

        def pairs(c, v, k):
            if c is None:
                return None, None, None
            pm = cmask[c]
            return new_index[c[pm]], v[pm], k[pm]

        pc, pv, pn = pairs(self.pair_class, self.pair_value, self.pair_count)
        lc, lv, ln = pairs(self.label_class, self.label_value, self.label_count)
        return ClassBatch(self.levels[nodes], offsets, self.sizes[cmask],
                          self._ids_subset(cmask), pc, pv, pn,
                          self.n_sensitive, lc, lv, ln, self.n_labels)

    def pairs_of(self, classes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The sensitive pairs of some classes, class after class, as pair indices, and
        each class's number of pairs."""
        n_pairs = self.pair_per_class[classes]
        starts = self.pair_starts[classes]
        return ranges(starts, starts + n_pairs), n_pairs

    def select_classes(self, idx: np.ndarray) -> "ClassBatch":
        """The batch of the classes ``idx`` (increasing indices), every node kept (with
        those of its classes selected, possibly none), classes and pairs renumbered;
        without label counts (what the sensitive statistics read).  Costs O(selected
        classes and their pairs): nothing reads every pair."""
        idx = np.asarray(idx, dtype=np.int64)
        offsets = np.searchsorted(idx, self.offsets).astype(np.int64)
        pc = pv = pn = None
        if self.pair_class is not None:
            pairs, n_pairs = self.pairs_of(idx)
            pc = np.repeat(np.arange(len(idx), dtype=np.int64), n_pairs)
            pv, pn = self.pair_value[pairs], self.pair_count[pairs]
        return ClassBatch(self.levels, offsets, self.sizes[idx],
                          self._ids_subset(idx), pc, pv, pn, self.n_sensitive)

    @classmethod
    def of_tables(cls, tables: Sequence) -> "ClassBatch":
        """Concatenate `ClassTable`\\ s (of one engine) into a batch."""
        tables = list(tables)
        if not tables:
            raise SdcevalError("class batch: no class tables given")
        if len(tables) == 1:
            t = tables[0]
            # a table of the search's roll-up reads its node ids off its packed keys:
            # only when (and for the classes) asked
            ids = (LazyIds(t.keys, t._engine._ids_of_keys)
                   if getattr(t, "_ids", True) is None else np.asarray(t.node_ids))
            return cls(np.asarray([t.levels], dtype=np.int64),
                       np.array([0, t.n_classes], dtype=np.int64), t.sizes,
                       ids, t.pair_class, t.pair_value, t.pair_count,
                       int(t.n_sensitive), getattr(t, "label_class", None),
                       getattr(t, "label_value", None), getattr(t, "label_count", None),
                       int(getattr(t, "n_labels", 0) or 0))
        counts = np.array([t.n_classes for t in tables], dtype=np.int64)
        offsets = np.r_[0, np.cumsum(counts)].astype(np.int64)
        levels = np.array([t.levels for t in tables], dtype=np.int64).reshape(len(tables), -1)
        node_ids = np.concatenate([np.asarray(t.node_ids) for t in tables], axis=1)
        sizes = np.concatenate([t.sizes for t in tables])

        def pairs(cname, vname, nname):
            if getattr(tables[0], cname, None) is None:
                return None, None, None
            pc = np.concatenate([getattr(t, cname) + o for t, o in zip(tables, offsets[:-1])])
            return (pc, np.concatenate([getattr(t, vname) for t in tables]),
                    np.concatenate([getattr(t, nname) for t in tables]))

        pc, pv, pn = pairs("pair_class", "pair_value", "pair_count")
        lc, lv, ln = pairs("label_class", "label_value", "label_count")
        return cls(levels, offsets, sizes, node_ids, pc, pv, pn,
                   int(tables[0].n_sensitive), lc, lv, ln,
                   int(getattr(tables[0], "n_labels", 0) or 0))


class LazyIds:
    """Node ids ``(d, C)`` of classes, decoded from their packed class keys when read
    (``np.asarray``, indexing); `ClassBatch.ids_of` decodes only the classes asked for
    and a class subset keeps only its keys.  The engine's sweeps hand these out: the
    objectives read the ids of the few suppressed classes only."""

    def __init__(self, keys: np.ndarray, decode):
        self.keys = keys
        self._decode = decode
        self._full = None

    def __array__(self, dtype=None, copy=None):
        if self._full is None:
            self._full = self._decode(self.keys)
        return self._full if dtype is None else self._full.astype(dtype)

    def __getitem__(self, item):
        return np.asarray(self)[item]

    def __len__(self) -> int:
        return len(np.asarray(self))

    def take(self, classes: np.ndarray) -> np.ndarray:
        """``(d, len(classes))``: the ids of some classes."""
        if self._full is not None:
            return self._full[:, classes]
        return self._decode(self.keys[classes])

    def select(self, classes: np.ndarray) -> "LazyIds":
        return LazyIds(self.keys[classes], self._decode)


def ranges(starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """The concatenated ranges ``starts[i]:ends[i]`` as one index array."""
    lens = ends - starts
    total = int(lens.sum())
    if total == 0:
        return np.zeros(0, dtype=np.int64)
    before = np.cumsum(lens) - lens
    return np.repeat(starts - before, lens) + np.arange(total, dtype=np.int64)


def _run_starts(per_class: np.ndarray) -> np.ndarray:
    """Start of each class's run of pairs, from the number of pairs per class."""
    out = np.zeros(len(per_class), dtype=np.int64)
    np.cumsum(per_class[:-1], out=out[1:])
    return out


def _dense(cls_idx, value, count, n_rows, n_cols) -> np.ndarray:
    out = np.zeros((n_rows, n_cols), dtype=np.int64)
    out[cls_idx, value] = count
    return out


def node_segments(ufunc, values, offsets, empty) -> np.ndarray:
    """``ufunc`` reduced over each segment ``offsets[i]:offsets[i+1]`` of ``values``
    (``empty`` for an empty one); float64 unless ``values`` are integers."""
    m = len(offsets) - 1
    values = np.asarray(values)
    if values.dtype.kind not in "iu":
        values = values.astype(np.float64, copy=False)
    out = np.full(m, empty, dtype=values.dtype if values.dtype.kind in "iu" and
                  float(empty).is_integer() else np.float64)
    nonempty = offsets[1:] > offsets[:-1]
    if values.size and nonempty.any():
        out[nonempty] = ufunc.reduceat(values, offsets[:-1][nonempty])
    return out
