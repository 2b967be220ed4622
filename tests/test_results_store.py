"""Campaigns that survive interruption (issue 21 items 1-5): the results store, resume,
timings apart from results, sweeps, the declared schema of experiment files, the
workers rule and ``sdceval results``."""
from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from children import default_sigint

from conftest import cli_error, cli_run
from sdceval.core.errors import SdcevalError
from sdceval.experiments.jobs import JOB_KINDS
from sdceval.experiments.runner import run_experiment
from sdceval.experiments.spec import load_spec
from sdceval.experiments.store import ResultsStore

SECRET = "SECRET-DX-4242"


def _data(folder: Path) -> Path:
    """A small mixed file whose one sensitive value is a marker no store may hold."""
    rng = np.random.default_rng(3)
    n = 300
    frame = pd.DataFrame({"age": rng.integers(18, 90, n), "zip": rng.integers(100, 110, n),
                          "d": rng.choice(list("abc"), n),
                          "income": np.round(rng.lognormal(10, 0.4, n), 2) + 0.37,
                          "spend": np.round(rng.lognormal(9, 0.4, n), 2)})
    frame.loc[5, "d"] = SECRET
    path = folder / "small.csv"
    frame.to_csv(path, index=False)
    return path


def _experiment(folder: Path, extra: str = "", evaluation: str = "") -> Path:
    data = _data(folder)
    path = folder / "exp.toml"
    path.write_text(f"""
[experiment]
name = "store-test"
seed = 0
executor = "serial"

[[evaluation]]
data = "{data.as_posix()}"
numeric = ["income", "spend"]
releases = ["mdav:k=5", "noise:gamma=0.5"]
measures = ["linkage_risk", "propensity"]
{evaluation}

[[comparison]]
data = "{data.as_posix()}"
numeric = ["income", "spend"]
methods = ["mdav", "noise"]
utilities = ["propensity"]

[[evaluation]]
data = "{data.as_posix()}"
qi = ["age", "zip"]
sensitive = "d"
releases = ["mondrian:k=5", "mondrian:k=10"]
measures = ["reidentification", "query_error"]
{extra}
""")
    return path


def _result_files(out: Path) -> dict[str, bytes]:
    """The files an identical run must reproduce byte for byte: every result file, and
    results.json without its run block (start time, executor)."""
    files = {}
    for f in sorted(out.iterdir()):
        if f.suffix in (".csv", ".png", ".md"):
            files[f.name] = f.read_bytes()
    payload = json.loads((out / "results.json").read_text())
    payload.pop("run")
    files["results.json"] = json.dumps(payload, sort_keys=True).encode()
    return files


@pytest.mark.slow  # over 1.5 s: the whole suite runs it
def test_an_interrupted_run_resumes_and_ends_as_an_uninterrupted_one(tmp_path, monkeypatch):
    exp = _experiment(tmp_path)
    whole = run_experiment(exp, out=tmp_path / "whole")
    # jobs run by kind (comparison0, evaluation1, evaluation2): the last is interrupted;
    # the first two stay in the store, nothing is half-written
    kind = JOB_KINDS["evaluation"]
    calls = []

    def interrupted(*a, **kw):
        calls.append(1)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return kind.run(*a, **kw)
    monkeypatch.setitem(JOB_KINDS, "evaluation", kind.__class__(
        **{**kind.__dict__, "run": interrupted}))
    with pytest.raises(KeyboardInterrupt):
        run_experiment(exp, out=tmp_path / "cut")
    monkeypatch.setitem(JOB_KINDS, "evaluation", kind)
    cut = tmp_path / "cut"
    assert not list(cut.glob(".*.tmp")) and not (cut / "results.json").exists()
    assert not (cut / "report.html").exists()
    with ResultsStore(cut) as store:
        runs = store.runs()
        assert list(runs["status"]) == ["interrupted"]
        assert store.db.execute("SELECT COUNT(*) FROM jobs").fetchone()[0] == 2
    assert not list(cut.glob("evaluation2_*"))
    said = []
    resumed = run_experiment(exp, out=cut, progress=said.append)
    assert "resuming: 2 of 3 jobs already done (results.sqlite; --fresh recomputes them)" \
        in said
    assert _result_files(cut) == _result_files(tmp_path / "whole")
    assert resumed.summary().replace(str(cut), "") == whole.summary().replace(
        str(tmp_path / "whole"), "")
    # a third run computes nothing; --fresh recomputes everything
    said.clear()
    run_experiment(exp, out=cut, progress=said.append)
    assert "resuming: 3 of 3 jobs already done (results.sqlite; --fresh recomputes them)" \
        in said
    said.clear()
    run_experiment(exp, out=cut, progress=said.append, fresh=True)
    assert not any(s.startswith("resuming") for s in said)
    assert _result_files(cut) == _result_files(tmp_path / "whole")
    with ResultsStore(cut) as store:
        assert list(store.runs()["status"]) == ["interrupted", "done", "done", "done"]


