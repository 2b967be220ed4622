"""Registries of methods and measures with typed, bounded, documented parameters.

The CLI, experiment files and bisection read these specifications; nothing elsewhere is
special-cased by name.  A method registers with::

    @register_method("mdav", family="perturbative", random=False, params=[
        Param("k", int, default=5, low=2, high="n", protection="increasing", ...)],
        description="...")
    def mdav(dataset, *, k=5, seed): ...

and is called as ``get_method("mdav").apply(dataset, {"k": 5}, seed=0)``.  A measure::

    @register_measure("p_loss", category="risk", direction="lower_is_better",
                      kinds=("generalized", "bucketized"), needs=("sensitive",), ...)
    def p_loss(dataset, release): ...

One source for parameters (issue 6 §4): defaults, types, bounds and choices live in the
`Param` declarations only.  `Param.parse` checks every value before a method or measure
runs, so their bodies do not re-check them (checks that depend on the data, such as
``k <= n``, are bounds too: ``high="n"``).  Registration fails at import time, with a
`RegistrationError` naming the function, if its signature disagrees with the declared
parameters (a missing or undeclared keyword, a default that differs from the Param's),
if a Param's own default is outside its bounds, or if a vocabulary word is unknown.
The function a decorator returns goes through the registry too, so calling
``p_loss(ds, rel)`` directly gets the same checks as ``sdceval.evaluate``.

Directions, one vocabulary:

* ``Param.protection`` — how protection moves when the parameter *increases*:
  ``"increasing"`` (k, γ, p: a larger value protects more) or ``"decreasing"`` (t, δ:
  a smaller value protects more); ``None`` for a parameter that is not a privacy knob.
* ``MeasureSpec.direction`` (and `Measurement.direction`) — how to read a value:
  ``"lower_is_better"`` (a lower value means less risk, or less loss: propensity,
  p_loss, t-closeness) or ``"higher_is_better"`` (a higher value means less risk or less
  loss: the linkage distance, achieved k and ℓ).  ``larger_is_worse`` is kept as a
  read-only alias (``direction == "lower_is_better"``).

Release kinds: a measure declares the kinds it accepts (``kinds=``) and what it needs
(``needs=``: release structures and data-set roles, `sdceval.core.release.NEEDS`);
`MeasureSpec.evaluate` checks both once, with an error naming the measure, the kind and
the accepted kinds, before the measure runs.  A method's family fixes the kind of the
release it returns (`FAMILY_KIND`); `MethodSpec.apply` checks the release against the
data set and that it publishes nothing outside the publication rule
(`sdceval.core.release.publishable_columns`).

The registries live here, in the core; the modules that fill them (methods, measures)
sit above, and `sdceval.catalog` imports them all, so look-ups go through the catalog.
"""
from __future__ import annotations

import functools
import inspect
import math
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

import numpy as np

from sdceval.core import threads
from sdceval.core.errors import SdcevalError, plain, suggest, unknown
from sdceval.core.measurement import DIRECTIONS, Measurement
from sdceval.core.release import KINDS, NEEDS, Release, check_published
from sdceval.core.rng import check_random_state

_TYPES = {int: "int", float: "float", str: "str", bool: "bool"}
PROTECTIONS = ("increasing", "decreasing")
SCALES = ("linear", "log")
CATEGORIES = ("risk", "utility", "information_loss", "privacy")
#: kind of the release a method of each family returns
FAMILY_KIND = {"perturbative": "perturbative", "generalization": "generalized",
               "bucketization": "bucketized"}


