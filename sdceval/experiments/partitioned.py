"""Measures of a table too large for one machine's memory, evaluated in partitions on
Dask (issue 21 item 7).

`evaluate_partitioned` reads the original and a row-aligned release (CSV or Parquet
files, a directory of Parquet files, or dask DataFrames) partition by partition on a
Dask scheduler, computes each decomposable measure's partial sums per partition and
merges them into the value and details `sdceval.evaluate` gives on the whole table in
memory (exactly for counts; to rounding, about 1e-15 relative, for sums of floats).
**The original is never materialized whole in one process**: every function that sees
its records sees one partition (two, where a partition of fewer than 2 records joins
its neighbour), and only per-partition summaries (row counts, distinct values, partial
sums, class sizes) leave the partitions.

Which measures decompose, and how
---------------------------------
* ``k_anonymity``, ``discernibility``, ``avg_class_size`` (class counts of a
  generalized release).  A class is a distinct combination of the released QI cells;
  each partition gives the size of each of its classes (the cells are read back from the
  labels by `sdceval.core.release_io.release_from_frame`, checked against the records),
  and the sizes are summed over partitions: ``|E| = Σ_p |E ∩ p|``.  Then the measures'
  formulas on the merged sizes: ``min_E |E|`` over classes with a record kept (all
  classes if every record is suppressed, or with ``include_suppressed``);
  ``DM = Σ_{E kept} |E|² + N · #suppressed``; ``C_avg = N_kept / C_kept / k``.
* ``query_error``.  The workload is the in-memory measure's (`queries.random_queries`
  on the whole table's hierarchies, same seed); a query's actual count and its count
  reconstructed from the release are sums over records, so over partitions:
  ``act_q = Σ_p act_q(p)`` (`queries.original_counts` on the partition),
  ``rec_q = Σ_p rec_q(p)`` (`queries.reconstructed_counts`: each record weighs
  ``Π_a |cell_a ∩ b_a| / |cell_a|``); then ``ρ = mean_{act_q > 0} |rec_q − act_q| /
  act_q × 100``.  The partitions' data sets share the whole table's schema and
  hierarchies (built from the distinct values of every column, merged over
  partitions), so codes and domains agree.
* ``linkage_risk`` (per-record nearest-neighbour queries against a broadcast index).
  The release must fit in memory: its numbers are read on the client, ranked on the
  original's scale and sent to each worker once, where the KD-tree over its distinct
  rank vectors is built once.  The original's scale needs each attribute's sorted
  distinct values and their counts, merged over partitions
  (`linkage.OriginalScale.from_counts`: an original value gets exactly its mid-rank).
  Each partition's records are ranked, linked to their nearest released row and
  compared with their own (``rows`` = their global positions); the partial sums
  ``Σ log(1+d)``, ``Σ d``, ``Σ hit/ties``, ``Σ hit``, ``Σ perm`` and ``max perm`` give
  the value and every detail of `linkage_risk` with ``sample=0``: this path links
  every record, which is its point.

Every other measure is refused, naming these: ``propensity`` is a logistic fit by
Newton's method (its ``X'WX`` and gradient are sums over records, so it could
decompose, but that is not done here), ``emd`` clusters the whole table with k-means;
others that would decompose (``glm``, ``cm``, the ℓ / t / δ checks) are not offered
yet (docs/partitioned.md).

Cost: two passes over the original (row counts and distinct values, then the
measures), one over the release's row counts, and for ``linkage_risk`` the release
read once on the client; memory per worker: one partition of each table, the schema's
hierarchies, the query workload and, for ``linkage_risk``, the release's distinct rank
vectors, its KD-tree and one record index per record.
"""
from __future__ import annotations

import threading
import uuid
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

import numpy as np
import pandas as pd

from sdceval import privacy
from sdceval.catalog import get_measure
from sdceval.compare.ranking import parse_measure_list
from sdceval.core import threads
from sdceval.core.dataset import Dataset
from sdceval.core.errors import SdcevalError
from sdceval.core.loaders import _NA_MARKERS, LEADING_ZERO, read_schema_file
from sdceval.core.measurement import Measurement
from sdceval.core.release import Release
from sdceval.core.release_io import release_from_frame
from sdceval.core.release_order import BUCKET_COLUMN, key_path_for
from sdceval.core.schema import (ROLE_KEYS, UNUSED_ROLES, ColumnSpec, Schema,
                                 load_hierarchies, role_names, schema_kinds, text_columns)
from sdceval.measures import linkage, queries
from sdceval.measures._compatibility import combine, first
from sdceval.measures.privacy_checks import check_classes
from sdceval.measures._nearest import NearestIndex

#: the measures that decompose over partitions (module docstring)
CLASS_MEASURES = ("k_anonymity", "discernibility", "avg_class_size")
SUPPORTED = CLASS_MEASURES + ("query_error", "linkage_risk")
#: why some measures asked for often are not evaluated in partitions (for the error)
_WHY_NOT = {
    "propensity": "a logistic fit by Newton's method over the whole table: its sums over "
                  "records could decompose, but that is not done here",
    "emd": "it clusters the whole table with k-means",
}
#: bytes per partition read from a file (CSV blocks; Parquet row groups combined)
DEFAULT_BLOCKSIZE = "64MiB"
#: a data set has at least 2 records (`Dataset`): a smaller partition joins a neighbour
MIN_ROWS = 2
#: partial results merged per task (a tree of merges: no task holds them all)
FAN_IN = 8
#: times a worker found without the context (joined or restarted) before giving up
_MAX_RESENDS = 3
_COMPRESSED = (".gz", ".bz2", ".xz", ".zip", ".zst")