@pytest.mark.slow  # two or three runs of the experiment (the in-process resume test stays fast)
def test_a_changed_job_is_recomputed_and_its_old_files_removed(tmp_path):
    exp = _experiment(tmp_path)
    out = tmp_path / "o"
    run_experiment(exp, out=out)
    (out / "evaluation1_small_stale.csv").write_text("old\n")
    text = exp.read_text().replace('"mdav:k=5", "noise:gamma=0.5"', '"mdav:k=6"')
    exp.write_text(text)
    said = []
    run_experiment(exp, out=out, progress=said.append)
    assert "resuming: 2 of 3 jobs already done (results.sqlite; --fresh recomputes them)" \
        in said
    assert not (out / "evaluation1_small_stale.csv").exists()
    rows = pd.read_csv(out / "evaluation1_small_measurements.csv")
    assert set(rows["release"]) == {"mdav:k=6"}
    # the data set is part of the key: an edited cell recomputes every job on it
    data = pd.read_csv(tmp_path / "small.csv")
    data.loc[0, "income"] += 1
    data.to_csv(tmp_path / "small.csv", index=False)
    said.clear()
    run_experiment(exp, out=out, progress=said.append)
    assert not any(s.startswith("resuming") for s in said)


@pytest.mark.slow
def test_sigint_after_the_first_job_then_resume(tmp_path):
    """The command itself: Ctrl-C once the first job is in the store, exit 130 and no
    partial file; run again: only the rest is computed."""
    exp = _experiment(tmp_path)
    out = tmp_path / "o"
    env = {**os.environ, "SDCEVAL_THREADS": "1"}
    proc = subprocess.Popen([sys.executable, "-m", "sdceval", "run", str(exp), "--out",
                             str(out)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env=env, start_new_session=True, preexec_fn=default_sigint)
    deadline = time.time() + 60
    db = out / "results.sqlite"
    while time.time() < deadline:
        if db.exists():
            try:
                with sqlite3.connect(db, timeout=1) as con:
                    if con.execute("SELECT COUNT(*) FROM jobs").fetchone()[0] >= 1:
                        break
            except sqlite3.Error:
                pass
        time.sleep(0.02)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    if proc.returncode == 0:
        pytest.skip("the run finished before the interrupt arrived (a fast machine)")
    assert proc.returncode == 130, err
    assert not list(out.glob(".*.tmp")) and not (out / "results.json").exists()
    code = subprocess.run([sys.executable, "-m", "sdceval", "run", str(exp), "--out",
                           str(out)], capture_output=True, text=True, env=env, timeout=120)
    assert code.returncode == 0, code.stderr
    assert "resuming: 1 of 3 jobs already done" in code.stderr
    whole = tmp_path / "whole"
    run_experiment(exp, out=whole)
    assert _result_files(out) == _result_files(whole)


def test_the_store_holds_no_record(tmp_path):
    exp = _experiment(tmp_path)
    run_experiment(exp, out=tmp_path / "o")
    blob = b"".join(p.read_bytes() for p in (tmp_path / "o").glob("results.sqlite*"))
    assert SECRET.encode() not in blob
    incomes = pd.read_csv(tmp_path / "small.csv")["income"].iloc[:5]
    for v in incomes:
        assert f"{v:.2f}".encode() not in blob


@pytest.mark.slow  # two or three runs of the experiment (the in-process resume test stays fast)
def test_run_metadata_and_timings_are_apart_from_results(tmp_path):
    exp = _experiment(tmp_path)
    run_experiment(exp, out=tmp_path / "a")
    run_experiment(exp, out=tmp_path / "b", fresh=True)
    assert _result_files(tmp_path / "a") == _result_files(tmp_path / "b")
    payload = json.loads((tmp_path / "a" / "results.json").read_text())
    run = payload["run"]
    assert run["sdceval"] and run["executor"].startswith("serial")
    assert run["experiment_sha256"] and len(run["jobs"]) == 3
    assert all(len(j["data"]) == 64 for j in run["jobs"].values())
    timings = json.loads((tmp_path / "a" / "timings.json").read_text())
    assert set(timings["jobs"]) == set(run["jobs"]) and timings["started"]
    assert "seconds" not in (tmp_path / "a" / "results.json").read_text()


def test_tradeoff_files_are_identical_across_runs(tmp_path, capsys):
    args = ["tradeoff", "--data", "adult", "--models", "k", "--grid", "k=50,500",
            "--measures", "p_loss,u_loss", "--workers", "1"]
    for name in ("a", "b"):
        code, _, err = cli_run([*args, "--out", str(tmp_path / name)], capsys)
        assert code == 0, err
    for f in ("points.csv", "frontier.csv", "results.json", "tradeoff.png"):
        assert (tmp_path / "a" / f).read_bytes() == (tmp_path / "b" / f).read_bytes(), f
    assert "total_s" in (tmp_path / "a" / "timings.json").read_text()


def test_sweeps_expand_into_one_job_per_combination(tmp_path, capsys):
    exp = _experiment(tmp_path, evaluation='sweep = { k = [5, 10], seed = "0..1" }\n'
                                          'title = "sweep"')
    text = exp.read_text().replace('releases = ["mdav:k=5", "noise:gamma=0.5"]',
                                   'releases = ["mdav:k={k}"]', 1)
    exp.write_text(text)
    spec = load_spec(exp)
    keys = [j.key for j in spec.jobs]
    assert keys[1:5] == ["evaluation1_small_k5_seed0", "evaluation2_small_k5_seed1",
                         "evaluation3_small_k10_seed0", "evaluation4_small_k10_seed1"]
    assert spec.jobs[1].options["releases"] == ["mdav:k=5"] and spec.jobs[2].seed(spec) == 1
    assert spec.jobs[4].title == "sweep (k = 10, seed = 1)"
    out = tmp_path / "o"
    run_experiment(exp, out=out)
    code, text, err = cli_run(["results", str(out), "--where", "kind=evaluation",
                               "--where", "measure=propensity"], capsys)
    assert code == 0, err
    df = pd.read_csv(pd.io.common.StringIO(text))
    swept = df[df["job"].str.contains("_k")]
    assert sorted(set(zip(swept["k"], swept["seed"]))) == [(5, 0), (5, 1), (10, 0), (10, 1)]


@pytest.mark.parametrize("sweep, message", [
    ('sweep = { q = [1, 2] }', "sweep variable 'q' is neither an option of the job"),
    ('sweep = { k = "5..x" }', 'a range is written "a..b"'),
    ('sweep = { k = "9..2" }', "is empty"),
    ('sweep = { k = [] }', "has no value"),
])
def test_bad_sweeps_are_refused(tmp_path, sweep, message):
    exp = _experiment(tmp_path, evaluation=sweep)
    with pytest.raises(SdcevalError, match=message):
        load_spec(exp)


@pytest.mark.parametrize("text, message", [
    ('[[experiment]]\nname = "x"\n[[evaluation]]\ndata = "census"\nreleases = ["mdav:k=5"]',
     "experiment: input should be a valid dictionary"),
    ('[experiment]\noutput = 5\n[[evaluation]]\ndata = "census"\nreleases = ["mdav:k=5"]',
     "experiment output: input should be a valid string (got 5)"),
    ('[experiment]\nname = 5\n[[evaluation]]\ndata = "census"\nreleases = ["mdav:k=5"]',
     "experiment name: input should be a valid string (got 5)"),
    ('[[evaluation]]\ndata = 5\nreleases = ["mdav:k=5"]',
     "evaluation #1 data: input should be a valid string (got 5)"),
    ('[[evaluation]]\ndata = "census"\nschema = 7\nreleases = ["mdav:k=5"]',
     "evaluation #1 schema: input should be a valid string (got 7)"),
    ('[[lattice]]\ndata = "adult-train"\n[reduced]\nlattice = 5',
     "reduced lattice: input should be a valid list (got 5)"),
    ('[experiment]\nseed = -1\n[[evaluation]]\ndata = "census"\nreleases = ["mdav:k=5"]',
     "experiment seed: input should be greater than or equal to 0"),
    ('[experiment]\nworkers = "2"\n[[evaluation]]\ndata = "census"\nreleases = ["m:k=5"]',
     "experiment workers: input should be a valid integer (got '2')"),
    ('[experiment]\nexecutor = "gpu"\n[[evaluation]]\ndata = "census"\nreleases = ["x"]',
     "experiment executor: input should be 'serial', 'processes' or 'dask'"),
])
def test_experiment_files_are_checked_against_one_schema(tmp_path, capsys, text, message):
    path = tmp_path / "e.toml"
    path.write_text(text + "\n")
    err = cli_error(["run", str(path), "--out", str(tmp_path / "o")], capsys)
    assert message in err, err


@pytest.mark.slow
def test_the_files_workers_are_honoured_unless_threads_is_given(tmp_path, monkeypatch):
    exp = _experiment(tmp_path)
    exp.write_text(exp.read_text().replace('executor = "serial"',
                                           'executor = "processes"\nworkers = 2'))
    monkeypatch.delenv("SDCEVAL_THREADS", raising=False)
    said = []
    run_experiment(exp, out=tmp_path / "a", progress=said.append)
    line = next(s for s in said if s.startswith("executor:"))
    assert "2 worker process(es) x 1 thread(s)" in line
    assert "the file's workers = 2; --threads caps it when given" in line
    monkeypatch.setenv("SDCEVAL_THREADS", "1")
    said.clear()
    run_experiment(exp, out=tmp_path / "b", progress=said.append)
    line = next(s for s in said if s.startswith("executor:"))
    assert "1 worker process(es) x 1 thread(s) (2 requested" in line
    assert "capped by the thread budget 1" in line
    assert _result_files(tmp_path / "a") == _result_files(tmp_path / "b")


def test_sdceval_results_reads_every_measurement(tmp_path, capsys):
    exp = _experiment(tmp_path)
    out = tmp_path / "o"
    run_experiment(exp, out=out)
    import sdceval
    df = sdceval.results(out)
    assert list(df.columns[:3]) == ["job", "kind", "data"]
    assert list(df.columns[-4:]) == ["measure", "measure_params", "value", "job_hash"]
    assert set(df["kind"]) == {"evaluation", "comparison"}
    comp = df[(df["kind"] == "comparison") & (df["measure"] == "propensity")]
    assert set(comp["method"]) == {"mdav", "noise"}
    assert comp.loc[comp["method"] == "mdav", "parameter_value"].item() == 5  # an int
    only = sdceval.results(out, measure="query_error")
    assert set(only["measure"]) == {"query_error"} and len(only) == 2
    code, text, err = cli_run(["results", str(out), "--format", "json"], capsys)
    assert code == 0, err
    assert len(json.loads(text)) == len(df)
    pytest.importorskip("pyarrow")
    code, _, err = cli_run(["results", str(out), "--format", "parquet", "--out",
                            str(tmp_path / "r.parquet")], capsys)
    assert code == 0, err
    assert len(pd.read_parquet(tmp_path / "r.parquet")) == len(df)


def test_results_errors_are_clear(tmp_path, capsys):
    err = cli_error(["results", str(tmp_path)], capsys)
    assert "no results store" in err
    exp = _experiment(tmp_path)
    run_experiment(exp, out=tmp_path / "o")
    err = cli_error(["results", str(tmp_path / "o"), "--where", "nope=1"], capsys)
    assert "no column 'nope'" in err
    err = cli_error(["results", str(tmp_path / "o"), "--where", "measure"], capsys)
    assert "COLUMN=VALUE" in err
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "results.sqlite").write_text("not a database")
    err = cli_error(["results", str(tmp_path / "bad")], capsys)
    assert "is not a results store" in err


def test_writers_in_several_threads_lose_nothing(tmp_path):
    """WAL and immediate transactions: concurrent writers (two runs into one folder)
    each get their rows in."""
    ResultsStore(tmp_path).close()

    def writer(i):
        with ResultsStore(tmp_path) as store:
            for j in range(20):
                store.save(f"h{i}-{j}", kind="evaluation", key=f"k{i}", title="t",
                           spec={"i": i}, result={"x": j},
                           rows=[{"measure": "m", "value": j, "w": i}], timings={},
                           run_id=None)
    threads = [threading.Thread(target=writer, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    with ResultsStore(tmp_path) as store:
        assert store.db.execute("SELECT COUNT(*) FROM jobs").fetchone()[0] == 80
        assert len(store.measurements()) == 80
        assert store.db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
