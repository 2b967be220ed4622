"""dp_histogram (issue 32 item 3): OpenDP's Laplace mechanism on the contingency table,
then records sampled from the noisy table (sdceval/methods/dp_histogram.py, docs/dp.md).

The mechanism is checked where it is defined: a huge ε returns the exact counts, at
ε = 1 a count's noise has variance 2/ε² (seeded noise over seeds, and OpenDP's own
noise), OpenDP's privacy map is within ε and a record moves the counts by exactly the
stated L1 sensitivity; then the release: columns, dtypes, values inside their bins,
the stated leaks, the domain limit, reproducibility by seed, and the registry run.
"""
from __future__ import annotations

import sys

import numpy as np
import pandas as pd
import pytest
from contracts import contract_data
from scipy import stats

import sdceval
from sdceval import SdcevalError
from sdceval.catalog import get_method
from sdceval.core.release import publishable_columns
from sdceval.methods.dp_histogram import (contingency, histogram_layout,
                                          laplace_measurement, noisy_counts)

opendp = pytest.importorskip("opendp")


@pytest.fixture(scope="module")
def small():
    """Two categorical QIs, an integer QI and a float numeric attribute; public bounds
    make every numeric axis data-independent."""
    rng = np.random.default_rng(5)
    n = 3000
    frame = pd.DataFrame({
        "sex": rng.choice(["F", "M"], n, p=[0.3, 0.7]),
        "region": rng.choice(["n", "s", "e"], n, p=[0.5, 0.3, 0.2]),
        "age": rng.integers(18, 80, n),
        "income": rng.gamma(2.0, 20.0, n),
    })
    return sdceval.as_dataset(frame, qi=["sex", "region", "age"], numeric=["income"])


BOUNDS = {"age": (18, 80), "income": (0.0, 400.0)}


def _spec():
    return get_method("dp_histogram")


# -- the mechanism ----------------------------------------------------------------------
@pytest.mark.parametrize("noise", ["seeded", "opendp"])
def test_huge_epsilon_returns_the_original_counts(small, noise):
    table = noisy_counts(small, epsilon=1e9, bins=4, bounds=BOUNDS, noise=noise, seed=3)
    exact = contingency(table.layout)
    assert exact.sum() == small.n and table.sensitivity == 1
    assert np.allclose(table.noisy, exact, atol=1e-5)
    assert table.scale == pytest.approx(1e-9)


def test_huge_epsilon_sample_reproduces_the_table(small):
    """Records drawn from the (exact) table at ε = 1e9: the released joint table fits
    the original's proportions (chi-square goodness of fit, fixed seed)."""
    rel = _spec().apply(small, {"epsilon": 1e9, "bins": 4, "bounds": BOUNDS,
                                "noise": "seeded", "n_records": 30000}, seed=2)
    assert rel.n == 30000
    again = sdceval.as_dataset(rel.data, qi=["sex", "region", "age"], numeric=["income"])
    layout = histogram_layout(small, bins=4, bounds=BOUNDS)
    back = contingency(histogram_layout(again, bins=4, bounds=BOUNDS))
    # the released file's categories are those of the original (same sorted codes)
    assert [list(a.values) for a in histogram_layout(again, bins=4, bounds=BOUNDS)
            .axes.values() if a.edges is None] == \
        [list(a.values) for a in layout.axes.values() if a.edges is None]
    exact = contingency(layout)
    seen = exact > 0
    assert back[~seen].sum() == 0            # no record in a cell the original lacks
    expected = exact[seen] / exact.sum() * rel.n
    p = stats.chisquare(back[seen], expected).pvalue
    assert p > 1e-3, p


def test_noise_variance_is_two_over_epsilon_squared_over_seeds(small):
    """ε = 1, one table (L1 sensitivity 1): noise Laplace(0, 1), variance 2/ε² = 2.  The
    sample variance of R draws has standard error 2·sqrt(5/R) (Laplace kurtosis 6)."""
    eps = 1.0
    exact = contingency(histogram_layout(small, bins=2, bounds=BOUNDS))
    draws = np.array([noisy_counts(small, epsilon=eps, bins=2, bounds=BOUNDS,
                                   noise="seeded", seed=s).noisy - exact
                      for s in range(400)])
    target = 2.0 / eps ** 2
    one = draws[:, 0]                        # one count over the seeds
    assert abs(one.var(ddof=1) - target) < 4 * target * np.sqrt(5 / len(one))
    pooled = draws.ravel()                   # every count over the seeds
    assert abs(pooled.var(ddof=1) - target) < 4 * target * np.sqrt(5 / len(pooled))
    assert abs(pooled.mean()) < 4 * np.sqrt(target / len(pooled))


