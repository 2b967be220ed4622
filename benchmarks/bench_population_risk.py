"""Population risk and local suppression of a survey file at 1 000 000 records
(issue 29, "Done when", last item): sdceval's ``individual_risk`` (approx and exact),
``household_risk`` and ``local_suppression`` (k = 2, k = 3, and the individual-risk
target ``risk = 0.1`` with the design weights), optionally beside the real sdcMicro.

The file (`survey`): a synthetic sample of ``n`` persons in households of 1-8 members,
made with the bundled survey's generator (docs/examples/make_survey.py: its population
model, with as many households as ``n`` persons need; the last household is cut to
give exactly ``n`` records), seeded.  Seven categorical keys of the sizes a statistical
office publishes: region (12), urban/rural (2), household size (8), sex (2), age band
(20 five-year bands, 95+ the last), marital status (4), education (4).  Design weights
as the survey's: per household ``1/f`` of its region x urban/rural stratum (sampling
fractions 0.5 %-2.5 %, small and rural strata oversampled) times a lognormal
nonresponse/calibration adjustment (sd 0.25 on the log scale, mean 1 in the stratum),
so that weights vary within strata; rounded to 4 decimals (the CSV given to sdcMicro
holds the same numbers).

Measured, one thread (``sdceval.core.threads.set_budget(1)``), each operation through
the public API on ``sdceval.as_dataset(df, qi=KEYS, weight="w", household="hid")``:
``evaluate(ds, rel0, "individual_risk", method=...)`` and ``"household_risk"`` on the
release of the unchanged keys (``anonymize(ds, "recode", level=0)``), and
``anonymize(ds, "local_suppression", ...)``:

* wall time (``time.perf_counter``) and CPU time of the process;
* peak memory, two readings: the peak RSS (``VmHWM`` of /proc/self/status, reset before
  each operation by writing 5 to /proc/self/clear_refs; psutil has no peak RSS on
  Linux, so the kernel's high-water mark is read directly), shown as the peak and as
  its rise over the RSS before the operation (the data set and the release are
  already held); and tracemalloc's peak of the Python-heap and numpy allocations made
  during the operation, in a second, traced run of the same operation (tracemalloc
  slows allocation-heavy code, so the times come from the untraced run; ``--no-trace``
  skips it).

Reference, measured in the same run: reading the keys into integer codes, the cost
every tool pays before it can count a key combination — ``pandas.factorize`` of each
key column and of the combined key (mixed-radix codes), i.e. the frequency table's
grouping; the operations' times are printed as multiples of it.  The time to build
the Dataset (``as_dataset`` and its codes, weights and households) is shown beside it.

``--sdcmicro N``: the same file at ``N`` records is written to a temporary CSV and
given to sdcMicro 5.8.1 in R (``Rscript``; the library in /tmp/sdcmicro/Rlib or R's
own): ``createSdcObj(keyVars, w, hhId)`` (which computes the individual and household
risks), ``measure_risk`` alone, ``localSuppression(obj, k = 2)`` and
``indivRisk(freqCalc(...), method="exact")``, in this order, each timed with
``system.time`` inside R, with R's peak RSS after it; then whether sdcMicro's global
risk, household risk and exact risks (per record, where sdcMicro's alternating sum is
finite) equal sdceval's to 1e-9 relative and its suppression counts per key equal
sdceval's exactly.  R is stopped after ``--r-timeout`` seconds (default 300); the
steps finished by then are printed, and the time it had run.  Without Rscript or
sdcMicro it says so and skips.  sdcMicro holds everything in memory and is
single-threaded, as sdceval is here.

Run:  python benchmarks/bench_population_risk.py [--sizes 1000000 100000]
      [--sdcmicro 100000] [--r-timeout 300] [--no-trace] [--skip-exact]
(about 30 s for 1 000 000 and 100 000 records; ``--sdcmicro 100000`` adds about 4
minutes, nearly all of it sdcMicro's localSuppression; numbers in benchmarks/README.md)
"""
from __future__ import annotations

import argparse
import ctypes
import gc
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))  # run from a checkout
sys.path.insert(0, str(HERE.parent / "docs" / "examples"))

