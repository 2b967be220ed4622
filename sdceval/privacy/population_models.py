"""Population uniqueness and the attacker models of a sample file (issue 30 items 1 and
4): from the class-size histogram of a sample (how many equivalence classes of the
published keys have size 1, 2, ...), the sample size ``n`` and the population size
``N`` (sampling fraction ``f = n / N``), estimate the number of population uniques
with the models ARX offers (``risk/ModelPitman``, ``ModelZayatz``, ``ModelSNB``,
``RiskModelPopulationUniqueness``, read at ARX's HEAD), and the prosecutor, journalist
and marketer readings of ``RiskModelSampleSummary``.  numpy/scipy only; the measures
(`sdceval.measures.population_uniqueness`, `sdceval.measures.risk_summary`) call these
functions on class sizes.

Notation: ``c_j`` classes of sample size ``j``, ``u = Σ c_j`` classes, ``n = Σ j c_j``.

Pitman (Pitman 1996, "Some developments of the Blackwell-MacQueen urn scheme";
Hoshino 2001, "Applying Pitman's sampling formula to microdata disclosure risk
assessment", J. Official Statistics 17(4), 499-520).  The class partition of the
sample follows Pitman's sampling formula with ``θ > -α``, ``0 < α < 1``; the maximum
likelihood estimates solve (digamma form of the sums)::

    Σ_{i=1}^{u-1} 1/(θ + iα) = Σ_{i=1}^{n-1} 1/(θ + i)
    Σ_{i=1}^{u-1} i/(θ + iα) = Σ_j c_j Σ_{k=1}^{j-1} 1/(k - α)

from Hoshino's moment start ``c = c1(c1-1)/c2``,
``θ0 = (n u c - c1 (n-1)(2u + c)) / (2 c1 u + c1 c - n c)``,
``α0 = (θ0 (c1 - n) + (n-1) c1) / (n u)``; population uniques
``U = Γ(θ + 1) / Γ(θ + α) · N^α``.  Reliable for small sampling fractions (Hoshino;
Dankar et al. use it for ``f <= 0.1``); it ignores ``f`` except through ``N``.

Zayatz (1991, "Estimation of the percent of unique population elements on a
microdata file using the sample", Census SRD report 91/08).  The probability that a
sample unique is a population unique, with the sample class sizes standing for the
population's (ARX's reading)::

    P = c1 · h(1; N, 1, n) / Σ_j c_j h(1; N, j, n),   U = c1 · P / f

``h(1; N, j, n) = j C(N-j, n-1) / C(N, n)`` the hypergeometric probability of drawing
one of ``j`` marked units in ``n`` draws from ``N``; here as the ratio
``h(1; N, j, n) / h(1; N, 1, n) = j Π_{i=1}^{j-1} (N - n + 1 - i)/(N - i)`` (a running
product, no large factorials).  Reliable for large sampling fractions; it overestimates
for small ones (Dankar et al. 2012).

SNB (Chen & Keller-McNulty 1998, "Estimation of identification disclosure risk in
microdata", J. Official Statistics 14(1), 79-95).  Population class sizes minus one
are negative binomial ``NB(α, β)`` over ``K`` non-empty classes, sampled binomially
with ``f``; ``K`` by Shlosser's estimator (Haas & Stokes 1998), ``α, β`` by matching
``c1`` and ``c2`` (``d = (1 - f)(1 - β)``)::

    E[c1] = K f (β/(1-d))^α (α d/(1-d) + 1)
    E[c2] = K α β^α f² (1-β)/2 · (1-d)^(-(α+2)) (2 - (1-α) d),   U = K β^α

Reliable for large sampling fractions (Dankar et al.).  ``variant="arx"`` (default)
computes ``K`` and ``E[c2]`` as ARX codes them, which is not the published form:
ARX's Shlosser denominator is ``Σ_j [c_j (1-f)^j (1+f)^j - 1]`` (the ``- 1`` per
histogram entry) where Haas & Stokes have ``Σ_j c_j (1-f)^j ((1+f)^j - 1)``, and
ARX's ``E[c2]`` has ``(1-d)^(+(α+2))``.  ``variant="published"`` uses the formulas
above.  ARX's variant is the default because ARX's values are this module's acceptance
values (on ARX's Adult at ``f = 0.2`` the published SNB converges to 0.3195, below
Zayatz's 0.3577, so Dankar's rule would report a lower risk than ARX).

Dankar's decision rule (Dankar, El Emam, Neisa & Roffey 2012, "Estimating the
re-identification risk of clinical data sets", BMC Med Inform Decis Mak 12:66), as ARX
applies it: no sample unique: 0; ``f <= 0.1``: Pitman, Zayatz where Pitman has no
solution; ``f > 0.1``: the smaller of Zayatz and SNB, Zayatz where SNB has no solution.

Solutions.  Pitman: `scipy.optimize.root` (``hybr``, analytic Jacobian of trigamma
terms) from Hoshino's start, Levenberg-Marquardt if that fails; accepted when it
converges with ``θ >= 0`` (ARX's constraint), ``0 < α < 1`` and ``0 <= U <= N``.  SNB:
``hybr`` from ARX's 16 start values ``{0, .33, .66, .99}²`` in ARX's order, the first
converged ``α > 0``, ``0 < β <= 1`` with ``0 <= U <= N`` (ARX accepts any converged
root; the parameter domain is the model's).  An estimate without a solution is NaN.

Where this module differs from ARX: ``N = n`` (the file is the population) gives
``U = c1`` for every model, where ARX fits the models anyway (its Zayatz and SNB give
``c1`` to rounding there, its Pitman an expectation); the domain checks above; a model
asked for by name that has no solution gives the upper bound ``U = c1 / f`` (every
population unique in the sample is a sample unique, so ``f U <= c1`` in expectation;
``model_used = "bound"``), where ARX reports 0.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from scipy import optimize, special

from sdceval.core.errors import SdcevalError

#: population-uniqueness models (ARX's ``PopulationUniquenessModel``)
MODELS = ("pitman", "zayatz", "snb", "dankar")
#: the SNB variants (module notes)
SNB_VARIANTS = ("arx", "published")
#: attackers of ARX's ``RiskModelSampleSummary`` (El Emam 2013, "Guide to the
#: De-Identification of Personal Health Information", ch. 16)
ATTACKERS = ("prosecutor", "journalist", "marketer")
#: readings of an attacker's risk
READINGS = ("highest", "average", "records_at_risk")
#: Dankar's cut-off between Pitman and Zayatz/SNB (sampling fraction)
DANKAR_CUTOFF = 0.1
# ARX's default start values of its Newton-Raphson solver (ARXSolverConfiguration)
_STARTS = [(a, b) for a in (0.0, 0.33, 0.66, 0.99) for b in (0.0, 0.33, 0.66, 0.99)]


@dataclass(frozen=True)
class Histogram:
    """Class-size histogram: ``sizes`` (ascending, distinct) and ``counts`` (classes of
    each size)."""

    sizes: np.ndarray
    counts: np.ndarray

    @classmethod
    def of(cls, class_sizes) -> Histogram:
        """The histogram of per-class sizes (each >= 1)."""
        s = np.asarray(class_sizes, dtype=np.int64).reshape(-1)
        if s.size and s.min() < 1:
            raise SdcevalError("population models: class sizes must be >= 1")
        sizes, counts = np.unique(s, return_counts=True)
        return cls(sizes, counts.astype(np.int64))

    @property
    def n(self) -> int:
        return int((self.sizes * self.counts).sum())

    @property
    def classes(self) -> int:
        return int(self.counts.sum())

    def of_size(self, j: int) -> int:
        return int(self.counts[self.sizes == j].sum())


def population_size(n: int, *, sampling_fraction: float | None = None,
                    population: float | None = None, who: str = "population models"
                    ) -> float:
    """The population size ``N``: ``population`` as given (>= ``n``), or
    ``round(n / sampling_fraction)`` (ARX's ``ARXPopulationModel.create(n, f)``),
    ``0 < f <= 1``; neither: ``n`` (the file is the population)."""
    if sampling_fraction is not None and population is not None:
        raise SdcevalError(f"{who}: give sampling_fraction or population_size, not both")
    if sampling_fraction is not None:
        f = float(sampling_fraction)
        if not (0.0 < f <= 1.0):
            raise SdcevalError(f"{who}: sampling_fraction must be in (0, 1], got {f!r}")
        return float(max(round(n / f), n))
    if population is not None:
        p = float(population)
        if not (np.isfinite(p) and p >= n):
            raise SdcevalError(f"{who}: population_size must be at least the number of "
                               f"records ({n}), got {population!r}")
        return p
    return float(n)


# -- the estimators -----------------------------------------------------------------------

def _valid(u: float, N: float) -> float:
    return float(u) if np.isfinite(u) and 0.0 <= u <= N else float("nan")


def pitman_fit(h: Histogram) -> tuple[float, float] | None:
    """Maximum likelihood ``(θ, α)`` of Pitman's sampling formula for the partition
    ``h`` (module notes), or None without an admissible solution."""
    n, u, c1 = h.n, h.classes, h.of_size(1)
    if c1 == 0 or u < 2:
        return None
    c2 = h.of_size(2) or 1  # ARX: no class of size 2 -> 1 (overestimate)
    c = c1 * (c1 - 1) / c2
    t0 = (n * u * c - c1 * (n - 1) * (2 * u + c)) / (2 * c1 * u + c1 * c - n * c)
    a0 = (t0 * (c1 - n) + (n - 1) * c1) / (n * u)
    big = h.sizes > 1
    js, cs = h.sizes[big].astype(np.float64), h.counts[big].astype(np.float64)
    psi, tri = special.digamma, special.polygamma

    def outside(t, a):
        # out of the model's domain (θ > -α, 0 < α < 1): the polygamma functions'
        # reflection for large negative arguments is slow, and the root is not there
        return not (0.0 < a < 1.0 and t > -a and t < 1e300)

    def score(x):
        t, a = x
        if outside(t, a):
            return [np.nan, np.nan]
        s1 = (psi(t / a + u) - psi(t / a + 1)) / a            # Σ 1/(t + i a)
        return [s1 - (psi(t + n) - psi(t + 1)),
                ((u - 1) - t * s1) / a - np.sum(cs * (psi(js - a) - psi(1 - a)))]

    def jac(x):
        t, a = x
        if outside(t, a):
            return [[np.nan, np.nan], [np.nan, np.nan]]
        r, s1 = t / a, (psi(t / a + u) - psi(t / a + 1)) / a
        s2 = (tri(1, r + 1) - tri(1, r + u)) / a ** 2          # Σ 1/(t + i a)²
        s_i2 = (s1 - t * s2) / a                                # Σ i/(t + i a)²
        s_ii2 = ((u - 1) - 2 * t * s1 + t * t * s2) / a ** 2    # Σ i²/(t + i a)²
        return [[-s2 + (tri(1, t + 1) - tri(1, t + n)), -s_i2],
                [-s_i2, -s_ii2 - np.sum(cs * (tri(1, 1 - a) - tri(1, js - a)))]]

    with np.errstate(all="ignore"):
        for method in ("hybr", "lm"):
            try:
                sol = optimize.root(score, [t0, a0], jac=jac, method=method,
                                    options={"xtol": 1e-15} if method == "hybr" else {})
            except (ValueError, FloatingPointError):
                continue
            t, a = sol.x
            if sol.success and np.all(np.isfinite(sol.x)) and t >= 0 and 0 < a < 1:
                return float(t), float(a)
    return None


def pitman_uniques(h: Histogram, N: float) -> float:
    """Population uniques under Pitman's model, ``Γ(θ + 1)/Γ(θ + α) N^α`` (module
    notes); NaN without a solution."""
    fit = pitman_fit(h)
    if fit is None:
        return float("nan")
    t, a = fit
    log_u = special.gammaln(t + 1) - special.gammaln(t + a) + a * np.log(N)
    return _valid(np.exp(log_u), N)


def zayatz_conditional(h: Histogram, N: float) -> float:
    """Zayatz's ``P``: the probability that a sample unique is a population unique."""
    n, c1 = h.n, h.of_size(1)
    top = int(h.sizes.max()) if h.sizes.size else 1
    i = np.arange(1, top, dtype=np.float64)
    step = np.clip((N - n + 1 - i) / (N - i), 0.0, None)
    ratio = np.concatenate([[1.0], np.cumprod(step)])
    return float(c1 / np.sum(h.counts * h.sizes * ratio[h.sizes - 1]))


