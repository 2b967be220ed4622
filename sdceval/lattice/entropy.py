"""ARX's non-uniform entropy, both precomputed variants, matched to ARX's source (issue 7).

ARX (``org.deidentifier.arx.metric.v2``; docs/arx.md has file and line references)
defines, for a full-domain generalization ``v`` (one level ``v_q`` per QI ``q``):

* ``f_q(x)`` — frequency of leaf value ``x`` of QI ``q`` in the *input* (all ``N``
  records; ARX's ``Cardinalities``, level 0), and ``F_q,j(g)`` — frequency of node ``g``
  of level ``j``: the sum of ``f_q`` over its leaves (``Cardinalities``, level j).
* the per-attribute generalization entropy (``MetricMDNUEntropyPrecomputed.
  getInformationLossInternalRaw``), log base 2::

      G_q(j) = Σ_{x : f_q(x) > 0} f_q(x) · log2( F_q,j(anc_j(x)) / f_q(x) )

  i.e. Σ over *all* records of ``−log2 P(leaf | its generalized value)``.  It depends on
  the level only: ARX computes it from the input's value frequencies, never from the
  node's classes, and caches it per (QI, level).

**Monotonic variant** (``MetricMDNUEntropyPrecomputed``, what ``Metric.
createPrecomputedEntropyMetric(0.1, true)`` and ``createEntropyMetric(true)`` build)::

    loss_q(v) = gF · G_q(v_q)

Suppressed records are charged exactly like kept ones (their generalization entropy at
``v``; the suppression itself adds nothing), so the value is a function of the levels
alone (ARX: monotonic with generalization *and* with suppression, "independent").

**Non-monotonic variant** (``MetricMDNUNMEntropyPrecomputed``, ``createPrecomputedEntropy
Metric(0.1, false)``): the above plus, over the ``S`` suppressed records (the records of
the outlier classes), the entropy of their *generalized* values at ``v`` (the classes'
keys at the node's levels, not the root ``*``)::

    loss_q(v) = gF · G_q(v_q) + sF · Σ_g c_q(g) · log2( S / c_q(g) )

``c_q(g)`` = suppressed records whose QI ``q`` is generalized to ``g``.  Suppressed
records are thus counted twice: once in ``G_q`` and once more here.  Nothing is added
when ``S = 0``.

Both: ``gF``, ``sF`` from ARX's gs-factor (``Metric``'s constructor; default 0.5 gives
``gF = sF = 1``): ``sF = 2·gs`` if ``gs < 0.5`` else 1, ``gF = 1`` if ``gs ≤ 0.5`` else
``1 − 2(gs − 0.5)``.  Each per-attribute value is rounded down to 10 decimals (ARX's
``Metric.round``: ``floor(x·10¹⁰)/10¹⁰``) and the node's loss is their sum in QI order
(``ILMultiDimensionalSum``, attribute weights all 1 by default).  The loss is in bits
times records (Adult, k = 5, 4 %: 255 559.854…).

References
----------
De Waal, Willenborg (1999). Information loss through global recoding and local
suppression. Netherlands Official Statistics 14, 17–20 (the metric).
Prasser, Kohlmayer et al., ARX (``MetricMDNUEntropyPrecomputed``,
``MetricMDNUNMEntropyPrecomputed``, ``Cardinalities``, ``Metric``; docs/arx.md).
"""
from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from sdceval.core.errors import SdcevalError, suggest

VARIANTS = ("monotonic", "non_monotonic")
#: ARX's ``Metric.round``: per-attribute losses are floored to this many decimals
_DIGITS_FACTOR = 10.0 ** 10
_LN2 = math.log(2.0)


def _log2(x: np.ndarray) -> np.ndarray:
    # ARX's log2 is ln(x)/ln(2) (MetricMDNUEntropyPrecomputed.log2), not a native log2;
    # the same expression keeps the last bits equal
    return np.log(x) / _LN2


def gs_factors(gs_factor: float) -> tuple[float, float]:
    """ARX's generalization and suppression factors ``(gF, sF)`` of a gs-factor in
    [0, 1] (``Metric``'s constructor): 0.5 weighs both equally (1, 1)."""
    try:
        g = float(gs_factor)
    except (TypeError, ValueError):
        raise SdcevalError(f"gs_factor must be a number in [0, 1], got {gs_factor!r}") from None
    if not 0.0 <= g <= 1.0:
        raise SdcevalError(f"gs_factor must be in [0, 1] (0.5 weighs generalization and "
                           f"suppression equally), got {gs_factor!r}")
    s = 2.0 * g if g < 0.5 else 1.0
    gen = 1.0 if g <= 0.5 else 1.0 - 2.0 * (g - 0.5)
    return gen, s


