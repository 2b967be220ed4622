"""Compatibility module: the privacy models moved to one module per concept
(`sdceval.privacy.base` — the interface and registry; `k_anonymity`, `l_diversity`,
`t_closeness`, `delta_disclosure`).  Import from `sdceval.privacy`."""
from sdceval.privacy.base import (PrivacyModel, check_feasible, class_counts, make_model,
                                  model_class, model_names, register_model,
                                  table_distribution)
from sdceval.privacy.delta_disclosure import DeltaDisclosure
from sdceval.privacy.k_anonymity import KAnonymity
from sdceval.privacy.l_diversity import L_VARIANTS, LDiversity
from sdceval.privacy.recursive_cl import RecursiveCLDiversity
from sdceval.privacy.t_closeness import DISTANCES, GROUNDS, TCloseness

#: registered model names (a snapshot at import; `model_names()` is always current)
MODELS = model_names()

__all__ = ["DISTANCES", "GROUNDS", "L_VARIANTS", "MODELS", "DeltaDisclosure", "KAnonymity",
           "LDiversity", "PrivacyModel", "RecursiveCLDiversity", "TCloseness",
           "check_feasible", "class_counts", "make_model", "model_class", "model_names",
           "register_model", "table_distribution"]
