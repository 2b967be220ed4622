"""Population risk of a sample file (issue 29 item 2): sdcMicro's frequency counts
``f_k`` / ``F_k`` with missing key values, the Benedetti–Franconi individual risk, the
global risk and the household (hierarchical) risk.  numpy only: the methods (local
suppression with a risk target) and the measures (`sdceval.measures.population_risk`)
call these functions on integer arrays.

Keys are an ``int64`` array ``(n, d)``: one column per key variable, any non-negative
code per category, ``-1`` for a missing value (sdcMicro's ``NA``: a suppressed value,
which matches every category).

Frequencies (sdcMicro's ``freqCalc``, R/freqCalc.r, read at 5.8.1)
-----------------------------------------------------------------
Without missing values, ``f_k`` is the number of records with record ``i``'s key
combination and ``F_k`` the sum of their weights (the Horvitz–Thompson estimate of the
combination's population size; without weights ``F_k = f_k``).  With missing values,
two combinations are *compatible* when they agree on every key observed in both, and
(``alpha`` in ``[0, 1]``; sdcMicro's default 1)

* a *complete* combination (no missing key) counts its own records and ``alpha`` times
  the records of every compatible combination with a missing key — except the
  combinations missing in *every* key, which it does not count when there are two keys
  or more (sdcMicro's ``addAllNAtoKeys = FALSE``) and counts ``alpha`` times with one key
  (sdcMicro's special case for one key variable);
* a combination with some keys missing counts its own records, the records of every
  compatible complete combination (weight 1, not ``alpha``) and ``alpha`` times those of
  every other compatible combination with a missing key;
* a record missing in every key gets ``f_k = n`` and ``F_k = sum of all weights``.

``F_k`` sums the weights with the same factors.  (The asymmetries are sdcMicro's; they
are reproduced, not endorsed: its test values in tests/testthat/test_freqCalc.R are
this module's acceptance values.)

Individual risk (sdcMicro's ``indivRisk``, R/indivRisk.R)
---------------------------------------------------------
Benedetti & Franconi (1998), Franconi & Polettini (2004, "Individual risk estimation in
mu-Argus: a review", PSD 2004, LNCS 3050, 262–272): given ``f_k`` and ``p_k = f_k /
F_k``, the population frequency is ``F = f_k + NegBin(f_k, p_k)`` and the risk of a
record is ``r = E[1 / F | f_k]``::

    r = p^f ∫_0^1 t^(f-1) (1 - q t)^(-f) dt = ∫_0^1 p u^(f-1) / (p + q u) du,  q = 1 - p

(the second form by ``u = p t / (1 - q t)``).  In closed form ``f = 1``:
``r = p/q · log(1/p)``; ``f = 2``: ``r = p/q - (p/q)² log(1/p)``.  ``method="exact"``
computes ``r`` for every ``f`` (sdcMicro's alternating sum, here evaluated stably:
`exact_risk`); ``method="approx"`` takes ``r ≈ p / (f - q)`` for ``f > 2`` (sdcMicro's
default).  Then, as sdcMicro, ``r = 1/f_k`` where ``f_k = F_k`` (the combination's whole
population is in the sample, e.g. no weights), and ``r`` is multiplied by ``qual``
(sdcMicro's final correction factor, 1 by default).  ``survey=False`` reads the file as
the population: ``r = 1/f_k`` (sdcMicro's ``survey = FALSE``).  Global risk: the mean
``r`` (sdcMicro's ``global$risk``); expected re-identifications: the sum
(``global$risk_ER``).

Household risk (sdcMicro's ``measure_risk`` with ``hid``, R/measure_risk.R): a
household is re-identified when any member is, so every member's risk is
``1 - Π_{j in household} (1 - r_j)``; sdcMicro's ``hier_risk_ER`` is the *sum of these
per-record values* (each household counted once per member), ``hier_risk`` that sum over
``n`` and ``hier_risk_pct`` 100 times it.

Where this module differs from sdcMicro 5.8.1
---------------------------------------------
* ``alpha < 1`` makes ``f_k`` fractional.  sdcMicro's ``indivRisk`` tests
  ``fk == 1``, ``fk == 2``, ``fk > 2`` and leaves ``r = 0`` for ``1 < f_k < 2``: a record
  with a suppressed key would look safe.  Here ``r`` is the integral above for every
  real ``f_k`` (the exact variant) and, in the approximate variant, the integral for
  ``f_k <= 2`` and ``p/(f - q)`` above 2 — equal to sdcMicro's wherever ``f_k`` is an
  integer.
* The exact variant evaluates sdcMicro's alternating sum (whose terms grow like
  ``p^(1-f)`` and overflow or cancel for large ``f_k``) as the integral: by an upward
  recurrence, a hypergeometric series, a downward recurrence or Watson's expansion in
  ``1/f`` (`exact_risk`); where sdcMicro's sum is accurate, the two agree to rounding.
"""
from __future__ import annotations

