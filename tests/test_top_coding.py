"""Top and bottom coding (`sdceval.methods.top_coding`, issue 29 item 3): sdcMicro's
own values (tests/testthat/test_topBotCoding.R), quantile thresholds as R's
``quantile`` (type 7), the replacement rules, bad parameters, and the method inside a
whole-file strategy."""
from __future__ import annotations

import numpy as np
import pytest
from contracts import contract_data

import sdceval
from sdceval import SdcevalError
from sdceval.catalog import get_method
from sdceval.methods.top_coding import code_column

#: sdcMicro's test data, printed from R (sdcMicro 5.8.1):
#:   set.seed(3); x <- runif(30, 1, 100)[1:10]; cat(sprintf("%.17g", x), sep=", ")
X = np.array([17.63611110765487, 80.944123508175835, 39.109292786102742,
              33.445697399321944, 60.607966801384464, 60.835011349990964,
              13.338710979791358, 30.165491500170901, 58.183381982147694,
              63.466948165558279])


@pytest.fixture(scope="module")
def ds():
    return contract_data()


def test_sdcmicro_values():
    """test_topBotCoding.R: topBotCoding(x, value=35, replacement=0, kind="top") and
    kind="bottom" (expected values as sdcMicro's test states them, tolerance 0.001)."""
    top, info = code_column(X, "top", value=(35.0,), replacement=(0.0,))
    np.testing.assert_allclose(top, [17.63611, 0, 0, 33.44570, 0, 0, 13.33871, 30.16549, 0,
                                     0], atol=1e-3)
    assert info == {"top": {"threshold": 35.0, "replacement": 0.0, "coded": 6}}
    bottom, _ = code_column(X, "bottom", value=(35.0,), replacement=(0.0,))
    np.testing.assert_allclose(bottom, [0, 80.94412, 39.10929, 0, 60.60797, 60.83501, 0, 0,
                                        58.18338, 63.46695], atol=1e-3)


def test_quantile_threshold_is_r_type_7():
    """R: q <- quantile(x, 0.9) = 65.214665699820031; topBotCoding(x, value=q,
    replacement=q, kind="top") codes the one value above it; quantile(x, 0.2) =
    27.659615421667691 is the bottom threshold of quantile = 0.8."""
    top, info = code_column(X, "top", quantile=0.9)
    assert info["top"]["threshold"] == pytest.approx(65.214665699820031, rel=1e-14)
    expected = X.copy()
    expected[1] = 65.214665699820031
    np.testing.assert_allclose(top, expected, rtol=1e-14)
    both, info = code_column(X, "both", quantile=0.8)
    assert info["bottom"]["threshold"] == pytest.approx(27.659615421667691, rel=1e-14)
    assert info["bottom"]["coded"] == 2 and info["top"]["coded"] == 2
    assert both.min() == info["bottom"]["threshold"] and both.max() == info["top"]["threshold"]


def test_replacement_mean_keeps_the_column_mean():
    coded, info = code_column(X, "both", value=(20.0, 60.0), replacement="mean")
    assert coded.mean() == pytest.approx(X.mean(), rel=1e-14)
    assert info["top"]["coded"] == 4 and info["bottom"]["coded"] == 2
    assert info["top"]["replacement"] == pytest.approx(X[X > 60].mean())


def test_method_codes_chosen_columns(ds):
    rel = sdceval.anonymize(ds, "top_bottom_coding", quantile=0.9, columns="x")
    x = ds.frame["x"].to_numpy()
    t = np.quantile(x, 0.9)
    assert rel.data["x"].tolist() == np.where(x > t, t, x).tolist()
    assert rel.data["y"].tolist() == ds.frame["y"].tolist()        # not named: as is
    assert set(rel.info["coded"]) == {"x"}
    # default: quantile 0.99 on every numeric attribute, replaced by the threshold
    default = sdceval.anonymize(ds, "top_bottom_coding")
    for c in ("x", "y", "z"):
        v = ds.frame[c].to_numpy()
        assert default.data[c].max() == pytest.approx(np.quantile(v, 0.99))
        assert default.info["coded"][c]["top"]["coded"] == int((v > np.quantile(v, 0.99)).sum())


@pytest.mark.parametrize("params,match", [
    ({"value": "10", "quantile": 0.9}, "value or quantile, not both"),
    ({"kind": "both", "value": "10"}, "kind=both needs 2 value"),
    ({"kind": "both", "value": "50;10"}, "low 50 above high 10"),
    ({"value": "abc"}, "'value'"),
    ({"replacement": "median"}, "'replacement'"),
    ({"quantile": 0.3}, "'quantile'"),
    ({"kind": "middle"}, "'kind'"),
    ({"columns": "age"}, "columns names 'age', which is not a numeric attribute"),
])
def test_bad_parameters_are_named(ds, params, match):
    with pytest.raises(SdcevalError, match=match):
        sdceval.anonymize(ds, "top_bottom_coding", **params)


def test_lower_quantile_codes_more(ds):
    coded = [sum(v["top"]["coded"] + v["bottom"]["coded"] for v in sdceval.anonymize(
        ds, "top_bottom_coding", kind="both", quantile=q).info["coded"].values())
        for q in (0.99, 0.9, 0.8)]
    assert coded[0] < coded[1] < coded[2]
    assert get_method("top_bottom_coding").tunable.name == "quantile"


def test_in_a_whole_file_strategy(ds):
    spec = get_method("top_bottom_coding+recode")
    assert spec.tunable.name == "quantile"          # the perturbative step's knob
    rel = spec.apply(ds, {"quantile": 0.9, "level": 1}, seed=0)
    alone = sdceval.anonymize(ds, "top_bottom_coding", quantile=0.9)
    for c in ds.schema.numeric:
        assert rel.data[c].tolist() == alone.data[c].tolist()
    rec = sdceval.anonymize(ds, "recode", level=1)
    for q in ds.schema.qis:
        assert (rel.cells[q][0] == rec.cells[q][0]).all()


def test_not_a_default_candidate_alone():
    """Named, it runs; it is no default candidate of a comparison on its own (its
    registry entry's `MethodSpec.alone`): the paper's numeric files keep the paper's
    four methods, while its strategies (a survey's defaults) are candidates."""
    from sdceval.compare.families import applicable_methods
    census = sdceval.load_dataset("census")
    assert applicable_methods(census) == ["mdav", "noise", "rank_swap",
                                          "multiplicative_noise"]
    assert not get_method("top_bottom_coding").alone
    assert not get_method("top_bottom_coding:quantile=0.99+recode").too_costly(census)
