"""A differentially private histogram, then records sampled from it (issue 32 item 3).

``dp_histogram`` publishes a *synthetic* release (`Release.synthetic`: new records, no
record correspondence) drawn from a contingency table released under ε-differential
privacy by OpenDP's Laplace mechanism (docs/dp.md).

The table.  Every published column (``columns``; default every column a synthetic
release publishes, `publishable_columns`) is an axis: a categorical column by its
categories (the leaves of its hierarchy when the user gave one, a public list; else the
distinct values of the data), a numeric column by ``bins`` equal-width bins between its
``bounds`` (given, or the data's min and max; values outside given bounds are clamped
into the end bins).  The named ``columns`` form one joint table; every other published
column gets a one-way table of its own, so that the release has every column the kind
publishes (those columns are drawn independently of the others).  The domain must be
enumerable: more than ``max_cells`` cells in all is refused, naming the columns and
their sizes.

The mechanism.  The counts of all ``T`` tables form one vector ``c`` of ``K`` float
counts.  Neighbouring data sets differ by adding or removing one record (unbounded DP);
a record adds 1 to exactly one cell of each table, so ``||c - c'||_1 = T``: the L1
sensitivity is ``T`` (1 for the joint table alone).  The Laplace mechanism adds
``Laplace(0, b)`` to every cell with ``b = T / ε`` (Dwork, McSherry, Nissim & Smith
2006), built as an OpenDP measurement (``vector_domain(atom_domain(float), size=K)``,
``l1_distance(float)`` >> ``then_laplace(b)``) whose privacy map is checked:
``meas.map(T) <= ε`` (OpenDP rounds its map up, so ``b`` is raised by one float step
when ``T / ε`` would spend a hair more than ε).  The guarantee is pure ε-DP, δ = 0.
Replacing one record (bounded DP) is two neighbouring steps: 2ε.

Noise (``noise``).  OpenDP draws its noise from a cryptographically secure generator
seeded by the operating system (``fill_bytes`` in rust/src/traits/samplers/mod.rs of
opendp/opendp), and offers no seed, by design: noise that can be regenerated from a
seed can be subtracted.  ``noise="opendp"`` (the default: what the Python API and
`sdceval anonymize` publish) applies OpenDP's measurement to the counts: a real DP release,
not reproducible.  ``noise="seeded"`` draws the same Laplace(0, b) from the method's
numpy generator: reproducible from the seed, for experiments and comparisons whose
releases are never published; the budget is still OpenDP's map of the same
measurement, but whoever knows the seed can remove the noise, so such a release is not
differentially private once its seed is known (``info["dp"]["private"]`` says so).

Post-processing (no further privacy cost: it reads the noisy counts only): negative
counts are set to 0; ``n_records`` records (default: the mean over the tables of the
noisy totals, rounded, within 1..`MAX_RECORDS`: the true count is not private and is
not used) are drawn independently from each table normalized (cell ``i`` with
probability ``max(c̃_i, 0) / Σ max(c̃, 0)``), a numeric value uniformly within its
bin (an integer column: uniformly among the integers of the bin; the middle integer of
a bin that holds none), a categorical value the cell's category, each in the original
column's dtype.
Draws from the method's generator, in this order: the noise (``noise="seeded"``), one
uniform per record and table (the cells), one uniform per record and numeric column.

Stated leaks (``info["dp"]["leaks"]``): bounds taken from the data's min/max publish
the extremes (through the bins) and are not differentially private — give ``bounds``
from public knowledge; categories read from the data are in the domain only because
some record holds them — give the column a hierarchy (a public list of categories).

References
----------
Dwork, C., McSherry, F., Nissim, K., Smith, A. (2006). Calibrating noise to sensitivity
in private data analysis. TCC 2006, LNCS 3876, 265-284.
OpenDP 0.16: ``opendp.measurements.make_laplace`` (docs.opendp.org).
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from sdceval.core.errors import SdcevalError, suggest
from sdceval.core.registry import Param, register_method
from sdceval.core.release import Release, publishable_columns
from sdceval.core.rng import check_random_state
from sdceval.methods.recoding import Breaks

if TYPE_CHECKING:  # imported where used: `sdceval list methods` loads no pandas
    import pandas

__all__ = ["dp_histogram", "histogram_layout", "contingency", "laplace_measurement",
           "noisy_counts", "sample_records", "Bounds", "MAX_CELLS", "NOISES"]

#: the most cells (all tables together) a histogram may have: the noise vector, the
#: counts and the sampling's cumulative sums are arrays of this length
MAX_CELLS = 10**7
#: the most records a release may have (memory), given or from the noisy total
MAX_RECORDS = 5 * 10**7
#: equal-width bins per numeric column by default
BINS = 10
#: where the noise comes from (module docstring)
NOISES = ("opendp", "seeded")
NEIGHBOURS = ("add/remove one record (unbounded DP): one record changes one count of "
              "each table by 1; replacing a record is two steps (2 epsilon)")
INSTALL = "pip install 'sdceval[dp]'"


def _opendp():
    """OpenDP's prelude with its ``contrib`` features on (an optional extra)."""
    try:
        import opendp.prelude as dp
    except ImportError:
        raise SdcevalError(f"dp_histogram needs OpenDP, which is not installed: "
                           f"{INSTALL}") from None
    dp.enable_features("contrib")
    return dp


