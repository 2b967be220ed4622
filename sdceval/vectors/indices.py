"""Quality indices and dominance on property vectors (Dewri et al. 2009, "D09").

A *property vector* D = (d_1, ..., d_N) holds one measurement of a property per record
(D09 Def. 1). This module summarizes one vector (unary indices), compares two vectors of
the same property (binary indices, dominance), and compares two *sets* of property
vectors paired by property name (``set_relation``). Definitions, worked examples and the
readings decided are in DEWRI.md §1.3-1.4 and §3.1.

Direction. D09 assumes a higher measurement is better and tells the reader to negate
otherwise. Here every comparison takes ``higher_is_better``; for a lower-is-better
property (a loss) the comparisons run in the reversed order, which equals negating both
vectors (DEWRI A4), so a caller never negates by hand. P_hv cannot be negated (a product
of negatives means nothing) and needs a reference (worst) point instead.

Scale. Everything is vectorized: the binary indices and dominance on N = 10**6 records
take milliseconds. P_hv is returned as a logarithm, since the product of 30 000 class
sizes already overflows float64 (DEWRI A5).

Theory (docstring material only, D09 §4): n unary indices P_1..P_n with
[∀i P_i(D1) ≥ P_i(D2) ⇔ D1 weakly dominates D2] need n ≥ N (Theorem 1), also on feasible
subsets (Corollary 1), and n ≥ rN for r properties (Corollary 2): no fixed set of scalar
summaries can replace the vector comparison.

Symbols are deliberately not used as names: D09 writes weak dominance as ⪰ and strict
Pareto dominance as ≻, while Dewri et al. 2010 write strict Pareto dominance as ⪰.
"""
from __future__ import annotations

import math
import numbers
from typing import Any, Callable, Hashable, Mapping

import numpy as np

from sdceval.core.errors import SdcevalError, plain, suggest

__all__ = [
    "p_min", "p_sum", "p_mean", "p_rank", "rank_compare",
    "p_binary", "p_cov", "p_spr", "log_p_hv", "log_volume",
    "weakly_dominates", "dominates", "incomparable", "relation", "set_relation",
    "BINARY_INDICES", "UNARY_INDICES",
    "as_vector", "as_upsilon", "paired_upsilons", "direction_map",
]


# ------------------------------------------------------------------ validation

def _label(name: str | None) -> str:
    return f"property {plain(name)!r}" if name is not None else "the property vector"


def _is_number(x: Any) -> bool:
    return isinstance(x, numbers.Real) and not isinstance(x, (bool, np.bool_))


def as_vector(d: Any, *, name: str | None = None, what: str | None = None) -> np.ndarray:
    """``d`` as a finite 1-D numeric array of at least one value, else SdcevalError
    naming the property (``name``) and the fix. ``what`` overrides the subject of the
    message (e.g. ``"d_max"``). Integer input stays integer (comparisons need no
    conversion and are exact); everything else becomes float64."""
    subject = what or _label(name)
    try:
        arr = np.asarray(d)
    except (TypeError, ValueError):
        raise SdcevalError(
            f"{subject} could not be read as a 1-D vector of numbers (ragged or mixed "
            f"input); give one number per record.") from None
    if arr.ndim != 1:
        got = "a single value" if arr.ndim == 0 else f"an array of shape {arr.shape}"
        raise SdcevalError(
            f"{subject} must be 1-D, one value per record; got {got}. Pass one column "
            f"(one property) at a time.")
    if arr.size == 0:
        raise SdcevalError(f"{subject} is empty; a property vector holds one value per "
                           f"record of a non-empty data set.")
    kind = arr.dtype.kind
    if kind == "i" or (kind == "u" and arr.dtype.itemsize < 8):
        return arr                            # integers are finite
    if kind in "buf":
        arr = arr.astype(np.float64, copy=False)
    elif kind == "O":
        # object input (lists with None, pandas nullable columns): accept real numbers
        # and missing markers only; the loop runs only for this rare, already-slow kind
        out = np.empty(arr.size, dtype=np.float64)
        for i, x in enumerate(arr):
            if x is None or type(x).__name__ in ("NAType", "NaTType"):
                out[i] = math.nan
            elif _is_number(x) or isinstance(x, (bool, np.bool_)):
                out[i] = float(x)
            else:
                raise SdcevalError(
                    f"{subject} must hold numbers; record {i} is {plain(x)!r}. Convert "
                    f"the property to numbers first.")
        arr = out
    else:
        example = plain(arr[0])
        raise SdcevalError(
            f"{subject} must hold numbers; got values such as {example!r} "
            f"(dtype {arr.dtype}). Convert the property to real numbers first.")
    finite = np.isfinite(arr)
    if not finite.all():
        i = int(np.flatnonzero(~finite)[0])
        if math.isnan(arr[i]):
            raise SdcevalError(
                f"{subject}: record {i} is NaN (a missing value). Every record needs a "
                f"value: drop the record from every release compared or impute it.")
        raise SdcevalError(
            f"{subject}: record {i} is infinite ({float(arr[i])}). Property values must "
            f"be finite numbers; cap or recode the value.")
    return arr


