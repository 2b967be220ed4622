"""Propensity-score utility loss (Woo et al. 2009; Domingo-Ferrer, Ricci & Soria-Comas,
§2.2, Algorithm 1 and Eq. 1).

Stack the original ``X`` (T = 0) and the release ``Y`` (T = 1), fit a logistic regression
of T on functions of the attributes, and measure how well it tells them apart:

    U_ps = (1 / 2n) Σ_{i=1}^{2n} (p̂_i − ½)²                                   (Eq. 1)

0 when the model cannot distinguish the two tables (p̂ = ½ everywhere), ¼ when it
separates them perfectly.

Decisions where the paper is ambiguous (SPEC §4)
------------------------------------------------
* Model terms (``model``).  The paper says only "regress T on the rest of attributes".
  Main effects alone (``linear``) give exactly 0 (to 1e-29) for every method that keeps
  the means — MDAV, rank swapping, Höhne's noise — and adding squares (``quadratic``)
  still gives 0 for rank swapping and Höhne's noise, which keep means *and* variances.
  ``pairwise`` adds the pairwise products x_j·x_k (Woo et al.'s "main effects and all
  first-order interactions", R's ``T ~ .^2``); ``interactions`` adds squares and
  products.  Default: ``pairwise``, the only variant that reproduces the paper's Table 1
  ranking on both data sets (seeds 0–4 of every random method, at the paper's matched
  parameters; Census micro < swap < Mnoise < noise, EIA micro < noise < Mnoise < swap).
* Penalty (``ridge``).  The unpenalized ``pairwise`` fit gives the paper's Census
  ranking but on EIA (skewed, with extreme records that products of z-scores magnify)
  it nearly separates the few extreme records MDAV averages away and ranks MDAV third.
  A small ridge penalty, objective ``mean log-loss + (ridge/2)·‖β‖²`` on standardized
  features (intercept free), keeps the fit from chasing single records and makes the
  fit well posed under collinearity and separation; ``ridge`` in [0.003, 0.1] gives the
  paper's ranking on both data sets for all five seeds; the default is 0.01.
  ``ridge=0`` is the plain maximum-likelihood fit (perfect separation then drives p̂ to
  0/1 and U to ¼; non-convergence is recorded, not raised).
* Standardization.  Attributes are z-scored with the *original's* mean and standard
  deviation, then every model term is z-scored with the original part's mean and
  standard deviation (a term constant there uses the pooled one; a term constant in
  both tables is dropped), so the penalty treats all terms alike.  The z-scores are
  computed on columns first divided by a power of two (`sdceval.core.scaling`; exact,
  so ordinary data give the same bits), so values near 1e300 or 1e-300 give the value
  of ordinary data.  A release so far outside the original that a standardized model
  term exceeds ``MAX_TERM`` (e.g. a value 1e4 original standard deviations from the
  mean, squared) is refused with an error: the Hessian of the fit then has a condition
  number beyond 1e16, the solver fails and the value it returns is meaningless (0 where
  the truth is near the separable maximum).  Original records themselves cannot
  trigger it: a z-score within a table of n rows is at most sqrt(n).

``per_record`` holds, for original record ``i``, the mean of (p̂ − ½)² over its two
rows (the original and the released one); its mean is ``U_ps``.

References
----------
Woo, Reiter, Oganian, Karr (2009). Global measures of data utility for microdata masked
for disclosure limitation. J. Privacy and Confidentiality 1(1).
Domingo-Ferrer, Ricci, Soria-Comas. A methodology to compare anonymization methods
regarding their risk-utility trade-off, §2.2 (Algorithm 1, Eq. 1), Table 1.
"""
from __future__ import annotations

import warnings

import numpy as np

from sdceval.core.errors import SdcevalError
from sdceval.core.measurement import Measurement
from sdceval.core.registry import Param, register_measure
from sdceval.core.release import Release
from sdceval.core.scaling import column_exponents, to_unit
from sdceval.measures._numeric_pair import NUMERIC_KINDS, numeric_pair

MODELS = ("linear", "quadratic", "pairwise", "interactions")
#: largest |standardized model term| accepted: up to ~1e9 the Newton fit converges (a
#: released record 3e4 sds out, squared); at 1e10 it no longer does (measured)
MAX_TERM = 1e8


def model_terms(z: np.ndarray, model: str) -> np.ndarray:
    """The regressors of ``model`` built from the z-scored attributes ``z`` (rows, m)."""
    parts = [z]
    if model in ("quadratic", "interactions"):
        parts.append(z * z)
    if model in ("pairwise", "interactions"):
        i, j = np.triu_indices(z.shape[1], k=1)
        parts.append(z[:, i] * z[:, j])
    return np.hstack(parts)


def _scale(a: np.ndarray, ref: np.ndarray) -> np.ndarray:
    """z-score the columns of ``a`` with the mean/sd of ``ref`` (sd 0 -> sd of ``a``;
    columns constant in ``a`` are dropped)."""
    mu, sd = ref.mean(axis=0), ref.std(axis=0)
    pooled = a.std(axis=0)
    sd = np.where(sd > 0, sd, pooled)
    keep = pooled > 0
    return (a[:, keep] - mu[keep]) / sd[keep]


