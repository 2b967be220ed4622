"""Issue 27 ("Hostile inputs, round 4"): releases given to ``evaluate`` as DataFrames
(item 1), ``evaluate --no-key`` beside a key (item 2), key names across formats
(item 3), Mondrian labels that contain their records (item 4) and damaged key
positions (item 9)."""
import hashlib
import re

import numpy as np
import pandas as pd
import pytest

import sdceval
from conftest import cli_error, cli_run
from sdceval.core.errors import SdcevalError
from sdceval.core.release_io import read_release
from sdceval.core.release_order import key_path_for, legacy_key_path_for, write_release


@pytest.fixture(scope="module")
def census():
    return sdceval.load_dataset("census")


@pytest.fixture(scope="module")
def noise(census, tmp_path_factory):
    """A noise release of census in memory (record order) and as a shuffled file with
    its key, the file read back with ``pd.read_csv``."""
    folder = tmp_path_factory.mktemp("noise")
    rel = sdceval.anonymize(census, "noise", gamma=0.1, seed=1)
    path, key = write_release(rel, folder / "n.csv", dataset=census, seed=7)
    return rel, path, key, pd.read_csv(path)


@pytest.fixture(scope="module")
def small():
    """400 records with two QIs and a sensitive attribute (Mondrian releases)."""
    rng = np.random.default_rng(11)
    n = 400
    frame = pd.DataFrame({"age": rng.integers(20, 80, n), "sex": rng.choice(["F", "M"], n),
                          "diag": rng.choice(list("abcde"), n)})
    return sdceval.as_dataset(frame, qi=["age", "sex"], sensitive="diag", name="small")


@pytest.fixture(scope="module")
def mondrian(small, tmp_path_factory):
    folder = tmp_path_factory.mktemp("mondrian")
    rel = sdceval.anonymize(small, "mondrian", k=5)
    path, key = write_release(rel, folder / "m.csv", dataset=small, seed=3)
    return rel, path, key, pd.read_csv(path)


def reid(ds, release, **kw):
    return sdceval.evaluate(ds, release, "reidentification", **kw).value


# -- item 1: a DataFrame release gets the checks of a file -----------------------------------
def test_shuffled_dataframe_release_is_refused_and_says_how_to_pass_the_key(census, noise):
    rel, _, _, frame = noise
    assert reid(census, rel) > 0.2  # what the release really discloses
    with pytest.raises(SdcevalError, match=r"not in record order.*key="):
        reid(census, frame)
    # the caller's DataFrame as given (no role keywords): refused the same way
    with pytest.raises(SdcevalError, match="key="):
        sdceval.evaluate(census.frame, frame, "reidentification",
                         numeric=list(census.schema.numeric))


def test_shuffled_generalized_dataframe_release_is_refused(small, mondrian):
    rel, _, _, frame = mondrian
    assert reid(small, rel) > 0
    with pytest.raises(SdcevalError, match="key="):
        reid(small, frame)


@pytest.mark.parametrize("how", ["path", "frame", "column", "array"])
def test_dataframe_release_with_its_key_measures_the_records_it_protects(census, noise, how):
    rel, _, key, frame = noise
    table = pd.read_csv(key, comment="#")
    given = {"path": key, "frame": table, "column": table["record"],
             "array": table["record"].to_numpy()}[how]
    assert reid(census, frame, key=given) == pytest.approx(reid(census, rel), abs=1e-12)


def test_generalized_dataframe_release_with_its_key(small, mondrian):
    rel, _, key, frame = mondrian
    assert reid(small, frame, key=key) == pytest.approx(reid(small, rel), abs=1e-12)
    k = sdceval.evaluate(small, frame, "k_anonymity", key=key)
    assert k.value == sdceval.evaluate(small, rel, "k_anonymity").value


def test_release_file_path_is_read_with_the_key_beside_it(census, noise):
    rel, path, _, _ = noise
    assert reid(census, path) == pytest.approx(reid(census, rel), abs=1e-12)
    assert reid(census, str(path)) == pytest.approx(reid(census, rel), abs=1e-12)


