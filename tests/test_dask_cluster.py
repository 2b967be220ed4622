"""Dask as a real cluster (issue 21 item 6): an external scheduler and two workers,
started here as processes on 127.0.0.1, run an experiment as the serial executor does;
each data set reaches each worker once (opened on the client, sent to each worker once,
never read by the workers; sent again only to a worker that lost it), Dask's log lines
stay out of stderr, and a scheduler that cannot be reached is a one-line error."""
from __future__ import annotations

import json
import logging
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

distributed = pytest.importorskip("distributed")
psutil = pytest.importorskip("psutil")

from sdceval import Dataset, load_dataset  # noqa: E402
from sdceval.core.errors import SdcevalError  # noqa: E402
from sdceval.experiments import dask_executor as executor_module  # noqa: E402
from sdceval.experiments.dask_executor import DaskExecutor  # noqa: E402
from sdceval.experiments.runner import run_experiment  # noqa: E402

# the workers cannot import this test module: its functions travel by value
import cloudpickle  # noqa: E402

# an external scheduler and two workers start and stop (~17 s): the full run (CI) has it
pytestmark = pytest.mark.slow

cloudpickle.register_pickle_by_value(sys.modules[__name__])

N_WORKERS = 2
#: the CSV job's tasks: more than workers, so that data sent with every task would
#: reach some worker more than once
RELEASES = ["noise:gamma=0.5", "noise:gamma=1", "mdav:k=3", "mdav:k=5"]


def _wait(condition, timeout: float, what: str, procs=()):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        got = condition()
        if got:
            return got
        dead = [p for p in procs if p.poll() is not None]
        if dead:
            raise RuntimeError(f"{what}: a cluster process exited ({dead[0].args})")
        time.sleep(0.1)
    raise TimeoutError(f"{what}: not within {timeout} s")


def _die_with_this_process():
    """In a cluster process, before it starts (Linux): SIGTERM when the test process
    ends, however it ends, so that a test run killed (by a timeout, say) leaves no
    cluster behind."""
    if sys.platform.startswith("linux"):
        import ctypes
        import signal
        ctypes.CDLL(None).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


def _tree(procs) -> list:
    """The processes ``procs`` started and all their descendants (a worker's nanny
    starts the worker process)."""
    out = []
    for p in procs:
        try:
            root = psutil.Process(p.pid)
            out += [root, *root.children(recursive=True)]
        except psutil.NoSuchProcess:
            pass
    return out


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """The address of a scheduler with two single-threaded workers, each process
    started here; all of them (and their children) end with the module."""
    d = tmp_path_factory.mktemp("dask_cluster")
    sched_file = d / "sched.json"
    log = open(d / "cluster.log", "w")
    common = dict(stdout=log, stderr=subprocess.STDOUT, cwd=d, start_new_session=True,
                  preexec_fn=_die_with_this_process)
    procs = [subprocess.Popen(
        [sys.executable, "-m", "distributed.cli.dask_scheduler", "--host", "127.0.0.1",
         "--port", "0", "--no-dashboard", "--scheduler-file", str(sched_file)], **common)]
    tree: list = []
    try:
        def address():
            try:
                return json.loads(sched_file.read_text())["address"]
            except (OSError, ValueError, KeyError):
                return None
        addr = _wait(address, 30, "scheduler file", procs)
        for i in range(N_WORKERS):
            procs.append(subprocess.Popen(
                [sys.executable, "-m", "distributed.cli.dask_worker", addr,
                 "--nworkers", "1", "--nthreads", "1", "--no-dashboard",
                 "--host", "127.0.0.1", "--name", f"w{i}", "--local-directory", str(d),
                 "--death-timeout", "30"],
                **common))
        with distributed.Client(addr, timeout=10) as client:
            _wait(lambda: len(client.scheduler_info()["workers"]) == N_WORKERS, 30,
                  f"{N_WORKERS} workers", procs)
        yield addr
    finally:
        tree = _tree(procs)
        # the workers first, while the scheduler still answers them (they leave in
        # about 2 s; with the scheduler gone they keep retrying for about 8 s)
        for group in (procs[1:], procs[:1]):
            members = _tree(group)
            for p in group:
                if p.poll() is None:
                    p.terminate()
            _, alive = psutil.wait_procs(members, timeout=10)
            for p in alive:
                p.kill()
            psutil.wait_procs(alive, timeout=5)
            for p in group:
                p.poll()  # reaped
        log.close()
    def alive(p) -> bool:
        try:
            return p.is_running() and p.status() != psutil.STATUS_ZOMBIE
        except psutil.NoSuchProcess:
            return False
    left = [p.pid for p in tree if alive(p)]
    assert left == [], f"cluster processes left: {left}"


