"""Lattice objectives, suppression rules, exhaustive evaluation and the optimal search
(issue 7): objectives against a brute-force pandas computation and against the
release measures; both suppression rules on hand-made class tables; the optimal search
equal to the exhaustive minimum (ties included) on random small schemas."""
import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from lattice_data import lattice_dataset
from privacy_data import emd, ground_matrix, js

from sdceval.core.errors import SdcevalError
from sdceval.lattice.batch import ClassBatch
from sdceval.lattice.objectives import OBJECTIVES, get_objective
from sdceval.lattice.search import (LatticeProblem, cache_dir, evaluate_all, optimal)
from sdceval.lattice.suppression import ArxRule, DewriRule, limit_records, make_rule
from sdceval.measures.information_loss import avg_class_size, cm, discernibility, glm
from sdceval.methods.generalization import evaluate_node, node_release
from sdceval.privacy import KAnonymity, LDiversity, TCloseness


# -- suppression rules on hand-made class tables ----------------------------------------
def _batch(*nodes):
    """A ClassBatch of nodes given as lists of class sizes (no sensitive counts)."""
    sizes = np.concatenate([np.asarray(s, dtype=np.int64) for s in nodes])
    offsets = np.r_[0, np.cumsum([len(s) for s in nodes])].astype(np.int64)
    return ClassBatch(np.zeros((len(nodes), 1), dtype=np.int64), offsets, sizes,
                      np.zeros((1, len(sizes)), dtype=np.int64))


def test_dewri_rule_by_hand():
    # sizes 1,1,2,3,5 (12 records).  R(1)=2, R(2)=4, R(3)=7, R(5)=12.
    b = _batch([1, 1, 2, 3, 5], [1, 1, 2, 3, 5], [1, 1, 2, 3, 5], [4, 4, 4])
    # η=2: R(1)=2 is not > 2, R(2)=4 > 2 -> s* = 2, the singletons go (j = 1)
    out = DewriRule(2).apply(_batch([1, 1, 2, 3, 5]), [], None, 12)
    assert out.k.tolist() == [2] and out.suppressed.tolist() == [2]
    assert out.kept.tolist() == [False, False, True, True, True]
    # η=4: R(2)=4 is not > 4, R(3)=7 > 4 -> s* = 3: 1,1,2 suppressed (4 records)
    out = DewriRule(4).apply(_batch([1, 1, 2, 3, 5]), [], None, 12)
    assert out.k.tolist() == [3] and out.suppressed.tolist() == [4]
    # η=0: nothing suppressed, k = the smallest class
    out = DewriRule(0).apply(_batch([1, 1, 2, 3, 5]), [], None, 12)
    assert out.k.tolist() == [1] and out.suppressed.tolist() == [0]
    # η ≥ N: no j exists, only the largest class is kept
    out = DewriRule(100).apply(_batch([1, 1, 2, 3, 5]), [], None, 12)
    assert out.k.tolist() == [5] and out.suppressed.tolist() == [7]
    # several nodes in one batch, classes unsorted: same as one by one
    out = DewriRule(4).apply(_batch([5, 1, 3, 1, 2], [4, 4, 4], [2, 9]), [], None, 12)
    assert out.k.tolist() == [3, 4, 9] and out.suppressed.tolist() == [4, 0, 2]
    # k-anonymity under the rule: feasible iff j + 1 >= k
    out = DewriRule(4).apply(_batch([1, 1, 2, 3, 5], [4, 4, 4]), [KAnonymity(4)], None, 12)
    assert out.feasible.tolist() == [False, True]
    assert b.n_nodes == 4


@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(st.integers(1, 12), min_size=1, max_size=8), min_size=1,
                max_size=5), st.integers(0, 60))
def test_dewri_rule_paths_agree_with_the_reference(nodes, eta):
    """Histogram, sorting and single-node paths = `suppression_threshold` (the plain
    implementation in methods.generalization) node by node."""
    from sdceval.methods.generalization import suppression_threshold
    b = _batch(*nodes)
    want = [suppression_threshold(np.array(sz), eta) for sz in nodes]
    assert DewriRule._by_histogram(b, eta).tolist() == want
    assert DewriRule._by_sorting(b, eta).tolist() == want
    n = int(b.sizes.sum())
    assert DewriRule(eta).apply(b, [], None, n).k.tolist() == want
    for sz, w in zip(nodes, want):
        assert DewriRule(eta).apply(_batch(sz), [], None, n).k.tolist() == [w]


