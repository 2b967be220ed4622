"""Issue 22, round 3 of hostile inputs: values (items 4, 6, 14, 16)."""
from __future__ import annotations

import subprocess
import sys
import warnings

import numpy as np
import pandas as pd
import pytest

import sdceval
from sdceval.core.dataset import Dataset
from sdceval.core.errors import SdcevalError
from sdceval.core.hierarchy import Hierarchy
from sdceval.core.schema import Schema


def _ds(df, **roles):
    return Dataset(df, Schema.from_roles(df, **roles))


# -- item 4: a literal '*' in a QI reads back as a suppressed cell ----------------------
@pytest.mark.parametrize("values", [["M", "F", "M", "F"], [f"v{i}" for i in range(8)]])
def test_star_in_qi_is_refused_naming_column_row_and_fix(values):
    sex = (values * 10)[:30]
    sex[7] = "*"
    sex[12] = "*"
    df = pd.DataFrame({"sex": sex, "age": range(30), "dis": ["a", "b", "c"] * 10})
    with pytest.raises(SdcevalError, match=r"column 'sex'.*'\*'.*row 8.*suppressed.*rename"):
        _ds(df, qi=["sex", "age"], sensitive="dis")


def test_star_equal_to_a_user_hierarchys_root_is_refused():
    h = Hierarchy([["M", "Any"], ["F", "Any"]], name="sex")
    df = pd.DataFrame({"sex": ["M", "F", "Any", "M"], "dis": ["a", "b", "a", "b"]})
    with pytest.raises(SdcevalError, match=r"column 'sex'.*'Any'.*row 3.*suppressed.*rename"):
        _ds(df, qi="sex", sensitive="dis", hierarchies={"sex": h})


# -- item 6: integers above 2**53 lose precision as floats --------------------------------
def test_integers_above_2_53_in_numeric_qi_are_refused():
    x = [2 ** 53 + i for i in range(30)]
    df = pd.DataFrame({"x": x, "y": ["a", "b"] * 15, "dis": ["a", "b", "c"] * 10})
    with pytest.raises(SdcevalError, match=r"column 'x'.*2\*\*53.*\[kinds\].*categorical.*scale"):
        _ds(df, qi=["x", "y"], sensitive="dis")


def test_integers_above_2_53_kept_exact_when_categorical():
    x = [2 ** 53 + i for i in range(30)]
    df = pd.DataFrame({"x": x, "y": ["a", "b"] * 15, "dis": ["a", "b", "c"] * 10})
    ds = _ds(df, qi=["x", "y"], sensitive="dis", kinds={"x": "categorical"})
    assert sorted(ds.domain("x")) == sorted(map(str, x))
    assert len(np.unique(ds.codes("x"))) == 30


def test_integers_up_to_2_53_are_accepted():
    df = pd.DataFrame({"x": [2 ** 53 - i for i in range(6)], "dis": ["a", "b"] * 3})
    _ds(df, qi="x", sensitive="dis").codes("x")


# -- item 14a: blank-padded categories, no hierarchy given --------------------------------
@pytest.mark.parametrize("sex", [[" M", "M", "F ", "F"] * 5, [" M", "F "] * 10])
def test_blank_padded_categories_message_is_about_blanks(sex):
    df = pd.DataFrame({"sex": sex, "age": range(20), "dis": ["a", "b"] * 10})
    with pytest.raises(SdcevalError) as e:
        _ds(df, qi=["sex", "age"], sensitive="dis")
    msg = str(e.value)
    assert "hierarchy file" not in msg
    assert "'sex'" in msg and "blank" in msg and "strip" in msg


def test_blank_padded_value_against_a_user_hierarchy_says_blanks():
    h = Hierarchy([["M", "*"], ["F", "*"]], name="sex")
    df = pd.DataFrame({"sex": [" M", "F", "M", "F"], "dis": ["a", "b", "a", "b"]})
    with pytest.raises(SdcevalError, match=r"' M'.*blanks.*strip"):
        _ds(df, qi="sex", sensitive="dis", hierarchies={"sex": h})


