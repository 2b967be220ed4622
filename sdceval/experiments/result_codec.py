"""The encoding of job results in the results store (issue 27 item 15; docs/store.md):
a format that cannot execute code, so a store received from someone else is safe to
resume from.

A result is written as JSON with a tag for each value JSON does not hold itself::

    None, bool, int, float, str, list     as JSON (floats keep every digit; NaN, ±inf)
    dict with text keys (none "$...")     a JSON object
    any other dict                        {"$dict": [[key, value], ...]}
    tuple / set / frozenset / Path        {"$tuple": [...]} / {"$set": ...} / {"$path": "..."}
    NumPy scalar                          {"$np": [dtype, value]}
    NumPy array                           {"$ndarray": "<base64 of np.save>"}  (never an
                                          object array: those are a list of values)
    pandas DataFrame / Series / Index     column by column: NumPy columns as .npy, other
                                          columns as their values and dtype name; a
                                          frame's ``attrs`` as a value of its own
    dataclass                             {"$dataclass": ["module:Class", {field: value}]}

Decoding builds nothing but these: ``np.load(..., allow_pickle=False)``, pandas
constructors from values and a dtype name, and dataclasses rebuilt field by field
(``object.__new__`` and the fields set, no ``__init__``) of a class that is a dataclass
defined in sdceval or in the module of a registered job kind (a plugin's).  Nothing is
imported but sdceval's own modules, nothing is called by name.

The codecs are a registry keyed by the exact type (`CODECS`, `codec`): a value of a type
none handles is `Unstorable` (the job is then recomputed on resume, as before), and a
value that does not decode is `DamagedResult`.
"""
from __future__ import annotations

import base64
import dataclasses
import importlib
import io
import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pandas as pd

#: the first bytes of an encoded result (a blob without them is not one)
MAGIC = b"sdceval-result 1\n"


class Unstorable(TypeError):
    """A result holds a value no codec encodes."""


class DamagedResult(ValueError):
    """Stored bytes that are not a result this module wrote."""


@dataclass(frozen=True)
class Codec:
    tag: str
    encode: Callable[[Any], Any]
    decode: Callable[[Any], Any]


#: tag -> codec; `_BY_TYPE`: exact type -> codec (a subclass is not its base)
CODECS: dict[str, Codec] = {}
_BY_TYPE: dict[type, Codec] = {}


def codec(tag: str, *types: type):
    """Register ``encode`` (the decorated function, value -> JSON) with its ``decode``
    given as ``.decoder``: ``@codec("$tuple", tuple)``."""
    def deco(encode):
        def with_decoder(decode):
            c = Codec(tag, encode, decode)
            CODECS[tag] = c
            for t in types:
                _BY_TYPE[t] = c
            return decode
        encode.decoder = with_decoder
        return encode
    return deco


# -- the tree -------------------------------------------------------------------------
def to_tree(value) -> Any:
    """``value`` as JSON-ready data (module docstring)."""
    if value is None or type(value) in (bool, int, float, str):
        return value
    if type(value) is list:
        return [to_tree(v) for v in value]
    if type(value) is dict and all(type(k) is str and not k.startswith("$")
                                   for k in value):
        return {k: to_tree(v) for k, v in value.items()}
    c = _BY_TYPE.get(type(value))
    if c is None and isinstance(value, np.generic):
        c = CODECS["$np"]
    if c is None and dataclasses.is_dataclass(value) and not isinstance(value, type):
        c = CODECS["$dataclass"]
    if c is None:
        raise Unstorable(f"a {type(value).__module__}.{type(value).__qualname__} value")
    return {c.tag: c.encode(value)}


def from_tree(tree) -> Any:
    """`to_tree`'s inverse (`DamagedResult` for what it never writes)."""
    if tree is None or type(tree) in (bool, int, float, str):
        return tree
    if type(tree) is list:
        return [from_tree(v) for v in tree]
    if type(tree) is not dict:
        raise DamagedResult(f"unexpected {type(tree).__name__}")
    if len(tree) == 1:
        (tag, payload), = tree.items()
        if tag.startswith("$"):
            if tag not in CODECS:
                raise DamagedResult(f"unknown tag {tag[:40]!r}")
            return CODECS[tag].decode(payload)
    return {k: from_tree(v) for k, v in tree.items()}


def encode(value) -> bytes:
    """The bytes the store keeps for ``value`` (`Unstorable` if a part of it has no
    codec)."""
    try:
        tree = to_tree(value)
    except RecursionError:
        raise Unstorable("a value nested too deep") from None
    # ASCII (escapes): any text, lone surrogates too, encodes
    return MAGIC + json.dumps(tree, separators=(",", ":")).encode("ascii")


def decode(blob) -> Any:
    """The value `encode` wrote; `DamagedResult` for anything else (a legacy pickle, a
    damaged or hand-made blob)."""
    if not isinstance(blob, (bytes, bytearray, memoryview)):
        raise DamagedResult("not a stored result")
    blob = bytes(blob)
    if not blob.startswith(MAGIC):
        raise DamagedResult("not in sdceval's result encoding")
    try:
        return from_tree(json.loads(blob[len(MAGIC):].decode("utf-8")))
    except DamagedResult:
        raise
    except (ValueError, TypeError, KeyError, IndexError, AttributeError, RecursionError,
            OverflowError, MemoryError) as exc:  # MemoryError: an array header's shape
        raise DamagedResult(f"{type(exc).__name__}: {str(exc)[:120]}") from None


