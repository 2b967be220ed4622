"""The parts of exhaustive evaluation (`sdceval.lattice.search.evaluate_all`): the
sweep of the nodes in batches, on as many processes as the thread budget allows
(`_sweep`, `sdceval.lattice.parallel`), and the on-disk cache of its tables
(`cache_dir`, `cache_key`; described in `sdceval.lattice.search`'s docstring).

`evaluate_all` itself and its size check (`check_exhaustive`, `MAX_EXHAUSTIVE_NODES`,
shared with `optimal`) are in `sdceval.lattice.search`; the names here are re-exported
there.
"""
from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Sequence

import numpy as np

from sdceval.core import threads
from sdceval.lattice import parallel
from sdceval.lattice.batch import ClassBatch
from sdceval.lattice.engine import NodeEngine
from sdceval.lattice.problem import LatticeProblem

#: environment variable naming the on-disk cache folder of `evaluate_all`
CACHE_ENV = "SDCEVAL_CACHE_DIR"
#: bump when the cached table's layout or any objective's definition changes
CACHE_VERSION = 1
#: nodes per batch of `evaluate_all` when the engine has no batched sweep
_FALLBACK_BATCH = 256


def _batches(engine: NodeEngine, nodes: np.ndarray):
    if hasattr(engine, "batches"):
        yield from engine.batches(nodes)
        return
    for i in range(0, len(nodes), _FALLBACK_BATCH):
        chunk = nodes[i:i + _FALLBACK_BATCH]
        yield ClassBatch.of_tables([engine.classes(v) for v in chunk])


def cache_key(problem: LatticeProblem, names: Sequence[str], nodes: np.ndarray | None) -> str:
    """Hex digest identifying an `evaluate_all` table (`sdceval.lattice.search`'s
    docstring)."""
    h = hashlib.sha256()
    e = problem.engine
    b = e.bottom

    def add(x):
        if isinstance(x, np.ndarray):
            h.update(str((x.dtype.str, x.shape)).encode())
            h.update(np.ascontiguousarray(x).tobytes())
        else:
            h.update(repr(x).encode())
        h.update(b"\x00")

    add(CACHE_VERSION)
    add(tuple(e.qis))
    add(np.asarray(b.node_ids, dtype=np.int64))
    add(b.sizes)
    for attr in ("pair_class", "pair_value", "pair_count", "label_class", "label_value",
                 "label_count"):
        v = getattr(b, attr, None)
        add(v if v is None else np.asarray(v))
    for hier in [*e.hierarchies, problem.ctx.sensitive_hierarchy]:
        if hier is not None:
            add((hier.numeric, hier.height))
            add("\x1f".join("\x1e".join(map(str, row)) for row in hier._table))
    add(tuple(names))
    add((problem.rule.name, float(problem.rule.max_suppression), problem.limit_records))
    add(tuple(m.describe() for m in problem.models))
    add(None if nodes is None else np.asarray(nodes, dtype=np.int64))
    return h.hexdigest()[:32]


def _sweep(problem: LatticeProblem, names: Sequence[str], nodes: np.ndarray, progress
           ) -> tuple[list, dict]:
    """Every node's columns, in the engine's order: ``(levels arrays, {column: arrays})``,
    on as many processes as the thread budget allows (`sdceval.lattice.parallel`)."""
    procs = threads.budget()
    if procs > 1 and len(nodes) >= parallel.MIN_PARALLEL_NODES and parallel.can_fork():
        work = parallel.estimated_work(problem.engine, nodes)
        boxes = parallel.split_nodes(nodes, work, procs * parallel.BOXES_PER_PROCESS)
        # the largest first: each process starts with one, the rest go to the free one
        boxes.sort(key=lambda g: -work[g].sum())
        parts = [nodes[g] for g in boxes]
        if len(parts) > 1:
            done, cols = [], {}
            for d_part, c_part in parallel.run(
                    lambda part, report: _sweep_one(problem, names, part, report),
                    parts, progress, processes=procs):
                done += d_part
                for k, v in c_part.items():
                    cols.setdefault(k, []).extend(v)
            return done, cols
    return _sweep_one(problem, names, nodes, progress)


def _sweep_one(problem, names, nodes, progress) -> tuple[list, dict]:
    cols: dict[str, list] = {}
    done = []
    for batch in _batches(problem.engine, nodes):
        part = problem.evaluate_batch(batch, names)
        done.append(np.array(batch.levels))
        for k, v in part.items():
            cols.setdefault(k, []).append(np.array(v))
        progress(batch.n_nodes)
    return done, cols


def cache_dir() -> Path:
    env = os.environ.get(CACHE_ENV, "").strip()
    return Path(env) if env else Path.home() / ".cache" / "sdceval" / "lattice"