def arx_round(x: np.ndarray) -> np.ndarray:
    """ARX's ``Metric.round``: ``floor(x·10¹⁰)/10¹⁰``."""
    return np.floor(np.asarray(x, dtype=np.float64) * _DIGITS_FACTOR) / _DIGITS_FACTOR


class EntropyTables:
    """ARX's precomputation for the non-uniform entropy (module docstring) and the
    evaluation of both variants on class batches.

    Parameters
    ----------
    dataset : Dataset
    qis : sequence of str, optional
        The QIs in the order of the class tables' ``node_ids`` rows (the engine's,
        default the schema's).
    gs_factor : float
        ARX's generalization/suppression factor (default 0.5: ``gF = sF = 1``).

    Attributes
    ----------
    n : int
        Records (the input's; ARX's ``rows``).
    level_entropy : list of ndarray
        ``level_entropy[q][j] = G_q(j)`` (bits · records), ≥ 0, non-decreasing in ``j``.
    """

    def __init__(self, dataset, qis: Sequence[str] | None = None, gs_factor: float = 0.5):
        self.qis = tuple(dataset.schema.qis if qis is None else qis)
        if not self.qis:
            raise SdcevalError(
                f"non-uniform entropy: data set {dataset.name!r} has no quasi-identifiers; "
                "give some columns role 'qi'")
        self.n = int(dataset.n)
        self.g_factor, self.s_factor = gs_factors(gs_factor)
        self.heights = np.array([dataset.hierarchy(q).height for q in self.qis], dtype=np.int64)
        # (d, max height + 1): Σ a·log2(a/b) as ARX accumulates it (≤ 0, its sign before
        # the final negation), NaN beyond a QI's height
        self._raw = np.full((len(self.qis), int(self.heights.max()) + 1), np.nan)
        for q, name in enumerate(self.qis):
            h = dataset.hierarchy(name)
            codes = np.asarray(dataset.codes(name), dtype=np.int64)
            f = np.bincount(codes, minlength=h.n_leaves).astype(np.float64)
            # ARX sums over value ids in its dictionary's order (the order in which the
            # values first occur in the data); a sequential sum in that order (cumsum)
            # reproduces its floating-point result, not just its value
            # each code's first position (the last write of a reversed scatter wins)
            first = np.full(h.n_leaves, len(codes), dtype=np.int64)
            first[codes[::-1]] = np.arange(len(codes) - 1, -1, -1)
            seen = np.flatnonzero(first < len(codes))
            present = seen[np.argsort(first[seen], kind="stable")]
            a = f[present]
            for j in range(h.height + 1):
                anc = h.node_of[j]
                big_f = np.bincount(anc, weights=f, minlength=len(h.labels[j]))
                self._raw[q, j] = np.cumsum(a * _log2(a / big_f[anc[present]]))[-1]
        self.level_entropy: list[np.ndarray] = [
            0.0 - self._raw[q, :h + 1] for q, h in enumerate(self.heights.tolist())]

    # -- evaluation -----------------------------------------------------------------
    def _levels(self, levels) -> np.ndarray:
        lv = np.asarray(levels, dtype=np.int64)
        if lv.ndim == 1:
            lv = lv[None, :]
        if lv.ndim != 2 or lv.shape[1] != len(self.qis):
            raise SdcevalError(f"non-uniform entropy: expected nodes with {len(self.qis)} "
                               f"levels (one per QI: {', '.join(self.qis)}), got shape "
                               f"{tuple(int(s) for s in lv.shape)}")
        bad = (lv < 0) | (lv > self.heights)
        if bad.any():
            i, q = (int(x) for x in np.argwhere(bad)[0])
            raise SdcevalError(f"non-uniform entropy: level {int(lv[i, q])} of QI "
                               f"{self.qis[q]!r} is outside 0..{int(self.heights[q])}")
        return lv

    def _raw_generalization(self, lv: np.ndarray) -> np.ndarray:
        """``(m, d)``: ``gF · (−G_q(v_q))``, ARX's sign before the final negation."""
        cols = np.arange(len(self.qis))
        return self._raw[cols[None, :], lv] * self.g_factor

    def _raw_suppression(self, batch, kept: np.ndarray) -> np.ndarray:
        """``(m, d)``: ``sF · Σ_g c_q(g) log2(c_q(g)/S)`` over each node's suppressed
        records (≤ 0; 0 where nothing is suppressed)."""
        m, d = batch.n_nodes, len(self.qis)
        out = np.zeros((m, d))
        sup = ~kept & (batch.sizes > 0)
        if not sup.any():
            return out
        sup = np.flatnonzero(sup)
        node = batch.node_of(sup)
        size = batch.sizes[sup].astype(np.float64)
        total = np.bincount(node, weights=size, minlength=m)  # S per node
        sup_ids = batch.ids_of(sup)
        for q in range(d):
            ids = sup_ids[q].astype(np.int64)
            width = int(ids.max()) + 1
            key = node * width + ids
            if m * width <= max(4 * len(key), 1 << 16):
                # few (node, value) cells: count them in a dense table
                c = np.bincount(key, weights=size, minlength=m * width)
                cell = np.flatnonzero(c)
                c = c[cell]
            else:
                cell, inv = np.unique(key, return_inverse=True)
                c = np.bincount(inv.ravel(), weights=size, minlength=len(cell))
            owner = cell // width
            term = c * _log2(c / total[owner]) * self.s_factor
            out[:, q] = np.bincount(owner, weights=term, minlength=m)
        return out

    def per_attribute(self, batch, kept=None, variant: str = "monotonic") -> np.ndarray:
        """``(m, d)`` per-QI losses of the batch's nodes, as ARX reports them (rounded
        down to 10 decimals).  ``kept`` (per class, True = published) is needed by the
        non-monotonic variant only; the monotonic one depends on the levels alone."""
        if variant not in VARIANTS:
            raise SdcevalError(f"non-uniform entropy: unknown variant {variant!r}."
                               f"{suggest(variant, VARIANTS)} Variants: {', '.join(VARIANTS)}")
        lv = self._levels(batch.levels)
        raw = self._raw_generalization(lv)
        if variant == "non_monotonic":
            if kept is None:
                raise SdcevalError("non-uniform entropy (non-monotonic): give kept, the "
                                   "per-class mask of published classes")
            kept = np.asarray(kept)
            if kept.dtype != bool or kept.shape != (batch.n_classes,):
                raise SdcevalError(
                    f"non-uniform entropy: kept must be a boolean mask with one entry per "
                    f"class ({batch.n_classes}), got dtype {kept.dtype.name} and shape "
                    f"{tuple(int(s) for s in kept.shape)}")
            raw = raw + self._raw_suppression(batch, kept)
        # ARX: result == 0.0 ? result : -result, then round (no negative zero)
        return arx_round(np.where(raw == 0.0, raw, -raw))

    def nu_entropy(self, batch, kept=None, variant: str = "monotonic") -> np.ndarray:
        """ARX's non-uniform entropy of each node of ``batch``, shape (m,) (module
        docstring): ``variant="monotonic"`` is ``MetricMDNUEntropyPrecomputed``,
        ``"non_monotonic"`` is ``MetricMDNUNMEntropyPrecomputed``."""
        cols = self.per_attribute(batch, kept, variant)
        # ILMultiDimensionalSum: left-to-right over the attributes
        total = np.zeros(cols.shape[0])
        for q in range(cols.shape[1]):
            total = total + cols[:, q]
        return total

    def evaluate(self, batch, kept=None, monotonic: bool = True) -> np.ndarray:
        """`nu_entropy` with the variant as a flag (what the objectives call)."""
        return self.nu_entropy(batch, kept, "monotonic" if monotonic else "non_monotonic")

    def level_terms(self) -> np.ndarray:
        """``(d, max height + 1)``: the monotonic variant's per-QI loss at each level,
        rounded as ARX reports it (NaN beyond a QI's height); a node's monotonic loss is
        their sum over the QIs in QI order (`of_levels`), and a lower bound of the
        non-monotonic one (which only adds non-negative terms per QI before rounding)."""
        raw = self._raw * self.g_factor
        with np.errstate(invalid="ignore"):
            return arx_round(np.where(raw == 0.0, raw, -raw))

    def of_levels(self, levels) -> np.ndarray:
        """The monotonic variant straight from nodes' levels, shape (m,) (no class
        tables: it does not depend on them).  It is also a lower bound of the
        non-monotonic variant at the same node (ARX's ``getLowerBoundInternal``)."""
        lv = self._levels(levels)
        raw = self._raw_generalization(lv)
        cols = arx_round(np.where(raw == 0.0, raw, -raw))
        total = np.zeros(cols.shape[0])
        for q in range(cols.shape[1]):
            total = total + cols[:, q]
        return total
