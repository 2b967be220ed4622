"""A release safe to publish (issue 19 item 6): ``anonymize`` writes the rows in a random
order and a private key beside them; ``evaluate`` puts them back with the key."""
import json
import os
import stat

import numpy as np
import pandas as pd
import pytest

import sdceval
from sdceval.cli import main
from sdceval.core import fileio
from sdceval.core.release_io import read_release
from sdceval.core.release_order import PRIVATE, key_path_for, write_release


def run(capsys, *args):
    code = main([str(a) for a in args])
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.fixture(scope="module")
def census():
    return sdceval.load_dataset("census")


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    """400 records with QIs, a sensitive attribute and the roles on the command line."""
    folder = tmp_path_factory.mktemp("small")
    rng = np.random.default_rng(5)
    n = 400
    pd.DataFrame({"age": rng.integers(20, 80, n), "sex": rng.choice(["F", "M"], n),
                  "region": rng.choice(["north", "south", "east", "west"], n),
                  "diag": rng.choice(list("abcde"), n)}).to_csv(folder / "d.csv", index=False)
    roles = ["--data", folder / "d.csv", "--qi", "age,sex,region", "--sensitive", "diag"]
    ds = sdceval.open_dataset(str(folder / "d.csv"), qi=["age", "sex", "region"],
                              sensitive="diag")
    return ds, roles


def records_of(path, dataset):
    """The published rows put back in record order with the key, as read from disk."""
    key = pd.read_csv(key_path_for(path), comment="#")
    frame = pd.read_csv(path)
    return frame.iloc[np.argsort(key["record"].to_numpy())].reset_index(drop=True), key


def measured(path):
    return {m["measure"]: m["value"] for m in json.loads(path.read_text())["measurements"]}


# -- anonymize: the published file -----------------------------------------------------------
def test_published_rows_are_a_permutation_of_the_release(tmp_path, capsys, census):
    out = tmp_path / "masked.csv"
    code, _, err = run(capsys, "anonymize", "--data", "census", "--method", "mdav",
                       "--param", "k=5", "--out", out)
    assert code == 0, err
    rel = sdceval.anonymize(census, "mdav", k=5)
    published = pd.read_csv(out)
    # no key or index column: exactly the release's columns
    assert list(published.columns) == list(rel.data.columns)
    key_path = tmp_path / "masked.csv.private-key.csv"
    assert key_path_for(out) == key_path and key_path.exists()
    assert "private" in key_path.name and str(key_path) in err
    assert key_path.read_text().startswith(PRIVATE + " ")
    assert "PRIVATE: do not publish" in key_path.read_text().splitlines()[0]
    assert stat.S_IMODE(key_path.stat().st_mode) & 0o077 == 0  # owner only
    back, key = records_of(out, census)
    assert list(key.columns) == ["row", "record"] and (key["row"] == np.arange(census.n)).all()
    assert sorted(key["record"]) == list(range(census.n))
    assert not (key["record"] == np.arange(census.n)).all()  # not the identity
    # the shuffle changes the order only: in record order the file is the release
    pd.testing.assert_frame_equal(back, rel.data.reset_index(drop=True), check_dtype=False)
    assert not np.allclose(published.to_numpy(), rel.data.to_numpy())


def test_same_shuffle_seed_same_files_and_no_seed_a_fresh_order(tmp_path, capsys):
    base = ["anonymize", "-q", "--data", "census", "--method", "noise", "--seed", "3"]
    for name in ("a", "b"):
        assert run(capsys, *base, "--shuffle-seed", "11",
                   "--out", tmp_path / f"{name}.csv")[0] == 0
    for name in ("c", "d"):
        assert run(capsys, *base, "--out", tmp_path / f"{name}.csv")[0] == 0
    read = lambda name: (tmp_path / name).read_bytes()  # noqa: E731
    assert read("a.csv") == read("b.csv")
    # the keys differ only by the release's name they hold
    assert (read("a.csv.private-key.csv").replace(b"a.csv", b"b.csv")
            == read("b.csv.private-key.csv"))
    # without --shuffle-seed the order is not derived from the (often published) --seed
    assert read("c.csv") != read("d.csv")
    same = [pd.read_csv(tmp_path / f"{x}.csv").sort_values("AFNLWGT").reset_index(drop=True)
            for x in "acd"]
    pd.testing.assert_frame_equal(same[0], same[1])
    pd.testing.assert_frame_equal(same[0], same[2])


