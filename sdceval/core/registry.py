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
`Param` declarations only (`sdceval.core.params`, re-exported here).  `Param.parse` checks every value before a method or measure
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
the accepted kinds, before the measure runs; `MeasureSpec.check_data` checks a kind and
the data set's roles (and a ``data_check`` that depends on the parameters) before any
release exists, as `compare` does before its first evaluation.  A method's family
fixes the kind of the release it returns (`FAMILY_KIND`); `MethodSpec.apply` checks the
release against the data set and that it publishes nothing outside the publication
rule (`sdceval.core.release.publishable_columns`).

The registries live here, in the core; the modules that fill them (methods, measures)
sit above, and `sdceval.catalog` imports them all, so look-ups go through the catalog.
"""
from __future__ import annotations

import functools
import inspect
import sys
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping

import numpy as np

from sdceval.core import threads
from sdceval.core.errors import SdcevalError, unknown
from sdceval.core.params import (PROTECTIONS, SCALES, Knob, Param, ParamType,  # noqa: F401
                                 RegistrationError, check_signature, param_named,
                                 parse_assignments, resolve_params, shorthand_names)
from sdceval.core.measurement import AGGREGATES, DIRECTIONS, Measurement
from sdceval.core.partial import PartialForm
from sdceval.core.release import ALIGNED_KINDS, KINDS, NEEDS, Release, check_published, require
from sdceval.core.rng import check_random_state

CATEGORIES = ("risk", "utility", "information_loss", "privacy")
#: the `NEEDS` that are structures of a release (checked once the release exists)
RELEASE_NEEDS = ("classes", "cells")
#: kind of the release a method of each family returns
FAMILY_KIND = {"perturbative": "perturbative", "generalization": "generalized",
               "bucketization": "bucketized", "strategy": "composite",
               "synthetic": "synthetic", "dp": "synthetic"}


# -- specifications -----------------------------------------------------------------------

@dataclass(frozen=True)
class MethodSpec:
    """A registered anonymization method."""

    name: str
    func: Callable[..., Release]
    params: tuple[Param, ...]
    description: str
    family: str = "perturbative"
    random: bool = False
    #: the display name (`sdceval.core.glossary`): "MDAV (microaggregation)"
    label: str = ""
    #: ``f(dataset) -> str``: why the method is too costly to be a *default* candidate
    #: of a comparison on ``dataset`` ("" when it is not; None: never), e.g. a lattice
    #: too large to search at every evaluation; named explicitly, it still runs
    cost_check: Any = None
    #: whether the method is a default candidate of a comparison on its own (False:
    #: a step of strategies, e.g. top/bottom coding, which changes the tails only and
    #: is named explicitly or composed; its strategies are candidates as any other)
    alone: bool = True
    #: parameters every evaluation of a comparison, an experiment or the contract suite
    #: gives the method so that it is exactly reproducible from the seed tree, where the
    #: method's default for a release to publish is not (``dp_histogram``: ``noise =
    #: "seeded"``, as OpenDP's own noise cannot be seeded); `experiment_params` merges
    #: them under the user's
    experiment_params: Mapping = field(default_factory=dict)

    def too_costly(self, dataset) -> str:
        """Why the method is left out of the default candidates on ``dataset`` ("")."""
        return self.cost_check(dataset) if self.cost_check is not None else ""

    def __post_init__(self):
        if self.family not in FAMILY_KIND:
            raise RegistrationError(f"method {self.name!r}: family must be one of "
                                    f"{', '.join(FAMILY_KIND)}, got {self.family!r}")

    @property
    def kind(self) -> str:
        """The kind of release the method returns (`FAMILY_KIND`)."""
        return FAMILY_KIND[self.family]

    @property
    def tunable(self) -> Knob:
        """The knob that controls protection under the default settings."""
        return self.tunable_for({})

    def tunable_for(self, params: dict | None) -> Knob:
        """The knob bisection and the trade-off tune, given the method's parameters: the
        first parameter with a protection direction whose ``when`` conditions hold, or
        the knob inside a structured parameter (`ParamType.knob`: the threshold of the
        first privacy model in ``models``, read from the model's own declaration, so a
        model registered outside sdceval is tuned with no change here)."""
        # a release's provenance carries the seed beside the parameters
        resolved = self.resolve({k: v for k, v in (params or {}).items() if k != "seed"})
        for p in self.params:
            if isinstance(p.type, ParamType):
                knob = p.type.knob(resolved.get(p.name))
                if knob is not None:
                    return knob
            elif p.protection and all(str(resolved.get(k)) == str(v) for k, v in p.when):
                return Knob(p, p.name)
        raise SdcevalError(f"method {self.name!r} has no protection parameter to tune "
                           f"with {params or 'its defaults'}")

    def grid_knobs(self, params: dict | None) -> list:
        """Protection parameters searched on a grid beside the knob: none for a method
        (a whole-file strategy has its other steps': `sdceval.methods.strategy`)."""
        return []

    @property
    def shorthands(self) -> tuple[str, ...]:
        """Shorthand keywords the method accepts besides its parameters (``k``,
        ``model``, ``l``, ... for a method that enforces privacy models)."""
        return shorthand_names(self.params)

    def param(self, name: str) -> Param:
        """The parameter ``name``, or the declaration of a shorthand keyword
        (`ParamType.shorthand_param`)."""
        for p in self.params:
            if isinstance(p.type, ParamType) and name in p.type.shorthand_names():
                found = p.type.shorthand_param(name)
                if found is not None:
                    return found
        return param_named(self.params, name, f"method {self.name!r}")

    def resolve(self, params: dict | None, n: int | None = None) -> dict:
        return resolve_params(f"method {self.name!r}", self.params, params, n)

    def experiment(self, params: dict | None) -> dict:
        """``params`` over the method's `experiment_params` (the user's win): what a
        comparison or an experiment runs it with, reproducible from the seed tree."""
        return {**self.experiment_params, **(params or {})}

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
    kinds: tuple[str, ...] = ALIGNED_KINDS
    needs: tuple[str, ...] = field(default_factory=tuple)
    #: the display name (`sdceval.core.glossary`): "re-identification rate"
    label: str = ""
    #: "share of records" for a measure that is one (shown as a percent), else ""
    unit: str = ""
    #: how the measure is computed in parts of a table too large for memory
    #: (`sdceval.core.partial.PartialForm`), or None; `no_partial`: why not, when asked
    partial: Any = None
    no_partial: str = ""
    #: how the value follows from ``per_record`` (a name of
    #: `sdceval.core.measurement.AGGREGATES`, or ``f(resolved params) -> name``, None for
    #: parameters under which the value is no aggregate of them); None for a measure
    #: without per-record values (the contract suite checks the two agree)
    aggregate: Any = None
    #: what the measure needs of the data set under its parameters beyond ``needs``:
    #: ``f(dataset, resolved params)`` raising a `SdcevalError` that names the fix
    #: (ml_utility: a label or a sensitive attribute to predict), or None
    data_check: Any = None
    #: an attack read at every matched release of a comparison, beside the matched risk
    #: (`sdceval.compare.families.default_readings`; SPEC §5, "every attack at the
    #: matched point"); only a risk that is a share of records, higher = riskier
    attack: bool = False

    def __post_init__(self):
        where = f"measure {self.name!r}"
        if self.attack and (self.category != "risk" or self.direction != "lower_is_better"):
            raise RegistrationError(f"{where}: an attack reading must be a risk measure, "
                                    "higher = riskier (direction lower_is_better)")
        if self.partial is not None and not isinstance(self.partial, PartialForm):
            raise RegistrationError(f"{where}: partial must be a PartialForm "
                                    f"(sdceval.core.partial), got {type(self.partial).__name__}")
        if isinstance(self.aggregate, str) and self.aggregate not in AGGREGATES:
            raise RegistrationError(f"{where}: aggregate must be one of "
                                    f"{', '.join(AGGREGATES)} or a function of the "
                                    f"parameters, got {self.aggregate!r}")
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
        return resolve_params(f"measure {self.name!r}", self.params, params, None)

    def aggregate_for(self, params: dict | None = None) -> str | None:
        """The name of the aggregate (`AGGREGATES`) that turns the per-record values
        into the value under ``params``, or None when none is declared."""
        if callable(self.aggregate):
            return self.aggregate(self.resolve(params))
        return self.aggregate

    def check_release(self, dataset, release) -> None:
        """The release is of a kind the measure accepts, valid for ``dataset``, and has
        what the measure needs (one check, here, for every measure)."""
        if not isinstance(release, Release):
            raise SdcevalError(f"measure {self.name!r} evaluates a Release, got "
                               f"{type(release).__name__}")
        self._check_kind(release.kind, release.method)
        release.check(dataset, needs=self.needs, who=f"measure {self.name!r}")

    def _check_kind(self, kind: str, method: str) -> None:
        if kind not in self.kinds:
            makers = [m.name for m in METHODS.all() if m.kind in self.kinds]
            if "external" in self.kinds:
                makers.append("a table read with --release")
            hint = f" (made by {', '.join(makers)})" if makers else ""
            if kind == "synthetic":  # the one reason, said as such (issue 32)
                raise SdcevalError(
                    f"measure {self.name!r} is {NOT_APPLICABLE_SYNTHETIC} "
                    f"({method or 'its method'!r} drew new records, not releases of the "
                    "original's), so a reading that pairs released rows with records "
                    f"has no meaning (never 0); it accepts {', '.join(self.kinds)} "
                    "releases")
            article = "an" if kind[0] in "aeiou" else "a"
            raise SdcevalError(
                f"measure {self.name!r} does not apply to {article} {kind} release "
                f"(of {method!r}); it accepts {', '.join(self.kinds)} releases{hint}")

    def check_data(self, dataset, params: dict | None = None, kind: str | None = None,
                   method: str = "", deferred: tuple = ()) -> None:
        """Whether the measure can be computed on releases of ``kind`` (made by
        ``method``) of ``dataset`` under ``params``, before any release exists: the kind
        is one it accepts, the data set has the roles it needs, and its `data_check`
        passes.  The needs on a release's structures (classes, cells) wait for the
        release (`check_release`), and so do the ``deferred`` ones (``("control",)``:
        a comparison holds the control set out only when it runs)."""
        resolved = self.resolve(params)
        if kind is not None:
            self._check_kind(kind, method)
        require(dataset, [n for n in self.needs if n not in RELEASE_NEEDS
                          and n not in deferred], f"measure {self.name!r}")
        if self.data_check is not None:
            self.data_check(dataset, resolved)

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
    """One registry of named entries (methods, measures, privacy models, lattice
    objectives, property vectors, suppression rules, job kinds): the one mechanism.

    Entries are added with `add` (decorators and class decorators call it), which
    refuses a name registered twice (item assignment stays plain, for tests that
    monkeypatch an entry); a look-up of an unknown name suggests the closest
    (`get_spec`); iteration and `names` keep registration order, `all` sorts by name.
    Every registry is listed in `REGISTRIES` under its plural name, which
    ``sdceval list`` and the contract suite (tests/test_contract.py) read, so an entry
    a user registers later is listed and checked like the built-in ones.
    """

    def __init__(self, what: str, plural: str | None = None):
        super().__init__()
        self.what = what
        self.plural = plural or what + "s"
        self._watchers: list[Callable[[str, Any], None]] = []
        self._unwatchers: list[Callable[[str, Any], None]] = []
        #: the module that defines the registry (the contract suite imports it)
        self.home = sys._getframe(1).f_globals.get("__name__", "")
        if self.plural in REGISTRIES:
            raise RegistrationError(f"a registry of {self.plural} already exists")
        REGISTRIES[self.plural] = self

    def add(self, name: str, entry):
        """Register ``entry`` as ``name``; a `RegistrationError` if the name is taken."""
        if not isinstance(name, str) or not name:
            raise RegistrationError(f"{self.what} name must be non-empty text, got {name!r}")
        if name in self:
            raise RegistrationError(f"{self.what} {name!r} registered twice "
                                    f"(already: {_describe_entry(self[name])})")
        super().__setitem__(name, entry)
        for watcher in self._watchers:
            watcher(name, entry)
        return entry

    def watch(self, callback: Callable[[str, Any], None],
              removed: Callable[[str, Any], None] | None = None) -> None:
        """Call ``callback(name, entry)`` for every entry, now and when one is added
        later, and ``removed(name, entry)`` when one is removed (a registry derived from
        another: one privacy check and one lattice objective per privacy model)."""
        self._watchers.append(callback)
        if removed is not None:
            self._unwatchers.append(removed)
        for name, entry in list(self.items()):
            callback(name, entry)

    def remove(self, name: str) -> None:
        """Drop ``name`` and what was derived from it (tests register throw-away
        entries)."""
        if name not in self:
            return
        entry = self.pop(name)
        for unwatch in self._unwatchers:
            unwatch(name, entry)

    def get_spec(self, name: str):
        if name not in self:
            raise unknown(self.what, name, self.keys())
        return self[name]

    def names(self) -> tuple[str, ...]:
        """Registered names in registration order."""
        return tuple(self)

    def all(self) -> list:
        return [self[k] for k in sorted(self)]


def _describe_entry(entry) -> str:
    func = getattr(entry, "func", None) or getattr(entry, "compute", None) or entry
    mod = getattr(func, "__module__", "")
    return f"{mod}.{getattr(func, '__qualname__', type(entry).__name__)}".lstrip(".")


#: every registry by its plural name ("methods", "measures", "privacy models", ...)
REGISTRIES: dict[str, Registry] = {}

METHODS: Registry = Registry("method")
MEASURES: Registry = Registry("measure")
#: why a measure that reads row-aligned releases only gives no reading of a synthetic one
NOT_APPLICABLE_SYNTHETIC = ("not applicable to a synthetic release: it has no record "
                            "correspondence")


def register_method(name: str, *, params: Iterable[Param], description: str,
                    family: str = "perturbative", random: bool = False, label: str = "",
                    cost_check=None, alone: bool = True,
                    experiment_params: Mapping | None = None):
    """Register ``func(dataset, *, <params>, seed)`` as method ``name``, shown to people
    as ``label`` (default: the name); ``cost_check``: `MethodSpec.cost_check`;
    ``alone``: `MethodSpec.alone`; ``experiment_params``: `MethodSpec.experiment_params`
    (checked against ``params`` now).  The
    returned function runs through `MethodSpec.apply` (parameters parsed, release
    checked)."""
    def deco(func):
        ps = tuple(params)
        check_signature("method", name, func, ps)
        fixed = dict(experiment_params or {})
        stray = [k for k in fixed if k not in {p.name for p in ps}]
        if stray:
            raise RegistrationError(f"method {name!r}: experiment_params name unknown "
                                    f"parameter(s) {', '.join(stray)}")
        spec = METHODS.add(name, MethodSpec(name, func, ps, description, family, random,
                                            label, cost_check, alone, fixed))

        @functools.wraps(func)
        def call(dataset, seed=None, **kwargs):
            return spec.apply(dataset, kwargs, seed=seed)
        return call
    return deco


def register_measure(name: str, *, params: Iterable[Param] = (), description: str,
                     category: str, direction: str, kinds: Iterable[str],
                     needs: Iterable[str] = (), label: str = "", unit: str = "",
                     partial: PartialForm | None = None, no_partial: str = "",
                     aggregate=None, data_check=None, attack: bool = False):
    """Register ``func(dataset, release, *, <params>)`` as measure ``name``, shown to
    people as ``label`` (default: the name).  The returned function runs through
    `MeasureSpec.evaluate` (parameters parsed, release kind and needs checked).
    ``partial``: how it is computed in parts of a table (`PartialForm`; the partitioned
    evaluation computes exactly the measures that declare one); ``no_partial``: why a
    measure is not, said when it is asked for in parts; ``aggregate``: how the value
    follows from ``per_record`` (`MeasureSpec.aggregate`); ``data_check``: what it
    needs of the data set under its parameters beyond ``needs`` (`MeasureSpec.data_check`);
    ``attack``: read at every matched release of a comparison (`MeasureSpec.attack`)."""
    def deco(func):
        ps = tuple(params)
        check_signature("measure", name, func, ps)
        spec = MEASURES.add(name, MeasureSpec(name, func, ps, description, category,
                                              direction, tuple(kinds), tuple(needs),
                                              label, unit, partial, no_partial,
                                              aggregate, data_check, attack))
        sig = inspect.signature(func)

        @functools.wraps(func)
        def call(dataset, release, *args, **kwargs):
            if args:  # parameters given by position, as the signature allows
                bound = sig.bind_partial(dataset, release, *args)
                kwargs = {**dict(list(bound.arguments.items())[2:]), **kwargs}
            return spec.evaluate(dataset, release, kwargs)
        return call
    return deco

