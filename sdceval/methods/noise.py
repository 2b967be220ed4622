"""Noise addition: correlated (additive) noise and Höhne's multiplicative noise
(SPEC §3; Domingo-Ferrer et al. §5).

Both mask the ``numeric``-role columns and draw all randomness from the ``seed``
generator they are given, so a release is exactly reproducible from its seed.
"""
from __future__ import annotations

import numpy as np

from sdceval.core.registry import Param, register_method
from sdceval.core.scaling import check_finite, column_exponents, from_unit, to_unit
from sdceval.methods._numeric import numeric_release

__all__ = ["noise", "multiplicative_noise", "covariance_factor", "hohne_factors",
           "match_moments"]


def covariance_factor(cov: np.ndarray) -> np.ndarray:
    """A matrix ``L`` with ``L @ L.T == cov`` for a symmetric positive *semi*-definite
    ``cov``, from ``eigh``, so that singular covariances (constant or collinear columns)
    are fine where Cholesky fails.  Eigenvalues below round-off (``m * eps * max``, as
    for a pseudo-inverse) are set to 0: a direction without variance gets no noise.

    The cut-off is relative to the largest eigenvalue, so ``cov`` should be a
    correlation matrix (all variances 1): on a covariance whose variances differ by
    1e8, the small column's own eigenvalue falls below the cut-off or is swamped by
    rounding, and it gets almost no noise.  `noise` factors the correlation matrix.
    """
    w, v = np.linalg.eigh(cov)
    tol = len(w) * np.finfo(float).eps * max(float(w.max()), 0.0)
    return v * np.sqrt(np.where(w > tol, w, 0.0))


@register_method(
    "noise", family="perturbative", random=True,
    label="correlated noise",
    description="Correlated noise addition: Y = X + E, E ~ N(0, gamma * Sigma) with Sigma "
                "the sample covariance of the numeric attributes",
    params=[Param("gamma", float, default=1.0, low=0.0, high=100.0, low_inclusive=False,
                  protection="increasing", scale="log", unit="fraction of the covariance",
                  grid=(0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 1.0, 3.0),
                  description="noise covariance as a multiple of the data covariance")])
def noise(dataset, *, gamma: float = 1.0, seed: np.random.Generator):
    """Add multivariate normal noise with covariance proportional to the data's.

    Parameters
    ----------
    dataset : Dataset
    gamma : float
        ``gamma > 0``; the noise covariance is ``gamma * Sigma``.
    seed : numpy.random.Generator

    Returns
    -------
    Release
        ``kind="perturbative"``, the numeric columns replaced by ``Y``.

    Notes
    -----
    Domingo-Ferrer et al. §5: ``Y = X + N(0, gamma Sigma)``, ``Sigma`` the sample
    covariance of ``X`` (``ddof=1``).  Write ``Sigma = D R D`` with ``D`` the diagonal
    of standard deviations and ``R`` the correlation matrix.  The noise is
    ``E = sqrt(gamma) G L^T D`` with ``G`` an ``n x m`` standard normal matrix drawn
    from ``seed`` and ``L L^T = R`` (`covariance_factor` of the correlation matrix of
    the z-scored data), hence ``Cov(E) = gamma Sigma`` and ``Cov(Y) ~= (1 + gamma)
    Sigma``: correlations are kept, variances inflated, and every column gets noise of
    standard deviation ``sqrt(gamma) sd_j`` whatever its scale (factoring ``Sigma``
    itself lets the eigenvalue cut-off, relative to the largest variance, wipe out the
    noise of a column 1e8 times smaller than another).  A constant column gets none.
    Columns are first divided by a power of two (`sdceval.core.scaling`), so values
    near 1e300 or 1e-300 neither overflow nor underflow when squared; noisy values
    beyond the float64 range raise `SdcevalError`.
    """
    x = dataset.numeric_matrix(who="noise")
    exp = column_exponents(x)
    u = to_unit(x, exp)
    sd = u.std(axis=0, ddof=1)                   # a Dataset has at least 2 records
    z = (u - u.mean(axis=0)) / np.where(sd > 0, sd, 1.0)   # constant column -> all 0
    factor = covariance_factor(np.atleast_2d(np.cov(z, rowvar=False)))
    e = (seed.standard_normal(x.shape) @ factor.T) * sd
    y = from_unit(u + np.sqrt(gamma) * e, exp)
    check_finite(y, dataset.schema.numeric, "noise", "the noisy values")
    return numeric_release(dataset, y, method="noise")


