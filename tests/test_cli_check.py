"""``sdceval check --guideline`` (issue 30 item 2): PASS / FAIL with the numbers and exit
codes 0 / 1 / 2; ``--list``; ``compare --guideline``."""
from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from sdceval.cli import main


def _run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_list_and_help(capsys):
    for argv in (["check", "--list"], ["check", "--guideline", "list"]):
        code, out, _ = _run(capsys, *argv)
        assert code == 0
        names = [line.split()[0] for line in out.splitlines()]
        assert {"ema-0070", "hc-prci", "el-emam-public", "el-emam-5", "sdcmicro-global",
                "hipaa-safe-harbor", "custom"} <= set(names)
    with pytest.raises(SystemExit):
        main(["check", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert "0 PASS, 1 FAIL" in out and "2 bad input" in out


@pytest.mark.slow
def test_ema_0070_on_adult_fails_unprotected_and_passes_mondrian(tmp_path, capsys):
    raw, m12 = tmp_path / "raw.csv", tmp_path / "m12.csv"
    assert main(["-q", "anonymize", "--data", "adult-arx", "--method", "generalization",
                 "--param", "max_suppression=0", "--out", str(raw)]) == 0
    assert main(["-q", "anonymize", "--data", "adult-arx", "--method", "mondrian",
                 "--param", "k=12", "--out", str(m12)]) == 0
    capsys.readouterr()
    code, out, _ = _run(capsys, "-q", "check", "--guideline", "ema-0070", "--data",
                        "adult-arx", "--release", str(raw))
    assert code == 1 and out.startswith("FAIL: EMA Policy 0070")
    assert "value: 1;" in out and "minimum class size 12" in out
    assert "margin: -0.916667" in out and "attacker = journalist" in out
    assert "violating: 27648 of 30162 records, in 19358 classes" in out
    code, out, _ = _run(capsys, "-q", "check", "--guideline", "ema-0070", "--data",
                        "adult-arx", "--release", str(m12), "--out",
                        str(tmp_path / "v.json"))
    assert code == 0 and out.startswith("PASS: EMA Policy 0070")
    d = json.loads((tmp_path / "v.json").read_text())
    assert d["passed"] and d["value"] == 1 / 12 and d["violating_records"] == 0
    assert d["min_class_size"] == 12 and d["assumptions"]["attacker"] == "journalist"


def _small(tmp_path, capsys):
    rng = np.random.default_rng(0)
    n = 400
    df = pd.DataFrame({"age": rng.integers(20, 70, n), "sex": rng.choice(["f", "m"], n),
                       "zip": rng.choice([f"z{i}" for i in range(8)], n),
                       "y": rng.choice(["a", "b", "c"], n)})
    data = tmp_path / "small.csv"
    df.to_csv(data, index=False)
    opts = ["--data", str(data), "--qi", "age,sex,zip", "--sensitive", "y"]
    rel = tmp_path / "m.csv"
    assert main(["-q", "anonymize", *opts, "--method", "mondrian", "--param", "k=11",
                 "--out", str(rel)]) == 0
    capsys.readouterr()
    return opts, rel


def test_check_on_a_small_file_and_bad_input(tmp_path, capsys):
    opts, rel = _small(tmp_path, capsys)
    base = ["-q", "check", *opts, "--release", str(rel)]
    code, out, _ = _run(capsys, *base, "--guideline", "el-emam-public")
    assert code == 0 and out.startswith("PASS")
    code, out, _ = _run(capsys, *base, "--guideline", "el-emam-public", "--rounding", "arx")
    assert code == 1 and out.startswith("FAIL")
    code, out, _ = _run(capsys, *base, "--guideline", "custom", "--measure",
                        "risk_summary:reading=average", "--threshold", "0.2",
                        "--attacker", "prosecutor")
    assert code == 0 and "risk_summary:reading=average" in out
    # bad input: exit 2, one line naming the fix
    for extra, words in ((["--guideline", "ema-070"], "Did you mean 'ema-0070'"),
                         (["--guideline", "custom"], "needs your measure"),
                         (["--guideline", "sdcmicro-global", "--population-size", "9"],
                          "takes no population_size"),
                         ([], "which guideline")):
        code, out, err = _run(capsys, *base, *extra)
        assert code == 2 and words in err and err.count("\n") == 1, err
    prof = tmp_path / "mine.toml"
    prof.write_text('name = "mine"\nmesure = "risk_summary"\n')
    code, _, err = _run(capsys, *base, "--guideline", str(prof))
    assert code == 2 and "unknown key 'mesure'" in err and err.count("\n") == 1


def test_hipaa_roles_on_the_command_line(tmp_path, capsys):
    df = pd.DataFrame({"age": [30, 45, 91, 95, 30, 45], "zip": ["02139", "02141", "10001",
                                                                 "10002", "02139", "02141"],
                       "dx": list("ababab")})
    data = tmp_path / "h.csv"
    df.to_csv(data, index=False)
    opts = ["--data", str(data), "--qi", "age,zip", "--sensitive", "dx"]
    rel = tmp_path / "raw.csv"
    assert main(["-q", "anonymize", *opts, "--method", "generalization", "--param",
                 "max_suppression=0", "--out", str(rel)]) == 0
    capsys.readouterr()
    code, out, _ = _run(capsys, "-q", "check", *opts, "--release", str(rel), "--guideline",
                        "hipaa-safe-harbor", "--age", "age", "--zip", "zip")
    assert code == 1 and out.startswith("FAIL")
    assert "ages_over_89: failed" in out and "zip3: failed" in out
    assert "dates_to_year: not checked" in out and "actual knowledge" in out


@pytest.mark.filterwarnings("ignore:mondrian. no split")
def test_compare_guideline_on_the_command_line(tmp_path, capsys):
    opts, _ = _small(tmp_path, capsys)
    code, out, err = _run(capsys, "-q", "compare", *opts, "--methods",
                          "mondrian,local_suppression,generalization", "--guideline",
                          "el-emam-public", "--target", "mondrian:k=12", "--repeats", "1",
                          "--utility", "query_error", "--tolerance", "0.3", "--out",
                          str(tmp_path / "o"))
    assert code == 0, err
    said = " ".join(out.split())
    assert "guideline el-emam-public: ranked only candidates whose" in said
    assert "at most 0.09091 (0.09 read cell-size, minimum class size 11)" in said
    assert "failing it: local_suppression" in said
    res = json.loads((tmp_path / "o" / "results.json").read_text())
    assert res["constraints"] == {
        "risk_summary(reading=highest,attacker=prosecutor)": 1 / 11}
    assert list(res["constraint_failures"]) == ["local_suppression"]
    ranking = pd.read_csv(tmp_path / "o" / "ranking.csv")
    ranked = ranking.loc[ranking["rank_query_error"].notna(), "method"]
    assert sorted(ranked) == ["generalization", "mondrian"]
