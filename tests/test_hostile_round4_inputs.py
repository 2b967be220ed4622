"""Issue 27 ("Round 4 of hostile inputs"): a user's own data read safely -- an all-empty
column (item 6), a measured quantity whose values are all distinct (item 11), Stata /
SPSS / SAS files and ``;``- or tab-separated CSVs (item 13), and integer, MultiIndex or
duplicated column names in the DataFrame API (item 9)."""
import numpy as np
import pandas as pd
import pytest

import sdceval
from conftest import cli_error, cli_run
from sdceval import SdcevalError, open_dataset
from sdceval.core.inference import unique_reason
from sdceval.core.tables import load_table

N = 200


def _people(n=N, seed=27) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"age": rng.integers(18, 90, n),
                         "sex": rng.choice(["F", "M"], n),
                         "income": (rng.lognormal(10, 0.5, n) / 100).round() * 100,
                         "region": rng.choice(["north", "south", "east"], n)})


# -- item 6: an all-empty column ---------------------------------------------------------
def test_an_empty_column_is_inferred_ignored_and_said_so(tmp_path, capsys):
    df = _people()
    df["remarks"] = np.nan  # written as empty cells: read back as all-missing floats
    path = tmp_path / "e.csv"
    df.to_csv(path, index=False)
    ds = open_dataset(str(path))
    assert ds.schema["remarks"].role == "ignore"
    assert ds.schema.numeric == ["age", "income"] and ds.n == N
    note = next(m for m in ds.messages if "roles inferred" in m)
    assert "ignored (empty: no value in any record) = remarks" in note, note
    code, out, err = cli_run(["anonymize", "--data", str(path), "--print-schema"], capsys)
    assert code == 0, err
    assert 'ignore = ["sex", "region", "remarks"]' in out, out
    assert "empty" in out
    # no kind is declared for it (nothing to read one from), and the printed schema is
    # one the commands read back
    assert "# remarks: empty (no value in any record), no kind" in out
    assert 'remarks = "numeric"' not in out
    schema = tmp_path / "e.toml"
    schema.write_text(out)
    code, _, err = cli_run(["anonymize", "--data", str(path), "--schema", str(schema),
                            "--method", "mdav", "--param", "k=5",
                            "--out", str(tmp_path / "r.csv")], capsys)
    assert code == 0, err
    # a DataFrame: the same rule (an all-None text column too)
    frame = _people()
    frame["remarks"], frame["note"] = np.nan, None
    ds = sdceval.as_dataset(frame)
    assert ds.schema["remarks"].role == ds.schema["note"].role == "ignore"
    assert any("empty" in m and "remarks, note" in m for m in ds.messages), ds.messages


# -- item 11: a measured quantity whose values are all distinct --------------------------
def _expenditure(n, seed=3):
    """Whole amounts spanning 4 orders of magnitude, all distinct, like sdcMicro's
    ``testdata$expend`` (4580 distinct integers from 3377 to 99 962 044)."""
    rng = np.random.default_rng(seed)
    x = np.unique(rng.lognormal(12, 2, 3 * n).round().astype(np.int64) + 3000)
    return rng.permutation(x)[:n]


def test_a_measured_quantity_all_distinct_is_an_attribute(tmp_path):
    df = _people()
    df["expend"] = _expenditure(N)
    df["savings"] = np.random.default_rng(4).normal(5000, 2000, N).round(3)  # floats
    assert df["expend"].is_unique and df["savings"].is_unique
    path = tmp_path / "household.csv"
    df.to_csv(path, index=False)
    ds = open_dataset(str(path))
    assert ds.schema.numeric == ["age", "income", "expend", "savings"], ds.schema.numeric
    assert ds.schema.identifiers == []
    assert unique_reason(df["expend"]) is None and unique_reason(df["savings"]) is None
    # sdcMicro's own expend: 4580 distinct amounts spread evenly from 3377 to 99 962 044
    rng = np.random.default_rng(6)
    spread = rng.permutation(np.unique(rng.integers(3377, 99_962_045, 4700)))[:4580]
    assert len(spread) == 4580 and unique_reason(pd.Series(spread)) is None


