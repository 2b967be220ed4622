"""The contract of every registry entry (issue 18 item 5), as scikit-learn's
``check_estimator``: parametrized from the live registries (`REGISTRIES`), so an entry
registered later — by sdceval or by a user's module — is checked with no change here.

* every registry: names are the entries' own, parameters are typed `Param`s, a second
  registration of a name is refused;
* methods and measures: declared parameters = the function's signature;
* privacy models: declared parameters = the constructor, ``param_values`` and the text
  form round-trip, the per-class value does not depend on the threshold, ``satisfied``
  agrees with the value and direction, and every monotonicity flag a model claims
  (generalization, suppression) and its minimal class size hold on random classes;
* suppression rules and lattice objectives evaluate a random batch;
* plugin packages: every module of sdceval's plugin packages is imported by the
  package (a module whose import line is forgotten would register nothing and vanish).
"""
from __future__ import annotations

import inspect
import json
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import sdceval.catalog  # noqa: F401  (fills the method and measure registries)
import sdceval.lattice.objectives  # noqa: F401
import sdceval.vectors.properties  # noqa: F401
from sdceval import privacy
from sdceval.core.registry import (REGISTRIES, Param, RegistrationError, Registry,
                                   check_signature)
from sdceval.lattice.batch import ClassBatch
from sdceval.lattice.suppression import RULES

ENTRIES = [(reg, name) for reg, r in sorted(REGISTRIES.items()) for name in r]


@pytest.mark.parametrize("registry,name", ENTRIES, ids=[f"{r}:{n}" for r, n in ENTRIES])
def test_entry_is_named_and_typed(registry, name):
    entry = REGISTRIES[registry][name]
    assert getattr(entry, "name", name) == name
    params = getattr(entry, "params", None)
    assert isinstance(params, tuple) and all(isinstance(p, Param) for p in params)
    assert len({p.name for p in params}) == len(params)


@pytest.mark.parametrize("registry", sorted(REGISTRIES))
def test_a_name_registered_twice_is_refused(registry):
    reg = REGISTRIES[registry]
    name = next(iter(reg))
    with pytest.raises(RegistrationError, match="registered twice"):
        reg.add(name, reg[name])


def test_registries_are_listed_once():
    assert {"methods", "measures", "privacy models", "lattice objectives",
            "property vectors", "suppression rules"} <= set(REGISTRIES)
    with pytest.raises(RegistrationError, match="already exists"):
        Registry("method")


@pytest.mark.parametrize("name", sorted(sdceval.catalog.METHODS))
def test_method_parameters_are_its_signature(name):
    spec = sdceval.catalog.METHODS[name]
    check_signature("method", name, spec.func, spec.params)


@pytest.mark.parametrize("name", sorted(sdceval.catalog.MEASURES))
def test_measure_parameters_are_its_signature(name):
    spec = sdceval.catalog.MEASURES[name]
    check_signature("measure", name, spec.func, spec.params)


# -- privacy models -----------------------------------------------------------------------
MODEL_NAMES = list(privacy.model_names())


def _thresholds(cls) -> list:
    """Valid thresholds: the model's trade-off grid, else its example."""
    grid = list(cls.default_grid()) or [cls.example[cls.parameter]]
    return grid[:1] + grid[-1:]


def _instance(cls, threshold):
    params = {**cls.example, cls.parameter: threshold}
    return privacy.make_model(cls.name, **params)


@pytest.mark.parametrize("name", MODEL_NAMES)
def test_model_declarations_match_constructor_and_text(name):
    cls = privacy.model_class(name)
    sig = inspect.signature(cls.__init__)
    args = [p for p in list(sig.parameters)[1:] if p != "hierarchy"]
    assert args == [p.name for p in cls.params]
    assert cls.params[0].protection in ("increasing", "decreasing")
    assert (cls.params[0].protection == "increasing") == cls.larger_is_safer
    assert cls.check_name in sdceval.catalog.MEASURES  # its generated privacy check
    for t in _thresholds(cls):
        m = _instance(cls, t)
        assert set(m.param_values()) == {p.name for p in cls.params}
        again = privacy.parse_model_spec(m.to_text())
        assert again.param_values() == m.param_values()
        assert privacy.model_list.canonical([m]) == privacy.model_list.canonical(
            [m.to_text()])


