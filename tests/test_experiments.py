"""Experiment files: validation before running, reduced runs, executors, reports."""
import json

import pandas as pd
import pytest

from sdceval import SdcevalError
from sdceval.experiments import load_spec, run_experiment
from sdceval.experiments.report import pairwise_agreement

EXPERIMENTS = ["domingo_ferrer_table1", "li2009_fig2a", "li2009_fig2b", "li2009_fig3a",
               "li2009_fig3b", "li2009_fig3c"]


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


def test_reduced_tradeoff_run(tmp_path):
    res = run_experiment("experiments/li2009_fig2a.toml", out=tmp_path, reduced=True,
                         executor="serial")
    tr = next(iter(res.tradeoffs.values()))
    assert len(tr.points) == 8
    assert (tmp_path / "tradeoff0_adult_tradeoff.png").exists()
    assert "Trade-off" in (tmp_path / "report.md").read_text()


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
