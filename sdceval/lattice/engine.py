"""The node engine: equivalence classes of lattice nodes on integer codes (issue 7).

`NodeEngine(dataset)` groups the records once into their *distinct QI rows* (the classes
of the bottom node), with, when the schema has a sensitive attribute, the number of
records of each (distinct row, sensitive code) pair.  Every node is then evaluated on
class tables, never on the records:

* **direct** (``rollup=False``): from the distinct rows.  Each QI's leaf codes go through
  a level lookup table (leaf code -> node id at that level, `Hierarchy.node_of`), the
  node ids are combined into one int64 key and the keys are grouped once, by counting
  (mixed radix over the number of nodes of each QI's level, when that key space is
  small) and by sorting otherwise; sizes and sensitive counts are summed per group.
  The sorted key is *packed*: fixed strides over the QIs' leaf counts,
  ``Σ_q id_q · W_q``, so lifting QI q from level a to b changes the key by a table
  lookup ``(anc_b(id) − id) · W_q`` and the other QIs' digits are not touched (the
  general path, used when Π leaves ≥ 2**62, re-combines all node ids at every node).
* **roll-up** (default; ARX's approach, Kohlmayer et al. 2012): a class of a node is a
  union of classes of any more specific node (one whose levels are all lower or equal),
  so the node's classes are computed from a cached, more specific node's class table
  the same way: each class's node ids are lifted to the node's levels (lookup table
  node id at level a -> ancestor at level b) and grouped; of the cached candidates the
  one with the fewest classes is used, the distinct rows (the bottom node, always
  available) otherwise.  The cache is an LRU of class tables bounded in number and bytes.

Both give the same table: classes sorted by their node ids (lexicographic, QI order),
so ``classes(v)`` and ``classes(v, rollup=False)`` are equal array for array.

Memory is linear in ``n``: the distinct rows (``≤ n``), the sensitive pairs (``≤ n``, a
sparse CSR-like layout: one entry per (class, sensitive value) present; the dense
``(n_classes x S)`` matrix only on request, `ClassTable.sensitive_matrix`) and, per
cached table, arrays of its classes (the class id of each distinct row only once asked
for).  No per-record Python loop anywhere.

References
----------
Dewri, Ray, Ray, Whitley (2010). On the identification of property based
generalizations in microdata anonymization. DBSec, §3 (lattice, DEWRI.md §1.6).
Kohlmayer, Prasser, Eckert, Kemper, Kuhn (2012). Flash: efficient, stable and optimal
k-anonymity. SocialCom/PASSAT (roll-up of equivalence classes, as in ARX).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Sequence

import numpy as np

from sdceval.core.errors import SdcevalError
from sdceval.lattice.lattice import Lattice

# group by counting (O(key space)) while the key space is at most
# _COUNT_SLACK * items + _COUNT_MIN, by sorting (O(items log items)) beyond
_COUNT_SLACK = 4
_COUNT_MIN = 1 << 12
# combined keys stay below this; larger spaces are re-ranked on the way
_KEY_LIMIT = 1 << 62
# a rolled-up table's keys are the sorted keys of its source with some digits changed:
# long ascending runs, which a stable sort (timsort/radix) merges rather than re-sorts
SORT_KIND = "stable"
# class count of an empty cache slot (never chosen as a predecessor)
_EMPTY = np.iinfo(np.int64).max


def group_keys(keys: np.ndarray, space: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Group int64 ``keys`` in ``0..space-1``.

    Returns ``(inverse, first, uniq)``: the group of each key (groups numbered in
    increasing key order), the index of one key of each group, and the sorted distinct
    keys.  Counting (a presence mask over the key space) when the space is at most a few
    times the number of keys, else one sort.
    """
    m = len(keys)
    if space <= _COUNT_SLACK * m + _COUNT_MIN:
        present = np.zeros(space, dtype=bool)
        present[keys] = True
        uniq = np.flatnonzero(present)
        rank = np.empty(space, dtype=np.int64)
        rank[uniq] = np.arange(len(uniq), dtype=np.int64)
        inverse = rank[keys]
        first = np.empty(len(uniq), dtype=np.int64)
        first[inverse] = np.arange(m, dtype=np.int64)  # any member represents its group
        return inverse, first, uniq
    order = np.argsort(keys, kind=SORT_KIND)
    sk = keys[order]
    new = np.empty(m, dtype=bool)
    if m:
        new[0] = True
        np.not_equal(sk[1:], sk[:-1], out=new[1:])
    inverse = np.empty(m, dtype=np.int64)
    inverse[order] = np.cumsum(new) - 1
    return inverse, order[new], sk[new]


