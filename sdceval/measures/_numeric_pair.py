"""The (original, released) numeric matrices compared by the numeric measures.

`linkage_risk`, `propensity`, `emd` and `il1s` (Domingo-Ferrer, Ricci & Soria-Comas,
§2.2 and §4; Yancey et al. 2002) all compare ``X = dataset.numeric_matrix()`` with the
release's values of the same columns.  They register with ``kinds=NUMERIC_KINDS`` and
``needs=("numeric",)``, so the registry has already refused generalized and bucketized
releases (labels such as ``[40-49]``), releases that are not row-aligned and data sets
without numeric attributes; what is left to check is the released values themselves
(`Release.numeric_matrix`: a table read from disk may lack a column or hold text).
"""
from __future__ import annotations

import numpy as np

from sdceval.core.release import Release

#: release kinds whose numeric columns hold numbers comparable with the original's
NUMERIC_KINDS = ("perturbative", "external")


def numeric_pair(dataset, release: Release, who: str = "") -> tuple[np.ndarray, np.ndarray]:
    """``(X, Y)``: the original and released ``numeric``-role columns, float64 (n, m)."""
    return dataset.numeric_matrix(who=who), release.numeric_matrix(dataset.schema.numeric)