import math

import numpy as np

from sdceval.core import combos
from sdceval.core.errors import SdcevalError

#: the variants of the individual risk (sdcMicro's ``indivRisk(method=)``)
RISK_METHODS = ("approx", "exact")

# Watson's expansion (f >= _WATSON_F, p < 1/2): terms ~ m! / (pi f)^m, 30 of them
# are below 1e-30 of the value at f = 50
_WATSON_F = 50.0
_WATSON_TERMS = 30
# composite Gauss-Legendre in s = -log u (`_j_quadrature`): 16 nodes per panel
_GL_NODES, _GL_WEIGHTS = np.polynomial.legendre.leggauss(16)


# -- frequencies --------------------------------------------------------------------------

def _dense(col: np.ndarray) -> np.ndarray:
    """Codes ``0..u-1`` of the values of ``col`` (sorted order)."""
    return combos.dense(col, "sorted")[0]


def combine(cols, n: int) -> tuple[np.ndarray, int]:
    """Id ``0..count-1`` of each row's combination of the columns' values, and
    ``count``, ids in sorted order of the combinations (`sdceval.core.combos`)."""
    return combos.combine(cols, n, order="sorted")


def _project(dense: np.ndarray, rows: np.ndarray, cols: np.ndarray
             ) -> tuple[np.ndarray, int]:
    """Ids of the combinations ``rows`` projected on the key columns ``cols`` (``dense``:
    per-column codes ``0..m_j-1``), by one mixed-radix number per row when it fits in
    int64, else column by column (`combine`)."""
    sub = dense[np.ix_(rows, cols)]
    sizes = sub.max(axis=0) + 1 if len(rows) else np.ones(len(cols), dtype=np.int64)
    if float(np.prod(sizes.astype(np.float64))) < 2.0 ** 62:
        radix = np.concatenate([[1], np.cumprod(sizes[:-1])]).astype(np.int64)
        ids = _dense(sub @ radix)
        return ids, (int(ids.max()) + 1 if len(ids) else 0)
    return combine([sub[:, j] for j in range(len(cols))], len(rows))


def _check_keys(keys, weights) -> tuple[np.ndarray, np.ndarray | None]:
    k = np.asarray(keys)
    if k.ndim == 1:
        k = k[:, None]
    if k.ndim != 2 or not np.issubdtype(k.dtype, np.integer):
        raise SdcevalError(f"population risk: keys must be an integer array (records x key "
                           f"variables) with -1 for a missing value, got shape {k.shape} "
                           f"and dtype {k.dtype}")
    if k.size and k.min() < -1:
        raise SdcevalError("population risk: key codes must be >= 0, or -1 for a missing "
                           "value")
    if weights is None:
        return k.astype(np.int64, copy=False), None
    w = np.asarray(weights, dtype=np.float64)
    if w.shape != (len(k),):
        raise SdcevalError(f"population risk: weights have shape {w.shape}; expected one "
                           f"per record ({len(k)},)")
    if len(w) and not (np.isfinite(w).all() and w.min() > 0):
        raise SdcevalError("population risk: design weights must be finite and > 0 (fix "
                           "the weight column given with --weight)")
    return k.astype(np.int64, copy=False), w