# -- the public entry point ----------------------------------------------------------------
def evaluate_partitioned(original, release, measures, *, schema, client=None,
                         blocksize: int | str = DEFAULT_BLOCKSIZE
                         ) -> dict[str, Measurement]:
    """Evaluate decomposable measures of a table too large for memory, in partitions.

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
        (``"query_error:n_queries=200,k_anonymity"``), among `SUPPORTED`.
        ``linkage_risk`` links every record (``sample`` must be 0 or left out).
    schema : Schema, str, Path or mapping
        The roles and hierarchies: a `Schema`, a TOML schema file (as ``sdceval
        evaluate --schema`` reads) or its mapping.  Roles are given, not inferred (that
        would need the whole table).  Hierarchies not given are built from the whole
        table's distinct values, as `Dataset` builds them.
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
    ``SDCEVAL_THREADS`` in the workers' environment); the schema, query workload and
    linkage index reach each worker once (``client.run``), not with every task.
    """
    dd = _dask_dataframe()
    plan = _plan(measures)
    source = _SchemaSource.of(schema)
    orig, zeros = _open(dd, original, "original", source.text, source.floats, blocksize,
                        source.declared)
    reading = _Reading(tuple(source.text) + tuple(zeros))
    # roles and columns now; kinds again after pass 1 if some integers were read as text
    sch = source.schema(_normalize(orig._meta, reading))
    needs_ds = any(p.name != "linkage_risk" for p in plan)
    _check_roles(sch, plan)
    used = [c.name for c in sch.columns if c.role not in UNUSED_ROLES]
    missing = [c for c in used if c not in orig.columns]
    if missing:
        raise SdcevalError(f"the original lacks schema column(s) {', '.join(map(repr, missing))}"
                           "; give the file with those columns or a schema without them")
    rel_text = sch.qis + ([sch.sensitive] if sch.sensitive else [])
    rel, _ = _open(dd, release, "release", rel_text, sch.numeric, blocksize)
    rel_cols = _check_release(rel, release, sch, plan)
    orig = orig[used if needs_ds else list(sch.numeric)]
    rel_numbers = (rel[list(sch.numeric)] if any(p.name == "linkage_risk" for p in plan)
                   else None)
    rel = rel[rel_cols] if needs_ds else None
    with _Runner(client) as run:
        ctx = _prepare(run, orig, rel, rel_numbers, release, original, source, sch, plan,
                       reading, [c for c in zeros if c in orig.columns])
        key = run.install(ctx)
        results, = run.compute([_measure_graph(key, ctx, orig, rel)], ctx, key)
    out = {}
    for p in plan:
        m = results[p.label]
        spec = get_measure(p.name)
        m.measure, m.direction = p.name, spec.direction
        out[p.label] = m
    return out


# -- measures asked for --------------------------------------------------------------------
@dataclass(frozen=True)
class _Asked:
    """One measure variant: its label, registry name and resolved parameters."""

    label: str
    name: str
    params: dict


def _plan(measures) -> list[_Asked]:
    """The measures parsed by the package's parser, each checked to decompose and its
    parameters resolved by its registry entry (bad names and values fail here)."""
    out = []
    for label, (name, params) in parse_measure_list(measures).items():
        if name not in SUPPORTED:
            why = _WHY_NOT.get(name, "not offered: only measures that decompose over "
                                     "partitions are")
            raise SdcevalError(
                f"measure {name!r} is not evaluated in partitions ({why}); "
                f"evaluate_partitioned computes {', '.join(SUPPORTED)}: evaluate {name} "
                "in memory (sdceval.evaluate), on a sample of the records if the table "
                "is too large")
        resolved = get_measure(name).resolve(params)
        if name == "linkage_risk":
            if "sample" in params and resolved["sample"] != 0:
                raise SdcevalError(
                    f"linkage_risk: sample={resolved['sample']} is not used in partitions: "
                    "the partitioned path links every record; leave sample out (or "
                    "sample=0)")
            resolved["sample"] = 0
        out.append(_Asked(label, name, resolved))
    return out


def _check_roles(sch: Schema, plan: list[_Asked]) -> None:
    names = {p.name for p in plan}
    if names & set(CLASS_MEASURES) and not sch.qis:
        raise SdcevalError("the class counts (k_anonymity, discernibility, avg_class_size) "
                           "need quasi-identifiers, but the schema gives none; give some "
                           "columns role 'qi'")
    if "linkage_risk" in names and not sch.numeric:
        raise SdcevalError("linkage_risk needs numeric attributes, but the schema gives "
                           "none with role 'numeric'; give the masked columns role "
                           "'numeric'")
    if "query_error" in names and not (sch.qis or sch.numeric):
        raise SdcevalError("query_error needs quasi-identifiers or numeric attributes to "
                           "query, but the schema gives neither; give some columns role "
                           "'qi' or 'numeric'")


