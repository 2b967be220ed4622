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
  trigger it: a z-score within a table of n rows is at most sqrt(n).  A column is
  "constant" when its minimum equals its maximum (not when a rounded standard
  deviation is 0: the mean of 1 080 copies of 0.1 is not exactly 0.1).

Computation (large tables)
--------------------------
The fit is scikit-learn's ``LogisticRegression(solver="newton-cholesky", tol=1e-10)``
for this objective, re-implemented so that the design matrix is never built: Newton
steps from β = 0 with the same symmetric solve of the Hessian, the same backtracking line
search (Armijo; near machine precision, a smaller sum of |gradient|), the same
stopping rule (largest gradient component and half the squared Newton decrement
<= ``TOL``) and the same switch to L-BFGS-B (ill-conditioned Hessian, failed line
search, over a quarter of the pointwise Hessians 0), whose messages are recorded as
before.  Every pass over the data (the attributes' and the terms' statistics, X^T W X
with X^T (y - p), the predictions X β) runs ``CHUNK_ROWS`` rows at a time, generating
the model terms of a chunk from the data on the fly; the term statistics (original
part's mean and sd, pooled sd, extremes for ``MAX_TERM``) are merged chunk by chunk
(Chan et al.'s update).  Memory therefore grows like n x attributes (the data) plus a
few vectors of 2n, not n x terms: 1 000 000 records of 13 attributes (``pairwise``: 91
terms and the intercept) take ~220 MB beyond the data instead of ~5 GB, in ~10 s
instead of ~22 s (one thread; `benchmarks/bench_measures_scale.py`).  On the bundled
data sets the values equal the previous dense computation to ~1e-14 relative
(``ridge`` > 0, or an unpenalized fit that converges).  BLAS runs under the thread
budget (`sdceval.core.threads`).

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

from sdceval.core import threads
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
#: rows of the stacked table whose model terms exist at any one time (for 13 attributes
#: and ``pairwise``, 4 096 x 92 floats = 3 MB: a chunk stays in cache, which measured
#: faster than chunks of 16 384 or 65 536 rows)
CHUNK_ROWS = 4096
#: the fit's stopping rule: largest gradient component and half the squared Newton
#: decrement (scikit-learn's ``tol`` of the ``newton-cholesky`` solver)
TOL = 1e-10


def model_terms(z: np.ndarray, model: str) -> np.ndarray:
    """The regressors of ``model`` built from the z-scored attributes ``z`` (rows, m)."""
    parts = [z]
    if model in ("quadratic", "interactions"):
        parts.append(z * z)
    if model in ("pairwise", "interactions"):
        i, j = np.triu_indices(z.shape[1], k=1)
        parts.append(z[:, i] * z[:, j])
    return np.hstack(parts)


def _pairs(m: int, groups) -> list:
    """For each column ``i``, the later columns ``j`` it is multiplied with: all of them,
    or (``groups``: one attribute id per column, e.g. the indicator columns of one
    factor) those of another attribute — the indicators of one factor have products 0
    or collinear with their main effects, R's ``t ~ .^2`` has none."""
    if groups is None:
        return [np.arange(i + 1, m) for i in range(m)]
    g = np.asarray(groups)
    return [i + 1 + np.flatnonzero(g[i + 1:] != g[i]) for i in range(m)]


def n_model_terms(m: int, model: str, groups=None) -> int:
    """Number of columns of `model_terms` for ``m`` attributes."""
    pairs = sum(len(j) for j in _pairs(m, groups)) if model in ("pairwise",
                                                                 "interactions") else 0
    return m + (m if model in ("quadratic", "interactions") else 0) + pairs


def _fill_terms(z: np.ndarray, model: str, out: np.ndarray, pairs=None) -> None:
    """Write `model_terms` ``(z, model)`` into ``out`` (same values, same column order,
    no temporaries); ``pairs``: `_pairs` (default: every pair)."""
    m = z.shape[1]
    out[:, :m] = z
    c = m
    if model in ("quadratic", "interactions"):
        np.multiply(z, z, out=out[:, c:c + m])
        c += m
    if model in ("pairwise", "interactions"):
        for i in range(m - 1):   # the order of np.triu_indices(m, k=1)
            if pairs is None:
                np.multiply(z[:, i:i + 1], z[:, i + 1:], out=out[:, c:c + m - 1 - i])
                c += m - 1 - i
            elif len(pairs[i]):
                np.multiply(z[:, i:i + 1], z[:, pairs[i]], out=out[:, c:c + len(pairs[i])])
                c += len(pairs[i])


class _Moments:
    """Count, mean, sum of squared deviations, min and max of columns, merged chunk by
    chunk (Chan et al.'s pairwise update: as accurate as a two-pass computation)."""

    def __init__(self, p: int):
        self.n = 0
        self.mean = np.zeros(p)
        self.m2 = np.zeros(p)
        self.lo = np.full(p, np.inf)
        self.hi = np.full(p, -np.inf)

    def add(self, a: np.ndarray) -> None:
        if len(a) == 0:
            return
        mean = a.mean(axis=0)
        d = a - mean
        d *= d
        self.merge(len(a), mean, d.sum(axis=0), a.min(axis=0), a.max(axis=0))

    def merge(self, k, mean, m2, lo, hi) -> None:
        if k == 0:
            return
        if self.n == 0:    # (not through the update: 0 * inf would give NaN)
            self.n, self.mean, self.m2, self.lo, self.hi = k, mean, m2, lo, hi
            return
        n = self.n + k
        delta = mean - self.mean
        self.mean = self.mean + delta * (k / n)
        self.m2 = self.m2 + m2 + delta ** 2 * (self.n * k / n)
        self.n = n
        self.lo = np.minimum(self.lo, lo)   # NaN propagates, as in np.std
        self.hi = np.maximum(self.hi, hi)

    def joined(self, other: "_Moments") -> "_Moments":
        both = _Moments(len(self.mean))
        both.merge(self.n, self.mean, self.m2, self.lo, self.hi)
        both.merge(other.n, other.mean, other.m2, other.lo, other.hi)
        return both

    def std(self) -> np.ndarray:
        # a column constant in the data has sd exactly 0, whatever the rounding of
        # its mean
        return np.where(self.lo == self.hi, 0.0, np.sqrt(self.m2 / max(self.n, 1)))

    def centre(self) -> np.ndarray:
        return np.where(self.lo == self.hi, self.lo, self.mean)


def _standardize(orig: _Moments, rel: _Moments):
    """The rules of the module notes: (mean, sd, kept columns) from the moments of the
    original part and of the release (sd 0 in the original -> pooled sd; constant in
    both tables, or NaN -> dropped)."""
    both = orig.joined(rel)
    pooled = both.std()
    sd = orig.std()
    keep = pooled > 0
    return orig.centre()[keep], np.where(sd > 0, sd, pooled)[keep], keep, both


class _Design:
    """The standardized model terms of the stacked rows ``[x; y]`` plus a column of
    ones (the intercept, last), produced ``CHUNK_ROWS`` rows at a time from the data
    and never held whole: neither the design matrix nor the z-scored attributes exist
    beyond one chunk.  Construction makes two chunked passes: the attributes' moments,
    then the model terms' (original part's mean and sd, pooled sd, extremes).  ``x``
    and ``y`` may differ in length (`s_pmse` of a synthetic release); ``groups``: the
    attribute of each column (`_pairs`)."""

    def __init__(self, x: np.ndarray, y: np.ndarray, model: str, groups=None):
        self.x, self.y, self.n, self.model = x, y, len(x), model
        self.N = len(x) + len(y)
        self.rows = max(1, min(CHUNK_ROWS, self.N))
        self.exp = column_exponents(x)
        # pass 1: attributes z-scored with the original's mean and sd
        m = x.shape[1]
        moments = (_Moments(m), _Moments(m))
        self.mu_a = self.sd_a = None
        self.keep_a = np.ones(m, dtype=bool)
        for target, _, _, u in self._units():
            moments[target].add(u)
        self.mu_a, self.sd_a, self.keep_a, _ = _standardize(*moments)
        # pass 2: the model terms of those z-scores
        kept_groups = None if groups is None else np.asarray(groups)[self.keep_a]
        self.pairs = None if groups is None else _pairs(int(self.keep_a.sum()),
                                                        kept_groups)
        self.p_all = n_model_terms(int(self.keep_a.sum()), model, kept_groups)
        self._buf = np.empty((self.rows, self.p_all + 1))
        moments = (_Moments(self.p_all), _Moments(self.p_all))
        for target, _, _, z in self._units():
            t = self._buf[:len(z), :self.p_all]
            _fill_terms(z, model, t, self.pairs)
            moments[target].add(t)
        self.mu, self.sd, self.keep, both = _standardize(*moments)
        self.all_kept = bool(self.keep.all())
        self._kept = np.flatnonzero(self.keep)
        self.p = len(self._kept)
        # largest |standardized term| over both tables: at a column's minimum or maximum
        self.max_term = np.maximum(np.abs(both.hi[self.keep] - self.mu),
                                   np.abs(both.lo[self.keep] - self.mu)) / self.sd

    def _units(self):
        """``(target, lo, hi, u)``: consecutive row ranges of the stacked table (a chunk
        never straddles the two tables) with the attributes scaled by powers of two
        (`sdceval.core.scaling`), then z-scored once the attributes' statistics are
        known (and only the kept ones)."""
        for target, (offset, part) in enumerate(((0, self.x), (self.n, self.y))):
            for lo in range(0, len(part), self.rows):
                u = to_unit(part[lo:lo + self.rows], self.exp)
                if self.mu_a is not None:
                    if not self.keep_a.all():
                        u = u[:, self.keep_a]
                    u -= self.mu_a
                    u /= self.sd_a
                yield target, offset + lo, offset + lo + len(u), u

    def chunks(self):
        """``(target, lo, hi, D)``: the design rows ``lo:hi`` of the stacked table, all
        with the given target (0 original, 1 release); ``D`` (hi - lo, p + 1) is
        overwritten by the next chunk."""
        for target, lo, hi, z in self._units():
            buf = self._buf[:hi - lo]
            _fill_terms(z, self.model, buf[:, :self.p_all], self.pairs)
            if self.all_kept:
                d = buf
            else:
                d = np.empty((hi - lo, self.p + 1))
                d[:, :-1] = buf[:, self._kept]
            d[:, -1] = 1.0
            t = d[:, :-1]
            t -= self.mu
            t /= self.sd
            yield target, lo, hi, d


# -- the fit: scikit-learn's newton-cholesky solver for the binomial loss, with the
#    design matrix streamed (same objective, steps, line search and stopping rule) ----

def _log1pexp(r: np.ndarray) -> np.ndarray:
    """log(1 + exp(r)), piecewise as scikit-learn's binomial loss computes it."""
    out = np.empty_like(r)
    a = r <= -37
    out[a] = np.exp(r[a])
    b = (r > -37) & (r <= -2)
    out[b] = np.log1p(np.exp(r[b]))
    c = (r > -2) & (r <= 18)
    out[c] = np.log(1.0 + np.exp(r[c]))
    d = (r > 18) & (r <= 33.3)
    out[d] = r[d] + np.exp(-r[d])
    e = r > 33.3
    out[e] = r[e]
    return out


def _grad_hess_pointwise(target: int, r: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Gradient and Hessian of the half binomial loss in the raw prediction ``r``
    (scikit-learn's formulas), all rows with the same ``target``."""
    g = np.empty_like(r)
    h = np.empty_like(r)
    a = r > -37
    e = np.exp(-r[a])
    g[a] = ((1 - target) - target * e) / (1 + e)
    h[a] = e / (1 + e) ** 2
    e = np.exp(r[~a])
    g[~a] = e - target
    h[~a] = e
    return g, h


class _Fit:
    def __init__(self, design: _Design, ridge: float):
        self.d = design
        self.ridge = ridge
        self.N = design.N

    def loss(self, raw: np.ndarray, coef: np.ndarray) -> float:
        """Objective: mean binomial log-loss + ridge/2 ||w||² (intercept free)."""
        total = 0.0
        for target, (start, stop) in enumerate(((0, self.d.n), (self.d.n, self.N))):
            for lo in range(start, stop, 65_536):   # small temporaries
                r = raw[lo:min(lo + 65_536, stop)]
                total += _log1pexp(r).sum() - (r.sum() if target else 0.0)
        w = coef[:-1]
        return float(total / self.N + 0.5 * self.ridge * (w @ w))

    def predict(self, coef: np.ndarray) -> np.ndarray:
        raw = np.empty(self.N)
        for _, lo, hi, d in self.d.chunks():
            raw[lo:hi] = d @ coef
        return raw

    def gradient(self, raw, coef, hessian: bool):
        """Gradient (and Hessian) of the objective at ``coef`` (raw predictions ``raw``)
        and whether over a quarter of the pointwise Hessians are 0 (scikit-learn's
        switch to L-BFGS)."""
        p1 = len(coef)
        grad = np.zeros(p1)
        hess = np.zeros((p1, p1)) if hessian else None
        zeros = 0
        for target, lo, hi, d in self.d.chunks():
            g, h = _grad_hess_pointwise(target, raw[lo:hi])
            g /= self.N
            h /= self.N
            zeros += int(np.count_nonzero(h <= 0))
            grad += d.T @ g
            if hessian:
                hess += d.T @ (d * h[:, None])
        warn = zeros / self.N > 0.25
        grad[:-1] += self.ridge * coef[:-1]
        if hessian and self.ridge > 0:
            hess[np.arange(p1 - 1), np.arange(p1 - 1)] += self.ridge
        return grad, hess, warn

    def loss_gradient(self, coef):
        """Objective and gradient at ``coef`` (for L-BFGS)."""
        raw = self.predict(coef)
        grad, _, _ = self.gradient(raw, coef, hessian=False)
        return self.loss(raw, coef), grad

    def solve(self, max_iter: int, tol: float = TOL):
        """Newton-Cholesky with backtracking line search, L-BFGS as the fallback;
        returns (coef, raw predictions, gradient, iterations, messages)."""
        import scipy.linalg
        import scipy.optimize

        p1 = self.d.p + 1
        coef = np.zeros(p1)
        raw = np.zeros(self.N)
        loss = self.loss(raw, coef)
        grad, hess, hess_warn = self.gradient(raw, coef, hessian=True)
        messages: list[str] = []
        iteration, converged, fallback = 1, False, False
        beta, sigma = 0.5, 0.00048828125
        eps = 16 * np.finfo(np.float64).eps
        while iteration <= max_iter and not converged:
            if hess_warn:
                messages.append(
                    "ConvergenceWarning: The inner solver of NewtonCholeskySolver "
                    "detected a pointwise hessian with many negative values at "
                    f"iteration #{iteration}. It will now resort to lbfgs instead.")
                fallback = True
                break
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("error", scipy.linalg.LinAlgWarning)
                    step = scipy.linalg.solve(hess, -grad, check_finite=False,
                                              assume_a="sym")
            except (np.linalg.LinAlgError, scipy.linalg.LinAlgWarning) as e:
                messages.append(
                    "LinAlgWarning: The inner solver of NewtonCholeskySolver stumbled "
                    "upon a singular or very ill-conditioned Hessian matrix at "
                    f"iteration {iteration}. It will now resort to lbfgs instead.\n"
                    f"The original Linear Algebra message was:\n{e}")
                fallback = True
                break
            slope = grad @ step
            if slope > 0:    # not a descent direction
                fallback = True
                break
            # backtracking line search (Armijo; near machine precision, a smaller
            # sum of |gradient| also accepts the step)
            raw_step = self.predict(step)
            t, accepted, abs_grad_old = 1.0, False, -1.0
            raw_t = np.empty_like(raw)
            for _ in range(21):
                coef_t = coef + t * step
                np.multiply(raw_step, t, out=raw_t)
                raw_t += raw
                loss_t = self.loss(raw_t, coef_t)
                gain = loss_t - loss
                if gain <= t * sigma * slope:
                    accepted = True
                    break
                if np.abs(gain) <= np.abs(loss * eps):
                    if abs_grad_old < 0:
                        abs_grad_old = np.abs(grad).sum()
                    g_t, _, _ = self.gradient(raw_t, coef_t, hessian=False)
                    if np.abs(g_t).sum() < abs_grad_old:
                        accepted = True
                        break
                t *= beta
            del raw_step
            if not accepted:
                messages.append(
                    "ConvergenceWarning: Line search of Newton solver "
                    f"NewtonCholeskySolver at iteration #{iteration} did not converge "
                    "after 21 line search refinement iterations. It will now resort to "
                    "lbfgs instead.")
                coef = coef_t
                fallback = True
                break
            coef, raw, loss = coef_t, raw_t, loss_t
            # converged: max |gradient| <= tol at the new point and half the squared
            # Newton decrement <= tol; the Hessian at the new point is needed only
            # when the fit goes on
            decrement_ok = 0.5 * (step @ hess @ step) <= tol
            grad, hess, hess_warn = self.gradient(raw, coef, hessian=not decrement_ok)
            converged = decrement_ok and np.abs(grad).max() <= tol
            if not converged and hess is None:
                grad, hess, hess_warn = self.gradient(raw, coef, hessian=True)
            iteration += 1
        if not converged:
            if fallback:
                left = max_iter - iteration
                res = scipy.optimize.minimize(
                    self.loss_gradient, coef, method="L-BFGS-B", jac=True,
                    options={"maxiter": left, "maxls": 50, "gtol": tol,
                             "ftol": 64 * np.finfo(np.float64).eps})
                nit = min(res.nit, left)
                iteration += nit
                if res.status != 0:
                    messages.append(
                        f"ConvergenceWarning: lbfgs failed to converge after {nit} "
                        f"iteration(s) (status={res.status}):\n{res.message}")
                coef = res.x
                raw = self.predict(coef)
                grad, _, _ = self.gradient(raw, coef, hessian=False)
            else:
                messages.append("ConvergenceWarning: Newton solver did not converge "
                                f"after {iteration - 1} iterations.")
        return coef, raw, grad, iteration - 1, list(dict.fromkeys(messages))


def propensity_scores(x: np.ndarray, y: np.ndarray, model: str = "pairwise",
                      ridge: float = 0.01, max_iter: int = 200, groups=None,
                      rank: bool = False) -> tuple[np.ndarray, dict]:
    """Fitted P(T = 1) for the stacked rows ``[x; y]`` and fit diagnostics.

    ``x`` and ``y`` may differ in length; ``groups``: the attribute of each column
    (no products within one, `_pairs`); ``rank``: also give ``info["rank"]``, the
    rank of the design (the intercept included; `design_rank`).

    Memory beyond ``x`` and ``y``: a few vectors of 2n floats and one chunk of
    ``CHUNK_ROWS`` rows of model terms (module notes, "Computation").

    Raises `SdcevalError` if a standardized model term exceeds ``MAX_TERM`` (a release
    far outside the original's range)."""
    # scipy.linalg loads its own BLAS: a section entered after the import caps it too
    # (threadpoolctl limits the libraries loaded when a section is entered)
    import scipy.linalg  # noqa: F401
    import scipy.optimize  # noqa: F401
    from scipy.special import expit

    with threads.limited():
        with np.errstate(over="ignore", invalid="ignore"):
            # a release far outside the original's range overflows here: refused below
            design = _Design(x, y, model, groups)
        if not np.max(design.max_term, initial=0.0) <= MAX_TERM:
            raise SdcevalError(
                f"propensity: some released values lie so far outside the original's "
                f"range (model terms beyond {MAX_TERM:g} original standard deviations) "
                "that the logistic fit cannot be computed in float64; is the release in "
                "the same units as the data set?")
        info = {"n_terms": design.p}
        if rank:
            info["rank"] = design_rank(design)
        if design.p == 0:  # every attribute constant in both tables: the intercept's fit
            info.update(n_iter=0, warnings=[], gradient=0.0, converged=True)
            return np.full(design.N, len(y) / design.N), info
        with warnings.catch_warnings(record=True) as caught, np.errstate(all="ignore"):
            # separation/collinearity warnings are expected on masked data; keep them
            # as diagnostics instead of printing them during a bisection
            warnings.simplefilter("always")
            coef, raw, grad, n_iter, messages = _Fit(design, ridge).solve(max_iter)
    messages = list(dict.fromkeys(
        messages + [f"{w.category.__name__}: {w.message}" for w in caught]))
    p = expit(raw, out=raw)
    # judge convergence by the gradient of the objective, not by solver messages: a
    # start already at the optimum (rank swapping, main effects) makes the Newton line
    # search "fail" harmlessly
    gmax = float(np.abs(grad).max())
    info.update(n_iter=int(n_iter), warnings=messages, gradient=gmax,
                converged=bool(gmax <= 1e-6))
    return p, info


def design_rank(design: _Design) -> int:
    """Rank of the design matrix (model terms and intercept), from its Gram matrix
    accumulated chunk by chunk: eigenvalues above 1e-10 of the largest count (singular
    values above 1e-5 of the largest; the terms are standardized, so a column dependent
    on others is ~1e-16 there).  R's ``glm`` reports such columns as aliased (NA)."""
    gram = np.zeros((design.p + 1, design.p + 1))
    for _, _, _, d in design.chunks():
        gram += d.T @ d
    eig = np.linalg.eigvalsh(gram)
    return int((eig > eig.max() * 1e-10).sum())


@register_measure(
    "propensity", category="utility", direction="lower_is_better", kinds=NUMERIC_KINDS,
    aggregate="mean",
    label="propensity-score loss",
    no_partial="a logistic fit by Newton's method over the whole table: its sums over "
               "records could decompose, but that is not done here",
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
