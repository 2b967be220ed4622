"""Risk constraints of a comparison (issue 29 item 2: ``--max-risk global=0.01``):
parsed once, read at every matched release, and a candidate that fails one, or whose
release the measure cannot read, is listed and not ranked."""
from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

import sdceval
from sdceval.compare.constraints import failures, parse_constraints
from sdceval.core.errors import SdcevalError


def test_parse_words_measures_parameters_and_errors():
    got = parse_constraints("global=0.01; household=0.05")
    assert got == {"individual_risk": ("individual_risk", {}, 0.01),
                   "household_risk": ("household_risk", {}, 0.05)}
    got = parse_constraints(["individual_risk:method=exact=0.02"])
    (label, (name, params, bound)), = got.items()
    assert name == "individual_risk" and params == {"method": "exact"} and bound == 0.02
    assert label == "individual_risk(method=exact)"
    assert parse_constraints({"reidentification": 0.1}) == {
        "reidentification": ("reidentification", {}, 0.1)}
    assert parse_constraints(None) == {} and parse_constraints("") == {}
    for bad, words in (("global", "MEASURE=LIMIT"), ("global=lots", "must be a number"),
                       ("query_error=3", "not a risk measure"),
                       ("individual_risk:method=nope=0.1", "method")):
        with pytest.raises(SdcevalError, match=words):
            parse_constraints(bad)


def test_failures_name_the_bound_and_unmeasured_readings():
    assert failures({"r": 0.1}, {"r": 0.05}, {}) == []
    assert failures({"r": 0.1}, {"r": 0.13}, {}) == ["r 0.13 > 0.1 (+30%)"]
    # n/a never meets a bound: unmeasured protection is not taken for granted
    assert failures({"r": 0.1}, {}, {"r": "r does not read perturbative releases"}) == [
        "r not measured (r does not read perturbative releases)"]
    assert failures({"r": 0.1}, {"r": float("nan")}, {}) == ["r not measured"]


def _small():
    rng = np.random.default_rng(3)
    n = 300
    return pd.DataFrame({"x": rng.normal(size=n).round(3), "y": rng.normal(size=n).round(3),
                         "z": rng.normal(size=n).round(3)})


def test_a_candidate_failing_a_constraint_is_listed_not_ranked():
    df = _small()
    kw = dict(numeric=["x", "y", "z"], risk="linkage_risk", utilities="propensity",
              repeats=2, curves=False)
    free = sdceval.compare(df, ["mdav", "noise"], **kw)
    assert sorted(free.ranked()) == ["mdav", "noise"]
    reid = {m: free.risk_readings[m]["reidentification"] for m in ("mdav", "noise")}
    # a bound between the two readings: the one above it is unranked
    bound = float(np.mean(list(reid.values())))
    worse = max(reid, key=reid.get)
    comp = sdceval.compare(df, ["mdav", "noise"], max_risk=f"reidentification={bound}", **kw)
    assert comp.ranked() == [m for m in ("mdav", "noise") if m != worse]
    assert list(comp.constraint_failures()) == [worse]
    note = [n for n in comp.footnotes() if "fails the risk constraint" in n]
    assert len(note) == 1 and f"> {bound:.4g}" in note[0]
    table = comp.display_table()
    assert dict(zip(comp.table()["method"], table["meets constraints"])) == {
        worse: "no", ("mdav" if worse == "noise" else "noise"): "yes"}
    d = comp.to_dict()
    assert d["constraints"] == {"reidentification": bound}
    assert list(d["constraint_failures"]) == [worse]


@pytest.mark.slow  # a whole comparison through the CLI: the whole suite runs it
def test_the_command_line_option(tmp_path):
    df = _small()
    data = tmp_path / "t.csv"
    df.to_csv(data, index=False)
    out = subprocess.run(
        [sys.executable, "-m", "sdceval", "compare", "--data", str(data), "--methods",
         "mdav,noise", "--risk-measure", "linkage_risk", "--utility", "propensity",
         "--repeats", "2", "--max-risk", "reidentification=0.0", "--out", str(tmp_path / "o")],
        capture_output=True, text=True, timeout=600)
    # a bound no release meets: nothing ranked, said in one line, every file written
    assert out.returncode == 2 and "Traceback" not in out.stderr, out.stderr
    said = " ".join(out.stdout.split())
    assert "fails the risk constraint reidentification" in said
    assert "no method reached the target within the risk constraints" in said
    res = json.loads((tmp_path / "o" / "results.json").read_text())
    assert res["constraints"] == {"reidentification": 0.0}
    assert sorted(res["constraint_failures"]) == ["mdav", "noise"]
    bad = subprocess.run(
        [sys.executable, "-m", "sdceval", "compare", "--data", str(data), "--max-risk",
         "global", "--out", str(tmp_path / "o2")], capture_output=True, text=True,
        timeout=120)
    assert bad.returncode == 2 and "MEASURE=LIMIT" in bad.stderr
