"""Confidence-interval overlap and standardized coefficient difference of a regression the
analyst names, fitted on the original and on the release (Karr, Kohnen, Oganian, Reiter &
Sanil 2006; synthpop's ``compare.fit.synds``), for every kind of release (issue 32 item 4).

The model is a generalized linear model (statsmodels ``GLM``) given by a ``formula`` over
the data set's column names (patsy syntax: ``"y ~ x + C(sex)"``; a name that is no
Python identifier as ``Q("marital-status")``).  It is fitted on the original (β_o, se_o)
and on the release (β_r, se_r); for each coefficient, with ``z = Φ⁻¹(1 − α/2)`` and the
intervals ``[L, U] = β ± z·se``:

    J = ½ [ (min(U_o, U_r) − max(L_o, L_r)) / (U_o − L_o)
          + (min(U_o, U_r) − max(L_o, L_r)) / (U_r − L_r) ]       (Karr et al. 2006)

1 for identical intervals, 0 for intervals that just touch, below 0 for disjoint ones
(not clipped: how far apart they are), and the standardized difference
``(β_r − β_o) / se_o``.  ``value`` = the mean of J over the coefficients, the intercept
included (higher is better); ``details["mean_abs_std_diff"]`` the mean of
``|β_r − β_o| / se_o``; ``details["coefficients"]`` the per-coefficient table.

Against synthpop's ``compare.fit.synds`` (R/compare.syn.r, R/methods.syn.r): the same J
(``overlap.CI``: normal quantile ``qnorm``, intercept included in the mean) and the same
standardized difference (``Std. coef diff``, ``mean.abs.std.diff``).  One difference:
synthpop's default (``population.inference = FALSE``) gives the synthetic interval the
*original's* standard errors (``real.varcov``), so its J is ``1 − |β_r − β_o| / (2 z se_o)``;
Karr et al. give each interval its own fit's, which is this measure's default
(``release_se="release"``); ``release_se="original"`` is synthpop's.

Decisions
---------
* Reading the release: the one reading of `sdceval.measures._plain` (numbers as
  published; a numeric cell's midpoint; a categorical cell a leaf drawn uniformly within
  it, seeded by ``seed``; an unpublished label or sensitive value of an aligned release
  the original's), so every formula variable exists on every kind of release.
* Default formula (``formula=""``): the response is the first of the label, the
  numeric attributes and the sensitive attribute that is numeric or has two values; the
  regressors the main effects of the other QIs, numeric attributes, sensitive attribute
  and label (`default_formula`; ``details["formula"]`` states it).
* ``family="auto"``: binomial for a response column with two values (categorical, or
  numbers 0 and 1), gaussian otherwise.  A categorical response with two values is read as 1 for its second level
  (the hierarchy's order), 0 for its first; one with more is refused (no multinomial
  GLM here).
* Factor levels: a categorical variable's levels are those the original holds (leaf
  order; the first the reference).  Release rows with a level the original lacks are
  dropped from the release fit (``details["rows_dropped"]``).  A coefficient the
  original cannot estimate (an aliased column, R's NA) is left out, listed in
  ``details["aliased"]``; one the release cannot estimate (a level it lacks, a column
  it does not vary, e.g. an unpublished number read at one midpoint) is listed in
  ``details["not_estimable"]`` and counts J = 0 (no interval to overlap), its
  standardized difference left out of the mean — so a release that loses a level does
  not score as if it kept it; a release whose response does not vary (an unpublished
  number read at one midpoint) estimates none.  Estimability: a column whose part not explained by the
  columns before it (the QR factor's diagonal) is below 1e-8 of its norm.
* A fit that does not converge, or a binomial fit with fitted probabilities
  numerically 0 or 1 (R's warning for perfect or quasi-complete separation, where the
  coefficients run off to infinity and statsmodels' IRLS stops at a flat deviance), is
  an error naming the table, not a number.  The fits are unweighted (survey weights are
  not used), as synthpop's.
"""
from __future__ import annotations

import ast
import builtins
import warnings

import numpy as np
import pandas as pd

from sdceval.core.errors import SdcevalError
from sdceval.core.measurement import Measurement
from sdceval.core.registry import Param, register_measure
from sdceval.core.release import KINDS, Release
from sdceval.measures._plain import is_numeric, model_columns, plain_values

FAMILIES = ("auto", "gaussian", "binomial", "poisson")
RELEASE_SE = ("release", "original")
#: a design column is not estimable when its QR diagonal is below this share of its norm
ALIAS_TOL = 1e-8