def hohne_factors(n: int, m: int, s: float, shift: float,
                  seed: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """The multiplicative factors ``1 + sigma_i * f_ij`` of Höhne's method.

    Draws, in this order, the ``n`` record signs ``sigma_i = +-1`` (probability 1/2
    each) and the ``n x m`` magnitudes ``f_ij`` (``|N(0, s)|`` if ``shift == 0``,
    else ``N(shift, s)``).  Returns ``(factors, signs)``.
    """
    signs = np.where(seed.random(n) < 0.5, -1.0, 1.0)
    g = seed.normal(shift, s, size=(n, m))
    f = np.abs(g) if shift == 0 else g
    return 1.0 + signs[:, None] * f, signs


def match_moments(y: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Affinely rescale each column of ``y`` to the mean and standard deviation of the
    same column of ``x``: ``x̄ + (y - ȳ) * sd(x) / sd(y)`` (a column with ``sd(y) = 0``
    becomes the constant ``x̄``).

    Both are computed on columns divided by a power of two (`sdceval.core.scaling`):
    bit-identical to the plain formula on ordinary data, and right for values near
    1e300 (whose squares overflow) or 1e-300 (whose squares underflow to 0).  The
    result may overflow only if it leaves the float64 range."""
    ex, ey = column_exponents(x), column_exponents(y)
    x, y = to_unit(x, ex), to_unit(y, ey)
    my, sy = y.mean(axis=0), y.std(axis=0)
    mx, sx = x.mean(axis=0), x.std(axis=0)
    # sx / sy here is the plain ratio times 2**(ey - ex), as the two units require
    scale = np.divide(sx, sy, out=np.zeros_like(sx), where=sy > 0)
    return from_unit(mx + (y - my) * scale, ex)


@register_method(
    "multiplicative_noise", family="perturbative", random=True,
    label="multiplicative noise",
    description="Höhne's multiplicative noise: y = x (1 + sign_i |N(0, s)|), one sign per "
                "record, then each attribute rescaled to its original mean and variance",
    params=[Param("s", float, default=0.5, low=0.0, high=10.0, low_inclusive=False,
                  protection="increasing", scale="log", unit="sd of the noise factor",
                  grid=(0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.9, 1.0),
                  description="standard deviation s of the N(., s) noise factor"),
            Param("shift", float, default=0.0, low=0.0,
                  description="mean mu of the factor noise: 0 gives |N(0, s)|, mu > 0 gives "
                              "Höhne's bimodal N(mu, s) that keeps factors away from 1")])
def multiplicative_noise(dataset, *, s: float = 0.5, shift: float = 0.0,
                         seed: np.random.Generator):
    """Höhne's variant of multiplicative noise.

    Parameters
    ----------
    dataset : Dataset
    s : float
        ``s > 0``, the standard deviation of the noise factor.
    shift : float
        ``mu >= 0``; see Notes.
    seed : numpy.random.Generator

    Returns
    -------
    Release
        ``kind="perturbative"``, the numeric columns replaced by the masked values.

    Notes
    -----
    Domingo-Ferrer et al. §5 describe it in one sentence: "each attribute value is
    multiplied by 1 ± N(0, s) ... then a transformation is applied to preserve the
    first and second-order moments" (after Höhne 2004 and Hundepool et al. 2012, ch. 3).
    No public implementation exists (sdcMicro never had one), so this reading is ours
    (SPEC §3):

    1. for each record ``i`` draw one sign ``sigma_i = +-1`` (probability 1/2), shared by
       all its attributes, so ratios between a record's attributes stay close;
    2. ``f_ij = |N(0, s)|`` when ``shift = 0`` (the paper's ``1 ± N(0, s)``), or
       ``f_ij = N(mu, s)`` when ``shift = mu > 0`` (Höhne's bimodal form: factors
       concentrate around ``1 - mu`` and ``1 + mu`` instead of near 1);
    3. ``y_ij = x_ij (1 + sigma_i f_ij)``;
    4. each column is rescaled affinely, ``x̄_j + (y_ij - ȳ_j) sd(x_j) / sd(y_j)``, so its
       mean and variance equal the original's exactly (up to rounding).

    With large ``s`` some factors ``1 - f`` are negative, i.e. the value changes sign
    before the rescaling; we keep this as the formula says rather than truncating.
    """
    x = dataset.numeric_matrix(who="multiplicative_noise")
    factors, _ = hohne_factors(x.shape[0], x.shape[1], s, shift, seed)
    # x * factors in power-of-two units: near 1e308 the product itself would overflow
    exp = column_exponents(x)
    u = to_unit(x, exp)
    y = from_unit(match_moments(u * factors, u), exp)
    check_finite(y, dataset.schema.numeric, "multiplicative_noise", "the masked values")
    return numeric_release(dataset, y, method="multiplicative_noise")
