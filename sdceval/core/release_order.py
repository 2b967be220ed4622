"""The published row order and its private key (issue 19 item 6).

Long because both sides of the key file live here (its format; writing it atomically
with the release and the release's public file; reading and checking it), so that the
writer and the reader cannot drift apart.

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

The key file (`key_path_for`: ``masked.csv`` -> ``masked.csv.private-key.csv``, created
readable by its owner only; the release's whole file name, so ``masked.csv`` and
``masked.parquet`` in one folder have a key each; a key of the older naming,
``masked.private-key.csv``, is still found when its header names the release,
`key_beside`) is a CSV with a header of ``#`` lines::

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

A method with public parameters gets a third file beside the release, PUBLIC unlike the
key: ``masked.csv`` -> ``masked.csv.method.json`` (`public_path_for`, the release's
whole file name as for the key; `sdceval.core.release_public` has its format).  For now
it is PRAM's: the keys it redrew and their transition matrices per stratum, with the
categories as labels, and nothing about any record (PRAM's parameters are public by
design; which records changed is known only through the key and the original).  It is
written with the release and the key, by the same rules (atomically, the release renamed
last, never over an input file nor over a file that is not the public file of a
release of this name; an earlier release's is removed when the new one has none), and
`sdceval.core.release_io.read_release` reads it: a key it lists must publish categories
of its domain instead of cells containing the record's value, and never proves record
order.  Without it a PRAM-ed file is refused, naming it.

The permutation's seed: ``seed=None`` (the default, and ``anonymize`` without
``--shuffle-seed``) draws a fresh one from the operating system, recorded in the key
only.  The method's ``--seed`` is not used: it is often published with the method's
parameters (and is 0 by default), and anyone who knows the seed of the shuffle and the
number of records can undo it.  A fixed ``seed`` (``--shuffle-seed N``) makes the file
reproducible; keep that number as private as the key.

A synthetic release (`sdceval.core.release.Release.synthetic`: new records, no record
correspondence, issue 32) has no record to link: `write_release` writes it with no key
and in the order the method drew its rows (a row's position says nothing about any
record, so there is nothing to shuffle), and always with its public file, which records
``"kind": "synthetic"``, the method's public parameters and, for a DP method, its budget
(`sdceval.core.release_public.synthetic_parameters`); a key of an earlier release of
this file name is removed (its rows are gone).

``keep_order=True`` (``--keep-order``) writes record order and no key: such a file is
for analysis only, never to publish.  A release read without a key must be in record
order: `check_record_order` compares each released row with its record (generalized
cells contain the record's value, exact and passed-through values equal it, masked
numbers lie closer to it than to records drawn at random) and refuses a shuffled file,
naming the key file it expected.  ``--no-key`` (``key=False``) is refused when a key
lies beside the release.  A release given to `sdceval.evaluate` as a DataFrame (a file
read with pandas) gets the same checks (`sdceval.core.release_io.release_of`): its key
given as ``key=`` (`key_permutation`), or its rows checked to be in record order.
"""
from __future__ import annotations

import hashlib
import io
import os
import secrets
from pathlib import Path
from typing import Iterable

import numpy as np
import pandas as pd

from sdceval.core.errors import SdcevalError
from sdceval.core.fileio import _check, atomic_write
from sdceval.core.release_public import (public_parameters, public_path_for,
                                         public_release, public_text)

#: the key file's first line (the start of it is what marks a file as a key)
PRIVATE = "# PRIVATE: do not publish."
KEY_SUFFIX = ".private-key.csv"
FORMAT = "sdceval-release-key 1"
_FIELDS = ("format", "release", "release_sha256", "data", "data_sha256", "records",
           "shuffle_seed", "key_sha256")


