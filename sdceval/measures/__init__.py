"""Risk, utility and information-loss measures.  Each module registers its measures."""
from sdceval.measures import (attribute_disclosure, emd, il1s, information_loss, linkage,
                              ml_utility, privacy_checks, propensity, queries,
                              reidentification, sample_uniques, utility_loss)
