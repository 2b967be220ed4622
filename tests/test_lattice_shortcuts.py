"""The lattice's computational shortcuts equal the plain definitions (issue 7, speed):
t and t_js as a max over kept classes with most classes skipped by convexity; S_ℓ from
segment sums over a node's pairs; value sets of classes and their set maxima; a class
subset of a batch; a node's feasibility from its class sizes alone; an objective
computed from the levels; the bottom's kept key changes."""
import types

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from lattice_data import lattice_dataset

from sdceval.lattice import class_stats
from sdceval.lattice.batch import ClassBatch
from sdceval.lattice.objectives import OBJECTIVES, _t_per_class
from sdceval.lattice.search import LatticeProblem, optimal
from sdceval.lattice.suppression import (ArxRule, DewriRule, Outcome, SuppressionRule,
                                         _dropped)
from sdceval.privacy import KAnonymity, LDiversity


def _random_batch(rng, n_nodes, S, max_classes=12, max_count=4):
    """A batch of ``n_nodes`` nodes (some without classes) whose classes hold random
    counts of ``S`` sensitive values (one value, or several)."""
    per_node = rng.integers(0, max_classes, n_nodes)
    per_node[rng.random(n_nodes) < 0.2] = 0
    C = int(per_node.sum())
    dense = rng.integers(0, max_count, (C, S)) * (rng.random((C, S)) < 2.5 / S)
    one = rng.random(C) < 0.4  # classes of one value (point masses)
    dense[one] = 0
    dense[one, rng.integers(0, S, one.sum())] = rng.integers(1, 6, one.sum())
    dense[dense.sum(axis=1) == 0, rng.integers(0, S)] = 1
    cls, val = np.nonzero(dense)
    offsets = np.r_[0, np.cumsum(per_node)].astype(np.int64)
    return ClassBatch(np.zeros((n_nodes, 1), dtype=np.int64), offsets,
                      dense.sum(axis=1).astype(np.int64), np.zeros((1, C), dtype=np.int64),
                      cls.astype(np.int64), val.astype(np.int64),
                      dense[cls, val].astype(np.int64), S), dense


def _outcome(batch, kept):
    sup, node, records = _dropped(batch, kept)
    m = batch.n_nodes
    return Outcome(kept, records, np.ones(m, bool), np.ones(m, np.int64), kept, sup, node)


class _Ctx:
    """The part of `LatticeContext` the JS objective reads (any number of values)."""

    def __init__(self, table_dist):
        self.table_dist = table_dist
        self.d = 1
        self._memo = {}

    def memo(self, key, compute):
        if key not in self._memo:
            self._memo[key] = compute()
        return self._memo[key]


def _plain_max(batch, kept, per_class):
    v = batch.node_max(np.where(kept, per_class, -np.inf))
    return np.where(v == -np.inf, 0.0, v)