def propensity_scores(x: np.ndarray, y: np.ndarray, model: str = "pairwise",
                      ridge: float = 0.01, max_iter: int = 200) -> tuple[np.ndarray, dict]:
    """Fitted P(T = 1) for the stacked rows ``[x; y]`` and fit diagnostics.

    Raises `SdcevalError` if a standardized model term exceeds ``MAX_TERM`` (a release
    far outside the original's range)."""
    # scikit-learn takes ~0.5 s to import: load it only when a score is computed
    from sklearn.linear_model import LogisticRegression

    exp = column_exponents(x)
    x = to_unit(x, exp)
    with np.errstate(over="ignore", invalid="ignore"):
        # a release far outside the original's range overflows here: refused below
        stacked = np.vstack([x, to_unit(y, exp)])
        z = _scale(stacked, x)
        terms = model_terms(z, model)
        terms = _scale(terms, terms[:len(x)])
    if not np.abs(terms).max(initial=0.0) <= MAX_TERM:
        raise SdcevalError(
            f"propensity: some released values lie so far outside the original's range "
            f"(model terms beyond {MAX_TERM:g} original standard deviations) that the "
            "logistic fit cannot be computed in float64; is the release in the same units "
            "as the data set?")
    target = np.r_[np.zeros(len(x)), np.ones(len(y))]
    info = {"n_terms": int(terms.shape[1])}
    if terms.shape[1] == 0:  # every attribute constant in both tables
        info.update(n_iter=0, warnings=[], gradient=0.0, converged=True)
        return np.full(len(stacked), 0.5), info
    c = np.inf if ridge == 0 else 1.0 / (ridge * len(stacked))
    fit = LogisticRegression(C=c, solver="newton-cholesky", max_iter=max_iter, tol=1e-10)
    with warnings.catch_warnings(record=True) as caught:
        # separation/collinearity warnings are expected on masked data; keep them as
        # diagnostics instead of printing them during a bisection
        warnings.simplefilter("always")
        fit.fit(terms, target)
    messages = list(dict.fromkeys(f"{w.category.__name__}: {w.message}" for w in caught))
    p = fit.predict_proba(terms)[:, 1]
    # judge convergence by the gradient of the objective, not by solver warnings: a
    # start already at the optimum (rank swapping, main effects) makes the Newton line
    # search "fail" harmlessly
    resid = p - target
    grad = np.r_[resid.mean(), terms.T @ resid / len(p) + ridge * fit.coef_.ravel()]
    info.update(n_iter=int(np.max(fit.n_iter_)), warnings=messages,
                gradient=float(np.abs(grad).max()),
                converged=bool(np.abs(grad).max() <= 1e-6))
    return p, info


@register_measure(
    "propensity", category="utility", direction="lower_is_better", kinds=NUMERIC_KINDS,
    label="propensity-score loss",
    needs=("numeric",),
    params=[
        Param("model", str, "pairwise", choices=MODELS,
              description="regressors: linear (main effects), quadratic (+ squares), "
                          "pairwise (+ pairwise products, Woo et al.), interactions "
                          "(+ squares + products)"),
        Param("ridge", float, 0.01, low=0.0,
              description="L2 penalty on standardized coefficients (objective: mean "
                          "log-loss + ridge/2 ||b||^2); 0 = maximum likelihood"),
        Param("max_iter", int, 200, low=1, description="Newton iterations")],
    description="propensity-score utility loss (Woo et al.; Domingo-Ferrer et al. Eq. 1): "
                "logistic regression of original-vs-release, U = mean (p - 1/2)^2 "
                "(0 indistinguishable .. 0.25 separated)")
def propensity(dataset, release: Release, *, model: str = "pairwise", ridge: float = 0.01,
               max_iter: int = 200) -> Measurement:
    """Propensity-score utility loss ``U_ps`` (see the module notes).

    Parameters
    ----------
    dataset : Dataset
    release : Release
        A perturbative or external release.
    model : {"linear", "quadratic", "pairwise", "interactions"}
    ridge : float
        L2 penalty (``mean log-loss + ridge/2 ||β||²``); 0 = maximum likelihood.
    max_iter : int
        Newton iterations of the fit.

    Returns
    -------
    Measurement
        ``value`` = U_ps in [0, ¼]; ``per_record`` = per original record, the mean of
        (p̂ − ½)² over its original and released rows; ``details``: ``model``,
        ``ridge``, ``n_terms``, ``n_iter``, ``gradient`` (largest gradient component of
        the objective at the fit), ``converged`` (gradient <= 1e-6; also true in the
        limit of perfect separation with ``ridge=0``), ``warnings`` (solver warnings,
        recorded rather than printed).
    """
    x, y = numeric_pair(dataset, release, "propensity")
    p, info = propensity_scores(x, y, model, ridge, max_iter)
    sq = (p - 0.5) ** 2
    per_record = 0.5 * (sq[:len(x)] + sq[len(x):])
    return Measurement("propensity", float(sq.mean()), per_record=per_record,
                       details={"model": model, "ridge": ridge, **info})