class Bounds(Breaks):
    """Public bounds per numeric column: text ``"age=17;90|income=0;250000"`` or a
    mapping ``{column: (lo, hi)}``; canonical form a tuple of ``(column, (lo, hi))``
    (the parsing of `Breaks`, with exactly two numbers each)."""

    name = "bounds per numeric column"

    def parse(self, raw, where: str):
        out = super().parse(raw, where)
        for c, v in out or ():
            if len(v) != 2:
                raise SdcevalError(f"{where}: the bounds of {c!r} must be two numbers "
                                   f"lo;hi, got {len(v)} ({';'.join(map(str, v))})")
        return out


# -- the table ------------------------------------------------------------------------
@dataclass(frozen=True)
class Axis:
    """One column of the histogram: ``size`` cells, the cell ``codes`` of the records;
    a categorical axis has the ``values`` of its cells (a pandas Series in the column's
    dtype where it can be), a numeric one its bin ``edges`` (``size + 1``)."""

    column: str
    size: int
    codes: np.ndarray
    values: object = None
    edges: np.ndarray | None = None
    integer: bool = False
    dtype: object = None
    leak: str = ""


@dataclass(frozen=True)
class Layout:
    """The tables of a histogram: ``tables[0]`` the joint table of the named columns,
    then one one-way table per other published column; ``axes`` by column."""

    axes: dict
    tables: tuple
    leaks: tuple = ()

    def shape(self, t: int) -> tuple:
        return tuple(self.axes[c].size for c in self.tables[t])

    @property
    def sizes(self) -> tuple:
        return tuple(math.prod(self.shape(t)) for t in range(len(self.tables)))

    @property
    def n_cells(self) -> int:
        return sum(self.sizes)

    @property
    def offsets(self) -> np.ndarray:
        return np.concatenate([[0], np.cumsum(self.sizes)]).astype(np.int64)

    def cell_ids(self, t: int) -> np.ndarray:
        """The cell of every record in table ``t`` (row-major over its columns)."""
        codes = [self.axes[c].codes for c in self.tables[t]]
        return np.ravel_multi_index(codes, self.shape(t)).astype(np.int64)


def _numeric_axis(dataset, c: str) -> bool:
    """Whether column ``c`` is binned (a numeric column of numbers, not booleans)."""
    import pandas as pd
    col = dataset.frame[c]
    return (dataset.schema[c].kind == "numeric" and pd.api.types.is_numeric_dtype(col)
            and not pd.api.types.is_bool_dtype(col))


