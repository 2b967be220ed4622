"""Risk, utility and information-loss measures.  Each module registers its measures."""
from . import (attribute_disclosure, emd, il1s, information_loss, linkage,  # noqa: F401
               privacy_checks, propensity, queries, utility_loss)