def frequencies(keys, weights=None, *, alpha: float = 1.0
                ) -> tuple[np.ndarray, np.ndarray]:
    """Per record ``(f_k, F_k)`` as float64 arrays: sample frequency and estimated
    population frequency of its key combination, missing values (-1) matching every
    category as sdcMicro's ``freqCalc`` counts them with ``alpha`` (module notes).
    ``weights`` None: ``F_k = f_k`` (the file is the population).  Vectorized over the
    distinct combinations and pairs of missing-value patterns."""
    k, w = _check_keys(keys, weights)
    if not 0.0 <= alpha <= 1.0:
        raise SdcevalError(f"population risk: alpha must be in [0, 1], got {alpha!r}")
    n, d = k.shape
    wt = np.ones(n) if w is None else w
    if d == 0:  # no key: one combination
        fk, Fk = np.full(n, float(n)), np.full(n, float(wt.sum()))
        return fk, (fk.copy() if w is None else Fk)
    ids, count = combine([k[:, j] for j in range(d)], n)
    own_f = np.bincount(ids, minlength=count).astype(np.float64)
    own_F = np.bincount(ids, weights=wt, minlength=count)
    rep = np.zeros(count, dtype=np.int64)
    rep[ids] = np.arange(n)
    combos = k[rep]                       # one row per combination
    seen = combos >= 0                    # observed keys per combination
    if seen.all():
        fk, Fk = own_f[ids], own_F[ids]
        return fk, (fk.copy() if w is None else Fk)
    pat, n_pat = combine([seen[:, j] for j in range(d)], count)
    pat_seen = np.zeros((n_pat, d), dtype=bool)
    pat_seen[pat] = seen
    observed = pat_seen.sum(axis=1)
    members = [np.flatnonzero(pat == a) for a in range(n_pat)]
    dense = np.column_stack([_dense(combos[:, j]) for j in range(d)])
    add_f, add_F = np.zeros(count), np.zeros(count)
    for a in range(n_pat):
        if observed[a] == 0:
            continue                      # all missing: n and the total, below
        a_complete = observed[a] == d
        for b in range(n_pat):
            if a == b:
                continue                  # same pattern: compatible only with itself
            if a_complete:
                if observed[b] == d or (observed[b] == 0 and d > 1):
                    continue
                factor = alpha
            else:
                factor = 1.0 if observed[b] == d else alpha
            if factor == 0.0:
                continue
            ma, mb = members[a], members[b]
            both = np.flatnonzero(pat_seen[a] & pat_seen[b])
            if len(both) == 0:            # nothing to agree on: all compatible
                add_f[ma] += factor * own_f[mb].sum()
                add_F[ma] += factor * own_F[mb].sum()
                continue
            g, ng = _project(dense, np.concatenate([ma, mb]), both)
            ga, gb = g[:len(ma)], g[len(ma):]
            add_f[ma] += factor * np.bincount(gb, weights=own_f[mb], minlength=ng)[ga]
            add_F[ma] += factor * np.bincount(gb, weights=own_F[mb], minlength=ng)[ga]
    f_c, F_c = own_f + add_f, own_F + add_F
    none = observed[pat] == 0
    f_c[none], F_c[none] = float(n), float(wt.sum())
    fk, Fk = f_c[ids], F_c[ids]
    return fk, (fk.copy() if w is None else Fk)


# -- individual risk ----------------------------------------------------------------------

def _closed_1(p, q):
    """``r`` for ``f = 1``: ``p/q · log(1/p)``."""
    return p / q * np.log(1.0 / p)


