"""The published row order and its private key (issue 19 item 6).

A release file in record order (row ``i`` protects record ``i``) links every released
row to its record by position alone: an intruder holding the original in its order, or
any source sorted the same way, re-identifies everyone.  So `write_release` (``sdceval
anonymize``) publishes the rows in a random order, and writes beside the release a
*key file* that only the data holder keeps: for each published row, the position of the
record it protects.  `sdceval.core.release_io.read_release` (``sdceval evaluate``,
``sdceval vectors``) finds the key, checks that it belongs to this release file and this
data set, and puts the rows back in record order; a `Release` in memory is always in
record order (the measures rely on it).  Only the file is shuffled; its content (the
rows, the columns, the values) is the release's.

The key file (`key_path_for`: ``masked.csv`` -> ``masked.private-key.csv``, created
readable by its owner only) is a CSV with a header of ``#`` lines::

    # PRIVATE: do not publish. sdceval release key: links the rows of 'masked.csv' to ...
    # format: sdceval-release-key 1
    # release: masked.csv
    # release_sha256: <sha256 of the release file's bytes>
    # data: census
    # data_sha256: <sha256 of the data set as sdceval reads it (`data_fingerprint`)>
    # records: 1080
    # shuffle_seed: <the seed of the permutation>
    # key_sha256: <sha256 of the lines below, to detect an edited key>
    row,record
    0,517
    1,3
    ...

``row`` is the published row (0-based, after the header), ``record`` the 0-based
position of the record it protects in the data set as sdceval reads it; ``record`` is a
permutation of ``0..n-1``.  The key is never a column of the release.

The permutation's seed: ``seed=None`` (the default, and ``anonymize`` without
``--shuffle-seed``) draws a fresh one from the operating system, recorded in the key
only.  The method's ``--seed`` is not used: it is often published with the method's
parameters (and is 0 by default), and anyone who knows the seed of the shuffle and the
number of records can undo it.  A fixed ``seed`` (``--shuffle-seed N``) makes the file
reproducible; keep that number as private as the key.

``keep_order=True`` (``--keep-order``) writes record order and no key: such a file is
for analysis only, never to publish.  A release read without a key must be in record
order: `check_record_order` compares each released row with its record (generalized
cells contain the record's value, exact and passed-through values equal it, masked
numbers lie closer to it than to records drawn at random) and refuses a shuffled file,
naming the key file it expected.
"""
from __future__ import annotations

import hashlib
import os
import secrets
from pathlib import Path
from typing import Iterable

import numpy as np
import pandas as pd

from sdceval.core.errors import SdcevalError
from sdceval.core.fileio import _check, atomic_write

#: the key file's first line (the start of it is what marks a file as a key)
PRIVATE = "# PRIVATE: do not publish."
KEY_SUFFIX = ".private-key.csv"
FORMAT = "sdceval-release-key 1"
_FIELDS = ("format", "release", "release_sha256", "data", "data_sha256", "records",
           "shuffle_seed", "key_sha256")
#: random permutations of the null distribution, and how many of their standard
#: deviations the release in file order must beat them by to count as record order
_NULL_DRAWS, _Z = 40, 6.0
#: above -3 standard deviations the error says "no better than at random"
_Z_SHUFFLED = 3.0


def key_path_for(path) -> Path:
    """The key file written beside a release: ``masked.csv`` ->
    ``masked.private-key.csv`` (``masked`` -> ``masked.private-key.csv``)."""
    path = Path(path)
    stem = path.name[: -len(path.suffix)] if path.suffix else path.name
    return path.with_name(stem + KEY_SUFFIX)


def data_fingerprint(dataset) -> str:
    """sha256 of the data set as sdceval reads it: its row count, column names and
    values (`pandas.util.hash_pandas_object`, column by column)."""
    frame = dataset.frame
    h = hashlib.sha256(f"{len(frame)} rows\n".encode())
    for c in frame.columns:
        h.update(f"{str(c)!r}\n".encode())
        h.update(pd.util.hash_pandas_object(frame[c], index=False).to_numpy().tobytes())
    return h.hexdigest()


