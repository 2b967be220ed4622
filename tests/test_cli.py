"""End-to-end runs of the command line on the bundled data, checking the files written."""
import json
import subprocess
import sys

import pandas as pd

from sdceval.cli import main


def run(args, capsys):
    code = main(args)
    out = capsys.readouterr()
    return code, out.out, out.err


def test_list(capsys):
    for what in ("methods", "measures", "datasets"):
        code, out, _ = run(["list", what], capsys)
        assert code == 0 and out.strip()
    _, out, _ = run(["list", "methods"], capsys)
    assert "mdav" in out and "rank_swap" in out and "protection increasing" in out


def test_anonymize_then_evaluate(tmp_path, capsys):
    masked = tmp_path / "masked.csv"
    code, _, err = run(["anonymize", "--data", "census", "--method", "mdav", "--param", "k=5",
                        "--out", str(masked)], capsys)
    assert code == 0, err
    df = pd.read_csv(masked)
    assert df.shape == (1080, 13)
    code, out, err = run(["evaluate", "--data", "census", "--release", str(masked),
                          "--measures", "linkage_risk,propensity,emd",
                          "--out", str(tmp_path / "m.json")], capsys)
    assert code == 0, err
    assert "linkage_risk" in out and "propensity" in out and "emd" in out
    payload = json.loads((tmp_path / "m.json").read_text())
    assert {m["measure"] for m in payload["measurements"]} == {"linkage_risk", "propensity", "emd"}


def test_compare_writes_ranking_results_and_plot(tmp_path, capsys):
    out_dir = tmp_path / "cmp"
    code, out, err = run(["compare", "--out", str(out_dir)], capsys)
    assert code == 0, err
    ranking = pd.read_csv(out_dir / "ranking.csv")
    assert list(ranking["method"]) == ["mdav", "noise", "rank_swap", "multiplicative_noise"]
    for col in ["method", "parameter", "value", "risk", "propensity", "emd",
                "rank_propensity", "rank_emd"]:
        assert col in ranking.columns
    # every method matched the target risk of mdav:k=5 closely
    results = json.loads((out_dir / "results.json").read_text())
    target = results["target"]
    assert ranking.loc[ranking.method == "mdav", "value"].item() == 5
    assert (abs(ranking["risk"] - target) / target < 0.02).all()
    assert all(m["steps"] for m in results["matches"])
    assert (out_dir / "risk_curves.png").stat().st_size > 10_000
    assert "mdav" in out


def test_bad_inputs_give_clear_errors(tmp_path, capsys):
    code, _, err = run(["anonymize", "--data", "census", "--method", "mdav", "--param", "k=1",
                        "--out", str(tmp_path / "x.csv")], capsys)
    assert code == 2 and "'k'" in err and ">= 2" in err
    code, _, err = run(["anonymize", "--data", "census", "--method", "mdav", "--param",
                        "k=5000", "--out", str(tmp_path / "x.csv")], capsys)
    assert code == 2 and "1080" in err
    code, _, err = run(["anonymize", "--data", "census", "--method", "nosie",
                        "--out", str(tmp_path / "x.csv")], capsys)
    assert code == 2 and "Did you mean 'noise'" in err
    code, _, err = run(["compare", "--data", "cencus", "--out", str(tmp_path)], capsys)
    assert code == 2 and "Did you mean 'census'" in err
    code, _, err = run(["evaluate", "--data", "census", "--release", str(tmp_path / "no.csv")],
                       capsys)
    assert code == 2 and "does not exist" in err
    code, _, err = run(["compare", "--target", "50", "--methods", "mdav",
                        "--out", str(tmp_path / "c")], capsys)
    assert code == 2 and "reachable" in err


def test_output_never_overwrites_input(tmp_path, capsys):
    src = tmp_path / "in.csv"
    pd.read_csv(__import__("sdceval.core.loaders", fromlist=["_data_file"])._data_file("census.csv.gz").open("rb"),
                compression="gzip").to_csv(src, index=False)
    before = src.read_bytes()
    code, _, err = run(["anonymize", "--data", str(src), "--method", "mdav", "--out", str(src)],
                       capsys)
    assert code == 2 and "input file" in err
    assert src.read_bytes() == before


def test_console_script_entry_point():
    res = subprocess.run([sys.executable, "-m", "sdceval.cli", "list", "datasets"],
                         capture_output=True, text=True, check=True)
    assert "census" in res.stdout
