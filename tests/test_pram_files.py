"""PRAM releases through files (issue 29 item 3: "the matrix is published with the release
(its parameters are public in PRAM), and evaluation knows which values were changed only
through the key file").

`write_release` writes beside a PRAM release a PUBLIC file of the method's public
parameters (``masked.csv`` -> ``masked.csv.method.json``: the PRAM-ed keys and their
transition matrices, `sdceval.core.release_order`); `read_release` / `release_of` read it,
so a PRAM-ed key is checked to publish a category of its domain instead of one containing
the record's value, and the release read back equals the one in memory.  Without the
public file a PRAM-ed file is refused, naming it; PRAM-ed keys never prove record order.
"""
from __future__ import annotations

import json
import os

import numpy as np
import pandas as pd
import pytest
from contracts import contract_data

import sdceval
from sdceval import SdcevalError
from sdceval.cli import main
from sdceval.core import fileio
from sdceval.core.release_io import read_release, release_of
from sdceval.core.release_order import key_path_for, public_path_for, write_release
from sdceval.core.treatment import column_treatment

KEYS = ["region", "education", "sex"]  # contract_data's categorical QIs: PRAM's default


@pytest.fixture(scope="module")
def ds():
    return contract_data()


@pytest.fixture(scope="module")
def pram(ds):
    return sdceval.anonymize(ds, "pram", pd=0.5, seed=3)


def run(capsys, *args):
    code = main([str(a) for a in args])
    out = capsys.readouterr()
    return code, out.out, out.err


def same_partition(a, b) -> bool:
    """Two class-id arrays group the records alike (ids may be numbered differently)."""
    pairs = pd.DataFrame({"a": a, "b": b}).drop_duplicates()
    return pairs["a"].is_unique and pairs["b"].is_unique


def assert_equal_releases(ds, back, rel):
    assert back.kind == rel.kind
    for q in ds.schema.qis:
        for x, y in zip(back.cells[q], rel.cells[q]):
            np.testing.assert_array_equal(x, y, err_msg=q)
    assert same_partition(back.classes, rel.classes)
    assert back.dropped == rel.dropped
    assert back.info["perturbed_keys"] == rel.info["perturbed_keys"]
    for q in rel.info["perturbed_keys"]:
        mine, theirs = back.info["pram"][q], rel.info["pram"][q]
        assert mine["matrices"] == theirs["matrices"]      # bit for bit through JSON
        for f in ("categories", "strata", "strata_values", "pd", "alpha", "changed"):
            assert mine[f] == theirs[f], (q, f)
    assert column_treatment(ds, back) == column_treatment(ds, rel)
    for measure in ("individual_risk", "reidentification", "k_anonymity"):
        a = sdceval.evaluate(ds, back, measure)
        b = sdceval.evaluate(ds, rel, measure)
        assert a.value == pytest.approx(b.value, rel=1e-12), measure
        if a.per_record is not None:
            np.testing.assert_allclose(a.per_record, b.per_record, rtol=1e-12)


# -- the round trip ------------------------------------------------------------------------
@pytest.mark.parametrize("name,keep_order", [("r.csv", False), ("r.csv", True),
                                             ("r.parquet", False)])
def test_written_and_read_back_equal(ds, pram, tmp_path, name, keep_order):
    if name.endswith(".parquet"):
        pytest.importorskip("pyarrow")
    out = tmp_path / name
    _, key = write_release(pram, out, dataset=ds, seed=1, keep_order=keep_order)
    assert public_path_for(out) == tmp_path / f"{name}.method.json"
    assert public_path_for(out).is_file()
    assert (key is None) == keep_order
    back = read_release(ds, out)
    assert_equal_releases(ds, back, pram)
    treated = column_treatment(ds, back)
    assert [treated[q] for q in KEYS] == ["masked"] * 3 and treated["age"] == "as is"


def test_strata_and_a_strategy_read_back_equal(ds, tmp_path):
    rel = sdceval.anonymize(ds, "pram", variables="education", strata="region,sex",
                            pd=0.4, seed=2)
    write_release(rel, tmp_path / "s.csv", dataset=ds, seed=1)
    assert_equal_releases(ds, read_release(ds, tmp_path / "s.csv"), rel)
    # a whole-file strategy with a PRAM step: its keys are PRAM-ed as well
    both = sdceval.anonymize(ds, "mdav+pram", k=5, pd=0.5, seed=0)
    write_release(both, tmp_path / "m.csv", dataset=ds, seed=1)
    back = read_release(ds, tmp_path / "m.csv")
    assert back.kind == "composite"
    for q in ds.schema.qis:
        np.testing.assert_array_equal(back.cells[q][0], both.cells[q][0])
    assert back.info["perturbed_keys"] == KEYS
    assert sdceval.evaluate(ds, back, "individual_risk").value == pytest.approx(
        sdceval.evaluate(ds, both, "individual_risk").value, rel=1e-12)


