"""Quality indices and dominance on property vectors (Dewri et al. 2009 §3-§5;
DEWRI.md §1.3-1.4, §2.2, §3.1 A2-A7/A11, §4.1 items 2-7 and 9)."""
import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sdceval.core.errors import SdcevalError
from sdceval.vectors.indices import (
    BINARY_INDICES, UNARY_INDICES, dominates, incomparable, log_p_hv, log_volume,
    p_binary, p_cov, p_mean, p_min, p_rank, p_spr, p_sum, rank_compare, relation,
    set_relation, weakly_dominates,
)

# D09 §3 and §2: class-size vectors of the three anonymizations of Table 1 (E1, E6, E8)
T3A = (3, 3, 3, 3, 4, 4, 4, 3, 3, 4)
T3B = (3, 7, 7, 3, 7, 7, 7, 3, 7, 7)
T4 = (4, 6, 4, 4, 6, 6, 6, 4, 6, 6)
# sensitive-count vectors (E2 for T3a; derived for T3b = T4)
C3A = (2, 2, 1, 2, 2, 1, 2, 1, 2, 1)
C3B = (2, 3, 1, 2, 2, 1, 2, 1, 3, 3)
# D09 §5.5 utility vectors (E13)
UA = (2.03, 1.7, 1.7, 2.03, 1.6, 1.6, 1.6, 2.03, 1.7, 1.6)
UB = (2.03, 0.97, 0.97, 2.03, 0.97, 0.97, 0.97, 2.03, 0.97, 0.97)
# D09 §5.3 (E10)
D1 = (2, 2, 3, 4, 5)
D2 = (3, 2, 4, 2, 3)
# D09 §5.3 15-tuple example (E11): printed a, and a with a_8 = 5 (the only valid reading)
A15_PRINTED = (3, 3, 3, 5, 5, 5, 5, 3, 3, 3, 3, 4, 4, 4, 4)
A15_CORRECTED = (3, 3, 3, 5, 5, 5, 5, 5, 3, 3, 3, 4, 4, 4, 4)
B15 = (2, 2, 6, 6, 6, 6, 6, 6, 3, 3, 3, 4, 4, 4, 4)
# D09 §5.4 (E12)
S8 = (3, 3, 3, 5, 5, 5, 5, 5)
T8 = (4,) * 8

ints = st.lists(st.integers(-50, 50), min_size=1, max_size=30)


def pair(elements=st.integers(-50, 50)):
    return st.integers(1, 30).flatmap(
        lambda n: st.tuples(st.lists(elements, min_size=n, max_size=n),
                            st.lists(elements, min_size=n, max_size=n)))


# ---------------------------------------------------------------- unary (E3-E5)

def test_unary_indices_on_the_d09_vectors():
    assert p_min(T3A) == 3                       # E3
    assert p_mean(T3A) == pytest.approx(3.4, abs=1e-12)   # E4
    assert p_sum(T3A) == 34
    assert p_min(C3A) == 1                       # E5: D09's l is min_i c_i
    assert (p_sum(T3B), p_mean(T3B), p_min(T3B)) == (58, pytest.approx(5.8), 3)
    assert (p_sum(T4), p_mean(T4), p_min(T4)) == (52, pytest.approx(5.2), 4)


def test_p_min_is_the_worst_record_for_a_loss():
    loss = (0.1, 0.7, 0.3)
    assert p_min(loss, higher_is_better=False) == 0.7
    assert p_min(loss) == 0.1


def test_unary_registry():
    assert UNARY_INDICES == {"min": p_min, "sum": p_sum, "mean": p_mean}
    assert UNARY_INDICES["sum"](T3A, higher_is_better=False) == 34


# ---------------------------------------------------------------- P_rank (§2.2, A6)

