"""The node engine's cache of class tables: `CacheMixin` of
`sdceval.lattice.engine.NodeEngine`.

An LRU bounded in number (``cache_tables``) and bytes (``cache_bytes``), held in slots
with parallel arrays (levels, class count, last use; allocated by `NodeEngine.__init__`)
so that choosing a node's roll-up source, the cached more specific node with the fewest
classes, is a few dictionary probes or one vectorized comparison (`classes_of`).
"""
from __future__ import annotations

import numpy as np

from sdceval.lattice.class_table import ClassTable

# class count of an empty cache slot (never chosen as a predecessor)
_EMPTY = np.iinfo(np.int64).max


class CacheMixin:
    """Roll-up through the cache of class tables (module docstring)."""

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
