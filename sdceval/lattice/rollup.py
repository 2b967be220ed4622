"""Class tables by grouping and roll-up: `RollupMixin` of
`sdceval.lattice.engine.NodeEngine` (the engine's docstring: "direct" and "roll-up").

`_reduce` groups items (the records at set-up, or a more specific node's classes with
their node ids lifted, `_lift_ids`) into a node's `ClassTable`.  `_rollup` computes a
node's table from a more specific node's, by the first of these that applies:

* `_rollup_bottom_counted`: no sensitive or label counts, from the distinct rows into a
  node whose own key space is small: counted, no sort;
* `_rollup_merged`: no sensitive or label counts: one sort of ``key << cb | size``;
* `_rollup_counted` / `_rollup_sorted`: packed keys, grouped by counting over the node's
  own key space / by sorting;
* node ids re-combined into a mixed-radix key (`_reduce`; unpacked keys, the general path).

It uses what `NodeEngine.__init__` sets up (`_lift`, `_shift`, `_stride`, `_radix`,
`_n_nodes`, `_space`, `_count_bits`, `bottom`, ...) and `NodeEngine._keep_bottom`, the
byte budget of the bottom's kept arrays.
"""
from __future__ import annotations

import numpy as np

from sdceval.lattice.class_table import ClassTable
from sdceval.lattice.encoding import (
    _COUNT_MIN, _COUNT_SLACK, _KEY_LIMIT, SORT_KIND, _group_pairs, _sum_by, group_keys)


class RollupMixin:
    """Grouping and roll-up of class tables (module docstring)."""

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