# -- item 14b: numeric-looking QI with a few text cells ----------------------------------
def test_numeric_looking_qi_with_text_cells_gets_a_note():
    age = [str(i) for i in range(28)] + ["n/a", "unknown"]
    df = pd.DataFrame({"age": age, "dis": ["a", "b"] * 15})
    ds = _ds(df, qi="age", sensitive="dis")
    notes = [m for m in ds.messages if "'age'" in m and "categorical" in m]
    assert notes, ds.messages
    assert "2 " in notes[0] and "'n/a'" in notes[0]


def test_text_qi_and_code_qi_get_no_such_note():
    df = pd.DataFrame({"zip": ["02139", "02138", "02140", "02141"] * 3,
                       "job": ["a", "b", "c", "d"] * 3, "dis": ["x", "y"] * 6})
    ds = _ds(df, qi=["zip", "job"], sensitive="dis")
    assert not [m for m in ds.messages if "categorical" in m]


# -- item 14c: l = 1e308 refused without an overflow warning ------------------------------
@pytest.mark.parametrize("variant", ["probabilistic", "distinct", "entropy"])
def test_huge_l_refused_without_warning(variant):
    df = pd.DataFrame({"age": list(range(20)) * 2, "sex": ["M", "F"] * 20,
                       "dis": list("abcd") * 10})
    ds = _ds(df, qi=["age", "sex"], sensitive="dis")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(SdcevalError, match="cannot be met"):
            sdceval.anonymize(ds, "mondrian", model="l", l=1e308, variant=variant)


# -- item 14d: single-valued sensitive attribute ------------------------------------------
@pytest.fixture
def single_valued():
    df = pd.DataFrame({"age": list(range(20)) * 2, "sex": ["M", "F"] * 20, "dis": ["a"] * 40})
    return _ds(df, qi=["age", "sex"], sensitive="dis")


@pytest.mark.parametrize("method, params", [("anatomy", dict(l=2)),
                                            ("mondrian", dict(model="cl", c=3, l=2))])
def test_single_valued_sensitive_says_so(single_valued, method, params):
    with pytest.raises(SdcevalError) as e:
        sdceval.anonymize(single_valued, method, **params)
    msg = str(e.value)
    assert "l <= 1" not in msg
    assert "single value" in msg and "no ℓ >= 2" in msg
    if method == "anatomy":
        assert "'a'" in msg


# -- item 16: missing values in a column the method drops ---------------------------------
@pytest.mark.parametrize("method, ok", [("mondrian", True), ("bucketization", True),
                                        ("mdav", False)])
def test_missing_value_in_a_column_the_method_drops_is_not_refused(tmp_path, method, ok):
    """A schema names every role (for several methods); income, a numeric attribute,
    has a missing value: Mondrian and bucketization drop income, so it does not stop
    them; MDAV masks income, so it is refused as before."""
    df = pd.DataFrame({"age": list(range(20, 40)) * 2, "sex": ["M", "F"] * 20,
                       "dis": list("abcd") * 10, "income": [1.0] * 39 + [np.nan]})
    df.to_csv(tmp_path / "d.csv", index=False)
    (tmp_path / "s.toml").write_text('qi = ["age", "sex"]\nsensitive = "dis"\n'
                                     'numeric = ["income"]\n')
    r = subprocess.run([sys.executable, "-m", "sdceval", "anonymize", "--data",
                        str(tmp_path / "d.csv"), "--schema", str(tmp_path / "s.toml"),
                        "--method", method, *(["--model", "k=2"] if ok else []),
                        "--out", str(tmp_path / "o.csv")], capture_output=True, text=True)
    if ok:
        assert r.returncode == 0, r.stderr
        assert "'income' (numeric): missing values, in a column" in r.stderr
        assert len(pd.read_csv(tmp_path / "o.csv")) == 40  # no record lost
    else:
        assert r.returncode == 2 and "missing values in 'income'" in r.stderr
