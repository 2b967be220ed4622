"""A user's own file read safely (issue 19 item 5), end to end through the command line:
identifiers never used nor published unless asked, codes with leading zeros kept as
text, ``--keep`` of an identifier refused unless forced, ``--missing drop``, and
``--print-schema`` round trips through ``--schema``."""
from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest

from sdceval import SdcevalError, open_dataset
from sdceval.cli import main
from sdceval.core.fileio import read_toml
from sdceval.core.inference import identifier_reason, named_like_identifier, unique_reason
from sdceval.core.schema_toml import schema_toml

N = 300
ZIPS = ["02116", "02117", "02118", "02119", "02120", "02134", "02135", "02138", "02139",
        "02140"]
#: the cells left empty: 2 incomes, 1 visit count (used by mdav) and 1 diagnosis
MISSING = {"income": [5, 17], "visits": [77], "diagnosis": [40]}


def _patients() -> pd.DataFrame:
    rng = np.random.default_rng(19)
    df = pd.DataFrame({
        "patient_id": rng.choice(np.arange(100_000, 1_000_000), N, replace=False),
        "zip": rng.choice(ZIPS, N),
        "age": rng.integers(18, 90, N),
        "sex": rng.choice(["F", "M"], N),
        "income": (rng.lognormal(10.5, 0.5, N) / 1000).round() * 1000,
        "visits": rng.poisson(3, N),
        "diagnosis": rng.choice(["flu", "asthma", "diabetes", "hypertension", "none"], N),
    }).astype(object)
    for col, rows in MISSING.items():
        df.loc[rows, col] = None
    return df


@pytest.fixture(scope="module")
def patients(tmp_path_factory):
    folder = tmp_path_factory.mktemp("own")
    path = folder / "patients.csv"
    _patients().to_csv(path, index=False)
    assert all(line.split(",")[1].startswith("0")  # ZIP codes as written
               for line in path.read_text().splitlines()[1:])
    return path


def run(argv, capsys):
    code = main([str(a) for a in argv])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_mdav_never_uses_nor_publishes_the_id(patients, tmp_path, capsys):
    out = tmp_path / "r.csv"
    code, _, err = run(["anonymize", "--data", patients, "--method", "mdav", "--numeric",
                        "income,visits", "--missing", "drop", "--out", out], capsys)
    assert code == 0, err
    assert list(pd.read_csv(out).columns) == ["income", "visits"]
    assert "patient_id" in err and "dropped" in err
    # roles inferred: the id is an identifier, never a numeric attribute
    out = tmp_path / "inferred.csv"
    code, _, err = run(["anonymize", "--data", patients, "--method", "mdav", "--missing",
                        "drop", "--out", out], capsys)
    assert code == 0, err
    assert list(pd.read_csv(out).columns) == ["age", "income", "visits"]
    notes = [line for line in err.splitlines() if "roles inferred" in line]
    assert len(notes) == 1, err  # printed once
    assert "numeric = age, income, visits" in notes[0]
    assert "identifier (never used nor published) = patient_id" in notes[0]


def test_the_id_is_never_inferred_as_an_attribute(patients, tmp_path):
    ds = open_dataset(str(patients), missing="drop")
    s = ds.schema
    assert s["patient_id"].role == "identifier" and s.identifiers == ["patient_id"]
    assert "patient_id" not in s.qis + s.numeric + s.passthrough
    assert s.numeric == ["age", "income", "visits"] and s.qis == []
    # unique per record, whatever its name: an identifier too (random numbers, record
    # numbers that are no longer 1..n once incomplete records are dropped, text)
    df = pd.read_csv(patients, dtype={"zip": str}).rename(columns={"patient_id": "ref"})
    df["row"] = np.arange(1, N + 1)
    df["code"] = [f"P{i:05d}x" for i in df["ref"]]
    df.dropna().to_csv(tmp_path / "p.csv", index=False)
    s = open_dataset(str(tmp_path / "p.csv")).schema
    assert s.identifiers == ["ref", "row", "code"], s.identifiers
    assert s.numeric == ["age", "income", "visits"]
    # given a role explicitly: used as asked, with a note
    ds = open_dataset(str(patients), numeric=["patient_id", "income"], missing="drop")
    assert ds.schema.numeric == ["patient_id", "income"]
    assert any("'patient_id' looks like an identifier" in m for m in ds.messages)
    # roles given without it: an identifier (dropped either way), silently
    ds = open_dataset(str(patients), numeric=["income", "visits"], missing="drop")
    assert ds.schema["patient_id"].role == "identifier"
    assert not any("identifier" in m for m in ds.messages)