def _categories(dataset, c: str):
    """(codes, values, public) of a categorical column: the leaves of a hierarchy the
    user gave (public), else the distinct values of the data (sorted)."""
    import pandas as pd
    spec, col = dataset.schema[c], dataset.frame[c]
    h = spec.hierarchy
    if h is not None and h.builder is None:
        h = dataset.hierarchy(c)          # with the missing-value leaf, if kept
        codes = np.asarray(dataset.codes(c), dtype=np.int64)
        first = np.full(h.n_leaves, -1, dtype=np.int64)
        first[codes[::-1]] = np.arange(len(codes))[::-1]
        if (first >= 0).all():
            values = col.take(first).reset_index(drop=True)
        else:   # leaves no record holds: their labels, in the column's dtype if they fit
            vals = np.asarray(h.leaves, dtype=object).copy()
            vals[first >= 0] = col.to_numpy(dtype=object)[first[first >= 0]]
            values = pd.Series(vals, dtype=object)
            try:
                values = values.astype(col.dtype)
            except (TypeError, ValueError):
                pass
        return codes, values, True
    codes, uniques = pd.factorize(col, sort=True, use_na_sentinel=False)
    return codes.astype(np.int64), pd.Series(uniques).reset_index(drop=True), False


def _axis(dataset, c: str, bins: int, bounds: dict) -> Axis:
    col = dataset.frame[c]
    if not _numeric_axis(dataset, c):
        codes, values, public = _categories(dataset, c)
        leak = "" if public else (
            f"categories of {c!r} read from the data: a category is in the domain only "
            f"because some record holds it (give {c!r} a hierarchy listing its "
            "categories from public knowledge)")
        return Axis(c, len(values), codes, values=values, dtype=col.dtype, leak=leak)
    x = col.to_numpy(dtype=np.float64)
    if c in bounds:
        lo, hi = bounds[c]
        leak = ""
    else:
        lo, hi = float(x.min()), float(x.max())
        leak = (f"bounds of {c!r} taken from the data (min {lo:g}, max {hi:g}): the "
                "extremes are published through the bins, which is not differentially "
                f"private (give bounds='{c}=lo;hi' from public knowledge)")
    n_bins = bins if hi > lo else 1       # a constant column: one bin
    edges = np.linspace(lo, hi, n_bins + 1)
    # values outside given bounds are clamped into the end bins
    codes = np.clip(np.searchsorted(edges[1:-1], x, side="right"), 0, n_bins - 1)
    import pandas as pd
    return Axis(c, n_bins, codes.astype(np.int64), edges=edges,
                integer=pd.api.types.is_integer_dtype(col), dtype=col.dtype, leak=leak)


def _names(dataset, columns) -> list:
    allowed = publishable_columns(dataset, "synthetic")
    names = [t for t in re.split(r"[,+\s]+", str(columns or "")) if t]
    for c in names:
        if c not in allowed:
            raise SdcevalError(
                f"dp_histogram: columns names {c!r}, which a synthetic release does not "
                f"publish.{suggest(c, allowed)} Published columns: {', '.join(allowed)}")
    return list(dict.fromkeys(names)) or allowed


def _size(dataset, c: str, bins: int, bounds: dict) -> int:
    """The number of cells of column ``c``'s axis, without coding the records."""
    if _numeric_axis(dataset, c):
        if c in bounds:
            return bins
        x = dataset.frame[c]
        return bins if x.max() > x.min() else 1
    h = dataset.schema[c].hierarchy
    if h is not None and h.builder is None:
        return dataset.hierarchy(c).n_leaves
    return int(dataset.frame[c].nunique(dropna=False))


def _check_cells(dataset, joint: list, others: list, bins: int, bounds: dict,
                 max_cells: int) -> None:
    sizes = {c: _size(dataset, c, bins, bounds) for c in joint + others}
    total = math.prod(sizes[c] for c in joint) + sum(sizes[c] for c in others)
    if total > max_cells:
        shown = " x ".join(f"{c!r} ({sizes[c]})" for c in joint)
        raise SdcevalError(
            f"dp_histogram: the joint table of {shown} has {total:.3g} cells in all, more "
            f"than max_cells={max_cells}; name fewer columns (columns='...': the others "
            "get one-way tables of their own), use fewer bins (bins=...), or raise "
            "max_cells")


