"""Figures: risk curves (Domingo-Ferrer et al. Fig. 1), P_loss–U_loss trade-off curves
(Li & Li Fig. 2–3), property vectors (Dewri et al. 2009 Fig. 1) and PBG fronts (Dewri et
al. 2010 Figs. 1–3).  Matplotlib with the non-interactive Agg backend; files are written
atomically, as PNG at 120 dpi (the HTML report embeds the bytes).

Every name a figure shows is read through `sdceval.core.glossary` (display names,
direction words, release specs as a person reads them), and every series is drawn in the
Okabe–Ito colour-blind-safe palette (`COLOURS`) with its own line style and marker, so a
figure also reads in greyscale.  Each figure is built by a ``_..._figure`` function
that returns the `Figure` (the tests inspect it) and saved by the public ``plot_...``.

Matplotlib is imported when a figure is drawn, not with this module: importing it costs
about half a second, which ``sdceval --help`` and ``sdceval list`` must not pay.
"""
from __future__ import annotations

import itertools
import math
import os
import textwrap
from pathlib import Path

import numpy as np

from sdceval.catalog import get_method
from sdceval.core.fileio import atomic_write
from sdceval.core.glossary import (DIRECTION_WORDS, axis_label, display_name,
                                   release_label)

# -- palette ---------------------------------------------------------------------------
#: the Okabe–Ito colour-blind-safe palette (Okabe & Ito 2008, "Color universal design")
OKABE_ITO = {"black": "#000000", "orange": "#E69F00", "sky blue": "#56B4E9",
             "bluish green": "#009E73", "yellow": "#F0E442", "blue": "#0072B2",
             "vermillion": "#D55E00", "reddish purple": "#CC79A7"}
#: the colour cycle of series: Okabe–Ito without black, yellow (faint on white) last
COLOURS = tuple(OKABE_ITO[c] for c in ("blue", "orange", "bluish green", "vermillion",
                                       "reddish purple", "sky blue", "yellow"))
#: line styles and markers, one per series with its colour (greyscale still reads)
LINE_STYLES = ("-", "--", "-.", ":", (0, (5, 1.5)), (0, (3, 1, 1, 1, 1, 1)), (0, (1, 3)))
MARKERS = ("o", "s", "^", "D", "v", "P", "X")
#: neutral colour of reference lines (targets) and secondary marks
GREY = "#777777"

#: widest figure (inches): readable on a laptop screen at 120 dpi
MAX_WIDTH = 12.8
#: most panels in a row of the risk curves (a comparison of 8 methods: 2 rows of 4)
MAX_PANELS_PER_ROW = 4
#: most panels in a row of the PBG front (one panel per pair of objectives)
MAX_PAIR_PANELS_PER_ROW = 3


def series_style(i: int) -> dict:
    """Colour, line style and marker of the ``i``-th series (cycling)."""
    return {"color": COLOURS[i % len(COLOURS)], "ls": LINE_STYLES[i % len(LINE_STYLES)],
            "marker": MARKERS[i % len(MARKERS)]}


def _figure(**kw):
    """A matplotlib `Figure` outside pyplot: rendered by Agg when saved, no display,
    no global backend switch in the caller's session, nothing to close.  Laid out by
    matplotlib's constrained layout (room for titles, labels and outside legends)."""
    from matplotlib.figure import Figure
    kw.setdefault("layout", "constrained")
    return Figure(**kw)


def _style_axes(ax) -> None:
    """The palette as the axes' colour cycle (with its line styles), and a light grid."""
    from cycler import cycler
    ax.set_prop_cycle(cycler(color=COLOURS) + cycler(linestyle=LINE_STYLES))
    ax.grid(alpha=0.3)


def _save(fig, path) -> Path:
    def w(p):
        # the figure is laid out by its constrained layout when drawn: no "tight"
        # bounding box pass (it would draw it twice)
        fig.savefig(p, format="png", dpi=120)
    return atomic_write(path, w)