def test_identifier_rules():
    for name in ("id", "ID", "patient_id", "PatientID", "patientId", "patientid", "ssn",
                 "name", "first_name", "email", "E-mail", "phone", "phone_number",
                 "record_no", "id_patient"):
        assert named_like_identifier(name), name
    for name in ("zip", "age", "valid", "covid", "paid", "drug_name", "phone_model",
                 "idle_time", "visits"):
        assert not named_like_identifier(name), name
    assert unique_reason(pd.Series([1, 2, 3, 5, 6])) is None  # 5 values prove nothing
    assert unique_reason(pd.Series([3, 1, 2])) is not None  # but record numbers do
    assert unique_reason(pd.Series(np.arange(30) * 7 + 100_000)) is not None
    assert unique_reason(pd.Series(np.linspace(0, 1, 30))) is None  # measurements
    texts = pd.Series([f"n{i}" for i in range(40)])
    assert unique_reason(texts) is not None
    assert unique_reason(pd.Series(["a", "b"] * 20)) is None
    assert identifier_reason("ref", pd.Series(["x"] * 3)) is None


def test_zip_codes_keep_their_leading_zeros(patients, tmp_path, capsys):
    ds = open_dataset(str(patients), qi=["zip", "age", "sex"], sensitive="diagnosis",
                      missing="drop")
    assert set(ds.frame["zip"]) <= set(ZIPS) and ds.schema["zip"].kind == "categorical"
    for c in ("age", "income", "visits", "patient_id"):  # numbers stay numbers
        assert pd.api.types.is_numeric_dtype(ds.frame[c]), c
    assert ds.hierarchy("zip").builder == "masking"
    out = tmp_path / "m.csv"
    code, _, err = run(["anonymize", "--data", patients, "--qi", "zip,age,sex",
                        "--sensitive", "diagnosis", "--missing", "drop", "--method",
                        "mondrian", "--param", "k=5", "--out", out], capsys)
    assert code == 0, err
    assert "'zip'" in err and "leading zeros" in err
    labels = set(pd.read_csv(out, dtype=str)["zip"])
    assert all(re.fullmatch(r"0[0-9]*\*+|0[0-9]{4}|\*", z) for z in labels), labels
    assert any(z.endswith("*") for z in labels), labels
    assert not any(z.startswith("[") for z in labels), labels
    # a kind in the schema decides instead: declared numeric, read as numbers
    (tmp_path / "s.toml").write_text('numeric = ["income"]\nmissing = "drop"\n'
                                     '[kinds]\nzip = "numeric"\n')
    ds = open_dataset(str(patients), schema_file=str(tmp_path / "s.toml"))
    assert pd.api.types.is_numeric_dtype(ds.frame["zip"])


def test_keep_of_the_id_is_refused_unless_forced(patients, tmp_path, capsys):
    base = ["anonymize", "--data", patients, "--method", "mdav", "--numeric",
            "income,visits", "--missing", "drop"]
    out = tmp_path / "k.csv"
    code, _, err = run(base + ["--keep", "patient_id", "--out", out], capsys)
    assert code == 2 and "--keep-identifier patient_id" in err, err
    assert not out.exists()
    code, _, err = run(base + ["--keep", "sex", "--out", out], capsys)  # not an id: kept
    assert code == 0, err
    assert list(pd.read_csv(out).columns) == ["sex", "income", "visits"]
    code, _, err = run(base + ["--keep-identifier", "patient_id", "--out", out], capsys)
    assert code == 0, err
    kept = pd.read_csv(out)
    assert list(kept.columns) == ["patient_id", "income", "visits"]
    original = pd.read_csv(patients).dropna(subset=["income", "visits"])["patient_id"]
    assert set(kept["patient_id"]) == set(original)
    assert "singles out every record" in err
    with pytest.raises(SdcevalError, match="keep_identifiers"):
        open_dataset(str(patients), numeric=["income"], passthrough=["patient_id"],
                     missing="drop")


