"""The results store of an output folder (issue 21; SPEC §6; docs/store.md): one SQLite
file, ``results.sqlite``, that a run writes as its jobs finish and every output file is
derived from.

Tables::

    meta(name, value)              the store's layout version (`LAYOUT`)
    runs(id, started, finished, status, metadata)
        one row per run: its metadata (sdceval version, git commit, start time, data
        fingerprints, executor and thread settings; `run_metadata`), status
        running / done / interrupted / failed
    jobs(hash, kind, key, title, version, spec, result, timings, run_id, finished)
        one row per finished job, keyed by `job_hash`: the hash of its resolved
        specification (kind, options, seed, repeats, the fingerprint of its data set)
        and sdceval's version; ``result`` is the job's result object in the encoding of
        `sdceval.experiments.result_codec` (JSON, NumPy arrays as .npy without pickle:
        nothing in it can execute), ``timings`` its wall-clock figures (kept apart from
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
version recomputes; so does a result that does not read back (damaged or edited by
hand: said in the run's progress messages).  A store of layout 1 (earlier sdceval)
kept its results as Python pickles, which execute code when read: it is refused unless
the run says ``--fresh`` (the pickles are dropped unread) or ``--trust-legacy-store``
(they are read once and stored in the safe encoding).  A store that is not SQLite, has
no or an unknown layout, or damaged rows gives a one-line error naming the file and the
fix.
"""
from __future__ import annotations

import json
import re
import sqlite3
import time
from contextlib import closing, contextmanager
from pathlib import Path
from typing import Any, Callable, Iterable

import pandas as pd

from sdceval._version import __version__
from sdceval.core.errors import SdcevalError
from sdceval.experiments import result_codec

STORE_NAME = "results.sqlite"
#: the layout of the tables (2: results in `result_codec`'s encoding)
LAYOUT = 2
#: the layout of sdceval before issue 27: results pickled
LEGACY_LAYOUT = 1

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

#: the tables of a store (a store lacking one is damaged)
_NAMES = ("meta", "runs", "jobs", "measurements")

#: the risk of the legacy option, said wherever it is offered or used
LEGACY_RISK = ("reading a pickle executes code from the store: use it only for stores "
               "you created")


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S%z")


def _version() -> str:
    return __version__