@pytest.mark.parametrize("S", [1, 3, 14, 20, 53, 70])
@pytest.mark.parametrize("seed", range(4))
def test_js_max_by_convexity_equals_every_class(S, seed):
    """S beyond 16 uses several lookup tables, beyond 52 the per-pair maxima."""
    rng = np.random.default_rng(seed)
    batch, dense = _random_batch(rng, 9, S)
    Q = rng.dirichlet(np.ones(S))
    ctx = _Ctx(Q)
    kept = rng.random(batch.n_classes) < 0.8
    got = OBJECTIVES["t_js"].compute(batch, _outcome(batch, kept), ctx)
    want = _plain_max(batch, kept, class_stats.js(batch, Q))
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-15)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(lattice_dataset(max_qis=3, max_n=60), st.integers(0, 2**31 - 1))
def test_class_objectives_equal_plain_definitions_on_whole_lattices(ds, seed):
    """Every node of a random lattice in a few batches, random classes suppressed:
    t, t_js (hierarchical EMD and JS), the ℓ objectives and S_ℓ, S_ℓ-all against
    per-class values."""
    rng = np.random.default_rng(seed)
    p = LatticeProblem(ds, rule="dewri", max_suppression=0)
    for batch in p.engine.batches(max_classes=64):
        kept = rng.random(batch.n_classes) < rng.choice([0.3, 0.9, 1.0])
        out = _outcome(batch, kept)
        for name, dist in (("t", "emd"), ("t_js", "js")):
            got = OBJECTIVES[name].compute(batch, out, p.ctx)
            want = _plain_max(batch, kept, _t_per_class(batch, p.ctx, dist))
            # a class of one value gets the exact point distance; the per-class formula
            # may leave ~1e-16 (e.g. JS's ln n − (1/n) n ln n)
            np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-15, err_msg=name)
        dense = batch.sensitive_matrix()
        share = dense / dense.sum(axis=1, keepdims=True)
        with np.errstate(divide="ignore", invalid="ignore"):
            H = -np.where(share > 0, share * np.log(share), 0.0).sum(axis=1)
        per_class = {"l_distinct": (dense > 0).sum(axis=1),
                     "l_probabilistic": dense.sum(axis=1) / dense.max(axis=1),
                     "l_entropy": np.exp(H)}
        for name, values in per_class.items():
            whole = LDiversity(1.0, name[2:]).value(p.ctx.table_counts[None, :],
                                                    p.ctx.table_dist)[0]
            v = batch.node_min(np.where(kept, values, np.inf))
            np.testing.assert_allclose(OBJECTIVES[name].compute(batch, out, p.ctx),
                                       np.where(np.isfinite(v), v, whole), rtol=1e-12,
                                       err_msg=name)
        squares = (dense ** 2).sum(axis=1)
        assert np.array_equal(OBJECTIVES["s_l"].compute(batch, out, p.ctx),
                              batch.node_sum(np.where(kept, squares, 0)))
        assert np.array_equal(OBJECTIVES["s_l_all"].compute(batch, out, p.ctx),
                              batch.node_sum(squares))


@pytest.mark.parametrize("S", [1, 5, 16, 17, 40, 52])
def test_value_sets_and_set_max_equal_brute_force(S):
    rng = np.random.default_rng(S)
    batch, dense = _random_batch(rng, 5, S)
    sets = class_stats.value_sets(batch)
    for c in range(batch.n_classes):
        assert [s for s in range(S) if sets[c] >> s & 1] == list(np.flatnonzero(dense[c]))
    per_value = rng.normal(size=S)
    want = [per_value[dense[c] > 0].max() for c in range(batch.n_classes)]
    assert np.array_equal(class_stats.set_max(sets, class_stats.set_max_tables(per_value)),
                          want)
    big, _ = _random_batch(rng, 2, 53)
    assert class_stats.value_sets(big) is None  # beyond a float64's exact integers


def test_select_classes_keeps_nodes_and_renumbers_pairs():
    rng = np.random.default_rng(1)
    batch, dense = _random_batch(rng, 7, 6)
    idx = np.flatnonzero(rng.random(batch.n_classes) < 0.5)
    sub = batch.select_classes(idx)
    assert sub.n_nodes == batch.n_nodes
    assert np.array_equal(sub.sensitive_matrix(), dense[idx])
    assert np.array_equal(sub.sizes, batch.sizes[idx])
    assert np.array_equal(sub.node_of_class, batch.node_of_class[idx])
    empty = batch.select_classes(np.zeros(0, dtype=np.int64))
    assert empty.n_classes == 0 and empty.n_nodes == batch.n_nodes


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(1, 12), min_size=1, max_size=30), st.integers(1, 6),
       st.integers(0, 40))
def test_feasibility_from_sizes_equals_the_rules_outcome(sizes, k, limit):
    sizes = np.array(sizes, dtype=np.int64)
    n = int(sizes.sum())
    batch = ClassBatch(np.zeros((1, 1), dtype=np.int64), np.array([0, len(sizes)]), sizes,
                       np.zeros((1, len(sizes)), dtype=np.int64))
    for rule in (DewriRule(limit), ArxRule(limit)):
        for models in ([], [KAnonymity(k)]):
            want = bool(rule.apply(batch, models, None, n).feasible[0])
            assert rule.feasible_sizes(sizes, models, n) == want, (rule, models)
            # the base class's version (a rule that does not override it)
            assert SuppressionRule.feasible_sizes(rule, sizes, models, n) == want


