"""Numeric attributes as keys of the population risks (issue 29 item 2, "perturbed keys
as categories"): ``keys`` of ``individual_risk``, ``household_risk`` and ``suda2``
may name numeric attributes, read as the release publishes them
(`sdceval.measures.population_risk.key_array`)."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import sdceval
from sdceval.catalog import get_measure
from sdceval.core.errors import SdcevalError
from sdceval.measures.population_risk import key_array
from sdceval.privacy.population_risk import risks_from_frequencies

#: nine records; MDAV with k = 3 on ``inc`` alone makes the groups {1,2,3} -> 2,
#: {101,102,103} -> 102, {1001,1002,1003} -> 1002
SMALL = pd.DataFrame({"g": list("AABABBAAA"),
                      "inc": [1.0, 2, 3, 101, 102, 103, 1001, 1002, 1003],
                      "s": list("xyxyxyxyx")})


def _small():
    return sdceval.as_dataset(SMALL, qi=["g"], numeric=["inc"], sensitive="s")


def _risk(ds, rel, name="individual_risk", **params):
    return get_measure(name).evaluate(ds, rel, params)


def test_hand_computed_values_with_a_microaggregated_key():
    ds = _small()
    rel = sdceval.anonymize(ds, "mdav+recode:level=0", k=3)
    assert rel.data["inc"].tolist() == [2.0] * 3 + [102.0] * 3 + [1002.0] * 3
    # inc alone: three groups of 3 equal published values, f_k = 3, r = 1/3 (no weights)
    m = _risk(ds, rel, keys="inc")
    assert m.per_record.tolist() == pytest.approx([1 / 3] * 9)
    assert m.details["keys"] == ["inc"] and m.details["sample_unique_records"] == 0
    # g and inc: (A,2) (A,2) (B,2) (A,102) (B,102) (B,102) (A,1002) x3; the masked
    # number is read as if true: record 0's published 2 is not its own 1, yet r = 1/2
    m = _risk(ds, rel, keys=["g", "inc"])
    assert m.per_record.tolist() == pytest.approx([1 / 2, 1 / 2, 1, 1, 1 / 2, 1 / 2,
                                                   1 / 3, 1 / 3, 1 / 3])
    assert m.value == pytest.approx(5 / 9)
    # the default keys are the QIs, as before: A six times, B three times
    assert _risk(ds, rel).per_record.tolist() == pytest.approx(
        [1 / 6, 1 / 6, 1 / 3, 1 / 6, 1 / 3, 1 / 3, 1 / 6, 1 / 6, 1 / 6])


def test_perturbative_and_generalized_releases_with_numeric_keys():
    ds = _small()
    mdav = sdceval.anonymize(ds, "mdav", k=3)
    assert mdav.kind == "perturbative"
    assert _risk(ds, mdav, keys="inc").per_record.tolist() == pytest.approx([1 / 3] * 9)
    # g is not published by MDAV: missing, matching every category (sdcMicro's NA)
    keys, cols = key_array(ds, mdav, ("g", "inc"))
    assert cols == ["g", "inc"] and (keys[:, 0] == -1).all()
    assert _risk(ds, mdav, keys="g+inc").per_record.tolist() == pytest.approx([1 / 3] * 9)
    # the default keys (the QIs, which MDAV does not publish): all missing, f_k = n
    m = _risk(ds, mdav)
    assert m.details["unpublished_keys"] == ["g"]
    assert m.per_record.tolist() == pytest.approx([1 / 9] * 9)
    assert _risk(ds, mdav, keys="g,inc").details["unpublished_keys"] == ["g"]
    # a generalized release does not publish inc: missing, so g alone counts
    gen = sdceval.anonymize(ds, "generalization", levels="0", max_suppression=0)
    assert _risk(ds, gen, keys="g,inc").per_record.tolist() == pytest.approx(
        _risk(ds, gen).per_record.tolist())
    # suda2 reads the same keys and names them
    s = _risk(ds, mdav, "suda2", keys="inc")
    assert s.details["keys"] == ["inc"] and s.details["sample_uniques"] == 0


def test_intervals_are_read_by_their_cells():
    ds = _small()
    rel = sdceval.anonymize(ds, "mondrian+intervals", k=3)
    assert "inc" in rel.cells
    keys, _ = key_array(ds, rel, ("inc",))
    lo, hi = rel.cells["inc"]
    pairs = pd.Series(list(zip(lo, hi)))
    assert (pd.Series(keys[:, 0]).groupby(pairs).nunique() == 1).all()
    assert (pairs.groupby(keys[:, 0]).nunique() == 1).all()


@pytest.mark.parametrize("bad, match", [
    ("incom", "keys names 'incom', which is not a column.*Did you mean 'inc'"),
    ("s", "keys names 's', a column of role 'sensitive'"),
    ("w", "keys names 'w', a column of role 'weight'")])
def test_keys_must_be_qis_or_numeric_attributes(bad, match):
    df = SMALL.assign(w=np.linspace(5.0, 20.0, 9))
    ds = sdceval.as_dataset(df, qi=["g"], numeric=["inc"], sensitive="s", weight="w")
    rel = sdceval.anonymize(ds, "mdav+recode:level=0", k=3)
    for name in ("individual_risk", "suda2"):
        with pytest.raises(SdcevalError, match=match):
            _risk(ds, rel, name, keys=f"g,{bad}")
        with pytest.raises(SdcevalError, match=match):
            get_measure(name).check_data(ds, {"keys": f"g,{bad}"})


def test_frequencies_with_a_numeric_key_against_a_groupby():
    """f_k, F_k and r with a microaggregated key, over small random files, equal a
    pandas groupby of the published (category, number) pairs, and the risks of a file
    where the published numbers are a categorical key."""
    for seed in range(12):
        rng = np.random.default_rng(seed)
        n = int(rng.integers(8, 40))
        df = pd.DataFrame({"g": rng.choice(list("abc"), n),
                           "x": rng.integers(0, 30, n).astype(float),
                           "w": rng.uniform(1.0, 50.0, n)})
        ds = sdceval.as_dataset(df, qi=["g"], numeric=["x"], weight="w")
        k = int(rng.integers(2, 4))
        rel = sdceval.anonymize(ds, "mdav+recode:level=0", k=k, seed=seed)
        got = _risk(ds, rel, keys="g,x")
        pub = pd.DataFrame({"g": df["g"], "x": rel.data["x"].to_numpy(), "w": df["w"]})
        grp = pub.groupby(["g", "x"])["w"]
        fk, Fk = grp.transform("size").to_numpy(), grp.transform("sum").to_numpy()
        assert got.per_record == pytest.approx(risks_from_frequencies(fk, Fk), rel=1e-12)
        assert (pub.groupby("x")["x"].transform("size") >= k).all()  # MDAV's groups
        # the published numbers given as a categorical key (labels sorting as the
        # numbers do, so that the codes agree: sdcMicro's SUDA2 hashes them): the same
        # risks
        rank = pub["x"].rank(method="dense").astype(int).map("{:04d}".format)
        cat = sdceval.as_dataset(pub.assign(x=rank), qi=["g", "x"], weight="w")
        plain = sdceval.anonymize(cat, "generalization", levels="0,0", max_suppression=0)
        assert got.per_record == pytest.approx(_risk(cat, plain).per_record, rel=1e-12)
        a, b = _risk(ds, rel, "suda2", keys="g,x"), _risk(cat, plain, "suda2")
        for key in ("msus_by_size", "special_uniques", "sample_uniques", "pairs",
                    "mean_suda_score"):
            assert a.details[key] == b.details[key]
        # the DIS probability counts uniques by sdcMicro's hash of the codes, which
        # differ between the two files: equal to rounding of that count only
        assert a.per_record == pytest.approx(b.per_record, rel=1e-6)


def test_sdcmicro_with_a_microaggregated_key_variable():
    """Real sdcMicro 5.8.1 on a file whose numeric ``inc`` was microaggregated (sdceval's
    MDAV, k = 3) and is a key variable with ``a`` and ``b``.  The file below (``inc`` as
    published) written to r_in.csv, then::

        .libPaths(c("/tmp/sdcmicro/Rlib", .libPaths())); library(sdcMicro)
        d <- read.csv("r_in.csv")
        m <- measure_risk(d, keyVars = c("a", "b", "inc"), w = "w", hid = "hid")
        sprintf("%.17g", m$Res[, "risk"])     # RISK (indivRisk(freqCalc(...))$rk: equal)
        sprintf("%.17g", c(m$global_risk, m$global_risk_ER, m$hier_risk, m$hier_risk_ER))
    """
    df = pd.DataFrame({
        "hid": np.repeat(np.arange(1, 11), [3, 2, 3, 1, 2, 3, 2, 3, 2, 3]),
        "a": list("212212212121111121111212"),
        "b": list("331332211332212323213221"),
        "inc": [1280.0, 124, 204, 9828, 17082, 1714, 1012, 1914, 143, 645, 731, 6220, 407,
                1577, 2262, 3230, 714, 552, 124, 3455, 3577, 672, 1382, 271],
        "w": [26.3, 26.4, 14.0, 55.7, 51.6, 28.0, 91.6, 96.7, 99.4, 88.5, 50.8, 37.3, 54.2,
              20.4, 16.7, 38.3, 56.6, 22.8, 97.9, 16.3, 35.7, 78.5, 25.1, 24.7]})
    published = [1413.0, 130.33333333333334, 294.0, 11043.333333333334,
                 11043.333333333334, 1963.3333333333333, 819.0, 1963.3333333333333,
                 130.33333333333334, 623.0, 819.0, 11043.333333333334, 294.0, 1413.0,
                 1963.3333333333333, 3420.6666666666665, 819.0, 623.0, 130.33333333333334,
                 3420.6666666666665, 3420.6666666666665, 623.0, 1413.0, 294.0]
    risk = [0.12923197388077939, 0.12887259882489255, 0.045697295489681294,
            0.073491410364410203, 0.077935210918725642, 0.12341498185834088,
            0.012874177656621267, 0.04777025498912485, 0.046739350748602929,
            0.01695256696227208, 0.078873420774787872, 0.099696785858120376,
            0.075050393015894737, 0.15543994334279235, 0.17932539614157386,
            0.024991575684688096, 0.012874177656621267, 0.01695256696227208,
            0.047305949943616761, 0.18242909201390306, 0.024991575684688096,
            0.056298046771462752, 0.13372895627127546, 0.045697295489681294]
    ds = sdceval.as_dataset(df, qi=["a", "b"], numeric=["inc"], weight="w", household="hid")
    rel = sdceval.anonymize(ds, "mdav+recode:level=0", k=3)
    assert rel.data["inc"].to_numpy() == pytest.approx(published, rel=1e-15)
    m = _risk(ds, rel, keys="a,b,inc")
    assert m.per_record == pytest.approx(risk, rel=1e-9)
    assert m.value == pytest.approx(0.076526458221034543, rel=1e-9)
    assert m.details["expected_reidentifications"] == pytest.approx(1.836634997304829,
                                                                    rel=1e-9)
    h = _risk(ds, rel, "household_risk", keys="a,b,inc")
    assert h.value == pytest.approx(0.18604927665106483, rel=1e-9)
    assert h.details["expected_reidentifications"] == pytest.approx(4.4651826396255556,
                                                                    rel=1e-9)
