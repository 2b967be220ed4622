"""The input boundary (issue 6): role lists and names as users write them, inferred roles
and identifier columns, codes read as text, optional extras, the files a data set was
read from, and releases read back."""
import sys

import numpy as np
import pandas as pd
import pytest

import sdceval
from sdceval import Dataset, Hierarchy, Schema, SdcevalError, open_dataset
from sdceval.cli import main
from sdceval.core import release_io
from sdceval.core.tables import load_table
from sdceval.core.release_io import read_release


@pytest.fixture
def frame():
    return pd.DataFrame({"age": [30, 40, 50, 60, 30, 40], "sex": list("MFMFMF"),
                         "diag": list("abacab"), "inc": [1.5, 2.5, 3.0, 4.0, 2.0, 7.0]})


# -- 1. role lists and column names ------------------------------------------------------
def test_sensitive_as_one_element_list(frame):
    s = Schema.from_roles(frame, qi=["age"], sensitive=["diag"], label=["sex"])
    assert s.sensitive == "diag" and s.label == "sex"
    assert Schema.from_mapping(frame, {"qi": ["age"], "sensitive": ["diag"]}).sensitive == "diag"


def test_sensitive_list_of_two_is_a_clear_error(frame):
    with pytest.raises(SdcevalError, match=r"only one sensitive column.*'diag', 'sex'"):
        Schema.from_roles(frame, qi=["age"], sensitive=["diag", "sex"])


def test_bare_string_role_is_one_column(frame):
    s = Schema.from_roles(frame, qi="age", numeric="inc", passthrough="sex")
    assert s.qis == ["age"] and s.numeric == ["inc"] and s.passthrough == ["sex"]
    s = Schema.from_mapping(frame, {"qi": "age", "sensitive": "diag", "numeric": "inc"})
    assert s.qis == ["age"] and s.numeric == ["inc"]
    assert s.with_roles(qi="sex").qis == ["sex"]


def test_bare_string_roles_from_toml(tmp_path, frame):
    frame.to_csv(tmp_path / "d.csv", index=False)
    (tmp_path / "s.toml").write_text('qi = "age"\nsensitive = ["diag"]\nnumeric = "inc"\n')
    ds = open_dataset(str(tmp_path / "d.csv"), schema_file=str(tmp_path / "s.toml"))
    assert ds.schema.qis == ["age"] and ds.schema.sensitive == "diag"
    assert ds.schema.numeric == ["inc"]


def test_integer_column_names(tmp_path):
    rng = np.random.default_rng(0)
    df = pd.DataFrame(rng.normal(size=(40, 3)))
    before = df.copy()
    for names in ([0, 1], ["0", "1"]):
        ds = Dataset(df, Schema.from_roles(df, numeric=names))
        assert ds.schema.numeric == ["0", "1"]
        assert ds.numeric_matrix().shape == (40, 2)
        rel = sdceval.anonymize(ds, "mdav", k=5)
        assert rel.n == 40
    pd.testing.assert_frame_equal(df, before)  # the caller's names stay integers
    with pytest.raises(SdcevalError, match="not in the data"):
        Schema.from_roles(df, numeric=[7])


def test_integer_column_names_from_parquet(tmp_path):
    pytest.importorskip("pyarrow", reason="pyarrow (the 'parquet' extra) is not installed")
    df = pd.DataFrame(np.random.default_rng(0).normal(size=(40, 3)))
    # a Parquet file keeps integer names; the CLI names them as text
    df.to_parquet(tmp_path / "m.parquet")
    ds = open_dataset(str(tmp_path / "m.parquet"), numeric=["0", "2"])
    assert ds.schema.numeric == ["0", "2"]
    (tmp_path / "s.toml").write_text("numeric = [0, 1]\n")
    ds = open_dataset(str(tmp_path / "m.parquet"), schema_file=str(tmp_path / "s.toml"))
    assert ds.schema.numeric == ["0", "1"]