def _sum_by(groups: np.ndarray, values: np.ndarray, n_groups: int) -> np.ndarray:
    """Σ of int ``values`` per group (exact: float64 sums of counts ≤ 2**53)."""
    return np.bincount(groups, weights=values, minlength=n_groups).astype(np.int64)


@dataclass(frozen=True, eq=False)
class ClassTable:
    """The equivalence classes of one lattice node (before any suppression).

    Classes are numbered ``0..C-1`` in increasing order of their node ids (QI by QI).

    Attributes
    ----------
    levels : tuple of int
    node_ids : ndarray of int32 (int64 for hierarchies of 2**31 leaves), shape (d, C)
        Node id, at the node's level of each QI, of every class (local ids of
        `Hierarchy.labels[level]`); the generalized values the class publishes.
    sizes : ndarray of int64, shape (C,)
        Records per class.
    row_class : ndarray of int64, shape (n_distinct,)
        Class of each distinct QI row of the engine (records: ``row_class[engine.
        row_of_record]``, see `NodeEngine.record_classes`).  Computed on first access
        (one key per distinct row, located among the sorted class keys), so that the
        many nodes of a search that never need it do not pay for it.
    pair_class, pair_value, pair_count : ndarray of int64, shape (P,) or None
        Sensitive counts in CSR-like form: one entry per (class, sensitive code) present,
        sorted by class then code; ``pair_count`` records of class ``pair_class`` have
        sensitive code ``pair_value``.  ``None`` without a sensitive attribute.
    n_sensitive : int
        Number of sensitive codes S (0 without a sensitive attribute).
    """

    levels: tuple
    sizes: np.ndarray
    pair_class: np.ndarray | None
    pair_value: np.ndarray | None
    pair_count: np.ndarray | None
    n_sensitive: int
    #: packed class keys Σ node_id_q · W_q (fixed strides W of the engine), increasing
    keys: np.ndarray | None = None
    _ids: np.ndarray = field(default=None, repr=False)
    _engine: object = field(default=None, repr=False)

    @property
    def node_ids(self) -> np.ndarray:
        return self._ids

    @cached_property
    def row_class(self) -> np.ndarray:
        out = self._engine._row_class(self)
        out.setflags(write=False)
        return out

    @property
    def n_classes(self) -> int:
        return len(self.sizes)

    @property
    def nbytes(self) -> int:
        arrays = [self.keys, self._ids, self.sizes, self.pair_class, self.pair_value,
                  self.pair_count, self.__dict__.get("row_class")]
        return sum(a.nbytes for a in arrays if a is not None)

    @property
    def pair_offsets(self) -> np.ndarray:
        """CSR row pointer: the pairs of class ``c`` are ``offsets[c]:offsets[c+1]``."""
        self._need_sensitive()
        return np.r_[0, np.cumsum(np.bincount(self.pair_class, minlength=self.n_classes))]

    def sensitive_matrix(self) -> np.ndarray:
        """Dense ``(C, S)`` int64 counts of each sensitive code in each class."""
        self._need_sensitive()
        out = np.zeros((self.n_classes, self.n_sensitive), dtype=np.int64)
        out[self.pair_class, self.pair_value] = self.pair_count
        return out

    def _need_sensitive(self) -> None:
        if self.pair_class is None:
            raise SdcevalError(
                "class table: the data set has no sensitive attribute, so there are no "
                "sensitive counts; give one column role 'sensitive'")


