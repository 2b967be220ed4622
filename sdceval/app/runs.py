"""The app's run manager (issue 31): comparisons run in worker processes, their state
read from disk, so a browser refresh or a restarted app loses nothing.

One configuration format for the app, the CLI and the API: a run's configuration is
the ``[[comparison]]`` table of an experiment file as a dict (``data``, the roles,
``methods``, ``target``, ``utilities``, ...), with the ``[experiment]`` settings
``seed``, ``repeats``, ``executor``, ``workers``, ``name`` and ``description`` beside
them (`split_config`).  `RunManager.start` writes it as ``experiment.toml`` in a new
run folder, checks it with the experiment files' schema (`sdceval.experiments.spec.
load_spec`: a bad key or value is an `SdcevalError` naming it, before any process
starts) and runs ``sdceval run experiment.toml --out out`` in a worker process of its
own process group (`worker_main`).

A run folder ``<folder>/runs/<id>/`` (folders 0700, files 0600) holds::

    run.json         id, title, creation time, the configuration
    experiment.toml  the experiment file the worker runs (`RunManager.reproduce`)
    worker.json      the worker's pid and start time (a pid reused later is not it)
    progress.json    step, fraction done, time left (`sdceval.core.progress.record`,
                     written by the worker through SDCEVAL_PROGRESS_FILE)
    exit.json        the worker's exit code, written by `worker_main` as it ends
    cancelled        present when the run was cancelled
    worker.log       the worker's stdout and stderr
    out/             the run's output folder: results store, results.json, report
    release/<name>/  the releases made from it (`RunManager.release`)

State (`RunManager.status`): a live worker is ``running`` (``queued`` until it has
reported a step); a worker that has ended is ``done`` when it recorded exit code 0,
``cancelled`` when the run was cancelled, else ``failed`` — also when it ended
without recording its exit (killed): a run never reads as running forever.
Cancelling terminates the worker's process group (SIGTERM, then SIGKILL after
`GRACE` seconds); the results store keeps every job that finished, and
`RunManager.resume` starts the worker again from there.
"""
from __future__ import annotations

import json
import os
import re
import secrets
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from sdceval.core.errors import SdcevalError
from sdceval.app.workspace import private_dir, write_private
from sdceval.core.progress import PROGRESS_FILE_ENV
from sdceval.app.config import (  # noqa: F401 (the configuration, re-exported)
    EXPERIMENT_KEYS, REFUSED_KEYS, _check_data, _data_options, _param_options,
    experiment_toml, python_snippet, split_config)

RUNS, OUT, RELEASES = "runs", "out", "release"
RUN_FILE, EXPERIMENT, WORKER_FILE = "run.json", "experiment.toml", "worker.json"
PROGRESS, EXIT_FILE, CANCELLED, LOG = "progress.json", "exit.json", "cancelled", "worker.log"
#: seconds a worker has after SIGTERM before SIGKILL
GRACE = 5.0
STATES = ("queued", "running", "done", "failed", "cancelled")
_ID = re.compile(r"\d{8}-\d{6}-[0-9a-f]{6}")

#: the worker: `worker_main` running the CLI's ``main`` in a fresh interpreter (the CLI
#: is a layer above this module, which never imports it)
_WORKER = ("import sys; from sdceval.cli import main; from sdceval.app.runs import "
           "worker_main; sys.exit(worker_main(sys.argv[1], main))")
#: one ``sdceval`` command in a fresh interpreter, its files owner-only
_COMMAND = ("import os, sys; os.umask(0o077); from sdceval.cli import main; "
            "sys.exit(main(sys.argv[1:]))")


@dataclass
class RunStatus:
    run_id: str
    title: str
    created: str           # ISO 8601, UTC
    state: str             # one of STATES
    step: str
    fraction: float | None
    eta_seconds: float | None
    message: str


# -- files ------------------------------------------------------------------------------
def _read_json(path: Path) -> dict | None:
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return value if isinstance(value, dict) else None


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")


