"""Hierarchies built from a user's data (sdceval/core/hierarchy_builders.py, issue 19
item 7): each builder's exact labels, validity, the builder choice, the data sets and
methods that use them, and ``sdceval hierarchy show|export``."""
import re

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import sdceval
from conftest import cli_error, cli_run
from sdceval import Dataset, Hierarchy, Schema, SdcevalError, open_dataset
from sdceval.cli import main
from sdceval.core.hierarchy_builders import (build_grouping, build_hierarchy,
                                             build_intervals, build_masking,
                                             choose_builder, is_code_like)

ZIPS = ["02116", "02115", "02139", "10001", "94110", "02116"]
_NUMBER = r"-?[0-9.eE+]+"
_LABEL = re.compile(rf"^\[({_NUMBER})(?:-|, )({_NUMBER})[\])]$")


def assert_valid(h: Hierarchy, values):
    """Nested levels (checked by `Hierarchy`), contiguous nodes, unique labels per
    level, one root, and every value a leaf."""
    again = Hierarchy(h.to_frame(), name=h.name, numeric=h.numeric)
    assert again.to_frame().equals(h.to_frame())
    for j in range(h.height + 1):
        assert len(set(h.labels[j])) == len(h.labels[j]), (h.name, j)
        for node, (lo, hi) in enumerate(zip(h.lo[j], h.hi[j])):
            assert np.flatnonzero(h.node_of[j] == node).tolist() == list(range(lo, hi + 1))
    assert h.labels[-1].tolist() == ["*"]
    codes = h.encode(values)
    if h.numeric:
        assert np.allclose(h.leaf_values[codes], np.asarray(values, dtype=float))
    else:
        assert h.leaves[codes].tolist() == [str(v) for v in values]


def interval_bounds(label: str) -> tuple[float, float]:
    m = _LABEL.match(label)
    if m:
        return float(m.group(1)), float(m.group(2))
    return float(label), float(label)


def assert_within_range(h: Hierarchy):
    lo, hi = h.leaf_values[0], h.leaf_values[-1]
    for j in range(1, h.height):
        for lab in h.labels[j]:
            a, b = interval_bounds(lab)
            assert lo <= a <= b <= hi, (h.name, j, lab)


# -- intervals -------------------------------------------------------------------------
def test_intervals_ages_labels_within_the_data():
    ages = list(range(17, 91))
    h = build_hierarchy(ages, "age", "numeric")
    assert h.builder == "intervals" and h.numeric
    assert h.labels[1].tolist()[:3] == ["[17-19]", "[20-24]", "[25-29]"]
    assert h.labels[1].tolist()[-2:] == ["[85-89]", "[90-90]"]
    assert h.labels[2].tolist() == ["[17-24]", "[25-34]", "[35-44]", "[45-54]", "[55-64]",
                                    "[65-74]", "[75-84]", "[85-90]"]
    assert h.labels[3].tolist() == ["[17-34]", "[35-54]", "[55-74]", "[75-90]"]
    assert h.labels[4].tolist() == ["[17-54]", "[55-90]"]  # never [55-94] or [80-159]
    assert h.labels[5].tolist() == ["*"]
    # the tree (and so the lattice) of the former automatic hierarchy
    auto = Hierarchy.auto_intervals(ages, name="age")
    assert h.height == auto.height == 5
    for j in range(h.height + 1):
        assert np.array_equal(h.node_of[j], auto.node_of[j])
    assert_valid(h, ages)
    assert_within_range(h)


def test_intervals_real_data_half_open_and_closed_at_the_maximum():
    vals = np.round(np.linspace(0.3, 9.7, 50), 2)
    h = build_intervals(vals, "x")
    assert h.labels[1].tolist() == ["[0.3, 1)", "[1, 2)", "[2, 3)", "[3, 4)", "[4, 5)",
                                    "[5, 6)", "[6, 7)", "[7, 8)", "[8, 9)", "[9, 9.7]"]
    assert h.labels[2].tolist() == ["[0.3, 2)", "[2, 4)", "[4, 6)", "[6, 8)", "[8, 9.7]"]
    assert h.labels[4].tolist() == ["[0.3, 8)", "[8, 9.7]"]
    auto = Hierarchy.auto_intervals(vals, name="x")
    for j in range(h.height + 1):
        assert np.array_equal(h.node_of[j], auto.node_of[j])
    assert_valid(h, vals)
    assert_within_range(h)


