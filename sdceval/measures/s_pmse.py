"""Standardized propensity-score mean squared error, S_pMSE (Snoke, Raab, Nowok, Dibben &
Slavković 2018; synthpop's ``utility.gen(method = "logit")``), for every kind of release,
synthetic ones of any size included (issue 32 item 4).

Stack the original's ``n_o`` records (t = 0) and the release's ``n_r`` (t = 1),
``N = n_o + n_r``, ``c = n_r / N``; fit a logistic regression of t on the columns and

    pMSE   = (1/N) Σ_i (p̂_i − c)²
    E_0    = k (1 − c)² c / N            (the null expectation of pMSE, Snoke et al. §3)
    S_pMSE = pMSE / E_0

with ``k`` the number of the model's identified coefficients besides the intercept.
Under the null — the release a sample of the original's own distribution — ``S_pMSE``
has expectation 1 (``N · pMSE / ((1 − c)² c)`` is asymptotically χ²_k); a larger value
is a release the model tells apart from the original (lower is better).  ``pMSE`` alone
is 0 when the model cannot tell the tables apart, and at most ``c (1 − c)``.

Which standardization (synthpop's).  synthpop's ``utility.gen`` for ``method = "logit"``
reports ``S_pMSE <- pMSE / pMSEExp`` with ``pMSEExp <- km1 * (1 - cc)^2 * cc / N``,
``km1`` the number of non-NA (identified) coefficients minus the intercept
(R/utility.syn.r): the *ratio* to the null expectation, not Snoke et al.'s other form
``(pMSE − E_0) / SD_0``.  That ratio is what this measure computes; ``k`` is the rank of
the design minus 1 (`sdceval.measures.propensity.design_rank`, R's aliased coefficients
left out as there).  synthpop's default model for a CART propensity standardizes by
permutation instead; here the model is the logistic one only.

Decisions
---------
* Columns: the QIs, the ``numeric``-role attributes, the sensitive attribute and the
  label (in the data set's order; passthrough columns are not modelled, as in
  `query_error`).  Each is read as plain values by the one reading of
  `sdceval.measures._plain` (numbers; a numeric cell's midpoint; a categorical cell a
  leaf drawn uniformly within it, seeded by ``seed``; an unpublished sensitive value or
  label of an aligned release the original's).
* Model terms (``model``): ``linear`` — main effects (the default; synthpop's
  ``maxorder = 0``): a number enters as itself, a categorical column as the indicators
  of its levels present in either table but the first (R's treatment contrasts);
  ``pairwise`` — plus the products of every two columns of different attributes
  (synthpop's default ``maxorder = 1``, R's ``t ~ .^2``: the same column space, so the
  same fitted probabilities).  Squares (`propensity`'s ``quadratic``) are not offered:
  the square of an indicator is the indicator.  The terms are standardized as in
  `propensity`, which changes no maximum-likelihood fit.
* The fit is `propensity`'s logistic regression (`propensity_scores`), by maximum
  likelihood (``ridge = 0``, R's ``glm``), for which ``E_0`` holds; a ridge penalty
  (``ridge > 0``) shrinks the fit and so ``S_pMSE`` below the ratio's null value (it is
  then no longer calibrated to 1).  A release the model separates (a level only one
  table has) drives p̂ to 0 and 1: the fit is recorded as not converged
  (``details["converged"]``) and ``S_pMSE`` is near its largest value, as it should be.
* Size of the model: refused above ``max_params`` coefficients (synthpop's
  ``max.params = 400``), naming the count: use ``model=linear`` or fewer levels.
* ``per_record`` is None: the release's rows are not the original's records.
"""
from __future__ import annotations

import numpy as np

from sdceval.core.errors import SdcevalError
from sdceval.core.measurement import Measurement
from sdceval.core.registry import Param, register_measure
from sdceval.core.release import KINDS, Release
from sdceval.measures._plain import is_numeric, model_columns, plain_values
from sdceval.measures.propensity import n_model_terms, propensity_scores

S_MODELS = ("linear", "pairwise")


