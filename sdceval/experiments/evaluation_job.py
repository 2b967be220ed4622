"""``[[evaluation]]`` jobs: fixed parameterizations x measures (the paper's parameters,
beside the bisected ones of ``[[comparison]]``).

Every release (method spec) at every seed is one task (`task_evaluate`); the rows, one
per release, seed and measure, are written as ``<key>_measurements.csv`` and under
``"evaluations"`` in ``results.json`` (`records`: full float precision).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from sdceval.catalog import get_measure, get_method
from sdceval.compare.ranking import parse_measure_list, parse_reference, typed_params
from sdceval.core.errors import SdcevalError
from sdceval.core.fileio import write_csv
from sdceval.core.glossary import release_label, term
from sdceval.core.text_table import console_table, fill
from sdceval.core.loaders import open_ref
from sdceval.experiments.report_html import Section, paragraph
from sdceval.experiments.jobs import register_job_kind, task_progress
from sdceval.measures._nearest import sample_phrase

DEFAULT_MEASURES = ["linkage_risk"]


def validate_evaluation_options(opts: dict) -> None:
    """Check an ``[[evaluation]]`` job's releases and measures before anything runs."""
    if not opts.get("releases"):
        raise SdcevalError("'releases' is required, e.g. [\"mdav:k=5\"]")
    for r in opts["releases"]:
        name, params = parse_reference(r)
        get_method(name).resolve(params)
    parse_measure_list(opts.get("measures", DEFAULT_MEASURES))


def task_evaluate(data_ref, release, measures, seed) -> list[dict]:
    """One release, every measure.  A risk measure's other readings of the same release
    (``details["readings"]``: linkage_risk's re-identification rates and its value in
    the other scale) become rows too, with ``reading_of`` naming the measure, so a
    table of risks at fixed parameters shows them as `compare` does at matched ones."""
    ds = open_ref(data_ref)
    name, params = parse_reference(release)
    spec = get_method(name)
    rel = spec.apply(ds, spec.experiment(params), seed=seed)
    params = typed_params(name, params)  # "5" from the text -> 5 (k is an int)
    base = {"data": ds.name, "release": release, "method": name,
            **{f"param_{k}": v for k, v in params.items()}, "seed": seed}
    rows, readings = [], []
    for label, (mname, mparams) in measures.items():
        m = get_measure(mname).evaluate(ds, rel, mparams)
        row = {**base, "measure": label, "value": m.value,
               "larger_is_worse": m.larger_is_worse, "reading_of": None}
        sample = m.details.get("sample") if isinstance(m.details, dict) else None
        if sample:   # an estimate from a sample of records (large tables)
            row.update(sampled_records=sample["sampled_records"],
                       standard_error=sample["standard_error"])
        rows.append(row)
        for k, v in (m.details.get("readings") or {}).items():
            readings.append({**base, "measure": k, "value": float(v),
                             "larger_is_worse": None, "reading_of": label})
    seen = {r["measure"] for r in rows}
    for r in readings:  # one row per reading (two linkage variants share their rates)
        if r["measure"] not in seen:
            seen.add(r["measure"])
            rows.append(r)
    return rows


def records(df: pd.DataFrame) -> list[dict]:
    """Rows of ``df`` for JSON: full float precision (``DataFrame.to_json`` rounds to 10
    digits), ints kept as ints, missing values as ``null``."""
    return df.astype(object).where(df.notna(), None).to_dict(orient="records")


@dataclass
class EvaluationJobResult:
    """One ``[[evaluation]]`` job's rows (`task_evaluate`) and files."""

    key: str
    frame: pd.DataFrame
    files: list[Path] = field(default_factory=list)

    def to_dict(self) -> list[dict]:
        return records(self.frame)

    def __str__(self) -> str:
        if self.frame.empty:
            return ""
        wide = _wide(self.frame)
        return "\n".join([fill(evaluation_answer(wide)),
                          console_table(wide, where=f"{self.key}_measurements.csv")])


def _wide(frame: pd.DataFrame) -> pd.DataFrame:
    """One row per release (display name), one column per measure (means over seeds)."""
    wide = frame.pivot_table(index="release", columns="measure", values="value",
                             aggfunc="mean", sort=False).reset_index()
    wide.columns.name = None
    wide["release"] = [release_label(r) for r in wide["release"]]
    return wide


def evaluation_answer(wide: pd.DataFrame) -> str:
    """Which release is best on each measure with a direction, in one sentence."""
    best = []
    for m in wide.columns[1:]:
        t = term(m)
        vals = wide[m].astype(float)
        if t is None or t.lower_is_better is None or vals.isna().all():
            continue
        lower = t.lower_is_better
        i = vals.idxmin() if lower else vals.idxmax()
        best.append(f"{wide['release'][i]} {'has the least' if lower else 'is best on'} "
                    f"{t.label}")
    return "; ".join(best) + "." if best else ""


def evaluation_section(result) -> Section:
    """The HTML section of an evaluation job: one row per release, one column per
    measure (means over the seeds), display names and directions in the headers."""
    df = result.frame
    s = Section(f"{df['data'].iloc[0] if not df.empty else ''}: releases at fixed "
                "parameters")
    if df.empty:
        return s
    wide = _wide(df)
    seeds = df["seed"].nunique() if "seed" in df else 1
    s.answer = evaluation_answer(wide)
    s.add(paragraph("Every release measured with every measure"
                    + (f" (means over {seeds} seeds)" if seeds > 1 else "") + "."))
    s.add_table(wide, css="ranking", text_columns=("release",))
    if "sampled_records" in df and df["sampled_records"].notna().any():
        est = df.dropna(subset=["sampled_records"])
        s.notes.append(
            f"{', '.join(dict.fromkeys(est['measure']))}: "
            f"{sample_phrase(int(est['sampled_records'].iloc[0]))} (standard error at "
            f"most {est['standard_error'].max():.2g}; "
            "the measurements file has each one); sample=0 links every record.")
    return s


def write_evaluation_job(result: EvaluationJobResult, out, prefix: str) -> list[Path]:
    return [write_csv(result.frame, Path(out) / f"{prefix}measurements.csv")]


def evaluation_rows(result: EvaluationJobResult) -> list[dict]:
    """The job's rows as they are: one per release, seed and measure."""
    return records(result.frame)


@register_job_kind(
    "evaluation", section="evaluations", report=evaluation_section,
    write=write_evaluation_job, rows=evaluation_rows,
    description="fixed parameterizations x measures (releases at given parameters)",
    keys=("releases", "measures", "seeds"), validate=validate_evaluation_options,
    example={"releases": ["mdav:k=5", "noise:gamma=0.5"]})
def run_evaluation_job(job, spec, executor, say) -> EvaluationJobResult:
    o = job.options
    measures = parse_measure_list(o.get("measures", DEFAULT_MEASURES))
    seeds = o.get("seeds", [job.seed(spec)])
    tasks = [dict(data_ref=job.data_ref(), release=r, measures=measures, seed=s)
             for r in o["releases"] for s in seeds]
    say(f"{job.tag}{len(tasks)} releases x {len(measures)} measures")
    rows = [row for res in executor.map(task_evaluate, tasks,
                                        progress=task_progress(job, len(tasks)))
            for row in res]
    df = pd.DataFrame(rows)
    for c in df.columns:
        if c.startswith("param_"):
            # releases of different methods leave each other's parameters empty; an int
            # column with gaps would turn float (k = 5.0): keep the registered types
            df[c] = pd.Series([r.get(c) for r in rows], dtype=object, index=df.index)
    return EvaluationJobResult(job.key, df)