def _need():
    try:
        import patsy
        import statsmodels.api as sm
    except ImportError:  # pragma: no cover - the extra is not installed
        raise SdcevalError("ci_overlap needs statsmodels (and patsy): pip install "
                           "statsmodels, or sdceval[analysis]") from None
    return patsy, sm


def formula_columns(dataset) -> list:
    """The columns a formula may name: those of `model_columns` and the passthrough
    columns."""
    s = dataset.schema
    return model_columns(dataset) + [c for c in s.passthrough
                                     if c not in model_columns(dataset)]


def _two_valued(dataset, column: str) -> bool:
    return len(np.unique(dataset.codes(column))) == 2


def default_formula(dataset) -> str:
    """The response (the first of the label, the numeric attributes and the sensitive
    attribute that is numeric or has two values) on the main effects of the others
    (module notes)."""
    s = dataset.schema
    candidates = ([s.label] if s.label else []) + list(s.numeric) + (
        [s.sensitive] if s.sensitive else [])
    response = next((c for c in candidates if is_numeric(dataset, c)
                     or _two_valued(dataset, c)), None)
    if response is None:
        raise SdcevalError(
            f"ci_overlap: data set {dataset.name!r} has no numeric or two-valued label, "
            "numeric or sensitive attribute to regress; give formula= (e.g. "
            "\"age ~ C(sex) + C(region)\")")
    rhs = [f'Q("{c}")' for c in model_columns(dataset) if c != response]
    if not rhs:
        raise SdcevalError(f"ci_overlap: data set {dataset.name!r} has no column to "
                           f"regress {response!r} on; give formula=")
    return f'Q("{response}") ~ ' + " + ".join(rhs)


def _names(patsy, formula: str, allowed: list, dataset) -> tuple[list, str | None]:
    """The data-set columns ``formula`` names, and its response's column when the
    left-hand side is one bare column (``y`` or ``Q("y")``); unknown names refused."""
    try:
        desc = patsy.ModelDesc.from_formula(formula)
    except patsy.PatsyError as e:
        raise SdcevalError(f"ci_overlap: cannot read formula {formula!r}: "
                           f"{str(e).splitlines()[0]}") from None
    if not desc.lhs_termlist:
        raise SdcevalError(f"ci_overlap: formula {formula!r} has no response; write "
                           "\"response ~ terms\"")
    known = set(dir(builtins)) | set(patsy.builtins.__all__) | {"np"}
    used, unknown = [], []
    codes = [[f.name() for f in t.factors] for t in desc.lhs_termlist + desc.rhs_termlist]
    for code in (c for term in codes for c in term):
        for node in ast.walk(ast.parse(code, mode="eval")):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                    and node.func.id == "Q" and node.args
                    and isinstance(node.args[0], ast.Constant)):
                name = str(node.args[0].value)
            elif isinstance(node, ast.Name) and node.id not in known:
                name = node.id
            else:
                continue
            (used if name in allowed else unknown).append(name)
    if unknown:
        raise SdcevalError(
            f"ci_overlap: formula {formula!r} names {', '.join(map(repr, dict.fromkeys(unknown)))}, "
            f"not a column of data set {dataset.name!r} it can use (available: "
            f"{', '.join(allowed)})")
    lhs = [f.name() for t in desc.lhs_termlist for f in t.factors]
    response = None
    if len(lhs) == 1:
        node = ast.parse(lhs[0], mode="eval").body
        if isinstance(node, ast.Name):
            response = node.id
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
              and node.func.id == "Q" and isinstance(node.args[0], ast.Constant)):
            response = str(node.args[0].value)
    return list(dict.fromkeys(used)), response


