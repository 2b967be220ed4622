"""Figures: risk curves (Domingo-Ferrer et al. Fig. 1) and P_loss–U_loss trade-off
curves (Li & Li Fig. 2–3).  Matplotlib with the non-interactive Agg backend; files are
written atomically.

Matplotlib is imported when a figure is drawn, not with this module: importing it costs
about half a second, which ``sdceval --help`` and ``sdceval list`` must not pay.
"""
from __future__ import annotations

from pathlib import Path

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
        row[0].set_ylabel(f"{comp.risk_measure}\n({comp.risk_params.get('aggregate', '')})")
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
