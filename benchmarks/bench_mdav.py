"""Timings of the perturbative methods (MDAV, correlated noise, multiplicative noise,
rank swapping) on EIA (4092 x 11) and on a synthetic 100 000 x 10 table.

Run:  python benchmarks/bench_mdav.py [--quick]

Targets (from the project brief): MDAV k=5 on EIA <= 0.3 s; MDAV k=5 on 100 000 x 10
<= 20 s.  The other figures are informative (target "-").  Each figure is the best of
``--repeats`` runs (wall clock), since other processes on a small machine inflate single
timings.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout

import sdceval  # noqa: E402
from sdceval import Dataset, Schema  # noqa: E402

RUNS = [("mdav", {"k": 5}), ("noise", {"gamma": 1.0}),
        ("multiplicative_noise", {"s": 0.5}), ("rank_swap", {"p": 0.2})]
TARGETS = {("eia", "mdav"): 0.3, ("synthetic", "mdav"): 20.0}


def synthetic(n: int = 100_000, m: int = 10, seed: int = 0) -> Dataset:
    """Correlated, skewed numeric data: a Gaussian factor model, half of the columns
    exponentiated (log-normal, like incomes), so MDAV meets both dense cores and tails."""
    rng = np.random.default_rng(seed)
    latent = rng.standard_normal((n, 3))
    x = latent @ rng.normal(0, 1, (3, m)) + rng.standard_normal((n, m))
    x[:, ::2] = np.exp(x[:, ::2] / 2)
    frame = pd.DataFrame(x, columns=[f"v{j}" for j in range(m)])
    return Dataset(frame, Schema.from_roles(frame, numeric=list(frame.columns)),
                   name=f"synthetic{n}x{m}")


def best_time(ds, method, params, repeats):
    best = np.inf
    for _ in range(repeats):
        t = time.perf_counter()
        sdceval.anonymize(ds, method, seed=0, **params)
        best = min(best, time.perf_counter() - t)
    return best


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--quick", action="store_true", help="one run of each on 100k")
    args = ap.parse_args()
    data = {"eia": sdceval.load_dataset("eia"), "synthetic": synthetic()}
    for dname, ds in data.items():
        for method, params in RUNS:
            reps = 1 if (args.quick and dname == "synthetic") else args.repeats
            t = best_time(ds, method, params, reps)
            target = TARGETS.get((dname, method))
            verdict = "" if target is None else ("PASS" if t <= target else "MISS")
            tgt = "-" if target is None else f"<= {target:g} s"
            p = ",".join(f"{k}={v}" for k, v in params.items())
            print(f"{method:22s} {p:9s} {ds.name:18s} n={ds.n:<7d} {t:8.3f} s   "
                  f"target {tgt:9s} {verdict}", flush=True)


if __name__ == "__main__":
    main()
