"""Time `reidentification` and `attribute_inference` (SPEC §4, "Risk on every release")
on 100 000 records of a synthetic mixed data set, thread budget 1.

Data: two numeric attributes (lognormal income and a spending that depends on it and on
education), four QIs with hierarchies (age 17..90 in intervals of 5/10/20, region 16
leaves, education 16 leaves, sex) and a sensitive disease (12 values, depending on
education).  Releases: MDAV k=5 (perturbative: a KD-tree on the distinct released
points, k duplicates each) and Mondrian k=5 (generalized: overlapping ranges per
attribute, so the bitset compatibility test).  Each figure is the best of ``repeats``
runs (other processes inflate single timings); making the releases is not timed.
MDAV's release does not publish the sensitive attribute (attribute_inference is 0 at
once), so a third line times an external table of MDAV's values plus the sensitive
column: the same KD-tree, then the sensitive sums over the nearest points.  Every
record is linked (``sample=0``): the exact path, not the sample large tables get.

Run:  python benchmarks/bench_reidentification.py [n] [repeats]
"""
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout

import sdceval  # noqa: E402
from sdceval import Dataset, Hierarchy, Release, Schema  # noqa: E402
from sdceval.core import threads  # noqa: E402

MEASURES = ("reidentification", "attribute_inference")


def mixed_data(n: int, seed: int = 0) -> Dataset:
    rng = np.random.default_rng(seed)
    edu = rng.integers(0, 16, n)
    income = rng.lognormal(10, 0.6, n) * (1 + edu / 16)
    frame = pd.DataFrame({
        "age": rng.integers(17, 91, n),
        "region": [f"r{i}" for i in rng.integers(0, 16, n)],
        "education": [f"e{i}" for i in edu],
        "sex": rng.choice(["F", "M"], n),
        "income": income, "spend": income * rng.uniform(0.3, 0.9, n),
        "disease": [f"d{(e + r) % 12}" for e, r in zip(edu, rng.integers(0, 4, n))]})
    hierarchies = {
        "age": Hierarchy.intervals(frame["age"], [5, 10, 20], name="age"),
        "region": Hierarchy([[f"r{i}", f"R{i // 4}", "*"] for i in range(16)],
                            name="region"),
        "education": Hierarchy([[f"e{i}", f"g{i // 4}", f"G{i // 8}", "*"]
                                for i in range(16)], name="education")}
    schema = Schema.from_roles(frame, qi=["age", "region", "education", "sex"],
                               sensitive="disease", numeric=["income", "spend"],
                               hierarchies=hierarchies)
    return Dataset(frame, schema, name="bench-mixed")


def main(n: int = 100_000, repeats: int = 3) -> None:
    threads.set_budget(1)
    ds = mixed_data(n)
    releases = {}
    for method, params in (("mdav", {"k": 5}), ("mondrian", {"models": ["k=5"]})):
        t0 = time.perf_counter()
        releases[method] = sdceval.anonymize(ds, method, **params)
        made = time.perf_counter() - t0
        print(f"{method} k=5 release made in {made:.1f} s (not timed below)")
    frame = releases["mdav"].data.assign(disease=ds.frame["disease"])
    releases["mdav+sens"] = Release.external(ds, frame, method="mdav+sensitive")
    for method, rel in releases.items():
        for name in MEASURES:
            times = []
            for _ in range(repeats):
                t0 = time.perf_counter()
                m = sdceval.evaluate(ds, rel, name, sample=0)   # every record
                times.append(time.perf_counter() - t0)
            how = m.details.get("compatibility", "sensitive not published")
            print(f"{name:20s} n={n} {method:9s} k=5: {min(times):6.3f} s  "
                  f"value={m.value:.4f}  ({how})")


if __name__ == "__main__":
    main(*[int(a) for a in sys.argv[1:]])
