"""Figures a person can read (issue 20 item 2): display names and direction words from
`sdceval.core.glossary` instead of internal names, the Okabe–Ito palette, risk curves
wrapped at four panels a row, property vectors without tens of thousands of overlapping
points, and valid PNG files.

The figures are inspected as `matplotlib.figure.Figure` objects (the ``_..._figure``
builders of `sdceval.experiments.plots`), rendered by Agg; no pyplot.
"""
import re
import struct
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from sdceval.catalog import get_method
from sdceval.compare.bisection import BisectionResult, Step
from sdceval.compare.ranking import Comparison, compare
from sdceval.core.glossary import axis_label, direction_words, display_name, release_label
from sdceval.core.loaders import load_dataset
from sdceval.experiments import plots
from sdceval.experiments.plots import (COLOURS, MAX_CURVE_POINTS, OKABE_ITO,
                                       _pbg_front_figure, _property_vectors_figure,
                                       _risk_curves_figure, _tradeoff_figure,
                                       plot_pbg_front, plot_property_vectors,
                                       plot_risk_curves, plot_tradeoff, series_style)

#: internal names a figure must not show (they are shown by their display names)
INTERNAL = re.compile(r"\b(micro|swap|Mnoise|rank_swap|multiplicative_noise|mdav|"
                      r"linkage_risk|reidentification|class_size|sensitive_count|p_loss|"
                      r"l_distinct)\b")
#: the parameter each method's bisection tunes
TUNED = {"mdav": "k", "noise": "gamma", "rank_swap": "p", "multiplicative_noise": "s",
         "mondrian": "k", "bucketization": "k", "generalization": "k", "anatomy": "l"}


def _texts(fig) -> list[str]:
    """Every text the figure shows (titles, labels, legends, ticks)."""
    from matplotlib.text import Text
    return [t.get_text() for t in fig.findobj(Text) if t.get_text()]


def _check_png(path, max_width_in: float = 13.0):
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    assert data[12:16] == b"IHDR"
    width, height = struct.unpack(">II", data[16:24])
    assert 0 < width <= max_width_in * 120 and height > 0
    from PIL import Image
    with Image.open(path) as im:
        im.verify()
        assert round(im.info["dpi"][0]) == 120