class ResultsStore:
    """The store of one output folder (module docstring).  ``create=False`` opens an
    existing store only, to read its measurements (`sdceval results`: a store of the
    legacy layout is read too, its pickled results never).  ``fresh`` and
    ``trust_legacy`` say what to do with a legacy store (`_upgrade`); ``say`` gets the
    messages a run shows (a result that does not read back, an upgrade)."""

    def __init__(self, folder, create: bool = True, *, fresh: bool = False,
                 trust_legacy: bool = False, say: Callable[[str], None] | None = None):
        folder = Path(folder)
        self.path = folder / STORE_NAME
        self.say = say or (lambda m: None)
        #: job hash -> why its stored result was not reused (`done`)
        self.damaged: dict[str, str] = {}
        #: what `done` read: job hash -> result (until `load`), timings
        self._read: dict[str, Any] = {}
        self._timings: dict[str, dict] = {}
        if not create and not self.path.is_file():
            raise SdcevalError(f"no results store in {str(folder)!r} (no {STORE_NAME}); "
                               "give the output folder of an `sdceval run`")
        if create:
            try:
                folder.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                from sdceval.core.fileio import check_output
                check_output(folder, folder=True)  # names what is in the way, and the fix
                raise SdcevalError(f"cannot create the output folder {str(folder)!r}: "
                                   f"{exc.strerror or exc}") from None
        with self._sqlite():
            self.db = sqlite3.connect(self.path, timeout=60, isolation_level=None)
        try:
            with self._sqlite():
                self.db.execute("PRAGMA busy_timeout = 60000")
                every = {r[0] for r in self.db.execute(
                    "SELECT name FROM sqlite_master WHERE type = 'table'")}
                tables = every & set(_NAMES)
                if every and not tables:
                    raise SdcevalError(f"{str(self.path)!r} is an SQLite file of something "
                                       "else (none of a results store's tables); move it "
                                       "away, or use another --out")
                if create and not tables:  # a new store
                    self.db.execute("PRAGMA journal_mode = WAL")
                    self.db.executescript(_TABLES)
                    self.db.execute("INSERT OR IGNORE INTO meta VALUES ('layout', ?)",
                                    (str(LAYOUT),))
                elif len(tables) < len(_NAMES):
                    missing = ", ".join(t for t in _NAMES if t not in tables)
                    raise self._damaged(f"table(s) missing: {missing}")
                layout = self._layout()
            if layout == LEGACY_LAYOUT and create:
                self._upgrade(fresh, trust_legacy)
        except BaseException:
            self.db.close()
            raise

    # -- errors -----------------------------------------------------------------------
    def _damaged(self, what: str, rows: bool = False) -> SdcevalError:
        """The one-line error of a store that is damaged or was edited by hand; ``rows``:
        damage in a job's rows, which a run with --fresh writes anew."""
        return SdcevalError(
            f"{str(self.path)!r} is damaged or was edited by hand ({what}); "
            + ("run the experiment again with --fresh to recompute, or " if rows else "")
            + f"delete the folder {str(self.path.parent)!r} (or move {STORE_NAME} away) "
            "to start afresh")

    @contextmanager
    def _sqlite(self):
        """SQLite's errors as one line naming the store (a file that is not SQLite, a
        truncated one, a lock held too long, a folder that cannot be written)."""
        try:
            yield
        except sqlite3.DatabaseError as exc:
            text = str(exc)
            if "locked" in text or "busy" in text:
                raise SdcevalError(f"{str(self.path)!r} is locked: another process has "
                                   "been writing to it for over 60 s; wait for it or use "
                                   "another --out") from None
            if any(w in text for w in ("readonly", "unable to open", "disk I/O",
                                       "disk is full")):
                raise SdcevalError(f"cannot use the results store {str(self.path)!r} "
                                   f"({text}); check the folder can be written, or use "
                                   "another --out") from None
            raise SdcevalError(f"{str(self.path)!r} is not a results store sdceval can "
                               f"read ({text}); delete it (or move it away) to start "
                               "afresh") from None

    def _layout(self) -> int:
        """The store's layout, checked: this one or the legacy one (pickled results),
        else a one-line error."""
        row = self.db.execute("SELECT value FROM meta WHERE name = 'layout'").fetchone()
        text = None if row is None else str(row[0]).strip()
        if text is None or not re.fullmatch(r"[0-9]{1,6}", text):
            raise self._damaged("its layout is " + ("missing" if text is None else
                                                   f"{text[:40]!r}, not a number"))
        layout = int(text)
        if layout > LAYOUT:
            raise SdcevalError(f"{str(self.path)!r} was written by a newer sdceval (layout "
                               f"{layout}; this one reads layout {LAYOUT}): use that "
                               "version, or another --out")
        if layout not in (LAYOUT, LEGACY_LAYOUT):
            raise self._damaged(f"its layout is {layout}, which no sdceval wrote")
        return layout

    def _upgrade(self, fresh: bool, trust_legacy: bool) -> None:
        """A store of the legacy layout (results pickled) made of this layout: with
        ``trust_legacy`` each pickle is read once and stored in the safe encoding (one
        that does not read back is dropped: recomputed); with ``fresh`` the pickles are
        dropped unread; else a one-line error.  In one transaction, the layout checked
        again inside it (two runs upgrading at once)."""
        if not (fresh or trust_legacy):
            raise SdcevalError(
                f"{str(self.path)!r} was written by an earlier sdceval that kept job "
                "results as Python pickles, and reading a pickle executes code from the "
                "store: run with --fresh to recompute them (the pickles are never read), "
                "or, only for a store you created yourself, with --trust-legacy-store to "
                "read them (docs/store.md)")
        converted = dropped = 0
        with self._tx() as db:
            if self._layout() != LEGACY_LAYOUT:
                return
            rows = db.execute("SELECT hash, result FROM jobs WHERE result IS NOT NULL"
                              ).fetchall()
            for h, blob in rows:
                if trust_legacy and isinstance(blob, bytes) \
                        and blob.startswith(result_codec.MAGIC):
                    continue  # already in the safe encoding: never handed to pickle
                new = _legacy_result(blob) if trust_legacy else None
                converted += new is not None
                dropped += new is None
                db.execute("UPDATE jobs SET result = ? WHERE hash = ?", (new, h))
            db.execute("UPDATE meta SET value = ? WHERE name = 'layout'", (str(LAYOUT),))
        self.say(f"{self.path.name} was written by an earlier sdceval: "
                 + (f"read {converted} pickled result(s) (--trust-legacy-store: "
                    f"{LEGACY_RISK}), kept in the safe encoding" if trust_legacy else
                    "its pickled results are dropped unread (--fresh)")
                 + (f"; {dropped} to recompute" if dropped and trust_legacy else ""))

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
        with self._sqlite():
            rows = self.db.execute("SELECT id, started, finished, status, metadata FROM "
                                   "runs ORDER BY id").fetchall()
        return pd.DataFrame([{"run": r[0], "started": r[1], "finished": r[2],
                              "status": r[3], **self._json(r[4], f"run {r[0]}")}
                             for r in rows])

    def _json(self, text, where: str) -> dict:
        """A JSON object the store wrote (fields, metadata), or a one-line error."""
        try:
            value = json.loads(text)
        except (TypeError, ValueError, RecursionError) as exc:
            raise self._damaged(f"{where}: {type(exc).__name__}: {str(exc)[:80]}",
                                rows=True) from None
        if not isinstance(value, dict):
            raise self._damaged(f"{where}: not a JSON object", rows=True)
        return value

    # -- jobs -------------------------------------------------------------------------
    def done(self, job_hash: str) -> bool:
        """Whether a job with this key finished under this sdceval version and its
        result reads back (read here, kept for `load`); one that does not (damaged,
        edited) is said and recomputed, like a result of another version."""
        with self._sqlite():
            row = self.db.execute("SELECT version, result, timings, key FROM jobs "
                                  "WHERE hash = ?", (job_hash,)).fetchone()
        if row is None or row[0] != _version() or row[1] is None:
            return False
        try:
            result = result_codec.decode(row[1])
            timings = json.loads(row[2]) if row[2] else {}
            if not isinstance(timings, dict):
                raise ValueError("timings are not an object")
        except (result_codec.DamagedResult, ValueError, RecursionError) as exc:
            self.damaged[job_hash] = str(exc)
            self.say(f"[{row[3]}] its stored result does not read back ({exc}): "
                     f"recomputing it ({self.path.name} was damaged or edited)")
            return False
        self._read[job_hash], self._timings[job_hash] = result, timings
        return True

    def load(self, job_hash: str) -> Any:
        """The result object of a finished job (`save`; `done` read it)."""
        if job_hash not in self._read and not self.done(job_hash):
            raise KeyError(job_hash)
        return self._read.pop(job_hash)

    def timings(self, job_hash: str) -> dict:
        if job_hash in self._timings:
            return self._timings[job_hash]
        with self._sqlite():
            row = self.db.execute("SELECT timings FROM jobs WHERE hash = ?", (job_hash,)
                                  ).fetchone()
        return self._json(row[0], f"the timings of job {job_hash[:12]}") \
            if row and row[0] else {}

    def save(self, job_hash: str, *, kind: str, key: str, title: str, spec: dict,
             result: Any, rows: Iterable[dict], timings: dict, run_id: int | None) -> None:
        """The finished job and its measurements, in one transaction (module
        docstring); a job saved again (another run, --fresh) replaces its rows."""
        blob = _stored(result)
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

    @contextmanager
    def _tx(self):
        """A write transaction (BEGIN IMMEDIATE: the write lock first, so two writers
        wait for each other instead of failing half-way); SQLite's errors as one line."""
        with self._sqlite():
            self.db.execute("BEGIN IMMEDIATE")
            try:
                yield self.db
            except BaseException:
                self.db.execute("ROLLBACK")
                raise
            self.db.execute("COMMIT")

    # -- reading ----------------------------------------------------------------------
    def measurements(self, jobs: Iterable[str] | None = None) -> pd.DataFrame:
        """Every measurement (of ``jobs``, hashes, when given) as a tidy table: one row
        per measurement, the job's fields as columns (module docstring); the measure's
        label split into its name (``measure``) and parameters (``measure_params``,
        `split_label`)."""
        query = ("SELECT m.job, m.kind, m.fields, m.measure, m.value, m.job_hash "
                 "FROM measurements m JOIN jobs j ON j.hash = m.job_hash")
        with self._sqlite():
            rows = self.db.execute(query + " ORDER BY j.finished, m.job_hash, m.row"
                                   ).fetchall()
        wanted = set(jobs) if jobs is not None else None
        records = []
        for job, kind, fields, measure, value, h in rows:
            if wanted is not None and h not in wanted:
                continue
            if value is not None and not isinstance(value, (int, float)):
                raise self._damaged(f"a value of job {str(job)[:60]!r} is not a number",
                                    rows=True)
            name, params = split_label(str(measure))
            records.append({"job": job, "kind": kind,
                            **self._json(fields, f"the fields of job {str(job)[:60]!r}"),
                            "measure": name, "measure_params": params, "value": value,
                            "job_hash": h})
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