def _plan(dataset, columns, bins: int, bounds: dict, max_cells: int) -> tuple:
    """(joint columns, one-way columns), checked: names, bounds, the number of cells."""
    joint = _names(dataset, columns)
    published = publishable_columns(dataset, "synthetic")
    for c in bounds:
        if c not in published:
            raise SdcevalError(f"dp_histogram: bounds name {c!r}, which a synthetic "
                               f"release does not publish.{suggest(c, published)}")
        if not _numeric_axis(dataset, c):
            raise SdcevalError(f"dp_histogram: bounds name {c!r}, which is categorical "
                               "(one cell per category); give bounds of numeric columns "
                               "only")
    others = [c for c in published if c not in joint]
    _check_cells(dataset, joint, others, bins, bounds, max_cells)
    return joint, others


def histogram_layout(dataset, columns=None, bins: int = BINS, bounds=None,
                     max_cells: int = MAX_CELLS) -> Layout:
    """The tables and axes of the histogram (module docstring): ``columns`` (text
    ``"age,sex"`` or None: every published column) form the joint table, every other
    published column a one-way table; refused above ``max_cells`` cells in all.
    ``bounds``: `Bounds` (text or a mapping ``{column: (lo, hi)}``)."""
    bounds = dict(Bounds().parse(bounds, "parameter 'bounds' of dp_histogram") or ())
    joint, others = _plan(dataset, columns, bins, bounds, max_cells)
    published = publishable_columns(dataset, "synthetic")
    axes = {c: _axis(dataset, c, bins, bounds) for c in published}
    tables = (tuple(joint),) + tuple((c,) for c in others)
    leaks = tuple(axes[c].leak for c in published if axes[c].leak)
    return Layout(axes, tables, leaks)


def contingency(layout: Layout) -> np.ndarray:
    """The exact counts of every table, concatenated (float64, ``layout.n_cells``).
    Never published: the mechanism's input."""
    return np.concatenate([np.bincount(layout.cell_ids(t), minlength=size)
                           for t, size in enumerate(layout.sizes)]).astype(np.float64)


# -- the mechanism --------------------------------------------------------------------
def laplace_measurement(n_cells: int, sensitivity: int, epsilon: float):
    """OpenDP's Laplace measurement on a vector of ``n_cells`` float counts under the
    L1 distance, with the smallest float scale ``b >= sensitivity / epsilon`` whose
    privacy map is checked: ``meas.map(sensitivity) <= epsilon``.  Returns
    ``(meas, b, epsilon spent)``."""
    if not (math.isfinite(epsilon) and epsilon > 0):
        raise SdcevalError(f"dp_histogram: epsilon must be a positive number, got "
                           f"{epsilon!r}")
    dp = _opendp()
    space = (dp.vector_domain(dp.atom_domain(T=float, nan=False), size=int(n_cells)),
             dp.l1_distance(T=float))
    scale = float(sensitivity) / float(epsilon)
    for _ in range(64):   # OpenDP rounds its map up: one float step is enough in practice
        meas = space >> dp.m.then_laplace(scale=scale)
        spent = float(meas.map(float(sensitivity)))
        if spent <= epsilon:
            return meas, scale, spent
        scale = float(np.nextafter(scale, np.inf))
    raise SdcevalError(f"dp_histogram: no Laplace scale near {sensitivity / epsilon:g} "
                       f"keeps OpenDP's privacy map within epsilon={epsilon:g}")


@dataclass(frozen=True)
class NoisyTable:
    """The mechanism's output: the noisy counts of every table (concatenated, before
    any post-processing) and what they were released under."""

    noisy: np.ndarray
    layout: Layout
    epsilon: float
    epsilon_spent: float
    scale: float
    sensitivity: int
    noise: str


def noisy_counts(dataset, *, epsilon: float = 1.0, columns=None, bins: int = BINS,
                 bounds=None, noise: str = "opendp", seed=None,
                 max_cells: int = MAX_CELLS) -> NoisyTable:
    """The contingency table(s) of ``dataset`` (`histogram_layout`) with Laplace noise
    of scale ``T / epsilon`` (module docstring): OpenDP's measurement applied to the
    counts (``noise="opendp"``), or the same distribution drawn from ``seed``
    (``noise="seeded"``: reproducible, private only while the seed is secret)."""
    if noise not in NOISES:
        raise SdcevalError(f"dp_histogram: noise must be one of {', '.join(NOISES)}, got "
                           f"{noise!r}")
    layout = histogram_layout(dataset, columns, bins, bounds, max_cells)
    counts = contingency(layout)
    sensitivity = len(layout.tables)
    meas, scale, spent = laplace_measurement(len(counts), sensitivity, epsilon)
    if noise == "opendp":
        noisy = np.asarray(meas(counts), dtype=np.float64)
    else:
        noisy = counts + check_random_state(seed).laplace(0.0, scale, len(counts))
    return NoisyTable(noisy, layout, float(epsilon), spent, scale, sensitivity, noise)