def test_integer_column_names_from_cli(tmp_path, capsys):
    pytest.importorskip("pyarrow", reason="pyarrow (the 'parquet' extra) is not installed")
    rng = np.random.default_rng(1)
    pd.DataFrame(rng.normal(size=(40, 3))).to_parquet(tmp_path / "m.parquet")
    code = main(["anonymize", "--data", str(tmp_path / "m.parquet"), "--numeric", "0,1",
                 "--method", "mdav", "--param", "k=5", "--out", str(tmp_path / "r.csv")])
    err = capsys.readouterr().err
    assert code == 0, err
    code = main(["anonymize", "--data", str(tmp_path / "m.parquet"), "--numeric", "0,9",
                 "--method", "mdav", "--param", "k=5", "--out", str(tmp_path / "r.csv")])
    err = capsys.readouterr().err
    assert code == 2 and "'9'" in err and "Traceback" not in err


def test_duplicated_column_names_are_named(frame):
    dup = pd.concat([frame, frame[["age", "sex"]]], axis=1)
    with pytest.raises(SdcevalError, match=r"duplicated column name.*'age', 'sex'.*rename"):
        Schema.from_roles(dup, numeric=["inc"])
    with pytest.raises(SdcevalError, match=r"duplicated column name.*'age'.*rename"):
        Dataset(dup, Schema.from_roles(frame, numeric=["inc"]))
    # 0 and "0" become the same name
    mixed = pd.DataFrame([[1.0, 2.0], [3.0, 4.0], [5.0, 1.0]], columns=[0, "0"])
    with pytest.raises(SdcevalError, match=r"duplicated column name.*'0'"):
        Schema.from_roles(mixed, numeric=["0"])


def test_duplicated_names_in_a_csv_header(tmp_path):
    (tmp_path / "d.csv").write_text("a,a,b\n1,2,3\n4,5,6\n7,8,9\n")
    with pytest.raises(SdcevalError, match=r"duplicated column name.*'a'.*rename"):
        open_dataset(str(tmp_path / "d.csv"), numeric=["a", "b"])


def test_caller_frame_not_mutated_by_roles(frame):
    before = frame.copy()
    Dataset(frame, Schema.from_roles(frame, qi="age", sensitive=["diag"], numeric="inc"))
    pd.testing.assert_frame_equal(frame, before)


# -- 2. inferred roles and identifier columns ----------------------------------------------
def test_inferred_roles_are_reported(tmp_path):
    df = pd.DataFrame({"a": [1.0, 2.0, 3.5, 4.0], "b": [3, 2, 2, 9], "s": list("xyzx")})
    df.to_csv(tmp_path / "d.csv", index=False)
    ds = open_dataset(str(tmp_path / "d.csv"))
    assert ds.schema.numeric == ["a", "b"]
    assert any(m.startswith("roles inferred from the data: numeric = a, b") and
               "--numeric" in m and "--schema" in m for m in ds.messages), ds.messages
    named = open_dataset(str(tmp_path / "d.csv"), numeric=["a"])
    assert not any("inferred" in m for m in named.messages)


@pytest.mark.parametrize("start", [0, 1])
def test_identifier_column_refused_when_roles_inferred(tmp_path, start):
    rng = np.random.default_rng(start)
    n = 30
    df = pd.DataFrame({"id": rng.permutation(n) + start, "x": rng.normal(size=n),
                       "y": rng.normal(size=n)})
    df.to_csv(tmp_path / "d.csv", index=False)
    # issue 19: a record-number column is never an attribute: role identifier (dropped
    # from every release, with a note) where it was refused before
    inferred = open_dataset(str(tmp_path / "d.csv"))
    assert inferred.schema["id"].role == "identifier" and inferred.schema.numeric == ["x", "y"]
    # named explicitly: accepted, with a warning
    ds = open_dataset(str(tmp_path / "d.csv"), numeric=["id", "x"])
    assert ds.schema.numeric == ["id", "x"]
    assert any("'id'" in m and "record identifier" in m for m in ds.messages), ds.messages
    ds = open_dataset(str(tmp_path / "d.csv"), numeric=["x", "y"])
    assert not any("identifier" in m for m in ds.messages)
    # the fix the message names: ignore = ["id"] in a schema, other roles still inferred
    (tmp_path / "s.toml").write_text('ignore = ["id"]\n')
    ds = open_dataset(str(tmp_path / "d.csv"), schema_file=str(tmp_path / "s.toml"))
    assert ds.schema.numeric == ["x", "y"] and ds.schema["id"].role == "ignore"
    assert any("numeric = x, y" in m and "ignored (schema) = id" in m for m in ds.messages)


