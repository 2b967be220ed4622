"""MDAV for millions of records (issue 21 item 7): the blocked variant (``block_size``)
against exact MDAV.

On synthetic correlated, skewed numeric data of 13 attributes (as many as the bundled
Census; `bench_mdav.synthetic`: a Gaussian 3-factor model, every other column
log-normal), k = 5, prints

* for n = 100 000 and 1 000 000 (and 10 000 000 with ``--big``): the time of
  ``mdav`` with ``block_size`` 5 000 and 20 000 (the whole method: z-scores, partition,
  MDAV, group means, the release), wall clock and CPU (the CPU time is steadier on a
  shared machine), the time of the k-d partition alone, the peak memory (``ru_maxrss``
  of a fresh subprocess per measurement, which also holds the data set: 13 float64
  columns are ``104 n`` bytes, and generating them peaks higher, shown as "data") and
  the growth exponent of the CPU time between consecutive sizes (1 = linear);
* on 100 000 records (the smallest size, if at most that): the time of exact MDAV and
  the utility and risk of each blocked release against exact MDAV's: the within-group
  sum of squares SSE on the z-scores (and SSE / SST, the share of the total sum of
  squares lost), IL1s and the record-linkage distance (``linkage_risk``, higher =
  safer) with its re-identification rate.

Run:  python benchmarks/bench_mdav_scale.py [--big] [--sizes 100000 1000000]
      [--blocks 5000 20000] [--k 5] [--no-exact]
(about 2 minutes by default; ``--big`` adds about 5 minutes and 7 GB per block size)
"""
from __future__ import annotations

import argparse
import json
import math
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))  # run from a checkout
sys.path.insert(0, str(HERE))

M = 13


def _z(ds) -> np.ndarray:
    x = ds.numeric_matrix()
    return (x - x.mean(axis=0)) / x.std(axis=0)


def sse(z: np.ndarray, labels: np.ndarray) -> float:
    """Within-group sum of squared distances to the group means."""
    counts = np.bincount(labels)
    total = 0.0
    for j in range(z.shape[1]):
        s = np.bincount(labels, weights=z[:, j])
        total += float(((z[:, j] - (s / counts)[labels]) ** 2).sum())
    return total


