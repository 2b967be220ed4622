"""Noise addition: correlated (additive) noise and Höhne's multiplicative noise
(SPEC §3; Domingo-Ferrer et al. §5).

Both mask the ``numeric``-role columns and draw all randomness from the ``seed``
generator they are given, so a release is exactly reproducible from its seed.
"""
from __future__ import annotations

import numpy as np

from sdceval.core.errors import SdcevalError
from sdceval.core.registry import Param, register_method
from sdceval.methods._numeric import numeric_release

__all__ = ["noise", "multiplicative_noise", "covariance_factor", "hohne_factors",
           "match_moments"]


def covariance_factor(cov: np.ndarray) -> np.ndarray:
    """A matrix ``L`` with ``L @ L.T == cov`` for a symmetric positive *semi*-definite
    ``cov``, from ``eigh``, so that singular covariances (constant or collinear columns)
    are fine where Cholesky fails.  Eigenvalues below round-off (``m * eps * max``, as
    for a pseudo-inverse) are set to 0: a direction without variance gets no noise.
    """
    w, v = np.linalg.eigh(cov)
    tol = len(w) * np.finfo(float).eps * max(float(w.max()), 0.0)
    return v * np.sqrt(np.where(w > tol, w, 0.0))


@register_method(
    "noise", family="perturbative", random=True,
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
    covariance of ``X`` (``ddof=1``).  The noise is ``E = G L^T sqrt(gamma)`` with
    ``G`` an ``n x m`` standard normal matrix drawn from ``seed`` and ``L L^T = Sigma``
    (`covariance_factor`), hence ``Cov(Y) ~= (1 + gamma) Sigma``: correlations are
    kept, variances inflated.
    """
    if not gamma > 0:
        raise SdcevalError(f"noise parameter 'gamma' must be > 0, got {gamma}")
    x = dataset.numeric_matrix(who="noise")
    factor = covariance_factor(np.atleast_2d(np.cov(x, rowvar=False)))
    e = seed.standard_normal(x.shape) @ factor.T
    return numeric_release(dataset, x + np.sqrt(gamma) * e)


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
    becomes the constant ``x̄``)."""
    my, sy = y.mean(axis=0), y.std(axis=0)
    mx, sx = x.mean(axis=0), x.std(axis=0)
    scale = np.divide(sx, sy, out=np.zeros_like(sx), where=sy > 0)
    return mx + (y - my) * scale


@register_method(
    "multiplicative_noise", family="perturbative", random=True,
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
    if not s > 0:
        raise SdcevalError(f"multiplicative_noise parameter 's' must be > 0, got {s}")
    if not shift >= 0:
        raise SdcevalError(f"multiplicative_noise parameter 'shift' must be >= 0, got {shift}")
    x = dataset.numeric_matrix(who="multiplicative_noise")
    factors, _ = hohne_factors(x.shape[0], x.shape[1], s, shift, seed)
    return numeric_release(dataset, match_moments(x * factors, x))
