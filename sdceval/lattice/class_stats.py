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
  ``½ Σ_present [p ln(2p/(p+q)) + q ln(2q/(p+q))] + ½ ln 2 · (1 − Σ_present q)``,
  computed as ``ln 2 + ½ [−H + Σ_present (q ln q − m ln m)]``, ``m = p + q`` (`js`).
* EMD with the hierarchical ground distance (Li, Li & Venkatasubramanian 2007 §4.2;
  the equal ground distance is the one-level hierarchy).  With ``A_j = Σ_g |P(g) −
  Q(g)|`` over the nodes ``g`` of level ``j`` (``P``, ``Q`` summed over their leaves),
  a node ``N`` of level ``j`` moves ``min(pos, neg) = (Σ_children |extra| − |extra(N)|)
  / 2`` mass at distance ``j/H``, so

      EMD = Σ_{j=1}^{H} j/(2H) · (A_{j−1} − A_j) = Σ_{j=0}^{H−1} A_j / (2H),

  and, as ``P`` and ``Q`` both sum to 1, ``A_j = 2 Σ_g max(P(g) − Q(g), 0)``, which
  only the nodes the class has records under contribute to: at the leaves a sum over
  the class's pairs; at an inner level with few nodes a dense (nodes × classes) table
  of ``P(g)``, with many nodes the runs of equal ancestors among the class's pairs (leaf
  codes are in depth-first order).
* EMD with the ordered ground distance (numeric sensitive values) uses the dense
  definition, a chunk of classes at a time (cumulative sums over the values).
