"""Typed, bounded, documented parameters: the one declaration of every parameter of a
method, measure, privacy model, suppression rule or job (issue 6 §4; issue 18).

`Param` declares a parameter (type, default, bounds, choices, unit, the direction in
which protection moves, a grid and a search scale); `Param.parse` checks a value (text
from the command line or a Python value) and names the parameter in its error.  A type
beyond int, float, str and bool is a `ParamType` (a list of privacy models, a
suppression limit given as a fraction or a count), declared once as scikit-learn
declares a parameter that accepts several forms; a `ParamType` may accept *shorthand*
keywords (``k=10`` for ``models=("k=10",)``, folded in by `resolve_params`, the one
place shorthands are read) and expose a `Knob` (the number that controls protection).
`check_signature` verifies, at import time, that a function's signature is exactly the
declared parameters.
"""
from __future__ import annotations

import inspect
import math
import re
from dataclasses import dataclass
from typing import Any, Callable, Iterable

from sdceval.core.errors import SdcevalError, plain, suggest

_TYPES = {int: "int", float: "float", str: "str", bool: "bool"}
PROTECTIONS = ("increasing", "decreasing")
SCALES = ("linear", "log")

class RegistrationError(TypeError):
    """A method, measure or parameter declaration that contradicts itself (raised at
    import time: a programming error, not bad user input)."""


class ParamType:
    """A parameter type beyond int, float, str and bool: a value with structure (a list
    of privacy models, a suppression limit given as a fraction or a count), declared
    once and parsed in one place, as scikit-learn declares a parameter that accepts
    several forms.

    Subclasses set ``name`` (shown by ``sdceval list``) and implement `parse`.  They may
    also accept *shorthands* (other keyword names whose values they absorb, e.g.
    ``k=10`` for ``models=("k=10",)``: `shorthand_names`, `absorb`) and expose a
    *knob* inside the value (`knob`: the one number that controls protection, e.g. a
    privacy model's threshold, which bisection and the trade-off tune).
    """

    name: str = "value"

    def parse(self, raw, where: str):
        """``raw`` (text from the command line or a Python value) as the canonical value
        (hashable, comparable, printable); a `SdcevalError` naming ``where`` otherwise."""
        raise NotImplementedError

    def shorthand_names(self) -> tuple[str, ...]:
        """Keyword names this type absorbs into its parameter (none by default)."""
        return ()

    def absorb(self, value, shorthand: dict, owner: str, default):
        """The parameter's raw value given the shorthand keywords found (only called when
        some were given); ``value`` is the parameter's own raw value or None."""
        return value

    def shorthand_param(self, name: str) -> "Param | None":
        """The declaration (type, bounds, choices) of a shorthand keyword, for listings
        and for checking one value at the command line."""
        return None

    def knob(self, value) -> "Knob | None":
        """The protection knob inside ``value``, or None."""
        return None


class ColumnNames(ParamType):
    """Column names, as a list (Python) or as text separated by ``,`` or ``+`` (``+``
    inside a comma-separated measure list of the command line: ``--risk-measure
    reidentification:knows=age+zip``); canonical form a tuple, duplicates dropped,
    ``()`` for none given (the ``knows`` of the risks, the ``visit`` order of
    `sdceval.methods.cart_synthesis`)."""

    name = "column names"

    def parse(self, raw, where: str) -> tuple[str, ...]:
        if raw is None:
            return ()
        if isinstance(raw, str):
            items = re.split(r"[,+]", raw)
        elif isinstance(raw, (list, tuple)) or hasattr(raw, "tolist"):
            # a list, a tuple, a numpy array or a pandas Index
            items = [str(c) for c in (raw.tolist() if hasattr(raw, "tolist") else raw)]
        else:
            raise SdcevalError(f"{where} must be column names, as a list or as text such "
                               f"as 'age,zip' (or 'age+zip' in a measure list), got "
                               f"{raw!r}")
        return tuple(dict.fromkeys(c.strip() for c in items if c.strip()))


