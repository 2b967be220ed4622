"""query_error and ml_utility on synthetic releases (issue 32 item 4): new records with no
record correspondence, any row count."""
import numpy as np
import pytest

import sdceval
from sdceval import SdcevalError
from analyst_data import bootstrap, mixed, permuted, publishable, synthetic


@pytest.fixture(scope="module")
def ds():
    return mixed(2000, seed=0)


def test_query_error_bootstrap_close_to_original(ds):
    boot = sdceval.evaluate(ds, bootstrap(ds), "query_error", n_queries=300).value
    scrambled = sdceval.evaluate(ds, permuted(ds, ["age", "sex", "region", "x", "y",
                                                   "disease"]),
                                 "query_error", n_queries=300).value
    assert boot < 25          # sampling error of counts of tens of records
    assert scrambled > 2 * boot


def test_query_error_scales_counts_by_row_count(ds):
    """COUNT answers of a synthetic release of 3n records are scaled by n / 3n: its
    error is that of a bootstrap of n records (or smaller), not ~200 %."""
    big = sdceval.evaluate(ds, bootstrap(ds, size=3 * ds.n, seed=1), "query_error",
                           n_queries=300)
    small = sdceval.evaluate(ds, bootstrap(ds, size=ds.n // 2, seed=2), "query_error",
                             n_queries=300)
    assert big.value < 20 and small.value < 30
    assert big.details["scale"] == pytest.approx(1 / 3)
    assert small.details["scale"] == pytest.approx(2.0)


def test_query_error_of_a_copy_is_zero(ds):
    copy = synthetic(ds, publishable(ds), method="copy")
    assert sdceval.evaluate(ds, copy, "query_error", n_queries=200).value == pytest.approx(
        0.0, abs=1e-9)


def test_ml_utility_bootstrap_close_permuted_label_worse(ds):
    boot = sdceval.evaluate(ds, bootstrap(ds, size=int(1.5 * ds.n)), "ml_utility")
    assert boot.details["n_train_release"] == int(1.5 * ds.n)
    assert boot.details["auc_original"] > 0.7          # the label is predictable
    assert abs(boot.value) < 0.03
    shuffled = sdceval.evaluate(ds, permuted(ds, ["income"]), "ml_utility")
    assert shuffled.value > 0.15                       # no relation left to learn


def test_ml_utility_copy_loses_nothing_on_the_sensitive_target(ds):
    copy = synthetic(ds, publishable(ds), method="copy")
    m = sdceval.evaluate(ds, copy, "ml_utility", target="sensitive")
    # trained on every record (the test records among them): at least as good
    assert m.value <= 1e-9


def test_synthetic_value_outside_the_domain_is_refused(ds):
    frame = publishable(ds).copy()
    frame.loc[3, "income"] = "unknown"
    rel = synthetic(ds, frame)
    with pytest.raises(SdcevalError, match="income.*outside the original"):
        sdceval.evaluate(ds, rel, "ml_utility")
    assert np.isfinite(sdceval.evaluate(ds, rel, "query_error", n_queries=50).value)
