"""The generalization lattice of a data set's quasi-identifier hierarchies.

Dewri et al. 2010 §3 (DEWRI.md §1.6): QI ``i`` has a hierarchy of height ``h_i`` (its
levels run ``0..h_i``, 0 the leaves); a *node* is one level per QI, ``(n_1, ..., n_d)``
with ``0 ≤ n_i ≤ h_i``; the lattice has ``Π (h_i + 1)`` nodes and an edge joins two nodes
whose levels differ by one on exactly one QI (Σ |n_i − m_i| = 1).  The *height* of a
node is Σ n_i; the bottom (all zeros) is the original table, the top (all ``h_i``) the
fully generalized one.

Node ids are the mixed-radix number of the levels, the first QI most significant:

    id = Σ_i n_i · stride_i,   stride_d = 1,   stride_i = stride_{i+1} · (h_{i+1} + 1),

so ids run ``0..size-1`` and sort the nodes lexicographically by their levels (the order
of `sdceval.methods.generalization.nodes_at_height`).  `encode` and `decode` work on
single nodes and on arrays of nodes.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from sdceval.core.errors import SdcevalError

#: largest lattice whose nodes `Lattice.nodes` / `Lattice.nodes_at_height` enumerate
#: (a levels array of this many rows; evaluating that many nodes is the real limit)
MAX_ENUMERATE = 20_000_000
#: node ids are int64: lattices of at least this many nodes cannot be numbered
_MAX_IDS = 2 ** 62


class Lattice:
    """The lattice of full-domain generalizations over hierarchies of given heights.

    Parameters
    ----------
    heights : sequence of int
        Height of each QI's hierarchy (number of levels above the leaves), schema order.
    names : sequence of str, optional
        QI names, for messages (default ``q0, q1, ...``).

    Attributes
    ----------
    heights : ndarray of int64, shape (d,)
    names : tuple of str
    radices : ndarray of int64
        ``heights + 1``: number of levels of each QI.
    strides : ndarray of int64
        Mixed-radix weight of each QI's level in a node id.
    size : int
        ``Π (h_i + 1)`` (a Python int: it may exceed int64 for many QIs).
    max_height : int
        Height of the top node, Σ h_i.
    """

    def __init__(self, heights: Sequence[int], names: Sequence[str] | None = None):
        heights = [int(h) for h in heights]
        if not heights:
            raise SdcevalError("lattice: needs at least one quasi-identifier")
        if names is None:
            names = [f"q{i}" for i in range(len(heights))]
        names = tuple(str(n) for n in names)
        if len(names) != len(heights):
            raise SdcevalError(f"lattice: {len(names)} names for {len(heights)} heights")
        bad = [(n, h) for n, h in zip(names, heights) if h < 0]
        if bad:
            raise SdcevalError(f"lattice: hierarchy height of {bad[0][0]!r} is {bad[0][1]}; "
                               "heights are >= 0")
        self.names = names
        self.heights = np.asarray(heights, dtype=np.int64)
        self.radices = self.heights + 1
        self.size = 1
        for r in heights:
            self.size *= r + 1
        self.max_height = int(self.heights.sum())
        if self.size < _MAX_IDS:
            strides = np.ones(len(heights), dtype=np.int64)
            for i in range(len(heights) - 2, -1, -1):
                strides[i] = strides[i + 1] * self.radices[i + 1]
            self.strides = strides
        else:
            self.strides = None  # ids unavailable; `_need_ids` says why

    @classmethod
    def of(cls, dataset) -> "Lattice":
        """The lattice of ``dataset``'s QIs (schema order, their hierarchies' heights)."""
        qis = list(dataset.schema.qis)
        if not qis:
            raise SdcevalError(
                f"lattice: data set {dataset.name!r} has no quasi-identifiers; give some "
                "columns role 'qi' (e.g. --qi age,sex)")
        return cls([dataset.hierarchy(q).height for q in qis], qis)

    @property
    def n_qis(self) -> int:
        return len(self.heights)

    def __len__(self) -> int:
        return self.size

    def __repr__(self) -> str:
        per = ", ".join(f"{n}:{h}" for n, h in zip(self.names, self.heights.tolist()))
        return f"Lattice(size={self.size}, heights={{{per}}})"

    def _per_qi(self) -> str:
        return ", ".join(f"{n} {r}" for n, r in zip(self.names, self.radices.tolist()))

    def _need_ids(self) -> None:
        if self.strides is None:
            raise SdcevalError(
                f"lattice: {self.size:,} nodes (levels per quasi-identifier: "
                f"{self._per_qi()}) is too many to number with 64-bit ids; use fewer "
                "quasi-identifiers or coarser hierarchies (fewer levels)")

    # -- ids and levels -------------------------------------------------------------
    def check(self, levels) -> np.ndarray:
        """``levels`` as an int64 array (one node ``(d,)`` or many ``(m, d)``), or a
        `SdcevalError` naming the first QI whose level is outside ``0..h``."""
        arr = np.asarray(levels)
        if arr.dtype.kind not in "iu":
            if arr.dtype.kind == "f" and np.all(np.isfinite(arr)) and np.all(arr == np.round(arr)):
                arr = arr.astype(np.int64)
            else:
                raise SdcevalError(f"lattice: levels must be integers, got {levels!r}"
                                   if arr.ndim <= 1 and arr.size <= 20
                                   else "lattice: levels must be integers")
        arr = arr.astype(np.int64, copy=False)
        if arr.ndim not in (1, 2) or arr.shape[-1] != self.n_qis:
            raise SdcevalError(
                f"lattice: a node has one level per quasi-identifier ({self.n_qis}: "
                f"{', '.join(self.names)}), got shape {tuple(int(s) for s in arr.shape)}")
        bad = (arr < 0) | (arr > self.heights)
        if bad.any():
            i = int(np.flatnonzero(bad.reshape(-1, self.n_qis).any(axis=0))[0])
            v = int(arr.reshape(-1, self.n_qis)[:, i][bad.reshape(-1, self.n_qis)[:, i]][0])
            raise SdcevalError(
                f"lattice: level {v} for quasi-identifier {self.names[i]!r} is outside "
                f"0..{int(self.heights[i])}")
        return arr

    def encode(self, levels):
        """Node id(s) of ``levels``: an int for one node ``(d,)``, an int64 array for
        ``(m, d)``."""
        self._need_ids()
        arr = self.check(levels)
        ids = arr @ self.strides
        return int(ids) if arr.ndim == 1 else ids.astype(np.int64, copy=False)

    def decode(self, ids):
        """Levels of node id(s): a tuple of ints for one id, an ``(m, d)`` int64 array for
        an array of ids."""
        self._need_ids()
        arr = np.asarray(ids)
        if arr.dtype.kind not in "iu":
            raise SdcevalError("lattice: node ids must be integers")
        arr = arr.astype(np.int64, copy=False)
        if ((arr < 0) | (arr >= self.size)).any():
            bad = int(arr.reshape(-1)[((arr < 0) | (arr >= self.size)).reshape(-1)][0])
            raise SdcevalError(f"lattice: node id {bad} is outside 0..{self.size - 1}")
        out = (arr[..., None] // self.strides) % self.radices
        return tuple(int(v) for v in out) if arr.ndim == 0 else out

    def height_of(self, levels):
        """Height Σ n_i of a node (int) or of each row of an ``(m, d)`` array."""
        arr = self.check(levels)
        s = arr.sum(axis=-1)
        return int(s) if arr.ndim == 1 else s

    @property
    def bottom(self) -> tuple[int, ...]:
        return (0,) * self.n_qis

    @property
    def top(self) -> tuple[int, ...]:
        return tuple(int(h) for h in self.heights)

    # -- neighbours --------------------------------------------------------------------
    def successors(self, levels) -> np.ndarray:
        """Nodes one level up on one QI, ``(m, d)`` (QI order; none for the top)."""
        arr = self.check(levels)
        if arr.ndim != 1:
            raise SdcevalError("lattice: successors takes one node")
        up = np.flatnonzero(arr < self.heights)
        out = np.repeat(arr[None, :], len(up), axis=0)
        out[np.arange(len(up)), up] += 1
        return out

    def predecessors(self, levels) -> np.ndarray:
        """Nodes one level down on one QI, ``(m, d)`` (QI order; none for the bottom)."""
        arr = self.check(levels)
        if arr.ndim != 1:
            raise SdcevalError("lattice: predecessors takes one node")
        down = np.flatnonzero(arr > 0)
        out = np.repeat(arr[None, :], len(down), axis=0)
        out[np.arange(len(down)), down] -= 1
        return out

    # -- enumeration -------------------------------------------------------------------
    def _too_large(self, count: int, what: str, limit: int) -> SdcevalError:
        return SdcevalError(
            f"lattice: {what} has {count:,} nodes, more than the {limit:,} that can be "
            f"enumerated (lattice of {self.size:,} nodes; levels per quasi-identifier: "
            f"{self._per_qi()}). Use coarser hierarchies (fewer levels: give a hierarchy "
            "file for each numeric QI), fewer quasi-identifiers, or a method without a "
            "lattice (mondrian); or evaluate single nodes")

    def count_at_height(self, height: int) -> int:
        """Number of nodes of height ``height`` (coefficient of a product of polynomials,
        exact in Python ints)."""
        poly = [1]
        for h in self.heights.tolist():
            new = [0] * (len(poly) + h)
            for i, c in enumerate(poly):
                if c:
                    for j in range(h + 1):
                        new[i + j] += c
            poly = new
        return poly[height] if 0 <= height < len(poly) else 0

    def nodes(self, limit: int = MAX_ENUMERATE) -> np.ndarray:
        """All nodes, ``(size, d)`` int64, in id order; `SdcevalError` above ``limit``."""
        if self.size > limit:
            raise self._too_large(self.size, "the lattice", limit)
        return self.decode(np.arange(self.size, dtype=np.int64))

    def nodes_at_height(self, height: int, limit: int = MAX_ENUMERATE) -> np.ndarray:
        """Nodes whose levels sum to ``height``, ``(m, d)`` int64, lexicographic (= id)
        order; built QI by QI, pruning prefixes that cannot reach ``height``."""
        height = int(height)
        if not 0 <= height <= self.max_height:
            return np.zeros((0, self.n_qis), dtype=np.int64)
        count = self.count_at_height(height)
        if count > limit:
            raise self._too_large(count, f"height {height}", limit)
        # rest[i]: the most QIs i+1.. can add
        rest = np.r_[np.cumsum(self.heights[::-1])[::-1][1:], 0]
        prefix = np.zeros((1, 0), dtype=np.int64)
        sums = np.zeros(1, dtype=np.int64)
        for i, h in enumerate(self.heights.tolist()):
            lv = np.arange(h + 1, dtype=np.int64)
            s = (sums[:, None] + lv[None, :]).reshape(-1)
            ok = (s <= height) & (s + rest[i] >= height)
            rows = np.repeat(np.arange(len(prefix)), h + 1)[ok]
            prefix = np.column_stack([prefix[rows], np.tile(lv, len(sums))[ok]])
            sums = s[ok]
        return prefix