def test_dataframe_release_in_record_order_needs_no_key(census, small, noise, mondrian):
    rel = noise[0]
    assert reid(census, rel.data.copy()) == pytest.approx(reid(census, rel), abs=1e-12)
    g = mondrian[0]
    assert reid(small, g.data.copy()) == pytest.approx(reid(small, g), abs=1e-12)


def test_a_key_file_tied_to_the_dataframe_needs_no_order_evidence(census, tmp_path):
    """Rows that cannot be told from rows at random (rank swapping over the whole
    range): a DataFrame that is its file read back unchanged is tied to the key by the
    file's sha256, as the file is; the key's record column alone is not, and is
    refused, asking for the file."""
    rel = sdceval.anonymize(census, "rank_swap", p=1.0, seed=2)
    path, key = write_release(rel, tmp_path / "r.csv", dataset=census, seed=5)
    frame = pd.read_csv(path)
    assert reid(census, frame, key=key) == pytest.approx(reid(census, rel), abs=1e-12)
    with pytest.raises(SdcevalError, match="release file's path"):
        reid(census, frame, key=pd.read_csv(key, comment="#")["record"])


def test_no_measure_parameter_is_named_like_evaluates_key():
    from sdceval.catalog import MEASURES
    assert not [m.name for m in MEASURES.values() if any(p.name == "key" for p in m.params)]


def test_dataframe_release_with_a_wrong_key_is_refused(census, noise, tmp_path):
    rel, _, _, frame = noise
    _, other = write_release(rel, tmp_path / "other.csv", dataset=census, seed=99)
    with pytest.raises(SdcevalError, match="not in record order"):
        reid(census, frame, key=other)
    with pytest.raises(SdcevalError, match="row 1: record 0 appears twice"):
        reid(census, frame, key=np.zeros(census.n, dtype=int))


def test_key_with_a_release_object_is_refused(census, noise):
    with pytest.raises(SdcevalError, match="key="):
        reid(census, noise[0], key=noise[2])


# -- item 2: --no-key beside a key -------------------------------------------------------------
def test_no_key_beside_a_key_is_refused(tmp_path, capsys):
    out = tmp_path / "n.csv"
    code, _, err = cli_run(["anonymize", "--data", "census", "--method", "noise",
                            "--param", "gamma=0.1", "--out", str(out)], capsys)
    assert code == 0, err
    line = cli_error(["evaluate", "--data", "census", "--release", str(out), "--no-key",
                      "--measures", "reidentification"], capsys)
    assert str(key_path_for(out)) in line and "--no-key" in line
    code, text, err = cli_run(["evaluate", "--data", "census", "--release", str(out),
                               "--measures", "reidentification"], capsys)
    assert code == 0, err  # with the key, as written


# -- item 3: one key per release file, never overwritten silently ---------------------------
def test_keys_of_csv_and_parquet_releases_do_not_collide(tmp_path, capsys, census):
    pytest.importorskip("pyarrow")
    csv, pq = tmp_path / "m.csv", tmp_path / "m.parquet"
    for out in (csv, pq):
        code, _, err = cli_run(["anonymize", "--data", "census", "--method", "noise",
                                "--param", "gamma=0.1", "--out", str(out)], capsys)
        assert code == 0, err
    assert key_path_for(csv) != key_path_for(pq)
    assert key_path_for(csv).exists() and key_path_for(pq).exists()
    for out in (csv, pq):  # each read back with its own key
        code, _, err = cli_run(["evaluate", "--data", "census", "--release", str(out),
                                "--measures", "il1s"], capsys)
        assert code == 0, err


