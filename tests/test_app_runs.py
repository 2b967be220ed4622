"""The app's run manager (issue 31, `sdceval.app.runs`): comparisons run in worker
processes, their state and progress read from disk, cancel, results, release,
reproduce, shutdown; and the progress file hook of `sdceval.core.progress`."""
from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import psutil
import pytest

from sdceval.app.runs import RunManager
from sdceval.core import progress
from sdceval.core.errors import SdcevalError


# -- the progress file (SDCEVAL_PROGRESS_FILE) -------------------------------------------
def test_run_progress_writes_the_progress_file(tmp_path, monkeypatch):
    path = tmp_path / "progress.json"
    monkeypatch.setenv(progress.PROGRESS_FILE_ENV, str(path))
    now = [0.0]
    run = progress.RunProgress(None, 2, "methods", clock=lambda: now[0], bar=progress._NoBar())
    run.candidate("mdav")
    got = json.loads(path.read_text())
    assert "mdav" in got["step"] and "1 of 2" in got["step"]
    assert got["fraction"] == 0.0 and got["eta_seconds"] is None
    now[0] = 2.0
    run.evaluation("risk 0.2")
    got = json.loads(path.read_text())
    assert 0.0 < got["fraction"] < 0.5 and got["eta_seconds"] > 0
    now[0] = 4.0
    run.candidate("noise")   # mdav took 4 s: noise is estimated at 4 s
    got = json.loads(path.read_text())
    assert got["fraction"] == 0.5 and got["eta_seconds"] == 4.0
    run.close()
    got = json.loads(path.read_text())
    assert got["fraction"] == 1.0 and got["eta_seconds"] == 0.0
    # no stray temporary file beside it
    assert [p.name for p in tmp_path.iterdir()] == ["progress.json"]


def test_progress_file_is_written_only_when_asked(tmp_path, monkeypatch):
    monkeypatch.delenv(progress.PROGRESS_FILE_ENV, raising=False)
    monkeypatch.chdir(tmp_path)
    run = progress.RunProgress(None, 1, bar=progress._NoBar())
    run.candidate("mdav")
    run.close()
    assert list(tmp_path.iterdir()) == []


def test_progress_file_that_cannot_be_written_never_stops_a_run(tmp_path, monkeypatch):
    monkeypatch.setenv(progress.PROGRESS_FILE_ENV, str(tmp_path / "no" / "such" / "p.json"))
    progress.record("step", 0.5, 1.0)   # nothing raised


# -- the run manager --------------------------------------------------------------------
#: a comparison of a few seconds: two fast methods on the bundled census, one repeat
SMALL = {"data": "census", "methods": ["mdav", "noise"], "utilities": ["query_error"],
         "repeats": 1, "seed": 3}
#: one that lasts long enough to be cancelled or killed mid-run
LONG = {"data": "census", "methods": ["mdav", "noise", "rank_swap", "multiplicative_noise"],
        "utilities": ["query_error", "propensity"], "repeats": 5, "seed": 1}


def wait(manager, run_id, until=("done", "failed", "cancelled"), timeout=120.0):
    deadline = time.monotonic() + timeout
    while True:
        st = manager.status(run_id)
        if st.state in until:
            return st
        assert time.monotonic() < deadline, f"run {run_id} still {st.state}: {st.step}"
        time.sleep(0.1)


def wait_matching(manager, run_id, timeout=120.0):
    """Until the worker is matching candidates (its results store is open)."""
    deadline = time.monotonic() + timeout
    while True:
        st = manager.status(run_id)
        assert st.state in ("queued", "running"), st
        if st.step.startswith("matching"):
            return st
        assert time.monotonic() < deadline
        time.sleep(0.05)


def children(before=()):
    """This process's live descendants, less those in ``before`` (pids alive before the
    test: under pytest-xdist a browser another test started may share the process)."""
    gone = set(before)
    return [p for p in psutil.Process().children(recursive=True)
            if p.pid not in gone and p.status() != psutil.STATUS_ZOMBIE]


def pids() -> set:
    return {p.pid for p in children()}


def worker_pid(manager, run_id) -> int:
    return json.loads((manager.root / run_id / "worker.json").read_text())["pid"]


def owner_only(folder: Path) -> list[str]:
    """``folder`` and every folder and file under it that others may read."""
    paths = [folder, *folder.rglob("*")]
    return [f"{p} {oct(stat.S_IMODE(p.stat().st_mode))}" for p in paths
            if stat.S_IMODE(p.stat().st_mode) & 0o077]


