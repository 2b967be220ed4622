"""Partitioned evaluation and lattice objectives derived from the registries (issue 27
items 21 and 5).

* A measure computed in parts declares how on its registry entry (`MeasureSpec.partial`,
  a `sdceval.core.partial.PartialForm`: a partial step over one part and a merge step);
  `evaluate_partitioned` computes exactly the measures that declare one, so a user's
  measure (or the check of a user's privacy model) is computed in partitions with no
  change to sdceval.
* Each privacy model yields its lattice objective(s) (`PrivacyModel.lattice_objectives`),
  from which the objective registry derives its model objectives: recursive (c,ℓ)-
  diversity and a user's model are objectives with no other registration.
* A CSV original with a schema naming a column no measure uses (an identifier) is read
  as the in-memory path reads it: the column is dropped, not refused.
"""
from __future__ import annotations

import glob
import inspect
from pathlib import Path

import numpy as np
import pytest

import sdceval
import sdceval.catalog  # noqa: F401  (fills the measure registry)
from sdceval import privacy
from sdceval.core.measurement import Measurement
from sdceval.core.registry import MEASURES, Param, register_measure
from sdceval.lattice import model_objectives
from sdceval.lattice import objectives as objectives_module
from sdceval.lattice.objectives import OBJECTIVES, get_objective

dask = pytest.importorskip("dask")
pytest.importorskip("dask.dataframe")
pytest.importorskip("pyarrow")

from sdceval.experiments import partitioned  # noqa: E402
from sdceval.experiments.partitioned import evaluate_partitioned  # noqa: E402
from tests.test_partitioned import REL_SIZES, SIZES, parts, published  # noqa: E402
from tests.test_reidentification import mixed  # noqa: E402


@pytest.fixture(autouse=True)
def synchronous():
    with dask.config.set(scheduler="sync"):
        yield


class PairCoverage(privacy.PrivacyModel):
    """Every class holds at least ``q`` records of its least frequent sensitive value
    present (a tiny model written for this test, as a user would)."""

    name = "test_q"
    title = "q-coverage"
    params = (Param("q", int, None, low=1, protection="increasing", grid=(1, 2, 3),
                    description="records of the least frequent value present"),)
    needs_sensitive = True
    monotone_generalization = True   # a union's counts are sums of its parts' counts
    example = {"q": 2}

    def __init__(self, q):
        self.q = self.check_param("q", q)
        self.threshold = float(self.q)

    def value(self, counts, table_dist=None):
        c = np.asarray(counts, dtype=np.float64)
        return np.where(c > 0, c, np.inf).min(axis=1)


@pytest.fixture
def user_model():
    privacy.register_model(PairCoverage)
    yield PairCoverage
    privacy.MODELS.remove("test_q")


def test_removing_a_model_removes_its_check_and_objective():
    """What is derived from a model goes with it (a throw-away model left no objective
    behind for the next test to find)."""
    privacy.register_model(PairCoverage)
    assert "test_q_check" in MEASURES and "test_q" in OBJECTIVES
    privacy.MODELS.remove("test_q")
    assert "test_q_check" not in MEASURES and "test_q" not in OBJECTIVES


def _plain(problem, name: str, model) -> list[np.ndarray]:
    """Per node of the first batches, the objective from its definition: the least safe
    kept class's model value (the whole table's when nothing is kept)."""
    ctx = problem.ctx
    whole = model.value(ctx.table_counts[None, :], ctx.table_dist)[0]
    out = []
    for batch in problem.engine.batches(problem.lattice.nodes()[:40]):
        outcome = problem.outcome(batch)
        per_class = model.value(batch.sensitive_matrix(), ctx.table_dist)
        kept = outcome.kept
        if model.larger_is_safer:
            v = batch.node_min(np.where(kept, per_class, np.inf))
        else:
            v = batch.node_max(np.where(kept, per_class, -np.inf))
        any_kept = np.bincount(batch.node_of(np.flatnonzero(kept)),
                               minlength=batch.n_nodes) > 0
        got = objectives_module.evaluate(batch, outcome, [name], ctx)[name]
        np.testing.assert_allclose(got, np.where(any_kept, v, whole), rtol=1e-12)
        out.append(got)
    return out


