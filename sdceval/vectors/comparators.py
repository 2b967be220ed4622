"""Multi-property comparators of Dewri et al. 2009 §5.5-5.7 ("D09"): WTD, LEX, GOAL.

Υ₁ = (𝒟₁₁, …, 𝒟₁ᵣ) and Υ₂ = (𝒟₂₁, …, 𝒟₂ᵣ) are the property vectors of two releases,
given as mappings {property name: vector} (or DataFrames, one column per property) and
paired by name. Each comparator evaluates one binary quality index P (higher is better
for its first argument, `sdceval.vectors.indices.BINARY_INDICES`) per property in both
directions, P(𝒟₁ᵢ, 𝒟₂ᵢ) and P(𝒟₂ᵢ, 𝒟₁ᵢ), and turns the r pairs into one decision.
``higher_is_better`` (property → bool) and ``references`` (property → worst value, for
P_hv of a lower-is-better property) are passed down to the index, so a loss is compared
the right way round without negation (DEWRI A4).

P_hv is only available as log P_hv (the products overflow for real N, DEWRI A5), so with
``index="p_hv"`` the per-property values are logarithms. LEX compares the raw
differences P − P′ exactly from the logs; WTD needs ``normalize="share"`` (a weighted
sum of logarithms is not D09's P_WTD); GOAL, which squares P − g, refuses P_hv.
"""
from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, field
from typing import Any, Callable, Hashable, Mapping

from sdceval.core.errors import SdcevalError, plain, unknown
from sdceval.vectors.indices import (
    BINARY_INDICES, UNARY_INDICES, as_upsilon, check_keys, direction_map, log_p_hv,
    paired_upsilons,
)

__all__ = ["Decision", "wtd", "lex", "goal", "goal_unary"]

_PREFERRED = ("first", "second", "tie")


@dataclass(frozen=True)
class Decision:
    """The outcome of one comparator on (Υ₁, Υ₂).

    ``score_first`` / ``score_second`` are the comparator's quality index for
    (Υ₁, Υ₂) and (Υ₂, Υ₁): P_WTD (higher wins), P_LEX (lower wins; math.inf when no
    property qualifies) or P_GOAL (lower wins). ``preferred`` is "first", "second" or
    "tie". ``per_property`` maps property → (P(𝒟₁ᵢ, 𝒟₂ᵢ), P(𝒟₂ᵢ, 𝒟₁ᵢ)) of the binary
    index named by ``index`` (log values for "p_hv")."""

    method: str
    score_first: float
    score_second: float
    preferred: str
    per_property: dict = field(default_factory=dict)
    index: str = ""

    def __post_init__(self):
        if self.preferred not in _PREFERRED:
            raise SdcevalError(f"Decision.preferred must be one of {', '.join(_PREFERRED)}, "
                               f"got {plain(self.preferred)!r}.")

    def as_dict(self) -> dict:
        """Plain Python values (floats, strings, lists), ready for JSON."""
        return {
            "method": self.method, "index": self.index,
            "score_first": float(self.score_first),
            "score_second": float(self.score_second),
            "preferred": self.preferred,
            "per_property": {str(plain(k)): [float(p), float(q)]
                             for k, (p, q) in self.per_property.items()},
        }


# ------------------------------------------------------------------ shared helpers

def _key(k: Hashable) -> str:
    return repr(plain(k))


def _is_real(x: Any) -> bool:
    return isinstance(x, numbers.Real) and not isinstance(x, bool)


def _per_key(values: Any, keys: list[Hashable], what: str, fix: str) -> list[float]:
    """``values`` (a mapping over exactly ``keys`` or a sequence in ``keys``' order) as
    finite floats in ``keys``' order."""
    if isinstance(values, Mapping):
        check_keys(values, keys, what)
        missing = [k for k in keys if k not in values]
        if missing:
            raise SdcevalError(f"{what} lacks property {_key(missing[0])}; give one value "
                               f"per property ({', '.join(map(_key, keys))}). {fix}")
        raw = [values[k] for k in keys]
    elif isinstance(values, (str, bytes)) or not hasattr(values, "__len__"):
        raise SdcevalError(f"{what} must be a sequence of {len(keys)} numbers or a "
                           f"mapping {{property: number}}, got {plain(values)!r}. {fix}")
    else:
        raw = list(values)
        if len(raw) != len(keys):
            raise SdcevalError(
                f"{what} has {len(raw)} values but needs {len(keys)} values (one per "
                f"property, in the order {', '.join(map(_key, keys))}); for weights: "
                f"{len(keys)} weights. {fix}")
    out = []
    for k, v in zip(keys, raw):
        if not _is_real(v) or not math.isfinite(float(v)):
            raise SdcevalError(f"{what} for property {_key(k)} must be a finite number, "
                               f"got {plain(v)!r}. {fix}")
        out.append(float(v))
    return out