# -- helpers run on the workers (client.run) -------------------------------------------
def _count_unpickled_datasets():
    """Count, in this worker, every `Dataset` unpickled, by name."""
    from collections import Counter

    from sdceval.core import dataset
    dataset._test_unpickled = Counter()

    def setstate(self, state):
        dataset._test_unpickled[state.get("name")] += 1
        self.__dict__.update(state)
    dataset.Dataset.__setstate__ = setstate


def _worker_report():
    """What this worker did with data sets: unpickled copies by name, and the file
    loads through `open_ref`'s cache (`_open_frozen`)."""
    from sdceval.core import dataset
    from sdceval.core.loaders import _open_frozen
    info = _open_frozen.cache_info()
    counted = getattr(dataset, "_test_unpickled", None)
    from sdceval.experiments import dask_executor as executor
    return {"unpickled": None if counted is None else dict(counted),
            "opened": info.hits + info.misses, "kept": len(executor._shared)}


def _stop_counting():
    from sdceval.core import dataset
    dataset.__dict__.pop("_test_unpickled", None)
    if "__setstate__" in dataset.Dataset.__dict__:
        del dataset.Dataset.__setstate__


# -- the experiment --------------------------------------------------------------------
def _experiment(folder: Path) -> Path:
    rng = np.random.default_rng(7)
    n = 120
    a = rng.normal(50, 10, n)
    pd.DataFrame({"a": a.round(3), "b": (2 * a + rng.normal(0, 5, n)).round(3),
                  "c": rng.gamma(2.0, 3.0, n).round(3)}).to_csv(folder / "mine.csv",
                                                                 index=False)
    releases = ", ".join(f'"{r}"' for r in RELEASES)
    text = ('[experiment]\nname = "cluster"\nseed = 3\n'
            '[[comparison]]\ndata = "census"\nmethods = ["mdav", "noise"]\n'
            'utilities = ["propensity"]\n'
            f'[[evaluation]]\ndata = "mine.csv"\nreleases = [{releases}]\n'
            'measures = ["linkage_risk"]\n')
    path = folder / "e.toml"
    path.write_text(text)
    return path


def _drop_run_keys(value):
    if isinstance(value, dict):
        return {k: _drop_run_keys(v) for k, v in value.items()
                if k not in ("run", "executor", "timings")}
    if isinstance(value, list):
        return [_drop_run_keys(v) for v in value]
    return value


class _Records(logging.Handler):
    def __init__(self):
        super().__init__(logging.NOTSET)
        self.records: list = []

    def emit(self, record):
        self.records.append(record)


def test_describe_names_the_cluster(cluster):
    with DaskExecutor(cluster) as ex:
        assert ex.describe() == f"Dask cluster at {cluster} (2 workers, 2 threads)"
    assert ex.describe() == f"Dask cluster at {cluster}"  # closed: the address alone


