"""End-to-end `sdceval compare` timings (targets: Census <= 30 s, EIA <= 60 s, 2 cores).

Run: python benchmarks/bench_compare.py
Prints one line per data set with the wall time, evaluations and the target.
"""
import sys
import tempfile
import time

from sdceval.cli import main

TARGETS = {"census": 30.0, "eia": 60.0}


def bench(data: str) -> float:
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        code = main(["-q", "compare", "--data", data, "--out", tmp])
        dt = time.perf_counter() - t0
    if code != 0:
        sys.exit(f"compare on {data} failed with exit code {code}")
    return dt


if __name__ == "__main__":
    for data, target in TARGETS.items():
        dt = bench(data)
        status = "PASS" if dt <= target else "MISS"
        print(f"sdceval compare --data {data}: {dt:6.1f} s (target <= {target:.0f} s) {status}")
