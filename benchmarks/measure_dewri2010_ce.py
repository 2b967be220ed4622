"""What the Dewri et al. 2010 write-up says about CE, nodes and Table 2(a), measured
(issue 22 item 18; docs/reproduction.md §4).

First run the study:

    sdceval -q --threads 2 run experiments/dewri2010_pbg.toml --out /tmp/dewri_check

then:  python benchmarks/measure_dewri2010_ce.py [/tmp/dewri_check] [--reached]

It reads the run's ``pbg<i>_*_{runs,archive,front}.csv`` and the paper's values from the
experiment file, and prints:

(a) over the ε = 1 jobs (every objective set of Table 1(b)/2(b)), the archive members
    that are not minimal PBGs (their quality vector is not in the front M) and how many
    of them share a unit box ⌊x/ε⌋ (`sdceval.pbg.dominance.boxes`) with a minimal PBG;
(b) per run, the distinct minimal quality vectors its archive misses;
(c) nodes evaluated against the paper's, in percent;
(d) CE as printed (a sum over the archive) and CE per member (sum / |archive|) against
    the paper's CE on each Table 1(b) row.  DEWRI.md §4.3 gives no CE tolerance, so
    the ratio ours/paper is printed with two plain criteria: within a factor 2, and
    within 2 paper standard errors (√(var/20));
(e) the Table 2(a) trend as ε grows, per objective set: RR under reading (i) (archive
    kept at ε) and (ii) (ε = 1 archive, RR at ε; DEWRI A35), CE sum and per member.

``--reached`` re-runs the ε = 1 seeds through the Python API (table-backed, same
seeds, same archives) and checks, for each non-minimal member, whether the run ever
evaluated a minimal PBG that dominates it.
"""
import sys
import tomllib
from pathlib import Path

import numpy as np
import pandas as pd

from sdceval.lattice.objectives import get_objective
from sdceval.pbg.dominance import boxes, dominates
from sdceval.pbg.metrics import ce

ROOT = Path(__file__).resolve().parents[1]
TOML = ROOT / "experiments" / "dewri2010_pbg.toml"


def jobs(out: Path):
    """(key, job options, runs, archive, front) per [[pbg]] job, in file order."""
    spec = tomllib.loads(TOML.read_text())
    for i, job in enumerate(spec["pbg"]):
        files = {k: next(out.glob(f"pbg{i}_*_{k}.csv")) for k in ("runs", "archive", "front")}
        yield (f"pbg{i}", job, pd.read_csv(files["runs"]), pd.read_csv(files["archive"]),
               pd.read_csv(files["front"]))