# -- post-processing ------------------------------------------------------------------
def _draw_numeric(axis: Axis, codes: np.ndarray, u: np.ndarray) -> np.ndarray:
    """A value uniformly within each record's bin (an integer column: among the
    integers of the bin, ``[lo, hi)`` or the last bin's ``[lo, hi]``; a bin holding no
    integer gives the integer nearest its middle)."""
    lo, hi = axis.edges[codes], axis.edges[codes + 1]
    if not axis.integer:
        return lo + (hi - lo) * u
    last = codes == axis.size - 1
    a = np.ceil(lo)
    b = np.where(last, np.floor(hi), np.ceil(hi) - 1)
    inside = b >= a
    return np.where(inside, a + np.floor(u * np.where(inside, b - a + 1, 1)),
                    np.round((lo + hi) / 2))


def sample_records(table: NoisyTable, n_records: int, seed) -> "pandas.DataFrame":
    """``n_records`` records drawn from the noisy tables (module docstring,
    post-processing): negative counts set to 0, each table's cells drawn independently
    in proportion to the rest, values drawn within their cells, columns in the data
    set's order and dtypes."""
    import pandas as pd
    rng = check_random_state(seed)
    layout = table.layout
    clipped = np.maximum(table.noisy, 0.0)
    off = layout.offsets
    codes = {}
    for t, cols in enumerate(layout.tables):
        seg = clipped[off[t]:off[t + 1]]
        positive = np.flatnonzero(seg > 0)
        if not len(positive):
            raise SdcevalError(
                f"dp_histogram: every noisy count of the table of {', '.join(cols)} is "
                f"<= 0 at epsilon={table.epsilon:g}: nothing to sample; raise epsilon or "
                "use fewer cells")
        # inverse CDF: cell i with probability seg_i / total; a cell of count 0 is never
        # drawn (its cumulative sum equals the one before); u * total rounded up to the
        # total is capped at the last cell of positive count
        cum = np.cumsum(seg)
        cells = np.minimum(np.searchsorted(cum, rng.random(n_records) * cum[-1],
                                          side="right"), positive[-1])
        for c, k in zip(cols, np.unravel_index(cells, layout.shape(t))):
            codes[c] = k
    out = {}
    for c, axis in layout.axes.items():
        if axis.edges is None:
            out[c] = axis.values.take(codes[c]).reset_index(drop=True)
        else:
            v = _draw_numeric(axis, codes[c], rng.random(n_records))
            out[c] = pd.Series(v).astype(axis.dtype)
    return pd.DataFrame(out)


def _cells_check(dataset) -> str:
    """`MethodSpec.cost_check`: too many cells for a default candidate."""
    try:
        _plan(dataset, None, BINS, {}, MAX_CELLS)
    except SdcevalError as e:
        return str(e).replace("dp_histogram: ", "")
    return ""


