"""Issue 22, round 3 of hostile inputs: files written where they should not be
(items 7, 8, 9)."""
import os
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from sdceval.cli import main
from sdceval.experiments import load_spec, run_experiment
from sdceval.experiments.jobs import Job


@pytest.fixture(autouse=True)
def cache_in_tmp(tmp_path, monkeypatch):
    monkeypatch.setenv("SDCEVAL_CACHE_DIR", str(tmp_path / "cache"))


def _numeric_csv(path, n=60):
    rng = np.random.default_rng(0)
    pd.DataFrame({"a": rng.integers(0, 50, n), "b": rng.integers(0, 9, n),
                  "c": rng.integers(0, 5, n)}).to_csv(path, index=False)
    return path


def _files_under(root):
    return {p for p in root.rglob("*") if p.is_file() and "cache" not in p.parts}


# -- item 7: output names from inputs ----------------------------------------------------
def test_job_key_keeps_a_safe_file_name_of_the_data_path():
    key = Job("lattice", 0, {"data": "sub/../../../pat.csv"}).key
    assert key == "lattice0_pat"
    assert Job("evaluation", 3, {"data": "/abs/dir/my data.csv.gz"}).key == "evaluation3_my_data"
    assert Job("comparison", 1, {"data": "adult-train"}).key == "comparison1_adult-train"
    assert Job("pbg", 2, {"data": ".."}).key == "pbg2_data"


def test_data_path_with_dotdot_writes_nothing_outside_out(tmp_path, monkeypatch):
    work = tmp_path / "a" / "b"
    (work / "sub").mkdir(parents=True)
    _numeric_csv(tmp_path / "pat.csv")
    monkeypatch.chdir(work)
    exp = work / "e.toml"
    exp.write_text('[experiment]\nname = "e"\n[[evaluation]]\n'
                   'data = "sub/../../../pat.csv"\nreleases = ["mdav:k=5"]\n'
                   'measures = ["il1s"]\n')
    before = _files_under(tmp_path)
    out = work / "out"
    res = run_experiment(exp, out=out, executor="serial")
    new = _files_under(tmp_path) - before
    assert new and all(out.resolve() in p.resolve().parents for p in new), new
    assert all(out.resolve() in p.resolve().parents for p in res.files)
    assert (out / "evaluation0_pat_measurements.csv").is_file()


def test_experiment_name_with_dotdot_stays_under_results(tmp_path, monkeypatch):
    work = tmp_path / "a" / "b"
    work.mkdir(parents=True)
    monkeypatch.chdir(work)
    exp = work / "e.toml"
    exp.write_text('[experiment]\nname = "../../x"\n[[evaluation]]\ndata = "census"\n'
                   'releases = ["mdav:k=5"]\nmeasures = ["il1s"]\n')
    spec = load_spec(exp)
    assert (work / "results").resolve() in (work / spec.output).resolve().parents
    before = _files_under(tmp_path)
    res = run_experiment(exp, executor="serial")
    new = _files_under(tmp_path) - before
    assert new and all((work / "results").resolve() in p.resolve().parents for p in new), new
    assert res.out.name == "x"


# -- item 9: input/output clashes found before any job runs -------------------------------
def test_clash_with_a_later_job_is_found_before_the_first_job_writes(tmp_path, capsys,
                                                                     monkeypatch):
    monkeypatch.chdir(tmp_path)
    _numeric_csv(tmp_path / "p.csv")
    out = tmp_path / "out"
    out.mkdir()
    # a schema file that carries the name of the second job's output
    schema = out / "evaluation1_p_measurements.csv"
    schema.write_text('numeric = ["a", "b", "c"]\n')
    exp = tmp_path / "e.toml"
    exp.write_text('[experiment]\nname = "e"\n'
                   '[[evaluation]]\ndata = "census"\nreleases = ["mdav:k=5"]\n'
                   'measures = ["il1s"]\n'
                   '[[evaluation]]\ndata = "p.csv"\n'
                   f'schema = "{schema.as_posix()}"\n'
                   'releases = ["mdav:k=5"]\nmeasures = ["il1s"]\n')
    before = schema.read_bytes()
    code = main(["-q", "run", str(exp), "--out", str(out), "--executor", "serial"])
    err = capsys.readouterr().err
    assert code == 2 and "input file" in err and "evaluation1_p_measurements.csv" in err, err
    assert schema.read_bytes() == before
    assert sorted(p.name for p in out.iterdir()) == [schema.name]


def test_clash_with_a_fixed_output_name_is_found_before_any_job(tmp_path, capsys):
    out = tmp_path / "out"
    out.mkdir()
    exp = out / "report.md"  # TOML, whatever its name
    exp.write_text('[experiment]\nname = "e"\n[[evaluation]]\ndata = "census"\n'
                   'releases = ["mdav:k=5"]\nmeasures = ["il1s"]\n')
    code = main(["-q", "run", str(exp), "--out", str(out), "--executor", "serial"])
    err = capsys.readouterr().err
    assert code == 2 and "input file" in err, err
    assert sorted(p.name for p in out.iterdir()) == ["report.md"]


# -- item 8: a closed stderr never stops the result file ----------------------------------
@pytest.mark.parametrize("cmd, made", [
    (["anonymize", "--data", "census", "--method", "mdav", "--param", "k=5",
      "--out", "{d}/a.csv"], "a.csv"),
    (["pbg", "--data", "adult-train", "--qi", "race,sex", "--runs", "1",
      "--out", "{d}/p"], "p"),
])
def test_result_file_is_written_with_a_closed_stderr(tmp_path, cmd, made):
    r, w = os.pipe()
    os.close(r)  # every write to stderr fails with EPIPE
    try:
        proc = subprocess.run([sys.executable, "-m", "sdceval.cli",
                               *[c.format(d=tmp_path) for c in cmd]],
                              stderr=w, stdout=subprocess.PIPE, timeout=300,
                              env={**os.environ, "SDCEVAL_CACHE_DIR": str(tmp_path / "c")})
    finally:
        os.close(w)
    assert (tmp_path / made).exists(), proc
    assert proc.returncode == 0, proc


def test_say_to_a_closed_stderr_is_dropped(monkeypatch):
    from types import SimpleNamespace

    from sdceval.cli.common import _say

    class Closed:
        def write(self, s):
            raise BrokenPipeError(32, "Broken pipe")

        def flush(self):
            raise BrokenPipeError(32, "Broken pipe")

        def fileno(self):
            raise OSError("no fd")

    monkeypatch.setattr(sys, "stderr", Closed())
    _say(SimpleNamespace(quiet=False), "progress")  # no exception