def _stored(result) -> bytes | None:
    """``result`` in the store's encoding, checked to read back as it was (encoded
    again to the same bytes); None for a result that does not (a type no codec
    handles, a class defined in a function): its measurements are kept, the job itself
    is recomputed on resume."""
    try:
        blob = result_codec.encode(result)
        if result_codec.encode(result_codec.decode(blob)) == blob:
            return blob
    except (result_codec.Unstorable, result_codec.DamagedResult):
        pass
    return None


def _legacy_result(blob) -> bytes | None:
    """A pickled result of a legacy store in the store's encoding (None: it does not
    unpickle or has no encoding).  The only unpickling in sdceval, reached only with
    ``--trust-legacy-store`` (`ResultsStore._upgrade`): it executes what the pickle
    says."""
    import pickle
    try:
        obj = pickle.loads(blob)  # the legacy option only (LEGACY_RISK)
    except Exception:  # noqa: BLE001 - a pickle may raise anything
        return None
    return _stored(obj)


_LABEL = re.compile(r"([^()]+)\((.*)\)", re.S)


def split_label(label: str) -> tuple[str, str | None]:
    """A measure's label (`sdceval.compare.ranking.measure_label`) as its name and its
    parameters' text: ``"u_loss(min_support=0.05)"`` -> ``("u_loss",
    "min_support=0.05")``, ``"emd"`` -> ``("emd", None)``."""
    m = _LABEL.fullmatch(label)
    return (m.group(1), m.group(2)) if m else (label, None)


