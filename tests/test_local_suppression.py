"""Local suppression (sdceval.methods.local_suppression): sdcMicro 5.8.1's
``localSuppression`` counts reproduced, the release it publishes, its parameters, the
household-level keys, the individual-risk target and its use inside a whole-file
strategy (issue 29 items 3-5).

Reference values come from the real sdcMicro 5.8.1 (built offline in
/tmp/sdcmicro/Rlib; CI does not run R).  The R commands are given beside each value;
every run starts with::

    .libPaths(c("/tmp/sdcmicro/Rlib", .libPaths())); library(sdcMicro)
    data(testdata2)
    kv <- c("urbrur","roof","walls","water","electcon","relat","sex")

tests/data/sdcmicro_testdata2.csv is ``write.csv(testdata2, ..., row.names=FALSE)``.
"""
from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import sdceval
from sdceval import SdcevalError
from sdceval.methods.local_suppression import MISSING, default_importance, suppress
from sdceval.privacy.population_risk import frequencies, individual_risks, release_keys

DATA = Path(__file__).parent / "data" / "sdcmicro_testdata2.csv"
KV = ["urbrur", "roof", "walls", "water", "electcon", "relat", "sex"]


@pytest.fixture(scope="module")
def testdata2():
    return pd.read_csv(DATA)


def _dataset(frame, qis, **roles):
    return sdceval.as_dataset(frame[qis + [c for c in roles.values() if isinstance(c, str)]],
                              qi=qis, **roles)


def _counts(release, qis):
    return [release.info["suppressions"][q] for q in qis]


def _codes(frame, cols):
    X = np.stack([pd.factorize(frame[c], sort=True)[0] for c in cols], axis=1)
    return X.astype(np.int64), X.max(axis=0) + 2


# -- sdcMicro's acceptance value and further reference values ----------------------------
def test_testdata2_k2_equals_sdcmicro(testdata2):
    """tests/testthat/test_localSuppression.R: ``localSuppression(testdata2[, c(kv,
    "ageG")], keyVars=1:7)$newSupps == 97``.  Per key and the suppressed rows::

        ls <- localSuppression(testdata2[, kv], keyVars=1:7); ls$supps
        #  urbrur roof walls water electcon relat sex:  3 10 7 56 0 16 5
        for (v in kv) print(which(is.na(ls$xAnon[[v]])))
    """
    rel = sdceval.anonymize(_dataset(testdata2, KV), "local_suppression", seed=0)
    assert _counts(rel, KV) == [3, 10, 7, 56, 0, 16, 5]
    assert rel.info["total"] == 97
    rows = {"urbrur": [25, 34, 35], "roof": [4, 16, 22, 31, 38, 39, 80, 90, 92, 93],
            "walls": [18, 28, 29, 30, 58, 76, 79],
            "water": [1, 5, 6, 7, 8, 9, 10, 12, 13, 15, 20, 23, 24, 26, 32, 33, 36, 37, 40,
                      41, 42, 44, 45, 46, 47, 50, 51, 52, 53, 56, 57, 59, 60, 61, 62, 63,
                      64, 65, 68, 69, 70, 71, 72, 73, 74, 75, 77, 78, 81, 82, 83, 86, 87,
                      88, 89, 91],
            "electcon": [], "relat": [2, 11, 19, 24, 32, 43, 48, 49, 54, 55, 65, 66, 67,
                                      84, 85, 89],
            "sex": [3, 14, 17, 21, 27]}
    ds = _dataset(testdata2, KV)
    for q in KV:
        lo, hi = rel.cells[q]
        whole = (lo == 0) & (hi == ds.hierarchy(q).n_leaves - 1)
        assert (np.flatnonzero(whole) + 1).tolist() == rows[q], q
    # sdcMicro's importance: the rank of the number of categories, ties in key order
    assert rel.info["importance"] == {"urbrur": 1, "roof": 5, "walls": 4, "water": 7,
                                      "electcon": 2, "relat": 6, "sex": 3}


