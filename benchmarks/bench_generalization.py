"""Full-domain generalization timings on Adult (target: one lattice node <= 50 ms).

Run: python benchmarks/bench_generalization.py
Prints, for a few lattice nodes of Adult (45 222 records x 6 QIs): the grouping pass
(`node_classes`), the whole node with suppression and cells (`evaluate_node`), the same
on the distinct rows, the published release (`node_release`) and GLM; then the k-search
(`generalization` with k) and an exhaustive pass over all 1792 nodes' classes.  Last, the
k-search on synthetic numeric QIs (automatic 6-level hierarchies) near the lattice bound
`MAX_LATTICE_NODES`, and the time to refuse a lattice above it (9 QIs).
"""
import time

import numpy as np
import pandas as pd

import sdceval
from sdceval import Dataset, Schema, SdcevalError
from sdceval.measures.information_loss import glm_per_record
from sdceval.methods.generalization import (MAX_LATTICE_NODES, distinct_rows, evaluate_node,
                                            lattice_size, min_k_node, node_classes,
                                            node_release, nodes_at_height, qi_heights)

TARGET_MS = 50.0


def timed(fn, repeat=10):
    fn()  # warm caches (codes, hierarchies)
    t0 = time.perf_counter()
    for _ in range(repeat):
        out = fn()
    return (time.perf_counter() - t0) / repeat * 1e3, out


if __name__ == "__main__":
    ds = sdceval.load_dataset("adult")
    rows = distinct_rows(ds)
    print(f"adult: {ds.n} records, QIs {ds.schema.qis}, lattice {lattice_size(ds)} nodes, "
          f"{len(rows.counts)} distinct QI rows")
    worst = 0.0
    for levels in [(0, 0, 0, 0, 0, 0), (1, 1, 1, 1, 0, 0), (3, 2, 1, 1, 1, 0),
                   (6, 3, 3, 3, 1, 1)]:
        t_cls, _ = timed(lambda: node_classes(ds, levels))
        t_rows, _ = timed(lambda: node_classes(ds, levels, rows))
        t_node, node = timed(lambda: evaluate_node(ds, levels, 0.01))
        t_rel, _ = timed(lambda: node_release(ds, node), repeat=3)
        t_glm, _ = timed(lambda: glm_per_record(ds, node.cells, node.suppressed).mean())
        worst = max(worst, t_node)
        print(f"node {levels}: classes {t_cls:5.1f} ms | on distinct rows {t_rows:5.1f} ms | "
              f"evaluate_node (suppression + cells) {t_node:5.1f} ms | GLM {t_glm:4.1f} ms | "
              f"release frame {t_rel:5.1f} ms | k={node.k}, suppressed {node.n_suppressed}")
    print(f"slowest evaluate_node: {worst:.1f} ms (target <= {TARGET_MS:.0f} ms) "
          f"{'PASS' if worst <= TARGET_MS else 'MISS'}")
    for k in (5, 10, 50):
        t0 = time.perf_counter()
        rel = sdceval.anonymize(ds, "generalization", k=k)
        dt = time.perf_counter() - t0
        print(f"generalization k={k}: {dt:5.2f} s, node {tuple(rel.info['levels'].values())}, "
              f"{rel.info['search']['nodes_evaluated']} nodes evaluated")
    heights = list(qi_heights(ds).values())
    t0 = time.perf_counter()
    count = 0
    for h in range(sum(heights) + 1):
        for levels in nodes_at_height(heights, h):
            node_classes(ds, levels, rows)
            count += 1
    dt = time.perf_counter() - t0
    print(f"all {count} nodes' classes on distinct rows: {dt:5.2f} s "
          f"({dt / count * 1e3:.2f} ms per node)")
    assert count == lattice_size(ds) and np.isfinite(dt)

    print(f"\nlattice bound MAX_LATTICE_NODES = {MAX_LATTICE_NODES:,}")
    for n_qis, n in [(5, 2000), (6, 2000), (6, 20000), (9, 2000)]:
        rng = np.random.default_rng(0)
        frame = pd.DataFrame({f"x{i}": rng.normal(0, 1, n).round(3) for i in range(n_qis)})
        frame["s"] = rng.choice(list("abc"), n)
        wide = Dataset(frame, Schema.from_roles(frame, qi=list(frame.columns[:n_qis]),
                                                sensitive="s"))
        t0 = time.perf_counter()
        try:
            _, info = min_k_node(wide, 5, 0.01, progress=False)
            outcome = f"{info['nodes_evaluated']} nodes evaluated"
        except SdcevalError:
            outcome = "refused"
        print(f"{n_qis} numeric QIs, {n} records, lattice {lattice_size(wide):,} nodes: "
              f"k=5 search {time.perf_counter() - t0:6.2f} s ({outcome})")