def test_a_dataframe_with_its_key_file_finds_the_public_file(ds, pram, tmp_path):
    out = tmp_path / "r.csv"
    _, key = write_release(pram, out, dataset=ds, seed=4)
    frame = pd.read_csv(out)
    assert_equal_releases(ds, release_of(ds, frame, key=key), pram)
    # no key file: nothing says which keys were redrawn, so the frame is refused
    with pytest.raises(SdcevalError, match="method.json"):
        release_of(ds, frame, key=pd.read_csv(key, comment="#"))


def test_cli_anonymize_then_evaluate(ds, tmp_path, capsys):
    data = tmp_path / "d.csv"
    ds.frame.to_csv(data, index=False)
    roles = ["--data", data, "--qi", "age,region,education,sex", "--weight", "w",
             "--household", "hid"]
    out = tmp_path / "r.csv"
    code, so, err = run(capsys, "anonymize", *roles, "--method", "pram",
                        "--param", "pd=0.5", "--out", out)
    assert code == 0, err
    public = tmp_path / "r.csv.method.json"
    assert public.is_file() and str(public) in so + err
    assert "public" in (so + err).lower()
    code, so, err = run(capsys, "evaluate", *roles, "--release", out,
                        "--measures", "individual_risk", "--out", tmp_path / "m.json")
    assert code == 0, err
    got = json.loads((tmp_path / "m.json").read_text())["measurements"][0]["value"]
    cli_ds = sdceval.open_dataset(str(data), qi=["age", "region", "education", "sex"],
                                  weight="w", household="hid")
    rel = sdceval.anonymize(cli_ds, "pram", pd=0.5, seed=0)  # anonymize's --seed 0
    assert got == pytest.approx(sdceval.evaluate(cli_ds, rel, "individual_risk").value,
                                rel=1e-12)
    os.remove(public)
    code, _, err = run(capsys, "evaluate", *roles, "--release", out,
                       "--measures", "individual_risk")
    assert code == 2 and "r.csv.method.json" in err, err


# -- the public file -----------------------------------------------------------------------
def _walk(obj):
    yield obj
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield k
            yield from _walk(v)
    elif isinstance(obj, list):
        for v in obj:
            yield from _walk(v)


def test_public_file_holds_the_matrices_and_nothing_of_the_records(ds, pram, tmp_path):
    out = tmp_path / "r.csv"
    _, key = write_release(pram, out, dataset=ds, seed=1)
    text = public_path_for(out).read_text()
    doc = json.loads(text)
    assert doc["perturbed_keys"] == KEYS
    for q in KEYS:
        entry = doc["pram"][q]
        assert entry["categories"] == pram.info["pram"][q]["categories"]
        assert entry["matrices"] == pram.info["pram"][q]["matrices"]
        assert entry["pd"] == 0.5 and entry["alpha"] == 0.5
    # no record-level information: no list as long as the file, no row index or record
    # position, no per-record count, no seed (the method's or the shuffle's)
    lists = [x for x in _walk(doc) if isinstance(x, list)]
    assert max(len(x) for x in lists) < ds.n
    words = {x for x in _walk(doc) if isinstance(x, str)}
    for w in ("row", "record", "changed", "seed", "shuffle_seed", "key_sha256",
              "data_sha256"):
        assert w not in words
    assert "PRIVATE" not in text and key.name not in text
    values = {str(v) for c in ds.frame.columns if c not in KEYS for v in ds.frame[c]}
    assert not values & words - {"0", "1"}  # no value of a record's other columns
    # created as any new file (the release's mode), not owner-only as the private key
    assert os.stat(public_path_for(out)).st_mode == os.stat(out).st_mode
    assert os.stat(key).st_mode & 0o077 == 0


def test_a_release_without_public_parameters_writes_none_and_clears_a_stale_one(
        ds, pram, tmp_path):
    out = tmp_path / "r.csv"
    write_release(pram, out, dataset=ds, seed=1)
    assert public_path_for(out).exists()
    write_release(sdceval.anonymize(ds, "mdav", k=5), out, dataset=ds, seed=1)
    assert not public_path_for(out).exists()   # it described the release replaced
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.csv", "r.csv.private-key.csv"]


def test_the_public_file_is_never_written_over_another_file(ds, pram, tmp_path):
    out = tmp_path / "r.csv"
    other = public_path_for(out)
    other.write_text("not ours\n")
    with pytest.raises(SdcevalError, match="method.json"):
        write_release(pram, out, dataset=ds, seed=1)
    assert other.read_text() == "not ours\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == [other.name]
    other.unlink()
    with pytest.raises(SdcevalError, match="input file"):
        write_release(pram, out, dataset=ds, seed=1, protected=[_touch(other)])
    assert sorted(p.name for p in tmp_path.iterdir()) == [other.name]


