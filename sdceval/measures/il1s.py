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

The measure is scale-invariant, and so is its computation: each attribute of ``X`` and
``Y`` is first divided by the same power of two (`sdceval.core.scaling`, exact), so
values near 1e300 or 1e-300 give the value of ordinary data instead of an overflowed or
underflowed standard deviation.

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
from sdceval.core.scaling import check_finite, column_exponents, to_unit
from sdceval.measures._numeric_pair import NUMERIC_KINDS, numeric_pair


@register_measure(
    "il1s", category="information_loss", direction="lower_is_better", kinds=NUMERIC_KINDS,
    aggregate="mean",
    label="mean absolute deviation (IL1s)",
    needs=("numeric",),
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
    exp = column_exponents(x)
    cols = dataset.schema.numeric
    x = to_unit(x, exp)
    y = check_finite(to_unit(y, exp), cols, "il1s",
                     "the released values, in units of the original's")
    sd = x.std(axis=0, ddof=1)
    const = [c for c, s in zip(dataset.schema.numeric, sd) if not s > 0]
    if const:
        raise SdcevalError(
            f"il1s divides by each attribute's standard deviation, but column(s) "
            f"{', '.join(map(repr, const))} are constant in the original; give them role "
            "'ignore' (they carry no information to lose)")
    loss = check_finite(np.abs(x - y) / (np.sqrt(2.0) * sd), cols, "il1s",
                        "the differences between released and original values")
    per_record = loss.mean(axis=1)
    if not np.isfinite(per_record.mean()):
        raise SdcevalError("il1s: the released values differ from the original's by more "
                           "than about 1e300 standard deviations, beyond the floating-point "
                           "range; is the release in the same units as the data set?")
    return Measurement("il1s", float(per_record.mean()), per_record=per_record,
                       details={"n_attributes": x.shape[1]})