def test_arx_rule_by_hand():
    b = _batch([1, 1, 2, 3, 5], [4, 4, 4], [12])
    # k = 3: classes 1, 1, 2 violate (4 records)
    out = ArxRule(4).apply(b, [KAnonymity(3)], None, 12)
    assert out.suppressed.tolist() == [4, 0, 0]
    assert out.feasible.tolist() == [True, True, True]
    assert out.k.tolist() == [3, 4, 12]
    out = ArxRule(3).apply(b, [KAnonymity(3)], None, 12)
    assert out.feasible.tolist() == [False, True, True]
    # a fraction of the records, floored: 0.34 * 12 = 4.08 -> 4
    assert ArxRule(0.34).records(12) == 4 and ArxRule(0.33).records(12) == 3
    # no model: nothing is suppressed
    out = ArxRule(0).apply(b, [], None, 12)
    assert out.suppressed.tolist() == [0, 0, 0] and out.k.tolist() == [1, 4, 12]
    # everything suppressed (allowed by the limit): k is N, the '*' rows' class
    out = ArxRule(12).apply(_batch([1, 2]), [KAnonymity(5)], None, 3)
    assert out.suppressed.tolist() == [3] and out.k.tolist() == [3]


def test_rule_and_limit_errors_are_named():
    with pytest.raises(SdcevalError, match="unknown suppression rule 'dewry'.*dewri"):
        make_rule("dewry", 0.01)
    with pytest.raises(SdcevalError, match="max_suppression.*whole number"):
        limit_records(2.5, 100)
    with pytest.raises(SdcevalError, match="max_suppression must be >= 0"):
        limit_records(-0.1, 100)
    assert limit_records(0.04, 30162) == 1206 and limit_records(301, 30162) == 301


