"""Issue 27, round 4 of hostile inputs on campaigns: a scheduler address that is not a
Dask scheduler (item 7), sweeps without a bound or a check (item 8), control characters
in an experiment file's paths (item 9, part)."""
from __future__ import annotations

import http.server
import socketserver
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from conftest import cli_error
from sdceval.core.errors import SdcevalError
from sdceval.experiments.spec import load_spec

JOB = '[[evaluation]]\ndata = "census"\nreleases = ["mdav:k={k}"]\nmeasures = ["k_anonymity"]\n'


def _file(tmp_path, text: str, name: str = "e.toml") -> str:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return str(path)


# -- item 7: --scheduler at something that is not a Dask scheduler ---------------------
class _Silent(socketserver.ThreadingTCPServer):
    """Accepts connections and never writes (nor closes them until shut down)."""

    daemon_threads = True

    def __init__(self):
        self.held: list = []
        self.stop = threading.Event()
        super().__init__(("127.0.0.1", 0), socketserver.BaseRequestHandler)

    def finish_request(self, request, client_address):
        self.held.append(request)
        request.recv(1 << 16)
        self.stop.wait(120)

    def shutdown_request(self, request):
        pass


class _HttpAtOnce(socketserver.BaseRequestHandler):
    """A web server's answer to anything: 'HTTP/1.1 400' (read as a frame count by
    distributed's protocol: 3.07 EiB)."""

    def handle(self):
        self.request.recv(1 << 16)
        self.request.sendall(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n"
                             b"Connection: close\r\n\r\n")


def _serve(server):
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05},
                     daemon=True).start()
    return server


@pytest.fixture
def servers():
    made = {"http": _serve(http.server.ThreadingHTTPServer(
                ("127.0.0.1", 0), http.server.SimpleHTTPRequestHandler)),
            "http_at_once": _serve(socketserver.ThreadingTCPServer(("127.0.0.1", 0),
                                                                   _HttpAtOnce)),
            "silent": _serve(_Silent())}
    for s in made.values():
        s.daemon_threads = True
    yield {k: f"tcp://127.0.0.1:{s.server_address[1]}" for k, s in made.items()}
    made["silent"].stop.set()
    for s in made.values():
        s.shutdown()
        for r in getattr(s, "held", []):
            r.close()
        s.server_close()


def _run_cli(args, cwd, timeout=90):
    """``sdceval ARGS`` in a subprocess: a hang ends at ``timeout`` (the guard), not the
    test run."""
    return subprocess.run([sys.executable, "-m", "sdceval", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=timeout)


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["http", "http_at_once", "silent"])
def test_scheduler_that_is_not_dask_is_one_line_within_the_timeout(servers, kind, tmp_path):
    pytest.importorskip("distributed")
    path = _file(tmp_path, JOB.replace("{k}", "3"))
    address = servers[kind]
    got = _run_cli(["run", path, "--out", str(tmp_path / "out"), "--scheduler", address,
                    "--connect-timeout", "2"], tmp_path)
    assert got.returncode == 2, got.stderr[-3000:]
    lines = got.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("sdceval: error: "), got.stderr[-3000:]
    assert address in lines[0] and "Dask scheduler" in lines[0]
    assert "EiB" not in lines[0] and "Traceback" not in got.stderr
    assert not (tmp_path / "out" / "results.json").exists()