def test_intervals_small_integer_range_gets_whole_widths():
    h = build_intervals([3, 0, 1, 2], "x")
    assert h.height == 5
    assert h.labels[1].tolist() == ["[0-0]", "[1-1]", "[2-2]", "[3-3]"]
    assert h.labels[2].tolist() == ["[0-1]", "[2-3]"]
    assert h.labels[3].tolist() == h.labels[4].tolist() == ["[0-3]"]
    one = build_intervals([7, 7, 7], "c")  # a single value: still valid
    assert one.labels[1].tolist() == ["[7-7]"] and one.height == 5


def test_intervals_clip_option_keeps_the_tree():
    plain = Hierarchy.intervals(range(17, 91), [5, 10, 20, 40, 80], name="age")
    clipped = Hierarchy.intervals(range(17, 91), [5, 10, 20, 40, 80], name="age", clip=True)
    assert plain.labels[5].tolist() == ["[0-79]", "[80-159]"]
    assert clipped.labels[5].tolist() == ["[17-79]", "[80-90]"]
    for j in range(plain.height + 1):
        assert np.array_equal(plain.node_of[j], clipped.node_of[j])


@settings(max_examples=40, deadline=None)
@given(st.lists(st.one_of(st.integers(-500, 500),
                          st.floats(-1e4, 1e4, allow_nan=False).map(lambda v: round(v, 3))),
                min_size=1, max_size=60))
def test_intervals_always_valid_and_within_range(values):
    h = build_intervals(values, "x")
    assert h.height == 5
    assert_valid(h, values)
    assert_within_range(h)


def test_intervals_refuse_text():
    with pytest.raises(SdcevalError, match="not numbers"):
        build_intervals(["a", "b"], "x")


# -- masking ---------------------------------------------------------------------------
def test_masking_zip_codes_keep_leading_zeros():
    h = build_hierarchy(ZIPS, "zip", "categorical")
    assert h.builder == "masking" and not h.numeric
    assert h.to_frame().values.tolist() == [
        ["02115", "0211*", "021**", "02***", "0****", "*"],
        ["02116", "0211*", "021**", "02***", "0****", "*"],
        ["02139", "0213*", "021**", "02***", "0****", "*"],
        ["10001", "1000*", "100**", "10***", "1****", "*"],
        ["94110", "9411*", "941**", "94***", "9****", "*"]]
    assert_valid(h, ZIPS)
    with pytest.raises(SdcevalError, match="one length"):
        build_masking(["0211", "02116"], "zip")


# -- grouping --------------------------------------------------------------------------
def test_grouping_five_values():
    values = list("EDCBA") + ["A", "C"]
    h = build_hierarchy(values, "c", "categorical")
    assert h.builder == "grouping"
    assert h.to_frame().values.tolist() == [
        ["A", "{A, B, C}", "*"], ["B", "{A, B, C}", "*"], ["C", "{A, B, C}", "*"],
        ["D", "{D, E}", "*"], ["E", "{D, E}", "*"]]
    assert_valid(h, values)


def test_grouping_thirty_values_natural_order_two_levels():
    values = [f"v{i}" for i in range(30, 0, -1)]
    h = build_hierarchy(values, "c", "categorical")
    assert h.builder == "grouping" and h.height == 3
    assert h.leaves.tolist()[:11] == [f"v{i}" for i in range(1, 12)]  # v2 before v10
    assert h.labels[1].tolist() == ["{" + ", ".join(f"v{i}" for i in range(a, a + 3)) + "}"
                                    for a in range(1, 31, 3)]
    assert h.labels[2].tolist() == ["v1..v12", "v13..v21", "v22..v30"]
    assert_valid(h, values)


@pytest.mark.parametrize("m, counts", [(5, [2]), (12, [3]), (16, [4]), (17, [7, 3]),
                                       (64, [16, 4]), (65, [23, 8, 3])])
def test_grouping_levels_by_domain_size(m, counts):
    h = build_grouping([f"x{i:03d}" for i in range(m)], "x")
    assert [len(h.labels[j]) for j in range(1, h.height)] == counts
    assert_valid(h, [f"x{i:03d}" for i in range(m)])


def test_grouping_of_two_values_is_flat():
    h = build_grouping(["b", "a", "b"], "x")
    assert h.to_frame().values.tolist() == [["a", "*"], ["b", "*"]]


