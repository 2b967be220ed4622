"""Figures: risk curves (Domingo-Ferrer et al. Fig. 1) and P_loss–U_loss trade-off
curves (Li & Li Fig. 2–3).  Matplotlib with the non-interactive Agg backend; files are
written atomically."""
from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from .io import atomic_write  # noqa: E402
from .registry import get_method  # noqa: E402

PAPER_LABELS = {"mdav": "micro", "noise": "noise", "rank_swap": "swap",
                "multiplicative_noise": "Mnoise"}


def _save(fig, path) -> Path:
    def w(p):
        fig.savefig(p, format="png", dpi=120, bbox_inches="tight")
    out = atomic_write(path, w)
    plt.close(fig)
    return out


def plot_risk_curves(comparisons, path, title: str | None = None) -> Path:
    """Risk vs parameter per method, one panel per data set (paper Fig. 1).

    ``comparisons`` is one `Comparison` or a list.  The matched parameter of each method
    is marked, and the target risk drawn as a horizontal line.
    """
    comps = comparisons if isinstance(comparisons, (list, tuple)) else [comparisons]
    fig, axes = plt.subplots(1, len(comps), figsize=(6.2 * len(comps), 4.4), squeeze=False)
    for ax, comp in zip(axes[0], comps):
        for i, match in enumerate(comp.matches):
            pts = comp.curves.get(match.method) or [(s.value, s.risk) for s in match.steps]
            pts = sorted(pts)
            param = get_method(match.method).param(match.parameter)
            # the x-axis mixes parameters of different scales (the paper says to
            # disregard it); position points by rank within the grid to show all curves
            xs = [v for v, _ in pts]
            ys = [r for _, r in pts]
            label = f"{PAPER_LABELS.get(match.method, match.method)} ({param.name})"
            line, = ax.plot(range(len(xs)), ys, marker="o", ms=3, label=label)
            if match.value in xs:
                j = xs.index(match.value)
                ax.plot([j], [match.risk], marker="*", ms=12, color=line.get_color())
        ax.axhline(comp.target, color="grey", ls="--", lw=1,
                   label=f"target {comp.target:.3g}" + (f" = {comp.reference}"
                                                        if comp.reference else ""))
        ax.set_xlabel("parameter (index in each method's evaluated values; ★ = match)")
        ax.set_ylabel(f"{comp.risk_measure} ({comp.risk_params.get('aggregate', '')})")
        ax.set_title(f"{comp.dataset.upper()}")
        ax.legend(fontsize=8)
        ax.grid(alpha=0.3)
    if title:
        fig.suptitle(title)
    return _save(fig, path)


def plot_tradeoff(points, path, x: str = "p_loss", y: str = "u_loss", by: str = "model",
                  style: str | None = "method", title: str | None = None,
                  xlabel: str = "worst-case privacy loss P_loss",
                  ylabel: str = "utility loss U_loss") -> Path:
    """Trade-off curves, one line per ``by`` group (and ``style`` group), points in
    parameter order (Li & Li Fig. 2)."""
    fig, ax = plt.subplots(figsize=(6.4, 4.6))
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
    return _save(fig, path)