@pytest.mark.slow  # over 1.4 s: the whole suite runs it
def test_run_starts_runs_and_ends_done_with_results_read_from_disk(tmp_path):
    manager = RunManager(tmp_path / "app")
    run_id = manager.start(SMALL)
    first = manager.status(run_id)
    assert first.state in ("queued", "running") and first.title == "census: mdav, noise"
    st = wait(manager, run_id)
    assert st.state == "done", st.message
    assert st.fraction == 1.0
    got = manager.results(run_id)
    assert got["answer"].startswith("At the re-identification rate of MDAV")
    assert [r["method"] for r in got["ranking"]] == ["mdav", "noise"]
    assert got["ranking"][0]["rank_query_error"] == 1
    assert got["notes"] and got["figures"] and all(f.is_file() for f in got["figures"])
    assert {"risk", "reidentification_rate"} <= set(got["risks"][0])
    ranking_csv = pd.read_csv(got["ranking_csv"])
    assert list(ranking_csv["method"]) == ["mdav", "noise"]
    # a restarted app (a new manager on the folder) loses nothing
    again = RunManager(tmp_path / "app")
    assert again.status(run_id) == manager.status(run_id)
    assert [s.run_id for s in again.runs()] == [run_id]
    assert again.results(run_id)["answer"] == got["answer"]
    # uploads, results, logs: owner-only
    assert owner_only(tmp_path / "app" / "runs") == []
    manager.shutdown()


def test_bad_configuration_names_the_field_and_starts_nothing(tmp_path):
    manager = RunManager(tmp_path / "app")
    before = children()
    cases = [({**SMALL, "methodz": ["mdav"]}, "methodz"),
             ({**SMALL, "repeats": "two"}, "repeats"),
             ({**SMALL, "utilities": ["query_eror"]}, "query_eror"),
             ({**SMALL, "data": "cencus"}, "'data'"),
             ({**SMALL, "output": "elsewhere"}, "'output'"),
             ({**SMALL, "seed": float("nan")}, "seed")]
    for config, field in cases:
        with pytest.raises(SdcevalError, match=field) as err:
            manager.start(config)
        assert str(manager.root) not in str(err.value)   # said as "configuration"
    assert manager.runs() == [] and list(manager.root.iterdir()) == []
    assert children() == before


@pytest.mark.slow
def test_two_runs_at_once_do_not_mix(tmp_path):
    manager = RunManager(tmp_path / "app")
    a = manager.start(SMALL)
    b = manager.start({**SMALL, "methods": ["mdav", "rank_swap"], "seed": 4})
    assert a != b
    assert wait(manager, a).state == "done" and wait(manager, b).state == "done"
    ra, rb = manager.results(a), manager.results(b)
    assert ra["candidates"] == ["mdav", "noise"] and ra["seed"] == 3
    assert rb["candidates"] == ["mdav", "rank_swap"] and rb["seed"] == 4
    assert ra["report"].parent != rb["report"].parent
    assert {s.run_id for s in manager.runs()} == {a, b}


def test_a_run_that_fails_says_why(tmp_path):
    manager = RunManager(tmp_path / "app")
    run_id = manager.start({**SMALL, "methods": ["mondrian"]})   # census has no QIs
    st = wait(manager, run_id)
    assert st.state == "failed" and "needs qis attributes" in st.message
    with pytest.raises(SdcevalError, match="failed"):
        manager.results(run_id)


def test_cancel_ends_the_worker_and_reads_cancelled(tmp_path):
    from sdceval.experiments.store import ResultsStore
    before = pids()
    manager = RunManager(tmp_path / "app")
    run_id = manager.start(LONG)
    st = wait_matching(manager, run_id)
    assert 0.0 <= st.fraction < 1.0
    # a restarted app sees the run going, from its folder alone
    assert RunManager(tmp_path / "app").status(run_id).state == "running"
    pid = worker_pid(manager, run_id)
    manager.cancel(run_id)
    st = manager.status(run_id)
    assert st.state == "cancelled" and st.eta_seconds is None
    assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    assert children(before) == []
    # the store recorded the run as interrupted (what finished is kept for a resume)
    with ResultsStore(manager.root / run_id / "out", create=False) as store:
        assert list(store.runs()["status"]) == ["interrupted"]
    assert RunManager(tmp_path / "app").status(run_id).state == "cancelled"
    with pytest.raises(SdcevalError, match="cancelled"):
        manager.results(run_id)


