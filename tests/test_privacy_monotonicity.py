"""The monotonicity flags of the privacy models, verified empirically (issue 7 item 4).

``monotone_generalization``: if every class of a lattice node satisfies the model, every
class of each immediate successor does.  ``monotone_suppression``: under ARX's rule
(suppress every violating class; feasible when the suppressed records number at most
⌊s·n⌋), a feasible node has feasible successors.  Checked on every edge of the lattice
of Adult (``adult-train``) with QIs age, workclass, marital-status, race, sex (448
nodes, 1 504 edges; occupation sensitive, 14 values), for several parameters per model.
Where a flag says *not* monotone, a counterexample shows the flag is not merely
conservative: an Adult edge where one exists (probabilistic and entropy ℓ, recursive
(c, ℓ), t with EMD and JS), and for every such model a hand-made node whose
successor merges a satisfying class with a violating one (δ-disclosure has no
counterexample edge on this lattice: only its top nodes satisfy it at all).
"""
import math
from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import sdceval
from sdceval import Dataset
from sdceval.lattice import NodeEngine
from sdceval.privacy import make_model

QIS = ["age", "workclass", "marital-status", "race", "sex"]
S = 0.02  # ARX suppression limit used below


@pytest.fixture(scope="module")
def adult():
    ds = sdceval.load_dataset("adult-train")
    d = Dataset(ds.frame, ds.schema.with_roles(qi=QIS, sensitive="occupation"))
    eng = NodeEngine(d)
    lat = eng.lattice
    nodes = lat.nodes()
    tables = [eng.classes(tuple(int(x) for x in lv)) for lv in nodes]
    # every node's classes stacked: each model is evaluated once over all of them
    counts = np.concatenate([t.sensitive_matrix() for t in tables])
    n_classes = np.array([t.n_classes for t in tables])
    starts = np.r_[0, np.cumsum(n_classes)[:-1]]
    src, dst = [], []
    for i, lv in enumerate(nodes):
        assert lat.encode(lv) == i
        for succ in lat.successors(lv):
            src.append(i)
            dst.append(int(lat.encode(succ)))
    q = tables[0].sensitive_matrix().sum(axis=0) / d.n
    return SimpleNamespace(counts=counts, starts=starts, sizes=counts.sum(axis=1), q=q,
                           n=d.n, src=np.array(src), dst=np.array(dst), tables=tables,
                           hierarchy=d.hierarchy("occupation"), n_nodes=len(nodes))


def verdicts(model, a, s=None):
    """Per node: every class satisfies the model (s=None), or ARX's rule with limit s."""
    ok = model.satisfied(a.counts, a.q)
    if s is None:
        return np.logical_and.reduceat(ok, a.starts)
    suppressed = np.add.reduceat(np.where(ok, 0, a.sizes), a.starts)
    return suppressed <= math.floor(s * a.n)


def broken(v, a):
    """Edges (node, successor) where the node holds and the successor does not."""
    bad = v[a.src] & ~v[a.dst]
    return a.src[bad], a.dst[bad]


def build(name, params, a=None):
    return make_model(name, hierarchy=None if a is None else a.hierarchy, **params)


CONFIGS = [
    ("k", dict(k=2)), ("k", dict(k=10)), ("k", dict(k=50)),
    ("l", dict(l=2, variant="distinct")), ("l", dict(l=4, variant="distinct")),
    ("l", dict(l=2)), ("l", dict(l=3)),
    ("l", dict(l=2, variant="entropy")), ("l", dict(l=5, variant="entropy")),
    ("cl", dict(c=0.5, l=2)), ("cl", dict(c=1, l=2)), ("cl", dict(c=3, l=4)),
    ("t", dict(t=0.2)), ("t", dict(t=0.3)), ("t", dict(t=0.2, ground="equal")),
    ("t", dict(t=0.1, ground="ordered")),
    ("t", dict(t=0.1, distance="js")), ("t", dict(t=0.2, distance="js")),
    ("delta", dict(delta=1.5)), ("delta", dict(delta=4)),
]


def _id(cfg):
    return cfg[0] + "-" + "-".join(f"{k}{v}" for k, v in cfg[1].items())


@pytest.mark.parametrize("cfg", CONFIGS, ids=_id)
def test_monotone_with_generalization_on_adult(adult, cfg):
    model = build(*cfg, adult)
    assert model.monotone_generalization  # every model declares it (and this checks it)
    v = verdicts(model, adult)
    # not vacuous: some nodes satisfy the model and some do not
    assert 0 < v.sum() < adult.n_nodes
    assert len(broken(v, adult)[0]) == 0


@pytest.mark.parametrize("s", [0.01, S, 0.05])
@pytest.mark.parametrize("cfg", [c for c in CONFIGS if c[0] == "k" or
                                 c[1].get("variant") == "distinct"], ids=_id)
def test_monotone_with_suppression_on_adult(adult, cfg, s):
    model = build(*cfg, adult)
    assert model.monotone_suppression
    v = verdicts(model, adult, s)
    assert 0 < v.sum() < adult.n_nodes
    assert len(broken(v, adult)[0]) == 0


