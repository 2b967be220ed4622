"""Beyond Dewri et al. 2010 (issue 9 items 6–7): the exact minimal-PBG search, the
NSGA-II baseline and the seeded study of many PBG-EA runs."""
import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from lattice_data import lattice_dataset, random_tree

from sdceval.core.dataset import Dataset
from sdceval.core.errors import SdcevalError
from sdceval.core.hierarchy import Hierarchy
from sdceval.core.schema import Schema
from sdceval.lattice.search import LatticeProblem, evaluate_all
from sdceval.pbg import study as study_mod
from sdceval.pbg.baseline import nsga2
from sdceval.pbg.exact import exact_minimal_pbgs
from sdceval.pbg.quality import NodeQuality, minimal_pbgs
from sdceval.pbg.study import pbg_study, resolve_objectives


@pytest.fixture(scope="module")
def problem():
    """Four QIs (6·5·4·2 = 240 nodes), 400 records, sensitive s, label y."""
    rng = np.random.default_rng(11)
    n = 400
    frame = pd.DataFrame({
        "a": rng.integers(0, 32, n), "b": rng.integers(0, 16, n),
        "c": [f"c{v}" for v in rng.integers(0, 6, n)],
        "e": rng.choice(["u", "v", "w"], n),
        "s": [f"s{v}" for v in rng.integers(0, 5, n)], "y": rng.choice(["p", "q"], n)})
    hier = {"a": Hierarchy.intervals(np.arange(32), [2, 4, 8, 16], name="a"),
            "b": Hierarchy.intervals(np.arange(16), [2, 4, 8], name="b"),
            "c": random_tree("c", 6, 2, np.random.default_rng(1)),
            "e": Hierarchy.flat(["u", "v", "w"], name="e"),
            "s": Hierarchy.flat([f"s{v}" for v in range(5)], name="s")}
    schema = Schema.from_roles(frame, qi=["a", "b", "c", "e"], sensitive="s", label="y",
                               hierarchies=hier)
    return LatticeProblem(Dataset(frame, schema, name="toy"), rule="dewri", max_suppression=0.02)


def _levels(frame, problem):
    return set(map(tuple, frame[list(problem.lattice.names)].to_numpy().tolist()))


SETS = [["k", "glm"], ["k", "l_distinct", "glm"], ["s_k", "glm"], ["s_k", "s_l", "glm"],
        ["k", "glm", "cm"]]


@pytest.mark.parametrize("objectives", SETS)
def test_exact_search_finds_exactly_the_minimal_pbgs(problem, objectives):
    table = evaluate_all(problem, objectives, cache=False, progress=False)
    want = minimal_pbgs(table, objectives)
    res = exact_minimal_pbgs(problem, objectives, progress=False)
    assert _levels(res.front, problem) == _levels(want, problem)
    pd.testing.assert_frame_equal(
        res.front.sort_values(list(problem.lattice.names))[objectives].reset_index(drop=True),
        want.sort_values(list(problem.lattice.names))[objectives].reset_index(drop=True))
    assert 0 < res.nodes_evaluated <= problem.lattice.size


def test_exact_search_skips_nodes_where_the_bounds_allow(problem):
    res = exact_minimal_pbgs(problem, ["k", "glm"], progress=False)
    assert res.nodes_evaluated < problem.lattice.size
    assert res.bounds["k"].startswith("the successors")
    # no bound on CM from above: every node is evaluated, in the engine's batches
    res = exact_minimal_pbgs(problem, ["k", "cm"], progress=False)
    assert res.bounds["cm"].startswith("none") and res.nodes_evaluated == problem.lattice.size


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(lattice_dataset(max_qis=3, max_n=60))
def test_exact_search_on_random_data(ds):
    p = LatticeProblem(ds, rule="dewri", max_suppression=0.05)
    for objectives in (["k", "glm"], ["s_k", "s_l", "glm"], ["k", "l_distinct", "glm"]):
        table = evaluate_all(p, objectives, cache=False, progress=False)
        want = minimal_pbgs(table, objectives)
        got = exact_minimal_pbgs(p, objectives, progress=False).front
        assert _levels(got, p) == _levels(want, p)


def test_exact_search_refuses_one_objective(problem):
    with pytest.raises(SdcevalError, match="at least two objectives.*lattice search"):
        exact_minimal_pbgs(problem, ["glm"])


