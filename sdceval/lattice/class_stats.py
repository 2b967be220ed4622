"""Per-class statistics of the sensitive attribute, from the sparse counts of a batch.

A `ClassBatch` stores one entry per (class, sensitive value) present, sorted by class
then value; a class of the lattice has a few of the ``S`` values, so working on these
pairs costs O(pairs) where a dense ``(classes × S)`` matrix costs O(classes · S).  Every
function returns one value per class, equal (to rounding) to the dense definitions of
`sdceval.privacy` (tested against them).  Notation: ``c`` a pair's count, ``n`` its
class's size, ``p = c/n``, ``q = Q(value)`` the table's share.

* distinct values: the number of pairs of the class.
* largest count: ``max c`` (``np.maximum.reduceat`` over the class's pairs).
* Shannon entropy: ``−Σ p ln p``.
* δ: ``max |ln(p/q)|`` over the values of the table; a class lacking one of them has
  δ = ∞.
* Jensen–Shannon divergence (natural log), absent values contributing ``½ q ln 2``:
  ``½ Σ_present [p ln(2p/(p+q)) + q ln(2q/(p+q))] + ½ ln 2 · (1 − Σ_present q)``.
* EMD with the hierarchical ground distance (Li, Li & Venkatasubramanian 2007 §4.2;
  the equal ground distance is the one-level hierarchy).  With ``A_j = Σ_g |P(g) −
  Q(g)|`` over the nodes ``g`` of level ``j`` (``P``, ``Q`` summed over their leaves),
  a node ``N`` of level ``j`` moves ``min(pos, neg) = (Σ_children |extra| − |extra(N)|)
  / 2`` mass at distance ``j/H``, so

      EMD = Σ_{j=1}^{H} j/(2H) · (A_{j−1} − A_j),

  and ``A_j = 1 + Σ_{g present} (|P(g) − Q(g)| − Q(g))`` needs only the nodes the class
  has records under (leaf codes are in depth-first order, so a class's pairs are runs of
  equal ancestors at every level).
* EMD with the ordered ground distance (numeric sensitive values) uses the dense
  definition, a chunk of classes at a time (cumulative sums over the values).
"""
from __future__ import annotations

import numpy as np

from sdceval.lattice.batch import ClassBatch

_LN2 = float(np.log(2.0))
#: classes per chunk of the dense fallback (ordered EMD): chunk × S floats
_DENSE_CHUNK = 1 << 15


def _log_table(upto: int) -> np.ndarray:
    """``ln`` of 0..upto (``ln 0 = −inf``, never read): a gather from this small table
    is cheaper than a logarithm per pair."""
    with np.errstate(divide="ignore"):
        return np.log(np.arange(upto + 1, dtype=np.float64))


def _logs(batch: ClassBatch) -> np.ndarray:
    return batch.memo("ln", lambda: _log_table(int(batch.sizes.max()) if batch.n_classes
                                                else 1))


def distinct(batch: ClassBatch) -> np.ndarray:
    return batch.pair_per_class.astype(np.float64)


def largest_count(batch: ClassBatch) -> np.ndarray:
    if not batch.n_classes:
        return np.zeros(0)
    return batch.memo("largest", lambda: np.maximum.reduceat(
        batch.pair_count, batch.pair_starts).astype(np.float64))


def entropy(batch: ClassBatch) -> np.ndarray:
    """``H = ln n − (1/n) Σ c ln c`` (natural log)."""
    ln = _logs(batch)
    c = batch.pair_count
    s = np.bincount(batch.pair_class, weights=c * ln[c], minlength=batch.n_classes)
    return ln[batch.sizes] - s / batch.sizes


