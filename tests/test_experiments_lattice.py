"""``[[lattice]]`` jobs of experiment files (issue 7 item 8): validation when the file
loads, the optimum and every node written to the output folder, the report."""
import json

import pandas as pd
import pytest

from sdceval import SdcevalError
from sdceval.core.loaders import open_ref
from sdceval.experiments import load_spec, run_experiment
from sdceval.lattice.search import LatticeProblem, evaluate_all, optimal
from sdceval.privacy import make_model

SHIPPED = "experiments/lattice_adult.toml"
QIS = ["age", "education", "marital-status", "race", "sex"]


@pytest.fixture(autouse=True)
def cache_in_tmp(tmp_path, monkeypatch):
    monkeypatch.setenv("SDCEVAL_CACHE_DIR", str(tmp_path / "cache"))


def _write(tmp_path, text):
    p = tmp_path / "e.toml"
    p.write_text(text)
    return p


@pytest.fixture(scope="module")
def shipped_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("lattice_adult")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("SDCEVAL_CACHE_DIR", str(out / "cache"))
        res = run_experiment(SHIPPED, out=out / "res", executor="serial")
    return res, out / "res"


def test_shipped_file_validates():
    spec = load_spec(SHIPPED)
    assert [j.kind for j in spec.jobs] == ["lattice", "lattice"]
    load_spec(SHIPPED, reduced=True)


def test_optimum_equals_the_python_search(shipped_run):
    res, out = shipped_run
    ds = open_ref({"data": "adult-train", "qi": QIS})
    want = optimal(LatticeProblem(ds, [make_model("k", k=5),
                                       make_model("l", l=3, variant="distinct")],
                                  rule="arx", max_suppression=0.02), "glm")
    key = "lattice0_adult-train"
    payload = json.loads((out / "results.json").read_text())["lattices"][key]
    opt = payload["optimum"]
    assert opt["levels"] == list(want.levels) and opt["value"] == want.value
    assert opt["checked"] == want.checked and payload["lattice_size"] == 448
    assert payload["models"] == ["k=5", "l=3,variant=distinct"]
    assert payload["levels_by_qi"] == dict(zip(QIS, want.levels))
    assert "nodes_file" not in payload  # no export asked
    # the tidy rows: one per objective at the optimum
    rows = pd.read_csv(out / f"{key}_optimum.csv")
    assert list(rows["measure"]) == ["glm", "glm_normalized", "discernibility", "k",
                                     "l_distinct", "suppressed"]
    assert rows.set_index("measure").loc["glm", "value"] == pytest.approx(want.value,
                                                                          rel=1e-12)
    assert (rows["node"] == ",".join(map(str, want.levels))).all()
    assert (rows["metric"] == "glm").all() and (rows["rule"] == "arx").all()
    for q, v in zip(QIS, want.levels):
        assert (rows[f"level_{q}"] == v).all()
    assert res.lattices[key].optimum["levels"] == list(want.levels)


def test_export_writes_every_node(shipped_run):
    res, out = shipped_run
    key = "lattice1_adult-train"
    nodes = pd.read_csv(out / f"{key}_nodes.csv")
    assert len(nodes) == 448
    assert list(nodes.columns) == [*QIS, "height", "suppressed", "feasible", "glm",
                                   "discernibility", "s_k", "k", "classes"]
    ds = open_ref({"data": "adult-train", "qi": QIS})
    problem = LatticeProblem(ds, [make_model("k", k=10)], rule="dewri", max_suppression=0.01)
    want = evaluate_all(problem, ["glm", "discernibility", "s_k", "k", "classes"],
                        cache=False)
    pd.testing.assert_frame_equal(nodes, want, check_dtype=False)
    # its optimum is the least discernibility among the feasible nodes
    payload = json.loads((out / "results.json").read_text())["lattices"][key]
    feasible = want[want["feasible"]]
    assert payload["optimum"]["value"] == pytest.approx(feasible["discernibility"].min())
    assert payload["nodes_file"] == f"{key}_nodes.csv"
    assert payload["feasible_nodes"] == int(want["feasible"].sum())


