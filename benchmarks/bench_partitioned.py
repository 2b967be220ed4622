"""Measures of a table evaluated in partitions on a Dask cluster (issue 21 item 7,
`sdceval.experiments.partitioned`): the client never holds the original.

Writes, in a temporary folder, a synthetic table of ``--n`` records (default 2 000 000)
as a directory of Parquet files of ``--rows-per-file`` records (default 100 000), built
file by file so that this process never holds it either, with a schema file (roles
only: every hierarchy is built from the data) and two row-aligned releases beside it:

* **generalized**: age in 10-year intervals, region and education one level up their
  built hierarchies (grouping), sex kept, 1 % of the records suppressed (``*``), the
  sensitive disease published unchanged: for ``k_anonymity``, ``discernibility``,
  ``avg_class_size`` and ``query_error``;
* **noise** (default, ``--release noise``): additive noise of 0.5 standard deviations
  on the two numeric attributes (income and spend, whole numbers with many ties), or
  **groups** (``--release groups``): microaggregation-like groups of 5 records of
  similar income (within each file) replaced by their means: for ``linkage_risk``.
  Exact nearest neighbours cost minutes per million records per core on many
  correlated dimensions; two dimensions keep the benchmark within minutes.

Then evaluates the generalized release (the class counts and ``query_error`` with
``--queries`` queries) and the linkage release (``linkage_risk``, every record linked)
with `evaluate_partitioned` on a `distributed.LocalCluster` of 2 worker processes x 1
thread, and prints the wall time of each call, the measures' values, the client
process's peak RSS (sampled every 50 ms, and ``ru_maxrss``), the largest worker RSS
and the table's in-memory size (a pandas DataFrame, deep, as ``sdceval evaluate``
would hold it).  The class counts and ``query_error`` grow the client by a few MB
whatever the size; ``linkage_risk`` holds the release's numbers and their index on the
client (by design: the index is sent to each worker once), with the temporaries of
deduplicating its rows and of pickling it to the workers (a `LocalCluster`'s scheduler
runs in the client's process), never the original.  ``--in-memory`` then evaluates the
same files with ``sdceval.evaluate`` in a fresh process (the whole table and both
releases in memory, linkage on every record) and prints its time, its peak RSS and
whether every value agrees.

Run: python benchmarks/bench_partitioned.py [--n 2000000] [--rows-per-file 100000]
         [--release noise|groups] [--queries 200] [--in-memory] [--keep]
"""
from __future__ import annotations

import argparse
import json
import logging
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import threading
import time

import numpy as np
import pandas as pd

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

REGIONS = [f"r{i:02d}" for i in range(30)]
EDUCATION = [f"e{i}" for i in range(1, 17)]
DISEASES = [f"d{i:02d}" for i in range(14)]
#: the generalized release's levels (age: 10-year intervals of the built hierarchy)
LEVELS = {"age": 2, "region": 1, "education": 1, "sex": 0}
SUPPRESSED = 0.01
GROUP = 5
SCHEMA = ('qi = ["age", "region", "education", "sex"]\nsensitive = "disease"\n'
          'numeric = ["income", "spend"]\n')