def _frames(dataset, release: Release, columns, response, seed: int):
    """The original's and the release's data frames of ``columns`` (numbers; a
    categorical column a pandas Categorical of the levels the original holds, a binary
    response 0/1) and the number of release rows dropped for a level the original
    lacks."""
    orig = plain_values(dataset, None, columns, seed, "ci_overlap")
    rel = plain_values(dataset, release, columns, seed, "ci_overlap")
    fo, fr = {}, {}
    for c in columns:
        if is_numeric(dataset, c):
            fo[c], fr[c] = orig[c], rel[c]
            continue
        leaves = np.asarray(dataset.hierarchy(c).leaves).astype(str)
        present = np.flatnonzero(np.bincount(orig[c], minlength=len(leaves)))
        index = np.full(len(leaves), -1, dtype=np.int64)
        index[present] = np.arange(len(present))
        if c == response:
            if len(present) != 2:
                raise SdcevalError(
                    f"ci_overlap: response {c!r} is categorical with {len(present)} "
                    "values; a GLM needs a numeric or two-valued response (give another "
                    "formula)")
            fo[c] = (orig[c] == present[1]).astype(np.float64)
            fr[c] = np.where(index[rel[c]] < 0, np.nan, rel[c] == present[1])
            continue
        fo[c] = pd.Categorical.from_codes(index[orig[c]], categories=leaves[present])
        fr[c] = pd.Categorical.from_codes(index[rel[c]], categories=leaves[present])
    fo, fr = pd.DataFrame(fo), pd.DataFrame(fr)
    bad = fr.isna().any(axis=1).to_numpy()
    return fo, fr[~bad].reset_index(drop=True), int(bad.sum())


def _estimable(x: np.ndarray) -> np.ndarray:
    """Whether each design column is estimable given the columns before it (module
    notes): R's rule of aliased coefficients, in the formula's order."""
    if x.shape[0] == 0:
        return np.zeros(x.shape[1], dtype=bool)
    r = np.linalg.qr(x, mode="r")
    norm = np.linalg.norm(x, axis=0)
    diag = np.abs(np.diag(r)) if r.shape[0] >= x.shape[1] else np.r_[
        np.abs(np.diag(r)), np.zeros(x.shape[1] - r.shape[0])]
    return (norm > 0) & (diag > ALIAS_TOL * norm)


def _fit(sm, y, x, family: str, formula: str, who: str):
    """β and se of the GLM; a clear error when it fails or does not converge."""
    from statsmodels.tools.sm_exceptions import PerfectSeparationWarning

    fam = {"gaussian": sm.families.Gaussian, "binomial": sm.families.Binomial,
           "poisson": sm.families.Poisson}[family]()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            res = sm.GLM(y, x, family=fam).fit(maxiter=100)
        except Exception as e:  # statsmodels' own messages (a response outside the
            # family's range, ...)
            raise SdcevalError(f"ci_overlap: the {family} GLM of {formula!r} cannot be "
                               f"fitted on the {who}: {str(e).splitlines()[0]}") from None
        # (the results compute lazily: overflow warnings of a separated fit come here)
        separated = False
        if family == "binomial":
            # R's glm warning "fitted probabilities numerically 0 or 1 occurred": the
            # coefficients run off to infinity, and IRLS stops at a flat deviance
            eps = 10 * np.finfo(np.float64).eps
            mu = np.asarray(res.mu)
            separated = bool(((mu < eps) | (mu > 1 - eps)).any())
        bse = np.asarray(res.bse, dtype=np.float64)
    separated |= any(issubclass(w.category, PerfectSeparationWarning) for w in caught)
    if not res.converged or separated or not np.isfinite(bse).all():
        why = "perfect separation" if separated else "no convergence in 100 iterations"
        raise SdcevalError(
            f"ci_overlap: the {family} GLM of {formula!r} did not converge on the {who} "
            f"({why}); simplify the formula or merge rare levels")
    return np.asarray(res.params, dtype=np.float64), bse


@register_measure(
    "ci_overlap", category="utility", direction="higher_is_better", kinds=KINDS,
    label="confidence-interval overlap",
    no_partial="a regression fitted on the whole table",
    params=[
        Param("formula", str, "",
              description="the analyst's regression, patsy syntax over the data set's "
                          "columns (\"income ~ age + C(sex)\"); empty: the label (or "
                          "first numeric attribute) on the others' main effects"),
        Param("family", str, "auto", choices=FAMILIES,
              description="GLM family; auto: binomial for a two-valued response, else "
                          "gaussian"),
        Param("alpha", float, 0.05, low=0, high=1, low_inclusive=False,
              high_inclusive=False, description="1 - the intervals' confidence level"),
        Param("release_se", str, "release", choices=RELEASE_SE,
              description="standard errors of the release's interval: its own fit's "
                          "(Karr et al.) or the original's (synthpop's default)"),
        Param("seed", int, 0, low=0,
              description="seed of the leaves drawn within generalized categorical "
                          "cells")],
    description="confidence-interval overlap (Karr et al. 2006; synthpop's "
                "compare.fit.synds) of a GLM fitted on the original and on the release: "
                "mean over coefficients of J (1 identical, < 0 disjoint), with the "
                "standardized coefficient differences")