def test_keep_order_writes_record_order_and_no_key(tmp_path, capsys, census):
    out = tmp_path / "masked.csv"
    key = key_path_for(out)
    # a key left by an earlier shuffled release at that name goes away with it
    assert run(capsys, "anonymize", "-q", "--method", "mdav", "--out", out)[0] == 0
    assert key.exists()
    code, _, err = run(capsys, "anonymize", "--method", "mdav", "--keep-order", "--out", out)
    assert code == 0, err
    assert "record order" in err and "do not publish" in err
    assert not key.exists()
    rel = sdceval.anonymize(census, "mdav", k=5)
    pd.testing.assert_frame_equal(pd.read_csv(out), rel.data.reset_index(drop=True),
                                  check_dtype=False)
    code, _, err = run(capsys, "evaluate", "--release", out, "--measures", "linkage_risk",
                       "--out", tmp_path / "m.json")
    assert code == 0, err
    assert measured(tmp_path / "m.json")["linkage_risk"] == \
        sdceval.evaluate(census, rel, "linkage_risk").value


# -- evaluate with the key: the measurements of the release in memory -----------------------
def test_evaluate_with_the_key_measures_the_release(tmp_path, capsys, census):
    out = tmp_path / "masked.csv"
    assert run(capsys, "anonymize", "-q", "--method", "mdav", "--param", "k=5",
               "--out", out)[0] == 0
    code, _, err = run(capsys, "evaluate", "--release", out,
                       "--measures", "linkage_risk,propensity", "--out", tmp_path / "m.json")
    assert code == 0, err
    got = measured(tmp_path / "m.json")
    rel = sdceval.anonymize(census, "mdav", k=5)
    for measure in ("linkage_risk", "propensity"):
        assert got[measure] == sdceval.evaluate(census, rel, measure).value, measure
    # the key named explicitly, elsewhere: the same
    moved = tmp_path / "elsewhere.csv"
    os.replace(key_path_for(out), moved)
    code, _, err = run(capsys, "evaluate", "--release", out, "--key", moved,
                       "--measures", "linkage_risk", "--out", tmp_path / "m2.json")
    assert code == 0, err
    assert measured(tmp_path / "m2.json")["linkage_risk"] == got["linkage_risk"]


@pytest.mark.parametrize("method,measure", [("mondrian", "k_anonymity"),
                                            ("bucketization", "p_loss")])
def test_generalized_and_bucketized_releases_through_the_key(tmp_path, capsys, small,
                                                             method, measure):
    ds, roles = small
    out = tmp_path / "rel.csv"
    code, _, err = run(capsys, "anonymize", *roles, "--method", method, "--model", "k=5",
                       "--out", out)
    assert code == 0, err
    rel = sdceval.anonymize(ds, method, models=["k=5"])
    assert not pd.read_csv(out, dtype=str).equals(rel.data.astype(str))  # shuffled
    code, _, err = run(capsys, "evaluate", *roles, "--release", out, "--measures", measure,
                       "--out", tmp_path / "m.json")
    assert code == 0, err
    assert measured(tmp_path / "m.json")[measure] == sdceval.evaluate(ds, rel, measure).value
    back = read_release(ds, out)  # Python: the key beside the release is found too
    assert back.kind == rel.kind
    for q in ds.schema.qis:
        np.testing.assert_array_equal(back.cells[q][0], rel.cells[q][0])
    # without its key the shuffled file is refused (its cells do not contain the records)
    os.remove(key_path_for(out))
    code, _, err = run(capsys, "evaluate", *roles, "--release", out, "--measures", measure)
    assert code == 2 and "not in record order" in err and "rel.csv.private-key.csv" in err


# -- evaluate: a missing or wrong key --------------------------------------------------------
@pytest.fixture
def two_releases(tmp_path, capsys):
    for name, method in (("a", "mdav"), ("b", "noise")):
        assert run(capsys, "anonymize", "-q", "--method", method,
                   "--out", tmp_path / f"{name}.csv")[0] == 0
    return tmp_path / "a.csv", tmp_path / "b.csv"


