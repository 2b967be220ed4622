"""Population risk (issue 29 items 2 and 5): sdcMicro's frequencies, individual risk,
global risk and household risk (`sdceval.privacy.population_risk`) and the measures
``individual_risk`` / ``household_risk`` (`sdceval.measures.population_risk`).

Acceptance values: sdcMicro's own tests (tests/testthat/test_freqCalc.R,
test_indivRisk.R, test_calcRisks.R at sdcMicro 5.8.1), and values of the real sdcMicro
5.8.1 on its ``testdata`` and on random data with missing keys, made by
tests/data/sdcmicro_population_risk.R (run from the repository root:
``Rscript tests/data/sdcmicro_population_risk.R``; CI does not run R).
"""
from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from contracts import contract_data
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import integrate
from scipy.special import gammaln

import sdceval
from sdceval.catalog import get_measure
from sdceval.core.errors import SdcevalError
from sdceval.core.release import Release
from sdceval.privacy.population_risk import (
    exact_risk,
    frequencies,
    global_risk,
    household_risks,
    individual_risks,
    release_keys,
    risks_from_frequencies,
)

DATA = Path(__file__).parent / "data"
NA = -1

# -- sdcMicro's own test values ----------------------------------------------------------

# tests/testthat/test_freqCalc.R and test_indivRisk.R: the 8-record example (columns
# A, B, C; weight), without and with missing values
A = [2, 3, 2, 2, 3, 3, 1, 2]
B = [3, 3, 3, 3, 3, 3, 4, 3]
C = [1, 3, 1, 2, 1, 1, 1, 1]
W8 = [18.0, 45.5, 39.0, 17.0, 92.0, 8.0, 123.5, 51]
C_NA = [1, 3, NA, 2, 1, 1, NA, 1]
A_NA = [2, 3, 2, 2, 3, 3, 1, NA]


def keys(*cols):
    return np.array(cols, dtype=np.int64).T


def test_freqcalc_sdcmicro_values():
    """test_freqCalc.R: every f_k and F_k, weighted and not, with missing values."""
    fk, Fk = frequencies(keys(A, B, C), W8)
    assert fk.tolist() == [3, 1, 3, 1, 2, 2, 1, 3]
    assert Fk.tolist() == [108.0, 45.5, 108.0, 17.0, 100.0, 100.0, 123.5, 108.0]
    fk, Fk = frequencies(keys(A, B, C))
    assert fk.tolist() == Fk.tolist() == [3, 1, 3, 1, 2, 2, 1, 3]
    fk, Fk = frequencies(keys(A, B, C_NA), W8)
    assert fk.tolist() == [3, 1, 4, 2, 2, 2, 1, 3]
    assert Fk.tolist() == [108.0, 45.5, 125.0, 56.0, 100.0, 100.0, 123.5, 108.0]
    fk, Fk = frequencies(keys(A, B, C_NA))
    assert fk.tolist() == Fk.tolist() == [3, 1, 4, 2, 2, 2, 1, 3]
    # one column all missing and one row all missing
    a, b = [2, 3, NA, 2, 3, 3, 1, 2], [3, 3, NA, 3, 3, 3, 4, 3]
    fk, Fk = frequencies(keys(a, b, [NA] * 8), W8)
    assert fk.tolist() == [4, 4, 8, 4, 4, 4, 2, 4]
    assert Fk.tolist() == [125.0, 184.5, 394.0, 125.0, 184.5, 184.5, 162.5, 125.0]
    assert frequencies(keys(a, b, [NA] * 8))[0].tolist() == [4, 4, 8, 4, 4, 4, 2, 4]
    # one key with missing values (sdcMicro's special case)
    fk, Fk = frequencies(keys([2, 3, NA, 2, 1, NA, 1, 2]), W8)
    assert fk.tolist() == [5, 3, 8, 5, 4, 8, 4, 5]
    assert Fk.tolist() == [133.0, 92.5, 394.0, 133.0, 262.5, 394.0, 262.5, 133.0]
    # more key variables than records
    wide = np.array([2, 3, NA, 2, 3, 3, 1, NA, 3, 3, NA, 3, 3, 2, 2, 3, NA, NA, 1, 2,
                     NA, NA, 4, 4]).reshape(8, 3).T
    fk, Fk = frequencies(wide, [18.0, 45.5, 122])
    assert fk.tolist() == [1, 2, 2] and Fk.tolist() == [18.0, 167.5, 167.5]
    assert frequencies(wide)[0].tolist() == [1, 2, 2]