def test_p_rank_values_and_the_d_max_order_flip():
    at10 = [p_rank(v, 10) for v in (T3A, T3B, T4)]
    assert at10 == pytest.approx([math.sqrt(438), math.sqrt(210), math.sqrt(240)], abs=1e-12)
    assert at10 == pytest.approx([20.928450, 14.491377, 15.491933], abs=1e-6)
    assert np.argmin(at10) == 1                  # T3b best against D_max = 10
    at7 = [p_rank(v, [7] * 10) for v in (T3A, T3B, T4)]
    assert at7 == pytest.approx([11.489125, 6.928203, 6.480741], abs=1e-6)
    assert np.argmin(at7) == 2                   # T4 best against D_max = 7
    assert rank_compare(T3B, T4, 10) == 1
    assert rank_compare(T3B, T4, 7) == -1
    assert rank_compare(T3B, T4, 7, rank_tol=0.5) == 0   # 6.93 - 6.48 <= 0.5
    assert rank_compare(T3A, T3A, 7) == 0
    assert p_rank(T3A, 10, ord=1) == 66


# ---------------------------------------------------------------- binary (E6, E9-E13)

def test_p_binary_counts_indices_strictly_better():
    assert p_binary(T3A, T3B) == 0               # E6
    assert p_binary(T3B, T3A) == 7
    assert isinstance(p_binary(T3B, T3A), int)


def test_p_cov_ties_count_for_both_sides():
    assert p_cov(T3A, T3B) == pytest.approx(0.3, abs=1e-12)     # E13, class size
    assert p_cov(T3B, T3A) == pytest.approx(1.0, abs=1e-12)
    assert p_cov(UA, UB) == pytest.approx(1.0, abs=1e-12)       # E13, utility
    assert p_cov(UB, UA) == pytest.approx(0.3, abs=1e-12)
    assert p_cov(D1, D2) == pytest.approx(0.6, abs=1e-12)       # E10: 3/5 both ways
    assert p_cov(D2, D1) == pytest.approx(0.6, abs=1e-12)
    assert p_cov(T4, T3A) == pytest.approx(1.0, abs=1e-12)      # E9
    assert p_cov(T3A, T4) == pytest.approx(0.0, abs=1e-12)
    assert p_cov(T3B, T4) == pytest.approx(0.7, abs=1e-12)
    assert p_cov(T4, T3B) == pytest.approx(0.3, abs=1e-12)


def test_p_spr_worked_examples():
    assert (p_spr(D1, D2), p_spr(D2, D1)) == (4, 2)             # E10
    # E11: the paper prints "2 and 8", which holds only with a_8 = 5 (the printed a is
    # not a class-size vector: seven 3s, four 5s); the printed a gives 2 and 10
    assert (p_spr(A15_CORRECTED, B15), p_spr(B15, A15_CORRECTED)) == (2, 8)
    assert (p_spr(A15_PRINTED, B15), p_spr(B15, A15_PRINTED)) == (2, 10)
    for a in (A15_PRINTED, A15_CORRECTED):   # "the P_cov index also points at the same"
        assert p_cov(a, B15) == pytest.approx(9 / 15, abs=1e-12)
        assert p_cov(B15, a) == pytest.approx(13 / 15, abs=1e-12)
    assert (p_spr(T3A, T3B), p_spr(T3B, T3A)) == (0, 24)        # derived, D09 tables
    assert (p_spr(T3B, T4), p_spr(T4, T3B)) == (9, 3)
    assert (p_spr(T4, T3A), p_spr(T3A, T4)) == (18, 0)


@settings(max_examples=30, deadline=None)
@given(pair())
def test_spread_observation_identity(ab):
    # D10 §4.1 Observation: P_spr(a,b) - P_spr(b,a) = sum(a) - sum(b)
    a, b = ab
    assert p_spr(a, b) - p_spr(b, a) == sum(a) - sum(b)
    assert p_spr(a, b, higher_is_better=False) - p_spr(b, a, higher_is_better=False) \
        == sum(b) - sum(a)


@settings(max_examples=30, deadline=None)
@given(pair(st.floats(-1e3, 1e3)))
def test_spread_observation_identity_floats(ab):
    a, b = ab
    assert p_spr(a, b) - p_spr(b, a) == pytest.approx(math.fsum(a) - math.fsum(b),
                                                      abs=1e-9)


