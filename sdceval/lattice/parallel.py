"""Exhaustive evaluation on several cores: the lattice cut into boxes, one per process.

`evaluate_all` (`sdceval.lattice.search`) spends its time per class of every node, and
nodes are independent but for the roll-up (a node's classes come from an immediate
predecessor's).  With a thread budget of ``w ≥ 2`` (``--threads`` / ``SDCEVAL_THREADS``,
`sdceval.core.threads`) the nodes are cut into ``BOXES_PER_PROCESS · w`` *boxes* —
ranges of levels, one QI's range cut at a level at a time — so that every node but the
lowest of its box still has its predecessors in its own box and rolls up from them.
``w`` processes sweep them: each starts with one of the largest boxes and then takes
the next box nobody has started (a shared counter), so an estimate that is off does not
leave a core idle.  The processes are forked (they inherit the data set and the engine;
nothing is pickled but the per-node results) and never outlive the call: an exception
or an interrupt in the parent terminates them.

Balancing.  The work of a node is about its number of classes.  It is estimated as
``B · Π_q r_q(l_q)`` (``B`` the distinct QI rows, ``r_q(j)`` the share of them left
when QI ``q`` alone is generalized to level ``j``: one class table per QI and level,
computed directly) — independence of the QIs, enough to balance boxes — and a box is
cut where its two halves' estimates are closest.
"""
from __future__ import annotations

import multiprocessing as mp
import os
import signal
from typing import Callable, Sequence

import numpy as np

#: added to every node's estimated classes: a node costs something however small
_NODE_COST = 64.0
#: boxes per process: the parts beyond one per process go to whichever is free first
BOXES_PER_PROCESS = 2
#: below this many nodes a sweep is not worth a process
MIN_PARALLEL_NODES = 2048


def can_fork() -> bool:
    """Fork is available, and this process may have children (a daemonic worker of
    another pool may not)."""
    return "fork" in mp.get_all_start_methods() and not mp.current_process().daemon


def estimated_work(engine, nodes: np.ndarray) -> np.ndarray:
    """Estimated classes of each node (module docstring, "Balancing")."""
    d = nodes.shape[1]
    base = float(engine.bottom.n_classes)
    est = np.full(len(nodes), base)
    for q in range(d):
        levels = np.unique(nodes[:, q])
        share = np.ones(int(levels.max()) + 1)
        for j in levels.tolist():
            if j:
                lv = [0] * d
                lv[q] = j
                share[j] = engine.classes(tuple(lv), rollup=False).n_classes / base
        est *= share[nodes[:, q]]
    return est + _NODE_COST


def split_nodes(nodes: np.ndarray, work: np.ndarray, parts: int) -> list[np.ndarray]:
    """Cut ``nodes`` into at most ``parts`` boxes of about equal ``work``: repeatedly the
    box with the most work, at the QI and level where its halves' work is closest.
    Returns index arrays into ``nodes``."""
    groups = [np.arange(len(nodes))]
    while len(groups) < parts:
        i = max(range(len(groups)), key=lambda g: work[groups[g]].sum())
        idx = groups[i]
        total = work[idx].sum()
        best = None
        for q in range(nodes.shape[1]):
            col = nodes[idx, q]
            for t in np.unique(col)[1:].tolist():
                low = work[idx[col < t]].sum()
                gap = abs(total - 2 * low)
                if best is None or gap < best[0]:
                    best = (gap, q, t)
        if best is None:  # one node left: nothing to cut
            break
        _, q, t = best
        col = nodes[idx, q]
        groups[i:i + 1] = [idx[col < t], idx[col >= t]]
    return groups


def run(fn: Callable[[np.ndarray, Callable[[int], None]], object],
        parts: Sequence[np.ndarray], progress: Callable[[int], None],
        processes: int | None = None) -> list:
    """``fn(part, progress)`` for every part, on ``processes`` processes (default one per
    part): this one and forked children.  Process ``i`` starts with part ``i``; the
    parts beyond the first ``processes`` go to whichever process is free first (a
    shared counter), so that estimates that are off do not leave a core idle.  The
    children's progress is forwarded as they report it.  Results in part order.
    """
    procs = len(parts) if processes is None else max(1, min(int(processes), len(parts)))
    ctx = mp.get_context("fork")
    counter = ctx.Value("i", procs, lock=True)  # the next part nobody has started
    children = []
    results: dict = {}
    closed: set = set()

    def take(conn, block: bool) -> None:
        """Read what a child sent: progress is forwarded, its results kept."""
        while id(conn) not in results and id(conn) not in closed \
                and (block or conn.poll()):
            try:
                kind, value = conn.recv()
            except EOFError:
                closed.add(id(conn))
                return
            if kind == "progress":
                progress(value)
            else:
                results[id(conn)] = (kind, value)

    try:
        for first in range(1, procs):
            recv, send = mp.Pipe(duplex=False)
            proc = ctx.Process(target=_child, args=(fn, parts, first, counter, send),
                               daemon=True)
            proc.start()
            send.close()
            children.append((proc, recv))

        def report(k: int) -> None:
            progress(k)
            for _, conn in children:
                take(conn, block=False)

        out: dict = dict(_work(fn, parts, 0, counter, report))
        for proc, conn in children:
            take(conn, block=True)
            if id(conn) not in results:
                proc.join()
                raise RuntimeError(f"lattice: a worker process ended without a result "
                                   f"(exit code {proc.exitcode})")
            kind, value = results[id(conn)]
            if kind == "error":
                raise value
            out.update(value)
        return [out[i] for i in range(len(parts))]
    finally:
        for proc, conn in children:
            if proc.is_alive():
                proc.terminate()
            proc.join()
            conn.close()


def _work(fn, parts, first: int, counter, report) -> list:
    """``[(index, fn(part))]`` of part ``first`` and then of every part the shared
    counter hands out."""
    done = [(first, fn(parts[first], report))]
    while True:
        with counter.get_lock():
            i = counter.value
            counter.value = i + 1
        if i >= len(parts):
            return done
        done.append((i, fn(parts[i], report)))


def _child(fn, parts, first, counter, conn) -> None:
    # the parent handles Ctrl-C and ends the children; a child only computes
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    try:
        value = _work(fn, parts, first, counter, lambda k: conn.send(("progress", k)))
        conn.send(("result", value))
    except BaseException as exc:  # noqa: BLE001 - handed to the parent, which raises it
        try:
            conn.send(("error", exc))
        except Exception:  # an unpicklable exception: its text
            conn.send(("error", RuntimeError(f"{type(exc).__name__}: {exc}")))
    finally:
        conn.close()
        os._exit(0)  # no atexit handlers, no flushing of the parent's inherited buffers