@pytest.mark.slow  # a worker process started and killed: the whole suite runs it
def test_a_worker_killed_reads_failed_not_running(tmp_path):
    manager = RunManager(tmp_path / "app")
    run_id = manager.start(LONG)
    wait_matching(manager, run_id)
    os.kill(worker_pid(manager, run_id), signal.SIGKILL)
    st = wait(manager, run_id, timeout=10)
    assert st.state == "failed" and "killed" in st.message
    assert RunManager(tmp_path / "app").status(run_id).state == "failed"
    manager.shutdown()


@pytest.mark.slow  # a worker process started and ended: the whole suite runs it
def test_shutdown_leaves_no_child_process(tmp_path):
    before = pids()
    manager = RunManager(tmp_path / "app")
    ids = [manager.start(LONG), manager.start(SMALL)]
    wait_matching(manager, ids[0])
    assert children(before)
    manager.shutdown()
    assert children(before) == []
    assert {manager.status(i).state for i in ids} <= {"cancelled", "done"}
    assert manager.status(ids[0]).state == "cancelled"


@pytest.fixture(scope="module")
def done_run(tmp_path_factory):
    manager = RunManager(tmp_path_factory.mktemp("app"))
    run_id = manager.start(SMALL)
    assert wait(manager, run_id).state == "done"
    yield manager, run_id
    manager.shutdown()


@pytest.mark.slow
def test_release_of_a_candidate_with_key_certificate_and_report(done_run, capsys):
    from sdceval.cli import main
    manager, run_id = done_run
    files = manager.release(run_id, "noise")
    assert set(files) == {"release", "key", "certificate", "report"}
    assert all(p.is_file() for p in files.values())
    assert files["key"].read_text().startswith("# PRIVATE")
    assert main(["verify", str(files["certificate"])]) == 0
    cert = json.loads(files["certificate"].read_text())
    matched = next(m for m in json.loads(
        (manager.root / run_id / "out" / "results.json").read_text())["comparisons"]
        .popitem()[1]["matches"] if m["method"] == "noise")
    # the matched parameter, exactly (given to anonymize as its repr)
    assert {k: float(v) for k, v in cert["configuration"]["params"].items()} \
        == matched["params"]
    assert cert["configuration"]["seed"] == SMALL["seed"]
    assert owner_only(files["release"].parent) == []
    assert manager.release(run_id, "noise") == files   # made once
    with pytest.raises(SdcevalError, match="no candidate 'mondrian'"):
        manager.release(run_id, "mondrian")


@pytest.mark.slow
def test_reproduce_reruns_to_the_same_ranking(done_run, tmp_path, monkeypatch, capsys):
    from sdceval.cli import main
    manager, run_id = done_run
    got = manager.reproduce(run_id)
    assert got["command"] == "sdceval run experiment.toml --out out"
    monkeypatch.chdir(tmp_path)
    Path("experiment.toml").write_text(got["toml"])
    assert main(got["command"].split()[1:]) == 0
    key = manager.results(run_id)["job"]
    ours = pd.read_csv(manager.root / run_id / "out" / f"{key}_ranking.csv")
    pd.testing.assert_frame_equal(pd.read_csv(tmp_path / "out" / f"{key}_ranking.csv"), ours)
    # the Python snippet computes the same comparison
    Path("snippet.py").write_text(got["python"] + "comparison.table().to_csv('table.csv')\n")
    subprocess.run([sys.executable, "snippet.py"], check=True, capture_output=True)
    table = pd.read_csv("table.csv")
    assert list(table["method"]) == list(ours["method"])
    assert list(table["risk"]) == pytest.approx(list(ours["risk"]))
    assert list(table["query_error"]) == pytest.approx(list(ours["query_error"]))


@pytest.mark.slow  # two runs of a few seconds each
def test_a_cancelled_run_resumes_to_the_results_of_a_run_never_stopped(tmp_path):
    config = {**SMALL, "repeats": 3, "seed": 5}
    manager = RunManager(tmp_path / "app")
    run_id = manager.start(config)
    wait_matching(manager, run_id)
    manager.cancel(run_id)
    assert manager.status(run_id).state == "cancelled"
    manager.resume(run_id)
    assert manager.status(run_id).state in ("queued", "running")
    assert wait(manager, run_id).state == "done"
    manager.resume(run_id)                      # a finished run is left as it is
    assert manager.status(run_id).state == "done"
    fresh = manager.start(config)
    assert wait(manager, fresh).state == "done"
    resumed, never = manager.results(run_id), manager.results(fresh)
    assert resumed["ranking"] == never["ranking"] and resumed["answer"] == never["answer"]
    manager.shutdown()