def test_opendp_noise_has_the_same_variance(small):
    """OpenDP's own noise (not seedable): the variance over 20 000 cells of one
    measurement, within 5 standard errors (a failure has probability below 1e-6)."""
    meas, scale, _ = laplace_measurement(20000, 1, 1.0)
    noise = np.asarray(meas(np.zeros(20000)))
    target = 2 * scale ** 2
    assert abs(noise.var() - target) < 5 * target * np.sqrt(5 / len(noise))


@pytest.mark.parametrize("eps", [0.001, 0.013, 0.1, 0.3, 1.0, 2.7, 10.0, 1e9])
@pytest.mark.parametrize("tables", [1, 3])
def test_privacy_map_within_epsilon(eps, tables):
    meas, scale, spent = laplace_measurement(7, tables, eps)
    assert meas.map(float(tables)) == spent <= eps
    assert scale >= tables / eps and scale == pytest.approx(tables / eps, rel=1e-12)


def test_release_records_the_budget(small):
    rel = _spec().apply(small, {"epsilon": 0.3, "bins": 3, "bounds": BOUNDS,
                                "columns": "sex,age", "noise": "seeded"}, seed=1)
    d = rel.info["dp"]
    assert d["epsilon"] == 0.3 and d["epsilon_spent"] <= 0.3 and d["delta"] == 0.0
    # the joint table of sex x age, one-way tables of region and income: 3 tables
    assert d["tables"] == [["sex", "age"], ["region"], ["income"]]
    assert d["sensitivity"] == 3 and d["scale"] == pytest.approx(3 / 0.3)
    assert d["cells"] == 2 * 3 + 3 + 3
    assert "add/remove one record" in d["neighbouring"] and "Laplace" in d["mechanism"]
    assert d["noise"] == "seeded" and d["reproducible"] and not d["private"]
    assert "seed" in d["warning"]


def test_one_record_moves_the_counts_by_the_stated_sensitivity(small):
    """Adding one record changes the concatenated counts by exactly T (the number of
    tables) in L1, the d_in of the privacy map; OpenDP's own count transformation
    agrees that one table's counts move by 1 per added or removed record."""
    extra = pd.concat([small.frame, small.frame.iloc[[7]]], ignore_index=True)
    bigger = sdceval.as_dataset(extra, qi=["sex", "region", "age"], numeric=["income"])
    for columns, t in ((None, 1), ("sex", 4)):
        a = contingency(histogram_layout(small, columns, 3, BOUNDS))
        b = contingency(histogram_layout(bigger, columns, 3, BOUNDS))
        assert np.abs(b - a).sum() == t
    import opendp.prelude as dp
    dp.enable_features("contrib")
    count = dp.t.make_count_by_categories(
        dp.vector_domain(dp.atom_domain(T=int)), dp.symmetric_distance(),
        categories=list(range(6)), null_category=False, MO="L1Distance<f64>", TOA=float)
    assert count.map(1) == 1


# -- the release --------------------------------------------------------------------------
def test_columns_dtypes_and_bins(small):
    rel = _spec().apply(small, {"epsilon": 2.0, "bins": 5, "bounds": BOUNDS,
                                "noise": "seeded"}, seed=4)
    assert rel.kind == "synthetic" and not rel.aligned
    assert list(rel.data.columns) == publishable_columns(small, "synthetic")
    for c in rel.data.columns:
        assert rel.data[c].dtype == small.frame[c].dtype, c
    assert set(rel.data["sex"]) <= {"F", "M"} and set(rel.data["region"]) <= {"n", "s", "e"}
    for c, (lo, hi) in BOUNDS.items():
        assert rel.data[c].between(lo, hi).all(), c
    assert rel.info["dp"]["bins"]["age"] == list(np.linspace(18, 80, 6))
    # the noisy total, rounded: near n (sd of the total sqrt(2K)/ε), not n itself
    assert abs(rel.n - small.n) < 6 * np.sqrt(2 * rel.info["dp"]["cells"]) / 2.0