def _check_release(rel, release, sch: Schema, plan: list[_Asked]) -> list[str]:
    """Refuse a release the measures cannot read (before anything is computed); the
    release columns the partitions need."""
    where = _shown(release)
    if isinstance(release, (str, Path)) and key_path_for(release).exists():
        raise SdcevalError(
            f"release {where} has a private key beside it ({str(key_path_for(release))!r}): "
            "its rows are shuffled, and the partitioned path reads a release in record "
            "order: write it with `sdceval anonymize --keep-order` (or sort it by the key)")
    cols = list(rel.columns)
    if BUCKET_COLUMN in cols and BUCKET_COLUMN not in sch:
        raise SdcevalError(
            f"release {where} is bucketized (a 'bucket' column): a bucket's records may lie "
            "in several partitions, so its measures do not decompose; evaluate it in memory")
    names = {p.name for p in plan}
    asked = sorted(names & set(CLASS_MEASURES))
    if asked:
        present = [q for q in sch.qis if q in cols]
        if not present:
            raise SdcevalError(
                f"measure {asked[0]!r} counts the classes of a generalized release (its QI "
                f"columns of labels such as [40-49] or *), but release {where} publishes no "
                "quasi-identifier column (a perturbative release?): evaluate linkage_risk or "
                "query_error on it, or give a generalized release")
        lacking = [q for q in sch.qis if q not in cols]
        if lacking:
            raise SdcevalError(f"release {where} lacks quasi-identifier column(s) "
                               f"{', '.join(map(repr, lacking))}; a generalized release "
                               "publishes every QI")
    if "linkage_risk" in names:
        lacking = [c for c in sch.numeric if c not in cols]
        if lacking:
            raise SdcevalError(
                f"linkage_risk compares published numbers, but release {where} lacks the "
                f"numeric column(s) {', '.join(map(repr, lacking))}; give a perturbative "
                "release of those columns")
        for c in sch.numeric:
            if not _is_number(rel._meta[c]):
                raise SdcevalError(f"release column {c!r} is not numeric (a generalized "
                                   "release cannot be used by linkage_risk)")
    return [c.name for c in sch.columns
            if c.role not in UNUSED_ROLES and c.name in cols]


# -- inputs --------------------------------------------------------------------------------
def _dask_dataframe():
    try:
        import dask.dataframe as dd
    except ImportError:
        raise SdcevalError("evaluating in partitions needs dask.dataframe: pip install "
                           "'dask[dataframe]' pyarrow") from None
    return dd


def _shown(source) -> str:
    return repr(str(source)) if isinstance(source, (str, Path)) else "(a dask DataFrame)"


@dataclass(frozen=True)
class _Reading:
    """How a partition becomes what `sdceval.core.loaders.load_table` gives for the whole
    file: ``text`` columns as written, ``numbers`` (CSV columns read as text to look
    for leading zeros, which have none) as numbers again."""

    text: tuple = ()
    numbers: tuple = ()


def _open(dd, source, what: str, text, floats, blocksize, declared=None):
    """``source`` as a dask DataFrame, and the CSV columns read as text to look for
    leading zeros (`_scan`).

    Text columns (codes, labels) are read as written; numeric-role columns of a CSV as
    float64 (dask infers the other types from the first block, where a column of
    integers may have decimals further on).  With ``declared`` (the columns a schema
    file declares numeric), a CSV column dask reads as integers and not declared is
    read as text, as `load_table` reads a whole file: a code written with a leading
    zero (``02116``) stays text, the others become numbers again once pass 1 has looked
    at every cell."""
    zeros: list = []
    if isinstance(source, dd.DataFrame):
        frame = source
    elif isinstance(source, (str, Path)):
        path = Path(source)
        if not path.exists():
            raise SdcevalError(f"{what} {str(path)!r} does not exist")
        suffixes = "".join(path.suffixes).lower()
        try:
            if path.is_dir() or suffixes.endswith((".parquet", ".pq", ".parq")):
                frame = dd.read_parquet(str(path), blocksize=blocksize)
            elif suffixes.endswith(_COMPRESSED):
                raise SdcevalError(
                    f"{what} {str(path)!r} is compressed, so it cannot be read in parts: "
                    "decompress it, or write it as a directory of Parquet files")
            else:
                header = [str(c) for c in pd.read_csv(path, nrows=0).columns]
                text = [c for c in text if c in header]
                dtype = {**{c: "float64" for c in floats if c in header},
                         **{c: str for c in text}}

                def read(dtype):
                    na = {c: ([""] if dtype.get(c) is str else sorted(_NA_MARKERS))
                          for c in header}
                    return dd.read_csv(str(path), blocksize=blocksize, dtype=dtype,
                                       keep_default_na=False, na_values=na)
                frame = read(dtype)
                if declared is not None:
                    zeros = [c for c in header if c not in dtype and c not in declared
                             and pd.api.types.is_integer_dtype(frame._meta[c])]
                    if zeros:
                        frame = read({**dtype, **{c: str for c in zeros}})
        except SdcevalError:
            raise
        except (ValueError, OSError, ImportError, pd.errors.ParserError) as exc:
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else repr(exc)
            raise SdcevalError(f"cannot read {what} {str(path)!r}: {first}") from None
    else:
        raise SdcevalError(f"{what} must be a CSV or Parquet file, a directory of Parquet "
                           f"files or a dask DataFrame, not {type(source).__name__}")
    if any(not isinstance(c, str) for c in frame.columns):  # a new frame: not the caller's
        frame = frame.rename(columns={c: str(c) for c in frame.columns})
    return frame, zeros


