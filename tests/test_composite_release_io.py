"""Whole-file (composite) releases written as `sdceval anonymize` writes releases read
back as composite releases (issue 28 item 1): QI labels beside numeric attributes, numeric
attributes published as interval labels, a bucket column beside numeric attributes."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import sdceval
from sdceval.core.errors import SdcevalError
from sdceval.core.frames import as_dataset
from sdceval.core.release import Release
from sdceval.core.release_io import read_release, release_of
from sdceval.core.release_order import write_release

QIS = ["zip", "age", "sex"]


@pytest.fixture(scope="module")
def ds():
    rng = np.random.default_rng(21)
    n = 240
    age = rng.integers(20, 70, n)
    df = pd.DataFrame({"zip": rng.choice(["02101", "02102", "02201", "02202"], n),
                       "age": age, "sex": rng.choice(["F", "M"], n),
                       "income": (age * 800 + rng.normal(0, 4000, n)).round(2),
                       "hours": rng.integers(10, 60, n),
                       "diagnosis": rng.choice(["flu", "asthma", "copd"], n),
                       "region": rng.choice(["N", "S"], n)})
    return as_dataset(df, qi=QIS, numeric=["income", "hours"], sensitive="diagnosis",
                      passthrough=["region"])


def exact(ds, c):
    return ds.codes(c), ds.codes(c)


def level(ds, c, j):
    return ds.hierarchy(c).generalize(ds.codes(c), j)


def published(ds, cells, **numbers):
    """The table a strategy publishes: the labels of ``cells`` (`Hierarchy.labels_of`,
    as the generalizing methods write them) and the given numeric columns."""
    data = pd.DataFrame({c: ds.hierarchy(c).labels_of(lo, hi) for c, (lo, hi) in
                         cells.items()})
    for c, v in numbers.items():
        data[c] = v
    return data


def masked_income(ds):
    noise = np.random.default_rng(3).normal(0, 500, ds.n).round(2)
    return ds.frame["income"].to_numpy() + noise


def generalized_composite(ds):
    """QIs generalized (zip suppressed on a few records), hours generalized into
    intervals, income masked, the sensitive column unchanged."""
    zlo, zhi = exact(ds, "zip")
    few = np.arange(ds.n) < 6
    cells = {"zip": (np.where(few, 0, zlo), np.where(few, 3, zhi)),
             "age": level(ds, "age", 1), "sex": exact(ds, "sex"),
             "hours": level(ds, "hours", 1)}
    return Release.composite(ds, published(ds, cells, income=masked_income(ds)),
                             cells=cells, method="strategy")


def bucket_composite(ds):
    """QIs as they are, the sensitive values permuted within buckets of 8, income
    masked, hours as it is."""
    rng = np.random.default_rng(8)
    classes = rng.permutation(np.arange(ds.n) // 8)
    sens = np.array(ds.codes("diagnosis"))
    for b in np.unique(classes):
        idx = np.flatnonzero(classes == b)
        sens[idx] = rng.permutation(sens[idx])
    leaves = ds.hierarchy("diagnosis").leaves
    data = ds.frame[QIS].assign(diagnosis=leaves[sens], income=masked_income(ds),
                                hours=ds.frame["hours"], bucket=classes)
    return Release.composite(ds, data, cells={q: exact(ds, q) for q in QIS},
                             classes=classes, sensitive_codes=sens, buckets=True,
                             method="strategy")


def same_partition(a, b):
    """Two class-id arrays group the records alike."""
    pairs = pd.DataFrame({"a": a, "b": b}).drop_duplicates()
    return pairs["a"].is_unique and pairs["b"].is_unique


def assert_same(ds, rel, back, numbers=("income",)):
    assert back.kind == "composite"
    assert back.buckets == rel.buckets
    assert set(back.cells) == set(rel.cells)
    for c in rel.cells:
        np.testing.assert_array_equal(back.cells[c][0], rel.cells[c][0], err_msg=c)
        np.testing.assert_array_equal(back.cells[c][1], rel.cells[c][1], err_msg=c)
    np.testing.assert_array_equal(back.sensitive(ds), rel.sensitive(ds))
    for c in numbers:
        np.testing.assert_array_equal(back.data[c].to_numpy(np.float64),
                                      rel.data[c].to_numpy(np.float64), err_msg=c)
    assert back.classes is not None


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_generalized_composite_round_trip(ds, tmp_path, suffix):
    if suffix == ".parquet":
        pytest.importorskip("pyarrow")
    rel = generalized_composite(ds)
    path = tmp_path / f"rel{suffix}"
    write_release(rel, path, dataset=ds, seed=1)    # rows shuffled, key beside
    back = read_release(ds, path)
    assert_same(ds, rel, back)
    # the classes are the distinct combinations of the published cells
    combos = pd.factorize(pd.Series(list(zip(*(rel.cells[c][0] for c in rel.cells),
                                             *(rel.cells[c][1] for c in rel.cells)))))[0]
    assert same_partition(back.classes, combos)
    assert not back.suppressed.any()


def test_bucket_composite_round_trip(ds, tmp_path):
    rel = bucket_composite(ds)
    path = tmp_path / "rel.csv"
    write_release(rel, path, dataset=ds, seed=2)
    back = read_release(ds, path)
    assert_same(ds, rel, back, numbers=("income", "hours"))
    assert back.sensitive_in_buckets
    assert same_partition(back.classes, rel.classes)


def test_numeric_intervals_beside_exact_qis_are_composite(ds, tmp_path):
    """QIs as they are, but a numeric attribute published as intervals: not a
    perturbative table (whose numbers measures would read), a composite release."""
    cells = {q: exact(ds, q) for q in QIS} | {"hours": level(ds, "hours", 1)}
    rel = Release.composite(ds, published(ds, cells, income=masked_income(ds)),
                            cells=cells, method="strategy")
    path = tmp_path / "rel.csv"
    write_release(rel, path, dataset=ds, seed=3)
    assert_same(ds, rel, read_release(ds, path))


def test_dataframe_reads_as_composite(ds):
    rel = generalized_composite(ds)
    assert_same(ds, rel, release_of(ds, rel.data, key=False))


def test_measures_agree_after_the_round_trip(ds, tmp_path):
    """`sdceval.evaluate` of the file (what `sdceval evaluate --release` reads) equals
    the in-memory release's value; read as a generalized release ignoring the numbers,
    it would not."""
    rel = generalized_composite(ds)
    path = tmp_path / "rel.csv"
    write_release(rel, path, dataset=ds, seed=4)
    for measure in ("query_error", "ml_utility"):
        a = sdceval.evaluate(ds, rel, measure).value
        b = sdceval.evaluate(ds, str(path), measure).value
        assert b == pytest.approx(a, rel=1e-9, abs=1e-12), measure


def test_perturbative_with_qis_passed_through_stays_external(ds):
    data = ds.frame[QIS].assign(income=masked_income(ds), hours=ds.frame["hours"] + 1)
    assert release_of(ds, data, key=False).kind == "external"


def test_interval_label_outside_its_record_is_refused(ds, tmp_path):
    rel = generalized_composite(ds)
    data = rel.data.copy()
    value = int(ds.frame["hours"].iloc[7])
    data.loc[7, "hours"] = "[10-14]" if value >= 15 else "[50-54]"
    with pytest.raises(SdcevalError, match=r"column 'hours'.*does not contain"):
        release_of(ds, data, key=False)
    path = tmp_path / "rel.csv"
    data.to_csv(path, index=False)
    with pytest.raises(SdcevalError, match=r"row 8 of the file.*column 'hours'.*does not "
                                           r"contain"):
        read_release(ds, path, key=False)


def test_unknown_interval_label_is_named(ds):
    data = generalized_composite(ds).data.copy()
    data.loc[0, "hours"] = "[somewhere]"
    with pytest.raises(SdcevalError, match=r"'hours'.*\[somewhere\]"):
        release_of(ds, data, key=False)


def test_shuffled_composite_without_its_key_is_refused(ds, tmp_path):
    """The interval cells are evidence of the order as the QI cells are."""
    rel = generalized_composite(ds)
    path = tmp_path / "rel.csv"
    _, key = write_release(rel, path, dataset=ds, seed=5)
    key.unlink()
    with pytest.raises(SdcevalError, match="not in record order"):
        read_release(ds, path)


def test_cli_evaluate_reads_a_composite_release(ds, tmp_path):
    """`sdceval evaluate --release` of the file gives the in-memory release's value."""
    import contextlib
    import io
    import json

    from sdceval.cli import main
    ds.frame.to_csv(tmp_path / "data.csv", index=False)
    (tmp_path / "schema.toml").write_text(
        'qi = ["zip", "age", "sex"]\nnumeric = ["income", "hours"]\n'
        'sensitive = "diagnosis"\npassthrough = ["region"]\n')
    rel = generalized_composite(ds)
    write_release(rel, tmp_path / "rel.csv", dataset=ds, seed=6)
    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        code = main(["-q", "evaluate", "--data", str(tmp_path / "data.csv"),
                     "--schema", str(tmp_path / "schema.toml"),
                     "--release", str(tmp_path / "rel.csv"),
                     "--measures", "query_error", "--out", str(tmp_path / "m.json")])
    assert code == 0, err.getvalue()
    got = json.loads((tmp_path / "m.json").read_text())["measurements"][0]["value"]
    assert got == pytest.approx(sdceval.evaluate(ds, rel, "query_error").value, rel=1e-9)


