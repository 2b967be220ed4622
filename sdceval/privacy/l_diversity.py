"""ℓ-diversity (Machanavajjhala et al. 2007; Li & Li 2009 §2.2; SPEC §3): the
probabilistic, distinct and entropy variants (`LDiversity`, model ``"l"``).  Recursive
(c, ℓ)-diversity: `sdceval.privacy.recursive_cl`.

References
----------
Machanavajjhala, Kifer, Gehrke, Venkitasubramaniam (2007). ℓ-diversity: privacy beyond
k-anonymity. ACM TKDD 1(1), Def. 4.1 (entropy ℓ-diversity).
Li & Li (2009). On the tradeoff between privacy and utility in data publishing. KDD.
"""
from __future__ import annotations

import math

import numpy as np

from sdceval.core.divergence import normalize
from sdceval.core.registry import Param
from sdceval.privacy.base import _RTOL, ModelObjective, PrivacyModel, register_model

L_VARIANTS = ("probabilistic", "distinct", "entropy")


@register_model
class LDiversity(PrivacyModel):
    """ℓ-diversity; ``variant`` probabilistic (default), distinct or entropy.

    * ``probabilistic`` (Li & Li §2.2): every sensitive value has frequency ≤ 1/ℓ in its
      class, i.e. achieved ℓ_i = n_i / max_s C[i, s] ≥ ℓ (ℓ real, e.g. 4.25);
    * ``distinct``: ≥ ℓ distinct values (as Dewri et al.);
    * ``entropy``: exp(H(P_i)) ≥ ℓ, H with natural log (Machanavajjhala et al. Def. 4.1;
      ARX's Shannon estimator).

    Monotonicity with generalization — yes for all three (a merged class's distribution
    is the size-weighted mean of its parts'): probabilistic — {P : max_s P(s) ≤ 1/ℓ} is
    convex; distinct — a union holds every value of its parts; entropy — H is concave,
    so H(merged) ≥ the weighted mean of the parts' H ≥ ln ℓ.  ARX (distinct, entropy):
    the same.

    Monotonicity with suppression — distinct only: a union containing a class with ≥ ℓ
    values has ≥ ℓ values, so a violating class of a more general node is a union of
    violating classes.  Probabilistic and entropy: no — with ℓ = 2, (1, 1) satisfies
    both, (3, 0) violates, and their union (4, 1) violates both (max share 0.8,
    exp(H) ≈ 1.65), so generalizing can suppress more records.  ARX: distinct true,
    entropy false (ARX has no probabilistic variant).  The class attribute is False (not
    for every variant); an instance with ``variant="distinct"`` has True.

    Minimal class size: ⌈ℓ⌉ for every variant (n/max ≤ n, #distinct ≤ n, e^H ≤ n), as
    ARX's ``LDiversity.getMinimalClassSize``.
    """

    name = "l"
    title = "ℓ-diversity"
    params = (Param("l", float, None, low=1.0, protection="increasing", unprotected=1.0,
                    grid=(3.0, 3.5, 4.0, 4.25, 4.5, 4.75, 5.0, 5.5),
                    description="ℓ (real; probabilistic: every sensitive value has "
                                "frequency <= 1/ℓ in its class)"),
              Param("variant", str, "probabilistic", choices=L_VARIANTS,
                    description="probabilistic (Li & Li), distinct or entropy"))
    monotone_generalization = True
    monotone_suppression = False
    example = {"l": 4}
    check_name = "l_diversity"

    @classmethod
    def lattice_objectives(cls):
        """One objective per variant: ``l_distinct``, ``l_probabilistic``, ``l_entropy``."""
        what = {"distinct": "distinct sensitive values",
                "probabilistic": "|E| / count of the most frequent sensitive value",
                "entropy": "exp(entropy of the sensitive values)"}
        return tuple(ModelObjective(
            f"l_{v}", {"variant": v}, label=f"ℓ ({v})", integer=v == "distinct",
            description=f"ℓ-diversity ({v}): min over kept classes of {what[v]}")
            for v in ("distinct", "probabilistic", "entropy"))

    def __init__(self, l: float, variant: str = "probabilistic"):  # noqa: E741
        self.variant = self.check_param("variant", variant)
        self.l = self.check_param("l", l)
        self.threshold = self.l
        self.monotone_suppression = self.variant == "distinct"

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
            with np.errstate(over="ignore"):  # a huge ℓ (1e308): inf, not satisfied
                return c.max(axis=1) * self.l <= c.sum(axis=1) * (1 + _RTOL)
        return super().satisfied(counts, table_dist)

    def min_class_size(self, table_dist=None) -> int:
        return max(1, math.ceil(self.l - _RTOL * self.l))

    def infeasible_message(self, best, total_counts) -> str:
        what = {"probabilistic": "n / (count of the most frequent sensitive value)",
                "distinct": "the number of distinct sensitive values",
                "entropy": "exp(entropy of the sensitive attribute)"}[self.variant]
        return (f"{self.variant} ℓ-diversity with l={self.l:g} cannot be met even by the "
                f"whole table as one class: the maximum achievable ℓ is {best:.4g} "
                f"({what}); choose l <= {math.floor(best * 1e4) / 1e4:g}")

    def describe(self) -> str:
        return f"l={self.l:g} ({self.variant})"