def rows_in(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Mask of the rows of ``a`` equal (exactly) to some row of ``b``."""
    keys = {tuple(r) for r in b.tolist()}
    return np.array([tuple(r) in keys for r in a.tolist()], dtype=bool)


def trend(xs) -> str:
    return " → ".join(f"{x:.3g}" for x in xs) + "  (" + ", ".join(
        "up" if b > a else "down" if b < a else "flat" for a, b in zip(xs, xs[1:])) + ")"


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    out = Path(args[0] if args else "/tmp/dewri_check")
    reached = "--reached" in sys.argv
    all_jobs = list(jobs(out))
    unit_jobs = [j for j in all_jobs if all(e == 1 for e in j[1]["eps"])]

    print("(a)/(b) ε = 1 jobs: non-minimal archive members, shared unit boxes, misses")
    tot_members = tot_nonmin = tot_share = 0
    nonmin_by_job = {}
    for key, job, runs, arch, front in unit_jobs:
        objs, eps = job["objectives"], job["eps"]
        goals = [get_objective(o).goal for o in objs]
        f = front[objs].to_numpy(float)
        fvec = np.unique(f, axis=0)
        fbox = {tuple(b) for b in boxes(f, eps).tolist()}
        n_mem = n_non = n_share = 0
        misses, ce_pos_runs = [], 0
        nonmin_by_job[key] = []
        for seed, a in arch.groupby("seed"):
            v = a[objs].to_numpy(float)
            ok = rows_in(v, f)
            non = v[~ok]
            n_mem += len(v)
            n_non += len(non)
            n_share += sum(tuple(b) in fbox for b in boxes(non, eps).tolist()) if len(non) else 0
            misses.append(int((~rows_in(fvec, v)).sum()))
            ce_run = float(runs.loc[runs.seed == seed, "ce"].iloc[0])
            ce_pos_runs += ce_run > 0
            assert (ce_run > 0) == bool(len(non)), (key, seed)   # CE > 0 ⇔ a non-minimal member
            assert abs(ce(v, f, goals) - ce_run) < 1e-12
            nonmin_by_job[key].append((int(seed), a.loc[~ok, job["qi"]].to_numpy(), non))
        tot_members += n_mem
        tot_nonmin += n_non
        tot_share += n_share
        print(f"  {key} {job['title']}: |M| {len(f)} ({len(fvec)} distinct vectors); "
              f"{n_mem} members, {n_non} not minimal, {n_share} share a unit box with a "
              f"minimal PBG; runs with CE > 0: {ce_pos_runs}/20; distinct minimal vectors "
              f"missed per run: mean {np.mean(misses):.1f}, min {min(misses)}, "
              f"max {max(misses)}")
    print(f"  total: {tot_members} members, {tot_nonmin} not minimal, {tot_share} sharing "
          "a unit box with a minimal PBG")

    print("\n(c) nodes evaluated vs the paper (Table 2(b))")
    pct = []
    for key, job, runs, arch, front in all_jobs:
        p = job.get("paper", {}).get("nodes")
        if p:
            ours = runs["nodes_evaluated"].mean()
            pct.append(100 * (ours - p) / p)
            print(f"  {key} {job['title']}: {ours:.1f} vs {p}: {pct[-1]:+.1f} %")
    print(f"  range: {min(pct):+.1f} % to {max(pct):+.1f} %")

    print("\n(d) Table 1(b) CE: sum (as printed) and per member (an interpretation)")
    hits = {"sum": [0, 0], "mean": [0, 0]}
    for key, job, runs, arch, front in all_jobs:
        p = job.get("paper", {})
        if "ce" not in p or not job["title"].startswith("Table 1(b)"):
            continue
        se = np.sqrt(p["ce_var"] / 20)
        line = []
        for name, col in (("sum", "ce"), ("mean", "ce_mean")):
            m = runs[col].mean()
            r = m / p["ce"]
            f2, s2 = 0.5 <= r <= 2, abs(m - p["ce"]) <= 2 * se
            hits[name][0] += f2
            hits[name][1] += s2
            line.append(f"{name} {m:.2g} (×{r:.2g}; factor 2 {'yes' if f2 else 'no'}, "
                        f"2 s.e. {'yes' if s2 else 'no'})")
        print(f"  {job['title']}: paper {p['ce']:.2g} (s.e. {se:.1g}); " + "; ".join(line))
    for name, (f2, s2) in hits.items():
        print(f"  CE {name}: within a factor 2 on {f2}/4 rows, within 2 s.e. on {s2}/4 rows")

    print("\n(e) Table 2(a) as ε grows (paper; ours)")
    groups = {}
    for key, job, runs, arch, front in all_jobs:
        if job["title"].startswith("Table 2(a)"):
            groups.setdefault(tuple(job["objectives"]), []).append((job, runs))
    for objs, rows in groups.items():
        print(f"  {', '.join(objs)}:")
        pp = [j["paper"] for j, _ in rows]
        print(f"    paper RR:     {trend([p['rr'] for p in pp])}")
        print(f"    ours RR (i):  {trend([r['rr'].mean() for _, r in rows])}")
        print(f"    ours RR (ii): {trend([r['rr_unit_archive'].mean() for _, r in rows])}")
        print(f"    paper CE:     {trend([p['ce'] for p in pp])}")
        print(f"    ours CE sum:  {trend([r['ce'].mean() for _, r in rows])}")
        print(f"    ours CE mean: {trend([r['ce_mean'].mean() for _, r in rows])}")

    if reached:
        check_reached(unit_jobs, nonmin_by_job)


def check_reached(unit_jobs, nonmin_by_job):
    """Re-run each ε = 1 seed (same archive) and look at the nodes it evaluated."""
    from sdceval.core.loaders import open_ref
    from sdceval.lattice.search import LatticeProblem, evaluate_all
    from sdceval.pbg.ea import pbg_ea
    from sdceval.pbg.quality import NodeQuality
    from sdceval.pbg.study import table_objectives
    print("\n(a') non-minimal members: was a minimal PBG dominating them ever evaluated?")
    for key, job, runs, arch, front in unit_jobs:
        ref = {k: job[k] for k in ("data", "qi", "label") if k in job}
        problem = LatticeProblem(open_ref(ref), rule="dewri", max_suppression=0.01)
        objs = job["objectives"]
        goals = [get_objective(o).goal for o in objs]
        table = evaluate_all(problem, table_objectives(problem, objs), progress=False)
        lat = problem.lattice
        fids = lat.encode(front[job["qi"]].to_numpy())
        fv = front[objs].to_numpy(float)
        n_non = n_reached = 0
        for seed, levels, non in nonmin_by_job[key]:
            q = NodeQuality.from_table(problem, objs, table)
            run = pbg_ea(q, job["eps"], seed=seed, progress=False)
            a = arch[arch.seed == seed][objs].to_numpy(float)
            assert np.array_equal(np.sort(run.values, axis=0), np.sort(a, axis=0))
            seen = set(q.evaluated_ids.tolist())
            for x in non:
                n_non += 1
                n_reached += any(int(i) in seen for i, y in zip(fids, fv)
                                 if dominates(y, x, goals))
        print(f"  {key}: {n_non} non-minimal members; for {n_reached} of them the run "
              "evaluated a minimal PBG that dominates it")


if __name__ == "__main__":
    main()
