"""Run an experiment file: spec -> tasks -> executor -> results -> report (SPEC §6).

Each job runs through its kind's orchestration (`sdceval.experiments.jobs.JOB_KINDS`):
tasks are module-level functions of picklable arguments, so the same task runs in
this process, a local worker or a Dask worker.  Every task is seeded from the file, so
a run is exactly reproducible.  ``results.json`` holds, besides the file's settings,
one section per job kind (its ``section``), job key -> the result's ``to_dict()``.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from sdceval.core.errors import SdcevalError
from sdceval.core.fileio import write_json
from sdceval.experiments.executors import make_executor
from sdceval.experiments.jobs import JOB_KINDS, names_file
from sdceval.experiments.spec import ExperimentSpec, load_spec


@dataclass
class ExperimentResult:
    """Every job's result, by kind and job key (`of`), and every file written.  The
    per-kind properties are the views the report and callers read."""

    spec: ExperimentSpec
    out: Path
    results: dict[str, dict[str, Any]] = field(default_factory=dict)
    files: list[Path] = field(default_factory=list)
    #: the run's metadata (`run_metadata`) and each job's timings
    metadata: dict[str, Any] = field(default_factory=dict)
    timings: dict[str, dict] = field(default_factory=dict)

    def of(self, kind: str) -> dict[str, Any]:
        """The results of the jobs of ``kind``, by job key, in the file's order."""
        return self.results.get(kind, {})

    @property
    def comparisons(self) -> dict:
        """Job key -> `sdceval.compare.ranking.Comparison`."""
        return {k: r.comparison for k, r in self.of("comparison").items()}

    @property
    def evaluations(self) -> dict:
        """Job key -> the rows of `sdceval.experiments.evaluation_job.task_evaluate`."""
        return {k: r.frame for k, r in self.of("evaluation").items()}

    @property
    def tradeoffs(self) -> dict:
        return self.of("tradeoff")

    @property
    def lattices(self) -> dict:
        return self.of("lattice")

    @property
    def vectors(self) -> dict:
        return self.of("vectors")

    @property
    def pbgs(self) -> dict:
        return self.of("pbg")

    def summary(self) -> str:
        lines = [f"experiment {self.spec.name}: {len(self.spec.jobs)} job(s), "
                 f"results in {self.out}"]
        for job in self.spec.jobs:
            res = self.results[job.kind][job.key]
            headline = getattr(res, "headline", None)
            lines.append(f"\n[{job.key}]" + ("" if headline is None else f" {headline}"))
            text = str(res)
            if text:
                lines.append(text)
        lines.append("\nfiles: " + ", ".join(str(f) for f in self.files))
        lines.append(f"\nreport: {self.out / 'report.html'}")
        return "\n".join(lines)


#: the files a run writes from its results when it ends (removed when it starts)
DERIVED_OUTPUTS = ("results.json", "report.md", "report.html", "risk_curves.png",
                   "timings.json")
#: the files a run writes in its folder besides its jobs' ``<key>_*`` files
FIXED_OUTPUTS = DERIVED_OUTPUTS + ("results.sqlite", "results.sqlite-wal",
                                   "results.sqlite-shm")


def planned_outputs(spec: ExperimentSpec, out) -> tuple[list[Path], list[str]]:
    """What a run of ``spec`` may write in ``out``, known before any job runs: the
    paths of `FIXED_OUTPUTS` and the name prefixes of its jobs' files (each job kind
    writes ``<key>_...`` files in ``out``)."""
    out = Path(out)
    return [out / name for name in FIXED_OUTPUTS], [f"{job.key}_" for job in spec.jobs]


def _experiment_inputs(spec: ExperimentSpec) -> set[Path]:
    """The files the run reads that are known without opening anything: the experiment
    file, every option naming a file, and every file protected so far
    (`sdceval.core.fileio.protect`: ``sdceval run`` protects the hierarchy files too)."""
    from sdceval.core import fileio
    paths = {spec.path, *fileio.protected()}
    for job in spec.jobs:
        for o in job.options.values():
            for v in (o if isinstance(o, list) else [o]):
                if names_file(v):
                    paths.add(Path(v))
    return {Path(p).resolve() for p in paths if Path(p).exists()}


def check_outputs(spec: ExperimentSpec, out, inputs=()) -> None:
    """Before any job runs (issue 22 items 7, 9): every planned output stays in ``out``
    and none is an input file (of any job, or ``inputs``)."""
    out = Path(out)
    root = out.resolve()
    fixed, prefixes = planned_outputs(spec, out)
    for path in [*fixed, *(out / f"{p}x" for p in prefixes)]:
        if path.resolve().parent != root:
            raise SdcevalError(f"refusing to write {str(path)!r}: it is not in the output "
                               f"folder {str(out)!r}")
    for src in sorted(_experiment_inputs(spec) | {Path(p).resolve() for p in inputs}):
        if src.parent != root:
            continue
        if src in {p.resolve() for p in fixed}:
            raise SdcevalError(f"refusing to write {str(out / src.name)!r}: it is an input "
                               "file; choose another --out")
        for job, prefix in zip(spec.jobs, prefixes):
            if src.name.startswith(prefix):
                raise SdcevalError(
                    f"refusing to run: input file {str(src)!r} carries the name of an "
                    f"output of job [{job.key}] (its files {prefix}* in {str(out)!r}); "
                    "choose another --out")


