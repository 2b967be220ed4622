"""Issue 27, round 4 of hostile inputs: QI values spanning +-1e308 in the interval
builder, a plugin that exits, ``--out`` where nothing can be written (item 9), and
Ctrl-C during a long nearest-neighbour query (item 10)."""
from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings, strategies as st

from conftest import cli_error
from test_hierarchy_builders import assert_valid, assert_within_range, interval_bounds
from sdceval.core import interrupts
from sdceval.core.errors import SdcevalError
from sdceval.core.hierarchy import Hierarchy
from sdceval.core.hierarchy_builders import build_intervals


@pytest.fixture(autouse=True)
def cache_in_tmp(tmp_path, monkeypatch):
    monkeypatch.setenv("SDCEVAL_CACHE_DIR", str(tmp_path / "cache"))


# -- item 9: QI values spanning +-1e308 in the interval builder ----------------------------
HUGE = 1.7976931348623157e308


@pytest.mark.parametrize("build", [build_intervals, Hierarchy.auto_intervals])
@pytest.mark.parametrize("vals", [[-1e308, 0.0, 1e308], [-HUGE, HUGE], [-HUGE, 1.0, 2.0],
                                  [-1e308, -1e307, 1e300, 1e308]])
def test_values_whose_range_overflows_are_refused_naming_column_and_range(build, vals):
    with pytest.raises(SdcevalError) as err:
        build(vals, name="x")
    msg = str(err.value)
    assert "column 'x'" in msg and "e+308" in msg and "rescale" in msg, msg
    assert "\n" not in msg


#: ranges that fit, but where the last interval of `Hierarchy.auto_intervals`, which is not
#: clipped to the data, would end beyond the largest float: refused there
AUTO_REFUSES = ([1e307, 1.5e308, 1.7e308], [HUGE / 2, HUGE])


@pytest.mark.parametrize("build", [build_intervals, Hierarchy.auto_intervals])
@pytest.mark.parametrize("vals", [[0.0, 1e308], [-8e307, 8e307], [-1e307, 0.5, 1e307],
                                  *AUTO_REFUSES])
def test_large_values_whose_range_fits_get_intervals_holding_them(build, vals):
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no overflow on the way
        if build == Hierarchy.auto_intervals and vals in AUTO_REFUSES:
            with pytest.raises(SdcevalError, match=r"column 'x' spans .*rescale"):
                build(vals, name="x")
            return
        h = build(vals, name="x")
    assert_valid(h, vals)
    for j in range(1, h.height):  # every label a finite interval holding its leaves
        for lab, lo, hi in zip(h.labels[j], h.lo[j], h.hi[j]):
            a, b = interval_bounds(lab)
            assert np.isfinite([a, b]).all(), lab
            assert a <= h.leaf_values[lo] and h.leaf_values[hi] <= b, (lab, vals)
    if build is build_intervals:
        assert_within_range(h)


def test_cli_with_a_qi_spanning_1e308_is_one_line(tmp_path, capsys):
    data = tmp_path / "d.csv"
    pd.DataFrame({"q": [-1e308, 1e308, 0.0, 5.0] * 5, "s": list("abcde") * 4}).to_csv(
        data, index=False)
    msg = cli_error(["anonymize", "--data", str(data), "--qi", "q", "--sensitive", "s",
                     "--method", "mondrian", "--param", "k=2",
                     "--out", str(tmp_path / "r.csv")], capsys)
    assert "column 'q'" in msg and "rescale" in msg
    assert not (tmp_path / "r.csv").exists()


# -- item 9: a plugin that exits ----------------------------------------------------------
PLUGIN_BODIES = {
    "sys.exit(3)": "import sys\nsys.exit(3)\n",
    "sys.exit(0)": "import sys\nsys.exit(0)\n",
    "SystemExit": "raise SystemExit('bye')\n",
    "RuntimeError": "raise RuntimeError('broken plugin')\n",
    "SdcevalError": "from sdceval.core.errors import SdcevalError\n"
                    "raise SdcevalError('no such column')\n",
}