def _wrap(text: str, width_in: float, fontsize: float = 11, cut: str = "") -> str:
    """``text`` broken into lines that fit ``width_in`` inches at ``fontsize``; a line
    too long is broken first before ``cut`` (e.g. its "(dashed line: ...)" part)."""
    chars = max(20, int(width_in * 72 / (0.58 * fontsize)))
    lines = []
    for part in str(text).split("\n"):
        at = part.find(cut) if cut else -1
        pieces = ([part[:at], part[at:].lstrip()] if len(part) > chars and at > 0
                  else [part])
        lines += [textwrap.fill(p, chars, break_long_words=False, break_on_hyphens=False)
                  for p in pieces]
    return "\n".join(lines)


def _unbroken(text: str) -> str:
    """``text`` with no line break at its spaces around "=" ("k = 5" stays whole)."""
    return text.replace(" = ", "\u00a0=\u00a0")


def _plain_log_ticks(axis) -> None:
    """A log axis without labels at its minor ticks (they overlap on short spans)."""
    from matplotlib.ticker import NullFormatter
    axis.set_minor_formatter(NullFormatter())


def _two_lines(label: str, width: int = 30) -> str:
    """A long ``name (words)`` label on two lines, broken before its last parenthesis."""
    cut = label.rfind(" (")
    return label[:cut] + "\n" + label[cut + 1:] if len(label) > width and cut > 0 else label


def _number(v, kind=None) -> str:
    if kind is int or (isinstance(v, (int, np.integer)) and not isinstance(v, bool)):
        return f"{int(round(v))}"
    return f"{float(v):.3g}"


def _balanced_columns(n: int, most: int) -> int:
    """Columns for ``n`` panels, at most ``most`` a row, rows as full as they can be."""
    n = max(1, n)
    return math.ceil(n / math.ceil(n / most))


# -- risk curves -----------------------------------------------------------------------
#: inches of one method's panel
PANEL_WIDTH, PANEL_HEIGHT = 3.1, 3.0

def _risk_block_title(comp) -> str:
    """What one comparison's panels show: the data set, the measure and the target."""
    target = f"the target {comp.target:.3g}"
    if comp.reference:
        target += f", the risk of {_unbroken(release_label(comp.reference))}"
    return (f"{comp.dataset}: {display_name(comp.risk_measure)} of each method's release "
            f"against its parameter (dashed line: {target})")


def _risk_ylabel(comp) -> str:
    # a risk measure without an aggregate (reidentification) gets no empty "()"
    aggregate = (comp.risk_params or {}).get("aggregate")
    # a long name (the worst of several attacks) in lines that fit an axes' height
    # (a row less its title and tick labels)
    label = _wrap(_two_lines(axis_label(comp.risk_measure), 26), PANEL_HEIGHT - 1.2, 9)
    return label + (f"\naggregate: {display_name(aggregate)}" if aggregate else "")


def _param_xlabel(param) -> str:
    """The tuned parameter's name and unit, and which way protection grows."""
    label = param.name + (f" ({param.unit})" if param.unit else "")
    words = {"increasing": DIRECTION_WORDS["more_protection"],
             "decreasing": DIRECTION_WORDS["less_protection"]}.get(param.protection)
    return label + (f"\n{words}" if words else "")


