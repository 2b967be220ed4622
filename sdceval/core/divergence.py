"""Divergences between discrete distributions (natural logarithm, 0·log 0 = 0).

JS(P, Q) = ½ KL(P, M) + ½ KL(Q, M),  M = ½ (P + Q)   (Li & Li 2009, §4, SPEC §4).
JS is bounded by ln 2 and is 0 iff P = Q.  All functions work row-wise on 2-D arrays
so that a whole table of classes is handled in one call.
"""
from __future__ import annotations

import numpy as np


def _xlogy_ratio(p: np.ndarray, q: np.ndarray) -> np.ndarray:
    # p * ln(p/q) with the convention 0 * ln(0/q) = 0 (q > 0 wherever p > 0 here)
    out = np.zeros(np.broadcast(p, q).shape)
    pb, qb = np.broadcast_arrays(p, q)
    mask = pb > 0
    out[mask] = pb[mask] * np.log(pb[mask] / qb[mask])
    return out


def normalize(counts: np.ndarray) -> np.ndarray:
    """Rows of ``counts`` divided by their sums (rows summing to 0 stay 0)."""
    counts = np.asarray(counts, dtype=np.float64)
    s = counts.sum(axis=-1, keepdims=True)
    return np.divide(counts, s, out=np.zeros_like(counts), where=s > 0)


def kl_divergence(p, q) -> np.ndarray:
    """KL(P, Q) = Σ p ln(p/q), row-wise; infinite where q = 0 < p."""
    p = np.asarray(p, float)
    q = np.asarray(q, float)
    pb, qb = np.broadcast_arrays(p, q)
    bad = (pb > 0) & (qb <= 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        safe_q = np.where(bad, 1.0, qb)
        out = _xlogy_ratio(pb, safe_q).sum(axis=-1)
    return np.where(bad.any(axis=-1), np.inf, out)


def js_divergence(p, q) -> np.ndarray:
    """Jensen–Shannon divergence, row-wise (broadcasting): value in [0, ln 2]."""
    p = np.asarray(p, float)
    q = np.asarray(q, float)
    m = 0.5 * (p + q)
    return 0.5 * _xlogy_ratio(p, m).sum(axis=-1) + 0.5 * _xlogy_ratio(q, m).sum(axis=-1)