import make_survey  # the bundled survey's generator (docs/examples)

KEYS = ["region", "urbrur", "hhsize", "sex", "ageband", "marital", "education"]
SEED = 2029
RLIB = "/tmp/sdcmicro/Rlib"
MB = 1024 * 1024


# -- the file --------------------------------------------------------------------------
def survey(n: int, seed: int = SEED) -> pd.DataFrame:
    """``n`` persons in households (module docstring): the 7 keys, ``w``, ``hid``."""
    rng = np.random.default_rng(seed)
    saved = make_survey.HOUSEHOLDS
    make_survey.HOUSEHOLDS = int(n / 2.2) + 1000   # mean household size about 2.4
    try:
        pop = make_survey.population(rng)
    finally:
        make_survey.HOUSEHOLDS = saved
    if len(pop) < n:
        raise SystemExit(f"generator made {len(pop)} < {n} persons")
    pop = pop.iloc[:n]
    hid = pd.factorize(pop["hid"].to_numpy())[0]          # households 0..H-1, in order
    size = np.bincount(hid)                               # the last one may be cut
    hh_first = np.flatnonzero(np.r_[True, hid[1:] != hid[:-1]])
    region = pop["region"].to_numpy()[hh_first]
    urbrur = pop["urbrur"].to_numpy()[hh_first]
    # design weight per household: 1/f of its stratum x a lognormal adjustment with
    # mean 1 in the stratum (make_survey.sample's rule, without drawing the sample)
    stratum = (region - 1) * 2 + (urbrur - 1)
    count = np.bincount(stratum, minlength=2 * make_survey.REGIONS).astype(float)
    rural = np.arange(len(count)) % 2 == 1
    with np.errstate(divide="ignore"):
        frac = np.clip(0.5 / np.sqrt(count / count.max()) / 100 * (1.0 + rural),
                       0.005, 0.025)
    adj = rng.lognormal(0.0, 0.25, len(hh_first))
    mean_adj = np.bincount(stratum, weights=adj) / np.maximum(
        np.bincount(stratum), 1)
    w_hh = np.round(adj / mean_adj[stratum] / frac[stratum], 4)
    age = pop["age"].to_numpy()
    return pd.DataFrame({
        "hid": hid + 1,
        "region": pop["region"].to_numpy(), "urbrur": pop["urbrur"].to_numpy(),
        "hhsize": size[hid], "sex": pop["sex"].to_numpy(),
        "ageband": np.minimum(age // 5, 19) + 1,
        "marital": pop["marital"].to_numpy(), "education": pop["education"].to_numpy(),
        "w": w_hh[hid]})


# -- measuring -------------------------------------------------------------------------
def _status(field: str) -> float:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith(field):
                return int(line.split()[1]) / 1024   # kB -> MiB
    return float("nan")


def _reset_peak() -> bool:
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
        return True
    except OSError:
        return False


def _trim() -> None:
    """Give freed heap pages back to the OS (glibc), so that the RSS before an
    operation is what is held, not what earlier operations left resident."""
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):   # not glibc: the rise is then a lower bound
        pass


def measure(fn, trace: bool) -> tuple[object, dict]:
    """Run ``fn`` untraced (times, peak RSS), then traced (tracemalloc peak)."""
    gc.collect()
    _trim()
    before = _status("VmRSS")
    resettable = _reset_peak()
    t, c = time.perf_counter(), time.process_time()
    out = fn()
    m = {"time": time.perf_counter() - t, "cpu": time.process_time() - c,
         "rss_peak": _status("VmHWM"), "rss_before": before, "resettable": resettable}
    if trace:
        del out
        gc.collect()
        tracemalloc.start()
        out = fn()
        m["traced"] = tracemalloc.get_traced_memory()[1] / MB
        tracemalloc.stop()
    return out, m


def reference(df: pd.DataFrame) -> int:
    """The keys as integer codes and the combined key's codes (a frequency table's
    grouping): what every tool computes first.  Returns the number of combinations."""
    combined = np.zeros(len(df), dtype=np.int64)
    for k in KEYS:
        codes, uniq = pd.factorize(df[k].to_numpy())
        combined = combined * len(uniq) + codes
    return len(pd.factorize(combined)[1])


