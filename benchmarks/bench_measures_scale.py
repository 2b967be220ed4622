"""propensity and emd on large synthetic tables (issue 21 item 7; target: 1 000 000
records in well under a minute each, within a few hundred MB beyond the data, one
thread under the default budget).

For n = 100 000 and 1 000 000 records (and 10 000 000 with ``--big``) of a synthetic
13-attribute numeric table (skewed, correlated: ``exp`` of 4 latent factors plus
noise) and its release with additive noise (0.5 sd per attribute), each (measure,
implementation, n) runs in a fresh subprocess that prints

* wall time and CPU time (user + system, every thread) of the measure call: the call
  is the first of the process, so lazy imports (scikit-learn, POT: ~1-2 s) count, as
  they do for ``sdceval evaluate``; CPU / wall above 1 means more than one thread;
* RSS before the call (the data: the two tables as data frames) and the peak RSS
  during it (sampled every 10 ms, and ``ru_maxrss``), and their difference;

then the growth exponent log(t2/t1) / log(n2/n1) between consecutive sizes and, with
``--impl new,old``, the ratio old / new.  ``old`` is the implementation in git
revision ``--old-rev`` (default ``OLD_REV``: the dense propensity fit and the exact-only
EMD, before issue 21 item 7), loaded from ``git show`` into a temporary module; it is
skipped when identical to the working tree.  A measurement running
longer than ``--timeout`` seconds is stopped and reported as ``>`` (its CPU time so
far is shown).

Run: python benchmarks/bench_measures_scale.py [--big] [--impl new,old]
         [--measures propensity,emd] [--sizes 100000,1000000] [--timeout 600]
"""
from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
N_ATTRIBUTES = 13
#: the revision before the streamed propensity and the two-step EMD
OLD_REV = "fd83170~1"


def table(n: int, seed: int = 0):
    """(original, release) float64 arrays (n, 13), built column by column."""
    import numpy as np
    rng = np.random.default_rng(seed)
    factors = rng.normal(size=(n, 4))
    loadings = rng.normal(size=(4, N_ATTRIBUTES))
    x = np.empty((n, N_ATTRIBUTES))
    y = np.empty((n, N_ATTRIBUTES))
    for j in range(N_ATTRIBUTES):
        x[:, j] = np.exp(0.25 * (factors @ loadings[:, j]) + 0.3 * rng.normal(size=n))
        y[:, j] = x[:, j] + rng.normal(0.0, 0.5 * x[:, j].std(), size=n)
    return x, y


def old_source(name: str, rev: str) -> str | None:
    """The measure module ``name`` at git revision ``rev`` (None if unreadable)."""
    out = subprocess.run(["git", "-C", REPO, "show", f"{rev}:sdceval/measures/{name}.py"],
                         capture_output=True, text=True)
    return out.stdout if out.returncode == 0 else None


def load_old(name: str, rev: str):
    """Import the old module under another name, its measure left unregistered."""
    import importlib.util
    src = old_source(name, rev).replace(
        "from sdceval.core.registry import Param, register_measure",
        "from sdceval.core.registry import Param\n"
        "def register_measure(*a, **k):\n    return lambda f: f")
    path = os.path.join(tempfile.mkdtemp(prefix="sdceval_old_"), f"old_{name}.py")
    with open(path, "w") as f:
        f.write(src)
    spec = importlib.util.spec_from_file_location(f"old_{name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def child(measure: str, impl: str, n: int, rev: str) -> None:
    """One measurement in this (fresh) process; prints a JSON line."""
    import resource
    import threading

    import pandas as pd
    import psutil

    from sdceval import Dataset, Release, Schema
    from sdceval.core import threads

    x, y = table(n)
    cols = [f"v{j}" for j in range(N_ATTRIBUTES)]
    frame = pd.DataFrame(x, columns=cols)
    ds = Dataset(frame, Schema.from_roles(frame, numeric=cols), name="synthetic")
    rel = Release(pd.DataFrame(y, columns=cols), method="noise", kind="external")
    del x, y
    if impl == "old":
        module = load_old(measure, rev)
    else:
        import importlib
        module = importlib.import_module(f"sdceval.measures.{measure}")
    func = getattr(module, measure)

    proc = psutil.Process()
    before = proc.memory_info().rss
    maxrss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    peak = [before]
    done = threading.Event()

    def sample():
        while not done.is_set():
            peak[0] = max(peak[0], proc.memory_info().rss)
            done.wait(0.01)

    watcher = threading.Thread(target=sample, daemon=True)
    watcher.start()
    r0 = resource.getrusage(resource.RUSAGE_SELF)
    t0 = time.perf_counter()
    with threads.limited():                 # as the registry runs a measure
        m = func(ds, rel)
    wall = time.perf_counter() - t0
    r1 = resource.getrusage(resource.RUSAGE_SELF)
    done.set()
    watcher.join()
    maxrss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    if maxrss > maxrss_before:
        peak[0] = max(peak[0], maxrss)
    cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
    print(json.dumps({"wall": wall, "cpu": cpu, "before": before, "peak": peak[0],
                      "value": m.value, "budget": threads.budget()}))


def measure_once(measure: str, impl: str, n: int, rev: str, timeout: float) -> dict:
    import psutil
    cmd = [sys.executable, os.path.abspath(__file__), "--child", measure, impl, str(n),
           rev]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, cwd=REPO)
    t0 = time.perf_counter()
    cpu = 0.0
    while proc.poll() is None:
        try:
            times = psutil.Process(proc.pid).cpu_times()
            cpu = times.user + times.system
        except psutil.Error:
            pass
        if time.perf_counter() - t0 > timeout:
            proc.kill()                      # the child this function started
            proc.communicate()
            return {"timeout": True, "wall": time.perf_counter() - t0, "cpu": cpu}
        time.sleep(0.2)
    out, err = proc.communicate()
    if proc.returncode != 0:
        return {"error": err.strip().splitlines()[-1] if err.strip() else "failed"}
    return json.loads(out.strip().splitlines()[-1])


