"""Correlated noise addition and Höhne's multiplicative noise."""
import numpy as np
import pandas as pd
import pytest

import sdceval
from sdceval import Dataset, Schema, SdcevalError, get_method
from sdceval.methods.noise import covariance_factor, hohne_factors, match_moments


def numeric_dataset(x, extra=None):
    frame = pd.DataFrame(x, columns=[f"v{j}" for j in range(x.shape[1])])
    cols = list(frame.columns)
    if extra is not None:
        frame["id"] = extra
    return Dataset(frame, Schema.from_roles(frame, numeric=cols))


@pytest.fixture(scope="module")
def big_correlated():
    rng = np.random.default_rng(2024)
    n = 20000
    a = rng.normal(10, 3, n)
    x = np.column_stack([a, 2 * a + rng.normal(0, 2, n), rng.gamma(2, 5, n),
                         -a + rng.normal(0, 1, n)])
    return numeric_dataset(x)


# -- correlated noise ------------------------------------------------------------------
@pytest.mark.parametrize("gamma", [0.1, 1.0, 3.0])
def test_noise_covariance_is_one_plus_gamma_sigma(big_correlated, gamma):
    ds = big_correlated
    x = ds.numeric_matrix()
    y = sdceval.anonymize(ds, "noise", gamma=gamma, seed=1).numeric_matrix(ds.schema.numeric)
    sigma = np.cov(x, rowvar=False)
    cov_y = np.cov(y, rowvar=False)
    scale = np.sqrt(np.outer(np.diag(sigma), np.diag(sigma)))
    # relative to the variances: sampling error of a covariance at n=20000 is ~1-2 %
    assert np.abs((cov_y - (1 + gamma) * sigma) / scale).max() < 0.05 * (1 + gamma)
    # the noise itself has covariance gamma * Sigma and is independent of X
    e = y - x
    assert np.abs((np.cov(e, rowvar=False) - gamma * sigma) / scale).max() < 0.05 * gamma
    assert np.abs(e.mean(axis=0) / np.sqrt(np.diag(sigma))).max() < 0.05 * np.sqrt(gamma)


def test_noise_singular_covariance():
    # a constant column and an exactly collinear pair: Sigma is singular
    rng = np.random.default_rng(0)
    a = rng.normal(size=500)
    x = np.column_stack([a, 3 * a, np.full(500, 7.0)])
    ds = numeric_dataset(x)
    y = sdceval.anonymize(ds, "noise", gamma=0.5, seed=0).numeric_matrix(ds.schema.numeric)
    assert np.isfinite(y).all()
    assert (y[:, 2] == 7.0).all()                         # no variance, no noise
    np.testing.assert_allclose(y[:, 1] - x[:, 1], 3 * (y[:, 0] - x[:, 0]), atol=1e-9)
    f = covariance_factor(np.cov(x, rowvar=False))
    np.testing.assert_allclose(f @ f.T, np.cov(x, rowvar=False), atol=1e-10)


@pytest.mark.parametrize("ratio", [1e4, 1e8, 1e12])
def test_noise_protects_every_column_whatever_its_scale(ratio):
    # revenue next to a share: independent columns whose sds differ by `ratio`, plus a
    # small-scale column strongly correlated with the large one
    rng = np.random.default_rng(8)
    n, gamma = 20000, 0.5
    a, b = rng.normal(size=n), rng.normal(size=n)
    x = np.column_stack([1e6 * a, 1e6 / ratio * b,
                         1e6 / ratio * (0.8 * a + 0.6 * rng.normal(size=n))])
    ds = numeric_dataset(x)
    e = sdceval.anonymize(ds, "noise", gamma=gamma, seed=2).numeric_matrix(
        ds.schema.numeric) - x
    # noise sd = sqrt(gamma) * sd on every column (sampling error ~1 % at n = 20000)
    np.testing.assert_allclose(e.std(axis=0) / x.std(axis=0), np.sqrt(gamma), rtol=0.03)
    # and the noise has the data's correlation structure
    np.testing.assert_allclose(np.corrcoef(e, rowvar=False), np.corrcoef(x, rowvar=False),
                               atol=0.03)


def test_noise_reproducible_and_input_untouched(small_numeric):
    ds = small_numeric
    before = ds.frame.copy()
    a = sdceval.anonymize(ds, "noise", gamma=0.5, seed=7)
    b = sdceval.anonymize(ds, "noise", gamma=0.5, seed=7)
    c = sdceval.anonymize(ds, "noise", gamma=0.5, seed=8)
    pd.testing.assert_frame_equal(a.data, b.data)
    assert not a.data["a"].equals(c.data["a"])
    pd.testing.assert_frame_equal(ds.frame, before)
    assert a.kind == "perturbative" and "name" not in a.data and a.dropped == ("name",)
    assert a.params == {"gamma": 0.5, "seed": 7}