def delta(batch: ClassBatch, table_dist: np.ndarray) -> np.ndarray:
    """``max |ln(c/n) − ln q|`` = the larger of ``max(ln c − ln q) − ln n`` and
    ``ln n − min(ln c − ln q)``; ∞ for a class lacking a value of the table."""
    q_all = np.asarray(table_dist, dtype=np.float64)
    occurs = q_all > 0
    if not batch.n_classes:
        return np.zeros(0)
    ln = _logs(batch)
    with np.errstate(divide="ignore"):
        ln_q = np.where(occurs, np.log(np.where(occurs, q_all, 1.0)), np.inf)
    r = ln[batch.pair_count] - ln_q[batch.pair_value]
    starts = batch.pair_starts
    ln_n = ln[batch.sizes]
    out = np.maximum(np.maximum.reduceat(r, starts) - ln_n,
                     ln_n - np.minimum.reduceat(r, starts))
    # every pair's value occurs in the table (Q is the data's own distribution), so a
    # class has every value iff it has as many pairs as the table has values
    return np.where(batch.pair_per_class < occurs.sum(), np.inf, out)


def js(batch: ClassBatch, table_dist: np.ndarray) -> np.ndarray:
    q_all = np.asarray(table_dist, dtype=np.float64)
    p = batch.pair_share
    q = q_all[batch.pair_value]
    m = p + q
    with np.errstate(divide="ignore", invalid="ignore"):
        term = p * np.log(2 * p / m) + np.where(q > 0, q * np.log(2 * q / m), 0.0)
    n = batch.n_classes
    present_q = np.bincount(batch.pair_class, weights=q, minlength=n)
    return 0.5 * np.bincount(batch.pair_class, weights=term, minlength=n) \
        + 0.5 * _LN2 * (1.0 - present_q)


def emd_hierarchical(batch: ClassBatch, table_dist: np.ndarray, ancestors) -> np.ndarray:
    """EMD with the hierarchical ground distance (module docstring).

    ``ancestors``: per level ``j = 0..H`` the node id of every leaf code at level ``j``
    (``Hierarchy.node_of``; ``[identity, all zeros]`` for the equal ground distance).
    """
    n = batch.n_classes
    H = len(ancestors) - 1
    if H < 1 or not n:
        return np.zeros(n)
    q_leaf = np.asarray(table_dist, dtype=np.float64)
    p = batch.pair_share
    cls = batch.pair_class
    # leaves: every pair is its own node; the root: A_H = |1 − 1| = 0
    q = q_leaf[batch.pair_value]
    A = [1.0 + np.bincount(cls, weights=np.abs(p - q) - q, minlength=n)]
    for j in range(1, H):
        anc = np.asarray(ancestors[j])
        g = anc[batch.pair_value]
        q_node = np.bincount(anc, weights=q_leaf, minlength=int(anc.max()) + 1)
        new = np.ones(len(g), dtype=bool)
        new[1:] = (cls[1:] != cls[:-1]) | (g[1:] != g[:-1])
        starts = np.flatnonzero(new)
        p_run = np.add.reduceat(p, starts) if len(starts) else np.zeros(0)
        q_run = q_node[g[starts]]
        A.append(1.0 + np.bincount(cls[starts], weights=np.abs(p_run - q_run) - q_run,
                                   minlength=n))
    A.append(np.zeros(n))
    out = np.zeros(n)
    for j in range(1, H + 1):
        out += j / (2.0 * H) * (A[j - 1] - A[j])
    return np.maximum(out, 0.0)


def dense_chunks(batch: ClassBatch, fn) -> np.ndarray:
    """``fn(dense counts)`` over chunks of classes (the dense fallback)."""
    out = np.empty(batch.n_classes)
    starts = batch.pair_starts
    for lo in range(0, batch.n_classes, _DENSE_CHUNK):
        hi = min(lo + _DENSE_CHUNK, batch.n_classes)
        a = starts[lo]
        b = starts[hi] if hi < batch.n_classes else len(batch.pair_class)
        dense = np.zeros((hi - lo, batch.n_sensitive))
        dense[batch.pair_class[a:b] - lo, batch.pair_value[a:b]] = batch.pair_count[a:b]
        out[lo:hi] = fn(dense)
    return out
