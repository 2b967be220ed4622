"""One intruder for all (issue 28 item 2): the ``knows`` parameter of
`reidentification`, `attribute_inference` and `sample_uniques` declares the columns the
intruder knows; exactly those link, whatever the release publishes; bad names and
columns whose role cannot be known are refused with the column and the fix; the
parameter is given as a list in Python, as comma- or plus-separated text, and inside a
measure list of the command line (``reidentification:knows=age+region``)."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import sdceval
from sdceval.catalog import get_measure
from sdceval.compare.ranking import parse_measure_list
from sdceval.measures import _kept_keys
from tests.test_reidentification_composite import composite, oracle, table

MEASURES = ("reidentification", "attribute_inference", "sample_uniques")


@pytest.fixture(scope="module")
def case():
    ds = table(40, 2, kept=True)
    rel = composite(ds, 2, suppress=0.1, overlap=False, spend_cells=False,
                    buckets=False, duplicates=True)
    return ds, rel


@pytest.mark.parametrize("name", MEASURES)
def test_every_risk_measure_declares_knows(name):
    spec = get_measure(name)
    p = next(p for p in spec.params if p.name == "knows")
    assert spec.resolve({})["knows"] == ()
    for raw in ("age,region", "age+region", " age , region ", ["age", "region"],
                ("age", "region")):
        assert spec.resolve({"knows": raw})["knows"] == ("age", "region")
    assert "knows" in p.description or "intruder" in p.description


def test_measure_list_of_the_command_line_takes_knows():
    measures = parse_measure_list("reidentification:knows=age+region,sample_uniques")
    (name, params), _ = measures.values()
    assert name == "reidentification"
    assert get_measure(name).resolve(params)["knows"] == ("age", "region")


@pytest.mark.parametrize("name", MEASURES)
def test_unknown_column_is_refused_with_a_suggestion(case, name):
    ds, rel = case
    with pytest.raises(sdceval.SdcevalError,
                       match=r"knows.*'regoin'.*Did you mean 'region'") as e:
        sdceval.evaluate(ds, rel, name, knows=["age", "regoin"])
    assert "\n" not in str(e.value)


@pytest.mark.parametrize("name", MEASURES)
@pytest.mark.parametrize("column,role", [("disease", "sensitive")])
def test_a_column_whose_role_cannot_be_known_is_refused(case, name, column, role):
    ds, rel = case
    with pytest.raises(sdceval.SdcevalError,
                       match=rf"'{column}'.*role '{role}'.*(qi|quasi)") as e:
        sdceval.evaluate(ds, rel, name, knows=["age", column])
    assert "\n" not in str(e.value)


@pytest.mark.parametrize("role", ["label", "identifier", "ignore"])
def test_other_roles_are_refused(role):
    frame = pd.DataFrame({"age": [20, 30, 40, 50] * 3, "x": list("abcdefabcdef"),
                          "income": np.arange(12.0), "disease": list("pqrs") * 3})
    ds = sdceval.as_dataset(frame, qi=["age"], numeric=["income"], sensitive="disease",
                            **{role: ["x"]})
    rel = sdceval.anonymize(ds, "mdav", k=3)
    with pytest.raises(sdceval.SdcevalError, match=rf"'x'.*role '{role}'"):
        sdceval.evaluate(ds, rel, "reidentification", knows="income,x")


def test_a_published_column_the_intruder_does_not_know_does_not_link(case):
    ds, rel = case
    all_ = sdceval.evaluate(ds, rel, "reidentification")
    region = sdceval.evaluate(ds, rel, "reidentification", knows=["region"])
    assert set(region.details["linkage_attributes"]) == {"region"}
    assert region.value < all_.value
    want, _, _ = oracle(ds, rel, knows=["region"])
    np.testing.assert_allclose(region.per_record, want, atol=1e-12)


def test_a_known_column_the_release_does_not_publish_constrains_nothing():
    ds = table(30, 4)
    rel = sdceval.anonymize(ds, "mdav", k=3)     # publishes income and spend only
    a = sdceval.evaluate(ds, rel, "reidentification", knows=["age", "income"])
    b = sdceval.evaluate(ds, rel, "reidentification", knows=["income"])
    np.testing.assert_array_equal(a.per_record, b.per_record)
    assert set(a.details["linkage_attributes"]) == {"income"}
    assert a.details["knows"] == ["age", "income"]


def test_default_is_every_qi_numeric_and_kept_column(case):
    ds, rel = case
    default = sdceval.evaluate(ds, rel, "reidentification")
    every = sdceval.evaluate(ds, rel, "reidentification",
                             knows="age,region,income,spend,household")
    np.testing.assert_array_equal(default.per_record, every.per_record)
    without = sdceval.evaluate(ds, rel, "reidentification", kept=False)
    no_kept = sdceval.evaluate(ds, rel, "reidentification", knows="age,region,income,spend")
    np.testing.assert_array_equal(without.per_record, no_kept.per_record)


def test_kept_risk_follows_the_declared_intruder(case):
    """The kept-column warning compares the declared intruder with the kept columns
    known and without them, so a declaration that leaves a kept column out cannot
    silence it."""
    ds, rel = case
    knows = ("region", "income")
    risk = _kept_keys.kept_risk(ds, rel, knows=knows)
    with_kept = sdceval.evaluate(ds, rel, "reidentification",
                                 knows=list(knows) + ["household"]).value
    without = sdceval.evaluate(ds, rel, "reidentification", knows=list(knows)).value
    assert risk.with_kept == pytest.approx(with_kept)
    assert risk.without == pytest.approx(without)
    assert risk.with_kept > risk.without


def test_comparison_note_reads_the_declared_intruder():
    ds = table(20, 5, kept=True)
    assert _kept_keys.comparison_note(ds, [("reidentification", {})])
    assert _kept_keys.comparison_note(ds, [("reidentification",
                                            {"knows": "age,household"})])
    assert _kept_keys.comparison_note(ds, [("reidentification",
                                            {"knows": "age,income"})]) is None