def zayatz_uniques(h: Histogram, N: float) -> float:
    """Population uniques under Zayatz's model: ``c1 · P / f`` (module notes)."""
    return _valid(h.of_size(1) * zayatz_conditional(h, N) * N / h.n, N)


def shlosser_classes(h: Histogram, f: float, variant: str = "arx") -> float:
    """Shlosser's estimate of the number ``K`` of non-empty population classes
    (Haas & Stokes 1998), as ARX codes it or as published (module notes)."""
    j, c = h.sizes.astype(np.float64), h.counts.astype(np.float64)
    q = (1.0 - f) ** j
    num = np.sum(j * f * f * (1.0 - f * f) ** (j - 1) * c)
    den = (np.sum(q * c * (1.0 + f) ** j - 1.0) if variant == "arx"
           else np.sum(c * q * ((1.0 + f) ** j - 1.0)))
    ratio = np.sum(q * c) / np.sum(j * f * (1.0 - f) ** (j - 1) * c)
    return float(h.classes + h.of_size(1) * (num / den) * ratio * ratio)


def snb_fit(h: Histogram, N: float, variant: str = "arx"
            ) -> tuple[float, float, float] | None:
    """``(K, α, β)`` of the SNB model matched to ``c1`` and ``c2`` (module notes), or
    None without an admissible solution."""
    if variant not in SNB_VARIANTS:
        raise SdcevalError(f"SNB variant must be one of {', '.join(SNB_VARIANTS)}, "
                           f"got {variant!r}")
    f = h.n / N
    c1, c2 = h.of_size(1), h.of_size(2)
    with np.errstate(all="ignore"):
        K = shlosser_classes(h, f, variant)
        sign = 1.0 if variant == "arx" else -1.0

        def moments(x):
            a, b = x
            d = (1 - f) * (1 - b)
            return [K * f * (b / (1 - d)) ** a * (a * d / (1 - d) + 1) - c1,
                    K * a * b ** a * f * f * (1 - b) / 2 * (1 - d) ** (sign * (a + 2))
                    * (2 - (1 - a) * d) - c2]

        for start in _STARTS:
            sol = optimize.root(moments, start, method="hybr")
            a, b = sol.x
            if (sol.success and np.all(np.isfinite(sol.x)) and a > 0 and 0 < b <= 1
                    and np.isfinite(_valid(K * b ** a, N))):
                return float(K), float(a), float(b)
    return None


