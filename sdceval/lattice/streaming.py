"""Batched roll-up of many nodes: `StreamingMixin` of `sdceval.lattice.engine.NodeEngine`
(`NodeEngine.batches`; the engine's docstring, "Batches").

Item keys (bit fields of `sdceval.lattice.encoding._Layout`) are rolled up height by
height, in chunks (`_chunks`) of about `CHUNK_ITEMS` source items, into `ClassBatch`
batches; one height's keys are kept for the next (`_State`), the chunks' work arrays are
reused (`_Scratch`), and the batch being filled is a `sdceval.lattice.collector._Collector`.
"""
from __future__ import annotations

import time
from typing import Iterator

import numpy as np

from sdceval.core.errors import SdcevalError, plain
from sdceval.lattice.batch import ClassBatch, ranges as _ranges
from sdceval.lattice.collector import _Collector
from sdceval.lattice.encoding import _group_pairs

#: source items handled per numpy pass in `NodeEngine.batches`: a chunk's working arrays
#: (a few int64 arrays of this length) stay in a core's L2 cache, where numpy's
#: element-wise passes run about three times faster than from main memory
CHUNK_ITEMS = 1 << 16
#: default most classes of one `ClassBatch` from `NodeEngine.batches`
BATCH_CLASSES = 1 << 18
#: default most bytes of item keys kept from one height for the next one's roll-up
STATE_BYTES = 1 << 30


class StreamingMixin:
    """The class tables of many nodes as batches (module docstring)."""

    def batches(self, nodes=None, max_classes: int = BATCH_CLASSES,
                state_bytes: int = STATE_BYTES, reuse: bool = False) -> Iterator[ClassBatch]:
        """The class tables of many nodes as `ClassBatch` batches (engine docstring, "Batches").

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
        """Batches by roll-up of whole heights (engine docstring, "Batches")."""
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
        # sorted runs (engine docstring, "Batches"), which timsort finds and merges
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