def _risk_panel(ax, comp, match) -> None:
    param = get_method(match.method).param(match.parameter)
    pts = dict(comp.curves.get(match.method, []))
    grid = sorted(v for v in pts if any(abs(v - g) < 1e-12 for g in param.grid))
    _style_axes(ax)
    ax.plot(grid, [pts[v] for v in grid], marker="o", ms=3.5, lw=1.4, ls="-",
            color=OKABE_ITO["blue"], label="parameter grid")
    steps = [s for s in match.steps if s.phase == "bisect"]
    ax.plot([s.value for s in steps], [s.risk for s in steps], "x", ms=5, mew=1.2,
            color=OKABE_ITO["black"], label="bisection steps")
    # a target the method cannot reach: a hollow star at the closest value
    reached = getattr(match, "bracketed", True) and getattr(match, "matched", True)
    ax.plot([match.value], [match.risk], marker="*", ms=14, ls="none",
            color=OKABE_ITO["vermillion"],
            mec=OKABE_ITO["black"] if reached else OKABE_ITO["vermillion"],
            mew=0.6 if reached else 1.4, mfc=OKABE_ITO["vermillion"] if reached else "none",
            label="matched" if reached else "closest (target not reached)", zorder=5)
    ax.axhline(comp.target, color=GREY, ls="--", lw=1.1, label="target")
    if param.scale == "log":
        ax.set_xscale("log")
        _plain_log_ticks(ax.xaxis)
    ax.set_xlabel(_param_xlabel(param), fontsize=9)
    value = f"{match.parameter} = {_number(match.value, param.type)}" + "".join(
        f", {k} = {v}" for t in getattr(match, "grid", []) if t.get("chosen")
        for k, v in t["settings"].items())   # a strategy's other knobs, at this curve
    # the second line broken before "(closest" when it is wider than the panel
    ax.set_title(f"{display_name(match.method)}\n" + _wrap(
        f"matched at {_unbroken(value)}" if reached else
        f"target not reached (closest: {_unbroken(value)})", PANEL_WIDTH - 0.2, 10,
        cut=" (closest"), fontsize=10)
    ax.tick_params(labelsize=8)


def _risk_curves_figure(comparisons, title: str | None = None):
    """The Figure of `plot_risk_curves`: one block of rows per comparison (data set),
    at most `MAX_PANELS_PER_ROW` panels a row."""
    comps = list(comparisons) if isinstance(comparisons, (list, tuple)) else [comparisons]
    comps = [c for c in comps if c.matches] or comps[:1]
    # rows as even as they can be: 5 methods as 3 + 2, 8 as 4 + 4, 9 as 3 rows of 3
    ncol = max(_balanced_columns(len(c.matches), MAX_PANELS_PER_ROW) for c in comps)
    rows = [max(1, math.ceil(len(c.matches) / ncol)) for c in comps]
    width = min(MAX_WIDTH, 1.2 + PANEL_WIDTH * ncol)
    head = 0.9 if len(comps) > 1 or title else 0.0
    fig = _figure(figsize=(width, head + 0.6 + sum(0.7 + PANEL_HEIGHT * r for r in rows)))
    subs = (fig.subfigures(len(comps), 1, squeeze=False, height_ratios=[
        0.7 + PANEL_HEIGHT * r for r in rows])[:, 0] if len(comps) > 1 else [fig])
    for sub, comp, nrow in zip(subs, comps, rows):
        axes = sub.subplots(nrow, ncol, squeeze=False, sharey=True)
        for ax, match in zip(axes.flat, comp.matches):
            _risk_panel(ax, comp, match)
        for ax in axes.flat[len(comp.matches):]:
            ax.set_visible(False)
        for row in axes:
            row[0].set_ylabel(_risk_ylabel(comp), fontsize=9)
        block = _wrap(_risk_block_title(comp), width, 11, cut=" (dashed line")
        if sub is fig and title:
            block = _wrap(title, width, 12) + "\n" + block
        sub.suptitle(block, fontsize=11)
    if len(comps) > 1:
        fig.suptitle(_wrap(title or "Risk of each method's release against its "
                           "parameter, by data set", width, 12), fontsize=12)
    legend = {}  # every kind of mark once, from every panel
    for sub in subs:
        for ax in sub.axes:
            for h, label in zip(*ax.get_legend_handles_labels()):
                legend.setdefault(label, h)
    fig.legend(list(legend.values()), list(legend), loc="outside lower center",
               ncols=len(legend), fontsize=9, frameon=False)
    return fig


def plot_risk_curves(comparisons, path, title: str | None = None) -> Path:
    """Risk vs parameter (paper Fig. 1): one block of rows per comparison (data set),
    one panel per method, at most four panels a row, on the parameter's own scale (log
    for noise magnitudes).  The default grid forms the curve, bisection evaluations are
    drawn as crosses, the match as a star, and the target risk as a dashed line.
    ``title`` (e.g. the experiment's name) heads the figure."""
    return _save(_risk_curves_figure(comparisons, title), path)