# -- (a) a user's model and cl: lattice objectives and constraints with no registration ----
def test_a_user_model_is_a_lattice_objective_and_constraint(user_model, adult_small):
    from sdceval.lattice.search import LatticeProblem, evaluate_all, optimal
    obj = get_objective("test_q")
    assert obj.goal == "max" and obj.needs == ("sensitive",) and obj.model == "test_q"
    problem = LatticeProblem(adult_small, [privacy.parse_model_spec("test_q:q=2")],
                             rule="arx", max_suppression=0.05)
    _plain(problem, "test_q", user_model(1))
    assert "test_q" in problem.objectives_available()
    best = optimal(problem, "test_q", progress=False)
    table = evaluate_all(problem, ["test_q"], cache=False, progress=False)
    assert best.value == table[table.feasible]["test_q"].max()


def test_cl_is_a_lattice_objective(adult_small):
    from sdceval.lattice.search import LatticeProblem, optimal
    obj = get_objective("cl")
    assert obj.goal == "min" and obj.model == "cl"
    problem = LatticeProblem(adult_small, [privacy.parse_model_spec("cl:c=4,l=2")],
                             rule="arx", max_suppression=0.05)
    _plain(problem, "cl", privacy.make_model("cl", c=1, l=2))
    best = optimal(problem, "cl", progress=False)
    assert best.value < 4


# -- (b) a user's measure declaring partial + merge is computed in partitions -------------
def _squares(original, released, cols) -> tuple[float, int]:
    d = released[cols].to_numpy(np.float64) - original[cols].to_numpy(np.float64)
    return float((d * d).sum()), int(d.size)


@pytest.fixture
def user_measure():
    from sdceval.core.partial import PartialForm

    form = PartialForm(
        partial=lambda prep, part: _squares(part.dataset.frame, part.release.data,
                                            part.dataset.schema.numeric),
        merge=lambda *ps: (sum(p[0] for p in ps), sum(p[1] for p in ps)),
        finish=lambda prep, merged, params: Measurement(
            "test_mean_square_change", merged[0] / merged[1] * params["scale"], None))

    @register_measure("test_mean_square_change", category="utility",
                      direction="lower_is_better", kinds=("perturbative",),
                      params=[Param("scale", float, 1.0, low=0.0)],
                      description="mean squared change of the numeric cells",
                      partial=form)
    def mean_square_change(dataset, release, *, scale=1.0):
        s, c = _squares(dataset.frame, release.data, dataset.schema.numeric)
        return Measurement("test_mean_square_change", s / c * scale, None)
    yield
    MEASURES.remove("test_mean_square_change")


@pytest.fixture(scope="module")
def data():
    ds = mixed(240, 5)
    return {"ds": ds, "noise": sdceval.anonymize(ds, "noise", gamma=0.3, seed=2),
            "generalization": sdceval.anonymize(ds, "generalization", models=["k=5"],
                                                max_suppression=0.1)}


def test_a_user_measure_declaring_partial_and_merge_is_computed_in_partitions(
        user_measure, data):
    ds, rel = data["ds"], data["noise"]
    asked = "test_mean_square_change,test_mean_square_change:scale=2"
    got = evaluate_partitioned(parts(ds.frame, SIZES), parts(published(rel), REL_SIZES),
                               asked, schema=ds.schema)
    want = sdceval.evaluate(ds, rel, "test_mean_square_change").value
    assert got["test_mean_square_change"].value == pytest.approx(want, rel=1e-12)
    assert got["test_mean_square_change(scale=2)"].value == pytest.approx(2 * want,
                                                                          rel=1e-12)
    assert got["test_mean_square_change"].direction == "lower_is_better"


def test_the_checks_of_every_model_are_computed_in_partitions(user_model, data):
    """The privacy checks are generated from the model registry; their partial form (the
    classes' sensitive counts) is declared once, so ℓ, (c,ℓ), δ, t and a user's model's
    checks equal the in-memory ones."""
    ds, rel = data["ds"], data["generalization"]
    asked = ("l_diversity:l=2,recursive_cl_diversity:c=3,t_closeness,delta_disclosure,"
             "test_q_check:q=2,test_q_check:include_suppressed=true")
    got = evaluate_partitioned(parts(ds.frame, SIZES), parts(published(rel), REL_SIZES),
                               asked, schema=ds.schema)
    from sdceval.compare.ranking import parse_measure_list
    for label, (name, params) in parse_measure_list(asked).items():
        want = sdceval.evaluate(ds, rel, name, **params)
        assert got[label].value == pytest.approx(want.value, rel=1e-12), label
        assert got[label].details == pytest.approx(want.details, rel=1e-12), label


