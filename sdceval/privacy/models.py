"""Privacy models: k-anonymity, ℓ-diversity, t-closeness, δ-disclosure (SPEC §3).

Small classes behind one interface, in the ARX style: the same object is a *constraint*
(Mondrian allows a split only if every part satisfies it) and a *check* (the measures in
`sdceval.measures.privacy_checks`).  Everything is vectorized over equivalence classes:
the input is a counts matrix ``C`` (n_classes × S), ``C[i, s]`` = number of records of
class ``i`` whose sensitive code is ``s``, plus the table's sensitive distribution ``Q``
(length S).  Each model returns, per class,

* ``value(C, Q)`` — the level the class achieves (its k, ℓ, t or δ), and
* ``satisfied(C, Q)`` — whether that level meets the model's threshold.

Models (Li & Li 2009 §2.2; SPEC §3)
-----------------------------------
``KAnonymity(k)``
    class size ``n_i = Σ_s C[i, s] ≥ k`` (Samarati & Sweeney).
``LDiversity(l, variant)``
    ``probabilistic`` (Li & Li §2.2, the default): every sensitive value has frequency
    ≤ 1/ℓ in its class, i.e. achieved ℓ_i = n_i / max_s C[i, s] ≥ ℓ (ℓ real, e.g. 4.25);
    ``distinct``: ≥ ℓ distinct values (as Dewri et al.); ``entropy``: exp(H(P_i)) ≥ ℓ,
    H with natural log (Machanavajjhala et al.).
``TCloseness(t, distance, ground)``
    D(P_i, Q) ≤ t.  ``distance="js"``: Jensen–Shannon divergence, natural log (what Li &
    Li used; `sdceval.core.divergence.js_divergence`).  ``distance="emd"`` (Li, Li &
    Venkatasubramanian 2007) with a ground distance:
    ``equal`` — every pair at distance 1: EMD = total variation ½ Σ|p − q|;
    ``ordered`` — |i − j| / (S − 1) between codes i, j (numeric/ordinal sensitive):
    EMD = 1/(S−1) Σ_{i<S} |Σ_{j≤i} (p_j − q_j)|;
    ``hierarchical`` — level of the lowest common ancestor / tree height:
    EMD = Σ_N height(N)/H · min(pos_extra(N), neg_extra(N)) over inner nodes N, where
    extra(child) = Σ_{leaves under child} (p − q) (their Eq. for hierarchical EMD).
    ``auto`` picks ``ordered`` for a numeric sensitive hierarchy, else ``hierarchical``
    (which equals ``equal`` on a flat, one-level hierarchy).
``DeltaDisclosure(delta)``
    max_s |ln(p_i(s) / Q(s))| ≤ δ over the values with Q(s) > 0 (Brickell & Shmatikov);
    a class lacking a value that occurs in the table has δ_i = ∞ and violates it.

Infeasibility
-------------
The whole table as a single class is at distance 0 from itself, so it satisfies every t
and δ: when no split is allowed, Mondrian returns that single-class release and says so
in ``Release.info["warnings"]`` (Li & Li §5.1 note this for δ < 1 on Adult).  k-anonymity
and ℓ-diversity can fail even on the whole table (k > n, ℓ above the table's own ℓ, e.g.
distinct-ℓ larger than the number of distinct sensitive values): `check_feasible` then
raises `SdcevalError` naming the parameter and the largest achievable value.
"""
from __future__ import annotations

import math

import numpy as np

from sdceval.core.divergence import js_divergence
from sdceval.core.divergence import normalize
from sdceval.core.errors import SdcevalError, suggest
from sdceval.core.hierarchy import Hierarchy

# tolerance for comparing an achieved level with a threshold given as a decimal
# (ℓ = 4.1 must accept a class with n/max = 4.1 computed in floating point)
_RTOL = 1e-9

MODELS = ("k", "l", "t", "delta")
L_VARIANTS = ("probabilistic", "distinct", "entropy")
DISTANCES = ("emd", "js")
GROUNDS = ("auto", "equal", "ordered", "hierarchical")


def table_distribution(codes: np.ndarray, n_values: int) -> np.ndarray:
    """Q: the share of each sensitive code in the whole table (length ``n_values``)."""
    counts = np.bincount(np.asarray(codes), minlength=n_values).astype(np.float64)
    return counts / counts.sum()


