"""Li & Li trade-off runs: points, frontier, plots, CLI."""
import json

import numpy as np
import pandas as pd
import pytest

import sdceval
from sdceval.cli import main
from sdceval.compare.frontier import efficient_frontier
from sdceval.compare.tradeoff import compute_tradeoff, parse_grids, validate_tradeoff_options


def test_frontier_is_the_non_dominated_set():
    rng = np.random.default_rng(0)
    pts = pd.DataFrame({"p_loss": rng.random(200), "u_loss": rng.random(200)})
    front = efficient_frontier(pts)
    xs, ys = pts.p_loss.to_numpy(), pts.u_loss.to_numpy()
    dominated = [((xs <= x) & (ys <= y) & ((xs < x) | (ys < y))).any() for x, y in zip(xs, ys)]
    expected = pts[~np.array(dominated)].sort_values("p_loss").reset_index(drop=True)
    pd.testing.assert_frame_equal(front, expected)
    assert front.u_loss.is_monotonic_decreasing


def test_grid_parsing_errors():
    assert parse_grids(["k=10,100"]) == {"k": [10.0, 100.0]}
    with pytest.raises(sdceval.SdcevalError, match="Did you mean 'delta'"):
        parse_grids(["dleta=1"])
    with pytest.raises(sdceval.SdcevalError, match="MODEL=V1,V2"):
        parse_grids(["k"])


@pytest.mark.slow  # Mondrian on Adult: about 10 s
def test_points_span_the_baselines():
    ds = sdceval.load_dataset("adult")
    pts = compute_tradeoff(ds, models=["k", "t"], method="both",
                           grids={"k": [100, 5000], "t": [0.1, 0.3]},
                           measures=["p_loss", "u_loss"])
    assert len(pts) == 8 and set(pts.method) == {"mondrian", "bucketization"}
    assert ((pts.p_loss > 0) & (pts.p_loss < np.log(2))).all()
    assert ((pts.u_loss > 0) & (pts.u_loss < 0.049)).all()  # better than suppressing QIs
    # t-closeness (JS) bounds the worst-case privacy loss by t
    t = pts[pts.model == "t"]
    assert (t.p_loss <= t.value + 1e-12).all()
    # bucketization keeps more utility than generalization on the same partition
    g = pts.set_index(["model", "value", "method"]).u_loss
    for model, value in [("k", 100), ("t", 0.1)]:
        assert g[(model, value, "bucketization")] < g[(model, value, "mondrian")]


@pytest.mark.slow  # Mondrian on Adult: about 10 s
def test_cli_tradeoff_writes_files(tmp_path, capsys):
    out = tmp_path / "tr"
    code = main(["-q", "tradeoff", "--models", "k,l", "--grid", "k=500,5000",
                 "--grid", "l=3,5", "--workers", "1", "--out", str(out)])
    assert code == 0
    points = pd.read_csv(out / "points.csv")
    for col in ["model", "parameter", "value", "method", "p_loss", "u_loss", "query_error",
                "classes"]:
        assert col in points.columns
    assert len(points) == 4
    front = pd.read_csv(out / "frontier.csv")
    assert 1 <= len(front) <= 4
    assert (out / "tradeoff.png").stat().st_size > 10_000
    assert json.loads((out / "results.json").read_text())["points"]


# -- one name, one algorithm (issue 6) -------------------------------------------------
def test_method_choices_are_registered_method_names():
    from sdceval.catalog import METHODS
    from sdceval.compare.tradeoff import DEFAULT_METHOD, METHODS as CHOICES
    assert DEFAULT_METHOD == "mondrian"
    assert set(CHOICES) == {"mondrian", "bucketization", "both"}
    for name in ("mondrian", "bucketization"):
        assert name in METHODS and CHOICES[name] == [name]
    models, grids, _ = validate_tradeoff_options({"models": ["k"], "grids": {"k": [100]}})
    assert models == ["k"]


@pytest.mark.parametrize("run", ["validate", "compute"])
def test_old_generalization_name_says_use_mondrian(run):
    with pytest.raises(sdceval.SdcevalError) as exc:
        if run == "validate":
            validate_tradeoff_options({"models": ["k"], "method": "generalization"})
        else:
            compute_tradeoff(sdceval.load_dataset("adult"), models=["k"],
                             method="generalization", grids={"k": [5000]})
    msg = str(exc.value)
    assert "'mondrian'" in msg and "Li & Li" in msg and "full-domain" in msg


def test_experiment_file_with_old_method_name_is_refused(tmp_path):
    from sdceval.experiments.spec import load_spec
    path = tmp_path / "old.toml"
    path.write_text('[experiment]\nname = "old"\n\n[[tradeoff]]\ndata = "adult"\n'
                    'models = ["k"]\nmethod = "generalization"\n')
    with pytest.raises(sdceval.SdcevalError, match="use 'mondrian'"):
        load_spec(path)


def test_cli_tradeoff_method_choices(capsys):
    with pytest.raises(SystemExit):
        main(["tradeoff", "--method", "generalization"])
    assert "mondrian" in capsys.readouterr().err
    from sdceval.cli import build_parser
    sub = next(a for a in build_parser()._actions if a.dest == "command")
    opt = next(a for a in sub.choices["tradeoff"]._actions if a.dest == "method")
    assert opt.default == "mondrian" and list(opt.choices) == ["mondrian", "bucketization",
                                                               "both"]


def test_li2009_experiments_use_registered_names():
    import glob
    from sdceval.core.fileio import read_toml
    files = sorted(glob.glob("experiments/li2009_*.toml"))
    assert files
    for f in files:
        for job in read_toml(f, "experiment").get("tradeoff", []):
            assert job.get("method", "mondrian") in ("mondrian", "bucketization", "both"), f


def test_points_keep_each_thresholds_type(tmp_path):
    from sdceval.compare.tradeoff import compute_tradeoff
    ds = sdceval.load_dataset("adult")
    pts = compute_tradeoff(ds, models=["k", "t"], grids={"k": [5000], "t": [0.4]},
                           measures=["p_loss"], model_params={"t": {"distance": "js"}})
    assert [type(v) for v in pts["value"]] == [int, float]
    pts.to_csv(tmp_path / "p.csv", index=False)
    assert (tmp_path / "p.csv").read_text().splitlines()[1].split(",")[2] == "5000"