def test_report_and_summary(shipped_run):
    res, out = shipped_run
    report = (out / "report.md").read_text()
    assert report.count("## Generalization lattice: ") == 2
    opt = res.lattices["lattice0_adult-train"].optimum
    node = ", ".join(f"{q}={v}" for q, v in zip(QIS, opt["levels"]))
    assert f"Optimal node ({node})" in report
    assert "models: k=5, l=3 (distinct); suppression: arx" in report
    assert "`lattice1_adult-train_nodes.csv`" in report
    summary = res.summary()
    assert "[lattice0_adult-train]" in summary and node in summary
    assert any(p.name == "lattice1_adult-train_nodes.csv" for p in res.files)


def test_export_only_job_and_the_cli_agree(tmp_path, capsys):
    """No ``metric`` with ``export = true``: every node, no search; the same table as
    ``sdceval lattice export``."""
    from sdceval.cli import main
    text = ('[experiment]\nname = "t"\n'
            '[[lattice]]\ndata = "adult-train"\nqi = "age,race,sex"\n'
            'models = ["k=5"]\nobjectives = ["glm", "k"]\nexport = true\n')
    res = run_experiment(_write(tmp_path, text), out=tmp_path / "r")
    job = res.lattices["lattice0_adult-train"]
    assert job.optimum is None
    assert not (tmp_path / "r" / "lattice0_adult-train_optimum.csv").exists()
    nodes = pd.read_csv(tmp_path / "r" / "lattice0_adult-train_nodes.csv")
    assert main(["-q", "lattice", "export", "--data", "adult-train", "--qi", "age,race,sex",
                 "--model", "k=5", "--objectives", "glm,k",
                 "--out", str(tmp_path / "cli.csv")]) == 0
    pd.testing.assert_frame_equal(nodes, pd.read_csv(tmp_path / "cli.csv"))
    assert "Every node: 28 nodes" in (tmp_path / "r" / "report.md").read_text()
    capsys.readouterr()


def test_default_is_a_glm_search_without_models(tmp_path):
    text = '[[lattice]]\ndata = "adult-train"\nqi = ["race", "sex"]\n'
    res = run_experiment(_write(tmp_path, text), out=tmp_path / "r")
    job = res.lattices["lattice0_adult-train"]
    assert job.metric == "glm" and job.rule == "dewri" and job.nodes is None
    want = optimal(LatticeProblem(open_ref({"data": "adult-train", "qi": ["race", "sex"]}),
                                  [], rule="dewri", max_suppression=0.01), "glm")
    assert job.optimum["levels"] == list(want.levels) and job.optimum["value"] == want.value


@pytest.mark.parametrize("body, pattern", [
    ('models = ["kk=5"]', r"\[\[lattice\]\] #1: .*unknown privacy model 'kk'.*Did you mean 'k'"),
    ('models = ["k"]', r"threshold 'k'.*k=10"),
    ('models = ["cl:c=3"]', r"needs its parameter 'l'"),
    ('models = "k=5"', r"'models' must be a list"),
    ('model = ["k=5"]', r"unknown key 'model'.*Did you mean 'models'"),
    ('metric = "glmm"', r"Did you mean 'glm'"),
    ('metric = "classes"', r"'classes' is a count.*glm"),
    ('objectives = ["glm", "discernability"]', r"Did you mean 'discernibility'"),
    ('rule = "arks"', r"unknown suppression rule 'arks'.*Did you mean 'arx'"),
    ('max_suppression = -0.5', r"max_suppression.*>= 0"),
    ('max_suppression = "1%"', r"max_suppression.*number"),
    ('export = "yes"', r"'export' must be true or false"),
])
def test_validation_errors_name_the_job(tmp_path, body, pattern):
    text = f'[[lattice]]\ndata = "adult-train"\n{body}\n'
    with pytest.raises(SdcevalError, match=pattern):
        load_spec(_write(tmp_path, text))


def test_missing_sensitive_attribute_is_an_error_at_run_time(tmp_path):
    text = ('[[lattice]]\ndata = "adult-train"\nqi = ["race", "sex"]\nsensitive = ""\n'
            'models = ["l=2"]\n')
    p = _write(tmp_path, text)
    load_spec(p)
    with pytest.raises(SdcevalError, match="l=2 .*needs a sensitive attribute"):
        run_experiment(p, out=tmp_path / "r")
