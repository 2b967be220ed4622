"""The measures that dominate at scale on large synthetic tables (issue 21 item 7;
target: 1 000 000 records in well under a minute each, within a few hundred MB beyond
the data, one thread under the default budget): propensity, emd, linkage_risk,
reidentification, query_error and the class counts k_anonymity, discernibility and
avg_class_size.

For n = 100 000 and 1 000 000 records (and 10 000 000 with ``--big``), two tables:

* **numeric** (propensity, emd, linkage_risk, reidentification): 13 numeric attributes,
  skewed and correlated (``exp`` of 4 latent factors plus noise), released as an
  external table (``--release``): ``noise``, additive noise of 0.5 sd per attribute
  (distinct rows: nearest neighbours far apart), and/or ``groups``, microaggregation-like
  groups of 5 consecutive records along the first attribute replaced by their mean
  (ties, as benchmarks/bench_linkage.py); nearest-neighbour cost depends on which;
  ``census-noise`` / ``census-groups``: the same releases of a table with CASC
  Census's 13 marginals and rank correlation (`census_like`: ties and the strong
  correlation of real income data; the noise is correlated, ``N(0, 0.5 Σ)``).  The
  exact nearest-neighbour search is far harder on the first table (13 weakly
  dependent attributes) than on the second;
* **mixed** (query_error and the class counts): 5 QIs of realistic domains, age 17..90
  (integers, `build_intervals`: 5-year to 40-year intervals), a 5-digit zip code of 300
  values in 30 areas (Zipf-like popularity, `build_masking`), sex (`build_flat`),
  education of 16 values and marital status of 7 (`build_grouping`), and a sensitive
  occupation of 14 values depending on education; categorical columns are pandas
  categoricals (as a data set read with category dtypes); released by full-domain
  generalization at the fixed lattice node ``MIXED_NODE`` (age by 10 years, zip to its
  3-digit area, sex kept, education in 4 groups, marital status in 3) with Dewri et
  al.'s rule and η = 1 % (``sdceval.anonymize(ds, "generalization", levels=...)``).

Each (measure, release, implementation, n) runs in a fresh subprocess, which builds the
table and the release first (neither is timed) and then prints

* wall time and CPU time (user + system, every thread) of the measure call, through the
  registry (`MeasureSpec.evaluate`: parameters, release check, thread budget); the call
  is the first of the process, so lazy imports (scikit-learn, POT: ~1-2 s) and
  per-data-set caches (query_error's workload and its actual counts) count, as they do
  for ``sdceval evaluate``; CPU / wall above 1 means more than one thread;
* the data's size (``data MB``: both tables as data frames, deep, plus the release's
  arrays: classes, cells, suppression flags), the RSS before the call (the data, the
  interpreter and the imported libraries) and the peak RSS during it (sampled every
  10 ms, and ``ru_maxrss``), and their difference (``+MB``: peak over the data);

then the growth exponent log(t2/t1) / log(n2/n1) between consecutive sizes and, with
``--impl new,old``, the ratio old / new.  ``old`` is the measure's module in git
revision ``--old-rev`` (default ``OLD_REV``: the dense propensity fit and the exact-only
EMD, before issue 21 item 7; ``--old-rev HEAD`` compares uncommitted changes), loaded
from ``git show`` into a temporary module and its function called directly; it is
skipped when the module is identical to the working tree's, and for checks generated
from the privacy-model registry (``k_anonymity``: no module-level function).  A
measurement whose process (building the table included) runs longer than ``--timeout``
seconds is stopped and reported as ``>`` (its CPU time so far is shown).

Run: python benchmarks/bench_measures_scale.py [--big] [--impl new,old]
         [--measures propensity,emd,...] [--release noise,groups]
         [--sizes 100000,1000000] [--timeout 600] [--old-rev REV]
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
#: measure -> (module in sdceval.measures, module-level function or None, table); None:
#: a check generated from the privacy-model registry (sdceval.measures.privacy_checks)
MEASURES = {
    "propensity": ("propensity", "propensity", "numeric"),
    "emd": ("emd", "emd", "numeric"),
    "linkage_risk": ("linkage", "linkage_risk", "numeric"),
    "reidentification": ("reidentification", "reidentification", "numeric"),
    "query_error": ("queries", "query_error", "mixed"),
    "k_anonymity": ("privacy_checks", None, "mixed"),
    "discernibility": ("information_loss", "discernibility", "mixed"),
    "avg_class_size": ("information_loss", "avg_class_size", "mixed"),
}
NUMERIC_RELEASES = ("noise", "groups", "census-noise", "census-groups")
#: the mixed table's release: a lattice node (age, zip, sex, education, marital)
MIXED_NODE = "2,2,0,1,1"
MIXED_RELEASE = "generalization"
#: microaggregation-like groups of the "groups" release
GROUP_SIZE = 5


def census_like(n: int, rng):
    """n records with CASC Census's 13 marginals (its own values: ties as in Census) and
    its rank correlation (a Gaussian copula fitted to the normal scores of its ranks)."""
    import numpy as np
    from scipy.stats import norm

    import sdceval
    from sdceval.measures.linkage import rank_matrix
    x0 = sdceval.load_dataset("census").numeric_matrix()
    z0 = norm.ppf((rank_matrix(x0) - 0.5) / len(x0))
    u = norm.cdf(rng.multivariate_normal(np.zeros(x0.shape[1]), np.corrcoef(z0.T), size=n))
    return np.column_stack([np.quantile(x0[:, j], u[:, j], method="inverted_cdf")
                            for j in range(x0.shape[1])])


def table(n: int, seed: int = 0, release: str = "noise"):
    """(original, release) float64 arrays (n, 13), built column by column; ``census-*``
    releases: the original is `census_like` and ``census-noise`` adds correlated noise
    ``N(0, 0.5 Σ)`` (the ``noise`` method at gamma = 0.5)."""
    import numpy as np
    rng = np.random.default_rng(seed)
    if release.startswith("census-"):
        x = census_like(n, rng)
        if release == "census-noise":
            return x, x + rng.multivariate_normal(np.zeros(x.shape[1]),
                                                  0.5 * np.cov(x.T), size=n)
        return x, _groups(x)
    factors = rng.normal(size=(n, 4))
    loadings = rng.normal(size=(4, N_ATTRIBUTES))
    x = np.empty((n, N_ATTRIBUTES))
    y = np.empty((n, N_ATTRIBUTES))
    for j in range(N_ATTRIBUTES):
        x[:, j] = np.exp(0.25 * (factors @ loadings[:, j]) + 0.3 * rng.normal(size=n))
        y[:, j] = x[:, j] + rng.normal(0.0, 0.5 * x[:, j].std(), size=n)
    if release == "groups":
        # the noise drawn above is discarded, so the original is the same table for
        # both releases
        y = _groups(x)
    elif release != "noise":
        raise ValueError(f"unknown numeric release {release!r}")
    return x, y


def _groups(x):
    """Records sorted by the first attribute, cut into runs of GROUP_SIZE, each
    attribute replaced by its run's mean."""
    import numpy as np
    n = len(x)
    y = np.empty_like(x)
    order = np.argsort(x[:, 0], kind="stable")
    starts = np.arange(0, n, GROUP_SIZE)
    sizes = np.diff(np.r_[starts, n])
    for j in range(x.shape[1]):
        y[order, j] = np.repeat(np.add.reduceat(x[order, j], starts) / sizes, sizes)
    return y


