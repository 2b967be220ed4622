"""Issue 22 ("Hostile and messy inputs, round 3"): releases written and read back by
``sdceval anonymize`` / ``sdceval evaluate`` (items 1, 10a and 15)."""
import json

import numpy as np
import pandas as pd
import pytest

from conftest import cli_error, cli_run
from sdceval.core.errors import SdcevalError


def _small_data(tmp_path, bucket=False):
    """A small data set with two QIs and a sensitive column (and, with ``bucket``, a
    column of the user's own named 'bucket')."""
    rng = np.random.default_rng(1)
    n = 400
    frame = pd.DataFrame({"age": rng.integers(20, 70, n), "sex": rng.choice(["F", "M"], n),
                          "disease": rng.choice(["flu", "cold", "hiv", "cancer"], n)})
    if bucket:
        frame["bucket"] = np.repeat([0, 1], n // 2)
    path = tmp_path / "d.csv"
    frame.to_csv(path, index=False)
    return ["--data", str(path), "--qi", "age,sex", "--sensitive", "disease"]


def _generalized_release(tmp_path, capsys, name="g.csv", extra=()):
    """A generalized release of `_small_data` (mondrian, k=5) and the data options."""
    roles = _small_data(tmp_path)
    out = tmp_path / name
    code, _, err = cli_run(["anonymize", *roles, "--method", "mondrian", "--param", "k=5",
                            "--out", str(out), *extra], capsys)
    assert code == 0, err
    return out, roles


# -- item 15: one inapplicable measure among several ---------------------------------------
def test_evaluate_reports_the_applicable_measures_and_notes_the_others(tmp_path, capsys):
    rel, roles = _generalized_release(tmp_path, capsys)
    code, out, err = cli_run(["evaluate", *roles, "--release", str(rel),
                              "--measures", "k_anonymity,emd,discernibility,propensity",
                              "--out", str(tmp_path / "m.json")], capsys)
    assert code == 0, err
    assert "k_anonymity" in out and "discernibility" in out
    assert "emd" not in out and "propensity" not in out
    assert "Traceback" not in err
    for label in ("emd", "propensity"):  # a note per measure not computed, with its reason
        lines = [ln for ln in err.splitlines() if f"'{label}'" in ln]
        assert len(lines) == 1 and "does not apply to a generalized release" in lines[0], err
    payload = json.loads((tmp_path / "m.json").read_text())
    assert [m["label"] for m in payload["measurements"]] == ["k_anonymity", "discernibility"]


def test_evaluate_checks_every_measure_before_computing_any(tmp_path, capsys, monkeypatch):
    from sdceval.catalog import get_measure
    rel, roles = _generalized_release(tmp_path, capsys)
    spec = type(get_measure("k_anonymity"))
    calls = []
    original = spec.evaluate

    def spy(self, *a, **kw):
        calls.append(self.name)
        return original(self, *a, **kw)
    monkeypatch.setattr(spec, "evaluate", spy)
    checked = []
    check = spec.check_release

    def spy_check(self, *a, **kw):
        checked.append((self.name, list(calls)))
        return check(self, *a, **kw)
    monkeypatch.setattr(spec, "check_release", spy_check)
    code, _, err = cli_run(["evaluate", *roles, "--release", str(rel),
                            "--measures", "k_anonymity,emd"], capsys)
    assert code == 0, err
    # both checked before the first measure was computed
    first_two = checked[:2]
    assert [n for n, _ in first_two] == ["k_anonymity", "emd"]
    assert all(done == [] for _, done in first_two)
    assert calls == ["k_anonymity"]


def test_evaluate_with_no_applicable_measure_fails_with_the_reasons(tmp_path, capsys):
    rel, roles = _generalized_release(tmp_path, capsys)
    msg = cli_error(["evaluate", *roles, "--release", str(rel),
                     "--measures", "emd,propensity"], capsys)
    assert "'emd'" in msg and "'propensity'" in msg
    assert "does not apply to a generalized release" in msg


# -- item 10a: anonymize --out x.parquet ------------------------------------------------------
def test_anonymize_writes_parquet_and_evaluate_reads_it_with_its_key(tmp_path, capsys):
    pytest.importorskip("pyarrow")
    out = tmp_path / "x.parquet"
    code, _, err = cli_run(["anonymize", "--data", "census", "--method", "mdav",
                            "--param", "k=5", "--out", str(out)], capsys)
    assert code == 0, err
    assert out.read_bytes()[:4] == b"PAR1"
    key = tmp_path / "x.parquet.private-key.csv"
    assert key.exists()
    assert pd.read_parquet(out).shape == (1080, 13)
    code, out_text, err = cli_run(["evaluate", "--data", "census", "--release", str(out),
                                   "--measures", "linkage_risk,emd"], capsys)
    assert code == 0, err
    assert "linkage_risk" in out_text and "emd" in out_text
    # the same release written as CSV measures the same
    csv = tmp_path / "x.csv"
    code, _, err = cli_run(["anonymize", "--data", "census", "--method", "mdav",
                            "--param", "k=5", "--out", str(csv)], capsys)
    assert code == 0, err
    code, out_csv, err = cli_run(["evaluate", "--data", "census", "--release", str(csv),
                                  "--measures", "linkage_risk,emd"], capsys)
    assert code == 0, err
    assert out_csv == out_text


def test_parquet_release_of_generalized_labels_and_keep_order(tmp_path, capsys):
    pytest.importorskip("pyarrow")
    for extra in ([], ["--keep-order"]):
        out, roles = _generalized_release(tmp_path, capsys, f"g{len(extra)}.parquet", extra)
        assert out.read_bytes()[:4] == b"PAR1"
        args = ["evaluate", *roles, "--release", str(out),
                "--measures", "k_anonymity"] + (["--no-key"] if extra else [])
        code, text, err = cli_run(args, capsys)
        assert code == 0, err
        row = next(line for line in text.splitlines()
                   if line.rstrip().endswith("k_anonymity"))
        assert float(row.split()[2]) >= 5  # "k-anonymity achieved <k> ..."


def test_parquet_without_pyarrow_names_the_extra(tmp_path, capsys, monkeypatch):
    import sdceval.core.release_order as ro
    monkeypatch.setattr(ro, "_import_pyarrow", lambda: (_ for _ in ()).throw(ImportError()))
    out = tmp_path / "x.parquet"
    msg = cli_error(["anonymize", "--data", "census", "--method", "mdav", "--param", "k=5",
                     "--out", str(out)], capsys)
    assert 'pip install "sdceval[parquet]"' in msg
    assert not out.exists() and not (tmp_path / "x.parquet.private-key.csv").exists()


# -- item 1: a user column named 'bucket' ---------------------------------------------------
@pytest.mark.parametrize("method", ["mondrian", "generalization"])
def test_a_user_column_named_bucket_is_not_read_as_buckets(tmp_path, capsys, method):
    roles = _small_data(tmp_path, bucket=True)
    out = tmp_path / "r.csv"
    code, _, err = cli_run(["anonymize", *roles, "--keep", "bucket", "--method", method,
                            "--param", "k=2", "--out", str(out)], capsys)
    assert code == 0, err
    published = pd.read_csv(out)
    assert "bucket" in published.columns
    # the true k of the file: the smallest group of equal QI cells
    true_k = int(published.groupby(["age", "sex"]).size().min())
    assert true_k < 200
    code, text, err = cli_run(["evaluate", *roles, "--release", str(out),
                               "--measures", "k_anonymity"], capsys)
    assert code == 0, err
    row = next(line for line in text.splitlines() if line.rstrip().endswith("k_anonymity"))
    assert row.split()[:4] == ["k-anonymity", "achieved", str(true_k), "higher"], text


def test_read_release_keeps_a_user_bucket_column_as_data(tmp_path):
    from sdceval import Dataset, Schema
    from sdceval.core.release_io import read_release
    from sdceval.core.release_order import write_release
    from sdceval.catalog import get_method
    frame = pd.read_csv(_small_data(tmp_path, bucket=True)[1])
    schema = Schema.from_roles(frame, qi=["age", "sex"], sensitive="disease",
                               passthrough=["bucket"])
    ds = Dataset(frame, schema, name="d")
    rel = get_method("mondrian").apply(ds, {"models": ["k=2"]}, seed=0)
    path, _ = write_release(rel, tmp_path / "r.csv", dataset=ds, seed=3)
    back = read_release(ds, path)
    assert back.kind == "generalized"
    assert back.class_sizes().min() == rel.class_sizes().min()


# -- item 2: every published cell must fit its record ------------------------------------
def _edit(path, row, column, value):
    frame = pd.read_csv(path, dtype=str, keep_default_na=False)
    frame.loc[row, column] = value
    frame.to_csv(path, index=False)


def test_an_edited_label_in_a_release_in_record_order_is_refused(tmp_path, capsys):
    rel, roles = _generalized_release(tmp_path, capsys, extra=["--keep-order"])
    data = pd.read_csv(tmp_path / "d.csv")
    # one row's age label replaced by one that does not contain its record's age
    age = int(data.loc[7, "age"])
    _edit(rel, 7, "age", "[20-21]" if age > 30 else "[60-69]")
    for extra in ([], ["--no-key"]):
        msg = cli_error(["evaluate", *roles, "--release", str(rel), "--measures",
                         "k_anonymity", *extra], capsys)
        assert "row 8 of the file (line 9), column 'age'" in msg, msg
        assert f"does not contain the record's value {age}" in msg


def test_a_sensitive_value_moved_to_another_record_is_refused(tmp_path, capsys):
    rel, roles = _generalized_release(tmp_path, capsys, extra=["--keep-order"])
    frame = pd.read_csv(rel, dtype=str, keep_default_na=False)
    i = int(np.flatnonzero(frame["disease"] != frame["disease"].iloc[0])[0])
    _edit(rel, i, "disease", frame["disease"].iloc[0])
    msg = cli_error(["evaluate", *roles, "--release", str(rel), "--measures",
                     "l_diversity", "--no-key"], capsys)
    assert f"row {i + 1} of the file" in msg and "column 'disease'" in msg


def test_a_keyed_release_reports_the_bad_row_of_the_file(tmp_path, capsys):
    """The key ties the file's bytes to the release; read through its key, a cell that
    does not fit is named by the file's row (not the record's)."""
    from sdceval.core.loaders import open_dataset
    from sdceval.core.release_io import release_from_frame
    rel, roles = _generalized_release(tmp_path, capsys)
    ds = open_dataset(str(tmp_path / "d.csv"), qi=["age", "sex"], sensitive="disease")
    frame = pd.read_csv(rel, dtype=str, keep_default_na=False)
    perm = np.arange(len(frame))[::-1]  # read as if row r protected record n-1-r
    from sdceval.core.release_order import to_record_order
    with pytest.raises(SdcevalError, match=r"row \d+ of the file \(line \d+\), column"):
        release_from_frame(ds, to_record_order(frame, perm), name=str(rel),
                           file_row=np.argsort(perm, kind="stable"))


def test_another_data_sets_file_of_the_same_shape_is_refused(tmp_path, capsys):
    rel, roles = _generalized_release(tmp_path, capsys, extra=["--keep-order"])
    other = pd.read_csv(tmp_path / "d.csv")
    other["age"] = np.random.default_rng(9).integers(20, 70, len(other))
    other.to_csv(tmp_path / "d.csv", index=False)
    msg = cli_error(["evaluate", *roles, "--release", str(rel), "--measures",
                     "k_anonymity", "--no-key"], capsys)
    assert "does not fit data set" in msg and "column 'age'" in msg


def test_bucketized_sensitive_values_from_another_bucket_are_refused(tmp_path, capsys):
    roles = _small_data(tmp_path)
    rel = tmp_path / "b.csv"
    code, _, err = cli_run(["anonymize", *roles, "--method", "bucketization", "--param",
                            "k=5", "--keep-order", "--out", str(rel)], capsys)
    assert code == 0, err
    frame = pd.read_csv(rel, dtype=str, keep_default_na=False)
    # within a bucket any order is the release's; a value from outside the bucket is not
    b0 = frame["bucket"].iloc[0]
    inside = frame.index[frame["bucket"] == b0]
    outside = frame.index[(frame["bucket"] != b0)
                          & ~frame["disease"].isin(frame.loc[inside, "disease"])]
    if not len(outside):
        pytest.skip("every sensitive value occurs in the first bucket")
    _edit(rel, inside[0], "disease", frame.loc[outside[0], "disease"])
    msg = cli_error(["evaluate", *roles, "--release", str(rel), "--measures",
                     "l_diversity", "--no-key"], capsys)
    assert "publishes sensitive values that are not those of its records" in msg
    # a permutation inside the bucket is fine
    frame.to_csv(rel, index=False)
    rows = list(inside)
    frame.loc[rows, "disease"] = frame.loc[rows[::-1], "disease"].to_numpy()
    frame.to_csv(rel, index=False)
    code, _, err = cli_run(["evaluate", *roles, "--release", str(rel), "--measures",
                            "l_diversity", "--no-key"], capsys)
    assert code == 0, err