@settings(max_examples=30, deadline=None)
@given(pair())
def test_lower_is_better_equals_negation(ab):
    a, b = ab
    na, nb = [-x for x in a], [-x for x in b]
    assert p_binary(a, b, higher_is_better=False) == p_binary(na, nb)
    assert p_cov(a, b, higher_is_better=False) == p_cov(na, nb)
    assert p_spr(a, b, higher_is_better=False) == p_spr(na, nb)
    for f in (weakly_dominates, dominates, incomparable, relation):
        assert f(a, b, higher_is_better=False) == f(na, nb)
    assert set_relation({"x": a}, {"x": b}, {"x": False}) == set_relation({"x": na},
                                                                           {"x": nb})


def test_binary_registry():
    assert BINARY_INDICES == {"p_binary": p_binary, "p_cov": p_cov, "p_spr": p_spr,
                              "p_hv": log_p_hv}


# ---------------------------------------------------------------- P_hv in log space (E12, A4, A5)

def test_p_hv_worked_example_in_log_space():
    assert log_p_hv(S8, T8) == pytest.approx(10.946006, abs=1e-6)     # log 56727
    assert log_p_hv(T8, S8) == pytest.approx(10.542390, abs=1e-6)     # log 37888
    assert log_p_hv(S8, T8) == pytest.approx(math.log(84375 - 27648), abs=1e-12)
    assert log_p_hv(T8, S8) == pytest.approx(math.log(65536 - 27648), abs=1e-12)
    assert log_p_hv(T3B, T4) == pytest.approx(16.660235, abs=1e-6)    # 17196813
    assert log_p_hv(T3B, T4) == pytest.approx(math.log(17196813), abs=1e-12)
    assert log_p_hv(T4, T3B) == pytest.approx(math.log(6905088), abs=1e-12)
    assert log_p_hv(T4, T3A) == pytest.approx(math.log(11757312), abs=1e-12)
    assert log_p_hv(T3B, T3A) == pytest.approx(math.log(22049037), abs=1e-12)
    assert log_p_hv(T3A, T3B) == -math.inf        # P_hv = 0: T3b weakly dominates T3a
    assert log_p_hv(T3A, T4) == -math.inf
    assert [log_volume(v) for v in (T3A, T3B, T4)] == pytest.approx(
        [12.136851, 16.917208, 16.295734], abs=1e-6)


def _exact_hv(d1, d2, r, higher):
    """Π(d1-r) - Π(min(d1,d2)-r) (or the lower-better mirror) in exact rationals, with
    entries not strictly better than r contributing 0 to their product."""
    def prod(v):
        out = Fraction(1)
        for x in v:
            gap = (Fraction(x) - r) if higher else (r - Fraction(x))
            out *= gap if gap > 0 else 0
        return out
    best = [min(x, y) if higher else max(x, y) for x, y in zip(d1, d2)]
    return prod(d1) - prod(best)


def _log_exact(value: Fraction) -> float:
    return -math.inf if value == 0 else math.log(value.numerator) - math.log(value.denominator)


def test_p_hv_agrees_with_exact_rational_arithmetic():
    rng = np.random.default_rng(7)
    for _ in range(20):
        n = int(rng.integers(1, 40))
        a = rng.integers(1, 60, n).tolist()
        b = rng.integers(1, 60, n).tolist()
        assert log_p_hv(a, b) == pytest.approx(_log_exact(_exact_hv(a, b, 0, True)),
                                               abs=1e-9)
        # lower-is-better with a reference (worst) point, values on both sides of it
        assert log_p_hv(a, b, higher_is_better=False, reference=50) == pytest.approx(
            _log_exact(_exact_hv(a, b, 50, False)), abs=1e-9)
        fa = (rng.random(n) * 3).tolist()
        fb = (rng.random(n) * 3).tolist()
        assert log_p_hv(fa, fb, reference=0.5) == pytest.approx(
            _log_exact(_exact_hv(fa, fb, Fraction(0.5), True)), abs=1e-9)


def test_p_hv_nearly_equal_products_keeps_precision():
    a = [1000.0] * 50
    b = [1000.0] * 49 + [999.999]
    # Π a - Π min = 1000^49 * 0.001: the difference is resolved, not rounded to 0
    assert log_p_hv(a, b) == pytest.approx(49 * math.log(1000) + math.log(0.001), rel=1e-9)


