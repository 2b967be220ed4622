"""propensity: propensity-score utility loss (Woo et al.; Domingo-Ferrer et al. Eq. 1)."""
import warnings

import numpy as np
import pandas as pd
import pytest

import sdceval
from sdceval import Dataset, Release, Schema, SdcevalError
from sdceval.measures.propensity import MODELS, model_terms

COLS = ["a", "b", "c"]


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(1)
    x = rng.normal(size=(400, 3))
    x[:, 1] = x[:, 0] + 0.3 * x[:, 1]  # a correlated pair
    frame = pd.DataFrame(x, columns=COLS)
    return Dataset(frame, Schema.from_roles(frame, numeric=COLS), name="t"), x


def release(y):
    return Release(pd.DataFrame(y, columns=COLS), method="test", kind="external")


def ups(ds, y, **params):
    return sdceval.evaluate(ds, release(y), "propensity", **params)


def test_model_terms():
    z = np.array([[1.0, 2.0, 3.0]])
    np.testing.assert_array_equal(model_terms(z, "linear"), [[1, 2, 3]])
    np.testing.assert_array_equal(model_terms(z, "quadratic"), [[1, 2, 3, 1, 4, 9]])
    np.testing.assert_array_equal(model_terms(z, "pairwise"), [[1, 2, 3, 2, 3, 6]])
    np.testing.assert_array_equal(model_terms(z, "interactions"),
                                  [[1, 2, 3, 1, 4, 9, 2, 3, 6]])


@pytest.mark.parametrize("model", MODELS)
def test_original_against_itself_is_zero(model):
    ds = sdceval.load_dataset("census")
    m = sdceval.evaluate(ds, Release(ds.frame, method="identity", kind="external"),
                         "propensity", model=model)
    assert m.value < 1e-12
    assert m.per_record.max() < 1e-12


def test_separated_tables_give_a_quarter(data):
    ds, x = data
    for ridge in (0.01, 0.0):
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # fit warnings are recorded, never printed
            m = ups(ds, x + 10.0, ridge=ridge)
        assert 0.249 < m.value <= 0.25
    assert m.per_record.mean() == pytest.approx(m.value)


def test_each_model_sees_what_it_models(data):
    ds, x = data
    rng = np.random.default_rng(7)
    # doubled spread around the mean: main effects cannot notice it, squares do
    spread = x.mean(axis=0) + 2 * (x - x.mean(axis=0))
    values = {mod: ups(ds, spread, model=mod).value for mod in MODELS}
    assert values["linear"] < 1e-12
    assert values["quadratic"] > 0.05 and values["interactions"] > 0.05
    # one column permuted: marginals intact, correlation destroyed -> only products see it
    perm = x.copy()
    perm[:, 0] = rng.permutation(perm[:, 0])
    values = {mod: ups(ds, perm, model=mod).value for mod in MODELS}
    assert values["linear"] < 1e-12 and values["quadratic"] < 1e-12
    assert values["pairwise"] > 0.01 and values["interactions"] > 0.01


def test_ridge_shrinks_towards_a_half(data):
    ds, x = data
    rng = np.random.default_rng(8)
    y = x + rng.normal(0, 0.5, x.shape)
    vals = [ups(ds, y, ridge=r).value for r in (0.0, 0.01, 1.0)]
    assert vals[0] > vals[1] > vals[2] > 0


def test_default_reproduces_paper_ranking():
    # Domingo-Ferrer et al. Table 1 at the paper's matched parameters
    cases = {"census": ([("mdav", {"k": 5}), ("rank_swap", {"p": 0.2}),
                         ("multiplicative_noise", {"s": 0.5}), ("noise", {"gamma": 1.0})]),
             "eia": ([("mdav", {"k": 5}), ("noise", {"gamma": 0.05}),
                      ("multiplicative_noise", {"s": 0.3}), ("rank_swap", {"p": 0.08})])}
    for name, ranking in cases.items():
        ds = sdceval.load_dataset(name)
        vals = [sdceval.evaluate(ds, sdceval.anonymize(ds, meth, seed=0, **p),
                                 "propensity").value for meth, p in ranking]
        assert vals == sorted(vals), (name, vals)


def test_constant_attribute_is_harmless(data):
    ds, x = data
    frame = pd.DataFrame(np.c_[x, np.ones(len(x))], columns=COLS + ["k"])
    ds2 = Dataset(frame, Schema.from_roles(frame, numeric=COLS + ["k"]), name="t2")
    rel = Release(frame.copy(), method="identity", kind="external")
    assert sdceval.evaluate(ds2, rel, "propensity", model="interactions").value < 1e-12


def test_errors(data):
    ds, x = data
    with pytest.raises(SdcevalError, match="model"):
        ups(ds, x, model="cubic")
    with pytest.raises(SdcevalError, match="ridge"):
        ups(ds, x, ridge=-1)
    gen = Release(pd.DataFrame({c: ["*"] * len(x) for c in COLS}), method="mondrian",
                  kind="generalized", classes=np.zeros(len(x), dtype=np.int64))
    with pytest.raises(SdcevalError, match="propensity.*generalized"):
        sdceval.evaluate(ds, gen, "propensity")
    text = release(x).data.astype(object)
    text.loc[0, "b"] = "12k"
    with pytest.raises(SdcevalError, match="'b'"):
        sdceval.evaluate(ds, Release(text, method="x", kind="external"), "propensity")


@pytest.mark.parametrize("model,far", [("quadratic", 1e6), ("pairwise", 1e20),
                                       ("interactions", 1e20)])
def test_release_far_outside_the_original_is_refused(data, model, far):
    # one released value `far` sds out makes terms so large that the fit's Hessian is
    # singular in float64: the solver used to return 4.2e-4 unconverged, or exactly 0
    # (indistinguishable!), instead of saying it cannot compute the score
    ds, x = data
    y = x.copy()
    y[0, 0] = far
    with pytest.raises(SdcevalError, match="propensity.*outside the original's range"):
        ups(ds, y, model=model)
    y[0, 0] = 1e3      # far, but computable: that record is separated, p = 1
    m = ups(ds, y, model=model)
    assert m.details["converged"] and m.value > 0.24 / (2 * len(x))
