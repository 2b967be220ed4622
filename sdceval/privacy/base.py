"""The privacy-model interface and its registry (issue 7 item 4; ARX's ``PrivacyCriterion``).

A privacy model is one class, registered with `register_model`.  The same object is a
*constraint* (Mondrian allows a split only if every part satisfies it; the lattice search
keeps a node only if its classes satisfy it within the suppression limit) and a *check*
(the measures in `sdceval.measures.privacy_checks`).  Everything is vectorized over
equivalence classes: the input is a counts matrix ``C`` (n_classes × S), ``C[i, s]`` =
number of records of class ``i`` whose sensitive code is ``s`` (a single column of class
sizes for models that need no sensitive attribute), plus the table's sensitive
distribution ``Q`` (length S).  Per class a model returns

* ``value(C, Q)`` — the level the class achieves (its k, ℓ, t, δ or c), and
* ``satisfied(C, Q)`` — whether that level meets the model's threshold.

Declarations (class attributes)
-------------------------------
``name``
    Registry name (``make_model(name, ...)``, Mondrian's ``model=``).
``params``
    The parameters, as `sdceval.core.registry.Param` (type, bounds, choices, default;
    default ``None`` = required).  The first is the *threshold* parameter (``parameter``),
    whose ``protection`` says which way protection moves and whose ``grid`` is the
    model's default trade-off grid (Li & Li 2009 §5.1 for k, ℓ, t, δ).
``needs_sensitive``, ``uses_hierarchy``
    Whether the model reads the sensitive attribute / the sensitive hierarchy.
``larger_is_safer``
    Whether a larger ``value`` means more protection (k, ℓ) or less (t, δ, c).
``monotone_generalization``
    If every class of a lattice node satisfies the model, so does every class of every
    more general node.  A more general node's classes are unions of the node's classes,
    so this holds iff the model is closed under merging classes (a union of satisfying
    classes satisfies).  ARX: ``isMonotonicWithGeneralization``.
``monotone_suppression``
    Monotone under ARX's suppression rule (suppress every class that violates the model;
    the node is feasible when the suppressed records number at most ⌊s·n⌋): feasibility
    of a node implies feasibility of every more general node.  This holds iff a union
    that contains a satisfying class always satisfies (then a violating class of the
    general node is a union of violating classes only, so it suppresses no more records).
    ARX: ``isMonotonicWithSuppression``.  The class attribute says whether the flag holds
    for *every* parameter value; an instance may refine it (distinct ℓ-diversity).
``min_class_size(Q)``
    A lower bound on the size of any class that satisfies the model (Mondrian finalizes
    smaller partitions without evaluating a cut; ARX: ``getMinimalClassSize``).
``reads_cells``, ``bind(dataset)``, ``value_cells``, ``value_nodes``
    A model whose verdict on a class needs more than its counts (k-map with a
    population table: the people inside the class's generalized cells) sets
    ``reads_cells``; every method binds its models to the data set (``bind``, default:
    the model itself) and gives such a model the classes' cells, as leaf-code ranges
    (``value_cells``: Mondrian's boxes, a release's cells) or as lattice nodes
    (``value_nodes``: a node's levels and generalized values); its count-only
    ``value``/``satisfied`` raise an error naming the limitation.
``lattice_objectives()``
    The lattice objectives the model yields (`ModelObjective`: the least safe kept
    class's value per node; by default one, named like the model), from which
    `sdceval.lattice.objectives` derives its model objectives (issue 27 item 21).

Adding a model is adding one class with these declarations and ``value`` (and, where
the threshold comparison is not ``value >= threshold`` / ``value <= threshold``,
``satisfied``), in sdceval or in a user's own module (issue 18).  Every method that
enforces models takes them as one ``models`` list (`sdceval.privacy.model_list`), so
Mondrian, bucketization, full-domain generalization and the lattice search enforce it
(and the lattice search optimizes its objective);
bisection and the trade-off tune its threshold (the first `Param`, its ``protection``,
bounds and ``grid``); `sdceval.measures.privacy_checks` generates its check (named
``check_name``).  Conventions the contract suite (tests/test_registry_contract.py)
checks on random classes: a model keeps each parameter as an attribute of the same
name (`param_values`), ``value`` does not depend on the threshold, and every
monotonicity flag and ``min_class_size`` it declares holds.
"""
from __future__ import annotations

