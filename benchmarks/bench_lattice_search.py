"""Lattice benchmarks of issue 7: exhaustive evaluation with all objectives, the optimal
search on ARX's Adult lattice, 9 numeric QIs, and 1 000 000 records.

Run: python benchmarks/bench_lattice_search.py [--repeat R] [--skip-million]

Prints, on this machine (figures, never pass/fail; the issue's targets beside them):

1. ``evaluate_all`` of Dewri et al.'s 17 920-node ``adult-train`` lattice (8 QIs, occupation
   sensitive, η = 1 %, Dewri's rule), every objective the data supports, no disk cache:
   seconds and µs per node (target ≤ 5 s), on one process and on two (thread budget 2:
   ``--threads 2`` / ``SDCEVAL_THREADS=2``; the lattice cut in two boxes,
   `sdceval.lattice.parallel`).
2. ``optimal`` on ARX's 12 960-node Adult lattice (``adult-arx``: nine QIs, ARX's
   hierarchies), k = 5, ARX's rule, ARX's monotonic entropy, 4 % (target ≤ 1 s) and 0 %
   suppression (target ≤ 50 ms): seconds, nodes checked, the optimum and its loss.
3. The ``generalization`` method, k = 5, on 9 numeric QIs with automatic hierarchies
   (10 077 696 nodes), 2 000 records (target ≤ 10 s).
4. 1 000 000 records resampled from ``adult-train`` (seed 0), Dewri's 8 QIs, optimal
   k = 10 (Dewri's rule, 1 %, GLM; and ARX's rule with its entropy), and k = 1000 (k = 10
   holds at the bottom node of a resample): seconds and the peak resident memory of the
   process (target ≤ 60 s, < 4 GB).

Each timing is the best of ``--repeat`` runs (default 3; at least 10 for the 0 % search,
which takes tens of milliseconds, with their median and slowest run beside it; 1 for the
million records) with a fresh engine, so no class table is reused between runs.
"""
import argparse
import resource
import time

import numpy as np
import pandas as pd

import sdceval
from sdceval import Dataset, Schema
from sdceval.core import threads
from sdceval.lattice import NodeEngine
from sdceval.lattice.search import LatticeProblem, evaluate_all, optimal
from sdceval.privacy import KAnonymity

DEWRI_QIS = ["age", "workclass", "education", "marital-status", "race", "sex",
             "native-country", "income"]


def timed_runs(repeat, fn):
    runs = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        runs.append((time.perf_counter() - t0, out))
    return runs


def best_of(repeat, fn):
    return min(timed_runs(repeat, fn), key=lambda r: r[0])


def peak_rss_gb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20  # KiB on Linux


def exhaustive(repeat):
    base = sdceval.load_dataset("adult-train")
    ds = Dataset(base.frame, base.schema.with_roles(qi=DEWRI_QIS, sensitive="occupation"),
                 name="adult-train")

    def run():
        p = LatticeProblem(ds, rule="dewri", max_suppression=0.01)
        return p, evaluate_all(p, cache=False, progress=False)
    for procs in (1, 2):
        # the thread budget (--threads / SDCEVAL_THREADS) sets the worker processes
        threads.set_budget(procs)
        try:
            t, (p, table) = best_of(repeat, run)
        finally:
            threads.set_budget(None)
        names = [c for c in table.columns if c not in (*DEWRI_QIS, "height")]
        if procs == 1:
            print(f"1. exhaustive, adult-train, {p.lattice.size} nodes, Dewri's rule η=1 % "
                  f"({p.limit_records} records), {len(names)} columns "
                  f"({', '.join(names)}):")
        print(f"   {procs} process{'es' if procs > 1 else ''} (thread budget {procs}): "
              f"{t:.2f} s = {t / p.lattice.size * 1e6:.0f} µs/node (target ≤ 5 s)")