"""
from __future__ import annotations

import numpy as np

from sdceval.lattice.batch import ClassBatch

_LN2 = float(np.log(2.0))
#: classes per chunk of the dense fallback (ordered EMD): chunk × S floats
_DENSE_CHUNK = 1 << 15
#: inner hierarchy levels with at most this many nodes are summed per class in a dense
#: (classes × nodes) table; wider ones by runs of the sorted pairs
_DENSE_LEVEL = 16


#: a class's set of sensitive values is one float64 sum of powers of two (`value_sets`),
#: exact up to this many values
_SET_BITS = 52
#: `set_max` looks sets up this many bits at a time (tables of 2**16 entries)
_TABLE_BITS = 16


def value_sets(batch: ClassBatch) -> np.ndarray | None:
    """Per class the set of its sensitive values as an int64 bit mask (bit ``s``: value
    ``s`` present), by one weighted count over the pairs; None with more than
    `_SET_BITS` sensitive values."""
    if batch.n_sensitive > _SET_BITS:
        return None

    def compute():
        bits = np.ldexp(1.0, np.arange(batch.n_sensitive))
        return batch.pair_sum(bits[batch.pair_value]).astype(np.int64)
    return batch.memo("value sets", compute)


def set_max_tables(per_value: np.ndarray) -> list:
    """Lookup tables for `set_max`: per `_TABLE_BITS` values, the max of ``per_value``
    over every subset of them (−inf for none)."""
    tables = []
    for lo in range(0, len(per_value), _TABLE_BITS):
        vals = np.asarray(per_value[lo:lo + _TABLE_BITS], dtype=np.float64)
        subset = np.arange(1 << len(vals))
        tab = np.full(len(subset), -np.inf)
        for j, v in enumerate(vals.tolist()):
            has = (subset >> j) & 1 == 1
            tab[has] = np.maximum(tab[has], v)
        tables.append((lo, tab))
    return tables


def set_max(sets: np.ndarray, tables: list) -> np.ndarray:
    """``max_{s ∈ set} per_value[s]`` of every bit-mask set (`value_sets`), from the
    tables of `set_max_tables`."""
    out = None
    for lo, tab in tables:
        part = tab[(sets >> lo) & (len(tab) - 1)]
        out = part if out is None else np.maximum(out, part)
    return out


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


def _pair_q(batch: ClassBatch, table_dist: np.ndarray) -> np.ndarray:
    """``q = Q(value)`` of every pair (shared by the distances)."""
    return batch.memo_for(table_dist, "pair_q", lambda: np.asarray(
        table_dist, dtype=np.float64)[batch.pair_value])


def _c_ln_c(batch: ClassBatch) -> np.ndarray:
    """``Σ_s c ln c`` per class (shared by the entropy and the JS divergence)."""
    def compute():
        c = batch.pair_count
        return batch.pair_sum(c * _logs(batch)[c])
    return batch.memo("c_ln_c", compute)


def entropy(batch: ClassBatch) -> np.ndarray:
    """``H = ln n − (1/n) Σ c ln c`` (natural log)."""
    ln = _logs(batch)
    return ln[batch.sizes] - _c_ln_c(batch) / batch.sizes


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
    """Jensen–Shannon divergence of every class from ``Q`` (module docstring), as

        JS = ln 2 + ½ [−H + Σ_present (q ln q − m ln m)],   m = p + q,

    (expand ``p ln(2p/m) + q ln(2q/m)``, use ``Σ_present p = 1`` and add the absent
    values' ``½ q ln 2``): one logarithm per pair, the entropy ``H`` shared with the
    ℓ objectives."""
    if not batch.n_classes:
        return np.zeros(0)
    q_all = np.asarray(table_dist, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        q_ln_q = np.where(q_all > 0, q_all * np.log(np.where(q_all > 0, q_all, 1.0)), 0.0)
    m = batch.pair_share + _pair_q(batch, table_dist)
    w = q_ln_q[batch.pair_value] - m * np.log(m)
    out = _LN2 + 0.5 * (batch.pair_sum(w) - entropy(batch))
    # the sum cancels to about 1e-16 for a class equal to Q
    return np.maximum(out, 0.0)


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
    q = _pair_q(batch, table_dist)
    # EMD = Σ_j j/(2H)·(A_{j−1} − A_j) telescopes to Σ_{j<H} A_j / (2H) (A_H = 0 at the
    # root); at the leaves every pair is its own node
    # (Σ_v |p − q| = 2 Σ_v max(p − q, 0), both summing to 1; absent values add 0)
    out = (1.0 / H) * batch.pair_sum(np.maximum(p - q, 0.0))
    cls = batch.pair_class
    for j in range(1, H):
        anc = np.asarray(ancestors[j], dtype=np.int64)
        g = int(anc.max()) + 1
        q_node = np.bincount(anc, weights=q_leaf, minlength=g)
        if g <= _DENSE_LEVEL:
            # the few nodes of an inner level: P(g) of every class in a dense table,
            # node-major so that each node's row is one contiguous pass
            P = np.bincount(anc[batch.pair_value] * n + cls, weights=p,
                            minlength=n * g).reshape(g, n)
            A = np.zeros(n)
            tmp = np.empty(n)
            for node in range(g):
                np.subtract(P[node], q_node[node], out=tmp)
                np.maximum(tmp, 0.0, out=tmp)
                A += tmp
            A *= 2.0
        else:
            # many nodes: the runs of equal (class, node) among the sorted pairs
            a = anc[batch.pair_value]
            new = np.ones(len(a), dtype=bool)
            new[1:] = (cls[1:] != cls[:-1]) | (a[1:] != a[:-1])
            starts = np.flatnonzero(new)
            q_run = q_node[a[starts]]
            A = 2.0 * np.bincount(cls[starts], weights=np.maximum(
                np.add.reduceat(p, starts) - q_run, 0.0), minlength=n)
        out += (1.0 / (2.0 * H)) * A
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


def kept_classes(batch: ClassBatch, outcome) -> np.ndarray:
    """Per node, the number of classes a suppression `Outcome` keeps."""
    return (np.diff(batch.offsets) - np.bincount(outcome.dropped_node,
                                                 minlength=batch.n_nodes)).astype(np.float64)