# -- the choice ------------------------------------------------------------------------
@pytest.mark.parametrize("values, kind, builder", [
    (list(range(17, 91)), "numeric", "intervals"),
    (list(range(17, 91)), None, "intervals"),          # kind from the type
    (["F", "M", "F"], "categorical", "flat"),
    (list("abcd"), "categorical", "flat"),             # at most 4 values
    (list("abcde"), None, "grouping"),
    (ZIPS, "categorical", "masking"),
    (["A09", "B20", "C50", "C51", "D10"], "categorical", "masking"),
    ([f"j{i}" for i in range(9)], "categorical", "grouping"),  # masking: j* at once
    (["red", "tan", "sky", "dim", "ash"], "categorical", "grouping"),  # words
    (["1", "2", "10", "11", "12"], "categorical", "grouping"),   # lengths differ
])
def test_builder_choice(values, kind, builder):
    assert choose_builder(values, kind) == builder
    h = build_hierarchy(values, "c", kind)
    assert h.builder == builder
    assert_valid(h, values)


def test_code_like():
    assert is_code_like(ZIPS) and is_code_like(["K1A0B1", "M5V2T6"])
    assert not is_code_like(["02116", "2116"]) and not is_code_like(["ab", "cd"])
    assert not is_code_like(["1", "2"]) and not is_code_like(["02-1", "02-2"])


# -- data sets, methods ------------------------------------------------------------------
def own_frame(n=400, seed=0):
    rng = np.random.default_rng(seed)
    zips = [f"0{a}{b}{c}{d}" for a in "12" for b in "13" for c in "01" for d in "0123"]
    return pd.DataFrame({
        "zip": rng.choice(zips, n), "age": rng.integers(17, 91, n),
        "sex": rng.choice(["F", "M"], n),
        "job": rng.choice([f"job-{c}" for c in "abcdefghi"], n),
        "income": rng.normal(4e4, 1e4, n).round(2),
        "diag": rng.choice([f"d{i}" for i in range(6)], n)})


def test_dataset_builds_every_qi_and_keeps_the_sensitive_flat():
    frame = own_frame()
    ds = Dataset(frame, Schema.from_roles(frame, qi=["zip", "age", "sex", "job", "income"],
                                          sensitive="diag"))
    built = {q: ds.hierarchy(q).builder for q in ds.schema.qis + ["diag"]}
    assert built == {"zip": "masking", "age": "intervals", "sex": "flat", "job": "grouping",
                     "income": "intervals", "diag": "flat"}
    assert ds.hierarchy("diag").height == 1
    for q in ds.schema.qis:
        assert_valid(ds.hierarchy(q), frame[q])
    # codes as before: text sorted, numbers in order
    assert ds.domain("zip").tolist() == sorted(frame["zip"].unique())
    assert ds.domain("job").tolist() == sorted(frame["job"].unique())
    # the label is never generalized either: flat, numeric ones as before
    labelled = Dataset(frame, Schema.from_roles(frame, qi=["zip"], label="diag"))
    assert labelled.hierarchy("diag").builder == "flat"
    numeric_label = Dataset(frame, Schema.from_roles(frame, qi=["zip"], label="income"))
    assert numeric_label.hierarchy("income").builder == "auto_intervals"


def test_a_hierarchy_in_the_schema_wins():
    frame = own_frame()
    h = Hierarchy.intervals(range(0, 100), [10, 50], name="age")
    ds = Dataset(frame, Schema.from_roles(frame, qi=["age"], hierarchies={"age": h}))
    assert ds.hierarchy("age") is h and h.builder is None


def write_own_csv(folder, frame=None):
    (frame if frame is not None else own_frame()).to_csv(folder / "x.csv", index=False)
    (folder / "s.toml").write_text(
        'qi = ["zip", "age", "sex", "job"]\nsensitive = "diag"\n'
        '[kinds]\nzip = "categorical"\n', encoding="utf-8")


