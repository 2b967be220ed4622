"""`compare` across both families on 100 000 records x 10 attributes (issue 19 item 4).

Run: python benchmarks/bench_compare_families.py [n] [--repeats R]

A synthetic patient file (3 QIs: a ZIP-like code with leading zeros, age, sex; 6
numeric attributes; a diagnosis as the sensitive attribute) is compared as `sdceval
compare` would, with every applicable method matched on ``reidentification`` to the
risk of MDAV k = 5 and ranked on ``query_error`` and ``ml_utility``, on one thread.
Prints the total time, then where it goes: per method, its bisection (evaluations,
seconds) and the time spent in each method and measure (a profile of the calls
through the registry).
"""
from __future__ import annotations

import argparse
import sys
import time
from collections import defaultdict

import numpy as np
import pandas as pd

import sdceval
from sdceval.core import threads
from sdceval.core.registry import MeasureSpec, MethodSpec


def patients(n: int, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    # 1 000 ZIP codes x 72 ages x 2 sexes: QIs identifying enough that the syntactic
    # methods, which publish only them, can reach the risk of MDAV k = 5
    zips = np.array([f"0{i:04d}" for i in range(1000, 2000)])
    age = rng.integers(18, 90, n)
    base = rng.normal(size=(n, 1))
    numeric = {f"x{j}": (rng.normal(size=n) + base[:, 0] * (j + 1) / 6 + age / 40).round(2)
               for j in range(6)}
    return pd.DataFrame({"zip": rng.choice(zips, n), "age": age,
                         "sex": rng.choice(["F", "M"], n), **numeric,
                         "diagnosis": rng.choice(["flu", "asthma", "diabetes", "copd",
                                                  "none", "hyper"], n)})


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("n", type=int, nargs="?", default=100_000)
    ap.add_argument("--repeats", type=int, default=1)
    args = ap.parse_args()
    df = patients(args.n)
    roles = dict(qi=["zip", "age", "sex"], numeric=[f"x{j}" for j in range(6)],
                 sensitive="diagnosis")
    spent: dict[str, float] = defaultdict(float)
    calls: dict[str, int] = defaultdict(int)
    apply, evaluate = MethodSpec.apply, MeasureSpec.evaluate

    def timed_apply(self, *a, **k):
        t0 = time.perf_counter()
        try:
            return apply(self, *a, **k)
        finally:
            spent[f"method {self.name}"] += time.perf_counter() - t0
            calls[f"method {self.name}"] += 1

    def timed_evaluate(self, *a, **k):
        t0 = time.perf_counter()
        try:
            return evaluate(self, *a, **k)
        finally:
            spent[f"measure {self.name}"] += time.perf_counter() - t0
            calls[f"measure {self.name}"] += 1

    MethodSpec.apply, MeasureSpec.evaluate = timed_apply, timed_evaluate
    threads.set_budget(1)
    import warnings
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        comp = sdceval.compare(df, repeats=args.repeats, curves=False,
                               progress=lambda m: print("  " + m, file=sys.stderr), **roles)
    total = time.perf_counter() - t0
    print(f"compare across families: {args.n:,} records x 10 attributes, "
          f"repeats={args.repeats}, 1 thread: {total:.1f} s")
    print(comp.table()[["method", "parameter", "value", "risk", "bracketed", "evaluations",
                        "query_error", "ml_utility"]].to_string(index=False))
    print("\nwhere the time goes (calls, seconds):")
    for key in sorted(spent, key=spent.get, reverse=True):
        print(f"  {key:32s} {calls[key]:4d} {spent[key]:8.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