def operations(skip_exact: bool):
    import sdceval
    ops = [("individual_risk approx", lambda ds, r0: sdceval.evaluate(
                ds, r0, "individual_risk", method="approx")),
           ("individual_risk exact", lambda ds, r0: sdceval.evaluate(
                ds, r0, "individual_risk", method="exact")),
           ("household_risk", lambda ds, r0: sdceval.evaluate(ds, r0, "household_risk")),
           ("local_suppression k=2", lambda ds, r0: sdceval.anonymize(
                ds, "local_suppression", k=2)),
           ("local_suppression k=3", lambda ds, r0: sdceval.anonymize(
                ds, "local_suppression", k=3)),
           ("local_suppression risk=0.1", lambda ds, r0: sdceval.anonymize(
                ds, "local_suppression", target="risk", risk=0.1))]
    return [o for o in ops if not (skip_exact and "exact" in o[0])]


def summary(name: str, out) -> str:
    if name.startswith("local_suppression"):
        return (f"{out.info['total']:,} suppressions, {out.info['passes']} passes, "
                f"{out.info['n_classes']:,} published combinations")
    d = out.details
    return (f"value {out.value:.6g}, expected re-identifications "
            f"{d['expected_reidentifications']:.1f}")


def dataset(df: pd.DataFrame):
    import sdceval
    ds = sdceval.as_dataset(df, qi=KEYS, weight="w", household="hid", name="survey")
    for q in KEYS:
        ds.codes(q)
    ds.weights, ds.households   # noqa: B018  (built and cached: part of the data)
    return ds


def run_size(n: int, args) -> None:
    import sdceval
    df = survey(n)
    print(f"\n== n = {n:,} records in {df['hid'].nunique():,} households; weights "
          f"{df['w'].min():.1f}..{df['w'].max():.1f} (sum {df['w'].sum():,.0f})")
    u, ref = measure(lambda: reference(df), trace=False)
    ds, mds = measure(lambda: dataset(df), trace=False)
    rel0, mrel = measure(lambda: sdceval.anonymize(ds, "recode", level=0), trace=False)
    rt = ref["time"]
    print(f"{u:,} key combinations present (of {12 * 2 * 8 * 2 * 20 * 4 * 4:,} possible)")
    print(f"reference: factorize the keys and their combinations  {rt:8.3f} s")
    print(f"as_dataset + codes, weights, households                {mds['time']:8.3f} s"
          f"  ({mds['time'] / rt:.1f} x reference)")
    print(f"release of the unchanged keys (recode level=0)         {mrel['time']:8.3f} s"
          f"  ({mrel['time'] / rt:.1f} x reference)")
    if not ref["resettable"]:
        print("(peak RSS cannot be reset here: the peaks below are the process's)")
    head = (f"{'operation':28s} {'wall s':>8s} {'cpu s':>8s} {'x ref':>7s} "
            f"{'RSS peak MiB':>13s} {'+ over data':>11s} "
            f"{'traced MiB':>10s}  result")
    print(head)
    for name, fn in operations(args.skip_exact):
        out, m = measure(lambda fn=fn: fn(ds, rel0), trace=not args.no_trace)
        traced = f"{m['traced']:10.0f}" if "traced" in m else f"{'-':>10s}"
        print(f"{name:28s} {m['time']:8.2f} {m['cpu']:8.2f} {m['time'] / rt:7.1f} "
              f"{m['rss_peak']:13.0f} {m['rss_peak'] - m['rss_before']:11.0f} "
              f"{traced}  {summary(name, out)}", flush=True)
        del out