def fmt_t(r: dict, key: str) -> str:
    if "error" in r:
        return "error"
    return (">" if r.get("timeout") else "") + f"{r[key]:.1f}"


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--big", action="store_true", help="also 10 000 000 records")
    ap.add_argument("--sizes", default="100000,1000000")
    ap.add_argument("--measures", default="propensity,emd")
    ap.add_argument("--impl", default="new", help="new, old or new,old")
    ap.add_argument("--old-rev", default=OLD_REV,
                    help="git revision of the old implementation (default: %(default)s)")
    ap.add_argument("--timeout", type=float, default=600.0,
                    help="seconds per measurement before it is stopped")
    ap.add_argument("--child", nargs=4, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        measure, impl, n, rev = args.child
        child(measure, impl, int(n), rev)
        return
    sizes = [int(s) for s in args.sizes.split(",")]
    if args.big and 10_000_000 not in sizes:
        sizes.append(10_000_000)
    impls = args.impl.split(",")
    from sdceval.core import threads
    print(f"{N_ATTRIBUTES} numeric attributes; release: additive noise 0.5 sd; "
          f"thread budget {threads.budget()} (SDCEVAL_THREADS), {threads.cores()} cores; "
          f"load average {os.getloadavg()[0]:.1f}")
    print(f"{'measure':10s} {'impl':4s} {'n':>10s} {'wall s':>8s} {'cpu s':>8s} "
          f"{'RSS before MB':>13s} {'peak MB':>8s} {'+MB':>7s}  value")
    results: dict = {}
    for measure in args.measures.split(","):
        for impl in impls:
            if impl == "old":
                src = old_source(measure, args.old_rev)
                with open(os.path.join(REPO, "sdceval", "measures", f"{measure}.py")) as f:
                    if src is None or src == f.read():
                        print(f"{measure:10s} old  (skipped: {args.old_rev} has the same "
                              "module as the working tree)")
                        continue
            for n in sizes:
                r = measure_once(measure, impl, n, args.old_rev, args.timeout)
                results[measure, impl, n] = r
                if "error" in r:
                    print(f"{measure:10s} {impl:4s} {n:>10d} error: {r['error']}")
                elif r.get("timeout"):
                    print(f"{measure:10s} {impl:4s} {n:>10d} {fmt_t(r, 'wall'):>8s} "
                          f"{fmt_t(r, 'cpu'):>8s}  (stopped after --timeout)")
                else:
                    mb = 1 / 2 ** 20
                    print(f"{measure:10s} {impl:4s} {n:>10d} {r['wall']:8.1f} "
                          f"{r['cpu']:8.1f} {r['before'] * mb:13.0f} {r['peak'] * mb:8.0f} "
                          f"{(r['peak'] - r['before']) * mb:7.0f}  {r['value']:.12g}",
                          flush=True)
    print()
    for measure in args.measures.split(","):
        for impl in impls:
            rows = [(n, results.get((measure, impl, n))) for n in sizes]
            rows = [(n, r) for n, r in rows if r and "error" not in r]
            for (n1, r1), (n2, r2) in zip(rows, rows[1:]):
                if r1.get("timeout"):
                    continue
                exps = [math.log(r2[k] / r1[k]) / math.log(n2 / n1) for k in ("wall", "cpu")]
                bound = ">=" if r2.get("timeout") else ""
                print(f"growth {measure} {impl} {n1}->{n2}: exponent wall {bound}"
                      f"{exps[0]:.2f}, cpu {bound}{exps[1]:.2f}")
        if "old" in impls and "new" in impls:
            for n in sizes:
                o, w = results.get((measure, "old", n)), results.get((measure, "new", n))
                if not o or not w or "error" in o or "error" in w:
                    continue
                bound = ">=" if o.get("timeout") else ""
                line = (f"old/new {measure} n={n}: wall {bound}{o['wall'] / w['wall']:.1f}x, "
                        f"cpu {bound}{o['cpu'] / w['cpu']:.1f}x")
                if not o.get("timeout"):
                    line += (f", peak-over-data {(o['peak'] - o['before']) / 2**20:.0f} MB "
                             f"vs {(w['peak'] - w['before']) / 2**20:.0f} MB, value "
                             f"rel. diff {abs(w['value'] - o['value']) / abs(o['value']):.1e}")
                print(line)


if __name__ == "__main__":
    main()