APPROX = [0.01369863, 0.08579129, 0.01369863, 0.17707583, 0.01877883, 0.01877883,
          0.03931625, 0.01369863]
EXACT = [0.01355297, 0.08579129, 0.01355297, 0.17707583, 0.01877883, 0.01877883,
         0.03931625, 0.01355297]
APPROX_NA = [0.013698630, 0.085791288, 0.010554090, 0.032466112, 0.009836066,
             0.009836066, 0.039316254, 0.005973716]
EXACT_NA = [0.013552968, 0.085791288, 0.010504889, 0.032466112, 0.009756889,
            0.009756889, 0.039316254, 0.005962551]


@pytest.mark.parametrize("key_cols, method, expected", [
    ((A, B, C), "approx", APPROX), ((A, B, C), "exact", EXACT),
    ((A_NA, B, C_NA), "approx", APPROX_NA), ((A_NA, B, C_NA), "exact", EXACT_NA)])
def test_indivrisk_sdcmicro_values(key_cols, method, expected):
    """test_indivRisk.R: weighted risks (to the digits given), qual = 2 doubles them,
    survey = FALSE and no weights give 1/f_k."""
    r, fk, _ = individual_risks(keys(*key_cols), W8, method=method)
    np.testing.assert_allclose(r, expected, rtol=0, atol=5.1e-9)
    r2, _, _ = individual_risks(keys(*key_cols), W8, method=method, qual=2)
    np.testing.assert_allclose(r2, 2 * np.array(expected), rtol=0, atol=1.1e-8)
    for survey, weights in ((False, W8), (True, None), (False, None)):
        r1, fk1, _ = individual_risks(keys(*key_cols), weights, method=method,
                                      survey=survey)
        np.testing.assert_array_equal(r1, 1.0 / fk1)
    # sdcMicro's survey = FALSE ignores qual; with survey and no weights, qual applies
    assert np.allclose(individual_risks(keys(*key_cols), None, qual=2)[0], 2 / fk)
    assert np.allclose(individual_risks(keys(*key_cols), W8, survey=False, qual=2)[0],
                       1 / fk)


def test_calcrisks_sdcmicro_values():
    """test_calcRisks.R (keys drawn there with set.seed(3), printed by R): no weights,
    global risk 0.8 and 8 expected re-identifications; with missing values 0.4375 and
    1.75."""
    k = keys([2, 2, 2, 2, 2, 2, 4, 2, 3, 2], [2, 5, 2, 4, 3, 2, 1, 2, 3, 5],
             [1, 1, 3, 3, 3, 3, 2, 1, 1, 2])
    r, fk, Fk = individual_risks(k, None)
    assert global_risk(r) == (0.8, 8.0)
    assert r.tolist() == [0.5, 1.0, 0.5, 1.0, 1.0, 0.5, 1.0, 0.5, 1.0, 1.0]
    assert fk.tolist() == Fk.tolist() == [2, 1, 2, 1, 1, 2, 1, 2, 1, 1]
    k = keys([NA, 1, NA, NA], [2, NA, NA, 4], [4, 5, NA, 3], [NA, 2, NA, 2],
             [5, NA, NA, 2], [1, 2, NA, 2])
    r, fk, Fk = individual_risks(k, None)
    assert global_risk(r) == (0.4375, 1.75)
    assert r.tolist() == [0.5, 0.5, 0.25, 0.5]
    assert fk.tolist() == Fk.tolist() == [2, 2, 4, 2]