def _float(v: np.ndarray) -> np.ndarray:
    # arithmetic (sums, differences, logs) in float64: integer arithmetic can wrap
    return v.astype(np.float64, copy=False)


def _pair(d1: Any, d2: Any, name: str | None) -> tuple[np.ndarray, np.ndarray]:
    a = as_vector(d1, name=name)
    b = as_vector(d2, name=name)
    if a.size != b.size:
        raise SdcevalError(
            f"{_label(name)}: the two vectors have different lengths ({a.size} and "
            f"{b.size}); both must hold one value per record of the same data set, in "
            f"the same record order.")
    return a, b


def _direction(higher_is_better: Any, name: str | None) -> bool:
    if not isinstance(higher_is_better, (bool, np.bool_)):
        raise SdcevalError(
            f"higher_is_better for {_label(name)} must be True or False, got "
            f"{plain(higher_is_better)!r}.")
    return bool(higher_is_better)


def _oriented(d1, d2, higher_is_better, name) -> tuple[np.ndarray, np.ndarray]:
    """The pair ordered so that "first better" reads ``a > b``: swapping the operands of
    every comparison is the reversed order of DEWRI A4 (exactly negation, no copy)."""
    hib = _direction(higher_is_better, name)
    a, b = _pair(d1, d2, name)
    return (a, b) if hib else (b, a)


def _real(value: Any, what: str, name: str | None, fix: str) -> float:
    if not _is_number(value) or not math.isfinite(float(value)):
        raise SdcevalError(f"{what} for {_label(name)} must be a finite number, got "
                           f"{plain(value)!r}. {fix}")
    return float(value)


# ------------------------------------------------------------------ unary indices

def p_min(d, higher_is_better: bool = True, *, name: str | None = None) -> float:
    """The worst record's value: min_i d_i, or max_i d_i for a lower-is-better property.

    D09 §3's P_k-anon(s) = min_i s_i (= 3 for 𝒯_3a) and P_ℓ-div(c) = min_i c_i (= 1 for
    𝒯_3a; this is not distinct ℓ-diversity, DEWRI A12), generalized to any property: the
    value the least protected (or worst served) record gets.
    """
    v = as_vector(d, name=name)
    return float(v.min() if _direction(higher_is_better, name) else v.max())


def p_sum(d, higher_is_better: bool = True, *, name: str | None = None) -> float:
    """S_𝒫 = Σ_i d_i (D10 §4.1; S_k = Σ_E |E|² for class size). The unary equivalent of
    the spread comparator: P_spr(a,b) > P_spr(b,a) ⇔ Σa > Σb (D10 §4.1 Observation).
    ``higher_is_better`` is accepted so every unary index has one signature; the sum
    does not depend on it."""
    _direction(higher_is_better, name)
    return float(_float(as_vector(d, name=name)).sum())