def test_experiment_on_the_cluster_equals_serial(cluster, tmp_path, monkeypatch, capfd):
    folder = tmp_path / "work"
    folder.mkdir()
    path = _experiment(folder)
    # the CSV is named relative to this folder: only the client can resolve it (the
    # workers run elsewhere, in the fixture's folder)
    monkeypatch.chdir(folder)
    run_experiment(path.name, out="serial", executor="serial")

    with distributed.Client(cluster, timeout=10) as watcher:
        watcher.run(_stop_counting)
        watcher.run(_count_unpickled_datasets)
        before = watcher.run(_worker_report)
        assert all(r["opened"] == 0 for r in before.values()), before
        levels = {n: logging.getLogger(n).level
                  for n in ("distributed", "distributed.client", "tornado")}
        seen = _Records()
        for name in ("distributed", "tornado"):
            logging.getLogger(name).addHandler(seen)
        capfd.readouterr()
        told: list = []

        def progress(message):
            # on the first message (the executor's description: its client lives),
            # what distributed's loggers say in an unlucky run (the client's event loop
            # held up by a long computation here)
            told.append(message)
            if len(told) == 1:
                logging.getLogger("distributed.core").warning(
                    "Event loop was unresponsive in Client for 3.21s.")
                logging.getLogger("distributed.client").warning("a client warning")

        try:
            t0 = time.perf_counter()
            result = run_experiment(path.name, out="cluster", scheduler=cluster,
                                    progress=progress)
            took = time.perf_counter() - t0
        finally:
            for name in ("distributed", "tornado"):
                logging.getLogger(name).removeHandler(seen)
        err = capfd.readouterr().err
        after = watcher.run(_worker_report)
        watcher.run(_stop_counting)

        # nothing of the run stays on the scheduler
        def scheduler_tasks(dask_scheduler):
            return [str(k) for k in dask_scheduler.tasks]
        _wait(lambda: not watcher.run_on_scheduler(scheduler_tasks), 10,
              "tasks released")

    # the same results as the serial run, file for file
    serial, dask_out = folder / "serial", folder / "cluster"
    csvs = sorted(p.name for p in serial.glob("*.csv"))
    assert csvs == sorted(p.name for p in dask_out.glob("*.csv"))
    assert "evaluation1_mine_measurements.csv" in csvs
    for name in csvs:
        assert (serial / name).read_bytes() == (dask_out / name).read_bytes(), name
    got = json.loads((dask_out / "results.json").read_text())
    want = json.loads((serial / "results.json").read_text())
    assert _drop_run_keys(got) == _drop_run_keys(want)
    assert got["run"]["executor"] == f"Dask cluster at {cluster} (2 workers, 2 threads)"
    assert len(result.evaluations["evaluation1_mine"]) >= len(RELEASES)

    # each data set reached each worker once, as a Dataset, and no worker opened a
    # file: data sent with every task would be unpickled once per task (4 CSV tasks on
    # 2 workers: twice on one of them at least), data fetched again after Dask dropped
    # a replica twice on a worker, and data read by the workers would show in
    # open_ref's cache
    assert len(after) == N_WORKERS
    for worker, report in after.items():
        assert report["unpickled"] == {"census": 1, "mine": 1}, (worker, report)
        assert report["opened"] == 0, (worker, report)
        assert report["kept"] == 0, (worker, report)  # released as the executor closed

    # no line of Dask's on stderr, no record reached distributed's loggers, and the
    # levels are back once the client has closed
    assert told[0].startswith("executor: Dask cluster at")
    assert seen.records == [], [r.getMessage() for r in seen.records]
    for line in err.splitlines():
        assert "distributed" not in line and "tornado" not in line, err
        assert "INFO" not in line and "WARNING" not in line and "Traceback" not in line, err
    assert {n: logging.getLogger(n).level for n in levels} == levels
    print(f"cluster run: {took:.1f} s")


def test_relative_path_missing_on_the_client_is_reported_there(cluster, tmp_path,
                                                               monkeypatch):
    from sdceval.experiments.evaluation_job import task_evaluate
    monkeypatch.chdir(tmp_path)
    with DaskExecutor(cluster) as ex:
        with pytest.raises(SdcevalError, match="'nowhere.csv'"):
            ex.map(task_evaluate, [dict(data_ref={"data": "nowhere.csv"}, release="mdav:k=3",
                                        measures={}, seed=1)])


def test_unreachable_scheduler_is_one_line(tmp_path, monkeypatch, capfd):
    monkeypatch.setattr(executor_module, "CONNECT_TIMEOUT", 1.0)
    path = tmp_path / "e.toml"
    path.write_text('[[evaluation]]\ndata = "census"\nreleases = ["mdav:k=3"]\n')
    with pytest.raises(SdcevalError) as info:
        run_experiment(path, out=tmp_path / "out", scheduler="tcp://127.0.0.1:1")
    msg = str(info.value)
    assert "\n" not in msg
    assert "tcp://127.0.0.1:1" in msg
    assert "dask scheduler" in msg and "dask worker tcp://127.0.0.1:1" in msg
    assert info.value.__cause__ is None and info.value.__context__ is None
    err = capfd.readouterr().err
    assert "Traceback" not in err and "distributed" not in err, err
    assert not (tmp_path / "out" / "results.json").exists()