def _comparison(methods, dataset="census", target=0.5, reference="mdav:k=5",
                risk="linkage_risk", risk_params=None) -> Comparison:
    """A comparison with made-up risks: a rising curve on each method's grid, two
    bisection steps and the match (no anonymization runs)."""
    matches, curves = [], {}
    for m in methods:
        name = TUNED[m]
        param = get_method(m).param(name)
        grid = [float(g) for g in param.grid]
        curve = [(g, i / len(grid)) for i, g in enumerate(grid)]
        value = grid[len(grid) // 2]
        steps = [Step(grid[1], 0.3, "bisect"), Step(value, target, "bisect")]
        matches.append(BisectionResult(m, name, value, target, target, 4, True,
                                       (0.0, 1.0), {name: value}, steps))
        curves[m] = curve
    return Comparison(dataset, risk, dict(risk_params or {}), target, reference, 0, 1,
                      matches, {}, {}, curves)


def _rows(fig) -> list[int]:
    """Visible panels per row, over every block of rows (subfigure)."""
    per_row: dict = {}
    for ax in fig.axes:
        if ax.get_visible() and ax.get_subplotspec() is not None:
            key = (id(ax.get_figure(root=False)), ax.get_subplotspec().rowspan.start)
            per_row[key] = per_row.get(key, 0) + 1
    return list(per_row.values())


# -- palette ------------------------------------------------------------------------
def test_palette_is_okabe_ito_without_black():
    assert set(COLOURS) <= set(OKABE_ITO.values())
    assert OKABE_ITO["black"] not in COLOURS
    assert len(set(COLOURS)) == len(COLOURS) == 7
    styles = [series_style(i) for i in range(7)]
    # each series differs in colour, line style and marker (greyscale still reads)
    for key in ("color", "ls", "marker"):
        assert len({str(s[key]) for s in styles}) == 7
    assert not hasattr(plots, "PAPER_LABELS")
    assert not hasattr(plots, "_order_curve")


def test_matplotlib_is_not_imported_with_the_module():
    code = "import sys, sdceval.experiments.plots; print('matplotlib' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "False"


# -- risk curves --------------------------------------------------------------------
@pytest.fixture(scope="module")
def census_comparison():
    # on the papers' measure: its axis carries an aggregate (mean_log1p) to check
    return compare(load_dataset("census"), ["mdav", "noise"], utilities="il1s",
                   risk="linkage_risk")


def test_risk_curves_of_a_real_comparison(census_comparison, tmp_path):
    comp = census_comparison
    path = plot_risk_curves(comp, tmp_path / "risk.png")
    _check_png(path)
    fig = _risk_curves_figure(comp)
    axes = [ax for ax in fig.axes if ax.get_visible()]
    assert [ax.get_title().split("\n")[0] for ax in axes] == [
        "MDAV microaggregation", "correlated noise"]
    ylabel = axes[0].get_ylabel()
    assert display_name("linkage_risk") in ylabel
    assert direction_words("linkage_risk") in ylabel
    assert "mean_log1p" in ylabel  # the aggregate, as before
    assert axes[0].get_xlabel().startswith("k (records per group)")
    assert "higher = more protection" in axes[0].get_xlabel()
    title = fig.get_suptitle()
    assert title.startswith("census: record-linkage distance")
    assert f"{comp.target:.3g}" in title and "MDAV" in title
    legend = [t.get_text() for t in fig.legends[0].get_texts()]
    assert {"matched", "bisection steps", "parameter grid"} <= set(legend)
    texts = _texts(fig)
    assert not [t for t in texts if INTERNAL.search(t)], texts


@pytest.mark.parametrize("n, rows", [(5, [3, 2]), (8, [4, 4])])
def test_risk_curves_wrap_at_four_panels_a_row(n, rows):
    comp = _comparison(list(TUNED)[:n])
    fig = _risk_curves_figure(comp)
    assert _rows(fig) == rows
    assert max(_rows(fig)) <= 4
    assert fig.get_figwidth() <= 13
    titles = [ax.get_title().split("\n")[0] for ax in fig.axes if ax.get_visible()]
    assert titles == [display_name(m) for m in list(TUNED)[:n]]
    assert "multiplicative noise" in titles
    assert not [t for t in _texts(fig) if INTERNAL.search(t)]


def test_risk_curves_of_several_data_sets_get_a_block_each():
    census = _comparison(["mdav", "noise", "rank_swap", "multiplicative_noise", "mdav"])
    adult = _comparison(["mondrian", "generalization"], dataset="adult-train",
                        risk="reidentification", reference="mondrian:k=5")
    fig = _risk_curves_figure([census, adult], title="my experiment")
    assert len(fig.subfigs) == 2
    assert fig.get_suptitle() == "my experiment"
    blocks = [sub.get_suptitle() for sub in fig.subfigs]
    assert blocks[0].startswith("census: ") and blocks[1].startswith("adult-train: ")
    assert "Mondrian k" in blocks[1]
    assert max(_rows(fig)) <= 4
    adult_axes = [ax for ax in fig.subfigs[1].axes if ax.get_visible()]
    assert "re-identification rate" in adult_axes[0].get_ylabel()
    assert "higher = riskier" in adult_axes[0].get_ylabel()


def test_risk_curve_of_an_unreached_target_says_so():
    comp = _comparison(["anatomy", "mondrian"], risk="reidentification")
    comp.matches[0].bracketed = False
    fig = _risk_curves_figure(comp)
    assert "target not reached" in fig.axes[0].get_title()
    legend = [t.get_text() for t in fig.legends[0].get_texts()]
    assert "closest (target not reached)" in legend and "matched" in legend


def test_long_risk_names_and_unreached_titles_stay_inside_their_panels():
    """The worst of three attacks as the risk, targets not reached: every panel's
    title fits its panel's width and each row's label its row's height (they ran into
    their neighbours before)."""
    comp = _comparison(["mdav", "noise", "rank_swap", "mondrian", "generalization"],
                       risk="max(singling_out,linkability,inference)")
    for m in comp.matches:
        m.bracketed = False
    fig = _risk_curves_figure(comp)
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    r = canvas.get_renderer()
    for ax in (a for a in fig.axes if a.get_visible()):
        box = ax.get_window_extent(r)
        title = ax.title.get_window_extent(r)
        assert title.width <= box.width * 1.12, ax.get_title()
        if ax.get_ylabel():
            assert ax.yaxis.label.get_window_extent(r).height <= box.height * 1.05
    assert "(closest:" in fig.axes[0].get_title()


# -- trade-off ----------------------------------------------------------------------
def _points():
    rows = []
    for model, values in (("k", [10, 50, 100]), ("l", [3, 4, 5])):
        for i, v in enumerate(values):
            rows.append({"model": model, "parameter": model, "value": v,
                         "method": "mondrian", "p_loss": 0.5 - 0.1 * i,
                         "u_loss": 0.01 * (i + 1), "query_error": 100.0 * (i + 1)})
    return pd.DataFrame(rows)


def test_tradeoff_defaults_read_as_words(tmp_path):
    fig = _tradeoff_figure(_points(), style=None)
    ax = fig.axes[0]
    assert ax.get_xlabel() == axis_label("p_loss")
    assert "higher = riskier" in ax.get_xlabel()
    assert display_name("u_loss") in ax.get_ylabel()
    assert direction_words("u_loss") in ax.get_ylabel()
    assert ax.get_title().replace("\n", " ") == \
        f"{display_name('u_loss')} against {display_name('p_loss')}"
    legend = [t.get_text() for t in fig.legends[0].get_texts()]
    assert legend == [display_name("k"), display_name("l")]
    _check_png(plot_tradeoff(_points(), tmp_path / "t.png", style=None))


def test_tradeoff_keeps_the_callers_labels_and_title(tmp_path):
    points = _points()
    fig = _tradeoff_figure(points, y="query_error", style="method", title="my title",
                           xlabel="my x", ylabel="my y")
    ax = fig.axes[0]
    assert (ax.get_xlabel(), ax.get_ylabel(), ax.get_title()) == ("my x", "my y", "my title")
    legend = fig.legends[0]
    assert [t.get_text() for t in legend.get_texts()] == [display_name("k"),
                                                          display_name("l")]
    assert legend.get_title().get_text() == f"{display_name('model')} (Mondrian)"
    # the caller's call (sdceval.experiments.tradeoff.write_tradeoff)
    _check_png(plot_tradeoff(points, tmp_path / "q.png", x="p_loss", y="query_error",
                             by="model", style="method", title="adult",
                             ylabel="average relative error (%)"))


def test_tradeoff_of_variants_names_what_they_share():
    rows = []
    for sel in (0.05, 0.1):
        for method in ("mondrian", "bucketization"):
            for i in range(3):
                rows.append({"p_loss": 0.1 * i, "model": "k", "method": method,
                             "variant": f"query_error(qd=4,sel={sel})",
                             "query_error": 100.0 * (3 - i) * (1 + sel)})
    fig = _tradeoff_figure(pd.DataFrame(rows), y="query_error", by="variant")
    by, style = fig.legends
    assert by.get_title().get_text() == display_name("query_error")
    assert [t.get_text() for t in by.get_texts()] == ["qd=4, sel=0.05", "qd=4, sel=0.1"]
    assert [t.get_text() for t in style.get_texts()] == ["Mondrian", "bucketization"]
    assert "higher = more utility lost" in fig.axes[0].get_ylabel()


# -- property vectors ---------------------------------------------------------------
def _vectors(n=30000):
    rng = np.random.default_rng(0)
    out = {}
    for label, scale in (("mondrian:k=10", 15.0), ("generalization:k=10", 400.0),
                         ("my_release.csv", 60.0)):
        size = np.round(10 + rng.exponential(scale, n))
        size[:50] = np.nan if label.startswith("generalization") else size[:50]
        frame = pd.DataFrame({"class_size": size, "glm": rng.uniform(0, 3, n)})
        frame.attrs.update({"higher_is_better": {"class_size": True, "glm": False},
                            "data": "adult-train"})
        out[label] = frame
    return out


def test_property_vectors_draw_few_points(tmp_path):
    vectors = _vectors()
    fig = _property_vectors_figure(vectors, "class_size")
    for ax in fig.axes:
        for line in ax.get_lines():
            assert len(line.get_xdata()) <= MAX_CURVE_POINTS
        for patch in ax.patches:
            assert len(patch.get_path().vertices) <= MAX_CURVE_POINTS
    left, right = fig.axes
    assert right.patches, "the right panel is a distribution (step histograms)"
    assert right.get_ylabel() == "share of records"
    assert right.get_xscale() == "log"  # class sizes span orders of magnitude
    assert "class size (higher is better)" in left.get_ylabel().replace("\n", " ")
    assert "class size (higher is better)" in right.get_xlabel()
    legend = [t.get_text() for t in fig.legends[0].get_texts()]
    assert legend[0] == release_label("mondrian:k=10") == "Mondrian k = 10"
    assert legend[1].startswith(release_label("generalization:k=10"))
    assert "50 suppressed records left out" in legend[1]
    assert legend[2] == "my_release.csv"
    assert fig.get_suptitle() == "adult-train: class size of every record under each release"
    assert not [t for t in _texts(fig) if INTERNAL.search(t)]
    # shares of each release's records: every histogram sums to 1
    for patch in right.patches:
        assert np.isclose(patch.get_data().values.sum(), 1.0)
    _check_png(plot_property_vectors(vectors, "class_size", tmp_path / "c.png"))


def test_property_vectors_of_a_loss_read_lower_is_better():
    fig = _property_vectors_figure(_vectors(2000), "glm", title="my title")
    left, right = fig.axes
    assert "(lower is better)" in right.get_xlabel()
    assert display_name("glm") in right.get_xlabel()
    assert right.get_xscale() == "linear"
    assert fig.get_suptitle() == "my title"


# -- PBG front ----------------------------------------------------------------------
def _front(n, rng):
    return pd.DataFrame({"k": rng.integers(2, 30000, n).astype(float),
                         "l_distinct": rng.integers(1, 14, n).astype(float),
                         "glm": rng.uniform(0, 2e5, n), "suppressed": rng.integers(0, 99, n)})


def test_pbg_front_labels_and_legend(tmp_path):
    rng = np.random.default_rng(1)
    front, archive = _front(49, rng), _front(30, rng)
    objectives, goals = ["k", "l_distinct", "glm"], ["max", "max", "min"]
    fig = _pbg_front_figure(front, archive, objectives, goals)
    ax = fig.axes[0]
    assert ax.get_xlabel() == f"{display_name('k')} (maximized)"
    assert ax.get_ylabel().replace("\n", " ") == f"{display_name('l_distinct')} (maximized)"
    assert fig.axes[1].get_ylabel().replace("\n", " ") == \
        f"{display_name('glm')} (minimized)"
    legend = [t.get_text() for t in fig.legends[0].get_texts()]
    assert legend == ["minimal PBGs (exhaustive, 49)", "PBG-EA archive (30)"]
    assert not [t for t in _texts(fig) if INTERNAL.search(t)]
    _check_png(plot_pbg_front(front, archive, objectives, goals, tmp_path / "f.png",
                              title="k, l_distinct, glm: minimal PBGs"))


def test_pbg_front_without_exhaustive_search_wraps_pairs():
    rng = np.random.default_rng(2)
    objectives = ["k", "l_distinct", "glm", "suppressed"]
    fig = _pbg_front_figure(None, _front(20, rng), objectives, ["max", "max", "min", "min"])
    assert max(_rows(fig)) <= 3 and sum(_rows(fig)) == 6
    assert fig.get_figwidth() <= 13
    legend = [t.get_text() for t in fig.legends[0].get_texts()]
    assert legend == ["PBG-EA archive (20)"]
