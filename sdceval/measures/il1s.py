"""IL1s information loss (Yancey, Winkler & Creecy 2002).

The mean absolute difference between original and masked values, each attribute
measured in units of √2 times its original standard deviation:

    IL1s = (1 / (n m)) Σ_i Σ_j |x_ij − y_ij| / (√2 · S_j)

``S_j`` is the sample standard deviation (n − 1 denominator, as sdcMicro's ``dUtility``)
of original attribute ``j``.  √2·S_j is the standard deviation of ``x − y`` when ``y`` is
an independent copy of ``x``, so a release that keeps no link to the records (values
redrawn from a normal with the original's moments) scores about E|N(0, 1)| = √(2/π) ≈
0.80, and the original itself 0.  ``per_record`` is the record's mean over attributes,
so its mean is the value.

References
----------
Yancey, W.E., Winkler, W.E., Creecy, R.H. (2002). Disclosure risk assessment in
perturbative microdata protection. In: Inference Control in Statistical Databases,
LNCS 2316, pp. 135–152.
"""
from __future__ import annotations

import numpy as np

from sdceval.core.errors import SdcevalError
from sdceval.core.measurement import Measurement
from sdceval.core.registry import register_measure
from sdceval.core.release import Release
from sdceval.measures._numeric_pair import numeric_pair


@register_measure(
    "il1s", category="information_loss", larger_is_worse=True,
    description="IL1s (Yancey, Winkler & Creecy 2002): mean over records and attributes of "
                "|x - y| / (sqrt(2) * original standard deviation)")
def il1s(dataset, release: Release) -> Measurement:
    """IL1s information loss (see the module notes).

    Returns
    -------
    Measurement
        ``value`` = IL1s (0 for the original); ``per_record`` = mean over attributes of
        the record's standardized absolute differences.
    """
    x, y = numeric_pair(dataset, release, "il1s")
    sd = x.std(axis=0, ddof=1)
    const = [c for c, s in zip(dataset.schema.numeric, sd) if not s > 0]
    if const:
        raise SdcevalError(
            f"il1s divides by each attribute's standard deviation, but column(s) "
            f"{', '.join(map(repr, const))} are constant in the original; give them role "
            "'ignore' (they carry no information to lose)")
    per_record = (np.abs(x - y) / (np.sqrt(2.0) * sd)).mean(axis=1)
    return Measurement("il1s", float(per_record.mean()), per_record=per_record,
                       larger_is_worse=True, details={"n_attributes": x.shape[1]})
