"""Declarative experiment files (TOML), validated before anything runs (SPEC §6).

An experiment file has an ``[experiment]`` table and any number of jobs::

    [experiment]
    name = "domingo_ferrer_table1"
    seed = 0                 # common random numbers for every job
    repeats = 1
    executor = "processes"   # serial | processes | dask
    workers = 2              # honoured unless --threads / SDCEVAL_THREADS is smaller
    scheduler = "tcp://10.0.0.5:8786"   # optional: an existing Dask cluster
    output = "results/domingo_ferrer_table1"   # relative to the current directory

    [[comparison]]           # bisection to a common risk, then utility ranking
    data = "census"
    methods = ["mdav", "noise", "rank_swap", "multiplicative_noise"]
    risk = "linkage_risk"    # parameters after a colon: "linkage_risk:aggregate=mean"
    target = "mdav:k=5"      # or a number
    utilities = ["propensity", "emd"]
    risks = []               # extra risk measures read at each matched release; the
                             # matched measure's own readings (re-identification
                             # rates, other scale) are always reported

    [[evaluation]]           # fixed parameterizations x measures
    data = "census"
    releases = ["mdav:k=5", "noise:gamma=1"]
    measures = ["linkage_risk", "propensity:model=linear"]
    seeds = [0]

    [[tradeoff]]             # Li & Li privacy-model grids (P_loss vs U_loss)
    data = "adult"
    models = ["k", "l", "t", "delta"]
    method = "mondrian"      # mondrian | bucketization | both
    measures = ["p_loss", "u_loss", "query_error"]
    [tradeoff.grids]
    k = [10, 50]

    [[lattice]]              # full-domain generalization lattice (`sdceval lattice`)
    data = "adult-train"
    qi = ["age", "education", "race", "sex"]
    models = ["k=5", "l=3,variant=distinct"]   # as --model: also "cl:c=3,l=2"; all enforced
    rule = "arx"             # suppression rule: dewri (default) | arx
    max_suppression = 0.02   # fraction of the records if < 1, else a count (default 0.01)
    metric = "glm"           # the optimal search minimizes (maximizes) this objective
    objectives = ["glm", "discernibility", "k"]  # reported at the optimum / exported
    export = true            # also every node's objectives -> <key>_nodes.csv
    cache = true             # read / write the on-disk cache of every node (default)

    [reduced]                # overrides applied by `sdceval run --reduced` (CI)
    ...

    [[vectors]]              # property vectors of releases (`sdceval vectors`)
    data = "adult-train"
    releases = ["mondrian:k=10", "generalization:k=10"]
    properties = ["class_size", "sensitive_count"]
    suppressed = "exclude"   # exclude | own_class | value (Dewri's suppressed tuples)
    weights = [0.5, 0.5]     # decisions as in `sdceval vectors`: also index, directions,
                             # significance, order, goal, normalize, rank_point

    [[pbg]]                  # PBG-EA vs the minimal PBGs (`sdceval pbg`)
    data = "adult-train"
    objectives = ["k", "glm"]
    eps = [1, 1]             # discretization vector
    runs = 20                # seeds seed .. seed + 19

A ``[[lattice]]`` job searches when it has a ``metric`` or no ``export`` (default metric
``glm``); it writes the optimum as tidy rows (``<key>_optimum.csv``: one row per
objective at the optimal node, with its levels) and, with ``export = true``, every node
(``<key>_nodes.csv``); without ``objectives``, all the data set supports
(`sdceval.experiments.lattice_job`).

Every job also takes ``title``, ``seed`` (its own, instead of the experiment's) and
``sweep`` (one job per combination of its variables: ``sweep = {k = [5, 10], seed =
"0..9"}``, with ``{k}`` in a text option replaced; `sdceval.experiments.file_schema`;
a file makes at most ``MAX_JOBS`` = 10 000 jobs, counted before any is made).
The file's shape and every value's type are checked against one declared schema (the
same module) before anything else: ``output = 5`` is an error naming the table and key,
and so is each value a sweep puts in its place.

The results of a run live in the output folder's results store
(`sdceval.experiments.store`), from which every file is written; running the file again
reuses each finished job (`sdceval.experiments.runner.run_experiment`).

The tables a file may hold, the keys each allows and how they are checked come from
the registry of job kinds (`sdceval.experiments.jobs.JOB_KINDS`; ``sdceval list jobs``):
every key of a table is checked, and every name (data set, method, measure, parameter)
against its registry when the file is loaded, with the closest valid name suggested.
Jobs run in the registry's order of kinds, then in the file's order.
"""
from __future__ import annotations