def _is_number(values) -> bool:
    return pd.api.types.is_numeric_dtype(values) and not pd.api.types.is_bool_dtype(values)


def _normalize(frame: pd.DataFrame, reading: _Reading) -> pd.DataFrame:
    """One partition as `sdceval.core.loaders.load_table` reads a whole file: dask's
    Arrow strings as pandas' own (what ``pd.read_csv`` gives), text columns stored as
    other types as text (`_read_parquet`), whole numbers read as text as numbers."""
    out = frame.copy(deep=False)  # a release partition may serve two chunks: not in place
    for c in out.columns:
        s = out[c]
        if c in reading.numbers:
            out[c] = pd.to_numeric(s) if len(s) else s.astype(np.int64)
        elif isinstance(s.dtype, pd.StringDtype) and s.dtype.na_value is pd.NA:
            out[c] = s.astype(str).where(s.notna())
        elif c in reading.text and not (pd.api.types.is_string_dtype(s) or s.dtype == object):
            out[c] = s.astype(str).where(s.notna())
    return out.reset_index(drop=True)


class _SchemaSource:
    """The ``schema`` argument as given: the columns to read as text before the table
    is read (codes such as ``02116`` keep their zeros), and the `Schema` once the
    table's columns are known.  A schema file's kinds are inferred from the columns'
    types as ``sdceval evaluate --schema`` infers them (`declared`: the columns it
    declares numeric, whose integers are never codes); a `Schema` fixes them."""

    def __init__(self, given: Schema | None, spec: Mapping | None, base: Path | None):
        self.given, self.spec, self.base = given, spec, base
        if given is not None:
            self.hierarchies = {}
            self.text = [c.name for c in given.columns if c.role not in UNUSED_ROLES and (
                (c.hierarchy is not None and not c.hierarchy.numeric)
                or (c.hierarchy is None and c.kind == "categorical"))]
            self.floats = list(given.numeric)
            self.declared = None
        else:
            self.hierarchies = load_hierarchies(spec, base)
            self.text = text_columns(spec, self.hierarchies)
            self.floats = role_names(spec.get("numeric"), "numeric")
            self.declared = ([c for c, h in self.hierarchies.items() if h.numeric]
                             + [c for c, k in schema_kinds(spec).items() if k == "numeric"])

    @classmethod
    def of(cls, schema) -> "_SchemaSource":
        if isinstance(schema, Schema):
            return cls(schema, None, None)
        if isinstance(schema, (str, Path)):
            path = Path(schema)
            if not path.exists():
                raise SdcevalError(f"schema file {str(path)!r} does not exist")
            spec, base = dict(read_schema_file(path)), path.parent
        elif isinstance(schema, Mapping):
            spec, base = dict(schema), None
        else:
            raise SdcevalError("schema must be a Schema, a TOML schema file or its mapping "
                               f"(roles and hierarchies), not {type(schema).__name__}")
        if not any(spec.get(k) for k in ROLE_KEYS):
            raise SdcevalError("the schema gives no roles: name the columns' roles (qi, "
                               "sensitive, numeric, ...), which the partitioned path "
                               "does not infer (that would need the whole table)")
        return cls(None, spec, base)

    def schema(self, meta: pd.DataFrame) -> Schema:
        if self.given is not None:
            return self.given
        return Schema.from_mapping(meta, {**self.spec, "hierarchies": self.hierarchies},
                                   self.base)


# -- the schedulers ----------------------------------------------------------------------------
#: in each process that runs tasks: key -> the `_Context` sent under it (`_install`), and
#: (key, ranks) -> the KD-tree built from it, once per process (`_tree`)
_CONTEXTS: dict[str, Any] = {}
_TREES: dict[tuple, Any] = {}
_LOCK = threading.Lock()


class _ContextMissing(Exception):
    """A task found its process without the context (a worker that joined or restarted
    after it was sent): the client sends it there and computes again."""

    def __init__(self, key: str):
        super().__init__(key)
        self.key = key


def _install(key: str, ctx) -> bool:
    """Run on each worker (``client.run``): keep the context under ``key``."""
    with _LOCK:
        _CONTEXTS[key] = ctx
    return True


def _holds(key: str) -> bool:
    return key in _CONTEXTS


def _forget(key: str) -> int:
    """Run on each worker at the end: the context and its trees leave the process."""
    with _LOCK:
        n = _CONTEXTS.pop(key, None) is not None
        for k in [k for k in _TREES if k[0] == key]:
            del _TREES[k]
    return int(n)


def _context(key: str):
    ctx = _CONTEXTS.get(key)
    if ctx is None:
        raise _ContextMissing(key)
    return ctx


def _tree(key: str, ranks: str, points: np.ndarray):
    """The KD-tree over the release's distinct rank vectors: built on the first task
    of a process that needs it, then shared by its later tasks."""
    with _LOCK:
        tree = _TREES.get((key, ranks))
        if tree is None:
            tree = _TREES[(key, ranks)] = NearestIndex(points)
    return tree


