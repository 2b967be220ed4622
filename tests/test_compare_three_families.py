"""One comparison over three families (issue 32 item 5): SDC strategies, synthetic data
and DP candidates matched on the worst attack, on records held out for every candidate
alike; record-linkage readings "n/a" (never 0) for releases with no record
correspondence; the DP candidate reproducible from the seed tree."""
from __future__ import annotations

import numpy as np
import pytest

import sdceval
from analyst_data import mixed
from sdceval import SdcevalError
from sdceval.compare.composite import risk_spec
from sdceval.compare.control_set import reopen, reserve
from sdceval.compare.families import (ATTACK_RISK, attack_risk, comparison_defaults,
                                      family_of, parse_families)
from sdceval.compare.ranking import plan_comparison


@pytest.fixture(scope="module")
def ds():
    return mixed(n=900, seed=4)


def test_families_are_parsed_with_a_clear_error():
    assert parse_families("sdc, synthetic,dp,sdc") == ("sdc", "synthetic", "dp")
    assert parse_families(None) is None
    with pytest.raises(SdcevalError, match="unknown family 'synthtic'.*synthetic"):
        parse_families("sdc,synthtic")
    with pytest.raises(SdcevalError, match="control must be the share"):
        plan_comparison(families="sdc", control=1.5)


def test_default_candidates_of_three_families_and_the_attack_risk(ds):
    chosen = comparison_defaults(ds, families=("sdc", "synthetic", "dp"))
    fams = {family_of(m) for m in chosen["methods"]}
    assert fams == {"sdc", "synthetic", "dp"}, chosen["methods"]
    assert {"cart_synthesis", "gaussian_copula", "dp_histogram"} <= set(chosen["methods"])
    assert chosen["risk"] == ATTACK_RISK
    # without a sensitive attribute the inference attack has nothing to infer
    bare = sdceval.as_dataset(ds.frame.drop(columns=["disease", "income"]),
                              qi=["age", "sex", "region"], numeric=["x", "y"])
    assert attack_risk(bare) == "max(singling_out,linkability)"
    # SDC alone keeps the record-linkage risk
    assert comparison_defaults(ds)["risk"] == "reidentification"


def test_attack_risks_max_only_with_each_other():
    assert risk_spec("max(singling_out,linkability)").unit == "attack risk"
    with pytest.raises(SdcevalError, match="not on the scale"):
        risk_spec("max(singling_out,reidentification)")


def test_the_control_set_is_held_out_once_and_drawn_again_the_same_way(ds):
    plan = plan_comparison(families="sdc,synthetic", seed=7)
    said = []
    training, spec = reserve(ds, plan, said.append)
    assert training.n + training.control.n == ds.n and "held out" in said[0]
    assert spec == {"fraction": 0.2, "seed": 7}
    again = reopen(ds, spec)            # a task in another process
    assert again.frame.equals(training.frame)
    assert again.control.frame.equals(training.control.frame)
    assert reopen(training, spec) is training
    # an SDC comparison on record-linkage risks holds nothing out
    assert reserve(ds, plan_comparison(), said.append) == (ds, None)
    # ... unless an attack is asked for
    assert reserve(ds, plan_comparison(risks="linkability"))[1] is not None


@pytest.mark.slow   # a comparison of three candidates, two repeats (~20 s)
def test_three_families_are_ranked_at_one_attack_risk_with_intervals(ds):
    kw = dict(methods="mondrian+intervals,cart_synthesis,dp_histogram",
              families="sdc,synthetic,dp", utilities="query_error", repeats=2,
              curves=False, seed=1, method_params={"dp_histogram": {"bins": 4}})
    comp = sdceval.compare(ds, **kw)
    table = comp.table()
    assert comp.risk_measure == ATTACK_RISK
    assert set(table["method"]) == {"mondrian+intervals", "cart_synthesis", "dp_histogram"}
    assert {"risk_lo", "risk_hi", "query_error_lo", "query_error_hi"} <= set(table.columns)
    # record-linkage readings: not applicable to synthetic releases, never a number
    for m in ("cart_synthesis", "dp_histogram"):
        why = comp.not_applicable[m]
        assert "reidentification" in why and "synthetic" in why["reidentification"]
        row = table[table["method"] == m].iloc[0]
        assert np.isnan(row["reidentification"])
    shown = comp.display_table()
    assert shown.loc[shown["method"].str.contains("CART"), "reidentification"
                     ].iloc[0].startswith("n/a")
    # the DP candidate ran with seeded noise: the same comparison again is the same
    again = sdceval.compare(ds, **kw)
    assert again.table()[["method", "risk"]].equals(table[["method", "risk"]])
    m = next(x for x in comp.matches if x.method == "dp_histogram")
    assert m.params.get("noise") == "seeded"


@pytest.mark.slow   # the command on the bundled survey, three candidates (~1-2 min)
def test_the_command_ranks_three_families_on_the_bundled_survey(tmp_path, capsys):
    from sdceval.cli import main
    out = tmp_path / "fam"
    code = main(["compare", "--data", "survey", "--families", "sdc,synthetic,dp",
                 "--methods", "mondrian+intervals,cart_synthesis,dp_histogram",
                 "--utility", "query_error", "--repeats", "2", "--out", str(out)])
    printed = capsys.readouterr().out
    assert code == 0, printed
    assert "worst of the singling-out risk, linkability risk and inference risk" in printed
    ranking = __import__("pandas").read_csv(out / "ranking.csv")
    assert set(ranking["method"]) == {"mondrian+intervals", "cart_synthesis", "dp_histogram"}
    assert {"risk_lo", "risk_hi"} <= set(ranking.columns)
    report = (out / "report.html").read_text()
    assert "CART synthesis" in report and "DP histogram" in report
    assert "does not read synthetic releases" in report or "n/a" in report


def test_a_target_of_no_attack_risk_is_said():
    small = mixed(n=300, seed=2)
    # the copula's attacks stay above 0 here: nothing matches, and the target is said
    with pytest.warns(UserWarning, match="no attack did better"), \
            pytest.raises(SdcevalError, match="reached by no method"):
        sdceval.compare(small, methods="gaussian_copula", families="synthetic", target=0,
                        utilities="query_error", curves=False)