def join_label(name, params) -> str:
    """`split_label`'s inverse."""
    return str(name) if params is None or params == "" else f"{name}({params})"


#: the columns every tidy table has, first and last (`tidy`)
FIRST = ("job", "kind", "data")
LAST = ("measure", "measure_params", "value", "job_hash")


def tidy(df: pd.DataFrame) -> pd.DataFrame:
    """Columns in reading order: job, kind, data, the job's fields, measure,
    measure_params, value, job_hash last; parameter columns keep each value's own type
    (object)."""
    if df.empty:
        return pd.DataFrame(columns=[*FIRST, *LAST])
    first = [c for c in FIRST if c in df]
    middle = [c for c in df.columns if c not in first and c not in LAST]
    return df[first + middle + list(LAST)].reset_index(drop=True)


def _matches(df: pd.DataFrame, col: str, value: str) -> pd.Series:
    """The rows whose ``col`` reads ``value`` as text; ``measure`` matches the measure's
    name (``u_loss``) or, given with its parameters, its whole label
    (``u_loss(min_support=0.05)``)."""
    if col == "measure" and "(" in value:
        labels = [join_label(n, p) for n, p in zip(df["measure"], df["measure_params"])]
        return pd.Series(labels, index=df.index) == value
    return df[col].astype(str) == value


def read_measurements(out, where: dict[str, str] | None = None) -> pd.DataFrame:
    """Every measurement stored in the output folder ``out`` (`sdceval results`,
    `sdceval.results`), keeping the rows whose columns equal ``where``'s values (as
    text; `_matches`).  A column no measurement has, or a value no kept row has, is a
    one-line error naming what there is; columns empty in every kept row are left
    out."""
    with closing(ResultsStore(out, create=False)) as store:
        df = store.measurements()
    for col, value in (where or {}).items():
        if col not in df.columns:
            raise SdcevalError(f"--where {col}=...: no column {col!r}; columns: "
                               f"{', '.join(map(str, df.columns))}")
        keep = _matches(df, col, str(value))
        if not keep.any():
            seen = list(dict.fromkeys(df[col].dropna().astype(str)))
            raise SdcevalError(
                f"--where {col}={value}: no measurement has {col} = {str(value)!r}"
                + (f"; its values: {', '.join(seen[:12])}{', ...' if len(seen) > 12 else ''}"
                   if seen else f"; no measurement{' left' if len(df) else ''} has a {col}"))
        df = df[keep]
    if where:
        df = df[[c for c in df.columns if c in FIRST or c in LAST or df[c].notna().any()]]
    return df.reset_index(drop=True)


__all__ = ["LAYOUT", "LEGACY_LAYOUT", "STORE_NAME", "ResultsStore", "read_measurements",
           "split_label", "tidy"]