@dataclass(frozen=True)
class Knob:
    """The one number that controls a method's protection: a plain `Param` of the
    method, or a component of a structured parameter (a privacy model's threshold
    inside ``models``).  ``param`` gives its type, bounds, grid, scale and protection
    direction; `set` returns the method's parameters with the knob at a value.
    Attribute reads fall through to ``param`` (``knob.name``, ``knob.protection``)."""

    param: "Param"
    #: the method parameter that carries the knob (``"k"``, or ``"models"``)
    carrier: str
    setter: Callable[[dict, Any], dict] | None = None

    def set(self, params: dict, value) -> dict:
        if self.setter is None:
            return {**params, self.param.name: value}
        return self.setter(dict(params), value)

    def __getattr__(self, attr):
        if attr.startswith("__"):
            raise AttributeError(attr)
        return getattr(self.param, attr)


@dataclass(frozen=True)
class Param:
    """A typed, bounded parameter.

    ``low``/``high`` may be numbers or ``"n"`` (the number of records).  ``protection``
    says how protection moves when the value increases (``"increasing"``,
    ``"decreasing"``) or is ``None`` for a parameter that is not a privacy knob; the
    first parameter with a direction is the one bisection tunes.  ``scale="log"`` makes
    bisection search on a log scale (noise magnitudes spanning decades).  A default of
    ``None`` means "not given"; any other default must satisfy the Param's own checks.
    """

    name: str
    type: type
    default: Any = None
    low: Any = None
    high: Any = None
    low_inclusive: bool = True
    high_inclusive: bool = True
    choices: tuple = ()
    unit: str = ""
    protection: str | None = None
    grid: tuple = ()
    scale: str = "linear"
    description: str = ""
    #: conditions ``(("model", "k"),)`` under which this is the tuned parameter
    when: tuple = ()
    #: a knob that acts through a step function: ``step(value, n, params) -> (lo, hi)``,
    #: the half-open interval of values that give the same release as ``value`` on
    #: ``n`` records with the method's other ``params`` (rank swapping's p acts through
    #: the window floor(p·n)); bisection stops once two adjacent steps straddle its
    #: target (`step_of`)
    step: Callable | None = None
    #: the value at which the knob gives no protection at all (k-anonymity's k = 1, the
    #: data published as they are): never a match for a protective target
    unprotected: Any = None

    def __post_init__(self):
        where = f"Param {self.name!r}"
        if self.type not in _TYPES and not isinstance(self.type, ParamType):
            raise RegistrationError(f"{where}: type must be one of int, float, str, bool "
                                    "or a ParamType")
        if self.protection not in (None,) + PROTECTIONS:
            raise RegistrationError(f"{where}: protection must be None or one of "
                                    f"{', '.join(PROTECTIONS)}, got {self.protection!r}")
        if self.scale not in SCALES:
            raise RegistrationError(f"{where}: scale must be one of {', '.join(SCALES)}")
        if self.default is not None:
            try:
                self.parse(self.default)
            except SdcevalError as e:
                raise RegistrationError(f"{where}: default {self.default!r} fails its own "
                                        f"checks ({e})") from None

    def bounds(self, n: int | None = None) -> tuple[float | None, float | None]:
        def res(b):
            if b == "n":
                return n
            return b
        return res(self.low), res(self.high)

    def describe_bounds(self) -> str:
        if self.choices:
            return "{" + ", ".join(map(str, self.choices)) + "}"
        if self.low is None and self.high is None:
            return ""
        lo = "-inf" if self.low is None else str(self.low)
        hi = "inf" if self.high is None else str(self.high)
        return (("[" if self.low_inclusive else "(") + f"{lo}, {hi}" +
                ("]" if self.high_inclusive else ")"))

    def parse(self, raw, owner: str = "", n: int | None = None):
        """Coerce ``raw`` (a string from the command line or a Python value) and check it."""
        where = f"parameter {self.name!r}" + (f" of {owner}" if owner else "")
        if isinstance(self.type, ParamType):
            return self.type.parse(raw, where)
        import numpy as np  # here, so that declaring parameters stays light (the CLI)
        value = raw
        try:
            if self.type is bool:
                if isinstance(raw, str):
                    if raw.lower() not in ("true", "false", "1", "0", "yes", "no"):
                        raise ValueError
                    value = raw.lower() in ("true", "1", "yes")
                elif isinstance(raw, (bool, np.bool_)) or raw in (0, 1):
                    value = bool(raw)
                else:
                    raise ValueError
            elif self.type is int:
                if isinstance(raw, (bool, np.bool_)):
                    raise ValueError
                f = float(raw)
                if not f.is_integer():
                    raise ValueError
                value = int(f)
            elif self.type is float:
                if isinstance(raw, (bool, np.bool_)):
                    raise ValueError
                value = float(raw)
                if not math.isfinite(value):
                    raise ValueError
            else:
                value = str(raw)
        except (TypeError, ValueError, OverflowError):
            raise SdcevalError(f"{where} must be of type {self.type_name}, "
                               f"got {plain(raw)!r}") from None
        if self.choices and value not in self.choices:
            raise SdcevalError(f"{where} must be one of {', '.join(map(str, self.choices))}, "
                               f"got {value!r}.{suggest(str(value), map(str, self.choices))}")
        lo, hi = self.bounds(n)
        if lo is not None and (value < lo or (value == lo and not self.low_inclusive)):
            raise SdcevalError(f"{where} must be {'>=' if self.low_inclusive else '>'} {lo}"
                               f"{' (number of records)' if self.low == 'n' else ''}, got {value}")
        if hi is not None and (value > hi or (value == hi and not self.high_inclusive)):
            raise SdcevalError(f"{where} must be {'<=' if self.high_inclusive else '<'} {hi}"
                               f"{' (the number of records)' if self.high == 'n' else ''}, "
                               f"got {value}")
        return value

    def step_of(self, value, n: int, params: dict | None = None) -> tuple | None:
        """The step of the knob that holds ``value``: ``(lo, hi)``, the half-open
        interval of values giving the same release (an integer: ``(v, v + 1)``; a
        declared `step`), or None for a knob that moves continuously."""
        if self.step is not None:
            return tuple(self.step(value, n, dict(params or {})))
        if self.type is int:
            return (int(value), int(value) + 1)
        return None

    @property
    def type_name(self) -> str:
        return self.type.name if isinstance(self.type, ParamType) else _TYPES[self.type]

    def to_dict(self) -> dict:
        return {"name": self.name, "type": self.type_name,
                "default": self.default, "bounds": self.describe_bounds(), "unit": self.unit,
                "protection": self.protection, "grid": list(self.grid), "scale": self.scale,
                "description": self.description,
                **({"when": dict(self.when)} if self.when else {}),
                **({"stepped": True} if self.step is not None else {}),
                **({"unprotected": self.unprotected} if self.unprotected is not None
                   else {})}