def _list(payload) -> list:
    if type(payload) is not list:
        raise DamagedResult("expected a list")
    return payload


# -- containers and scalars -----------------------------------------------------------
@codec("$dict", dict)
def _enc_dict(value):  # a key that is not text, or text starting with "$"
    return [[to_tree(k), to_tree(v)] for k, v in value.items()]


@_enc_dict.decoder
def _dec_dict(payload):
    return {from_tree(k): from_tree(v) for k, v in _list(payload)}


def _sequence_codec(tag: str, kind: type) -> None:
    """``kind`` (tuple, set, frozenset) as the list of its items, rebuilt as ``kind``."""
    @codec(tag, kind)
    def encode(value):
        return [to_tree(v) for v in value]

    @encode.decoder
    def decode(payload):
        return kind(from_tree(v) for v in _list(payload))


for _tag, _kind in (("$tuple", tuple), ("$set", set), ("$frozenset", frozenset)):
    _sequence_codec(_tag, _kind)


@codec("$path", type(Path()))
def _enc_path(value):
    return str(value)


@_enc_path.decoder
def _dec_path(payload):
    if type(payload) is not str:
        raise DamagedResult("a path is text")
    return Path(payload)


@codec("$na", type(pd.NA), type(pd.NaT))
def _enc_missing(value):
    return "NaT" if value is pd.NaT else "NA"


@_enc_missing.decoder
def _dec_missing(payload):
    return pd.NaT if payload == "NaT" else pd.NA


# -- NumPy ----------------------------------------------------------------------------
def _npy(arr: np.ndarray) -> str:
    buf = io.BytesIO()
    np.save(buf, arr, allow_pickle=False)
    return base64.b64encode(buf.getvalue()).decode("ascii")


def _from_npy(text) -> np.ndarray:
    if type(text) is not str:
        raise DamagedResult("an array is base64 text")
    # allow_pickle=False: an object array (the only kind that unpickles) is refused
    return np.load(io.BytesIO(base64.b64decode(text, validate=True)), allow_pickle=False)


@codec("$np")
def _enc_np_scalar(value):
    if value.dtype.kind in "biuf":
        return [value.dtype.str, value.item()]
    return [value.dtype.str, _npy(np.asarray(value))]


@_enc_np_scalar.decoder
def _dec_np_scalar(payload):
    dtype, v = _list(payload)
    dt = np.dtype(dtype)
    if dt.kind == "O":
        raise DamagedResult("an object scalar")
    if dt.kind in "biuf":
        return dt.type(v)
    return _from_npy(v)[()]


@codec("$ndarray", np.ndarray)
def _enc_ndarray(value):
    if value.dtype.kind == "O":
        return {"shape": list(value.shape), "items": [to_tree(v) for v in value.ravel()]}
    return _npy(value)


@_enc_ndarray.decoder
def _dec_ndarray(payload):
    if type(payload) is dict:  # an object array, value by value
        items = [from_tree(v) for v in _list(payload["items"])]
        out = np.empty(len(items), dtype=object)
        out[:] = items
        return out.reshape([int(n) for n in _list(payload["shape"])])
    return _from_npy(payload)


# -- pandas ---------------------------------------------------------------------------
def _column(values) -> dict:
    """One column (a Series' or an Index's values): a NumPy dtype as .npy, a categorical
    as its categories and codes, any other dtype (object, text, nullable) as its values
    and the dtype's name."""
    dtype = values.dtype
    if isinstance(dtype, np.dtype) and dtype.kind != "O":
        return {"npy": _npy(np.asarray(values))}
    if isinstance(dtype, pd.CategoricalDtype):
        cat = pd.Categorical(values)
        return {"categories": to_tree(pd.Index(cat.categories)),
                "ordered": bool(cat.ordered), "codes": _npy(np.asarray(cat.codes))}
    return {"dtype": str(dtype),
            "values": [to_tree(v) for v in np.asarray(values, dtype=object)]}


def _from_column(payload) -> Any:
    """An array pandas takes as a column (`_column`)."""
    if type(payload) is not dict:
        raise DamagedResult("a column is an object")
    if "npy" in payload:
        return _from_npy(payload["npy"])
    if "codes" in payload:
        return pd.Categorical.from_codes(_from_npy(payload["codes"]),
                                         dtype=pd.CategoricalDtype(
                                             from_tree(payload["categories"]),
                                             ordered=bool(payload["ordered"])))
    values = [from_tree(v) for v in _list(payload["values"])]
    dtype = str(payload["dtype"])
    if dtype == "object":
        out = np.empty(len(values), dtype=object)
        out[:] = values
        return out
    return pd.array(values, dtype=pd.api.types.pandas_dtype(dtype))


