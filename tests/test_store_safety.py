"""The results store is safe to receive and says what is wrong with it (issue 27 items 15,
12, 9, 22): results stored in an encoding that cannot execute (no pickle), every job
kind's result read back equal, a legacy (pickled) store refused unless trusted, a
damaged or hand-edited store a one-line error (or, for one result, a recomputation), the
measure's name apart from its parameters in ``sdceval results``, a trade-off's threshold
kept, and no import cycle between the store and the package root."""
from __future__ import annotations

import dataclasses
import math
import pickle
import re
import shlex
import sqlite3
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from conftest import cli_error, cli_run
from sdceval.compare.bisection import Step
from sdceval.vectors.comparators import Decision
from sdceval.experiments import result_codec
from sdceval.experiments.jobs import JOB_KINDS
from sdceval.experiments.runner import run_experiment
from sdceval.experiments.store import LAYOUT, ResultsStore, read_measurements, split_label

ROOT = Path(__file__).resolve().parents[1]

#: a small job of every built-in kind (a kind registered without one fails
#: `test_every_job_kind_has_a_round_trip_case`)
JOBS = {
    "comparison": 'data = "census"\nmethods = ["mdav", "noise"]\nutilities = ["propensity"]',
    "evaluation": 'data = "census"\nreleases = ["mdav:k=5", "noise:gamma=0.5"]\n'
                  'measures = ["linkage_risk", "propensity"]',
    "tradeoff": 'data = "adult-train"\nmodels = ["k"]\ngrids = { k = [10, 5000] }\n'
                'measures = ["p_loss", "u_loss:min_support=0.05"]',
    "lattice": 'data = "adult-train"\nexport = true',
    "vectors": 'data = "adult-train"\nreleases = ["mondrian:k=10", "generalization:k=10"]',
    "pbg": 'data = "adult-train"\nobjectives = ["k", "glm"]\nruns = 2',
}


def _experiment(folder: Path, kinds=("evaluation",)) -> Path:
    path = folder / "exp.toml"
    path.write_text('[experiment]\nname = "safety"\nseed = 0\nexecutor = "serial"\n\n'
                    + "\n".join(f"[[{k}]]\n{JOBS[k]}\n" for k in kinds))
    return path


def same(a, b, where="result"):
    """Deep equality with exact types everywhere (NaN equals NaN; tables cell by cell)."""
    assert type(a) is type(b), f"{where}: {type(a)} != {type(b)}"
    if dataclasses.is_dataclass(a):
        for f in dataclasses.fields(a):
            same(getattr(a, f.name), getattr(b, f.name), f"{where}.{f.name}")
    elif isinstance(a, dict):
        assert list(a) == list(b), f"{where}: keys {list(a)} != {list(b)}"
        for k in a:
            same(a[k], b[k], f"{where}[{k!r}]")
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b), f"{where}: lengths differ"
        for i, (x, y) in enumerate(zip(a, b)):
            same(x, y, f"{where}[{i}]")
    elif isinstance(a, pd.DataFrame):
        pd.testing.assert_frame_equal(a, b, check_exact=True, check_column_type=True,
                                      check_index_type=True, obj=where)
        same(dict(a.attrs), dict(b.attrs), f"{where}.attrs")
        for c in range(a.shape[1]):
            if a.dtypes.iloc[c] == object:
                for x, y in zip(a.iloc[:, c], b.iloc[:, c]):
                    same(x, y, f"{where}[{a.columns[c]!r}]")
    elif isinstance(a, pd.Series):
        pd.testing.assert_series_equal(a, b, check_exact=True, check_index_type=True)
    elif isinstance(a, np.ndarray):
        assert a.dtype == b.dtype and a.shape == b.shape, where
        assert np.array_equal(a, b, equal_nan=a.dtype.kind in "fc"), where
    elif a is pd.NA or a is pd.NaT:
        assert b is a, where
    elif isinstance(a, (float, np.floating)):
        assert (math.isnan(a) and math.isnan(b)) or a == b, f"{where}: {a} != {b}"
    else:
        assert a == b, f"{where}: {a!r} != {b!r}"


# -- item 15: results that cannot execute, read back equal -----------------------------
def test_every_job_kind_has_a_round_trip_case():
    assert set(JOB_KINDS.names()) <= set(JOBS), "give a new job kind a small job in JOBS"


#: kinds whose small job still takes seconds (bisection; per-record vectors of 30 k)
SLOW_KINDS = ("comparison", "vectors")


@pytest.mark.parametrize("kind", [pytest.param(k, marks=pytest.mark.slow)
                                  if k in SLOW_KINDS else k for k in JOBS])