def _closed_2(p, q):
    """``r`` for ``f = 2``: ``p/q - (p/q)² log(1/p)``."""
    return p / q - (p / q) ** 2 * np.log(1.0 / p)


def _j_upward(f, p):
    """``J_f = ∫_0^1 u^(f-1)/(p + q u) du`` for integer ``f >= 1`` and ``p < 1/2``:
    ``J_1 = log(1/p)/q``, ``J_(g+1) = (1/g - p J_g)/q`` (errors shrink by ``p/q < 1``
    per step)."""
    q = 1.0 - p
    j = np.log(1.0 / p) / q
    out = np.empty_like(p)
    top = int(f.max())
    for g in range(1, top + 1):
        hit = f == g
        out[hit] = j[hit]
        j = (1.0 / g - p * j) / q
    return out


def _j_series(f, p):
    """``J_f = (1/f) 2F1(1, 1; f+1; q) = Σ_k q^k k! / ((f)(f+1)…(f+k))`` for
    ``|q| <= 1/2`` (terms shrink at least by half)."""
    q = 1.0 - p
    term = 1.0 / f
    total = term.copy()
    for k in range(200):
        term = term * q * (k + 1) / (f + k + 1)
        total += term
        if np.all(np.abs(term) <= 1e-17 * np.abs(total)):
            break
    return total


def _j_downward(f, p):
    """``J_f`` for ``p > 3/2`` (weights below 1): ``J_g = (1/g - q J_(g+1))/p``
    downward from ``J_(f+K) ≈ 1/(f+K)`` (positive terms, errors shrink by
    ``(p-1)/p`` per step)."""
    q = 1.0 - p
    steps = np.ceil(40.0 / np.log(p / (p - 1.0))).astype(np.int64)
    top = int(steps.max())
    g = f + steps
    j = 1.0 / g
    for s in range(top, 0, -1):
        act = steps >= s
        g_now = f + (s - 1)
        j = np.where(act, (1.0 / g_now - q * j) / p, j)
    return j


def _j_watson(f, p):
    """``J_f = ∫_0^∞ e^(-f s) g(s) ds``, ``g = 1/(p + q e^(-s))``, by Watson's lemma
    ``Σ_m g^(m)(0) / f^(m+1)`` (``f >= 50``, ``p < 1/2``: ``g``'s poles lie at distance
    ``>= π``, so the terms fall like ``m!/(π f)^m``).  ``c_m = g^(m)(0)`` from
    ``h = 1/g``: ``c_0 = 1``, ``c_m = -q Σ_{j=1..m} C(m, j) (-1)^j c_(m-j)``."""
    q = 1.0 - p
    c = [np.ones_like(p)]
    total = 1.0 / f
    for m in range(1, _WATSON_TERMS + 1):
        acc = np.zeros_like(p)
        for j in range(1, m + 1):
            acc += math.comb(m, j) * (-1.0) ** j * c[m - j]
        c.append(-q * acc)
        total = total + c[m] / f ** (m + 1)
    return total


def _j_quadrature(f, p):
    """``J_f = ∫_0^∞ e^(-f s) / (p + q e^(-s)) ds`` by composite Gauss–Legendre (any
    real ``f > 1``, ``p < 1/2``).  The integrand is below ``e^(-f s)/p`` and below
    ``e^(-(f-1) s)/q``, so ``[0, min(log(q/p) + 45/f, 47/(f-1))]`` holds all but
    ``1e-19`` of it; panels of width ``min(1, 2/f)`` (the poles lie at ``Im s = ±π``
    and ``e^(-f s)`` changes by ``e^2`` at most across a panel), 16 nodes each."""
    q = 1.0 - p
    length = np.minimum(np.maximum(np.log(q / p), 0.0) + 45.0 / f, 47.0 / (f - 1.0))
    panels = np.ceil(length / np.minimum(1.0, 2.0 / f)).astype(np.int64)
    total = np.zeros_like(p)
    half = 0.5 * length / panels
    for k in range(int(panels.max())):
        act = k < panels
        mid = (2 * k + 1) * half
        for x, wx in zip(_GL_NODES, _GL_WEIGHTS):
            s = mid + half * x
            total += np.where(act, wx * half * np.exp(-f * s) / (p + q * np.exp(-s)), 0.0)
    return total