@pytest.mark.parametrize("params, expected", [
    # localSuppression(testdata2[, kv], keyVars=1:7, k=3)$supps
    ({"k": 3}, [3, 15, 9, 60, 0, 25, 5]),
    # ... k=5
    ({"k": 5}, [3, 25, 14, 67, 0, 42, 6]),
    # ... k=2, importance=1:7
    ({"k": 2, "importance": "1,2,3,4,5,6,7"}, [0, 7, 6, 32, 1, 15, 33]),
    # ... k=3, importance=c(1,1,2,7,2,3,3)   (ties: key order)
    ({"k": 3, "importance": [1, 1, 2, 7, 2, 3, 3]}, [5, 4, 8, 60, 2, 22, 15]),
    # the same importance by name
    ({"k": 3, "importance": "urbrur=1,roof=1,walls=2,water=7,electcon=2,relat=3,sex=3"},
     [5, 4, 8, 60, 2, 22, 15]),
    # ... k=3, combs=c(3,2)
    ({"k": 3, "combs": "3,2"}, [0, 9, 6, 41, 0, 23, 0]),
])
def test_testdata2_reference_values(testdata2, params, expected):
    rel = sdceval.anonymize(_dataset(testdata2, KV), "local_suppression", seed=0, **params)
    assert _counts(rel, KV) == expected
    assert rel.info["total"] == sum(expected)


def test_testdata2_combs_on_three_keys(testdata2):
    """``localSuppression(testdata2[, kv], keyVars=1:3, k=10, combs=3:2)$supps``:
    urbrur 0, roof 33, walls 24 (sdcMicro's own example uses k = c(10, 20); one k here)."""
    qis = KV[:3]
    rel = sdceval.anonymize(_dataset(testdata2, qis), "local_suppression", seed=0, k=10,
                            combs=[3, 2])
    assert _counts(rel, qis) == [0, 33, 24]