def _classes(draw, n_values: int, rows: int) -> np.ndarray:
    sizes = st.lists(st.lists(st.integers(0, 6), min_size=n_values, max_size=n_values),
                     min_size=rows, max_size=rows)
    c = np.array(draw(sizes), dtype=np.int64)
    c[c.sum(axis=1) == 0, 0] = 1  # classes are never empty
    return c


@pytest.mark.parametrize("name", MODEL_NAMES)
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_model_claims_hold_on_random_classes(name, data):
    cls = privacy.model_class(name)
    S = data.draw(st.integers(2, 5)) if cls.needs_sensitive else 1
    counts = _classes(data.draw, S, 6)
    Q = counts.sum(axis=0) / counts.sum()
    if cls.needs_sensitive and (Q == 0).any():  # every table value occurs somewhere
        counts[0, Q == 0] = 1
        Q = counts.sum(axis=0) / counts.sum()
    lo, hi = _thresholds(cls)
    a, b = _instance(cls, lo), _instance(cls, hi)
    # the per-class value is the level achieved: it does not depend on the threshold
    np.testing.assert_array_equal(a.value(counts, Q), b.value(counts, Q))
    for m in (a, b):
        v, ok = m.value(counts, Q), m.satisfied(counts, Q)
        assert ok.dtype == bool and ok.shape == (len(counts),)
        # a model may compare strictly ((c, ℓ): r_1 < c·tail): satisfied only at or
        # beyond the threshold, and always strictly beyond it
        sign = 1 if m.larger_is_safer else -1
        at_least = sign * v >= sign * m.threshold - 1e-9 * abs(m.threshold)
        beyond = sign * v > sign * m.threshold + 1e-9 * abs(m.threshold)
        assert (at_least[ok]).all() and ok[beyond].all()
        assert (counts.sum(axis=1)[ok] >= m.min_class_size(Q)).all()
        i, j = data.draw(st.integers(0, 5)), data.draw(st.integers(0, 5))
        merged = (counts[i] + counts[j])[None, :]
        if m.monotone_generalization and i != j and ok[i] and ok[j]:
            assert m.satisfied(merged, Q)[0], "a union of satisfying classes violates"
        if m.monotone_suppression and i != j and ok[i]:
            assert m.satisfied(merged, Q)[0], "a union with a satisfying class violates"


# -- suppression rules and lattice objectives ---------------------------------------------
def _batch(sizes_per_node):
    sizes = np.concatenate([np.asarray(s, dtype=np.int64) for s in sizes_per_node])
    offsets = np.r_[0, np.cumsum([len(s) for s in sizes_per_node])].astype(np.int64)
    ids = np.zeros((len(sizes_per_node), 0), dtype=np.int64)
    return ClassBatch(ids, offsets, sizes, np.zeros((0, len(sizes)), dtype=np.int64))


@pytest.mark.parametrize("name", sorted(RULES))
def test_rule_outcome_shapes(name):
    from sdceval.lattice.suppression import MAX_SUPPRESSION
    rule = RULES[name](0.1)
    assert rule.params == (MAX_SUPPRESSION,) and rule.description
    batch = _batch([[1, 2, 7], [10]])
    out = rule.apply(batch, [privacy.KAnonymity(2)], None, 10)
    assert out.kept.shape == (4,) and out.feasible.shape == (2,)
    assert out.suppressed.sum() <= 10


OBJECTIVES = sorted(sdceval.lattice.objectives.OBJECTIVES)


@pytest.fixture(scope="module")
def problem():
    from contracts import contract_data
    from sdceval.lattice.search import LatticeProblem
    return LatticeProblem(contract_data(120), [privacy.KAnonymity(2)], rule="arx",
                          max_suppression=0.05)


