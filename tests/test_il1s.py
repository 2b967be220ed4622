"""il1s: IL1s information loss (Yancey, Winkler & Creecy 2002)."""
import math

import numpy as np
import pandas as pd
import pytest

import sdceval
from sdceval import Dataset, Release, Schema, SdcevalError


def make(x, y, cols=None):
    x, y = np.asarray(x, float), np.asarray(y, float)
    cols = cols or [f"v{j}" for j in range(x.shape[1])]
    frame = pd.DataFrame(x, columns=cols)
    ds = Dataset(frame, Schema.from_roles(frame, numeric=cols), name="t")
    return ds, Release(pd.DataFrame(y, columns=cols), method="test", kind="external")


def test_hand_example():
    # column sds (n-1): v0 = sd(1,2,3) = 1, v1 = sd(0,10,20) = 10
    x = [[1, 0], [2, 10], [3, 20]]
    y = [[2, 0], [2, 30], [3, 20]]
    m = sdceval.evaluate(*make(x, y), "il1s")
    r2 = math.sqrt(2)
    expected = np.array([1 / r2 + 0, 0 + 20 / (10 * r2), 0]) / 2
    np.testing.assert_allclose(m.per_record, expected)
    assert m.value == pytest.approx(expected.mean())
    assert m.value == pytest.approx(m.per_record.mean())


def test_original_is_zero_and_independent_copy_is_about_0_8():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(20_000, 2))
    assert sdceval.evaluate(*make(x, x), "il1s").value == 0
    m = sdceval.evaluate(*make(x, rng.normal(size=x.shape)), "il1s")
    assert m.value == pytest.approx(math.sqrt(2 / math.pi), abs=0.01)


def test_grows_with_noise():
    ds = sdceval.load_dataset("census")
    vals = [sdceval.evaluate(ds, sdceval.anonymize(ds, "noise", gamma=g, seed=0), "il1s").value
            for g in (0.1, 1.0)]
    assert 0 < vals[0] < vals[1]


def test_errors_name_the_column():
    ds, rel = make([[1, 5], [2, 5], [3, 5]], [[1, 5], [2, 6], [3, 5]], cols=["a", "flat"])
    with pytest.raises(SdcevalError, match="'flat'.*constant"):
        sdceval.evaluate(ds, rel, "il1s")
    gen = Release(pd.DataFrame({"a": ["*"] * 3, "flat": ["*"] * 3}), method="g",
                  kind="generalized", classes=np.zeros(3, dtype=np.int64))
    with pytest.raises(SdcevalError, match="il1s.*generalized"):
        sdceval.evaluate(ds, gen, "il1s")
