"""Ctrl-C and SIGTERM end the command line promptly and cleanly (issue 6 §2).

Each test starts ``sdceval`` in its own session (so its process group holds it and
every process it starts), waits until the job is under way (a progress line on stderr,
then worker processes where there are any), sends the signal to the sdceval process
alone, and checks: exit code 130 (SIGINT) or 143 (SIGTERM) rather than a crash, no
``*.tmp`` partial file in the output folder, and no process left in the group.
"""
from __future__ import annotations

import os
import queue
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from children import default_sigint
import numpy as np
import pandas as pd
import pytest

from sdceval import cli
from sdceval.core import fileio

try:
    import psutil
except ImportError:  # pragma: no cover - psutil comes with distributed
    psutil = None

pytestmark = pytest.mark.skipif(not hasattr(signal, "SIGKILL") or sys.platform == "win32",
                                reason="POSIX signals and process groups")


# -- helpers ---------------------------------------------------------------------------
def group_members(pgid: int) -> list[int]:
    """Live (non-zombie) processes of process group ``pgid``."""
    if psutil is not None:
        out = []
        for p in psutil.process_iter(["status"]):
            try:
                if os.getpgid(p.pid) == pgid and p.info["status"] != psutil.STATUS_ZOMBIE:
                    out.append(p.pid)
            except (ProcessLookupError, PermissionError, psutil.Error):
                pass
        return out
    out = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                fields = Path(f"/proc/{d}/stat").read_text().rsplit(")", 1)[1].split()
            except (OSError, IndexError):
                continue
            if int(fields[2]) == pgid and fields[0] != "Z":
                out.append(int(d))
    return out


def children_of(pid: int) -> list[int]:
    """Worker processes under ``pid`` (not the resource trackers, which are helpers)."""
    if psutil is not None:
        try:
            kids = [c.pid for c in psutil.Process(pid).children(recursive=True)]
        except psutil.Error:
            return []
    else:
        kids = [p for p in group_members(os.getpgid(pid)) if p != pid]
    return [k for k in kids if "resource_tracker" not in _cmdline(k)]


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except (OSError, UnicodeDecodeError):
        return ""