def mixed_table(n: int, seed: int = 0):
    """The mixed data set (module docstring): 5 QIs with built hierarchies and a
    sensitive occupation."""
    import numpy as np
    import pandas as pd

    from sdceval import Dataset, Schema
    from sdceval.core.hierarchy_builders import (build_flat, build_grouping,
                                                 build_intervals, build_masking)
    rng = np.random.default_rng(seed)
    age = np.clip(rng.normal(40, 13, n).round(), 17, 90).astype(np.int64)
    areas = rng.choice(1000, 30, replace=False)
    zips = [f"{a:03d}{o:02d}" for a in areas for o in rng.choice(100, 10, replace=False)]
    popularity = 1.0 / np.arange(1, len(zips) + 1) ** 0.8
    zip_i = rng.choice(len(zips), n, p=popularity / popularity.sum())
    sex_i = (rng.random(n) < 0.35).astype(np.int64)
    edu_i = rng.binomial(15, 0.55, n)
    mar_i = rng.choice(7, n, p=[.45, .3, .1, .06, .04, .03, .02])
    occ_i = (edu_i // 2 + rng.integers(0, 6, n)) % 14
    edu = [f"e{i + 1}" for i in range(16)]
    mar = ["married", "never-married", "divorced", "separated", "widowed",
           "spouse-absent", "af-spouse"]
    occ = [f"occ{i + 1}" for i in range(14)]
    cat = pd.Categorical.from_codes
    frame = pd.DataFrame({"age": age, "zip": cat(zip_i, zips), "sex": cat(sex_i, ["F", "M"]),
                          "education": cat(edu_i, edu), "marital": cat(mar_i, mar),
                          "occupation": cat(occ_i, occ)})
    hierarchies = {"age": build_intervals(range(17, 91), name="age"),
                   "zip": build_masking(zips, name="zip"),
                   "sex": build_flat(["F", "M"], name="sex"),
                   "education": build_grouping(edu, name="education"),
                   "marital": build_grouping(mar, name="marital")}
    schema = Schema.from_roles(frame, qi=["age", "zip", "sex", "education", "marital"],
                               sensitive="occupation", hierarchies=hierarchies)
    return Dataset(frame, schema, name="mixed")


def build_case(measure: str, n: int, release: str):
    """(data set, release, data bytes) of ``measure``'s table (module docstring)."""
    import numpy as np
    import pandas as pd

    import sdceval
    from sdceval import Dataset, Release, Schema
    if MEASURES[measure][2] == "numeric":
        x, y = table(n, release=release)
        cols = [f"v{j}" for j in range(x.shape[1])]
        frame = pd.DataFrame(x, columns=cols)
        ds = Dataset(frame, Schema.from_roles(frame, numeric=cols), name="synthetic")
        rel = Release(pd.DataFrame(y, columns=cols), method=release, kind="external")
        del x, y
    else:
        ds = mixed_table(n)
        rel = sdceval.anonymize(ds, "generalization", levels=MIXED_NODE)
    arrays = [rel.classes, rel.suppressed, rel.sensitive_codes]
    arrays += [a for cell in (rel.cells or {}).values() for a in cell]
    size = (int(ds.frame.memory_usage(deep=True).sum())
            + int(rel.data.memory_usage(deep=True).sum())
            + sum(int(np.asarray(a).nbytes) for a in arrays if a is not None))
    return ds, rel, size


def old_source(module: str, rev: str) -> str | None:
    """The measure module ``module`` at git revision ``rev`` (None if unreadable)."""
    out = subprocess.run(["git", "-C", REPO, "show", f"{rev}:sdceval/measures/{module}.py"],
                         capture_output=True, text=True)
    return out.stdout if out.returncode == 0 else None


def load_old(module: str, rev: str):
    """Import the old module under another name, its measures left unregistered."""
    import importlib.util
    src = old_source(module, rev).replace(
        "from sdceval.core.registry import Param, register_measure",
        "from sdceval.core.registry import Param\n"
        "def register_measure(*a, **k):\n    return lambda f: f")
    path = os.path.join(tempfile.mkdtemp(prefix="sdceval_old_"), f"old_{module}.py")
    with open(path, "w") as f:
        f.write(src)
    spec = importlib.util.spec_from_file_location(f"old_{module}", path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod            # dataclasses look their module up there
    spec.loader.exec_module(mod)
    return mod


def child(measure: str, impl: str, n: int, rev: str, release: str) -> None:
    """One measurement in this (fresh) process; prints a JSON line."""
    import importlib

    from sdceval.core import threads
    from sdceval.core.registry import MEASURES as REGISTRY

    module, name, _ = MEASURES[measure]
    ds, rel, size = build_case(measure, n, release)
    importlib.import_module(f"sdceval.measures.{module}")
    if impl == "old":
        func = getattr(load_old(module, rev), name)
    else:
        spec = REGISTRY.get_spec(measure)

        def func(dataset, rel):
            return spec.evaluate(dataset, rel)

    m, wall, cpu, before, peak = sampled_call(func, ds, rel)
    print(json.dumps({"wall": wall, "cpu": cpu, "before": before, "peak": peak,
                      "data": size, "value": m.value, "budget": threads.budget()}))


def sampled_call(func, *args):
    """``func(*args)`` under the thread budget (as the registry runs a measure), its
    resident memory sampled every 10 ms (and the kernel's high-water mark, which catches
    a peak shorter than that): ``(result, wall s, cpu s, rss before, peak rss)``."""
    import resource
    import threading

    import psutil

    from sdceval.core import threads
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
    with threads.limited():
        result = func(*args)
    wall = time.perf_counter() - t0
    r1 = resource.getrusage(resource.RUSAGE_SELF)
    done.set()
    watcher.join()
    maxrss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    if maxrss > maxrss_before:
        peak[0] = max(peak[0], maxrss)
    cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
    return result, wall, cpu, before, peak[0]


def measure_once(measure: str, impl: str, n: int, rev: str, release: str,
                 timeout: float) -> dict:
    import psutil
    cmd = [sys.executable, os.path.abspath(__file__), "--child", measure, impl, str(n),
           rev, release]
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
        # the child's whole life (building the table too): a bound, not the measure's
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


def old_skip(measure: str, rev: str) -> str | None:
    """Why the old implementation of ``measure`` is not run, or None."""
    module, name, _ = MEASURES[measure]
    if name is None:
        return "generated from the privacy-model registry: no module-level function"
    src = old_source(module, rev)
    with open(os.path.join(REPO, "sdceval", "measures", f"{module}.py")) as f:
        if src is None or src == f.read():
            return f"{rev} has the same module as the working tree"
    return None


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--big", action="store_true", help="also 10 000 000 records")
    ap.add_argument("--sizes", default="100000,1000000")
    ap.add_argument("--measures", default=",".join(MEASURES),
                    help="comma-separated (default: all: %(default)s)")
    ap.add_argument("--release", default="noise",
                    help="numeric tables' releases: noise, groups or noise,groups "
                         "(the mixed table's is always the generalization)")
    ap.add_argument("--impl", default="new", help="new, old or new,old")
    ap.add_argument("--old-rev", default=OLD_REV,
                    help="git revision of the old implementation (default: %(default)s)")
    ap.add_argument("--timeout", type=float, default=600.0,
                    help="seconds per measurement (its whole process) before it is "
                         "stopped")
    ap.add_argument("--child", nargs=5, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        measure, impl, n, rev, release = args.child
        child(measure, impl, int(n), rev, release)
        return
    sizes = [int(s) for s in args.sizes.split(",")]
    if args.big and 10_000_000 not in sizes:
        sizes.append(10_000_000)
    impls = args.impl.split(",")
    measures = [m.strip() for m in args.measures.split(",") if m.strip()]
    releases = [r.strip() for r in args.release.split(",") if r.strip()]
    for m in measures:
        if m not in MEASURES:
            ap.error(f"unknown measure {m!r} (known: {', '.join(MEASURES)})")
    for r in releases:
        if r not in NUMERIC_RELEASES:
            ap.error(f"unknown release {r!r} (known: {', '.join(NUMERIC_RELEASES)})")
    cases = [(m, r) for m in measures
             for r in (releases if MEASURES[m][2] == "numeric" else [MIXED_RELEASE])]
    from sdceval.core import threads
    print(f"numeric table: {N_ATTRIBUTES} attributes; releases: noise = additive noise "
          f"0.5 sd, groups = means of {GROUP_SIZE} consecutive records along v0")
    print(f"mixed table: 5 QIs (age, zip, sex, education, marital), sensitive occupation; "
          f"release: generalization at node {MIXED_NODE}, eta 1 %")
    print(f"thread budget {threads.budget()} (SDCEVAL_THREADS), {threads.cores()} cores; "
          f"load average {os.getloadavg()[0]:.1f}")
    head = (f"{'measure':16s} {'release':14s} {'impl':4s} {'n':>10s} {'wall s':>8s} "
            f"{'cpu s':>8s} {'data MB':>8s} {'RSS before MB':>13s} {'peak MB':>8s} "
            f"{'+MB':>7s}  value")
    print(head)
    mb = 1 / 2 ** 20
    results: dict = {}
    for measure, release in cases:
        for impl in impls:
            if impl == "old":
                why = old_skip(measure, args.old_rev)
                if why:
                    print(f"{measure:16s} {release:14s} old  (skipped: {why})")
                    continue
            for n in sizes:
                r = measure_once(measure, impl, n, args.old_rev, release, args.timeout)
                results[measure, release, impl, n] = r
                row = f"{measure:16s} {release:14s} {impl:4s} {n:>10d}"
                if "error" in r:
                    print(f"{row} error: {r['error']}", flush=True)
                elif r.get("timeout"):
                    print(f"{row} {fmt_t(r, 'wall'):>8s} {fmt_t(r, 'cpu'):>8s}  (stopped "
                          "after --timeout)", flush=True)
                else:
                    print(f"{row} {r['wall']:8.2f} {r['cpu']:8.2f} {r['data'] * mb:8.1f} "
                          f"{r['before'] * mb:13.0f} {r['peak'] * mb:8.0f} "
                          f"{(r['peak'] - r['before']) * mb:7.0f}  {r['value']:.12g}",
                          flush=True)
    print()
    for measure, release in cases:
        for impl in impls:
            rows = [(n, results.get((measure, release, impl, n))) for n in sizes]
            rows = [(n, r) for n, r in rows if r and "error" not in r]
            for (n1, r1), (n2, r2) in zip(rows, rows[1:]):
                if r1.get("timeout"):
                    continue
                exps = [math.log(r2[k] / r1[k]) / math.log(n2 / n1) for k in ("wall", "cpu")]
                bound = ">=" if r2.get("timeout") else ""
                print(f"growth {measure} {release} {impl} {n1}->{n2}: exponent wall "
                      f"{bound}{exps[0]:.2f}, cpu {bound}{exps[1]:.2f}")
        if "old" in impls and "new" in impls:
            for n in sizes:
                o = results.get((measure, release, "old", n))
                w = results.get((measure, release, "new", n))
                if not o or not w or "error" in o or "error" in w or w.get("timeout"):
                    continue
                bound = ">=" if o.get("timeout") else ""
                line = (f"old/new {measure} {release} n={n}: wall {bound}"
                        f"{o['wall'] / w['wall']:.1f}x, cpu {bound}{o['cpu'] / w['cpu']:.1f}x")
                if not o.get("timeout"):
                    diff = abs(w['value'] - o['value'])
                    rel = diff / abs(o['value']) if o['value'] else diff
                    line += (f", peak-over-data {(o['peak'] - o['before']) * mb:.0f} MB "
                             f"vs {(w['peak'] - w['before']) * mb:.0f} MB, value "
                             f"rel. diff {rel:.1e}")
                print(line)


if __name__ == "__main__":
    main()