def _matrices(dataset, release: Release, columns, seed: int):
    """The original's and the release's numeric matrices (numbers, and the indicators
    of each categorical column's levels present in either table but the first), the
    attribute of each matrix column, and the matrix columns' names."""
    orig = plain_values(dataset, None, columns, seed, "s_pmse")
    rel = plain_values(dataset, release, columns, seed, "s_pmse")
    xs, ys, groups, names = [], [], [], []
    for a, c in enumerate(columns):
        if is_numeric(dataset, c):
            xs.append(orig[c][:, None])
            ys.append(rel[c][:, None])
            groups.append(a)
            names.append(c)
            continue
        leaves = dataset.hierarchy(c).leaves
        present = np.flatnonzero(np.bincount(np.concatenate([orig[c], rel[c]]),
                                             minlength=len(leaves)))
        for level in present[1:]:
            xs.append((orig[c] == level)[:, None].astype(np.float64))
            ys.append((rel[c] == level)[:, None].astype(np.float64))
            groups.append(a)
            names.append(f"{c}[{leaves[level]}]")
    if not xs:
        raise SdcevalError(f"s_pmse: no column of data set {dataset.name!r} varies "
                           "(every modelled column has one value)")
    return np.hstack(xs), np.hstack(ys), np.asarray(groups), names


@register_measure(
    "s_pmse", category="utility", direction="lower_is_better", kinds=KINDS,
    label="standardized pMSE",
    no_partial="a logistic fit over the whole stacked table",
    params=[
        Param("model", str, "linear", choices=S_MODELS,
              description="propensity model terms: linear (main effects; synthpop's "
                          "maxorder=0) or pairwise (+ products of two attributes; "
                          "synthpop's default maxorder=1)"),
        Param("ridge", float, 0.0, low=0.0,
              description="L2 penalty of the logistic fit; 0 = maximum likelihood, for "
                          "which the null expectation holds"),
        Param("max_params", int, 400, low=2,
              description="largest number of coefficients fitted (synthpop's "
                          "max.params)"),
        Param("seed", int, 0, low=0,
              description="seed of the leaves drawn within generalized categorical "
                          "cells"),
        Param("max_iter", int, 200, low=1, description="Newton iterations")],
    description="standardized propensity-score MSE (Snoke et al. 2018; synthpop's "
                "S_pMSE): pMSE of a logistic model telling the release from the original, "
                "divided by its null expectation k(1-c)^2 c/N; 1 = as alike as a sample "
                "of the same distribution, larger = more distinguishable")
def s_pmse(dataset, release: Release, model: str = "linear", ridge: float = 0.0,
           max_params: int = 400, seed: int = 0, max_iter: int = 200) -> Measurement:
    """``S_pMSE = pMSE / (k (1 − c)² c / N)`` (module notes).

    Returns
    -------
    Measurement
        ``value`` = S_pMSE (lower is better; ≈ 1 under the null); ``per_record`` None;
        ``details``: ``pMSE``, ``expected_pMSE`` (E_0), ``k``, ``c``, ``N``,
        ``n_original``, ``n_release``, ``model``, ``ridge``, ``columns``, ``terms``
        (the main-effect columns), ``n_terms``, ``n_iter``, ``converged``, ``warnings``.
    """
    columns = model_columns(dataset)
    x, y, groups, names = _matrices(dataset, release, columns, seed)
    n_params = 1 + n_model_terms(x.shape[1], model, groups)
    if n_params > max_params:
        raise SdcevalError(
            f"s_pmse: the {model} propensity model of data set {dataset.name!r} has "
            f"{n_params} coefficients, more than max_params={max_params}; use "
            "model=linear, or raise max_params")
    if len(y) == 0:
        raise SdcevalError(f"s_pmse: release of {release.method!r} has no records")
    p, info = propensity_scores(x, y, model, ridge, max_iter, groups=groups, rank=True)
    N = len(x) + len(y)
    c = len(y) / N
    k = info.pop("rank") - 1
    if k < 1:
        raise SdcevalError(f"s_pmse: no column of data set {dataset.name!r} varies in "
                           "the stacked tables; nothing to compare")
    pmse = float(np.mean((p - c) ** 2))
    expected = k * (1 - c) ** 2 * c / N
    return Measurement("s_pmse", pmse / expected, None, details={
        "pMSE": pmse, "expected_pMSE": expected, "k": int(k), "c": c, "N": int(N),
        "n_original": int(len(x)), "n_release": int(len(y)), "model": model,
        "ridge": ridge, "columns": list(columns), "terms": names, **info})