def key_path_for(path) -> Path:
    """The key file written beside a release: its whole file name and
    ``.private-key.csv`` (``masked.csv`` -> ``masked.csv.private-key.csv``,
    ``masked.parquet`` -> ``masked.parquet.private-key.csv``), so releases of one name
    in two formats never share a key (issue 27 item 3)."""
    path = Path(path)
    return path.with_name(path.name + KEY_SUFFIX)


def legacy_key_path_for(path) -> Path:
    """The key name written before issue 27 (``masked.csv`` -> ``masked.private-key.csv``,
    the extension dropped, so ``masked.parquet`` had the same key name): still read
    (`key_beside`), never written."""
    path = Path(path)
    stem = path.name[: -len(path.suffix)] if path.suffix else path.name
    return path.with_name(stem + KEY_SUFFIX)


def key_beside(path) -> Path | None:
    """The key of the release file ``path`` lying beside it, or None: the key of this
    name (`key_path_for`) if it exists, else a key of the older naming
    (`legacy_key_path_for`) whose header names this release file (one that names another
    file, ``masked.parquet`` for ``masked.csv``, is that file's key, not this one's)."""
    path = Path(path)
    current = key_path_for(path)
    if current.exists():
        return current
    old = legacy_key_path_for(path)
    if old != current and old.is_file() and _key_release(old) == path.name:
        return old
    return None


def _key_release(path: Path) -> str | None:
    """The release file name a key file's header names (``# release: NAME``), or None
    for a file that is not a key or is unreadable."""
    return (_key_header(path) or {}).get("release")


def _key_header(path: Path) -> dict | None:
    """The ``# name: value`` fields of a key file's header, or None for a file that is
    not a key or is unreadable (nothing checked: `key_file` checks)."""
    fields = {}
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            if not f.readline().startswith(PRIVATE):
                return None
            for line in f:
                if not line.startswith("#"):
                    break
                name, _, value = line[1:].partition(":")
                fields[name.strip()] = value.strip()
    except OSError:
        return None
    return fields