# -- the real sdcMicro 5.8.1 on testdata and on random data ---------------------------------

def _testdata() -> pd.DataFrame:
    path = DATA / "sdcmicro_testdata.csv"
    if not path.exists():
        pytest.fail(f"{path} is missing: export it with Rscript -e "
                    "'library(sdcMicro); data(testdata); write.csv(testdata, "
                    "\"tests/data/sdcmicro_testdata.csv\", row.names=FALSE)'")
    return pd.read_csv(path)


def _r_comment(path: Path) -> dict:
    """``name=value`` pairs of the comment line R wrote at the top of ``path``."""
    line = path.read_text().splitlines()[0]
    return {k: float(v) for k, v in re.findall(r"(\w+)=([0-9][0-9.e+-]*[0-9])", line)}


TESTDATA_KEYS = ["urbrur", "water", "sex", "age"]


def test_testdata_equals_sdcmicro():
    """sdcMicro's testdata (keys urbrur, water, sex, age; weight sampling_weight;
    household ori_hid): global risk, expected re-identifications, household risk and
    every per-record risk (approx and exact) equal sdcMicro 5.8.1's to 1e-9 relative."""
    td = _testdata()
    ref = _r_comment(DATA / "sdcmicro_testdata_risk.csv")
    fk_r = pd.read_csv(DATA / "sdcmicro_testdata_risk.csv", comment="#")["fk"].to_numpy()
    by_fk = pd.read_csv(DATA / "sdcmicro_testdata_risk_by_fk.csv").set_index("fk")
    hier = pd.read_csv(DATA / "sdcmicro_testdata_hier_risk.csv").set_index("ori_hid")
    k = td[TESTDATA_KEYS].to_numpy(np.int64)
    w = td["sampling_weight"].to_numpy(float)
    r, fk, Fk = individual_risks(k, w)
    np.testing.assert_array_equal(fk, fk_r)
    np.testing.assert_allclose(Fk, by_fk.loc[fk_r, "Fk"], rtol=1e-12)
    np.testing.assert_allclose(r, by_fk.loc[fk_r, "risk"], rtol=1e-9)
    rx, _, _ = individual_risks(k, w, method="exact")
    np.testing.assert_allclose(rx, by_fk.loc[fk_r, "risk_exact"], rtol=1e-9)
    mean, total = global_risk(r)
    assert mean == pytest.approx(ref["global_risk"], rel=1e-9)
    assert total == pytest.approx(ref["global_risk_ER"], rel=1e-9)
    h = household_risks(r, td["ori_hid"].to_numpy())
    np.testing.assert_allclose(h, hier.loc[td["ori_hid"], "hier_risk"], rtol=1e-9)
    assert h.sum() == pytest.approx(ref["hier_risk_ER"], rel=1e-9)
    assert h.mean() == pytest.approx(ref["hier_risk"], rel=1e-9)


def test_testdata_measures_equal_sdcmicro():
    """The registered measures on testdata's unchanged keys (an exact release) give
    sdcMicro's measure_risk figures."""
    td = _testdata()
    ref = _r_comment(DATA / "sdcmicro_testdata_risk.csv")
    ds = sdceval.as_dataset(td[TESTDATA_KEYS + ["sampling_weight", "ori_hid"]],
                            qi=TESTDATA_KEYS, weight="sampling_weight", household="ori_hid")
    rel = _release(ds)
    m = sdceval.evaluate(ds, rel, "individual_risk")
    assert m.value == pytest.approx(ref["global_risk"], rel=1e-9)
    assert m.details["expected_reidentifications"] == pytest.approx(ref["global_risk_ER"],
                                                                    rel=1e-9)
    assert m.details["population"] == "sample weighted by 'sampling_weight'"
    h = sdceval.evaluate(ds, rel, "household_risk")
    assert h.value == pytest.approx(ref["hier_risk"], rel=1e-9)
    assert h.details["expected_reidentifications"] == pytest.approx(ref["hier_risk_ER"],
                                                                    rel=1e-9)
    assert h.details["households"] == td["ori_hid"].nunique()


