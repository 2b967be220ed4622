"""ci_overlap: confidence-interval overlap and standardized coefficient difference of a GLM
fitted on the original and on the release (Karr et al. 2006; synthpop's
compare.fit.synds)."""
import numpy as np
import pytest

import sdceval
from sdceval import Release, SdcevalError
from analyst_data import bootstrap, mixed, publishable, synthetic

pytest.importorskip("statsmodels")

Z = 1.959963984540054   # qnorm(0.975), synthpop's quantile


@pytest.fixture(scope="module")
def ds():
    return mixed(1000, seed=0)


def _ols(frame):
    """β and se of y ~ 1 + x + age by hand (the gaussian GLM's: scale RSS / (n - p))."""
    x = np.column_stack([np.ones(len(frame)), frame["x"], frame["age"]]).astype(float)
    y = frame["y"].to_numpy(float)
    beta, *_ = np.linalg.lstsq(x, y, rcond=None)
    resid = y - x @ beta
    cov = np.linalg.inv(x.T @ x) * (resid @ resid) / (len(y) - 3)
    return beta, np.sqrt(np.diag(cov))


def test_identical_data_overlap_exactly_one(ds):
    for rel in (synthetic(ds, publishable(ds), method="copy"),
                Release.external(ds, ds.frame, method="copy.csv")):
        m = sdceval.evaluate(ds, rel, "ci_overlap")
        assert m.value == 1.0
        assert all(c["overlap"] == 1.0 and c["std_diff"] == 0.0
                   for c in m.details["coefficients"])
        assert m.details["mean_abs_std_diff"] == 0.0


def test_default_formula_is_stated(ds):
    m = sdceval.evaluate(ds, bootstrap(ds), "ci_overlap")
    assert m.details["formula"] == ('Q("income") ~ Q("age") + Q("sex") + Q("region") + '
                                    'Q("x") + Q("y") + Q("disease")')
    assert m.details["family"] == "binomial"
    assert 0.5 < m.value < 1


def test_matches_karr_and_synthpop_by_hand(ds):
    rel = bootstrap(ds, seed=3)
    b_o, se_o = _ols(ds.frame)
    b_r, se_r = _ols(rel.data)
    inter = np.minimum(b_o + Z * se_o, b_r + Z * se_r) - np.maximum(b_o - Z * se_o,
                                                                    b_r - Z * se_r)
    karr = 0.5 * (inter / (2 * Z * se_o) + inter / (2 * Z * se_r))
    m = sdceval.evaluate(ds, rel, "ci_overlap", formula="y ~ x + age")
    got = [c["overlap"] for c in m.details["coefficients"]]
    np.testing.assert_allclose(got, karr, rtol=1e-9)
    assert m.value == pytest.approx(karr.mean(), rel=1e-9)
    np.testing.assert_allclose([c["std_diff"] for c in m.details["coefficients"]],
                               (b_r - b_o) / se_o, rtol=1e-9)
    assert m.details["mean_abs_std_diff"] == pytest.approx(np.mean(np.abs(b_r - b_o) / se_o))
    # synthpop's default: the release's interval with the original's se
    s = sdceval.evaluate(ds, rel, "ci_overlap", formula="y ~ x + age", release_se="original")
    np.testing.assert_allclose([c["overlap"] for c in s.details["coefficients"]],
                               1 - np.abs(b_r - b_o) / (2 * Z * se_o), rtol=1e-9)


def test_disjoint_intervals_below_zero(ds):
    frame = publishable(ds).copy()
    frame["y"] = frame["y"] + 50 * frame["x"] + 500     # intercept and slope far off
    m = sdceval.evaluate(ds, synthetic(ds, frame), "ci_overlap", formula="y ~ x")
    assert all(c["overlap"] < 0 for c in m.details["coefficients"])
    assert m.value < 0
    assert m.details["mean_abs_std_diff"] > 10


def test_every_kind_reads_cells(ds):
    gen = sdceval.anonymize(ds, "mondrian", k=20)
    m = sdceval.evaluate(ds, gen, "ci_overlap", formula="income ~ C(region) + C(sex) + age")
    assert 0.5 < m.value <= 1 and m.details["family"] == "binomial"
    # a response the release does not publish (y: a generalized release drops it) is
    # read at one midpoint: nothing is estimable, every J counts 0
    m = sdceval.evaluate(ds, gen, "ci_overlap", formula="y ~ x + age")
    assert m.value == 0.0 and len(m.details["not_estimable"]) == 3


def test_absent_level_counts_zero(ds):
    frame = publishable(ds)
    frame = frame[frame["region"] != "west"]
    m = sdceval.evaluate(ds, synthetic(ds, frame), "ci_overlap",
                         formula="y ~ x + C(region)")
    table = {c["term"]: c for c in m.details["coefficients"]}
    assert m.details["not_estimable"] == ["C(region)[T.west]"]
    assert table["C(region)[T.west]"]["overlap"] == 0.0
    assert table["x"]["overlap"] > 0.5


def test_unknown_column_is_named(ds):
    with pytest.raises(SdcevalError, match=r"'salary', not a column.*available: age, sex"):
        sdceval.evaluate(ds, bootstrap(ds), "ci_overlap", formula="salary ~ age + C(sex)")


def test_many_valued_categorical_response_refused(ds):
    with pytest.raises(SdcevalError, match="response 'disease' is categorical with 5"):
        sdceval.evaluate(ds, bootstrap(ds), "ci_overlap", formula="disease ~ x")


def test_fit_that_does_not_converge_is_said(ds):
    frame = publishable(ds).copy()
    frame["income"] = np.where(frame["x"] > frame["x"].median(), ">50K", "<=50K")
    with pytest.raises(SdcevalError, match="did not converge on the release"):
        sdceval.evaluate(ds, synthetic(ds, frame), "ci_overlap", formula="income ~ x")