def test_a_resumed_job_restores_its_result_equal(kind, tmp_path):
    exp = _experiment(tmp_path, [kind])
    first = run_experiment(exp, out=tmp_path / "o")
    with ResultsStore(tmp_path / "o") as store:
        blobs = [r[0] for r in store.db.execute("SELECT result FROM jobs")]
    assert blobs and all(bytes(b).startswith(result_codec.MAGIC) for b in blobs)
    assert not any(b"\x80\x04" in bytes(b)[:2] or b"\x80\x05" in bytes(b)[:2] for b in blobs)
    said = []
    again = run_experiment(exp, out=tmp_path / "o", progress=said.append)
    assert "resuming: 1 of 1 jobs already done (results.sqlite; --fresh recomputes them)" \
        in said
    same(first.of(kind), again.of(kind))


class _Inner:
    pass


def test_the_codec_round_trips_every_type_it_declares():
    frame = pd.DataFrame({"i": [1, 2, 3], "f": [0.1, np.nan, -np.inf],
                          "s": pd.array(["a", None, "c"], dtype="str"),
                          "o": pd.Series([5, None, 0.5], dtype=object),
                          "b": [True, False, True], "n": pd.array([1, None, 3], dtype="Int64"),
                          "c": pd.Categorical(["x", "y", "x"], categories=["y", "x", "z"])},
                         index=pd.Index([10, 20, 30], name="row"))
    frame.columns = ["i", "f", "s", "o", "b", "n", "i"]  # duplicate names stay
    value = {"frame": frame, "series": pd.Series([1.5, 2.5], index=["a", "b"], name="x"),
             "array": np.arange(6, dtype=np.int32).reshape(2, 3),
             "objects": np.array([1, "a", None], dtype=object),
             "scalars": [np.float64(0.1), np.int64(7), np.bool_(True), 10 ** 30, -0.0],
             "keys": {1: "one", (2, 3): "pair", "$x": 1}, "set": {1, 2},
             "frozen": Decision("wtd", 0.5, math.inf, "first", {"glm": (0.1, 0.2)}),
             "step": Step(5.0, 0.25, "bisect"), "path": Path("a/b.csv"), "na": pd.NA, "tuple": (1, [2]),
             "text": "é \ud800 ⊥"}
    same(value, result_codec.decode(result_codec.encode(value)))


def test_a_frames_attrs_survive_the_store():
    """Property vectors carry each property's direction in ``attrs`` (the figures read
    it): a resumed run must draw what a fresh one draws."""
    frame = pd.DataFrame({"p": [1.0, 2.0]})
    frame.attrs = {"higher_is_better": {"p": False}, "data": "census"}
    back = result_codec.decode(result_codec.encode(frame))
    assert back.attrs == frame.attrs


def test_values_without_a_codec_are_not_stored_and_foreign_classes_not_built():
    with pytest.raises(result_codec.Unstorable):
        result_codec.encode({"x": _Inner()})
    for name in ("os:system", "subprocess:Popen", "sdceval.core.errors:SdcevalError",
                 "builtins:eval", "sdceval.experiments.store:__builtins__",
                 "sdceval.__main__:main", "sdceval.cli.__main__:x"):
        blob = result_codec.MAGIC + ('{"$dataclass":["%s",{}]}' % name).encode()
        with pytest.raises(result_codec.DamagedResult):
            result_codec.decode(blob)
    with pytest.raises(result_codec.DamagedResult):
        result_codec.decode(pickle.dumps({"a": 1}))
    # an object array inside .npy would unpickle: refused
    import base64
    import io
    buf = io.BytesIO()
    np.save(buf, np.array([{"a": 1}], dtype=object), allow_pickle=True)
    blob = result_codec.MAGIC + ('{"$ndarray":"%s"}' % base64.b64encode(
        buf.getvalue()).decode()).encode()
    with pytest.raises(result_codec.DamagedResult):
        result_codec.decode(blob)


class _Touch:
    """A pickle that creates a file when it is read (what a crafted store could do)."""

    def __init__(self, path):
        self.path = str(path)

    def __reduce__(self):
        return (open, (self.path, "w"))


def _craft(out: Path, marker: Path, layout: int) -> None:
    with sqlite3.connect(out / "results.sqlite") as db:
        db.execute("UPDATE jobs SET result = ?", (pickle.dumps(_Touch(marker)),))
        db.execute("UPDATE meta SET value = ? WHERE name = 'layout'", (str(layout),))