def _binary_index(index: Any) -> tuple[str, Callable]:
    if callable(index):
        return getattr(index, "__name__", "custom"), index
    if isinstance(index, str) and index in BINARY_INDICES:
        return index, BINARY_INDICES[index]
    raise unknown("binary quality index", str(plain(index)), BINARY_INDICES)


def _references(references: Any, keys: list[Hashable]) -> dict:
    if references is None:
        return {}
    if not isinstance(references, Mapping):
        raise SdcevalError(f"references must be a mapping {{property: worst value}}, got "
                           f"{type(references).__name__}.")
    check_keys(references, keys, "references")
    return dict(references)


def _evaluate(Y1, Y2, index, higher_is_better, references, order=None
              ) -> tuple[str, bool, dict]:
    """(index label, values are logs, {property: (P(D1,D2), P(D2,D1))}) in ``order``
    (default Y1's key order)."""
    keys, u1, u2 = paired_upsilons(Y1, Y2)
    label, fn = _binary_index(index)
    hib = direction_map(keys, higher_is_better)
    refs = _references(references, keys)
    is_hv = fn is log_p_hv
    per = {}
    for k in (order if order is not None else keys):
        kwargs = {"higher_is_better": hib[k], "name": k}
        if is_hv:
            kwargs["reference"] = refs.get(k)
        pair = (fn(u1[k], u2[k], **kwargs), fn(u2[k], u1[k], **kwargs))
        for v in pair:
            if not _is_real(v) or math.isnan(float(v)):
                raise SdcevalError(f"the quality index {label!r} returned {plain(v)!r} "
                                   f"for property {_key(k)}; an index must return a "
                                   f"number.")
        per[k] = (float(pair[0]), float(pair[1]))
    return label, is_hv, per


def _decide(first: float, second: float, higher_wins: bool) -> str:
    if first == second:
        return "tie"
    return "first" if (first > second) == higher_wins else "second"


# ------------------------------------------------------------------ WTD

def _share(p: float, q: float, logs: bool) -> float:
    """P/(P + P′), 0.5 when both are 0 (DEWRI A8); from logs, 1/(1 + e^{q − p})."""
    if logs:
        if p == q:
            return 0.5                      # includes both −inf (P = P′ = 0)
        t = p - q
        return 1.0 / (1.0 + math.exp(-t)) if t >= 0 else math.exp(t) / (1.0 + math.exp(t))
    if p < 0 or q < 0:
        raise SdcevalError(f"normalize='share' needs non-negative index values, got "
                           f"{p} and {q}; use a callable normalize instead.")
    return 0.5 if p + q == 0 else p / (p + q)