# -- (c) no hand list ------------------------------------------------------------------------
def _sources(pattern: str) -> dict[str, str]:
    root = Path(sdceval.__file__).parent
    return {p: Path(p).read_text() for p in glob.glob(str(root / pattern))}


def test_partitioned_measures_are_the_entries_declaring_a_partial_form():
    declared = {n for n, s in MEASURES.items() if s.partial is not None}
    assert set(partitioned.partitioned_measures()) == declared
    assert {"k_anonymity", "discernibility", "avg_class_size", "query_error",
            "linkage_risk"} <= declared
    sources = _sources("experiments/partition*.py")
    assert len(sources) >= 2   # split below 600 lines (issue 27 item 22)
    for path, text in sources.items():
        assert len(text.splitlines()) < 600, path
        for name in MEASURES:
            assert f'"{name}"' not in text and f"'{name}'" not in text, (path, name)


def test_model_objectives_are_derived_from_the_model_registry():
    derived = {o.name for cls in privacy.MODELS.values() for o in cls.lattice_objectives()}
    assert {"k", "l_distinct", "l_probabilistic", "l_entropy", "t", "t_js", "delta",
            "cl"} <= derived
    assert {n for n, o in OBJECTIVES.items() if o.model} == derived
    source = inspect.getsource(objectives_module) + inspect.getsource(model_objectives)
    for name in derived:
        assert f'_register("{name}"' not in source and f'objective("{name}"' not in source


# -- item 5: the schema that made the release ------------------------------------------------
def test_a_csv_original_with_an_identifier_in_its_schema_is_accepted(tmp_path):
    from sdceval.core.loaders import open_dataset
    from sdceval.core.release_io import read_release
    from sdceval.core.release_order import write_release
    base = mixed(120, 3)
    frame = base.frame.assign(id=[f"p{i:05d}" for i in range(120)])
    frame.to_csv(tmp_path / "data.csv", index=False)
    (tmp_path / "schema.toml").write_text(
        'identifier = ["id"]\nqi = ["age", "region", "education"]\nsensitive = "disease"\n'
        'numeric = ["income", "spend"]\n')
    ds = open_dataset(str(tmp_path / "data.csv"), schema_file=tmp_path / "schema.toml")
    rel = sdceval.anonymize(ds, "generalization", models=["k=4"], max_suppression=0.05)
    write_release(rel, tmp_path / "rel.csv", dataset=ds, keep_order=True)
    asked = "k_anonymity,discernibility,query_error:n_queries=100"
    got = evaluate_partitioned(tmp_path / "data.csv", tmp_path / "rel.csv", asked,
                               schema=tmp_path / "schema.toml", blocksize=2000)
    rel = read_release(ds, tmp_path / "rel.csv", key=False)
    for label, name, params in (("k_anonymity", "k_anonymity", {}),
                                ("discernibility", "discernibility", {}),
                                ("query_error(n_queries=100)", "query_error",
                                 {"n_queries": 100})):
        want = sdceval.evaluate(ds, rel, name, **params)
        assert got[label].value == pytest.approx(want.value, rel=1e-12), label


def test_the_built_in_shortcuts_equal_the_derived_definition(adult_small):
    """The vectorized computations of k, ℓ, t, t_js, δ and (c,ℓ) equal the objective
    derived from the model's per-class value (one definition; the shortcuts only go
    faster)."""
    from sdceval.lattice.search import LatticeProblem
    problem = LatticeProblem(adult_small, [privacy.KAnonymity(5)], rule="arx",
                             max_suppression=0.05)
    derived = {n: o for n, o in OBJECTIVES.items() if o.model}
    fast = [n for n in derived if n in model_objectives.SHORTCUTS]
    assert set(fast) == {"k", "l_distinct", "l_probabilistic", "l_entropy", "t", "t_js",
                         "delta", "cl"}
    for batch in problem.engine.batches(problem.lattice.nodes()[::7]):
        outcome = problem.outcome(batch)
        for name in fast:
            cls = privacy.model_class(derived[name].model)
            decl = next(d for d in cls.lattice_objectives() if d.name == name)
            want = model_objectives.model_values(batch, outcome, problem.ctx, cls.name,
                                                 decl)
            got = derived[name].compute(batch, outcome, problem.ctx)
            np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12, err_msg=name)