@pytest.mark.parametrize("n", [30_000, 1_000_000])
def test_p_hv_on_large_n_is_finite(n):
    rng = np.random.default_rng(n)
    a = rng.integers(2, 200, n)
    b = rng.integers(2, 200, n)
    la, lb = log_p_hv(a, b), log_p_hv(b, a)
    assert math.isfinite(la) and math.isfinite(lb)
    # the common term cancels in the comparison: P_hv(a,b) > P_hv(b,a) iff Π a > Π b
    assert (la > lb) == (log_volume(a) > log_volume(b))
    assert la == pytest.approx(log_volume(a), rel=1e-12)  # Π min << Π a at this N


@settings(max_examples=30, deadline=None)
@given(st.integers(1, 8).flatmap(lambda n: st.tuples(
    st.lists(st.integers(1, 20), min_size=n, max_size=n),
    st.lists(st.integers(1, 20), min_size=n, max_size=n))))
def test_p_hv_comparison_is_the_volume_comparison(ab):
    # products stay below 20**8, so unequal products differ far above float rounding
    a, b = ab
    la, lb = log_p_hv(a, b), log_p_hv(b, a)
    va, vb = math.prod(a), math.prod(b)
    if va == vb:
        assert la == pytest.approx(lb, rel=1e-12)
    else:
        assert (la > lb) == (va > vb)
    assert (la == -math.inf) == weakly_dominates(b, a)


def test_p_hv_entries_at_or_below_the_reference_make_the_product_zero():
    assert log_volume((0, 5, 5)) == -math.inf
    assert log_p_hv((0, 5, 5), (1, 1, 1)) == -math.inf
    assert log_p_hv((2, 5, 5), (0, 9, 9)) == pytest.approx(math.log(50))
    assert log_volume((0.2, 0.5), higher_is_better=False, reference=1) == pytest.approx(
        math.log(0.8 * 0.5))


def test_p_hv_lower_is_better_needs_a_reference():
    with pytest.raises(SdcevalError, match=r"'glm'.*reference"):
        log_p_hv((0.1, 0.2), (0.2, 0.1), higher_is_better=False, name="glm")
    with pytest.raises(SdcevalError, match="reference"):
        log_volume((0.1, 0.2), higher_is_better=False)
    with pytest.raises(SdcevalError, match="reference"):
        log_p_hv((1, 2), (2, 1), reference=float("nan"))
    with pytest.raises(SdcevalError, match="reference"):
        log_p_hv((1, 2), (2, 1), reference="zero")


# ---------------------------------------------------------------- dominance (Table 4, A11)

def test_dominance_on_the_d09_vectors():
    assert dominates(T4, T3A) and weakly_dominates(T4, T3A)
    assert dominates(T3B, T3A) and weakly_dominates(T3B, T3A)
    assert not dominates(T3A, T3B) and not weakly_dominates(T3A, T3B)
    assert incomparable(T3B, T4) and incomparable(T4, T3B)
    assert incomparable(D1, D2)
    assert not incomparable(T4, T3A)
    assert relation(T4, T3A) == "dominates"
    assert relation(T3A, T4) == "dominated"
    assert relation(T3B, T4) == "incomparable"
    # equal vectors weakly dominate both ways, neither strictly
    assert weakly_dominates(T3A, T3A) and not dominates(T3A, T3A)
    assert relation(T3A, list(T3A)) == "equal"
    assert not incomparable(T3A, T3A)
    # "if P_cov(D1,D2) = 1 and P_cov(D2,D1) = 0, then D1 > D2" (D09 §5.2)
    assert (p_cov(T4, T3A), p_cov(T3A, T4)) == (1.0, 0.0)
    assert dominates(T4, T3A)


def test_dominance_for_a_loss():
    assert dominates((0.1, 0.2), (0.1, 0.3), higher_is_better=False)
    assert relation((0.1, 0.2), (0.1, 0.3), higher_is_better=False) == "dominates"
    assert relation((0.1, 0.2), (0.1, 0.3)) == "dominated"