class Cli:
    """``python -m sdceval.cli ARGS`` in a new session, stderr read line by line."""

    def __init__(self, args, cwd):
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        self.proc = subprocess.Popen([sys.executable, "-m", "sdceval.cli", *args], cwd=cwd,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                     text=True, start_new_session=True, env=env,
                                     preexec_fn=default_sigint)
        self.pgid = self.proc.pid  # a session leader's group id is its pid
        self.lines: queue.Queue[str] = queue.Queue()
        self.seen: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.proc.stderr:
            self.lines.put(line)

    def wait_for(self, text: str, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                time.sleep(0.2)  # let the reader drain what is left
                self._drain()
                pytest.fail(f"sdceval exited ({self.proc.returncode}) before {text!r}:\n"
                            + "".join(self.seen))
            try:
                line = self.lines.get(timeout=0.1)
            except queue.Empty:
                continue
            self.seen.append(line)
            if text in line:
                return
        pytest.fail(f"no {text!r} on stderr within {timeout} s:\n" + "".join(self.seen))

    def wait_for_workers(self, n: int, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if len(children_of(self.proc.pid)) >= n:
                return
            if self.proc.poll() is not None:
                pytest.fail("sdceval exited before its workers started")
            time.sleep(0.05)
        pytest.fail(f"fewer than {n} worker processes after {timeout} s")

    def _drain(self):
        while True:
            try:
                self.seen.append(self.lines.get_nowait())
            except queue.Empty:
                return

    def stop(self, sig, timeout: float = 30.0) -> int:
        self.proc.send_signal(sig)
        rc = self.proc.wait(timeout=timeout)
        time.sleep(0.1)
        self._drain()
        return rc

    def left_behind(self, grace: float = 5.0) -> list[int]:
        """Processes of the group still alive ``grace`` seconds after sdceval exited
        (worker pools and the loky resource tracker notice their parent's end at
        once, but not in the same instant)."""
        deadline = time.monotonic() + grace
        while True:
            alive = group_members(self.pgid)
            if not alive or time.monotonic() > deadline:
                return alive
            time.sleep(0.05)

    def cleanup(self):
        """Never leave strays from a failing test behind (our own process group)."""
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        try:
            os.killpg(self.pgid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


@pytest.fixture
def start(tmp_path):
    started: list[Cli] = []

    def go(*args):
        c = Cli([str(a) for a in args], cwd=tmp_path)
        started.append(c)
        return c
    yield go
    for c in started:
        c.cleanup()


def partial_files(folder: Path) -> list[Path]:
    return [p for p in folder.rglob("*") if p.name.endswith(".tmp")]


def assert_clean_exit(c: Cli, rc: int, expected: int, out: Path) -> None:
    err = "".join(c.seen)
    assert rc == expected, f"exit code {rc} (expected {expected}); stderr:\n{err}"
    assert "Traceback" not in err, err
    assert partial_files(out) == []
    assert c.left_behind() == [], "worker processes outlived sdceval"


# -- the jobs ----------------------------------------------------------------------------
@pytest.fixture
def high_dim(tmp_path):
    """10 000 records x 24 columns and a noisy release of them: a nearest-neighbour query
    in 24 dimensions is close to brute force, so linkage_risk runs for seconds."""
    rng = np.random.default_rng(0)
    cols = [f"x{i}" for i in range(24)]
    x = rng.normal(size=(10000, len(cols)))
    pd.DataFrame(x.round(4), columns=cols).to_csv(tmp_path / "data.csv", index=False)
    code = cli.main(["-q", "anonymize", "--data", str(tmp_path / "data.csv"),
                     "--numeric", ",".join(cols), "--method", "noise",
                     "--out", str(tmp_path / "release.csv")])
    assert code == 0
    return tmp_path / "data.csv", tmp_path / "release.csv", ",".join(cols)


def test_sigint_during_parallel_nearest_neighbour_query(start, tmp_path, high_dim):
    """With two query threads (--threads 2) Ctrl-C used to kill the interpreter with a
    segfault: scipy's threads outlived the interrupted main thread."""
    data, release, cols = high_dim
    c = start("--threads", "2", "evaluate", "--data", data, "--numeric", cols,
              "--release", release, "--measures", "linkage_risk",
              "--out", tmp_path / "m.json")
    c.wait_for("measuring linkage_risk")
    time.sleep(0.3)  # into the query (it runs for seconds)
    rc = c.stop(signal.SIGINT)
    assert_clean_exit(c, rc, 130, tmp_path)
    assert not (tmp_path / "m.json").exists()


def test_sigterm_during_compare(start, tmp_path):
    c = start("compare", "--data", "eia", "--out", tmp_path / "cmp")
    c.wait_for("target reidentification")  # the bisections have begun
    rc = c.stop(signal.SIGTERM)
    assert_clean_exit(c, rc, 143, tmp_path)
    assert not (tmp_path / "cmp").exists()


EXPERIMENT = """
[experiment]
name = "long"
executor = "{executor}"
workers = 2
output = "results"

[[evaluation]]
data = "census"
releases = [{releases}]
measures = ["propensity:model=interactions", "emd"]
"""


def _experiment(tmp_path, executor: str) -> Path:
    releases = ", ".join(f'"noise:gamma={g / 10}"' for g in range(1, 41))
    f = tmp_path / "long.toml"
    f.write_text(EXPERIMENT.format(executor=executor, releases=releases))
    return f


def test_sigterm_kills_process_workers(start, tmp_path):
    """SIGTERM during `run` with two loky workers: both are gone when sdceval exits."""
    f = _experiment(tmp_path, "processes")
    c = start("--threads", "2", "run", f)
    c.wait_for("releases x")
    c.wait_for_workers(2)
    rc = c.stop(signal.SIGTERM)
    assert_clean_exit(c, rc, 143, tmp_path)
    assert not (tmp_path / "results" / "results.json").exists()


def test_sigint_kills_tradeoff_workers(start, tmp_path):
    c = start("--threads", "2", "tradeoff", "--data", "adult", "--workers", "2",
              "--models", "k,l,t,delta", "--out", tmp_path / "tr")
    c.wait_for("trade-off:")
    c.wait_for_workers(2)
    rc = c.stop(signal.SIGINT)
    assert_clean_exit(c, rc, 130, tmp_path)


@pytest.mark.slow
def test_sigterm_closes_dask_cluster(start, tmp_path):
    pytest.importorskip("distributed")
    f = _experiment(tmp_path, "dask")
    c = start("--threads", "2", "run", f)
    c.wait_for("releases x", timeout=120)
    c.wait_for_workers(2, timeout=120)
    rc = c.stop(signal.SIGTERM, timeout=60)
    assert_clean_exit(c, rc, 143, tmp_path)


def test_sigterm_mid_write_removes_the_partial_file(tmp_path):
    """The SIGTERM handler raises, so atomic_write's clean-up runs: no ``*.tmp``, and
    the destination is not created half-written."""
    dest = tmp_path / "out" / "big.csv"
    before = signal.getsignal(signal.SIGTERM)

    def writer(p: Path):
        p.write_text("half of a file\n")
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(5)  # interrupted by the handler long before this ends
        p.write_text("never\n")

    with pytest.raises(cli.Terminated):
        with cli._signal_handling():
            fileio.atomic_write(dest, writer)
    assert not dest.exists()
    assert partial_files(tmp_path) == []
    assert fileio._pending == set()
    assert signal.getsignal(signal.SIGTERM) is before  # the caller's handler is back


def test_parallel_native_marks_multi_threaded_sections():
    """The CLI exits without unwinding only inside a section that may run native
    helper threads (more than one thread)."""
    from sdceval.core import threads
    assert not threads.parallel_native()
    with threads.limited(1):
        assert not threads.parallel_native()
    with threads.limited(2):
        assert threads.parallel_native()
        with threads.limited(1):
            assert threads.parallel_native()  # still inside the outer section
    assert not threads.parallel_native()


def test_signal_inside_a_deferred_section_is_raised_when_it_ends():
    """A SIGTERM that lands inside `interrupts.deferred` (loky's submit) does not cut
    the section: its last statement runs, then `Terminated` is raised (the race that
    once made `run` exit 1 instead of 143)."""
    from sdceval.core import interrupts
    done = []
    with pytest.raises(cli.Terminated):
        with cli._signal_handling():
            with interrupts.deferred():
                os.kill(os.getpid(), signal.SIGTERM)
                time.sleep(0.05)  # the handler runs here, and returns
                done.append("section finished")
            done.append("never")
    assert done == ["section finished"]
    assert not interrupts.deferring() and interrupts._pending is None


def test_deferred_sections_nest_and_the_first_signal_wins():
    from sdceval.core import interrupts
    first, second = KeyboardInterrupt("first"), KeyboardInterrupt("second")
    with pytest.raises(KeyboardInterrupt) as err:
        with interrupts.deferred():
            with interrupts.deferred():
                interrupts.defer(first)
            assert interrupts.deferring()  # still held: the outer section runs on
            interrupts.defer(second)
    assert err.value is first
    with interrupts.deferred():  # nothing held: nothing raised
        pass


def test_executor_shutdown_error_does_not_hide_the_interrupt(monkeypatch):
    """When the pool fails to shut down after an interrupt, the interrupt (not the
    shutdown's error) reaches the CLI, which maps it to 130/143."""
    from joblib.externals.loky import process_executor

    from sdceval.core import threads
    from sdceval.experiments.executor import ProcessExecutor

    def broken_shutdown(self, wait=True, kill_workers=False):
        if kill_workers:
            raise RuntimeError("pool half built")
    monkeypatch.setattr(process_executor.ProcessPoolExecutor, "shutdown", broken_shutdown)

    def interrupted(**kw):
        raise AssertionError("never run")

    def submit(self, *a, **k):
        raise cli.Terminated()
    monkeypatch.setattr(process_executor.ProcessPoolExecutor, "submit", submit)
    threads.set_budget(2)
    try:
        with pytest.raises(cli.Terminated):
            ProcessExecutor(workers=2).map(interrupted, [{}, {}])
    finally:
        threads.set_budget(None)


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_interrupt_swallowed_by_a_gc_callback_still_ends_the_command(monkeypatch, capsys):
    """A SIGTERM raised inside a garbage-collector callback (Dask's `GCDiagnosis`) is
    lost there (Python would print it as 'Exception ignored' with a traceback); the
    command must still end with 143, at the next task (`run_serially`) rather than run
    to its end and exit 0, and say so in one line."""
    import gc

    from sdceval.core import interrupts, tasks

    ran = []

    def callback(phase, info):
        if phase == "start" and not ran:
            ran.append("signal")
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(0.05)  # the handler raises here, inside the callback: swallowed

    def job(args):
        def task(i):
            if i == 0:
                gc.callbacks.append(callback)
                try:
                    gc.collect()
                finally:
                    gc.callbacks.remove(callback)
            ran.append(i)
            return i
        tasks.run_serially(task, [{"i": i} for i in range(5)])
        return 0

    parser = cli.build_parser()
    real_parse = parser.parse_args

    def parse(argv=None):
        ns = real_parse(["list", "methods"])
        ns.func = job
        return ns
    monkeypatch.setattr(parser, "parse_args", parse)
    monkeypatch.setattr(cli, "build_parser", lambda: parser)
    monkeypatch.setattr(cli, "_end_children", lambda *a, **k: None)
    unraisable = []  # what Python would print as "Exception ignored ... Traceback"
    monkeypatch.setattr(sys, "unraisablehook", unraisable.append)
    assert cli.main([]) == cli.EXIT_SIGTERM
    assert ran == ["signal", 0]  # task 0 finished, task 1 never started
    assert "terminated" in capsys.readouterr().err
    assert unraisable == []
    assert interrupts._received is None  # the next command starts afresh


def test_a_signal_scope_forgets_its_interrupt():
    from sdceval.core import interrupts
    with pytest.raises(cli.Terminated):
        with cli._signal_handling():
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(5)
    assert interrupts._received is None
    interrupts.check()  # nothing left to raise
