"""Registries of methods and measures with typed, bounded, documented parameters.

The CLI, experiment files and bisection read these specifications; nothing elsewhere is
special-cased by name.  A method registers with::

    @register_method("mdav", family="perturbative", random=False, params=[
        Param("k", int, default=5, low=2, high="n", protection="increasing", ...)],
        description="...")
    def mdav(dataset, *, k, seed): ...

and is called as ``get_method("mdav").apply(dataset, {"k": 5}, seed=0)``.
The registries live here, in the core; the modules that fill them (methods, measures)
sit above, and `sdceval.catalog` imports them all, so look-ups go through the catalog.
Measures likewise take ``(dataset, release, **params)`` and return a `Measurement`.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

from sdceval.core import threads
from sdceval.core.errors import SdcevalError, suggest, unknown
from sdceval.core.measurement import Measurement
from sdceval.core.rng import check_random_state
from sdceval.core.release import Release

_TYPES = {int: "int", float: "float", str: "str", bool: "bool"}


@dataclass(frozen=True)
class Param:
    """A typed, bounded parameter.

    ``low``/``high`` may be numbers or ``"n"`` (the number of records).  ``protection``
    says in which direction protection grows with the value (``"increasing"``,
    ``"decreasing"``) or ``None`` for a parameter that is not a privacy knob; the first
    parameter with a direction is the one bisection tunes.  ``scale="log"`` makes
    bisection search on a log scale (noise magnitudes spanning decades).
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
        value = raw
        try:
            if self.type is bool:
                if isinstance(raw, str):
                    if raw.lower() not in ("true", "false", "1", "0", "yes", "no"):
                        raise ValueError
                    value = raw.lower() in ("true", "1", "yes")
                else:
                    value = bool(raw)
            elif self.type is int:
                if isinstance(raw, bool):
                    raise ValueError
                f = float(raw)
                if not f.is_integer():
                    raise ValueError
                value = int(f)
            elif self.type is float:
                if isinstance(raw, bool):
                    raise ValueError
                value = float(raw)
                if not math.isfinite(value):
                    raise ValueError
            else:
                value = str(raw)
        except (TypeError, ValueError):
            raise SdcevalError(f"{where} must be of type {_TYPES.get(self.type, self.type)}, "
                               f"got {raw!r}") from None
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

    def to_dict(self) -> dict:
        return {"name": self.name, "type": _TYPES.get(self.type, str(self.type)),
                "default": self.default, "bounds": self.describe_bounds(), "unit": self.unit,
                "protection": self.protection, "grid": list(self.grid), "scale": self.scale,
                "description": self.description,
                **({"when": dict(self.when)} if self.when else {})}


def _resolve(owner: str, params: tuple[Param, ...], given: dict | None, n: int | None) -> dict:
    given = dict(given or {})
    by_name = {p.name: p for p in params}
    for k in given:
        if k not in by_name:
            raise SdcevalError(
                f"{owner} has no parameter {k!r}.{suggest(k, by_name)} "
                f"Parameters: {', '.join(by_name) or '(none)'}")
    out = {}
    for p in params:
        if p.name in given:
            out[p.name] = p.parse(given[p.name], owner, n)
        else:
            out[p.name] = p.default if p.default is None else p.parse(p.default, owner, n)
    return out


@dataclass(frozen=True)
class MethodSpec:
    """A registered anonymization method."""

    name: str
    func: Callable[..., Release]
    params: tuple[Param, ...]
    description: str
    family: str = "perturbative"
    random: bool = False

    @property
    def tunable(self) -> Param:
        """The parameter that controls protection under the default settings."""
        return self.tunable_for({})

    def tunable_for(self, params: dict | None) -> Param:
        """The parameter bisection searches, given the other parameters (e.g. Mondrian
        tunes ``l`` when ``model="l"``): the first with a protection direction whose
        ``when`` conditions hold."""
        resolved = {p.name: p.default for p in self.params}
        resolved.update(params or {})
        for p in self.params:
            if p.protection and all(str(resolved.get(k)) == str(v) for k, v in p.when):
                return p
        raise SdcevalError(f"method {self.name!r} has no protection parameter to tune "
                           f"with {params or 'its defaults'}")

    def param(self, name: str) -> Param:
        for p in self.params:
            if p.name == name:
                return p
        raise SdcevalError(f"method {self.name!r} has no parameter {name!r}."
                           f"{suggest(name, [p.name for p in self.params])}")

    def resolve(self, params: dict | None, n: int | None = None) -> dict:
        return _resolve(f"method {self.name!r}", self.params, params, n)

    def apply(self, dataset, params: dict | None = None, seed=None) -> Release:
        """Run the method: ``Release = method(dataset, **params, seed=Generator)``."""
        resolved = self.resolve(params, dataset.n)
        rng = check_random_state(seed)
        with threads.limited():
            release = self.func(dataset, seed=rng, **resolved)
        release.method = self.name
        release.params = {**resolved,
                          **({"seed": seed} if isinstance(seed, (int, type(None))) else {})}
        return release


@dataclass(frozen=True)
class MeasureSpec:
    """A registered measure.  ``category`` is ``risk``, ``utility`` (a utility *loss*),
    ``information_loss`` or ``privacy`` (a check of a privacy model)."""

    name: str
    func: Callable[..., Measurement]
    params: tuple[Param, ...]
    description: str
    category: str
    larger_is_worse: bool = True
    needs: tuple[str, ...] = field(default_factory=tuple)

    def resolve(self, params: dict | None) -> dict:
        return _resolve(f"measure {self.name!r}", self.params, params, None)

    def evaluate(self, dataset, release: Release, params: dict | None = None) -> Measurement:
        resolved = self.resolve(params)
        with threads.limited():
            m = self.func(dataset, release, **resolved)
        m.measure = self.name
        return m


class Registry(dict):
    def __init__(self, what: str):
        super().__init__()
        self.what = what

    def get_spec(self, name: str):
        if name not in self:
            raise unknown(self.what, name, self.keys())
        return self[name]

    def all(self) -> list:
        return [self[k] for k in sorted(self)]


METHODS: Registry = Registry("method")
MEASURES: Registry = Registry("measure")


def register_method(name: str, *, params: Iterable[Param], description: str,
                    family: str = "perturbative", random: bool = False):
    def deco(func):
        if name in METHODS:
            raise RuntimeError(f"method {name!r} registered twice")
        METHODS[name] = MethodSpec(name, func, tuple(params), description, family, random)
        return func
    return deco


def register_measure(name: str, *, params: Iterable[Param] = (), description: str,
                     category: str, larger_is_worse: bool = True, needs: tuple = ()):
    def deco(func):
        if name in MEASURES:
            raise RuntimeError(f"measure {name!r} registered twice")
        MEASURES[name] = MeasureSpec(name, func, tuple(params), description, category,
                                     larger_is_worse, tuple(needs))
        return func
    return deco


def parse_assignments(items: Iterable[str], what: str = "--param") -> dict:
    """``["k=5", "model=l"]`` -> ``{"k": "5", "model": "l"}`` (typed later by `Param`)."""
    out = {}
    for item in items or ():
        if "=" not in item:
            raise SdcevalError(f"{what} {item!r} must look like name=value (e.g. k=5)")
        k, v = item.split("=", 1)
        out[k.strip()] = v.strip()
    return out