@codec("$range", pd.RangeIndex)
def _enc_range(value):
    return [value.start, value.stop, value.step, to_tree(value.name)]


@_enc_range.decoder
def _dec_range(payload):
    start, stop, step, name = _list(payload)
    return pd.RangeIndex(int(start), int(stop), int(step), name=from_tree(name))


@codec("$index", pd.Index)
def _enc_index(value):
    return {"values": _column(value), "name": to_tree(value.name)}


@_enc_index.decoder
def _dec_index(payload):
    return pd.Index(_from_column(payload["values"]), name=from_tree(payload["name"]),
                    tupleize_cols=False)


@codec("$series", pd.Series)
def _enc_series(value):
    return {"values": _column(value), "index": to_tree(value.index),
            "name": to_tree(value.name)}


@_enc_series.decoder
def _dec_series(payload):
    return pd.Series(_from_column(payload["values"]), index=from_tree(payload["index"]),
                     name=from_tree(payload["name"]), copy=False)


@codec("$frame", pd.DataFrame)
def _enc_frame(value):
    out = {"columns": to_tree(value.columns), "index": to_tree(value.index),
           "data": [_column(value.iloc[:, i]) for i in range(value.shape[1])]}
    if value.attrs:  # metadata readers rely on (property vectors: each one's direction)
        out["attrs"] = to_tree(dict(value.attrs))
    return out


@_enc_frame.decoder
def _dec_frame(payload):
    index = from_tree(payload["index"])
    columns = from_tree(payload["columns"])
    data = [_from_column(c) for c in _list(payload["data"])]
    if len(data) != len(columns):
        raise DamagedResult("a table's columns and names differ in number")
    # by position first: duplicate or non-text column names stay as they were
    frame = pd.DataFrame({i: pd.Series(d, index=index, copy=False)
                          for i, d in enumerate(data)}, index=index)
    frame.columns = columns
    attrs = from_tree(payload.get("attrs", {}))
    if type(attrs) is not dict:
        raise DamagedResult("a table's attributes are not a mapping")
    frame.attrs = attrs
    return frame


# -- dataclasses ----------------------------------------------------------------------
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*")


@codec("$dataclass")
def _enc_dataclass(value):
    cls = type(value)
    names = [f.name for f in dataclasses.fields(value)]
    extra = set(getattr(value, "__dict__", {})) - set(names)
    if extra or "<" in cls.__qualname__:
        # an attribute besides the fields, or a class defined in a function: it would
        # not read back as it was
        raise Unstorable(f"a {cls.__qualname__} value")
    return [f"{cls.__module__}:{cls.__qualname__}",
            {n: to_tree(getattr(value, n)) for n in names}]


def _job_kind_modules() -> set[str]:
    """The modules that define a registered job kind (a plugin's results live there).
    The registry is read where it is loaded, not imported: no job kind is registered
    before it is, and the store (which the package root imports) stays below it."""
    jobs = sys.modules.get("sdceval.experiments.jobs")
    kinds = jobs.JOB_KINDS.values() if jobs is not None else ()
    return {getattr(f, "__module__", None) for k in kinds
            for f in (k.run, k.write, k.rows, k.report) if f is not None}


def result_class(name) -> type:
    """The dataclass ``"module:Qualname"`` names: defined in sdceval (its module
    imported if need be: sdceval's own code) or in a job kind's module (imported
    already); anything else is `DamagedResult`."""
    module, _, qualname = str(name).partition(":")
    if not (_NAME.fullmatch(module) and _NAME.fullmatch(qualname)):
        raise DamagedResult(f"bad class name {str(name)[:80]!r}")
    # sdceval's modules define classes and registrations when imported; its
    # ``__main__`` modules run the command line: never those
    own = (module == "sdceval" or module.startswith("sdceval.")) \
        and "__main__" not in module.split(".")
    if own:
        try:
            obj = importlib.import_module(module)
        except ImportError:
            raise DamagedResult(f"no module {module!r}") from None
    elif module in _job_kind_modules() and module in sys.modules:
        obj = sys.modules[module]
    else:
        raise DamagedResult(f"{name!r} is not a result type of sdceval or of a job kind")
    for part in qualname.split("."):
        obj = getattr(obj, part, None)
    if not (isinstance(obj, type) and dataclasses.is_dataclass(obj)):
        raise DamagedResult(f"{name!r} is not a result type")
    return obj


@_enc_dataclass.decoder
def _dec_dataclass(payload):
    name, fields = _list(payload)
    cls = result_class(name)
    if type(fields) is not dict:
        raise DamagedResult("a result's fields are an object")
    known = {f.name for f in dataclasses.fields(cls)}
    if set(fields) != known:
        raise DamagedResult(f"{cls.__qualname__}: fields {sorted(set(fields) ^ known)} "
                            "differ")
    obj = object.__new__(cls)
    for k, v in fields.items():
        object.__setattr__(obj, k, from_tree(v))  # frozen classes too
    return obj


__all__ = ["CODECS", "Codec", "DamagedResult", "MAGIC", "Unstorable", "codec", "decode",
           "encode", "result_class"]