def job_spec(job, spec: ExperimentSpec) -> dict:
    """What a job's result depends on, resolved (its sha256 is the job's key in the
    results store): its kind, its
    options (the data options replaced by the data set's fingerprint, every option
    naming a file by the file's content), its seed and repeats, sdceval's version."""
    import sdceval
    from sdceval.core.fingerprint import dataset_fingerprint, file_fingerprint
    from sdceval.core.loaders import open_ref
    from sdceval.experiments.jobs import DATA_KEYS

    def resolved(v):
        if isinstance(v, list):
            return [resolved(x) for x in v]
        if isinstance(v, dict):
            return {k: resolved(x) for k, x in v.items()}
        if names_file(v):
            return {"file_sha256": file_fingerprint(v)}
        return v
    options = {k: resolved(v) for k, v in job.options.items()
               if k not in DATA_KEYS and k not in ("title", "seed")}
    return {"kind": job.kind, "options": options, "seed": job.seed(spec),
            "repeats": spec.repeats, "data": dataset_fingerprint(open_ref(job.data_ref())),
            "sdceval": sdceval.__version__}


def _git_commit() -> str | None:
    """The commit of sdceval's own source tree, when it is a git checkout."""
    import subprocess
    here = Path(__file__).resolve().parent
    try:
        got = subprocess.run(["git", "-C", str(here), "rev-parse", "HEAD"],
                             capture_output=True, text=True, timeout=5)
    except (OSError, subprocess.SubprocessError):
        return None
    commit = got.stdout.strip()
    if got.returncode != 0 or not commit:
        return None
    dirty = subprocess.run(["git", "-C", str(here), "status", "--porcelain", "--", "."],
                           capture_output=True, text=True, timeout=5).stdout.strip()
    return commit + ("+changes" if dirty else "")


def run_metadata(spec: ExperimentSpec, ex, plan) -> dict:
    """What a run records about itself (issue 21 item 6): sdceval's version and git
    commit, the start time, the experiment file's hash, every job's data fingerprint and
    key, the executor and the thread settings."""
    import platform
    import time

    import sdceval
    from sdceval.core import threads
    from sdceval.core.fingerprint import file_fingerprint
    return {"sdceval": sdceval.__version__, "git_commit": _git_commit(),
            "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "python": platform.python_version(), "experiment": spec.name,
            "experiment_file": str(spec.path),
            "experiment_sha256": file_fingerprint(spec.path),
            "executor": ex.describe(), "thread_budget": threads.budget(),
            "jobs": {job.key: {"hash": h, "data": js["data"]} for job, js, h in plan}}


def _remove_stale(out: Path, prefix: str) -> None:
    """A job about to run: files an earlier run left under its prefix are removed first,
    so no file of another specification sits beside this run's (`check_outputs` made
    sure no input file carries the prefix)."""
    for f in out.glob(f"{prefix}*"):
        if f.is_file():
            f.unlink()


def run_experiment(path, out=None, executor: str | None = None, workers: int | None = None,
                   reduced: bool = False, progress: Callable[[str], None] | None = None,
                   scheduler: str | None = None, fresh: bool = False,
                   trust_legacy_store: bool = False,
                   connect_timeout: float | None = None) -> ExperimentResult:
    """Load, validate and run an experiment file; write results and a report.

    Every finished job is saved in the output folder's results store
    (`sdceval.experiments.store`), keyed by the sha256 of its `job_spec`; running the same file again
    reuses each job found there ("resuming: 7 of 12 jobs already done") unless
    ``fresh``.  Every file is written from the results, so a resumed run writes the same
    files as an uninterrupted one; timings go to ``timings.json`` only.  A store of an
    earlier sdceval (pickled results) is refused unless ``fresh`` or
    ``trust_legacy_store`` (docs/store.md: reading a pickle executes code).

    Workers: the file's ``workers`` (or ``workers``) is honoured; a thread budget
    chosen with ``--threads`` / ``SDCEVAL_THREADS`` caps it (processes x threads never
    exceed the budget); the rule is said once in the progress messages.
    ``connect_timeout``: seconds a Dask ``scheduler`` has to answer (default
    `sdceval.experiments.dask_executor.CONNECT_TIMEOUT`)."""
    from sdceval.core import threads
    from sdceval.core.timings import split_timings
    from sdceval.experiments.report import write_report
    from sdceval.experiments.store import STORE_NAME, ResultsStore
    spec = load_spec(path, reduced=reduced)
    out = Path(out) if out else spec.output
    check_outputs(spec, out)
    say = progress or (lambda m: None)
    scheduler = scheduler or spec.scheduler
    kind_name = "dask" if scheduler and not executor else executor or spec.executor
    n_workers = workers or spec.workers
    from sdceval.core.fingerprint import spec_hash
    specs = [(job, job_spec(job, spec)) for job in spec.jobs]
    plan = [(job, js, spec_hash(js)) for job, js in specs]
    chosen = threads.explicit()
    with threads.raised_to(n_workers if kind_name == "processes" else 1):
        ex = make_executor(kind_name, n_workers, scheduler, timeout=connect_timeout)
        try:
            if kind_name != "serial":
                say(f"executor: {ex.describe()} (the file's workers = {spec.workers}"
                    + ("" if workers is None else f", --workers {workers}") + "; "
                    + (f"capped by the thread budget {threads.budget()}"
                       if chosen else "--threads caps it when given") + ")")
            # a store of an earlier sdceval (pickled results): docs/store.md
            store = ResultsStore(out, fresh=fresh, trust_legacy=trust_legacy_store, say=say)
            result = _run_jobs(spec, plan, ex, store, out, say, fresh)
        finally:
            ex.close()
    meta = result.metadata
    payload = {"experiment": spec.name, "description": spec.description,
               "file": str(spec.path), "seed": spec.seed, "repeats": spec.repeats,
               "reduced": reduced,
               **{kind.section: {k: r.to_dict() for k, r in result.of(name).items()}
                  for name, kind in JOB_KINDS.items()},
               "paper": spec.paper}
    payload, inner = split_timings(payload)
    # the run's metadata is what differs between identical runs besides the timings
    payload["run"] = {k: v for k, v in meta.items() if k != "started"}
    result.files.append(write_json(payload, out / "results.json"))
    result.files.append(write_json({"started": meta["started"], "jobs": result.timings,
                                    "inside": inner}, out / "timings.json"))
    result.files.extend(write_report(result, out))
    result.files.append(write_html_report(result, out))
    say(f"results store: {out / STORE_NAME} (sdceval results {out})")
    return result


