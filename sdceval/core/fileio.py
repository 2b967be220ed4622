"""Safe output: atomic writes that never overwrite an input file.

Every output goes to a temporary file beside its destination (``.NAME.<random>.tmp``),
which is renamed over the destination only once complete, so a reader never sees half
a file.  The temporary file is removed on every exit path: an exception, Ctrl-C
(``KeyboardInterrupt``), or SIGTERM (the CLI turns it into an exception so ``finally``
blocks run); `remove_partial_files` is the last resort for a hard exit.  Files are
created with mode ``0o666`` filtered by the process umask, as ``open()`` would create
them (``mkstemp``'s 0o600 made every output private to its owner).

`check_output` finds an output path nothing can be written to (a folder where a file
is expected, a path under a regular file, ``/proc``, a read-only folder) before any
work, and `atomic_write` turns any such failure when writing into an `SdcevalError`
naming the path and the fix.

`protect` registers what the user gave (data, schema, hierarchy files, a release being
evaluated, an experiment file): no output may replace one of them.
"""
from __future__ import annotations

import json
import os
import secrets
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterable

from sdceval.core.errors import SdcevalError, plain

try:
    import tomllib
except ModuleNotFoundError:  # pragma: no cover - Python < 3.11
    import tomli as tomllib

_protected: set[Path] = set()
#: temporary files being written right now (removed by `remove_partial_files`)
_pending: set[Path] = set()


@contextmanager
def protection_scope():
    """Files protected inside the block stay protected only until it ends: one command's
    inputs are not another's (several ``sdceval.cli.main`` calls in one process)."""
    before = set(_protected)
    try:
        yield
    finally:
        _protected.clear()
        _protected.update(before)


def protect(*paths) -> None:
    """Register input files that no output may overwrite (``None`` and paths that do
    not exist are skipped)."""
    for p in paths:
        if p is not None and Path(p).exists():
            _protected.add(Path(p).resolve())


def protected() -> frozenset[Path]:
    """The input files registered with `protect` (resolved paths)."""
    return frozenset(_protected)


def remove_partial_files() -> None:
    """Remove every temporary file still being written (for an exit that cannot run
    the writers' ``finally`` blocks, e.g. a second interrupt)."""
    for tmp in list(_pending):
        tmp.unlink(missing_ok=True)
        _pending.discard(tmp)


def _check(path: Path, extra: Iterable = ()) -> None:
    target = path.resolve()
    prot = _protected | {Path(p).resolve() for p in extra if p is not None}
    if target in prot:
        raise SdcevalError(f"refusing to write {str(path)!r}: it is an input file; "
                           "choose another --out")


def _cannot(path, why: str, fix: str = "choose another output path (--out)"
            ) -> SdcevalError:
    return SdcevalError(f"cannot write {str(path)!r}: {why}; {fix}")


_NAME_A_FILE = "give --out a file name (one inside that folder, say)"


def _reason(exc: OSError) -> str:
    return exc.strerror or str(exc)


def _no_nul(path) -> Path:
    """``path`` as a `Path`; one holding a NUL byte, which no system call accepts, is an
    error naming it."""
    if "\0" in str(path):
        raise _cannot(str(path), "the path holds a NUL byte")
    return Path(path)


