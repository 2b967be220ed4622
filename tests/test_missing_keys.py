"""Missing values in the original keys (issue 29, item 2's last point): ``missing =
"keep"`` keeps records whose categorical quasi-identifiers have missing values (a
survey's item non-response), the missing value a leaf of its own of the QI's hierarchy
(`Hierarchy.missing_leaf`); sdcMicro counts it as ``NA`` (matching every category,
``alpha``), local suppression counts it as already suppressed, PRAM leaves it missing.

Reference values of the real sdcMicro 5.8.1 (``/tmp/sdcmicro/Rlib``) on `_na_frame`
written to ``na.csv`` (``df.to_csv("na.csv", index=False)``), computed with::

    .libPaths(c("/tmp/sdcmicro/Rlib", .libPaths())); library(sdcMicro)
    df <- read.csv("na.csv", stringsAsFactors=TRUE, na.strings="")
    sdc <- createSdcObj(df, keyVars=c("a","b","c"), weightVar="w")
    r <- get.sdcMicroObj(sdc, "risk")
    r$individual[,"risk"]; r$global$risk; r$global$risk_ER
    sdc0 <- createSdcObj(df, keyVars=c("a","b","c"))
    get.sdcMicroObj(sdc0, "risk")$global$risk
    ls <- localSuppression(sdc0, k=3); ls@localSuppression   # supps a 0, b 0, c 8
    m <- get.sdcMicroObj(ls, "manipKeyVars")
    which(is.na(m$c) & !is.na(df$c)) - 1                     # 6 14 16 24 26 34 37 39
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import sdceval
from sdceval import Hierarchy, SdcevalError
from sdceval.catalog import METHODS
from sdceval.cli.common import MISSING_CHOICES
from sdceval.core.release_io import read_release, release_of
from sdceval.core.release_order import write_release
from sdceval.core.schema import MISSING_POLICIES
from sdceval.measures.attribute_disclosure import identity_release
from sdceval.privacy.population_risk import release_keys

NA = np.nan


def _na_frame() -> pd.DataFrame:
    """40 records, keys a (3 values), b (2), c (4) with 4, 1 and 3 missing values, and
    a design weight (generated with numpy's default_rng(29))."""
    rng = np.random.default_rng(29)
    n = 40
    df = pd.DataFrame({"a": rng.choice(["x", "y", "z"], n), "b": rng.choice(["p", "q"], n),
                       "c": rng.choice(["u", "v", "w", "t"], n),
                       "w": rng.integers(5, 60, n).astype(float)})
    df = df.astype({"a": object, "b": object, "c": object})
    df.loc[[3, 7, 19, 30], "a"] = NA
    df.loc[[7, 11, 25], "c"] = NA
    df.loc[[30], "b"] = NA
    return df


#: sdcMicro 5.8.1's r$individual[,"risk"] on `_na_frame` with weightVar="w"
R_RISK = [0.0131004366812227, 0.0174672489082969, 0.0126582278481013, 0.00713436385255648,
          0.0174672489082969, 0.0126582278481013, 0.0464677809284986, 0.00158838211935557,
          0.0163934426229508, 0.0141342756183746, 0.013215859030837, 0.00486749594375338,
          0.0108108108108108, 0.00801603206412826, 0.027444690708799, 0.0163934426229508,
          0.297063077382834, 0.0167597765363128, 0.0108459869848156, 0.00551724137931034,
          0.0141342756183746, 0.00826446280991736, 0.0108459869848156, 0.00801603206412826,
          0.0256461069890154, 0.00615006150061501, 0.036078340581826, 0.00826446280991736,
          0.00826446280991736, 0.0163934426229508, 0.0028328611898017, 0.0141342756183746,
          0.0174672489082969, 0.0131004366812227, 0.0528476154800977, 0.0114068441064639,
          0.0114068441064639, 0.0304385286781663, 0.00801603206412826, 0.0335860401390468]
R_FK = [3, 4, 4, 6, 4, 4, 2, 21, 3, 4, 3, 9, 4, 4, 2, 3, 1, 3, 5, 8, 4, 5, 5, 4, 2, 5, 2,
        5, 5, 3, 12, 4, 4, 3, 2, 3, 3, 2, 4, 2]


def _keep(df=None, **roles) -> sdceval.Dataset:
    df = _na_frame() if df is None else df
    roles = roles or {"qi": ["a", "b", "c"], "weight": "w"}
    return sdceval.as_dataset(df, missing="keep", **roles)


# -- the policy ----------------------------------------------------------------------------

def test_keep_is_a_policy_everywhere():
    """``keep`` is accepted by the schema, the CLI's --missing and as_dataset; refuse
    still refuses, drop still drops."""
    assert "keep" in MISSING_POLICIES and "keep" in MISSING_CHOICES
    df = _na_frame()
    with pytest.raises(SdcevalError, match="missing values"):
        sdceval.as_dataset(df, qi=["a", "b", "c"])
    assert sdceval.as_dataset(df, qi=["a", "b", "c"], missing="drop").n == 34
    ds = _keep(df)
    assert ds.n == 40 and ds.schema.missing == "keep"
    assert set(ds.missing_keys) == {"a", "b", "c"}
    assert any("kept 6 of 40 records" in m for m in ds.messages)
    # the caller's frame is untouched
    assert df["a"].isna().sum() == 4
    # a Dataset given again with missing=keep
    again = sdceval.as_dataset(sdceval.as_dataset(df.dropna(), qi=["a", "b"]),
                               missing="keep")
    assert again.schema.missing == "keep"


def test_keep_from_a_schema_file_and_the_cli(tmp_path, capsys):
    """``missing = "keep"`` in a schema file, and ``--missing keep`` on the command line."""
    from sdceval.cli import main
    from sdceval.core.loaders import open_dataset
    path = tmp_path / "na.csv"
    _na_frame().to_csv(path, index=False)
    schema = tmp_path / "s.toml"
    schema.write_text('qi = ["a", "b", "c"]\nweight = "w"\nmissing = "keep"\n')
    ds = open_dataset(str(path), schema_file=str(schema))
    assert ds.n == 40 and ds.hierarchy("a").missing_leaf is not None
    data = ["--data", str(path), "--qi", "a,b,c", "--weight", "w", "--missing", "keep"]
    rel = tmp_path / "rel.csv"
    assert main(["anonymize", *data, "--method", "local_suppression", "--param", "k=3",
                 "--out", str(rel), "-q"]) == 0
    capsys.readouterr()
    assert main(["evaluate", *data, "--release", str(rel), "--measures",
                 "individual_risk", "-q"]) == 0
    out = capsys.readouterr().out
    # the risk of the release in memory (0.7453 %): the file reads back the same
    mem = sdceval.evaluate(ds, sdceval.anonymize(ds, "local_suppression", k=3),
                           "individual_risk").value
    assert f"{100 * mem:.3g} %" in out


@pytest.mark.parametrize("roles, column", [
    ({"qi": ["a", "b", "c", "n"]}, "n"),                   # numeric QI
    ({"qi": ["a", "b"], "numeric": ["n"]}, "n"),           # numeric attribute
    ({"qi": ["a", "b"], "sensitive": "c"}, "c"),           # sensitive
])
def test_keep_refuses_other_roles(roles, column):
    """Under keep, a missing value outside the categorical QIs is refused in one line
    naming the column and the fix."""
    df = _na_frame()
    df["n"] = np.arange(40.0)
    df.loc[5, "n"] = NA
    with pytest.raises(SdcevalError) as err:
        sdceval.as_dataset(df, missing="keep", **roles)
    msg = str(err.value)
    assert repr(column) in msg and "--missing drop" in msg and "impute" in msg
    assert "\n" not in msg


def test_missing_weight_still_refused():
    df = _na_frame()
    df.loc[2, "w"] = NA
    with pytest.raises(SdcevalError, match="without a design weight"):
        _keep(df)


# -- the hierarchy ---------------------------------------------------------------------------

def test_missing_leaf_in_every_hierarchy():
    """A user-given hierarchy and one built from the data both get the missing-value
    leaf (the last code, labelled empty); it is a node of its own below the root, the
    root covers it; the other leaves keep their codes; export leaves it out."""
    df = _na_frame()
    given = Hierarchy([["x", "xy", "*"], ["y", "xy", "*"], ["z", "z", "*"]], name="a")
    ds = _keep(df, qi=["a", "b", "c"], hierarchies={"a": given})
    h = ds.hierarchy("a")
    assert given.missing_leaf is None                      # the user's object unchanged
    assert h.missing_leaf == 3 and h.leaves[3] == "" and h.n_leaves == 4
    assert list(h.leaves[:3]) == list(given.leaves)
    codes = ds.codes("a")
    assert (codes[df["a"].isna().to_numpy()] == 3).all()
    assert (codes[df["a"].notna().to_numpy()] < 3).all()
    assert h.generalize(np.array([3]), 1) == (3, 3)       # still missing at level 1
    assert h.generalize(np.array([3]), 2) == (0, 3)       # the root covers it
    built = ds.hierarchy("c")
    assert built.missing_leaf == built.n_leaves - 1 and built.builder is not None
    assert ds.hierarchy("b").missing_leaf is not None


def test_hierarchy_export_leaves_the_missing_leaf_out(tmp_path):
    h = Hierarchy([["x", "*"], ["y", "*"]], name="a").with_missing_leaf()
    h.to_csv(tmp_path / "a.csv")
    back = Hierarchy.from_csv(tmp_path / "a.csv")
    assert list(back.leaves) == ["x", "y"] and back.missing_leaf is None
    with pytest.raises(SdcevalError, match="numeric"):
        Hierarchy.intervals([1, 2, 3], [2]).with_missing_leaf()


# -- population risk: sdcMicro's numbers ----------------------------------------------------

def test_calcrisks_values_through_a_dataframe():
    """sdcMicro's test_calcRisks.R with missing values (global risk 0.4375, 1.75
    expected re-identifications, r = 0.5, 0.5, 0.25, 0.5) from a DataFrame with NaN
    keys loaded with missing="keep", on the untouched file."""
    cols = [[NA, 1, NA, NA], [2, NA, NA, 4], [4, 5, NA, 3], [NA, 2, NA, 2],
            [5, NA, NA, 2], [1, 2, NA, 2]]
    df = pd.DataFrame({f"k{j}": pd.Series([None if np.isnan(v) else f"v{int(v)}" for v in c],
                                          dtype=object)
                       for j, c in enumerate(cols)})
    ds = sdceval.as_dataset(df, qi=list(df.columns), missing="keep")
    m = sdceval.evaluate(ds, identity_release(ds), "individual_risk")
    assert m.value == 0.4375 and m.details["expected_reidentifications"] == 1.75
    assert m.per_record.tolist() == [0.5, 0.5, 0.25, 0.5]


def test_individual_risk_equals_real_sdcmicro():
    """The real sdcMicro 5.8.1 on `_na_frame` (module notes): per-record risks, global
    risk and expected re-identifications with weights; 1/f_k without."""
    ds = _keep()
    rel = identity_release(ds)
    keys = release_keys(ds, rel)
    assert (keys[_na_frame()[["a", "b", "c"]].isna().to_numpy()] == -1).all()
    m = sdceval.evaluate(ds, rel, "individual_risk")
    np.testing.assert_allclose(m.per_record, R_RISK, rtol=1e-12)
    assert m.value == pytest.approx(0.0226824602640962, rel=1e-12)
    assert m.details["expected_reidentifications"] == pytest.approx(0.907298410563848,
                                                                     rel=1e-12)
    plain = _keep(qi=["a", "b", "c"])
    m0 = sdceval.evaluate(plain, identity_release(plain), "individual_risk")
    np.testing.assert_allclose(m0.per_record, 1.0 / np.array(R_FK), rtol=1e-13)
    assert m0.value == pytest.approx(0.305843253968254, rel=1e-12)


# -- methods -------------------------------------------------------------------------------------

def test_local_suppression_counts_missing_as_suppressed():
    """As sdcMicro's localSuppression (k = 3; module notes): 8 new suppressions, all in
    c, on the records R names; the original missing values are neither suppressed again
    nor counted, and they stay published as missing (empty), not as '*'."""
    ds = _keep(qi=["a", "b", "c"])
    rel = sdceval.anonymize(ds, "local_suppression", k=3)
    assert rel.info["suppressions"] == {"a": 0, "b": 0, "c": 8}
    assert rel.info["total"] == 8
    assert rel.info["importance"] == {"a": 2, "b": 1, "c": 3}
    star = np.flatnonzero(rel.data["c"].to_numpy() == "*")
    assert star.tolist() == [6, 14, 16, 24, 26, 34, 37, 39]
    df = _na_frame()
    for q in "abc":
        h = ds.hierarchy(q)
        lo, hi = rel.cells[q]
        was = df[q].isna().to_numpy()
        assert (lo[was] == h.missing_leaf).all() and (hi[was] == h.missing_leaf).all()
        assert (rel.data[q].to_numpy()[was] == "").all()
    # every record is 3-anonymous counting missing as matching everything
    m = sdceval.evaluate(ds, rel, "individual_risk")
    assert m.details["max_risk"] <= 1 / 3 + 1e-12


def test_pram_leaves_missing_values_missing():
    """PRAM never changes a missing value nor draws one; the missing leaf is no
    category of the invariant matrix (its row and column: the identity)."""
    ds = _keep(qi=["a", "b", "c"])
    df = _na_frame()
    for seed in range(5):
        rel = sdceval.anonymize(ds, "pram", pd=0.2, alpha=1.0, seed=seed)
        for q in "abc":
            h = ds.hierarchy(q)
            ml = h.missing_leaf
            was = df[q].isna().to_numpy()
            new = rel.cells[q][0]
            assert (new[was] == ml).all() and (new[~was] != ml).all()
            mats = np.asarray(rel.info["pram"][q]["matrices"])
            assert (mats[:, ml, ml] == 1).all() and (mats[:, :ml, ml] == 0).all()
            np.testing.assert_allclose(mats.sum(axis=2), 1.0)
            # invariant on the observed categories' distribution
            p = np.bincount(ds.codes(q)[~was], minlength=h.n_leaves)[:ml]
            np.testing.assert_allclose(p @ mats[0, :ml, :ml], p, rtol=1e-9)
    # a data set without missing values draws as before (no change in the draws)
    full = sdceval.as_dataset(df.fillna({"a": "x", "b": "p", "c": "u"}), qi=["a", "b", "c"])
    same = sdceval.as_dataset(df.fillna({"a": "x", "b": "p", "c": "u"}), qi=["a", "b", "c"],
                              missing="keep")
    a = sdceval.anonymize(full, "pram", seed=3)
    b = sdceval.anonymize(same, "pram", seed=3)
    assert all((a.cells[q][0] == b.cells[q][0]).all() for q in "abc")


def test_recode_and_generalization_keep_missing_missing():
    """Recoding by level publishes a missing value as missing below the root, and the
    root covers it; full-domain generalization likewise."""
    df = _na_frame()
    given = Hierarchy([["x", "xy", "*"], ["y", "xy", "*"], ["z", "z", "*"]], name="a")
    ds = _keep(df, qi=["a", "b", "c"], hierarchies={"a": given})
    was = df["a"].isna().to_numpy()
    rel = sdceval.anonymize(ds, "recode", levels="a=1")
    lo, hi = rel.cells["a"]
    assert (lo[was] == 3).all() and (hi[was] == 3).all()
    assert set(rel.data["a"][~was]) == {"xy", "z"} and (rel.data["a"][was] == "").all()
    top = sdceval.anonymize(ds, "recode", levels="a=2")
    assert (top.cells["a"][0] == 0).all() and (top.cells["a"][1] == 3).all()


def _with_missing_contract():
    """The contract data set with missing values in two categorical QIs."""
    from contracts import EDUCATION, REGION, contract_data
    frame = contract_data().frame.copy()
    rng = np.random.default_rng(1)
    frame["region"] = frame["region"].astype(object)
    frame["education"] = frame["education"].astype(object)
    frame.loc[rng.choice(len(frame), 20, replace=False), "region"] = NA
    frame.loc[rng.choice(len(frame), 15, replace=False), "education"] = NA
    schema = sdceval.Schema.from_roles(
        frame, qi=["age", "region", "education", "sex"], sensitive="disease",
        numeric=["x", "y", "z"], label="income", weight="w", household="hid",
        hierarchies={"region": REGION, "education": EDUCATION}, missing="keep")
    return sdceval.Dataset(frame, schema, name="contract-na")


@pytest.mark.parametrize("name", sorted(METHODS))
def test_every_method_runs_with_missing_keys(name):
    """Every registered method runs on a data set with missing keys; every cell of a
    record whose value is missing holds the missing leaf (its own value), and the
    population and record-linkage risks run on the release."""
    ds = _with_missing_contract()
    # reproducible from the seed (dp_histogram: seeded noise; OpenDP's own draws 9e6
    # cells for minutes)
    rel = sdceval.anonymize(ds, name, seed=0, **METHODS[name].experiment_params)
    if rel.cells is not None:
        for q in ("region", "education"):
            if q not in rel.cells:
                continue
            h = ds.hierarchy(q)
            lo, hi = rel.cells[q]
            was = ds.frame[q].isna().to_numpy()
            if "perturbed_keys" in rel.info and q in rel.info["perturbed_keys"]:
                assert (lo[was] == h.missing_leaf).all()
            else:
                assert ((lo[was] <= h.missing_leaf) & (h.missing_leaf <= hi[was])).all()
    if rel.kind in ("generalized", "bucketized", "composite"):
        m = sdceval.evaluate(ds, rel, "individual_risk")
        assert np.isfinite(m.value)
    if rel.kind in ("generalized", "bucketized"):
        for measure in ("reidentification", "sample_uniques"):
            assert np.isfinite(sdceval.evaluate(ds, rel, measure).value)


def test_record_linkage_reads_missing_as_a_category():
    """sample_uniques and reidentification read the missing leaf as a category of its
    own (what the intruder sees published), not as a wildcard: a record alone with a
    missing a among records of the same b is unique."""
    df = pd.DataFrame({"a": ["x", "x", "y", "y", None, "y"],
                       "b": ["p", "p", "p", "p", "p", "q"]}, dtype=object)
    ds = sdceval.as_dataset(df, qi=["a", "b"], missing="keep")
    rel = identity_release(ds)
    su = sdceval.evaluate(ds, rel, "sample_uniques")
    assert su.per_record.tolist()[4] == 1 and su.per_record.tolist()[:4] == [0, 0, 0, 0]
    re_ = sdceval.evaluate(ds, rel, "reidentification")
    assert re_.per_record[4] == 1.0 and re_.per_record[0] == 0.5
    # the population risk reads it as sdcMicro's NA: it matches the four (., p)
    pr = sdceval.evaluate(ds, rel, "individual_risk")
    assert pr.per_record[4] == pytest.approx(1 / 5)


# -- a release written and read back ------------------------------------------------------

@pytest.mark.parametrize("method, params", [("local_suppression", {"k": 3}),
                                             ("mondrian", {"k": 3}),
                                             ("generalization", {"k": 3}),
                                             ("recode", {"level": 1}),
                                             ("pram", {"seed": 1})])
def test_release_file_gives_the_same_risks(tmp_path, method, params):
    """A release with missing keys written to CSV and read back gives the cells, and so
    the population risks, of the release in memory: an empty cell is the missing leaf
    where the original was missing (and a suppressed cell where it was not)."""
    ds = _keep()
    rel = sdceval.anonymize(ds, method, **params)
    path, _ = write_release(rel, tmp_path / "rel.csv", dataset=ds, seed=4)
    back = read_release(ds, path)
    for q in ds.schema.qis:
        np.testing.assert_array_equal(back.cells[q][0], rel.cells[q][0])
        np.testing.assert_array_equal(back.cells[q][1], rel.cells[q][1])
    for measure in ("individual_risk", "reidentification"):
        a = sdceval.evaluate(ds, rel, measure)
        b = sdceval.evaluate(ds, back, measure)
        np.testing.assert_allclose(b.per_record, a.per_record, rtol=1e-13)


def test_empty_cell_where_the_original_had_a_value_is_suppressed():
    """A release given as a DataFrame (another tool's, sdcMicro writing NA for a
    suppressed value): an empty cell is the missing leaf where the original was
    missing, the whole domain where it was not; without keep too."""
    ds = _keep(qi=["a", "b", "c"])
    df = _na_frame()
    frame = df[["a", "b", "c"]].copy()
    frame.loc[0, "a"] = NA           # suppressed by the other tool
    frame.loc[1, "b"] = ""           # blank text reads as empty
    rel = release_of(ds, frame, key=False)
    h = ds.hierarchy("a")
    assert tuple(int(v[0]) for v in rel.cells["a"]) == (0, h.n_leaves - 1)
    assert (rel.cells["a"][0][3], rel.cells["a"][1][3]) == (h.missing_leaf, h.missing_leaf)
    hb = ds.hierarchy("b")
    assert (rel.cells["b"][0][1], rel.cells["b"][1][1]) == (0, hb.n_leaves - 1)
    plain = sdceval.as_dataset(df.dropna(), qi=["a", "b", "c"])
    f2 = df.dropna()[["a", "b", "c"]].copy()
    f2.iloc[0, 0] = NA
    back = release_of(plain, f2, key=False)
    assert (back.cells["a"][0][0], back.cells["a"][1][0]) == (0, plain.hierarchy("a").n_leaves - 1)


def test_refusal_names_keep_when_a_key_has_missing_values():
    """The default policy refuses missing key values and names all three ways out,
    --missing keep among them (a user who has not read the docs finds it); a missing
    value in a column that is no key does not suggest keep."""
    df = _na_frame()
    with pytest.raises(SdcevalError) as err:
        sdceval.as_dataset(df, qi=["a", "b"])
    msg = str(err.value)
    assert "--missing keep" in msg and "--missing drop" in msg and "\n" not in msg
    df = _na_frame().dropna()
    df = df.assign(n=np.arange(len(df), dtype=float))
    df.loc[df.index[0], "n"] = np.nan
    with pytest.raises(SdcevalError) as err:
        sdceval.as_dataset(df, qi=["a", "b"], numeric=["n"])
    assert "--missing keep" not in str(err.value)
