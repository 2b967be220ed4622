"""``[[lattice]]`` jobs: the full-domain generalization lattice in experiment files
(issue 7 item 8), the counterpart of ``sdceval lattice search|export``.

A job is one `LatticeProblem` (the data set's QI hierarchies, the privacy models, a
suppression rule and its limit) and does one or both of:

* **search** (when ``metric`` is given, or when ``export`` is not set: default metric
  ``glm``) — the exact optimum of `sdceval.lattice.search.optimal`: the feasible node
  with the best ``metric`` (ties: lowest height, then lexicographic levels), and its
  ``objectives`` (default: every one the data set supports) evaluated at that node;
* **export** (``export = true``) — every node's ``objectives``
  (`sdceval.lattice.search.evaluate_all`, disk-cached in ``$SDCEVAL_CACHE_DIR``).

Files (``<key>`` is the job's key, ``lattice<i>_<data>``): ``<key>_optimum.csv``, the
optimum as tidy rows (one per objective: ``measure``, ``value``, with the node, its
levels per QI, the models, rule, limit and metric), and ``<key>_nodes.csv``, one row per
node; ``results.json`` holds the search result under ``"lattices"``.  ``sdceval lattice
search`` and ``export`` run the same orchestration (`lattice_result`) and write the
optimum as JSON, every node as CSV or Parquet, under the names given.

Models are written as in the CLI's ``--model`` (`sdceval.privacy.parse_model_spec`):
``"k=5"``, ``"l=3,variant=distinct"``, ``"cl:c=3,l=2"``; several are all enforced.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from sdceval.core.errors import SdcevalError, plain
from sdceval.core.fileio import write_csv
from sdceval.core.loaders import open_ref
from sdceval.core.glossary import axis_label, display_name
from sdceval.core.registry import Param
from sdceval.core.suppression import MAX_SUPPRESSION
from sdceval.experiments.report_html import Section, heading, paragraph
from sdceval.experiments.jobs import register_job_kind
from sdceval.lattice.suppression import SUPPRESSION_RULE

METRIC = Param("metric", str, default="glm",
               description="objective the optimal search minimizes (maximizes); with "
                           "export = true and no metric, no search")
EXPORT = Param("export", bool, default=False,
               description="also every node's objectives (<key>_nodes.csv)")
CACHE = Param("cache", bool, default=True,
              description="read and write the on-disk cache of every node's objectives")
#: the suppression rule and limit, as the lattice declares them, under the jobs' keys
RULE = dataclasses.replace(SUPPRESSION_RULE, name="rule")


def _names(value, key: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise SdcevalError(f"{key!r} must be a list of strings, e.g. {key} = "
                           + ('["k=5", "l=3,variant=distinct"]' if key == "models"
                              else '["glm", "discernibility"]') + f"; got {value!r}")
    return list(value)


def validate_lattice_options(opts: dict) -> dict:
    """Check a ``[[lattice]]`` job's options before anything runs (every name against
    its registry, with the closest suggested); returns them completed with the
    defaults: ``models``, ``rule``, ``max_suppression``, ``metric`` (``None``: no
    search), ``objectives`` (``None``: all the data set supports), ``export``,
    ``cache``."""
    from sdceval.lattice.objectives import get_objective, objective_names
    from sdceval.lattice.suppression import suppression_options
    from sdceval.privacy import parse_model_spec

    models = _names(opts.get("models", []), "models")
    for m in models:
        parse_model_spec(m)  # names and parameters; the hierarchy comes with the data
    rule, limit = suppression_options(opts)
    export, cache = (opts.get(p.name, p.default) for p in (EXPORT, CACHE))
    for p, v in ((EXPORT, export), (CACHE, cache)):
        if not isinstance(v, bool):  # not Param.parse: it would read "yes" as true
            raise SdcevalError(f"'{p.name}' must be true or false, got {v!r}")
    metric = opts.get("metric", None if export else METRIC.default)
    if metric is not None:
        if not isinstance(metric, str):
            raise SdcevalError(f"'metric' must be an objective name such as 'glm', got "
                               f"{metric!r}")
        if get_objective(metric).goal is None:
            goals = [n for n in objective_names() if get_objective(n).goal]
            raise SdcevalError(f"metric {metric!r} is a count, not an objective to "
                               f"optimize; choose one of {', '.join(goals)}")
    objectives = opts.get("objectives")
    if objectives is not None:
        objectives = _names(objectives, "objectives")
        for name in objectives:
            get_objective(name)
    return {"models": models, "rule": rule, "max_suppression": limit, "metric": metric,
            "objectives": objectives, "export": export, "cache": cache}


def task_lattice(data_ref, models, rule, max_suppression, metric, objectives, export,
                 cache=True) -> dict[str, Any]:
    """The search and/or the export of one job (a pure task for the executors)."""
    from sdceval.lattice.search import LatticeProblem, evaluate_all, optimal
    from sdceval.privacy import parse_model_spec

    ds = open_ref(data_ref)
    sens = ds.schema.sensitive
    hierarchy = ds.hierarchy(sens) if sens else None
    problem = LatticeProblem(ds, [parse_model_spec(m, hierarchy=hierarchy) for m in models],
                             rule=rule, max_suppression=max_suppression)
    names = problem.check_objectives(objectives if objectives is not None
                                     else problem.objectives_available())
    out: dict[str, Any] = {"data": ds.name, "problem": problem.describe(),
                           "qis": list(problem.lattice.names),
                           "lattice_size": int(problem.lattice.size),
                           "optimum": None, "at_optimum": None, "nodes": None}
    if metric is not None:
        res = optimal(problem, metric)
        out["optimum"] = res.as_dict()
        # the metric and the suppressed count always, whatever ``objectives`` lists
        shown = list(dict.fromkeys([*names, metric]))
        at = problem.evaluate_node(res.levels, shown)
        out["at_optimum"] = {k: at[k] for k in dict.fromkeys([*shown, "suppressed"])}
    if export:
        out["nodes"] = evaluate_all(problem, names, cache=cache)
    return out


@dataclass
class LatticeJobResult:
    """One ``[[lattice]]`` job's results (module docstring)."""

    key: str
    title: str
    data: str
    problem: str
    qis: list[str]
    models: list[str]
    rule: str
    max_suppression: float
    metric: str | None
    lattice_size: int
    optimum: dict | None = None
    at_optimum: dict | None = None
    nodes: pd.DataFrame | None = None
    nodes_file: Path | None = None
    files: list[Path] = field(default_factory=list)

    @property
    def levels_by_qi(self) -> dict | None:
        if self.optimum is None:
            return None
        return dict(zip(self.qis, self.optimum["levels"]))

    def rows(self) -> pd.DataFrame:
        """The optimum as tidy rows, one per objective evaluated there."""
        if self.optimum is None:
            return pd.DataFrame()
        base = {"data": self.data, "models": "; ".join(self.models), "rule": self.rule,
                "max_suppression": self.max_suppression, "metric": self.metric,
                "node": ",".join(map(str, self.optimum["levels"])),
                "height": int(sum(self.optimum["levels"])),
                **{f"level_{q}": v for q, v in self.levels_by_qi.items()}}
        return pd.DataFrame([{**base, "measure": k, "value": plain(v)}
                             for k, v in (self.at_optimum or {}).items()])

    def to_dict(self) -> dict:
        d = {"title": self.title, "data": self.data, "problem": self.problem,
             "qis": self.qis, "models": self.models, "rule": self.rule,
             "max_suppression": self.max_suppression, "metric": self.metric,
             "lattice_size": self.lattice_size}
        if self.optimum is not None:
            d.update(optimum=self.optimum, levels_by_qi=self.levels_by_qi,
                     at_optimum=self.at_optimum)
        if self.nodes is not None:
            d.update(nodes_file=self.nodes_file.name if self.nodes_file else None,
                     feasible_nodes=int(self.nodes["feasible"].sum()))
        return d

    def optimum_line(self) -> str:
        """The optimum in one sentence (report and summary)."""
        o = self.optimum
        node = ", ".join(f"{q}={v}" for q, v in self.levels_by_qi.items())
        ties = len(o["ties"])
        return (f"Optimal node ({node}): {self.metric} = {o['value']:.6g}, "
                f"{o['evaluation'].get('suppressed', 0)} records suppressed; "
                f"{o['checked']} of {self.lattice_size:,} nodes checked"
                + (f"; {ties} tied optimal nodes" if ties > 1 else ""))

    def nodes_line(self) -> str:
        feas = int(self.nodes["feasible"].sum())
        name = self.nodes_file.name if self.nodes_file else "(not written)"
        return (f"Every node: {len(self.nodes):,} nodes, {feas:,} feasible, in "
                f"`{name}`")

    def __str__(self) -> str:
        lines = [self.problem]
        if self.optimum is not None:
            lines.append(self.optimum_line())
        if self.nodes is not None:
            lines.append(self.nodes_line())
        return "\n".join(lines)