def p_mean(d, higher_is_better: bool = True, *, name: str | None = None) -> float:
    """P_s-avg = Σ_i d_i / N (D09 §3; = 3.4 for 𝒯_3a). ``higher_is_better`` is accepted
    for a uniform signature and does not change the value."""
    _direction(higher_is_better, name)
    return float(_float(as_vector(d, name=name)).mean())


def _d_max(d_max, n: int, name: str | None) -> float | np.ndarray:
    if _is_number(d_max):
        return _real(d_max, "d_max", name, "Give the point of interest D_max, e.g. the "
                     "best value every record could get.")
    m = as_vector(d_max, what=f"d_max of {_label(name)}")
    if m.size != n:
        raise SdcevalError(
            f"d_max of {_label(name)} has length {m.size} but the vector has {n} "
            f"records; give one value per record or a single number (used for every "
            f"record).")
    return m


def _norm_order(ord) -> float:
    if not _is_number(ord) or (math.isfinite(ord) and ord < 1) or math.isnan(ord):
        raise SdcevalError(f"ord must be a number >= 1 or math.inf (a vector norm), got "
                           f"{plain(ord)!r}; D09 §5.1 uses the Euclidean norm, ord=2.")
    return float(ord)


def p_rank(d, d_max, ord: float = 2, *, name: str | None = None) -> float:
    """P_rank(D) = ‖D − D_max‖ (D09 §5.1), the distance to a point of interest D_max;
    **lower is better**: P_rank(D1) < P_rank(D2) ⇔ D1 ▸rank D2.

    ``d_max`` is required (DEWRI A6): a number (the same target for every record, e.g.
    the largest class size wanted) or a vector of length N. The ranking depends on it:
    for class size, 𝒯_3b is nearest to D_max = 10·1 but 𝒯_4 is nearest to 7·1
    (DEWRI §2.2). ``ord`` is the norm's order (2 = Euclidean, as Fig. 2's arcs imply).
    """
    v = _float(as_vector(d, name=name))
    m = _d_max(d_max, v.size, name)
    return float(np.linalg.norm(v - m, ord=_norm_order(ord)))


def rank_compare(d1, d2, d_max, rank_tol: float = 0.0, ord: float = 2, *,
                 name: str | None = None) -> int:
    """+1 if D1 ▸rank D2 (P_rank(D1) < P_rank(D2) − rank_tol), −1 if D2 ▸rank D1, 0 when
    the ranks differ by at most ``rank_tol`` ("equally good", D09 §5.1's tolerance ε)."""
    a, b = _pair(d1, d2, name)
    tol = _real(rank_tol, "rank_tol", name, "Use 0 for no tolerance.")
    if tol < 0:
        raise SdcevalError(f"rank_tol for {_label(name)} must be >= 0, got {tol}.")
    r1, r2 = p_rank(a, d_max, ord, name=name), p_rank(b, d_max, ord, name=name)
    if abs(r1 - r2) <= tol:
        return 0
    return 1 if r1 < r2 else -1


# ------------------------------------------------------------------ binary indices

def p_binary(d1, d2, higher_is_better: bool = True, *, name: str | None = None) -> int:
    """P_binary(D1, D2) = |{i : d¹_i > d²_i}| (D09 §3), the **count** of records that
    are strictly better in D1 (indices, not distinct values: DEWRI A2). P_binary(𝒯_3a,
    𝒯_3b) = 0, P_binary(𝒯_3b, 𝒯_3a) = 7. D1 is better if P(D1,D2) > P(D2,D1)."""
    a, b = _oriented(d1, d2, higher_is_better, name)
    return int(np.count_nonzero(a > b))