def _absorb_shorthands(owner: str, params: tuple[Param, ...], given: dict) -> dict:
    """``given`` with every shorthand keyword folded into the structured parameter that
    accepts it (`ParamType.absorb`); the one place shorthands are read."""
    for p in params:
        if not isinstance(p.type, ParamType):
            continue
        names = p.type.shorthand_names()
        found = {k: given.pop(k) for k in list(given) if k in names and k != p.name}
        if found:
            given[p.name] = p.type.absorb(given.get(p.name), found, owner, p.default)
    return given


def shorthand_names(params: Iterable[Param]) -> tuple[str, ...]:
    """Every shorthand keyword the parameters accept (`ParamType.shorthand_names`)."""
    out: list[str] = []
    for p in params:
        if isinstance(p.type, ParamType):
            out += [k for k in p.type.shorthand_names() if k not in out]
    return tuple(out)


def resolve_params(owner: str, params: tuple[Param, ...], given: dict | None, n: int | None) -> dict:
    given = _absorb_shorthands(owner, params, dict(given or {}))
    by_name = {p.name: p for p in params}
    for k in given:
        if k not in by_name:
            raise SdcevalError(
                f"{owner} has no parameter {k!r}.{suggest(k, by_name)} "
                f"Parameters: {', '.join(by_name) or '(none)'}")
    out = {}
    for p in params:
        # None means "not given" for a parameter whose default is None
        if p.name in given and not (given[p.name] is None and p.default is None):
            out[p.name] = p.parse(given[p.name], owner, n)
        else:
            out[p.name] = p.default if p.default is None else p.parse(p.default, owner, n)
    return out