def chunk(i: int, rows: int, seed: int = 0) -> pd.DataFrame:
    """Records of file ``i``: the first file starts with every value of every
    categorical domain and every age, so that the hierarchies built from the data are
    the ones the releases are written with."""
    rng = np.random.default_rng([seed, i])
    age = np.clip(rng.normal(40, 13, rows).round(), 17, 90).astype(np.int64)
    popularity = 1.0 / np.arange(1, len(REGIONS) + 1) ** 0.8
    region = rng.choice(len(REGIONS), rows, p=popularity / popularity.sum())
    edu = rng.binomial(15, 0.55, rows)
    sex = (rng.random(rows) < 0.45).astype(np.int64)
    disease = (edu // 2 + rng.integers(0, 6, rows)) % len(DISEASES)
    if i == 0:
        for col, size in ((age, 74), (region, 30), (edu, 16), (sex, 2), (disease, 14)):
            col[:size] = np.arange(size) + (17 if col is age else 0)
    income = np.round(rng.lognormal(3.5, 0.6, rows)) * 100
    spend = np.round(income * rng.uniform(0.3, 0.9, rows) / 10) * 10
    return pd.DataFrame({
        "age": age, "region": np.array(REGIONS)[region],
        "education": np.array(EDUCATION)[edu], "sex": np.array(["F", "M"])[sex],
        "disease": np.array(DISEASES)[disease], "income": income, "spend": spend})


def hierarchies() -> dict:
    """The hierarchies `Dataset` builds from the table's values."""
    from sdceval.core.hierarchy_builders import build_hierarchy
    return {"age": build_hierarchy(pd.Series(np.arange(17, 91)), "age", "numeric"),
            "region": build_hierarchy(pd.Series(REGIONS), "region", "categorical"),
            "education": build_hierarchy(pd.Series(EDUCATION), "education", "categorical"),
            "sex": build_hierarchy(pd.Series(["F", "M"]), "sex", "categorical")}


def generalized(frame: pd.DataFrame, hier: dict, rng) -> pd.DataFrame:
    out = {}
    for col, level in LEVELS.items():
        h = hier[col]
        codes = h.encode(frame[col], column=col)
        out[col] = h.labels[level][h.node_of[level][codes]].astype(object)
    out = pd.DataFrame(out)
    supp = rng.random(len(frame)) < SUPPRESSED
    out.loc[supp, list(LEVELS)] = "*"
    out["disease"] = frame["disease"].to_numpy()
    return out


def masked(frame: pd.DataFrame, release: str, rng, sd: np.ndarray) -> pd.DataFrame:
    x = frame[["income", "spend"]].to_numpy(float)
    if release == "noise":
        y = x + rng.normal(0.0, 0.5, x.shape) * sd
    else:
        order = np.argsort(x[:, 0], kind="stable")
        starts = np.arange(0, len(x), GROUP)
        sizes = np.diff(np.r_[starts, len(x)])
        y = np.empty_like(x)
        for j in range(x.shape[1]):
            y[order, j] = np.repeat(np.add.reduceat(x[order, j], starts) / sizes, sizes)
    return pd.DataFrame({"income": y[:, 0], "spend": y[:, 1]})


def write_tables(folder: str, n: int, rows: int, release: str) -> int:
    """The original, the two releases and the schema; the original's in-memory size."""
    hier = hierarchies()
    size = 0
    sd = None
    for name in ("original", "generalized", "masked"):
        os.makedirs(os.path.join(folder, name))
    for i, start in enumerate(range(0, n, rows)):
        frame = chunk(i, min(rows, n - start))
        size += int(frame.memory_usage(deep=True).sum())
        if sd is None:
            sd = frame[["income", "spend"]].to_numpy(float).std(axis=0)
        rng = np.random.default_rng([1, i])
        name = f"part-{i:05d}.parquet"
        frame.to_parquet(os.path.join(folder, "original", name), index=False)
        generalized(frame, hier, rng).to_parquet(os.path.join(folder, "generalized", name),
                                                 index=False)
        masked(frame, release, rng, sd).to_parquet(os.path.join(folder, "masked", name),
                                                   index=False)
    with open(os.path.join(folder, "schema.toml"), "w") as fh:
        fh.write(SCHEMA)
    return size


class Sampler(threading.Thread):
    """Peak RSS of this process and of each of its child processes (the workers),
    sampled every 50 ms."""

    def __init__(self):
        super().__init__(daemon=True)
        import psutil
        self.me = psutil.Process()
        self.client_peak = 0
        self.children: dict = {}
        self.stop = threading.Event()

    def run(self):
        import psutil
        while not self.stop.is_set():
            self.client_peak = max(self.client_peak, self.me.memory_info().rss)
            for p in self.me.children(recursive=True):
                try:
                    self.children[p.pid] = max(self.children.get(p.pid, 0),
                                               p.memory_info().rss)
                except psutil.Error:
                    pass
            time.sleep(0.05)


def measures(queries: int) -> list[tuple[str, str]]:
    """(release folder, measures) of the two calls."""
    return [("generalized", "k_anonymity,discernibility,avg_class_size,"
             f"query_error:n_queries={queries}"), ("masked", "linkage_risk")]


def in_memory(folder: str, queries: int) -> None:
    """In this (fresh) process: the same measures with `sdceval.evaluate` on the whole
    table in memory; prints JSON (values, wall time, RSS before and peak)."""
    from sdceval import Dataset, Schema, evaluate
    from sdceval.catalog import get_measure
    from sdceval.compare.ranking import parse_measure_list
    from sdceval.core.loaders import read_schema_file
    from sdceval.core.release_io import release_from_frame
    get_measure("linkage_risk")   # every measure's module imported before the baseline
    sampler = Sampler()
    base = sampler.me.memory_info().rss
    sampler.start()
    t0 = time.perf_counter()
    frame = pd.read_parquet(os.path.join(folder, "original"))
    spec = read_schema_file(os.path.join(folder, "schema.toml"))
    ds = Dataset(frame, Schema.from_mapping(frame, spec), name="original")
    values = {}
    for release, asked in measures(queries):
        rel = release_from_frame(ds, pd.read_parquet(os.path.join(folder, release)))
        for label, (name, params) in parse_measure_list(asked).items():
            if name == "linkage_risk":
                params = {**params, "sample": 0}
            values[label] = evaluate(ds, rel, name, **params).value
    took = time.perf_counter() - t0
    sampler.stop.set()
    sampler.join()
    print(json.dumps({"values": values, "seconds": took, "base": base,
                      "peak": sampler.client_peak}))


def mb(x: float) -> str:
    return f"{x / 2**20:,.0f} MB"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=2_000_000)
    ap.add_argument("--rows-per-file", type=int, default=100_000)
    ap.add_argument("--release", choices=("noise", "groups"), default="noise")
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--in-memory", action="store_true",
                    help="also evaluate in memory (sdceval.evaluate, a fresh process)")
    ap.add_argument("--keep", action="store_true", help="keep the temporary folder")
    ap.add_argument("--in-memory-of", help=argparse.SUPPRESS)  # the fresh process
    args = ap.parse_args()
    if args.in_memory_of:
        in_memory(args.in_memory_of, args.queries)
        return

    from distributed import Client, LocalCluster

    from sdceval.experiments.executor import thread_env
    from sdceval.experiments.partitioned import evaluate_partitioned

    folder = tempfile.mkdtemp(prefix="sdceval-partitioned-")
    try:
        t0 = time.perf_counter()
        size = write_tables(folder, args.n, args.rows_per_file, args.release)
        files = len(os.listdir(os.path.join(folder, "original")))
        print(f"table: {args.n:,} records x 7 columns in {files} Parquet files "
              f"({time.perf_counter() - t0:.1f} s to write); in memory (pandas, deep): "
              f"{mb(size)}")
        with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                          dashboard_address=":0", silence_logs=logging.CRITICAL,
                          env=thread_env(1)) as cluster, Client(cluster) as client:
            orig, schema = os.path.join(folder, "original"), os.path.join(folder, "schema.toml")
            index = args.n * 2 * 8   # the release's two numeric columns, float64
            partitioned = {}
            for release, asked in measures(args.queries):
                sampler = Sampler()
                base = sampler.me.memory_info().rss
                sampler.start()
                t0 = time.perf_counter()
                got = evaluate_partitioned(orig, os.path.join(folder, release), asked,
                                           schema=schema, client=client)
                partitioned.update({k: m.value for k, m in got.items()})
                took = time.perf_counter() - t0
                sampler.stop.set()
                sampler.join()
                what = (f"{args.release}, 2 numeric attributes" if release == "masked"
                        else f"levels {LEVELS}, {SUPPRESSED:.0%} suppressed")
                print(f"\n{release} release ({what}): {took:.1f} s")
                for label, m in got.items():
                    extra = ""
                    if m.measure == "linkage_risk":
                        extra = (f"  (re-identification "
                                 f"{m.details['reidentification_rate']:.4f}, "
                                 f"mean distance {m.details['mean_distance']:.1f})")
                    elif m.measure == "k_anonymity":
                        extra = (f"  ({m.details['n_classes']:,} classes, "
                                 f"{m.details['suppressed']:,} suppressed)")
                    print(f"  {label:<30} {m.value:.10g}{extra}")
                peak = sampler.client_peak
                worker = max(sampler.children.values()) if sampler.children else 0
                print(f"  client RSS: {mb(base)} before, peak {mb(peak)} "
                      f"(+{mb(peak - base)} = {(peak - base) / size:.2f} x the table"
                      + (f"; the release's numbers alone: {mb(index)}"
                         if release == "masked" else "") + ")")
                print(f"  largest worker RSS: {mb(worker)}")
        maxrss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
        print(f"\nthe original in memory (pandas, deep): {mb(size)}; client ru_maxrss over "
              f"the whole run: {mb(maxrss)}")
        if args.in_memory:
            out = subprocess.run([sys.executable, __file__, "--in-memory-of", folder,
                                  "--queries", str(args.queries)],
                                 capture_output=True, text=True, check=True)
            got = json.loads(out.stdout.strip().splitlines()[-1])
            worst = max(abs(got["values"][k] - v) / max(abs(v), 1e-300)
                        for k, v in partitioned.items())
            print(f"in memory (sdceval.evaluate, one process, one thread): "
                  f"{got['seconds']:.1f} s, RSS {mb(got['base'])} before, peak "
                  f"{mb(got['peak'])} (+{mb(got['peak'] - got['base'])}); largest relative "
                  f"difference from the partitioned values: {worst:.1e}")
    finally:
        if args.keep:
            print(f"kept {folder}")
        else:
            shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