def _run_jobs(spec, plan, ex, store, out: Path, say, fresh: bool) -> ExperimentResult:
    """Each job from the store when it is there (and not ``fresh``), else run and saved;
    its files written from its result."""
    import time
    result = ExperimentResult(spec, out)
    done = {h for _, _, h in plan if not fresh and store.done(h)}
    if done:
        say(f"resuming: {len(done)} of {len(plan)} jobs already done "
            f"({store.path.name}; --fresh recomputes them)")
    # derived files of an earlier run go first: rewritten when this run ends, and an
    # interrupted run must not leave a report of other results beside its own
    for name in DERIVED_OUTPUTS:
        if (out / name).is_file():
            (out / name).unlink()
    result.metadata = run_metadata(spec, ex, plan)
    run_id = store.begin_run(result.metadata)
    status = "failed"
    try:
        for job, js, h in plan:
            kind = JOB_KINDS[job.kind]
            if h in done:
                res = store.load(h)
                result.timings[job.key] = store.timings(h)
            else:
                _remove_stale(out, f"{job.key}_")
                t0 = time.perf_counter()
                res = kind.run(job, spec, ex, say)
                timings = {"seconds": round(time.perf_counter() - t0, 3)}
                store.save(h, kind=job.kind, key=job.key, title=job.title, spec=js,
                           result=res, rows=[{**job.sweep, **r} for r in
                                             (kind.rows(res) if kind.rows else [])],
                           timings=timings, run_id=run_id)
                result.timings[job.key] = timings
            files = kind.write(res, out, f"{job.key}_") if kind.write else []
            res.files = list(files)
            result.results.setdefault(job.kind, {})[job.key] = res
            result.files.extend(files)
        status = "done"
    except KeyboardInterrupt:  # SIGTERM too (sdceval.core.processes.Terminated)
        status = "interrupted"
        raise
    finally:
        store.end_run(run_id, status)
        store.close()
    return result


def write_html_report(result: ExperimentResult, out) -> Path:
    """``report.html``: one page for the experiment, a section per job (its kind's
    `JobKind.report`) under a contents list, then the paper comparisons the file asks
    for (`sdceval.experiments.report.paper_sections`)."""
    from sdceval.experiments.report_html import run_inputs, write_page
    from sdceval.experiments.jobs import report_section
    from sdceval.experiments.report import paper_sections
    spec = result.spec
    sections = []
    for job in spec.jobs:
        res = result.results[job.kind][job.key]
        s = report_section(job.kind, res)
        s.title = f"{s.title} [{job.key}]"
        s.anchor = job.key
        sections.append(s)
    sections += paper_sections(result)
    meta = result.metadata
    extra = {"experiment file": Path(spec.path).name, "seed": str(spec.seed),
             "repeats": str(spec.repeats),
             "data": ", ".join(dict.fromkeys(str(j.options.get("data")) for j in spec.jobs)),
             "data fingerprints": "; ".join(
                 f"{k}: {v['data'][:12]}" for k, v in meta.get("jobs", {}).items()),
             "executor": meta.get("executor"), "thread budget": meta.get("thread_budget"),
             "git commit": meta.get("git_commit"), "started": meta.get("started")}
    return write_page(Path(out) / "report.html", spec.name, sections,
                      run_inputs(None, extra), lead=spec.description)


__all__ = ["run_experiment", "ExperimentResult", "planned_outputs", "check_outputs"]
