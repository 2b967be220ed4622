"""Privacy models (SPEC §3): k-anonymity, ℓ-diversity, t-closeness, δ-disclosure.

One interface, used both to enforce a model (Mondrian, bucketization) and to check one
(`sdceval.measures.privacy_checks`).  Definitions: `sdceval.privacy.models`.
"""
from sdceval.privacy.models import (DISTANCES, GROUNDS, L_VARIANTS, MODELS, DeltaDisclosure,
                                    KAnonymity, LDiversity, PrivacyModel, TCloseness,
                                    check_feasible, class_counts, make_model,
                                    table_distribution)

__all__ = ["DISTANCES", "GROUNDS", "L_VARIANTS", "MODELS", "DeltaDisclosure", "KAnonymity",
           "LDiversity", "PrivacyModel", "TCloseness", "check_feasible", "class_counts",
           "make_model", "table_distribution"]
