"""Anonymization methods.  Each module registers its methods in `sdceval.core.registry`;
`strategy` composes them into whole-file strategies (registered last: its built-in
strategies name the methods above)."""
from sdceval.methods import (bucketization, generalization, microaggregation, mondrian, noise,
                             recoding, swapping)
from sdceval.methods import pram, top_coding  # noqa: F401  (issue 29)
from sdceval.methods import local_suppression  # noqa: F401  (issue 29)
from sdceval.methods import cart_synthesis, gaussian_copula  # noqa: F401  (issue 32)
from sdceval.methods import dp_histogram  # noqa: F401  (issue 32 item 3)
from sdceval.methods import strategy  # noqa: F401  (after the methods it composes)
