"""Columns published as is are part of the risk (issue 28 item 6): a kept column
(``--keep``, role passthrough) is in the intruder's knowledge; ``kept=False`` measures
without it; ``anonymize`` warns, naming the column and both figures, when it raises
re-identification; ``compare`` says the matched risk counts it."""
from __future__ import annotations

import dataclasses
import re
import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import sdceval
from sdceval.cli import main
from sdceval.measures import _kept_keys
from tests.test_reidentification import mixed, reference

QIS = ["age", "sex", "region"]


def households(n_households: int = 250, seed: int = 0, **extra) -> pd.DataFrame:
    """Persons in households of 1-4 (the issue's case), a household code kept beside
    the QIs; ``extra``: more columns, as functions of the frame."""
    rng = np.random.default_rng(seed)
    hh = np.repeat(np.arange(n_households), rng.integers(1, 5, n_households))
    n = len(hh)
    df = pd.DataFrame({"household": [f"H{h:04d}" for h in hh],
                       "age": rng.integers(18, 90, n), "sex": rng.choice(["m", "f"], n),
                       "region": rng.choice(list("ABCDE"), n),
                       "diagnosis": rng.choice(list("xyzw"), n)})
    return df.assign(**{k: f(df) for k, f in extra.items()})


def as_ds(df, kept):
    return sdceval.as_dataset(df, qi=QIS, sensitive="diagnosis", passthrough=kept)


def reid(ds, rel, **kw):
    return sdceval.evaluate(ds, rel, "reidentification", **kw)


# -- the case ----------------------------------------------------------------------
def test_a_kept_household_code_raises_reidentification_and_anonymize_warns():
    df = households()
    ds = as_ds(df, ["household"])
    with pytest.warns(UserWarning, match="kept column 'household'") as got:
        rel = sdceval.anonymize(ds, "mondrian", k=5)
    with_kept, without = reid(ds, rel).value, reid(ds, rel, kept=False).value
    assert with_kept > 0.9 and without < 0.25          # the issue: 98.2 % vs about 1/k
    # without the kept column the figure is that of the release without it
    alone = as_ds(df.drop(columns="household"), [])
    assert without == pytest.approx(reid(alone, sdceval.anonymize(alone, "mondrian",
                                                                  k=5)).value)
    text = str(got[0].message)
    assert f"from {without:.1%} to {with_kept:.1%}" in text


def test_anonymize_cli_warns_naming_the_column_and_both_figures(tmp_path, capsys):
    data = tmp_path / "people.csv"
    households().to_csv(data, index=False)
    out = tmp_path / "rel.csv"
    code = main(["anonymize", "--data", str(data), "--qi", ",".join(QIS), "--sensitive",
                 "diagnosis", "--keep", "household", "--method", "mondrian", "--param",
                 "k=5", "--out", str(out)])
    err = capsys.readouterr().err
    assert code == 0 and out.exists()
    line = next(x for x in err.splitlines() if "raises re-identification" in x)
    assert "'household'" in line and "--keep" in line
    low, high = (float(v) for v in re.findall(r"(\d+\.\d)%", line))
    assert low < 25 and high > 90


@pytest.mark.parametrize("extra", ["constant", "by_class"])
def test_no_warning_for_a_kept_column_that_splits_no_class(extra, tmp_path, capsys):
    df = households(120, seed=1)
    if extra == "by_class":  # few values, constant within each of Mondrian's classes
        classes = sdceval.anonymize(as_ds(df, []), "mondrian", k=5).classes
        df = df.assign(batch=[f"b{c % 3}" for c in classes])
    else:
        df = df.assign(batch="2024")
    ds = as_ds(df, ["batch"])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        rel = sdceval.anonymize(ds, "mondrian", k=5)
    assert reid(ds, rel).value == pytest.approx(reid(ds, rel, kept=False).value)
    risk = _kept_keys.kept_risk(ds, rel)
    assert risk.columns == ("batch",) and not risk.raised and risk.responsible == ()
    data = tmp_path / "people.csv"
    df.drop(columns="household").to_csv(data, index=False)
    code = main(["anonymize", "--data", str(data), "--qi", ",".join(QIS), "--sensitive",
                 "diagnosis", "--keep", "batch", "--method", "mondrian", "--param", "k=5",
                 "--out", str(tmp_path / "rel.csv")])
    assert code == 0 and "re-identification" not in capsys.readouterr().err


