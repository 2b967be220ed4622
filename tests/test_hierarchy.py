"""Hierarchy core (sdceval/hierarchy.py) and the bundled Adult hierarchies (SPEC §2)."""
import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sdceval import Hierarchy, SdcevalError, load_dataset
from sdceval.core.loaders import ADULT_HIERARCHIES, _read_adult, load_adult_hierarchy

# a tree whose rows are deliberately not in depth-first order
TREE = [
    ["c1", "C", "Y", "*"],
    ["a1", "A", "X", "*"],
    ["b1", "B", "X", "*"],
    ["a2", "A", "X", "*"],
    ["c2", "C", "Y", "*"],
    ["b2", "B", "X", "*"],
    ["a3", "A", "X", "*"],
]


def assert_contiguous(h: Hierarchy):
    """Every node covers exactly the codes lo..hi, and those leaves all map to it."""
    for j in range(h.height + 1):
        for node, (lo, hi) in enumerate(zip(h.lo[j], h.hi[j])):
            members = np.flatnonzero(h.node_of[j] == node)
            assert members.tolist() == list(range(lo, hi + 1)), (h.name, j, node)


def test_tree_nodes_are_contiguous_code_ranges():
    h = Hierarchy(TREE, name="t")
    assert h.height == 3 and h.n_leaves == 7
    assert_contiguous(h)
    # first-appearance depth-first order: subtree Y (C) first, then X (A, B)
    assert h.leaves.tolist() == ["c1", "c2", "a1", "a2", "a3", "b1", "b2"]
    assert h.labels[1].tolist() == ["C", "A", "B"]
    assert h.lo[1].tolist() == [0, 2, 5] and h.hi[1].tolist() == [1, 4, 6]
    assert h.labels[2].tolist() == ["Y", "X"]
    assert h.labels[3].tolist() == ["*"]


def test_generalize_children_parent_labels():
    h = Hierarchy(TREE, name="t")
    codes = h.encode(["a2", "b1", "c2"])
    lo, hi = h.generalize(codes, 1)
    assert lo.tolist() == [2, 5, 0] and hi.tolist() == [4, 6, 1]
    assert h.labels_of(lo, hi).tolist() == ["A", "B", "C"]
    lo, hi = h.generalize(codes, 0)
    assert (lo == codes).all() and (hi == codes).all()
    assert h.label(0, 6) == "*"
    assert h.label(2, 3) == "{a1,a2}"  # not a node: the set of leaves
    assert h.children(2, 1).tolist() == [1, 2]  # X -> A, B
    assert h.parent(1).tolist() == [0, 1, 1]
    with pytest.raises(SdcevalError, match="level 4 outside 0..3"):
        h.generalize(codes, 4)
    with pytest.raises(SdcevalError, match="no children"):
        h.children(0, 0)
    with pytest.raises(SdcevalError, match="no parent"):
        h.parent(3)


def test_flat():
    h = Hierarchy.flat(["b", "a", "b"], name="f")
    assert h.height == 1 and h.leaves.tolist() == ["b", "a"]
    assert h.labels[1].tolist() == ["*"]


def test_intervals_integer_labels_and_nesting():
    h = Hierarchy.intervals(range(17, 91), [5, 10, 20, 40, 80], name="age")
    assert h.numeric and h.n_leaves == 74 and h.height == 6
    assert_contiguous(h)
    lo, hi = h.generalize(h.encode([17, 44, 90]), 1)
    # the node [90-94] holds the single leaf 90: its cell is that leaf's
    assert h.labels_of(lo, hi).tolist() == ["[15-19]", "[40-44]", "90"]
    assert h.labels[1][h.node_of[1][h.encode([90])]].tolist() == ["[90-94]"]
    assert h.labels[2].tolist()[:2] == ["[10-19]", "[20-29]"]
    assert h.labels[5].tolist() == ["[0-79]", "[80-159]"]
    # numeric leaves are ordered numerically; a range that is not a node is an interval
    assert h.leaf_values[:3].tolist() == [17.0, 18.0, 19.0]
    assert h.label(0, 5) == "[17-22]"


def test_intervals_fractional_widths_nest():
    # 0.6 / 0.2 is 2.9999999999999996 in floating point: bins must still nest
    vals = np.round(np.arange(0, 3, 0.1), 1)
    h = Hierarchy.intervals(vals, [0.2, 0.6, 1.2], name="x")
    assert_contiguous(h)
    lo, hi = h.generalize(h.encode([0.6, 0.5]), 1)
    assert h.labels_of(lo, hi).tolist() == ["[0.6, 0.8)", "[0.4, 0.6)"]


def test_auto_intervals_integer_data_small_span_labels_are_intervals():
    # widths below 1 on integer data: half-open labels, never "[0--0.8]"
    h = Hierarchy.auto_intervals(range(4), name="x")
    assert_contiguous(h)
    assert not any("--" in lab for j in range(h.height + 1) for lab in h.labels[j])


@settings(max_examples=40, deadline=None)
@given(st.lists(st.floats(-1e4, 1e4, allow_nan=False), min_size=2, max_size=60),
       st.integers(1, 5))
def test_auto_intervals_always_valid(values, levels):
    h = Hierarchy.auto_intervals(values, name="x", levels=levels)
    assert_contiguous(h)
    codes = h.encode(values)
    assert np.allclose(h.leaf_values[codes], values)
    for j in range(h.height):  # every node's values lie within its parent's
        par = h.parent(j)
        assert (h.lo[j + 1][par] <= h.lo[j]).all() and (h.hi[j] <= h.hi[j + 1][par]).all()