#: configurations with an Adult counterexample edge at s = 2 % (found by evaluating
#: every edge; entropy needs a larger ℓ than the others on this lattice)
ADULT_COUNTER = [("l", dict(l=2)), ("l", dict(l=5, variant="entropy")),
                 ("cl", dict(c=1, l=2)), ("cl", dict(c=3, l=4)),
                 ("t", dict(t=0.3)), ("t", dict(t=0.2, distance="js"))]


@pytest.mark.parametrize("cfg", ADULT_COUNTER, ids=_id)
def test_not_monotone_with_suppression_counterexample_on_adult(adult, cfg):
    model = build(*cfg, adult)
    assert not model.monotone_suppression
    v = verdicts(model, adult, S)
    src, dst = broken(v, adult)
    assert len(src) > 0
    # why: a class of the successor that violates the model contains a class of the
    # node that satisfies it (their records are now suppressed with it)
    node, succ = adult.tables[src[0]], adult.tables[dst[0]]
    ok_node = model.satisfied(node.sensitive_matrix(), adult.q)
    ok_succ = model.satisfied(succ.sensitive_matrix(), adult.q)
    # each distinct QI row's class at the node and at the successor
    merged_into = np.zeros(node.n_classes, dtype=np.int64)
    merged_into[node.row_class] = succ.row_class
    assert (ok_node & ~ok_succ[merged_into]).any()
    supp_node = node.sizes[~ok_node].sum()
    supp_succ = succ.sizes[~ok_succ].sum()
    assert supp_node <= math.floor(S * adult.n) < supp_succ


# -- hand-made counterexamples: a satisfying class A, a violating class B, other classes
# R; the successor merges A and B.  Q is the table's distribution (A + B + R).  The limit
# ⌊s·n⌋ lets B be suppressed but not A ∪ B.
HAND = [
    # ℓ = 2: (1, 1) has share ½ and e^H = 2; (3, 0) share 1; (4, 1) share 0.8, e^H 1.65
    ("l", dict(l=2), (1, 1), (3, 0), [(10, 10)], 0.15),
    ("l", dict(l=2, variant="entropy"), (1, 1), (3, 0), [(10, 10)], 0.15),
    # c = 2, ℓ = 2: 1 < 2·1; (5, 0) has one value; 6 < 2·1 fails
    ("cl", dict(c=2, l=2), (1, 1), (5, 0), [(10, 10)], 0.2),
    # Q = (½, ½); total variation: 0, ½, 0.3 for A, B, A ∪ B = (4, 1)
    ("t", dict(t=0.2, ground="equal"), (1, 1), (3, 0), [(16, 19)], 0.1),
    # JS: 0, 0.216, 0.051 (natural log)
    ("t", dict(t=0.04, distance="js"), (1, 1), (3, 0), [(16, 19)], 0.1),
    # Q = (½, ½): (5, 5) at δ 0; (4, 0) lacks a value (∞); (9, 5): |ln(5/14 / ½)| = 0.34
    ("delta", dict(delta=0.2), (5, 5), (4, 0), [(41, 45)], 0.05),
]


@pytest.mark.parametrize("name, params, a, b, rest, s", HAND,
                         ids=[_id(h[:2]) for h in HAND])
def test_not_monotone_with_suppression_by_hand(name, params, a, b, rest, s):
    model = build(name, params)
    assert not model.monotone_suppression and model.monotone_generalization
    a, b, rest = np.array(a), np.array(b), np.array(rest).reshape(-1, len(a))
    node = np.vstack([a, b, rest])
    succ = np.vstack([a + b, rest])
    n = node.sum()
    q = node.sum(axis=0) / n
    ok_node = model.satisfied(node, q)
    ok_succ = model.satisfied(succ, q)
    assert ok_node.tolist() == [True, False] + [True] * len(rest)
    assert ok_succ.tolist() == [False] + [True] * len(rest)
    limit = math.floor(s * n)
    assert node[~ok_node].sum() <= limit < succ[~ok_succ].sum()


# -- closure under merging, on random classes -----------------------------------------
ALL = CONFIGS + [("cl", dict(c=2, l=3)), ("l", dict(l=1.5, variant="entropy"))]


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(0, 6), min_size=4, max_size=4),
       st.lists(st.integers(0, 6), min_size=4, max_size=4),
       st.lists(st.integers(1, 9), min_size=4, max_size=4),
       st.sampled_from(ALL))
def test_merging_classes_keeps_the_model(a, b, rest, cfg):
    """monotone_generalization ⇔ closed under union of satisfying classes;
    monotone_suppression ⇔ a union containing a satisfying class satisfies."""
    a, b = np.array(a), np.array(b)
    if a.sum() == 0 or b.sum() == 0:
        return
    q = (a + b + np.array(rest)) / (a.sum() + b.sum() + sum(rest))
    model = build(*cfg)  # without a hierarchy: EMD with the equal ground distance
    sat = model.satisfied(np.vstack([a, b, a + b]), q)
    if model.monotone_generalization and sat[0] and sat[1]:
        assert sat[2]
    if model.monotone_suppression and sat[0]:
        assert sat[2]
