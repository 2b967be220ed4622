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
from sdceval.experiments.executor import make_executor
from sdceval.experiments.jobs import JOB_KINDS
from sdceval.experiments.spec import ExperimentSpec, load_spec


@dataclass
class ExperimentResult:
    """Every job's result, by kind and job key (`of`), and every file written.  The
    per-kind properties are the views the report and callers read."""

    spec: ExperimentSpec
    out: Path
    results: dict[str, dict[str, Any]] = field(default_factory=dict)
    files: list[Path] = field(default_factory=list)

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


#: the files a run writes in its folder besides its jobs' ``<key>_*`` files
FIXED_OUTPUTS = ("results.json", "report.md", "report.html", "risk_curves.png")


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
                if isinstance(v, str) and v and Path(v).is_file():
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


def run_experiment(path, out=None, executor: str | None = None, workers: int | None = None,
                   reduced: bool = False, progress: Callable[[str], None] | None = None,
                   scheduler: str | None = None) -> ExperimentResult:
    """Load, validate and run an experiment file; write results and a report."""
    from sdceval.experiments.report import write_report
    spec = load_spec(path, reduced=reduced)
    out = Path(out) if out else spec.output
    check_outputs(spec, out)
    say = progress or (lambda m: None)
    scheduler = scheduler or spec.scheduler
    ex = make_executor("dask" if scheduler and not executor else executor or spec.executor,
                       workers or spec.workers, scheduler)
    result = ExperimentResult(spec, out)
    try:
        for job in spec.jobs:
            res = JOB_KINDS[job.kind].run(job, spec, ex, say, out)
            result.results.setdefault(job.kind, {})[job.key] = res
            result.files.extend(res.files)
    finally:
        ex.close()
    payload = {"experiment": spec.name, "description": spec.description,
               "file": str(spec.path), "seed": spec.seed, "repeats": spec.repeats,
               "reduced": reduced,
               **{kind.section: {k: r.to_dict() for k, r in result.of(name).items()}
                  for name, kind in JOB_KINDS.items()},
               "paper": spec.paper}
    result.files.append(write_json(payload, out / "results.json"))
    result.files.extend(write_report(result, out))
    result.files.append(write_html_report(result, out))
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
    extra = {"experiment file": Path(spec.path).name, "seed": str(spec.seed),
             "repeats": str(spec.repeats),
             "data": ", ".join(dict.fromkeys(str(j.options.get("data")) for j in spec.jobs))}
    return write_page(Path(out) / "report.html", spec.name, sections,
                      run_inputs(None, extra), lead=spec.description)


__all__ = ["run_experiment", "ExperimentResult", "planned_outputs", "check_outputs"]
