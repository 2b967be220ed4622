"""Issue 22, round 3 of hostile inputs: hierarchy files and input files (items 3, 5, 11, 13)."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from conftest import cli_error
from sdceval.core.dataset import Dataset
from sdceval.core.errors import SdcevalError
from sdceval.core.hierarchy import Hierarchy
from sdceval.core.hierarchy_builders import build_intervals
from sdceval.core.schema import Schema
from sdceval.core.fileio import read_toml


def _files(tmp_path, hierarchy_text, schema_text=None):
    pd.DataFrame({"zip": ["02138", "02140", "02141", "02142"] * 5,
                  "d": list("abcde") * 4}).to_csv(tmp_path / "d.csv", index=False)
    (tmp_path / "zip.csv").write_text(hierarchy_text)
    (tmp_path / "s.toml").write_text(
        schema_text or 'qi = ["zip"]\nsensitive = "d"\n[hierarchies]\nzip = "zip.csv"\n')
    return ["--data", str(tmp_path / "d.csv"), "--schema", str(tmp_path / "s.toml")]


# -- item 3: an inner label equal to a different leaf -------------------------------
def test_inner_label_equal_to_another_leaf_is_refused(tmp_path, capsys):
    text = ("02138;02139;*\n02139;0213*;*\n02140;02139;*\n")
    with pytest.raises(SdcevalError) as exc:
        h = tmp_path / "h.csv"
        h.write_text(text)
        Hierarchy.from_csv(h, name="zip")
    msg = str(exc.value)
    assert "'02139'" in msg and "row 2" in msg and "level 1" in msg and "rows 1, 3" in msg
    # through the CLI: exit 2, one line
    args = _files(tmp_path, "02138;0213*;*\n02140;02141;*\n02141;0214*;*\n02142;0214*;*\n")
    msg = cli_error(["anonymize", *args, "--method", "mondrian", "--param", "k=2",
                     "--out", str(tmp_path / "r.csv")], capsys)
    assert "'02141'" in msg and "ambiguous" in msg


def test_inner_label_over_more_leaves_than_its_namesake_is_refused():
    with pytest.raises(SdcevalError, match="'Private'.*ambiguous"):
        Hierarchy([["Private", "Private", "*"], ["Self-emp", "Private", "*"]], name="w")


def test_a_node_named_after_its_sole_leaf_is_accepted():
    # the bundled adult hierarchies do this (Private;Private;*, United-States at 3 levels)
    h = Hierarchy([["Private", "Private", "*"], ["Local-gov", "Gov", "*"],
                   ["State-gov", "Gov", "*"]], name="w")
    lo, hi = h.generalize(h.encode(["Private"]), 1)
    assert h.label(lo[0], hi[0]) == "Private"
    import sdceval
    ds = sdceval.load_dataset("adult-train")
    for col in ds.schema.qis:
        ds.hierarchy(col)


# -- item 5: a trailing ';' ------------------------------------------------------------
def test_trailing_separator_is_stripped(tmp_path, capsys):
    h = tmp_path / "h.csv"
    h.write_text("a;x;*;\nb;x;*;\nc;y;*;\n")
    hier = Hierarchy.from_csv(h, name="c")
    assert hier.height == 2 and hier.labels[-1].tolist() == ["*"]
    assert "" not in set(np.concatenate(hier.labels).tolist())
    # and through the CLI the release's suppressed cells are '*' and evaluate reads it
    args = _files(tmp_path, "02138;0213*;*;\n02140;0214*;*;\n02141;0214*;*;\n"
                            "02142;0214*;*;\n")
    out = tmp_path / "r.csv"
    from conftest import cli_run
    code, _, err = cli_run(["anonymize", *args, "--method", "mondrian", "--param", "k=2",
                            "--out", str(out)], capsys)
    assert code == 0, err
    assert not pd.read_csv(out, dtype=str, keep_default_na=False)["zip"].eq("").any()
    code, _, err = cli_run(["evaluate", *args, "--release", str(out),
                            "--measures", "k_anonymity"], capsys)
    assert code == 0, err


def test_empty_labels_are_refused_naming_the_row():
    with pytest.raises(SdcevalError, match=r"row 2.*empty"):
        Hierarchy([["a", "x", "*"], ["b", "", "*"]], name="c")
    # a trailing empty field on some rows only: still one level short on the others
    with pytest.raises(SdcevalError, match="different numbers of levels"):
        Hierarchy([["a", "x", "*", "y"], ["b", "x", "*", ""]], name="c")


# -- item 13: inf / NaN in a numeric column ---------------------------------------------
@pytest.mark.parametrize("bad", [np.inf, -np.inf, np.nan])
def test_non_finite_numbers_get_a_clear_error(bad):
    vals = np.array([1.0, 2.0, 3.0, bad])
    for build in (Hierarchy.auto_intervals, build_intervals):
        with pytest.raises(SdcevalError, match=r"column 'x' holds (inf|-inf|NaN).*remove"):
            build(vals, name="x")


def test_inf_in_a_numeric_sensitive_attribute_is_refused():
    df = pd.DataFrame({"q": list("ababab"), "x": [1.0, 2.0, 3.0, 4.0, 5.0, np.inf]})
    with pytest.raises(SdcevalError, match=r"column 'x' holds inf.*remove or cap"):
        ds = Dataset(df, Schema.from_roles(df, qi=["q"], sensitive="x"))
        ds.codes("x")


def test_inf_in_a_numeric_qi_is_refused():
    df = pd.DataFrame({"x": [1.0, 2.0, 3.0, 4.0, 5.0, np.inf], "s": list("ababab")})
    with pytest.raises(SdcevalError, match=r"column 'x' holds inf.*remove or cap"):
        ds = Dataset(df, Schema.from_roles(df, qi=["x"], sensitive="s"))
        ds.codes("x")


# -- item 11: unreadable input files ---------------------------------------------------
def test_toml_with_a_byte_order_mark_is_read(tmp_path):
    p = tmp_path / "s.toml"
    p.write_bytes(b"\xef\xbb\xbfqi = [\"a\"]\n")
    assert read_toml(p, "schema") == {"qi": ["a"]}


def test_non_utf8_toml_is_refused(tmp_path):
    p = tmp_path / "s.toml"
    p.write_bytes('qi = ["caf\u00e9"]\n'.encode("latin-1"))
    with pytest.raises(SdcevalError, match=r"schema file '.*s\.toml' is not UTF-8"):
        read_toml(p, "schema")


def test_directory_as_toml_is_refused(tmp_path):
    with pytest.raises(SdcevalError, match="experiment file .* is a directory"):
        read_toml(tmp_path, "experiment")


def test_cli_bad_schema_and_experiment_files(tmp_path, capsys):
    args = _files(tmp_path, "02138;0213*;*\n02140;0214*;*\n02141;0214*;*\n02142;0214*;*\n")
    (tmp_path / "s.toml").write_bytes(
        b"\xef\xbb\xbf" + (tmp_path / "s.toml").read_bytes())
    from conftest import cli_run
    code, _, err = cli_run(["anonymize", *args, "--method", "mondrian", "--param", "k=2",
                            "--out", str(tmp_path / "r.csv")], capsys)
    assert code == 0, err
    (tmp_path / "s.toml").write_bytes(b'qi = ["zip"]\n# caf\xe9\n')
    assert "not UTF-8" in cli_error(["anonymize", *args, "--method", "mondrian", "--param",
                                     "k=2", "--out", str(tmp_path / "r.csv")], capsys)
    (tmp_path / "s.toml").unlink()
    (tmp_path / "s.toml").mkdir()
    assert "is a directory" in cli_error(["anonymize", *args, "--method", "mondrian",
                                          "--param", "k=2", "--out",
                                          str(tmp_path / "r.csv")], capsys)
    (tmp_path / "exp").mkdir()
    assert "is a directory" in cli_error(["run", str(tmp_path / "exp")], capsys)
    (tmp_path / "e.toml").write_bytes(b'name = "caf\xe9"\n')
    assert "not UTF-8" in cli_error(["run", str(tmp_path / "e.toml")], capsys)


def test_cli_directory_as_hierarchy_file(tmp_path, capsys):
    args = _files(tmp_path, "x")
    (tmp_path / "zip.csv").unlink()
    (tmp_path / "zip.csv").mkdir()
    msg = cli_error(["anonymize", *args, "--method", "mondrian", "--param", "k=2",
                     "--out", str(tmp_path / "r.csv")], capsys)
    assert "hierarchy file" in msg and "is a directory" in msg
