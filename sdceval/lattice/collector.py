"""The batch being filled by the node engine's batched roll-up
(`sdceval.lattice.streaming`), handed out as a `ClassBatch`."""
from __future__ import annotations

import numpy as np

from sdceval.lattice.batch import ClassBatch, LazyIds
from sdceval.lattice.class_table import ClassTable


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
