"""The app's one folder (issue 31): uploads, the state of the workflow, runs, releases
and keys, all owner-only (folders 0700, files 0600: `private_dir`, `write_private`),
and the upload read as a stream that stops at the size limit (`receive_upload`).

The state of the steps before a run (the data chosen, the roles, the goal) is one JSON
file, ``state.json``, written whole on every change (`Workspace.save`): a refresh or a
closed tab loses nothing; the runs' own state is the run manager's
(`sdceval.app.runs`)."""
from __future__ import annotations

import json
import os
import re
import secrets
import sys
from dataclasses import dataclass, field
from pathlib import Path

from sdceval.core.errors import SdcevalError
from sdceval.core.fileio import atomic_write

PRIVATE_DIR = 0o700
PRIVATE_FILE = 0o600
#: the suffixes an upload may have: what `sdceval.core.tables.load_table` reads
UPLOAD_SUFFIXES = (".csv", ".tsv", ".txt", ".csv.gz", ".parquet", ".pq", ".sav", ".zsav",
                   ".por", ".dta", ".sas7bdat", ".xpt")


def private_dir(path) -> Path:
    """``path`` (and missing parents) made a folder only its owner can enter (0700)."""
    path = Path(path)
    path.mkdir(parents=True, exist_ok=True, mode=PRIVATE_DIR)
    os.chmod(path, PRIVATE_DIR)
    return path


def write_private(path, data) -> Path:
    """``data`` (text or bytes) written to ``path`` readable by its owner only (0600),
    atomically (`sdceval.core.fileio.atomic_write`: a file created with that mode and
    renamed over it, never half-written, no temporary file left)."""
    raw = data.encode("utf-8") if isinstance(data, str) else bytes(data)
    path = atomic_write(Path(path), lambda p: p.write_bytes(raw), mode=PRIVATE_FILE)
    os.chmod(path, PRIVATE_FILE)
    return path