def test_random_missing_keys_equal_sdcmicro():
    """sdcMicro 5.8.1 on 300 random records with missing keys (two missing in every
    key), varied weights and households: f_k, F_k (alpha = 1 and 0.5, weighted and
    not), the approx and exact risks, the household risk, to 1e-9 relative."""
    path = DATA / "sdcmicro_population_risk_random.csv"
    d = pd.read_csv(path, comment="#")
    ref = _r_comment(path)
    k = d[["a", "b", "c"]].fillna(NA).to_numpy().astype(np.int64)
    w = d["w"].to_numpy()
    fk, Fk = frequencies(k, w)
    np.testing.assert_array_equal(fk, d["fk"])
    np.testing.assert_allclose(Fk, d["Fk"], rtol=1e-12)
    fk5, Fk5 = frequencies(k, w, alpha=0.5)
    np.testing.assert_array_equal(fk5, d["fk_a05"])
    np.testing.assert_allclose(Fk5, d["Fk_a05"], rtol=1e-12)
    np.testing.assert_array_equal(frequencies(k)[0], d["fk_unw"])
    r = risks_from_frequencies(fk, Fk)
    np.testing.assert_allclose(r, d["risk"], rtol=1e-9)
    # sdcMicro's exact sum overflows to NaN at the two all-missing records (f_k = 300):
    # there the integral is taken (the approximation's value within 1 %)
    exact = risks_from_frequencies(fk, Fk, method="exact")
    ok = d["risk_exact"].notna().to_numpy()
    assert (~ok).sum() == 2 and (fk[~ok] == 300).all()
    np.testing.assert_allclose(exact[ok], d["risk_exact"][ok], rtol=1e-9)
    np.testing.assert_allclose(exact[~ok], d["risk"][~ok], rtol=1e-2)
    np.testing.assert_allclose(risks_from_frequencies(fk5, Fk5), d["risk_a05"], rtol=1e-9)
    h = household_risks(r, d["hid"].to_numpy())
    np.testing.assert_allclose(h, d["hier_risk"], rtol=1e-9)
    assert r.sum() == pytest.approx(ref["global_risk_ER"], rel=1e-9)
    assert h.sum() == pytest.approx(ref["hier_risk_ER"], rel=1e-9)


def test_where_sdcmicro_differs():
    """Stated differences, shown by sdcMicro 5.8.1 itself:

    d <- data.frame(a=c(1,1,2,2,2), b=c(1,NA,1,1,2), w=c(10,20,30,40,50))
    f <- freqCalc(d, keyVars=1:2, w=3, alpha=0.5)   # fk 1.5 2 2 2 1; Fk 20 30 70 70 50
    indivRisk(f)$rk   # 0.00000000 0.05761199 0.02633620 0.02633620 0.07983720

    sdcMicro leaves r = 0 for the fractional f_k = 1.5 (its tests for fk == 1, == 2,
    > 2 all fail); here r is E[1/F | f, p] for real f, between the f = 1 and f = 2
    values at the same p.  The all-missing record is not counted by the complete
    combinations with two keys or more (sdcMicro's addAllNAtoKeys = FALSE):

    d2 <- data.frame(a=c(1,1,NA,2), b=c(1,2,NA,1), w=c(10,20,30,40))
    freqCalc(d2, keyVars=1:2, w=3)                   # fk 1 1 4 1; Fk 10 20 100 40
    """
    fk, Fk = frequencies(keys([1, 1, 2, 2, 2], [1, NA, 1, 1, 2]), [10, 20, 30, 40, 50],
                         alpha=0.5)
    assert fk.tolist() == [1.5, 2, 2, 2, 1] and Fk.tolist() == [20, 30, 70, 70, 50]
    r = risks_from_frequencies(fk, Fk)
    np.testing.assert_allclose(r[1:], [0.05761199, 0.02633620, 0.02633620, 0.07983720],
                               atol=5e-9)
    p = 1.5 / 20
    between = sorted(exact_risk([1.0, 2.0], [p, p]))
    assert between[0] < r[0] < between[1]
    assert r[0] == pytest.approx(_integral(1.5, p), rel=1e-10)
    fk, Fk = frequencies(keys([1, 1, NA, 2], [1, 2, NA, 1]), [10, 20, 30, 40])
    assert fk.tolist() == [1, 1, 4, 1] and Fk.tolist() == [10, 20, 100, 40]