def test_set_relation_pairs_by_property_name():
    a = {"k": T3A, "c": C3A}
    b = {"c": C3B, "k": T3B}            # key order does not matter: pairing is by name
    assert set_relation(b, a) == "dominates"
    assert set_relation(a, b) == "dominated"
    assert set_relation(a, dict(a)) == "equal"
    # T4 || T3b on class size, equal counts: neither set weakly dominates
    assert set_relation({"k": T4, "c": C3B}, {"k": T3B, "c": C3B}) == "incomparable"
    # the printed Table 4 condition (a strictly better pair and a strictly worse pair)
    # is sufficient ...
    assert set_relation({"p": T4, "q": T3A}, {"p": T3A, "q": T4}) == "incomparable"
    # ... but not necessary: a single incomparable pair has no strictly better pair (A11)
    assert set_relation({"x": D1}, {"x": D2}) == "incomparable"
    # direction per property
    loss_a, loss_b = (0.1, 0.2, 0.1, 0.2, 0.1, 0.2, 0.1, 0.2, 0.1, 0.2), (0.3,) * 10
    assert set_relation({"k": T3B, "loss": loss_a}, {"k": T3A, "loss": loss_b},
                        {"loss": False}) == "dominates"
    assert set_relation({"k": T3B, "loss": loss_a}, {"k": T3A, "loss": loss_b}) \
        == "incomparable"


# ---------------------------------------------------------------- bad input

BINARY = [p_binary, p_cov, p_spr, log_p_hv, weakly_dominates, dominates, incomparable,
          relation]


@pytest.mark.parametrize("f", BINARY)
def test_different_lengths_name_the_property(f):
    with pytest.raises(SdcevalError, match=r"'class size'.*length.*10.*9"):
        f(T3A, T3B[:9], name="class size")
    with pytest.raises(SdcevalError, match="length"):
        f(T3A, T3B[:9])


@pytest.mark.parametrize("bad, what", [
    ([[1, 2], [3, 4]], "1-D"),
    (5, "1-D"),
    ([], "empty"),
    ([1.0, float("nan"), 2.0], "NaN"),
    ([1.0, float("inf"), 2.0], "infinite"),
    ([1.0, -float("inf"), 2.0], "infinite"),
    (["a", "b", "c"], "numbers"),
    ([1, None, 3], "missing"),
    ([1 + 2j, 1, 1], "numbers"),
    ([[1, 2], [3]], "1-D|numbers"),
])
def test_bad_vectors_are_refused_with_the_fix(bad, what):
    for call in (lambda: p_cov(bad, bad, name="k"), lambda: p_min(bad, name="k"),
                 lambda: p_mean(bad, name="k"), lambda: log_volume(bad, name="k"),
                 lambda: set_relation({"k": bad}, {"k": bad})):
        with pytest.raises(SdcevalError, match=what) as info:
            call()
        assert "'k'" in str(info.value)
    with pytest.raises(SdcevalError, match=what):
        p_sum(bad)


def test_nan_message_is_plain_python():
    with pytest.raises(SdcevalError) as info:
        p_cov(np.array([1.0, np.nan]), np.array([1.0, 2.0]), name="k")
    assert "np." not in str(info.value) and "record 1" in str(info.value)


def test_bad_parameters_are_refused():
    with pytest.raises(SdcevalError, match="higher_is_better"):
        p_cov(T3A, T3B, higher_is_better="max")
    with pytest.raises(SdcevalError, match="rank_tol"):
        rank_compare(T3A, T3B, 10, rank_tol=-1)
    with pytest.raises(SdcevalError, match="ord"):
        p_rank(T3A, 10, ord=0.5)
    with pytest.raises(SdcevalError, match=r"d_max.*length"):
        p_rank(T3A, [10, 10], name="k")
    with pytest.raises(SdcevalError, match="d_max"):
        p_rank(T3A, float("nan"))
    with pytest.raises(SdcevalError, match="same properties") as info:
        set_relation({"k": T3A}, {"z": T3A})
    assert "'k'" in str(info.value) and "'z'" in str(info.value)
    with pytest.raises(SdcevalError, match=r"higher_is_better.*'kk'"):
        set_relation({"k": T3A}, {"k": T3A}, {"kk": True})
    with pytest.raises(SdcevalError, match=r"'c'.*length"):
        set_relation({"k": T3A, "c": C3A}, {"k": T3A, "c": C3A[:5]})
    with pytest.raises(SdcevalError, match="mapping"):
        set_relation([T3A], [T3A])