def test_identifier_not_confused_with_ordinary_integers(tmp_path):
    df = pd.DataFrame({"k": [1, 2, 3, 5, 6], "c": [0, 1, 1, 0, 1], "x": [1.5, 2, 3, 4, 5]})
    df.to_csv(tmp_path / "d.csv", index=False)
    ds = open_dataset(str(tmp_path / "d.csv"))
    assert ds.schema.numeric == ["k", "c", "x"]


def test_cli_prints_inferred_roles(tmp_path, capsys):
    rng = np.random.default_rng(2)
    pd.DataFrame({"a": rng.normal(size=30), "b": rng.normal(size=30)}).to_csv(
        tmp_path / "d.csv", index=False)
    code = main(["anonymize", "--data", str(tmp_path / "d.csv"), "--method", "mdav",
                 "--param", "k=5", "--out", str(tmp_path / "r.csv")])
    err = capsys.readouterr().err
    assert code == 0, err
    assert "roles inferred from the data: numeric = a, b" in err


# -- 3. codes with leading zeros, hierarchies as text -------------------------------------
ZIPS = ["02310", "02311", "02312", "02313", "02320", "02321", "02322", "02323"]


def _zip_files(tmp_path, schema_extra="", entry='"zip.csv"'):
    rng = np.random.default_rng(3)
    n = 80
    df = pd.DataFrame({"zip": rng.choice(ZIPS, n), "age": rng.integers(20, 70, n),
                       "diag": rng.choice(list("abcd"), n)})
    (tmp_path / "d.csv").write_text(df.to_csv(index=False))
    (tmp_path / "zip.csv").write_text(
        "".join(f"{z};{z[:4]}*;{z[:3]}**;*\n" for z in ZIPS))
    (tmp_path / "s.toml").write_text(
        f'qi = ["zip", "age"]\nsensitive = "diag"\n{schema_extra}[hierarchies]\nzip = {entry}\n')
    return df


@pytest.mark.parametrize("entry", ['"zip.csv"', '{ file = "zip.csv", numeric = false }'])
def test_zip_codes_keep_leading_zeros(tmp_path, entry):
    df = _zip_files(tmp_path, entry=entry)
    ds = open_dataset(str(tmp_path / "d.csv"), schema_file=str(tmp_path / "s.toml"))
    assert ds.frame["zip"].tolist() == df["zip"].tolist()
    h = ds.hierarchy("zip")
    assert not h.numeric and set(h.leaves) == set(ZIPS)
    assert ds.schema["zip"].kind == "categorical"
    rel = sdceval.anonymize(ds, "mondrian", model="k", k=5)
    labels = set(rel.data["zip"].astype(str))
    assert not any(lab.startswith("[") for lab in labels), labels
    path = tmp_path / "rel.csv"
    rel.data.to_csv(path, index=False)
    back = read_release(ds, path)
    assert back.kind == "generalized"
    assert (sdceval.evaluate(ds, back, "k_anonymity").value
            == sdceval.evaluate(ds, rel, "k_anonymity").value)


