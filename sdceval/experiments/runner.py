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
        return "\n".join(lines)


def run_experiment(path, out=None, executor: str | None = None, workers: int | None = None,
                   reduced: bool = False, progress: Callable[[str], None] | None = None
                   ) -> ExperimentResult:
    """Load, validate and run an experiment file; write results and a report."""
    from sdceval.experiments.report import write_report
    spec = load_spec(path, reduced=reduced)
    out = Path(out) if out else spec.output
    say = progress or (lambda m: None)
    ex = make_executor(executor or spec.executor, workers or spec.workers, spec.scheduler)
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
    return result


__all__ = ["run_experiment", "ExperimentResult"]