def test_nsga2_keeps_the_budget_and_is_reproducible(problem):
    table = evaluate_all(problem, ["k", "glm"], cache=False, progress=False)
    runs = [nsga2(NodeQuality.from_table(problem, ["k", "glm"], table), 60, seed=3)
            for _ in range(2)]
    a, b = runs
    assert np.array_equal(a.levels, b.levels) and a.nodes_evaluated == b.nodes_evaluated
    assert 60 <= a.nodes_evaluated < 60 + 25
    assert len(a.values) <= 25
    every = nsga2(NodeQuality.from_table(problem, ["k", "glm"], table), 60, seed=3,
                  answer="evaluated")
    # the non-dominated set of everything evaluated is never worse-covered
    m = minimal_pbgs(table, ["k", "glm"])[["k", "glm"]].to_numpy(float)
    from sdceval.pbg.metrics import rr
    assert rr(every.values, m, [1, 1], ["max", "min"]) >= rr(a.values, m, [1, 1],
                                                            ["max", "min"])
    # one run gives both answers, the same as two runs with the same seed
    from sdceval.pbg.baseline import nsga2_answers
    both = nsga2_answers(NodeQuality.from_table(problem, ["k", "glm"], table), 60, seed=3)
    assert np.array_equal(both["population"].values, a.values)
    assert np.array_equal(both["evaluated"].values, every.values)
    with pytest.raises(SdcevalError, match="budget"):
        nsga2(NodeQuality.from_table(problem, ["k", "glm"], table), 0)
    with pytest.raises(SdcevalError, match="answer"):
        nsga2(NodeQuality.from_table(problem, ["k", "glm"], table), 10, answer="best")


def test_study_scores_every_run_and_is_reproducible(problem):
    s1 = pbg_study(problem, "k,l,glm", [2, 1, 50], runs=2, seed=5, baseline=True,
                   cache=False)
    s2 = pbg_study(problem, ["k", "l_distinct", "glm"], [2, 1, 50], runs=2, seed=5,
                   baseline=True, cache=False)
    assert s1.objectives == ["k", "l_distinct", "glm"]
    pd.testing.assert_frame_equal(s1.metrics.drop(columns="seconds"),
                                  s2.metrics.drop(columns="seconds"))
    m = s1.metrics
    assert list(m["algorithm"].unique()) == ["pbg_ea", "nsga2", "nsga2_all_evaluated"]
    ea = m[m["algorithm"] == "pbg_ea"]
    assert ea["seed"].tolist() == [5, 6]
    assert ((ea["rr"] >= 0) & (ea["rr"] <= 1)).all()
    assert (ea["ce_mean"] * ea["archive"]).round(12).tolist() == ea["ce"].round(12).tolist()
    # reading ii of A35: an ε = 1 run per seed, scored at the coarse boxes
    assert "rr_unit_archive" in m.columns and len(s1.unit_runs) == 2
    # the NSGA-II budget is the PBG-EA run's node count with the same seed
    nb = m[m["algorithm"] == "nsga2"]["nodes_evaluated"].to_numpy()
    assert (nb >= ea["nodes_evaluated"].to_numpy()).all()
    summary = s1.summary().set_index("algorithm")
    assert summary.loc["pbg_ea", "rr_mean"] == pytest.approx(ea["rr"].mean())
    assert summary.loc["pbg_ea", "rr_var"] == pytest.approx(ea["rr"].var(ddof=1))
    d = s1.to_dict()
    assert d["minimal_pbgs"] == len(s1.front) and len(d["runs"]) == len(m)


def test_study_on_a_lattice_too_large_for_m(problem, monkeypatch):
    monkeypatch.setattr(study_mod, "MAX_EXHAUSTIVE_NODES", 100)
    s = pbg_study(problem, ["k", "glm"], runs=1, seed=0)
    assert s.front is None and "CE and RR cannot be computed" in s.notes[0]
    assert "rr" not in s.metrics.columns and s.metrics["nodes_evaluated"].iloc[0] > 0


def test_paper_aliases_and_bad_input(problem):
    assert resolve_objectives("k,l,GLM") == ["k", "l_distinct", "glm"]
    assert resolve_objectives(["S_k", "S_l", "CM"]) == ["s_k", "s_l", "cm"]
    with pytest.raises(SdcevalError, match="at least two objectives"):
        pbg_study(problem, ["k"], runs=1)
    with pytest.raises(SdcevalError, match="unknown lattice objective.*gml.*glm"):
        pbg_study(problem, ["k", "gml"], runs=1)
    with pytest.raises(SdcevalError, match="eps"):
        pbg_study(problem, ["k", "glm"], [1, 0], runs=1)
    with pytest.raises(SdcevalError, match="eps"):
        pbg_study(problem, ["k", "glm"], [1, 1, 1], runs=1)
    with pytest.raises(SdcevalError, match="runs"):
        pbg_study(problem, ["k", "glm"], runs=0)


def test_exact_search_without_a_bound_evaluates_everything_in_batches(problem):
    # t has no bound here: nothing can be skipped, the answer is still M exactly
    table = evaluate_all(problem, ["k", "t"], cache=False, progress=False)
    want = minimal_pbgs(table, ["k", "t"])
    res = exact_minimal_pbgs(problem, ["k", "t"], progress=False)
    assert _levels(res.front, problem) == _levels(want, problem)
    assert res.nodes_evaluated == problem.lattice.size
    assert res.bounds["t"].startswith("none")