@pytest.mark.parametrize("name", OBJECTIVES)
def test_objective_evaluates_a_batch(name, problem):
    obj = sdceval.lattice.objectives.get_objective(name)
    assert obj.goal in sdceval.lattice.objectives.GOALS and obj.description
    assert set(obj.needs) <= {"sensitive", "label"}
    nodes = problem.lattice.nodes()[:5]
    batch = next(iter(problem.engine.batches(nodes)))
    values = sdceval.lattice.objectives.evaluate(batch, problem.outcome(batch), [name],
                                                 problem.ctx)[name]
    assert values.shape == (batch.n_nodes,) and not np.isnan(values).any()


# -- plugin packages import every module they hold ----------------------------------------
PLUGIN_PACKAGES = ("sdceval.methods", "sdceval.measures", "sdceval.privacy",
                   "sdceval.lattice", "sdceval.vectors", "sdceval.experiments")

# in a fresh process: every module of the packages imported ("after"), then, in a second
# fresh process, only the packages and each registry's own module ("before")
_SNAPSHOT = """
import importlib, json, pkgutil, sys
from sdceval.core.registry import REGISTRIES
def snap():
    return {k: sorted(v) for k, v in REGISTRIES.items()}
mode, homes, pkgs = sys.argv[1], sys.argv[2].split(","), sys.argv[3:]
for pkg in pkgs:
    mod = importlib.import_module(pkg)
    if mode == "after":
        for info in pkgutil.walk_packages(mod.__path__, pkg + "."):
            importlib.import_module(info.name)
for home in filter(None, homes):
    importlib.import_module(home)
print(json.dumps({"registries": snap(),
                  "homes": sorted({r.home for r in REGISTRIES.values()})}))
"""


def _registries(mode: str, packages, homes=()) -> dict:
    out = subprocess.run([sys.executable, "-c", _SNAPSHOT, mode, ",".join(homes),
                          *packages], capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def test_every_plugin_module_is_imported_by_its_package():
    """Importing a plugin package (and the module that defines each registry) registers
    everything: importing every one of its modules directly adds no entry."""
    after = _registries("after", PLUGIN_PACKAGES)
    before = _registries("before", PLUGIN_PACKAGES, after["homes"])
    for registry, names in after["registries"].items():
        missing = sorted(set(names) - set(before["registries"].get(registry, [])))
        assert not missing, (f"{registry} {missing} are registered only when their module "
                             "is imported directly: add the import to the package")


@pytest.mark.slow
def test_the_plugin_check_catches_a_forgotten_import(tmp_path):
    """The check above fails when a module's import line is missing."""
    pkg = tmp_path / "plug"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")  # forgets to import plug.extra
    (pkg / "extra.py").write_text(
        "from sdceval.core.registry import register_method\n"
        "@register_method('forgotten', params=[], description='x')\n"
        "def forgotten(dataset, *, seed):\n    return None\n")
    code = f"import sys; sys.path.insert(0, {str(tmp_path)!r})\n" + _SNAPSHOT
    got = {mode: json.loads(subprocess.run(
        [sys.executable, "-c", code, mode, "sdceval.catalog", "plug"], capture_output=True, text=True, check=True).stdout)["registries"]
        for mode in ("before", "after")}
    assert "forgotten" in got["after"]["methods"]
    assert "forgotten" not in got["before"]["methods"]


# -- commands: every module of sdceval/cli is a command (issue 27 item 18) ------------------
def test_every_cli_module_is_a_command():
    """A module of ``sdceval/cli`` (listed with pkgutil; not ``__init__``, ``__main__``,
    ``common`` or a private helper) left out of `COMMANDS` would vanish from
    ``sdceval --help`` with no error (`contracts.check_commands_complete`)."""
    import sdceval.cli
    from contracts import check_commands_complete, command_modules
    modules = command_modules(sdceval.cli)
    assert len(modules) >= 10
    check_commands_complete(modules, sdceval.cli.COMMANDS)