def test_a_crafted_pickle_in_a_legacy_store_is_never_run(tmp_path, capsys):
    exp = _experiment(tmp_path)
    out = tmp_path / "o"
    run_experiment(exp, out=out)
    marker = tmp_path / "pwned"
    _craft(out, marker, layout=1)
    err = cli_error(["run", str(exp), "--out", str(out)], capsys)
    assert "pickles" in err and "executes code" in err and "--fresh" in err \
        and "--trust-legacy-store" in err and "results.sqlite" in err, err
    code, text, err = cli_run(["results", str(out)], capsys)
    assert code == 0 and "linkage_risk" in text, err
    assert not marker.exists()
    # --fresh drops the pickles unread, recomputes, and leaves a safe store
    code, _, err = cli_run(["run", str(exp), "--out", str(out), "--fresh"], capsys)
    assert code == 0, err
    assert not marker.exists()
    with ResultsStore(out) as store:
        assert store.db.execute("SELECT value FROM meta").fetchone()[0] == str(LAYOUT)
        assert all(bytes(r[0]).startswith(result_codec.MAGIC)
                   for r in store.db.execute("SELECT result FROM jobs"))


def test_a_crafted_pickle_in_a_current_store_is_recomputed_not_run(tmp_path, capsys):
    exp = _experiment(tmp_path)
    out = tmp_path / "o"
    run_experiment(exp, out=out)
    marker = tmp_path / "pwned"
    _craft(out, marker, layout=LAYOUT)
    said = []
    run_experiment(exp, out=out, progress=said.append)
    assert not marker.exists()
    assert any("does not read back" in s and "recomputing" in s for s in said), said
    code, _, err = cli_run(["results", str(out)], capsys)
    assert code == 0 and not marker.exists(), err


def test_a_trusted_legacy_store_is_read_once_and_converted(tmp_path, capsys):
    exp = _experiment(tmp_path)
    out = tmp_path / "o"
    whole = run_experiment(exp, out=out)
    with sqlite3.connect(out / "results.sqlite") as db:  # as an earlier sdceval wrote it
        for h, blob in db.execute("SELECT hash, result FROM jobs").fetchall():
            db.execute("UPDATE jobs SET result = ? WHERE hash = ?",
                       (pickle.dumps(result_codec.decode(blob)), h))
        db.execute("UPDATE meta SET value = '1' WHERE name = 'layout'")
    said = []
    again = run_experiment(exp, out=out, progress=said.append, trust_legacy_store=True)
    assert any("--trust-legacy-store" in s and "executes code" in s for s in said), said
    assert "resuming: 1 of 1 jobs already done (results.sqlite; --fresh recomputes them)" \
        in said
    same(whole.of("evaluation"), again.of("evaluation"))
    code, _, err = cli_run(["run", str(exp), "--out", str(out)], capsys)
    assert code == 0, err  # converted: no option needed any more


def test_no_unpickling_outside_the_legacy_option():
    """`git grep pickle`: the only ``pickle.load(s)`` is the legacy option's."""
    hits = []
    for path in (ROOT / "sdceval").rglob("*.py"):
        for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if re.search(r"pickle\.loads?\(|Unpickler|allow_pickle=True|read_pickle", line):
                hits.append(f"{path.relative_to(ROOT)}:{i}")
    assert len(hits) == 1 and hits[0].startswith("sdceval/experiments/store.py"), hits
    text = (ROOT / "sdceval" / "experiments" / "store.py").read_text(encoding="utf-8")
    legacy = text[text.index("def _legacy_result"):]
    assert "pickle.loads" in legacy.split("\ndef ")[0]


# -- item 9: a damaged or hand-edited store -------------------------------------------
def _edit(out: Path, sql: str, *params) -> None:
    with sqlite3.connect(out / "results.sqlite") as db:
        db.execute(sql, params)


DAMAGE = {
    "layout not a number": lambda o: _edit(o, "UPDATE meta SET value = 'abc'"),
    "layout missing": lambda o: _edit(o, "DELETE FROM meta"),
    "layout unknown": lambda o: _edit(o, "UPDATE meta SET value = '0'"),
    "layout newer": lambda o: _edit(o, "UPDATE meta SET value = '99'"),
    "fields not JSON": lambda o: _edit(o, "UPDATE measurements SET fields = '{\"data\": '"),
    "fields not an object": lambda o: _edit(o, "UPDATE measurements SET fields = '[1]'"),
    "value not a number": lambda o: _edit(o, "UPDATE measurements SET value = 'x'"),
    "not SQLite": lambda o: (o / "results.sqlite").write_bytes(b"garbage" * 100),
    "truncated": lambda o: (o / "results.sqlite").write_bytes(
        (o / "results.sqlite").read_bytes()[:3000]),
    "table missing": lambda o: _edit(o, "DROP TABLE measurements"),
    "another database": lambda o: ((o / "results.sqlite").unlink(),
                                   _edit(o, "CREATE TABLE other (x)")),
}


