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
  Without sensitive or label counts (k-anonymity alone) a roll-up is one sort of int64
  values ``packed key << b | class size``: lifted keys are the source's plus a lookup
  per lifted QI, sizes are differences of a running sum at the ends of runs of equal
  keys, and node ids are read off the keys only when asked for (`_rollup_merged`).
  From the distinct rows into a node whose own key space (the product of its levels'
  node counts) is at most a few times the number of rows — a search's start nodes,
  high on several QIs — the rows' node ids are combined into that small key and the
  class sizes counted over it, without a sort (`_rollup_bottom_counted`).

Both give the same table: classes sorted by their node ids (lexicographic, QI order),
so ``classes(v)`` and ``classes(v, rollup=False)`` are equal array for array.

**Class label.**  When the schema has a label column (role ``label``, the CM metric;
``NodeEngine(dataset, label=...)``, default: tracked when there is one), the engine
counts one *combined code* per record, ``v = s·L + l`` (sensitive code ``s``, label code
``l`` of ``L``; just ``s`` or ``l`` when only one is tracked), so one set of (class, v)
counts is rolled up; a table's sensitive pairs are its runs over ``l`` and its label
pairs (``label_class, label_value, label_count``, `ClassTable.label_matrix`) are its
counts summed over ``s``.

Memory is linear in ``n``: the distinct rows (``≤ n``), the sensitive pairs (``≤ n``, a
sparse CSR-like layout: one entry per (class, sensitive value) present; the dense
``(n_classes x S)`` matrix only on request, `ClassTable.sensitive_matrix`) and, per
cached table, arrays of its classes (the class id of each distinct row only once asked
for).  No per-record Python loop anywhere.

Batches
-------
`NodeEngine.batches` evaluates many nodes (default: the whole lattice) and yields
`ClassBatch` batches, each node's rows equal to `classes` of that node.  It works on
*items*, one per (class, combined code) present, each one int64 key of bit fields
(`_Layout`), most significant first:

    key = [node id of QI 1 | ... | node id of QI d | s | l | count],

each QI field as wide as its leaf codes need (a node id at any level is below the leaf
count), the count field as wide as ``n``.  Keys of a node's items sorted increasingly are
its classes in `ClassTable` order, and within a class its codes in order; a class is a
run of equal QI fields.  The order:

1. Height by height from the bottom.  Every node of height ``h`` is rolled up from one
   immediate predecessor (height ``h − 1``, one level lower on one QI ``q``) kept from
   the previous height, the one with the fewest items (ties: the later QI); a node none
   of whose predecessors is kept (not asked for, or over ``state_bytes``) is lifted from
   the distinct rows on all its QIs.  Within a height the nodes are ordered by lifted QI
   and level, then lexicographically — the order of the batches' rows (use
   ``batch.levels``).
