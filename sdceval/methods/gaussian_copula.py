"""Gaussian copula synthesis with empirical marginals (issue 32 item 2), on numpy and
scipy (no SDV).

Every column the synthetic release publishes (`sdceval.methods._synthesis`) is turned
into a standard normal score, the scores' correlation matrix is estimated and shrunk,
new scores are drawn from that normal distribution and each is mapped back to a value
of its column:

1. *Frequency intervals* (SDV/RDT's categorical encoding, used here for every column):
   the ``m`` distinct values of a column, in their order (`column_codes`: increasing
   for a numeric column, the hierarchy's leaf order for a categorical one), split
   ``[0, 1]`` into consecutive intervals ``(F_{k-1}, F_k]`` whose widths are their
   frequencies (``F_k``: the share of records with a value of code ``<= k``, the
   empirical distribution function).  A record with value ``k`` gets a uniform point
   ``u`` of its interval (drawn), and the normal score ``z = Φ⁻¹(u)``.  For a numeric
   column this is the randomized probability integral transform of its empirical
   distribution (Rüschendorf 2009): ``u`` is exactly uniform, ties (an integer column's
   repeated values) spread over their interval, and a column with no ties gets its
   ranks' scores up to a jitter of 1/n.
2. ``R``: the Pearson correlation matrix of the ``n x p`` scores; ``R_λ = (1 − λ) R + λ
   I`` with ``λ = shrinkage`` (a choice of this project, not SDV's, whose copula has no
   such knob: ``λ = 0`` is the fitted copula, ``λ = 1`` the independence copula, each
   column drawn from its marginal alone, the most protection).  ``R_λ`` is factored by
   eigendecomposition (`sdceval.methods.noise.covariance_factor`), so a singular
   matrix (two columns that determine each other) is fine.
3. ``n_records`` scores ``Z = G Lᵀ`` (``G`` standard normal, ``L Lᵀ = R_λ``), ``u =
   Φ(z)``, and the value is the code whose interval holds ``u``: the inverse of the
   empirical distribution function.  A synthetic value is therefore always one of the
   column's original values (numbers, categories and dtypes as in the original), and
   each column's marginal is the original's empirical distribution.

Randomness, all from the ``seed`` generator: the ``n`` interval points of each column,
column by column in the release's order, then the ``n_records x p`` normals.

Where this reading differs from SDV 1.x's ``GaussianCopulaSynthesizer``: SDV fits a
parametric marginal to each numeric column (``default_distribution = "beta"``; also
``norm``, ``truncnorm``, ``gamma``, ``uniform``, ``gaussian_kde``) and maps back through
it, so it publishes new numbers (rounded to the original's decimals) within the
original's range; here the marginal is the empirical distribution and no new number is
made (no smoothing, no extrapolation).  SDV's categorical encoder (RDT's
``UniformEncoder``) orders the intervals by order of appearance and then passes the
uniform points through a fitted marginal of their own; here they go to normal scores
directly (they are uniform already) and are ordered by the hierarchy, which puts
related categories next to each other.  The ``shrinkage`` knob is this project's.

References
----------
Patki, N., Wedge, R., Veeramachaneni, K. (2016). The Synthetic Data Vault. IEEE DSAA
(the Gaussian copula model; RDT's ``UniformEncoder``, ``FrequencyEncoder``).
Rüschendorf, L. (2009). On the distributional transform, Sklar's theorem, and the
empirical copula process. J. Statistical Planning and Inference 139(11), 3921-3927.
Ledoit, O., Wolf, M. (2004). A well-conditioned estimator for large-dimensional
covariance matrices. J. Multivariate Analysis 88(2) (shrinkage towards the identity).
"""
from __future__ import annotations

import numpy as np

from sdceval.core.registry import Param, register_method
from sdceval.methods._synthesis import (N_RECORDS, column_codes, record_count,
                                        synthesized_columns, synthetic_release)
from sdceval.methods.noise import covariance_factor

__all__ = ["gaussian_copula", "normal_scores", "from_uniform"]

#: uniform points are kept within [EPS, 1 - EPS] so that their normal scores are finite
EPS = 1e-12

SHRINKAGE = Param("shrinkage", float, 0.0, low=0.0, high=1.0, protection="increasing",
                  grid=(0.0, 0.1, 0.25, 0.5, 0.75, 0.9, 1.0), unit="weight of the identity",
                  description="λ in R_λ = (1 − λ) R + λ I: 0 keeps the fitted correlations "
                              "of the normal scores, 1 draws every column independently "
                              "of the others")


def normal_scores(codes: np.ndarray, counts: np.ndarray, u: np.ndarray) -> np.ndarray:
    """The normal score of each record (module docstring, step 1): the point ``u`` (in
    (0, 1]) of the frequency interval of its code, through ``Φ⁻¹``."""
    from scipy.special import ndtri
    n = len(codes)
    below = np.cumsum(counts) - counts            # records with a smaller code
    p = (below[codes] + u * counts[codes]) / n
    return ndtri(np.clip(p, EPS, 1.0 - EPS))


def from_uniform(p: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """The code whose frequency interval ``(F_{k-1}, F_k]`` holds each ``p`` (the
    inverse of the empirical distribution function; module docstring, step 3)."""
    upper = np.cumsum(counts)
    k = np.searchsorted(upper, p * upper[-1], side="left")
    return np.minimum(k, len(counts) - 1)


@register_method(
    "gaussian_copula", family="synthetic", random=True, label="Gaussian copula",
    params=[SHRINKAGE, N_RECORDS],
    description="Gaussian copula synthesis: every column to normal scores through its "
                "empirical distribution (categories: frequency intervals, as SDV), "
                "correlation shrunk towards independence, new records drawn and mapped "
                "back to original values; no record correspondence")
def gaussian_copula(dataset, *, seed, shrinkage, n_records):
    """Gaussian copula synthesis (module docstring).

    Parameters
    ----------
    dataset : Dataset
    shrinkage : float
        λ in [0, 1].
    n_records : int or None
        Number of synthetic records (default: ``dataset.n``).
    seed : numpy.random.Generator

    Returns
    -------
    Release
        kind ``"synthetic"``; ``info``: ``columns`` (the copula's order) and
        ``correlation`` (``R_λ`` as nested lists, in that order).
    """
    from scipy.special import ndtr
    cols = synthesized_columns(dataset)
    n, m = dataset.n, record_count(dataset, n_records)
    encoded = [column_codes(dataset, c) for c in cols]
    counts = [np.bincount(codes) for codes, _ in encoded]
    z = np.empty((n, len(cols)))
    for j, (codes, _) in enumerate(encoded):
        # 1 - random(): a point in (0, 1], so that it lies in (F_{k-1}, F_k]
        z[:, j] = normal_scores(codes, counts[j], 1.0 - seed.random(n))
    r = np.atleast_2d(np.corrcoef(z, rowvar=False))
    r_l = (1.0 - shrinkage) * r + shrinkage * np.eye(len(cols))
    p = ndtr(seed.standard_normal((m, len(cols))) @ covariance_factor(r_l).T)
    rows = {c: encoded[j][1][from_uniform(p[:, j], counts[j])] for j, c in enumerate(cols)}
    return synthetic_release(dataset, rows, method="gaussian_copula",
                             info={"columns": list(cols), "correlation": r_l.tolist()})
