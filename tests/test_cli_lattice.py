"""``sdceval lattice info|evaluate|search|export`` end to end (issue 7 item 8).

Bundled ``adult-train`` with four quasi-identifiers (age, education, race, sex: a
112-node lattice), so every command takes well under a second once the data set is
loaded.  The on-disk cache of ``lattice export`` goes to a temporary folder.
"""
import json

import pandas as pd
import pytest
from conftest import cli_error, cli_run

from sdceval import SdcevalError
from sdceval import cli
from sdceval.cli import EXIT_SIGINT
from sdceval.core.loaders import open_dataset
from sdceval.lattice.search import LatticeProblem, optimal
from sdceval.privacy import make_model, model_class, parse_model_spec

QIS = ["age", "education", "race", "sex"]
DATA = ["--data", "adult-train", "--qi", ",".join(QIS)]


@pytest.fixture(autouse=True)
def cache_in_tmp(tmp_path, monkeypatch):
    monkeypatch.setenv("SDCEVAL_CACHE_DIR", str(tmp_path / "cache"))


@pytest.fixture(scope="module")
def ds():
    return open_dataset("adult-train", qi=QIS)


def run(args, capsys):
    return cli_run(["lattice", *args], capsys)


def error_of(args, capsys) -> str:
    return cli_error(["lattice", *args], capsys)


def objective_lines(out: str) -> dict:
    """``  name   value`` lines of ``lattice evaluate``."""
    vals = {}
    for line in out.splitlines():
        parts = line.split()
        if line.startswith("  ") and len(parts) == 2:
            vals[parts[0]] = parts[1]
    return vals


# -- info / evaluate / search / export -------------------------------------------------------
def test_info_prints_size_and_heights(capsys):
    code, out, _ = run(["info", *DATA], capsys)
    assert code == 0
    # age 7 levels, education 4, race 2, sex 2 (the bundled Dewri hierarchies)
    assert "lattice of 112 nodes, heights 0..11" in out
    for q, levels in zip(QIS, (7, 4, 2, 2)):
        assert any(line.split()[:3] == [q, str(levels), "levels"]
                   for line in out.splitlines()), (q, out)
    assert "glm" in out and "distinct quasi-identifier rows" in out


def test_evaluate_prints_the_objectives_of_the_node(ds, capsys):
    code, out, _ = run(["evaluate", *DATA, "--levels", "2,1,0,1", "--model", "k=5",
                        "--objectives", "glm,k,discernibility,l_distinct"], capsys)
    assert code == 0
    assert out.startswith("node 2,1,0,1 (models: k=5; suppression: dewri")
    got = objective_lines(out)
    want = LatticeProblem(ds, [make_model("k", k=5)]).evaluate_node(
        (2, 1, 0, 1), ["glm", "k", "discernibility", "l_distinct"])
    assert set(got) == {"suppressed", "feasible", "glm", "k", "discernibility", "l_distinct"}
    for name in ("glm", "discernibility", "k", "suppressed", "l_distinct"):
        assert float(got[name]) == pytest.approx(float(want[name]), rel=1e-9), name
    assert got["feasible"] == str(want["feasible"])
    # named levels, the others at 0
    code, out, _ = run(["evaluate", *DATA, "--levels", "age=2,race=1",
                        "--objectives", "glm"], capsys)
    assert code == 0 and out.startswith("node 2,0,1,0 ")


def test_search_writes_the_optimum_found_in_python(ds, tmp_path, capsys):
    path = tmp_path / "opt.json"
    code, out, _ = run(["search", *DATA, "--model", "k=5", "--rule", "arx",
                        "--max-suppression", "0.02", "--out", str(path)], capsys)
    assert code == 0
    got = json.loads(path.read_text())
    want = optimal(LatticeProblem(ds, [make_model("k", k=5)], rule="arx", max_suppression=0.02), "glm")
    assert got["levels"] == list(want.levels)
    assert got["value"] == pytest.approx(want.value, rel=1e-12)
    assert got["checked"] == want.checked and got["lattice_size"] == 112
    assert got["ties"] == [list(t) for t in want.ties] and got["objective"] == "glm"
    assert got["data"] == "adult-train" and "k=5" in got["problem"] and "arx" in got["problem"]
    assert f"levels {','.join(map(str, want.levels))}" in out
    assert "of 112 nodes checked" in out