def class_counts(classes: np.ndarray, codes: np.ndarray, n_values: int
                 ) -> tuple[np.ndarray, np.ndarray]:
    """Counts matrix of sensitive codes per class.

    Returns ``(counts, inverse)``: ``counts`` (n_classes × n_values) for the distinct
    class ids in sorted order, ``inverse`` the row of ``counts`` of each record.
    """
    _, inverse = np.unique(np.asarray(classes), return_inverse=True)
    inverse = inverse.ravel()
    n_classes = int(inverse.max()) + 1 if len(inverse) else 0
    flat = np.bincount(inverse * n_values + np.asarray(codes),
                       minlength=n_classes * n_values)
    return flat.reshape(n_classes, n_values), inverse


class PrivacyModel:
    """Interface of a privacy model (see the module docstring).

    Attributes
    ----------
    name : str
        Model name as in `make_model` (``"k"``, ``"l"``, ``"t"``, ``"delta"``).
    parameter : str
        Name of the threshold parameter.
    threshold : float
    larger_is_safer : bool
        Whether a larger achieved value means more protection (k, ℓ) or less (t, δ).
    needs_sensitive : bool
        Whether the model looks at sensitive values (all but k-anonymity).
    """

    name = ""
    parameter = ""
    larger_is_safer = True
    needs_sensitive = True

    threshold: float

    def value(self, counts: np.ndarray, table_dist: np.ndarray) -> np.ndarray:
        """Achieved level per class (k, ℓ, t or δ)."""
        raise NotImplementedError

    def satisfied(self, counts: np.ndarray, table_dist: np.ndarray) -> np.ndarray:
        """Boolean per class: the class meets the threshold."""
        v = self.value(counts, table_dist)
        if self.larger_is_safer:
            return v >= self.threshold * (1 - _RTOL)
        return v <= self.threshold * (1 + _RTOL)

    def min_class_size(self, table_dist: np.ndarray) -> int:
        """A lower bound on the size of any class that satisfies the model (lets
        Mondrian finalize partitions too small to split without evaluating them)."""
        return 1

    def describe(self) -> str:
        return f"{self.parameter}={self.threshold:g}"

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.describe()})"


class KAnonymity(PrivacyModel):
    """Every class has at least ``k`` records: value = class size."""

    name = parameter = "k"
    needs_sensitive = False

    def __init__(self, k: int):
        if isinstance(k, bool) or not float(k).is_integer() or k < 1:
            raise SdcevalError(f"k-anonymity: k must be an integer >= 1, got {k!r}")
        self.k = int(k)
        self.threshold = float(self.k)

    def value(self, counts, table_dist=None):
        return np.asarray(counts).sum(axis=1).astype(np.float64)

    def satisfied(self, counts, table_dist=None):
        return np.asarray(counts).sum(axis=1) >= self.k

    def min_class_size(self, table_dist=None) -> int:
        return self.k


class LDiversity(PrivacyModel):
    """ℓ-diversity; ``variant`` probabilistic (default), distinct or entropy."""

    name = parameter = "l"

    def __init__(self, l: float, variant: str = "probabilistic"):  # noqa: E741
        if variant not in L_VARIANTS:
            raise SdcevalError(f"ℓ-diversity: variant must be one of {', '.join(L_VARIANTS)}, "
                               f"got {variant!r}.{suggest(str(variant), L_VARIANTS)}")
        l = float(l)  # noqa: E741
        if not math.isfinite(l) or l < 1:
            raise SdcevalError(f"ℓ-diversity: l must be a number >= 1, got {l!r}")
        self.l = l
        self.variant = variant
        self.threshold = l

    def value(self, counts, table_dist=None):
        c = np.asarray(counts, dtype=np.float64)
        n = c.sum(axis=1)
        if self.variant == "probabilistic":
            mx = c.max(axis=1)
            return np.divide(n, mx, out=np.zeros_like(n), where=mx > 0)
        if self.variant == "distinct":
            return (c > 0).sum(axis=1).astype(np.float64)
        p = normalize(c)
        with np.errstate(divide="ignore", invalid="ignore"):
            h = -np.where(p > 0, p * np.log(np.where(p > 0, p, 1.0)), 0.0).sum(axis=1)
        return np.exp(h)

    def satisfied(self, counts, table_dist=None):
        if self.variant == "probabilistic":
            # max/n <= 1/ℓ without dividing: exact for integer counts and decimal ℓ
            c = np.asarray(counts)
            return c.max(axis=1) * self.l <= c.sum(axis=1) * (1 + _RTOL)
        return super().satisfied(counts, table_dist)

    def min_class_size(self, table_dist=None) -> int:
        # every variant needs at least ℓ records (n/max ≤ n, #distinct ≤ n, e^H ≤ n)
        return max(1, math.ceil(self.l - _RTOL * self.l))

    def describe(self) -> str:
        return f"l={self.l:g} ({self.variant})"