class RegistrationError(TypeError):
    """A method, measure or parameter declaration that contradicts itself (raised at
    import time: a programming error, not bad user input)."""


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

    def __post_init__(self):
        where = f"Param {self.name!r}"
        if self.type not in _TYPES:
            raise RegistrationError(f"{where}: type must be one of int, float, str, bool")
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
            raise SdcevalError(f"{where} must be of type {_TYPES.get(self.type, self.type)}, "
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


# -- specifications -----------------------------------------------------------------------

def param_named(params, name: str, owner: str) -> "Param":
    """The parameter ``name`` of ``params``, or a `SdcevalError` naming ``owner`` (e.g.
    "method 'mdav'") and the closest name."""
    for p in params:
        if p.name == name:
            return p
    raise SdcevalError(f"{owner} has no parameter {name!r}."
                       f"{suggest(name, [p.name for p in params])}")

@dataclass(frozen=True)
class MethodSpec:
    """A registered anonymization method."""

    name: str
    func: Callable[..., Release]
    params: tuple[Param, ...]
    description: str
    family: str = "perturbative"
    random: bool = False

    def __post_init__(self):
        if self.family not in FAMILY_KIND:
            raise RegistrationError(f"method {self.name!r}: family must be one of "
                                    f"{', '.join(FAMILY_KIND)}, got {self.family!r}")

    @property
    def kind(self) -> str:
        """The kind of release the method returns (`FAMILY_KIND`)."""
        return FAMILY_KIND[self.family]

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
        return param_named(self.params, name, f"method {self.name!r}")

    def resolve(self, params: dict | None, n: int | None = None) -> dict:
        return _resolve(f"method {self.name!r}", self.params, params, n)

    def apply(self, dataset, params: dict | None = None, seed=None) -> Release:
        """Run the method: ``Release = method(dataset, **params, seed=Generator)``.

        The release is checked against the data set, must be of the family's kind and
        may publish no data-set column outside `publishable_columns` (a method cannot
        leak a column it does not protect); ``dropped`` lists every other column.
        """
        resolved = self.resolve(params, dataset.n)
        rng = check_random_state(seed)
        with threads.limited():
            release = self.func(dataset, seed=rng, **resolved)
        if not isinstance(release, Release):
            raise TypeError(f"method {self.name!r} returned {type(release).__name__}, "
                            "not a Release")
        if release.kind != self.kind:
            raise TypeError(f"method {self.name!r} (family {self.family!r}) returned a "
                            f"{release.kind} release; expected {self.kind}")
        release.check(dataset)
        # the constructors check this too; a Release built directly must not leak either
        check_published(dataset, release.kind, release.data.columns, f"method {self.name!r}")
        dropped = tuple(c for c in dataset.frame.columns if c not in release.data.columns)
        return release.with_provenance(
            self.name, {**resolved, **({"seed": seed} if isinstance(seed, (int, type(None)))
                                       else {})}, dropped=dropped)


@dataclass(frozen=True)
class MeasureSpec:
    """A registered measure.  ``category`` is ``risk``, ``utility`` (a utility *loss*),
    ``information_loss`` or ``privacy`` (a check of a privacy model); ``direction`` is
    ``lower_is_better`` or ``higher_is_better`` (module docstring); ``kinds`` the
    release kinds it accepts; ``needs`` what it needs of the release and the data set
    (`sdceval.core.release.NEEDS`)."""

    name: str
    func: Callable[..., Measurement]
    params: tuple[Param, ...]
    description: str
    category: str
    direction: str = "lower_is_better"
    kinds: tuple[str, ...] = KINDS
    needs: tuple[str, ...] = field(default_factory=tuple)

    def __post_init__(self):
        where = f"measure {self.name!r}"
        if self.category not in CATEGORIES:
            raise RegistrationError(f"{where}: category must be one of "
                                    f"{', '.join(CATEGORIES)}, got {self.category!r}")
        if self.direction not in DIRECTIONS:
            raise RegistrationError(f"{where}: direction must be one of "
                                    f"{', '.join(DIRECTIONS)}, got {self.direction!r}")
        object.__setattr__(self, "kinds", tuple(self.kinds))
        object.__setattr__(self, "needs", tuple(self.needs))
        bad = [k for k in self.kinds if k not in KINDS]
        if bad or not self.kinds:
            raise RegistrationError(f"{where}: unknown release kind {bad[0] if bad else None!r}"
                                    f" (kinds: {', '.join(KINDS)})")
        bad = [k for k in self.needs if k not in NEEDS]
        if bad:
            raise RegistrationError(f"{where}: unknown need {bad[0]!r} (needs: "
                                    f"{', '.join(NEEDS)})")

    @property
    def larger_is_worse(self) -> bool:
        """Alias of ``direction == "lower_is_better"`` (kept for existing callers)."""
        return self.direction == "lower_is_better"

    def resolve(self, params: dict | None) -> dict:
        return _resolve(f"measure {self.name!r}", self.params, params, None)

    def check_release(self, dataset, release) -> None:
        """The release is of a kind the measure accepts, valid for ``dataset``, and has
        what the measure needs (one check, here, for every measure)."""
        if not isinstance(release, Release):
            raise SdcevalError(f"measure {self.name!r} evaluates a Release, got "
                               f"{type(release).__name__}")
        if release.kind not in self.kinds:
            makers = [m.name for m in METHODS.all() if m.kind in self.kinds]
            if "external" in self.kinds:
                makers.append("a table read with --release")
            hint = f" (made by {', '.join(makers)})" if makers else ""
            article = "an" if release.kind[0] in "aeiou" else "a"
            raise SdcevalError(
                f"measure {self.name!r} does not apply to {article} {release.kind} release "
                f"(of {release.method!r}); it accepts {', '.join(self.kinds)} releases{hint}")
        release.check(dataset, needs=self.needs, who=f"measure {self.name!r}")

    def evaluate(self, dataset, release: Release, params: dict | None = None) -> Measurement:
        resolved = self.resolve(params)
        self.check_release(dataset, release)
        with threads.limited():
            m = self.func(dataset, release, **resolved)
        if not isinstance(m, Measurement):
            raise TypeError(f"measure {self.name!r} returned {type(m).__name__}, not a "
                            "Measurement")
        if m.per_record is not None and np.shape(m.per_record) != (dataset.n,):
            raise TypeError(f"measure {self.name!r} returned per_record of shape "
                            f"{np.shape(m.per_record)}; expected ({dataset.n},)")
        m.measure = self.name
        m.direction = self.direction
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
    """Register ``func(dataset, *, <params>, seed)`` as method ``name``.  The returned
    function runs through `MethodSpec.apply` (parameters parsed, release checked)."""
    def deco(func):
        if name in METHODS:
            raise RegistrationError(f"method {name!r} registered twice")
        ps = tuple(params)
        check_signature("method", name, func, ps)
        spec = MethodSpec(name, func, ps, description, family, random)
        METHODS[name] = spec

        @functools.wraps(func)
        def call(dataset, seed=None, **kwargs):
            return spec.apply(dataset, kwargs, seed=seed)
        return call
    return deco


def register_measure(name: str, *, params: Iterable[Param] = (), description: str,
                     category: str, direction: str, kinds: Iterable[str],
                     needs: Iterable[str] = ()):
    """Register ``func(dataset, release, *, <params>)`` as measure ``name``.  The
    returned function runs through `MeasureSpec.evaluate` (parameters parsed, release
    kind and needs checked)."""
    def deco(func):
        if name in MEASURES:
            raise RegistrationError(f"measure {name!r} registered twice")
        ps = tuple(params)
        check_signature("measure", name, func, ps)
        spec = MeasureSpec(name, func, ps, description, category, direction,
                           tuple(kinds), tuple(needs))
        MEASURES[name] = spec
        sig = inspect.signature(func)

        @functools.wraps(func)
        def call(dataset, release, *args, **kwargs):
            if args:  # parameters given by position, as the signature allows
                bound = sig.bind_partial(dataset, release, *args)
                kwargs = {**dict(list(bound.arguments.items())[2:]), **kwargs}
            return spec.evaluate(dataset, release, kwargs)
        return call
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
