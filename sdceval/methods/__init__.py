"""Anonymization methods.  Each module registers its methods in `sdceval.core.registry`."""
from sdceval.methods import (bucketization, generalization, microaggregation, mondrian, noise,
                             swapping)