def test_search_with_two_models_and_another_metric(ds, capsys):
    code, out, _ = run(["search", *DATA, "--model", "k=3", "--model", "l=2,variant=distinct",
                        "--metric", "discernibility", "--max-suppression", "0"], capsys)
    assert code == 0
    want = optimal(LatticeProblem(ds, [make_model("k", k=3),
                                       make_model("l", l=2, variant="distinct")],
                                  max_suppression=0), "discernibility")
    assert f"levels {','.join(map(str, want.levels))}" in out
    assert "models: k=3, l=2 (distinct)" in out


def test_export_csv_has_every_node(ds, tmp_path, capsys):
    path = tmp_path / "nodes.csv"
    code, out, _ = run(["export", *DATA, "--model", "k=5", "--objectives", "glm,k",
                        "--out", str(path)], capsys)
    assert code == 0
    table = pd.read_csv(path)
    assert list(table.columns) == [*QIS, "height", "suppressed", "feasible", "glm", "k"]
    assert len(table) == 112 and len(table.drop_duplicates(QIS)) == 112
    assert (table["height"] == table[QIS].sum(axis=1)).all()
    assert f"112 nodes, {int(table['feasible'].sum())} feasible" in out
    row = table[(table[QIS] == [2, 1, 0, 1]).all(axis=1)].iloc[0]
    want = LatticeProblem(ds, [make_model("k", k=5)]).evaluate_node((2, 1, 0, 1),
                                                                     ["glm", "k"])
    assert row["glm"] == pytest.approx(want["glm"], rel=1e-12)
    assert row["suppressed"] == want["suppressed"] and bool(row["feasible"]) == want["feasible"]
    # the cache went to SDCEVAL_CACHE_DIR, and a second export reads it
    assert list((tmp_path / "cache").glob("*.npz"))
    code, _, _ = run(["export", *DATA, "--model", "k=5", "--objectives", "glm,k",
                      "--out", str(tmp_path / "again.csv")], capsys)
    assert code == 0
    pd.testing.assert_frame_equal(pd.read_csv(tmp_path / "again.csv"), table)


def test_export_parquet(tmp_path, capsys):
    pytest.importorskip("pyarrow")
    path = tmp_path / "nodes.parquet"
    code, _, _ = run(["export", *DATA, "--objectives", "glm", "--no-cache",
                      "--out", str(path)], capsys)
    assert code == 0
    table = pd.read_parquet(path)
    assert len(table) == 112 and list(table.columns) == [*QIS, "height", "suppressed",
                                                         "feasible", "glm"]
    assert not (tmp_path / "cache").exists()  # --no-cache


def test_export_bad_suffix_fails_before_the_evaluation(tmp_path, capsys, monkeypatch):
    import sdceval.lattice.search as search

    def boom(*a, **k):
        raise AssertionError("evaluated before checking --out")
    monkeypatch.setattr(search, "evaluate_all", boom)
    msg = error_of(["export", *DATA, "--out", str(tmp_path / "nodes.txt")], capsys)
    assert "nodes.txt" in msg and ".csv" in msg and ".parquet" in msg
    assert not (tmp_path / "nodes.txt").exists()
    msg = error_of(["export", *DATA], capsys)
    assert "--out" in msg


def test_export_never_overwrites_an_input_file(ds, tmp_path, capsys):
    src = tmp_path / "in.csv"
    ds.frame[["age", "sex", "race", "occupation"]].head(300).to_csv(src, index=False)
    before = src.read_bytes()
    msg = error_of(["export", "--data", str(src), "--qi", "age,sex,race", "--sensitive",
                    "occupation", "--objectives", "glm", "--out", str(src)], capsys)
    assert "input file" in msg
    assert src.read_bytes() == before


def test_interrupted_export_leaves_no_partial_file(tmp_path, capsys, monkeypatch):
    def interrupted(self, path, *a, **k):
        with open(path, "w") as fh:
            fh.write("half a table\n")
        raise KeyboardInterrupt
    monkeypatch.setattr(pd.DataFrame, "to_csv", interrupted)
    # after an interrupt main() ends every child process: not the test session's workers
    monkeypatch.setattr(cli, "_end_children", lambda *a, **k: None)
    code, _, err = run(["export", *DATA, "--objectives", "glm", "--no-cache",
                        "--out", str(tmp_path / "nodes.csv")], capsys)
    assert code == EXIT_SIGINT and "interrupted" in err
    assert [p.name for p in tmp_path.iterdir()] == []