@pytest.fixture(scope="module")
def stored(tmp_path_factory):
    """A finished store to damage (copied per test)."""
    folder = tmp_path_factory.mktemp("stored")
    exp = _experiment(folder)
    run_experiment(exp, out=folder / "o")
    return exp, folder / "o"


@pytest.mark.parametrize("damage", list(DAMAGE))
def test_a_damaged_store_is_a_one_line_error(damage, stored, tmp_path, capsys):
    import shutil
    exp, src = stored
    out = tmp_path / "o"
    shutil.copytree(src, out)
    DAMAGE[damage](out)
    err = cli_error(["results", str(out)], capsys)
    assert "results.sqlite" in err, err
    assert any(w in err for w in ("--fresh", "delete", "another --out")), err
    if damage.startswith(("layout", "not SQLite", "truncated", "table", "another")):
        err = cli_error(["run", str(exp), "--out", str(out)], capsys)
        assert "results.sqlite" in err, err


@pytest.mark.parametrize("damage", ["blob", "timings"])
def test_a_damaged_result_is_recomputed_on_resume(damage, stored, tmp_path, capsys):
    import shutil
    exp, src = stored
    out = tmp_path / "o"
    shutil.copytree(src, out)
    if damage == "blob":
        _edit(out, "UPDATE jobs SET result = substr(result, 1, 60)")
    else:
        _edit(out, "UPDATE jobs SET timings = '{'")
    from sdceval.cli import main
    assert main(["run", str(exp), "--out", str(out)]) == 0  # not -q: its notes are read
    err = capsys.readouterr().err
    assert "does not read back" in err and "resuming" not in err, err
    with ResultsStore(out) as store:  # stored again, readable
        assert all(store.done(h) for h, in store.db.execute("SELECT hash FROM jobs"))


# -- item 12: the measure's name, its parameters, a trade-off's threshold --------------
def test_results_match_the_measures_name_and_keep_the_threshold(tmp_path, capsys):
    exp = _experiment(tmp_path, ["evaluation", "tradeoff"])
    out = tmp_path / "o"
    run_experiment(exp, out=out)
    assert "param_k" in read_measurements(out)
    code, text, err = cli_run(["results", str(out), "--where", "measure=u_loss"], capsys)
    assert code == 0, err
    df = pd.read_csv(pd.io.common.StringIO(text))
    assert len(df) == 2 and set(df["measure"]) == {"u_loss"}
    assert set(df["measure_params"]) == {"min_support=0.05"}
    assert sorted(df["threshold"]) == [10, 5000] and set(df["model"]) == {"k"}
    assert "param_k" not in df  # columns no kept row fills are left out
    whole = read_measurements(out, {"measure": "u_loss(min_support=0.05)"})
    assert len(whole) == 2
    assert len(read_measurements(out, {"threshold": "5000"})) == 3  # p_loss, u_loss, classes
    err = cli_error(["results", str(out), "--where", "measure=u_los"], capsys)
    assert "no measurement has measure = 'u_los'" in err and "u_loss" in err, err
    err = cli_error(["results", str(out), "--where", "nope=1"], capsys)
    assert "no column 'nope'" in err and "threshold" in err, err


def test_split_label_inverts_measure_label():
    from sdceval.compare.ranking import measure_label
    for name, params in [("u_loss", {"min_support": "0.05"}), ("emd", {}),
                         ("query_error", {"sel": "0.1", "qd": "2"})]:
        got = split_label(measure_label(name, params))
        assert got[0] == name
        assert got[1] == (",".join(f"{k}={v}" for k, v in params.items()) or None)


@pytest.mark.slow  # the README's campaign, reduced (Adult, 45 222 records)
def test_readme_campaign_results_command_gives_rows(tmp_path, capsys, monkeypatch):
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    run_cmd = re.search(r"^sdceval run (experiments/\S+) --out (out/campaign)", text, re.M)
    res_cmd = re.search(r"^sdceval results out/campaign.*?(?=\s+#|$)", text, re.M)
    assert run_cmd and res_cmd
    out = tmp_path / "campaign"
    code, _, err = cli_run(["run", str(ROOT / run_cmd.group(1)), "--out", str(out),
                            "--reduced", "--executor", "serial"], capsys)
    assert code == 0, err
    words = shlex.split(res_cmd.group(0))[1:]
    code, text, err = cli_run([w if w != "out/campaign" else str(out) for w in words],
                              capsys)
    assert code == 0, err
    assert len(text.strip().splitlines()) > 1, text


# -- item 22: no import cycle between the store and the package root ------------------