def test_values_outside_given_bounds_are_clamped_into_the_end_bins(small):
    """Bounds narrower than the data: no record is lost (the counts still sum to n),
    the records beyond a bound count in its end bin, and the release stays within."""
    narrow = {"age": (30, 60), "income": (0.0, 50.0)}
    layout = histogram_layout(small, bins=3, bounds=narrow)
    inc = small.frame["income"].to_numpy()
    assert contingency(layout).sum() == small.n
    assert (layout.axes["income"].codes[inc >= 50] == 2).all()
    assert (layout.axes["age"].codes[small.frame["age"].to_numpy() < 30] == 0).all()
    rel = _spec().apply(small, {"epsilon": 1e9, "bins": 3, "bounds": narrow,
                                "noise": "seeded"}, seed=0)
    for c, (lo, hi) in narrow.items():
        assert rel.data[c].between(lo, hi).all(), c
    assert not any("bounds of" in s for s in rel.info["dp"]["leaks"])


def test_integer_values_uniform_within_the_bin():
    """An integer column: values are integers of their bin, each drawn about equally
    often (bins of width 5 hold 5 integers each)."""
    rng = np.random.default_rng(1)
    frame = pd.DataFrame({"g": rng.choice(["a", "b"], 400), "k": rng.integers(0, 20, 400)})
    ds = sdceval.as_dataset(frame, qi=["g", "k"])
    rel = _spec().apply(ds, {"epsilon": 1e9, "bins": 4, "bounds": {"k": (0, 20)},
                             "noise": "seeded", "n_records": 40000}, seed=0)
    k = rel.data["k"].to_numpy()
    assert rel.data["k"].dtype == np.int64 and k.min() >= 0 and k.max() <= 20
    counts = np.bincount(k, minlength=21)
    # within each bin [0,5), [5,10), [10,15), [15,20]: a uniform share of its total
    for lo, hi in ((0, 5), (5, 10), (10, 15), (15, 21)):
        seg = counts[lo:hi]
        assert stats.chisquare(seg).pvalue > 1e-3, (lo, seg)


def test_bounds_from_the_data_are_a_stated_leak(small):
    leaky = _spec().apply(small, {"bins": 3, "noise": "seeded", "columns": "sex"}, seed=0)
    leaks = leaky.info["dp"]["leaks"]
    assert any("'age'" in s and "not differentially private" in s and "bounds=" in s
               for s in leaks)
    assert any("'income'" in s for s in leaks)
    # categories read from the data are a leak too (no user hierarchy lists them)
    assert any("categories of 'sex'" in s and "hierarchy" in s for s in leaks)
    public = _spec().apply(small, {"bins": 3, "noise": "seeded", "columns": "sex",
                                   "bounds": BOUNDS}, seed=0)
    assert not any("bounds of" in s for s in public.info["dp"]["leaks"])


def test_hierarchy_categories_are_public():
    """A column with a user hierarchy: its leaves are the domain (no leak), including a
    leaf no record holds."""
    ds = contract_data(300)
    rel = _spec().apply(ds, {"columns": "region,sex", "bins": 2, "noise": "seeded"}, seed=0)
    leaks = " ".join(rel.info["dp"]["leaks"])
    assert "'region'" not in leaks and "'education'" not in leaks and "'sex'" in leaks
    assert rel.info["dp"]["tables"][0] == ["region", "sex"]
    from sdceval.core.hierarchy import Hierarchy
    h = Hierarchy([["n", "*"], ["s", "*"], ["w", "*"]], name="r")
    frame = pd.DataFrame({"r": ["n", "s"] * 50, "a": [1.0, 2.0] * 50})
    ds = sdceval.as_dataset(frame, qi=["r"], numeric=["a"], hierarchies={"r": h})
    axis = histogram_layout(ds, bins=2, bounds={"a": (0, 3)}).axes["r"]
    assert axis.size == 3 and list(axis.values) == ["n", "s", "w"] and not axis.leak
    rel = _spec().apply(ds, {"epsilon": 0.05, "bins": 2, "bounds": {"a": (0, 3)},
                             "noise": "seeded", "n_records": 2000}, seed=0)
    assert "w" in set(rel.data["r"])        # noise gives the empty leaf records too
    assert rel.data["r"].dtype == frame["r"].dtype