2. The nodes of a height are processed in *chunks* of about `CHUNK_ITEMS` source items
   (their working arrays stay in the L2 cache), each chunk with a fixed number of numpy
   passes whatever its number of nodes: gather the source items back to back; *lift*
   the QI field, ``key += Δ_{q,a}[(key >> off_q) & mask_q]`` with
   ``Δ_{q,a}[x] = (anc_{a+1}(x) − x) << off_q`` (one lookup table per QI and level, all
   slices of the chunk lifting the same (q, a) at once); *sort* each node's items with
   numpy's stable sort (timsort: the lift is monotone — a hierarchy's nodes are numbered
   in leaf order — so a node's items remain sorted runs, one per child node id, which
   timsort finds and merges); *merge* equal keys (neighbours whose xor is below the
   count field: the counts add up) by one compaction; *emit*: class starts where the
   xor of neighbours reaches the QI fields, sizes as differences of a running count at
   the class ends, the class keys (QI fields) kept for node ids decoded by
   shift-and-mask only when read (`LazyIds`: the objectives read the suppressed
   classes' only), each class's first pair, pair class / code / count read off the
   items.
3. Batches are filled in place and handed out once ``max_classes`` items (so at most as
   many classes and pairs) are reached; a node with more is a batch of its own.
   ``reuse=True`` writes every batch into the same arrays.

Memory: the previous height's item keys and the current one's, each in a buffer of at
most ``state_bytes`` (default 1 GiB; about 2 × 8 bytes × the items of the largest
height, under 2 × 160 MB on Adult), one batch (about 56 bytes per item, 15 MB at
the default ``max_classes``) and the chunk's work arrays
(about 3 MB).  When the keys need more than 62 bits (many QIs with many leaves and
many records), the batches come from `classes` node by node.

Measured (``python benchmarks/bench_lattice.py --repeat 3``, best of 3, on the 2-core
machine shared with other jobs, whose speed drifts by up to 1.5x within a day; node by
node, roll-up took 13.5 s and direct evaluation 30 s): adult-train with Dewri et al.'s
8 QIs and occupation sensitive, all 17 920 nodes (25.7 million classes, 72.3 million
sensitive pairs) in 3.9 s = 218 µs per node (``reuse=True``: 3.3 s); steps: merge 1.0,
classes 1.0, pairs 0.5, sort 0.5, lift 0.5, gather 0.2 s; with income as the class
label and 7 QIs, 8 960 nodes in 3.0 s (pairs 1.4 s: the label counts); a 1 000 000-record
resample of adult-train sets up in 0.34 s and sweeps its lattice in 4.4 s at a peak RSS
of 0.72 GB (0.47 GB of it the data frames).  What remains is the per-item cost, some
20 numpy passes over 79 million source items.

References
----------
Dewri, Ray, Ray, Whitley (2010). On the identification of property based
generalizations in microdata anonymization. DBSec, §3 (lattice, DEWRI.md §1.6).
Kohlmayer, Prasser, Eckert, Kemper, Kuhn (2012). Flash: efficient, stable and optimal
k-anonymity. SocialCom/PASSAT (roll-up of equivalence classes, as in ARX).
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from functools import cached_property
from typing import Iterator, Sequence

import numpy as np

from sdceval.core.errors import SdcevalError, plain
from sdceval.lattice.batch import ClassBatch, LazyIds, ranges as _ranges
from sdceval.lattice.lattice import Lattice

# group by counting (O(key space)) while the key space is at most
# _COUNT_SLACK * items + _COUNT_MIN, by sorting (O(items log items)) beyond
_COUNT_SLACK = 4
_COUNT_MIN = 1 << 12
# most bytes of the bottom's per-(QI, level) key changes kept (`_bottom_lift`)
_BOTTOM_LIFT_BYTES = 64 << 20
# combined keys stay below this; larger spaces are re-ranked on the way
_KEY_LIMIT = 1 << 62
# a rolled-up table's keys are the sorted keys of its source with some digits changed:
# long ascending runs, which a stable sort (timsort/radix) merges rather than re-sorts
SORT_KIND = "stable"
# class count of an empty cache slot (never chosen as a predecessor)
_EMPTY = np.iinfo(np.int64).max
#: source items handled per numpy pass in `NodeEngine.batches`: a chunk's working arrays
#: (a few int64 arrays of this length) stay in a core's L2 cache, where numpy's
#: element-wise passes run about three times faster than from main memory
CHUNK_ITEMS = 1 << 16
#: default most classes of one `ClassBatch` from `NodeEngine.batches`
BATCH_CLASSES = 1 << 18
#: default most bytes of item keys kept from one height for the next one's roll-up
STATE_BYTES = 1 << 30
#: item keys use at most this many bits, so that the difference of two keys is an int64
_KEY_BITS = 62


def group_keys(keys: np.ndarray, space: int, kind: str = SORT_KIND
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Group int64 ``keys`` in ``0..space-1``.

    Returns ``(inverse, first, uniq)``: the group of each key (groups numbered in
    increasing key order), the index of one key of each group, and the sorted distinct
    keys.  Counting (a presence mask over the key space) when the space is at most a few
    times the number of keys, else one sort of kind ``kind`` (stable, for keys in long
    sorted runs; quicksort for keys in no order, e.g. the records').
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
    order = np.argsort(keys, kind=kind)
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


def _group_pairs(cls_idx, value, count, n_classes, n_values):
    """(class, value, Σ count) per (class, value) present, sorted by class then value."""
    key = cls_idx * n_values + value
    space = n_classes * n_values
    if space <= _COUNT_SLACK * len(key) + _COUNT_MIN:
        dense = np.bincount(key, weights=count, minlength=space).reshape(n_classes, n_values)
        pc, pv = np.nonzero(dense)  # row-major: by class, then value
        return pc.astype(np.int64), pv.astype(np.int64), dense[pc, pv].astype(np.int64)
    inv, _, uniq = group_keys(key, space)
    return uniq // n_values, uniq % n_values, _sum_by(inv, count, len(uniq))


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
    label_class, label_value, label_count : ndarray of int64, shape (Q,) or None
        The same for the class label (`Schema.label`, role ``label``; the CM metric):
        ``label_count`` records of class ``label_class`` have label code ``label_value``.
        ``None`` when the engine does not track a label (`NodeEngine` ``label``).
    n_labels : int
        Number of label codes L (0 without label tracking).
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
    label_class: np.ndarray | None = None
    label_value: np.ndarray | None = None
    label_count: np.ndarray | None = None
    n_labels: int = 0
    #: the counts the engine rolls up: (class, value, count) per (class, combined code)
    #: present, combined code ``s · L + l`` (sensitive and label), ``s`` or ``l``; the
    #: sensitive or label pairs themselves when only one of them is tracked
    _values: tuple | None = field(default=None, repr=False)

    @property
    def node_ids(self) -> np.ndarray:
        if self._ids is None and self.keys is not None:
            # tables of `NodeEngine._rollup_merged` read their node ids off the packed
            # keys when first asked (a search's roll-up needs only the lifted QIs')
            object.__setattr__(self, "_ids", self._engine._ids_of_keys(self.keys))
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
                  self.pair_count, self.label_class, self.label_value, self.label_count,
                  self.__dict__.get("row_class"), *(self._values or ())]
        seen = set()
        total = 0
        for a in arrays:
            if a is not None and id(a) not in seen:  # the value pairs may be the pairs
                seen.add(id(a))
                total += a.nbytes
        return total

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

    def label_matrix(self) -> np.ndarray:
        """Dense ``(C, L)`` int64 counts of each class-label code in each class."""
        if self.label_class is None:
            raise SdcevalError(
                "class table: no class-label counts; give one column role 'label' (and "
                "leave NodeEngine's label=True) for the CM metric")
        out = np.zeros((self.n_classes, self.n_labels), dtype=np.int64)
        out[self.label_class, self.label_value] = self.label_count
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
                 packed: bool | None = None, label: bool | None = None):
        self.lattice = Lattice.of(dataset)
        self.qis = tuple(dataset.schema.qis)
        self.n = int(dataset.n)
        self.hierarchies = [dataset.hierarchy(q) for q in self.qis]
        self.sensitive = dataset.schema.sensitive
        schema_label = dataset.schema.label
        if label is None:
            label = schema_label is not None
        elif label and schema_label is None:
            raise SdcevalError(
                f"node engine: label=True but data set {dataset.name!r} has no column with "
                "role 'label'; give one (e.g. label = \"income\" in the schema) or pass "
                "label=False")
        self.label = schema_label if label else None
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
        # a packed key and a class size fit one int64 (`_rollup_merged`); 0: they don't
        cb = int(dataset.n).bit_length()
        self._count_bits = cb if self._packed and (space - 1).bit_length() + cb <= 62 else 0
        self._shifts_cb: dict = {}
        self._bottom_kc = None
        self._bottom_lifts: dict = {}
        self._bottom_lift_bytes = 0
        self._bottom_digits: dict = {}
        self._bottom_ids: dict = {}  # (QI, level) -> the distinct rows' node ids
        self._bottom_sizes_f = None
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
        self.n_labels = 0
        values = None  # combined code s·L + l of each record (module docstring)
        if self.sensitive is not None:
            values = np.asarray(dataset.codes(self.sensitive), dtype=np.int64)
            self.n_sensitive = int(dataset.hierarchy(self.sensitive).n_leaves)
        if self.label is not None:
            self.n_labels = int(dataset.hierarchy(self.label).n_leaves)
            l_codes = np.asarray(dataset.codes(self.label), dtype=np.int64)
            values = l_codes if values is None else values * self.n_labels + l_codes
        self._n_values = max(self.n_sensitive, 1) * max(self.n_labels, 1)
        ones = np.ones(self.n, dtype=np.int64)
        # the records are the items of the bottom node; their pairs are (record, code)
        self.bottom, inverse = self._reduce(
            self.lattice.bottom, codes, self._pack(codes) if self._packed else None, ones,
            None if values is None else np.arange(self.n), values,
            None if values is None else ones, kind="quicksort")  # records: no runs
        del codes, values, ones
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
        self._high_water = 0  # slots below this index have been used
        self._cached_bytes = 0
        self._clock = 0
        self.stats = {"direct": 0, "rollup": 0, "hits": 0}
        # batched roll-up (`batches`): bit-packed item keys when they fit
        layout = _Layout([h.n_leaves for h in self.hierarchies], self.n_sensitive,
                         self.n_labels, self.n)
        self._layout = layout if layout.bits <= _KEY_BITS and self.n > 0 else None
        self._deltas: dict = {}
        self._bottom_keys = None
        #: seconds per step of the batched roll-up (`batches`), summed over calls
        self.timings: dict = {}

    @property
    def n_distinct(self) -> int:
        """Distinct QI rows (classes of the bottom node)."""
        return self.bottom.n_classes

    # -- grouping ---------------------------------------------------------------------
    def _pack(self, ids: np.ndarray) -> np.ndarray:
        # Σ_q stride_q · id_q by multiply-adds: numpy's integer matmul is a slow loop
        key = np.zeros(ids.shape[1], dtype=np.int64)
        for q, w in enumerate(self._stride.tolist()):
            if w:
                key += ids[q].astype(np.int64) * w
        return key

    def _reduce(self, levels, ids, packed, sizes, pair_item, pair_value, pair_count,
                kind: str = SORT_KIND):
        """Group items (records, or classes of a more specific node) at ``levels``: by
        their packed keys ``packed`` (m,), or, without packing, by their node ids ``ids``
        (d, m) combined into one mixed-radix key; one grouping pass.

        Returns the node's `ClassTable` and the class of each item.
        """
        m = len(sizes)
        if packed is not None:
            key, space = packed, self._space
            small = self._level_space(levels)
            if small <= _COUNT_SLACK * m + _COUNT_MIN < space:
                # the level's own mixed radix is small enough to group by counting
                # (no sort); same order as the packed keys, so those stay sorted
                inverse, first, _ = group_keys(self._keys(levels, ids)[0], small)
                uniq = packed[first]
            else:
                inverse, first, uniq = group_keys(key, space, kind)
        else:
            key, space = self._keys(levels, ids)
            inverse, first, uniq = group_keys(key, space, kind)
        return self._finish(levels, inverse, uniq if packed is not None else None,
                            ids[:, first], sizes, pair_item, pair_value, pair_count)

    def _finish(self, levels, inverse, uniq, first_ids, sizes, pair_item, pair_value,
                pair_count):
        """The `ClassTable` of items grouped into classes (``inverse``; ``uniq`` the
        sorted packed class keys or None; ``first_ids`` the classes' node ids) and the
        class of each item."""
        n_cls = len(first_ids[0]) if len(first_ids) else int(inverse.max(initial=-1)) + 1
        out_sizes = _sum_by(inverse, sizes, n_cls)
        table = dict(keys=uniq, _ids=first_ids)
        levels = tuple(int(v) for v in levels)
        if pair_item is None:
            return ClassTable(levels, out_sizes, None, None, None, 0, _engine=self,
                              **table), inverse
        s = self._n_values
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
        return self._table(levels, out_sizes, (pc, pv, pn), table), inverse

    def _table(self, levels, sizes, values, table) -> ClassTable:
        """A `ClassTable` from the counts per (class, combined code): the sensitive and
        label pairs are its marginals (the pairs themselves when only one is tracked)."""
        vc, vv, vn = values
        s, lab = self.n_sensitive, self.n_labels
        pairs = labels = (None, None, None)
        if s and lab:
            # sorted by (class, s·L + l): the (class, s) pairs are runs
            sv = vv // lab
            new = np.empty(len(vc), dtype=bool)
            new[:1] = True
            np.not_equal(sv[1:], sv[:-1], out=new[1:])
            new[1:] |= vc[1:] != vc[:-1]
            st = np.flatnonzero(new)
            pairs = (vc[st], sv[st], np.add.reduceat(vn, st) if len(st) else vn[:0])
            labels = _group_pairs(vc, vv % lab, vn, len(sizes), lab)
        elif s:
            pairs = values
        else:
            labels = values
        return ClassTable(levels, sizes, *pairs, s, _engine=self, **table,
                          label_class=labels[0], label_value=labels[1],
                          label_count=labels[2], n_labels=lab, _values=values)

    def _level_space(self, levels) -> int:
        """Size of a node's own key space: the product of its levels' node counts (the
        mixed radix of `_keys`), which decides grouping by counting over sorting."""
        space = 1
        for i, lv in enumerate(levels):
            space *= self._n_nodes[i][lv]
        return space

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
        values = source._values or (None, None, None)
        if self._count_bits and source._values is None and source.keys is not None:
            if source is self.bottom:
                small = self._level_space(levels)
                if small <= _COUNT_SLACK * source.n_classes + _COUNT_MIN:
                    return self._rollup_bottom_counted(levels, small)
            return self._rollup_merged(source, levels)
        if self._packed and source.keys is not None:
            small = self._level_space(levels)
            if not small <= _COUNT_SLACK * source.n_classes + _COUNT_MIN < self._space:
                return self._rollup_sorted(source, levels, values)
            return self._rollup_counted(source, levels, values, small)
        ids, packed = self._lift_ids(source, levels, keys=self._packed)
        return self._reduce(levels, ids, packed, source.sizes, *values)[0]

    def _rollup_merged(self, source: ClassTable, levels: tuple) -> ClassTable:
        """Roll-up of a table without sensitive or label counts (k-anonymity alone, the
        searches' common case): each class becomes one int64 ``packed key << cb |
        size``, lifted by adding the changes of its lifted QIs' digits; one sort of
        these, and a class is a run of equal keys whose size is a difference of the
        running sum of the low bits.  No argsort and no gather by a sort order; the
        node ids are read off the keys when asked for (`ClassTable.node_ids`), and only
        the lifted QIs' digits of the source are."""
        cb = self._count_bits
        if source is self.bottom:  # the most used source: its combined keys are kept
            if self._bottom_kc is None:
                self._bottom_kc = (source.keys << cb) | source.sizes
            key = self._bottom_kc.copy()
            for i, b in enumerate(levels):
                if b:
                    key += self._bottom_lift(i, b)
        else:
            key = (source.keys << cb) | source.sizes
            for i, (a, b) in enumerate(zip(source.levels, levels)):
                if a != b:
                    digit = (source.node_ids[i] if source._ids is not None
                             else self._digit(source.keys, i))
                    key += np.take(self._shift_cb(i, a, b), digit)
        key.sort()  # equal values are interchangeable: no stable sort needed
        m = len(key)
        qk = key >> cb
        last = np.empty(m, dtype=bool)  # the last item of its class
        last[-1:] = True
        np.not_equal(qk[1:], qk[:-1], out=last[:-1])
        ends = np.flatnonzero(last)
        key &= (1 << cb) - 1
        run = np.cumsum(key, out=key)[ends]
        run[1:] -= run[:-1].copy()
        return ClassTable(tuple(int(v) for v in levels), run, None,
                          None, None, 0, keys=qk[ends], _ids=None, _engine=self)

    def _rollup_bottom_counted(self, levels: tuple, small: int) -> ClassTable:
        """`_rollup_merged` from the distinct rows when the node's own key space (the
        mixed radix over its levels' node counts, ``small``) is at most a few times the
        number of rows: the rows' node ids at the node's levels combined into that
        small key, class sizes by one weighted count over it, no sort.  Classes come
        out in the same order (both keys are lexicographic in the node ids, QI by QI),
        so the table equals the sorted one array for array.  A search's start nodes
        are mostly of this kind: high on some QIs, a few hundred classes out of tens of
        thousands of rows (tests/test_lattice_engine)."""
        key = None
        for i, b in enumerate(levels):
            radix = self._n_nodes[i][b]
            if radix == 1:
                continue
            ids = self._bottom_ids_at(i, b)
            if key is None:
                key = ids.copy()
            else:
                key *= radix
                key += ids
        if self._bottom_sizes_f is None:
            self._bottom_sizes_f = self.bottom.sizes.astype(np.float64)
        if key is None:  # the top node: one class
            counts = np.array([float(self.n)])
        else:  # float64 sums of counts are exact up to 2**53 records
            counts = np.bincount(key, weights=self._bottom_sizes_f, minlength=small)
        uniq = np.flatnonzero(counts > 0)  # on a boolean mask: 6x faster than on floats
        sizes = counts[uniq].astype(np.int64)
        ids = np.zeros((len(levels), len(uniq)), dtype=self._id_dtype)
        rest = uniq
        for i in range(len(levels) - 1, -1, -1):
            radix = self._n_nodes[i][levels[i]]
            if radix > 1:
                rest, ids[i] = np.divmod(rest, radix)
        return ClassTable(tuple(int(v) for v in levels), sizes, None, None, None, 0,
                          keys=self._pack(ids), _ids=ids, _engine=self)

    def _bottom_ids_at(self, i: int, b: int) -> np.ndarray:
        """QI ``i``'s node ids at level ``b`` of the distinct rows, as int64; kept, like
        `_bottom_lift`, while they fit `_BOTTOM_LIFT_BYTES`."""
        t = self._bottom_ids.get((i, b))
        if t is None:
            t = self._keep_bottom(self._bottom_ids, (i, b), np.take(
                self._lift[i][0][b], self._bottom_row(i)).astype(np.int64))
        return t

    def _bottom_lift(self, i: int, b: int) -> np.ndarray:
        """The change of the bottom's combined keys (`_rollup_merged`) when QI ``i``
        goes to level ``b``.  Kept while they fit `_BOTTOM_LIFT_BYTES`: a search rolls
        up dozens of nodes from the bottom, and an addition of a kept array costs a
        third of a lookup by the node ids."""
        t = self._bottom_lifts.get((i, b))
        if t is None:
            t = self._keep_bottom(self._bottom_lifts, (i, b),
                                  np.take(self._shift_cb(i, 0, b), self._bottom_row(i)))
        return t

    def _bottom_row(self, i: int) -> np.ndarray:
        """QI ``i``'s leaf codes of the distinct rows, contiguous: a lookup by a strided
        row of the node ids is 3x slower."""
        digits = self._bottom_digits.get(i)
        if digits is None:
            digits = self._bottom_digits[i] = np.ascontiguousarray(self.bottom.node_ids[i])
        return digits

    def _keep_bottom(self, store: dict, key, t: np.ndarray) -> np.ndarray:
        """Keep ``t`` in ``store`` while the bottom's kept arrays (`_bottom_lift`,
        `_bottom_ids_at`) fit `_BOTTOM_LIFT_BYTES` together; return it either way."""
        if self._bottom_lift_bytes + t.nbytes <= _BOTTOM_LIFT_BYTES:
            store[key] = t
            self._bottom_lift_bytes += t.nbytes
        return t

    def _digit(self, keys: np.ndarray, i: int) -> np.ndarray:
        """QI ``i``'s node ids from packed keys."""
        return (keys // self._stride[i]) % self._radix[i]

    def _ids_of_keys(self, keys: np.ndarray) -> np.ndarray:
        """Node ids (d, C) from packed keys."""
        return ((keys[None, :] // self._stride[:, None]) % self._radix[:, None]).astype(
            self._id_dtype)

    def _shift_cb(self, i: int, a: int, b: int) -> np.ndarray:
        """`_shift` of QI ``i`` from level ``a`` to ``b``, pre-shifted by the count bits."""
        t = self._shifts_cb.get((i, a, b))
        if t is None:
            t = self._shifts_cb[(i, a, b)] = self._shift[i][a][b] << self._count_bits
        return t

    def _rollup_counted(self, source: ClassTable, levels: tuple, values, small: int
                        ) -> ClassTable:
        """Roll-up grouped by counting over the node's own (small) mixed-radix key
        space; rows of node ids are lifted one by one (the unlifted ones are the
        source's, not copied), and the packed keys of the classes only are rebuilt."""
        src = source.node_ids
        rows = [src[i] if a == b else self._lift[i][a][b][src[i]]
                for i, (a, b) in enumerate(zip(source.levels, levels))]
        key = None
        for i, row in enumerate(rows):
            radix = self._n_nodes[i][levels[i]]
            if radix == 1:
                continue
            key = row.astype(np.int64) if key is None else np.add(key * radix, row)
        if key is None:
            key = np.zeros(source.n_classes, dtype=np.int64)
        inverse, first, _ = group_keys(key, small)
        ids = np.stack([row[first] for row in rows])
        uniq = self._pack(ids)
        return self._finish(levels, inverse, uniq, ids, source.sizes, *values)[0]

    def _rollup_sorted(self, source: ClassTable, levels: tuple, values) -> ClassTable:
        """Roll-up grouped by sorting the packed keys: only the lifted QIs' key digits
        change (one lookup each on the source's node ids) and only the classes'
        representatives get new node ids, so nothing of size d × C is copied (the
        single-node path of the searches)."""
        src = source.node_ids
        key = None
        lifted = []
        for i, (a, b) in enumerate(zip(source.levels, levels)):
            if a != b:
                shift = self._shift[i][a][b][src[i]]
                key = source.keys + shift if key is None else np.add(key, shift, out=key)
                lifted.append((i, a, b))
        if key is None:
            key = source.keys
        inverse, first, uniq = group_keys(key, self._space)
        ids = src[:, first]
        for i, a, b in lifted:
            ids[i] = self._lift[i][a][b][ids[i]]
        return self._finish(levels, inverse, uniq, ids, source.sizes, *values)[0]

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
        if not rollup:
            if key == self.bottom.levels:
                return self.bottom
            self.stats["direct"] += 1
            return self._rollup(self.bottom, key)
        return self.classes_of(key)

    def classes_of(self, key: tuple) -> ClassTable:
        """`classes` by roll-up of a node given as a tuple of valid Python-int levels,
        unchecked (the searches' many calls on nodes they numbered themselves)."""
        if key == self.bottom.levels:
            return self.bottom
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
            # only the slots ever filled (the free list hands out the lowest first)
            hw = self._high_water
            below = (self._slot_levels[:hw] <= key).all(axis=1)
            cand = np.where(below, self._slot_classes[:hw], _EMPTY)
            best = int(np.argmin(cand))
            if cand[best] < source.n_classes:
                source = self._slot_table[best][0]
                self._slot_used[best] = self._clock
        self.stats["rollup" if source is not self.bottom else "direct"] += 1
        table = self._rollup(source, key)
        self._remember(table, key)
        return table

    def _remember(self, table: ClassTable, lv) -> None:
        size = table.nbytes
        if self.cache_tables == 0 or size > self.cache_bytes:
            return
        while not self._free or self._cached_bytes + size > self.cache_bytes:
            # evict the least recently used table
            used = np.where(self._slot_classes == _EMPTY, _EMPTY, self._slot_used)
            self._evict(int(np.argmin(used)))
        slot = self._free.pop()
        self._high_water = max(self._high_water, slot + 1)
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

    # -- batches --------------------------------------------------------------------------
    def batches(self, nodes=None, max_classes: int = BATCH_CLASSES,
                state_bytes: int = STATE_BYTES, reuse: bool = False) -> Iterator[ClassBatch]:
        """The class tables of many nodes as `ClassBatch` batches (module docstring, "Batches").

        Parameters
        ----------
        nodes : array-like (m, d) of int, optional
            The nodes (one level per QI); repeated nodes are evaluated once.  Default:
            every node of the lattice.
        max_classes : int
            Most classes in one batch, counted as the engine's items — one per (class,
            sensitive code, label code) present — so that it bounds the pairs too; a
            node with more is a batch of its own.
        state_bytes : int
            Most bytes of item keys kept from one height for the next (the nodes over it
            roll up from the distinct rows).
        reuse : bool
            Write every batch into the same arrays (allocated once): faster, but a batch
            is valid only until the next one is asked for — for consumers that reduce
            each batch to per-node values before going on (exhaustive evaluation).

        Yields batches covering every node once, height by height from the bottom (the
        order within a height is the engine's; use ``batch.levels``).  Each node's rows
        equal `classes` of that node: same classes in the same order, node ids, sizes,
        sensitive and label pairs.  Validation happens at the call, not at the first
        ``next``.
        """
        if isinstance(max_classes, bool) or not isinstance(max_classes, (int, np.integer)) \
                or max_classes < 1:
            raise SdcevalError(f"node engine: max_classes must be an integer >= 1, got "
                               f"{plain(max_classes)!r}")
        if isinstance(state_bytes, bool) or not isinstance(state_bytes, (int, np.integer)) \
                or state_bytes < 0:
            raise SdcevalError(f"node engine: state_bytes must be an integer >= 0, got "
                               f"{plain(state_bytes)!r}")
        lat = self.lattice
        lat._need_ids()
        if nodes is None:
            groups = ((h, None) for h in range(lat.max_height + 1))
        else:
            arr = lat.check(nodes)
            if arr.ndim == 1:
                arr = arr[None, :]
            arr = lat.decode(np.unique(lat.encode(arr)))  # id order = lexicographic
            hs = arr.sum(axis=1)
            order = np.argsort(hs, kind="stable")
            arr, hs = arr[order], hs[order]
            cuts = np.flatnonzero(hs[1:] != hs[:-1]) + 1
            groups = [(int(g[0].sum()), g) for g in np.split(arr, cuts) if len(g)]
        groups = ((h, lat.nodes_at_height(h) if g is None else g) for h, g in groups)
        if self._layout is None:
            return self._batches_per_node(groups, int(max_classes))
        return self._batches_rolled(groups, int(max_classes), int(state_bytes), bool(reuse))

    def _batches_per_node(self, groups, max_classes: int) -> Iterator[ClassBatch]:
        """Batches from `classes` node by node (item keys wider than 62 bits)."""
        tables, total = [], 0
        for _, nodes in groups:
            for levels in nodes:
                t = self.classes(levels)
                if tables and total + t.n_classes > max_classes:
                    yield ClassBatch.of_tables(tables)
                    tables, total = [], 0
                tables.append(t)
                total += t.n_classes
        if tables:
            yield ClassBatch.of_tables(tables)

    def _bottom_items(self) -> np.ndarray:
        """Item keys (`_Layout`) of the bottom node: one per (distinct row, combined
        code), increasing."""
        if self._bottom_keys is None:
            lay, b = self._layout, self.bottom
            if b._values is None:
                vc, vv, vn = np.arange(b.n_classes), None, b.sizes
            else:
                vc, vv, vn = b._values
            keys = self._bottom_class_keys()[vc] << lay.cshift
            if vv is not None:
                if self.n_sensitive and self.n_labels:
                    keys |= (vv // self.n_labels) << (lay.cb + lay.lb)
                    keys |= (vv % self.n_labels) << lay.cb
                else:
                    keys |= vv << lay.cb
            keys |= vn
            keys.setflags(write=False)
            self._bottom_keys = keys
        return self._bottom_keys

    def _delta(self, q: int, a: int, b: int) -> np.ndarray:
        """Change of an item key when QI ``q`` goes from level ``a`` to ``b``, by the
        node id at level ``a`` (the field's ancestor minus the field, shifted)."""
        t = self._deltas.get((q, a, b))
        if t is None:
            lift = self._lift[q][a][b].astype(np.int64)
            t = (lift - np.arange(len(lift), dtype=np.int64)) << self._layout.off[q]
            self._deltas[(q, a, b)] = t
        return t

    def _tick(self, step: str, t0: float) -> float:
        t = time.perf_counter()
        self.timings[step] = self.timings.get(step, 0.0) + t - t0
        return t

    def _batches_rolled(self, groups, max_classes: int, state_bytes: int, reuse: bool
                        ) -> Iterator[ClassBatch]:
        """Batches by roll-up of whole heights (module docstring, "Batches")."""
        col = _Collector(max_classes, self._decode_class_keys, self.n_sensitive > 0,
                         self.n_labels > 0, self.n_sensitive, self.n_labels, reuse)
        scratch = _Scratch()
        pool = [None, None]  # the key buffers of two consecutive heights, reused
        state, prev_h = None, None
        chunk_items = min(CHUNK_ITEMS, max_classes)
        for h, targets in groups:
            if len(targets) == 0:
                continue
            if prev_h != h - 1:
                state = None  # the height below was not asked for: from the bottom
            if h == 0:
                bottom = self._bottom_items()
                full = col.make_room(len(bottom))
                if full is not None:
                    yield full
                col.add_table(self.bottom, self._bottom_class_keys())
                state = _State(bottom)
                state.add(np.zeros(1, dtype=np.int64), np.array([0, len(bottom)]))
                state, prev_h = state.freeze(), h
                continue
            t0 = time.perf_counter()
            plan = self._plan(targets, state)
            # the items of this height go to one of two buffers, each used by every
            # other height (so its pages are mapped once, not per height), grown by
            # doubling up to the budget
            need = min(int(plan["lens"].sum()), state_bytes // 8)
            buf = pool[h % 2]
            if buf is None or len(buf) < need:
                have = 0 if buf is None else len(buf)
                pool[h % 2] = buf = None  # let the old one go first
                buf = pool[h % 2] = np.empty(min(max(need, 2 * have), state_bytes // 8),
                                             dtype=np.int64)
            new_state = _State(buf)
            self._tick("plan", t0)
            for lo, hi in _chunks(plan["lens"], chunk_items):
                keys, bounds = self._roll_keys(plan, lo, hi, state, scratch, new_state)
                full = col.make_room(len(keys))
                if full is not None:
                    yield full
                self._emit(keys, bounds, plan["targets"][lo:hi], col, scratch)
            state, prev_h = new_state.freeze(), h
        last = col.flush()
        if last is not None:
            yield last

    def _plan(self, targets: np.ndarray, state: "_State | None") -> dict:
        """For each target node its source (an immediate predecessor kept in ``state``,
        the one with the fewest items; else the bottom) and the processing order."""
        lat = self.lattice
        m, d = targets.shape
        ids = lat.encode(targets)
        src = np.full(m, -1, dtype=np.int64)
        q_sel = np.full(m, -1, dtype=np.int64)
        if state is not None and len(state.sorted_ids):
            best = np.full(m, np.iinfo(np.int64).max, dtype=np.int64)
            last = len(state.sorted_ids) - 1
            for q in range(d):
                ok = targets[:, q] > 0
                if not ok.any():
                    continue
                pid = ids - lat.strides[q]
                pos = np.minimum(np.searchsorted(state.sorted_ids, pid), last)
                found = ok & (state.sorted_ids[pos] == pid)
                where = state.order[pos]
                cost = state.lens[where]
                # ties go to the later QI: less of the key is disturbed by its lift
                better = found & (cost <= best)
                best[better] = cost[better]
                src[better] = where[better]
                q_sel[better] = q
        from_bottom = src < 0
        qstar = np.where(from_bottom, np.argmax(targets > 0, axis=1), q_sel)
        a_star = np.where(from_bottom, 0, targets[np.arange(m), qstar] - 1)
        # by lifted QI and level, so that every lift is one slice of a chunk
        order = np.lexsort((ids, a_star, qstar, from_bottom))
        src = src[order]
        lens = np.full(m, len(self._bottom_items()), dtype=np.int64)
        if state is not None and len(state.sorted_ids):
            lens[src >= 0] = state.lens[src[src >= 0]]
        return dict(targets=targets[order], ids=ids[order], src=src, qstar=qstar[order],
                    a=a_star[order], bottom=from_bottom[order], lens=lens)

    def _roll_keys(self, plan: dict, lo: int, hi: int, state: "_State | None",
                   scratch: "_Scratch", new_state: "_State"):
        """Item keys of the targets ``lo:hi`` of ``plan`` (one chunk), ordered and merged
        (into ``new_state``'s buffer when there is room), and each target's bounds."""
        t0 = time.perf_counter()
        src = plan["src"][lo:hi]
        bottom = self._bottom_items()
        if state is not None:
            keys, start, end = state.keys, state.start, state.end
            pieces = [bottom if s < 0 else keys[start[s]:end[s]] for s in src.tolist()]
        else:
            pieces = [bottom] * (hi - lo)
        nb = np.concatenate(([0], np.cumsum(plan["lens"][lo:hi])))
        n = int(nb[-1])
        scratch.ensure(n)
        ks = scratch.k[:n]
        np.concatenate(pieces, out=ks)
        t0 = self._tick("gather", t0)
        self._lift_items(ks, nb, plan, lo, hi, scratch)
        t0 = self._tick("lift", t0)
        # a stable sort (timsort) of every target's items: the lift leaves them in
        # sorted runs (module docstring, "Batches"), which timsort finds and merges
        for a, b in zip(nb[:-1].tolist(), nb[1:].tolist()):
            ks[a:b].sort(kind="stable")
        self._tick("sort", t0)
        keys, nb = self._merge_items(ks, nb, scratch, new_state)
        new_state.add(plan["ids"][lo:hi], nb, keys)
        return keys, nb

    def _lift_items(self, ks, nb, plan, lo, hi, scratch):
        """Lift every target's items from its source's levels to its own, in place: per
        lifted QI one shift-and-mask to read the field, one lookup of the key's change
        (`_delta`) and one addition."""
        lay = self._layout
        bot = plan["bottom"][lo:hi]
        qs, aa = plan["qstar"][lo:hi], plan["a"][lo:hi]
        one = np.flatnonzero(~bot)
        if len(one):
            # immediate predecessors: targets ordered by (QI, level), one slice per lift
            i0, i1 = int(one[0]), int(one[-1]) + 1
            runs = _runs(qs[i0:i1], aa[i0:i1]) + i0
            for r0, r1 in zip(runs[:-1].tolist(), runs[1:].tolist()):
                q, a = int(qs[r0]), int(aa[r0])
                s0, s1 = int(nb[r0]), int(nb[r1])
                v = ks[s0:s1]
                x = scratch.t1[:s1 - s0]
                np.right_shift(v, lay.off[q], out=x)
                np.bitwise_and(x, lay.qmask[q], out=x)
                t = scratch.t2[:s1 - s0]
                np.take(self._delta(q, a, a + 1), x, out=t)
                v += t
        many = np.flatnonzero(bot)
        if len(many):
            targets = plan["targets"][lo:hi]
            for q in range(targets.shape[1]):
                sel = many[targets[many, q] > 0]
                for b in np.unique(targets[sel, q]).tolist():
                    t = sel[targets[sel, q] == b]
                    idx = _ranges(nb[t], nb[t + 1])
                    v = ks[idx]
                    x = (v >> lay.off[q]) & lay.qmask[q]
                    ks[idx] = v + np.take(self._delta(q, 0, b), x)

    def _merge_items(self, ks, nb, scratch, new_state):
        """Merge the (sorted) items of equal key within each target (their counts add
        up) and move them to their final array: ``new_state``'s next free slice when it
        has room, a new array otherwise."""
        lay = self._layout
        lim = 1 << lay.cb
        n = len(ks)
        t0 = time.perf_counter()
        dup = np.zeros(0, dtype=np.int64)
        if n > 1:
            x = scratch.t1[:n - 1]
            np.bitwise_xor(ks[1:], ks[:-1], out=x)
            x[nb[1:-1] - 1] = lim  # a target's last item and the next target's first
            f = scratch.f[:n - 1]
            np.less(x, lim, out=f)
            dup = np.flatnonzero(f)
        out = new_state.take(n - len(dup))
        if len(dup):
            # item i+1 has item i's key: its count goes to the first item of the run
            run = np.flatnonzero(np.concatenate(([True], dup[1:] != dup[:-1] + 1)))
            kill = dup + 1
            ks[dup[run]] += np.add.reduceat(ks[kill] & (lim - 1), run)
            keep = scratch.f[:n]
            keep[...] = True
            keep[kill] = False
            np.take(ks, np.flatnonzero(keep), out=out)
            nb = nb - np.searchsorted(kill, nb)
        else:
            out[...] = ks
        self._tick("merge", t0)
        return out, nb

    def _emit(self, ks, nb, targets, col: "_Collector", scratch: "_Scratch") -> None:
        """Write the classes of ordered, merged items (sizes, node ids, pairs) into the
        collector's current batch."""
        lay = self._layout
        t0 = time.perf_counter()
        n_items = len(ks)
        scratch.ensure(n_items)
        cf = scratch.f[:n_items]  # item i starts a class: its QI fields differ
        cf[:1] = True
        if n_items > 1:
            x = scratch.t1[:n_items - 1]
            np.bitwise_xor(ks[1:], ks[:-1], out=x)
            np.greater_equal(x, 1 << lay.cshift, out=cf[1:])
        cf[nb[:-1][nb[:-1] < n_items]] = True  # and so does every target's first item
        cst = np.flatnonzero(cf)
        n_cls = len(cst)
        c0 = col.c
        s, lab = self.n_sensitive, self.n_labels
        if (s > 0) != (lab > 0):  # the items are the output pairs: counts in place
            p0 = col.p if s else col.l
            counts = (col.pn if s else col.ln)[p0:p0 + n_items]
        else:
            counts = scratch.t2[:n_items]
        np.bitwise_and(ks, (1 << lay.cb) - 1, out=counts)
        # sizes: differences of the running count at each class's last item
        run = scratch.t3[:n_items]
        np.cumsum(counts, out=run)
        ends = run[np.append(cst[1:], n_items) - 1]
        sizes = col.sizes[c0:c0 + n_cls]
        sizes[:1] = ends[:1]
        np.subtract(ends[1:], ends[:-1], out=sizes[1:])
        col.ncls.append(np.diff(np.searchsorted(cst, nb)))
        col.levels.append(targets)
        # the classes' node ids are decoded from these keys only when read (few are:
        # the suppressed classes')
        np.right_shift(ks[cst], lay.cshift, out=col.ckeys[c0:c0 + n_cls])
        t0 = self._tick("classes", t0)
        if s and lab:
            # a (class, sensitive code) pair starts where the key above the label
            # field changes (the neighbours' xor is still in t1)
            pf = scratch.f2[:n_items]
            pf[:1] = True
            if n_items > 1:
                np.greater_equal(scratch.t1[:n_items - 1], 1 << (lay.cb + lay.lb),
                                 out=pf[1:])
            pf |= cf
            pst = np.flatnonzero(pf)
            p0, n_p = col.p, len(pst)
            np.add(np.flatnonzero(cf[pst]), p0, out=col.ps[c0:c0 + n_cls])
            out = col.pc[p0:p0 + n_p]
            np.add.accumulate(cf[pst], dtype=np.int64, out=out)
            out += c0 - 1
            out = col.pv[p0:p0 + n_p]
            np.right_shift(ks[pst], lay.cb + lay.lb, out=out)
            out &= (1 << lay.sb) - 1
            ends = run[np.append(pst[1:], n_items) - 1]
            pn = col.pn[p0:p0 + n_p]
            pn[:1] = ends[:1]
            np.subtract(ends[1:], ends[:-1], out=pn[1:])
            col.p += n_p
            lc, lv, ln = self._label_pairs(ks, counts, cst, cf, c0, sizes, scratch)
            l0, n_l = col.l, len(lc)
            np.add(lc, c0, out=col.lc[l0:l0 + n_l])
            col.lv[l0:l0 + n_l] = lv
            col.ln[l0:l0 + n_l] = ln
            col.l += n_l
        elif s or lab:
            p0 = col.p if s else col.l
            if s:  # the classes' first pairs: their first items
                np.add(cst, p0, out=col.ps[c0:c0 + n_cls])
            pc, pv = (col.pc, col.pv) if s else (col.lc, col.lv)
            out = pc[p0:p0 + n_items]
            np.add.accumulate(cf, dtype=np.int64, out=out)
            out += c0 - 1
            out = pv[p0:p0 + n_items]
            np.right_shift(ks, lay.cb, out=out)
            out &= (1 << (lay.sb + lay.lb)) - 1
            if s:
                col.p += n_items
            else:
                col.l += n_items
        col.c += n_cls
        col.items += n_items
        self._tick("pairs", t0)

    def _label_pairs(self, ks, counts, cst, cf, c0, sizes, scratch):
        """(class, label, count) of items that also carry the sensitive code: a running
        sum of the counts of each label code but the first (few: a label is a class
        attribute) differenced at the class ends; the first code's are the rest of the
        class sizes."""
        lay = self._layout
        lab = self.n_labels
        n_items, n_cls = len(ks), len(sizes)
        code = scratch.t1[:n_items]
        if lab > 16:
            np.right_shift(ks, lay.cb, out=code)
            code &= (1 << lay.lb) - 1
            cls_of = np.add.accumulate(cf, dtype=np.int64)
            cls_of -= 1
            return _group_pairs(cls_of, code, counts, n_cls, lab)
        np.right_shift(ks, lay.cb, out=code)
        code &= (1 << lay.lb) - 1
        dense = np.empty((n_cls, lab), dtype=np.int64)
        part = scratch.t3[:n_items]
        last = np.append(cst[1:], n_items) - 1
        for v in range(1, lab):
            if lab == 2:
                np.multiply(counts, code, out=part)
            else:
                np.multiply(counts, code == v, out=part)
            np.cumsum(part, out=part)
            ends = part[last]
            dense[:1, v] = ends[:1]
            np.subtract(ends[1:], ends[:-1], out=dense[1:, v])
        np.subtract(sizes, dense[:, 1:].sum(axis=1), out=dense[:, 0])
        flat = dense.reshape(-1)
        nz = np.flatnonzero(flat)  # by class, then label code
        pc = nz // lab
        return pc, nz - pc * lab, flat[nz]

    def _decode_class_keys(self, class_keys: np.ndarray) -> np.ndarray:
        """Node ids (d, C) of class keys (the batches' `LazyIds`)."""
        out = np.empty((len(self.qis), len(class_keys)), dtype=self._id_dtype)
        self._ids_of(class_keys, out)
        return out

    def _bottom_class_keys(self) -> np.ndarray:
        """Class keys (the QI fields of `_bottom_items`, unshifted) of the bottom's
        classes."""
        lay, ids = self._layout, self.bottom.node_ids
        keys = np.zeros(self.bottom.n_classes, dtype=np.int64)
        for q in range(len(self.qis)):
            keys |= ids[q].astype(np.int64) << (lay.off[q] - lay.cshift)
        return keys

    def _ids_of(self, class_keys: np.ndarray, out: np.ndarray) -> None:
        """Node ids (d, C) of class keys (the QI fields of item keys), into ``out``."""
        lay = self._layout
        keys = class_keys
        narrow = lay.bits - lay.cshift <= 32 and out.dtype == np.int32
        if narrow:  # half the bytes per pass
            keys = class_keys.astype(np.uint32)
        for q in range(len(self.qis)):
            row = out[q]
            if lay.qbits[q] == 0:
                row[...] = 0
            elif narrow:
                row = row.view(np.uint32)
                np.right_shift(keys, np.uint32(lay.off[q] - lay.cshift), out=row)
                np.bitwise_and(row, np.uint32(lay.qmask[q]), out=row)
            else:
                np.bitwise_and(keys >> (lay.off[q] - lay.cshift), lay.qmask[q], out=row,
                               casting="unsafe")


# -- batches: the class tables of many nodes at once ---------------------------------------


class _Layout:
    """Bit fields of an item key of the batched roll-up, most significant first: one
    field per QI (the node id at the node's level; as many bits as its leaf codes
    need), the sensitive code, the label code, the record count."""

    def __init__(self, n_leaves, n_sensitive, n_labels, n):
        self.cb = int(n).bit_length()
        self.lb = int(n_labels - 1).bit_length() if n_labels else 0
        self.sb = int(n_sensitive - 1).bit_length() if n_sensitive else 0
        self.cshift = self.cb + self.lb + self.sb  # the class key: the QI fields
        self.qbits = [int(k - 1).bit_length() for k in n_leaves]
        self.off = [0] * len(self.qbits)
        acc = self.cshift
        for q in range(len(self.qbits) - 1, -1, -1):
            self.off[q] = acc
            acc += self.qbits[q]
        self.bits = acc
        self.qmask = [(1 << b) - 1 for b in self.qbits]


def _runs(*keys) -> np.ndarray:
    """Start indices of the runs of equal rows of the given equal-length arrays, and
    their end (length ``runs + 1``)."""
    m = len(keys[0])
    new = np.zeros(m, dtype=bool)
    new[:1] = True
    for k in keys:
        new[1:] |= k[1:] != k[:-1]
    return np.append(np.flatnonzero(new), m)


class _State:
    """Item keys of the nodes of one height, kept for the next height's roll-up: the
    nodes' items back to back in one buffer, as far as it goes."""

    def __init__(self, buffer: np.ndarray):
        self.keys = buffer
        self.used = 0
        self._ids, self._start = [], []

    def take(self, n: int) -> np.ndarray:
        """The next ``n`` free items of the buffer; a new array when it is full."""
        if self.used + n > len(self.keys):
            self.used = len(self.keys) + 1  # full: later (smaller) chunks are not kept
            return np.empty(n, dtype=np.int64)
        out = self.keys[self.used:self.used + n]
        self.used += n
        return out

    def add(self, ids: np.ndarray, bounds: np.ndarray, keys: np.ndarray | None = None):
        """Nodes ``ids`` whose items are ``keys[bounds[i]:bounds[i+1]]`` (``keys``: a
        slice `take` gave, or the whole buffer)."""
        if keys is not None and not np.may_share_memory(keys, self.keys):
            return  # not kept: over the budget
        base = 0 if keys is None else (keys.__array_interface__["data"][0]
                                       - self.keys.__array_interface__["data"][0]) // 8
        self._ids.append(ids)
        self._start.append(bounds + base)

    def freeze(self) -> "_State":
        ids = np.concatenate(self._ids) if self._ids else np.zeros(0, dtype=np.int64)
        self.start = (np.concatenate([b[:-1] for b in self._start]) if self._start
                      else np.zeros(0, dtype=np.int64))
        self.end = (np.concatenate([b[1:] for b in self._start]) if self._start
                    else np.zeros(0, dtype=np.int64))
        self.lens = self.end - self.start
        self.order = np.argsort(ids, kind="stable")
        self.sorted_ids = ids[self.order]
        return self


class _Scratch:
    """Work arrays of one chunk, reused from chunk to chunk: numpy passes over arrays
    that stay in the cache run several times faster than over new ones."""

    def __init__(self):
        self.cap = 0

    def ensure(self, n: int) -> None:
        if n > self.cap:
            self.cap = max(n, CHUNK_ITEMS)
            self.k, self.t1, self.t2, self.t3 = (np.empty(self.cap, dtype=np.int64)
                                                 for _ in range(4))
            self.f, self.f2 = np.empty(self.cap, dtype=bool), np.empty(self.cap, dtype=bool)


class _Collector:
    """The batch being filled by `NodeEngine.batches`: arrays allocated for at most
    ``max_classes`` items (so as many classes and pairs at most), written in place
    chunk by chunk, handed out as a `ClassBatch` of views when full."""

    def __init__(self, max_classes: int, decode, has_pairs: bool,
                 has_labels: bool, n_sensitive: int, n_labels: int, reuse: bool = False):
        self.max_classes = max_classes
        self.reuse = reuse
        self._spare = None
        self.decode = decode  # class keys -> node ids (d, C)
        self.has_pairs, self.has_labels = has_pairs, has_labels
        self.n_sensitive, self.n_labels = n_sensitive, n_labels
        self._new(max_classes)

    def _new(self, cap: int) -> None:
        self.levels: list = []
        self.ncls: list = []
        self.c = self.p = self.l = self.items = 0
        if self.reuse and self._spare is not None and self._spare[0] >= cap:
            (self.cap, self.sizes, self.ckeys, self.ps, self.pc, self.pv, self.pn, self.lc,
             self.lv, self.ln) = self._spare
            return
        self.cap = cap
        self.sizes = np.empty(cap, dtype=np.int64)
        self.ckeys = np.empty(cap, dtype=np.int64)
        e = np.empty(0, dtype=np.int64)
        self.ps = self.pc = self.pv = self.pn = self.lc = self.lv = self.ln = e
        if self.has_pairs:
            self.ps, self.pc, self.pv, self.pn = (np.empty(cap, dtype=np.int64)
                                                  for _ in range(4))
        if self.has_labels:
            self.lc, self.lv, self.ln = (np.empty(cap, dtype=np.int64) for _ in range(3))
        if self.reuse:
            self._spare = (cap, self.sizes, self.ckeys, self.ps, self.pc, self.pv, self.pn,
                           self.lc, self.lv, self.ln)

    def make_room(self, items: int) -> ClassBatch | None:
        """Room for ``items`` more items: the full batch to hand out first, if any."""
        out = None
        if self.levels and self.items + items > self.max_classes:
            out = self.flush()
        if self.items + items > self.cap:  # one node larger than a batch
            self._new(max(items, self.max_classes))
        return out

    def flush(self) -> ClassBatch | None:
        if not self.levels:
            return None
        counts = np.concatenate(self.ncls)
        out = dict(levels=np.concatenate(self.levels).astype(np.int64, copy=False),
                   offsets=np.concatenate(([0], np.cumsum(counts))).astype(np.int64),
                   sizes=self.sizes[:self.c],
                   node_ids=LazyIds(self.ckeys[:self.c], self.decode),
                   n_sensitive=self.n_sensitive, n_labels=self.n_labels)
        if self.has_pairs:
            out.update(pair_class=self.pc[:self.p], pair_value=self.pv[:self.p],
                       pair_count=self.pn[:self.p], given_pair_starts=self.ps[:self.c])
        if self.has_labels:
            out.update(label_class=self.lc[:self.l], label_value=self.lv[:self.l],
                       label_count=self.ln[:self.l])
        self._new(self.max_classes)
        return ClassBatch(**out)

    def add_table(self, t: ClassTable, class_keys: np.ndarray) -> None:
        """Append a whole `ClassTable` (the bottom node) with its classes' keys."""
        c, n_cls = self.c, t.n_classes
        self.sizes[c:c + n_cls] = t.sizes
        self.ckeys[c:c + n_cls] = class_keys
        if self.has_pairs:
            n_p = len(t.pair_class)
            np.add(np.searchsorted(t.pair_class, np.arange(n_cls)), self.p,
                   out=self.ps[c:c + n_cls])
            np.add(t.pair_class, c, out=self.pc[self.p:self.p + n_p])
            self.pv[self.p:self.p + n_p] = t.pair_value
            self.pn[self.p:self.p + n_p] = t.pair_count
            self.p += n_p
        if self.has_labels:
            n_l = len(t.label_class)
            np.add(t.label_class, c, out=self.lc[self.l:self.l + n_l])
            self.lv[self.l:self.l + n_l] = t.label_value
            self.ln[self.l:self.l + n_l] = t.label_count
            self.l += n_l
        self.levels.append(np.asarray([t.levels], dtype=np.int64))
        self.ncls.append(np.array([n_cls], dtype=np.int64))
        self.c += n_cls
        self.items += max(len(t._values[0]) if t._values else n_cls, 1)


def _chunks(lens: np.ndarray, limit: int):
    """Consecutive ranges ``(lo, hi)`` of ``lens`` each summing to at most ``limit``
    (greedy; a longer item is a range of its own)."""
    m = len(lens)
    cum = np.cumsum(lens)
    out, lo = [], 0
    while lo < m:
        before = int(cum[lo - 1]) if lo else 0
        hi = max(lo + 1, int(np.searchsorted(cum, before + limit, side="right")))
        out.append((lo, hi))
        lo = hi
    return out
