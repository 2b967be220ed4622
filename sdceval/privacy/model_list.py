"""A list of privacy models as one method parameter (issue 18; ARX's
``ARXConfiguration.addPrivacyModel``).

Every method that enforces privacy models (Mondrian, bucketization, full-domain
generalization; the lattice search takes the same list) declares one parameter,
``models``, of type `ModelList`, and never lists a model's own parameters (``k``, ``l``,
``t``, ...) in its signature.  A model registered outside sdceval therefore works in
every such method, in bisection and in the trade-off with no change to sdceval.

Forms accepted (parsed here, once):

* text, the form of `sdceval.privacy.parse_model_spec`: ``"k=5"``,
  ``"l=3,variant=distinct"``, ``"t=0.2,distance=js"``, ``"cl:c=3,l=2"``; several models
  in one text are separated by ``;`` (``"l=3;k=5"``);
* a `PrivacyModel` object (its class must be registered);
* a list or tuple of those (the CLI's repeatable ``--model``, an experiment file's
  ``models = [...]``).

The canonical value is a tuple of texts with every parameter spelled out
(`PrivacyModel.to_text`), which is hashable, printable and stored in a release's
provenance.  Models are built for a data set by `bind_models` (the sensitive
attribute's hierarchy, for models that use it).

Shorthands (documented spellings of the releases before issue 18, read only here):
``model=NAME`` picks the model (default: the method's default model, else ``k``); a
parameter of that model given by its own name (``l=4``, ``variant=distinct``;
``l_variant`` is the older name of ``variant``) sets it, and a threshold not given takes
the model's ``example`` value (k = 10, ℓ = 4, t = 0.15, δ = 1.5, c = 3); ``k`` with
another model adds a minimum class size (a second model, ``k=K``).  A parameter of
another model is an error naming the models that take it, never silently ignored.

The *knob* (`ModelList.knob`) is the threshold of the first model: its `Param`, read
from the model's declaration (type, bounds, grid, scale, protection direction), is what
bisection searches and the trade-off sweeps.
"""
from __future__ import annotations

from sdceval.core.errors import SdcevalError, plain, suggest
from sdceval.core.registry import Knob, Param, ParamType
from sdceval.privacy.base import (PrivacyModel, model_class, model_names, model_text,
                                  parse_model_spec, split_model_text)

#: older shorthand names of model parameters (Mondrian's ``l_variant`` = ℓ's ``variant``)
ALIASES = {"l_variant": "variant"}
#: the shorthand keyword that names the model
MODEL_KEY = "model"
#: the model of the shorthand when ``model`` is not given and the method has none
DEFAULT_MODEL = "k"


def _texts(raw, where: str) -> list:
    if raw is None:
        return []
    if isinstance(raw, (str, PrivacyModel)):
        raw = [raw]
    if not isinstance(raw, (list, tuple)):
        raise SdcevalError(f"{where} must be privacy models such as 'k=5', "
                           f"'l=3,variant=distinct' or a list of them, got {plain(raw)!r}")
    out: list = []
    for item in raw:
        if isinstance(item, PrivacyModel):
            out.append(item.to_text())
        elif isinstance(item, str):
            out += [t.strip() for t in item.split(";") if t.strip()]
        else:
            raise SdcevalError(f"{where}: {plain(item)!r} is not a privacy model; give "
                               "text such as 'k=5' or a model object")
    return out


def canonical(raw, where: str = "models") -> tuple[str, ...]:
    """The canonical tuple of model texts (module docstring); one model per name."""
    out: list[str] = []
    seen: dict[str, str] = {}
    for text in _texts(raw, where):
        try:
            name, given = split_model_text(text)
            cls = model_class(name)
            # every parameter spelled out, each checked by its declaration; the model
            # itself is built per data set (`bind_models`)
            params = {p.name: p.parse(given[p.name], cls.owner()) if p.name in given
                      else p.default for p in cls.params}
        except SdcevalError as e:
            raise SdcevalError(f"{where}: {e}") from None
        if name in seen:
            raise SdcevalError(f"{where} names privacy model {name!r} twice "
                               f"({seen[name]!r} and {text!r}); give it once")
        seen[name] = text
        out.append(model_text(name, params))
    return tuple(out)