# -- trade-off curves ------------------------------------------------------------------
def _group_names(values) -> tuple[list[str], str]:
    """Display names of a legend's entries, and what they share: the variants
    ``query_error(qd=4,sel=0.05)``, ``query_error(qd=4,sel=0.1)`` read as ``qd=4,
    sel=0.05``, ``qd=4, sel=0.1`` under "query error (%)"; else the names and ""."""
    names = [display_name(v) for v in values]
    common = names[0] if len(names) == 1 else os.path.commonprefix(names)
    cut = common.rfind(" (")
    if len(names) > 1 and cut > 0 and all(n.endswith(")") for n in names):
        return [n[cut + 2:-1] for n in names], names[0][:cut]
    return names, ""


def _tradeoff_figure(points, x: str = "p_loss", y: str = "u_loss", by: str = "model",
                     style: str | None = "method", title: str | None = None,
                     xlabel: str | None = None, ylabel: str | None = None):
    """The Figure of `plot_tradeoff`: colour and marker by ``by``, line style by
    ``style``, one legend for each."""
    from matplotlib.lines import Line2D
    fig = _figure(figsize=(8.4, 4.8))
    ax = fig.subplots()
    _style_axes(ax)
    styled = bool(style) and style in points.columns and style != by
    groups = [by] + ([style] if styled else [])
    firsts = {g: list(dict.fromkeys(points[g].dropna())) for g in groups}
    names, shared = _group_names(firsts[by])
    for key, g in points.groupby(groups, sort=False):
        key = key if isinstance(key, tuple) else (key,)
        i = firsts[by].index(key[0])
        s = series_style(i)
        if styled:  # line style by the style group, colour and marker by `by`
            s["ls"] = LINE_STYLES[firsts[style].index(key[1]) % len(LINE_STYLES)]
        g = g.sort_values(x)
        ax.plot(g[x], g[y], ms=5, lw=1.5,
                label=" / ".join([names[i]] + [display_name(k) for k in key[1:]]), **s)
    ax.set_xlabel(xlabel or axis_label(x))
    ax.set_ylabel(_two_lines(ylabel or axis_label(y), 40))
    ax.set_title(_wrap(title or f"{display_name(y)} against {display_name(x)}", 5.8, 11),
                 fontsize=11)
    handles = [Line2D([], [], ms=5, lw=1.5, **{**series_style(i), **(
        {"ls": "-"} if styled else {})}) for i in range(len(names))]
    heading = shared or display_name(by)
    if styled and len(firsts[style]) == 1:  # one method: named with the models
        heading += f" ({display_name(firsts[style][0])})"
    legend = fig.legend(handles, names, loc="outside right upper", fontsize=9,
                        title=_wrap(heading, 2.6, 9), title_fontsize=9)
    if styled and len(firsts[style]) > 1:
        handles = [Line2D([], [], lw=1.5, color=GREY,
                          ls=LINE_STYLES[j % len(LINE_STYLES)])
                   for j in range(len(firsts[style]))]
        fig.add_artist(legend)
        fig.legend(handles, [display_name(v) for v in firsts[style]],
                   loc="outside right lower", fontsize=9, title=display_name(style),
                   title_fontsize=9)
    return fig


def plot_tradeoff(points, path, x: str = "p_loss", y: str = "u_loss", by: str = "model",
                  style: str | None = "method", title: str | None = None,
                  xlabel: str | None = None, ylabel: str | None = None) -> Path:
    """Trade-off curves, one line per ``by`` group (and ``style`` group), points in
    parameter order (Li & Li Fig. 2).  Axis labels default to the measures' display
    names with their direction words; the title to "<y> against <x>"."""
    return _save(_tradeoff_figure(points, x=x, y=y, by=by, style=style, title=title,
                                  xlabel=xlabel, ylabel=ylabel), path)