def snb_uniques(h: Histogram, N: float, variant: str = "arx") -> float:
    """Population uniques under the SNB model, ``K β^α`` (module notes); NaN without
    a solution."""
    fit = snb_fit(h, N, variant)
    if fit is None:
        return float("nan")
    K, a, b = fit
    return _valid(K * b ** a, N)


@dataclass
class Uniqueness:
    """Estimated population uniqueness: ``uniques`` (``U``), ``share`` (``U / N``),
    ``model`` (the one asked for), ``model_used`` (for Dankar's rule: the one it
    picked; ``"bound"``: no solution, ``c1 / f``), ``conditional`` (``min(1, f U / c1)``: the probability that a sample
    unique is a population unique — each population unique is sampled with
    probability ``f``), ``sample_uniqueness`` (``c1 / n``), ``estimates`` (every model
    computed on the way, NaN: no solution), ``note``."""

    model: str
    model_used: str
    uniques: float
    share: float
    conditional: float
    sample_uniqueness: float
    population_size: float
    sampling_fraction: float
    estimates: dict = field(default_factory=dict)
    note: str = ""


def estimate_uniqueness(h: Histogram, N: float, model: str = "dankar", *,
                        snb_variant: str = "arx") -> Uniqueness:
    """Population uniques of a sample with histogram ``h`` in a population of ``N``
    under ``model`` (module notes; Dankar's rule as ARX applies it)."""
    if model not in MODELS:
        raise SdcevalError(f"population uniqueness: model must be one of "
                           f"{', '.join(MODELS)}, got {model!r}")
    n, c1 = h.n, h.of_size(1)
    if N < n:
        raise SdcevalError(f"population uniqueness: population size {N} is smaller than "
                           f"the sample ({n} records)")
    f = n / N if N else 1.0
    su = c1 / n if n else 0.0
    base = {"model": model, "sample_uniqueness": su, "population_size": N,
            "sampling_fraction": f}
    if c1 == 0:
        return Uniqueness(model_used=model, uniques=0.0, share=0.0, conditional=0.0,
                          note="no sample unique: no population unique", **base)
    if N == n:
        return Uniqueness(model_used="none", uniques=float(c1), share=su, conditional=1.0,
                          note="the file is the population (f = 1): population "
                               "uniques are the sample uniques", **base)
    funs = {"pitman": lambda: pitman_uniques(h, N),
            "zayatz": lambda: zayatz_uniques(h, N),
            "snb": lambda: snb_uniques(h, N, snb_variant)}
    est: dict = {}

    def get(m):
        if m not in est:
            est[m] = funs[m]()
        return est[m]

    if model != "dankar":
        used, value = model, get(model)
    elif f <= DANKAR_CUTOFF:
        used = "pitman" if np.isfinite(get("pitman")) and get("pitman") != 0 else "zayatz"
        value = get(used)
    else:
        snb, zay = get("snb"), get("zayatz")
        used = "snb" if np.isfinite(snb) and snb != 0 and not zay < snb else "zayatz"
        value = est[used]
    note = ""
    if not np.isfinite(value):
        # no estimate: the upper bound f U <= c1 (never overstates protection)
        note = (f"model {used!r} has no solution on these class sizes: the sample "
                "uniqueness, an upper bound of the population uniqueness, is reported")
        used, value = "bound", c1 / f
    return Uniqueness(model_used=used, uniques=value, share=value / N,
                      conditional=min(1.0, f * value / c1), estimates=est, note=note,
                      **base)