def wtd(Y1, Y2, weights, index: str | Callable = "p_cov", normalize=None,
        higher_is_better: Mapping[str, bool] | None = None,
        references: Mapping[str, float] | None = None) -> Decision:
    """Weighted-sum comparator ▸WTD (D09 §5.5):

        P_WTD(Υ₁, Υ₂) = Σᵢ wᵢ · P(𝒟₁ᵢ, 𝒟₂ᵢ),    Υ₁ ▸WTD Υ₂ ⇔ P_WTD(Υ₁,Υ₂) > P_WTD(Υ₂,Υ₁).

    ``weights``: a mapping {property: w} or a sequence in Y1's key order; non-negative
    and summing to 1 (within 1e-9). ``normalize``: None (raw P values; reproduces E13's
    0.65 = 0.65 tie), "share" (P̃ = P/(P + P′), 0.5 when both are 0; DEWRI A8, "it is
    advisable to normalize") or a callable ``f(P, P′) -> float`` applied to each side.
    Sums use math.fsum, so equal terms in another order tie exactly.
    """
    keys = list(as_upsilon(Y1))
    fix = "Weights are non-negative and sum to 1 (D09 §5.5)."
    w = _per_key(weights, keys, "weights", fix)
    if any(x < 0 for x in w):
        raise SdcevalError(f"weights must not be negative, got {w}. {fix}")
    if abs(math.fsum(w) - 1.0) > 1e-9:
        raise SdcevalError(f"weights must sum to 1, they sum to {math.fsum(w)!r}. "
                           f"Divide each weight by their total.")
    if normalize is None or normalize == "share":
        pass
    elif not callable(normalize):
        raise SdcevalError(f"normalize must be None, 'share' or a callable f(P, P′), got "
                           f"{plain(normalize)!r}.")
    if _binary_index(index)[1] is log_p_hv and normalize is None:
        raise SdcevalError(
            "index 'p_hv' gives log P_hv (the products overflow), and a weighted sum of "
            "logarithms is not D09's P_WTD: use normalize='share' (or a callable).")
    label, logs, per = _evaluate(Y1, Y2, index, higher_is_better, references)

    def norm(p: float, q: float) -> float:
        if normalize is None:
            return p
        if normalize == "share":
            return _share(p, q, logs)
        v = normalize(p, q)
        if not _is_real(v) or math.isnan(float(v)):
            raise SdcevalError(f"normalize returned {plain(v)!r}; it must return a "
                               f"number.")
        return float(v)

    # a zero weight drops its property (also avoids 0 · (−inf))
    terms = [(wi, per[k]) for wi, k in zip(w, keys) if wi > 0]
    s1 = math.fsum(wi * norm(p, q) for wi, (p, q) in terms)
    s2 = math.fsum(wi * norm(q, p) for wi, (p, q) in terms)
    return Decision("wtd", s1, s2, _decide(s1, s2, higher_wins=True), per, label)


# ------------------------------------------------------------------ LEX

def _exceeds(p: float, q: float, eps: float, logs: bool) -> bool:
    """P − P′ > ε, with p, q the logs of P, P′ when ``logs`` (no product is formed)."""
    if not logs:
        return p - q > eps
    if not p > q:
        return False
    if eps == 0:
        return True
    # log(P − P′) = log P + log(1 − P′/P)
    return p + math.log(-math.expm1(q - p)) > math.log(eps)


def _order(order: Any, keys: list[Hashable]) -> list[Hashable]:
    if order is None:
        return keys
    if isinstance(order, (str, bytes)) or not hasattr(order, "__iter__"):
        raise SdcevalError(f"order must be a sequence of property names, got "
                           f"{plain(order)!r}.")
    order = list(order)
    check_keys(dict.fromkeys(order), keys, "order")
    if len(order) != len(keys) or len(set(order)) != len(order):
        raise SdcevalError(
            f"order must list every property exactly once, most relevant first (D09 "
            f"§5.6); got {', '.join(map(_key, order))} for the properties "
            f"{', '.join(map(_key, keys))}.")
    return order


def lex(Y1, Y2, significance=None, order=None, index: str | Callable = "p_cov",
        higher_is_better: Mapping[str, bool] | None = None,
        references: Mapping[str, float] | None = None) -> Decision:
    """ε-lexicographic comparator ▸LEX (D09 §5.6):

        P_LEX(Υ₁, Υ₂) = min{ i ∈ 1..r : P(𝒟₁ᵢ, 𝒟₂ᵢ) − P(𝒟₂ᵢ, 𝒟₁ᵢ) > εᵢ },  min ∅ = +∞,
        Υ₁ ▸LEX Υ₂ ⇔ P_LEX(Υ₁, Υ₂) < P_LEX(Υ₂, Υ₁).

    i is the 1-based position in ``order`` (most relevant property first; default Y1's
    key order); ``significance`` ε (mapping, or sequence in ``order``'s order; default
    zeros, each ≥ 0) is the largest difference still "equally good". Both scores +∞
    (DEWRI A9) is a tie; with ε ≥ 0 both cannot be finite and equal.
    """
    keys = list(as_upsilon(Y1))
    order = _order(order, keys)
    fix = "The significance is the tolerated difference per property, >= 0."
    eps = [0.0] * len(order) if significance is None else _per_key(
        significance, order, "significance", fix)
    if any(e < 0 for e in eps):
        raise SdcevalError(f"significance must not be negative, got {eps}. {fix}")
    label, logs, per = _evaluate(Y1, Y2, index, higher_is_better, references, order)

    def first_superior(forward: bool) -> float:
        for pos, (k, e) in enumerate(zip(order, eps), start=1):
            p, q = per[k] if forward else per[k][::-1]
            if _exceeds(p, q, e, logs):
                return float(pos)
        return math.inf

    s1, s2 = first_superior(True), first_superior(False)
    return Decision("lex", s1, s2, _decide(s1, s2, higher_wins=False), per, label)


