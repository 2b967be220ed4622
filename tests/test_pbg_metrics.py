"""CE and RR of Dewri et al. 2010 §7 on hand-made fronts (issue 9; DEWRI.md §1.12,
§4.2, A20, A21, A35)."""
import numpy as np
import pytest

from sdceval.core.errors import SdcevalError
from sdceval.pbg.dominance import pareto_mask
from sdceval.pbg.metrics import ce, ce_mean, minimal_set, rr

MAX2 = ("max", "max")
M = [(1, 4), (2, 2), (4, 1)]


def test_archive_equal_to_the_front():
    assert ce(M, M, MAX2) == 0.0
    assert rr(M, M, (1, 1), MAX2) == 1.0


def test_one_member_on_the_front():
    assert rr([(1, 4)], M, (1, 1), MAX2) == pytest.approx(1 / 3, abs=1e-12)
    assert ce([(1, 4)], M, MAX2) == 0.0


def test_member_off_the_front():
    # normalized by the front's maxima (4, 4): distance to (1,4) is 0.5/4
    assert ce([(1, 3.5)], M, MAX2) == pytest.approx(0.125, abs=1e-12)
    # ⌊3.5⌋ = 3: box (1,3) is not the front's box (1,4)
    assert rr([(1, 3.5)], M, (1, 1), MAX2) == 0.0


def test_two_members_and_sum_versus_mean():
    assert rr([(1, 4), (2, 2)], M, (1, 1), MAX2) == pytest.approx(2 / 3, abs=1e-12)
    assert ce([(1, 4), (2, 2)], M, MAX2) == 0.0
    two_off = [(1, 3.5), (4, 0.5)]
    assert ce(two_off, M, MAX2) == pytest.approx(0.25, abs=1e-12)       # a sum
    assert ce_mean(two_off, M, MAX2) == pytest.approx(0.125, abs=1e-12)


def test_coarse_boxes():
    # ε = (4,4): the front's boxes (0,1), (0,0), (1,0); (0,0) is dominated
    assert rr([(1, 4)], M, (4, 4), MAX2) == pytest.approx(0.5, abs=1e-12)
    # a member that is not minimal still occupies a box (A21)
    assert rr([(0.5, 5.5), (6, 0)], M, (4, 4), MAX2) == 1.0


def test_minimized_objective_and_zero_scale():
    # (k max, glm min); glm is 0 on the whole front: divided by 1
    front = [(2, 0.0), (5, 0.0)]
    assert ce([(4, 0.0)], front, ("max", "min")) == pytest.approx(0.2, abs=1e-12)
    front = [(2, 100.0), (5, 300.0)]
    # boxes at ε=(1,100): (2,1), (5,3) both non-dominated
    assert rr([(2, 150.0)], front, (1, 100), ("max", "min")) == 0.5
    assert rr([(2, 250.0)], front, (1, 100), ("max", "min")) == 0.0


def test_rr_on_every_node_equals_rr_on_the_minimal_set():
    rng = np.random.default_rng(3)
    for _ in range(5):
        v = rng.integers(0, 30, size=(400, 3)).astype(float)
        goals = ("max", "min", "max")
        arch = v[rng.choice(len(v), 20)]
        front = minimal_set(v, goals)
        assert np.array_equal(front, v[pareto_mask(v, goals)])
        for eps in [(1, 1, 1), (5, 3, 7)]:
            assert rr(arch, v, eps, goals) == rr(arch, front, eps, goals)


def test_bad_input():
    with pytest.raises(SdcevalError, match="empty"):
        ce([(1, 2)], np.zeros((0, 2)), MAX2)
    with pytest.raises(SdcevalError, match="archive is empty"):
        ce_mean(np.zeros((0, 2)), M, MAX2)
    assert ce(np.zeros((0, 2)), M, MAX2) == 0.0
    assert rr(np.zeros((0, 2)), M, 1, MAX2) == 0.0
    with pytest.raises(SdcevalError, match="expected 2"):
        rr([(1, 2, 3)], M, 1, MAX2)
    with pytest.raises(SdcevalError, match="positive"):
        rr(M, M, (1, 0), MAX2)
