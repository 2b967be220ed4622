"""Figures: risk curves (Domingo-Ferrer et al. Fig. 1) and P_loss–U_loss trade-off
curves (Li & Li Fig. 2–3).  Matplotlib with the non-interactive Agg backend; files are
written atomically.

Matplotlib is imported when a figure is drawn, not with this module: importing it costs
about half a second, which ``sdceval --help`` and ``sdceval list`` must not pay.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from sdceval.core.fileio import atomic_write
from sdceval.catalog import get_method

PAPER_LABELS = {"mdav": "micro", "noise": "noise", "rank_swap": "swap",
                "multiplicative_noise": "Mnoise"}


def _figure(**kw):
    """A matplotlib `Figure` outside pyplot: rendered by Agg when saved, no display,
    no global backend switch in the caller's session, nothing to close."""
    from matplotlib.figure import Figure
    return Figure(**kw)


def _save(fig, path) -> Path:
    def w(p):
        # every figure is laid out by tight_layout already: a second, "tight" bounding
        # box pass would draw it twice
        fig.savefig(p, format="png", dpi=120)
    return atomic_write(path, w)


def plot_risk_curves(comparisons, path, title: str | None = None) -> Path:
    """Risk vs parameter (paper Fig. 1): one row per data set, one panel per method,
    on the parameter's own scale (log for noise magnitudes).  The default grid forms the
    curve, bisection evaluations are drawn as crosses, the match as a star, and the
    target risk as a dashed line.
    """
    comps = comparisons if isinstance(comparisons, (list, tuple)) else [comparisons]
    ncol = max(len(c.matches) for c in comps)
    fig = _figure(figsize=(3.3 * ncol, 3.0 * len(comps)))
    axes = fig.subplots(len(comps), ncol, squeeze=False, sharey="row")
    for row, comp in zip(axes, comps):
        for ax, match in zip(row, comp.matches):
            param = get_method(match.method).param(match.parameter)
            pts = dict(comp.curves.get(match.method, []))
            grid = sorted(v for v in pts if any(abs(v - g) < 1e-12 for g in param.grid))
            ax.plot(grid, [pts[v] for v in grid], marker="o", ms=3, lw=1.2,
                    label="grid")
            steps = [s for s in match.steps if s.phase == "bisect"]
            ax.plot([s.value for s in steps], [s.risk for s in steps], "x", ms=4,
                    color="tab:grey", label="bisection")
            ax.plot([match.value], [match.risk], marker="*", ms=12, color="tab:red",
                    ls="none", label=f"{param.name}={match.value:.3g}")
            ax.axhline(comp.target, color="grey", ls="--", lw=1)
            if param.scale == "log":
                ax.set_xscale("log")
            ax.set_xlabel(param.name + (f" ({param.unit})" if param.unit else ""))
            ax.set_title(f"{comp.dataset}: {PAPER_LABELS.get(match.method, match.method)}",
                         fontsize=10)
            ax.grid(alpha=0.3)
            ax.legend(fontsize=7, loc="lower right")
        # a risk measure without an aggregate (reidentification) gets no empty "()"
        aggregate = comp.risk_params.get("aggregate")
        row[0].set_ylabel(comp.risk_measure + (f"\n({aggregate})" if aggregate else ""))
        for ax in row[len(comp.matches):]:
            ax.set_visible(False)
    fig.suptitle(title or "Disclosure risk vs parameter (dashed: target "
                 + ", ".join(f"{c.dataset} {c.target:.3g}" for c in comps) + ")",
                 fontsize=11)
    fig.tight_layout()
    return _save(fig, path)


def plot_tradeoff(points, path, x: str = "p_loss", y: str = "u_loss", by: str = "model",
                  style: str | None = "method", title: str | None = None,
                  xlabel: str = "worst-case privacy loss P_loss",
                  ylabel: str = "utility loss U_loss") -> Path:
    """Trade-off curves, one line per ``by`` group (and ``style`` group), points in
    parameter order (Li & Li Fig. 2)."""
    fig = _figure(figsize=(6.4, 4.6))
    ax = fig.subplots()
    groups = [by] + ([style] if style and style in points.columns else [])
    markers = ["o", "s", "^", "D", "v", "x"]
    for i, (key, g) in enumerate(points.groupby(groups, sort=False)):
        key = key if isinstance(key, tuple) else (key,)
        g = g.sort_values(x)
        ax.plot(g[x], g[y], marker=markers[i % len(markers)], ms=4,
                ls="-" if len(key) < 2 or key[1] != "bucketization" else "--",
                label=" / ".join(map(str, key)))
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if title:
        ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return _save(fig, path)


#: most points drawn per curve; longer vectors are summarized (see plot_property_vectors)
MAX_CURVE_POINTS = 4000