def _formula_data(n=1500):
    """Deterministic keys (no random generator, so R builds the same table)::

        i <- as.numeric(0:1499)
        fd <- data.frame(a=(i*i) %% 7, b=(i %/% 3) %% 5, c=(i*31 + i %/% 7) %% 11,
                         d=as.integer(i %% 4 == 0) + as.integer((i*i*i) %% 9 == 0),
                         e=(i %/% 11 + i %% 3) %% 6)
    """
    i = np.arange(n, dtype=np.int64)
    return pd.DataFrame({"a": (i * i) % 7, "b": (i // 3) % 5, "c": (i * 31 + i // 7) % 11,
                         "d": (i % 4 == 0).astype(int) + ((i * i * i) % 9 == 0).astype(int),
                         "e": (i // 11 + i % 3) % 6})


@pytest.mark.parametrize("params, expected, checksum", [
    # ls <- localSuppression(fd, keyVars=1:5, k=3); ls$supps
    # sum(which(is.na(as.matrix(ls$xAnon))))   (1-based, column-major positions)
    ({"k": 3}, [1, 13, 1269, 0, 119], 5598659),
    # localSuppression(fd, keyVars=1:5, k=2, importance=5:1)$supps
    ({"k": 2, "importance": "5,4,3,2,1"}, [434, 273, 16, 4, 0], None),
    # localSuppression(fd, keyVars=1:5, k=4, combs=c(4,2))$supps
    ({"k": 4, "combs": "4,2"}, [0, 18, 685, 0, 196], None),
])
def test_formula_data_equals_sdcmicro(params, expected, checksum):
    qis = list("abcde")
    ds = _dataset(_formula_data(), qis)
    rel = sdceval.anonymize(ds, "local_suppression", seed=0, **params)
    assert _counts(rel, qis) == expected
    if checksum is not None:
        gone = np.stack([rel.cells[q][1] - rel.cells[q][0] > 0 for q in qis], axis=1)
        assert int((np.flatnonzero(gone.T.ravel()) + 1).sum()) == checksum


def test_sdcmicro_sample_data():
    """sdcMicro's tests/testthat/test_localSuppression.R on its ``sample_Data``
    (``set.seed(3)``, runif; the values below are its Var3..Var6 as R prints them):
    keys Var4:5, k = 2: 2 suppressions; combs 1:2: 2; keys Var3:5 with importance
    c(3,2,1): 10; with combs 3:2: 11.

    With ``combs`` sdcMicro indexes the importance vector by the keys' *column
    positions in the data frame* (``importance[kV]``, kV from ``match(keyVars,
    colnames(x))``), so for keys that are not the first columns it ranks NA values:
    the effective importance is c(1,2) for Var4:5 and c(1,2,3) for Var3:5.  We take the
    importance as given; the combs cases pass that effective importance.  sdcMicro's
    output (``$supps``): c(2,0); c(1,1); c(7,2,1); c(4,4,3)."""
    var3 = [23.59, 2.518, 13.77, 10.24, 24.45, 79.32, 60.37, 91.10, 56.48, 75.81]
    frame = pd.DataFrame({"Var3": var3, "Var4": [2, 2, 1, 2, 2, 2, 3, 1, 2, 1],
                          "Var5": [1, 2, 1, 2, 1, 1, 1, 1, 1, 2]})
    two, three = ["Var4", "Var5"], ["Var3", "Var4", "Var5"]

    def run(qis, **params):
        ds = sdceval.as_dataset(frame[qis], qi=qis)
        return _counts(sdceval.anonymize(ds, "local_suppression", seed=0, k=2, **params),
                       qis)

    assert run(two) == [2, 0]
    assert run(two, combs="1,2", importance="1,2") == [1, 1]
    assert run(three, importance="3,2,1") == [7, 2, 1]
    assert run(three, combs="3,2", importance="1,2,3") == [4, 4, 3]


# -- an independent, naive transliteration of sdcMicro's loop ----------------------------------
def _naive_frequencies(X):
    n, d = X.shape
    f = np.zeros(n, dtype=np.int64)
    for i in range(n):
        if (X[i] == MISSING).all():
            f[i] = n
            continue
        for j in range(n):
            if d >= 2 and (X[i] != MISSING).all() and (X[j] == MISSING).all():
                continue   # freqCalc's addAllNAtoKeys = FALSE
            if all(a == b or a == MISSING or b == MISSING for a, b in zip(X[i], X[j])):
                f[i] += 1
    return f


def _oracle(X, k, importance, combs=None, households=None, household_cols=()):
    """R/localSuppression.R's suppSubset (alpha = 1), record by record, plus the
    household rule of issue 29 item 4."""
    X = X.copy()
    n, d = X.shape
    order = sorted(range(d), key=lambda c: -importance[c])
    subsets = [list(range(d))] if not combs else [
        list(c) for s in combs for c in itertools.combinations(range(d), s)]
    for cols in subsets:
        while True:
            f = _naive_frequencies(X[:, cols])
            problems = sorted((i for i in range(n) if f[i] < k), key=lambda i: f[i])
            if not problems:
                break
            for p in problems:
                dist = [sum(1 for c in cols if X[j, c] != MISSING and X[p, c] != MISSING
                            and X[j, c] != X[p, c]) for j in range(n)]
                nearest = min(x for x in dist if x > 0)
                cand = [j for j in range(n) if dist[j] == nearest]
                col = next(c for c in order if c in cols and X[p, c] != MISSING and any(
                    X[j, c] != MISSING and X[j, c] != X[p, c] for j in cand))
                if households is not None and col in household_cols:
                    X[households == households[p], col] = MISSING
                else:
                    X[p, col] = MISSING
    return X


def _random_keys(seed, n=60, d=4):
    rng = np.random.default_rng(seed)
    card = rng.integers(2, 6, d)
    hh = np.repeat(np.arange(n), rng.integers(1, 4, n))[:n]
    X = np.stack([rng.integers(0, c, n) for c in card], axis=1)
    X[:, 0] = rng.integers(0, card[0], n)[hh]          # household-level key
    return X.astype(np.int64), card + 1, hh


@pytest.mark.parametrize("seed", range(6))
def test_vectorized_equals_naive_loop(seed):
    X, radix, hh = _random_keys(seed)
    k = 2 + seed % 3
    imp = default_importance(X)
    combs = (3, 2) if seed % 2 else None
    got, _ = suppress(X, radix, k=k, combs=combs)
    assert np.array_equal(got, _oracle(X, k, imp, combs))
    got, _ = suppress(X, radix, k=k, combs=combs, households=hh, household_cols=[0])
    assert np.array_equal(got, _oracle(X, k, imp, combs, hh, [0]))


# -- the release -------------------------------------------------------------------------------
def test_release_publishes_suppressed_cells_as_the_whole_domain(testdata2):
    ds = _dataset(testdata2, KV)
    rel = sdceval.anonymize(ds, "local_suppression", seed=0, k=3)
    assert rel.kind == "generalized"
    keys = release_keys(ds, rel)            # -1 where the cell is the whole domain
    assert (keys == MISSING).sum() == rel.info["total"] == 117
    for j, q in enumerate(KV):
        lo, hi = rel.cells[q]
        gone = keys[:, j] == MISSING
        assert (rel.data[q][gone] == "*").all()
        assert np.array_equal(lo[~gone], ds.codes(q)[~gone])
        assert np.array_equal(hi[~gone], ds.codes(q)[~gone])
        assert (rel.data[q][~gone].astype(int) == testdata2[q][~gone]).all()
    # every record is 3-anonymous with suppressed values matching everything ...
    assert frequencies(keys)[0].min() >= 3
    # ... but not its class (the distinct published combinations)
    assert np.bincount(rel.class_index()[0]).min() < 3
    assert rel.info["n_classes"] == len(np.unique(keys, axis=0))
    # the published labels read back as the same cells
    from sdceval.core.release_io import release_from_frame
    back = release_from_frame(ds, rel.data, in_file=False)
    for q in KV:
        assert np.array_equal(back.cells[q][0], rel.cells[q][0])
        assert np.array_equal(back.cells[q][1], rel.cells[q][1])


def test_importance_spares_the_keys_named_first(testdata2):
    ds = _dataset(testdata2, KV)
    default = sdceval.anonymize(ds, "local_suppression", seed=0)
    spared = sdceval.anonymize(ds, "local_suppression", seed=0, importance="water=1")
    # the keys not named get importance d = 7: tried first, in key order
    same = sdceval.anonymize(ds, "local_suppression", seed=0, importance="7,7,7,1,7,7,7")
    assert spared.info["suppressions"] == same.info["suppressions"]
    assert spared.info["suppressions"]["water"] < default.info["suppressions"]["water"]


@pytest.mark.parametrize("params, words", [
    ({"importance": "wather=1"}, ["importance", "'wather'", "Did you mean 'water'"]),
    ({"importance": "water=9"}, ["importance 9", "'water'", "1..7"]),
    ({"importance": "1,2,3"}, ["importance has 3 value(s)", "7 quasi-identifiers"]),
    ({"importance": "water=1,3"}, ["mixes named"]),
    ({"importance": "water=x"}, ["'x'", "water"]),
    ({"combs": "8"}, ["combs size 8", "1..7"]),
    ({"combs": "3,x"}, ["combs size 'x'", "not an integer"]),
    ({"k": 3, "risk": 0.1}, ["k", "risk", "not both"]),
    ({"k": 100}, ["'k'", "<= 93"]),
    ({"k": 1}, ["'k'", ">= 2"]),
    ({"risk": 0.001}, ["risk = 0.001 cannot be reached", "risk >= 0.01075"]),
])
def test_bad_parameters_are_named(testdata2, params, words):
    ds = _dataset(testdata2, KV)
    with pytest.raises(SdcevalError) as err:
        sdceval.anonymize(ds, "local_suppression", seed=0, **params)
    for w in words:
        assert w in str(err.value), (w, str(err.value))


# -- households (issue 29 item 4) ------------------------------------------------------------
def test_household_level_keys_are_suppressed_for_the_whole_household(testdata2):
    """testdata2's ``ori_hid``; urbrur, roof, walls, water, electcon are equal within
    each household (checked by the data set), relat and sex are personal."""
    hkeys = ["urbrur", "roof", "walls", "water", "electcon"]
    frame = testdata2[KV + ["ori_hid"]]
    plain = sdceval.as_dataset(frame, qi=KV, household="ori_hid")
    aware = sdceval.as_dataset(frame, qi=KV, household="ori_hid", household_keys=hkeys)
    hh = aware.households

    def split(rel):
        """Households whose members differ in a household-level key's cell."""
        out = 0
        for q in hkeys:
            lo = rel.cells[q][0]
            both = pd.DataFrame({"h": hh, "lo": lo, "hi": rel.cells[q][1]})
            out += int((both.groupby("h")[["lo", "hi"]].nunique() > 1).any(axis=1).sum())
        return out

    unaware = sdceval.anonymize(plain, "local_suppression", seed=0)
    assert split(unaware) > 0       # sdcMicro's algorithm splits households
    rel = sdceval.anonymize(aware, "local_suppression", seed=0)
    assert split(rel) == 0
    keys = release_keys(aware, rel)
    assert frequencies(keys)[0].min() >= 2
    assert rel.info["total"] > unaware.info["total"]


# -- the individual-risk target (beyond sdcMicro) -----------------------------------------------
def test_risk_target_without_weights_is_k_anonymity(testdata2):
    """Without weights the individual risk is 1/f (sdcMicro's indivRisk with f = F), and
    problem records are taken in the same order, so risk < 1/2 is exactly k = 3."""
    ds = _dataset(testdata2, KV)
    by_k = sdceval.anonymize(ds, "local_suppression", seed=0, k=3)
    by_risk = sdceval.anonymize(ds, "local_suppression", seed=0, risk=0.34)
    for q in KV:
        assert np.array_equal(by_k.cells[q][0], by_risk.cells[q][0])
    assert by_risk.info["target"] == {"risk": 0.34}


def test_risk_target_with_design_weights(testdata2):
    ds = _dataset(testdata2, KV, weight="sampling_weight")
    before = individual_risks(release_keys(ds, sdceval.anonymize(ds, "recode", seed=0,
                                                                 level=0)),
                              ds.weights)[0]
    threshold = 0.02
    assert before.max() > threshold
    rel = sdceval.anonymize(ds, "local_suppression", seed=0, risk=threshold)
    after = individual_risks(release_keys(ds, rel), ds.weights)[0]
    assert after.max() <= threshold
    assert 0 < rel.info["total"] < ds.n * len(KV)


def test_the_knob_is_k_or_the_risk():
    from sdceval.catalog import get_method
    spec = get_method("local_suppression")
    assert spec.tunable.name == "k" and spec.tunable.protection == "increasing"
    knob = spec.tunable_for({"target": "risk"})
    assert knob.name == "risk" and knob.protection == "decreasing"
    # inside a strategy, the step's target fixed in its text chooses the knob
    strategy = get_method("top_bottom_coding:quantile=0.99+local_suppression:target=risk")
    assert strategy.tunable_for({}).name == "risk" and strategy.grid_knobs({}) == []
    assert get_method("top_bottom_coding:quantile=0.99+local_suppression"
                      ).tunable_for({}).name == "k"


# -- inside a whole-file strategy ------------------------------------------------------------
def test_inside_a_whole_file_strategy():
    from contracts import contract_data
    ds = contract_data()
    rel = sdceval.anonymize(ds, "mdav+local_suppression:k=3", seed=0)
    assert rel.kind == "composite"
    keys = release_keys(ds, rel)
    assert (keys == MISSING).any()
    assert frequencies(keys)[0].min() >= 3
    step = rel.info["steps"]["local_suppression:k=3"]
    assert step["total"] == int((keys == MISSING).sum())
    # the numbers are MDAV's
    alone = sdceval.anonymize(ds, "mdav", seed=0)
    assert np.allclose(rel.data["x"].to_numpy(float), alone.data["x"].to_numpy(float))
    # beside a perturbative knob, a comparison searches k on its grid
    from sdceval.methods.strategy import strategy_spec
    spec = strategy_spec("noise+local_suppression")
    assert [(p.name, grid) for p, grid in spec.grid_knobs({})] == [("k", (2, 3, 5))]
