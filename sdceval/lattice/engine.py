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

Modules
-------
`NodeEngine` is assembled from mixins, one concept per module:

* `sdceval.lattice.encoding`: grouping of int64 keys (`group_keys`, by counting or
  sorting), the key-space constants, the item keys' bit fields (`_Layout`);
* `sdceval.lattice.class_table`: `ClassTable`;
* `sdceval.lattice.rollup`: `RollupMixin`, grouping items into a table (`_reduce`) and
  the roll-ups (`_rollup` and the strategies it picks from), the bottom's kept arrays;
* `sdceval.lattice.cache`: `CacheMixin`, the LRU of class tables and the choice of a
  roll-up source (`classes_of`);
* `sdceval.lattice.streaming`: `StreamingMixin`, `batches` and its chunked roll-up;
* `sdceval.lattice.collector`: `_Collector`, the batch being filled;
* this module: `NodeEngine` (set-up, `classes`, `record_classes`) and the byte budget of
  the bottom's kept arrays (`_BOTTOM_LIFT_BYTES`, `_keep_bottom`).

`group_keys`, `ClassTable` and the constants are re-exported here.

References
----------
Dewri, Ray, Ray, Whitley (2010). On the identification of property based
generalizations in microdata anonymization. DBSec, §3 (lattice, DEWRI.md §1.6).
Kohlmayer, Prasser, Eckert, Kemper, Kuhn (2012). Flash: efficient, stable and optimal
k-anonymity. SocialCom/PASSAT (roll-up of equivalence classes, as in ARX).
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

# besides what this module uses, re-exported for the code and tests that import them from
# here: `group_keys`, `SORT_KIND`, `_COUNT_SLACK`, `_COUNT_MIN`, `CHUNK_ITEMS`,
# `BATCH_CLASSES`, `STATE_BYTES`; each is read in the module that defines it, so a patch
# of one goes there
from sdceval.core.errors import SdcevalError
from sdceval.lattice.cache import _EMPTY, CacheMixin
from sdceval.lattice.class_table import ClassTable
from sdceval.lattice.encoding import (  # noqa: F401
    _COUNT_MIN, _COUNT_SLACK, _KEY_BITS, _KEY_LIMIT, SORT_KIND, _Layout, group_keys)
from sdceval.lattice.lattice import Lattice
from sdceval.lattice.rollup import RollupMixin
from sdceval.lattice.streaming import (  # noqa: F401
    BATCH_CLASSES, CHUNK_ITEMS, STATE_BYTES, StreamingMixin)

# most bytes of the bottom's per-(QI, level) key changes kept (`_bottom_lift`); defined
# and read (`NodeEngine._keep_bottom`) here, where tests patch it
_BOTTOM_LIFT_BYTES = 64 << 20


class NodeEngine(RollupMixin, CacheMixin, StreamingMixin):
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

    # -- the bottom's kept arrays (`_bottom_lift`, `_bottom_ids_at`) ----------------------
    def _keep_bottom(self, store: dict, key, t: np.ndarray) -> np.ndarray:
        """Keep ``t`` in ``store`` while the bottom's kept arrays (`_bottom_lift`,
        `_bottom_ids_at`) fit `_BOTTOM_LIFT_BYTES` together; return it either way."""
        if self._bottom_lift_bytes + t.nbytes <= _BOTTOM_LIFT_BYTES:
            store[key] = t
            self._bottom_lift_bytes += t.nbytes
        return t

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

    def record_classes(self, table: ClassTable) -> np.ndarray:
        """Class id of every record, shape (n,)."""
        return table.row_class[self.row_of_record]
