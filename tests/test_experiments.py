"""Experiment files: validation before running, reduced runs, executors, reports."""
import json

import pandas as pd
import pytest

from sdceval import SdcevalError
from sdceval.experiments import load_spec, run_experiment
from sdceval.experiments.report import (pairwise_agreement, paper_side_by_side,
                                        seed_agreement_lines)

EXPERIMENTS = ["domingo_ferrer_table1", "li2009_fig2a", "li2009_fig2b", "li2009_fig3a",
               "li2009_fig3b", "li2009_fig3c", "lattice_adult", "dewri2009_adult_vectors",
               "dewri2010_pbg", "dewri2010_pbg_beyond"]


@pytest.mark.parametrize("name", EXPERIMENTS)
def test_shipped_experiment_files_validate(name):
    spec = load_spec(f"experiments/{name}.toml")
    assert spec.jobs
    load_spec(f"experiments/{name}.toml", reduced=True)


def _write(tmp_path, text):
    p = tmp_path / "e.toml"
    p.write_text(text)
    return p


def test_validation_names_the_problem(tmp_path):
    with pytest.raises(SdcevalError, match="Did you mean 'methods'"):
        load_spec(_write(tmp_path, '[[comparison]]\ndata = "census"\nmethod = ["mdav"]\n'))
    with pytest.raises(SdcevalError, match="Did you mean 'rank_swap'"):
        load_spec(_write(tmp_path, '[[comparison]]\ndata = "census"\nmethods = ["rankswap"]\n'))
    with pytest.raises(SdcevalError, match="'k'.*>= 2"):
        load_spec(_write(tmp_path, '[[evaluation]]\ndata = "census"\nreleases = ["mdav:k=1"]\n'))
    with pytest.raises(SdcevalError, match="no job"):
        load_spec(_write(tmp_path, '[experiment]\nname = "x"\n'))
    with pytest.raises(SdcevalError, match="executor"):
        load_spec(_write(tmp_path, '[experiment]\nexecutor = "cluster"\n'
                                   '[[evaluation]]\ndata = "census"\nreleases = ["mdav:k=3"]\n'))


def test_pairwise_agreement():
    assert pairwise_agreement({"a": 1, "b": 2, "c": 3}, {"a": 1, "b": 3, "c": 2}) == (2, 3)


def test_agreement_flags_pairs_ordered_by_rounding_noise():
    # propensity `linear` on Census: three values of ~1e-34 whose order is rounding noise
    paper = {"census": {"methods": {"a": {"propensity": 1e-4}, "b": {"propensity": 1e-3},
                                    "c": {"propensity": 1e-2}, "d": {"propensity": 1e-1}}}}
    ours = {"a": {"propensity": 7e-35}, "b": {"propensity": 1.5e-34},
            "c": {"propensity": 1.9e-30}, "d": {"propensity": 2e-4}}
    _, notes = paper_side_by_side("census", ours, {}, paper)
    assert "6/6 pairwise orderings agree" in notes[0]
    assert "3 of our values are numerically 0" in notes[0]
    assert "3 of these pairs are ordered by rounding noise" in notes[0]
    ours["a"]["propensity"] = 1e-5
    _, notes = paper_side_by_side("census", ours, {}, paper)
    assert "2 of our values" in notes[0] and "1 of these pairs is ordered" in notes[0]


def test_seed_agreement_lines_give_every_seed():
    paper = {"eia": {"methods": {"a": {"emd": 1}, "b": {"emd": 2}, "c": {"emd": 3}}}}
    rows = [{"data": "eia", "method": m, "seed": s, "measure": "emd", "value": v}
            for s, vals in enumerate([(1, 2, 3), (1, 3, 2), (3, 2, 1)])
            for m, v in zip("abc", vals)]
    lines = seed_agreement_lines(pd.DataFrame(rows), paper)
    assert lines == ["- eia emd: pairwise orderings agreeing with the paper, seeds 0..2: "
                     "3, 2, 0 (of 3)"]
    assert seed_agreement_lines(pd.DataFrame(rows[:3]), paper) == []  # one seed


def test_outputs_keep_registered_types_and_full_precision(tmp_path):
    text = ('[experiment]\nname = "t"\n'
            '[[evaluation]]\ndata = "census"\n'
            'releases = ["mdav:k=4", "noise:gamma=1"]\nmeasures = ["linkage_risk"]\n')
    res = run_experiment(_write(tmp_path, text), out=tmp_path)
    df = pd.read_csv(tmp_path / "evaluation0_census_measurements.csv", dtype=str,
                     keep_default_na=False)
    risk = df[df["measure"] == "linkage_risk"].set_index("method")
    assert risk.loc["mdav", "param_k"] == "4" and risk.loc["mdav", "param_gamma"] == ""
    assert risk.loc["noise", "param_gamma"] == "1.0" and risk.loc["noise", "param_k"] == ""
    rows = json.loads((tmp_path / "results.json").read_text())["evaluations"][
        "evaluation0_census"]
    mdav = next(r for r in rows if r["method"] == "mdav" and r["measure"] == "linkage_risk")
    noise = next(r for r in rows if r["method"] == "noise" and r["measure"] == "linkage_risk")
    assert mdav["param_k"] == 4 and mdav["param_gamma"] is None
    assert noise["param_gamma"] == 1.0
    # not rounded to 10 digits (DataFrame.to_json's default)
    frame = res.evaluations["evaluation0_census"]
    assert mdav["value"] == frame[(frame.method == "mdav")
                                  & (frame.measure == "linkage_risk")]["value"].item()
    # the risk measure's other readings of the same release are rows too
    readings = df[df["reading_of"] == "linkage_risk"]
    assert set(readings["measure"]) == {"reidentification_rate", "reidentification_rate_any",
                                        "linkage_risk(scale=fitted_per_attribute)"}
    assert len(readings) == 6  # three readings x two releases