def _touch(path):
    path.write_text("{}")
    return path


# -- refused -------------------------------------------------------------------------------
@pytest.mark.parametrize("keep_order", [False, True])
def test_missing_public_file_is_named(ds, pram, tmp_path, keep_order):
    out = tmp_path / "r.csv"
    write_release(pram, out, dataset=ds, seed=1, keep_order=keep_order)
    public_path_for(out).unlink()
    with pytest.raises(SdcevalError, match=r"r\.csv\.method\.json.*missing|missing.*"
                                           r"r\.csv\.method\.json"):
        read_release(ds, out)


def _edit(out, column, value, row=0):
    frame = pd.read_csv(out, dtype=str, keep_default_na=False)
    frame.loc[row, column] = value
    frame.to_csv(out, index=False, lineterminator="\n")
    return frame


def _retie(out):
    """The public file tied to the edited release (as if written with it)."""
    from sdceval.core.release_order import file_sha256
    public = public_path_for(out)
    doc = json.loads(public.read_text())
    doc["release_sha256"] = file_sha256(out)
    public.write_text(json.dumps(doc))


@pytest.mark.parametrize("label,match", [("Atlantis", "'Atlantis'"),
                                         ("N", "not a category")])
def test_an_edited_label_outside_the_domain_is_refused(ds, pram, tmp_path, label, match):
    out = tmp_path / "r.csv"
    write_release(pram, out, dataset=ds, keep_order=True)
    _edit(out, "region", label)
    # the public file was written for the release as it was: refused first for that
    with pytest.raises(SdcevalError, match="r.csv.method.json"):
        read_release(ds, out)
    _retie(out)
    with pytest.raises(SdcevalError, match=match):
        read_release(ds, out)
    # and as a DataFrame with a key: its PRAM-ed labels are checked all the same
    out2 = tmp_path / "k.csv"
    _, key = write_release(pram, out2, dataset=ds, seed=2)
    frame = pd.read_csv(out2, dtype=str, keep_default_na=False)
    frame.loc[3, "region"] = label
    with pytest.raises(SdcevalError, match=match):
        release_of(ds, frame, key=key)


def test_an_edited_category_inside_the_domain_is_read(ds, pram, tmp_path):
    """A PRAM-ed key may publish any category of its domain: an edit to another category
    cannot be told from a draw; a key not PRAM-ed is still checked against its record."""
    out = tmp_path / "r.csv"
    write_release(pram, out, dataset=ds, keep_order=True)
    region = pd.read_csv(out, dtype=str)["region"]
    _edit(out, "region", "west" if region[0] != "west" else "east")
    _retie(out)
    read_release(ds, out)
    _edit(out, "age", "999")
    _retie(out)
    with pytest.raises(SdcevalError, match="'age'"):
        read_release(ds, out)


def test_a_damaged_public_file_is_named(ds, pram, tmp_path):
    out = tmp_path / "r.csv"
    write_release(pram, out, dataset=ds, seed=1)
    public = public_path_for(out)
    doc = json.loads(public.read_text())
    public.write_text("{not json")
    with pytest.raises(SdcevalError, match="r.csv.method.json"):
        read_release(ds, out)
    bad = json.loads(json.dumps(doc))
    bad["pram"]["region"]["matrices"][0][0][0] += 0.5      # a row no longer sums to 1
    public.write_text(json.dumps(bad))
    with pytest.raises(SdcevalError, match="'region'.*sum"):
        read_release(ds, out)
    bad = json.loads(json.dumps(doc))
    bad["pram"]["region"]["categories"] = ["a", "b", "c", "d"]  # another hierarchy
    public.write_text(json.dumps(bad))
    with pytest.raises(SdcevalError, match="'region'.*categories"):
        read_release(ds, out)
    bad = json.loads(json.dumps(doc))
    bad["perturbed_keys"] = ["regio"]
    public.write_text(json.dumps(bad))
    with pytest.raises(SdcevalError, match="'regio'"):
        read_release(ds, out)