# -- the worker -------------------------------------------------------------------------
def worker_main(run_dir, main) -> int:
    """A run's worker: ``main(["run", "experiment.toml", "--out", "out"])`` (the CLI's
    ``sdceval.cli.main``) in the run folder (files owner-only), its progress in
    ``progress.json``, its exit code in ``exit.json`` as it ends (SIGTERM ends it
    through the CLI's handling, with 143)."""
    from sdceval.core.progress import record
    os.umask(0o077)
    run_dir = Path(run_dir)
    os.environ[PROGRESS_FILE_ENV] = str(run_dir / PROGRESS)
    record("starting: reading the experiment file and the data")
    code = 1
    try:
        code = main(["run", str(run_dir / EXPERIMENT), "--out", str(run_dir / OUT)])
        if code == 0:
            record("done", 1.0, 0.0)
    finally:
        write_private(run_dir / EXIT_FILE, json.dumps({"code": code, "finished": _now()}))
    return code


def _alive(worker: dict | None) -> bool:
    """Whether the process ``worker`` records still runs (the same process: its start
    time checked, so a pid reused by another process is not it; a zombie has ended)."""
    import psutil
    if not worker:
        return False
    try:
        proc = psutil.Process(int(worker["pid"]))
        if abs(proc.create_time() - float(worker["create_time"])) > 0.01:
            return False
        return proc.status() != psutil.STATUS_ZOMBIE
    except (psutil.Error, KeyError, TypeError, ValueError):
        return False