# -- the exact risk against its definition --------------------------------------------------

def _integral(f, p):
    """``p ∫_0^1 u^(f-1)/(p + (1-p) u) du`` by scipy's adaptive quadrature."""
    return integrate.quad(lambda u: p * u ** (f - 1) / (p + (1 - p) * u), 0, 1,
                          epsabs=0, epsrel=1e-13, limit=500, points=[min(p, 0.5)])[0]


def _negative_binomial(f: int, p: float) -> float:
    """``E[1/F]``, ``F = f + NegBin(f, p)``: the definition, summed."""
    mean, sd = f * (1 - p) / p, math.sqrt(f * (1 - p)) / p   # of NegBin(f, p)
    y = np.arange(int(mean + 40 * sd) + 20000)
    logpmf = (gammaln(f + y) - gammaln(y + 1) - gammaln(f) + f * math.log(p)
              + y * math.log1p(-p))
    return float(np.sum(np.exp(logpmf) / (f + y)))


def _sdcmicro_exact(f: int, p: float) -> float:
    """sdcMicro's formula for method = "exact" (R/indivRisk.R), transcribed scalar."""
    if f == 1:
        return p / (1 - p) * math.log(1 / p)
    if f == 2:
        return p / (1 - p) - (p / (1 - p)) ** 2 * math.log(1 / p)
    a = (p ** (1 - f) - 1) / (f - 1)

    def b(i):
        return ((f - 1 - i) ** 2 / ((i + 1) * (f - 2 - i))
                * (p ** (i + 2 - f) - 1) / (p ** (i + 1 - f) - 1))
    bb = 0.0
    for m in range(f - 2):
        bb += (-1) ** (m + 1) * math.prod(b(j) for j in range(m + 1))
    return (p / (1 - p)) ** f * (a * (1 + bb) + (-1) ** f * math.log(p))


@pytest.mark.parametrize("f", [3, 4, 7, 20, 49, 50, 51, 120, 400])
@pytest.mark.parametrize("p", [0.001, 0.01, 0.2, 0.49, 0.5, 0.8, 0.99])
def test_exact_risk_is_the_expectation(f, p):
    """Every branch of `exact_risk` (upward recurrence, Watson's expansion, the series)
    equals E[1/F | f] summed from its definition; sdcMicro's own formula agrees where
    its alternating sum is accurate (small f, p not near 1)."""
    r = exact_risk([float(f)], [p])[0]
    assert r == pytest.approx(_negative_binomial(f, p), rel=1e-11)
    if f <= 10 and p <= 0.5:
        assert r == pytest.approx(_sdcmicro_exact(f, p), rel=1e-11)


@pytest.mark.parametrize("f", [1.2, 1.5, 2.5, 3.7, 12.25, 49.5, 50.5, 80.3])
@pytest.mark.parametrize("p", [1e-4, 0.003, 0.2, 0.45, 0.55, 0.99, 1.2, 1.6, 3.0, 20.0])
def test_exact_risk_fractional_and_light_weights(f, p):
    """Fractional f (alpha < 1) and p > 1 (weights below 1, read as they are): the
    quadrature and the downward recurrence equal the integral."""
    assert exact_risk([f], [p])[0] == pytest.approx(_integral(f, p), rel=1e-10)


