"""Exhaustive evaluation on several processes (`sdceval.lattice.parallel`): the same
table as one process, boxes that partition the nodes, errors and interrupts that leave
no worker behind."""
import multiprocessing as mp
import os
import time

import numpy as np
import pandas as pd
import pytest

from sdceval.core import threads
from sdceval.core.errors import SdcevalError
from sdceval.lattice import parallel
from sdceval.lattice.search import LatticeProblem, evaluate_all
from sdceval.privacy import KAnonymity

pytestmark = pytest.mark.skipif(not parallel.can_fork(), reason="needs fork")


@pytest.fixture(scope="module")
def adult_small():
    import sdceval
    from sdceval import Dataset
    base = sdceval.load_dataset("adult-train")
    frame = base.frame.iloc[:3000].reset_index(drop=True)
    return Dataset(frame, base.schema.with_roles(
        qi=["age", "education", "marital-status", "sex", "race"], sensitive="occupation"),
        name="adult-3000")


@pytest.fixture
def budget():
    yield threads.set_budget
    threads.set_budget(None)


@pytest.mark.parametrize("procs", [2, 3])
def test_parallel_table_equals_one_process(adult_small, budget, monkeypatch, procs):
    monkeypatch.setattr(parallel, "MIN_PARALLEL_NODES", 1)
    budget(1)
    one = evaluate_all(LatticeProblem(adult_small, [KAnonymity(5)], rule="arx", max_suppression=0.02),
                       cache=False, progress=False)
    budget(procs)
    seen = []
    real_run = parallel.run
    monkeypatch.setattr(parallel, "run", lambda fn, parts, progress, processes: seen.append(
        (len(parts), processes)) or real_run(fn, parts, progress, processes))
    many = evaluate_all(LatticeProblem(adult_small, [KAnonymity(5)], rule="arx", max_suppression=0.02),
                        cache=False, progress=False)
    # really on several processes, each with more than one box to take
    assert seen == [(procs * parallel.BOXES_PER_PROCESS, procs)]
    pd.testing.assert_frame_equal(one, many)
    assert not mp.active_children()


def test_boxes_partition_the_nodes_and_balance_the_work(adult_small):
    p = LatticeProblem(adult_small)
    nodes = p.lattice.nodes()
    work = parallel.estimated_work(p.engine, nodes)
    # the estimate is exact on the nodes it is built from
    for q in range(nodes.shape[1]):
        lv = np.zeros(nodes.shape[1], dtype=int)
        lv[q] = nodes[:, q].max()
        i = int(np.flatnonzero((nodes == lv).all(axis=1))[0])
        assert work[i] == pytest.approx(p.engine.classes(tuple(lv)).n_classes + 64)
    groups = parallel.split_nodes(nodes, work, 3)
    assert len(groups) == 3
    assert sorted(np.concatenate(groups).tolist()) == list(range(len(nodes)))
    for g in groups:  # a box: every level between a group's least and largest is in it
        lo, hi = nodes[g].min(axis=0), nodes[g].max(axis=0)
        inside = ((nodes >= lo) & (nodes <= hi)).all(axis=1)
        assert inside.sum() == len(g)
    loads = [work[g].sum() for g in groups]
    assert max(loads) < 0.75 * sum(loads)


def _fails_in_a_child(part, report):
    if part[0] != 0:
        raise SdcevalError(f"part starting at {part[0]} failed")
    return "fine"


def test_a_child_error_is_raised_in_the_parent_and_no_worker_is_left():
    parts = [np.arange(0, 5), np.arange(5, 10)]
    with pytest.raises(SdcevalError, match="part starting at 5 failed"):
        parallel.run(_fails_in_a_child, parts, lambda k: None)
    assert not mp.active_children()


def _slow_child(part, report):
    if part[0] != 0:
        time.sleep(60)
        return "late"
    raise KeyboardInterrupt


def test_an_interrupt_ends_the_workers_at_once():
    parts = [np.arange(0, 5), np.arange(5, 10)]
    t0 = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        parallel.run(_slow_child, parts, lambda k: None)
    assert time.monotonic() - t0 < 10
    assert not mp.active_children()


def _reports(part, report):
    for _ in part:
        report(1)
    return int(part.sum())


def test_progress_of_every_part_reaches_the_parent():
    seen = []
    out = parallel.run(_reports, [np.arange(0, 4), np.arange(4, 10)], seen.append)
    assert out == [6, 39]
    assert sum(seen) == 10


def _which_process(part, report):
    import os
    return int(part[0]), os.getpid()


def test_parts_beyond_one_per_process_go_to_the_free_process():
    parts = [np.arange(i, i + 1) for i in range(7)]
    out = parallel.run(_which_process, parts, lambda k: None, processes=2)
    assert [i for i, _ in out] == list(range(7))  # results in part order
    pids = {pid for _, pid in out}
    assert len(pids) <= 2 and out[0][1] == os.getpid() and out[1][1] != os.getpid()
    assert not mp.active_children()
