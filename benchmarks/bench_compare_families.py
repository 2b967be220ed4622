"""The whole-file `compare` across both families on 100 000 and 1 000 000 records x 10
attributes (issue 19 item 4; issue 28: targets 120 s and 15 minutes, one thread).

Run: python benchmarks/bench_compare_families.py [n] [--repeats R] [--block-size B]

A synthetic patient file (3 QIs: a ZIP-like code with leading zeros, age, sex; 6
numeric attributes; a diagnosis as the sensitive attribute) is compared as `sdceval
compare` would: every built-in whole-file strategy (`sdceval.methods.strategy`)
matched on ``reidentification`` to the default target, the risk of k = 5 over every
key (``mondrian+intervals:k=5``), the perturbative strategies searched jointly on
their knob and the recoding level, ranked on ``query_error`` and ``ml_utility``, on one
thread.  ``--block-size`` runs MDAV by blocks (its ``block_size``; for a million
records), in the candidates and in the reference; above 50 000 records the risks that
link on numbers are estimated on a sample of records (``reidentification``'s ``sample``)
with their standard errors.

Prints the total time; the reference measured in the same run (one release of the
reference and its risk: what every evaluation of the search costs) and the ratio of the
two, the number against which to read the total on a machine whose speed drifts; then
where the time goes: per candidate its search (evaluations), and the time spent in each
method and measure (calls through the registry; a strategy's time includes its steps').
"""
from __future__ import annotations

import argparse
import sys
import time
from collections import defaultdict

import numpy as np
import pandas as pd

import sdceval
from sdceval.compare.families import WHOLE_FILE_TARGET
from sdceval.compare.ranking import parse_reference
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
    ap.add_argument("--block-size", type=int, default=0)
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
    block = {"block_size": args.block_size} if args.block_size else {}
    target = WHOLE_FILE_TARGET
    ds = sdceval.as_dataset(df, **roles)
    t0 = time.perf_counter()
    name, params = parse_reference(target)
    ref = sdceval.anonymize(ds, name, **params, seed=0)
    sdceval.evaluate(ds, ref, "reidentification")
    reference = time.perf_counter() - t0
    spent.clear()
    calls.clear()
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        comp = sdceval.compare(ds, repeats=args.repeats, curves=False,
                               method_params={"mdav+recode": block} if block else None,
                               progress=lambda m: print("  " + m, file=sys.stderr))
    total = time.perf_counter() - t0
    print(f"whole-file compare across families: {args.n:,} records x 10 attributes, "
          f"repeats={args.repeats}, 1 thread: {total:.1f} s; reference (one release of "
          f"{target} and its risk) {reference:.2f} s; ratio {total / reference:.0f}")
    print(comp.display_table()[["method", "setting", "query_error", "ml_utility", "risk",
                                "matched"]].to_string(index=False))
    print("evaluations: " + ", ".join(f"{m.method} {m.evaluations}" for m in comp.matches))
    print("\nwhere the time goes (calls, seconds):")
    for key in sorted(spent, key=spent.get, reverse=True):
        print(f"  {key:32s} {calls[key]:4d} {spent[key]:8.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
