"""``[[comparison]]`` jobs and ``sdceval compare``: every method matched by bisection to
one risk level, then ranked by utility (Domingo-Ferrer, Ricci & Soria-Comas §3;
`sdceval.compare.ranking`).

A job's options are parsed once, when the job is built (`comparison_plan`, the kind's
``validate``: a `sdceval.compare.ranking.ComparisonPlan` kept as the job's ``plan``),
and the job runs the steps of the Python API (`sdceval.compare.ranking.run_comparison`)
with the plan: one method is one task (`sdceval.compare.ranking.task_match`), so the
executors match the methods in parallel.  A job writes ``<key>_ranking.csv``;
``sdceval compare`` runs the same orchestration (`comparison_result`) on the serial
executor and writes ``ranking.csv`` beside its own ``results.json`` and
``risk_curves.png``.

``method_params`` holds parameters fixed during a method's search, e.g. the privacy
models of Mondrian (``{"mondrian": {"models": ["k=5", "l=3"]}}``, what ``compare
--model`` gives every method that enforces models): bisection then tunes the first
model's threshold (`sdceval.compare.bisection.tuning`).
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path

from sdceval.compare import ranking
from sdceval.compare.attacks import attack_sentence
from sdceval.compare.ranking import Comparison, ComparisonPlan, typed_value
from sdceval.core.fileio import write_csv
from sdceval.core.loaders import open_ref
from sdceval.core.registry import Param
from sdceval.core.glossary import axis_label, release_label
from sdceval.core.text_table import console_table, fill
from sdceval.experiments.report_html import Section, heading, paragraph
from sdceval.experiments.jobs import register_job_kind, task_progress

RISK = Param("risk", str, default=None,
             description="risk measure matched, parameters after a colon "
                         "(linkage_risk:aggregate=mean), or the worse of several shares "
                         "(max(reidentification,attribute_inference)); default "
                         "reidentification (sdceval.compare.families)")
TARGET = Param("target", str, default=None,
               description="target risk: a number on the risk measure's scale, or a "
                           "reference method:param=value whose risk is the target; default "
                           "mdav:k=5 with numeric attributes, else mondrian:k=5")
TOLERANCE = Param("tolerance", float, default=0.05, low=0.0, high=1.0, high_inclusive=False,
                  unit="share of the target",
                  description="a method is matched, hence ranked, only when its risk is "
                              "within this share of the target, or within its knob's "
                              "smallest step when that is larger; otherwise it is listed "
                              "as nearest reachable (sdceval.compare.bisection)")

INTRUDER = Param("intruder", str, default=None,
                 description="the columns the intruder knows, comma-separated, the same for "
                             "every candidate (default: every quasi-identifier and numeric "
                             "attribute, and the kept columns; SPEC §5)")


MAX_RISK = Param("max_risk", str, default=None,
                 description="risk constraints every ranked candidate meets at its matched "
                             "point, MEASURE=LIMIT separated by ';' (global=0.01: sdcMicro's "
                             "global risk, expected re-identifications per record, at most "
                             "1 %; sdceval.compare.constraints)")


FAMILIES = Param("families", str, default=None,
                 description="draw the default candidates from these families, "
                             "comma-separated: sdc, synthetic, dp (with synthetic or dp, "
                             "every candidate is matched on the worst of the attacks "
                             "singling_out, linkability, inference; sdceval.compare."
                             "families)")
CONTROL = Param("control", float, default=None, low=0.0, high=1.0, low_inclusive=False,
                high_inclusive=False, unit="share of the records",
                description="share of the records held out before anonymization as the "
                            "attacks' control set, when a measure needs one (default 0.2; "
                            "sdceval.compare.control_set)")


GUIDELINE = Param("guideline", str, default=None,
                  description="a guideline profile every ranked candidate meets at its "
                              "matched point (ema-0070, sdcmicro-global, a profile file; "
                              "population assumptions after a colon: "
                              "ema-0070:population_size=300000); sdceval.guidelines")


def comparison_plan(opts: dict) -> ComparisonPlan:
    """A ``[[comparison]]`` job's options parsed and checked once, before anything runs
    (every name and parameter against its registry: `ranking.plan_comparison`, the
    parse of the Python API's keywords); the job keeps it as its ``plan``."""
    return ranking.plan_comparison(
        opts.get("methods"), risk=opts.get("risk"), target=opts.get("target"),
        utilities=opts.get("utilities"), risks=opts.get("risks"),
        method_params=opts.get("method_params"), intruder=opts.get("intruder"),
        max_risk=opts.get("max_risk"), guideline=opts.get("guideline"),
        families=opts.get("families"), control=opts.get("control"),
        **({} if opts.get("tolerance") is None else {"tolerance": opts["tolerance"]}))


def comparison_result(job, executor, say, seed: int, repeats: int) -> Comparison:
    """The comparison of one job: `ranking.run_comparison` (the API's steps) with the
    job's plan, its seed and repeats, each method a task of ``executor``."""
    plan = getattr(job, "plan", None)
    if not isinstance(plan, ComparisonPlan):  # a job not built by load_spec or command_job
        plan = comparison_plan(job.options)
    ref = job.data_ref()
    return ranking.run_comparison(
        open_ref(ref), dataclasses.replace(plan, seed=seed, repeats=repeats), data_ref=ref,
        # in this process the comparison's own progress shows (per method and per
        # evaluation, `sdceval.core.progress.RunProgress`): no second bar over the tasks
        map_tasks=lambda fn, tasks: executor.map(
            fn, tasks, progress=None if executor.name == "serial"
            else task_progress(job, len(tasks))),
        say=lambda msg: say(job.tag + msg))


def write_ranking(comp: Comparison, out, prefix: str = "") -> Path:
    """The ranking table, ``<prefix>ranking.csv``."""
    return write_csv(comp.table(), Path(out) / f"{prefix}ranking.csv")


@dataclass
class ComparisonJobResult:
    """One ``[[comparison]]`` job's comparison and files."""

    key: str
    comparison: Comparison
    files: list[Path] = field(default_factory=list)

    @property
    def headline(self) -> str:
        c = self.comparison
        return f"target {c.risk_measure} = {c.target:.4g}"

    def to_dict(self) -> dict:
        return self.comparison.to_dict()

    def __str__(self) -> str:
        c = self.comparison
        return "\n".join([fill(c.answer()), console_table(
            c.display_table(), keep=2, labels=c.labels(), where=f"{self.key}_ranking.csv"),
            *(fill(f"* {note}") for note in c.footnotes())])


def comparison_section(result) -> Section:
    """The HTML section of a comparison (`sdceval.experiments.report_html`): the answer, the
    ranking with intervals, every risk reading at the matched point with its direction,
    the risk curves, the notes."""
    comp = result.comparison
    s = Section(f"{comp.dataset}: methods matched to one risk level, ranked by utility",
                answer=comp.answer())
    table = comp.display_table()
    utils = comp.utilities_shown()
    s.add(paragraph(
        f"Each method was tuned by bisection until its {axis_label(comp.risk_measure)} "
        f"reached the target {comp.target:.4g}"
        + (f", the risk of {release_label(comp.reference)}" if comp.reference else "")
        + ". Its release was then measured with "
        + ", ".join(axis_label(u) for u in utils)
        + ". Rank 1 is the least loss among the methods matched (within "
        + (f"±{100 * comp.matches[0].tolerance:g} % of the target"
           if comp.matches else "the tolerance")
        + ", or the knob's smallest step when larger)"
        + (f"; values are means over {comp.repeats} seeds with their 95 % intervals, and "
           "a method shares the best's rank when the paired 95 % t-interval of their "
           "per-seed differences contains 0 (every method sees the same seeds; the notes "
           "give each tie and the repeats that would separate it); a loss below its noise "
           "floor reads \"no measurable loss\" and counts as 0" if comp.repeats > 1 else
           "; with one seed nothing is tested: ranks order the values")
        + "."))
    ranking = table[["method", "setting", *[c for u in utils for c in (u, f"rank_{u}")]]]
    rows = ["" if ok else "unranked" for ok in table["matched"]]
    s.add_table(ranking, css="ranking", text_columns=("method", "setting"), row_css=rows,
                labels={f"rank_{u}": "rank" for u in utils})
    risks = table[["method", *[c for c in table.columns if c not in ranking.columns]]]
    s.add(heading("Risk at the matched point"), paragraph(
        "Every risk reading of each matched release (the first is the one the methods "
        "were matched on; the others, every attack the measures declare — "
        "re-identification, attribute inference on the sensitive attribute, sample "
        "uniques on the published keys — show how equal that risk is on other measures; "
        "\"n/a\" says why a measure does not read a release)."
        + (" " + attack_sentence(comp) if len(comp.ranked()) >= 2
           and attack_sentence(comp) else "")))
    s.add_table(risks, css="attacks", text_columns=("method",),
                labels={"risk": f"matched risk: {axis_label(comp.risk_measure)}"})
    treatment = comp.treatment_table()
    if not treatment.empty:
        # utilities of releases that publish different columns compare column sets, so
        # the reader must see which columns each method published
        s.add(heading("What each method publishes"), paragraph(
            "What each candidate's matched release did to each column of the data set "
            "(a whole-file strategy publishes every column, so the candidates publish the "
            "same ones): "
            "masked (perturbed values), generalized (published as ranges or labels, with "
            "the number of suppressed cells), as is, permuted within buckets, or dropped."
            + (" " + comp.treatment_note() if comp.treatment_note() else "")))
        s.add_table(treatment.reset_index(), css="treatment",
                    text_columns=("column", *treatment.columns))
    s.terms += [comp.risk_measure, *utils, *comp.ranked()]
    s.add_figures([f for f in result.files if f.name.endswith("risk_curves.png")],
                  {f.name: "Risk of each method's release against its parameter: the "
                   "dashed line is the target, the star the matched point."
                   for f in result.files})
    s.notes = comp.footnotes()
    return s


def write_comparison_job(result: ComparisonJobResult, out, prefix: str) -> list[Path]:
    """A comparison job's files: ``<prefix>ranking.csv`` and the risk curves."""
    from sdceval.experiments.plots import plot_risk_curves
    comp = result.comparison
    return [write_ranking(comp, out, prefix),
            plot_risk_curves(comp, Path(out) / f"{prefix}risk_curves.png")]


def comparison_rows(result: ComparisonJobResult) -> list[dict]:
    """One measurement per method and figure: the matched risk, every other risk
    reading, every utility, with the method, its tuned parameter and value."""
    comp = result.comparison
    rows = []
    for m in comp.matches:
        base = {"data": comp.dataset, "method": m.method, "parameter": m.parameter,
                "parameter_value": typed_value(m.method, m.parameter, m.value),
                "seed": comp.seed, "repeats": comp.repeats, "matched_on": comp.risk_measure,
                "target": comp.target, "reached": bool(m.matched)}
        rows.append({**base, "measure": comp.risk_measure, "value": m.risk})
        rows += [{**base, "measure": k, "value": v}
                 for k, v in comp.risk_readings.get(m.method, {}).items()
                 if k != comp.risk_measure]
        rows += [{**base, "measure": u, "value": v}
                 for u, v in comp.utilities.get(m.method, {}).items()]
    return rows


@register_job_kind(
    "comparison", section="comparisons", report=comparison_section,
    write=write_comparison_job, rows=comparison_rows,
    description="methods matched by bisection to one risk level, then ranked by utility "
                "(Domingo-Ferrer et al.; sdceval compare)",
    keys=("methods", "risk", "target", "utilities", "method_params", "risks", "tolerance",
          "intruder", "max_risk", "guideline", "families", "control"),
    example={"methods": ["mdav", "noise"], "utilities": ["query_error"]},
    validate=comparison_plan, params=(RISK, TARGET, TOLERANCE, INTRUDER, MAX_RISK,
                                      GUIDELINE, FAMILIES, CONTROL))
def run_comparison_job(job, spec, executor, say) -> ComparisonJobResult:
    return ComparisonJobResult(job.key, comparison_result(job, executor, say,
                                                          job.seed(spec), spec.repeats))
