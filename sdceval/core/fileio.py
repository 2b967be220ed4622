"""Safe output: atomic writes that never overwrite an input file."""
from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Callable, Iterable

from sdceval.core.errors import SdcevalError

try:
    import tomllib
except ModuleNotFoundError:  # pragma: no cover - Python < 3.11
    import tomli as tomllib

_protected: set[Path] = set()


def protect(*paths) -> None:
    """Register input files that no output may overwrite."""
    for p in paths:
        if p is not None and Path(p).exists():
            _protected.add(Path(p).resolve())


def _check(path: Path, extra: Iterable = ()) -> None:
    target = path.resolve()
    prot = _protected | {Path(p).resolve() for p in extra if p is not None}
    if target in prot:
        raise SdcevalError(f"refusing to write {str(path)!r}: it is an input file; "
                           "choose another --out")


def atomic_write(path, writer: Callable[[Path], None], protected: Iterable = ()) -> Path:
    """Write via ``writer(tmp_path)`` into a temp file beside ``path``, then rename."""
    path = Path(path)
    _check(path, protected)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    try:
        writer(Path(tmp))
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
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
    import numpy as np
    if isinstance(o, np.generic):
        return o.item()
    if isinstance(o, np.ndarray):
        return o.tolist()
    if isinstance(o, Path):
        return str(o)
    raise TypeError(f"not JSON serializable: {type(o).__name__}")


def read_toml(path, what: str) -> dict:
    """Parse a TOML file; a missing or malformed file is an error naming ``what``."""
    path = Path(path)
    if not path.exists():
        raise SdcevalError(f"{what} file {str(path)!r} does not exist")
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise SdcevalError(f"{what} file {str(path)!r} is not valid TOML: {exc}") from None