def test_distinct_codes_stay_identifiers_and_the_reason_names_the_rule():
    rng = np.random.default_rng(5)
    fixed = pd.Series(rng.choice(np.arange(100_000, 1_000_000), 300, replace=False))
    why = unique_reason(fixed)
    assert why is not None and "6 digits" in why, why
    dense = pd.Series(rng.permutation(np.arange(1, 1200))[:300])  # ids with gaps
    why = unique_reason(dense)
    assert why is not None and "range" in why, why
    assert "record numbers" in unique_reason(pd.Series(np.arange(1, 31)))
    negative = pd.Series(-fixed)  # never a code: a measured quantity (a loss)
    assert unique_reason(negative) is None


# -- item 13: formats that are not CSV, and separators -----------------------------------
@pytest.mark.parametrize("name,kind", [("survey.dta", "Stata"), ("survey.sav", "SPSS"),
                                       ("survey.sas7bdat", "SAS"), ("survey.xpt", "SAS")])
def test_statistics_package_files_are_refused_naming_the_formats(tmp_path, capsys, name,
                                                                 kind, monkeypatch):
    # without pyreadstat (the formats extra; with it they are read: test_tables_formats)
    monkeypatch.setattr("sdceval.core.tables._pyreadstat", lambda: None)
    path = tmp_path / name
    if name.endswith(".dta"):
        _people().to_stata(path, write_index=False)
    else:
        path.write_bytes(bytes(range(256)) * 40)
    line = cli_error(["anonymize", "--data", str(path), "--method", "mdav",
                      "--out", str(tmp_path / "o.csv")], capsys)
    assert name in line and kind in line and "CSV" in line and "Parquet" in line, line
    assert "codec" not in line and "tokenizing" not in line, line
    with pytest.raises(SdcevalError, match="supported formats"):
        open_dataset(str(path))


def test_a_binary_file_named_csv_is_refused(tmp_path, capsys):
    path = tmp_path / "data.csv"
    path.write_bytes(b"PK\x03\x04" + bytes(range(256)) * 40)  # e.g. a zipped workbook
    line = cli_error(["anonymize", "--data", str(path), "--print-schema"], capsys)
    assert "data.csv" in line and "not a text" in line and "Parquet" in line, line


@pytest.mark.parametrize("sep", [";", "\t", "|"])
def test_a_semicolon_or_tab_separated_csv_is_sniffed(tmp_path, capsys, sep):
    df = _people()
    path = tmp_path / "people.csv"
    df.to_csv(path, index=False, sep=sep)
    pd.testing.assert_frame_equal(load_table(path), df)
    ds = open_dataset(str(path))
    assert ds.schema.numeric == ["age", "income"]
    assert any(f"separated by {sep!r}" in m for m in ds.messages), ds.messages
    out = tmp_path / "m.csv"
    code, _, err = cli_run(["anonymize", "--data", str(path), "--method", "mdav",
                            "--out", str(out)], capsys)
    assert code == 0, err
    assert list(pd.read_csv(out).columns) == ["age", "income"]