# -- property vectors ------------------------------------------------------------------
#: most points drawn per curve; longer vectors are summarized (see plot_property_vectors)
MAX_CURVE_POINTS = 4000
#: bins of the distribution panel (when the values are not a few integers)
HIST_BINS = 40


def _sorted_curve(v, n_points: int):
    """The sorted vector at evenly spaced ranks (its exact quantile curve)."""
    s = np.sort(v)
    if len(s) <= n_points:
        return np.arange(len(s)), s
    pos = np.linspace(0, len(s) - 1, n_points).round().astype(np.int64)
    return pos, s[pos]


def _counts_spanning_decades(values) -> bool:
    """Counts (positive integers) spanning more than an order of magnitude and a half,
    such as class sizes from k to N or sensitive counts: drawn on a log scale."""
    return (len(values) > 0 and values.min() > 0 and values.max() / values.min() >= 30
            and bool(np.all(values == np.round(values))))


def _shared_bins(values, log: bool):
    """Bin edges shared by every release: one bin per integer for a few integers,
    log-spaced bins between integers when ``log``, else `HIST_BINS` equal bins."""
    lo, hi = float(values.min()), float(values.max())
    if log:  # each bin holds whole integers, so no bin is empty by construction
        return np.unique(np.round(np.geomspace(lo, hi + 1, HIST_BINS + 1))) - 0.5
    if np.all(values == np.round(values)) and hi - lo <= 60:
        return np.arange(lo - 0.5, hi + 1.5)
    if hi == lo:
        return np.array([lo - 0.5, hi + 0.5])
    return np.linspace(lo, hi, HIST_BINS + 1)


def _property_vectors_figure(vectors, prop: str, title: str | None = None):
    """The Figure of `plot_property_vectors`."""
    fig = _figure(figsize=(11.0, 4.6))
    left, right = fig.subplots(1, 2)
    for ax in (left, right):
        _style_axes(ax)
    up, data, kept_all, series = True, None, [], []
    for i, (label, frame) in enumerate(vectors.items()):
        v = frame[prop].to_numpy(dtype=float)
        up = frame.attrs.get("higher_is_better", {}).get(prop, True)
        data = data or frame.attrs.get("data")
        kept = v[np.isfinite(v)]
        left_out = len(v) - len(kept)
        name = release_label(label) + (f" ({left_out:,} suppressed records left out)"
                                       if left_out else "")
        series.append((name, kept, series_style(i)))
        kept_all.append(kept)
    values = np.concatenate(kept_all) if kept_all else np.array([])
    log = _counts_spanning_decades(values)
    words = "higher is better" if up else "lower is better"
    prop_label = f"{display_name(prop)} ({words})"
    bins = _shared_bins(values, log) if len(values) else None
    for name, kept, s in series:
        if not len(kept):
            continue
        x, y = _sorted_curve(kept, MAX_CURVE_POINTS)
        # dashes tell apart releases whose curves coincide (Mondrian and bucketization)
        left.plot(x / max(len(kept) - 1, 1), y, lw=1.6, ls=s["ls"], color=s["color"],
                  drawstyle="steps-post", label=name)
        counts, _ = np.histogram(kept, bins=bins)
        right.stairs(counts / len(kept), bins, lw=1.6, ls=s["ls"], color=s["color"],
                     label=name)
    left.set_xlabel("share of records, sorted by value")
    left.set_ylabel(_two_lines(prop_label, 34))
    left.set_title("each record's value, records sorted (a quantile curve)", fontsize=10)
    right.set_xlabel(prop_label)
    right.set_ylabel("share of records")
    right.set_title("share of the release's records in each range of values"
                    + (" (log-spaced)" if log else ""), fontsize=10)
    if log:
        left.set_yscale("log")
        right.set_xscale("log")
        _plain_log_ticks(left.yaxis)
        _plain_log_ticks(right.xaxis)
    handles, labels = left.get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncols=min(len(labels), 3),
               fontsize=9, frameon=False)
    what = f"{display_name(prop)} of every record under each release"
    fig.suptitle(_wrap(title or (f"{data}: {what}" if data else what), 11.0, 12),
                 fontsize=12)
    return fig