# -- sdcMicro --------------------------------------------------------------------------
R_SCRIPT = r"""
.libPaths(c("{rlib}", .libPaths())); suppressMessages(library(sdcMicro))
hwm <- function() {{ s <- grep("^VmHWM", readLines("/proc/self/status"), value = TRUE)
  as.numeric(strsplit(trimws(sub("VmHWM:", "", s)), " ")[[1]][1]) / 1024 }}
step <- function(name, t) cat(sprintf("TIME %s %.3f %.0f\n", name, t[["elapsed"]], hwm()))
keys <- c({keys})
t <- system.time(d <- read.csv("{csv}")); step("read.csv", t)
for (k in keys) d[[k]] <- as.factor(d[[k]])
t <- system.time(o <- createSdcObj(d, keyVars = keys, w = "w", hhId = "hid")); step("createSdcObj", t)
g <- o@risk$global
cat(sprintf("VALUE global %.17g\nVALUE global_ER %.17g\nVALUE hier %.17g\nVALUE hier_ER %.17g\n",
            g$risk, g$risk_ER, g$hier_risk, g$hier_risk_ER))
t <- system.time(m <- measure_risk(d, keyVars = keys, w = "w", hid = "hid")); step("measure_risk", t)
t <- system.time(o2 <- localSuppression(o, k = 2)); step("localSuppression_k2", t)
s <- o2@localSuppression$supps
cat("SUPPS", paste(names(s), unlist(s), sep = "=", collapse = " "), "\n")
flush(stdout())
t <- system.time(e <- indivRisk(freqCalc(d, keyVars = keys, w = "w"), method = "exact")); step("indivRisk_exact", t)
cat(sprintf("VALUE exact %.17g\nVALUE exact_nonfinite %d\n", mean(e$rk), sum(!is.finite(e$rk))))
writeBin(as.double(e$rk), "{rk}")
flush(stdout())
"""


def r_available() -> str | None:
    if shutil.which("Rscript") is None:
        return "Rscript not found"
    code = (f'.libPaths(c("{RLIB}", .libPaths())); '
            'cat(requireNamespace("sdcMicro", quietly = TRUE))')
    probe = subprocess.run(["Rscript", "-e", code], capture_output=True, text=True,
                           timeout=120, check=False)
    if "TRUE" not in probe.stdout:
        return "the R package sdcMicro is not installed (nor in " + RLIB + ")"
    return None