def lattice_answer(res: LatticeJobResult) -> str:
    """The optimum in one sentence, as a data controller reads it."""
    if res.optimum is None:
        if res.metric is None:
            return ""
        return (f"No generalization of the {res.lattice_size:,} satisfies "
                f"{_models_words(res.models)} within the suppression limit; relax a "
                "model or allow more suppression.")
    o = res.optimum
    node = ", ".join(f"{q} at level {v}" for q, v in res.levels_by_qi.items())
    return (f"The generalization with the least {display_name(res.metric)} that satisfies "
            f"{_models_words(res.models)} ({res.problem.split('; ')[-1]}) is {node}: "
            f"{display_name(res.metric)} {o['value']:.6g}, "
            f"{o['evaluation'].get('suppressed', 0)} records suppressed; "
            f"{o['checked']:,} of {res.lattice_size:,} nodes checked.")


def _models_words(models) -> str:
    return " and ".join(models) if models else "no privacy model"


def lattice_section(res) -> Section:
    """The HTML section of a lattice job: the answer, the optimal node's levels and its
    objectives, the ties, where every node was written."""
    s = Section(res.title if res.title != res.key else
                f"{res.data}: the optimal full-domain generalization",
                answer=lattice_answer(res))
    s.add(paragraph(f"Data {res.data}; quasi-identifiers {', '.join(res.qis)} "
                    f"({res.lattice_size:,} nodes: one hierarchy level per quasi-identifier);"
                    f" {res.problem}. The search is exact (pruned by monotonicity)."))
    if res.optimum is not None:
        levels = pd.DataFrame({"quasi-identifier": list(res.levels_by_qi),
                               "level": list(res.levels_by_qi.values())})
        s.add(heading("Optimal node"))
        s.add_table(levels, css="ranking", text_columns=("quasi-identifier",),
                    labels={"quasi-identifier": "quasi-identifier",
                            "level": "generalization level (0 = original values)"})
        at = pd.DataFrame({"objective": [axis_label(k) for k in res.at_optimum],
                           "value": [plain(v) for v in res.at_optimum.values()]})
        s.add(heading("Objectives at the optimum"))
        s.add_table(at, text_columns=("objective",),
                    labels={"objective": "objective", "value": "value"})
        s.terms += list(res.at_optimum)
        ties = res.optimum.get("ties", [])
        if len(ties) > 1:
            s.add(paragraph(f"{len(ties)} nodes tie for the optimum: "
                            + "; ".join(",".join(map(str, t)) for t in ties[:20])
                            + (" ..." if len(ties) > 20 else "")))
    if res.nodes is not None:
        s.add(paragraph(res.nodes_line() + "."))
    if res.metric:
        s.terms.append(res.metric)
    return s


