"""Run an experiment file: spec -> tasks -> executor -> results -> report (SPEC §6).

Tasks are module-level functions of picklable arguments, so the same task runs in
this process, a local worker or a Dask worker.  Every task is seeded from the file, so
a run is exactly reproducible.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import pandas as pd

from sdceval.compare.ranking import (MethodMatch, assemble, check_comparison, check_risks,
                                     match_method, parse_measure_list, parse_reference,
                                     resolve_target, typed_params)
from sdceval.core.loaders import open_ref
from sdceval.core.fileio import write_csv, write_json
from sdceval.catalog import get_measure, get_method
from sdceval.experiments.executor import make_executor
from sdceval.experiments.spec import ExperimentSpec, Job, load_spec


# -- tasks (pure functions of picklable arguments) ----------------------------------
def task_match(data_ref, method, target_value, risk, risk_params, utilities, seed, repeats,
               fixed_params, risks=None) -> MethodMatch:
    ds = open_ref(data_ref)
    return match_method(ds, method, target_value, risk=risk, risk_params=risk_params,
                        utilities=utilities, seed=seed, repeats=repeats,
                        fixed_params=fixed_params, risks=risks)


def task_evaluate(data_ref, release, measures, seed) -> list[dict]:
    """One release, every measure.  A risk measure's other readings of the same release
    (``details["readings"]``: linkage_risk's re-identification rates and its value in
    the other scale) become rows too, with ``reading_of`` naming the measure, so a
    table of risks at fixed parameters shows them as `compare` does at matched ones."""
    ds = open_ref(data_ref)
    name, params = parse_reference(release)
    spec = get_method(name)
    rel = spec.apply(ds, params, seed=seed)
    params = typed_params(name, params)  # "5" from the text -> 5 (k is an int)
    base = {"data": ds.name, "release": release, "method": name,
            **{f"param_{k}": v for k, v in params.items()}, "seed": seed}
    rows, readings = [], []
    for label, (mname, mparams) in measures.items():
        m = get_measure(mname).evaluate(ds, rel, mparams)
        rows.append({**base, "measure": label, "value": m.value,
                     "larger_is_worse": m.larger_is_worse, "reading_of": None})
        for k, v in (m.details.get("readings") or {}).items():
            readings.append({**base, "measure": k, "value": float(v),
                             "larger_is_worse": None, "reading_of": label})
    seen = {r["measure"] for r in rows}
    for r in readings:  # one row per reading (two linkage variants share their rates)
        if r["measure"] not in seen:
            seen.add(r["measure"])
            rows.append(r)
    return rows


# -- jobs ----------------------------------------------------------------------------
@dataclass
class ExperimentResult:
    spec: ExperimentSpec
    out: Path
    comparisons: dict[str, Any] = field(default_factory=dict)
    evaluations: dict[str, pd.DataFrame] = field(default_factory=dict)
    tradeoffs: dict[str, Any] = field(default_factory=dict)
    lattices: dict[str, Any] = field(default_factory=dict)
    vectors: dict[str, Any] = field(default_factory=dict)
    pbgs: dict[str, Any] = field(default_factory=dict)
    files: list[Path] = field(default_factory=list)

    def summary(self) -> str:
        lines = [f"experiment {self.spec.name}: {len(self.spec.jobs)} job(s), "
                 f"results in {self.out}"]
        for key, comp in self.comparisons.items():
            lines.append(f"\n[{key}] target {comp.risk_measure} = {comp.target:.4g}")
            table = comp.table()
            lines.append(table.to_string(index=False, formatters={
                c: _fmt for c in table.columns if table[c].dtype in (float, object)}))
            lines += [f"* {note}" for note in comp.footnotes()]
        for key, df in self.evaluations.items():
            lines.append(f"\n[{key}]")
            if not df.empty:
                lines.append(df.pivot_table(index="release", columns="measure", values="value",
                                            aggfunc="mean", sort=False)
                             .to_string(float_format=lambda v: f"{v:.4g}"))
        for key, result in [*self.tradeoffs.items(), *self.lattices.items()]:
            lines += [f"\n[{key}]", str(result)]
        for key, result in [*self.vectors.items(), *self.pbgs.items()]:
            lines += [f"\n[{key}] {result.title}", str(result)]
        lines.append("\nfiles: " + ", ".join(str(f) for f in self.files))
        return "\n".join(lines)


def _fmt(v) -> str:
    return f"{v:.4g}" if isinstance(v, float) else str(v)


def records(df: pd.DataFrame) -> list[dict]:
    """Rows of ``df`` for JSON: full float precision (``DataFrame.to_json`` rounds to 10
    digits), ints kept as ints, missing values as ``null``."""
    return df.astype(object).where(df.notna(), None).to_dict(orient="records")


def _run_comparison(job: Job, spec: ExperimentSpec, executor, say) -> Any:
    o = job.options
    ref = job.data_ref()
    ds = open_ref(ref)
    methods = list(o.get("methods", ["mdav", "noise", "rank_swap", "multiplicative_noise"]))
    risk, rparams = parse_reference(o.get("risk", "linkage_risk"))
    _, rparams, utils = check_comparison(methods, risk, rparams,
                                         o.get("utilities", ["propensity", "emd"]))
    risks = check_risks(o.get("risks"))
    target, reference = resolve_target(ds, o.get("target", "mdav:k=5"), risk, rparams,
                                       spec.seed)
    say(f"[{job.key}] target {risk} = {target:.6g}"
        + (f" (risk of {reference})" if reference else "")
        + f"; matching {len(methods)} methods")
    tasks = [dict(data_ref=ref, method=m, target_value=target, risk=risk,
                  risk_params=rparams, utilities=utils, seed=spec.seed,
                  repeats=spec.repeats, fixed_params=o.get("method_params", {}).get(m),
                  risks=risks)
             for m in methods]
    matches = executor.map(task_match, tasks, progress=_bar(say, job.key, len(tasks)))
    return assemble(ds.name, matches, target=target, reference=reference, risk=risk,
                    risk_params=rparams, utilities=utils, seed=spec.seed,
                    repeats=spec.repeats)


def _run_evaluation(job: Job, spec: ExperimentSpec, executor, say) -> pd.DataFrame:
    o = job.options
    measures = parse_measure_list(o.get("measures", ["linkage_risk"]))
    seeds = o.get("seeds", [spec.seed])
    tasks = [dict(data_ref=job.data_ref(), release=r, measures=measures, seed=s)
             for r in o["releases"] for s in seeds]
    say(f"[{job.key}] {len(tasks)} releases x {len(measures)} measures")
    rows = [row for res in executor.map(task_evaluate, tasks,
                                        progress=_bar(say, job.key, len(tasks)))
            for row in res]
    df = pd.DataFrame(rows)
    for c in df.columns:
        if c.startswith("param_"):
            # releases of different methods leave each other's parameters empty; an int
            # column with gaps would turn float (k = 5.0): keep the registered types
            df[c] = pd.Series([r.get(c) for r in rows], dtype=object, index=df.index)
    return df


def _bar(say, key: str, total: int) -> Callable | None:
    if say is None or total <= 1:
        return None
    try:
        from tqdm.auto import tqdm
    except ImportError:  # pragma: no cover
        return None
    bar = tqdm(total=total, desc=key, leave=False, disable=None)

    def update(done, _total):
        bar.update(done - bar.n)
        if done >= total:
            bar.close()
    return update


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
            if job.kind == "comparison":
                comp = _run_comparison(job, spec, ex, say)
                result.comparisons[job.key] = comp
                result.files.append(write_csv(comp.table(), out / f"{job.key}_ranking.csv"))
            elif job.kind == "evaluation":
                df = _run_evaluation(job, spec, ex, say)
                result.evaluations[job.key] = df
                result.files.append(write_csv(df, out / f"{job.key}_measurements.csv"))
            elif job.kind == "lattice":
                from sdceval.experiments.lattice_job import run_lattice_job
                result.lattices[job.key] = run_lattice_job(job, spec, ex, say, out)
                result.files.extend(result.lattices[job.key].files)
            elif job.kind == "vectors":
                from sdceval.experiments.vectors_job import run_vectors_job
                result.vectors[job.key] = run_vectors_job(job, spec, ex, say, out)
                result.files.extend(result.vectors[job.key].files)
            elif job.kind == "pbg":
                from sdceval.experiments.pbg_job import run_pbg_job
                result.pbgs[job.key] = run_pbg_job(job, spec, ex, say, out)
                result.files.extend(result.pbgs[job.key].files)
            else:
                from sdceval.experiments.tradeoff import run_tradeoff_job
                result.tradeoffs[job.key] = run_tradeoff_job(job, spec, ex, say, out)
                result.files.extend(result.tradeoffs[job.key].files)
    finally:
        ex.close()
    payload = {"experiment": spec.name, "description": spec.description,
               "file": str(spec.path), "seed": spec.seed, "repeats": spec.repeats,
               "reduced": reduced,
               "comparisons": {k: c.to_dict() for k, c in result.comparisons.items()},
               "evaluations": {k: records(d) for k, d in result.evaluations.items()},
               "tradeoffs": {k: t.to_dict() for k, t in result.tradeoffs.items()},
               "lattices": {k: j.to_dict() for k, j in result.lattices.items()},
               "vectors": {k: v.to_dict() for k, v in result.vectors.items()},
               "pbg": {k: v.to_dict() for k, v in result.pbgs.items()},
               "paper": spec.paper}
    result.files.append(write_json(payload, out / "results.json"))
    result.files.extend(write_report(result, out))
    return result


__all__ = ["run_experiment", "ExperimentResult"]
