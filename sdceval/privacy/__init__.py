"""Privacy models (SPEC §3; issue 7 item 4): k-anonymity, ℓ-diversity, recursive
(c, ℓ)-diversity, t-closeness, δ-disclosure — one class each, in one registry.

One interface, used both to enforce a model (Mondrian, bucketization, the lattice
search) and to check one (`sdceval.measures.privacy_checks`).  The interface, the
declarations every model makes (parameters with bounds, sensitive attribute, minimal
class size, monotonicity with generalization and with suppression) and the registry
(`register_model`, `model_names`, `model_class`, `make_model`): `sdceval.privacy.base`.

==========  ===========================  ==============  =============
name        class                        monotone gen.   monotone supp.
==========  ===========================  ==============  =============
``k``       `KAnonymity`                 yes             yes
``l``       `LDiversity`                 yes             distinct only
``t``       `TCloseness`                 yes             no
``delta``   `DeltaDisclosure`            yes             no
``cl``      `RecursiveCLDiversity`       yes             no
``kmap``    `KMap`                       yes             yes
==========  ===========================  ==============  =============
"""
# registration order = `model_names()` order: the modules register on import
from sdceval.privacy.base import (MODELS, ModelObjective, PrivacyModel, check_feasible, class_counts, make_model,
                                  model_class, model_names, parse_model_spec,
                                  register_model, spec_example, table_distribution)
from sdceval.privacy.k_anonymity import KAnonymity
from sdceval.privacy.l_diversity import L_VARIANTS, LDiversity
from sdceval.privacy.t_closeness import DISTANCES, GROUNDS, TCloseness
from sdceval.privacy.delta_disclosure import DeltaDisclosure
from sdceval.privacy.recursive_cl import RecursiveCLDiversity
from sdceval.privacy.kmap import KMap
from sdceval.privacy.model_list import (MODEL_LIST, ModelList, bind_models, models_param)


__all__ = ["MODEL_LIST", "ModelList", "bind_models", "models_param", "DISTANCES", "GROUNDS", "L_VARIANTS", "MODELS", "ModelObjective", "DeltaDisclosure", "KAnonymity", "KMap",
           "LDiversity", "PrivacyModel", "RecursiveCLDiversity", "TCloseness",
           "check_feasible", "class_counts", "make_model", "model_class", "model_names",
           "parse_model_spec", "register_model", "spec_example", "table_distribution"]