def test_a_key_of_another_release_is_never_overwritten(tmp_path, capsys, census):
    rel = sdceval.anonymize(census, "noise", gamma=0.1)
    out = tmp_path / "m.csv"
    _, key = write_release(rel, out, dataset=census, seed=1)
    other = tmp_path / "x.csv"
    key.rename(key_path_for(other))  # a key of 'm.csv' at the name of x.csv's key
    before = key_path_for(other).read_bytes()
    line = cli_error(["anonymize", "--data", "census", "--method", "noise",
                      "--out", str(other)], capsys)
    assert str(key_path_for(other)) in line and "m.csv" in line
    assert key_path_for(other).read_bytes() == before and not other.exists()
    # a user's file at the key's name is not a key: refused too
    user = key_path_for(tmp_path / "y.csv")
    user.write_text("a,b\n1,2\n")
    line = cli_error(["anonymize", "--data", "census", "--method", "noise",
                      "--out", str(tmp_path / "y.csv")], capsys)
    assert str(user) in line and user.read_text() == "a,b\n1,2\n"


def test_a_key_of_the_old_naming_is_still_found(tmp_path, capsys, census):
    rel = sdceval.anonymize(census, "noise", gamma=0.1)
    out = tmp_path / "m.csv"
    _, key = write_release(rel, out, dataset=census, seed=1)
    old = legacy_key_path_for(out)
    assert old.name == "m.private-key.csv"
    key.rename(old)
    back = read_release(census, out)
    pd.testing.assert_frame_equal(back.data, rel.data.reset_index(drop=True),
                                  check_dtype=False)
    code, _, err = cli_run(["evaluate", "--data", "census", "--release", str(out),
                            "--measures", "il1s"], capsys)
    assert code == 0, err
    # an old-named key of *another* release (m.parquet) is not taken as m.csv's key
    text = old.read_text().replace("# release: m.csv", "# release: m.parquet")
    old.write_text(text)
    with pytest.raises(SdcevalError, match="not in record order"):
        read_release(census, out)


def test_a_new_release_replaces_the_key_of_the_old_naming(tmp_path, census):
    rel = sdceval.anonymize(census, "noise", gamma=0.1)
    out = tmp_path / "m.csv"
    _, key = write_release(rel, out, dataset=census, seed=1)
    key.rename(legacy_key_path_for(out))
    _, key = write_release(rel, out, dataset=census, seed=2)
    assert key.exists() and not legacy_key_path_for(out).exists()
    assert read_release(census, out).data.equals(read_release(census, out, key=key).data)
    # keep-order: neither key of the release stays beside it
    write_release(rel, out, dataset=census, keep_order=True)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.csv"]


# -- item 4: Mondrian labels contain their records exactly ----------------------------------
def test_mondrian_labels_of_many_decimal_values_contain_their_records(tmp_path, capsys):
    rng = np.random.default_rng(3)
    n = 300
    data = pd.DataFrame({"x": rng.normal(50, 10, n) + 1e-9 * rng.random(n),
                         "y": 12345.678901234 + 1e-3 * rng.random(n),
                         "s": rng.choice(list("abcd"), n)})
    data.to_csv(tmp_path / "d.csv", index=False)
    roles = ["--data", str(tmp_path / "d.csv"), "--qi", "x,y", "--sensitive", "s"]
    out = tmp_path / "m.csv"
    code, _, err = cli_run(["anonymize", *roles, "--method", "mondrian", "--param", "k=5",
                            "--out", str(out)], capsys)
    assert code == 0, err
    code, text, err = cli_run(["evaluate", *roles, "--release", str(out),
                               "--measures", "k_anonymity"], capsys)
    assert code == 0, err
    key = pd.read_csv(key_path_for(out), comment="#")
    published = pd.read_csv(out, dtype=str)
    original = pd.read_csv(tmp_path / "d.csv")
    for q in ("x", "y"):
        value = original[q].to_numpy()[key["record"].to_numpy()]
        for label, v in zip(published[q], value):
            m = re.fullmatch(r"\[(.+?)-(-?[^-].*)\]", label)
            lo, hi = (float(label), float(label)) if m is None else map(float, m.groups())
            assert lo <= v <= hi, (q, label, v)


