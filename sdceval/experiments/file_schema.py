"""The one declared schema of an experiment file (issue 21 item 4, issue 22 item 12),
checked with pydantic before anything runs.

The schema declares the file's shape and every value's type: an ``[experiment]``
table (`ExperimentTable`), ``[[<kind>]]`` arrays of tables for every registered job
kind (`JobTable`: the options every job takes; a kind's own options are checked by the
kind, `sdceval.experiments.jobs.JobKind.check`), ``[reduced]`` (the same shape, every
part optional) and ``[paper]`` (any tables).  Types are strict: ``output = 5`` or
``data = 5`` is an error, not the text ``"5"``.  `validate_file` turns pydantic's
errors into one `SdcevalError` naming the file, the table, the key, what was expected
and what was found.

Sweeps (`expand_sweeps`): a job may give ``sweep = {k = [5, 10, 50], seed = "0..9"}``;
it expands to one job per combination (the first variable varies slowest).  A variable
that is an option of the job's kind (or ``seed``) sets that option; every text option
(also inside lists and tables) has ``{name}`` replaced by the variable's value, so a
method parameter is swept as ``releases = ["mdav:k={k}"]``.  A range ``"a..b"`` is the
whole numbers a to b inclusive.  A file makes at most `MAX_JOBS` jobs, its sweeps
expanded: the count is the product of the variables' value counts, computed before
anything is expanded (a range is counted, never listed).  Every job a sweep makes is
checked against the same `JobTable` as a job written out (`check_job`), so a swept
``seed = ["a"]`` is the error a written ``seed = "a"`` is.

Paths (``output``, ``scheduler``, ``data``, ``schema``; `PathText`) are checked for
characters no path should hold (`plain_path`).
"""
from __future__ import annotations

import itertools
import math
import re
import unicodedata
from typing import Annotated, Any, Literal, Optional, Union

from pydantic import (AfterValidator, BaseModel, ConfigDict, Field, StrictInt, StrictStr,
                      ValidationError, create_model)

from sdceval.core.errors import SdcevalError

#: the most jobs one experiment file may make, its sweeps expanded (README, "Campaigns"):
#: a file is expanded, checked and planned before anything runs, and a campaign larger
#: than this is better split into files, each with its own output (and store, resumed
#: apiece)
MAX_JOBS = 10_000

#: slashes that look like the path separator but are none (a folder "results∕run" shown
#: as if it were inside "results")
_LOOKALIKE_SLASHES = frozenset("\u2215\u2044\u29f8\uff0f\u2571\u29f5\u2216\uff3c")


def plain_path(value: str) -> str:
    """``value`` if it can name a file or folder as written: not empty, and without
    control characters (a NUL ends the path in the operating system, a newline or an
    escape sequence forges the lines and colours of what is printed), format characters
    (a right-to-left override shows a name backwards, a zero-width space hides) or
    look-alike slashes; else a ``ValueError`` naming the character."""
    if not value.strip():
        raise ValueError("is empty: name a file or folder (\".\" is the current one)")
    for ch in value:
        if unicodedata.category(ch) in ("Cc", "Cf") or ch in _LOOKALIKE_SLASHES:
            name = unicodedata.name(ch, "a control character")
            raise ValueError(f"holds U+{ord(ch):04X} ({name}), which no path should hold: "
                             "write the path without it")
    return value


PathText = Annotated[StrictStr, AfterValidator(plain_path)]
Names = Union[StrictStr, list[StrictStr]]
SweepValues = Union[list[Any], StrictStr]


class ExperimentTable(BaseModel):
    """``[experiment]``: the run's settings (`sdceval.experiments.spec`)."""

    model_config = ConfigDict(extra="forbid", strict=True)
    name: Optional[StrictStr] = None
    description: StrictStr = ""
    seed: StrictInt = Field(0, ge=0)
    repeats: StrictInt = Field(1, ge=1)
    executor: Literal["serial", "processes", "dask"] = "serial"
    workers: StrictInt = Field(2, ge=1)
    output: Optional[PathText] = None
    scheduler: Optional[PathText] = None


