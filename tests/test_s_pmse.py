"""s_pmse: the standardized propensity-score MSE of Snoke et al. (2018), synthpop's
S_pMSE = pMSE / (k (1 - c)^2 c / N), on releases of every kind and size."""
import numpy as np
import pytest

import sdceval
from sdceval import SdcevalError
from sdceval.measures.attribute_disclosure import suppressed_release
from analyst_data import bootstrap, mixed, publishable, synthetic


@pytest.fixture(scope="module")
def ds():
    return mixed(1000, seed=0)


def _dummies(ds, frame):
    """The linear design by hand: numbers as they are, each categorical column's
    indicators of its levels but the first (levels present in the stacked tables)."""
    cols = []
    for c in ["age", "sex", "region", "x", "y", "disease", "income"]:
        v = frame[c].to_numpy()
        if c in ("age", "x", "y"):
            cols.append(v.astype(float)[:, None])
        else:
            levels = sorted(set(v))
            cols.append(np.stack([v == lev for lev in levels[1:]], axis=1).astype(float))
    return np.hstack(cols)


def test_value_is_pmse_over_its_null_expectation_sizes_differ(ds):
    """Against an independent fit (scikit-learn, no penalty) of the same main effects
    on the stacked tables of 1000 and 1500 records: pMSE, k, c and the ratio."""
    from sklearn.linear_model import LogisticRegression

    rel = bootstrap(ds, size=1500, seed=4)
    m = sdceval.evaluate(ds, rel, "s_pmse")
    stacked = np.vstack([_dummies(ds, ds.frame), _dummies(ds, rel.data)])
    t = np.r_[np.zeros(ds.n), np.ones(rel.n)]
    z = (stacked - stacked.mean(0)) / stacked.std(0)
    fit = LogisticRegression(C=np.inf, tol=1e-12, max_iter=10_000).fit(z, t)
    p = fit.predict_proba(z)[:, 1]
    N, c, k = 2500, 0.6, stacked.shape[1]
    pmse = np.mean((p - c) ** 2)
    assert m.details["k"] == k == 12 and m.details["c"] == pytest.approx(c)
    assert m.details["pMSE"] == pytest.approx(pmse, rel=1e-5)
    assert m.value == pytest.approx(pmse / (k * (1 - c) ** 2 * c / N), rel=1e-5)
    assert m.details["converged"] and m.per_record is None


def test_about_one_for_a_release_drawn_from_the_original():
    """synthpop's null: the release is drawn from the original (here: a bootstrap);
    S_pMSE has expectation 1 (sd about sqrt(2/k) = 0.4 per seed)."""
    vals = [sdceval.evaluate(d, bootstrap(d, size=1000, seed=s), "s_pmse").value
            for s, d in enumerate(mixed(1000, seed=s) for s in range(12))]
    assert 0.7 < np.mean(vals) < 1.3


def test_independent_sample_of_the_population_is_about_one_over_one_minus_c():
    """An independent sample of the same population varies around the population,
    not around the original: pMSE is 1 / (1 - c) times synthpop's null expectation
    (2.5 at 1000 original and 1500 released records) — the reading the docs state."""
    vals = [sdceval.evaluate(d, synthetic(d, publishable(mixed(1500, seed=100 + s))),
                             "s_pmse").value
            for s, d in enumerate(mixed(1000, seed=s) for s in range(10))]
    assert 2.0 < np.mean(vals) < 3.0


def test_copy_is_zero_shifted_column_large(ds):
    copy = sdceval.evaluate(ds, synthetic(ds, publishable(ds)), "s_pmse")
    assert copy.value == pytest.approx(0.0, abs=1e-8)
    frame = publishable(ds).copy()
    frame["x"] = frame["x"] + frame["x"].std()
    shifted = sdceval.evaluate(ds, synthetic(ds, frame), "s_pmse")
    assert shifted.value > 50


def test_pairwise_has_no_products_within_a_factor(ds):
    """``model=pairwise`` = R's ``t ~ .^2``: main effects plus products of columns of
    two different attributes (3 numbers, factors of 2, 4, 5, 2 levels: 12 main
    effects, 57 products).  k counts the identified ones, as R's non-NA coefficients:
    each region holds 2 of the 5 diseases, so the 8 (region, disease) cells are
    saturated by the main effects and the 12 region x disease products are aliased."""
    m = sdceval.evaluate(ds, bootstrap(ds, seed=1), "s_pmse", model="pairwise")
    assert m.details["n_terms"] == 12 + 57
    assert m.details["k"] == 12 + 57 - 12
    assert 0 < m.value < 3


def test_every_kind_of_release(ds):
    for rel in (sdceval.anonymize(ds, "mondrian", k=20), sdceval.anonymize(ds, "noise"),
                sdceval.anonymize(ds, "anatomy", l=3, seed=0)):
        m = sdceval.evaluate(ds, rel, "s_pmse")
        assert np.isfinite(m.value) and m.value > 1, rel.kind
    # the draws within generalized cells (here: every QI suppressed) follow the seed
    gen = suppressed_release(ds)
    a = sdceval.evaluate(ds, gen, "s_pmse", seed=1).value
    assert a == sdceval.evaluate(ds, gen, "s_pmse", seed=1).value
    assert a != sdceval.evaluate(ds, gen, "s_pmse", seed=2).value


def test_too_large_a_model_is_refused(ds):
    with pytest.raises(SdcevalError, match="70 coefficients.*max_params=50.*model=linear"):
        sdceval.evaluate(ds, bootstrap(ds), "s_pmse", model="pairwise", max_params=50)