class _Runner:
    """Computes task graphs on a distributed client or on dask's local scheduler, and
    puts the context in every process that runs tasks: on a cluster with ``client.run``
    (pickled once, unpickled once per worker); locally, the object itself."""

    def __init__(self, client):
        self.client = _distributed_client(client)
        self.keys: list[str] = []
        self._quiet = False

    def __enter__(self):
        if self.client is not None:
            from sdceval.experiments.executor import _quiet_dask
            _quiet_dask(True)
            self._quiet = True
        return self

    def __exit__(self, *exc):
        try:
            for key in self.keys:
                if self.client is None:
                    _forget(key)
                else:
                    try:
                        self.client.run(_forget, key, on_error="ignore")
                    except Exception:  # noqa: BLE001 - a worker gone has nothing to drop
                        pass
        finally:
            if self._quiet:
                from sdceval.experiments.executor import _quiet_dask
                _quiet_dask(False)

    def install(self, ctx) -> str:
        key = f"sdceval-partitioned-{uuid.uuid4().hex}"
        self.keys.append(key)
        if self.client is None:
            _install(key, ctx)
        else:
            self._send(key, ctx, None)
        return key

    def _send(self, key: str, ctx, workers) -> None:
        got = self.client.run(_install, key, ctx, workers=workers, on_error="return")
        failed = [(w, r) for w, r in got.items() if isinstance(r, BaseException)]
        if failed and len(failed) == len(got):
            worker, err = failed[0]
            raise SdcevalError(f"the Dask workers cannot take the evaluation's context (on "
                               f"{worker}: {type(err).__name__}: {err}); they need the same "
                               "sdceval, pandas and numpy as this client")

    def compute(self, graphs: list, ctx=None, key: str | None = None) -> list:
        """``graphs`` (delayed objects, dask collections) computed; a worker found
        without the context gets it, and the graphs run again (at most `_MAX_RESENDS`
        times)."""
        for attempt in range(_MAX_RESENDS + 1):
            try:
                return self._compute(graphs)
            except _ContextMissing:
                if self.client is None or ctx is None or attempt == _MAX_RESENDS:
                    raise SdcevalError("the Dask workers do not keep the evaluation's "
                                       "context (are they restarting?); run again") from None
                held = self.client.run(_holds, key, on_error="return")
                self._send(key, ctx, [w for w, h in held.items() if h is not True])

    def _compute(self, graphs: list) -> list:
        if self.client is None:
            import dask
            with warnings.catch_warnings():
                # dask's Parquet reader calls a pandas API that pandas 3 deprecates: the
                # user can do nothing about it
                warnings.filterwarnings("ignore", message="The inplace keyword in "
                                        "DataFrame.reset_index is deprecated")
                return list(dask.compute(*graphs))
        futures = self.client.compute(graphs)
        try:
            return self.client.gather(futures)
        except BaseException:
            self.client.cancel(futures)
            raise


def _distributed_client(client):
    """The ``distributed`` client to run on: the one given, else the default one when
    dask's scheduler is (or defaults to) it; None for a local scheduler."""
    if client is not None:
        if not hasattr(client, "run") or not hasattr(client, "compute"):
            raise SdcevalError(f"client must be a distributed.Client, not "
                               f"{type(client).__name__}")
        return client
    import dask
    chosen = dask.config.get("scheduler", None)
    if chosen in ("processes", "multiprocessing"):
        raise SdcevalError("evaluate_partitioned runs on dask's synchronous or threaded "
                           "scheduler or on a distributed client, not on the 'processes' "
                           "scheduler (its processes would not hold the evaluation's "
                           "context); use a distributed.LocalCluster")
    if chosen not in (None, "dask.distributed", "distributed"):
        return None
    try:
        from distributed import default_client
        return default_client()
    except (ImportError, ValueError):
        return None


def _tree_merge(items: list, merge) -> Any:
    """``merge`` over ``items`` (delayed), in order, `FAN_IN` at a time: no task (and
    not the client) holds every partial result at once."""
    from dask import delayed
    while len(items) > 1:
        items = [delayed(merge, pure=True)(*items[i:i + FAN_IN])
                 if len(items[i:i + FAN_IN]) > 1 else items[i]
                 for i in range(0, len(items), FAN_IN)]
    return items[0]


# -- pass 1: row counts, distinct values, value counts ----------------------------------------
def _scan(frame: pd.DataFrame, reading: _Reading, used, counted, distinct, zeros,
          what: str) -> dict:
    """One partition's summary: its length, its first two records, the distinct values
    of ``distinct`` (hierarchies), the value counts of ``counted`` (the linkage scale)
    and whether each column of ``zeros`` has a cell written with a leading zero;
    complete records only."""
    frame = _normalize(frame, reading)
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
class _Linkage:
    """The broadcast index of one ``ranks`` reading: the release's distinct rank
    vectors (the tree's points), how many released rows each stands for, and each
    record's own released row among them (``uy[inverse[i]]`` is the rank vector of
    release row ``i``, so no second copy of the ranks travels)."""

    points: np.ndarray
    counts: np.ndarray
    inverse: np.ndarray
    rank_scales: tuple


