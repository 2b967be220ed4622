"""Risk, utility and information-loss measures.  Each module registers its measures."""
from sdceval.measures import (attribute_disclosure, emd, il1s, information_loss, linkage,
                              ml_utility, population_risk, population_uniqueness,
                              privacy_checks, propensity, queries, reidentification,
                              risk_summary, sample_uniques, suda2, utility_loss)
from sdceval.measures import ci_overlap, s_pmse  # noqa: F401  (issue 32: analysts' utilities)
from sdceval.measures import (inference, linkability, membership_inference,  # noqa: F401
                              singling_out)  # issue 32: attacks on every release
