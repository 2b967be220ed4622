"""Algorithm 1 of Dewri et al. 2010, the box archive (issue 9; DEWRI.md §1.10, §4.2):
the constructed trace, and the properties of Theorems 1–2 on random candidates."""
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sdceval.core.errors import SdcevalError
from sdceval.pbg.archive import BoxArchive
from sdceval.pbg.dominance import box_dominates, boxes, pareto_mask

MAX2 = ("max", "max")
TRACE = [("a", (1, 5)), ("b", (2, 4)), ("c", (3, 4)), ("d", (3, 5)), ("e", (0, 9)),
         ("f", (1, 8)), ("g", (5, 0))]


def test_algorithm1_trace():
    arch = BoxArchive((2, 2), MAX2)
    want = [{"a"}, {"b"}, {"c"}, {"d"}, {"d", "e"}, {"d", "e"}, {"d", "e", "g"}]
    accepted = []
    for (key, vec), exp in zip(TRACE, want):
        accepted.append(arch.update(key, vec))
        assert set(arch.keys) == exp, key
    # f shares e's box (0,4) and is incomparable with it: the incumbent stays
    assert accepted == [True, True, True, True, True, False, True]
    assert len(arch) == 3
    vals = np.array([v for _, v in TRACE], dtype=float)
    pareto = {k for (k, _), ok in zip(TRACE, pareto_mask(vals, MAX2)) if ok}
    assert pareto == {"d", "e", "f", "g"}
    assert set(arch.keys) <= pareto                       # Theorem 1
    # keys and values stay aligned, natural orientation
    got = dict(zip(arch.keys, map(tuple, arch.values.tolist())))
    assert got == {"d": (3.0, 5.0), "e": (0.0, 9.0), "g": (5.0, 0.0)}
    assert sorted(map(tuple, arch.boxes.tolist())) == [(0, 4), (1, 2), (2, 0)]


def test_trace_with_a_minimized_objective():
    # the same trace with the second objective a loss (−y, goal min): same preferences,
    # but the boxes ⌊−y/2⌋ shift (A18), so b and c no longer share a's box row
    arch = BoxArchive((2, 2), ("max", "min"))
    want = [{"a"}, {"a", "b"}, {"a", "c"}, {"d"}, {"d", "e"}, {"d", "e"}, {"d", "e", "g"}]
    for (key, (x, y)), exp in zip(TRACE, want):
        arch.update(key, (x, -y))
        assert set(arch.keys) == exp, key
    assert sorted(map(tuple, arch.boxes.tolist())) == [(0, -5), (1, -3), (2, 0)]


def test_incumbent_replaced_only_by_a_dominating_candidate():
    arch = BoxArchive(10, ("max", "min"))
    assert arch.update(1, (15, 55))
    assert not arch.update(2, (15, 55))     # a re-generated node: dropped
    assert not arch.update(3, (18, 58))     # same box, incomparable: incumbent stays
    assert arch.update(4, (16, 51))         # same box, dominates: replaces
    assert arch.keys == [4]
    assert arch.update(5, (25, 59))         # box (2,5) dominates (1,5): removes 4
    assert arch.keys == [5]


def test_update_checks_its_input():
    arch = BoxArchive((1, 1), MAX2)
    with pytest.raises(SdcevalError, match="expected 2"):
        arch.update("x", (1, 2, 3))
    with pytest.raises(SdcevalError, match="NaN"):
        arch.update("x", (1, np.nan))
    with pytest.raises(SdcevalError, match="finite"):
        arch.update("x", (1, np.inf))
    with pytest.raises(SdcevalError, match="positive"):
        BoxArchive((1, 0), MAX2)
    with pytest.raises(SdcevalError, match="3 entries for 2"):
        BoxArchive((1, 1, 1), MAX2)
    assert len(arch) == 0


@st.composite
def _stream(draw):
    r = draw(st.integers(2, 3))
    K = [draw(st.integers(1, 12)) for _ in range(r)]
    goals = tuple(draw(st.sampled_from(["min", "max"])) for _ in range(r))
    unit = draw(st.booleans())
    eps = [1.0 if unit else draw(st.sampled_from([1.0, 2.0, 3.0, 0.5, 2.5])) for _ in range(r)]
    n = draw(st.integers(1, 60))
    seed = draw(st.integers(0, 2**31 - 1))
    rng = np.random.default_rng(seed)
    vals = np.column_stack([rng.integers(1, k + 1, n) for k in K]).astype(float)
    return vals, goals, eps, K


@settings(max_examples=30, deadline=None)
@given(_stream())
def test_algorithm1_properties(case):
    vals, goals, eps, K = case
    arch = BoxArchive(eps, goals)
    first = {}
    for i, v in enumerate(vals):
        arch.update(i, v)
        first.setdefault(tuple(v), i)
        keys = arch.keys
        # (i) Theorem 1: members are minimal among the candidates fed so far
        nd = pareto_mask(vals[:i + 1], goals)
        assert all(nd[k] for k in keys)
        # (ii) one member per box, no member box-dominates another
        b = boxes(vals[keys], eps)
        assert len({tuple(x) for x in b.tolist()}) == len(keys)
        mv = vals[keys]
        assert not any(box_dominates(mv[a], mv[c], eps, goals)
                       for a in range(len(keys)) for c in range(len(keys)) if a != c)
    # (iii) ε = 1 on integers: one member per distinct Pareto-optimal vector, the first
    if all(e == 1.0 for e in eps):
        nd = pareto_mask(vals, goals)
        distinct = {tuple(v) for v, ok in zip(vals.tolist(), nd) if ok}
        assert sorted(arch.keys) == sorted(first[v] for v in distinct)
    # (iv) Theorem 2 with b_i = ⌊K_i/ε_i⌋ + 1 boxes per axis (A32)
    counts = sorted((math.floor(k / e) + 1 for k, e in zip(K, eps)), reverse=True)
    assert len(arch) <= math.prod(counts[:-1])


def _literal_algorithm1(stream, eps, goals):
    """Algorithm 1 step by step with `box_dominates` (no shortcut), for comparison."""
    arch = []                                        # [(key, vector)]
    for key, v in stream:
        if not arch:
            arch = [(key, v)]
            continue
        arch = [(k, u) for k, u in arch if not box_dominates(v, u, eps, goals)]
        dominated = [k for k, u in arch if box_dominates(u, v, eps, goals)]
        same_box = [k for k, u in arch if (boxes(u, eps) == boxes(v, eps)).all()]
        if not dominated and not same_box:
            arch.append((key, v))
    return [k for k, _ in arch]


@settings(max_examples=25, deadline=None)
@given(_stream(), st.integers(0, 2**31 - 1))
def test_archive_equals_literal_algorithm1_with_revisits(case, seed):
    vals, goals, eps, _ = case
    rng = np.random.default_rng(seed)
    # re-offer earlier vectors under new keys, as an EA re-visits nodes
    order = np.r_[np.arange(len(vals)), rng.integers(0, len(vals), len(vals))]
    rng.shuffle(order)
    stream = [(i, vals[j]) for i, j in enumerate(order)]
    arch = BoxArchive(eps, goals)
    for key, v in stream:
        arch.update(key, v)
    assert arch.keys == _literal_algorithm1(stream, eps, goals)
