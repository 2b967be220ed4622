"""Global recoding with user breaks (`sdceval.methods.recoding`, issue 29 item 3):
right-closed intervals labelled as sdcMicro's ``globalRecode`` (R's ``cut``), cells
that are ranges of leaf codes, clear errors, reading the release back, and breaks
inside whole-file strategies."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from contracts import contract_data

import sdceval
from sdceval import SdcevalError
from sdceval.core.release_io import read_release


@pytest.fixture(scope="module")
def ds():
    return contract_data()


def _ages(values):
    frame = pd.DataFrame({"age": values, "sex": ["F", "M"] * (len(values) // 2)
                          + ["F"] * (len(values) % 2)})
    return sdceval.as_dataset(frame, qi=["age", "sex"])


def test_labels_equal_sdcmicro_globalrecode():
    """sdcMicro 5.8.1 (R):
      x <- c(1, 18, 19, 30, 31, 64, 65, 66, 120, 17.5)
      as.character(globalRecode(x, breaks=c(0, 18, 30, 65, 120)))
      as.character(globalRecode(c(0.25, 2.5, 10), breaks=c(0, 0.5, 2.75, 10)))
    """
    d = _ages([1, 18, 19, 30, 31, 64, 65, 66, 120, 17.5])
    rel = sdceval.anonymize(d, "recode", breaks="age=0;18;30;65;120", level=0)
    assert rel.data["age"].tolist() == [
        "(0,18]", "(0,18]", "(18,30]", "(18,30]", "(30,65]", "(30,65]", "(30,65]",
        "(65,120]", "(65,120]", "(0,18]"]
    d = _ages([0.25, 2.5, 10])
    rel = sdceval.anonymize(d, "recode", breaks={"age": [0, 0.5, 2.75, 10]}, level=0)
    assert rel.data["age"].tolist() == ["(0,0.5]", "(0.5,2.75]", "(2.75,10]"]


def test_cells_are_leaf_ranges_and_classes_follow(ds):
    rel = sdceval.anonymize(ds, "recode", breaks="age=0;30;50;120", level=1)
    h = ds.hierarchy("age")
    lo, hi = rel.cells["age"]
    age = ds.frame["age"].to_numpy()
    for a, b in ((0, 30), (30, 50), (50, 120)):
        inside = (age > a) & (age <= b)
        leaves = np.flatnonzero((h.leaf_values > a) & (h.leaf_values <= b))
        assert (lo[inside] == leaves.min()).all() and (hi[inside] == leaves.max()).all()
    assert rel.info["levels"]["age"] == "breaks" and rel.info["levels"]["region"] == 1
    assert rel.info["breaks"] == {"age": [0.0, 30.0, 50.0, 120.0]}
    # the other QIs recoded by level as without breaks
    plain = sdceval.anonymize(ds, "recode", level=1)
    for q in ("region", "education", "sex"):
        assert (rel.cells[q][0] == plain.cells[q][0]).all()
        assert rel.data[q].tolist() == plain.data[q].tolist()
    combos = pd.DataFrame({q: rel.cells[q][0] for q in ds.schema.qis})
    assert rel.info["n_classes"] == len(combos.drop_duplicates())
    assert rel.info["k"] == int(np.bincount(rel.classes).min())
    assert sdceval.evaluate(ds, rel, "k_anonymity").value == rel.info["k"]


def test_release_reads_back(ds, tmp_path):
    rel = sdceval.anonymize(ds, "recode", breaks="age=0;29.5;50;120", level=0)
    path = tmp_path / "r.csv"
    rel.data.to_csv(path, index=False)
    back = read_release(ds, path)
    assert (back.cells["age"][0] == rel.cells["age"][0]).all()
    assert (back.cells["age"][1] == rel.cells["age"][1]).all()
    assert sdceval.evaluate(ds, back, "k_anonymity").value == \
        sdceval.evaluate(ds, rel, "k_anonymity").value


@pytest.mark.parametrize("breaks,match", [
    ("age=18;30;65;120", r"2 value\(s\) of 'age' lie outside .*\(18,120\] \(e.g. 18\)"),
    ("age=0;18;30", "lie outside"),
    ("age=0;18;18;120", "repeat a cut point"),
    ("age=0", "at least two finite numbers"),
    ("age=0;x", "at least two finite numbers"),
    ("age", "must look like qi=cut"),
    ("region=0;1", "'region' is categorical"),
    ("agee=0;120", "'agee', which is not a quasi-identifier. Did you mean 'age'"),
    ("age=0;120|age=0;50;120", "gives 'age' twice"),
])
def test_bad_breaks_are_refused_clearly(ds, breaks, match):
    with pytest.raises(SdcevalError, match=match):
        sdceval.anonymize(ds, "recode", breaks=breaks)


def test_breaks_sorted_and_in_strategies(ds):
    a = sdceval.anonymize(ds, "recode", breaks="age=120;0;40")
    b = sdceval.anonymize(ds, "recode", breaks="age=0;40;120")
    assert a.data.equals(b.data)
    rel = sdceval.anonymize(ds, "mdav+recode:breaks=age=0;40;120", k=5, seed=0)
    assert sorted(set(rel.data["age"])) == ["(0,40]", "(40,120]"]
    # a numeric attribute cut as an interval QI of a whole-file strategy
    rel = sdceval.anonymize(ds, "recode:breaks=x=0;20;1000+intervals", level=0)
    x = ds.frame["x"].to_numpy()
    assert (rel.data["x"] == np.where(x <= 20, "(0,20]", "(20,1000]")).all()


def test_breaks_as_a_strategy_parameter(ds):
    """A strategy parses its free parameters, then its step parses them again: the
    canonical form of breaks reads back as itself."""
    from sdceval.catalog import get_method
    rel = get_method("mdav+recode").apply(ds, {"k": 5, "breaks": "age=0;40;120"}, seed=0)
    assert sorted(set(rel.data["age"])) == ["(0,40]", "(40,120]"]