@pytest.mark.parametrize("what", list(PLUGIN_BODIES))
def test_plugin_that_exits_or_fails_on_import_is_one_line(tmp_path, capsys, monkeypatch,
                                                        what):
    monkeypatch.delenv("SDCEVAL_PLUGINS", raising=False)
    plugin = tmp_path / "bad_plugin.py"
    plugin.write_text(PLUGIN_BODIES[what])
    msg = cli_error(["--plugin", str(plugin), "list", "methods"], capsys)
    assert str(plugin) in msg and "plugin" in msg, msg
    if "exit" in what or what == "SystemExit":
        assert "exit" in msg, msg
    assert "sdceval_plugin_bad_plugin" not in sys.modules


def test_plugin_that_exits_from_the_environment_in_a_subprocess(tmp_path):
    plugin = tmp_path / "exiting.py"
    plugin.write_text("import sys\nsys.exit(0)\n")
    env = {**os.environ, "SDCEVAL_PLUGINS": str(plugin),
           "SDCEVAL_CACHE_DIR": str(tmp_path / "cache")}
    r = subprocess.run([sys.executable, "-m", "sdceval.cli", "list", "methods"],
                       capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 2, (r.returncode, r.stderr)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and str(plugin) in lines[0] and "exit" in lines[0], r.stderr


def test_plugin_measure_that_exits_while_running_is_one_line(tmp_path):
    """A plugin's measure calling sys.exit(0) mid-command must not end sdceval silently
    with success and unfinished results."""
    plugin = tmp_path / "exits_later.py"
    plugin.write_text(
        "import sys\n"
        "from sdceval.core.registry import register_measure\n"
        "@register_measure('exits_later', category='utility', direction='lower_is_better',"
        " kinds=('perturbative', 'external'), description='exits')\n"
        "def exits_later(dataset, release):\n"
        "    sys.exit(0)\n")
    from sdceval.cli import main
    release = tmp_path / "rel.csv"
    assert main(["-q", "anonymize", "--data", "census", "--method", "mdav", "--param", "k=5",
                 "--out", str(release)]) == 0
    env = {**os.environ, "SDCEVAL_CACHE_DIR": str(tmp_path / "cache")}
    r = subprocess.run([sys.executable, "-m", "sdceval.cli", "--plugin", str(plugin),
                        "evaluate", "--data", "census", "--release", str(release),
                        "--measures", "exits_later"],
                       capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 2, (r.returncode, r.stdout, r.stderr)
    lines = r.stderr.strip().splitlines()
    assert "sys.exit(0)" in lines[-1] and "Traceback" not in r.stderr, r.stderr


def test_load_plugins_catches_system_exit_but_not_ctrl_c(tmp_path):
    from sdceval.catalog import load_plugins
    plugin = tmp_path / "ctrl_c.py"
    plugin.write_text("raise KeyboardInterrupt\n")
    with pytest.raises(KeyboardInterrupt):
        load_plugins(str(plugin))
    assert "sdceval_plugin_ctrl_c" not in sys.modules
    plugin = tmp_path / "exit_code.py"
    plugin.write_text("import sys\nsys.exit(4)\n")
    with pytest.raises(SdcevalError, match=r"plugin .*exit_code\.py.* exit.*4"):
        load_plugins(str(plugin))


# -- item 9: --out where nothing can be written --------------------------------------------
@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    """Inputs the commands read, made once: a release, a store, an experiment file."""
    from sdceval.cli import main
    d = tmp_path_factory.mktemp("inputs")
    exp = d / "e.toml"
    exp.write_text('[experiment]\nname = "e"\n[[evaluation]]\ndata = "census"\n'
                   'releases = ["mdav:k=5"]\nmeasures = ["il1s"]\n')
    before = os.environ.get("SDCEVAL_CACHE_DIR")
    os.environ["SDCEVAL_CACHE_DIR"] = str(d / "cache")
    try:
        assert main(["-q", "anonymize", "--data", "census", "--method", "mdav", "--param",
                     "k=5", "--out", str(d / "rel.csv")]) == 0
        assert main(["-q", "run", str(exp), "--out", str(d / "store"),
                     "--executor", "serial"]) == 0
    finally:
        if before is None:
            os.environ.pop("SDCEVAL_CACHE_DIR", None)
        else:
            os.environ["SDCEVAL_CACHE_DIR"] = before
    return d


QIS = ["--data", "adult-train", "--qi", "race,sex"]
#: each command, up to its --out; True for an output folder, False for an output file
COMMANDS = {
    "anonymize": (False, ["anonymize", "--data", "census", "--method", "mdav", "--param",
                          "k=5"]),
    "evaluate": (False, ["evaluate", "--data", "census", "--release", "{d}/rel.csv",
                         "--measures", "il1s"]),
    "hierarchy": (False, ["hierarchy", "export", "adult-train", "age"]),
    "lattice-search": (False, ["lattice", "search", *QIS]),
    "lattice-export": (False, ["lattice", "export", *QIS, "--no-cache"]),
    "results": (False, ["results", "{d}/store"]),
    "compare": (True, ["compare", "--data", "census", "--methods", "mdav,noise",
                       "--utility", "il1s"]),
    "tradeoff": (True, ["tradeoff", *QIS, "--models", "k", "--grid", "k=5,20",
                        "--measures", "p_loss", "--workers", "1"]),
    "run": (True, ["run", "{d}/e.toml", "--executor", "serial"]),
    "vectors": (True, ["vectors", *QIS, "--release", "mondrian:k=5", "--release",
                       "generalization:k=5", "--properties", "class_size"]),
    "pbg": (True, ["pbg", *QIS, "--runs", "1"]),
}
BAD = {
    # a folder where a file is expected (for an output folder: a file)
    "other-kind": lambda d, folder: d / ("f.txt" if folder else "adir"),
    "under-a-file": lambda d, folder: d / "f.txt" / ("o" if folder else "out.csv"),
    "in-proc": lambda d, folder: f"/proc/sdceval-no-such/{'o' if folder else 'out.csv'}",
}


def _tree(root):
    return {p.relative_to(root) for p in root.rglob("*") if "cache" not in p.parts}


@pytest.mark.parametrize("bad", list(BAD))
@pytest.mark.parametrize("command", list(COMMANDS))
def test_out_where_nothing_can_be_written_is_one_line(tmp_path, capsys, inputs, command,
                                                      bad):
    (tmp_path / "f.txt").write_text("a regular file\n")
    (tmp_path / "adir").mkdir()
    folder, args = COMMANDS[command]
    args = [a.replace("{d}", str(inputs)) for a in args]
    out = BAD[bad](tmp_path, folder)
    before, inputs_before = _tree(tmp_path), _tree(inputs)
    msg = cli_error([*args, "--out", str(out)], capsys)
    shown = str(out) if bad != "under-a-file" else str(tmp_path / "f.txt")
    assert shown in msg or (command == "lattice-export" and "must end in" in msg), msg
    # nothing written, no partial file
    assert _tree(tmp_path) == before and _tree(inputs) == inputs_before
    assert (tmp_path / "f.txt").read_text() == "a regular file\n"


def test_atomic_write_errors_name_the_path_and_leave_nothing(tmp_path):
    from sdceval.core.fileio import atomic_write, check_output
    (tmp_path / "f.txt").write_text("x")
    (tmp_path / "adir").mkdir()

    def writer(p):
        p.write_text("data")
    for bad, words in [(tmp_path / "adir", "is a folder"),
                       (tmp_path / "f.txt" / "a" / "b.csv", "is a file, not a folder"),
                       ("/proc/sdceval-no-such/b.csv", "/proc")]:
        with pytest.raises(SdcevalError, match="--out") as err:
            atomic_write(bad, writer)
        assert words in str(err.value), err.value
    with pytest.raises(SdcevalError, match="is a file, not a folder"):
        check_output(tmp_path / "f.txt", folder=True)
    check_output(tmp_path / "adir", folder=True)
    check_output(tmp_path / "new" / "deeper" / "x.csv")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["adir", "f.txt"]

    def failing(p):  # a writer that fails half-way (a full disk)
        p.write_text("half")
        raise OSError(28, "No space left on device")
    with pytest.raises(SdcevalError, match=r"cannot write .*x\.csv.*No space left"):
        atomic_write(tmp_path / "x.csv", failing)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["adir", "f.txt"]


# -- item 10: Ctrl-C during a long nearest-neighbour query --------------------------------
from sdceval.measures import _nearest  # noqa: E402
from sdceval.measures._nearest import NearestIndex  # noqa: E402


@settings(max_examples=30, deadline=None)
@given(n=st.integers(1, 400), m=st.integers(1, 80), d=st.integers(1, 5),
       k=st.integers(1, 3), grid=st.booleans(), chunk=st.integers(1, 50),
       seed=st.integers(0, 2**16))
def test_chunked_queries_equal_one_query(n, m, d, k, grid, chunk, seed):
    rng = np.random.default_rng(seed)
    make = ((lambda r: rng.integers(0, 3, (r, d)).astype(float)) if grid
            else (lambda r: rng.normal(size=(r, d))))
    points, q = make(m), make(n)
    index = NearestIndex(points)
    whole = index.nearest(q, k=k, chunk=n)
    parts = index.nearest(q, k=k, chunk=chunk)
    np.testing.assert_array_equal(whole[0], parts[0])
    np.testing.assert_array_equal(whole[1], parts[1])
    radius = whole[0] if k == 1 else whole[0][:, 0]
    radius = radius + 0.5
    assert [h.tolist() for h in index.within(q, radius, chunk=n)] == \
        [h.tolist() for h in index.within(q, radius, chunk=chunk)]
    np.testing.assert_array_equal(index.count_within(q, radius, chunk=n),
                                  index.count_within(q, radius, chunk=chunk))


class _CountingTree:
    """A KD-tree stand-in that counts the rows queried and records an interrupt (as the
    signal handler does) after the first call."""

    def __init__(self, tree):
        self.tree, self.calls, self.rows = tree, 0, 0

    def _after(self, q):
        self.calls += 1
        self.rows += len(q)
        if self.calls == 1:
            interrupts.record(KeyboardInterrupt())

    def query(self, q, **kw):
        out = self.tree.query(q, **kw)
        self._after(q)
        return out

    def query_ball_point(self, q, r, **kw):
        out = self.tree.query_ball_point(q, r, **kw)
        self._after(q)
        return out


@pytest.mark.parametrize("call", ["nearest", "nearest k=2", "within", "count_within"])
def test_an_interrupt_acts_between_chunks(call):
    rng = np.random.default_rng(1)
    points, q = rng.normal(size=(500, 3)), rng.normal(size=(1000, 3))
    radius = np.full(len(q), 0.1)
    index = NearestIndex(points)
    index.tree = fake = _CountingTree(index.tree)
    run = {"nearest": lambda: index.nearest(q, chunk=100),
           "nearest k=2": lambda: index.nearest(q, k=2, chunk=100),
           "within": lambda: index.within(q, radius, chunk=100),
           "count_within": lambda: index.count_within(q, radius, chunk=100)}[call]
    try:
        with pytest.raises(KeyboardInterrupt):
            run()
    finally:
        interrupts.clear()
    assert fake.calls == 1 and fake.rows == 100  # the other 900 queries never ran


def test_chunk_size_follows_the_measured_rate(monkeypatch):
    """The next chunk is sized from the rate of the last one, aiming at
    `interrupts.RESPONSE_SECONDS` a chunk (a fake clock: 1 ms a query), never more than
    4x the last and never above `_nearest.MAX_CHUNK`."""
    rng = np.random.default_rng(2)
    points, q = rng.normal(size=(300, 2)), rng.normal(size=(5000, 2))
    index = NearestIndex(points)
    real = index.tree
    sizes, clock = [], [0.0]

    class Tree:
        def query(self, qq, **kw):
            sizes.append(len(qq))
            clock[0] += 1e-3 * len(qq) * (1 if len(sizes) < 4 else 1e-3)
            return real.query(qq, **kw)
    index.tree = Tree()
    monkeypatch.setattr(interrupts, "_clock", lambda: clock[0])
    dist, idx = index.nearest(q)
    per_chunk = round(interrupts.RESPONSE_SECONDS / 1e-3)
    # 1 ms a query for three chunks, then a thousand times faster: 4x at each step
    assert sizes[:5] == [_nearest.FIRST_CHUNK, per_chunk, per_chunk, per_chunk,
                         4 * per_chunk], sizes
    assert sum(sizes) == len(q)
    np.testing.assert_array_equal(idx, real.query(q)[1])
    np.testing.assert_array_equal(dist, real.query(q)[0])