@pytest.mark.parametrize("method", ["mondrian", "generalization"])
def test_own_csv_anonymized_with_built_hierarchies(tmp_path, method):
    write_own_csv(tmp_path)
    ds = open_dataset(str(tmp_path / "x.csv"), schema_file=str(tmp_path / "s.toml"))
    assert ds.frame["zip"].str.startswith("0").all()  # read as text, zeros kept
    assert ds.hierarchy("zip").builder == "masking"
    rel = sdceval.anonymize(ds, method, models=["k=5"])
    kept = ~rel.suppressed if rel.suppressed is not None else np.ones(ds.n, bool)
    assert np.bincount(pd.factorize(rel.classes[kept])[0]).min() >= 5
    lo, hi = ds.frame["age"].min(), ds.frame["age"].max()
    for lab in pd.unique(rel.data.loc[kept, "age"].astype(str)):
        if lab != "*":
            a, b = interval_bounds(lab)
            assert lo <= a <= b <= hi, lab
    for lab in pd.unique(rel.data.loc[kept, "zip"].astype(str)):
        assert re.fullmatch(r"0[0-9]{0,4}\**", lab) or lab == "*" or lab.startswith("{"), lab
    assert (rel.data["diag"] == ds.frame["diag"]).all()


# -- the command -----------------------------------------------------------------------
def test_cli_show_builds_and_names_the_builder(tmp_path, monkeypatch, capsys):
    write_own_csv(tmp_path)
    monkeypatch.chdir(tmp_path)
    code = main(["hierarchy", "show", "--data", "x.csv", "--qi", "zip,age",
                             "age"])
    out = capsys.readouterr()
    assert code == 0
    assert "built from the data by the intervals builder" in out.out
    assert "[17-19]" in out.out and "[55-90]" in out.out and "159" not in out.out
    assert "hierarchy export" in out.err and "[hierarchies]" in out.err
    code, out, _ = cli_run(["hierarchy", "show", "--data", "x.csv", "--schema", "s.toml",
                            "zip"], capsys)
    assert code == 0 and "masking builder" in out
    assert re.search(r"^ *02113 +0211\* +021\*\* +02\*\*\* +0\*\*\*\* +\*$", out, re.M)
    # the positional form of before: DATASET COLUMN
    code, out, _ = cli_run(["hierarchy", "show", "x.csv", "job", "--qi", "job"], capsys)
    assert code == 0 and "grouping builder" in out and "{job-a, job-b, job-c}" in out


def test_cli_export_round_trip(tmp_path, monkeypatch, capsys):
    write_own_csv(tmp_path)
    monkeypatch.chdir(tmp_path)
    built = open_dataset("x.csv", schema_file="s.toml")
    for col in ("zip", "age", "job"):
        code, _, _ = cli_run(["hierarchy", "export", "--data", "x.csv", "--schema", "s.toml",
                              col, "--out", f"h_{col}.csv"], capsys)
        assert code == 0
    code = main(["hierarchy", "export", "--data", "x.csv", "--schema", "s.toml",
                             "age", "--out", "h_age.csv"])
    err = capsys.readouterr().err
    assert code == 0 and 'age = { file = "h_age.csv", numeric = true }' in err
    # the schema naming the files (as the note says) reads the same hierarchies
    (tmp_path / "s2.toml").write_text(
        'qi = ["zip", "age", "sex", "job"]\nsensitive = "diag"\n[hierarchies]\n'
        'zip = { file = "h_zip.csv", numeric = false }\n'
        'age = { file = "h_age.csv", numeric = true }\n'
        'job = { file = "h_job.csv", numeric = false }\n', encoding="utf-8")
    read = open_dataset("x.csv", schema_file="s2.toml")
    for col in ("zip", "age", "job"):
        h, g = built.hierarchy(col), read.hierarchy(col)
        assert g.builder is None and g.source == (tmp_path / f"h_{col}.csv").resolve()
        assert g.numeric == h.numeric and g.to_frame().equals(h.to_frame())
        assert np.array_equal(read.codes(col), built.codes(col))
    code, out, _ = cli_run(["hierarchy", "show", "--data", "x.csv", "--schema", "s2.toml",
                            "zip"], capsys)
    assert code == 0 and "read from" in out and "h_zip.csv" in out


def test_cli_errors(tmp_path, monkeypatch, capsys):
    write_own_csv(tmp_path)
    monkeypatch.chdir(tmp_path)
    assert "which data" in cli_error(["hierarchy", "show", "age"], capsys)
    assert "given twice" in cli_error(["hierarchy", "show", "x.csv", "age", "--data",
                                       "other.csv"], capsys)
    assert "needs --out" in cli_error(["hierarchy", "export", "x.csv", "age"], capsys)
    assert "no column" in cli_error(["hierarchy", "show", "x.csv", "agee"], capsys)