def _sorted_curve(v, n_points: int):
    """The sorted vector at evenly spaced ranks (its exact quantile curve)."""
    s = np.sort(v)
    if len(s) <= n_points:
        return np.arange(len(s)), s
    pos = np.linspace(0, len(s) - 1, n_points).round().astype(np.int64)
    return pos, s[pos]


def _order_curve(v, n_points: int, higher_is_better: bool):
    """The vector in record order; when longer than ``n_points``, the worst value of
    each run of consecutive records (so the weakest records stay visible)."""
    if len(v) <= n_points:
        return np.arange(len(v)), v
    edges = np.linspace(0, len(v), n_points + 1).astype(np.int64)
    worst = (np.fmin if higher_is_better else np.fmax).reduceat(v, edges[:-1])
    return edges[:-1], worst


def plot_property_vectors(vectors, prop: str, path, title: str | None = None) -> Path:
    """Dewri et al. 2009 Fig. 1 for real data: the value of property ``prop`` for
    every record, one curve per release; left the records sorted by value (the
    share of records at or below each level), right in data order (which records each
    release leaves weakest).  ``vectors`` maps a release label to its property-vector
    DataFrame (`sdceval.vectors.properties.property_vectors`); excluded (suppressed)
    records are left out of the sorted curve and drawn as gaps.  Vectors longer than
    `MAX_CURVE_POINTS` are drawn at evenly spaced ranks (sorted) and as the worst value
    of each run of consecutive records (data order)."""
    fig = _figure(figsize=(10.5, 3.8))
    left, right = fig.subplots(1, 2)
    up = True
    styles = ["-", "--", "-.", ":"]
    for i, (label, frame) in enumerate(vectors.items()):
        v = frame[prop].to_numpy(dtype=float)
        up = frame.attrs.get("higher_is_better", {}).get(prop, True)
        kept = v[np.isfinite(v)]
        x, y = _sorted_curve(kept, MAX_CURVE_POINTS)
        # dashes tell apart releases whose curves coincide (Mondrian and bucketization)
        left.plot(x / max(len(kept) - 1, 1), y, lw=1.4, ls=styles[i % len(styles)],
                  label=label, drawstyle="steps-post")
        x, y = _order_curve(v, MAX_CURVE_POINTS, up)
        right.plot(x, y, lw=0.8, ls=styles[i % len(styles)], label=label, alpha=0.8)
    better = "higher is better" if up else "lower is better"
    left.set_xlabel("share of records (sorted by value)")
    right.set_xlabel("record (data order)")
    for ax in (left, right):
        ax.set_ylabel(f"{prop} ({better})")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    if len(kept) > 0 and up and prop in ("class_size", "sensitive_count"):
        for ax in (left, right):
            ax.set_yscale("log")
    fig.suptitle(title or f"{prop} of every record (Dewri et al. 2009, Fig. 1)",
                 fontsize=11)
    fig.tight_layout()
    return _save(fig, path)


def plot_pbg_front(front, archive, objectives, goals, path, title: str | None = None
                   ) -> Path:
    """Dewri et al. 2010 Figs. 1–3: the minimal PBGs ``front`` (every node of the
    exhaustive search that no node dominates; grey circles) and a PBG-EA ``archive``
    (red crosses), one panel per pair of objectives.  ``front`` may be None (a lattice
    too large for the exhaustive search): only the archive is drawn."""
    import itertools
    pairs = list(itertools.combinations(range(len(objectives)), 2))
    fig = _figure(figsize=(4.2 * len(pairs), 3.8))
    axes = fig.subplots(1, len(pairs), squeeze=False)[0]
    for ax, (i, j) in zip(axes, pairs):
        x, y = objectives[i], objectives[j]
        if front is not None and len(front):
            ax.plot(front[x], front[y], "o", ms=6, mfc="none", color="tab:grey",
                    label=f"minimal PBGs (M, {len(front)})")
        if archive is not None and len(archive):
            ax.plot(archive[x], archive[y], "x", ms=5, color="tab:red",
                    label=f"PBG-EA archive ({len(archive)})")
        ax.set_xlabel(f"{x} ({'max' if goals[i] == 'max' else 'min'})")
        ax.set_ylabel(f"{y} ({'max' if goals[j] == 'max' else 'min'})")
        # class sizes and their sums span orders of magnitude (k from 2 to N)
        if x in ("k", "s_k", "s_l"):
            ax.set_xscale("log")
        if y in ("k", "s_k", "s_l"):
            ax.set_yscale("log")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    fig.suptitle(title or "Minimal PBGs and the PBG-EA archive", fontsize=11)
    fig.tight_layout()
    return _save(fig, path)