def test_exact_risk_where_sdcmicro_overflows():
    """At f = 60, p = 0.5 sdcMicro's alternating sum is off by orders of magnitude; the
    integral is not (the risk lies between 1/(f+1) p and p/(f-1))."""
    r = exact_risk([60.0], [0.5])[0]
    assert abs(_sdcmicro_exact(60, 0.5) / r - 1) > 1
    assert 0.5 / 61 < r < 0.5 / 59


# -- brute force on small data -------------------------------------------------------------

def _brute_frequencies(k, w, alpha):
    """sdcMicro's counting rules (module notes of the kernel) record by record."""
    n, d = k.shape
    fk, Fk = np.zeros(n), np.zeros(n)
    for i in range(n):
        obs_i = k[i] >= 0
        if not obs_i.any():
            fk[i], Fk[i] = n, sum(w)
            continue
        for j in range(n):
            obs_j = k[j] >= 0
            both = obs_i & obs_j
            if not (k[i][both] == k[j][both]).all():
                continue
            if (k[i] == k[j]).all():
                factor = 1.0
            elif obs_i.all():
                factor = alpha if (obs_j.any() or d == 1) else 0.0
            else:
                factor = 1.0 if obs_j.all() else alpha
            fk[i] += factor
            Fk[i] += factor * w[j]
    return fk, Fk


def _brute_risk(f, big_f, method):
    if f == big_f:
        return 1 / f
    p = f / big_f
    q = 1 - p
    if f == 1:
        return p / q * math.log(1 / p)
    if f == 2:
        return p / q - (p / q) ** 2 * math.log(1 / p)
    if method == "approx" and f > 2:
        return p / (f - q)
    return _integral(f, p)


@st.composite
def _survey(draw):
    n = draw(st.integers(1, 25))
    d = draw(st.integers(1, 3))
    k = np.array(draw(st.lists(st.lists(st.integers(-1, 2), min_size=d, max_size=d),
                               min_size=n, max_size=n)), dtype=np.int64)
    w = np.array(draw(st.lists(st.floats(1.0, 300.0), min_size=n, max_size=n)))
    hh = np.array(draw(st.lists(st.integers(0, 6), min_size=n, max_size=n)))
    alpha = draw(st.sampled_from([1.0, 0.5, 0.0, 0.3]))
    return k, w, hh, alpha


@settings(max_examples=60, deadline=None)
@given(_survey(), st.sampled_from(["approx", "exact"]))
def test_brute_force(case, method):
    """f_k, F_k by a double loop over records; the risks by the formulas (exact: the
    integral by scipy); the household risk by the product over members."""
    k, w, hh, alpha = case
    r, fk, Fk = individual_risks(k, w, method=method, alpha=alpha)
    bf, bF = _brute_frequencies(k, w, alpha)
    np.testing.assert_allclose(fk, bf, rtol=1e-12)
    np.testing.assert_allclose(Fk, bF, rtol=1e-12)
    expected = [_brute_risk(f, big_f, method) for f, big_f in zip(fk, Fk)]
    np.testing.assert_allclose(r, expected, rtol=1e-9)
    h = household_risks(r, hh)
    for i in range(len(r)):
        assert h[i] == pytest.approx(1 - np.prod(1 - r[hh == hh[i]]), rel=1e-12)
    np.testing.assert_allclose(individual_risks(k, None, alpha=alpha)[0],
                               1 / _brute_frequencies(k, np.ones(len(k)), alpha)[0],
                               rtol=1e-12)


def test_kernel_refuses_bad_input():
    with pytest.raises(SdcevalError, match="alpha"):
        frequencies(keys(A, B), alpha=1.5)
    with pytest.raises(SdcevalError, match="weights"):
        frequencies(keys(A, B), [1.0, 2.0])
    with pytest.raises(SdcevalError, match="-1"):
        frequencies(keys([-2, 1], [1, 1]))
    with pytest.raises(SdcevalError, match="method"):
        risks_from_frequencies([1.0], [2.0], method="exakt")
    with pytest.raises(SdcevalError, match="f_k must be"):
        risks_from_frequencies([0.5], [2.0])
    with pytest.raises(SdcevalError, match="households"):
        household_risks([0.1, 0.2], [1])