def test_of_several_kept_columns_only_the_responsible_one_is_named():
    df = households(120, seed=2, batch=lambda d: "2024")
    ds = as_ds(df, ["household", "batch"])
    rel = sdceval.get_method("mondrian").apply(ds, {"k": 5}, seed=0)
    risk = _kept_keys.kept_risk(ds, rel)
    assert risk.raised and risk.responsible == ("household",)
    assert "'batch'" not in _kept_keys.warning(risk)


def test_no_kept_column_no_extra_evaluation(monkeypatch):
    ds = as_ds(households(60), [])
    rel = sdceval.get_method("mondrian").apply(ds, {"k": 5}, seed=0)
    monkeypatch.setattr(_kept_keys, "_reid", lambda *a, **k: pytest.fail("evaluated"))
    assert _kept_keys.kept_risk(ds, rel) is None


def test_comparison_note_names_kept_columns_unless_measured_without():
    ds = as_ds(households(40), ["household"])
    note = _kept_keys.comparison_note(ds, [("reidentification", {})])
    assert "'household'" in note and "intruder's knowledge" in note
    assert _kept_keys.comparison_note(ds, [("reidentification", {"kept": False})]) is None
    assert _kept_keys.comparison_note(ds, [("linkage_risk", {})]) is None
    note = _kept_keys.comparison_note(ds, [("attribute_inference", {})])
    assert "attribute_inference" in note
    assert _kept_keys.comparison_note(as_ds(households(40), []),
                                      [("reidentification", {})]) is None


@pytest.mark.filterwarnings("ignore:mondrian")
def test_compare_matches_with_kept_columns_and_says_so():
    df = households(100, seed=3)
    ds = as_ds(df, ["household"])
    comp = sdceval.compare(ds, ["mondrian"], target="mondrian:k=4", curves=False,
                           utilities="avg_class_size")
    r = comp.matches[0]
    # the matched risk includes the kept column: recomputed at the matched release
    rel = sdceval.get_method("mondrian").apply(ds, {r.parameter: r.value}, seed=0)
    assert r.risk == pytest.approx(reid(ds, rel).value) and r.risk > 0.5
    assert any("'household'" in n and "intruder's knowledge" in n
               for n in comp.footnotes())


# -- the measure against brute force (hypothesis) ---------------------------------------
METHODS = [("mondrian", {"k": 3}), ("mdav", {"k": 3}), ("noise", {"gamma": 0.3})]


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10_000), n=st.integers(12, 40),
       method=st.sampled_from(METHODS))
def test_kept_unique_id_reidentifies_everyone_and_a_constant_changes_nothing(seed, n,
                                                                          method):
    base = mixed(n, seed)
    hier = {q: base.hierarchy(q) for q in base.schema.qis}
    frame = base.frame.assign(pid=[f"p{i}" for i in range(n)], const="c")

    def ds(kept):
        return sdceval.as_dataset(frame, qi=list(base.schema.qis), numeric=["income", "spend"],
                                  sensitive="disease", passthrough=kept, hierarchies=hier)

    name, params = method
    for kept in (["pid"], ["const"], ["pid", "const"]):
        d = ds(kept)
        rel = sdceval.get_method(name).apply(d, params, seed=seed)
        m, off = reid(d, rel), reid(d, rel, kept=False)
        dropped = dataclasses.replace(rel, data=rel.data.drop(columns=kept))
        # brute force, n x n: with the kept columns, and with them unknown (dropped)
        np.testing.assert_allclose(m.per_record, reference(d, rel)[0], atol=1e-12)
        np.testing.assert_allclose(off.per_record, reference(d, dropped)[0], atol=1e-12)
        if "pid" in kept:
            assert np.all(m.per_record == 1.0) and m.value == 1.0
        else:
            np.testing.assert_allclose(m.per_record, off.per_record, atol=1e-12)
