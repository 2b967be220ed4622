"""Strict Pareto dominance, boxes, box-dominance and the SPEA2-style fitness of PBG-EA
(issue 9; DEWRI.md §1.7, §1.9, §4.2, A18, A25)."""
import itertools

import numpy as np
import pytest

from sdceval.core.errors import SdcevalError
from sdceval.pbg.dominance import (box_dominates, boxes, check_eps, dominance_counts,
                                   dominates, pareto_mask, spea2_fitness)

MAX2 = ("max", "max")


def _brute_dominates(a, b, goals):
    s = np.array([-1.0 if g == "max" else 1.0 for g in goals])
    x, y = np.asarray(a) * s, np.asarray(b) * s
    return bool((x <= y).all() and (x < y).any())


def _brute_mask(v, goals):
    return np.array([not any(_brute_dominates(v[j], v[i], goals) for j in range(len(v)))
                     for i in range(len(v))], dtype=bool)


# -- dominance ------------------------------------------------------------------------------
def test_dominates_is_strict_pareto_in_the_goal_sense():
    assert dominates((3, 4), (2, 4), MAX2)
    assert not dominates((2, 4), (3, 4), MAX2)
    assert not dominates((3, 4), (3, 4), MAX2)          # equal: neither
    assert not dominates((1, 5), (2, 4), MAX2)          # incomparable
    # k max, GLM min: more k and less loss dominates
    assert dominates((5, 100.0), (3, 120.0), ("max", "min"))
    assert not dominates((5, 130.0), (3, 120.0), ("max", "min"))
    assert dominates((5, 120.0), (3, 120.0), ("max", "min"))


def test_goals_and_values_are_checked():
    with pytest.raises(SdcevalError, match="'maximize'"):
        dominates((1, 2), (2, 1), ("max", "maximize"))
    with pytest.raises(SdcevalError, match="expected 3"):
        pareto_mask([[1, 2], [2, 1]], ("max", "min", "min"))
    with pytest.raises(SdcevalError, match="NaN"):
        pareto_mask([[1, np.nan]], MAX2)


@pytest.mark.parametrize("seed", range(12))
def test_pareto_mask_equals_brute_force(seed):
    rng = np.random.default_rng(seed)
    r = 1 + seed % 4
    m = int(rng.integers(1, 300))
    v = rng.integers(0, 6, size=(m, r)).astype(float)   # small range: many duplicates
    v[rng.random(m) < 0.1] = v[0]                          # and exact copies
    goals = tuple(rng.choice(["min", "max"], size=r))
    got = pareto_mask(v, goals)
    assert got.dtype == bool and got.shape == (m,)
    assert np.array_equal(got, _brute_mask(v, goals))


def test_pareto_mask_keeps_every_copy_and_handles_edges():
    v = np.array([[1, 1], [1, 1], [0, 0], [2, 0], [2, 0]], dtype=float)
    assert pareto_mask(v, MAX2).tolist() == [True, True, False, True, True]
    assert pareto_mask(np.zeros((0, 2)), MAX2).tolist() == []
    # real values, infinities allowed
    w = np.array([[0.5, np.inf], [0.4, 1.0], [0.6, 0.1]])
    assert pareto_mask(w, ("min", "max")).tolist() == [True, True, False]


def test_pareto_mask_large_three_objectives_against_blocks():
    rng = np.random.default_rng(5)
    v = rng.integers(0, 40, size=(1500, 3)).astype(float)
    goals = ("max", "min", "max")
    got = pareto_mask(v, goals)
    s = np.array([-1.0, 1.0, -1.0])
    w = v * s
    dominated = np.zeros(len(v), dtype=bool)
    for i in range(0, len(v), 500):
        blk = w[i:i + 500]
        dominated[i:i + 500] = ((w[None, :, :] <= blk[:, None, :]).all(axis=2)
                                & (w[None, :, :] < blk[:, None, :]).any(axis=2)).any(axis=1)
    assert np.array_equal(got, ~dominated)


# -- boxes ------------------------------------------------------------------------------------
def test_boxes_floor_natural_values():
    assert boxes([3.5, 4.0], (1, 1)).tolist() == [3, 4]      # ⌊3.5⌋ = 3, not 4
    assert boxes([[3, 4], [1, 8], [0, 9]], (2, 2)).tolist() == [[1, 2], [0, 4], [0, 4]]
    assert boxes([-0.5, 149.0], (1, 100)).tolist() == [-1, 1]  # floor, not truncation
    assert boxes([2.0, 7.0], 2).tolist() == [1, 3]            # a scalar ε for all
    assert boxes([[1, 2]], (1, 1)).dtype == np.int64