class JobTable(BaseModel):
    """The options every job takes; the kind's own ones are extra keys, checked by the
    kind."""

    model_config = ConfigDict(extra="allow", strict=True, populate_by_name=True)
    data: PathText
    schema_file: Optional[PathText] = Field(None, alias="schema")
    qi: Optional[Names] = None
    sensitive: Optional[Names] = None
    numeric: Optional[Names] = None
    label: Optional[Names] = None
    title: Optional[StrictStr] = None
    seed: Optional[StrictInt] = Field(None, ge=0)
    sweep: Optional[dict[StrictStr, SweepValues]] = None


class ReducedJobTable(JobTable):
    """A ``[reduced]`` override of a job: every key optional."""

    data: Optional[PathText] = None


def _file_model(kinds):
    jobs = {k: (Optional[Union[list[JobTable], JobTable]], None) for k in kinds}
    reduced_jobs = {k: (Optional[list[ReducedJobTable]], None) for k in kinds}
    reduced = create_model("ReducedTable", __config__=ConfigDict(extra="forbid", strict=True),
                           experiment=(Optional[dict[StrictStr, Any]], None), **reduced_jobs)
    return create_model("ExperimentFile", __config__=ConfigDict(extra="forbid", strict=True),
                        experiment=(Optional[ExperimentTable], None),
                        reduced=(Optional[reduced], None),
                        paper=(Optional[dict[StrictStr, Any]], None), **jobs)


def _where(loc: tuple) -> str:
    parts = []
    for item in loc:
        if isinstance(item, int):
            parts[-1] = f"{parts[-1]} #{item + 1}" if parts else f"#{item + 1}"
        elif item in ("list[JobTable]", "JobTable", "list[ReducedJobTable]", "str",
                      "list[str]", "list[any]"):
            continue
        else:
            parts.append(str(item))
    return " ".join(parts)


def _problem(exc: ValidationError) -> str:
    """pydantic's errors as ``<where>: <what was expected> (got <what was found>)``."""
    errors = exc.errors()
    # a union reports once per member: the member whose path is longest says most
    err = max(errors, key=lambda e: len(e["loc"]))
    got = err.get("input")
    shown = repr(got) if not isinstance(got, dict) else "a table"
    if isinstance(got, list):
        shown = "an array" if not got or isinstance(got[0], dict) else repr(got)
    msg = err["msg"].removeprefix("Value error, ")
    return f"{_where(err['loc'])}: {msg[:1].lower()}{msg[1:]} (got {shown})"


def validate_file(raw: dict, kinds, path) -> None:
    """``raw`` (the parsed TOML) against the declared schema (module docstring); the
    first problem is an `SdcevalError`."""
    try:
        _file_model(tuple(kinds)).model_validate(raw)
    except ValidationError as exc:
        raise SdcevalError(f"{path}: {_problem(exc)}") from None


def check_job(options: dict, where: str) -> None:
    """One job's options (a sweep's combination, expanded) against `JobTable`, the
    model every written job is checked with."""
    try:
        JobTable.model_validate(options)
    except ValidationError as exc:
        raise SdcevalError(f"{where}: {_problem(exc)}") from None


#: ``"a..b"``: at most 30 digits each (Python refuses to read much longer numbers)
_RANGE = re.compile(r"^\s*(-?\d{1,30})\s*\.\.\s*(-?\d{1,30})\s*$")


def sweep_values(name: str, values, where: str):
    """A sweep variable's values: a non-empty list, or ``"a..b"`` (whole numbers) as a
    `range`, never listed (`sweep_size` counts it)."""
    if isinstance(values, str):
        m = _RANGE.match(values)
        if not m:
            raise SdcevalError(f"{where}: sweep {name} = {values!r}: a range is written "
                               "\"a..b\" (whole numbers, both included), e.g. \"0..9\"")
        lo, hi = int(m[1]), int(m[2])
        if hi < lo:
            raise SdcevalError(f"{where}: sweep {name} = {values!r} is empty (b < a)")
        return range(lo, hi + 1)
    if not values:
        raise SdcevalError(f"{where}: sweep {name} has no value")
    return list(values)