def _error_line(text: str) -> str:
    """The error line of a command's output (``sdceval: error: ...``), else its last."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    errors = [ln for ln in lines if ln.startswith("sdceval: error:")]
    return (errors[-1].removeprefix("sdceval: error:").strip() if errors
            else lines[-1] if lines else "")


# -- the manager ------------------------------------------------------------------------
class RunManager:
    """Runs comparisons in worker processes under ``folder`` (module docstring).  Every
    method reads the run's state from its folder, so a new manager on the same folder
    (a restarted app) sees every earlier run."""

    def __init__(self, folder: Path):
        self.folder = Path(folder).resolve()   # the workers run in their run folders
        self.folder.mkdir(parents=True, exist_ok=True)
        self.root = private_dir(self.folder / RUNS)
        self._procs: dict[str, subprocess.Popen] = {}   # the workers started here
        self._commands: set[subprocess.Popen] = set()    # releases being made
        self._lock = threading.Lock()

    # -- runs ---------------------------------------------------------------------
    def _dir(self, run_id: str) -> Path:
        if not isinstance(run_id, str) or not _ID.fullmatch(run_id) \
                or not (self.root / run_id / RUN_FILE).is_file():
            raise SdcevalError(f"no run {run_id!r} in {str(self.root)!r}")
        return self.root / run_id

    def start(self, config: dict) -> str:
        """Check ``config`` (module docstring), write its run folder and start its
        worker; returns the run's id.  A bad option is an `SdcevalError` naming it,
        and then nothing is left behind."""
        from sdceval.experiments.spec import load_spec
        text = experiment_toml(config)
        _, job = split_config(config)
        _check_data(job)
        stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime())
        while True:
            run_id = f"{stamp}-{secrets.token_hex(3)}"
            run_dir = self.root / run_id
            try:
                run_dir.mkdir(mode=0o700)
                break
            except FileExistsError:
                continue
        os.chmod(run_dir, 0o700)
        path = write_private(run_dir / EXPERIMENT, text)
        try:
            load_spec(path)
        except SdcevalError as exc:
            import shutil
            shutil.rmtree(run_dir, ignore_errors=True)
            raise SdcevalError(str(exc).replace(str(path), "configuration")) from None
        methods = job.get("methods")
        title = job.get("title") or (f"{Path(str(job.get('data'))).name}: " + (
            ", ".join(methods) if isinstance(methods, list) else str(methods or
                                                                     "default candidates")))
        write_private(run_dir / RUN_FILE, json.dumps(
            {"run_id": run_id, "title": title, "created": _now(), "config": config},
            indent=2, default=str))
        self._launch(run_id, run_dir)
        return run_id

    def resume(self, run_id: str) -> None:
        """Start a cancelled or failed run's worker again in its folder: ``sdceval
        run`` resumes from the results store, skipping every job that finished
        (`sdceval.experiments.store`), with the same seeds (the same results as a run
        never stopped).  A run that is going on or done is left as it is."""
        run_dir = self._dir(run_id)
        if self.status(run_id).state not in ("cancelled", "failed"):
            return
        for name in (CANCELLED, EXIT_FILE, PROGRESS):
            (run_dir / name).unlink(missing_ok=True)
        self._launch(run_id, run_dir)

    def _launch(self, run_id: str, run_dir: Path) -> None:
        """The run's worker, in its own process group, its pid and start time
        recorded (`WORKER_FILE`)."""
        import psutil
        env = {**os.environ, PROGRESS_FILE_ENV: str(run_dir / PROGRESS),
               "PYTHONUNBUFFERED": "1"}
        log = os.open(run_dir / LOG, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        try:
            proc = subprocess.Popen([sys.executable, "-c", _WORKER, str(run_dir)],
                                    cwd=run_dir, env=env, stdin=subprocess.DEVNULL,
                                    stdout=log, stderr=subprocess.STDOUT,
                                    start_new_session=True)  # its own process group
        finally:
            os.close(log)
        with self._lock:
            self._procs[run_id] = proc
        write_private(run_dir / WORKER_FILE, json.dumps(
            {"pid": proc.pid, "pgid": proc.pid,
             "create_time": psutil.Process(proc.pid).create_time()}))

    def _reap(self, run_id: str) -> None:
        with self._lock:
            proc = self._procs.get(run_id)
            if proc is not None and proc.poll() is not None:
                del self._procs[run_id]

    def status(self, run_id: str) -> RunStatus:
        """The run's state and progress, read from its folder (module docstring)."""
        run_dir = self._dir(run_id)
        meta = _read_json(run_dir / RUN_FILE) or {}
        self._reap(run_id)
        alive = _alive(_read_json(run_dir / WORKER_FILE))
        ended = _read_json(run_dir / EXIT_FILE)   # read after `alive`: never missed
        progress = _read_json(run_dir / PROGRESS) or {}
        cancelled = (run_dir / CANCELLED).exists()
        step, fraction = str(progress.get("step", "")), progress.get("fraction")
        eta = progress.get("eta_seconds")
        if ended is None and alive:
            state = "running" if progress else "queued"
            message = step or "waiting for the worker to start"
        elif ended is not None and ended.get("code") == 0:
            state, message, fraction, eta = "done", "finished", 1.0, None
        elif cancelled:
            state, eta = "cancelled", None
            message = (run_dir / CANCELLED).read_text(encoding="utf-8").strip() \
                or "cancelled"
        elif ended is None:
            state, eta = "failed", None
            message = f"the worker ended without recording how (killed?); see {LOG}"
        else:
            state, eta = "failed", None
            message = (_error_line((run_dir / LOG).read_text(encoding="utf-8", errors="replace"))
                       or f"the worker exited with code {ended.get('code')}")
        return RunStatus(run_id, str(meta.get("title", run_id)),
                         str(meta.get("created", "")), state, step,
                         None if fraction is None else float(fraction),
                         None if eta is None else float(eta), message)

    def runs(self) -> list[RunStatus]:
        """Every run in the folder, newest first."""
        ids = [p.name for p in self.root.iterdir()
               if _ID.fullmatch(p.name) and (p / RUN_FILE).is_file()]
        got = [self.status(i) for i in ids]
        return sorted(got, key=lambda s: (s.created, s.run_id), reverse=True)

    def cancel(self, run_id: str, why: str = "cancelled") -> None:
        """Terminate the run's worker and every process of its group (SIGTERM, then
        SIGKILL after `GRACE` seconds); the run reads as cancelled.  A run that has
        ended already is left as it is."""
        run_dir = self._dir(run_id)
        worker = _read_json(run_dir / WORKER_FILE)
        if self.status(run_id).state not in ("queued", "running"):
            return
        write_private(run_dir / CANCELLED, why + "\n")
        if _alive(worker):
            with self._lock:
                proc = self._procs.get(run_id)
            self._terminate(int(worker["pgid"]), proc)
        self._reap(run_id)

    def _terminate(self, pgid: int, proc: subprocess.Popen | None = None) -> None:
        """SIGTERM to process group ``pgid``, SIGKILL after `GRACE` seconds if any of it
        is left; ``proc``: its leader when it is a child of this process (reaped: a
        zombie keeps its group)."""
        for sig in (signal.SIGTERM, signal.SIGKILL):
            deadline = time.monotonic() + GRACE
            try:
                os.killpg(pgid, sig)
                while time.monotonic() < deadline:
                    if proc is not None:
                        proc.poll()
                    os.killpg(pgid, 0)  # ProcessLookupError: the group has ended
                    time.sleep(0.05)
            except ProcessLookupError:
                return

    def shutdown(self) -> None:
        """Terminate every worker this manager started and every command it runs, and
        wait for them: no child process is left."""
        with self._lock:
            running = list(self._procs)
            commands = list(self._commands)
        for run_id in running:
            self.cancel(run_id, "cancelled: the app was stopped")
        for proc in commands:
            self._terminate(proc.pid, proc)
            proc.wait()
        with self._lock:
            for proc in self._procs.values():
                proc.wait()
            self._procs.clear()

    # -- results ------------------------------------------------------------------
    def _comparison(self, run_id: str):
        """The run's comparison (key, job options, `Comparison`), read back from its
        results store through the job hash its results.json records."""
        from contextlib import closing

        from sdceval.experiments.store import ResultsStore
        run_dir = self._dir(run_id)
        state = self.status(run_id)
        if state.state != "done":
            raise SdcevalError(f"run {run_id} is {state.state}: its results are there when "
                               "it is done")
        results = _read_json(run_dir / OUT / "results.json") or {}
        comparisons = results.get("comparisons") or {}
        if not comparisons:
            raise SdcevalError(f"run {run_id}: its results.json holds no comparison")
        key = next(iter(comparisons))
        job_hash = results.get("run", {}).get("jobs", {}).get(key, {}).get("hash")
        with closing(ResultsStore(run_dir / OUT, create=False)) as store:
            if not job_hash or not store.done(job_hash):
                raise SdcevalError(f"run {run_id}: its results store does not hold the "
                                   "comparison (damaged? start the run again)")
            comp = store.load(job_hash).comparison
        _, job = split_config((_read_json(run_dir / RUN_FILE) or {}).get("config", {}))
        return key, job, comp

    def results(self, run_id: str) -> dict:
        """What the run found, as its report shows it: the answer sentence, the
        ranking (every figure, with its 95 % interval when repeated, and the ranks),
        the ties, the notes (``unranked``: the one of each candidate left unranked), the
        risks at the matched point, what each candidate publishes, and the paths of the
        figure (the job's risk curves) and the report."""
        from sdceval.compare.comparison import unreached_note
        from sdceval.core.glossary import display_name
        key, _, comp = self._comparison(run_id)
        out = self._dir(run_id) / OUT
        table = comp.table()
        skip = {"method", "parameter", "value", "bracketed", "matched", "evaluations"}
        utilities = set(comp.utilities_shown())
        risk_cols = [c for c in table.columns if c not in skip and c not in utilities
                     and not c.startswith("rank_")
                     and not c.removesuffix("_lo").removesuffix("_hi") in utilities]
        display = comp.display_table()
        # the job's own figure; the run's risk_curves.png draws every comparison of the
        # run, here only this one: the same picture (shown once)
        figures = [p for p in (out / f"{key}_risk_curves.png", out / "risk_curves.png")
                   if p.is_file()][:1]
        notes, first = comp.footnotes(), next(iter(comp.rank_structure().values()), None)
        # best first on the first utility (the Release page offers the top one first)
        ranked = [m for g in first.groups for m in sorted(g)] if first else comp.ranked()
        unranked = {  # method -> why it has no rank: its footnote, word for word
            m.method: (unreached_note(m, comp.risk_measure, comp.target) if not m.matched
                       else next((n for n in notes if n.startswith(
                           f"{display_name(m.method)} is unranked")),
                           "it fails a risk constraint at its matched point"))
            for m in comp.matches if m.method not in ranked}
        return {
            "run_id": run_id, "title": self.status(run_id).title, "job": key,
            "answer": comp.answer(), "dataset": comp.dataset,
            "risk_measure": comp.risk_measure, "target": comp.target,
            "reference": comp.reference, "seed": comp.seed, "repeats": comp.repeats,
            "candidates": [m.method for m in comp.matches], "ranked": ranked,
            "unranked": unranked,
            "ranking": _records(table), "ties": comp.ties(),
            "display": {"columns": list(display.columns), "rows": _records(display),
                        "labels": comp.labels()},
            "risks": _records(table[["method", *risk_cols]].assign(
                method=table["method"].map(display_name))),
            "treatment": _records(comp.treatment_table().rename(
                columns=display_name).reset_index()),
            "notes": notes,
            "figures": figures,
            "report": out / "report.html", "ranking_csv": out / f"{key}_ranking.csv"}

    def release(self, run_id: str, candidate: str) -> dict[str, Path]:
        """The release of ``candidate`` (a method or strategy of the ranking) at its
        matched parameters and the comparison's seed, as ``sdceval anonymize`` makes
        it: rows in random order, its private key, its certificate and its report,
        in ``release/<candidate>/`` of the run folder."""
        from sdceval.compare.comparison import typed_params
        from sdceval.core.release_order import key_path_for
        from sdceval.experiments.certificate import certificate_path_for
        from sdceval.experiments.jobs import safe_name
        _, job, comp = self._comparison(run_id)
        match = {m.method: m for m in comp.matches}.get(candidate)
        if match is None:
            raise SdcevalError(f"run {run_id}: no candidate {candidate!r}; its candidates: "
                               + ", ".join(comp.ranked() or list({m.method for m in
                                                                  comp.matches})))
        if not match.matched:
            raise SdcevalError(f"run {run_id}: {candidate} did not reach the target risk, "
                               "so it has no matched release; choose a ranked candidate: "
                               + ", ".join(comp.ranked()))
        folder = private_dir(private_dir(self._dir(run_id) / RELEASES)
                              / safe_name(candidate, "release"))
        release = folder / "release.csv"
        paths = {"release": release, "key": key_path_for(release),
                 "certificate": certificate_path_for(release),
                 "report": folder / "report.html"}
        if all(p.is_file() for p in paths.values()):
            return paths
        for p in folder.iterdir():  # a release left half-made: made again
            p.unlink()
        argv = ["anonymize", *_data_options(job), "--method", candidate,
                *_param_options(typed_params(candidate, match.params)),
                "--seed", str(comp.seed), "--out", str(release), "--report",
                str(paths["report"]), "-q"]
        self._command(argv, folder)
        return paths

    def _command(self, argv: list[str], cwd: Path) -> None:
        """One ``sdceval`` command in a child process, waited for (tracked, so that
        `shutdown` ends it); its error line as an `SdcevalError`."""
        proc = subprocess.Popen([sys.executable, "-c", _COMMAND, *argv], cwd=cwd,
                                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, start_new_session=True)
        with self._lock:
            self._commands.add(proc)
        try:
            _, err = proc.communicate()
        finally:
            with self._lock:
                self._commands.discard(proc)
        if proc.returncode != 0:
            raise SdcevalError(f"sdceval {argv[0]}: "
                               + (_error_line(err) or f"exit code {proc.returncode}"))

    def reproduce(self, run_id: str) -> dict[str, str]:
        """This run as an experiment file, the command that runs it and the Python
        that computes the same comparison (the same seeds: the same ranking)."""
        run_dir = self._dir(run_id)
        text = (run_dir / EXPERIMENT).read_text(encoding="utf-8")
        experiment, job = split_config((_read_json(run_dir / RUN_FILE) or {})["config"])
        return {"toml": text, "command": f"sdceval run {EXPERIMENT} --out out",
                "python": python_snippet(experiment, job)}


def _records(frame) -> list[dict]:
    """A table's rows as plain values (NaN and NA as None)."""
    return json.loads(frame.to_json(orient="records", default_handler=str))


__all__ = ["GRACE", "STATES", "RunManager", "RunStatus", "experiment_toml", "python_snippet",
           "split_config", "worker_main"]