class TCloseness(PrivacyModel):
    """t-closeness: distance between class and table distributions ≤ t."""

    name = parameter = "t"
    larger_is_safer = False

    def __init__(self, t: float, distance: str = "emd", ground: str = "auto",
                 hierarchy: Hierarchy | None = None):
        t = float(t)
        if not math.isfinite(t) or t <= 0:
            raise SdcevalError(f"t-closeness: t must be a number > 0, got {t!r}")
        if distance not in DISTANCES:
            raise SdcevalError(f"t-closeness: distance must be one of {', '.join(DISTANCES)}, "
                               f"got {distance!r}.{suggest(str(distance), DISTANCES)}")
        if ground not in GROUNDS:
            raise SdcevalError(f"t-closeness: ground must be one of {', '.join(GROUNDS)}, "
                               f"got {ground!r}.{suggest(str(ground), GROUNDS)}")
        if distance == "js" and ground != "auto":
            raise SdcevalError(f"t-closeness: ground={ground!r} applies to distance='emd' "
                               "only (JS divergence has no ground distance)")
        if ground == "hierarchical" and hierarchy is None:
            raise SdcevalError("t-closeness: ground='hierarchical' needs the sensitive "
                               "attribute's hierarchy")
        if ground == "auto":
            if distance == "js":
                ground = "none"
            elif hierarchy is None:
                ground = "equal"
            elif hierarchy.numeric:
                ground = "ordered"
            else:
                ground = "hierarchical"
        self.t = t
        self.distance = distance
        self.ground = ground
        self.hierarchy = hierarchy
        self.threshold = t
        if ground == "hierarchical":
            self._levels = _hierarchy_groups(hierarchy)

    def value(self, counts, table_dist):
        p = normalize(counts)
        q = np.asarray(table_dist, dtype=np.float64)
        if self.distance == "js":
            return np.asarray(js_divergence(p, q[None, :]), dtype=np.float64)
        d = p - q[None, :]
        if self.ground == "equal":
            return 0.5 * np.abs(d).sum(axis=1)
        if self.ground == "ordered":
            m = d.shape[1]
            if m < 2:
                return np.zeros(d.shape[0])
            return np.abs(np.cumsum(d[:, :-1], axis=1)).sum(axis=1) / (m - 1)
        return _emd_hierarchical(d, self._levels)

    def describe(self) -> str:
        g = "" if self.distance == "js" else f", ground={self.ground}"
        return f"t={self.t:g} ({self.distance}{g})"


class DeltaDisclosure(PrivacyModel):
    """δ-disclosure privacy: max_s |ln(p_class(s)/Q(s))| ≤ δ."""

    name = parameter = "delta"
    larger_is_safer = False

    def __init__(self, delta: float):
        delta = float(delta)
        if not math.isfinite(delta) or delta <= 0:
            raise SdcevalError(f"δ-disclosure: delta must be a number > 0, got {delta!r}")
        self.delta = delta
        self.threshold = delta

    def value(self, counts, table_dist):
        p = normalize(counts)
        q = np.asarray(table_dist, dtype=np.float64)
        occurs = q > 0
        with np.errstate(divide="ignore"):
            r = np.abs(np.log(p[:, occurs] / q[occurs][None, :]))
        return r.max(axis=1) if r.shape[1] else np.zeros(len(p))

    def min_class_size(self, table_dist) -> int:
        # every value of the table must occur in every class
        return max(1, int((np.asarray(table_dist) > 0).sum()))

    def describe(self) -> str:
        return f"delta={self.delta:g}"


