"""The results store of an output folder (issue 21; SPEC §6): one SQLite file,
``results.sqlite``, that a run writes as its jobs finish and every output file is
derived from.

Tables::

    meta(name, value)              the store's layout version
    runs(id, started, finished, status, metadata)
        one row per run: its metadata (sdceval version, git commit, start time, data
        fingerprints, executor and thread settings; `run_metadata`), status
        running / done / interrupted / failed
    jobs(hash, kind, key, title, version, spec, result, timings, run_id, finished)
        one row per finished job, keyed by `job_hash`: the hash of its resolved
        specification (kind, options, seed, repeats, the fingerprint of its data set)
        and sdceval's version; ``result`` is the job's result object (pickled: what the
        files are written from), ``timings`` its wall-clock figures (kept apart from
        the results, so that result files are identical across identical runs)
    measurements(job_hash, row, kind, job, fields, measure, value)
        one row per measurement of a job (`sdceval.experiments.jobs.JobKind.rows`):
        ``fields`` the job's parameters as JSON (data set, method, parameters, seed,
        sweep variables); `read_measurements` turns them into a tidy table

A job's row and its measurements are written in one transaction when the job finishes,
so an interrupted run keeps every job that finished and nothing of the one that did
not; the store is in WAL mode with a busy timeout, so several processes may write to
it (two runs into one folder) without losing a row.  The store holds results and
aggregates, never a record: result objects carry measures, parameters, per-record
*measurements* (property vectors) at most, not the data.

A result is reused only by the sdceval version that computed it (``version``): another
version recomputes.  The pickled result is read back by `load` only in the folder a
run writes to (its own store); `read_measurements` reads JSON only.
"""
from __future__ import annotations

import json
import pickle
import sqlite3
import time
from contextlib import closing
from pathlib import Path
from typing import Any, Iterable

import pandas as pd

from sdceval.core.errors import SdcevalError

STORE_NAME = "results.sqlite"
#: the layout of the tables (a store of another layout is refused, not migrated)
LAYOUT = 1

_TABLES = """
CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS runs (
    id INTEGER PRIMARY KEY AUTOINCREMENT, started TEXT NOT NULL, finished TEXT,
    status TEXT NOT NULL, metadata TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS jobs (
    hash TEXT PRIMARY KEY, kind TEXT NOT NULL, key TEXT NOT NULL, title TEXT,
    version TEXT NOT NULL, spec TEXT NOT NULL, result BLOB, timings TEXT,
    run_id INTEGER, finished TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS measurements (
    job_hash TEXT NOT NULL, row INTEGER NOT NULL, kind TEXT NOT NULL, job TEXT NOT NULL,
    fields TEXT NOT NULL, measure TEXT NOT NULL, value REAL,
    PRIMARY KEY (job_hash, row));
"""


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S%z")


def _version() -> str:
    import sdceval
    return sdceval.__version__