def test_shuffled_release_without_its_key_is_refused(tmp_path, capsys, two_releases, census):
    a, _ = two_releases
    key = key_path_for(a)
    os.replace(key, tmp_path / "kept-away.csv")
    code, _, err = run(capsys, "evaluate", "--release", a, "--measures", "il1s")
    assert code == 2
    assert str(key) in err and "--key" in err and "not in record order" in err
    assert "Traceback" not in err
    with pytest.raises(sdceval.SdcevalError, match="a.csv.private-key.csv"):
        read_release(census, a)


def test_another_releases_key_or_an_edited_key_is_refused(tmp_path, capsys, two_releases):
    a, b = two_releases
    code, _, err = run(capsys, "evaluate", "--release", a, "--key", key_path_for(b),
                       "--measures", "il1s")
    assert code == 2 and "belongs to another release" in err and "'b.csv'" in err, err
    # a key edited (two records swapped) no longer matches its checksum
    lines = key_path_for(a).read_text().splitlines(keepends=True)
    i = next(j for j, line in enumerate(lines) if line.startswith("row,record")) + 1
    r0, r1 = lines[i].strip().split(","), lines[i + 1].strip().split(",")
    lines[i], lines[i + 1] = f"{r0[0]},{r1[1]}\n", f"{r1[0]},{r0[1]}\n"
    edited = tmp_path / "edited.csv"
    edited.write_text("".join(lines))
    code, _, err = run(capsys, "evaluate", "--release", a, "--key", edited,
                       "--measures", "il1s")
    assert code == 2 and "edited" in err, err
    # another data set: the key names the mismatch
    code, _, err = run(capsys, "evaluate", "--data", "eia", "--release", a,
                       "--measures", "il1s")
    assert code == 2 and "another data set" in err, err
    # not a key at all
    code, _, err = run(capsys, "evaluate", "--release", a, "--key", b, "--measures", "il1s")
    assert code == 2 and "not an sdceval release key" in err, err
    code, _, err = run(capsys, "evaluate", "--release", a, "--key", tmp_path / "no.csv",
                       "--measures", "il1s")
    assert code == 2 and "does not exist" in err, err


def test_no_key_reads_the_file_as_it_is(tmp_path, capsys, two_releases):
    a, _ = two_releases
    os.remove(key_path_for(a))
    code, _, err = run(capsys, "evaluate", "--release", a, "--no-key", "--measures", "il1s")
    assert code == 0, err  # the user's word: read in file order, unchecked


# -- writing both files safely ------------------------------------------------------------
def test_the_key_is_never_written_over_an_input(tmp_path, capsys):
    data = tmp_path / "d.csv.private-key.csv"  # the key name of --out d.csv
    rng = np.random.default_rng(0)
    pd.DataFrame({"a": rng.normal(size=50), "b": rng.normal(size=50)}).to_csv(data,
                                                                              index=False)
    before = data.read_bytes()
    code, _, err = run(capsys, "anonymize", "--data", data, "--numeric", "a,b",
                       "--method", "mdav", "--out", tmp_path / "d.csv")
    assert code == 2 and "input file" in err, err
    assert data.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == [data.name]  # nothing written


def test_an_interrupt_leaves_neither_file(tmp_path, census, monkeypatch):
    rel = sdceval.anonymize(census, "mdav", k=5)
    out = tmp_path / "masked.csv"
    real = os.replace

    def interrupted(src, dst):  # the key is in place, the release not yet
        if os.fspath(dst) == os.fspath(out):
            raise KeyboardInterrupt
        return real(src, dst)

    monkeypatch.setattr(fileio.os, "replace", interrupted)
    with pytest.raises(KeyboardInterrupt):
        write_release(rel, out, dataset=census, seed=1)
    monkeypatch.undo()
    assert list(tmp_path.iterdir()) == []
    path, key = write_release(rel, out, dataset=census, seed=1)
    assert (path, key) == (out, key_path_for(out))
    back = read_release(census, out, key=key)
    pd.testing.assert_frame_equal(back.data, rel.data.reset_index(drop=True),
                                  check_dtype=False)