def p_cov(d1, d2, higher_is_better: bool = True, *, name: str | None = None) -> float:
    """P_cov(D1, D2) = |{i : d¹_i ≥ d²_i}| / N (D09 §5.2), the fraction of records at
    least as good in D1. Ties count for **both** sides (≥, DEWRI A3), so P_cov(a,b) +
    P_cov(b,a) = 1 + ties/N; P_cov(D1,D2) = 1 and P_cov(D2,D1) = 0 imply D1 strictly
    dominates D2."""
    a, b = _oriented(d1, d2, higher_is_better, name)
    return np.count_nonzero(a >= b) / a.size


def p_spr(d1, d2, higher_is_better: bool = True, *, name: str | None = None) -> float:
    """P_spr(D1, D2) = Σ_i max(d¹_i − d²_i, 0) (D09 §5.3; for a lower-is-better property
    Σ_i max(d²_i − d¹_i, 0)): how much better D1 is where it is better. P_spr(D1,D2) = 0
    ⇔ D2 weakly dominates D1, and P_spr(a,b) − P_spr(b,a) = Σa − Σb (D10 §4.1
    Observation), so the comparison reduces to the sums."""
    a, b = _oriented(d1, d2, higher_is_better, name)
    gap = np.subtract(_float(a), _float(b))
    np.maximum(gap, 0.0, out=gap)
    total = float(gap.sum())
    if not math.isfinite(total):
        raise SdcevalError(f"{_label(name)}: P_spr overflows float64; the values are too "
                           f"large, rescale the property.")
    return total


def _reference(reference, higher_is_better: bool, name: str | None) -> float:
    if reference is None:
        if higher_is_better:
            return 0.0
        raise SdcevalError(
            f"{_label(name)} is lower-is-better, so P_hv needs a reference (worst) point "
            f"r with the values below it: pass reference=r, e.g. the loss's maximum "
            f"(the number of QIs for a per-record GLM summed over QIs; DEWRI A4).")
    return _real(reference, "reference", name, "Give the worst value of the property.")


def _gaps(v: np.ndarray, r: float, higher_is_better: bool) -> np.ndarray:
    v = _float(v)
    if higher_is_better:
        return v if r == 0.0 else v - r      # r = 0 (D09's P_hv) needs no copy
    return r - v


def log_volume(d, higher_is_better: bool = True, reference: float | None = None, *,
               name: str | None = None) -> float:
    """log Π_i (d_i − r) = Σ_i log(d_i − r), or Σ_i log(r − d_i) for a lower-is-better
    property; −inf if any record is not strictly better than r (the product is 0).

    This is the part of P_hv the comparison needs: D09 §5.4 notes the common term is
    "not required during a comparison", so P_hv(D1,D2) > P_hv(D2,D1) ⇔ log_volume(D1) >
    log_volume(D2). r defaults to 0 for higher-is-better and is required otherwise.
    """
    hib = _direction(higher_is_better, name)
    r = _reference(reference, hib, name)
    gaps = _gaps(as_vector(d, name=name), r, hib)
    if (gaps <= 0).any():
        return -math.inf
    return _finite_log_sum(gaps, name)


def _finite_log_sum(gaps: np.ndarray, name) -> float:
    total = float(np.log(gaps).sum())
    if not math.isfinite(total):
        raise SdcevalError(f"{_label(name)}: the log-volume overflows float64; the "
                           f"values are too large, rescale the property.")
    return total