# -- bad input ---------------------------------------------------------------------------
def test_unknown_model_suggests_the_closest(capsys):
    msg = error_of(["search", *DATA, "--model", "kk=5"], capsys)
    assert "'kk'" in msg and "Did you mean 'k'?" in msg


def test_model_without_a_value(capsys):
    msg = error_of(["search", *DATA, "--model", "k"], capsys)
    assert "--model 'k'" in msg and "k=10" in msg and "threshold" in msg
    msg = error_of(["search", *DATA, "--model", "cl:c=3"], capsys)
    assert "'l'" in msg and "cl:c=3,l=3" in msg and "make_model" not in msg
    msg = error_of(["search", *DATA, "--model", "k=5,kk=2"], capsys)
    assert "'kk'" in msg and "Its parameters: k" in msg
    msg = error_of(["search", *DATA, "--model", "k=0"], capsys)
    assert "'k'" in msg and ">= 1" in msg
    msg = error_of(["search", *DATA, "--model", "l=3,variant=dist"], capsys)
    assert "Did you mean 'distinct'?" in msg
    msg = error_of(["search", *DATA, "--model", ""], capsys)
    assert "empty" in msg


def test_unknown_metric_and_objective_suggest_the_closest(capsys):
    msg = error_of(["search", *DATA, "--model", "k=5", "--metric", "glmm"], capsys)
    assert "'glmm'" in msg and "Did you mean 'glm'?" in msg
    msg = error_of(["evaluate", *DATA, "--objectives", "glm,discernability"], capsys)
    assert "'discernability'" in msg and "Did you mean 'discernibility'?" in msg
    msg = error_of(["export", *DATA, "--objectives", "sk", "--out", "x.csv"], capsys)
    assert "Did you mean 's_k'?" in msg


def test_infeasible_model_says_what_the_most_general_node_achieves(capsys):
    msg = error_of(["search", *DATA, "--model", "k=40000", "--rule", "arx",
                    "--max-suppression", "0"], capsys)
    assert "no node satisfies" in msg and "most general node" in msg
    assert "30162" in msg.replace(",", "")  # one class of every record
    msg = error_of(["search", *DATA, "--model", "l=8", "--rule", "arx"], capsys)
    assert "most general node" in msg and "l = 7.47" in msg


def test_levels_outside_the_range_name_the_qi(capsys):
    msg = error_of(["evaluate", *DATA, "--levels", "9,0,0,0"], capsys)
    assert "'age'" in msg and "0..6" in msg
    msg = error_of(["evaluate", *DATA, "--levels", "sex=2"], capsys)
    assert "'sex'" in msg and "0..1" in msg
    msg = error_of(["evaluate", *DATA, "--levels", "1,0"], capsys)
    assert "4 quasi-identifiers" in msg
    msg = error_of(["evaluate", *DATA, "--levels", "edu=1"], capsys)
    assert "Did you mean 'education'?" in msg


def test_bad_suppression_limit(capsys):
    msg = error_of(["search", *DATA, "--model", "k=5", "--max-suppression", "-1"], capsys)
    assert "max_suppression" in msg and ">= 0" in msg


# -- the spec parser the CLI and experiment files share ----------------------------------------
def test_parse_model_spec_forms():
    assert parse_model_spec("k=5").describe() == "k=5"
    assert parse_model_spec(" l=3, variant=distinct ").describe() == "l=3 (distinct)"
    assert parse_model_spec("cl:c=3,l=2").describe() == "c=3, l=2"
    assert parse_model_spec("t:t=0.2").describe() == parse_model_spec("t=0.2").describe()
    assert isinstance(parse_model_spec("k=5"), model_class("k"))
    assert parse_model_spec("k=5").k == 5 and isinstance(parse_model_spec("k=5").k, int)


@pytest.mark.parametrize("text, pattern", [
    ("", "empty"),
    ("k", "threshold 'k'.*k=10"),
    ("cl", "threshold 'c'.*cl:c=3,l=3"),
    ("kk=5", "Did you mean 'k'"),
    ("k=5,k=6", "twice"),
    ("k=5,5", "'5' is not NAME=VALUE"),
    ("l:k=3", "no parameter 'k'"),
    ("cl:c=3", "needs its parameter 'l'.*cl:c=3,l=3"),
    ("variant=distinct,l=3", "unknown privacy model 'variant'"),
])
def test_parse_model_spec_errors(text, pattern):
    with pytest.raises(SdcevalError, match=pattern):
        parse_model_spec(text)
    with pytest.raises(SdcevalError, match="privacy model spec"):
        parse_model_spec(5)