@pytest.mark.parametrize("delimiter", [";", ","])
def test_csv_round_trip(tmp_path, delimiter):
    h = Hierarchy(TREE, name="t")
    p = tmp_path / f"t{delimiter == ';'}.csv"
    h.to_csv(p, delimiter=delimiter)
    text = p.read_text()
    assert delimiter in text.splitlines()[0] and not text.startswith("level")
    back = Hierarchy.from_csv(p, name="t")  # delimiter detected
    pd.testing.assert_frame_equal(back.to_frame(), h.to_frame())


def test_csv_round_trip_numeric_labels_with_commas(tmp_path):
    h = Hierarchy.intervals([0.5, 1.5, 2.5, 7.5], [2.5, 5.0], name="x")
    for delim in (";", ","):
        p = tmp_path / "x.csv"
        h.to_csv(p, delimiter=delim)
        back = Hierarchy.from_csv(p, numeric=True)
        assert back.numeric
        pd.testing.assert_frame_equal(back.to_frame(), h.to_frame())


def test_from_csv_errors(tmp_path):
    with pytest.raises(SdcevalError, match="does not exist"):
        Hierarchy.from_csv(tmp_path / "nope.csv")
    p = tmp_path / "e.csv"
    p.write_text("\n\n")
    with pytest.raises(SdcevalError, match="is empty"):
        Hierarchy.from_csv(p)


def test_value_missing_from_hierarchy_names_values():
    h = Hierarchy(TREE, name="t")
    with pytest.raises(SdcevalError, match=r"column 'col': 2 value\(s\).*'zz', 'yy'"):
        h.encode(["a1", "zz", "yy", "zz"], column="col")
    num = Hierarchy.intervals([1, 2, 3], [2], name="n")
    with pytest.raises(SdcevalError, match=r"'n': 1 value\(s\).*'7'"):
        num.encode([1, 7])


def test_validation_errors():
    with pytest.raises(SdcevalError, match="levels do not nest.*'A'"):
        Hierarchy([["a1", "A", "X", "*"], ["a2", "A", "Y", "*"]], name="bad")
    with pytest.raises(SdcevalError, match="single root"):
        Hierarchy([["a", "X"], ["b", "Y"]], name="bad")
    with pytest.raises(SdcevalError, match="listed more than once: a"):
        Hierarchy([["a", "*"], ["a", "*"], ["b", "*"]], name="bad")
    with pytest.raises(SdcevalError, match="different numbers of levels"):
        Hierarchy([["a", "A", "*"], ["b", "*"]], name="bad")
    with pytest.raises(SdcevalError, match="at least two columns"):
        Hierarchy([["a"], ["b"]], name="bad")
    with pytest.raises(SdcevalError, match="non-numeric leaves"):
        Hierarchy([["a", "*"], ["1", "*"]], name="bad", numeric=True)
    # a numeric node must be an interval of the leaves
    with pytest.raises(SdcevalError, match="not contiguous in numeric order"):
        Hierarchy([["1", "odd", "*"], ["2", "even", "*"], ["3", "odd", "*"]],
                  name="bad", numeric=True)
    with pytest.raises(SdcevalError, match="widths must grow"):
        Hierarchy.intervals([1, 2, 3], [2, 3])


# -- the bundled Adult hierarchies -------------------------------------------------------
ADULT_SHAPE = {  # column: (leaves, height), SPEC §2 / Dewri et al. 2010 Table 1(a)
    "age": (74, 6), "workclass": (7, 3), "education": (16, 3), "marital-status": (7, 3),
    "race": (5, 1), "sex": (2, 1), "native-country": (41, 4), "income": (2, 1),
    "occupation": (14, 2),
}


@pytest.fixture(scope="module")
def adult_frame():
    return _read_adult(False)


@pytest.mark.parametrize("col", ADULT_HIERARCHIES)
def test_adult_hierarchy_shape_and_coverage(col, adult_frame):
    h = load_adult_hierarchy(col)
    assert (h.n_leaves, h.height) == ADULT_SHAPE[col]
    assert h.labels[-1].tolist() == ["*"]
    assert_contiguous(h)
    # every leaf occurs in the data and every data value is a leaf
    assert set(h.leaves) == set(adult_frame[col].astype(str))


def test_adult_lattice_sizes():
    heights = {c: load_adult_hierarchy(c).height for c in ADULT_HIERARCHIES}
    qis = ["age", "workclass", "education", "marital-status", "race", "sex",
           "native-country"]
    without = math.prod(heights[c] + 1 for c in qis)
    assert without == 8960  # Dewri et al. 2010 §7, CM experiments (salary is the label)
    assert without * (heights["income"] + 1) == 17920  # with salary class


def test_adult_hierarchy_content():
    edu = load_adult_hierarchy("education")
    lo, hi = edu.generalize(edu.encode(["Preschool", "12th", "Assoc-voc", "Doctorate"]), 1)
    assert edu.labels_of(lo, hi).tolist() == ["Primary", "Secondary-incomplete",
                                              "Some-college-Assoc", "Graduate"]
    nc = load_adult_hierarchy("native-country")
    lo, hi = nc.generalize(nc.encode(["United-States", "Mexico", "India"]), 3)
    assert nc.labels_of(lo, hi).tolist() == ["United-States", "Other", "Other"]


def test_adult_datasets_load():
    assert load_dataset("adult").n == 45222
    assert load_dataset("adult-train").n == 30162