# -- objectives against brute force -----------------------------------------------------
def brute_objectives(ds, levels, eta):
    """Every objective of a node, from the records with pandas and the rule by a plain
    loop over class sizes (Dewri et al. §6 as printed)."""
    qis = list(ds.schema.qis)
    gen = pd.DataFrame({q: ds.hierarchy(q).node_of[lv][ds.codes(q)]
                        for q, lv in zip(qis, levels)})
    key = pd.Series(["|".join(map(str, r)) for r in gen.to_numpy()])
    size = key.map(key.value_counts()).to_numpy()
    # smallest j with |E_1| + ... + |E_{j+1}| > η
    by_size = pd.Series(size).value_counts()  # class size -> records
    j, total = 0, 0
    while True:
        total += int(by_size.get(j + 1, 0))
        if total > eta or j + 1 >= size.max():
            break
        j += 1
    kept = size >= j + 1
    n, d = ds.n, len(qis)
    s = pd.Series(ds.frame["s"].to_numpy())
    y = pd.Series(ds.frame["y"].to_numpy())
    df = pd.DataFrame({"key": key, "s": s, "y": y})[kept]
    out = {"k": j + 1, "suppressed": int((~kept).sum()),
           "classes": df["key"].nunique()}
    hs = ds.hierarchy("s")
    domain = list(hs.leaves)
    Q = s.value_counts().reindex(domain, fill_value=0).to_numpy(float) / n
    if len(df):
        tab = pd.crosstab(df["key"], df["s"]).reindex(columns=domain, fill_value=0)
    else:  # everything suppressed: the '*' rows are one class
        tab = pd.DataFrame([s.value_counts().reindex(domain, fill_value=0)])
    C = tab.to_numpy(float)
    P = C / C.sum(axis=1, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        H = -np.nansum(np.where(P > 0, P * np.log(P), 0.0), axis=1)
    out["l_distinct"] = (C > 0).sum(axis=1).min()
    out["l_probabilistic"] = (C.sum(axis=1) / C.max(axis=1)).min()
    out["l_entropy"] = np.exp(H).min()
    D = ground_matrix(hs, "hierarchical")
    out["t"] = max(emd(p, Q, D) for p in P) if len(df) else 0.0
    out["t_js"] = max(js(p, Q) for p in P) if len(df) else 0.0
    with np.errstate(divide="ignore"):
        out["delta"] = (np.abs(np.log(P[:, Q > 0] / Q[Q > 0])).max() if len(df) else 0.0)
    ksize = df.groupby("key")["key"].transform("size")
    out["s_k"] = float(ksize.sum())
    out["s_l"] = float(df.groupby(["key", "s"])["s"].transform("size").sum())
    out["discernibility_brute"] = float((ksize ** 1).sum() + n * out["suppressed"])
    minority = df.groupby("key")["y"].transform(lambda v: v.value_counts().iloc[0])
    out["cm"] = float((ksize - minority).groupby(df["key"]).first().sum()
                      + out["suppressed"])
    out["avg_class_size"] = ((n - out["suppressed"]) / out["classes"]
                             if out["classes"] else float(n))
    return out


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(lattice_dataset(), st.data())
def test_objectives_equal_brute_force_and_release_measures(ds, data):
    heights = [ds.hierarchy(q).height for q in ds.schema.qis]
    levels = tuple(data.draw(st.integers(0, h)) for h in heights)
    eta = data.draw(st.integers(0, ds.n))
    p = LatticeProblem(ds, rule="dewri", max_suppression=eta if eta >= 1 else 0)
    got = p.evaluate_node(levels)
    want = brute_objectives(ds, levels, eta)
    for name in ("k", "suppressed", "classes", "l_distinct", "l_probabilistic",
                 "l_entropy", "t", "t_js", "delta", "s_k", "s_l", "cm", "avg_class_size"):
        assert got[name] == pytest.approx(want[name], rel=1e-9, abs=1e-9), name
    # the release measures, an independent implementation on the published table
    rel = node_release(ds, evaluate_node(ds, levels, max_suppression=eta if eta >= 1 else 0))
    assert got["glm"] == pytest.approx(glm(ds, rel, normalized=False).value, rel=1e-9, abs=1e-9)
    assert got["glm_normalized"] == pytest.approx(glm(ds, rel).value, rel=1e-9, abs=1e-12)
    assert got["cm_fraction"] == pytest.approx(cm(ds, rel).value, rel=1e-12)
    assert got["discernibility"] == pytest.approx(discernibility(ds, rel).value, rel=1e-12)
    if got["suppressed"] == 0 or got["classes"]:
        assert got["avg_class_size"] == pytest.approx(avg_class_size(ds, rel).value)


def test_unknown_objective_suggests():
    with pytest.raises(SdcevalError, match="unknown lattice objective.*'glmm'.*glm"):
        get_objective("glmm")


def test_objective_needing_a_label_is_named(adult_small):
    from sdceval import Dataset
    ds = Dataset(adult_small.frame, adult_small.schema.with_roles(ignore="income"))
    assert ds.schema.label is None
    p = LatticeProblem(ds)
    with pytest.raises(SdcevalError, match="'cm' needs a class label.*role 'label'"):
        p.evaluate_node((0,) * len(ds.schema.qis), ["cm"])


# -- exhaustive == optimal ------------------------------------------------------------------
def exhaustive_pick(table, qis, objective):
    """The pick of `optimal` recomputed from the exhaustive table: best value, ties
    within 1e-9 relative, lowest height then lexicographic levels."""
    f = table[table["feasible"]]
    if f.empty:
        return None, None, set()
    v = f[objective].to_numpy(float)
    v = -v if get_objective(objective).goal == "max" else v
    best = v.min()
    tie = f[v <= best + 1e-9 * max(1.0, abs(best))].sort_values(["height", *qis])
    ties = {tuple(int(x) for x in r) for r in tie[qis].to_numpy()}
    return tuple(int(x) for x in tie.iloc[0][qis]), float(tie.iloc[0][objective]), ties


OPTIMIZABLE = [n for n, o in OBJECTIVES.items() if o.goal is not None]


@settings(max_examples=35, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(lattice_dataset(max_qis=3), st.data())
def test_optimal_equals_exhaustive_minimum(ds, data):
    rule = data.draw(st.sampled_from(["dewri", "arx"]))
    limit = data.draw(st.sampled_from([0, 1, 3, 0.1, 0.3]))
    models = data.draw(st.lists(st.sampled_from(
        [KAnonymity(2), KAnonymity(3), KAnonymity(5), LDiversity(2, "distinct"),
         LDiversity(1.5, "probabilistic"), TCloseness(0.4, "emd", "equal")]),
        max_size=2, unique_by=repr))
    objective = data.draw(st.sampled_from(OPTIMIZABLE))
    p = LatticeProblem(ds, models, rule=rule, max_suppression=limit)
    table = evaluate_all(p, [objective], cache=False, progress=False)
    qis = list(ds.schema.qis)
    pick, value, ties = exhaustive_pick(table, qis, objective)
    if pick is None:
        with pytest.raises(SdcevalError, match="no node satisfies"):
            optimal(p, objective, progress=False)
        return
    # every strategy is exact (auto picks one; flash and bound forced)
    strategies = ["auto", "flash"] + (["bound"] if get_objective(objective).bound else [])
    res = optimal(p, objective, progress=False,
                  strategy=data.draw(st.sampled_from(strategies)))
    assert res.levels == pick
    assert res.value == pytest.approx(value, rel=1e-9, abs=1e-12)
    assert set(res.ties) == ties
    assert res.checked <= p.lattice.size


def test_search_prunes_on_adult(adult_small):
    p = LatticeProblem(adult_small, [KAnonymity(5)], rule="arx", max_suppression=0.02)
    res = optimal(p, "glm", progress=False)
    table = evaluate_all(p, ["glm"], cache=False, progress=False)
    pick, value, _ = exhaustive_pick(table, list(adult_small.schema.qis), "glm")
    assert res.levels == pick and res.value == pytest.approx(value, rel=1e-12)
    assert res.strategy["feasibility_monotone"]
    assert res.checked < p.lattice.size / 2


def test_no_feasible_node_says_what_is_achievable(adult_small):
    p = LatticeProblem(adult_small, [LDiversity(20, "distinct")], rule="arx", max_suppression=0)
    with pytest.raises(SdcevalError, match=r"no node satisfies.*l = 14.*l=20"):
        optimal(p, "glm", progress=False)


def test_count_is_not_an_objective(adult_small):
    with pytest.raises(SdcevalError, match="'classes' is a count"):
        optimal(LatticeProblem(adult_small), "classes", progress=False)


# -- exhaustive evaluation and its cache ------------------------------------------------------
def test_evaluate_all_is_cached_on_disk(adult_small, tmp_path, monkeypatch):
    monkeypatch.setenv("SDCEVAL_CACHE_DIR", str(tmp_path))
    p = LatticeProblem(adult_small, [KAnonymity(5)], rule="dewri", max_suppression=0.01)
    first = evaluate_all(p, ["glm", "k"], progress=False)
    files = list(tmp_path.glob("*.npz"))
    assert cache_dir() == tmp_path and len(files) == 1
    again = evaluate_all(p, ["glm", "k"], progress=False)
    pd.testing.assert_frame_equal(first, again)
    assert len(first) == p.lattice.size
    assert (first["height"] == first[list(adult_small.schema.qis)].sum(axis=1)).all()
    # another limit is another entry
    evaluate_all(LatticeProblem(adult_small, [KAnonymity(5)], max_suppression=0.02), ["glm", "k"],
                 progress=False)
    assert len(list(tmp_path.glob("*.npz"))) == 2
    # a corrupt entry is recomputed, not trusted
    files[0].write_bytes(b"not an npz")
    pd.testing.assert_frame_equal(evaluate_all(p, ["glm", "k"], progress=False), first)


def test_too_large_for_exhaustive_says_size_time_and_ways_out(monkeypatch, adult_small):
    import sdceval.lattice.search as search
    monkeypatch.setattr(search, "MAX_EXHAUSTIVE_NODES", 100)
    p = LatticeProblem(adult_small)
    with pytest.raises(SdcevalError, match=r"lattice of [\d,]+ nodes.*hours.*coarser "
                                           r"hierarchies.*mondrian"):
        evaluate_all(p, ["glm"], cache=False)
    assert math.isfinite(p.limit_records)


@pytest.mark.parametrize("dense_level", [0, 1000])
def test_hierarchical_emd_both_layouts_equal_brute_force(monkeypatch, dense_level):
    """The inner levels' sums by a dense table and by runs of the sorted pairs (a wide
    level) both give the transport cost of the hierarchical ground distance."""
    from sdceval.lattice import class_stats
    monkeypatch.setattr(class_stats, "_DENSE_LEVEL", dense_level)
    rng = np.random.default_rng(3)
    S = 24  # leaves in depth-first order: 24 -> 8 -> 2 -> root
    ancestors = [np.arange(S), np.arange(S) // 3, np.arange(S) // 12, np.zeros(S, int)]
    H = len(ancestors) - 1
    level = np.array([[next(j for j in range(H + 1) if ancestors[j][u] == ancestors[j][v])
                       for v in range(S)] for u in range(S)])
    D = level / H
    Q = rng.dirichlet(np.ones(S))
    dense = rng.integers(0, 4, (40, S)) * (rng.random((40, S)) < 0.3)
    dense[dense.sum(axis=1) == 0, 0] = 1
    cls, val = np.nonzero(dense)
    sizes = dense.sum(axis=1)
    batch = ClassBatch(np.zeros((1, 1), dtype=np.int64), np.array([0, 40]), sizes,
                       np.zeros((1, 40), dtype=np.int64), cls, val, dense[cls, val], S)
    got = class_stats.emd_hierarchical(batch, Q, ancestors)
    want = [emd(row / row.sum(), Q, D) for row in dense]
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12)
