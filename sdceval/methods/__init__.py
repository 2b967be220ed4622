"""Anonymization methods.  Each module registers its methods in `sdceval.registry`."""
from . import (bucketization, generalization, microaggregation, mondrian,  # noqa: F401
               noise, swapping)
