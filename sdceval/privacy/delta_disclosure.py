"""δ-disclosure privacy (Brickell & Shmatikov 2008; SPEC §3)."""
from __future__ import annotations

import numpy as np

from sdceval.core.divergence import normalize
from sdceval.core.registry import Param
from sdceval.privacy.base import ModelObjective, PrivacyModel, register_model


@register_model
class DeltaDisclosure(PrivacyModel):
    """δ-disclosure privacy: max_s |ln(p_class(s) / Q(s))| ≤ δ over the values with
    Q(s) > 0; a class lacking a value that occurs in the table has δ_i = ∞ and violates
    it (Brickell & Shmatikov: ln 0 = −∞).

    Monotonicity:

    * generalization — yes: the class satisfies iff Q(s)·e^−δ ≤ p(s) ≤ Q(s)·e^δ for
      every s, a box, and a merged class's distribution is a convex combination of its
      parts' (weights = their sizes), so it stays in the box.  ARX's
      ``DDisclosurePrivacy`` declares *not* monotone with generalization: it uses log₂,
      a strict ``<`` and skips the values absent from a class, and under that
      definition merging breaks it (Q = (½, ½), δ = 1.5 in log₂: {a} and {b, b, b, b,
      b} each pass, their union has p(a) = 1/6 < Q(a)·2^−1.5 ≈ 0.177);
    * suppression — no: a satisfying class merged with a violating one can violate
      (Q = (½, ½), δ = 0.2: (5, 5) ∪ (4, 0) = (9, 5) has |ln((5/14) / ½)| ≈ 0.34), so
      a more general node may suppress more records (ARX agrees).

    Minimal class size: the number of values with Q(s) > 0 (each must occur).
    """

    name = "delta"
    title = "δ-disclosure privacy"
    params = (Param("delta", float, None, low=0.0, low_inclusive=False,
                    protection="decreasing", grid=(1.0, 1.2, 1.4, 1.5, 1.7, 1.9, 2.0, 2.1),
                    description="bound on max_s |ln(p_class(s) / p_table(s))|"),)
    larger_is_safer = False
    monotone_generalization = True
    monotone_suppression = False
    example = {"delta": 1.5}
    check_name = "delta_disclosure"

    @classmethod
    def lattice_objectives(cls):
        return (ModelObjective("delta", label="δ", description="δ-disclosure: max over "
                               "kept classes of max_s |ln(p/q)|"),)

    def __init__(self, delta: float):
        self.delta = self.check_param("delta", delta)
        self.threshold = self.delta

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