def exact_risk(f, p) -> np.ndarray:
    """``r = E[1/F | f] = p ∫_0^1 u^(f-1)/(p + q u) du`` (module notes) for real
    ``f >= 1`` and ``p > 0``, evaluated stably: closed forms at ``f = 1, 2``; for
    ``p < 1/2`` the upward recurrence (integer ``f < 50``), Watson's expansion
    (``f >= 50``) or quadrature (fractional ``f < 50``); the series in ``q`` for
    ``1/2 <= p <= 3/2``; the downward recurrence for ``p > 3/2``.  ``p = 1``: ``1/f``."""
    f, p = np.broadcast_arrays(np.asarray(f, dtype=np.float64),
                               np.asarray(p, dtype=np.float64))
    r = np.empty(f.shape)
    one = p == 1.0
    r[one] = 1.0 / f[one]
    for g, closed in ((1.0, _closed_1), (2.0, _closed_2)):
        sel = ~one & (f == g)
        r[sel] = closed(p[sel], 1.0 - p[sel])
    rest = ~one & (f != 1) & (f != 2)
    low = rest & (p < 0.5)
    whole = f == np.round(f)
    parts = ((low & (f >= _WATSON_F), _j_watson),
             (low & (f < _WATSON_F) & whole, _j_upward),
             (low & (f < _WATSON_F) & ~whole, _j_quadrature),
             (rest & (p >= 0.5) & (p <= 1.5), _j_series),
             (rest & (p > 1.5), _j_downward))
    for sel, fun in parts:
        if sel.any():
            r[sel] = p[sel] * fun(f[sel], p[sel])
    return r


def approx_risk(f, p) -> np.ndarray:
    """sdcMicro's approximation: ``r ≈ p / (f - q)`` for ``f > 2``, the exact ``r`` for
    ``f <= 2`` (closed forms at 1 and 2; module notes for fractional ``f``)."""
    f, p = np.broadcast_arrays(np.asarray(f, dtype=np.float64),
                               np.asarray(p, dtype=np.float64))
    r = np.empty(f.shape)
    big = f > 2
    r[big] = p[big] / (f[big] - (1.0 - p[big]))
    r[~big] = exact_risk(f[~big], p[~big])
    return r


def risks_from_frequencies(fk, Fk, *, method: str = "approx", survey: bool = True,
                           qual: float = 1.0) -> np.ndarray:
    """Individual risks from ``f_k`` and ``F_k`` (sdcMicro's ``indivRisk``): ``survey``
    the Benedetti–Franconi risk of ``method`` with ``p = f_k/F_k`` (``1/f_k`` where
    ``f_k = F_k``), times ``qual``; else ``1/f_k``."""
    if method not in RISK_METHODS:
        raise SdcevalError(f"population risk: method must be one of "
                           f"{', '.join(RISK_METHODS)}, got {method!r}")
    fk = np.asarray(fk, dtype=np.float64)
    Fk = np.asarray(Fk, dtype=np.float64)
    if fk.shape != Fk.shape or (fk.size and not (fk.min() >= 1 and Fk.min() > 0)):
        raise SdcevalError("population risk: f_k must be >= 1 (a record counts itself) "
                           "and F_k > 0, one of each per record")
    if not survey:
        return 1.0 / fk
    r = np.empty(fk.shape)
    same = fk == Fk
    r[same] = 1.0 / fk[same]
    other = ~same
    fun = exact_risk if method == "exact" else approx_risk
    r[other] = fun(fk[other], fk[other] / Fk[other])
    return r * qual


