"""Household-level keys in a generalized release (issue 29 item 4): a household is
never split across classes on a key that is equal for all its members.

A method that generalizes records one class at a time (Mondrian) may publish one
household's region as ``[1-3]`` for one member and ``[2-5]`` for another: their classes
differ on other keys, and each class's cell spans its own members.  Both cells hold
the household's value, but the household is then published as two, and the members of
one household no longer agree on a key that is the household's.  `household_hull`
gives every member the smallest cell that holds all of the members' cells: the hull
``[min lo, max hi]`` of a numeric key, and for a categorical key the lowest node of
its hierarchy that holds it (`lowest_cover`).  Widening a cell never lowers
protection (every record stays compatible with every record it was compatible with);
the published classes are then the distinct combinations of cells, so a class may hold
fewer records than the method's own classes while each record stays compatible with
at least as many (as local suppression's guarantee is stated).

A method that suppresses whole records (full-domain generalization's suppression rule)
publishes a suppressed record's household-level keys as ``*`` while its household mates
keep theirs: the household is split too.  `close_suppression` closes the suppression
over households instead: the household of every suppressed record is suppressed whole,
and a class that the removed mates leave failing its requirement (too small) is
suppressed in turn, to a fixed point.  Suppressing more records never lowers protection
(a ``*`` row matches every record); the cost is records, which the method counts against
its suppression limit (`sdceval.methods.generalization`).
"""
from __future__ import annotations

import numpy as np

from sdceval.core.combos import combine


def lowest_cover(hierarchy, lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per cell ``[lo, hi]`` of leaf codes, the range of the lowest node of
    ``hierarchy`` holding it (the root at worst): the first level at which the
    ancestors of ``lo`` and ``hi`` coincide."""
    out_lo, out_hi = np.array(lo, dtype=np.int64), np.array(hi, dtype=np.int64)
    todo = np.ones(len(out_lo), dtype=bool)
    for level in range(hierarchy.height + 1):
        a_lo, a_hi = hierarchy.generalize(np.asarray(lo, dtype=np.int64), level)
        b_lo, _ = hierarchy.generalize(np.asarray(hi, dtype=np.int64), level)
        hit = todo & (a_lo == b_lo)
        out_lo[hit], out_hi[hit] = a_lo[hit], a_hi[hit]
        todo &= ~hit
        if not todo.any():
            break
    return out_lo, out_hi


def household_hull(dataset, cells: dict) -> tuple[dict, bool]:
    """``cells`` with every household-level key's cell widened to the household's hull
    (module notes), and whether any cell changed.  A data set without households or
    household-level keys gets its cells back."""
    keys = list(dataset.schema.household_keys)
    hh = dataset.households
    if hh is None or not keys:
        return cells, False
    out, changed = dict(cells), False
    H = int(hh.max()) + 1
    for q in keys:
        lo, hi = (np.asarray(c, dtype=np.int64) for c in cells[q])
        h_lo = np.full(H, np.iinfo(np.int64).max, dtype=np.int64)
        h_hi = np.full(H, -1, dtype=np.int64)
        np.minimum.at(h_lo, hh, lo)
        np.maximum.at(h_hi, hh, hi)
        new_lo, new_hi = h_lo[hh], h_hi[hh]
        moved = (new_lo != lo) | (new_hi != hi)
        if not moved.any():
            continue
        hierarchy = dataset.hierarchy(q)
        if not hierarchy.numeric:   # a categorical cell is a node of its hierarchy
            new_lo, new_hi = lowest_cover(hierarchy, new_lo, new_hi)
        out[q], changed = (new_lo, new_hi), True
    return out, changed


def close_suppression(classes: np.ndarray, suppressed: np.ndarray,
                      households: np.ndarray, class_ok) -> np.ndarray:
    """The smallest superset of ``suppressed`` closed over households (module notes):
    a household with a suppressed member is suppressed whole, and every class ``c``
    with records left for which ``class_ok(kept)[c]`` is false (``kept``: the records
    not suppressed; e.g. fewer than ``k`` of them in ``c``) is suppressed, repeated
    until nothing changes.  ``classes``: class id ``0..C-1`` per record;
    ``households``: non-negative household codes per record.  Each round is two
    bincounts over the records; rounds only add records, so at most ``n`` of them run
    (a few on real files).  Returns a new array; ``suppressed`` is not changed."""
    classes = np.asarray(classes, dtype=np.int64)
    households = np.asarray(households, dtype=np.int64)
    supp = np.array(suppressed, dtype=bool)
    if not supp.any():
        return supp
    n_households = int(households.max()) + 1
    while True:
        hit = np.bincount(households, weights=supp, minlength=n_households) > 0
        new = hit[households]
        kept = ~new
        present = np.bincount(classes[kept], minlength=int(classes.max()) + 1) > 0
        bad = present & ~np.asarray(class_ok(kept), dtype=bool)
        new |= bad[classes]
        if np.array_equal(new, supp):
            return supp
        supp = new


def cell_classes(cells: dict, qis) -> np.ndarray:
    """Class ids 0..C-1 of the distinct combinations of the records' cells (both ends of
    every QI's cell: `sdceval.core.combos.combine`)."""
    return combine([np.asarray(part, dtype=np.int64) for q in qis for part in cells[q]])[0]


__all__ = ["cell_classes", "close_suppression", "household_hull", "lowest_cover"]