def plot_property_vectors(vectors, prop: str, path, title: str | None = None) -> Path:
    """Dewri et al. 2009 Fig. 1 for real data: the value of property ``prop`` for
    every record, one curve per release; left the records sorted by value (the
    share of records at or below each level), right the distribution of the values (a
    step histogram per release on shared bins, log-spaced for values spanning orders of
    magnitude such as class sizes, as shares of the release's records).  ``vectors``
    maps a release label to its property-vector DataFrame
    (`sdceval.vectors.properties.property_vectors`); excluded (suppressed) records are
    left out of both panels and counted in the legend.  Vectors longer than
    `MAX_CURVE_POINTS` are drawn at evenly spaced ranks."""
    return _save(_property_vectors_figure(vectors, prop, title), path)


# -- PBG fronts ------------------------------------------------------------------------
#: objectives whose values span orders of magnitude (k from 2 to N, sums of class sizes)
_LOG_OBJECTIVES = ("k", "s_k", "s_l", "s_k_all", "s_l_all")


def _goal_label(name: str, goal: str) -> str:
    return f"{display_name(name)} ({'maximized' if goal == 'max' else 'minimized'})"


def _pbg_front_figure(front, archive, objectives, goals, title: str | None = None):
    """The Figure of `plot_pbg_front`."""
    pairs = list(itertools.combinations(range(len(objectives)), 2))
    ncol = _balanced_columns(len(pairs), MAX_PAIR_PANELS_PER_ROW)
    nrow = max(1, math.ceil(len(pairs) / ncol))
    width = min(MAX_WIDTH, 0.6 + 4.1 * ncol)
    fig = _figure(figsize=(width, 1.3 + 3.7 * nrow))
    axes = fig.subplots(nrow, ncol, squeeze=False)
    for ax, (i, j) in zip(axes.flat, pairs):
        _style_axes(ax)
        x, y = objectives[i], objectives[j]
        if front is not None and len(front):
            ax.plot(front[x], front[y], "o", ms=7, mfc="none", mew=1.1,
                    color=OKABE_ITO["blue"],
                    label=f"minimal PBGs (exhaustive, {len(front)})")
        if archive is not None and len(archive):
            ax.plot(archive[x], archive[y], "x", ms=5, mew=1.2,
                    color=OKABE_ITO["vermillion"],
                    label=f"PBG-EA archive ({len(archive)})")
        ax.set_xlabel(_goal_label(x, goals[i]))
        ax.set_ylabel(_two_lines(_goal_label(y, goals[j]), 30))
        # class sizes and their sums span orders of magnitude (k from 2 to N)
        if x in _LOG_OBJECTIVES:
            ax.set_xscale("log")
            _plain_log_ticks(ax.xaxis)
        if y in _LOG_OBJECTIVES:
            ax.set_yscale("log")
            _plain_log_ticks(ax.yaxis)
        ax.tick_params(labelsize=8)
    for ax in axes.flat[len(pairs):]:
        ax.set_visible(False)
    handles, labels = axes.flat[0].get_legend_handles_labels()
    if labels:
        fig.legend(handles, labels, loc="outside lower center", ncols=len(labels),
                   fontsize=9, frameon=False)
    fig.suptitle(_wrap(title or "Minimal property-based generalizations (PBGs) and the "
                       "PBG-EA archive, objectives: "
                       + ", ".join(display_name(o) for o in objectives), width, 12),
                 fontsize=12)
    return fig


def plot_pbg_front(front, archive, objectives, goals, path, title: str | None = None
                   ) -> Path:
    """Dewri et al. 2010 Figs. 1–3: the minimal PBGs ``front`` (every node of the
    exhaustive search that no node dominates; open circles) and a PBG-EA ``archive``
    (crosses), one panel per pair of objectives, at most three a row.  ``front`` may
    be None (a lattice too large for the exhaustive search): only the archive is drawn."""
    return _save(_pbg_front_figure(front, archive, objectives, goals, title), path)
