"""Risk, utility and information-loss measures.  Each module registers its measures."""
from sdceval.measures import (attribute_disclosure, emd, il1s, information_loss, linkage,
                              ml_utility, population_risk, privacy_checks, propensity,
                              queries, reidentification, sample_uniques, suda2,
                              utility_loss)