# -- signatures agree with the declared parameters ----------------------------------------
_LEADING = {"method": ("dataset",), "measure": ("dataset", "release")}


def _same_default(a, b) -> bool:
    if a is b:
        return True
    if isinstance(a, bool) != isinstance(b, bool):  # True == 1, but not as a default
        return False
    try:
        return bool(a == b)
    except (TypeError, ValueError):  # a default that cannot be compared (an array)
        return False


def check_signature(what: str, name: str, func: Callable, params: Iterable[Param]) -> None:
    """Raise `RegistrationError` unless ``func``'s signature is ``(dataset, *, <params>,
    seed)`` for a method or ``(dataset, release, *, <params>)`` for a measure, with every
    signature default equal to the Param's (the registry always passes every value; a
    differing default would only mislead a reader)."""
    where = f"register_{what}({name!r})"
    params = tuple(params)
    try:
        sig = inspect.signature(func)
    except (TypeError, ValueError):
        raise RegistrationError(f"{where}: cannot read the signature of {func!r}") from None
    shape = f"{getattr(func, '__name__', func)}{sig}"
    leading = _LEADING[what]
    ps = list(sig.parameters.values())
    head, rest = ps[:len(leading)], ps[len(leading):]
    positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    if len(head) < len(leading) or any(p.kind not in positional for p in head):
        raise RegistrationError(f"{where}: {shape} must take ({', '.join(leading)}, *, "
                                "<parameters>)")
    var = [p for p in rest if p.kind in (inspect.Parameter.VAR_POSITIONAL,
                                         inspect.Parameter.VAR_KEYWORD)]
    if var:
        raise RegistrationError(f"{where}: {shape} takes {var[0]}; name every parameter so "
                                "that it can be checked against params")
    only = [p.name for p in rest if p.kind is inspect.Parameter.POSITIONAL_ONLY]
    if only:
        raise RegistrationError(f"{where}: {shape}: parameters are passed by keyword, so "
                                f"{only[0]!r} cannot be positional-only")
    declared = {p.name: p for p in params}
    if len(declared) != len(params):
        raise RegistrationError(f"{where}: a parameter is declared twice")
    if what == "method" and "seed" in declared:
        raise RegistrationError(f"{where}: 'seed' is passed to every method; do not declare "
                                "it as a Param")
    expected = list(declared) + (["seed"] if what == "method" else [])
    names = [p.name for p in rest]
    missing = [k for k in expected if k not in names]
    if missing:
        raise RegistrationError(
            f"{where}: {shape} lacks keyword parameter(s) {', '.join(map(repr, missing))} "
            "declared in params" + (" (every method takes seed)" if "seed" in missing else ""))
    extra = [k for k in names if k not in expected]
    if extra:
        raise RegistrationError(
            f"{where}: {shape} has keyword parameter(s) {', '.join(map(repr, extra))} not "
            "declared in params; declare them with Param(...) or remove them")
    for p in rest:
        if p.name in declared and p.default is not inspect.Parameter.empty \
                and not _same_default(p.default, declared[p.name].default):
            raise RegistrationError(
                f"{where}: parameter {p.name!r} has default {p.default!r} in the signature "
                f"of {getattr(func, '__name__', func)} but Param default "
                f"{declared[p.name].default!r}; defaults live in the registry: drop the "
                "signature default or make them equal")


def param_named(params, name: str, owner: str) -> "Param":
    """The parameter ``name`` of ``params``, or a `SdcevalError` naming ``owner`` (e.g.
    "method 'mdav'") and the closest name."""
    for p in params:
        if p.name == name:
            return p
    raise SdcevalError(f"{owner} has no parameter {name!r}."
                       f"{suggest(name, [p.name for p in params])}")


def parse_assignments(items: Iterable[str], what: str = "--param") -> dict:
    """``["k=5", "model=l"]`` -> ``{"k": "5", "model": "l"}`` (typed later by `Param`)."""
    out = {}
    for item in items or ():
        if "=" not in item:
            raise SdcevalError(f"{what} {item!r} must look like name=value (e.g. k=5)")
        k, v = item.split("=", 1)
        out[k.strip()] = v.strip()
    return out
