"""The box archive of PBG-EA: Dewri et al. 2010's Algorithm 1, "updator using ⪰_box"
(D10 §5; DEWRI.md §1.9–1.10, A29).

For a candidate ``T`` with quality vector ``I(T)`` and box ``B(T) = ⌊I(T)/ε⌋``:

1. if the archive is empty, ``T`` is inserted (go to 7);
2. ``S_dominate`` = the members ``T`` box-dominates;
3. they are removed;
4. ``S_dominated`` = the remaining members that box-dominate ``T``;
5. ``S_box`` = the remaining members in ``T``'s box;
6. ``T`` is inserted iff both sets are empty;
7. the archive is returned.

So a candidate in an occupied box replaces the occupant only if it dominates its
values (step 2), otherwise the incumbent stays (the paper's "arbitrary" choice); a
candidate equal to a member (a re-generated node) is dropped; a candidate whose box
dominates other boxes removes their occupants even when their values are incomparable.
The result depends on the order of the candidates: they are processed in the order
given (A29), deterministically.

Invariants (D10 Theorems 1–2, tests/test_pbg_archive.py): the archive is a subset of
the minimal PBGs of every candidate fed so far; at most one member per box; no member
box-dominates another; ``|𝒜| ≤ Π_{i<r} b_i`` with ``b_i`` the i-th largest of the
numbers of boxes per axis (⌊K_i/ε_i⌋ + 1 for values in (0, K_i], A32).
"""
from __future__ import annotations

from typing import Hashable, Sequence

import numpy as np

from sdceval.core.errors import SdcevalError
from sdceval.pbg.dominance import _signs, check_eps, check_goals, check_values

_GROW = 64


class BoxArchive:
    """An archive maintained with Algorithm 1 (module docstring).

    Parameters
    ----------
    eps : float or sequence of float
        Discretization vector, one positive number per objective (a single number for
        all).
    goals : sequence of {"min", "max"}
        Direction of each objective; values are given in their natural form.
    names : sequence of str, optional
        Objective names, for messages.

    Attributes
    ----------
    eps : ndarray (r,)
    goals : tuple of str
    """

    def __init__(self, eps, goals: Sequence[str], names: Sequence[str] | None = None):
        self.goals = check_goals(goals)
        r = len(self.goals)
        self.names = tuple(names) if names is not None else None
        self.eps = check_eps(eps, r, self.names)
        self._sign = _signs(self.goals)
        self._keys: list = []
        # members' values and boxes, both in the minimized sense (max columns negated),
        # in arrays with spare rows so that an update is a few vectorized comparisons
        self._vals = np.zeros((_GROW, r))
        self._box = np.zeros((_GROW, r), dtype=np.int64)
        self._n = 0
        # every quality vector offered so far (`update`'s shortcut)
        self._offered: set = set()

    def __len__(self) -> int:
        return self._n

    def __repr__(self) -> str:
        return (f"BoxArchive({self._n} members, eps={self.eps.tolist()}, "
                f"goals={list(self.goals)})")

    @property
    def keys(self) -> list:
        """Members' keys, in archive order (the order they were inserted, survivors
        only)."""
        return list(self._keys)

    @property
    def values(self) -> np.ndarray:
        """Members' quality vectors, natural orientation, ``(m, r)`` (a copy)."""
        return self._vals[:self._n] * self._sign

    @property
    def boxes(self) -> np.ndarray:
        """Members' boxes ``⌊value/ε⌋``, ``(m, r)`` int64 (a copy)."""
        return (self._box[:self._n] * self._sign.astype(np.int64))

    def update(self, key: Hashable, vector) -> bool:
        """Offer candidate ``key`` with quality vector ``vector`` (natural orientation);
        True if it entered the archive (Algorithm 1).

        A vector offered before (under any key) is rejected at once, which is what
        Algorithm 1 does: when it was offered, a member box-dominated it or shared its
        box (or it entered, and then stays or is removed by a box-dominating
        candidate); a member is only ever removed by one that box-dominates it, and
        ⪰_box is transitive, so some member still box-dominates the vector or shares
        its box.  Re-visited nodes (most of an EA's candidates) cost a set lookup."""
        try:
            v = np.asarray(vector, dtype=np.float64)
        except (TypeError, ValueError):
            v = None
        if v is None or v.shape != (len(self.goals),) or not np.isfinite(v).all():
            v = check_values(vector, len(self.goals), "quality vector")
            if len(v) != 1:
                raise SdcevalError("archive: update takes one quality vector at a time")
            if not np.isfinite(v).all():
                raise SdcevalError("archive: quality vector values must be finite to be "
                                   "placed in a box; leave out the objective that is "
                                   "infinite")
            v = v[0]
        vec = tuple(v.tolist())
        if vec in self._offered:
            return False
        self._offered.add(vec)
        w = v * self._sign
        b = np.floor(v / self.eps).astype(np.int64) * self._sign.astype(np.int64)
        n = self._n
        if n:
            vals, box = self._vals[:n], self._box[:n]
            same = (box == b).all(axis=1)
            # step 2: T ⪰_box member — box dominates when boxes differ, else values
            t_box = (b <= box).all(axis=1) & ~same
            t_val = same & (w <= vals).all(axis=1) & (w < vals).any(axis=1)
            remove = t_box | t_val
            # steps 4–5 over the members that remain: member ⪰_box T, or same box
            m_box = (box <= b).all(axis=1) & ~same
            blocks = (m_box | same) & ~remove
            if remove.any():
                self._drop(remove)
            if blocks.any():
                return False
        self._add(key, w, b)
        return True

    def _drop(self, mask: np.ndarray) -> None:
        keep = np.flatnonzero(~mask)
        k = len(keep)
        self._vals[:k] = self._vals[keep]
        self._box[:k] = self._box[keep]
        self._keys = [self._keys[i] for i in keep.tolist()]
        self._n = k

    def _add(self, key, w: np.ndarray, b: np.ndarray) -> None:
        if self._n == len(self._vals):
            self._vals = np.concatenate([self._vals, np.zeros_like(self._vals)])
            self._box = np.concatenate([self._box, np.zeros_like(self._box)])
        self._vals[self._n] = w
        self._box[self._n] = b
        self._keys.append(key)
        self._n += 1
