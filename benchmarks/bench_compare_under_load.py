"""`sdceval compare` on Census while two other CPU-bound processes run (issue 6 §3: a
shared 2-core server; target < 5 s), and the same without them.

Run: python benchmarks/bench_compare_under_load.py [--threads N]
Starts two Python busy loops, times the whole `sdceval compare --data census` process
(start-up included), stops the loops, and times it again on the quiet machine.  The
thread budget is the default (1) unless --threads is given; try --threads 0 (every
core) to see what oversubscription costs.  Other work on the machine adds to both
figures: the second line is the reference.
"""
from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time

TARGET = 5.0
BUSY = "while True: pass"


def launcher() -> list[str]:
    exe = shutil.which("sdceval")
    return [exe] if exe else [sys.executable, "-m", "sdceval.cli"]


def compare(threads: str | None) -> float:
    with tempfile.TemporaryDirectory() as tmp:
        cmd = launcher() + (["--threads", threads] if threads is not None else []) + \
            ["-q", "compare", "--data", "census", "--out", tmp]
        t0 = time.perf_counter()
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
        return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--threads", help="passed to sdceval (default: sdceval's default)")
    ap.add_argument("--busy", type=int, default=2, help="CPU-bound processes to start")
    args = ap.parse_args()
    label = f"--threads {args.threads}" if args.threads is not None else "default threads"
    busy = [subprocess.Popen([sys.executable, "-c", BUSY]) for _ in range(args.busy)]
    try:
        time.sleep(0.5)  # let them start spinning
        loaded = compare(args.threads)
    finally:
        for p in busy:
            p.kill()
        for p in busy:
            p.wait()
    quiet = compare(args.threads)
    status = "PASS" if loaded < TARGET else "MISS"
    print(f"sdceval compare --data census ({label}), {args.busy} busy processes: "
          f"{loaded:5.1f} s (target < {TARGET:.0f} s) {status}")
    print(f"sdceval compare --data census ({label}), no busy processes:  {quiet:5.1f} s")


if __name__ == "__main__":
    main()