def _hierarchy_groups(h: Hierarchy) -> list[tuple[float, np.ndarray]]:
    """Per level j = 1..H: (j/H, start index of each level-j node's children among the
    level-(j-1) nodes).  Children are contiguous because nodes are numbered in leaf
    order, so sums over children are one ``np.add.reduceat``."""
    out = []
    for j in range(1, h.height + 1):
        parent = h.node_of[j][h.lo[j - 1]]
        starts = np.flatnonzero(np.r_[True, parent[1:] != parent[:-1]])
        out.append((j / h.height, starts))
    return out


def _emd_hierarchical(d: np.ndarray, levels) -> np.ndarray:
    # extra(N) = Σ (p - q) under N; a node at height j moves min(pos, neg) mass
    # between its children at ground distance j / H (Li, Li & Venkatasubramanian §4.2)
    total = np.zeros(d.shape[0])
    extra = d
    for weight, starts in levels:
        pos = np.add.reduceat(np.maximum(extra, 0.0), starts, axis=1)
        neg = np.add.reduceat(np.maximum(-extra, 0.0), starts, axis=1)
        total += weight * np.minimum(pos, neg).sum(axis=1)
        extra = np.add.reduceat(extra, starts, axis=1)
    return total


def make_model(model: str, *, hierarchy: Hierarchy | None = None, **params) -> PrivacyModel:
    """Build a privacy model by name.

    Parameters
    ----------
    model : {"k", "l", "t", "delta"}
    hierarchy : Hierarchy, optional
        The sensitive attribute's hierarchy (t-closeness with EMD: chooses and defines
        the ground distance).
    **params
        ``k`` for "k"; ``l`` and ``variant`` for "l"; ``t``, ``distance`` and ``ground``
        for "t"; ``delta`` for "delta".

    Examples
    --------
    >>> make_model("l", l=4.25).describe()
    'l=4.25 (probabilistic)'
    """
    allowed = {"k": ("k",), "l": ("l", "variant"), "t": ("t", "distance", "ground"),
               "delta": ("delta",)}
    if model not in allowed:
        raise SdcevalError(f"unknown privacy model {model!r}.{suggest(str(model), MODELS)} "
                           f"Models: {', '.join(MODELS)}")
    extra = sorted(set(params) - set(allowed[model]))
    if extra:
        raise SdcevalError(f"privacy model {model!r} has no parameter {extra[0]!r}; "
                           f"its parameters: {', '.join(allowed[model])}")
    threshold = allowed[model][0]
    if params.get(threshold) is None:
        raise SdcevalError(f"privacy model {model!r} needs its parameter {threshold!r} "
                           f"(e.g. {threshold}={ {'k': 10, 'l': 4, 't': 0.15, 'delta': 1.5}[model] })")
    if model == "k":
        return KAnonymity(params["k"])
    if model == "l":
        return LDiversity(params["l"], params.get("variant", "probabilistic"))
    if model == "t":
        return TCloseness(params["t"], params.get("distance", "emd"),
                          params.get("ground", "auto"), hierarchy)
    return DeltaDisclosure(params["delta"])


def check_feasible(model: PrivacyModel, total_counts: np.ndarray,
                   table_dist: np.ndarray) -> None:
    """Raise if even the whole table, as one class, violates ``model``.

    t and δ always hold for the whole table (distance 0); k and ℓ may not.
    """
    row = np.asarray(total_counts)[None, :]
    if model.satisfied(row, table_dist)[0]:
        return
    best = float(model.value(row, table_dist)[0])
    if isinstance(model, KAnonymity):
        raise SdcevalError(f"k={model.k} exceeds the number of records ({int(best)}); "
                           f"choose k <= {int(best)}")
    if isinstance(model, LDiversity):
        what = {"probabilistic": "n / (count of the most frequent sensitive value)",
                "distinct": "the number of distinct sensitive values",
                "entropy": "exp(entropy of the sensitive attribute)"}[model.variant]
        raise SdcevalError(
            f"{model.variant} ℓ-diversity with l={model.l:g} cannot be met even by the "
            f"whole table as one class: the maximum achievable ℓ is {best:.4g} "
            f"({what}); choose l <= {math.floor(best * 1e4) / 1e4:g}")
    raise SdcevalError(f"{model!r} cannot be met even by the whole table "
                       f"(achieved {model.parameter} = {best:.4g})")