@pytest.mark.parametrize("eps, match", [((0, 1), "positive"), ((1, -2), "positive"),
                                        ((1,), "1 entries for 2 objectives"),
                                        ((1, np.nan), "positive"), (("a", 1), "numbers")])
def test_eps_is_checked(eps, match):
    with pytest.raises(SdcevalError, match=match):
        boxes([[1, 2]], eps)


def test_check_eps_names_the_objective():
    with pytest.raises(SdcevalError, match="'glm'"):
        check_eps((1, 0), 2, ["k", "glm"])


# -- box-dominance truth table (DEWRI §4.2) ------------------------------------------
def test_box_dominance_truth_table():
    e = (2, 2)
    # same box (1,2), value-dominates
    assert box_dominates((3, 4), (2, 4), e, MAX2)
    assert not box_dominates((2, 4), (3, 4), e, MAX2)
    # boxes (1,2) vs (0,2): box dominates although the values are incomparable
    assert box_dominates((2, 4), (1, 5), e, MAX2)
    assert not box_dominates((1, 5), (2, 4), e, MAX2)
    # same box (0,4), incomparable: neither way
    assert not box_dominates((1, 8), (0, 9), e, MAX2)
    assert not box_dominates((0, 9), (1, 8), e, MAX2)
    # minimized objective: smaller box index is better
    assert box_dominates((5, 150.0), (5, 260.0), (1, 100), ("max", "min"))
    assert not box_dominates((5, 150.0), (5, 120.0), (1, 100), ("max", "min"))  # same box,
    assert box_dominates((5, 120.0), (5, 150.0), (1, 100), ("max", "min"))      # by value


def test_box_dominance_is_transitive_on_a_grid():
    pts = [np.array(p, dtype=float) for p in itertools.product(range(5), repeat=2)]
    goals, e = ("max", "min"), (2, 2)
    rel = {(i, j): box_dominates(pts[i], pts[j], e, goals)
           for i in range(len(pts)) for j in range(len(pts))}
    for i, j, k in itertools.product(range(len(pts)), repeat=3):
        if rel[i, j] and rel[j, k]:
            assert rel[i, k]


# -- fitness (DEWRI §4.2, A25) ---------------------------------------------------------------
def test_fitness_example():
    p = [(3, 3), (2, 2), (1, 1), (3, 0)]
    assert dominance_counts(p, MAX2).tolist() == [3, 1, 0, 0]
    assert spea2_fitness(p, MAX2).tolist() == [0, 3, 4, 3]
    # the same points as losses (negated, goals min): same counts
    q = [(-a, -b) for a, b in p]
    assert spea2_fitness(q, ("min", "min")).tolist() == [0, 3, 4, 3]


def test_fitness_duplicate_rule():
    # p2 twice: copies do not dominate each other, get the same values, and both count
    p = [(3, 3), (2, 2), (2, 2), (1, 1), (3, 0)]
    assert dominance_counts(p, MAX2).tolist() == [4, 1, 1, 0, 0]
    assert spea2_fitness(p, MAX2).tolist() == [0, 4, 4, 6, 4]
    # all equal: nobody dominates anybody
    assert spea2_fitness([(1, 1)] * 3, MAX2).tolist() == [0, 0, 0]


@pytest.mark.parametrize("seed", range(6))
def test_fitness_equals_brute_force(seed):
    rng = np.random.default_rng(100 + seed)
    r = 2 + seed % 3
    v = rng.integers(0, 4, size=(int(rng.integers(1, 60)), r)).astype(float)
    goals = tuple(rng.choice(["min", "max"], size=r))
    D = np.array([[_brute_dominates(a, b, goals) for b in v] for a in v])
    dom = D.sum(axis=1)
    fit = np.array([sum(dom[j] for j in range(len(v)) if D[j, i]) for i in range(len(v))])
    assert dominance_counts(v, goals).tolist() == dom.tolist()
    assert spea2_fitness(v, goals).tolist() == fit.tolist()
    assert np.array_equal(spea2_fitness(v, goals) == 0, pareto_mask(v, goals))