def child(n: int, block_size: int, k: int, quality: bool) -> dict:
    """One measurement, in its own process (so ``ru_maxrss`` is its own peak)."""
    import sdceval
    from bench_mdav import synthetic
    from sdceval.methods.microaggregation import kd_blocks

    ds = synthetic(n, M)
    ds.numeric_matrix()                   # cached by the data set: part of the data
    out = {"n": n, "block_size": block_size,
           "data_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}
    t, c = time.perf_counter(), time.process_time()
    rel = sdceval.get_method("mdav").apply(ds, {"k": k, "block_size": block_size})
    out["time"] = time.perf_counter() - t
    out["cpu"] = time.process_time() - c
    out["maxrss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    sizes = np.bincount(rel.classes)
    out["groups"] = len(sizes)
    out["sizes"] = [int(sizes.min()), int(sizes.max())]
    if 0 < block_size < n:
        z = _z(ds)
        t = time.perf_counter()
        blocks = kd_blocks(z, k, block_size)
        out["partition_time"] = time.perf_counter() - t
        bsizes = np.bincount(blocks)
        out["blocks"] = [len(bsizes), int(bsizes.min()), int(bsizes.max())]
        # no group crosses a block border
        assert (np.bincount(rel.classes, weights=blocks) / sizes == blocks[
            np.unique(rel.classes, return_index=True)[1]]).all()
    if quality:
        z = _z(ds)
        out["sse"] = sse(z, rel.classes)
        out["sst"] = float(((z - z.mean(axis=0)) ** 2).sum())
        out["il1s"] = sdceval.evaluate(ds, rel, "il1s").value
        link = sdceval.evaluate(ds, rel, "linkage_risk")
        out["linkage"] = link.value
        out["reid"] = link.details["reidentification_rate"]
    return out


def measure(n: int, block_size: int, k: int, quality: bool) -> dict:
    cmd = [sys.executable, __file__, "--child", str(n), str(block_size), str(k),
           str(int(quality))]
    res = subprocess.run(cmd, capture_output=True, text=True)
    if res.returncode:
        sys.exit(f"child {cmd[2:]} failed:\n{res.stderr}")
    return json.loads(res.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--big", action="store_true", help="also 10 000 000 records")
    ap.add_argument("--sizes", type=int, nargs="+", default=[100_000, 1_000_000])
    ap.add_argument("--blocks", type=int, nargs="+", default=[5_000, 20_000])
    ap.add_argument("--k", type=int, default=5)
    ap.add_argument("--no-exact", action="store_true", help="skip exact MDAV on 100 000")
    ap.add_argument("--child", nargs=4, type=int, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        n, b, k, q = args.child
        print(json.dumps(child(n, b, k, bool(q))))
        return
    sizes = sorted(set(args.sizes + ([10_000_000] if args.big else [])))
    k = args.k
    # utility and risk on the smallest size (100 000 by default), if not too large
    quality_n = sizes[0] if sizes[0] <= 100_000 else None
    print(f"MDAV k={k}, synthetic {M} correlated skewed attributes; one fresh process "
          "per line (peak RSS includes the data set)", flush=True)
    print("time = wall clock of the method (z-scores, partition, MDAV, means, release); "
          "cpu = its CPU time (all threads), steadier on a loaded machine; exponent = "
          "growth of the cpu time from the previous size; peak = ru_maxrss of the "
          "process, data = its peak before the method ran (generating the data)")
    print(f"{'n':>10s} {'block_size':>10s} {'time s':>8s} {'cpu s':>8s} "
          f"{'partition s':>11s} {'peak MB':>8s} {'data MB':>8s} {'blocks (min..max)':>22s} "
          f"{'exponent':>8s}", flush=True)
    quality = {}
    if quality_n and not args.no_exact:
        r = measure(quality_n, 0, k, True)
        quality[0] = r
        print(f"{quality_n:10d} {'exact':>10s} {r['time']:8.1f} {r['cpu']:8.1f} {'-':>11s} "
              f"{r['maxrss_mb']:8.0f} {r['data_mb']:8.0f} {'-':>22s} {'-':>8s}", flush=True)
    for b in args.blocks:
        prev = None
        for n in sizes:
            r = measure(n, b, k, n == quality_n)
            if n == quality_n:
                quality[b] = r
            expo = "-" if prev is None else \
                f"{math.log(r['cpu'] / prev['cpu']) / math.log(n / prev['n']):.2f}"
            nb, lo, hi = r["blocks"] if "blocks" in r else (1, n, n)
            print(f"{n:10d} {b:10d} {r['time']:8.1f} {r['cpu']:8.1f} "
                  f"{r.get('partition_time', 0):11.2f} {r['maxrss_mb']:8.0f} "
                  f"{r['data_mb']:8.0f} {f'{nb} ({lo}..{hi})':>22s} {expo:>8s}", flush=True)
            prev = r
    if quality:
        base = quality.get(0)
        print(f"\nutility and risk on {quality_n} records (SSE on z-scores; linkage: "
              "higher = safer)")
        print(f"{'variant':>12s} {'SSE':>10s} {'vs exact':>9s} {'SSE/SST':>8s} "
              f"{'IL1s':>8s} {'vs exact':>9s} {'linkage':>8s} {'diff':>8s} {'reid %':>7s}")
        for b, r in sorted(quality.items()):
            name = "exact" if b == 0 else f"block {b}"
            rel = (lambda key: "-" if base is None else
                   f"{100 * (r[key] / base[key] - 1):+.2f}%")
            diff = "-" if base is None else f"{r['linkage'] - base['linkage']:+.4f}"
            print(f"{name:>12s} {r['sse']:10.1f} {rel('sse'):>9s} "
                  f"{100 * r['sse'] / r['sst']:7.3f}% {r['il1s']:8.5f} {rel('il1s'):>9s} "
                  f"{r['linkage']:8.4f} {diff:>8s} {100 * r['reid']:7.3f}")


if __name__ == "__main__":
    main()
