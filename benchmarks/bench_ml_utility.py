"""`ml_utility` on 100 000 records with a 1 000-level ZIP-like code (issue 28): the dense
design it had before against the sparse one it has now, one thread.

The table (``--n`` records, 10 attributes): a 5-digit ZIP-like code of 1 000 values in
100 areas of 10 (Zipf-like popularity, masking hierarchy), age (intervals), sex, marital
status (4), education (16), race (5) as quasi-identifiers; income, hours and capital as
numeric attributes; a binary label depending on the ZIP, age, education and income.
Releases (``--releases``): ``noise`` (additive noise of 0.5 sd on the numeric
attributes; the QIs dropped, so the ZIP is fully suppressed) and ``mondrian`` (k = 5 on
the QIs, numeric attributes as published).

``before`` is the measure's module at git revision ``--old-rev`` (default ``OLD_REV``,
the last one with the dense design: an n x 1 001 one-hot of the ZIP, z-scored, lbfgs at
scikit-learn's default tol), loaded from ``git show`` and called directly (not
emulated); ``now`` is the registered measure.  Each (release, implementation) runs in a
fresh process that builds the table and the release first (not timed), then prints the
wall time of the call and the peak RSS over the call (sampled every 10 ms, and
``ru_maxrss``) above the RSS before it.  Values are printed too: they differ by the
former solver's stopping error (lbfgs at tol 1e-4, now fitted to convergence).

Run: python benchmarks/bench_ml_utility.py [--n 100000] [--releases noise,mondrian]
         [--old-rev REV]
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
#: the last revision with the dense design matrix
OLD_REV = "453d2f0"
ENV_ONE_THREAD = {"SDCEVAL_THREADS": "1", "OMP_NUM_THREADS": "1",
                  "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


def table(n: int, seed: int = 0):
    import numpy as np
    import pandas as pd

    from sdceval import Dataset, Schema
    from sdceval.core.hierarchy_builders import (
        build_flat,
        build_grouping,
        build_intervals,
        build_masking,
    )
    rng = np.random.default_rng(seed)
    zips = [f"{a:03d}{o:02d}" for a in rng.choice(1000, 100, replace=False)
            for o in rng.choice(100, 10, replace=False)]
    popularity = 1.0 / np.arange(1, len(zips) + 1) ** 0.5
    zip_i = rng.choice(len(zips), n, p=popularity / popularity.sum())
    age = np.clip(rng.normal(42, 13, n).round(), 17, 90).astype(np.int64)
    edu_i = rng.binomial(15, 0.55, n)
    income = rng.lognormal(10 + 0.05 * edu_i, 0.6)
    hours = np.clip(rng.normal(40, 9, n), 1, 99).round()
    capital = np.where(rng.random(n) < 0.1, rng.lognormal(8, 1, n), 0.0).round()
    effect = rng.normal(0, 0.7, len(zips))
    score = (effect[zip_i] + 0.03 * (age - 42) + 0.15 * (edu_i - 8)
             + 0.8 * (np.log(income) - 10.4) + rng.logistic(size=n))
    cat = pd.Categorical.from_codes
    edu = [f"e{i + 1}" for i in range(16)]
    mar = ["married", "never-married", "divorced", "widowed"]
    race = [f"r{i}" for i in range(5)]
    frame = pd.DataFrame({
        "zip": cat(zip_i, zips), "age": age,
        "sex": cat((rng.random(n) < 0.48).astype(np.int64), ["F", "M"]),
        "marital": cat(rng.choice(4, n, p=[.5, .3, .15, .05]), mar),
        "education": cat(edu_i, edu), "race": cat(rng.choice(5, n), race),
        "income": income.round(), "hours": hours, "capital": capital,
        "high": np.where(score > 0.5, "yes", "no")})
    hierarchies = {"zip": build_masking(zips, name="zip"),
                   "age": build_intervals(range(17, 91), name="age"),
                   "sex": build_flat(["F", "M"], name="sex"),
                   "marital": build_grouping(mar, name="marital"),
                   "education": build_grouping(edu, name="education"),
                   "race": build_flat(race, name="race")}
    schema = Schema.from_roles(frame, qi=["zip", "age", "sex", "marital", "education", "race"],
                               numeric=["income", "hours", "capital"], label="high",
                               hierarchies=hierarchies)
    return Dataset(frame, schema, name="zip1000")


def release_of(ds, name: str):
    import sdceval
    if name == "noise":
        return sdceval.anonymize(ds, "noise", gamma=0.5, seed=0)
    if name == "mondrian":
        return sdceval.anonymize(ds, "mondrian", models=["k=5"])
    raise SystemExit(f"--releases: unknown release {name!r}; choose noise or mondrian")


def child(impl: str, n: int, release: str, rev: str) -> None:
    """One measurement in this fresh process; prints a JSON line."""
    import importlib

    sys.path.insert(0, HERE)
    from bench_measures_scale import load_old, sampled_call

    from sdceval.core import threads
    from sdceval.core.registry import MEASURES

    ds = table(n)
    rel = release_of(ds, release)
    for c in ds.frame.columns:          # lazily built; not the measure's cost
        ds.hierarchy(c)
        ds.codes(c)
    if impl == "before":
        func = load_old("ml_utility", rev).ml_utility
    else:
        spec = MEASURES.get_spec("ml_utility")

        def func(dataset, r):
            return spec.evaluate(dataset, r)
    for module in ("sklearn.linear_model", "sklearn.metrics", "sklearn.model_selection"):
        importlib.import_module(module)     # imports are not the measure's cost

    m, wall, _, before, peak = sampled_call(func, ds, rel)
    d = m.details
    print(json.dumps({"wall": wall, "peak_mb": (peak - before) / 1e6, "value": m.value,
                      "auc_original": d["auc_original"], "auc_release": d["auc_release"],
                      "n_features": d["n_features"],
                      "n_features_release": d["n_features_release"],
                      "budget": threads.budget()}))


def run(impl: str, n: int, release: str, rev: str) -> dict:
    env = {**os.environ, **ENV_ONE_THREAD}
    out = subprocess.run([sys.executable, os.path.abspath(__file__), "--child", impl,
                          str(n), release, rev], capture_output=True, text=True, env=env,
                         cwd=REPO, check=False)
    if out.returncode != 0:
        return {"error": (out.stderr.strip().splitlines() or ["failed"])[-1]}
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--releases", default="noise,mondrian")
    ap.add_argument("--old-rev", default=OLD_REV)
    ap.add_argument("--child", nargs=4, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        impl, n, release, rev = args.child
        child(impl, int(n), release, rev)
        return
    print(f"ml_utility, {args.n} records x 10 attributes, a ZIP-like code of 1 000 "
          "values; one thread (SDCEVAL_THREADS=1)")
    print(f"before = the dense design of git revision {args.old_rev} (the real former "
          "module, loaded from git); now = the sparse design of the working tree")
    print(f"{'release':9} {'impl':7} {'time s':>8} {'peak MB':>9} {'value':>12} "
          f"{'features':>9}")
    for release in args.releases.split(","):
        res = {impl: run(impl, args.n, release, args.old_rev) for impl in ("before", "now")}
        for impl, r in res.items():
            if "error" in r:
                print(f"{release:9} {impl:7} error: {r['error']}")
                continue
            print(f"{release:9} {impl:7} {r['wall']:8.2f} {r['peak_mb']:9.0f} "
                  f"{r['value']:12.8f} {r['n_features']:5d}/{r['n_features_release']}")
        b, a = res["before"], res["now"]
        if "error" not in b and "error" not in a:
            print(f"{release:9} before/now: time x{b['wall'] / a['wall']:.1f}, peak memory "
                  f"x{b['peak_mb'] / max(a['peak_mb'], 1e-9):.1f}; value changed by "
                  f"{a['value'] - b['value']:+.2e} (AUC original {a['auc_original'] - b['auc_original']:+.1e}, "
                  f"release {a['auc_release'] - b['auc_release']:+.1e}: the former lbfgs "
                  "stopped at tol 1e-4)")


if __name__ == "__main__":
    main()