def test_connect_timeout_is_an_option_with_a_documented_default(capsys):
    from sdceval.experiments.dask_executor import CONNECT_TIMEOUT
    from sdceval.cli import main
    with pytest.raises(SystemExit):
        main(["run", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "--connect-timeout" in text and f"default {CONNECT_TIMEOUT:g}" in text


def test_a_garbage_answer_is_one_line_in_process(servers, tmp_path, capfd):
    """The 3.07 EiB frame: distributed's MemoryError becomes the project's error."""
    pytest.importorskip("distributed")
    from sdceval.experiments.dask_executor import DaskExecutor
    with pytest.raises(SdcevalError) as info:
        DaskExecutor(servers["http_at_once"], timeout=2)
    msg = str(info.value)
    assert "\n" not in msg and servers["http_at_once"] in msg
    assert "not as a Dask scheduler" in msg
    assert info.value.__cause__ is None
    assert "Traceback" not in capfd.readouterr().err


def test_bad_connect_timeout_is_refused(tmp_path, capsys):
    path = _file(tmp_path, JOB.replace("{k}", "3"))
    msg = cli_error(["run", path, "--scheduler", "tcp://127.0.0.1:1",
                     "--connect-timeout", "0"], capsys)
    assert "--connect-timeout" in msg


# -- item 8: sweeps bounded, checked, named ------------------------------------------------
@pytest.mark.parametrize("sweep, count", [
    ('{seed = "0..100000000000"}', "100,000,000,001"),
    ('{k = "1..100000", seed = "0..99999"}', "10,000,000,000"),
    ('{k = "1..200", seed = "0..199"}', "40,000"),
])
def test_a_sweep_beyond_the_limit_is_refused_before_expanding(tmp_path, capsys, sweep,
                                                              count):
    from sdceval.experiments.file_schema import MAX_JOBS
    path = _file(tmp_path, JOB + f"sweep = {sweep}\n")
    msg = cli_error(["run", path, "--out", str(tmp_path / "out")], capsys)
    assert count in msg and f"{MAX_JOBS:,}" in msg and "split" in msg
    assert "[[evaluation]] #1" in msg


def test_the_limit_counts_every_job_of_the_file(tmp_path):
    from sdceval.experiments.file_schema import MAX_JOBS
    third = MAX_JOBS // 2
    text = "".join(JOB.replace("{k}", "3") + f'sweep = {{seed = "1..{third}"}}\n'
                   for _ in range(3))
    with pytest.raises(SdcevalError) as info:
        load_spec(_file(tmp_path, text))
    assert "[[evaluation]] #3" in str(info.value)
    assert f"{3 * third:,}" in str(info.value) or f"{MAX_JOBS:,}" in str(info.value)


def test_a_sweep_at_the_limit_is_accepted(tmp_path):
    from sdceval.experiments.file_schema import MAX_JOBS
    spec = load_spec(_file(tmp_path, JOB.replace("{k}", "3")
                           + f'sweep = {{seed = "1..{MAX_JOBS}"}}\n'))
    assert len(spec.jobs) == MAX_JOBS
    assert len({j.key for j in spec.jobs}) == MAX_JOBS


@pytest.mark.parametrize("sweep, words", [
    ("{data = [5]}", ["data", "string", "5"]),
    ('{seed = ["a"]}', ["seed", "integer", "'a'"]),
    ("{seed = [-1]}", ["seed", "0", "-1"]),
    ("{seed = [1.5]}", ["seed", "integer", "1.5"]),
    ("{title = [[1]]}", ["title", "string"]),
    ("{qi = [{a = 1}]}", ["qi"]),
])
def test_swept_values_are_checked_like_written_ones(tmp_path, capsys, sweep, words):
    path = _file(tmp_path, JOB.replace("{k}", "3") + f"sweep = {sweep}\n")
    msg = cli_error(["run", path, "--out", str(tmp_path / "out")], capsys)
    assert "[[evaluation]] #1" in msg and "sweep" in msg
    for w in words:
        assert w in msg, msg
    # the same value written without a sweep: the same words (one schema)
    name, value = sweep.strip("{}").split(" = ", 1)
    unswept = JOB.replace("{k}", "3").replace('data = "census"\n', "") \
        + ('data = "census"\n' if name != "data" else "") + f"{name} = {value[1:-1]}\n"
    plain = cli_error(["run", _file(tmp_path, unswept, "u.toml"), "--out",
                       str(tmp_path / "out")], capsys)
    assert plain.split(": ")[-1] in msg, (plain, msg)


def test_a_sweep_may_not_sweep_itself(tmp_path, capsys):
    path = _file(tmp_path, JOB.replace("{k}", "3") + "sweep = {sweep = [1]}\n")
    msg = cli_error(["run", path, "--out", str(tmp_path / "out")], capsys)
    assert "sweep" in msg


def test_long_swept_values_give_short_unique_names(tmp_path):
    long_a, long_b = "x" * 299 + "a", "x" * 299 + "b"
    spec = load_spec(_file(tmp_path, JOB.replace("{k}", "3")
                           + f'title = "{{t}}"\nsweep = {{t = ["{long_a}", "{long_b}"]}}\n'))
    keys = [j.key for j in spec.jobs]
    assert len(set(keys)) == 2
    assert all(len(k) <= 120 for k in keys), keys
    from sdceval.experiments.jobs import safe_name
    assert safe_name(long_a) != safe_name(long_b)
    assert len(safe_name(long_a)) <= 64


def test_long_swept_values_run(tmp_path, capsys):
    """A 300-character value made a file name too long (OSError) when the job wrote."""
    from conftest import cli_run
    value = "y" * 300
    pd = pytest.importorskip("pandas")
    pd.DataFrame({"a": [1, 2, 3, 4] * 5, "b": list("ababa") * 4}).to_csv(
        tmp_path / "d.csv", index=False)
    path = _file(tmp_path, f'[[evaluation]]\ndata = "{(tmp_path / "d.csv").as_posix()}"\n'
                           'qi = ["a", "b"]\n'
                           'releases = ["mondrian:k=2"]\nmeasures = ["k_anonymity"]\n'
                           f'title = "{{t}}"\nsweep = {{t = ["{value}"]}}\n')
    code, out, err = cli_run(["run", path, "--out", str(tmp_path / "out")], capsys)
    assert code == 0, err
    assert all(len(f.name) < 200 for f in (tmp_path / "out").iterdir())


def test_a_long_experiment_name_gives_a_short_folder(tmp_path):
    spec = load_spec(_file(tmp_path, f'[experiment]\nname = "{"n" * 300}"\n'
                           + JOB.replace("{k}", "3")))
    assert len(spec.output.name) <= 64


# -- item 9 (part): control characters and separator tricks in paths -------------------
@pytest.mark.parametrize("table, key, value", [
    ("experiment", "output", "a\\u0000b"),
    ("experiment", "output", "a\\u001b[31mb"),
    ("experiment", "output", "a\\nb"),
    ("experiment", "output", "a\\u202eb"),
    ("experiment", "output", "results\\u2215run"),
    ("experiment", "output", ""),
    ("experiment", "output", "   "),
    ("experiment", "scheduler", "tcp://a\\u0000b:1"),
    ("evaluation", "data", "cen\\u0000sus"),
    ("evaluation", "schema", "s\\u0000.toml"),
])
def test_control_characters_in_paths_are_refused_naming_the_field(tmp_path, capsys, table,
                                                                   key, value):
    job = JOB.replace("{k}", "3")
    if table == "experiment":
        text = f'[experiment]\n{key} = "{value}"\n' + job
    elif key == "data":
        text = job.replace('data = "census"', f'data = "{value}"')
    else:
        text = job + f'{key} = "{value}"\n'
    path = _file(tmp_path, text)
    args = ["run", path] + ([] if key == "output" else ["--out", str(tmp_path / "out")])
    msg = cli_error(args, capsys)
    assert key in msg and "e.toml" in msg, msg
    assert not (tmp_path / "out").exists()
    assert not any(p.name == "results.sqlite" for p in Path.cwd().iterdir())


def test_a_swept_path_with_a_nul_is_refused(tmp_path, capsys):
    path = _file(tmp_path, JOB.replace("{k}", "3") + 'sweep = {data = ["a\\u0000b"]}\n')
    msg = cli_error(["run", path, "--out", str(tmp_path / "out")], capsys)
    assert "data" in msg and "sweep" in msg