# -- the registered measures -----------------------------------------------------------------

def _frame(n=60, seed=0):
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"a": rng.integers(0, 3, n), "b": rng.integers(0, 4, n),
                         "c": rng.choice(["x", "y"], n),
                         "w": rng.uniform(1, 80, n).round(1),
                         "hid": np.repeat(np.arange(n // 3), 3)})


def _release(ds, missing=None):
    """A generalized release of the exact QIs, the cells in ``missing`` (a bool array
    records x QIs) suppressed to the whole domain."""
    qis = ds.schema.qis
    frame = ds.frame[qis].astype(str).copy()
    cells = {}
    for j, q in enumerate(qis):
        lo, hi = ds.codes(q).astype(np.int64).copy(), ds.codes(q).astype(np.int64).copy()
        if missing is not None:
            lo[missing[:, j]] = 0
            hi[missing[:, j]] = ds.hierarchy(q).n_leaves - 1
            frame.loc[missing[:, j], q] = "*"
        cells[q] = (lo, hi)
    classes = pd.factorize(pd.MultiIndex.from_frame(frame))[0]
    return Release.generalized(ds, frame, classes=classes, cells=cells, method="test")


def test_measure_reads_the_release_keys():
    """The measure's per-record values are the kernel's on the release's cells; a
    whole-domain cell is a missing key (sdcMicro's NA); with households, the household
    risk is the product's."""
    df = _frame()
    ds = sdceval.as_dataset(df, qi=["a", "b", "c"], weight="w", household="hid")
    missing = np.zeros((ds.n, 3), dtype=bool)
    missing[[1, 5, 9], 0] = True
    missing[[5, 20], 2] = True
    missing[33] = True
    rel = _release(ds, missing)
    k = release_keys(ds, rel)
    assert (k[missing] == NA).all() and (k[~missing] >= 0).all()
    codes = np.column_stack([pd.factorize(df[c])[0] for c in "abc"])
    codes[missing] = NA
    for method, alpha in (("approx", 1.0), ("exact", 0.4)):
        m = sdceval.evaluate(ds, rel, "individual_risk", method=method, alpha=alpha,
                             threshold=0.05)
        r, fk, _ = individual_risks(codes, df["w"], method=method, alpha=alpha)
        np.testing.assert_allclose(m.per_record, r, rtol=1e-13)
        assert m.value == pytest.approx(r.mean(), rel=1e-13)
        assert m.details["expected_reidentifications"] == pytest.approx(r.sum(), rel=1e-13)
        assert m.details["above_threshold"] == int((r > 0.05).sum())
        assert m.details["method"] == method and m.direction == "lower_is_better"
        h = sdceval.evaluate(ds, rel, "household_risk", method=method, alpha=alpha)
        np.testing.assert_allclose(h.per_record, household_risks(r, df["hid"]), rtol=1e-13)
    # a record suppressed as a whole counts as missing in every key: f_k = n
    assert fk[33] == ds.n


def test_measure_without_weights_is_one_over_fk():
    """No weight role: the file is the population, r = 1/f_k (sdcMicro without w),
    said in the details; survey=false gives the same with weights."""
    df = _frame()
    ds = sdceval.as_dataset(df, qi=["a", "b", "c"])
    m = sdceval.evaluate(ds, _release(ds), "individual_risk")
    fk = df.groupby(["a", "b", "c"])["a"].transform("size").to_numpy()
    np.testing.assert_allclose(m.per_record, 1 / fk)
    assert "no weight role" in m.details["population"]
    dsw = sdceval.as_dataset(df, qi=["a", "b", "c"], weight="w")
    m2 = sdceval.evaluate(dsw, _release(dsw), "individual_risk", survey=False)
    np.testing.assert_allclose(m2.per_record, 1 / fk)
    assert m2.details["population"].startswith("the file itself (survey=false")
    # the population risk of a sample is lower than its sample risk
    assert sdceval.evaluate(dsw, _release(dsw), "individual_risk").value < m.value


def test_measure_refusals():
    """Kinds without QI cells, a missing household role and out-of-range parameters
    are refused with one clear line."""
    df = _frame()
    ds = sdceval.as_dataset(df, qi=["a", "b", "c"], weight="w")
    rel = _release(ds)
    with pytest.raises(SdcevalError, match="--household"):
        sdceval.evaluate(ds, rel, "household_risk")
    with pytest.raises(SdcevalError, match="--household"):
        get_measure("household_risk").check_data(ds)
    with pytest.raises(SdcevalError, match="alpha"):
        sdceval.evaluate(ds, rel, "individual_risk", alpha=1.5)
    with pytest.raises(SdcevalError, match="method"):
        sdceval.evaluate(ds, rel, "individual_risk", method="exakt")
    for name in ("individual_risk", "household_risk"):
        spec = get_measure(name)
        # perturbative releases are read with numeric keys (tests/test_population_keys.py)
        assert set(spec.kinds) == {"generalized", "bucketized", "composite", "perturbative"}
        assert spec.larger_is_worse and spec.category == "risk"
        with pytest.raises(SdcevalError, match="external"):
            spec.check_data(ds, kind="external", method="external")
    num = sdceval.as_dataset(df.assign(v=np.arange(len(df)) * 1.5), qi=["a", "b"],
                             numeric=["v"], weight="w")
    pert = Release.perturbative(num, num.frame[["v"]] + 1.0, method="noise")
    # the QIs it does not publish are missing (tests/test_population_keys.py)
    m = sdceval.evaluate(num, pert, "individual_risk")
    assert m.details["unpublished_keys"] == ["a", "b"]


@pytest.mark.filterwarnings("ignore:mondrian. no split")
def test_compare_matches_on_individual_risk():
    """``compare`` can match methods on the global risk (a risk measure, lower is
    better) of a weighted file."""
    df = _frame(n=120, seed=3)
    ds = sdceval.as_dataset(df, qi=["a", "b", "c"], weight="w")
    out = sdceval.compare(ds, methods=["mondrian"], risk="individual_risk",
                          target=0.003, curves=False, utilities="discernibility")
    assert out.risk_measure == "individual_risk"
    (match,) = out.matches
    assert match.method == "mondrian" and match.evaluations > 1
    # the matched release's global risk is at or below the target, read independently
    rel = sdceval.anonymize(ds, "mondrian", **{match.parameter: match.value})
    got = sdceval.evaluate(ds, rel, "individual_risk").value
    assert got == pytest.approx(match.risk, rel=1e-12)


@pytest.mark.parametrize("method, params, kind", [
    ("mdav+recode", {"k": 5}, "composite"), ("bucketization", {}, "bucketized"),
    ("mondrian", {"k": 3}, "generalized")])
def test_every_kind_with_qi_cells(method, params, kind):
    """Whole-file (composite), bucketized (exact QIs) and generalized releases: the
    measure is the kernel on the release's QI cells and the data set's weights."""
    ds = contract_data()
    rel = sdceval.anonymize(ds, method, **params)
    assert rel.kind == kind
    m = sdceval.evaluate(ds, rel, "individual_risk")
    r, _, _ = individual_risks(release_keys(ds, rel), ds.weights)
    np.testing.assert_allclose(m.per_record, r, rtol=1e-13)
    if kind == "bucketized":   # the QIs are published exactly
        exact = np.column_stack([ds.codes(q) for q in ds.schema.qis])
        np.testing.assert_allclose(r, individual_risks(exact, ds.weights)[0], rtol=1e-13)
    h = sdceval.evaluate(ds, rel, "household_risk")
    np.testing.assert_allclose(h.per_record, household_risks(r, ds.households), rtol=1e-13)
    assert h.value >= m.value