def test_comparison_report_shows_risk_readings_and_fitted_notes(tmp_path):
    text = ('[experiment]\nname = "t"\n'
            '[[comparison]]\ndata = "census"\nmethods = ["mdav", "rank_swap"]\n'
            'utilities = ["propensity"]\nrisks = ["linkage_risk:aggregate=mean"]\n'
            'risk = "linkage_risk"\n')   # compare's default is reidentification (issue 28)
    run_experiment(_write(tmp_path, text), out=tmp_path)
    ranking = (tmp_path / "comparison0_census_ranking.csv").read_text().splitlines()
    for col in ("reidentification_rate", "linkage_risk(scale=fitted_per_attribute)",
                "linkage_risk(aggregate=mean)"):
        assert col in ranking[0]
    assert ranking[1].startswith("mdav,k,5,")
    report = (tmp_path / "report.md").read_text()
    assert "equal risk on one measure is not equal risk on another" in report
    assert "fitted choice" in report
    with pytest.raises(SdcevalError, match="not a risk measure"):
        load_spec(_write(tmp_path, '[[comparison]]\ndata = "census"\nrisks = ["emd"]\n'))


@pytest.mark.slow  # two whole evaluation runs: the whole suite runs it
def test_evaluation_run_is_reproducible(tmp_path):
    text = ('[experiment]\nname = "t"\nseed = 3\n'
            '[[evaluation]]\ndata = "census"\n'
            'releases = ["noise:gamma=0.5", "rank_swap:p=0.1"]\n'
            'measures = ["linkage_risk", "emd"]\n')
    p = _write(tmp_path, text)
    run_experiment(p, out=tmp_path / "a")
    run_experiment(p, out=tmp_path / "b", executor="processes", workers=2)
    fa = pd.read_csv(tmp_path / "a" / "evaluation0_census_measurements.csv")
    fb = pd.read_csv(tmp_path / "b" / "evaluation0_census_measurements.csv")
    pd.testing.assert_frame_equal(fa, fb)
    assert (tmp_path / "a" / "report.md").read_text().startswith("# t")
    assert json.loads((tmp_path / "a" / "results.json").read_text())["seed"] == 3


@pytest.mark.slow
def test_reduced_tradeoff_run(tmp_path):
    res = run_experiment("experiments/li2009_fig2a.toml", out=tmp_path, reduced=True,
                         executor="serial")
    tr = next(iter(res.tradeoffs.values()))
    assert len(tr.points) == 8
    assert (tmp_path / "tradeoff0_adult_tradeoff.png").exists()
    report = (tmp_path / "report.md").read_text()
    assert "Trade-off" in report
    # the frontier is described by what it is made of, not by one curve's name
    assert f"{len(tr.frontier)} of 8 points: " in report


@pytest.mark.slow
def test_dask_executor_matches_serial(tmp_path):
    pytest.importorskip("distributed")
    text = ('[experiment]\nname = "t"\nseed = 1\n'
            '[[evaluation]]\ndata = "census"\n'
            'releases = ["noise:gamma=0.5", "mdav:k=4"]\nmeasures = ["linkage_risk"]\n')
    p = _write(tmp_path, text)
    run_experiment(p, out=tmp_path / "s")
    run_experiment(p, out=tmp_path / "d", executor="dask", workers=2)
    fs = pd.read_csv(tmp_path / "s" / "evaluation0_census_measurements.csv")
    fd = pd.read_csv(tmp_path / "d" / "evaluation0_census_measurements.csv")
    pd.testing.assert_frame_equal(fs, fd)


def test_an_estimated_risk_is_marked_in_the_measurements_and_the_report(tmp_path):
    """A nearest-neighbour risk of a large table is estimated from a sample of records:
    its rows carry the sample's size and standard error, and the report says so."""
    text = ('[experiment]\nname = "t"\nexecutor = "serial"\n'
            '[[evaluation]]\ndata = "census"\nreleases = ["noise:gamma=0.5"]\n'
            'measures = ["linkage_risk:sample=300", "propensity"]\n')
    run_experiment(_write(tmp_path, text), out=tmp_path / "out")
    df = pd.read_csv(tmp_path / "out" / "evaluation0_census_measurements.csv")
    row = df.set_index("measure").loc["linkage_risk(sample=300)"]
    assert row["sampled_records"] == 300 and row["standard_error"] > 0
    assert pd.isna(df.set_index("measure").loc["propensity", "sampled_records"])
    html = (tmp_path / "out" / "report.html").read_text()
    assert "estimated from a random sample of 300 records" in html