@dataclass
class _Context:
    """What every task needs besides its partitions, sent to each worker once."""

    plan: list
    n: int
    reading: _Reading
    rel_reading: _Reading
    original_name: str
    release_name: str
    lengths: list
    rel_lengths: list | None
    schema: Schema | None = None
    #: query_error's parameters -> (predicates, sensitive values, query attributes)
    workloads: dict = field(default_factory=dict)
    scale: Any = None
    numeric: list = field(default_factory=list)
    #: linkage_risk's ``ranks`` -> its index
    links: dict = field(default_factory=dict)

    @property
    def classes(self) -> bool:
        return any(p.name in CLASS_MEASURES for p in self.plan)

    @property
    def needs_release_rows(self) -> bool:
        return any(p.name != "linkage_risk" for p in self.plan)


def _workload_key(params: dict) -> tuple:
    return tuple(sorted((k, params[k]) for k in ("n_queries", "qd", "sel", "seed",
                                                 "selectivity")))


def _prepare(run: _Runner, orig, rel, rel_numbers, release, original,
             source: _SchemaSource, sch: Schema, plan, reading: _Reading, zeros: list
             ) -> _Context:
    """Pass 1, then everything the tasks share: the schema with every hierarchy fixed,
    the query workloads, the linkage scale and index."""
    names = {p.name for p in plan}
    scanned, rel_lengths = _pass_one(run, orig, rel, sch, plan, reading, zeros)
    n = int(sum(scanned["lengths"]))
    if n < MIN_ROWS:
        raise SdcevalError(f"the original has {n} record(s); disclosure control needs at "
                           "least 2")
    where = _shown(release)
    if rel_lengths is not None and sum(rel_lengths) != n:
        raise SdcevalError(_misaligned(where, sum(rel_lengths), n))
    back = tuple(c for c in zeros if not scanned["zeros"][c])
    if back:    # integers after all: numbers, as `load_table` reads them
        reading = _Reading(tuple(c for c in reading.text if c not in back), back)
        sch = source.schema(_normalize(orig._meta, reading))
        scanned["distinct"] = {c: _normalize(v.to_frame(c), reading)[c]
                               for c, v in scanned["distinct"].items()}
    ctx = _Context(plan=plan, n=n, reading=reading,
                   rel_reading=_Reading(tuple(sch.qis) + ((sch.sensitive,)
                                                          if sch.sensitive else ())),
                   original_name=(Path(original).stem if isinstance(original, (str, Path))
                                  else "original"),
                   release_name=str(release) if isinstance(release, (str, Path))
                   else "release", lengths=scanned["lengths"], rel_lengths=rel_lengths)
    if ctx.needs_release_rows:
        ctx.schema = _fixed_schema(sch, scanned["distinct"], ctx.original_name)
        if "query_error" in names:
            # the workload depends only on the hierarchies: drawn on two records
            domain = Dataset(_normalize(scanned["head"], reading), ctx.schema,
                             name=ctx.original_name)
            for p in plan:
                if p.name == "query_error":
                    w = queries.random_queries(domain, p.params["n_queries"],
                                               p.params["qd"], p.params["sel"],
                                               p.params["seed"], p.params["selectivity"])
                    ctx.workloads[_workload_key(p.params)] = (
                        w.predicates, w.sensitive, queries.query_attributes(domain))
    if "linkage_risk" in names:
        ctx.numeric = list(sch.numeric)
        counts = scanned["counts"]
        ctx.scale = linkage.OriginalScale.from_counts([counts[c][0] for c in ctx.numeric],
                                                      [counts[c][1] for c in ctx.numeric])
        y = _release_numbers(run, rel_numbers, sch)
        if len(y) != n:
            raise SdcevalError(_misaligned(where, len(y), n))
        ctx.links = _linkage_indexes(ctx.scale, y, plan)
        del y
    return ctx


def _pass_one(run: _Runner, orig, rel, sch: Schema, plan, reading: _Reading, zeros: list
              ) -> tuple[dict, list | None]:
    """The original's merged partition summaries (`_scan`) and the release's partition
    lengths (None when no task reads the release in partitions)."""
    from dask import delayed
    names = {p.name for p in plan}
    hier_cols = []
    if any(p.name != "linkage_risk" for p in plan):
        hier_cols = sch.qis + ([sch.sensitive] if sch.sensitive else [])
        if "query_error" in names:
            hier_cols += sch.numeric
        hier_cols = [c for c in hier_cols if sch[c].hierarchy is None]
    counted = list(sch.numeric) if "linkage_risk" in names else []
    scans = [delayed(_scan, pure=True)(p, reading, list(orig.columns), counted, hier_cols,
                                       zeros, "original")
             for p in orig.to_delayed()]
    graphs = [_tree_merge(scans, _merge_scans)]
    if rel is not None:
        graphs.append(_tree_merge([delayed(_length, pure=True)(p)
                                   for p in rel.to_delayed()], _merge_scans))
    try:
        got = run.compute(graphs)
    except SdcevalError:
        raise
    except (ValueError, OSError, pd.errors.ParserError) as exc:
        # a cell that does not parse lies beyond the block dask inferred the types from
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else repr(exc)
        raise SdcevalError(f"cannot read the original or the release: {first}; declare the "
                           "column's kind in the schema ([kinds])") from None
    return got[0], (got[1]["lengths"] if rel is not None else None)


