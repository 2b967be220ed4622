"""``sdceval vectors`` and ``sdceval pbg`` end to end, and their experiment jobs
(issues 8 and 9): files written, what is printed, clear errors.  Small settings (k = 50
on adult-train; a 112-node lattice) keep each run to about a second."""
import json

import pandas as pd
import pytest

from conftest import cli_error, cli_run
from sdceval.experiments import load_spec, run_experiment

QIS = "age,education,race,sex"


@pytest.fixture(autouse=True)
def cache_in_tmp(tmp_path, monkeypatch):
    monkeypatch.setenv("SDCEVAL_CACHE_DIR", str(tmp_path / "cache"))


def run(args, capsys):
    return cli_run(args, capsys)


def error_of(args, capsys) -> str:
    return cli_error(args, capsys)


# -- sdceval vectors ------------------------------------------------------------------
def test_vectors_compares_method_specs_and_a_release_file(tmp_path, capsys):
    rel = tmp_path / "mondrian.csv"
    assert run(["anonymize", "--data", "adult-train", "--method", "mondrian",
                "--param", "k=50", "--out", str(rel)], capsys)[0] == 0
    out_dir = tmp_path / "cmp"
    code, out, err = run(["vectors", "--data", "adult-train", "--release", str(rel),
                          "--release", "bucketization:k=50",
                          "--properties", "class_size,sensitive_count",
                          "--weights", "0.5,0.5", "--out", str(out_dir)], capsys)
    assert code == 0, err
    assert "over all properties" in out and "wtd:" in out
    pairs = pd.read_csv(out_dir / "pairs.csv")
    # the file read back is Mondrian at k = 50: the same partition as bucketization's
    first = pairs[(pairs["first"] == str(rel)) & (pairs["second"] == "bucketization:k=50")]
    assert set(first["relation"]) == {"equal"}
    unary = pd.read_csv(out_dir / "unary.csv").set_index(["release", "property"])
    assert unary.loc[("bucketization:k=50", "class_size"), "worst"] >= 50
    assert {"class_size.png", "sensitive_count.png", "vectors.json"} <= {
        p.name for p in out_dir.iterdir()}
    data = json.loads((out_dir / "vectors.json").read_text())
    assert data["settings"]["properties"] == ["class_size", "sensitive_count"]
    assert len(data["decisions"]) == 1


def test_vectors_errors(tmp_path, capsys):
    assert "at least two releases" in error_of(
        ["vectors", "--release", "mondrian:k=50"], capsys)
    assert "neither a file nor a method spec" in error_of(
        ["vectors", "--release", "mondrain:k=5", "--release", "mondrian:k=5"], capsys)
    assert "is not defined for a perturbative release" in error_of(
        ["vectors", "--data", "census", "--release", "mdav:k=5", "--release",
         "noise:gamma=1", "--properties", "glm"], capsys)
    assert "weights" in error_of(
        ["vectors", "--release", "mondrian:k=50", "--release", "bucketization:k=50",
         "--properties", "class_size", "--weights", "0.5,0.5"], capsys)


# -- sdceval pbg ----------------------------------------------------------------------------
def test_pbg_writes_archive_metrics_and_front(tmp_path, capsys):
    out_dir = tmp_path / "pbg"
    code, out, err = run(["pbg", "--data", "adult-train", "--qi", QIS,
                          "--objectives", "k,l,glm", "--eps", "5,2,100", "--runs", "2",
                          "--seed", "3", "--out", str(out_dir)], capsys)
    assert code == 0, err
    assert "k, l_distinct, glm" in out and "minimal PBGs" in out
    metrics = json.loads((out_dir / "metrics.json").read_text())
    assert metrics["eps"] == [5.0, 2.0, 100.0]
    assert [r["seed"] for r in metrics["runs"]] == [3, 4]
    archive = pd.read_csv(out_dir / "archive.csv")
    assert {"age", "education", "race", "sex", "k", "l_distinct", "glm", "seed"} <= set(archive)
    assert set(archive["seed"]) == {3, 4}
    assert (out_dir / "front.png").stat().st_size > 0
    runs = pd.read_csv(out_dir / "runs.csv")
    assert runs["rr"].between(0, 1).all() and "rr_unit_archive" in runs


def test_pbg_errors(capsys):
    assert "at least two objectives" in error_of(
        ["pbg", "--qi", QIS, "--objectives", "glm"], capsys)
    assert "Did you mean 'glm'" in error_of(
        ["pbg", "--qi", QIS, "--objectives", "k,gml"], capsys)
    assert "eps" in error_of(["pbg", "--qi", QIS, "--eps", "1,2,3"], capsys)
    assert "eps" in error_of(["pbg", "--qi", QIS, "--eps", "1,-2"], capsys)


# -- experiment jobs --------------------------------------------------------------------------
@pytest.mark.slow
def test_vectors_and_pbg_jobs_run(tmp_path):
    p = tmp_path / "e.toml"
    p.write_text(f"""
[experiment]
name = "t"
[[vectors]]
data = "adult-train"
releases = ["mondrian:k=50", "mdav:k=50"]
properties = ["class_size"]
[vectors.roles]
"mdav:k=50" = {{ numeric = ["age", "education-num"] }}
[[pbg]]
data = "adult-train"
qi = {QIS.split(",")!r}
objectives = ["k", "glm"]
runs = 2
exact = true
[pbg.paper]
rr = 0.94
""".replace("'", '"'))
    res = run_experiment(p, out=tmp_path / "out")
    vec = next(iter(res.vectors.values()))
    assert list(vec.comparison.pairs["property"]) == ["class_size"]
    pbg = next(iter(res.pbgs.values()))
    assert pbg.study.exact["minimal_pbgs"] == len(pbg.study.front)
    report = (tmp_path / "out" / "report.md").read_text()
    assert "## Property vectors" in report and "## PBG-EA" in report
    assert "| rr |" in report
    results = json.loads((tmp_path / "out" / "results.json").read_text())
    assert set(results["pbg"]) and set(results["vectors"])


def test_job_validation(tmp_path):
    from sdceval import SdcevalError
    p = tmp_path / "e.toml"
    p.write_text('[[pbg]]\ndata = "adult-train"\nobjectives = ["k"]\n')
    with pytest.raises(SdcevalError, match="at least two objectives"):
        load_spec(p)
    p.write_text('[[vectors]]\ndata = "adult-train"\nreleases = ["mondrian:k=5"]\n')
    with pytest.raises(SdcevalError, match="at least two method specs"):
        load_spec(p)
    p.write_text('[[pbg]]\ndata = "adult-train"\nobjectives = ["k", "glm"]\neps = [1]\n')
    with pytest.raises(SdcevalError, match="one positive number per objective"):
        load_spec(p)


def test_inputs_are_protected_for_one_command_only(tmp_path, capsys, monkeypatch):
    # `vectors --release rel.csv` protects rel.csv while it runs; a later command in
    # the same process may write it (as a later shell command may)
    monkeypatch.chdir(tmp_path)
    args = ["anonymize", "--data", "adult-train", "--method", "mondrian", "--param", "k=50",
            "--out", "rel.csv"]
    assert run(args, capsys)[0] == 0
    assert run(["vectors", "--release", "rel.csv", "--release", "bucketization:k=50",
                "--properties", "class_size"], capsys)[0] == 0
    assert run(args, capsys)[0] == 0
    # within one command the input stays protected
    assert "input file" in error_of(["anonymize", "--data", "rel.csv", "--method",
                                     "mondrian", "--qi", "age", "--param", "k=50",
                                     "--out", "rel.csv"], capsys)