def ci_overlap(dataset, release: Release, formula: str = "", family: str = "auto",
               alpha: float = 0.05, release_se: str = "release", seed: int = 0
               ) -> Measurement:
    """Mean CI overlap J of the coefficients of ``formula`` (module notes).

    Returns
    -------
    Measurement
        ``value`` = mean J (higher is better; 1 for identical data); ``per_record``
        None; ``details``: ``formula``, ``family``, ``alpha``, ``release_se``,
        ``coefficients`` (per coefficient: ``term``, ``beta_original``,
        ``se_original``, ``beta_release``, ``se_release``, ``overlap``, ``std_diff``),
        ``mean_abs_std_diff``, ``aliased``, ``not_estimable``, ``n_original``,
        ``n_release``, ``rows_dropped``.
    """
    from scipy.stats import norm

    patsy, sm = _need()
    formula = formula.strip() or default_formula(dataset)
    columns, response = _names(patsy, formula, formula_columns(dataset), dataset)
    fo, fr, dropped = _frames(dataset, release, columns, response, seed)
    if family == "auto":
        binary = response is not None and (not is_numeric(dataset, response) or set(
            np.unique(fo[response])) == {0.0, 1.0})
        family = "binomial" if binary else "gaussian"
    env = patsy.EvalEnvironment([{"np": np}])
    try:
        y_o, x_o = patsy.dmatrices(formula, fo, eval_env=env, NA_action="raise")
        y_r, x_r = patsy.build_design_matrices([y_o.design_info, x_o.design_info], fr,
                                               NA_action="raise")
    except patsy.PatsyError as e:
        raise SdcevalError(f"ci_overlap: formula {formula!r}: "
                           f"{str(e).splitlines()[0]}") from None
    if y_o.shape[1] != 1:
        raise SdcevalError(f"ci_overlap: the response of {formula!r} must be one column "
                           f"(it makes {y_o.shape[1]}); use a numeric or two-valued one")
    terms = list(x_o.design_info.column_names)
    x_o, x_r = np.asarray(x_o), np.asarray(x_r)
    keep = _estimable(x_o)
    aliased = [t for t, k in zip(terms, keep) if not k]
    terms, x_o, x_r = [t for t, k in zip(terms, keep) if k], x_o[:, keep], x_r[:, keep]
    b_o, se_o = _fit(sm, np.asarray(y_o)[:, 0], x_o, family, formula, "original")
    y_r = np.asarray(y_r)[:, 0]
    # a response the release does not vary (an unpublished number read at one
    # midpoint) estimates nothing: every coefficient counts J = 0
    est = _estimable(x_r) & (np.ptp(y_r) > 0 if len(y_r) else False)
    b_r = np.full(len(terms), np.nan)
    se_r = np.full(len(terms), np.nan)
    if est.any():
        b_r[est], se_r[est] = _fit(sm, y_r, x_r[:, est], family, formula, "release")
        est &= se_r > 0
    z = float(norm.ppf(1 - alpha / 2))
    width_r = se_o if release_se == "original" else se_r
    lo_o, hi_o, lo_r, hi_r = b_o - z * se_o, b_o + z * se_o, b_r - z * width_r, \
        b_r + z * width_r
    inter = np.minimum(hi_o, hi_r) - np.maximum(lo_o, lo_r)
    overlap = np.where(est, 0.5 * (inter / (hi_o - lo_o) + inter / (hi_r - lo_r)), 0.0)
    std_diff = (b_r - b_o) / se_o
    table = [{"term": t, "beta_original": float(a), "se_original": float(b),
              "beta_release": float(c), "se_release": float(d), "overlap": float(j),
              "std_diff": float(s)}
             for t, a, b, c, d, j, s in zip(terms, b_o, se_o, b_r, se_r, overlap, std_diff)]
    return Measurement("ci_overlap", float(overlap.mean()), None, details={
        "formula": formula, "family": family, "alpha": alpha, "release_se": release_se,
        "coefficients": table,
        "mean_abs_std_diff": float(np.abs(std_diff[est]).mean()) if est.any() else None,
        "aliased": aliased, "not_estimable": [t for t, e in zip(terms, est) if not e],
        "n_original": int(len(fo)), "n_release": int(len(fr)), "rows_dropped": dropped})
