"""Scale invariance of the perturbative methods and numeric measures at the edges of the
float64 range (issue 6 §1): finite values near 1e300 or 1e-300 must give the same groups,
the same relative noise and the same measure values as ordinary data, or a clear
`SdcevalError`; never NaN/inf, a column silently left unmasked or a different number.
"""
import numpy as np
import pandas as pd
import pytest

import sdceval
from sdceval import Dataset, Release, Schema, SdcevalError

COLS = ["a", "b", "c"]
# column-wise scale factors applied to the same data
SCALES = {
    "big": (1e290, 1e290, 1e290),
    "tiny": (1e-290, 1e-290, 1e-290),
    "mixed": (1e300, 1e-300, 1.0),
}


def make_dataset(x: np.ndarray, name: str = "x") -> Dataset:
    frame = pd.DataFrame(x, columns=COLS)
    return Dataset(frame, Schema.from_roles(frame, numeric=COLS), name=name)


@pytest.fixture(scope="module")
def base() -> np.ndarray:
    rng = np.random.default_rng(6)
    n = 240
    a = rng.normal(50, 10, n)
    return np.column_stack([a, 2 * a + rng.normal(0, 5, n), rng.gamma(2.0, 3.0, n)])


def scaled(x: np.ndarray, scale: str) -> tuple[np.ndarray, np.ndarray]:
    f = np.asarray(SCALES[scale])
    return x * f, f


def masked(ds: Dataset, method: str, **params) -> np.ndarray:
    y = sdceval.anonymize(ds, method, seed=3, **params).numeric_matrix(COLS)
    assert np.isfinite(y).all(), f"{method} produced non-finite values"
    return y


def external(y: np.ndarray) -> Release:
    return Release(pd.DataFrame(y, columns=COLS), method="test", kind="external")


# -- methods ----------------------------------------------------------------------------
@pytest.mark.parametrize("scale", SCALES)
def test_mdav_same_groups_and_means(base, scale):
    xs, f = scaled(base, scale)
    ref = sdceval.anonymize(make_dataset(base), "mdav", k=5)
    rel = sdceval.anonymize(make_dataset(xs), "mdav", k=5)
    assert np.array_equal(rel.classes, ref.classes)
    y = rel.numeric_matrix(COLS)
    assert np.isfinite(y).all()
    np.testing.assert_allclose(y / f, ref.numeric_matrix(COLS), rtol=1e-12)


@pytest.mark.parametrize("scale", SCALES)
def test_noise_same_relative_noise(base, scale):
    xs, f = scaled(base, scale)
    e_ref = masked(make_dataset(base), "noise", gamma=0.5) - base
    e = (masked(make_dataset(xs), "noise", gamma=0.5) - xs) / f
    # every column gets noise, at sd ~ sqrt(gamma) * sd of the column
    ratio = e.std(axis=0) / base.std(axis=0)
    assert np.all(np.abs(ratio - np.sqrt(0.5)) < 0.15), ratio
    np.testing.assert_allclose(e, e_ref, rtol=1e-6, atol=1e-9 * base.std(axis=0).min())


@pytest.mark.parametrize("scale", SCALES)
@pytest.mark.parametrize("shift", [0.0, 0.2])
def test_multiplicative_noise_same_relative_values(base, scale, shift):
    xs, f = scaled(base, scale)
    ref = masked(make_dataset(base), "multiplicative_noise", s=0.4, shift=shift)
    y = masked(make_dataset(xs), "multiplicative_noise", s=0.4, shift=shift)
    assert ((y / f).std(axis=0) > 0).all()    # no column collapsed to a constant
    np.testing.assert_allclose(y / f, ref, rtol=1e-9, atol=1e-9 * np.abs(ref).max())


@pytest.mark.parametrize("scale", SCALES)
@pytest.mark.parametrize("tbp", [0.0, 5.0])
def test_rank_swap_same_swaps(base, scale, tbp):
    xs, f = scaled(base, scale)
    ref = masked(make_dataset(base), "rank_swap", p=0.1, top_bottom_percent=tbp)
    y = masked(make_dataset(xs), "rank_swap", p=0.1, top_bottom_percent=tbp)
    np.testing.assert_allclose(y / f, ref, rtol=1e-12)


def test_near_the_float_limit_finite_or_clear_error(base):
    # values up to ~1.6e308: any release must be finite, or the method must say why not
    x = base / np.abs(base).max(axis=0) * 1.6e308
    ds = make_dataset(x)
    for method, params in [("mdav", {"k": 5}), ("noise", {"gamma": 3.0}),
                           ("multiplicative_noise", {"s": 1.0}), ("rank_swap", {"p": 0.1}),
                           ("rank_swap", {"p": 0.1, "top_bottom_percent": 10.0})]:
        try:
            rel = sdceval.anonymize(ds, method, seed=0, **params)
        except SdcevalError as err:
            assert "range" in str(err) and any(f"'{c}'" in str(err) for c in COLS), \
                str(err)
            continue
        y = rel.numeric_matrix(COLS)
        assert np.isfinite(y).all(), method
    # MDAV's group means never leave the range of the data, so it always succeeds
    y = sdceval.anonymize(ds, "mdav", k=5).numeric_matrix(COLS)
    assert np.isfinite(y).all()


def test_noise_overflow_is_a_clear_error():
    x = np.column_stack([1.7e308 * np.linspace(-1.0, 1.0, 50), np.arange(50.0),
                         np.arange(50.0) ** 2])
    with pytest.raises(SdcevalError, match="'a'.*range"):
        sdceval.anonymize(make_dataset(x), "noise", gamma=100.0, seed=0)


# -- measures ---------------------------------------------------------------------------
@pytest.fixture(scope="module")
def releases(base):
    ds = make_dataset(base)
    return {m: masked(ds, m, **p) for m, p in
            [("mdav", {"k": 5}), ("noise", {"gamma": 0.5}), ("rank_swap", {"p": 0.1})]}


@pytest.mark.parametrize("scale", SCALES)
@pytest.mark.parametrize("measure,params", [
    ("il1s", {}), ("propensity", {}), ("propensity", {"model": "interactions"}),
    ("emd", {"n_clusters": 10}), ("linkage_risk", {})])
def test_measures_scale_invariant(base, releases, scale, measure, params):
    xs, f = scaled(base, scale)
    ds, ds_s = make_dataset(base), make_dataset(xs)
    for method, y in releases.items():
        ref = sdceval.evaluate(ds, external(y), measure, **params)
        m = sdceval.evaluate(ds_s, external(y * f), measure, **params)
        assert np.isfinite(m.value), (measure, method)
        assert m.value == pytest.approx(ref.value, rel=1e-6, abs=1e-12), (measure, method)
        if ref.per_record is not None:
            np.testing.assert_allclose(m.per_record, ref.per_record, rtol=1e-6, atol=1e-12)


@pytest.mark.parametrize("measure", ["il1s", "propensity", "emd"])
def test_measures_release_far_outside_the_original_scale(base, measure):
    # a release whose values are ~1e300 times the original's: a huge loss, or a clear
    # error, but never NaN
    ds = make_dataset(base * 1e-300)
    try:
        m = sdceval.evaluate(ds, external(base * 1e5), measure)
    except SdcevalError as err:
        assert "range" in str(err), str(err)
        return
    assert not np.isnan(m.value)
