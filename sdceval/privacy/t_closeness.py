"""t-closeness (Li, Li & Venkatasubramanian 2007; Li & Li 2009; SPEC §3)."""
from __future__ import annotations

import numpy as np

from sdceval.core.divergence import js_divergence, normalize
from sdceval.core.errors import SdcevalError
from sdceval.core.hierarchy import Hierarchy
from sdceval.core.registry import Param
from sdceval.privacy.base import ModelObjective, PrivacyModel, register_model

DISTANCES = ("emd", "js")
GROUNDS = ("auto", "equal", "ordered", "hierarchical")


@register_model
class TCloseness(PrivacyModel):
    """t-closeness: D(P_i, Q) ≤ t between a class's and the table's sensitive distribution.

    ``distance="js"``: Jensen–Shannon divergence, natural log (what Li & Li used;
    `sdceval.core.divergence.js_divergence`).  ``distance="emd"`` (Li, Li &
    Venkatasubramanian 2007) with a ground distance:

    * ``equal`` — every pair at distance 1: EMD = total variation ½ Σ|p − q|;
    * ``ordered`` — |i − j| / (S − 1) between codes i, j (numeric/ordinal sensitive):
      EMD = 1/(S−1) Σ_{i<S} |Σ_{j≤i} (p_j − q_j)|;
    * ``hierarchical`` — level of the lowest common ancestor / tree height:
      EMD = Σ_N height(N)/H · min(pos_extra(N), neg_extra(N)) over inner nodes N, where
      extra(child) = Σ_{leaves under child} (p − q) (their Eq. for hierarchical EMD);
    * ``auto`` picks ``ordered`` for a numeric sensitive hierarchy, else
      ``hierarchical`` (which equals ``equal`` on a flat, one-level hierarchy), and
      ``equal`` without a hierarchy.

    Monotonicity with generalization — yes, for every distance: a merged class's
    distribution is a convex combination λP₁ + (1−λ)P₂ of its parts', and D(·, Q) is
    convex for fixed Q — EMD because combining the parts' optimal transport plans with
    the same weights is a feasible plan of cost λD₁ + (1−λ)D₂ (the closed forms above
    are the exact EMD); JS because it is an f-divergence, jointly convex in (P, Q).  So
    D(merged, Q) ≤ max(D₁, D₂) ≤ t.  ARX (equal, ordered, hierarchical EMD): the same.

    Monotonicity with suppression — no: Q = (½, ½), t = 0.2 with equal EMD: (1, 1)
    satisfies (0), (3, 0) violates (½), the union (4, 1) violates (0.3).  ARX: the same.

    Minimal class size: 1 (any class may match Q; ARX declares none).
    """

    name = "t"
    title = "t-closeness"
    params = (Param("t", float, None, low=0.0, low_inclusive=False, protection="decreasing",
                    grid=(0.075, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4),
                    description="maximum distance between a class's sensitive "
                                "distribution and the table's"),
              Param("distance", str, "emd", choices=DISTANCES,
                    description="emd (Li, Li & Venkatasubramanian) or js (Jensen–Shannon, "
                                "natural log, as Li & Li)"),
              Param("ground", str, "auto", choices=GROUNDS,
                    description="EMD ground distance; auto = ordered for a numeric "
                                "sensitive attribute, else its hierarchy"))
    uses_hierarchy = True
    larger_is_safer = False
    monotone_generalization = True
    monotone_suppression = False
    example = {"t": 0.15}
    check_name = "t_closeness"

    @classmethod
    def lattice_objectives(cls):
        """``t`` (EMD, ground distance "auto") and ``t_js`` (Jensen–Shannon)."""
        return (ModelObjective("t", {"distance": "emd"}, label="t (EMD)",
                               description="t-closeness: max over kept classes of "
                                           "EMD(class, table) (ground distance 'auto')"),
                ModelObjective("t_js", {"distance": "js"}, label="t (Jensen–Shannon)",
                               description="t-closeness: max over kept classes of the "
                                           "Jensen–Shannon divergence (natural log)"))

    def __init__(self, t: float, distance: str = "emd", ground: str = "auto",
                 hierarchy: Hierarchy | None = None):
        t = self.check_param("t", t)
        distance = self.check_param("distance", distance)
        ground = self.check_param("ground", ground)
        if distance == "js" and ground != "auto":
            raise SdcevalError(f"t-closeness: ground={ground!r} applies to distance='emd' "
                               "only (JS divergence has no ground distance)")
        if ground == "hierarchical" and hierarchy is None:
            raise SdcevalError("t-closeness: ground='hierarchical' needs the sensitive "
                               "attribute's hierarchy")
        #: the ground as declared (``auto`` resolves per data set): `param_values`
        self.requested_ground = ground
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

    def param_values(self) -> dict:
        # ``ground`` as given, not as resolved for this hierarchy ("auto" stays "auto")
        return {"t": self.t, "distance": self.distance, "ground": self.requested_ground}

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
