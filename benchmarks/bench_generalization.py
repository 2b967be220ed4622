"""Full-domain generalization timings on Adult (target: one lattice node <= 50 ms).

Run: python benchmarks/bench_generalization.py
Prints, for a few lattice nodes of Adult (45 222 records x 6 QIs): the whole node with
Dewri's suppression and cells (`evaluate_node`, which builds its own node engine), the
same on a shared engine (`rule_node`), the published release (`node_release`) and GLM;
then the method with k (the optimal node by GLM, `sdceval.lattice.search`) and, for the
9-QI lattice of synthetic numeric QIs with automatic hierarchies (10 077 696 nodes),
the same search.  Issue 7's lattice figures are in benchmarks/bench_lattice_search.py.
"""
import time

import numpy as np
import pandas as pd

import sdceval
from sdceval import Dataset, Schema
from sdceval.lattice import NodeEngine
from sdceval.measures.information_loss import glm_per_record
from sdceval.methods.generalization import (evaluate_node, lattice_size, node_release,
                                            rule_node)

TARGET_MS = 50.0


def timed(fn, repeat=10):
    fn()  # warm caches (codes, hierarchies)
    t0 = time.perf_counter()
    for _ in range(repeat):
        out = fn()
    return (time.perf_counter() - t0) / repeat * 1e3, out


if __name__ == "__main__":
    ds = sdceval.load_dataset("adult")
    engine = NodeEngine(ds)
    print(f"adult: {ds.n} records, QIs {ds.schema.qis}, lattice {lattice_size(ds)} nodes, "
          f"{engine.n_distinct} distinct QI rows")
    worst = 0.0
    for levels in [(0, 0, 0, 0, 0, 0), (1, 1, 1, 1, 0, 0), (3, 2, 1, 1, 1, 0),
                   (6, 3, 3, 3, 1, 1)]:
        t_node, node = timed(lambda: evaluate_node(ds, levels, 0.01))
        t_shared, _ = timed(lambda: rule_node(ds, levels, "dewri", 0.01, engine=engine))
        t_rel, _ = timed(lambda: node_release(ds, node), repeat=3)
        t_glm, _ = timed(lambda: glm_per_record(ds, node.cells, node.suppressed).mean())
        worst = max(worst, t_node)
        print(f"node {levels}: evaluate_node (engine + suppression + cells) "
              f"{t_node:5.1f} ms | on a shared engine {t_shared:5.1f} ms | GLM "
              f"{t_glm:4.1f} ms | release frame {t_rel:5.1f} ms | k={node.k}, "
              f"suppressed {node.n_suppressed}")
    print(f"slowest evaluate_node: {worst:.1f} ms (target <= {TARGET_MS:.0f} ms) "
          f"{'PASS' if worst <= TARGET_MS else 'MISS'}")
    for k in (5, 10, 50):
        t0 = time.perf_counter()
        rel = sdceval.anonymize(ds, "generalization", k=k)
        dt = time.perf_counter() - t0
        s = rel.info["search"]
        print(f"generalization k={k}: {dt:5.2f} s, node {tuple(rel.info['levels'].values())}, "
              f"{s['nodes_checked']} of {s['lattice_size']} nodes checked")

    n = 2000
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({f"x{i}": rng.normal(0, 1, n).round(3) for i in range(9)})
    frame["s"] = rng.choice(list("abc"), n)
    wide = Dataset(frame, Schema.from_roles(frame, qi=list(frame.columns[:9]),
                                            sensitive="s"))
    t0 = time.perf_counter()
    rel = sdceval.anonymize(wide, "generalization", k=5)
    print(f"9 numeric QIs, {n} records, lattice {lattice_size(wide):,} nodes: k=5 search "
          f"{time.perf_counter() - t0:6.2f} s ({rel.info['search']['nodes_checked']} "
          "nodes checked)")