def lattice_result(job, executor, say) -> LatticeJobResult:
    """The search and/or the export of one job, as one task (no file written)."""
    o = validate_lattice_options(job.options)
    say(f"{job.tag}lattice: "
        + " and ".join(w for w, on in (("search", o["metric"] is not None),
                                       ("every node", o["export"])) if on))
    (res,) = executor.map(task_lattice, [dict(data_ref=job.data_ref(), **o)])
    return LatticeJobResult(
        key=job.key, title=job.title, data=res["data"], problem=res["problem"],
        qis=res["qis"], models=o["models"], rule=o["rule"],
        max_suppression=o["max_suppression"], metric=o["metric"],
        lattice_size=res["lattice_size"], optimum=res["optimum"],
        at_optimum=res["at_optimum"], nodes=res["nodes"])


def write_lattice_job(result: LatticeJobResult, out, prefix: str) -> list[Path]:
    """The optimum as tidy rows (``<prefix>optimum.csv``) and every node
    (``<prefix>nodes.csv``) when exported."""
    out = Path(out)
    files = []
    if result.optimum is not None:
        files.append(write_csv(result.rows(), out / f"{prefix}optimum.csv"))
    if result.nodes is not None:
        result.nodes_file = write_csv(result.nodes, out / f"{prefix}nodes.csv")
        files.append(result.nodes_file)
    return files


def lattice_rows(result: LatticeJobResult) -> list[dict]:
    """The optimum's objectives, one measurement each, with the problem and the node
    (every node of an export stays in its CSV file: a lattice has up to millions)."""
    return [{k: v for k, v in r.items()} for r in result.rows().to_dict("records")]


@register_job_kind(
    "lattice", section="lattices", report=lattice_section,
    write=write_lattice_job, rows=lattice_rows,
    description="full-domain generalization lattice: the optimal node under privacy "
                "models and a suppression limit, every node's objectives (sdceval "
                "lattice search|export)",
    keys=("models", "rule", "max_suppression", "metric", "objectives", "export", "cache"),
    example={"models": ["k=5"], "cache": False},
    validate=validate_lattice_options,
    params=(RULE, MAX_SUPPRESSION, METRIC, EXPORT, CACHE))
def run_lattice_job(job, spec, executor, say) -> LatticeJobResult:
    return lattice_result(job, executor, say)
