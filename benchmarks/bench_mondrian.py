"""Mondrian speed and memory against the targets of issue 3.

    /work/venv/bin/python benchmarks/bench_mondrian.py [--n 1000000] [--repeats 3]

Targets: Mondrian k=10 on Adult (45222 records) <= 2 s; with ℓ=4 (probabilistic),
t=0.15 (JS) or δ=1.5 <= 5 s; 1 000 000 synthetic Adult-like records with k=10 <= 60 s
and peak memory < 4 GB.  Times are wall-clock seconds of ``anonymize`` (the median of
``--repeats`` runs for Adult); memory is the process's peak resident set size
(``resource.getrusage``), which includes building the data set.

The synthetic records are Adult rows drawn with replacement (keeps the QI/occupation
correlations and Adult's hierarchies) with age jittered by up to ±3 years inside
Adult's range, so the table is larger *and* more diverse than Adult itself.
"""
from __future__ import annotations

import argparse
import resource
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout
import sdceval  # noqa: E402
from sdceval import Dataset  # noqa: E402


def peak_mb() -> float:
    # ru_maxrss is in KiB on Linux, bytes on macOS
    r = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return r / 1024 ** 2 if sys.platform == "darwin" else r / 1024


def timed(ds, repeats: int, **params) -> tuple[float, sdceval.Release]:
    times, rel = [], None
    for _ in range(repeats):
        t0 = time.perf_counter()
        rel = sdceval.anonymize(ds, "mondrian", **params)
        times.append(time.perf_counter() - t0)
    return statistics.median(times), rel


def adult_like(n: int, seed: int = 0) -> Dataset:
    adult = sdceval.load_dataset("adult")
    rng = np.random.default_rng(seed)
    cols = adult.schema.qis + [adult.schema.sensitive]
    frame = adult.frame[cols].iloc[rng.integers(0, adult.n, n)].reset_index(drop=True)
    ages = adult.hierarchy("age").leaf_values
    jitter = frame["age"].to_numpy() + rng.integers(-3, 4, n)
    frame["age"] = np.clip(jitter, ages.min(), ages.max()).astype(int)
    # only ages that are leaves of Adult's age hierarchy
    frame["age"] = ages[np.searchsorted(ages, frame["age"])].astype(int)
    hierarchies = {c: adult.hierarchy(c) for c in cols}
    schema = sdceval.Schema.from_roles(frame, qi=adult.schema.qis,
                                       sensitive=adult.schema.sensitive,
                                       hierarchies=hierarchies)
    return Dataset(frame, schema, name=f"adult-like-{n}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=1_000_000, help="synthetic records")
    ap.add_argument("--repeats", type=int, default=3, help="runs per Adult setting")
    args = ap.parse_args()

    ds = sdceval.load_dataset("adult")
    rows = []
    for label, params, target in [
            ("k=10", dict(k=10), 2.0),
            ("l=4 (probabilistic)", dict(model="l", l=4.0), 5.0),
            ("t=0.15 (js)", dict(model="t", t=0.15, distance="js"), 5.0),
            ("t=0.15 (emd, hierarchical)", dict(model="t", t=0.15, distance="emd"), 5.0),
            ("delta=1.5", dict(model="delta", delta=1.5), 5.0)]:
        secs, rel = timed(ds, args.repeats, **params)
        rows.append((f"Adult n={ds.n} {label}", secs, target, rel.info["n_classes"]))

    t0 = time.perf_counter()
    big = adult_like(args.n)
    build = time.perf_counter() - t0
    secs, rel = timed(big, 1, k=10)
    sizes = np.bincount(rel.classes)
    rows.append((f"synthetic n={big.n} k=10", secs, 60.0, rel.info["n_classes"]))
    mem = peak_mb()

    print(f"{'setting':45s} {'seconds':>8s} {'target':>7s} {'classes':>8s}  result")
    for name, s, target, ncls in rows:
        print(f"{name:45s} {s:8.3f} {target:7.1f} {ncls:8d}  {'PASS' if s <= target else 'MISS'}")
    print(f"{'synthetic peak memory (MB, whole process)':45s} {mem:8.0f} {4096:7d} "
          f"{'':8s}  {'PASS' if mem < 4096 else 'MISS'}")
    print(f"(synthetic data set built in {build:.1f} s, not timed; class sizes "
          f"{sizes.min()}..{sizes.max()}, median {int(np.median(sizes))})")
    print(pd.Series(rel.info["achieved"]).to_string())


if __name__ == "__main__":
    main()