def test_domain_limit_refused_naming_columns_and_sizes(small):
    with pytest.raises(SdcevalError) as e:
        _spec().apply(small, {"bins": 10, "bounds": BOUNDS, "max_cells": 500})
    msg = str(e.value)
    assert "\n" not in msg
    for part in ("'sex' (2)", "'region' (3)", "'age' (10)", "'income' (10)", "600",
                 "max_cells=500", "fewer columns", "fewer bins"):
        assert part in msg, part
    # the default candidates of a comparison leave it out on such a file (contract
    # data: every published column jointly exceeds 10**7 cells)
    assert "max_cells" in _spec().too_costly(contract_data(200))
    assert _spec().too_costly(small) == ""


def test_reproducible_by_seed_with_seeded_noise(small):
    p = {"epsilon": 1.0, "bins": 3, "bounds": BOUNDS, "noise": "seeded"}
    a, b, c = (_spec().apply(small, p, seed=s) for s in (7, 7, 8))
    pd.testing.assert_frame_equal(a.data, b.data)
    assert not a.data.equals(c.data)


def test_opendp_noise_is_the_default_and_not_reproducible(small):
    spec = _spec()
    assert spec.param("noise").default == "opendp"
    p = {"epsilon": 1.0, "bins": 3, "bounds": BOUNDS}
    a = noisy_counts(small, seed=0, **p)
    b = noisy_counts(small, seed=0, **p)
    assert a.noise == "opendp" and not np.array_equal(a.noisy, b.noisy)
    rel = spec.apply(small, p, seed=0)
    assert rel.info["dp"]["private"] and not rel.info["dp"]["reproducible"]


def test_registry_run(small):
    rel = get_method("dp_histogram").apply(small, {"epsilon": 0.5, "bounds": BOUNDS,
                                                   "bins": 4, "noise": "seeded"}, seed=1)
    assert rel.method == "dp_histogram" and rel.params["epsilon"] == 0.5
    assert rel.params["bounds"] == (("age", (18.0, 80.0)), ("income", (0.0, 400.0)))
    knob = get_method("dp_histogram").tunable
    assert knob.name == "epsilon" and knob.protection == "decreasing" and knob.scale == "log"


def test_noise_share_estimate_grows_with_the_domain(small):
    """Public diagnostics only: with few cells the noisy table is mostly signal; with
    many cells (most empty) most of the sampled mass is noise."""
    p = {"epsilon": 1.0, "bounds": BOUNDS, "noise": "seeded"}
    few = _spec().apply(small, {**p, "bins": 2}, seed=0).info["dp"]
    many = _spec().apply(small, {**p, "bins": 300, "max_cells": 10**6}, seed=0).info["dp"]
    assert few["noise_share_estimate"] < 0.05 < 0.5 < many["noise_share_estimate"] <= 1


def test_given_record_count(small):
    rel = _spec().apply(small, {"bins": 2, "bounds": BOUNDS, "noise": "seeded",
                                "n_records": 123}, seed=0)
    assert rel.n == 123 and rel.info["dp"]["n_records_from"] == "given"


@pytest.mark.parametrize("params,named", [
    ({"bounds": "age=1;2;3"}, "two numbers"),
    ({"bounds": "sex=0;1"}, "categorical"),
    ({"bounds": "salary=0;1"}, "'salary'"),
    ({"columns": "sexx"}, "Did you mean 'sex'"),
    ({"noise": "random"}, "'noise'"),
    ({"epsilon": 0}, "'epsilon'"),
])
def test_bad_parameters(small, params, named):
    with pytest.raises(SdcevalError, match=named):
        _spec().apply(small, {"bins": 2, **params})


def test_missing_opendp_names_the_extra(small, monkeypatch):
    monkeypatch.setitem(sys.modules, "opendp.prelude", None)
    with pytest.raises(SdcevalError, match=r"pip install 'sdceval\[dp\]'") as e:
        _spec().apply(small, {"bins": 2, "bounds": BOUNDS, "noise": "seeded"}, seed=0)
    assert "\n" not in str(e.value)