class NodeEngine:
    """Class tables of the lattice nodes of ``dataset`` (module docstring).

    Parameters
    ----------
    dataset : Dataset
        Its QIs (schema order) span the lattice; its sensitive column, if any, is
        counted per class.
    cache_tables : int
        Most class tables kept for roll-up (least recently used dropped first).
    cache_bytes : int
        Most bytes of cached class tables (default 512 MiB).  A breadth-first sweep
        of Adult's 17 920-node lattice keeps most immediate predecessors with this;
        see benchmarks/bench_lattice.py for the effect of the bound.
    packed : bool or None
        Key the classes by packed keys (fixed strides over the leaf counts; a roll-up
        changes one digit per lifted QI) — the default whenever Π leaves < 2**62 — or,
        with ``False``, by their node ids re-combined at every node (the general path,
        used beyond that bound).

    Attributes
    ----------
    lattice : Lattice
    qis : tuple of str
    n : int
        Records.
    row_of_record : ndarray of int64, shape (n,)
        Distinct QI row of each record.
    bottom : ClassTable
        The bottom node's table (the distinct rows; ``node_ids`` are leaf codes).
    """

    def __init__(self, dataset, cache_tables: int = 8192, cache_bytes: int = 512 << 20,
                 packed: bool | None = None):
        self.lattice = Lattice.of(dataset)
        self.qis = tuple(dataset.schema.qis)
        self.n = int(dataset.n)
        self.hierarchies = [dataset.hierarchy(q) for q in self.qis]
        self.sensitive = dataset.schema.sensitive
        if int(cache_tables) < 0 or int(cache_bytes) < 0:
            raise SdcevalError("node engine: cache_tables and cache_bytes must be >= 0")
        self.cache_tables = int(cache_tables)
        self.cache_bytes = int(cache_bytes)
        # node ids are stored in the smallest of int32 / int64 that holds them: the
        # cached tables are mostly node ids, so this doubles what the cache holds
        self._id_dtype = (np.int32 if max(h.n_leaves for h in self.hierarchies) < 2**31
                          else np.int64)
        # per QI: _lift[q][a][b] maps node ids of level a to their ancestors at level b
        self._lift = []
        for h in self.hierarchies:
            tables = []
            for a in range(h.height + 1):
                firsts = h.lo[a]  # a leaf under each node of level a
                tables.append([None] * a + [np.ascontiguousarray(h.node_of[b][firsts],
                                                                  dtype=self._id_dtype)
                               for b in range(a, h.height + 1)])
            self._lift.append(tables)
        # per QI: _shift[q][a][b][id] = (ancestor id at b - id) * stride_q, the change of
        # a packed key when QI q goes from level a to b (filled below once strides are known)
        self._shift = []
        self._n_nodes = [[len(lab) for lab in h.labels] for h in self.hierarchies]
        # packed keys: fixed strides over the leaf counts (the most nodes a level has),
        # so lifting one QI changes one digit of the key, whatever the other levels
        radix = [h.n_leaves for h in self.hierarchies]
        space = 1
        for r in radix:
            space *= r
        self._packed = space < _KEY_LIMIT if packed is None else bool(packed)
        if self._packed and space >= _KEY_LIMIT:
            raise SdcevalError(f"node engine: packed keys need Π leaves < 2**62, got {space}")
        self._space = space
        self._radix = np.asarray(radix, dtype=np.int64)
        strides = [1] * len(radix)
        for i in range(len(radix) - 2, -1, -1):
            strides[i] = strides[i + 1] * radix[i + 1]
        self._stride = np.asarray(strides if self._packed else [0] * len(radix),
                                  dtype=np.int64)
        for i, tables in enumerate(self._lift):
            w = int(self._stride[i])
            self._shift.append([[None if t is None
                                 else (t.astype(np.int64) - np.arange(len(t))) * w
                                 for t in row] for row in tables])
        codes = np.stack([np.asarray(dataset.codes(q), dtype=self._id_dtype)
                          for q in self.qis])
        self.n_sensitive = 0
        s_codes = None
        if self.sensitive is not None:
            s_codes = np.asarray(dataset.codes(self.sensitive), dtype=np.int64)
            self.n_sensitive = int(dataset.hierarchy(self.sensitive).n_leaves)
        ones = np.ones(self.n, dtype=np.int64)
        # the records are the items of the bottom node; their pairs are (record, code)
        self.bottom, inverse = self._reduce(
            self.lattice.bottom, codes, self._pack(codes) if self._packed else None, ones,
            None if s_codes is None else np.arange(self.n), s_codes,
            None if s_codes is None else ones)
        self.row_of_record = inverse
        self.row_of_record.setflags(write=False)
        # the cache: slots with parallel arrays, so that choosing a predecessor is one
        # vectorized comparison over all cached nodes
        cap = self.cache_tables
        self._slot_levels = np.zeros((cap, len(self.qis)), dtype=np.int64)
        self._slot_classes = np.full(cap, _EMPTY, dtype=np.int64)
        self._slot_used = np.zeros(cap, dtype=np.int64)
        self._slot_table: list = [None] * cap
        self._slot_of: dict = {}
        self._free = list(range(cap - 1, -1, -1))  # empty slots, lowest on top
        self._cached_bytes = 0
        self._clock = 0
        self.stats = {"direct": 0, "rollup": 0, "hits": 0}

    @property
    def n_distinct(self) -> int:
        """Distinct QI rows (classes of the bottom node)."""
        return self.bottom.n_classes

    # -- grouping ---------------------------------------------------------------------
    def _pack(self, ids: np.ndarray) -> np.ndarray:
        return self._stride @ ids

    def _reduce(self, levels, ids, packed, sizes, pair_item, pair_value, pair_count):
        """Group items (records, or classes of a more specific node) at ``levels``: by
        their packed keys ``packed`` (m,), or, without packing, by their node ids ``ids``
        (d, m) combined into one mixed-radix key; one grouping pass.

        Returns the node's `ClassTable` and the class of each item.
        """
        m = len(sizes)
        if packed is not None:
            key, space = packed, self._space
            small = 1
            for i, lv in enumerate(levels):
                small *= self._n_nodes[i][lv]
            if small <= _COUNT_SLACK * m + _COUNT_MIN < space:
                # the level's own mixed radix is small enough to group by counting
                # (no sort); same order as the packed keys, so those stay sorted
                inverse, first, _ = group_keys(self._keys(levels, ids)[0], small)
                uniq = packed[first]
            else:
                inverse, first, uniq = group_keys(key, space)
        else:
            key, space = self._keys(levels, ids)
            inverse, first, uniq = group_keys(key, space)
        n_cls = len(uniq)
        out_sizes = _sum_by(inverse, sizes, n_cls)
        table = dict(keys=uniq if packed is not None else None, _ids=ids[:, first])
        levels = tuple(int(v) for v in levels)
        if pair_item is None:
            return ClassTable(levels, out_sizes, None, None, None, 0, _engine=self,
                              **table), inverse
        s = self.n_sensitive
        pkey = inverse[pair_item] * s + pair_value
        space = n_cls * s
        if space <= _COUNT_SLACK * len(pkey) + _COUNT_MIN:
            # the dense (class x code) counts, then its nonzero entries in CSR order
            dense = np.bincount(pkey, weights=pair_count, minlength=space).reshape(n_cls, s)
            pc, pv = np.nonzero(dense)  # row-major: by class, then code
            pn = dense[pc, pv].astype(np.int64)
        else:
            pinv, _, puniq = group_keys(pkey, space)
            pn = _sum_by(pinv, pair_count, len(puniq))
            pc, pv = puniq // s, puniq % s
        return ClassTable(levels, out_sizes, pc, pv, pn, s, _engine=self, **table), inverse

    def _keys(self, levels, ids) -> tuple[np.ndarray, int]:
        """One int64 key per column of ``ids`` (d, m): mixed radix over the number of
        nodes of each QI's level, re-ranked (order kept) before it would overflow."""
        key = None
        space = 1
        for i in range(ids.shape[0]):
            radix = self._n_nodes[i][levels[i]]
            if radix == 1:
                continue
            if key is None:
                key = ids[i].astype(np.int64)
            else:
                if space * radix >= _KEY_LIMIT:
                    key, _, uniq = group_keys(key, space)
                    space = len(uniq)
                key *= radix
                key += ids[i]
            space *= radix
        if key is None:
            key = np.zeros(ids.shape[1], dtype=np.int64)
        return key, space

    def _lift_ids(self, table: ClassTable, dst: tuple, keys: bool):
        """Node ids (d, C) of ``table``'s classes lifted to levels ``dst`` and, if
        ``keys``, their packed keys: per lifted QI two table lookups on its node ids
        (new id; change of the key), no division."""
        src_ids = table.node_ids
        ids = src_ids.copy()
        k = table.keys.copy() if keys else None
        for i, (a, b) in enumerate(zip(table.levels, dst)):
            if a != b:
                ids[i] = self._lift[i][a][b][src_ids[i]]
                if keys:
                    k += self._shift[i][a][b][src_ids[i]]
        return ids, k

    def _row_class(self, table: ClassTable) -> np.ndarray:
        """Class of each distinct row: its key among the table's (sorted, distinct)
        class keys; both keyed in one pass so a re-ranking treats them alike."""
        if table.levels == self.bottom.levels:
            return np.arange(self.n_distinct, dtype=np.int64)
        if self._packed:
            rows = self._lift_ids(self.bottom, table.levels, keys=True)[1]
            return np.searchsorted(table.keys, rows)
        rows = self.bottom.node_ids
        lifted = np.stack([self._lift[i][0][b][rows[i]] for i, b in enumerate(table.levels)])
        key, _ = self._keys(table.levels, np.concatenate([table.node_ids, lifted], axis=1))
        c = table.n_classes
        return np.searchsorted(key[:c], key[c:])

    def _rollup(self, source: ClassTable, levels: tuple) -> ClassTable:
        """The table of ``levels`` from the table of a more specific node."""
        ids, packed = self._lift_ids(source, levels, keys=self._packed)
        return self._reduce(levels, ids, packed, source.sizes, source.pair_class,
                            source.pair_value, source.pair_count)[0]

    # -- public -------------------------------------------------------------------------
    def classes(self, levels: Sequence[int], rollup: bool = True) -> ClassTable:
        """The class table of the node ``levels`` (one level per QI, schema order).

        ``rollup=True`` reuses the cached more specific node with the fewest classes
        (the distinct rows if none is cached) and caches the result; ``rollup=False``
        evaluates from the distinct rows and leaves the cache alone.  Both return the
        same table (module docstring).
        """
        lv = self.lattice.check(levels)
        if lv.ndim != 1:
            raise SdcevalError("node engine: classes takes one node (one level per QI)")
        key = tuple(int(v) for v in lv)
        if key == self.bottom.levels:
            return self.bottom
        if not rollup:
            self.stats["direct"] += 1
            return self._rollup(self.bottom, key)
        self._clock += 1
        slot = self._slot_of.get(key)
        if slot is not None:
            self._slot_used[slot] = self._clock
            self.stats["hits"] += 1
            return self._slot_table[slot][0]
        source = self.bottom
        # an immediate predecessor has no more classes than any node below it, so the
        # cached immediate predecessors are looked up first (d dictionary probes); only
        # when none is cached are all cached nodes scanned
        for i, v in enumerate(key):
            if v:
                slot = self._slot_of.get(key[:i] + (v - 1,) + key[i + 1:])
                if slot is not None and self._slot_classes[slot] < source.n_classes:
                    source = self._slot_table[slot][0]
        if source is not self.bottom:
            self._slot_used[self._slot_of[source.levels]] = self._clock
        elif self._slot_of:
            below = (self._slot_levels <= lv).all(axis=1)
            cand = np.where(below, self._slot_classes, _EMPTY)
            best = int(np.argmin(cand))
            if cand[best] < source.n_classes:
                source = self._slot_table[best][0]
                self._slot_used[best] = self._clock
        self.stats["rollup" if source is not self.bottom else "direct"] += 1
        table = self._rollup(source, key)
        self._remember(table, lv)
        return table

    def _remember(self, table: ClassTable, lv: np.ndarray) -> None:
        size = table.nbytes
        if self.cache_tables == 0 or size > self.cache_bytes:
            return
        while not self._free or self._cached_bytes + size > self.cache_bytes:
            # evict the least recently used table
            used = np.where(self._slot_classes == _EMPTY, _EMPTY, self._slot_used)
            self._evict(int(np.argmin(used)))
        slot = self._free.pop()
        self._slot_levels[slot] = lv
        self._slot_classes[slot] = table.n_classes
        self._slot_used[slot] = self._clock
        self._slot_table[slot] = (table, size)
        self._slot_of[table.levels] = slot
        self._cached_bytes += size

    def _evict(self, slot: int) -> None:
        table, size = self._slot_table[slot]
        del self._slot_of[table.levels]
        self._cached_bytes -= size
        self._slot_table[slot] = None
        self._slot_classes[slot] = _EMPTY
        self._free.append(slot)

    def clear_cache(self) -> None:
        """Drop every cached class table (the distinct rows stay)."""
        for slot in list(self._slot_of.values()):
            self._evict(slot)

    @property
    def cached(self) -> int:
        """Number of cached class tables."""
        return len(self._slot_of)

    @property
    def cached_bytes(self) -> int:
        """Bytes of the cached class tables (as counted when they were cached)."""
        return self._cached_bytes

    def record_classes(self, table: ClassTable) -> np.ndarray:
        """Class id of every record, shape (n,)."""
        return table.row_class[self.row_of_record]
