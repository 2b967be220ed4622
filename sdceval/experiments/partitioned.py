"""Measures of a table too large for one machine's memory, evaluated in partitions on
Dask (issue 21 item 7; derived from the measure registry, issue 27 item 21).

`evaluate_partitioned` reads the original and a row-aligned release (CSV or Parquet
files, a directory of Parquet files, or dask DataFrames) partition by partition on a
Dask scheduler and computes **every measure whose registry entry declares a partial
form** (`sdceval.core.partial.PartialForm`, `MeasureSpec.partial`): each part's partial
result, merged in a tree, then the measure's formula on the merged result — the value
and details `sdceval.evaluate` gives on the whole table in memory (exactly for counts;
to rounding, about 1e-15 relative, for sums of floats).  No measure is named here: the
class counts (every privacy check, ``discernibility``, ``avg_class_size``:
`sdceval.measures._partial`), ``query_error`` (`sdceval.measures.queries`) and
``linkage_risk`` (`sdceval.measures.linkage`) declare their forms beside their
in-memory code, and a measure registered later (a user's) is computed the same way.
A measure without a form is refused with the reason it declares (``no_partial``).

**The original is never materialized whole in one process**: every function that sees
its records sees one partition (two, where a partition of fewer than 2 records joins
its neighbour), and only per-partition summaries (row counts, distinct values, value
counts, partial results) leave the partitions.

Passes: (1) row counts, the distinct values of the columns whose hierarchies the forms
need from the whole table (built from them exactly as `Dataset` builds them), the value
counts the forms ask for, and the release's row counts; then each form's ``prepare`` on
the client (`_Whole`: a query workload, a linkage index) and the context sent to every
worker once (`sdceval.experiments.partition_runner`); (2) one task per chunk of records
(`_Part`: the chunk as a data set with the whole table's hierarchies and its release
rows read back as ``sdceval evaluate`` reads a release file, or its numbers), the
partial results merged ``FAN_IN`` at a time, the formulas in a last task.  Reading the
inputs: `sdceval.experiments.partition_io`.  docs/partitioned.md gives the measures'
decompositions and the cost.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import numpy as np
import pandas as pd

from sdceval.catalog import MEASURES, get_measure
from sdceval.compare.ranking import parse_measure_list
from sdceval.core import threads
from sdceval.core.dataset import Dataset
from sdceval.core.errors import SdcevalError
from sdceval.core.tables import LEADING_ZERO
from sdceval.core.measurement import Measurement
from sdceval.core.partial import PartialForm
from sdceval.core.release import Release
from sdceval.core.release_io import release_from_frame
from sdceval.core.release_checks import BUCKET_COLUMN
from sdceval.core.release_order import key_beside
from sdceval.core.schema import UNUSED_ROLES, ColumnSpec, Schema
from sdceval.experiments.partition_io import (Reading, SchemaSource, dask_dataframe,
                                              normalize, open_table, shown)
from sdceval.experiments.partition_runner import (CONTEXTS as _CONTEXTS,  # noqa: F401
                                                  Runner, context, tree_merge)

#: bytes per partition read from a file (CSV blocks; Parquet row groups combined)
DEFAULT_BLOCKSIZE = "64MiB"
#: a data set has at least 2 records (`Dataset`): a smaller partition joins a neighbour
MIN_ROWS = 2


def partitioned_measures() -> tuple[str, ...]:
    """The measures `evaluate_partitioned` computes: every registry entry declaring a
    partial form, in registration order (a measure registered later included)."""
    return tuple(n for n, spec in MEASURES.items() if spec.partial is not None)


# -- the public entry point ----------------------------------------------------------------
def evaluate_partitioned(original, release, measures, *, schema, client=None,
                         blocksize: int | str = DEFAULT_BLOCKSIZE
                         ) -> dict[str, Measurement]:
    """Evaluate measures of a table too large for memory, in partitions.

    Parameters
    ----------
    original : str, Path or dask DataFrame
        The original table: a CSV file, a Parquet file, a directory of Parquet files
        (read in the order of their names) or a dask DataFrame.  Never materialized
        whole: each worker reads its partitions (module docstring), so files must be
        reachable at the same path from every worker.
    release : str, Path or dask DataFrame
        Row-aligned with ``original``: row ``i`` protects record ``i``, as
        ``sdceval anonymize --keep-order`` writes it.  A release file with a private key
        beside it (rows shuffled) is refused.  Generalized labels are read back as by
        ``sdceval evaluate``.  For ``linkage_risk`` its numeric columns are read whole on
        the client (the index: it must fit in memory).
    measures : str, list or dict
        Names with parameters, as everywhere in sdceval
        (``"query_error:n_queries=200,k_anonymity"``), among `partitioned_measures`.
        A parameter a measure's form fixes (``linkage_risk`` links every record:
        ``sample`` 0) may be left out or given that value.
    schema : Schema, str, Path or mapping
        The roles and hierarchies: a `Schema`, a TOML schema file (as ``sdceval
        evaluate --schema`` reads) or its mapping — the schema that made the release
        (columns of unused roles, such as an identifier, are not read).  Roles are
        given, not inferred (that would need the whole table).  Hierarchies not given
        are built from the whole table's distinct values, as `Dataset` builds them.
    client : distributed.Client, optional
        The cluster to run on.  Default: dask's current scheduler (the default
        ``distributed`` client if one is active, else the configured local scheduler,
        e.g. ``dask.config.set(scheduler="sync")``; not ``"processes"``).
    blocksize : int or str
        Bytes per partition when reading a file (``"64MiB"``); a directory of Parquet
        files gives at least one partition per file.  Not used for a dask DataFrame.

    Returns
    -------
    dict
        Label (``"query_error(n_queries=200)"``) -> `Measurement`: the value and details
        of ``sdceval.evaluate`` on the whole table; no per-record vector (it would be as
        long as the table).

    Notes
    -----
    Each task runs under the thread budget of its process (`sdceval.core.threads`,
    ``SDCEVAL_THREADS`` in the workers' environment); the schema and the forms'
    preparations (query workload, linkage index) reach each worker once
    (``client.run``), not with every task.
    """
    dd = dask_dataframe()
    plan = _plan(measures)
    records = any(p.form.reads == "records" for p in plan)
    source = SchemaSource.of(schema)
    orig, zeros = open_table(dd, original, "original", source.text, source.floats,
                             blocksize, source.declared)
    reading = Reading(tuple(source.text) + tuple(zeros))
    # the schema names every column of the file (an identifier too): read it from all
    meta = orig._meta
    sch = source.schema(normalize(meta, reading))
    used = [c.name for c in sch.columns if c.role not in UNUSED_ROLES]
    missing = [c for c in used if c not in orig.columns]
    if missing:
        raise SdcevalError(f"the original lacks schema column(s) {', '.join(map(repr, missing))}"
                           "; give the file with those columns or a schema without them")
    rel, _ = open_table(dd, release, "release", sch.qis + ([sch.sensitive] if sch.sensitive
                                                           else []), sch.numeric, blocksize)
    rel_cols = _check_release(rel, release, sch, plan)
    orig = orig[used if records else list(sch.numeric)]
    rel_rows = rel[rel_cols] if records else None
    with Runner(client) as run:
        ctx = _prepare(run, orig, rel_rows, rel, release, original, source, meta, sch,
                       plan, reading, [c for c in zeros if c in orig.columns])
        key = run.install(ctx)
        results, = run.compute([_measure_graph(key, ctx, orig, rel_rows)], ctx, key)
    out = {}
    for p in plan:
        m = results[p.label]
        m.measure, m.direction = p.name, get_measure(p.name).direction
        out[p.label] = m
    return out


# -- measures asked for --------------------------------------------------------------------
@dataclass(frozen=True)
class _Asked:
    """One measure variant: its label, registry name, resolved parameters and form."""

    label: str
    name: str
    params: dict
    form: PartialForm


def _plan(measures) -> list[_Asked]:
    """The measures parsed by the package's parser, each with its partial form, its
    parameters resolved by its registry entry (bad names and values fail here) and those
    the form fixes checked."""
    out = []
    for label, (name, params) in parse_measure_list(measures).items():
        spec = get_measure(name)
        if spec.partial is None:
            why = spec.no_partial or ("not offered: only measures that declare how they "
                                      "are computed in parts are")
            raise SdcevalError(
                f"measure {name!r} is not evaluated in partitions ({why}); "
                f"evaluate_partitioned computes {', '.join(partitioned_measures())}: "
                f"evaluate {name} in memory (sdceval.evaluate), on a sample of the records "
                "if the table is too large")
        resolved = spec.resolve(params)
        for pname, (value, why) in spec.partial.fixed:
            if pname in params and resolved[pname] != value:
                raise SdcevalError(f"{name}: {pname}={resolved[pname]} is not used in "
                                   f"partitions: {why}")
            resolved[pname] = value
        out.append(_Asked(label, name, resolved, spec.partial))
    return out


def _check_release(rel, release, sch: Schema, plan: list[_Asked]) -> list[str]:
    """Refuse a release the measures cannot read (before anything is computed: the
    forms' own checks too); the release columns the partitions need."""
    where = shown(release)
    key = key_beside(release) if isinstance(release, (str, Path)) else None
    if key is not None:  # either key naming (`key_beside`)
        raise SdcevalError(
            f"release {where} has a private key beside it ({str(key)!r}): "
            "its rows are shuffled, and the partitioned path reads a release in record "
            "order: write it with `sdceval anonymize --keep-order` (or sort it by the key)")
    cols = list(rel.columns)
    if BUCKET_COLUMN in cols and BUCKET_COLUMN not in sch:
        raise SdcevalError(
            f"release {where} is bucketized (a 'bucket' column): a bucket's records may lie "
            "in several partitions, so its measures do not decompose; evaluate it in memory")
    for p in plan:
        if p.form.check is not None:
            p.form.check(p.name, sch, rel._meta, where)
    return [c.name for c in sch.columns if c.role not in UNUSED_ROLES and c.name in cols]


def _roles(sch: Schema, roles) -> list[str]:
    """The columns of ``roles`` (`sdceval.core.partial.ROLES`), in schema order."""
    return [c.name for c in sch.columns if c.role in roles]


# -- pass 1: row counts, distinct values, value counts ----------------------------------------
def _scan(frame: pd.DataFrame, reading: Reading, used, counted, distinct, zeros,
          what: str) -> dict:
    """One partition's summary: its length, its first two records, the distinct values
    of ``distinct`` (hierarchies), the value counts of ``counted`` (what the forms'
    ``counts`` ask for: the linkage scale) and whether each column of ``zeros`` has a cell written with a leading zero;
    complete records only."""
    frame = normalize(frame, reading)
    holes = frame[used].isna().sum() if used else pd.Series(dtype=int)
    holes = holes[holes > 0]
    if len(holes):
        cols = ", ".join(f"{c!r} ({int(k)} missing)" for c, k in holes.items())
        raise SdcevalError(
            f"the {what} has missing values in {cols} (in one of its partitions); the "
            "partitioned evaluation needs complete records: remove those records from "
            "the original and the release (keeping them row-aligned) first")
    counts = {}
    for c in counted:
        x = frame[c].to_numpy(np.float64)
        if not np.isfinite(x).all():
            raise SdcevalError(f"column {c!r} of the {what} holds infinite values")
        counts[c] = np.unique(x, return_counts=True)
    return {"lengths": [len(frame)], "head": frame.head(MIN_ROWS),
            "distinct": {c: frame[c].drop_duplicates() for c in distinct},
            "counts": counts,
            "zeros": {c: bool(frame[c].str.fullmatch(LEADING_ZERO).any()) for c in zeros}}


def _length(frame: pd.DataFrame) -> dict:
    return {"lengths": [len(frame)]}


def _merge_scans(*parts: dict) -> dict:
    """Summaries of consecutive partitions as one (lengths in order, value counts
    summed, distinct values united)."""
    out: dict = {"lengths": [n for p in parts for n in p["lengths"]]}
    if "head" not in parts[0]:
        return out
    out["head"] = pd.concat([p["head"] for p in parts], ignore_index=True).head(MIN_ROWS)
    out["distinct"] = {c: pd.concat([p["distinct"][c] for p in parts],
                                    ignore_index=True).drop_duplicates()
                       for c in parts[0]["distinct"]}
    out["zeros"] = {c: any(p["zeros"][c] for p in parts) for c in parts[0]["zeros"]}
    out["counts"] = {}
    for c in parts[0]["counts"]:
        v = np.concatenate([p["counts"][c][0] for p in parts])
        k = np.concatenate([p["counts"][c][1] for p in parts])
        uniq, inv = np.unique(v, return_inverse=True)
        out["counts"][c] = (uniq, np.bincount(inv.ravel(), weights=k,
                                              minlength=len(uniq)).astype(np.int64))
    return out


# -- the context every task reads ---------------------------------------------------------------
@dataclass
class _Context:
    """What every task needs besides its partitions, sent to each worker once: the
    forms asked for and their preparations (``shared``: one per variant sharing them)."""

    asked: list          # (label, index into shared, params, the form's finish)
    shared: list         # (form, prep)
    n: int
    reading: Reading
    rel_reading: Reading
    original_name: str
    release_name: str
    lengths: list
    rel_lengths: list | None
    schema: Schema


class _Whole:
    """The whole table as the forms' ``prepare`` sees it (`sdceval.core.partial.Whole`),
    on the client."""

    def __init__(self, n, schema, scanned, reading, name, release_numbers):
        self.n, self.schema, self._scanned = n, schema, scanned
        self._reading, self._name, self._numbers = reading, name, release_numbers
        self._memo: dict = {}

    def domain(self) -> Dataset:
        return Dataset(normalize(self._scanned["head"], self._reading), self.schema,
                       name=self._name)

    def value_counts(self, column: str) -> tuple:
        return self._scanned["counts"][column]

    def release_numbers(self) -> np.ndarray:
        return self.memo("release numbers", self._numbers)

    def memo(self, key, compute):
        if key not in self._memo:
            self._memo[key] = compute()
        return self._memo[key]


def _prepare(run: Runner, orig, rel_rows, rel, release, original, source: SchemaSource,
             meta, sch: Schema, plan: list[_Asked], reading: Reading, zeros: list
             ) -> _Context:
    """Pass 1, then everything the tasks share: the schema with every hierarchy the
    forms need built from the whole table, and each form's preparation."""
    scanned, rel_lengths = _pass_one(run, orig, rel_rows, sch, plan, reading, zeros)
    n = int(sum(scanned["lengths"]))
    if n < MIN_ROWS:
        raise SdcevalError(f"the original has {n} record(s); disclosure control needs at "
                           "least 2")
    where = shown(release)
    if rel_lengths is not None and sum(rel_lengths) != n:
        raise SdcevalError(_misaligned(where, sum(rel_lengths), n))
    back = tuple(c for c in zeros if not scanned["zeros"][c])
    if back:    # integers after all: numbers, as `load_table` reads them
        reading = Reading(tuple(c for c in reading.text if c not in back), back)
        sch = source.schema(normalize(meta, reading))
        scanned["distinct"] = {c: normalize(v.to_frame(c), reading)[c]
                               for c, v in scanned["distinct"].items()}
    name = Path(original).stem if isinstance(original, (str, Path)) else "original"
    schema = _fixed_schema(sch, scanned["distinct"], name)

    def numbers() -> np.ndarray:
        y = _release_numbers(run, rel[list(sch.numeric)], sch)
        if len(y) != n:
            raise SdcevalError(_misaligned(where, len(y), n))
        return y
    whole = _Whole(n, schema, scanned, reading, name, numbers)
    index: dict = {}
    shared, asked = [], []
    for p in plan:
        sid = p.form.shared(p.params)
        if sid not in index:
            index[sid] = len(shared)
            shared.append((p.form, p.form.prepare(whole, p.params)))
        asked.append((p.label, index[sid], p.params, p.form.finish))
    return _Context(
        asked=asked, shared=shared, n=n, reading=reading,
        rel_reading=Reading(tuple(sch.qis) + ((sch.sensitive,) if sch.sensitive else ())),
        original_name=name, lengths=scanned["lengths"], rel_lengths=rel_lengths,
        release_name=str(release) if isinstance(release, (str, Path)) else "release",
        schema=schema)


def _pass_one(run: Runner, orig, rel_rows, sch: Schema, plan, reading: Reading,
              zeros: list) -> tuple[dict, list | None]:
    """The original's merged partition summaries (`_scan`: distinct values of the
    columns of the forms' ``hierarchies`` roles without a hierarchy given, value counts
    of their ``counts`` roles) and the release's partition lengths (None when no task
    reads the release in partitions)."""
    from dask import delayed
    hier_cols = [c for c in _roles(sch, {r for p in plan for r in p.form.hierarchies})
                 if sch[c].hierarchy is None]
    counted = _roles(sch, {r for p in plan for r in p.form.counts})
    scans = [delayed(_scan, pure=True)(p, reading, list(orig.columns), counted, hier_cols,
                                       zeros, "original")
             for p in orig.to_delayed()]
    graphs = [tree_merge(scans, _merge_scans)]
    if rel_rows is not None:
        graphs.append(tree_merge([delayed(_length, pure=True)(p)
                                  for p in rel_rows.to_delayed()], _merge_scans))
    try:
        got = run.compute(graphs)
    except SdcevalError:
        raise
    except (ValueError, OSError, pd.errors.ParserError) as exc:
        # a cell that does not parse lies beyond the block dask inferred the types from
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else repr(exc)
        raise SdcevalError(f"cannot read the original or the release: {first}; declare the "
                           "column's kind in the schema ([kinds])") from None
    return got[0], (got[1]["lengths"] if rel_rows is not None else None)


def _misaligned(where: str, got: int, n: int) -> str:
    return (f"release {where} has {got} records but the original has {n}; the release must "
            "be row-aligned with the original (row i protects record i, in record order: "
            "sdceval anonymize --keep-order writes it so)")


def _release_numbers(run: Runner, rel_numbers, sch: Schema) -> np.ndarray:
    """The release's numeric-role columns, whole, on the client (the linkage index),
    checked as `Release.numeric_matrix` checks a table read from disk."""
    table, = run.compute([rel_numbers])
    table = normalize(table, Reading())
    return Release(table, "release", kind="external").numeric_matrix(sch.numeric)


def _fixed_schema(sch: Schema, distinct: dict, name: str) -> Schema:
    """``sch``'s used columns (those of unused roles, an identifier, are not read) with a
    hierarchy for every column that needs one: those given, the others built from the
    whole table's distinct values exactly as `Dataset` builds them (by a data set of
    those values: every builder reads only the distinct values)."""
    cols = []
    for c in sch.columns:
        if c.role in UNUSED_ROLES:
            continue
        values = distinct.get(c.name)
        if values is not None:
            values = values.reset_index(drop=True)
            if len(values) < MIN_ROWS:   # a data set has 2 records at least
                values = pd.concat([values] * MIN_ROWS, ignore_index=True)
            one = Schema([ColumnSpec(c.name, c.role, c.kind, None)], missing=sch.missing)
            h = Dataset(values.to_frame(c.name), one, name=name).hierarchy(c.name)
            c = ColumnSpec(c.name, c.role, c.kind, h)
        cols.append(c)
    return Schema(cols, missing=sch.missing)


# -- pass 2: the measures per partition ----------------------------------------------------------
@dataclass(frozen=True)
class _Chunk:
    """Records ``start..stop-1``: whole original partitions ``parts`` and the slices
    ``(partition, a, b)`` of the release partitions that hold the same records."""

    start: int
    stop: int
    parts: tuple
    rel_slices: tuple


def _chunks(lengths: list, rel_lengths: list | None) -> list[_Chunk]:
    """The original's partitions as chunks of at least `MIN_ROWS` records (a smaller
    partition joins its predecessor, or its successor if it is first), each with the
    release rows of the same records."""
    groups: list[list] = []     # [start, stop, [partitions]]
    start = 0
    for i, size in enumerate(lengths):
        stop = start + size
        if groups and (size < MIN_ROWS or groups[-1][1] - groups[-1][0] < MIN_ROWS):
            groups[-1][1] = stop
            groups[-1][2].append(i)
        else:
            groups.append([start, stop, [i]])
        start = stop
    if len(groups) > 1 and groups[-1][1] - groups[-1][0] < MIN_ROWS:
        last = groups.pop()
        groups[-1][1] = last[1]
        groups[-1][2] += last[2]
    rel_bounds = None if rel_lengths is None else np.cumsum([0] + list(rel_lengths))
    out = []
    for a, b, parts in groups:
        slices = ()
        if rel_bounds is not None:
            slices = tuple((j, max(a, int(rel_bounds[j])) - int(rel_bounds[j]),
                            min(b, int(rel_bounds[j + 1])) - int(rel_bounds[j]))
                           for j in range(len(rel_lengths))
                           if rel_bounds[j] < b and rel_bounds[j + 1] > a)
        out.append(_Chunk(a, b, tuple(parts), slices))
    return out


def _measure_graph(key: str, ctx: _Context, orig, rel_rows):
    """Pass 2: one task per chunk, their partial results merged in a tree, then the
    measures' formulas (a task: the partial results stay on the workers)."""
    from dask import delayed
    parts = orig.to_delayed()
    rel_parts = rel_rows.to_delayed() if rel_rows is not None else None
    tasks = []
    for ch in _chunks(ctx.lengths, ctx.rel_lengths if rel_parts is not None else None):
        rel_pieces = [(rel_parts[j], a, b) for j, a, b in ch.rel_slices]
        tasks.append(delayed(_chunk_task, pure=True)(
            key, ch.start, [parts[i] for i in ch.parts], rel_pieces))
    return delayed(_finish, pure=True)(key, tree_merge(tasks, _merge_partials, key))


class _Part:
    """Records ``offset..`` as the forms' ``partial`` sees them
    (`sdceval.core.partial.Part`): the data set, its release and the numbers are built
    on first use, once for every form that reads them."""

    def __init__(self, ctx: _Context, orig: pd.DataFrame, rel_pieces: list, offset: int):
        self.n, self._ctx, self._orig, self._rel = ctx.n, ctx, orig, rel_pieces
        self.rows = np.arange(offset, offset + len(orig), dtype=np.int64)

    @cached_property
    def numbers(self) -> np.ndarray:
        return self._orig[list(self._ctx.schema.numeric)].to_numpy(np.float64)

    @cached_property
    def dataset(self) -> Dataset:
        return Dataset(self._orig, self._ctx.schema, name=self._ctx.original_name)

    @cached_property
    def release(self) -> Release:
        ctx = self._ctx
        rel = pd.concat([p.iloc[a:b] for p, a, b in self._rel], ignore_index=True)
        return release_from_frame(self.dataset, normalize(rel, ctx.rel_reading),
                                  name=ctx.release_name, file_row=self.rows,
                                  release_path=ctx.release_name)


def _chunk_task(key: str, offset: int, orig_parts: list, rel_pieces: list) -> list:
    """The partial result of every shared form on one chunk of records ``offset..``."""
    ctx = context(key)
    with threads.limited():
        orig = normalize(pd.concat(orig_parts, ignore_index=True)
                         if len(orig_parts) > 1 else orig_parts[0], ctx.reading)
        part = _Part(ctx, orig, rel_pieces, offset)
        return [form.partial(prep, part) for form, prep in ctx.shared]


def _merge_partials(key: str, *parts: list) -> list:
    """Partial results of consecutive chunks as one, form by form."""
    return [form.merge(*(p[i] for p in parts))
            for i, (form, _) in enumerate(context(key).shared)]


def _finish(key: str, merged: list) -> dict[str, Measurement]:
    """Each measure's formula on the merged partial results of every record."""
    ctx = context(key)
    out = {}
    for label, i, params, finish in ctx.asked:
        out[label] = finish(ctx.shared[i][1], merged[i], params)
    return out


__all__ = ["evaluate_partitioned", "partitioned_measures", "DEFAULT_BLOCKSIZE"]