def arx_search(repeat):
    ds = sdceval.load_dataset("adult-arx")
    for limit, target in ((0.04, "≤ 1 s"), (0.0, "≤ 50 ms")):
        engine_time, _ = best_of(1, lambda: NodeEngine(ds))

        def run():
            p = LatticeProblem(ds, [KAnonymity(5)], rule="arx", max_suppression=limit)
            return optimal(p, "nu_entropy", progress=False)
        # a run of tens of milliseconds on a shared VM: best of at least 10 (timeit's
        # practice for short statements), else one slow run in three decides it; the
        # median and the slowest run are printed too, to show the spread
        runs = timed_runs(max(repeat, 10) if limit == 0 else repeat, run)
        t, res = min(runs, key=lambda r: r[0])
        times = sorted(r[0] for r in runs)
        spread = (f" (median {np.median(times) * 1e3:.0f}, slowest {times[-1] * 1e3:.0f} ms "
                  f"of {len(times)})" if limit == 0 else "")
        print(f"2. optimal, adult-arx ({res.lattice_size} nodes), k=5, ARX rule, "
              f"{limit:.0%} suppression, nu_entropy: {t * 1e3:.0f} ms incl. engine set-up "
              f"({engine_time * 1e3:.0f} ms){spread} (target {target}); search alone "
              f"{res.seconds * 1e3:.0f} ms; {res.checked} nodes checked; optimum "
              f"{list(res.levels)}, loss {res.value:.10f}")


def nine_numeric(repeat):
    n = 2000
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({f"x{i}": rng.normal(0, 1, n).round(3) for i in range(9)})
    frame["s"] = rng.choice(list("abc"), n)
    ds = Dataset(frame, Schema.from_roles(frame, qi=[f"x{i}" for i in range(9)],
                                          sensitive="s"), name="wide")
    t, rel = best_of(repeat, lambda: sdceval.anonymize(ds, "generalization", k=5))
    s = rel.info["search"]
    print(f"3. generalization k=5, 9 numeric QIs, {n} records, lattice "
          f"{s['lattice_size']:,} nodes (Dewri's rule 1 %, GLM): {t:.2f} s (target ≤ 10 s); "
          f"{s['nodes_checked']} nodes checked; node {list(rel.info['levels'].values())}")


def million():
    base = sdceval.load_dataset("adult-train")
    rng = np.random.default_rng(0)
    rows = rng.integers(0, base.n, 1_000_000)
    frame = base.frame.iloc[rows].reset_index(drop=True)
    t0 = time.perf_counter()
    ds = Dataset(frame, base.schema.with_roles(qi=DEWRI_QIS, sensitive="occupation"),
                 name="adult-1m")
    load = time.perf_counter() - t0
    # k = 10 is met at the bottom node (every distinct row of adult-train is drawn
    # ~33 times); k = 1000 makes the search work
    for k, rule, limit, metric in ((10, "dewri", 0.01, "glm"), (10, "arx", 0.01, "nu_entropy"),
                                   (1000, "dewri", 0.01, "glm"),
                                   (1000, "arx", 0.01, "nu_entropy")):
        t0 = time.perf_counter()
        rel = sdceval.anonymize(ds, "generalization", k=k, suppression_rule=rule,
                                max_suppression=limit, metric=metric)
        t = time.perf_counter() - t0
        s = rel.info["search"]
        print(f"4. 1 000 000 records, 8 QIs, optimal k={k}, {rule} rule {limit:.0%}, {metric}: "
              f"{t:.1f} s incl. the release (target ≤ 60 s; data set built in {load:.1f} s); "
              f"{s['nodes_checked']} of {s['lattice_size']} nodes checked; node "
              f"{list(rel.info['levels'].values())}; peak RSS so far {peak_rss_gb():.2f} GB "
              "(target < 4 GB)")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--skip-million", action="store_true")
    args = ap.parse_args()
    exhaustive(args.repeat)
    arx_search(args.repeat)
    nine_numeric(args.repeat)
    if not args.skip_million:
        million()
    print(f"peak RSS of the whole run: {peak_rss_gb():.2f} GB")


if __name__ == "__main__":
    main()