def log_p_hv(d1, d2, higher_is_better: bool = True, reference: float | None = None, *,
             name: str | None = None) -> float:
    """log P_hv(D1, D2), the hypervolume index of D09 §5.4 **in log space** (DEWRI A5):

        P_hv(D1, D2) = Π_i (d¹_i − r) − Π_i (min(d¹_i, d²_i) − r)      (higher-is-better)
        P_hv(D1, D2) = Π_i (r − d¹_i) − Π_i (r − max(d¹_i, d²_i))      (lower-is-better)

    the volume dominated by D1 alone. D09 has r = 0; a lower-is-better property needs
    its worst point r (``reference``, DEWRI A4). A record not strictly better than r
    makes its product 0. Returns −inf when P_hv = 0 (D2 weakly dominates D1, for vectors
    strictly better than r).

    With L1 = Σ log(d¹_i − r) and δ = Σ_{i: d¹ better} log((d¹_i − r)/(d²_i − r)) (the
    records where D1 is not better cancel exactly), log P_hv = L1 + log(1 − e^{−δ}); no
    product is formed, so N = 10⁶ does not overflow. Comparator: P_hv(D1,D2) >
    P_hv(D2,D1) ⇔ Π(d¹ − r) > Π(d² − r) (E12: 56727 > 37888).
    """
    hib = _direction(higher_is_better, name)
    r = _reference(reference, hib, name)
    a, b = _pair(d1, d2, name)
    return _log_p_hv(a, b, hib, r, name)


def _log_p_hv(a: np.ndarray, b: np.ndarray, hib: bool, r: float, name) -> float:
    """`log_p_hv` of validated vectors."""
    g1, g2 = _gaps(a, r, hib), _gaps(b, r, hib)
    if (g1 <= 0).any():
        return -math.inf                      # Π(d¹ − r) = 0, and so is Π(min − r)
    # max(g1 − g2, 0) is nonzero exactly where D1 is better; elsewhere min = d¹ and the
    # factor cancels (term 0), so no boolean indexing (the slow part at N = 10⁶)
    gain = np.subtract(g1, g2)
    np.maximum(gain, 0.0, out=gain)
    if not gain.any():
        return -math.inf                      # min(d¹, d²) = d¹ everywhere
    l1 = _finite_log_sum(g1, name)
    # where D1 is not better g2 >= g1 > 0, so a g2 <= 0 sits where D1 is better
    if (g2 <= 0).any():
        return l1                             # the common volume is 0
    # log1p((g1 − g2)/g2) keeps δ accurate when the two vectors nearly coincide
    np.divide(gain, g2, out=gain)
    delta = float(np.log1p(gain, out=gain).sum())
    if delta <= 0.0:
        return -math.inf
    return l1 + math.log(-math.expm1(-delta))


def pair_indices(d1, d2, higher_is_better: bool = True, reference: float | None = None,
                 *, name: str | None = None) -> dict[str, Any]:
    """Every binary index of a pair both ways and their relation, the vectors read and
    checked once (what a comparison of two releases reports per property):
    ``p_binary_12/21``, ``p_cov_12/21``, ``p_spr_12/21``, ``log_p_hv_12/21`` (NaN when a
    lower-is-better property has no ``reference``) and ``relation``; ``12`` is
    P(D1, D2), ``21`` is P(D2, D1).  Same values as the single functions: P_cov(D1, D2)
    = 1 − P_binary(D2, D1)/N, and P_spr(D2, D1) = P_spr(D1, D2) − (ΣD1 − ΣD2) in the
    better direction (D10 §4.1 Observation)."""
    hib = _direction(higher_is_better, name)
    a, b = _pair(d1, d2, name)
    x, y = (a, b) if hib else (b, a)
    n = a.size
    gt = int(np.count_nonzero(x > y))
    lt = int(np.count_nonzero(x < y))
    gap = np.subtract(_float(x), _float(y))
    pos = float(np.maximum(gap, 0.0).sum())
    neg = float(np.maximum(-gap, 0.0, out=gap).sum())
    if not (math.isfinite(pos) and math.isfinite(neg)):
        raise SdcevalError(f"{_label(name)}: P_spr overflows float64; the values are too "
                           f"large, rescale the property.")
    out: dict[str, Any] = {"p_binary_12": gt, "p_binary_21": lt,
                           "p_cov_12": (n - lt) / n, "p_cov_21": (n - gt) / n,
                           "p_spr_12": pos, "p_spr_21": neg}
    if reference is None and not hib:
        out["log_p_hv_12"] = out["log_p_hv_21"] = math.nan
    else:
        r = _reference(reference, hib, name)
        out["log_p_hv_12"] = _log_p_hv(a, b, hib, r, name)
        out["log_p_hv_21"] = _log_p_hv(b, a, hib, r, name)
    out["relation"] = _verdict(gt > 0, lt > 0)
    return out


