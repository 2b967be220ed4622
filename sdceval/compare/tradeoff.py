"""Privacy–utility trade-off of privacy models (Li & Li 2009, §4–§5).

For every privacy model (k-anonymity, ℓ-diversity, t-closeness, δ-disclosure) and every
parameter of its grid, Mondrian's partition gives a release — generalized (method
``mondrian``), bucketized (``bucketization``) or both (``both``); each release becomes a
point (P_loss, U_loss) — worst-case privacy loss against aggregate utility loss — plus
any other measure (query error).  The efficient frontier is the set of points no other
point beats on both axes.

Method names are registered method names, one name per algorithm: what Li & Li call
"generalization" is Mondrian (``mondrian``), not the full-domain generalization
registered as ``generalization``.  The old trade-off value ``generalization`` is refused
with that explanation rather than silently aliased, since ``anonymize --method
generalization`` means the other algorithm.  The points' ``method`` column holds the
registered name; plot titles may use the paper's words.

Default grids are the paper's (§5.1): k ∈ {10, 50, 100, 200, 500, 1000, 2000, 5000},
ℓ ∈ {3.0, 3.5, 4.0, 4.25, 4.5, 4.75, 5.0, 5.5}, t ∈ {0.075, …, 0.4} with the JS
divergence, δ ∈ {1.0, 1.2, 1.4, 1.5, 1.7, 1.9, 2.0, 2.1}.  Models, their threshold
parameter and default grid come from the privacy-model registry (`sdceval.privacy`), so
any registered model can be named, e.g. recursive (c,ℓ)-diversity ``cl`` (grid over c,
ℓ = Mondrian's ``l``); by default the paper's four run.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from collections.abc import Mapping
from typing import Any, Callable

import pandas as pd

from sdceval import privacy
from sdceval.compare.ranking import parse_measure_list
from sdceval.core.errors import SdcevalError, suggest
from sdceval.core.loaders import open_ref
from sdceval.core.tasks import run_serially
from sdceval.catalog import get_measure, get_method
from sdceval.core.glossary import display_name, register_term
from sdceval.core.text_table import console_table

register_term("model", "privacy model", "the privacy model whose threshold is swept")
register_term("classes", "equivalence classes",
              "number of equivalence classes (or buckets) in the release")

#: the models run when none are named: Li & Li's four (any registered model may be named)
DEFAULT_MODELS = ["k", "l", "t", "delta"]
class _PerModel(Mapping):
    """A read-only view ``model name -> read(model class)`` of the privacy-model
    registry, read at look-up time, so a model registered later is included."""

    def __init__(self, read: Callable):
        self._read = read

    def __getitem__(self, name):
        if name not in privacy.MODELS:
            raise KeyError(name)
        return self._read(privacy.model_class(name))

    def __iter__(self):
        return iter(privacy.model_names())

    def __len__(self) -> int:
        return len(privacy.MODELS)


#: model -> its default grid, from the privacy-model registry (each model's threshold
#: `Param.grid`: Li & Li's §5.1 grids for k, ℓ, t, δ)
DEFAULT_GRIDS: Mapping[str, list] = _PerModel(lambda cls: list(cls.default_grid()))
#: model -> its threshold parameter, the one the trade-off sweeps (k, l, t, delta; c for
#: recursive (c,ℓ)-diversity): the knob of the method's ``models`` (`MethodSpec.tunable_for`)
MODEL_PARAM: Mapping[str, str] = _PerModel(lambda cls: cls.parameter)
#: Li & Li used JS for t-closeness and probabilistic ℓ-diversity
DEFAULT_MODEL_PARAMS = {"t": {"distance": "js"}, "l": {"variant": "probabilistic"}}
#: trade-off ``method`` choice -> the registered methods it runs
METHODS = {"mondrian": ["mondrian"], "bucketization": ["bucketization"],
           "both": ["mondrian", "bucketization"]}
DEFAULT_METHOD = "mondrian"
DEFAULT_MEASURES = ["p_loss", "u_loss", "query_error"]


def _check_models(models) -> list[str]:
    models = list(models or DEFAULT_MODELS)
    for m in models:
        if m not in MODEL_PARAM:
            raise SdcevalError(f"unknown privacy model {m!r}.{suggest(m, MODEL_PARAM)} "
                               f"Models: {', '.join(MODEL_PARAM)}")
    return models


def parse_grids(items) -> dict[str, list[float]]:
    """``["k=10,100", "t=0.1"]`` or ``{"k": [10, 100]}`` -> ``{"k": [10.0, 100.0]}``."""
    if isinstance(items, dict):
        pairs = items.items()
    else:
        pairs = []
        for item in items or []:
            if "=" not in item:
                raise SdcevalError(f"--grid {item!r} must look like MODEL=V1,V2 (e.g. k=10,100)")
            k, v = item.split("=", 1)
            pairs.append((k.strip(), [x for x in v.split(",") if x.strip()]))
    out = {}
    for model, values in pairs:
        _check_models([model])
        try:
            out[model] = [float(x) for x in values]
        except (TypeError, ValueError):
            raise SdcevalError(f"grid for model {model!r} must be numbers, got {values!r}") \
                from None
        if not out[model]:
            raise SdcevalError(f"grid for model {model!r} is empty")
    return out


def check_method(method) -> str:
    """A trade-off method choice (`METHODS`); the old name ``generalization`` is an
    error that says to use ``mondrian`` (module notes)."""
    if method == "generalization":
        raise SdcevalError(
            "trade-off method 'generalization' is no longer accepted: Li & Li's "
            "\"generalization\" is Mondrian, so use 'mondrian' (or 'both' for Mondrian and "
            "bucketization); the registered method 'generalization' is full-domain "
            "generalization, which the trade-off does not run")
    if method not in METHODS:
        raise SdcevalError(f"trade-off method {method!r} unknown.{suggest(str(method), METHODS)}"
                           f" Use one of {', '.join(METHODS)}")
    return method


def validate_tradeoff_options(opts: dict) -> tuple[list[str], dict, dict]:
    """Check a ``[[tradeoff]]`` job (or `compute_tradeoff`'s options) before anything
    runs; returns the parsed ``(models, grids, measures)``, grids completed with the
    paper's defaults."""
    models = _check_models(opts.get("models"))
    method = check_method(opts.get("method", DEFAULT_METHOD))
    grids = {**DEFAULT_GRIDS, **parse_grids(opts.get("grids", {}))}
    for m in models:
        for mm in METHODS[method]:
            for v in grids[m]:
                _point_params(mm, m, v, {**DEFAULT_MODEL_PARAMS.get(m, {}),
                                         **opts.get("model_params", {}).get(m, {})})
    return models, grids, parse_measure_list(opts.get("measures", DEFAULT_MEASURES))


def _point_params(method: str, model: str, value, model_params: dict):
    """The method's parameters of one point and the knob swept: the model (with its
    fixed parameters, e.g. ``distance="js"``) as the method's ``models``, its threshold
    — the knob the model declares (`MethodSpec.tunable_for`) — at ``value``."""
    spec = get_method(method)
    base = spec.resolve({"model": model, **model_params})
    knob = spec.tunable_for(base)
    return spec.resolve(knob.set(base, value)), knob


def tradeoff_point(data_ref, method: str, model: str, value: float, model_params: dict,
                   measures: dict, seed: int) -> dict[str, Any]:
    """One release and its measures (a pure task for the executors)."""
    ds = open_ref(data_ref)
    spec = get_method(method)
    params, knob = _point_params(method, model, value, model_params)
    t0 = time.perf_counter()
    rel = spec.apply(ds, spec.experiment(params), seed=seed)
    # the value as the model's threshold typed it (k is an int: "5000", not "5000.0")
    row: dict[str, Any] = {"model": model, "parameter": knob.name,
                           "value": knob.param.parse(value, f"privacy model {model!r}"),
                           "method": method,
                           "classes": int(len(pd.unique(rel.classes)))
                           if rel.classes is not None else None,
                           "anonymize_s": time.perf_counter() - t0,
                           "warnings": "; ".join(rel.info.get("warnings", []))}
    for label, (name, params) in measures.items():
        row[label] = get_measure(name).evaluate(ds, rel, params).value
    row["total_s"] = time.perf_counter() - t0
    return row


@dataclass
class TradeoffResult:
    points: pd.DataFrame
    frontier: pd.DataFrame
    measures: list[str]
    title: str = ""
    files: list[Path] = field(default_factory=list)
    #: the data set's name (figure titles)
    data: str = ""

    def answer(self) -> str:
        """The frontier in one sentence: how many releases no other beats on both
        axes, and what moving along it costs."""
        x, _, y = frontier_axes(self.measures)
        if x not in self.points or y not in self.points or self.frontier.empty:
            return ""
        f = self.frontier.sort_values(x)
        lo, hi = f.iloc[0], f.iloc[-1]
        return (f"Of {len(self.points)} releases, {len(f)} are on the efficient frontier: "
                f"no other release has both less {display_name(x)} and less "
                f"{display_name(y)}. Along it, {display_name(x)} falls from {hi[x]:.3g} "
                f"({_release(hi)}) to {lo[x]:.3g} ({_release(lo)}) while "
                f"{display_name(y)} rises from {hi[y]:.3g} to {lo[y]:.3g}.")

    def display_table(self, points: pd.DataFrame | None = None) -> pd.DataFrame:
        """``points`` (default: all) for people: the release in words, then the
        measures and the class count."""
        points = self.points if points is None else points
        cols = [c for c in [*self.measures, "classes"] if c in points.columns]
        out = pd.DataFrame({"release": [_release(r) for _, r in points.iterrows()]})
        for c in cols:
            out[c] = points[c].to_numpy()
        return out

    def __str__(self) -> str:
        return "\n".join([self.answer(), console_table(self.display_table(),
                                                       where="points.csv")])

    def to_dict(self) -> dict:
        return {"title": self.title,
                "points": self.points.astype(object).where(self.points.notna(), None)
                .to_dict(orient="records"),
                "frontier": self.frontier.astype(object).where(self.frontier.notna(), None)
                .to_dict(orient="records")}


def frontier_axes(labels: list[str]) -> tuple[str, list[str], str]:
    """The privacy axis (P_loss), the utility measures, and the one the frontier and
    the main plot use (U_loss when measured, else the first)."""
    x = "p_loss"
    utilities = [m for m in labels if m != x]
    return x, utilities, "u_loss" if "u_loss" in utilities else (utilities[0] if utilities
                                                                  else x)


def _release(row) -> str:
    """A trade-off point as a person reads it: "Mondrian, ℓ-diversity l = 4"."""
    return (f"{display_name(row['method'])}, {display_name(row['model'])} "
            f"{row['model']} = {row['value']}")


def compute_tradeoff(dataset_or_ref, *, models=None, method: str = DEFAULT_METHOD,
                     grids=None, measures=None, model_params: dict | None = None,
                     seed: int = 0, executor=None,
                     progress: Callable[[str], None] | None = None) -> pd.DataFrame:
    """All (model, parameter, method) releases and their measures, as a tidy table.

    ``method`` is a `METHODS` choice (``mondrian``, ``bucketization`` or ``both``); the
    table's ``method`` column holds the registered method of each point.

    ``executor`` is anything with ``map(fn, tasks, progress)`` and a ``name`` (the
    experiment layer's executors); by default the tasks run here, one after another.
    """
    opts = {"models": models, "method": method, "grids": grids or {},
            "measures": measures or DEFAULT_MEASURES, "model_params": model_params or {}}
    models, grids, meas = validate_tradeoff_options(opts)
    tasks = []
    for m in models:
        params = {**DEFAULT_MODEL_PARAMS.get(m, {}), **(model_params or {}).get(m, {})}
        for mm in METHODS[method]:
            for v in grids[m]:
                tasks.append(dict(data_ref=dataset_or_ref, method=mm, model=m, value=v,
                                  model_params=params, measures=meas, seed=seed))
    say = progress or (lambda msg: None)
    where = executor.name if executor is not None else "serial"
    say(f"trade-off: {len(tasks)} releases x {len(meas)} measures ({where} executor)")

    def tick(done, total):
        if done == total or done % 8 == 0:
            say(f"  {done}/{total} releases")
    rows = (executor.map(tradeoff_point, tasks, progress=tick) if executor is not None
            else run_serially(tradeoff_point, tasks, tick))
    points = pd.DataFrame(rows)
    # one column holds every model's threshold: keep each with its own type
    points["value"] = pd.Series([r["value"] for r in rows], dtype=object, index=points.index)
    return points