import inspect
from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np

from sdceval.core.errors import SdcevalError, plain, suggest
from sdceval.core.registry import Param, RegistrationError, Registry, param_named

# tolerance for comparing an achieved level with a threshold given as a decimal
# (ℓ = 4.1 must accept a class with n/max = 4.1 computed in floating point)
_RTOL = 1e-9

#: the privacy models by name (`register_model`), in registration order
MODELS: Registry = Registry("privacy model", "privacy models")


def table_distribution(codes: np.ndarray, n_values: int) -> np.ndarray:
    """Q: the share of each sensitive code in the whole table (length ``n_values``)."""
    counts = np.bincount(np.asarray(codes), minlength=n_values).astype(np.float64)
    return counts / counts.sum()


def class_counts(classes: np.ndarray, codes: np.ndarray, n_values: int,
                 n_classes: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Counts matrix of sensitive codes per class.

    Returns ``(counts, inverse)``: ``counts`` (n_classes × n_values) for the distinct
    class ids in sorted order, ``inverse`` the row of ``counts`` of each record.  With
    ``n_classes``, ``classes`` are already that renumbering, ``0..n_classes-1`` (e.g.
    `Release.class_index`, computed once per release in O(n)), and are used as they
    are: renumbering sorts the ids (O(n log n), the bulk of a check on 10⁷ records).
    """
    if n_classes is None:
        _, inverse = np.unique(np.asarray(classes), return_inverse=True)
        inverse = inverse.ravel()
        n_classes = int(inverse.max()) + 1 if len(inverse) else 0
    else:
        inverse = np.asarray(classes)
    flat = np.bincount(inverse * n_values + np.asarray(codes),
                       minlength=n_classes * n_values)
    return flat.reshape(n_classes, n_values), inverse


@dataclass(frozen=True)
class ModelObjective:
    """A lattice objective a privacy model yields (`PrivacyModel.lattice_objectives`).

    Per lattice node, the level of the least safe *kept* class: the minimum of the
    model's per-class `PrivacyModel.value` over the node's kept classes when larger is
    safer (goal ``max``), else the maximum (goal ``min``); with every class suppressed,
    the value of the whole table as one class (the ``*`` rows).  ``params`` fixes the
    model's other parameters (ℓ's ``variant``, t's ``distance``); the threshold does not
    matter (a model's value does not depend on it).  `sdceval.lattice.objectives`
    derives one objective from each, so a model registered later — a user's — is an
    objective of the lattice search with no other registration.
    """

    name: str
    params: dict = field(default_factory=dict)
    description: str = ""
    label: str = ""
    #: whole numbers (a count: class sizes, distinct values), reported as integers
    integer: bool = False


class PrivacyModel:
    """Interface of a privacy model (see the module docstring for the declarations)."""

    name: ClassVar[str] = ""
    title: ClassVar[str] = ""
    params: ClassVar[tuple[Param, ...]] = ()
    #: name of the threshold parameter (``params[0].name``; set by `register_model`)
    parameter: ClassVar[str] = ""
    needs_sensitive: ClassVar[bool] = True
    uses_hierarchy: ClassVar[bool] = False
    larger_is_safer: ClassVar[bool] = True
    monotone_generalization: bool = False
    monotone_suppression: bool = False
    #: parameters of a typical call, shown in error messages and ``spec()``; also the
    #: values the method shorthand ``model=NAME`` takes for parameters not given
    example: ClassVar[dict] = {}
    #: the privacy check generated for the model (`sdceval.measures.privacy_checks`):
    #: its measure name (default: the model's name + "_check") and the defaults of
    #: required non-threshold parameters in the check (e.g. ℓ = 2 for (c, ℓ))
    check_name: ClassVar[str] = ""
    check_defaults: ClassVar[dict] = {}

    threshold: float

    # -- parameters ---------------------------------------------------------------------
    @classmethod
    def param_spec(cls, name: str) -> Param:
        return param_named(cls.params, name, f"privacy model {cls.name!r}")

    def check_param(self, name: str, value):
        """``value`` coerced and checked against the declared `Param` (type, bounds,
        choices): the constructors' one validation path, with messages naming the
        parameter and the model."""
        return self.param_spec(name).parse(plain(value), owner=self.owner())

    @classmethod
    def owner(cls) -> str:
        return f"privacy model {cls.name!r}" + (f" ({cls.title})" if cls.title else "")

    @classmethod
    def example_call(cls) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in cls.example.items())
        return f"make_model({cls.name!r}{', ' if args else ''}{args})"

    @classmethod
    def spec(cls) -> dict:
        """The declarations as plain data (for listings and documentation)."""
        doc = (inspect.getdoc(cls) or "").split("\n\n")[0].replace("\n", " ")
        return {"name": cls.name, "title": cls.title, "description": doc,
                "parameter": cls.parameter, "params": [p.to_dict() for p in cls.params],
                "needs_sensitive": cls.needs_sensitive, "uses_hierarchy": cls.uses_hierarchy,
                "larger_is_safer": cls.larger_is_safer,
                "monotone_generalization": cls.monotone_generalization,
                "monotone_suppression": cls.monotone_suppression,
                "example": dict(cls.example)}

    @classmethod
    def placeholder_threshold(cls) -> dict:
        """``{threshold parameter: value}`` for a model built only to read its per-class
        `value` (a check, a lattice objective): the example's, else the lower bound,
        else 1 (a model's value does not depend on its threshold; the contract suite
        checks it)."""
        p = cls.params[0]
        return {p.name: cls.example.get(p.name, p.low if p.low is not None else 1)}

    @classmethod
    def lattice_objectives(cls) -> tuple[ModelObjective, ...]:
        """The lattice objectives the model yields (`ModelObjective`).  Default: one,
        named like the model, its other parameters at their defaults (a required one at
        ``check_defaults``, else at ``example``); a model with variants overrides it
        (ℓ-diversity: one objective per variant)."""
        fixed = {}
        for p in cls.params[1:]:
            value = p.default if p.default is not None else cls.check_defaults.get(
                p.name, cls.example.get(p.name))
            if value is not None:
                fixed[p.name] = value
        worst = "smallest" if cls.larger_is_safer else "largest"
        given = "".join(f", {p.name}={fixed[p.name]}" for p in cls.params[1:]
                        if p.default is None and p.name in fixed)
        return (ModelObjective(
            cls.name, fixed, label=cls.title or cls.name,
            description=f"{cls.title or cls.name}: the {worst} {cls.parameter} over kept "
                        f"classes{given}"),)

    @classmethod
    def default_grid(cls) -> tuple:
        """The threshold parameter's default trade-off grid."""
        return tuple(cls.params[0].grid)

    # -- evaluation ---------------------------------------------------------------------
    def value(self, counts: np.ndarray, table_dist: np.ndarray) -> np.ndarray:
        """Achieved level per class."""
        raise NotImplementedError

    def satisfied(self, counts: np.ndarray, table_dist: np.ndarray) -> np.ndarray:
        """Boolean per class: the class meets the threshold."""
        return self.satisfied_level(self.value(counts, table_dist))

    #: the verdict needs the classes' cells (module docstring), not their counts alone
    reads_cells: bool = False

    def bind(self, dataset) -> PrivacyModel:
        """The model for ``dataset`` (what it needs of the data set read once); a model
        that needs nothing returns itself."""
        return self

    def value_cells(self, counts, table_dist, lo, hi) -> np.ndarray:
        """Achieved level per class from its counts and its cells ``lo``/``hi``
        (classes × QIs leaf-code ranges, QIs in schema order); default: `value`."""
        return self.value(counts, table_dist)

    def value_nodes(self, counts, table_dist, levels, node_ids) -> np.ndarray:
        """Achieved level per class of lattice nodes (``levels``: classes × QIs,
        ``node_ids``: QIs × classes, node ids of `Hierarchy.node_of`); default: `value`."""
        return self.value(counts, table_dist)

    def satisfied_level(self, v: np.ndarray) -> np.ndarray:
        """Boolean per class: the level ``v`` (of `value`, `value_cells`,
        `value_nodes`) meets the threshold."""
        v = np.asarray(v, dtype=np.float64)
        if self.larger_is_safer:
            return v >= self.threshold * (1 - _RTOL)
        return v <= self.threshold * (1 + _RTOL)

    def min_class_size(self, table_dist: np.ndarray) -> int:
        """A lower bound on the size of any class that satisfies the model (lets
        Mondrian finalize partitions too small to split without evaluating them)."""
        return 1

    def infeasible_message(self, best: float, total_counts: np.ndarray) -> str:
        """Why even the whole table, as one class, violates the model (`check_feasible`);
        ``best`` is the whole table's ``value``."""
        return (f"{self!r} cannot be met even by the whole table "
                f"(achieved {self.parameter} = {best:.4g})")

    def describe(self) -> str:
        return f"{self.parameter}={self.threshold:g}"

    def param_values(self) -> dict:
        """The model's parameters by name.  Convention of the interface: a model keeps
        each declared parameter as an attribute of the same name (checked for every
        registered model by the contract suite)."""
        return {p.name: getattr(self, p.name) for p in self.params}

    def to_text(self) -> str:
        """The model in the text form of `parse_model_spec` (every parameter, in
        declaration order): ``k=5``, ``l=3.0,variant=distinct``, ``cl:c=3.0,l=2``;
        ``parse_model_spec(m.to_text())`` rebuilds an equal model."""
        return model_text(self.name, self.param_values())

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.describe()})"