def test_search_with_a_sensitive_model_checks_the_full_outcome(adult_small):
    """ℓ-diversity reads the sensitive counts: the search takes the rule's outcome
    (not the size shortcut), and its optimum is the exhaustive one."""
    from sdceval.lattice.search import evaluate_all
    p = LatticeProblem(adult_small, [KAnonymity(2), LDiversity(2, "distinct")], rule="arx",
                       max_suppression=0.02)
    assert not p._sizes_only
    res = optimal(p, "glm", progress=False)
    table = evaluate_all(p, ["glm"], cache=False, progress=False)
    best = table.loc[table["feasible"], "glm"].min()
    assert res.value == pytest.approx(best, rel=1e-12)


def test_exact_bounds_equal_the_class_table_values(adult_small):
    """An objective whose bound is declared exact (nu_entropy: the levels alone): the
    bound's terms summed left to right are the batch value to the last bit, on every
    node; the search's result reports the pick's own outcome."""
    from sdceval.lattice.search import _nd_sum
    p = LatticeProblem(adult_small, [KAnonymity(3)], rule="arx", max_suppression=0.01)
    exact = [name for name, o in OBJECTIVES.items() if o.bound_exact]
    assert exact == ["nu_entropy"]
    obj = OBJECTIVES["nu_entropy"]
    nodes = p.lattice.nodes()
    batch = ClassBatch.of_tables([p.engine.classes(v) for v in nodes])
    out = p.outcome(batch)
    assert np.array_equal(_nd_sum(p.lattice, obj.bound(p.ctx)), obj.compute(batch, out, p.ctx))
    terms = obj.bound(p.ctx).tolist()
    for v, want in zip(nodes.tolist(), obj.compute(batch, out, p.ctx).tolist()):
        got = 0.0
        for q, lv in enumerate(v):
            got += terms[q][lv]
        assert got == want
    res = optimal(p, "nu_entropy", progress=False)
    node = p.evaluate_node(res.levels, ["nu_entropy", "k"])
    assert res.evaluation == {"suppressed": node["suppressed"], "k": node["k"],
                              "nu_entropy": node["nu_entropy"]}


def test_bottom_key_changes_are_kept_within_their_budget(adult_small, monkeypatch):
    """Roll-ups from the distinct rows reuse the kept key changes (sorted roll-ups) and
    node ids (counted ones), and past the byte budget compute them without keeping
    them: the same tables either way."""
    from sdceval import Dataset
    from sdceval.lattice import engine as engine_mod
    ds = Dataset(adult_small.frame, adult_small.schema.with_roles(sensitive=[], label=[]),
                 name="no sensitive")  # k-anonymity's roll-up: class sizes only
    nodes = [tuple(v) for v in LatticeProblem(ds).lattice.nodes()[1::5]]
    kept = LatticeProblem(ds).engine
    want = [f(kept.bottom, v) for v in nodes for f in (kept._rollup, kept._rollup_merged)]
    assert kept._bottom_lifts and kept._bottom_ids  # both kinds of roll-up ran
    assert kept._bottom_lift_bytes <= engine_mod._BOTTOM_LIFT_BYTES
    monkeypatch.setattr(engine_mod, "_BOTTOM_LIFT_BYTES", 0)
    bare = LatticeProblem(ds).engine
    got = [f(bare.bottom, v) for v in nodes for f in (bare._rollup, bare._rollup_merged)]
    assert not bare._bottom_lifts and not bare._bottom_ids
    for a, b in zip(want, got):
        assert np.array_equal(a.sizes, b.sizes) and np.array_equal(a.keys, b.keys)
