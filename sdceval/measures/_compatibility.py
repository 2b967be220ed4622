"""Compatibility between original records and released rows, for
`sdceval.measures.reidentification` (see its notes): which released groups of cells each
distinct record vector is compatible with (`disjoint_pairs`, `bitset_pairs`), and the
weighting intruder's ``m_j``, the number of original records compatible with released
row ``j`` (`Pairs.record_counts`: the transpose of the record -> group compatibility),
never through an n × n matrix.  Small array tools shared with the measures come first.
"""
from __future__ import annotations

import numpy as np

from sdceval.core.combos import combine

CHUNK = 1 << 20   # elements of a temporary array (bounded memory)


# -- small array tools -----------------------------------------------------------------
def first(ids: np.ndarray, count: int) -> np.ndarray:
    """A row of each id (any: rows with one id are equal where it matters)."""
    rep = np.zeros(count, dtype=np.int64)
    rep[ids] = np.arange(len(ids))
    return rep


def expand(starts: np.ndarray, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Concatenated ranges ``starts[k] .. starts[k] + counts[k] - 1``: (owner k, index)."""
    owner = np.repeat(np.arange(len(counts)), counts)
    offset = np.arange(len(owner)) - np.repeat(np.cumsum(counts) - counts, counts)
    return owner, np.repeat(starts, counts) + offset


def batches(cost: np.ndarray, limit: int = CHUNK):
    """Consecutive slices of ``cost`` whose sums stay under ``limit`` (or one item)."""
    total, start = np.cumsum(cost), 0
    while start < len(cost):
        base = total[start - 1] if start else 0
        end = max(int(np.searchsorted(total, base + limit, side="right")), start + 1)
        yield slice(start, end)
        start = end


# -- cells only: the compatible (vector, group) pairs ----------------------------
def disjoint_pairs(ux: np.ndarray, glo: np.ndarray, ghi: np.ndarray, m: np.ndarray):
    """Compatible (vector, group) pairs when, on every attribute, the non-root cells
    are equal or disjoint; None otherwise.  A vector then meets, for each pattern of
    root cells among the groups, at most one group: the one whose non-root cells are
    those containing the vector's codes (a joint factorization of the ids)."""
    U, d = ux.shape
    G = len(glo)
    if d == 0:
        return np.arange(U), np.zeros(U, dtype=np.int64)
    root = (glo == 0) & (ghi == m - 1)
    rid = np.empty((G, d), dtype=np.int64)
    inside = np.full((U, d), -1, dtype=np.int64)
    radix = np.empty(d, dtype=np.int64)
    for a in range(d):
        keep = ~root[:, a]
        ranges = np.unique(np.stack([glo[keep, a], ghi[keep, a]], axis=1), axis=0)
        lo, hi = ranges[:, 0], ranges[:, 1]
        if (lo[1:] <= hi[:-1]).any():
            return None   # overlapping ranges on this attribute: the general test
        radix[a] = len(lo) + 1   # id len(lo) is the root
        rid[:, a] = np.where(keep, np.searchsorted(lo, glo[:, a]), len(lo))
        if len(lo):
            k = np.searchsorted(lo, ux[:, a], side="right") - 1
            hit = (k >= 0) & (ux[:, a] <= hi[k.clip(0)])
            inside[hit, a] = k[hit]
    us, gs = [], []
    for mask in np.unique(root, axis=0):
        q = np.where(mask, radix - 1, inside)
        ok = np.flatnonzero((q >= 0).all(axis=1))
        # one numbering of the groups' range ids and the vectors' (joint factorization:
        # no mixed-radix key that could overflow on many attributes); ids are distinct
        # per group (its cells), so a vector meets at most the group with its id
        ids, count = combine(list(np.vstack([rid, q[ok]]).T), G + len(ok))
        group_of = np.full(count, -1, dtype=np.int64)
        group_of[ids[:G]] = np.arange(G)
        g = group_of[ids[G:]]
        hit = g >= 0
        us.append(ok[hit])
        gs.append(g[hit])
    return np.concatenate(us), np.concatenate(gs)


def bitset_pairs(ux: np.ndarray, glo: np.ndarray, ghi: np.ndarray, chunk: int = CHUNK):
    """All compatible (vector, group) pairs of any release, in batches: per attribute
    and distinct code of the vectors, the set of groups whose cell contains it as bits;
    a vector's compatible groups are the AND over its attributes.  O(U·G·d/64) time;
    tables, ANDs and yielded batches are bounded by ``chunk`` elements."""
    U, d = ux.shape
    G = len(glo)
    vals = [np.unique(ux[:, a]) for a in range(d)]
    idx = [np.searchsorted(vals[a], ux[:, a]) for a in range(d)]
    top = max(len(v) for v in vals) + 1
    words = int(max(1, min(-(-G // 64), chunk // (top * d))))
    for g0 in range(0, G, 64 * words):
        g1 = min(G, g0 + 64 * words)
        local = np.arange(g1 - g0)
        word = local >> 6
        bit = np.left_shift(np.uint64(1), (local & 63).astype(np.uint64))
        tables = []
        for a in range(d):
            # a group's bit is toggled on at its first code and off past its last: the
            # XOR prefix scan sets it exactly on the codes its cell contains
            toggle = np.zeros((len(vals[a]) + 1, words), dtype=np.uint64)
            np.bitwise_xor.at(toggle, (np.searchsorted(vals[a], glo[g0:g1, a]), word), bit)
            np.bitwise_xor.at(toggle, (np.searchsorted(vals[a], ghi[g0:g1, a], side="right"),
                                       word), bit)
            tables.append(np.bitwise_xor.accumulate(toggle, axis=0))
        step = max(1, chunk // words)
        for c0 in range(0, U, step):
            acc = tables[0][idx[0][c0:c0 + step]]
            for a in range(1, d):
                acc &= tables[a][idx[a][c0:c0 + step]]
            r, w = np.nonzero(acc)
            for sl in batches(np.ones(len(r), dtype=np.int64), max(1, chunk // 64)):
                bits = np.unpackbits(acc[r[sl], w[sl]].astype("<u8").view(np.uint8)
                                     .reshape(-1, 8), axis=1, bitorder="little")
                rr, bb = np.nonzero(bits)
                yield c0 + r[sl][rr], g0 + w[sl][rr] * 64 + bb


class Pairs:
    """The compatible (vector, group) pairs of a cells-only release as batches that can
    be read more than once: the fast path's single batch, or the bitset test's batches,
    kept while they hold at most ``keep`` pairs in all and recomputed otherwise (the
    weighting intruder reads them twice: for ``m_j``, then for the sums over ``C_i``)."""

    def __init__(self, ux, glo, ghi, m, chunk: int = CHUNK, keep: int = CHUNK):
        self.args, self.chunk, self.keep = (ux, glo, ghi), chunk, keep
        fast = disjoint_pairs(ux, glo, ghi, m)
        self.kept = None if fast is None else [fast]
        self.how = ("disjoint cells (sorted look-up)" if fast is not None
                    else "bitset test")

    def __iter__(self):
        if self.kept is not None:
            yield from self.kept
            return
        kept, total = [], 0
        for batch in bitset_pairs(*self.args, chunk=self.chunk):
            total += len(batch[0])
            if kept is not None and total <= self.keep:
                kept.append(batch)
            else:
                kept = None
            yield batch
        if kept is not None:
            self.kept = kept

    def record_counts(self, ucount: np.ndarray, groups: int) -> np.ndarray:
        """``m_g``: the original records compatible with group ``g`` (the sum of the
        record counts ``ucount`` of the vectors compatible with it)."""
        out = np.zeros(groups)
        for owner, group in self:
            out += np.bincount(group, weights=ucount[owner], minlength=groups)
        return out


def row_weights(m: np.ndarray) -> np.ndarray:
    """The weighting intruder's weight ``1/m_j`` of a row that ``m_j`` original records
    fit (0 for a row no record fits: it is in no ``C_i``)."""
    return np.where(m > 0, 1.0 / np.maximum(m, 1.0), 0.0)