@register_method(
    "dp_histogram", family="dp", random=True, label="DP histogram (Laplace)",
    cost_check=_cells_check, experiment_params={"noise": "seeded"},
    params=[Param("epsilon", float, 1.0, low=1e-3, high=1e9, protection="decreasing",
                  scale="log", grid=(0.1, 0.3, 1.0, 3.0, 10.0), unit="privacy budget",
                  description="privacy-loss budget ε of pure ε-DP (δ = 0) under "
                              "add/remove-one-record neighbours; lower protects more"),
            Param("columns", str, None,
                  description="columns of the joint table ('age,sex'; default: every "
                              "published column); each other column gets a one-way "
                              "table, sharing ε"),
            Param("bins", int, BINS, low=1, high=10**6,
                  description="equal-width bins of each numeric column"),
            Param("bounds", Bounds(), None,
                  description="public bounds of numeric columns ('age=17;90|hours=0;99'; "
                              "default: the data's min/max, a stated leak)"),
            Param("n_records", int, None, low=1, high=MAX_RECORDS, unit="records",
                  description="records to draw (default: the noisy total, rounded)"),
            Param("noise", str, "opendp", choices=NOISES,
                  description="'opendp': OpenDP's secure noise, a real DP release, not "
                              "reproducible; 'seeded': the same Laplace noise from the "
                              "seed, reproducible, for experiments (not private once the "
                              "seed is known)"),
            Param("max_cells", int, MAX_CELLS, low=1, high=10**8,
                  description="the most cells the tables may have in all (memory: "
                              "three float arrays of this length)")],
    description="differentially private histogram: OpenDP's Laplace mechanism on the "
                "contingency table of the published columns (numeric ones binned), then "
                "records sampled from the noisy table; ε-DP, δ = 0")
def dp_histogram(dataset, *, seed, epsilon, columns, bins, bounds, n_records, noise,
                 max_cells) -> Release:
    """A DP histogram synthesizer (module docstring).

    Returns
    -------
    Release
        kind ``"synthetic"``; ``info["dp"]``: ``epsilon`` (asked), ``epsilon_spent``
        (OpenDP's privacy map, ``<= epsilon``), ``delta`` (0), ``mechanism``, ``scale``,
        ``sensitivity`` (L1, the number of tables), ``neighbouring``, ``noise``,
        ``private`` and ``reproducible``, ``tables``, ``cells``, ``bins`` (edges per
        numeric column), ``negative_counts_zeroed``, ``noise_share_estimate`` (the
        share of the joint table's clipped mass that is noise, estimated from above as
        if every cell were empty: ``K b / 2 / Σ max(c̃, 0)``, at most 1),
        ``noisy_total``, ``n_records``, ``post_processing`` and ``leaks``.
    """
    table = noisy_counts(dataset, epsilon=epsilon, columns=columns, bins=bins,
                         bounds=bounds, noise=noise, seed=seed, max_cells=max_cells)
    layout = table.layout
    off = layout.offsets
    totals = [float(table.noisy[off[t]:off[t + 1]].sum()) for t in range(len(off) - 1)]
    noisy_total = float(np.mean(totals))
    n_out = int(n_records) if n_records is not None else \
        min(max(1, int(round(noisy_total))), MAX_RECORDS)
    frame = sample_records(table, n_out, seed)
    info = {"dp": {
        "epsilon": table.epsilon, "epsilon_spent": table.epsilon_spent, "delta": 0.0,
        "mechanism": "Laplace (OpenDP then_laplace on the vector of cell counts)",
        "scale": table.scale, "sensitivity": table.sensitivity,
        "neighbouring": NEIGHBOURS, "noise": noise,
        "private": noise == "opendp", "reproducible": noise == "seeded",
        "tables": [list(t) for t in layout.tables], "cells": layout.n_cells,
        "bins": {c: a.edges.tolist() for c, a in layout.axes.items()
                 if a.edges is not None},
        "negative_counts_zeroed": int((table.noisy < 0).sum()),
        # public quantities only: an empty cell keeps E[max(Laplace(b), 0)] = b/2 of
        # noise mass; taking every cell empty estimates the share of the joint table's
        # clipped mass that is noise from above (in expectation)
        "noise_share_estimate": min(1.0, layout.sizes[0] * table.scale / 2 / max(
            float(np.maximum(table.noisy[:layout.sizes[0]], 0).sum()), 1e-300)),
        "noisy_total": noisy_total, "n_records": n_out,
        "n_records_from": "given" if n_records is not None else "noisy total",
        "post_processing": "negative counts set to 0; records drawn from each table "
                           "normalized; values uniform within their bin",
        "leaks": list(layout.leaks)}}
    if noise == "seeded":
        info["dp"]["warning"] = ("noise drawn from the seed: anyone who knows the seed "
                                 "can remove it; not differentially private once the "
                                 "seed is known (use noise='opendp' to publish)")
    return Release.synthetic(dataset, frame, method="dp_histogram", info=info)