def _task_functions():
    """Tasks for the executor, made here so that they pickle by value (the cluster's
    processes cannot import this module; a module-level function would pickle by
    name)."""
    def describe_data(data_ref, i):
        return type(data_ref).__name__, data_ref.name, len(data_ref), i

    def fail(data_ref, i):
        if i == 2:
            raise ValueError(f"task {i} fails on {data_ref.name}")
        return i
    return describe_data, fail


_describe_data, _fail = _task_functions()


def test_a_worker_without_the_data_is_sent_it_again(cluster, capfd):
    """A worker that lost the data set (restarted, or joined after it was sent) says
    so, gets it, and the task runs again: same results, nothing counted twice."""
    tasks = [dict(data_ref={"data": "census"}, i=i) for i in range(4)]
    with distributed.Client(cluster, timeout=10) as watcher, DaskExecutor(cluster) as ex:
        watcher.run(_stop_counting)
        watcher.run(_count_unpickled_datasets)
        ticks: list = []
        first = ex.map(_describe_data, tasks)
        assert first == [("Dataset", "census", 1080, i) for i in range(4)]
        keys = [k for _, k in ex._sent.values()]
        assert len(keys) == 1
        watcher.run(executor_module._forget_shared, keys)  # as if the workers restarted
        again = ex.map(_describe_data, tasks, progress=lambda n, total: ticks.append(n))
        assert again == first
        assert ticks == [1, 2, 3, 4]  # a task sent again is not counted twice
        report = watcher.run(_worker_report)
        watcher.run(_stop_counting)
    counts = [r["unpickled"].get("census", 0) for r in report.values()]
    # once when first sent, once more on each worker that ran a task of the second map
    assert all(1 <= n <= 2 for n in counts) and max(counts) == 2, report
    assert all(r["kept"] == 1 and r["opened"] == 0 for r in report.values()), report
    assert "Traceback" not in capfd.readouterr().err


def test_a_task_error_reaches_the_caller(cluster):
    with DaskExecutor(cluster) as ex:
        with pytest.raises(ValueError, match="task 2 fails on census"):
            ex.map(_fail, [dict(data_ref={"data": "census"}, i=i) for i in range(4)])
        assert ex.client is None  # closed by the failed map; the cluster stays up
    with distributed.Client(cluster, timeout=10) as watcher:
        assert len(watcher.nthreads()) == N_WORKERS
        assert all(r["kept"] == 0 for r in watcher.run(_worker_report).values())


class _NotOnTheWorkers(Dataset):
    """A data set the workers cannot unpickle (as when they lack a module it needs)."""

    def __reduce__(self):
        import importlib
        return importlib.import_module, ("sdceval_module_missing_on_the_workers",)


def test_workers_that_cannot_take_the_data_set_is_one_line(cluster):
    base = load_dataset("census")
    odd = _NotOnTheWorkers(base.frame, base.schema, name="odd")
    with DaskExecutor(cluster) as ex:
        with pytest.raises(SdcevalError) as info:
            ex.map(_describe_data, [dict(data_ref=odd, i=0)])
    msg = str(info.value)
    assert "\n" not in msg and "data set 'odd'" in msg, msg
    assert "sdceval_module_missing_on_the_workers" in msg and "same sdceval" in msg, msg


def test_maps_inside_a_callers_own_client_are_prompt(cluster):
    """Inside ``with Client(...)`` (the caller's own client is then the current one),
    completions still arrive at once: the executor waits on its own client's loop
    (on the other one, each map would wait about 2 s for that loop to wake up)."""
    tasks = [dict(data_ref={"data": "census"}, i=i) for i in range(2)]
    with distributed.Client(cluster, timeout=10), DaskExecutor(cluster) as ex:
        ex.map(_describe_data, tasks)  # the data set sent, the function known
        t0 = time.perf_counter()
        for _ in range(5):
            assert ex.map(_describe_data, tasks) == [("Dataset", "census", 1080, i)
                                                     for i in range(2)]
        took = time.perf_counter() - t0
    assert took < 5, f"5 maps of 2 tasks took {took:.1f} s"