def _linkage_indexes(scale, y: np.ndarray, plan) -> dict:
    """Per ``ranks`` reading asked for: the release's ranks, as distinct rank vectors
    with their multiplicities and each row's own vector (`_Linkage`)."""
    out = {}
    asked = [p.params for p in plan if p.name == "linkage_risk"]
    # row numbers in 4 bytes where they fit: the index travels to every worker
    small = np.int32 if len(y) < np.iinfo(np.int32).max else np.int64
    for ranks in dict.fromkeys(a["ranks"] for a in asked):
        ry = scale.rank(y) if ranks == "original" else linkage.rank_matrix(y)
        # distinct rows as `linkage.link` finds them (by hashing: no sorted n x m copy)
        inverse, count = combine(list(ry.T), len(ry))
        points = ry[first(inverse, count)]
        del ry
        counts = np.bincount(inverse, minlength=count)
        scales = tuple(dict.fromkeys(a["rank_scale"] for a in asked if a["ranks"] == ranks))
        out[ranks] = _Linkage(points, counts.astype(small), inverse.astype(small), scales)
    return out


def _misaligned(where: str, got: int, n: int) -> str:
    return (f"release {where} has {got} records but the original has {n}; the release must "
            "be row-aligned with the original (row i protects record i, in record order: "
            "sdceval anonymize --keep-order writes it so)")


def _release_numbers(run: _Runner, rel_numbers, sch: Schema) -> np.ndarray:
    """The release's numeric-role columns, whole, on the client (the linkage index),
    checked as `Release.numeric_matrix` checks a table read from disk."""
    table, = run.compute([rel_numbers])
    table = _normalize(table, _Reading())
    return Release(table, "release", kind="external").numeric_matrix(sch.numeric)


def _fixed_schema(sch: Schema, distinct: dict, name: str) -> Schema:
    """``sch`` with a hierarchy for every column that needs one: those given, the others
    built from the whole table's distinct values exactly as `Dataset` builds them (by a
    data set of those values: every builder reads only the distinct values)."""
    cols = []
    for c in sch.columns:
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


def _measure_graph(key: str, ctx: _Context, orig, rel):
    """Pass 2: one task per chunk, their partial results merged in a tree, then the
    measures' formulas (a task: the class table stays on the workers)."""
    from dask import delayed
    parts = orig.to_delayed()
    rel_parts = rel.to_delayed() if rel is not None and ctx.needs_release_rows else None
    tasks = []
    for ch in _chunks(ctx.lengths, ctx.rel_lengths if rel_parts is not None else None):
        rel_pieces = [(rel_parts[j], a, b) for j, a, b in ch.rel_slices]
        tasks.append(delayed(_chunk_task, pure=True)(
            key, ch.start, [parts[i] for i in ch.parts], rel_pieces))
    return delayed(_finish, pure=True)(key, _tree_merge(tasks, _merge_partials))


def _chunk_task(key: str, offset: int, orig_parts: list, rel_pieces: list) -> dict:
    """The partial results of one chunk of records ``offset..``: the class sizes, the
    queries' actual and reconstructed counts and the linkage sums."""
    ctx = _context(key)
    with threads.limited():
        orig = _normalize(pd.concat(orig_parts, ignore_index=True)
                          if len(orig_parts) > 1 else orig_parts[0], ctx.reading)
        rows = np.arange(offset, offset + len(orig), dtype=np.int64)
        out: dict = {}
        if ctx.links:
            out["linkage"] = _linkage_sums(key, ctx, orig, rows)
        if ctx.needs_release_rows:
            rel = pd.concat([p.iloc[a:b] for p, a, b in rel_pieces], ignore_index=True)
            ds = Dataset(orig, ctx.schema, name=ctx.original_name)
            released = release_from_frame(ds, _normalize(rel, ctx.rel_reading),
                                          name=ctx.release_name, file_row=rows,
                                          release_path=ctx.release_name)
            if ctx.classes:
                out["classes"] = _class_sizes(ctx, ds, released)
            out["queries"] = {}
            for wkey, (preds, sens, _) in ctx.workloads.items():
                act = queries.original_counts(ds, preds, sens)
                rec = queries.reconstructed_counts(
                    ds, released, queries.CountQueries(preds, sens, np.zeros(len(sens))))
                out["queries"][wkey] = (act, rec)
    return out


def _class_sizes(ctx: _Context, ds: Dataset, released: Release) -> pd.Series:
    """This chunk's classes (distinct combinations of released QI cells, and whether
    the record is suppressed: the all-``*`` combination) and their sizes."""
    if released.kind != "generalized":
        asked = next(p.name for p in ctx.plan if p.name in CLASS_MEASURES)
        raise SdcevalError(
            f"measure {asked!r} counts the classes of a generalized release, but release "
            f"{ctx.release_name!r} reads as {released.kind} (published numbers beside QIs "
            "with the original values); evaluate linkage_risk or query_error on it")
    cols = {}
    for i, q in enumerate(ds.schema.qis):
        lo, hi = released.cells[q]
        cols[f"lo{i}"], cols[f"hi{i}"] = lo, hi
    cols["suppressed"] = released.suppressed
    table = pd.DataFrame(cols)
    return table.groupby(list(table.columns), sort=False).size()


