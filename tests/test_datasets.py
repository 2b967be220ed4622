"""Bundled data, schemas, and the input checks at the boundary."""
import numpy as np
import pandas as pd
import pytest

from sdceval import Dataset, Schema, SdcevalError, load_dataset, open_dataset
from sdceval.core.loaders import EIA_NUMERIC
from sdceval.core.tables import load_table


def test_census_and_eia_shapes():
    census = load_dataset("census")
    assert census.n == 1080 and len(census.schema.numeric) == 13
    eia = load_dataset("eia")
    assert eia.n == 4092 and eia.schema.numeric == EIA_NUMERIC
    assert eia.numeric_matrix().shape == (4092, 11)


def test_numeric_matrix_is_read_only_copy():
    ds = load_dataset("census")
    x = ds.numeric_matrix()
    with pytest.raises(ValueError):
        x[0, 0] = 1
    assert x[0, 0] == ds.frame.iloc[0, 0]


def test_caller_frame_not_mutated(small_numeric):
    frame = small_numeric.frame.copy()
    ds = Dataset(frame, Schema.from_roles(frame, numeric=["a"]))
    ds.frame.loc[0, "a"] = -1  # the dataset's private copy
    assert frame.loc[0, "a"] != -1


def test_unknown_dataset_suggests():
    with pytest.raises(SdcevalError, match="Did you mean 'census'"):
        load_dataset("censsu")


def test_missing_values_named():
    df = pd.DataFrame({"x": [1.0, np.nan, 3.0], "y": [1.0, 2.0, 3.0]})
    with pytest.raises(SdcevalError, match=r"'x' \(1 missing\)"):
        Dataset(df, Schema.from_roles(df, numeric=["x", "y"]))


def test_non_numeric_column_for_numeric_role():
    df = pd.DataFrame({"x": ["a", "b", "c"], "y": [1.0, 2.0, 3.0]})
    with pytest.raises(SdcevalError, match="'x' has role 'numeric' but holds non-numeric"):
        Dataset(df, Schema.from_roles(df, numeric=["x", "y"]))


def test_single_record_and_empty():
    df = pd.DataFrame({"x": [1.0]})
    with pytest.raises(SdcevalError, match="single record"):
        Dataset(df, Schema.from_roles(df, numeric=["x"]))
    with pytest.raises(SdcevalError, match="no records"):
        Dataset(df.iloc[:0], Schema.from_roles(df, numeric=["x"]))


def test_empty_file(tmp_path):
    p = tmp_path / "empty.csv"
    p.write_text("")
    with pytest.raises(SdcevalError, match="empty"):
        load_table(p)


def test_constant_column_rejected_when_variance_required():
    df = pd.DataFrame({"x": [1.0, 1.0, 1.0], "y": [1.0, 2.0, 3.0]})
    ds = Dataset(df, Schema.from_roles(df, numeric=["x", "y"]))
    with pytest.raises(SdcevalError, match="'x' are constant"):
        ds.numeric_matrix(who="mdav", require_variance=True)


def test_sensitive_cannot_be_qi():
    df = pd.DataFrame({"a": [1, 2], "b": ["x", "y"]})
    with pytest.raises(SdcevalError, match="both qi and sensitive"):
        Schema.from_roles(df, qi=["a", "b"], sensitive="b")


def test_unknown_column_suggests():
    df = pd.DataFrame({"income": [1, 2]})
    with pytest.raises(SdcevalError, match="Did you mean 'income'"):
        Schema.from_roles(df, numeric=["incme"])


def test_csv_with_toml_schema(tmp_path):
    df = pd.DataFrame({"age": [30, 40, 50, 60], "sex": ["M", "F", "M", "F"],
                       "dx": ["a", "b", "a", "c"]})
    df.to_csv(tmp_path / "d.csv", index=False)
    (tmp_path / "sex.csv").write_text("M;*\nF;*\n")
    (tmp_path / "s.toml").write_text(
        'qi = ["age", "sex"]\nsensitive = "dx"\n[hierarchies]\nsex = "sex.csv"\n')
    ds = open_dataset(str(tmp_path / "d.csv"), schema_file=str(tmp_path / "s.toml"))
    assert ds.schema.qis == ["age", "sex"] and ds.schema.sensitive == "dx"
    assert ds.hierarchy("sex").n_leaves == 2
    assert ds.hierarchy("age").numeric  # automatic intervals
    assert list(ds.codes("age")) == [0, 1, 2, 3]


def test_csv_without_schema_uses_numeric_columns(tmp_path):
    # (b = 3, 2, 1 would be a record number 1..n, refused: test_input_boundary.py)
    df = pd.DataFrame({"a": [1.0, 2.0, 3.0], "b": [3, 2, 7], "s": ["x", "y", "z"]})
    df.to_csv(tmp_path / "d.csv", index=False)
    ds = open_dataset(str(tmp_path / "d.csv"))
    assert ds.schema.numeric == ["a", "b"]
    assert ds.input_files == ((tmp_path / "d.csv").resolve(),)


def test_value_missing_from_hierarchy_is_named(tmp_path):
    from sdceval import Hierarchy
    df = pd.DataFrame({"c": ["a", "b", "zz"], "s": ["x", "y", "x"]})
    h = Hierarchy([["a", "*"], ["b", "*"]], name="c")
    with pytest.raises(SdcevalError, match="'zz'"):
        Dataset(df, Schema.from_roles(df, qi=["c"], sensitive="s", hierarchies={"c": h}))
