"""A small mixed data set whose columns depend on each other, and hand-made synthetic
releases of it, for the analysts' utilities (issue 32 item 4: ci_overlap, s_pmse,
query_error and ml_utility on synthetic releases)."""
import numpy as np
import pandas as pd

import sdceval
from sdceval import Release
from sdceval.core.release import publishable_columns


def mixed(n: int = 2000, seed: int = 0):
    """QIs age (numeric), sex, region; numeric x, y (y depends on x and sex); the
    sensitive disease depends on region; the label income on x and sex."""
    rng = np.random.default_rng(seed)
    sex = rng.choice(["F", "M"], n)
    region = rng.choice(["north", "south", "east", "west"], n)
    age = rng.integers(18, 80, n)
    x = rng.lognormal(3, 0.4, n).round(2)
    y = (2.0 * x + 5.0 * (sex == "M") + 0.1 * age + rng.normal(0, 4, n)).round(2)
    shift = {"north": 0, "south": 1, "east": 2, "west": 3}
    disease = [f"d{(shift[r] + k) % 5}" for r, k in zip(region, rng.integers(0, 2, n))]
    score = 0.08 * (x - x.mean()) + 0.8 * (sex == "M") + rng.logistic(0, 0.6, n)
    income = np.where(score > np.median(score), ">50K", "<=50K")
    frame = pd.DataFrame({"age": age, "sex": sex, "region": region, "x": x, "y": y,
                          "disease": disease, "income": income})
    return sdceval.as_dataset(frame, qi=["age", "sex", "region"], numeric=["x", "y"],
                              sensitive="disease", label="income", name="mixed")


def synthetic(ds, frame: pd.DataFrame, method: str = "boot") -> Release:
    return Release.synthetic(ds, frame.reset_index(drop=True), method=method)


def publishable(ds) -> pd.DataFrame:
    return ds.frame[publishable_columns(ds, "synthetic")]


def bootstrap(ds, size: int | None = None, seed: int = 0) -> Release:
    """A bootstrap sample of the original's publishable columns (same distribution)."""
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, ds.n, ds.n if size is None else size)
    return synthetic(ds, publishable(ds).iloc[idx])


def permuted(ds, columns, seed: int = 0) -> Release:
    """The original with ``columns`` each permuted (their relations to the rest lost)."""
    rng = np.random.default_rng(seed)
    frame = publishable(ds).copy()
    for c in columns:
        frame[c] = frame[c].to_numpy()[rng.permutation(ds.n)]
    return synthetic(ds, frame, method="permuted")
