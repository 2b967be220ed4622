"""k-anonymity (Samarati & Sweeney; SPEC §3): every class has at least ``k`` records."""
from __future__ import annotations

import numpy as np

from sdceval.core.registry import Param
from sdceval.privacy.base import ModelObjective, PrivacyModel, register_model


@register_model
class KAnonymity(PrivacyModel):
    """Every class has at least ``k`` records: value = class size.

    Monotonicity (ARX ``KAnonymity``: with suppression and with generalization):

    * generalization — a union of classes of size ≥ k has size ≥ k;
    * suppression — a union that contains one class of size ≥ k has size ≥ k, so a
      violating class of a more general node is a union of violating classes only and
      ARX's rule suppresses no more records there.

    Minimal class size: k (ARX ``getMinimalClassSize``).
    """

    name = "k"
    title = "k-anonymity"
    params = (Param("k", int, None, low=1, high="n", protection="increasing", unit="records",
                    unprotected=1,
                    grid=(10, 50, 100, 200, 500, 1000, 2000, 5000), scale="log",
                    description="minimum number of records per class"),)
    needs_sensitive = False
    monotone_generalization = True
    monotone_suppression = True
    example = {"k": 10}
    check_name = "k_anonymity"

    @classmethod
    def lattice_objectives(cls):
        return (ModelObjective("k", description="smallest kept class (Dewri's rule: j + 1)",
                               integer=True),)

    def __init__(self, k: int):
        self.k = self.check_param("k", k)
        self.threshold = float(self.k)

    def value(self, counts, table_dist=None):
        return np.asarray(counts).sum(axis=1).astype(np.float64)

    def satisfied(self, counts, table_dist=None):
        return np.asarray(counts).sum(axis=1) >= self.k

    def min_class_size(self, table_dist=None) -> int:
        return self.k

    def infeasible_message(self, best, total_counts) -> str:
        return (f"k={self.k} exceeds the number of records ({int(best)}); "
                f"choose k <= {int(best)}")
