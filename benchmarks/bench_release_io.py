"""Reading a release back: ``read_release`` and whole-process ``sdceval evaluate``.

    python benchmarks/bench_release_io.py [--repeats 5]

Issue 6 target: ``sdceval evaluate --data adult --release REL --measures k_anonymity`` on
a Mondrian k=10 release of Adult (45222 records) beats pycanon's whole process (0.4 s).
Prints the minimum and median over ``--repeats`` runs of (a) ``read_release`` in this
process (data set already loaded) and (b) the whole ``sdceval evaluate`` process, wall
clock and CPU (user + system, which a loaded machine inflates less than wall clock).
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout
import sdceval  # noqa: E402
from sdceval.core.release_io import read_release  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    ds = sdceval.load_dataset("adult")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "rel.csv"
        sdceval.anonymize(ds, "mondrian", model="k", k=10).data.to_csv(path, index=False)
        read_release(ds, path)  # warm the file cache
        reads = []
        for _ in range(args.repeats):
            t0 = time.perf_counter()
            read_release(ds, path)
            reads.append(time.perf_counter() - t0)
        cmd = [sys.executable, "-m", "sdceval.cli", "evaluate", "--data", "adult",
               "--release", str(path), "--measures", "k_anonymity"]
        walls, cpus = [], []
        for _ in range(args.repeats):
            before = os.times()
            t0 = time.perf_counter()
            subprocess.run(cmd, check=True, capture_output=True)
            walls.append(time.perf_counter() - t0)
            after = os.times()
            cpus.append((after.children_user - before.children_user)
                        + (after.children_system - before.children_system))
    print(f"read_release (Mondrian k=10 release of adult, {ds.n} records): "
          f"min {min(reads):.3f} s, median {statistics.median(reads):.3f} s")
    print(f"sdceval evaluate --measures k_anonymity, whole process: wall min "
          f"{min(walls):.3f} s, median {statistics.median(walls):.3f} s; CPU min "
          f"{min(cpus):.3f} s, median {statistics.median(cpus):.3f} s (target < 0.4 s)")


if __name__ == "__main__":
    main()