def individual_risks(keys, weights=None, *, method: str = "approx", survey: bool = True,
                     alpha: float = 1.0, qual: float = 1.0
                     ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(r, f_k, F_k)`` per record for the key array ``keys`` (``(n, d)`` int, -1 =
    missing) and design ``weights`` (None: the file is the population, ``F_k = f_k``,
    so ``r = 1/f_k`` whatever ``survey``, as sdcMicro): `frequencies` then
    `risks_from_frequencies` (module notes)."""
    fk, Fk = frequencies(keys, weights, alpha=alpha)
    return risks_from_frequencies(fk, Fk, method=method, survey=survey, qual=qual), fk, Fk


def household_risks(r, households) -> np.ndarray:
    """Per record ``1 - Π_{j in its household} (1 - r_j)`` (sdcMicro's hierarchical
    risk); ``households``: one integer id per record."""
    r = np.asarray(r, dtype=np.float64)
    h = np.asarray(households)
    if h.shape != r.shape:
        raise SdcevalError(f"household risk: households have shape {h.shape}; expected "
                           f"one id per record {r.shape}")
    if not len(r):
        return np.zeros(0)
    ids = _dense(h)
    order = np.argsort(ids, kind="stable")
    sorted_ids = ids[order]
    starts = np.flatnonzero(np.r_[True, sorted_ids[1:] != sorted_ids[:-1]])
    prod = np.multiply.reduceat(1.0 - r[order], starts)
    return (1.0 - prod)[ids]


def global_risk(r) -> tuple[float, float]:
    """``(mean r, Σ r)``: sdcMicro's global risk and expected re-identifications."""
    r = np.asarray(r, dtype=np.float64)
    total = float(r.sum())
    return (total / len(r) if len(r) else 0.0), total




# -- keys of a release --------------------------------------------------------------------

def cell_codes(hierarchy, lo, hi) -> np.ndarray:
    """One key code per record from its published cell ``(lo, hi)`` of ``hierarchy``'s
    leaves: ``lo * m + hi`` (equal cells share a code), ``-1`` (sdcMicro's ``NA``) for
    the whole domain ``(0, m-1)`` and for the missing-value leaf (`release_keys`)."""
    lo, hi = np.asarray(lo, dtype=np.int64), np.asarray(hi, dtype=np.int64)
    m = hierarchy.n_leaves
    na = (lo == 0) & (hi == m - 1)
    if hierarchy.missing_leaf is not None:
        na |= (lo == hierarchy.missing_leaf) & (hi == hierarchy.missing_leaf)
    return np.where(na, -1, lo * m + hi)


def release_keys(dataset, release) -> np.ndarray:
    """The key array of a release that carries QI cells (`Release.cells`): one column
    per QI of ``dataset`` (its order), the code of each record's published cell
    ``(lo, hi)`` — records grouped by equal cells, as sdcMicro groups equal categories —
    and ``-1`` (sdcMicro's ``NA``, matching every category) where the cell is the whole
    domain ``(0, m-1)`` (local suppression, or a record suppressed as a whole) or the
    missing-value leaf ``lo = hi = missing_leaf`` (a missing value of the original kept
    by ``missing = "keep"``, `Hierarchy.missing_leaf`: sdcMicro's ``NA`` too, counted
    with ``alpha``).  Differently generalized cells that overlap are different categories
    here (only the whole domain is a wildcard), as in sdcMicro, where a recoded category
    is a category."""
    qis = list(dataset.schema.qis)
    keys = np.empty((release.n, len(qis)), dtype=np.int64)
    for j, q in enumerate(qis):
        keys[:, j] = cell_codes(dataset.hierarchy(q), *release.cells[q])
    if release.suppressed is not None and release.suppressed.any():
        keys[release.suppressed] = -1
    return keys


__all__ = ["RISK_METHODS", "approx_risk", "cell_codes", "combine", "exact_risk", "frequencies",
           "global_risk", "household_risks", "individual_risks", "release_keys",
           "risks_from_frequencies"]