def _count(values) -> int:
    # a range's length by arithmetic: len() overflows beyond sys.maxsize
    return values.stop - values.start if isinstance(values, range) else len(values)


def sweep_size(options: dict, where: str) -> int:
    """How many jobs ``options`` make: the product of its sweep variables' value
    counts (1 without a sweep), nothing expanded."""
    sweep = options.get("sweep") or {}
    return math.prod(_count(sweep_values(n, v, where)) for n, v in sweep.items())


def sweep_where(where: str, assignment: dict) -> str:
    """``where`` (the file and the table) with the sweep combination of a job."""
    if not assignment:
        return where
    return (f"{where} (sweep " + ", ".join(f"{k} = {v!r}" for k, v in assignment.items())
            + ")")


def _check_count(options: dict, where: str, before: int) -> None:
    """`MAX_JOBS` holds with this job's sweep added to the ``before`` jobs the file
    made already."""
    size = sweep_size(options, where)
    if before + size <= MAX_JOBS:
        return
    sweep = options.get("sweep") or {}
    counts = " x ".join(f"{n}: {_count(sweep_values(n, v, where)):,}"
                        for n, v in sweep.items())
    made = f"its sweep makes {size:,} jobs ({counts} values)" if sweep else "it is a job"
    total = f", {before + size:,} with the {before:,} before it in the file" if before else ""
    raise SdcevalError(
        f"{where}: {made}{total}, and a file may make at most {MAX_JOBS:,}: split the "
        "sweep over several files (e.g. seed = \"0..4999\" in one and \"5000..9999\" in "
        "another, each with its own output) or sweep fewer values")


def _fill(value, assignment: dict, used: set):
    if isinstance(value, str):
        def sub(m):
            used.add(m[1])
            return str(assignment[m[1]])
        names = "|".join(re.escape(k) for k in assignment)
        return re.sub(r"\{(" + names + r")\}", sub, value) if names else value
    if isinstance(value, list):
        return [_fill(v, assignment, used) for v in value]
    if isinstance(value, dict):
        return {k: _fill(v, assignment, used) for k, v in value.items()}
    return value


def expand_sweeps(options: dict, allowed: frozenset, where: str,
                  before: int = 0) -> list[tuple[dict, dict]]:
    """``[(options, assignment)]``: one per combination of the job's ``sweep`` (module
    docstring), each checked with `check_job`; a job without a sweep is itself, with an
    empty assignment.  ``before``: the jobs the file made already (with this job's,
    at most `MAX_JOBS`, counted before anything is expanded)."""
    sweep = options.get("sweep")
    base = {k: v for k, v in options.items() if k != "sweep"}
    _check_count(options, where, before)
    if not sweep:
        return [(base, {})]
    if "sweep" in sweep:
        raise SdcevalError(f"{where}: a sweep variable cannot be named 'sweep'")
    names = list(sweep)
    grids = [sweep_values(n, sweep[n], where) for n in names]
    out = []
    for combo in itertools.product(*grids):
        assignment = dict(zip(names, combo))
        used: set = set()
        opts = _fill(base, assignment, used)
        for n, v in assignment.items():
            if n in allowed or n == "seed":
                opts[n] = v
                used.add(n)
        unused = [n for n in names if n not in used]
        if unused:
            raise SdcevalError(
                f"{where}: sweep variable {unused[0]!r} is neither an option of the job "
                f"nor written as {{{unused[0]}}} in one (e.g. releases = "
                f"[\"mdav:{unused[0]}={{{unused[0]}}}\"])")
        check_job(opts, sweep_where(where, assignment))
        out.append((opts, assignment))
    return out


__all__ = ["MAX_JOBS", "ExperimentTable", "JobTable", "PathText", "check_job", "expand_sweeps",
           "plain_path", "sweep_size", "sweep_values", "sweep_where", "validate_file"]