import copy
from dataclasses import dataclass, field
from pathlib import Path

from sdceval.core.errors import SdcevalError
from sdceval.core.fileio import read_toml
from sdceval.experiments.file_schema import (ExperimentTable, expand_sweeps, sweep_where,
                                             validate_file)
from sdceval.experiments.jobs import JOB_KINDS, Job, check_keys, safe_name

EXECUTORS = ("serial", "processes", "dask")
_EXPERIMENT_KEYS = {"name", "description", "seed", "repeats", "executor", "workers",
                    "output", "scheduler"}


@dataclass
class ExperimentSpec:
    name: str
    path: Path
    description: str = ""
    seed: int = 0
    repeats: int = 1
    executor: str = "serial"
    workers: int = 2
    scheduler: str | None = None
    output: Path = Path("results")
    jobs: list[Job] = field(default_factory=list)
    paper: dict = field(default_factory=dict)
    raw: dict = field(default_factory=dict)


def _merge(base: dict, over: dict) -> dict:
    out = copy.deepcopy(base)
    for k, v in over.items():
        if isinstance(v, dict) and isinstance(out.get(k), dict):
            out[k] = _merge(out[k], v)
        else:
            out[k] = copy.deepcopy(v)
    return out


def load_spec(path, reduced: bool = False) -> ExperimentSpec:
    """Parse and validate an experiment file; ``reduced`` applies its ``[reduced]`` table
    (same structure as the file; jobs are matched by position).  The file is checked
    against its declared schema (`sdceval.experiments.file_schema`) before anything
    else, then every job by its kind; sweeps expand into one job per combination."""
    path = Path(path)
    raw = read_toml(path, "experiment")
    kinds = JOB_KINDS.names()
    check_keys(str(path), raw, {"experiment", "reduced", "paper", *kinds})
    if "experiment" in raw:
        check_keys(f"{path} [experiment]", raw["experiment"] if isinstance(
            raw["experiment"], dict) else {}, _EXPERIMENT_KEYS)
    validate_file(raw, kinds, path)
    if reduced and "reduced" in raw:
        red = raw["reduced"]
        for kind in kinds:
            if kind in red:
                jobs = raw.get(kind, [])
                if isinstance(jobs, dict):
                    jobs = raw[kind] = [jobs]
                for i, over in enumerate(red[kind]):
                    if i < len(jobs):
                        jobs[i] = _merge(jobs[i], over)
        if "experiment" in red:
            raw["experiment"] = _merge(raw.get("experiment", {}), red["experiment"])
        validate_file(raw, kinds, f"{path} (with its [reduced] table)")
    exp = ExperimentTable.model_validate(raw.get("experiment", {}))
    spec = ExperimentSpec(name=exp.name or path.stem, path=path,
                          description=exp.description, raw=raw,
                          paper=raw.get("paper", {}), seed=exp.seed, repeats=exp.repeats,
                          executor=exp.executor, workers=exp.workers,
                          scheduler=exp.scheduler)
    # the name is the default folder: a file-name form of it, never a path (issue 22)
    spec.output = Path(exp.output if exp.output is not None
                       else Path("results") / safe_name(spec.name, "experiment"))
    for kind in kinds:
        entries = raw.get(kind, [])
        if isinstance(entries, dict):
            entries = [entries]
        for i, opts in enumerate(entries):
            where = f"{path} [[{kind}]] #{i + 1}"
            for expanded, assignment in expand_sweeps(opts, JOB_KINDS[kind].options, where,
                                                      before=len(spec.jobs)):
                plan = JOB_KINDS[kind].check(expanded, sweep_where(where, assignment))
                spec.jobs.append(Job(kind, len(spec.jobs), dict(expanded),
                                     sweep=assignment, plan=plan))
    if not spec.jobs:
        tables = [f"[[{k}]]" for k in kinds]
        raise SdcevalError(f"{path}: no job; add a {', '.join(tables[:-1])} or "
                           f"{tables[-1]} table")
    return spec