BINARY_INDICES: dict[str, Callable[..., float]] = {
    "p_binary": p_binary, "p_cov": p_cov, "p_spr": p_spr, "p_hv": log_p_hv,
}
"""Binary quality indices by name, for the comparators. Each is called as
``f(d1, d2, higher_is_better=..., name=...)`` (``p_hv`` also takes ``reference``) and a
higher value is better for its first argument. ``"p_hv"`` returns log P_hv."""

UNARY_INDICES: dict[str, Callable[..., float]] = {"min": p_min, "sum": p_sum,
                                                  "mean": p_mean}
"""Unary quality indices by name, called as ``f(d, higher_is_better=..., name=...)``."""


# ------------------------------------------------------------------ dominance (D09 Table 4)

def _better_worse(d1, d2, higher_is_better, name) -> tuple[bool, bool]:
    a, b = _oriented(d1, d2, higher_is_better, name)
    return bool((a > b).any()), bool((a < b).any())


def weakly_dominates(a, b, higher_is_better: bool = True, *,
                     name: str | None = None) -> bool:
    """D09 weak dominance (Table 4's ⪰, "not worse than"): ∀i a_i ≥ b_i (≤ for a
    lower-is-better property). Equal vectors weakly dominate each other."""
    return not _better_worse(a, b, higher_is_better, name)[1]


def dominates(a, b, higher_is_better: bool = True, *, name: str | None = None) -> bool:
    """Strict Pareto dominance, D09's strong dominance (Table 4's ≻, "better than") and
    Dewri et al. 2010's ⪰: ∀i a_i ≥ b_i ∧ ∃j a_j > b_j (reversed for lower-is-better)."""
    better, worse = _better_worse(a, b, higher_is_better, name)
    return better and not worse


def incomparable(a, b, higher_is_better: bool = True, *,
                 name: str | None = None) -> bool:
    """D09 non-dominance (Table 4's ∥): ∃i a_i < b_i ∧ ∃j a_j > b_j (each vector is
    better for some record)."""
    better, worse = _better_worse(a, b, higher_is_better, name)
    return better and worse


def relation(a, b, higher_is_better: bool = True, *, name: str | None = None) -> str:
    """'equal', 'dominates' (a strictly dominates b), 'dominated' or 'incomparable'.
    Exactly one holds; 'equal' is weak dominance both ways."""
    better, worse = _better_worse(a, b, higher_is_better, name)
    return _verdict(better, worse)


def _verdict(better: bool, worse: bool) -> str:
    if better and worse:
        return "incomparable"
    if better:
        return "dominates"
    return "dominated" if worse else "equal"


# ------------------------------------------------------------------ sets of property vectors

def _key(k: Hashable) -> str:
    return repr(plain(k))


def as_upsilon(Y: Any, *, name: str | None = None) -> dict[Hashable, np.ndarray]:
    """Υ as an ordered dict {property name: validated vector}: a mapping, or a
    DataFrame with one column per property (D09 Def. 2, paired by name, never an
    unordered set; DEWRI §1.1)."""
    where = f"{name}: " if name else ""
    if hasattr(Y, "columns") and hasattr(Y, "__getitem__"):
        Y = {c: Y[c] for c in Y.columns}
    if not isinstance(Y, Mapping):
        raise SdcevalError(
            f"{where}a set of property vectors must be a mapping {{property name: "
            f"vector}} or a DataFrame with one column per property, got "
            f"{type(Y).__name__}.")
    if not Y:
        raise SdcevalError(f"{where}the set of property vectors is empty; give at least "
                           f"one property.")
    # lengths are checked per property pair (paired_upsilons), not across properties:
    # a caller may drop records undefined for one property only
    return {k: as_vector(v, name=k) for k, v in Y.items()}