# ------------------------------------------------------------------ GOAL

def goal(Y1, Y2, goal_vector, index: str | Callable = "p_cov",
         higher_is_better: Mapping[str, bool] | None = None,
         references: Mapping[str, float] | None = None) -> Decision:
    """Goal comparator ▸GOAL (D09 §5.7):

        P_GOAL(Υ₁, Υ₂) = Σᵢ [P(𝒟₁ᵢ, 𝒟₂ᵢ) − gᵢ]²,  Υ₁ ▸GOAL Υ₂ ⇔ P_GOAL(Υ₁,Υ₂) < P_GOAL(Υ₂,Υ₁).

    ``goal_vector`` G: a mapping or a sequence in Y1's key order. Lower wins. P_hv is
    refused: only its logarithm is computable for real N, and P − g needs the value.
    """
    keys = list(as_upsilon(Y1))
    g = _per_key(goal_vector, keys, "goal_vector",
                 "Give the desired index value per property (D09 §5.7).")
    if _binary_index(index)[1] is log_p_hv:
        raise SdcevalError(
            "goal cannot use index 'p_hv': P_GOAL squares P − g, and P_hv is only "
            "available as its logarithm (the products overflow). Use p_cov, p_spr or "
            "p_binary, or goal_unary with a unary index.")
    label, _, per = _evaluate(Y1, Y2, index, higher_is_better, references)
    s1 = math.fsum((per[k][0] - gi) ** 2 for k, gi in zip(keys, g))
    s2 = math.fsum((per[k][1] - gi) ** 2 for k, gi in zip(keys, g))
    if not (math.isfinite(s1) and math.isfinite(s2)):
        raise SdcevalError("P_GOAL overflows float64; rescale the goal or the index.")
    return Decision("goal", s1, s2, _decide(s1, s2, higher_wins=False), per, label)


def _unary_indices(indices: Any, keys: list[Hashable]) -> list[Callable]:
    if isinstance(indices, str) or callable(indices):
        raw = [indices] * len(keys)
    elif isinstance(indices, Mapping):
        check_keys(indices, keys, "indices")
        missing = [k for k in keys if k not in indices]
        if missing:
            raise SdcevalError(f"indices lacks property {_key(missing[0])}; name a unary "
                               f"index ({', '.join(UNARY_INDICES)}) per property.")
        raw = [indices[k] for k in keys]
    else:
        raw = list(indices)
        if len(raw) != len(keys):
            raise SdcevalError(f"indices has {len(raw)} values but needs {len(keys)} "
                               f"values (one unary index per property, in the order "
                               f"{', '.join(map(_key, keys))}).")
    out = []
    for ix in raw:
        if callable(ix):
            out.append(ix)
        elif isinstance(ix, str) and ix in UNARY_INDICES:
            out.append(UNARY_INDICES[ix])
        else:
            raise unknown("unary quality index", str(plain(ix)), UNARY_INDICES)
    return out


def goal_unary(Y, goal_vector, indices, higher_is_better: Mapping[str, bool] | None = None
               ) -> float:
    """Unary GOAL score (D09 §5.7, DEWRI A10): Σᵢ [Pᵢ(𝒟ᵢ) − gᵢ]², lower is better.

    ``indices``: one unary index name ("min", "sum", "mean") or callable for every
    property, or one per property (mapping or sequence in Y's key order); each is
    called as ``f(d, higher_is_better=..., name=...)``. D09 builds G from goal property
    vectors, gᵢ = Pᵢ(𝒟_gᵢ).
    """
    u = as_upsilon(Y)
    keys = list(u)
    g = _per_key(goal_vector, keys, "goal_vector",
                 "Give the desired index value per property (D09 §5.7).")
    fns = _unary_indices(indices, keys)
    hib = direction_map(keys, higher_is_better)
    vals = [fn(u[k], higher_is_better=hib[k], name=k) for fn, k in zip(fns, keys)]
    total = math.fsum((float(v) - gi) ** 2 for v, gi in zip(vals, g))
    if not math.isfinite(total):
        raise SdcevalError("the unary GOAL score is not finite; check the goal vector "
                           "and the indices.")
    return total