def file_sha256(path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _body_sha256(body: str) -> str:
    return hashlib.sha256(body.encode("utf-8")).hexdigest()


# -- writing -----------------------------------------------------------------------------
def write_release(release, path, *, dataset, seed: int | None = None,
                  keep_order: bool = False, protected: Iterable = ()
                  ) -> tuple[Path, Path | None]:
    """Write ``release`` (row-aligned with ``dataset``) to ``path``: Parquet for a name
    ending ``.parquet`` / ``.pq`` (pyarrow, the ``[parquet]`` extra; refused without it,
    before anything is written), CSV otherwise.

    Rows in a random order (``seed``: an int for a reproducible order, ``None`` for a
    fresh one from the operating system) and the private key beside it
    (`key_path_for`), or, with ``keep_order``, in record order and no key (a stale key
    of an earlier release at that name is removed).  Both files are written atomically
    (the key first, renamed just before the release; neither is left half-written or
    alone by an interrupt) and never over an input file.  Returns ``(path, key_path)``,
    ``key_path`` None with ``keep_order``.
    """
    path = Path(path)
    key_path = key_path_for(path)
    protected = [p for p in protected if p is not None]
    frame = release.data
    n = len(frame)
    if n != dataset.n:
        raise SdcevalError(f"release has {n} records but data set {dataset.name!r} has "
                           f"{dataset.n}: write the release with the data set it protects")
    to_bytes = _format_of(path)  # before anything is written: refused with no file
    if keep_order:
        data = to_bytes(frame)
        out = atomic_write(path, lambda p: p.write_bytes(data),
                           protected=[key_path, *protected])
        if key_path.exists() and _is_key(key_path):  # a key of an older shuffled release
            try:
                _check(key_path, protected)
            except SdcevalError:
                pass  # an input file that happens to look like a key: left alone
            else:
                key_path.unlink(missing_ok=True)
        return out, None
    if seed is None:
        seed = secrets.randbits(64)
    perm = np.random.default_rng(seed).permutation(n)
    data = to_bytes(frame.iloc[perm])
    body = "row,record\n" + "".join(f"{r},{int(v)}\n" for r, v in enumerate(perm))
    fields = {"format": FORMAT, "release": path.name,
              "release_sha256": hashlib.sha256(data).hexdigest(), "data": dataset.name,
              "data_sha256": data_fingerprint(dataset), "records": n,
              "shuffle_seed": seed, "key_sha256": _body_sha256(body)}
    text = (f"{PRIVATE} sdceval release key: links the rows of {path.name!r} to the "
            "original records; keep it with the original data.\n"
            + "".join(f"# {k}: {fields[k]}\n" for k in _FIELDS) + body)
    wrote_key = []

    def write_both(tmp: Path) -> None:
        tmp.write_bytes(data)
        atomic_write(key_path, lambda k: _write_private(k, text),
                     protected=[path, *protected])
        wrote_key.append(True)

    try:
        atomic_write(path, write_both, protected=[key_path, *protected])
    except BaseException:
        if wrote_key:  # the key is in place but its release is not: no key alone
            key_path.unlink(missing_ok=True)
        raise
    return path, key_path


def _csv_bytes(frame: pd.DataFrame) -> bytes:
    return frame.to_csv(index=False, lineterminator="\n").encode("utf-8")


#: the file names written as Parquet (as `sdceval.core.loaders.load_table` reads them)
PARQUET_SUFFIXES = (".parquet", ".pq")


def _import_pyarrow():
    import pyarrow  # noqa: F401 - the optional extra
    import pyarrow.parquet  # noqa: F401


def _format_of(path: Path):
    """The writer of a release file named ``path``: Parquet for ``.parquet`` / ``.pq``
    (needs pyarrow, the ``[parquet]`` extra: refused without it), CSV otherwise."""
    if not "".join(path.suffixes).lower().endswith(PARQUET_SUFFIXES):
        return _csv_bytes
    from sdceval.core.loaders import PARQUET_EXTRA
    try:
        _import_pyarrow()
    except ImportError:
        raise SdcevalError(
            f"writing the Parquet file {str(path)!r} needs pyarrow, an optional extra: "
            f"{PARQUET_EXTRA} (or pip install pyarrow), or write a CSV file "
            "(--out NAME.csv)") from None
    return _parquet_bytes


def _parquet_bytes(frame: pd.DataFrame) -> bytes:
    """The release as Parquet bytes (the key's release_sha256 is of these bytes).  A
    column of mixed Python values (generalized labels beside values: ``40`` and
    ``[40-49]``) is written as text, as a CSV would hold it."""
    import io
    out = frame.reset_index(drop=True).copy()
    out.columns = [str(c) for c in out.columns]
    for c in out.columns:
        col = out[c]
        if col.dtype == object and not col.map(lambda v: isinstance(v, str) or v is None
                                               or v is pd.NA
                                               or (isinstance(v, float) and v != v)).all():
            out[c] = col.map(lambda v: v if isinstance(v, str) else str(v)).where(col.notna())
    buf = io.BytesIO()
    try:
        out.to_parquet(buf, index=False, engine="pyarrow")
    except (ValueError, TypeError, ImportError) as exc:
        raise SdcevalError(f"cannot write the release as Parquet: {exc}") from None
    return buf.getvalue()


def _write_private(path: Path, text: str) -> None:
    path.write_text(text, encoding="utf-8")
    os.chmod(path, path.stat().st_mode & 0o700)  # the umask's mode, owner only


def _is_key(path: Path) -> bool:
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.readline().startswith(PRIVATE)
    except OSError:
        return False


# -- reading -------------------------------------------------------------------------------
def read_key(key, release_path, dataset) -> np.ndarray:
    """The verified permutation of a key file: ``record[r]`` is the record that
    published row ``r`` of ``release_path`` protects.  Errors name what does not match:
    not a key, an edited key, another release file, another data set, another size."""
    key, release_path = Path(key), Path(release_path)
    shown = str(key)
    if not key.exists():
        raise SdcevalError(f"key file {shown!r} does not exist")
    try:
        lines = key.read_text(encoding="utf-8").splitlines(keepends=True)
    except (OSError, UnicodeDecodeError) as exc:
        raise SdcevalError(f"cannot read the key file {shown!r}: {exc}") from None
    if not lines or not lines[0].startswith(PRIVATE):
        raise SdcevalError(f"{shown!r} is not an sdceval release key (its first line "
                           f"should start with {PRIVATE!r}); give the key file that "
                           "'sdceval anonymize' wrote beside the release (--key FILE)")
    fields, start = {}, 1
    while start < len(lines) and lines[start].startswith("#"):
        name, _, value = lines[start][1:].partition(":")
        fields[name.strip()] = value.strip()
        start += 1
    missing = [f for f in _FIELDS if f not in fields]
    if missing or fields["format"] != FORMAT:
        raise SdcevalError(f"key file {shown!r} is damaged or of another format: "
                           + (f"it lacks {', '.join(missing)}" if missing else
                              f"format {fields['format']!r}, expected {FORMAT!r}"))
    body = "".join(lines[start:])
    if _body_sha256(body) != fields["key_sha256"]:
        raise SdcevalError(f"key file {shown!r} was edited: its rows do not match its "
                           "key_sha256; use the key exactly as 'sdceval anonymize' wrote it")
    got = file_sha256(release_path)
    if got != fields["release_sha256"]:
        raise SdcevalError(
            f"key file {shown!r} belongs to another release: it was written for a file "
            f"{fields['release']!r} with sha256 {fields['release_sha256'][:16]}..., but "
            f"{str(release_path)!r} has sha256 {got[:16]}... (another release, or this one "
            "edited or saved again); give the key written with this release (--key FILE)")
    fp = data_fingerprint(dataset)
    if fp != fields["data_sha256"]:
        raise SdcevalError(
            f"key file {shown!r} was written for another data set: {fields['data']!r} "
            f"with data sha256 {fields['data_sha256'][:16]}..., not data set "
            f"{dataset.name!r} as read now ({fp[:16]}...); evaluate with the --data and "
            "--schema the release was made with")
    try:
        records = int(fields["records"])
        table = np.array([[int(v) for v in line.split(",")]
                          for line in lines[start + 1:] if line.strip()], dtype=np.int64)
    except ValueError:
        raise SdcevalError(f"key file {shown!r} is damaged: its rows are not "
                           "'row,record' integers") from None
    n = dataset.n
    if records != n or table.shape != (n, 2) or lines[start].strip() != "row,record":
        raise SdcevalError(f"key file {shown!r} holds {len(table)} rows for "
                           f"{records} records but data set {dataset.name!r} has {n}")
    rows, perm = table[:, 0], table[:, 1]
    if (not np.array_equal(rows, np.arange(n))
            or not np.array_equal(np.sort(perm), np.arange(n))):
        raise SdcevalError(f"key file {shown!r} is damaged: its 'record' column is not a "
                           f"permutation of 0..{n - 1}")
    return perm


def to_record_order(frame: pd.DataFrame, perm: np.ndarray) -> pd.DataFrame:
    """The published rows put back in record order: row ``perm[r]`` of the result is
    published row ``r``."""
    return frame.iloc[np.argsort(perm, kind="stable")].reset_index(drop=True)


def check_record_order(dataset, frame: pd.DataFrame, cells: dict, *, release_path,
                       key_path) -> None:
    """Refuse a release read without a key unless it is in record order.

    Each published row ``i`` is scored against record ``i``: one per generalized QI cell
    (``cells``: ``{qi: (lo, hi, ...)}`` of the published labels) not containing the
    record's value, one per exact column (the sensitive value of a release that does
    not permute it, a passed-through text column) that differs, plus the distance of
    the masked / passed-through numbers (standardized by the original's deviation).  In
    record order, a truthful release (generalized, bucketized, QIs passed through) has
    no mismatch; otherwise the mean score must lie at least 6 standard deviations below
    that of the rows matched to records at random (40 draws).  A shuffled file (z about
    0) fails, naming the key file and ``--no-key``: a release in record order whose
    rows match their records too weakly to tell (a few records, or much noise) fails
    too, and is read with ``key=False``; a file whose rows cannot be told apart at all
    passes.
    """
    n = len(frame)
    exact, numeric = _evidence(dataset, frame, cells)
    if not exact and numeric is None:
        return  # nothing published that can be compared with the records

    def score(order) -> tuple[float, float]:
        """(exact mismatches, numeric distance), means over the rows."""
        s = np.zeros(n)
        for kind, a, b, c in exact:
            if kind == "cell":  # a = lo, b = hi, c = record codes
                s += ~((a <= c[order]) & (c[order] <= b))
            else:  # a = published codes, c = record codes
                s += a != c[order]
        d = 0.0
        if numeric is not None:
            rel, orig = numeric
            d = float(np.sqrt(((rel - orig[order]) ** 2).mean(axis=1)).mean())
        return float(s.mean()), d

    rng = np.random.default_rng(0)
    aligned = score(np.arange(n))
    null = np.array([score(rng.permutation(n)) for _ in range(_NULL_DRAWS)])
    if exact and aligned[0] == 0 and null[:, 0].max() > 0:
        return  # every published value agrees with its record; at random they do not
    total = null.sum(axis=1)
    mu, tau = total.mean(), total.std(ddof=1)
    z = (sum(aligned) - mu) / tau if tau > 0 else 0.0
    if tau == 0 or z <= -_Z:
        return
    how = ("no better than rows matched at random" if z > -_Z_SHUFFLED else
           f"only a little better than rows matched at random (z = {z:.1f}: few records, "
           "or much noise)")
    raise SdcevalError(
        f"release {str(release_path)!r} is not in record order as far as sdceval can tell "
        f"(its rows match their records {how}) and its key file {str(key_path)!r} is "
        "missing: 'sdceval anonymize' writes the rows shuffled, with that key beside them; "
        "put the key file there or give it with --key FILE (key=FILE in Python).  A "
        "release known to be in record order (written with --keep-order) is read with "
        "--no-key (key=False)")


def check_cells(dataset, frame: pd.DataFrame, cells: dict, *, release_path,
                file_row: np.ndarray | None = None) -> None:
    """Refuse a release (in record order) with a published cell its record does not fit
    (issue 22 item 2): every generalized QI cell must contain the record's value, the
    sensitive value of a release that does not permute it and every passed-through
    column must equal the record's, and a bucketized release's sensitive values must be
    those of its bucket's records (permuted within the bucket).  A shuffled file, an
    edited label or another data set's file of the same shape is therefore refused,
    naming the first bad row (``file_row``: the file's row of each record) and column.
    Masked numbers (a perturbative release) are not cells to check."""
    schema = dataset.schema
    where = (lambda i: int(file_row[i]) if file_row is not None else int(i))
    bad_cells = []  # (record, column, what)
    for q, (lo, hi, *_) in cells.items():
        codes = dataset.codes(q)
        bad = np.flatnonzero(~((lo <= codes) & (codes <= hi)))
        if len(bad):
            i = bad[0]
            bad_cells.append((i, q, f"the published {frame[q].iloc[i]!r} does not contain "
                                    f"the record's value {dataset.frame[q].iloc[i]!r}"))
    sens = schema.sensitive
    if sens is not None and sens in frame.columns:
        pub = dataset.hierarchy(sens).encode(frame[sens], column=sens)
        orig = dataset.codes(sens)
        if is_bucketized(dataset, frame):
            bucket = pd.factorize(frame[BUCKET_COLUMN])[0]
            a = np.lexsort((pub, bucket))
            b = np.lexsort((orig, bucket))
            diff = np.flatnonzero(pub[a] != orig[b])
            if len(diff):
                i = int(a[diff[0]])
                bad_cells.append((i, sens, f"bucket {frame[BUCKET_COLUMN].iloc[i]!r} publishes "
                                           "sensitive values that are not those of its "
                                           "records"))
        else:
            bad = np.flatnonzero(pub != orig)
            if len(bad):
                i = bad[0]
                bad_cells.append((i, sens, f"the published {frame[sens].iloc[i]!r} is not the "
                                           f"record's value {dataset.frame[sens].iloc[i]!r}"))
    for c in schema.passthrough:
        if c not in frame.columns or c not in dataset.frame.columns:
            continue
        orig = dataset.frame[c]
        if pd.api.types.is_numeric_dtype(orig) and not pd.api.types.is_bool_dtype(orig):
            p = pd.to_numeric(frame[c], errors="coerce").to_numpy(float)
            o = orig.to_numpy(float)
            same = np.isclose(p, o, rtol=1e-12, atol=0) | (np.isnan(p) & np.isnan(o))
        else:
            same = frame[c].astype(str).to_numpy() == orig.astype(str).to_numpy()
        bad = np.flatnonzero(~same)
        if len(bad):
            i = bad[0]
            bad_cells.append((i, c, f"the published {frame[c].iloc[i]!r} is not the "
                                    f"record's value {orig.iloc[i]!r} (a passed-through "
                                    "column is published unchanged)"))
    if not bad_cells:
        return
    i, column, what = min(bad_cells, key=lambda t: (where(t[0]), t[1]))
    row = where(i)
    raise SdcevalError(
        f"release {str(release_path)!r} does not fit data set {dataset.name!r}: row "
        f"{row + 1} of the file (line {row + 2}), column {column!r}: {what}.  Every "
        "published cell must fit its record: this file was edited, belongs to another "
        "data set, or its rows are not in the order of its key")


#: the structural column of a bucketized release (`sdceval.methods.bucketization`)
BUCKET_COLUMN = "bucket"


def is_bucketized(dataset, frame: pd.DataFrame) -> bool:
    """Whether a published table is a bucketized release: it has a ``bucket`` column
    that is not a column of the data set.  A data-set column of that name (kept with
    ``--keep bucket``, role passthrough) is the user's data, never structure: a
    user-controlled column name must not decide how a release is measured."""
    return BUCKET_COLUMN in frame.columns and BUCKET_COLUMN not in dataset.frame.columns


def _evidence(dataset, frame: pd.DataFrame, cells: dict):
    """What a published row can be compared with its record by: exact items
    ``("cell", lo, hi, record codes)`` / ``("equal", published codes, None, record
    codes)``, and the numbers ``(published, original)`` standardized, or None."""
    schema = dataset.schema
    exact = [("cell", lo, hi, dataset.codes(q)) for q, (lo, hi, *_) in cells.items()]
    sens = schema.sensitive
    if sens is not None and sens in frame.columns and not is_bucketized(dataset, frame):
        try:  # a generalized release publishes it unchanged; bucketization permutes it
            code = dataset.hierarchy(sens).encode(frame[sens], column=sens)
            exact.append(("equal", code, None, dataset.codes(sens)))
        except SdcevalError:
            pass
    cols = []
    for c in schema.numeric + schema.passthrough:
        if c not in frame.columns or c not in dataset.frame.columns:
            continue
        orig = dataset.frame[c]
        if pd.api.types.is_numeric_dtype(orig) and not pd.api.types.is_bool_dtype(orig):
            pub = pd.to_numeric(frame[c], errors="coerce").to_numpy(float)
            o = orig.to_numpy(float)
            sd = np.nanstd(o)
            if np.isfinite(pub).all() and np.isfinite(o).all() and sd > 0:
                cols.append(((pub - o.mean()) / sd, (o - o.mean()) / sd))
        elif c in schema.passthrough:
            both = pd.concat([frame[c].astype(str), orig.astype(str)], ignore_index=True)
            codes = pd.factorize(both)[0]
            exact.append(("equal", codes[:len(frame)], None, codes[len(frame):]))
    numeric = None
    if cols:
        numeric = (np.column_stack([p for p, _ in cols]), np.column_stack([o for _, o in cols]))
    return exact, numeric


__all__ = ["BUCKET_COLUMN", "KEY_SUFFIX", "PRIVATE", "check_cells", "check_record_order",
           "data_fingerprint",
           "is_bucketized", "key_path_for", "read_key", "to_record_order", "write_release"]
