"""Invariant PRAM (`sdceval.methods.pram`, issue 29 items 3-5): the transition matrix
equals sdcMicro 5.8.1's, the matrix algebra is invariant, the draws follow the matrix
(a large-sample check within binomial standard deviations), a seed reproduces a
release, strata, user matrices (validated), household-level keys, the release's
cells, classes and published matrices."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from contracts import contract_data

import sdceval
from sdceval import SdcevalError
from sdceval.methods.pram import draw_categories, invariant_matrix


@pytest.fixture(scope="module")
def ds():
    return contract_data()


# -- the matrix, against sdcMicro ----------------------------------------------------------
#: sdcMicro 5.8.1, built in /tmp/sdcmicro/Rlib, with (R):
#:   .libPaths(c("/tmp/sdcmicro/Rlib", .libPaths())); library(sdcMicro); options(digits=17)
#:   x <- factor(rep(c("a","b","c","d"), times=c(50,30,15,5)), levels=c("a","b","c","d","e"))
#:   for (cfg in list(c(1, 0.8, 0.5), c(7, 0.3, 0.9))) {
#:     set.seed(cfg[1]); pds <- runif(5, min=cfg[2], max=1)   # P's diagonal, as pram draws it
#:     set.seed(cfg[1]); res <- pram(x, pd=cfg[2], alpha=cfg[3])
#:     print(pds); print(attr(res, "pram_params")$x$Rs) }    # printed with %.17g
#: pram's first random draw is calcTransitionMatrix's runif(L, pd, 1), so the same seed
#: gives the diagonal it used; level "e" has no record (p = 0).
R_COUNTS = [50, 30, 15, 5, 0]
R_CASES = [
    (0.5,  # seed 1, pd 0.8, alpha 0.5
     [0.85310173262842004, 0.87442477992735812, 0.91457067267037928, 0.98164155799895525,
      0.84033638620749118],
     [[0.93231663355803862, 0.03484370635023968, 0.021185116817979209,
       0.011654543273742449, 0],
      [0.05807284391706613, 0.91148741232523545, 0.020318703099542177,
       0.010121040658156151, 0],
      [0.070617056059930697, 0.040637406199084354, 0.88147136108889979,
       0.0072741766520851301, 0],
      [0.1165454327374245, 0.0607262439489369, 0.021822529956255395, 0.80090579335738321, 0],
      [0.27463622245691482, 0.14911879257206437, 0.06086704427262439, 0.015377940698396417,
       0.5]]),
    (0.9,  # seed 7, pd 0.3, alpha 0.9
     [0.99223650849889955, 0.57842181730084119, 0.38098844513297081, 0.34882407509721813,
      0.47062457341235131],
     [[0.89250679258156762, 0.054157485002451183, 0.039481815978334701,
       0.013853906437646529, 0],
      [0.090262475004085282, 0.66269639657439117, 0.18252434331676559,
       0.064516785104758015, 0],
      [0.13160605326111569, 0.36504868663353118, 0.41639873762276969,
       0.086946522482583402, 0],
      [0.13853906437646529, 0.38710071062854812, 0.26083956744775016,
       0.21352065754723643, 0],
      [0.11544301226078341, 0.40648560644892551, 0.27943951899861691,
       0.09863186229167413, 0.099999999999999978]]),
]


@pytest.mark.parametrize("alpha,diag,expected", R_CASES)
def test_invariant_matrix_equals_sdcmicro(alpha, diag, expected):
    got = invariant_matrix(R_COUNTS, diag, alpha)
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-15)


def test_invariant_matrix_algebra():
    """p R_s = p exactly (to rounding), rows are distributions, and the batched form
    over strata equals the matrices one stratum at a time."""
    rng = np.random.default_rng(5)
    counts = rng.integers(0, 40, (6, 7)).astype(float)
    counts[0, 2] = 0
    diag = rng.uniform(0.2, 1.0, (6, 7))
    alpha = 0.7
    batch = invariant_matrix(counts, diag, alpha)
    for s in range(6):
        one = invariant_matrix(counts[s], diag[s], alpha)
        np.testing.assert_allclose(batch[s], one, rtol=0, atol=1e-15)
        p = counts[s] / counts[s].sum()
        np.testing.assert_allclose(p @ one, p, atol=1e-14)
        np.testing.assert_allclose(one.sum(axis=1), 1.0, atol=1e-14)
        assert (one >= 0).all()
        # nobody moves into a category the stratum does not hold
        assert (one[:, counts[s] == 0][counts[s] > 0] == 0).all()
    # pd = 1 (diagonal 1) or alpha = 0: the identity
    np.testing.assert_array_equal(invariant_matrix(counts[0], np.ones(7), 0.5), np.eye(7))
    np.testing.assert_array_equal(invariant_matrix(counts[0], diag[0], 0.0), np.eye(7))
    assert invariant_matrix([5], [0.3], 0.5).tolist() == [[1.0]]


# -- the draws -----------------------------------------------------------------------------
def test_draw_is_the_inverse_cdf_of_each_row():
    m = np.array([[0.5, 0.0, 0.5], [0.0, 0.0, 1.0], [0.2, 0.3, 0.5]])
    u = np.array([0.0, 0.49999, 0.5, 0.99, 1 - 2 ** -53, 0.0, 0.7, 0.2, 0.2 - 1e-12, 0.5,
                  1 - 2 ** -53])
    rows = np.array([0, 0, 0, 0, 0, 1, 1, 2, 2, 2, 2])
    got = draw_categories(m, rows, u)
    assert got.tolist() == [0, 0, 2, 2, 2, 2, 2, 1, 0, 2, 2]
    # the loop it replaces
    cum = np.cumsum(m, axis=1)
    assert got.tolist() == [int(np.searchsorted(cum[r], x, side="right"))
                            for r, x in zip(rows, u)]


def test_large_sample_follows_the_matrix_and_keeps_the_distribution():
    """E[published count of j] = Σ_i n_i R_s[i, j] = n p_j (invariance); the counts of
    200 000 draws lie within 5 binomial standard deviations
    (sd_j = sqrt(Σ_i n_i R[i,j] (1 - R[i,j])))."""
    counts = np.array([90_000, 60_000, 30_000, 15_000, 5_000])
    m = invariant_matrix(counts, [0.6, 0.7, 0.8, 0.65, 0.9], 0.8)
    codes = np.repeat(np.arange(5), counts)
    new = draw_categories(m, codes, np.random.default_rng(11).random(len(codes)))
    got = np.bincount(new, minlength=5)
    expected = counts @ m
    np.testing.assert_allclose(expected, counts, rtol=1e-12)   # invariance
    sd = np.sqrt(counts @ (m * (1 - m)))
    assert (np.abs(got - expected) <= 5 * sd).all(), (got, expected, sd)
    # and each row's transitions, within its own binomial sd
    for i in range(5):
        sel = new[codes == i]
        obs = np.bincount(sel, minlength=5)
        e = counts[i] * m[i]
        assert (np.abs(obs - e) <= 5 * np.sqrt(counts[i] * m[i] * (1 - m[i])) + 1e-9).all()


# -- the method ------------------------------------------------------------------------
def test_release_cells_classes_and_published_matrices(ds):
    rel = sdceval.anonymize(ds, "pram", pd=0.5, seed=3)
    assert rel.kind == "generalized"
    keys = ["region", "education", "sex"]            # the categorical QIs, by default
    assert rel.info["perturbed_keys"] == keys
    for q in keys:
        lo, hi = rel.cells[q]
        assert (lo == hi).all()
        assert (ds.hierarchy(q).encode(rel.data[q]) == lo).all()   # published = cell
        info = rel.info["pram"][q]
        assert info["changed"] == int((lo != ds.codes(q)).sum()) > 0
        mat = np.asarray(info["matrices"])
        assert mat.shape == (1, ds.hierarchy(q).n_leaves, ds.hierarchy(q).n_leaves)
        p = np.bincount(ds.codes(q), minlength=mat.shape[1]) / ds.n
        np.testing.assert_allclose(p @ mat[0], p, atol=1e-14)
    lo, hi = rel.cells["age"]                         # not PRAM-ed: as it is
    assert (lo == ds.codes("age")).all() and (hi == lo).all()
    assert rel.data["age"].tolist() == ds.frame["age"].tolist()
    combos = pd.DataFrame({q: rel.cells[q][0] for q in ds.schema.qis})
    assert rel.info["n_classes"] == len(combos.drop_duplicates())
    assert (combos.groupby(rel.classes).nunique() == 1).all().all()


def test_seed_reproduces_and_pd_one_changes_nothing(ds):
    a = sdceval.anonymize(ds, "pram", seed=3)
    b = sdceval.anonymize(ds, "pram", seed=3)
    c = sdceval.anonymize(ds, "pram", seed=4)
    pd.testing.assert_frame_equal(a.data, b.data)
    assert not a.data.equals(c.data)
    for params in ({"pd": 1.0}, {"alpha": 0.0}):
        same = sdceval.anonymize(ds, "pram", seed=3, **params)
        pd.testing.assert_frame_equal(same.data[ds.schema.qis].astype(str),
                                      ds.frame[ds.schema.qis].astype(str))


def test_variables_and_strata(ds):
    rel = sdceval.anonymize(ds, "pram", variables="education", strata="region,sex",
                            pd=0.2, seed=1)
    assert rel.info["perturbed_keys"] == ["education"]
    for q in ("region", "sex", "age"):
        assert (rel.cells[q][0] == ds.codes(q)).all()
    info = rel.info["pram"]["education"]
    strata = ds.frame.groupby(["region", "sex"], sort=False).ngroup()
    mats = np.asarray(info["matrices"])
    assert mats.shape[0] == strata.nunique() == 8
    first = ds.frame.drop_duplicates(["region", "sex"])
    assert info["strata_values"] == first[["region", "sex"]].astype(str).values.tolist()
    codes, new = ds.codes("education"), rel.cells["education"][0]
    for s in range(mats.shape[0]):
        sel = (strata == pd.factorize(strata)[1][s]).to_numpy()
        counts = np.bincount(codes[sel], minlength=6)
        np.testing.assert_allclose(counts @ mats[s], counts, atol=1e-9)  # its own p
        # within a stratum, no record is given a category the stratum lacks
        assert set(new[sel]) <= set(np.flatnonzero(counts))
    with pytest.raises(SdcevalError, match="strata names 'regio'.*region"):
        sdceval.anonymize(ds, "pram", strata="regio")
    with pytest.raises(SdcevalError, match="variables names 'disease'"):
        sdceval.anonymize(ds, "pram", variables="disease")


def test_user_matrix_file_and_mapping(ds, tmp_path):
    levels = list(ds.hierarchy("sex").leaves)
    path = tmp_path / "sex.csv"
    path.write_text(f",{levels[1]},{levels[0]}\n{levels[1]},1,0\n{levels[0]},0,1\n")
    same = sdceval.anonymize(ds, "pram", variables="sex", matrix=str(path), seed=2)
    assert (same.cells["sex"][0] == ds.codes("sex")).all()
    assert same.info["pram"]["sex"]["pd"] == "user"
    # everyone swaps: a mapping {from: {to: p}}, named by its key
    swap = {"sex": {levels[0]: {levels[0]: 0, levels[1]: 1},
                    levels[1]: {levels[0]: 1.0, levels[1]: 0.0}}}
    rel = sdceval.anonymize(ds, "pram", matrix=swap, seed=2)
    assert (rel.cells["sex"][0] == 1 - ds.codes("sex")).all()
    assert rel.info["pram"]["region"]["pd"] == 0.8        # the others: pd and alpha
    semi = tmp_path / "semi.csv"
    semi.write_text(f";{levels[0]};{levels[1]}\n{levels[0]};0.5;0.5\n{levels[1]};0;1\n")
    rel = sdceval.anonymize(ds, "pram", matrix=f"sex={semi}", seed=2)
    assert rel.info["pram"]["sex"]["matrices"][0] == [[0.5, 0.5], [0.0, 1.0]]


@pytest.mark.parametrize("text,match", [
    (",F,M\nF,0.5,0.4\nM,0,1\n", r"row 'F' sums to 0.9"),
    (",F,M\nF,1,0\n", "not square"),
    (",F,M,X\nF,1,0,0\nM,0,1,0\nX,0,0,1\n", "'X', which is not a category of 'sex'"),
    (",F\nF,1\n", "lacks the category 'M'"),
    (",F,M\nF,1.5,-0.5\nM,0,1\n", r"probability in \[0, 1\]"),
    (",F,M\nF,1\nM,0,1\n", "row 2 has 1 probabilities"),
])
def test_user_matrix_refused_with_a_clear_error(ds, tmp_path, text, match):
    path = tmp_path / "m.csv"
    path.write_text(text)
    with pytest.raises(SdcevalError, match=match):
        sdceval.anonymize(ds, "pram", variables="sex", matrix=str(path))


def test_user_matrix_key_must_be_named_or_single(ds, tmp_path):
    with pytest.raises(SdcevalError, match="without naming its key"):
        sdceval.anonymize(ds, "pram", matrix=str(tmp_path / "m.csv"))
    with pytest.raises(SdcevalError, match="does not exist"):
        sdceval.anonymize(ds, "pram", matrix=f"sex={tmp_path / 'none.csv'}")
    with pytest.raises(SdcevalError, match="names 'age', which is not among"):
        sdceval.anonymize(ds, "pram", matrix=f"age={tmp_path / 'm.csv'}")
    for bad in (-0.1, 1.5):
        with pytest.raises(SdcevalError, match="'pd'"):
            sdceval.anonymize(ds, "pram", pd=bad)


# -- household-level keys (issue 29 item 4) ----------------------------------------------
def _households(n_households=300, seed=0):
    rng = np.random.default_rng(seed)
    size = rng.integers(1, 6, n_households)
    hid = np.repeat(np.arange(n_households), size)
    region = rng.choice(["n", "e", "s", "w"], n_households, p=[0.4, 0.3, 0.2, 0.1])[hid]
    frame = pd.DataFrame({"hid": hid * 7 + 3, "region": region,
                          "sex": rng.choice(["F", "M"], len(hid)),
                          "x": rng.normal(size=len(hid))})
    return sdceval.as_dataset(frame, qi=["region", "sex"], numeric=["x"], household="hid",
                              household_keys=["region"])


def test_household_level_key_is_drawn_once_per_household():
    ds = _households()
    rel = sdceval.anonymize(ds, "pram", pd=0.3, seed=8)
    new = rel.cells["region"][0]
    hh = ds.households
    first = np.unique(hh, return_index=True)[1]
    assert (new == new[first][hh]).all()                 # members alike
    assert rel.info["pram"]["region"]["household_level"]
    assert not rel.info["pram"]["sex"]["household_level"]
    # the matrix is invariant for the households' distribution (each counted once)
    counts = np.bincount(ds.codes("region")[first], minlength=4)
    mat = np.asarray(rel.info["pram"]["region"]["matrices"][0])
    np.testing.assert_allclose(counts @ mat, counts, atol=1e-9)
    # one uniform per household: the same draws as PRAM of the households alone
    rng = np.random.default_rng(8)
    diag = 0.3 + 0.7 * rng.random((1, 4))
    m = invariant_matrix(counts[None], diag, 0.5)[0]
    np.testing.assert_allclose(m, mat, rtol=1e-12)
    expect = draw_categories(m, ds.codes("region")[first], rng.random(len(first)))
    assert (new == expect[hh]).all()
    # no class splits a household on its household-level key
    assert (pd.Series(new).groupby(hh).nunique() == 1).all()


def test_household_level_key_needs_household_level_strata():
    ds = _households()
    with pytest.raises(SdcevalError, match="strata \\(sex\\) differ within some "
                                           "households"):
        sdceval.anonymize(ds, "pram", strata="sex", seed=1)


# -- inside a whole-file strategy -----------------------------------------------------------
def test_pram_is_a_strategy_step(ds):
    rel = sdceval.anonymize(ds, "mdav+pram", k=5, pd=0.5, seed=0)
    assert rel.kind == "composite"
    assert rel.info["steps"]["pram"]["perturbed_keys"] == ["region", "education", "sex"]
    alone = sdceval.anonymize(ds, "pram", pd=0.5, seed=0)
    # the strategy draws the perturbative step first (MDAV draws nothing), then PRAM
    for q in ds.schema.qis:
        assert (rel.cells[q][0] == alone.cells[q][0]).all()


def test_treatment_says_the_keys_are_masked(ds):
    """`column_treatment` (what ``anonymize`` prints and ``compare`` tabulates): keys
    redrawn by PRAM are "masked", not "as is"; the others as they are."""
    from sdceval.core.treatment import column_treatment
    t = column_treatment(ds, sdceval.anonymize(ds, "pram", pd=0.5, seed=0))
    assert [t[q] for q in ("region", "education", "sex", "age")] == \
        ["masked", "masked", "masked", "as is"]
    assert column_treatment(ds, sdceval.anonymize(ds, "pram", pd=1.0))["region"] == "as is"


def test_matrix_as_a_strategy_parameter(ds):
    """The canonical form of a user matrix parses again (a strategy's step)."""
    from sdceval.catalog import get_method
    a, b = ds.hierarchy("sex").leaves
    swap = {"sex": {a: {a: 0, b: 1}, b: {a: 1, b: 0}}}
    rel = get_method("mdav+pram").apply(ds, {"k": 5, "matrix": swap}, seed=0)
    assert (rel.cells["sex"][0] == 1 - ds.codes("sex")).all()