def check_output(path, folder: bool | None = False) -> Path:
    """Check that ``path`` can be written as an output file (``folder=False``) or an
    output folder (``folder=True``; ``None``: either, checking only where it would go),
    before any work: an `SdcevalError` naming the path and the fix when

    * it is a folder where a file is expected, or a file where a folder is;
    * its nearest existing ancestor is a file (``data.csv/out.csv``), not a folder;
    * nothing can be created in that ancestor (``/proc``, a read-only or foreign folder):
      found by creating and removing an empty probe file there, since permission bits
      do not tell (root may write anywhere but ``/proc`` refuses everyone).

    Nothing is left behind; missing folders are not created (`atomic_write` does)."""
    path = _no_nul(path)
    if path.is_dir() and folder is False:
        raise _cannot(path, "it is a folder", _NAME_A_FILE)
    if path.exists() and not path.is_dir() and folder:
        raise _cannot(path, "it is a file, not a folder", "give a folder for --out")
    anc = path if folder else path.parent
    while not anc.exists() and anc != anc.parent:
        anc = anc.parent
    if not anc.is_dir():
        raise _cannot(path, f"{str(anc)!r} is a file, not a folder")
    probe = anc / f".sdceval-probe.{secrets.token_hex(6)}.tmp"
    _pending.add(probe)
    try:
        os.close(os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
    except OSError as exc:
        raise _cannot(path, f"nothing can be created in {str(anc)!r} "
                            f"({_reason(exc)})") from None
    finally:
        probe.unlink(missing_ok=True)
        _pending.discard(probe)
    return path


def atomic_write(path, writer: Callable[[Path], None], protected: Iterable = (),
                 mode: int = 0o666) -> Path:
    """Write via ``writer(tmp_path)`` into a temp file beside ``path``, then rename.

    The temp file is created ``O_EXCL`` with ``mode`` (0o666; 0o600 for a file only its
    owner may read), so the kernel applies the umask exactly as for any new file; ``writer`` reopens it by name (pandas,
    matplotlib), which keeps that mode.  It is removed on any exit path.  A path that
    cannot be written (`check_output`: a folder, a path under a file, ``/proc``) and an
    operating-system error while writing (a full disk) are an `SdcevalError` naming the
    path, with no partial file left.
    """
    path = _no_nul(path)
    _check(path, protected)
    if path.is_dir():
        raise _cannot(path, "it is a folder", _NAME_A_FILE)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        check_output(path)  # names what is in the way: a file, /proc
        raise _cannot(path, f"its folder cannot be created ({_reason(exc)})") from None
    tmp = path.parent / f".{path.name}.{secrets.token_hex(6)}.tmp"
    # registered before it exists, so an interrupt at any point leaves nothing behind;
    # unlinking a name that was never created is a no-op
    _pending.add(tmp)
    try:
        os.close(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode))
        writer(tmp)
        os.replace(tmp, path)
    except ConnectionError:  # a closed pipe (BrokenPipeError) is the CLI's to handle
        raise
    except OSError as exc:
        raise _cannot(path, _reason(exc)) from None
    finally:
        tmp.unlink(missing_ok=True)
        _pending.discard(tmp)
    return path


def write_csv(frame, path, protected: Iterable = ()) -> Path:
    return atomic_write(path, lambda p: frame.to_csv(p, index=False), protected)


def write_json(obj, path, protected: Iterable = ()) -> Path:
    def w(p):
        p.write_text(json.dumps(obj, indent=2, default=_default), encoding="utf-8")
    return atomic_write(path, w, protected)


def write_text(text: str, path, protected: Iterable = ()) -> Path:
    return atomic_write(path, lambda p: p.write_text(text, encoding="utf-8"), protected)


def _default(o):
    if type(o).__module__ == "numpy":
        return plain(o)
    if isinstance(o, Path):
        return str(o)
    raise TypeError(f"not JSON serializable: {type(o).__name__}")


def read_text_file(path, what: str) -> str:
    """The text of an input file, as UTF-8 without a byte-order mark; a missing file, a
    directory, an unreadable file or one that is not UTF-8 is an `SdcevalError` naming
    ``what`` (``"schema"``, ``"hierarchy"``, ...) and the file."""
    path = Path(path)
    shown = str(path)
    if not path.exists():
        raise SdcevalError(f"{what} file {shown!r} does not exist")
    if path.is_dir():
        raise SdcevalError(f"{what} file {shown!r} is a directory; give the file itself")
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise SdcevalError(f"{what} file {shown!r} cannot be read: "
                           f"{exc.strerror or exc}") from None
    try:
        # utf-8-sig: a byte-order mark is not part of the first key or leaf
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise SdcevalError(f"{what} file {shown!r} is not UTF-8 text ({exc.reason} at "
                           f"byte {exc.start}); save it as UTF-8") from None


def read_toml(path, what: str) -> dict:
    """Parse a TOML file; a missing, unreadable (a directory, not UTF-8) or malformed file
    is an error naming ``what`` and the file.  A UTF-8 byte-order mark (what some Windows
    editors write) is accepted and ignored."""
    path = Path(path)
    text = read_text_file(path, what)
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise SdcevalError(f"{what} file {str(path)!r} is not valid TOML: {exc}") from None