def _linkage_sums(key: str, ctx: _Context, orig: pd.DataFrame, rows: np.ndarray) -> dict:
    """Per (ranks, rank_scale): ``[Σ log(1+d), Σ d, Σ hit/ties, Σ hit, Σ perm, max
    perm]`` over this chunk's records, in that rank scale (`_merge_partials`)."""
    rx = ctx.scale.rank(orig[ctx.numeric].to_numpy(np.float64))
    out = {}
    for ranks, link in ctx.links.items():
        own = link.points[link.inverse[rows]]
        dist, correct, ties = linkage.link_to(_tree(key, ranks, link.points),
                                             link.counts, rx, own)
        perm = np.abs(rx - own).max(axis=1)
        for rank_scale in link.rank_scales:
            unit = 1.0 / ctx.n if rank_scale == "fraction" else 1.0
            p = perm * unit
            out[(ranks, rank_scale)] = np.r_[linkage.link_sums(dist * unit, correct, ties),
                                             p.sum(), p.max()]
    return out


def _merge_partials(*parts: dict) -> dict:
    """Partial results of consecutive chunks as one: class sizes summed by class, query
    counts summed, linkage sums added (their maxima maximized)."""
    out: dict = {}
    sizes = [p["classes"] for p in parts if "classes" in p]
    if sizes:
        table = pd.concat(sizes)
        out["classes"] = table.groupby(level=list(range(table.index.nlevels)),
                                       sort=False).sum()
    if "queries" in parts[0]:
        out["queries"] = {w: (sum(p["queries"][w][0] for p in parts),
                              sum(p["queries"][w][1] for p in parts))
                          for w in parts[0]["queries"]}
    if "linkage" in parts[0]:
        out["linkage"] = {}
        for k in parts[0]["linkage"]:
            s = np.stack([p["linkage"][k] for p in parts])
            out["linkage"][k] = np.r_[s[:, :5].sum(axis=0), s[:, 5].max()]
    return out


# -- the formulas on the merged partial results ----------------------------------------------
def _finish(key: str, merged: dict) -> dict[str, Measurement]:
    ctx = _context(key)
    out = {}
    for p in ctx.plan:
        if p.name in CLASS_MEASURES:
            out[p.label] = _class_measure(p.name, p.params, merged["classes"], ctx.n)
        elif p.name == "query_error":
            wkey = _workload_key(p.params)
            act, rec = merged["queries"][wkey]
            out[p.label] = _query_measure(p.params, act, rec, ctx.workloads[wkey][2])
        else:
            sums = merged["linkage"][(p.params["ranks"], p.params["rank_scale"])]
            out[p.label] = _linkage_measure(p.params, sums, ctx)
    return out


def _class_measure(name: str, params: dict, table: pd.Series, n: int) -> Measurement:
    """The class-count measures from the merged class sizes (formulas in
    `sdceval.measures.privacy_checks` and `information_loss`; suppressed records form
    the all-``*`` class)."""
    sizes = table.to_numpy(np.int64)
    supp = table.index.get_level_values(-1).to_numpy(bool)
    n_supp = int(sizes[supp].sum())
    if name == "k_anonymity":
        given = params["k"]
        cls = privacy.model_class("k")
        model = privacy.make_model("k", k=given if given is not None
                                   else cls.example.get("k", 1))
        # the all-'*' class is the class of suppressed records only
        value, details, _ = check_classes(model, sizes[:, None], None, supp, n_supp,
                                          params["include_suppressed"], given is not None)
        return Measurement(name, value, None, details=details)
    kept = sizes[~supp]
    if name == "discernibility":
        value = float(int((kept.astype(object) ** 2).sum()) + n * n_supp)
        return Measurement(name, value, None,
                           details={"normalized": value / n ** 2, "suppressed": n_supp})
    k = params["k"]
    if len(kept):
        records, n_classes = int(kept.sum()), len(kept)
    else:   # every record suppressed: one '*' class of all of them
        records, n_classes = n, len(sizes)
    value = records / n_classes / (k if k is not None else 1)
    return Measurement(name, float(value), None,
                       details={"n_classes": int(n_classes), "kept": int(kept.sum()),
                                **({"k": k} if k is not None else {})})


def _query_measure(params: dict, act: np.ndarray, rec: np.ndarray, attrs: tuple
                   ) -> Measurement:
    """``ρ = mean_{act_q > 0} |rec_q − act_q| / act_q × 100`` (`queries.query_error`)."""
    qd = params["qd"] if params["qd"] is not None else queries.default_qd(len(attrs))
    ok = act > 0
    if not ok.any():
        raise SdcevalError(
            f"query_error: none of the {len(act)} queries (qd={qd}, sel={params['sel']}) "
            "selects any original record; raise sel or lower qd")
    err = np.abs(rec[ok] - act[ok]) / act[ok] * 100.0
    return Measurement("query_error", float(err.mean()), None,
                       details={"n_queries": int(len(act)), "n_answered": int(ok.sum()),
                                "median": float(np.median(err)), "qd": int(qd),
                                "attributes": list(attrs)})


def _linkage_measure(params: dict, sums: np.ndarray, ctx: _Context) -> Measurement:
    """The value and details of `linkage.linkage_risk` (``sample=0``) from the sums of
    `_linkage_sums` over every record."""
    return linkage.linkage_measurement(sums[:4], ctx.n, (float(sums[4]), float(sums[5])),
                                       ctx.n, len(ctx.numeric), params)


__all__ = ["evaluate_partitioned", "SUPPORTED", "DEFAULT_BLOCKSIZE"]