def test_zip_codes_cli_anonymize_then_evaluate(tmp_path, capsys):
    _zip_files(tmp_path)
    out = tmp_path / "rel.csv"
    args = ["--data", str(tmp_path / "d.csv"), "--schema", str(tmp_path / "s.toml")]
    code = main(["anonymize", *args, "--method", "mondrian", "--param", "k=5",
                 "--out", str(out)])
    assert code == 0, capsys.readouterr().err
    code = main(["evaluate", *args, "--release", str(out), "--measures", "k_anonymity"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert "k_anonymity" in captured.out


def test_numeric_true_honoured(tmp_path):
    df = pd.DataFrame({"code": [1, 2, 3, 4, 5, 6], "d": list("abcabc")})
    df.to_csv(tmp_path / "d.csv", index=False)
    (tmp_path / "h.csv").write_text("".join(f"{v};{'low' if v < 4 else 'high'};*\n"
                                            for v in range(1, 7)))
    for flag, numeric in (("true", True), ("false", False)):
        (tmp_path / "s.toml").write_text(
            f'qi = ["code"]\nsensitive = "d"\n[hierarchies]\n'
            f'code = {{ file = "h.csv", numeric = {flag} }}\n')
        ds = open_dataset(str(tmp_path / "d.csv"), schema_file=str(tmp_path / "s.toml"))
        assert ds.hierarchy("code").numeric is numeric
        assert pd.api.types.is_numeric_dtype(ds.frame["code"]) is numeric
    (tmp_path / "s.toml").write_text(
        'qi = ["code"]\n[hierarchies]\ncode = { file = "h.csv", numeric = "yes" }\n')
    with pytest.raises(SdcevalError, match="numeric.*true or false"):
        open_dataset(str(tmp_path / "d.csv"), schema_file=str(tmp_path / "s.toml"))


def test_kinds_categorical_reads_text(tmp_path):
    df = pd.DataFrame({"zip": ["02310", "02311", "12000", "02310"], "x": [1.0, 2, 3, 4]})
    df.to_csv(tmp_path / "d.csv", index=False)
    (tmp_path / "s.toml").write_text(
        'qi = ["zip"]\nnumeric = ["x"]\n[kinds]\nzip = "categorical"\n')
    ds = open_dataset(str(tmp_path / "d.csv"), schema_file=str(tmp_path / "s.toml"))
    assert ds.frame["zip"].tolist() == ["02310", "02311", "12000", "02310"]
    assert ds.schema["zip"].kind == "categorical"
    assert ds.domain("zip").tolist() == ["02310", "02311", "12000"]


def test_kind_and_numeric_flag_contradict(tmp_path):
    _zip_files(tmp_path, schema_extra='[kinds]\nzip = "categorical"\n',
               entry='{ file = "zip.csv", numeric = true }')
    with pytest.raises(SdcevalError, match="'zip'.*categorical.*numeric = true"):
        open_dataset(str(tmp_path / "d.csv"), schema_file=str(tmp_path / "s.toml"))


def test_na_code_is_not_lost(tmp_path):
    (tmp_path / "d.csv").write_text("region,x\nNA,1\nEU,2\nNA,3\nAS,4\n")
    (tmp_path / "r.csv").write_text("NA;Americas;*\nEU;Eurasia;*\nAS;Eurasia;*\n")
    (tmp_path / "s.toml").write_text('qi = ["region"]\n[hierarchies]\nregion = "r.csv"\n')
    ds = open_dataset(str(tmp_path / "d.csv"), schema_file=str(tmp_path / "s.toml"))
    assert ds.frame["region"].tolist() == ["NA", "EU", "NA", "AS"]
    # an empty field is still a missing value, refused with the count
    (tmp_path / "d.csv").write_text("region,x\nNA,1\n,2\nNA,3\nAS,4\n")
    with pytest.raises(SdcevalError, match=r"'region' \(1 missing\)"):
        open_dataset(str(tmp_path / "d.csv"), schema_file=str(tmp_path / "s.toml"))


def test_numeric_data_with_text_codes_hints_at_text(frame):
    df = pd.DataFrame({"zip": [2310, 2311, 2310], "s": list("abc")})
    h = Hierarchy([["02310", "*"], ["02311", "*"]], name="zip")
    with pytest.raises(SdcevalError, match="'2310'.*text"):
        Dataset(df, Schema.from_roles(df, qi=["zip"], hierarchies={"zip": h}))


def test_hierarchy_file_read_as_text(tmp_path):
    p = tmp_path / "zip.csv"
    p.write_text("".join(f"{z};{z[:3]}**;*\n" for z in ZIPS))
    h = Hierarchy.from_csv(p, numeric=None)
    assert not h.numeric and h.leaves.tolist()[:2] == ["02310", "02311"]
    p.write_text("".join(f"{v};[{v // 10 * 10}-{v // 10 * 10 + 9}];*\n" for v in range(5, 25)))
    assert Hierarchy.from_csv(p, numeric=None).numeric
    # plain numbers whose groups are not intervals are categories
    p.write_text("1;odd;*\n2;even;*\n3;odd;*\n")
    assert not Hierarchy.from_csv(p, numeric=None).numeric


def test_hierarchy_layouts(tmp_path):
    p = tmp_path / "h.csv"
    p.write_bytes("\ufeffa;A;*\nb;A;*\nc;C;*\n".encode())  # ARX export with a BOM
    h = Hierarchy.from_csv(p)
    assert h.leaves.tolist() == ["a", "b", "c"]
    p.write_text("a,A,*\nb,A,*\n")
    assert Hierarchy.from_csv(p).n_leaves == 2
    p.write_text("a\tA\t*\nb\tA\t*\n")
    with pytest.raises(SdcevalError, match=r"ARX layout.*';'.*no header"):
        Hierarchy.from_csv(p)
    p.write_text("level0;level1;level2\na;A;*\nb;A;*\n")
    with pytest.raises(SdcevalError, match=r"header.*ARX layout"):
        Hierarchy.from_csv(p)


# -- 4. optional extras ------------------------------------------------------------------
def test_parquet_without_engine_names_the_extra(tmp_path, monkeypatch):
    # pandas looks for an engine before it reads a byte, so any file will do
    (tmp_path / "d.parquet").write_bytes(b"PAR1 not really PAR1")
    monkeypatch.setitem(sys.modules, "pyarrow", None)
    monkeypatch.setitem(sys.modules, "fastparquet", None)
    with pytest.raises(SdcevalError, match=r'pip install "sdceval\[parquet\]"'):
        load_table(tmp_path / "d.parquet")


# -- 5. the files a data set was read from ------------------------------------------------
def test_input_files_lists_data_schema_and_hierarchies(tmp_path):
    _zip_files(tmp_path)
    ds = open_dataset(str(tmp_path / "d.csv"), schema_file=str(tmp_path / "s.toml"))
    assert set(ds.input_files) == {(tmp_path / f).resolve() for f in ("d.csv", "s.toml",
                                                                       "zip.csv")}
    plain = open_dataset(str(tmp_path / "d.csv"), qi=["age"])
    assert plain.input_files == ((tmp_path / "d.csv").resolve(),)
    assert sdceval.load_dataset("census").input_files == ()


def test_cli_refuses_to_overwrite_a_hierarchy_file(tmp_path, capsys):
    _zip_files(tmp_path)
    before = (tmp_path / "zip.csv").read_text()
    code = main(["anonymize", "--data", str(tmp_path / "d.csv"), "--schema",
                 str(tmp_path / "s.toml"), "--method", "mondrian", "--param", "k=5",
                 "--out", str(tmp_path / "zip.csv")])
    err = capsys.readouterr().err
    assert code == 2 and "input" in err
    assert (tmp_path / "zip.csv").read_text() == before


# -- 6. releases read back --------------------------------------------------------------
@pytest.fixture
def mixed():
    """QIs and numeric attributes in one data set."""
    rng = np.random.default_rng(4)
    n = 60
    frame = pd.DataFrame({"age": rng.integers(20, 70, n), "sex": rng.choice(["F", "M"], n),
                          "inc": rng.normal(50, 10, n), "wealth": rng.gamma(2, 3, n),
                          "diag": rng.choice(list("abc"), n)})
    return Dataset(frame, Schema.from_roles(frame, qi=["age", "sex"], sensitive="diag",
                                            numeric=["inc", "wealth"]), name="mixed")


def test_mdav_release_of_mixed_data_reads_back_as_numbers(mixed, tmp_path):
    rel = sdceval.anonymize(mixed, "mdav", k=5)
    path = tmp_path / "rel.csv"
    numbers = rel.data[["inc", "wealth"]]
    for frame in (rel.data, numbers,  # as published, and with only the masked columns
                  pd.concat([numbers, mixed.frame[["sex", "age"]]], axis=1)):  # passthrough
        frame.to_csv(path, index=False)
        back = read_release(mixed, path)
        assert back.kind in ("external", "perturbative"), list(frame.columns)
        a = sdceval.evaluate(mixed, rel, "linkage_risk").value
        assert sdceval.evaluate(mixed, back, "linkage_risk").value == pytest.approx(a)


def test_generalized_labels_beside_numbers_read_as_composite(mixed, tmp_path):
    """Generalized QIs beside published numeric attributes are a whole-file release
    (issue 28 item 1): read as generalized, its measures would ignore the numbers and
    overstate protection (was: read as generalized)."""
    rel = sdceval.anonymize(mixed, "mondrian", model="k", k=5)
    path = tmp_path / "rel.csv"
    frame = rel.data.copy()
    frame["inc"] = mixed.frame["inc"]
    frame.to_csv(path, index=False)
    back = read_release(mixed, path)
    assert back.kind == "composite"
    for q in mixed.schema.qis:
        np.testing.assert_array_equal(back.cells[q][0], rel.cells[q][0])
        np.testing.assert_array_equal(back.cells[q][1], rel.cells[q][1])
    np.testing.assert_array_equal(back.data["inc"], mixed.frame["inc"])
    with pytest.raises(sdceval.SdcevalError, match="composite"):
        sdceval.evaluate(mixed, back, "k_anonymity")


def test_labels_parsed_once_per_distinct_label(tmp_path, monkeypatch):
    ds = sdceval.load_dataset("adult")
    rel = sdceval.anonymize(ds, "mondrian", model="k", k=50)
    path = tmp_path / "rel.csv"
    frame = rel.data.copy()
    # numbers written as 40.0 by another tool still name the leaf 40
    frame["age"] = [f"{v}.0" if not v.startswith("[") else v
                    for v in frame["age"].astype(str)]
    frame.to_csv(path, index=False)
    calls = []
    real = release_io._label_cell
    monkeypatch.setattr(release_io, "_label_cell",
                        lambda *a, **k: calls.append(1) or real(*a, **k))
    back = read_release(ds, path)
    distinct = sum(frame[q].nunique() for q in ds.schema.qis)
    assert 0 < len(calls) <= distinct
    for q in ds.schema.qis:
        np.testing.assert_array_equal(back.cells[q][0], rel.cells[q][0])
        np.testing.assert_array_equal(back.cells[q][1], rel.cells[q][1])
    np.testing.assert_array_equal(pd.factorize(back.classes)[0], pd.factorize(rel.classes)[0])


def test_role_options_override_the_schema_file(tmp_path, frame):
    frame.to_csv(tmp_path / "d.csv", index=False)
    (tmp_path / "s.toml").write_text('qi = ["age", "sex"]\nsensitive = "diag"\n')
    ds = open_dataset(str(tmp_path / "d.csv"), schema_file=str(tmp_path / "s.toml"),
                      passthrough="inc")
    assert ds.schema.qis == ["age", "sex"] and ds.schema.passthrough == ["inc"]
    # a protected column is never published in clear because of an option
    with pytest.raises(SdcevalError, match="'sex' has role qi.*cannot also be kept"):
        open_dataset(str(tmp_path / "d.csv"), schema_file=str(tmp_path / "s.toml"),
                     passthrough="sex")
    ds = open_dataset(str(tmp_path / "d.csv"), schema_file=str(tmp_path / "s.toml"),
                      qi=["age"], passthrough="sex")
    assert ds.schema.qis == ["age"] and ds.schema.passthrough == ["sex"]
    ds = open_dataset(str(tmp_path / "d.csv"), schema_file=str(tmp_path / "s.toml"),
                      qi=["diag"])
    assert ds.schema.qis == ["diag"] and ds.schema.sensitive is None
    assert any("'diag' has role qi" in m and "instead of role sensitive" in m
               for m in ds.messages), ds.messages
    with pytest.raises(SdcevalError, match="'age' has role qi"):
        open_dataset("adult", passthrough=["age"])
    adult = open_dataset("adult", passthrough=["fnlwgt"])
    assert adult.schema.passthrough == ["fnlwgt"] and "age" in adult.schema.qis
    with pytest.raises(SdcevalError, match="both qi and passthrough; a column has exactly one"):
        Schema.from_roles(frame, qi=["age"], passthrough=["age"])