def test_missing_values_refused_or_dropped(patients, tmp_path, capsys):
    base = ["anonymize", "--data", patients, "--method", "mdav", "--numeric",
            "income,visits"]
    out = tmp_path / "d.csv"
    code, _, err = run(base + ["--out", out], capsys)
    assert code == 2 and not out.exists()
    assert "'income' (2 missing), 'visits' (1 missing)" in err and "--missing drop" in err
    code, _, err = run(base + ["--missing", "drop", "--out", out], capsys)
    assert code == 0, err
    # the diagnosis missing once is in a column mdav drops anyway: its record stays
    assert "removed 3 of 300 records with missing values" in err
    assert len(pd.read_csv(out)) == N - 3
    (tmp_path / "s.toml").write_text('qi = ["zip", "age"]\nsensitive = "diagnosis"\n'
                                     'missing = "drop"\n')
    ds = open_dataset(str(patients), schema_file=str(tmp_path / "s.toml"))
    assert ds.n == N - 1  # only the diagnosis is missing among the columns used
    assert any("removed 1 of 300" in m for m in ds.messages)
    with pytest.raises(SdcevalError, match="refuse.*drop"):
        open_dataset(str(patients), numeric=["income"], missing="impute")


@pytest.mark.parametrize("roles", [
    [],  # inferred
    ["--qi", "zip,age,sex", "--sensitive", "diagnosis", "--missing", "drop"],
    ["--numeric", "income,visits", "--keep-identifier", "patient_id"],
])
def test_print_schema_round_trips(patients, tmp_path, capsys, roles):
    out = tmp_path / "never.csv"
    code, printed, err = run(["anonymize", "--data", patients, *roles, "--print-schema",
                              "--out", out], capsys)
    assert code == 0, err
    assert not out.exists()  # the command did not run
    path = tmp_path / "schema.toml"
    path.write_text(printed)
    spec = read_toml(path, "schema")
    assert spec["identifier"] == ([] if "--keep-identifier" in roles else ["patient_id"])
    assert spec["kinds"]["zip"] == "categorical"
    assert spec["missing"] == ("drop" if "drop" in roles else "refuse")
    # given back with --schema: the same schema (but the notes of the inference)
    code, again, err = run(["anonymize", "--data", patients, "--schema", path,
                            "--print-schema"], capsys)
    assert code == 0, err
    body = lambda text: [x for x in text.splitlines() if not x.startswith("# ")]  # noqa
    assert body(again) == body(printed)
    first = open_dataset(str(patients), missing="drop", **_roles(roles))
    second = open_dataset(str(patients), schema_file=str(path), missing="drop")
    assert [(c.name, c.role, c.kind) for c in first.schema.columns] == \
        [(c.name, c.role, c.kind) for c in second.schema.columns]
    assert first.frame.equals(second.frame)


def _roles(argv) -> dict:
    names = {"--qi": "qi", "--sensitive": "sensitive", "--numeric": "numeric",
             "--keep-identifier": "keep_identifiers"}
    return {names[a]: (v.split(",") if a != "--sensitive" else v)
            for a, v in zip(argv[::2], argv[1::2]) if a in names}


def test_print_schema_on_every_command_that_reads_data(patients, capsys):
    for argv in (["evaluate", "--data", patients],
                 ["hierarchy", "show", "--data", patients, "zip"],
                 ["compare", "--data", patients, "--numeric", "income,visits"]):
        code, printed, err = run([*argv, "--print-schema"], capsys)
        assert code == 0, (argv, err)
        assert "identifier = [\"patient_id\"]" in printed, argv
    ds = open_dataset(str(patients), qi=["zip", "age"], missing="drop")
    text = schema_toml(ds)
    assert "zip: masking" in text and "age: intervals" in text
