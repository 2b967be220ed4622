"""A survey's design: roles ``weight`` and ``household`` and the household-level keys
(issue 29 item 1): given in Python, schema files and on the command line, validated,
printed by --print-schema, never inferred, never published unless kept."""
from __future__ import annotations

import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

import sdceval
from sdceval.core.errors import SdcevalError
from sdceval.core.fingerprint import dataset_fingerprint


def survey() -> pd.DataFrame:
    return pd.DataFrame({"region": ["n", "n", "s", "s", "s", "e"],
                         "sex": list("FMFMFM"), "age": [30, 41, 25, 60, 33, 47],
                         "w": [120.0, 120.0, 80.5, 80.5, 80.5, 300.0],
                         "hid": ["h1", "h1", "h2", "h2", "h2", "h3"],
                         "income": [10.0, 20, 30, 40, 50, 60]})


def test_weights_and_households_are_read_and_never_inferred():
    df = survey()
    ds = sdceval.as_dataset(df, qi=["region", "sex"], weight="w", household="hid",
                            household_keys=["region"])
    assert ds.weights.tolist() == df["w"].tolist() and not ds.weights.flags.writeable
    assert ds.households.tolist() == [0, 0, 1, 1, 1, 2]
    assert ds.schema.weight == "w" and ds.schema.household == "hid"
    assert ds.schema.household_keys == ["region"]
    # without roles: the weight is inferred as nothing (a numeric column would otherwise
    # become a numeric attribute), and no column becomes a weight or a household
    plain = sdceval.as_dataset(df)
    assert plain.schema.weight is None and plain.weights is None
    assert "w" in plain.schema.numeric
    named = sdceval.as_dataset(df, weight="w", household="hid")
    assert "w" not in named.schema.numeric and named.schema.weight == "w"


@pytest.mark.parametrize("bad, words", [
    ([120.0, 0.0, 80.5, 80.5, 80.5, 300.0], ["row 1 (0.0)", "positive design weight"]),
    ([120.0, 120.0, -1.0, 80.5, 80.5, 300.0], ["row 2 (-1.0)"]),
    ([120.0, 120.0, 80.5, np.nan, 80.5, 300.0], ["row(s) 3", "missing"]),
    (["a", "b", "c", "d", "e", "f"], ["row 0 ('a')"]),
])
def test_bad_weights_are_refused_naming_the_rows(bad, words):
    df = survey().assign(w=bad)
    with pytest.raises(SdcevalError) as exc:
        sdceval.as_dataset(df, qi=["region"], weight="w")
    assert all(w in str(exc.value) for w in words), str(exc.value)


def test_household_keys_must_agree_within_households():
    df = survey()
    with pytest.raises(SdcevalError, match=r"'sex' is household-level.*2 household\(s\)"
                                           r".*household 'h1' \(F, M\)"):
        sdceval.as_dataset(df, qi=["region", "sex"], household="hid", household_keys="sex")
    with pytest.raises(SdcevalError, match="no household column"):
        sdceval.as_dataset(df, qi=["region"], household_keys=["region"])
    with pytest.raises(SdcevalError, match="'income' is not a quasi-identifier"):
        sdceval.as_dataset(df, qi=["region"], numeric=["income"], household="hid",
                           household_keys=["income"])
    with pytest.raises(SdcevalError, match="given as both qi and weight"):
        sdceval.as_dataset(df, qi=["region", "w"], weight="w")


def test_design_columns_are_published_only_when_kept():
    df = survey()
    ds = sdceval.as_dataset(df, qi=["region", "sex"], weight="w", household="hid")
    rel = sdceval.anonymize(ds, "recode", level=1)
    assert list(rel.data.columns) == ["region", "sex"]
    assert {"w", "hid"} <= set(rel.dropped)
    kept = sdceval.as_dataset(df, qi=["region", "sex"], weight="w", household="hid",
                              passthrough=["w"])
    assert kept.schema.weight == "w" and kept.schema.kept == ("w",)
    rel = sdceval.anonymize(kept, "recode", level=1)
    assert list(rel.data.columns) == ["region", "sex", "w"]
    assert rel.data["w"].tolist() == df["w"].tolist()


def test_the_design_changes_the_fingerprint():
    df = survey()
    a = sdceval.as_dataset(df, qi=["region", "sex"], household="hid")
    b = sdceval.as_dataset(df, qi=["region", "sex"], household="hid",
                           household_keys=["region"])
    c = sdceval.as_dataset(df, qi=["region", "sex"], weight="w", household="hid")
    assert len({dataset_fingerprint(x) for x in (a, b, c)}) == 3


def test_schema_file_and_command_line(tmp_path):
    df = survey()
    data = tmp_path / "survey.csv"
    df.to_csv(data, index=False)
    (tmp_path / "s.toml").write_text('qi = ["region", "sex"]\nweight = "w"\n'
                                     'household = "hid"\nhousehold_keys = ["region"]\n')
    from sdceval.core.loaders import open_dataset
    ds = open_dataset(str(data), schema_file=tmp_path / "s.toml")
    assert ds.schema.weight == "w" and ds.schema.household_keys == ["region"]
    cmd = [sys.executable, "-m", "sdceval", "anonymize", "--data", str(data),
           "--qi", "region,sex", "--weight", "w", "--household", "hid",
           "--household-keys", "region", "--print-schema"]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert 'weight = "w"' in out.stdout and 'household = "hid"' in out.stdout
    assert 'household_keys = ["region"]' in out.stdout
    # the printed schema reads back to the same roles
    (tmp_path / "printed.toml").write_text(out.stdout)
    again = open_dataset(str(data), schema_file=tmp_path / "printed.toml")
    assert again.schema.weight == "w" and again.schema.household == "hid"
    assert again.schema.household_keys == ["region"]
    bad = subprocess.run(cmd[:-3] + ["--household-keys", "sex", "--method", "recode",
                                     "--out", str(tmp_path / "r.csv")],
                         capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and "Traceback" not in bad.stderr
    assert "'sex' is household-level" in bad.stderr