def test_interval_labels_with_exponents_are_read_back(tmp_path):
    rng = np.random.default_rng(4)
    n = 200
    frame = pd.DataFrame({"x": rng.random(n) * 1e-7, "s": rng.choice(list("ab"), n)})
    ds = sdceval.as_dataset(frame, qi=["x"], sensitive="s", name="tiny")
    rel = sdceval.anonymize(ds, "mondrian", k=5)
    assert rel.data["x"].astype(str).str.contains("e-").any()
    path, _ = write_release(rel, tmp_path / "t.csv", dataset=ds, seed=1)
    back = read_release(ds, path)
    assert sdceval.evaluate(ds, back, "k_anonymity").value >= 5


# -- item 9: damaged key positions ----------------------------------------------------------
def _rewrite_key(key, edit):
    """The key with its rows changed by ``edit`` and its key_sha256 recomputed (a key
    edited by someone who knows the format)."""
    lines = key.read_text().splitlines(keepends=True)
    start = next(i for i, ln in enumerate(lines) if not ln.startswith("#"))
    body_lines = lines[start:]
    edit(body_lines)
    body = "".join(body_lines)
    digest = hashlib.sha256(body.encode()).hexdigest()
    head = [f"# key_sha256: {digest}\n" if ln.startswith("# key_sha256:") else ln
            for ln in lines[:start]]
    key.write_text("".join(head) + body)


@pytest.mark.parametrize("value,what", [("1" + "0" * 30, "1" + "0" * 30), ("-1", "-1"),
                                        ("1.5", "1.5"), ("dup", "twice")])
def test_damaged_key_positions_are_one_line_errors(tmp_path, capsys, census, value, what):
    rel = sdceval.anonymize(census, "noise", gamma=0.1)
    out = tmp_path / "m.csv"
    _, key = write_release(rel, out, dataset=census, seed=1)

    def edit(body):
        row = body[3].split(",")[0]
        body[3] = f"{row},{body[4].split(',')[1].strip() if value == 'dup' else value}\n"
    _rewrite_key(key, edit)
    line = cli_error(["evaluate", "--data", "census", "--release", str(out),
                      "--measures", "il1s"], capsys)
    assert str(key) in line and "row 2" in line and what in line, line
    with pytest.raises(SdcevalError, match="row 2"):
        reid(census, pd.read_csv(out), key=key)


def test_partitioned_evaluation_sees_a_key_of_the_old_naming(tmp_path, small):
    pytest.importorskip("dask")
    from sdceval.experiments.partitioned import evaluate_partitioned
    small.frame.to_csv(tmp_path / "d.csv", index=False)
    rel = sdceval.anonymize(small, "mondrian", k=5)
    out = tmp_path / "g.csv"
    _, key = write_release(rel, out, dataset=small, seed=3)
    key.rename(legacy_key_path_for(out))
    with pytest.raises(SdcevalError, match="private key beside it.*g.private-key.csv"):
        evaluate_partitioned(tmp_path / "d.csv", out, "k_anonymity", schema=small.schema)


def test_dataframe_release_column_names_are_read_as_the_data_sets(census, noise):
    """Integer column names are text, as in the data set (``pd.DataFrame(array)``);
    duplicated names are refused in one line, never a TypeError."""
    rel, _, key, frame = noise
    numbered = sdceval.as_dataset(census.frame.set_axis(range(census.frame.shape[1]),
                                                        axis=1),
                                  numeric=list(range(census.frame.shape[1])), name="n")
    published = frame.set_axis([int(census.frame.columns.get_loc(c)) for c in frame.columns],
                               axis=1)
    records = pd.read_csv(key, comment="#")["record"]  # the file is another data set's
    assert reid(numbered, published, key=records) == pytest.approx(reid(census, rel))
    twice = pd.concat([frame, frame.iloc[:, :1]], axis=1)
    with pytest.raises(SdcevalError, match="duplicated column name"):
        reid(census, twice, key=key)