def from_shorthand(found: dict, owner: str, default: tuple = ()) -> tuple[str, ...]:
    """Models from the shorthand keywords (module docstring): ``{"model": "l", "l": 4,
    "k": 25}`` -> ``("l=4.0,variant=probabilistic", "k=25")``."""
    found = dict(found)
    name = found.pop(MODEL_KEY, None)
    if name is None:
        name = split_model_text(default[0])[0] if default else DEFAULT_MODEL
    if str(name) not in model_names():
        names = model_names()
        raise SdcevalError(f"{owner}: parameter {MODEL_KEY!r} must be one of "
                           f"{', '.join(names)}, got {name!r}.{suggest(str(name), names)}")
    cls = model_class(str(name))
    own = [p.name for p in cls.params]
    params: dict = {}
    extra_k = None
    for key, value in found.items():
        real = ALIASES.get(key, key)
        if real in own:
            params[real] = value
        elif real == "k":
            extra_k = value
        else:
            takers = [m for m in model_names() if real in
                      [p.name for p in model_class(m).params]]
            only = " or ".join(f"{MODEL_KEY}={m!r}" for m in takers) or "no model"
            raise SdcevalError(f"{owner}: parameter {key!r} applies to {only} only, but "
                               f"{MODEL_KEY}={cls.name!r}; set {only} or drop {key!r}")
    for p in cls.params:
        if p.name not in params and p.default is None and p.name in cls.example:
            params[p.name] = cls.example[p.name]
    texts = [model_text(cls.name, params)]
    if extra_k is not None:
        texts.append(model_text("k", {"k": extra_k}))
    return canonical(texts, f"{owner}'s privacy models")


class ModelList(ParamType):
    """The type of a ``models`` parameter (module docstring)."""

    name = "privacy models"

    def parse(self, raw, where: str) -> tuple[str, ...]:
        return canonical(raw, where)

    def shorthand_names(self) -> tuple[str, ...]:
        # read at call time: a model registered later contributes its parameters
        names = [MODEL_KEY, *ALIASES]
        for m in model_names():
            names += [p.name for p in model_class(m).params if p.name not in names]
        return tuple(names)

    def absorb(self, value, shorthand: dict, owner: str, default):
        if value not in (None, (), [], ""):
            raise SdcevalError(
                f"{owner}: give the privacy models either as models=... (e.g. --model "
                f"k=5) or by the shorthand {', '.join(map(repr, shorthand))}, not both")
        return from_shorthand(shorthand, owner, tuple(default or ()))

    def shorthand_param(self, name: str) -> Param | None:
        """The declaration behind a shorthand keyword: ``model`` (a choice of the
        registered models), else the first registered model's parameter of that name."""
        if name == MODEL_KEY:
            return Param(MODEL_KEY, str, None, choices=model_names(),
                         description="shorthand: the privacy model (its parameters by "
                                     "their own names)")
        real = ALIASES.get(name, name)
        for m in model_names():
            for p in model_class(m).params:
                if p.name == real:
                    return p
        return None

    def knob(self, value) -> Knob | None:
        # no model given: the knob of the shorthand's default model (k), so that a
        # method searching a node only when asked (generalization) is tuned on k
        value = value or from_shorthand({}, "models")
        name, params = split_model_text(value[0])
        cls = model_class(name)
        first = cls.params[0]

        def setter(method_params: dict, x) -> dict:
            models = list(canonical(method_params.get("models") or value))
            n, p = split_model_text(models[0])
            models[0] = model_text(n, {**p, first.name: x})
            return {**method_params, "models": tuple(models)}
        return Knob(first, "models", setter)


def models_param(default: tuple = (), description: str = ""):
    """The ``models`` `Param` of a method that enforces privacy models."""
    return Param("models", MODEL_LIST, canonical(default), description=description or (
        "privacy models to enforce, each as text ('k=5', 'l=3,variant=distinct', "
        "'t=0.2,distance=js', 'cl:c=3,l=2'; several separated by ';') or model objects; "
        "shorthands: k=10, model=l l=4, ..."))


MODEL_LIST = ModelList()


def bind_models(dataset, models, owner: str) -> list[PrivacyModel]:
    """The model objects of ``models`` (any accepted form) for ``dataset``: a model
    that needs a sensitive attribute refuses a data set without one; t-closeness gets
    the sensitive attribute's hierarchy; each is bound to ``dataset``
    (`PrivacyModel.bind`)."""
    sens = dataset.schema.sensitive
    out = []
    for text in canonical(models, f"{owner}'s models"):
        name, _ = split_model_text(text)
        cls = model_class(name)
        if cls.needs_sensitive and sens is None:
            raise SdcevalError(
                f"{owner}: {MODEL_KEY}={name!r} needs a sensitive attribute, but data set "
                f"{dataset.name!r} has none; give one (e.g. --sensitive occupation)")
        out.append(parse_model_spec(
            text, hierarchy=dataset.hierarchy(sens) if cls.uses_hierarchy else None
        ).bind(dataset))  # what the model reads of the data set (k-map's population)
    return out


__all__ = ["ALIASES", "MODEL_LIST", "ModelList", "bind_models", "canonical",
           "from_shorthand", "models_param"]
