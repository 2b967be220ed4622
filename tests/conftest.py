import numpy as np
import pandas as pd
import pytest

from sdceval import Dataset, Schema


@pytest.fixture
def small_numeric():
    """A small numeric data set with correlated columns (seeded)."""
    rng = np.random.default_rng(12345)
    n = 300
    a = rng.normal(50, 10, n)
    frame = pd.DataFrame({"a": a, "b": 2 * a + rng.normal(0, 5, n),
                          "c": rng.gamma(2.0, 3.0, n), "name": [f"r{i}" for i in range(n)]})
    return Dataset(frame, Schema.from_roles(frame, numeric=["a", "b", "c"]), name="small")