def paired_upsilons(Y1: Any, Y2: Any, *, name: str | None = None
                    ) -> tuple[list[Hashable], dict, dict]:
    """(property names in Y1's order, Υ₁, Υ₂) after checking both hold the same
    properties and each pair has equal lengths."""
    u1, u2 = as_upsilon(Y1, name=name), as_upsilon(Y2, name=name)
    only1 = [k for k in u1 if k not in u2]
    only2 = [k for k in u2 if k not in u1]
    if only1 or only2:
        parts = []
        if only1:
            parts.append("only in the first: " + ", ".join(map(_key, only1)))
        if only2:
            parts.append("only in the second: " + ", ".join(map(_key, only2)))
        hint = suggest(only2[0], map(str, only1)) if only1 and only2 else ""
        raise SdcevalError(
            f"{name + ': ' if name else ''}the two sets of property vectors must hold "
            f"the same properties ({'; '.join(parts)}).{hint}")
    keys = list(u1)
    for k in keys:
        _pair(u1[k], u2[k], k)
    return keys, u1, u2


def direction_map(keys: list[Hashable], higher_is_better: Any = None,
                  what: str = "higher_is_better") -> dict[Hashable, bool]:
    """{property: higher_is_better} from None (all True), one bool for all, or a mapping
    (missing properties default to True; unknown names are an error)."""
    if higher_is_better is None:
        return {k: True for k in keys}
    if isinstance(higher_is_better, (bool, np.bool_)):
        return {k: bool(higher_is_better) for k in keys}
    if not isinstance(higher_is_better, Mapping):
        raise SdcevalError(f"{what} must be a mapping {{property: True/False}}, got "
                           f"{type(higher_is_better).__name__}.")
    check_keys(higher_is_better, keys, what)
    return {k: _direction(higher_is_better.get(k, True), k) for k in keys}


def check_keys(mapping: Mapping, keys: list[Hashable], what: str) -> None:
    """Error if ``mapping`` names a property not in ``keys`` (a typo, usually)."""
    unknown = [k for k in mapping if k not in keys]
    if unknown:
        raise SdcevalError(
            f"{what} names property {_key(unknown[0])}, which is not compared."
            f"{suggest(str(unknown[0]), map(str, keys))} Properties: "
            f"{', '.join(map(_key, keys))}.")


def set_relation(Y1, Y2, higher_is_better: Mapping[str, bool] | None = None, *,
                 name: str | None = None) -> str:
    """Relation of two sets of property vectors paired by property name (D09 Table 4):

    - Υ₁ weakly dominates Υ₂ iff every pair does (∀i 𝒟₁ᵢ ⪰ 𝒟₂ᵢ);
    - 'dominates' iff Υ₁ weakly dominates Υ₂ and some pair strictly (∃j 𝒟₁ⱼ ≻ 𝒟₂ⱼ);
    - 'dominated' the mirror; 'equal' iff every pair is identical;
    - 'incomparable' iff neither weakly dominates the other.

    D09 prints non-dominance as ∃ a strictly better pair ∧ ∃ a strictly worse pair. That
    condition is sufficient, not necessary: a single pair of incomparable vectors (E10's
    D1, D2) makes the sets incomparable without any strictly better pair (DEWRI A11).
    ``higher_is_better`` maps property → bool (default all True).
    """
    keys, u1, u2 = paired_upsilons(Y1, Y2, name=name)
    hib = direction_map(keys, higher_is_better)
    better = worse = False
    for k in keys:
        b, w = _better_worse(u1[k], u2[k], hib[k], k)
        better, worse = better or b, worse or w
        if better and worse:
            break
    return _verdict(better, worse)