def test_compressed_csvs_are_sniffed_too(tmp_path):
    df = _people()
    for name in ("p.csv.gz", "p.csv.bz2", "p.csv.xz"):
        df.to_csv(tmp_path / name, index=False, sep=";")
        pd.testing.assert_frame_equal(load_table(tmp_path / name), df)
    for name in ("c.csv.gz", "c.csv.zip", "c.tar.gz"):  # commas: as pandas reads them
        df.to_csv(tmp_path / name, index=False)
        pd.testing.assert_frame_equal(load_table(tmp_path / name), df)
    pd.concat([df] * 100).to_csv(tmp_path / "c.csv.gz", index=False)  # ~1 MB of text
    whole = (tmp_path / "c.csv.gz").read_bytes()
    for cut in (len(whole) // 2, 20):  # damaged past the first lines, or in them
        (tmp_path / "cut.csv.gz").write_bytes(whole[:cut])
        with pytest.raises(SdcevalError, match="cut.csv.gz"):
            load_table(tmp_path / "cut.csv.gz")


def test_sep_is_an_option_and_a_keyword(tmp_path, capsys):
    df = _people()
    path = tmp_path / "p.txt"
    df.to_csv(path, index=False, sep=";")
    out = tmp_path / "m.csv"
    code, _, err = cli_run(["anonymize", "--data", str(path), "--sep", ";", "--method",
                            "mdav", "--out", str(out)], capsys)
    assert code == 0, err
    code, printed, err = cli_run(["anonymize", "--data", str(path), "--sep", ";",
                                  "--print-schema"], capsys)
    assert code == 0 and 'numeric = ["age", "income"]' in printed, (printed, err)
    pd.testing.assert_frame_equal(open_dataset(str(path), sep=";").frame, df)
    pd.testing.assert_frame_equal(load_table(path, sep=";"), df)
    tabbed = tmp_path / "p.tsv"
    df.to_csv(tabbed, index=False, sep="\t")
    for given in ("\t", "\\t", "tab"):
        pd.testing.assert_frame_equal(load_table(tabbed, sep=given), df)
    with pytest.raises(SdcevalError, match="sep"):
        load_table(path, sep=";;")
    line = cli_error(["anonymize", "--data", str(path), "--sep", '"', "--print-schema"],
                     capsys)
    assert "--sep" in line, line


def test_one_column_holding_separators_is_refused(tmp_path, capsys):
    path = tmp_path / "broken.csv"
    # ';'-separated, but the lines do not split evenly: no separator reads it as a table
    path.write_text("age;sex;income\n30;F;1000\n41;M\n52;F;3000;x\n" * 10)
    line = cli_error(["anonymize", "--data", str(path), "--print-schema"], capsys)
    assert "broken.csv" in line and "';'" in line and "--sep" in line, line


def test_comma_csvs_are_read_as_before(tmp_path):
    # commas, with ';', tabs and '|' inside quoted fields on every line: still commas
    df = pd.DataFrame({"name": [f"a;b|c\td{i}" for i in range(30)],
                       "v": np.arange(30) % 7, "w": [f"x;{i % 3}" for i in range(30)]})
    path = tmp_path / "c.csv"
    df.to_csv(path, index=False)
    pd.testing.assert_frame_equal(load_table(path), pd.read_csv(path))
    single = tmp_path / "one.csv"  # one column, some values with ';': one column
    single.write_text("note\n" + "".join(f"a;{i}\n" if i % 2 else f"b{i}\n"
                                         for i in range(30)))
    pd.testing.assert_frame_equal(load_table(single), pd.read_csv(single))


# -- item 9: column names in the DataFrame API ------------------------------------------
def test_integer_column_names_are_text_and_roles_name_them_either_way():
    df = _people()[["age", "income"]].set_axis([0, 1], axis=1)
    before = df.copy()
    inferred = sdceval.as_dataset(df)
    assert inferred.schema.numeric == ["0", "1"]
    as_int = sdceval.anonymize(df, "noise", seed=1, numeric=[0, 1])
    as_str = sdceval.anonymize(df, "noise", seed=1, numeric=["0", "1"])
    pd.testing.assert_frame_equal(as_int.data, as_str.data)
    assert sdceval.anonymize(df, "noise", seed=1).data.equals(as_int.data)
    coded = _people()[["age", "sex", "region"]].set_axis([0, 1, 2], axis=1)
    h = sdceval.as_dataset(coded, qi=[0, 1], sensitive=2).hierarchy("1")
    ds = sdceval.as_dataset(coded, qi=[0, 1], sensitive=2, hierarchies={1: h})
    assert ds.schema.qis == ["0", "1"] and ds.hierarchy("1") is h
    pd.testing.assert_frame_equal(df, before)  # the caller's frame is untouched


def test_duplicated_column_names_are_refused_naming_them_and_the_fix():
    df = _people().set_axis(["age", "sex", "age", "region"], axis=1)
    before = df.copy()
    for roles in ({}, {"numeric": ["age"]}):
        with pytest.raises(SdcevalError) as err:
            sdceval.anonymize(df, "noise", **roles)
        msg = str(err.value)
        assert "'age'" in msg and "df.loc[:, ~df.columns.duplicated()]" in msg, msg
        assert "\n" not in msg
    pd.testing.assert_frame_equal(df, before)


def test_multiindex_columns_are_refused_naming_them_and_the_fix():
    df = _people()
    df.columns = pd.MultiIndex.from_tuples([("p", "age"), ("p", "sex"), ("m", "income"),
                                            ("m", "region")])
    before = df.copy()
    for roles in ({}, {"numeric": [("p", "age")]}, {"numeric": ["age"]}):
        with pytest.raises(SdcevalError) as err:
            sdceval.evaluate(df, df, "linkage_risk", **roles)
        msg = str(err.value)
        assert "MultiIndex" in msg and "('p', 'age')" in msg and "df.columns" in msg, msg
        assert "\n" not in msg
    pd.testing.assert_frame_equal(df, before)