# -- record order ------------------------------------------------------------------------
def test_pram_keys_do_not_prove_record_order(tmp_path):
    """Read without a key, a release must show it is in record order; a PRAM-ed key
    cannot (any category may be published), so with nothing else published the order
    is unproven and the file refused; --no-key (key=False) reads it as it is."""
    rng = np.random.default_rng(1)
    n = 300
    frame = pd.DataFrame({"region": rng.choice(["n", "e", "s", "w"], n),
                          "sex": rng.choice(["F", "M"], n)})
    small = sdceval.as_dataset(frame, qi=["region", "sex"])
    rel = sdceval.anonymize(small, "pram", pd=0.9, alpha=0.2, seed=1)
    out = tmp_path / "r.csv"
    write_release(rel, out, dataset=small, keep_order=True)
    with pytest.raises(SdcevalError, match="record order.*PRAM"):
        read_release(small, out)
    back = read_release(small, out, key=False)
    assert_equal_releases(small, back, rel)
    # shuffled, its key removed: refused likewise (not read in the wrong order)
    write_release(rel, tmp_path / "s.csv", dataset=small, seed=3)
    key_path_for(tmp_path / "s.csv").unlink()
    with pytest.raises(SdcevalError, match="record order"):
        read_release(small, tmp_path / "s.csv")
    # without its public file, a file in record order whose only key PRAM swapped
    # everywhere matches its records worse than at random: refused as not in record
    # order, naming the missing public file
    sex = sdceval.as_dataset(frame[["sex"]], qi=["sex"])
    swap = {"sex": {"F": {"F": 0.0, "M": 1.0}, "M": {"F": 1.0, "M": 0.0}}}
    swapped = sdceval.anonymize(sex, "pram", matrix=swap, seed=1)
    write_release(swapped, out, dataset=sex, keep_order=True)
    assert_equal_releases(sex, read_release(sex, out, key=False), swapped)
    public_path_for(out).unlink()
    with pytest.raises(SdcevalError, match=r"not in record order.*r\.csv\.method\.json"):
        read_release(sex, out)



def test_a_category_its_matrix_cannot_draw_is_refused(tmp_path):
    """A PRAM-ed key may publish any category its record's row of the published matrix
    can draw (probability > 0), and no other: under a matrix that swaps every value, a
    record published with its own value was edited (or is another record's)."""
    rng = np.random.default_rng(2)
    frame = pd.DataFrame({"sex": rng.choice(["F", "M"], 200),
                          "region": rng.choice(["n", "s"], 200)})
    sex = sdceval.as_dataset(frame, qi=["sex"])
    swap = {"sex": {"F": {"F": 0.0, "M": 1.0}, "M": {"F": 1.0, "M": 0.0}}}
    rel = sdceval.anonymize(sex, "pram", variables="sex", matrix=swap, strata="region",
                            seed=1)
    out = tmp_path / "r.csv"
    write_release(rel, out, dataset=sex, keep_order=True)
    # only the PRAM-ed key is published: no order proof, so key=False
    assert_equal_releases(sex, read_release(sex, out, key=False), rel)
    _edit(out, "sex", frame["sex"][4], row=4)       # its own value: probability 0
    _retie(out)
    with pytest.raises(SdcevalError, match=r"row 5 of the file.*'sex'.*cannot be drawn"):
        read_release(sex, out, key=False)
    # a stratum the public file does not list: written for other data
    other = sdceval.as_dataset(frame.assign(region="x"), qi=["sex"])
    with pytest.raises(SdcevalError, match="no matrix for the stratum"):
        read_release(other, out, key=False)


def test_a_shuffled_pram_file_without_its_key_is_refused_by_the_other_columns(
        ds, pram, tmp_path):
    out = tmp_path / "r.csv"
    write_release(pram, out, dataset=ds, seed=5)
    key_path_for(out).unlink()
    with pytest.raises(SdcevalError, match="not in record order"):
        read_release(ds, out)


# -- writing safely ----------------------------------------------------------------------
@pytest.mark.parametrize("keep_order", [False, True])
@pytest.mark.parametrize("at", ["release", "public"])
def test_an_interrupt_leaves_no_file(ds, pram, tmp_path, monkeypatch, keep_order, at):
    out = tmp_path / "r.csv"
    target = out if at == "release" else public_path_for(out)
    real = os.replace

    def interrupted(src, dst):  # the companions in place, the release not yet (or ...)
        if os.fspath(dst) == os.fspath(target):
            raise KeyboardInterrupt
        return real(src, dst)

    monkeypatch.setattr(fileio.os, "replace", interrupted)
    with pytest.raises(KeyboardInterrupt):
        write_release(pram, out, dataset=ds, seed=1, keep_order=keep_order)
    monkeypatch.undo()
    assert list(tmp_path.iterdir()) == []
    write_release(pram, out, dataset=ds, seed=1, keep_order=keep_order)
    assert_equal_releases(ds, read_release(ds, out), pram)


def test_evaluate_never_writes_over_the_public_file(ds, tmp_path, capsys):
    data = tmp_path / "d.csv"
    ds.frame.to_csv(data, index=False)
    roles = ["--data", data, "--qi", "age,region,education,sex"]
    out = tmp_path / "r.csv"
    assert run(capsys, "anonymize", *roles, "--method", "pram", "--out", out)[0] == 0
    public = public_path_for(out)
    before = public.read_bytes()
    code, _, err = run(capsys, "evaluate", *roles, "--release", out,
                       "--measures", "k_anonymity", "--out", public)
    assert code == 2 and "input file" in err, err
    assert public.read_bytes() == before