def run_sdcmicro(n: int, args) -> None:
    import sdceval
    print(f"\n== sdcMicro 5.8.1 at n = {n:,}")
    why = r_available()
    if why:
        print(f"skipped: {why}")
        return
    df = survey(n)
    tmp = tempfile.mkdtemp(prefix="bench_poprisk_")
    csv = os.path.join(tmp, "survey.csv")
    df.to_csv(csv, index=False)
    # sdceval's values on the same file
    ds = dataset(df)
    rel0 = sdceval.anonymize(ds, "recode", level=0)
    ours = {}
    t = time.perf_counter()
    m = sdceval.evaluate(ds, rel0, "individual_risk")
    ours["individual_risk approx"] = time.perf_counter() - t
    t = time.perf_counter()
    h = sdceval.evaluate(ds, rel0, "household_risk")
    ours["household_risk"] = time.perf_counter() - t
    t = time.perf_counter()
    e = sdceval.evaluate(ds, rel0, "individual_risk", method="exact")
    ours["individual_risk exact"] = time.perf_counter() - t
    e_fk = pd.Series(rel0.classes).map(pd.Series(rel0.classes).value_counts()).to_numpy()
    t = time.perf_counter()
    ls = sdceval.anonymize(ds, "local_suppression", k=2)
    ours["local_suppression k=2"] = time.perf_counter() - t
    supps = {q: int(v) for q, v in ls.info["suppressions"].items()}
    del ds, rel0, ls
    gc.collect()

    script = os.path.join(tmp, "bench.R")
    rk_file = os.path.join(tmp, "rk_exact.bin")
    with open(script, "w") as fh:
        fh.write(R_SCRIPT.format(rlib=RLIB, csv=csv, rk=rk_file,
                                 keys=", ".join(f'"{k}"' for k in KEYS)))
    start = time.perf_counter()
    proc = subprocess.Popen(["Rscript", script], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        stdout, stderr = proc.communicate(timeout=args.r_timeout)
        finished = True
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGTERM)   # R, which we started, and nothing else
        stdout, stderr = proc.communicate()
        finished = False
    elapsed = time.perf_counter() - start
    rk = np.fromfile(rk_file, dtype="<f8") if os.path.exists(rk_file) else None
    shutil.rmtree(tmp, ignore_errors=True)
    times, values, r_supps = {}, {}, None
    for line in stdout.splitlines():
        parts = line.split()
        if parts[:1] == ["TIME"]:
            times[parts[1]] = (float(parts[2]), float(parts[3]))
        elif parts[:1] == ["VALUE"]:
            values[parts[1]] = float(parts[2])
        elif parts[:1] == ["SUPPS"]:
            r_supps = {kv.split("=")[0]: int(kv.split("=")[1]) for kv in parts[1:]}
    print(f"{'sdcMicro step':22s} {'elapsed s':>10s} {'R peak RSS MiB':>15s}")
    for name, (sec, rss) in times.items():
        print(f"{name:22s} {sec:10.2f} {rss:15.0f}")
    if not finished:
        done = sum(sec for sec, _ in times.values())
        print(f"stopped after {elapsed:.0f} s (--r-timeout {args.r_timeout:g}); the "
              f"step after the last listed had run about {elapsed - done:.0f} s "
              "(R's start-up included) and not finished")
    elif proc.returncode != 0:
        print(f"Rscript failed ({proc.returncode}): {stderr.strip()[-500:]}")
    print("sdceval on the same file: " + ", ".join(
        f"{k} {v:.2f} s" for k, v in ours.items()))

    def rel(a, b):
        return abs(a - b) / max(abs(b), 1e-300)

    pairs = [("global risk", m.value, "global"),
             ("expected re-identifications", m.details["expected_reidentifications"],
              "global_ER"),
             ("household risk", h.value, "hier"),
             ("household expected", h.details["expected_reidentifications"], "hier_ER"),
             ("exact global risk", e.value, "exact")]
    for label, got, key in pairs:
        if key in values and not np.isfinite(values[key]):
            print(f"{label:28s} sdceval {got:.12g}  sdcMicro {values[key]} "
                  f"({int(values.get(key + '_nonfinite', 0)):,} records non-finite)")
        elif key in values:
            r = rel(got, values[key])
            print(f"{label:28s} sdceval {got:.12g}  sdcMicro {values[key]:.12g}  "
                  f"rel. diff {r:.1e}  {'EQUAL' if r <= 1e-9 else 'DIFFERENT'} (1e-9)")
    if rk is not None and len(rk) == n:
        # sdcMicro's alternating sum overflows for large f_k (NaN/Inf there): compare
        # the records where it is finite (sdceval.privacy.population_risk, notes)
        ok = np.isfinite(rk)
        ours_rk = e.per_record
        d = np.abs(ours_rk[ok] - rk[ok]) / np.maximum(np.abs(rk[ok]), 1e-300)
        fk = e_fk[~ok]
        print(f"exact per record: sdcMicro finite on {ok.sum():,} of {n:,} records, "
              f"max rel. diff there {d.max():.1e} "
              f"({'EQUAL' if d.max() <= 1e-9 else 'DIFFERENT'} at 1e-9); "
              + (f"non-finite where f_k >= {fk.min()} (sdceval finite there: "
                 f"{bool(np.isfinite(ours_rk[~ok]).all())})" if len(fk) else ""))
    print(f"suppressions k=2, sdceval : {supps} (total {sum(supps.values())})")
    if r_supps is not None:
        print(f"suppressions k=2, sdcMicro: {r_supps} (total {sum(r_supps.values())})  "
              f"{'EQUAL' if r_supps == supps else 'DIFFERENT'}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[1_000_000])
    ap.add_argument("--sdcmicro", type=int, default=None, metavar="N",
                    help="also run sdcMicro 5.8.1 (R) on the file at N records")
    ap.add_argument("--r-timeout", type=float, default=300.0)
    ap.add_argument("--no-trace", action="store_true",
                    help="skip the traced (tracemalloc) second run of each operation")
    ap.add_argument("--skip-exact", action="store_true")
    args = ap.parse_args(argv)
    from sdceval.core import threads
    threads.set_budget(1)
    for n in [] if args.sizes == [0] else args.sizes:
        run_size(n, args)
        gc.collect()
    if args.sdcmicro:
        run_sdcmicro(args.sdcmicro, args)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
