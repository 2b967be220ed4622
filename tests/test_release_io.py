"""A release written as a plain table reads back with the same measurements."""
import pytest

import sdceval
from sdceval.core.release_io import read_release


@pytest.fixture(scope="module")
def adult():
    return sdceval.load_dataset("adult")


@pytest.mark.parametrize("method,params", [
    ("mondrian", {"model": "l", "l": 4.0}),
    ("mondrian", {"model": "k", "k": 200}),
    ("generalization", {"levels": "2,1,1,1,0,0"}),
    ("bucketization", {"model": "t", "t": 0.2, "distance": "js"}),
])
def test_round_trip_keeps_measures(adult, tmp_path, method, params):
    rel = sdceval.anonymize(adult, method, **params)
    path = tmp_path / "rel.csv"
    rel.data.to_csv(path, index=False)
    back = read_release(adult, path)
    assert back.kind == rel.kind
    for q in adult.schema.qis:
        lo, hi = back.cells[q]
        # every generalized cell contains the original value
        codes = adult.codes(q)
        assert ((lo <= codes) & (codes <= hi)).all(), q
    for measure in ("p_loss", "u_loss", "k_anonymity"):
        a = sdceval.evaluate(adult, rel, measure).value
        b = sdceval.evaluate(adult, back, measure).value
        assert b == pytest.approx(a, rel=1e-9, abs=1e-12), measure


def test_wrong_row_count_is_rejected(adult, tmp_path):
    rel = sdceval.anonymize(adult, "mondrian", model="k", k=500)
    path = tmp_path / "rel.csv"
    rel.data.iloc[:-1].to_csv(path, index=False)
    with pytest.raises(sdceval.SdcevalError, match="row-aligned"):
        read_release(adult, path)


def test_unknown_label_is_named(adult, tmp_path):
    rel = sdceval.anonymize(adult, "mondrian", model="k", k=500)
    df = rel.data.copy()
    df.loc[0, "education"] = "Kindergarten-ish"
    path = tmp_path / "rel.csv"
    df.to_csv(path, index=False)
    with pytest.raises(sdceval.SdcevalError, match="Kindergarten-ish"):
        read_release(adult, path)