def test_numbers_written_as_text_read_as_numbers(ds, tmp_path):
    """A DataFrame (or Parquet file) holding a numeric attribute as text numbers — the
    labels of exact cells — reads as the CSV file of the same table does: numbers."""
    rel = generalized_composite(ds)
    data = rel.data.assign(income=rel.data["income"].map(repr))
    back = release_of(ds, data, key=False)
    assert back.kind == "composite" and "income" not in back.cells
    np.testing.assert_array_equal(back.numeric_matrix(["income"])[:, 0],
                                  rel.data["income"].to_numpy(np.float64))
    assert data["income"].map(type).eq(str).all()  # the caller's frame unchanged
    path = tmp_path / "rel.csv"
    data.to_csv(path, index=False)
    from_csv = read_release(ds, path, key=False)
    assert sdceval.evaluate(ds, back, "query_error").value == \
        sdceval.evaluate(ds, from_csv, "query_error").value


def test_read_back_treatment_is_the_release_s(ds, tmp_path):
    from sdceval.core.treatment import column_treatment
    for rel in (generalized_composite(ds), bucket_composite(ds)):
        path = tmp_path / "rel.csv"
        write_release(rel, path, dataset=ds, seed=7)
        assert column_treatment(ds, read_release(ds, path)) == column_treatment(ds, rel)
    t = column_treatment(ds, generalized_composite(ds))
    assert t["hours"] == "generalized" and t["income"] == "masked"