def public_beside_key(key) -> tuple[Path, str | None]:
    """Where the public file of the release a key file belongs to lies (beside the
    key, named from the release file its header names; `public_path_for`), and that
    release's sha256 (None when the key names none): for a release given as a DataFrame
    with its key file (`sdceval.core.release_io.release_of`)."""
    key = Path(key)
    fields = _key_header(key) or {}
    release = fields.get("release", "")
    if release in ("", ".", "..") or Path(release).name != release:  # not a file name
        release = key.name.removesuffix(KEY_SUFFIX)
    return public_path_for(key.with_name(release)), fields.get("release_sha256")


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
    (`key_path_for`), or, with ``keep_order``, in record order and no key.  A release
    with public method parameters (`public_parameters`: PRAM's keys and matrices) gets
    its public file beside it too (`public_path_for`, in either order).  A key of an
    earlier release of this file name (either naming) is replaced or, with
    ``keep_order``, removed, and so is a public file of an earlier release of this name
    when this one has none; any other file at the name of the key or public file to
    write (a key of another release, a file that is not one) is refused before anything
    is written, naming it: nothing is overwritten silently.  All files are written
    atomically (the key and the public file first, the release renamed last; none is
    left half-written or without the others by an interrupt) and never over an input
    file.  Returns ``(path, key_path)``, ``key_path`` None with ``keep_order``.

    A synthetic release (not ``release.aligned``: new records, any row count) is
    written in its own row order with no key (``seed`` and ``keep_order`` do not
    apply) and with its public file (module docstring); returns ``(path, None)``.
    """
    path = Path(path)
    key_path = key_path_for(path)
    public_path = public_path_for(path)
    protected = [p for p in protected if p is not None]
    frame = release.data
    n = len(frame)
    if not release.aligned:
        return _write_synthetic(release, path, protected)
    if n != dataset.n:
        raise SdcevalError(f"release has {n} records but data set {dataset.name!r} has "
                           f"{dataset.n}: write the release with the data set it protects")
    to_bytes = _format_of(path)  # before anything is written: refused with no file
    public = public_parameters(release)
    if public is not None:
        _check(public_path, protected)  # an input file at its name: refused first
        _check_public_slot(path, public_path)
    if keep_order:
        data = to_bytes(frame)
        companions = []
    else:
        _check(key_path, protected)  # an input file at the key's name: that error first
        _check_key_slot(path, key_path)
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
        companions = [(key_path, lambda k: _write_private(k, text))]
    if public is not None:
        shown = public_text(public, path.name, hashlib.sha256(data).hexdigest())
        companions.append((public_path,
                           lambda p: p.write_text(shown, encoding="utf-8")))
    _write_together(path, data, companions, protected)
    _remove_stale_keys(path, protected, with_current=keep_order)
    if public is None:
        _remove_stale_public(path, protected)
    return path, None if keep_order else key_path


def _write_synthetic(release, path: Path, protected: list) -> tuple[Path, None]:
    """`write_release` of a synthetic release: its rows as the method drew them, its
    public file beside it (the kind, the parameters, a DP budget), no key; an earlier
    release's key of this file name is removed."""
    to_bytes = _format_of(path)  # before anything is written: refused with no file
    public_path = public_path_for(path)
    _check(public_path, protected)
    _check_public_slot(path, public_path)
    data = to_bytes(release.data)
    shown = public_text(public_parameters(release), path.name,
                        hashlib.sha256(data).hexdigest())
    _write_together(path, data, [(public_path,
                                  lambda p: p.write_text(shown, encoding="utf-8"))],
                    protected)
    _remove_stale_keys(path, protected, with_current=True)
    return path, None


def _write_together(path: Path, data: bytes, companions: list, protected: list) -> None:
    """Write the release bytes ``data`` to ``path`` and each ``(companion, writer)``
    beside it, every file atomically: the companions are put in place while the
    release is still a temporary file, the release renamed last, and on any failure
    (an interrupt included) the companions already in place are removed: no companion
    is left without its release."""
    names = [c for c, _ in companions]
    placed = []

    def write_all(tmp: Path) -> None:
        tmp.write_bytes(data)
        for companion, writer in companions:
            atomic_write(companion, writer,
                         protected=[path, *[c for c in names if c != companion],
                                    *protected])
            placed.append(companion)

    try:
        atomic_write(path, write_all, protected=[*names, *protected])
    except BaseException:
        for companion in placed:  # in place but their release is not
            companion.unlink(missing_ok=True)
        raise


def _check_public_slot(path: Path, public_path: Path) -> None:
    """Refuse to write the release ``path`` when its public file's name is taken by
    anything but the public file of a release of this file name."""
    if not public_path.exists() and not public_path.is_symlink():
        return
    owner = public_release(public_path) if public_path.is_file() else None
    if owner == path.name:
        return  # the public file of the release being replaced
    what = (f"the public file of another release, {owner!r}" if owner is not None else
            "not an sdceval public file of method parameters")
    raise SdcevalError(
        f"refusing to write {str(path)!r}: its public file {str(public_path)!r} already "
        f"exists and is {what}; move that file away or choose another --out")


def _remove_stale_public(path: Path, protected) -> None:
    """Remove the public file of an earlier release of this file name (the release
    just written has none: it would describe keys this one did not redraw); a file
    naming another release and input files are left alone."""
    old = public_path_for(path)
    if old.is_file() and public_release(old) == path.name:
        try:
            _check(old, protected)
        except SdcevalError:
            return
        old.unlink(missing_ok=True)


def _check_key_slot(path: Path, key_path: Path) -> None:
    """Refuse to write the release ``path`` when its key's name is taken by anything but
    a key of a release of this file name: a key is never overwritten silently."""
    if not key_path.exists() and not key_path.is_symlink():
        return
    owner = _key_release(key_path) if key_path.is_file() else None
    if owner == path.name:
        return  # the key of the release being replaced
    what = (f"the private key of another release, {owner!r}" if owner is not None else
            "not an sdceval release key")
    raise SdcevalError(
        f"refusing to write {str(path)!r}: its key file {str(key_path)!r} already exists "
        f"and is {what}; move that file away (keep a key with its release) or choose "
        "another --out")


def _remove_stale_keys(path: Path, protected, *, with_current: bool) -> None:
    """Remove the keys of an earlier release of this file name: one of the legacy
    naming and, for a ``keep_order`` release (``with_current``), one of the current
    naming; their rows are of a file that no longer exists.  Keys naming another release
    and input files are left alone."""
    current = key_path_for(path)
    for old in (legacy_key_path_for(path), *([current] if with_current else [])):
        if old == current and not with_current:
            continue  # a name without an extension: both namings agree, the key just written
        if old.is_file() and _key_release(old) == path.name:
            try:
                _check(old, protected)
            except SdcevalError:
                continue  # an input file that happens to look like a key: left alone
            old.unlink(missing_ok=True)


def _csv_bytes(frame: pd.DataFrame) -> bytes:
    return frame.to_csv(index=False, lineterminator="\n").encode("utf-8")


#: the file names written as Parquet (as `sdceval.core.tables.load_table` reads them)
PARQUET_SUFFIXES = (".parquet", ".pq")


def _import_pyarrow():
    import pyarrow  # noqa: F401 - the optional extra
    import pyarrow.parquet  # noqa: F401


def _format_of(path: Path):
    """The writer of a release file named ``path``: Parquet for ``.parquet`` / ``.pq``
    (needs pyarrow, the ``[parquet]`` extra: refused without it), CSV otherwise."""
    if not "".join(path.suffixes).lower().endswith(PARQUET_SUFFIXES):
        return _csv_bytes
    from sdceval.core.tables import PARQUET_EXTRA
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


# -- reading -------------------------------------------------------------------------------
def read_key(key, release_path, dataset) -> np.ndarray:
    """The verified permutation of a key file: ``record[r]`` is the record that
    published row ``r`` of ``release_path`` protects.  Errors name what does not match:
    not a key, an edited key, another release file, another data set, another size, and
    the first row whose position is not a record of the data set or repeats one."""
    return key_file(key, dataset, release_path)[0]


def key_file(key, dataset, release_path=None) -> tuple[np.ndarray, dict]:
    """`read_key`'s permutation and the key's header fields.  ``release_path`` None (a
    release given as a DataFrame: no file to compare) skips the release file's sha256
    only: the caller compares it with the DataFrame's bytes (`frame_sha256`) or checks
    that the rows fit their records (`check_record_order`)."""
    key = Path(key)
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
    if release_path is not None:
        got = file_sha256(release_path)
        if got != fields["release_sha256"]:
            raise SdcevalError(
                f"key file {shown!r} belongs to another release: it was written for a file "
                f"{fields['release']!r} with sha256 {fields['release_sha256'][:16]}..., but "
                f"{str(release_path)!r} has sha256 {got[:16]}... (another release, or this "
                "one edited or saved again); give the key written with this release "
                "(--key FILE)")
    fp = data_fingerprint(dataset)
    if fp != fields["data_sha256"]:
        raise SdcevalError(
            f"key file {shown!r} was written for another data set: {fields['data']!r} "
            f"with data sha256 {fields['data_sha256'][:16]}..., not data set "
            f"{dataset.name!r} as read now ({fp[:16]}...); evaluate with the --data and "
            "--schema the release was made with")
    n, where = dataset.n, f"key file {shown!r}"

    def line_of(r: int) -> int:
        """The file's line (1-based) of data row ``r`` (blank lines are skipped)."""
        rows = (i for i, ln in enumerate(lines[start + 1:], start + 2) if ln.strip())
        return next(i for k, i in enumerate(rows) if k == r)
    try:  # numbers as pandas reads them (fast); anything else again as text, exactly
        table = pd.read_csv(io.StringIO(body), keep_default_na=False)
        if not all(pd.api.types.is_integer_dtype(t) for t in table.dtypes):
            table = pd.read_csv(io.StringIO(body), dtype=str, keep_default_na=False)
    except (ValueError, pd.errors.ParserError):
        bad = next((i for i, ln in enumerate(lines[start + 1:], start + 2)
                    if ln.strip() and ln.count(",") != 1), None)
        raise SdcevalError(f"{where}, line {bad}: {lines[bad - 1].strip()[:40]!r} is not a "
                           "'row,record' pair; use the key as 'sdceval anonymize' wrote it"
                           if bad is not None else f"{where} is damaged: its rows are not "
                           "'row,record' pairs") from None
    if list(table.columns) != ["row", "record"]:
        raise SdcevalError(f"{where}, line {start + 1}: the header of its rows is "
                           f"{lines[start].strip()[:40]!r}, not 'row,record'; use the key "
                           "as 'sdceval anonymize' wrote it")
    if not fields["records"].isdigit() or int(fields["records"]) != n or len(table) != n:
        raise SdcevalError(f"{where} holds {len(table)} rows for {fields['records']} "
                           f"records but data set {dataset.name!r} has {n}; give the key "
                           "written with this release and data set")
    _rows_in_order(table["row"], n, where, line_of)
    return _positions(table["record"], n, where, "record", line_of), fields


def frame_sha256(frame: pd.DataFrame, name: str) -> str | None:
    """sha256 of ``frame`` written as `write_release` writes a release file named
    ``name`` (CSV, or Parquet for ``.parquet``): equal to a key's ``release_sha256``
    when the frame is that file read back unchanged (``pd.read_csv`` with its QI codes
    as text); None when it cannot be written so (Parquet without pyarrow)."""
    try:
        return hashlib.sha256(_format_of(Path(name))(frame)).hexdigest()
    except SdcevalError:
        return None


def key_permutation(key, dataset, frame: pd.DataFrame | None = None
                    ) -> tuple[np.ndarray, bool]:
    """The permutation given as ``key`` with a release that is not a file (a DataFrame
    ``frame``, `sdceval.core.release_io.release_of`), and whether the key is tied to
    that frame as to its file: a key file's path (`key_file`: every check but the
    release file's; tied when ``frame``'s bytes are the file's, `frame_sha256`), a table
    with a ``record`` column (the key file read with ``pd.read_csv(KEY, comment="#")``;
    a ``row`` column, if any, must be 0..n-1 in order), or that ``record`` column itself
    (n record positions: published row ``r`` protects record ``key[r]``), never tied.
    Each record must appear once."""
    if isinstance(key, (str, os.PathLike)):
        perm, fields = key_file(key, dataset)
        tied = (frame is not None
                and frame_sha256(frame, fields["release"]) == fields["release_sha256"])
        return perm, tied
    n, where = dataset.n, "key"
    if isinstance(key, pd.DataFrame):
        if "record" not in key.columns:
            raise SdcevalError(f"key: a key table needs a 'record' column (the record each "
                               f"published row protects); it has "
                               f"{', '.join(map(repr, key.columns[:10]))}; read the key file "
                               "with pd.read_csv(KEY, comment='#') or give its path")
        if "row" in key.columns:
            _rows_in_order(key["row"], n, where)
        values = key["record"]
    elif isinstance(key, (pd.Series, pd.Index, np.ndarray, list, tuple)):
        values = key
    else:
        raise SdcevalError(f"key must be the path of the release's key file, the key read "
                           "as a table (pd.read_csv(KEY, comment='#')) or its 'record' "
                           f"column, got {type(key).__name__}")
    if np.ndim(values) != 1 or len(values) != n:
        raise SdcevalError(f"key holds {np.size(values)} positions but data set "
                           f"{dataset.name!r} has {n} records; give the key of this "
                           "release (one record position per published row)")
    return _positions(values, n, where, "record"), False


def _positions(values, n: int, where: str, column: str, line_of=None) -> np.ndarray:
    """``values`` (text or numbers) as int64 record positions 0..n-1, each at most once
    for the ``record`` column; the first that is not a whole number, lies outside the
    data set (a position of 10^30, a negative one) or repeats an earlier row's is an
    error naming ``where``, its published row and (``line_of(row)``) its line in the
    file."""
    s = pd.Series(values, copy=False).reset_index(drop=True)

    def fail(r: int, what: str):
        at = f", line {line_of(r)}" if line_of is not None else ""
        value = s.iloc[r]
        value = repr(value.item() if isinstance(value, np.generic) else value)
        value = value if len(value) <= 40 else f"{value[:36]}...{value[-1]}"
        raise SdcevalError(f"{where}, row {r}{at}: {column} {value} {what}; use the "
                           "key as 'sdceval anonymize' wrote it")
    kinds = pd.api.types
    if kinds.is_bool_dtype(s) or not (kinds.is_numeric_dtype(s) or s.dtype == object
                                      or kinds.is_string_dtype(s)):
        fail(0, "is not a record position (a whole number)")
    if kinds.is_integer_dtype(s):
        ints = s.to_numpy()
        big = np.flatnonzero((ints < 0) | (ints >= n))  # compared before any cast
        if len(big):
            fail(int(big[0]), f"is not a record of the data set (0..{n - 1})")
        ints = ints.astype(np.int64)
    else:
        if kinds.is_numeric_dtype(s):
            f = s.to_numpy(dtype=float, na_value=np.nan)
            ok = np.isfinite(f) & (f == np.round(f))
        else:
            text = s.astype(str).str.strip()
            ok = text.str.fullmatch(r"-?[0-9]+").to_numpy(dtype=bool)
            f = np.where(ok, text.where(ok, "0").map(
                lambda t: float(t) if len(t) > 15 else int(t)), np.nan).astype(float)
        bad = np.flatnonzero(~ok)
        if len(bad):
            fail(int(bad[0]), "is not a record position (a whole number)")
        out = np.flatnonzero((f < 0) | (f >= n))
        if len(out):
            fail(int(out[0]), f"is not a record of the data set (0..{n - 1})")
        ints = f.astype(np.int64)
    if column == "record":
        dup = np.flatnonzero(pd.Series(ints).duplicated().to_numpy())
        if len(dup):
            r = int(dup[0])
            first = int(np.flatnonzero(ints == ints[r])[0])
            fail(r, f"appears twice (also at row {first}): a key gives each record once")
    return ints


def _rows_in_order(values, n: int, where: str, line_of=None) -> None:
    """A key's ``row`` column must be the published rows 0..n-1 in order (`_positions`
    for what each value must be); the first out of place is an error naming ``where``,
    the row and (``line_of(row)``) its line in the file."""
    rows = _positions(values, n, where, "row", line_of)
    bad = np.flatnonzero(rows != np.arange(n))
    if len(bad):
        r = int(bad[0])
        at = f", line {line_of(r)}" if line_of is not None else ""
        raise SdcevalError(f"{where}, row {r}{at}: row {int(rows[r])} where row {r} belongs "
                           f"(the rows are 0..{n - 1} in order); use the key as 'sdceval "
                           "anonymize' wrote it")


def to_record_order(frame: pd.DataFrame, perm: np.ndarray) -> pd.DataFrame:
    """The published rows put back in record order: row ``perm[r]`` of the result is
    published row ``r``."""
    return frame.iloc[np.argsort(perm, kind="stable")].reset_index(drop=True)


__all__ = ["KEY_SUFFIX", "PRIVATE",
           "data_fingerprint", "frame_sha256", "key_beside", "key_file",
           "key_path_for", "key_permutation", "legacy_key_path_for", "public_beside_key",
           "public_path_for", "read_key", "to_record_order", "write_release"]
