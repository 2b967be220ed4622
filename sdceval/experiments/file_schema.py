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
whole numbers a to b inclusive.
"""
from __future__ import annotations

import itertools
import re
from typing import Any, Literal, Optional, Union

from pydantic import (BaseModel, ConfigDict, Field, StrictInt, StrictStr, ValidationError,
                      create_model)

from sdceval.core.errors import SdcevalError

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
    output: Optional[StrictStr] = None
    scheduler: Optional[StrictStr] = None


class JobTable(BaseModel):
    """The options every job takes; the kind's own ones are extra keys, checked by the
    kind."""

    model_config = ConfigDict(extra="allow", strict=True, populate_by_name=True)
    data: StrictStr
    schema_file: Optional[StrictStr] = Field(None, alias="schema")
    qi: Optional[Names] = None
    sensitive: Optional[Names] = None
    numeric: Optional[Names] = None
    label: Optional[Names] = None
    title: Optional[StrictStr] = None
    seed: Optional[StrictInt] = Field(None, ge=0)
    sweep: Optional[dict[StrictStr, SweepValues]] = None


class ReducedJobTable(JobTable):
    """A ``[reduced]`` override of a job: every key optional."""

    data: Optional[StrictStr] = None


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


def validate_file(raw: dict, kinds, path) -> None:
    """``raw`` (the parsed TOML) against the declared schema (module docstring); the
    first problem is an `SdcevalError`."""
    try:
        _file_model(tuple(kinds)).model_validate(raw)
    except ValidationError as exc:
        errors = exc.errors()
        # a union reports once per member: the member whose path is longest says most
        err = max(errors, key=lambda e: len(e["loc"]))
        where = _where(err["loc"])
        got = err.get("input")
        shown = repr(got) if not isinstance(got, dict) else "a table"
        if isinstance(got, list):
            shown = "an array" if not got or isinstance(got[0], dict) else repr(got)
        raise SdcevalError(f"{path}: {where}: {err['msg'].lower()} (got {shown})") from None


_RANGE = re.compile(r"^\s*(-?\d+)\s*\.\.\s*(-?\d+)\s*$")


def sweep_values(name: str, values, where: str) -> list:
    """A sweep variable's values: a non-empty list, or ``"a..b"`` (whole numbers)."""
    if isinstance(values, str):
        m = _RANGE.match(values)
        if not m:
            raise SdcevalError(f"{where}: sweep {name} = {values!r}: a range is written "
                               "\"a..b\" (whole numbers, both included), e.g. \"0..9\"")
        lo, hi = int(m[1]), int(m[2])
        if hi < lo:
            raise SdcevalError(f"{where}: sweep {name} = {values!r} is empty (b < a)")
        return list(range(lo, hi + 1))
    if not values:
        raise SdcevalError(f"{where}: sweep {name} has no value")
    return list(values)


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


def expand_sweeps(options: dict, allowed: frozenset, where: str) -> list[tuple[dict, dict]]:
    """``[(options, assignment)]``: one per combination of the job's ``sweep`` (module
    docstring); a job without a sweep is itself, with an empty assignment."""
    sweep = options.get("sweep")
    base = {k: v for k, v in options.items() if k != "sweep"}
    if not sweep:
        return [(base, {})]
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
        out.append((opts, assignment))
    return out


__all__ = ["ExperimentTable", "JobTable", "expand_sweeps", "sweep_values", "validate_file"]