def user_data_dir() -> Path:
    """Where a user's application data go: ``$XDG_DATA_HOME`` (default
    ``~/.local/share``) on Linux, ``~/Library/Application Support`` on macOS,
    ``%LOCALAPPDATA%`` on Windows."""
    if sys.platform == "win32":
        return Path(os.environ.get("LOCALAPPDATA") or Path.home() / "AppData" / "Local")
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Application Support"
    return Path(os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share")


def default_folder() -> Path:
    """The app's folder when ``--folder`` is not given: ``sdceval/app`` in the user's
    data folder (`user_data_dir`), else ``./sdceval-app`` when that cannot be made."""
    try:
        return private_dir(user_data_dir() / "sdceval" / "app")
    except OSError:
        return private_dir(Path.cwd() / "sdceval-app")


def safe_name(filename: str) -> str:
    """An uploaded file's name as stored: its last path part, letters, digits and
    ``. _ -`` only (a browser may send a full path; nothing may climb out of the
    folder)."""
    base = re.split(r"[\\/]", filename or "")[-1]
    base = re.sub(r"[^A-Za-z0-9._-]+", "_", base).lstrip(".")
    return base[:120] or "upload"


@dataclass
class Workspace:
    """The app's folder and the workflow's state in it (``state.json``)."""

    folder: Path
    state: dict = field(default_factory=dict)

    def __post_init__(self):
        self.folder = private_dir(Path(self.folder).resolve())
        for sub in ("uploads", "runs", "logs"):
            private_dir(self.folder / sub)
        self.state = self._read()

    @property
    def uploads(self) -> Path:
        return self.folder / "uploads"

    @property
    def state_file(self) -> Path:
        return self.folder / "state.json"

    def _read(self) -> dict:
        try:
            return json.loads(self.state_file.read_text("utf-8"))
        except FileNotFoundError:
            return {}
        except (OSError, ValueError):
            return {}  # a damaged state starts the workflow again; the runs are kept

    def save(self) -> None:
        write_private(self.state_file, json.dumps(self.state, indent=1, sort_keys=True))

    def snapshot(self, path) -> Path:
        """A copy of the file ``path`` that never changes, named by its content's
        SHA-256 (``schemas/<hash>.toml``): a run's experiment file names it, so the roles
        edited later never change what an earlier run reruns with."""
        import hashlib
        raw = Path(path).read_bytes()
        folder = private_dir(self.folder / "schemas")
        copy = folder / f"{hashlib.sha256(raw).hexdigest()[:16]}{Path(path).suffix}"
        if not copy.exists():
            write_private(copy, raw)
        return copy

    def update(self, **parts) -> None:
        self.state.update(parts)
        self.save()


# -- uploads as a stream ---------------------------------------------------------------
@dataclass
class Upload:
    """What `receive_upload` read: the stored file (None: none, or over the limit),
    the name the browser gave, the other form fields, and whether the file went over
    the limit (``size`` counts the bytes received of it)."""

    path: Path | None = None
    filename: str = ""
    fields: dict = field(default_factory=dict)
    too_large: bool = False
    size: int = 0


async def receive_upload(request, folder: Path, limit: int, field_name: str = "file"
                         ) -> Upload:
    """The multipart form of ``request`` read as it arrives: the file field
    ``field_name`` written to ``folder`` (0600) until it passes ``limit`` bytes, then
    deleted and the rest of the body read and dropped (so the browser gets the page that
    says so, never a reset connection); other fields kept as text (64 kB each)."""
    from python_multipart.multipart import MultipartParser, parse_options_header

    ctype, params = parse_options_header(request.headers.get("content-type", ""))
    if ctype != b"multipart/form-data" or b"boundary" not in params:
        raise SdcevalError("the upload is not a multipart form: send the file with the "
                           "page's form")
    out = Upload()
    part: dict = {}
    header = {"field": b"", "value": b""}
    fh = {"file": None}

    def on_part_begin():
        part.clear()
        part.update(headers={}, data=bytearray(), name="", filename=None)

    def on_header_field(data, start, end):
        header["field"] += data[start:end]

    def on_header_value(data, start, end):
        header["value"] += data[start:end]

    def on_header_end():
        part["headers"][header["field"].lower()] = header["value"]
        header["field"], header["value"] = b"", b""

    def on_headers_finished():
        _, opts = parse_options_header(part["headers"].get(b"content-disposition", b""))
        part["name"] = opts.get(b"name", b"").decode("utf-8", "replace")
        if b"filename" in opts:
            part["filename"] = opts[b"filename"].decode("utf-8", "replace")
        if part["name"] == field_name and part["filename"]:
            out.filename = part["filename"]
            # a folder of its own: the data set keeps the file's name (its stem)
            out.path = private_dir(folder / secrets.token_hex(6)) / safe_name(out.filename)
            fd = os.open(out.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, PRIVATE_FILE)
            fh["file"] = os.fdopen(fd, "wb")

    def on_part_data(data, start, end):
        chunk = data[start:end]
        if part.get("filename") is not None and part["name"] == field_name:
            out.size += len(chunk)
            if out.too_large:
                return
            if out.size > limit:
                out.too_large = True
                _close_and_remove(fh, out)
                return
            if fh["file"] is not None:
                fh["file"].write(chunk)
        elif len(part["data"]) < 65536:
            part["data"] += chunk[:65536 - len(part["data"])]

    def on_part_end():
        if part.get("filename") is not None and part["name"] == field_name:
            if fh["file"] is not None:
                fh["file"].close()
                fh["file"] = None
        elif part.get("name"):
            out.fields[part["name"]] = part["data"].decode("utf-8", "replace")

    parser = MultipartParser(params[b"boundary"], {
        "on_part_begin": on_part_begin, "on_header_field": on_header_field,
        "on_header_value": on_header_value, "on_header_end": on_header_end,
        "on_headers_finished": on_headers_finished, "on_part_data": on_part_data,
        "on_part_end": on_part_end})
    try:
        async for chunk in request.stream():
            parser.write(chunk)
        parser.finalize()
    except Exception:
        _close_and_remove(fh, out)
        raise
    if out.too_large or (out.path is not None and out.size == 0):
        _close_and_remove(fh, out)
    return out


def _close_and_remove(fh: dict, out: Upload) -> None:
    if fh["file"] is not None:
        fh["file"].close()
        fh["file"] = None
    if out.path is not None:
        out.path.unlink(missing_ok=True)
        try:
            out.path.parent.rmdir()
        except OSError:
            pass
        out.path = None