# -- registry ---------------------------------------------------------------------------
def register_model(cls: type[PrivacyModel]) -> type[PrivacyModel]:
    """Class decorator: add a `PrivacyModel` subclass to the registry under ``cls.name``.

    Checks the declarations at import time (a `RegistrationError`, i.e. a programming
    error): a new name, at least one `Param` (the first is the threshold), boolean
    flags, and a constructor taking exactly the declared parameters by name (plus
    ``hierarchy`` when ``uses_hierarchy``).
    """
    where = f"register_model({getattr(cls, '__name__', cls)})"
    if not (isinstance(cls, type) and issubclass(cls, PrivacyModel)):
        raise RegistrationError(f"{where}: not a PrivacyModel subclass")
    name = cls.__dict__.get("name")
    if not isinstance(name, str) or not name:
        raise RegistrationError(f"{where}: declare a non-empty class attribute 'name'")
    if name in MODELS:
        raise RegistrationError(f"{where}: privacy model {name!r} is already registered "
                                f"({MODELS[name].__name__})")
    params = tuple(cls.params)
    if not params or not all(isinstance(p, Param) for p in params):
        raise RegistrationError(f"{where}: declare params as a tuple of Param, the first "
                                "being the threshold parameter")
    for flag in ("needs_sensitive", "uses_hierarchy", "larger_is_safer",
                 "monotone_generalization", "monotone_suppression"):
        if not isinstance(getattr(cls, flag), bool):
            raise RegistrationError(f"{where}: {flag} must be True or False")
    sig = inspect.signature(cls.__init__)
    args = [p.name for p in list(sig.parameters.values())[1:]
            if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
    expected = [p.name for p in params] + (["hierarchy"] if cls.uses_hierarchy else [])
    missing = [a for a in expected if a not in args]
    if missing:
        raise RegistrationError(f"{where}: __init__{sig} lacks keyword parameter(s) "
                                f"{', '.join(map(repr, missing))} declared in params")
    extra = [a for a in args if a not in expected]
    if extra:
        raise RegistrationError(f"{where}: __init__{sig} takes {', '.join(map(repr, extra))} "
                                "not declared in params")
    unknown_example = [k for k in cls.example if k not in expected]
    if unknown_example:
        raise RegistrationError(f"{where}: example names unknown parameter "
                                f"{unknown_example[0]!r}")
    if not cls.__dict__.get("check_name"):
        cls.check_name = f"{name}_check"
    if params[0].protection is None:
        raise RegistrationError(f"{where}: the threshold parameter {params[0].name!r} must "
                                "declare protection='increasing' or 'decreasing' (bisection "
                                "and the trade-off tune it)")
    cls.params = params
    cls.parameter = params[0].name
    MODELS.add(name, cls)
    return cls


def _unregister(name: str) -> None:
    """Remove a model (tests register throw-away models)."""
    MODELS.remove(name)


def model_names() -> tuple[str, ...]:
    """Registered model names, in registration order (k, l, t, delta, cl, ...)."""
    return MODELS.names()


def model_class(name: str) -> type[PrivacyModel]:
    """The class registered as ``name``; an unknown name suggests the closest."""
    try:
        return MODELS[name]
    except (KeyError, TypeError):
        raise SdcevalError(f"unknown privacy model {name!r}.{suggest(str(name), MODELS)} "
                           f"Models: {', '.join(MODELS)}") from None


def make_model(name: str, /, hierarchy=None, **params) -> PrivacyModel:
    """Build a privacy model by its registry name.

    Parameters
    ----------
    name : str
        A name of `model_names` (``"k"``, ``"l"``, ``"t"``, ``"delta"``, ``"cl"``).
    hierarchy : Hierarchy, optional
        The sensitive attribute's hierarchy, for models that use it (t-closeness with
        EMD: chooses and defines the ground distance); ignored by the others.
    **params
        The model's parameters (``model_class(name).params``): ``k`` for "k"; ``l`` and
        ``variant`` for "l"; ``t``, ``distance`` and ``ground`` for "t"; ``delta`` for
        "delta"; ``c`` and ``l`` for "cl".  A parameter whose declared default is
        ``None`` is required; ``None`` counts as not given.

    Examples
    --------
    >>> make_model("l", l=4.25).describe()
    'l=4.25 (probabilistic)'
    >>> make_model("cl", c=3, l=2).describe()
    'c=3, l=2'
    """
    cls = model_class(name)
    names = [p.name for p in cls.params]
    for k in params:
        if k not in names:
            raise SdcevalError(
                f"privacy model {name!r} has no parameter {k!r}.{suggest(k, names)} "
                f"Its parameters: {', '.join(names)} (e.g. {cls.example_call()})")
    for p in cls.params:
        if p.default is None and params.get(p.name) is None:
            raise SdcevalError(f"privacy model {name!r} needs its parameter {p.name!r} "
                               f"(e.g. {cls.example_call()})")
    kwargs = {k: v for k, v in params.items() if v is not None}
    if cls.uses_hierarchy:
        kwargs["hierarchy"] = hierarchy
    return cls(**kwargs)


def spec_example(name: str) -> str:
    """A model's example (its class's ``example``) in the text form of
    `parse_model_spec`: ``k=10``, ``cl:c=3,l=3``."""
    cls = model_class(name)
    items = ",".join(f"{k}={v}" for k, v in (cls.example or {cls.parameter: ""}).items())
    first = next(iter(cls.example), cls.parameter)
    return items if first == cls.name else f"{cls.name}:{items}"


def model_text(name: str, params: dict) -> str:
    """``name`` and ``params`` in the text form of `parse_model_spec`: the first item
    names the model when the threshold parameter is named like it (``k=5``,
    ``l=3,variant=distinct``), else ``NAME:`` leads (``cl:c=3,l=2``).  ``None`` values
    are left out."""
    items = ",".join(f"{k}={_text_value(v)}" for k, v in params.items() if v is not None)
    first = next(iter(params), "")
    return items if first == name and items.startswith(f"{name}=") else f"{name}:{items}"


def _text_value(v) -> str:
    if isinstance(v, float) and v.is_integer() and abs(v) < 1e15:
        return f"{v:.1f}"
    return repr(v) if isinstance(v, float) else str(v)


def _spec_value(text: str):
    for cast in (int, float):
        try:
            return cast(text)
        except ValueError:
            pass
    return text


def split_model_text(text) -> tuple[str, dict]:
    """The model name and parameters of a text form (`parse_model_spec`), checked
    against the model's declaration (known names, required parameters) but not built."""
    if not isinstance(text, str):
        raise SdcevalError(f"privacy model spec {plain(text)!r} must be text such as "
                           "'k=5', 'l=3,variant=distinct' or 'cl:c=3,l=2'")
    spec = text.strip()
    name, _, rest = spec.partition(":") if ":" in spec else ("", "", spec)
    name = name.strip()
    items = [t.strip() for t in rest.split(",") if t.strip()]
    if not name and not items:
        raise SdcevalError(f"privacy model spec {text!r} is empty; e.g. 'k=5', "
                           "'l=3,variant=distinct' or 'cl:c=3,l=2'")
    if not name and len(items) == 1 and "=" not in items[0]:
        # a bare model name: its threshold is missing
        cls = model_class(items[0])  # an unknown name suggests the closest
        raise SdcevalError(f"privacy model {cls.name!r} needs a value for its threshold "
                           f"{cls.parameter!r}, e.g. {spec_example(cls.name)}")
    params: dict = {}
    for item in items:
        key, eq, val = item.partition("=")
        key, val = key.strip(), val.strip()
        if not eq or not key or not val:
            raise SdcevalError(f"privacy model spec {text!r}: {item!r} is not NAME=VALUE "
                               "(e.g. 'k=5', 'l=3,variant=distinct', 'cl:c=3,l=2')")
        if key in params:
            raise SdcevalError(f"privacy model spec {text!r} gives {key!r} twice")
        params[key] = _spec_value(val)
    name = name or next(iter(params))
    cls = model_class(name)
    names = [p.name for p in cls.params]
    for k in params:
        if k not in names:
            raise SdcevalError(f"privacy model {name!r} has no parameter {k!r}."
                               f"{suggest(k, names)} Its parameters: {', '.join(names)} "
                               f"(e.g. {spec_example(name)})")
    for p in cls.params:
        if p.default is None and p.name not in params:
            raise SdcevalError(f"privacy model {name!r} needs its parameter {p.name!r} "
                               f"(e.g. {spec_example(name)})")
    return name, params


def parse_model_spec(text, hierarchy=None) -> PrivacyModel:
    """A privacy model from its text form: the CLI's ``--model`` and an experiment
    file's ``models = [...]`` (``sdceval lattice``, ``[[lattice]]`` jobs).

    Forms:

    * ``k=5``, ``l=3,variant=distinct``, ``t=0.2,distance=js``: the first item names
      the model by its threshold parameter (for k, ℓ, t and δ the parameter is named
      like the model);
    * ``NAME:param=value,...``, e.g. ``cl:c=3,l=2`` (recursive (c, ℓ)-diversity, whose
      threshold ``c`` is not its name), ``t:t=0.2``.

    Values are read as an int, else a float, else text; the model's `Param` then checks
    type and bounds (`make_model`).  ``hierarchy`` is the sensitive attribute's, for the
    models that use it (t-closeness's ground distance).
    """
    name, params = split_model_text(text)
    return make_model(name, hierarchy=hierarchy, **params)


def check_feasible(model: PrivacyModel, total_counts: np.ndarray,
                   table_dist: np.ndarray) -> None:
    """Raise if even the whole table, as one class, violates ``model``.

    t and δ always hold for the whole table (distance 0); k, ℓ and (c, ℓ) may not.  The
    message (`PrivacyModel.infeasible_message`) names the parameter and the largest
    achievable value.
    """
    row = np.asarray(total_counts)[None, :]
    if model.satisfied(row, table_dist)[0]:
        return
    best = float(model.value(row, table_dist)[0])
    raise SdcevalError(model.infeasible_message(best, np.asarray(total_counts)))