# -- the attackers ------------------------------------------------------------------------

@dataclass
class AttackerRisk:
    """One attacker's readings (ARX's ``RiskSummary``): ``highest`` (``1 / min F``),
    ``lowest``, ``average`` (the success rate), ``records_at_risk`` (share of records
    whose risk exceeds the threshold), ``classes_at_risk`` / ``records_above`` (counts).
    The marketer has only an average (ARX's ``MarketerRisk``)."""

    average: float
    highest: float | None = None
    lowest: float | None = None
    records_at_risk: float | None = None
    records_above: int | None = None
    classes_above: int | None = None

    def reading(self, name: str) -> float | None:
        return getattr(self, name)


def attacker_risks(f, F, threshold: float) -> dict:
    """The prosecutor's, journalist's and marketer's readings from per-class sample
    sizes ``f`` and population sizes ``F`` (``F >= f``) and a threshold on a record's
    risk (ARX's ``RiskModelSampleSummary``; El Emam 2013)::

        prosecutor: r = 1/f      highest 1/min f, average u/n (= mean over records)
        journalist: r = 1/F      highest 1/min F, average max(u / Σ F, Σ (f/F) / n)
        marketer:                average Σ (f/F) / n

    records at risk: ``Σ f [r > threshold] / n`` (ARX: strictly above)."""
    f = np.asarray(f, dtype=np.float64)
    F = np.asarray(F, dtype=np.float64)
    n, u = float(f.sum()), len(f)
    if u == 0:
        zero = AttackerRisk(0.0, 0.0, 0.0, 0.0, 0, 0)
        return {"prosecutor": zero, "journalist": zero, "marketer": AttackerRisk(0.0)}

    def summary(size, average):
        r = 1.0 / size
        above = r > threshold
        return AttackerRisk(average=average, highest=float(r.max()),
                            lowest=float(r.min()),
                            records_at_risk=float(f[above].sum() / n),
                            records_above=int(f[above].sum()),
                            classes_above=int(above.sum()))

    marketer = float(np.sum(f / F) / n)
    return {"prosecutor": summary(f, u / n),
            "journalist": summary(F, max(u / float(F.sum()), marketer)),
            "marketer": AttackerRisk(marketer)}


__all__ = ["ATTACKERS", "DANKAR_CUTOFF", "MODELS", "READINGS", "SNB_VARIANTS",
           "AttackerRisk", "Histogram", "Uniqueness", "attacker_risks",
           "estimate_uniqueness", "pitman_fit", "pitman_uniques", "population_size",
           "shlosser_classes", "snb_fit", "snb_uniques", "zayatz_conditional", "zayatz_uniques"]
