"""Li & Li trade-off runs: points, frontier, plots, CLI."""
import json

import numpy as np
import pandas as pd
import pytest

import sdceval
from sdceval.cli import main
from sdceval.compare.frontier import efficient_frontier
from sdceval.compare.tradeoff import compute_tradeoff, parse_grids


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


def test_points_span_the_baselines():
    ds = sdceval.load_dataset("adult")
    pts = compute_tradeoff(ds, models=["k", "t"], method="both",
                           grids={"k": [100, 5000], "t": [0.1, 0.3]},
                           measures=["p_loss", "u_loss"])
    assert len(pts) == 8 and set(pts.method) == {"generalization", "bucketization"}
    assert ((pts.p_loss > 0) & (pts.p_loss < np.log(2))).all()
    assert ((pts.u_loss > 0) & (pts.u_loss < 0.049)).all()  # better than suppressing QIs
    # t-closeness (JS) bounds the worst-case privacy loss by t
    t = pts[pts.model == "t"]
    assert (t.p_loss <= t.value + 1e-12).all()
    # bucketization keeps more utility than generalization on the same partition
    g = pts.set_index(["model", "value", "method"]).u_loss
    for model, value in [("k", 100), ("t", 0.1)]:
        assert g[(model, value, "bucketization")] < g[(model, value, "generalization")]


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