class ResultsStore:
    """The store of one output folder (module docstring).  ``create=False`` opens an
    existing store only (`sdceval results`)."""

    def __init__(self, folder, create: bool = True):
        folder = Path(folder)
        self.path = folder / STORE_NAME
        if not create and not self.path.is_file():
            raise SdcevalError(f"no results store in {str(folder)!r} (no {STORE_NAME}); "
                               "give the output folder of an `sdceval run`")
        if create:
            try:
                folder.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise SdcevalError(f"cannot create the output folder {str(folder)!r}: "
                                   f"{exc.strerror or exc}") from None
        try:
            self.db = sqlite3.connect(self.path, timeout=60, isolation_level=None)
            self.db.execute("PRAGMA busy_timeout = 60000")
            if create:
                self.db.execute("PRAGMA journal_mode = WAL")
                self.db.executescript(_TABLES)
                self.db.execute("INSERT OR IGNORE INTO meta VALUES ('layout', ?)",
                                (str(LAYOUT),))
            layout = self.db.execute("SELECT value FROM meta WHERE name = 'layout'"
                                     ).fetchone()
        except sqlite3.DatabaseError as exc:
            raise SdcevalError(f"{str(self.path)!r} is not a results store sdceval can "
                               f"read ({exc}); move it away to start afresh") from None
        if layout is None or int(layout[0]) != LAYOUT:
            raise SdcevalError(f"{str(self.path)!r} has layout {layout and layout[0]}, "
                               f"this sdceval reads layout {LAYOUT}; move it away (or "
                               "use --fresh with another --out)")

    # -- runs -------------------------------------------------------------------------
    def begin_run(self, metadata: dict) -> int:
        with self._tx() as db:
            cur = db.execute("INSERT INTO runs (started, status, metadata) VALUES (?, ?, ?)",
                             (metadata.get("started", _now()), "running",
                              json.dumps(metadata, sort_keys=True)))
            return int(cur.lastrowid)

    def end_run(self, run_id: int, status: str) -> None:
        with self._tx() as db:
            db.execute("UPDATE runs SET finished = ?, status = ? WHERE id = ?",
                       (_now(), status, run_id))

    def runs(self) -> pd.DataFrame:
        rows = self.db.execute("SELECT id, started, finished, status, metadata FROM runs "
                               "ORDER BY id").fetchall()
        return pd.DataFrame([{"run": r[0], "started": r[1], "finished": r[2],
                              "status": r[3], **json.loads(r[4])} for r in rows])

    # -- jobs -------------------------------------------------------------------------
    def done(self, job_hash: str) -> bool:
        """Whether a job with this key finished under this sdceval version."""
        row = self.db.execute("SELECT version, result IS NOT NULL FROM jobs WHERE hash = ?",
                              (job_hash,)).fetchone()
        return row is not None and row[0] == _version() and bool(row[1])

    def load(self, job_hash: str) -> Any:
        """The result object of a finished job (`save`)."""
        row = self.db.execute("SELECT result FROM jobs WHERE hash = ?", (job_hash,)
                              ).fetchone()
        if row is None:
            raise KeyError(job_hash)
        return pickle.loads(row[0])

    def timings(self, job_hash: str) -> dict:
        row = self.db.execute("SELECT timings FROM jobs WHERE hash = ?", (job_hash,)
                              ).fetchone()
        return json.loads(row[0]) if row and row[0] else {}

    def save(self, job_hash: str, *, kind: str, key: str, title: str, spec: dict,
             result: Any, rows: Iterable[dict], timings: dict, run_id: int | None) -> None:
        """The finished job and its measurements, in one transaction (module
        docstring); a job saved again (another run, --fresh) replaces its rows."""
        try:
            blob = pickle.dumps(result, protocol=pickle.HIGHEST_PROTOCOL)
        except (pickle.PicklingError, AttributeError, TypeError):
            # a result type that does not pickle (a kind defined in a function): its
            # measurements are kept, the job itself is recomputed on resume
            blob = None
        records = []
        for i, row in enumerate(rows):
            row = dict(row)
            measure, value = str(row.pop("measure")), row.pop("value")
            records.append((job_hash, i, kind, key, json.dumps(row, sort_keys=True,
                                                               default=str),
                            measure, None if value is None else float(value)))
        with self._tx() as db:
            db.execute("DELETE FROM measurements WHERE job_hash = ?", (job_hash,))
            db.execute("INSERT OR REPLACE INTO jobs VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                       (job_hash, kind, key, title, _version(),
                        json.dumps(spec, sort_keys=True, default=str), blob,
                        json.dumps(timings, sort_keys=True), run_id, _now()))
            db.executemany("INSERT INTO measurements VALUES (?, ?, ?, ?, ?, ?, ?)", records)

    def _tx(self):
        """A write transaction (BEGIN IMMEDIATE: the write lock first, so two writers
        wait for each other instead of failing half-way)."""
        store = self

        class _Tx:
            def __enter__(self):
                store.db.execute("BEGIN IMMEDIATE")
                return store.db

            def __exit__(self, exc_type, *_):
                store.db.execute("COMMIT" if exc_type is None else "ROLLBACK")
                return False
        return _Tx()

    # -- reading ----------------------------------------------------------------------
    def measurements(self, jobs: Iterable[str] | None = None) -> pd.DataFrame:
        """Every measurement (of ``jobs``, hashes, when given) as a tidy table: one row
        per measurement, the job's fields as columns (module docstring)."""
        query = ("SELECT m.job, m.kind, m.fields, m.measure, m.value, m.job_hash "
                 "FROM measurements m JOIN jobs j ON j.hash = m.job_hash")
        rows = self.db.execute(query + " ORDER BY j.finished, m.job_hash, m.row").fetchall()
        wanted = set(jobs) if jobs is not None else None
        records = []
        for job, kind, fields, measure, value, h in rows:
            if wanted is not None and h not in wanted:
                continue
            records.append({"job": job, "kind": kind, **json.loads(fields),
                            "measure": measure, "value": value, "job_hash": h})
        df = pd.DataFrame(records)
        for c in df.columns:
            if c != "value":
                # parameters keep their own types across jobs (k = 5, not 5.0)
                df[c] = pd.Series([r.get(c) for r in records], dtype=object, index=df.index)
        return tidy(df)

    def close(self) -> None:
        self.db.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def tidy(df: pd.DataFrame) -> pd.DataFrame:
    """Columns in reading order: job, kind, data, the job's fields, measure, value,
    job_hash last; parameter columns keep each value's own type (object)."""
    if df.empty:
        return pd.DataFrame(columns=["job", "kind", "data", "measure", "value", "job_hash"])
    first = [c for c in ("job", "kind", "data") if c in df]
    last = ["measure", "value", "job_hash"]
    middle = [c for c in df.columns if c not in first and c not in last]
    return df[first + middle + last].reset_index(drop=True)


def read_measurements(out, where: dict[str, str] | None = None) -> pd.DataFrame:
    """Every measurement stored in the output folder ``out`` (`sdceval results`,
    `sdceval.results`), keeping the rows whose columns equal ``where``'s values (as
    text)."""
    with closing(ResultsStore(out, create=False)) as store:
        df = store.measurements()
    for col, value in (where or {}).items():
        if col not in df.columns:
            raise SdcevalError(f"--where {col}=...: no column {col!r}; columns: "
                               f"{', '.join(map(str, df.columns))}")
        df = df[df[col].astype(str) == str(value)]
    return df.reset_index(drop=True)


__all__ = ["LAYOUT", "STORE_NAME", "ResultsStore", "read_measurements", "tidy"]