# -- multiplicative noise ---------------------------------------------------------------
def test_hohne_factors_signs_per_record():
    f, signs = hohne_factors(1000, 5, 0.3, 0.0, np.random.default_rng(3))
    dev = f - 1
    assert set(np.unique(signs)) == {-1.0, 1.0}
    # one sign per record, shared by all its attributes
    assert ((np.sign(dev) == signs[:, None]) | (dev == 0)).all()
    assert 0.4 < (signs > 0).mean() < 0.6
    # |N(0, s)| has mean s * sqrt(2 / pi)
    assert abs(np.abs(dev).mean() - 0.3 * np.sqrt(2 / np.pi)) < 0.01


def test_hohne_factors_shift_is_bimodal():
    f, signs = hohne_factors(20000, 2, 0.05, 0.2, np.random.default_rng(3))
    dev = (f - 1) * signs[:, None]          # f_ij = N(0.2, 0.05), not folded
    assert abs(dev.mean() - 0.2) < 0.005 and abs(dev.std() - 0.05) < 0.005
    assert (np.abs(f - 1) > 0.02).mean() > 0.99   # factors stay away from 1


def test_multiplicative_noise_release(small_numeric):
    ds = small_numeric
    x = ds.numeric_matrix()
    rel = sdceval.anonymize(ds, "multiplicative_noise", s=0.4, seed=11)
    y = rel.numeric_matrix(ds.schema.numeric)
    # first and second moments kept exactly (up to rounding)
    np.testing.assert_allclose(y.mean(axis=0), x.mean(axis=0), rtol=0, atol=1e-9)
    np.testing.assert_allclose(y.var(axis=0), x.var(axis=0), rtol=1e-9)
    # the release is the affine rescaling of x * (1 + sign_i f_ij) drawn from the seed
    factors, signs = hohne_factors(*x.shape, 0.4, 0.0, np.random.default_rng(11))
    np.testing.assert_allclose(y, match_moments(x * factors, x), rtol=1e-12, atol=1e-9)
    # per record, all attributes moved the same way before rescaling
    raw = x * factors
    assert ((np.sign(raw / x - 1) == signs[:, None]) | (raw == x)).all()
    assert not np.allclose(y, x)


def test_multiplicative_noise_reproducible(small_numeric):
    a = sdceval.anonymize(small_numeric, "multiplicative_noise", s=0.5, seed=3)
    b = sdceval.anonymize(small_numeric, "multiplicative_noise", s=0.5, seed=3)
    c = sdceval.anonymize(small_numeric, "multiplicative_noise", s=0.5, seed=4)
    pd.testing.assert_frame_equal(a.data, b.data)
    assert not a.data.equals(c.data)


def test_match_moments_constant_column():
    x = np.column_stack([np.arange(5.0), np.full(5, 2.0)])
    y = x * np.array([[1.1, 1.0], [0.9, 1.2], [1.3, 0.8], [1.0, 1.0], [0.7, 1.1]])
    out = match_moments(y, x)
    assert (out[:, 1] == 2.0).all()
    np.testing.assert_allclose(out[:, 0].std(), x[:, 0].std())


# -- errors and registry ------------------------------------------------------------------
@pytest.mark.parametrize("method,params,name", [
    ("noise", {"gamma": 0}, "gamma"), ("noise", {"gamma": -1}, "gamma"),
    ("noise", {"gamma": "abc"}, "gamma"), ("noise", {"gamma": 1000}, "gamma"),
    ("multiplicative_noise", {"s": 0}, "'s'"), ("multiplicative_noise", {"s": -0.5}, "'s'"),
    ("multiplicative_noise", {"shift": -1}, "shift")])
def test_bad_parameters_name_the_parameter(small_numeric, method, params, name):
    with pytest.raises(SdcevalError, match=name):
        get_method(method).apply(small_numeric, params, seed=0)


def test_registry_entries():
    for name, tuned, grid in [("noise", "gamma", {0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5,
                                                   1.0, 3.0}),
                              ("multiplicative_noise", "s",
                               {0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.9, 1.0})]:
        spec = get_method(name)
        assert spec.family == "perturbative" and spec.random
        p = spec.tunable
        assert p.name == tuned and p.protection == "increasing" and p.scale == "log"
        assert set(p.grid) == grid
