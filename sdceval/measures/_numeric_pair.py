"""The (original, released) numeric matrices compared by the numeric measures.

`linkage_risk`, `propensity`, `emd` and `il1s` (Domingo-Ferrer, Ricci & Soria-Comas,
§2.2 and §4; Yancey et al. 2002) all compare ``X = dataset.numeric_matrix()`` with the
release's values of the same columns.  They need numbers, so generalized and bucketized
releases (labels such as ``[40-49]``) are rejected here, once, with a clear message.
"""
from __future__ import annotations

import numpy as np

from sdceval.core.errors import SdcevalError
from sdceval.core.release import Release

#: release kinds whose numeric columns hold numbers comparable with the original's
NUMERIC_KINDS = ("perturbative", "external")


def numeric_pair(dataset, release: Release, who: str) -> tuple[np.ndarray, np.ndarray]:
    """``(X, Y)``: the original and released ``numeric``-role columns, float64 (n, m).

    Raises `SdcevalError` naming the measure ``who`` for a generalized/bucketized
    release, a release that is not row-aligned with the original, missing/non-numeric
    columns or non-finite released values.
    """
    if release.kind not in NUMERIC_KINDS:
        raise SdcevalError(
            f"{who} compares numeric values, but the release of {release.method!r} is "
            f"{release.kind!r} (it publishes intervals/labels, not numbers); use it on a "
            f"{' or '.join(NUMERIC_KINDS)} release (e.g. mdav, noise, rank_swap, or a "
            "masked CSV), or use the generalization measures (glm, p_loss, ...)")
    x = dataset.numeric_matrix(who=who)
    if release.n != dataset.n:
        raise SdcevalError(
            f"{who}: the release has {release.n} records but data set {dataset.name!r} has "
            f"{dataset.n}; a release must be row-aligned with the original")
    y = release.numeric_matrix(dataset.schema.numeric)
    return x, y
