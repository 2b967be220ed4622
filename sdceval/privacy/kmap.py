"""k-map (Sweeney 2002, "Achieving k-anonymity privacy protection using generalization
and suppression", §2; issue 30 item 1): every published class corresponds to at least
``k`` individuals of the *population*, not of the sample.

Two ways of knowing the population (ARX ``criteria/KMap.java``, read at ARX's HEAD):

``estimator = population`` — a population table the user gives (ARX: a research
    subset of a population data set, ``KMap(k, DataSubset)``).  A class's population
    count is the number of population records whose QI values fall inside the class's
    generalized cells, read as leaf-code ranges of ``dataset.hierarchy(q)`` (a cell
    ``[lo, hi]`` covers the leaves ``lo..hi``); the class satisfies k-map iff that
    count is ``>= k``.  ARX counts the population records grouped with the class at a
    lattice node (``HashGroupifyEntry.pcount``); for a full-domain node that is the same
    count, and for Mondrian's boxes it is the count inside the box.
``estimator = poisson | zero_truncated_poisson`` — the population class size is
    estimated (El Emam & Dankar 2008, "Protecting privacy using k-anonymity", JAMIA
    15(5), estimators D3 and D4; D3 after Pannekoek 1999).  A population class of
    exactly ``k`` people, sampled with fraction ``f``, yields a sample class of size
    ``~ Poisson(λ = f·k)`` (D3; D4: zero-truncated, since a published class is never
    empty).  ARX derives once the smallest sample class size ``k'`` at which a
    population class of only ``k`` people is implausible at significance ``α``, and
    enforces ``k'``-anonymity (``KMap.initialize``, ``calculateKPoisson``,
    ``calculateKZeroPoisson``):

    * Poisson: ``c0`` = the smallest ``c >= 0`` with ``P(X <= c) >= 1 - α``,
      ``k' = c0 + 2`` (ARX returns its loop counter plus one, one above the plain
      reading ``c0 + 1``, which would already make ``P(X >= k') <= α``; kept as ARX);
    * zero-truncated Poisson: ``c1`` = the smallest ``c >= 1`` with
      ``P(X <= c | X >= 1) >= 1 - α``, ``k' = c1 + 1``;
    * both: ``k' = min(k, k', n)`` (ARX stops the loop at ``k`` — a class of ``k``
      sample records is one of at least ``k`` people — and caps ``k'`` at the data
      length ``n``); ``α = 0`` gives ``k' = k``, ``α = 1`` gives ``k' = 1``.

    The sampling fraction is ARX's ``n / N`` (``ARXPopulationModel``: the data length
    over the population size): ``sampling_fraction`` given, or ``n / population_size``,
    or, when neither is given and the data set has a weight role, ``n / Σ weights``
    (the Horvitz–Thompson population size).  Without any of them the model is an
    error naming ``sampling_fraction``.

    ARX's ``reliability/ParameterTranslation`` does not enter k-map: it turns a risk
    *threshold* into a class size (``getSizeThreshold``: ``⌊1/r⌋``, plus one unless
    ``1/⌊1/r⌋ − r < 0.01·r``), which the risk-based models use; k-map's ``k`` is
    already a size.  A guideline stated as a journalist risk ``r`` maps to k-map's
    ``k`` through that translation (ARX: 0.09 → 12), which the guideline profiles
    state, not this model.

Per-class value (`value`, the level achieved; larger is safer): with a population
table, the class's population count; with an estimator, the largest ``K`` for which the
class would pass (``k'(K) <= size``, ``k'`` non-decreasing in ``K``), so that
``value >= k`` iff the class satisfies the model and a check can report the k-map
level a release reaches.

Monotonicity (ARX: ``ImplicitPrivacyCriterion(true, true)``, monotone with suppression
and with generalization): with a population table a more general class's cells contain
each of its parts' cells, so its population count is at least each part's — a union
containing one satisfying class satisfies; with an estimator the model is
``k'``-anonymity for a fixed ``k'``.

Classes judged by their cells (`PrivacyModel.reads_cells`): with a population table
the class counts alone do not determine the verdict, so the model is bound to its data
set (`bind`: the hierarchies, the population table read once as leaf codes) and the
methods give it the classes' cells (`value_cells`: Mondrian's boxes, a release's cells)
or lattice nodes (`value_nodes`: a node's generalized values).  A consumer that offers
only counts gets an error naming the limitation, never a count-based guess.

Where this reading differs from ARX: the population counts are exact over the cells;
ARX's subset mode requires the sample to be a subset of the population data set and
publishes from it, sdceval takes any population table (a census extract, a register)
covering the QIs.  The zero-truncated threshold is computed from ``P(X > c) / P(X >
0)`` (scipy's ``poisson.sf``, exact for small ``λ``) where ARX sums ``p(j) / (1 −
p(0))`` term by term; both agree except at a threshold hit to the last bit.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from sdceval.core.errors import SdcevalError
from sdceval.core.registry import Param
from sdceval.privacy.base import PrivacyModel, register_model

#: the population table's column of people per row (absent: one row per person)
COUNT_COLUMN = "count"
#: the cell-size estimators (ARX ``KMap.CellSizeEstimator``) and the population table
ESTIMATORS = ("population", "poisson", "zero_truncated_poisson")
#: ARX's default significance level (``gui/model/ModelKMapCriterion``)
DEFAULT_SIGNIFICANCE = 0.01
#: box-count chunk: classes × distinct population rows × QIs per numpy call
_CHUNK = 1 << 23


# -- the estimators' size thresholds -----------------------------------------------------
def poisson_size_threshold(k, sampling_fraction: float, significance: float) -> np.ndarray:
    """ARX's ``calculateKPoisson``: ``min(k, c0 + 2)``, ``c0`` the smallest ``c >= 0``
    with ``P(X <= c) >= 1 - α`` for ``X ~ Poisson(f·k)`` (module docstring).  ``k`` may
    be an array (vectorized)."""
    from scipy import stats
    k = np.asarray(k, dtype=np.float64)
    q = 1.0 - significance
    if q <= 0.0:   # ARX's loop does not run: k' = 0 + 1
        return np.ones_like(k)
    lam = sampling_fraction * k
    c0 = np.maximum(stats.poisson.ppf(q, lam), 0.0)   # smallest c with cdf(c) >= q
    # ppf inverts through the incomplete gamma function: settle the last step on cdf
    c0 = np.where((c0 > 0) & (stats.poisson.cdf(c0 - 1, lam) >= q), c0 - 1, c0)
    c0 = np.where(stats.poisson.cdf(c0, lam) < q, c0 + 1, c0)
    return np.minimum(k, c0 + 2)


def zero_truncated_poisson_size_threshold(k, sampling_fraction: float,
                                          significance: float) -> np.ndarray:
    """ARX's ``calculateKZeroPoisson``: ``min(k, c1 + 1)``, ``c1`` the smallest
    ``c >= 1`` with ``P(X <= c | X >= 1) >= 1 - α`` for ``X ~ Poisson(f·k)``, i.e.
    ``P(X > c) <= α·P(X > 0)`` (module docstring)."""
    from scipy import stats
    k = np.asarray(k, dtype=np.float64)
    if significance >= 1.0:   # ARX's loop does not run: k' = 1
        return np.ones_like(k)
    lam = sampling_fraction * k
    tail = significance * -np.expm1(-lam)    # α · P(X > 0), exact for small λ
    c1 = np.maximum(stats.poisson.isf(tail, lam), 1.0)
    c1 = np.where((c1 > 1) & (stats.poisson.sf(c1 - 1, lam) <= tail), c1 - 1, c1)
    c1 = np.where(stats.poisson.sf(c1, lam) > tail, c1 + 1, c1)
    return np.minimum(k, c1 + 1)


#: the estimators' threshold functions (a registry by estimator name)
SIZE_THRESHOLDS = {"poisson": poisson_size_threshold,
                   "zero_truncated_poisson": zero_truncated_poisson_size_threshold}


# -- the population table ----------------------------------------------------------------
class Population:
    """A population table as leaf codes: ``codes`` (P × d, one row per distinct
    combination of the QIs' leaf codes, QIs in schema order) and ``counts`` (people per
    row); ``total`` people."""

    def __init__(self, codes: np.ndarray, counts: np.ndarray, source: str):
        self.codes, self.counts, self.source = codes, counts, source
        self.total = int(counts.sum())

    @classmethod
    def read(cls, path, dataset) -> Population:
        """Read ``path`` (CSV or Parquet: every QI of ``dataset``, and optionally a
        ``count`` column of whole numbers >= 0; without it, one row per person), each QI
        encoded with ``dataset.hierarchy(q)`` (a value that is not a leaf is an error
        naming it)."""
        from sdceval.core.tables import load_table
        qis = list(dataset.schema.qis)
        where = f"kmap: population table {str(path)!r}"
        if not Path(path).is_file():
            raise SdcevalError(f"{where} does not exist; give population=FILE, a CSV with "
                               f"the QIs ({', '.join(qis)}) and a {COUNT_COLUMN!r} column")
        hs = [dataset.hierarchy(q) for q in qis]
        df = load_table(path, text=[q for q, h in zip(qis, hs) if not h.numeric],
                        numeric=[q for q, h in zip(qis, hs) if h.numeric])
        missing = [q for q in qis if q not in df.columns]
        if missing:
            raise SdcevalError(f"{where} lacks the quasi-identifier(s) "
                               f"{', '.join(map(repr, missing))}; its columns: "
                               f"{', '.join(map(str, df.columns))}")
        for q in qis:
            bad = df[q].isna().to_numpy()
            if bad.any():
                raise SdcevalError(f"{where}: column {q!r} has {int(bad.sum())} missing "
                                   f"value(s) (first at row {int(np.argmax(bad)) + 1}); "
                                   "fill or drop them")
        if COUNT_COLUMN in df.columns and COUNT_COLUMN not in qis:
            counts = cls._counts(df[COUNT_COLUMN], where)
        else:
            counts = np.ones(len(df), dtype=np.int64)
        codes = np.stack([h.encode(df[q].to_numpy(), column=f"{q} (population table "
                                   f"{Path(path).name})") for q, h in zip(qis, hs)], axis=1)
        rows, inverse = np.unique(codes, axis=0, return_inverse=True)
        summed = np.bincount(inverse.ravel(), weights=counts, minlength=len(rows))
        keep = summed > 0
        return cls(rows[keep].astype(np.int64), summed[keep].astype(np.int64), str(path))

    @staticmethod
    def _counts(col, where: str) -> np.ndarray:
        import pandas as pd
        num = pd.to_numeric(col, errors="coerce").to_numpy(np.float64)
        bad = ~np.isfinite(num) | (num < 0) | (num != np.floor(num))
        if bad.any():
            i = int(np.argmax(bad))
            raise SdcevalError(f"{where}: column {COUNT_COLUMN!r} must hold whole numbers "
                               f">= 0 (people per row), row {i + 1} has {col.iloc[i]!r}")
        return num.astype(np.int64)

    def box_counts(self, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
        """People inside each box: ``lo``/``hi`` (C × d) leaf-code ranges per class."""
        lo, hi = np.asarray(lo, np.int64), np.asarray(hi, np.int64)
        P, d = self.codes.shape
        out = np.zeros(len(lo), dtype=np.int64)
        step = max(1, _CHUNK // max(1, P * max(d, 1)))
        pc = self.codes[None, :, :]
        for s in range(0, len(lo), step):
            inside = ((pc >= lo[s:s + step, None, :]) & (pc <= hi[s:s + step, None, :])
                      ).all(axis=2)
            out[s:s + step] = inside @ self.counts
        return out

    def node_counts(self, hierarchies, levels: np.ndarray, node_ids: np.ndarray) -> np.ndarray:
        """People whose generalized values equal each class's: ``levels`` (C × d) the
        class's node, ``node_ids`` (d × C) its generalized value per QI (a node id of
        the hierarchy at that level, `Hierarchy.node_of`).  One grouping of the
        population per distinct node."""
        levels = np.asarray(levels, dtype=np.int64)
        node_ids = np.asarray(node_ids, dtype=np.int64)
        out = np.zeros(len(levels), dtype=np.int64)
        if not len(levels):
            return out
        nodes, which = np.unique(levels, axis=0, return_inverse=True)
        which = which.ravel()
        for i, lv in enumerate(nodes):
            sel = np.flatnonzero(which == i)
            widths = [len(h.lo[lev]) for h, lev in zip(hierarchies, lv)]
            if float(np.prod(np.array(widths, dtype=np.float64))) >= 2.0 ** 62:
                # too many combinations for one integer key: count inside the boxes
                lo = np.stack([h.lo[lev][node_ids[a, sel]]
                               for a, (h, lev) in enumerate(zip(hierarchies, lv))], axis=1)
                hi = np.stack([h.hi[lev][node_ids[a, sel]]
                               for a, (h, lev) in enumerate(zip(hierarchies, lv))], axis=1)
                out[sel] = self.box_counts(lo, hi)
                continue
            # one mixed-radix key per generalized combination
            pop_key = np.zeros(len(self.codes), dtype=np.int64)
            cls_key = np.zeros(len(sel), dtype=np.int64)
            for a, (h, lev, w) in enumerate(zip(hierarchies, lv, widths)):
                pop_key = pop_key * w + h.node_of[lev][self.codes[:, a]]
                cls_key = cls_key * w + node_ids[a, sel]
            keys, inv = np.unique(pop_key, return_inverse=True)
            people = np.bincount(inv.ravel(), weights=self.counts, minlength=len(keys))
            pos = np.minimum(np.searchsorted(keys, cls_key), len(keys) - 1)
            out[sel] = np.where(keys[pos] == cls_key, people[pos], 0).astype(np.int64)
        return out


# -- the model ---------------------------------------------------------------------------
@register_model
class KMap(PrivacyModel):
    """Every class corresponds to at least ``k`` people of the population: counted in a
    population table, or estimated from the sample class size (ARX's Poisson and
    zero-truncated Poisson estimators at a significance level).

    Monotone with generalization and with suppression (ARX ``KMap``: both).  Minimal
    class size: the estimators' ``k'``; 1 with a population table (one sample record
    may stand for ``k`` people).
    """

    name = "kmap"
    title = "k-map"
    params = (Param("k", int, None, low=1, protection="increasing", unit="people",
                    unprotected=1, grid=(2, 3, 5, 10, 20, 50, 100, 1000), scale="log",
                    description="minimum number of population members per class"),
              # the choices are checked by the constructor, not declared as `choices`:
              # "population" is valid only with a table, which no default can give
              Param("estimator", str, "auto",
                    description="auto, population (count in the population table), "
                                "poisson or zero_truncated_poisson (ARX's estimators); "
                                "auto = population when a table is given, else poisson"),
              Param("significance", float, DEFAULT_SIGNIFICANCE, low=0.0, high=1.0,
                    description="significance level α of the estimators (ARX default "
                                "0.01)"),
              Param("sampling_fraction", float, 0.0, low=0.0, high=1.0,
                    description="sample size / population size for the estimators (0: "
                                "from population_size, else from the weights)"),
              Param("population_size", float, 0.0, low=0.0,
                    description="population size N for the estimators, f = n / N (0: "
                                "not given)"),
              Param("population", str, "none",
                    description="population table (CSV/Parquet: the QIs and a 'count' "
                                "column, or one row per person) for estimator=population"))
    needs_sensitive = False
    monotone_generalization = True
    monotone_suppression = True
    example = {"k": 10, "estimator": "poisson", "sampling_fraction": 0.01}
    check_name = "k_map"

    @classmethod
    def lattice_objectives(cls):
        # with an estimator the least safe class's value follows the smallest class
        # (objective ``k``); a population count needs a population table per data set
        return ()

    def __init__(self, k: int, estimator: str = "auto", significance: float =
                 DEFAULT_SIGNIFICANCE, sampling_fraction: float = 0.0,
                 population_size: float = 0.0, population: str = "none"):
        self.reads_cells, self._fraction, self._pop = False, None, None
        self.k = self.check_param("k", k)
        self.threshold = float(self.k)
        est = self.check_param("estimator", estimator)
        if est not in ("auto",) + ESTIMATORS:
            raise SdcevalError(f"kmap: estimator must be one of auto, "
                               f"{', '.join(ESTIMATORS)}, got {est!r}")
        self.population = str(self.check_param("population", population))
        has_table = self.population.lower() != "none"
        if est == "auto":
            est = "population" if has_table else "poisson"
        if est == "population" and not has_table:
            raise SdcevalError("kmap: estimator=population needs population=FILE (a table "
                               "of the QIs with a 'count' column); or choose "
                               "estimator=poisson with sampling_fraction")
        if est != "population" and has_table:
            raise SdcevalError(f"kmap: population={self.population!r} is read only with "
                               f"estimator=population, not {est}; drop one of them")
        self.estimator = est
        self.significance = self.check_param("significance", significance)
        self.sampling_fraction = self.check_param("sampling_fraction", sampling_fraction)
        self.population_size = self.check_param("population_size", population_size)
        if est == "population" and (self.sampling_fraction or self.population_size):
            raise SdcevalError("kmap: sampling_fraction and population_size are for the "
                               "estimators; with a population table the people are counted")
        if self.sampling_fraction and self.population_size:
            raise SdcevalError("kmap: give sampling_fraction or population_size, not both")
        self.reads_cells = est == "population"
        # bound to a data set (`bind`)
        self._n: int | None = None
        self._fraction: float | None = self.sampling_fraction or None
        self._pop: Population | None = None
        self._hierarchies = None
        self._dataset_id = None

    # -- binding -------------------------------------------------------------------------
    def bind(self, dataset) -> KMap:
        """The model for ``dataset`` (a new object; ``self`` is unchanged): the sampling
        fraction from ``n`` and the population size or the weights, ARX's cap of ``k'``
        at ``n``; with a population table, the table read as leaf codes of the data
        set's hierarchies (every class count needs them)."""
        if self._dataset_id == id(dataset):
            return self
        out = KMap(**self.param_values())
        out._n, out._dataset_id = int(dataset.n), id(dataset)
        if self.estimator == "population":
            out._hierarchies = [dataset.hierarchy(q) for q in dataset.schema.qis]
            out._pop = Population.read(self.population, dataset)
            if out._pop.total < self.k:
                raise SdcevalError(
                    f"kmap: k={self.k} exceeds the {out._pop.total} people of the "
                    f"population table {self.population!r}; choose k <= {out._pop.total}")
            return out
        if self.population_size:
            if self.population_size < dataset.n:
                raise SdcevalError(
                    f"kmap: population_size={self.population_size:g} is smaller than the "
                    f"{dataset.n} records of data set {dataset.name!r}; give the size of "
                    "the population the file was drawn from")
            out._fraction = dataset.n / self.population_size
        elif not self.sampling_fraction:
            w = dataset.weights
            if w is None:
                raise SdcevalError(
                    f"kmap: estimator={self.estimator} needs sampling_fraction (or "
                    f"population_size); data set {dataset.name!r} has no weight role to "
                    "estimate the population size from (e.g. --model "
                    f"'kmap:k={self.k},estimator={self.estimator},sampling_fraction=0.01')")
            out._fraction = dataset.n / float(np.sum(w))
        return out

    def _need_fraction(self) -> float:
        if self._fraction is None:
            raise SdcevalError(
                f"kmap: estimator={self.estimator} with population_size or survey weights "
                "needs the data set (a method or check binds it); give sampling_fraction "
                "to use the model on its own")
        return self._fraction

    def size_threshold(self, k=None) -> np.ndarray | int:
        """The estimator's ``k'`` for ``k`` (default: the model's): the smallest sample
        class size that satisfies k-map (module docstring), capped at ``n`` when bound."""
        one = k is None
        ks = np.atleast_1d(np.asarray(self.k if one else k, dtype=np.float64))
        kd = SIZE_THRESHOLDS[self.estimator](ks, self._need_fraction(), self.significance)
        if self._n is not None:
            kd = np.minimum(kd, self._n)
        kd = np.maximum(kd, 1).astype(np.int64)
        return int(kd[0]) if one else kd

    @property
    def derived_k(self) -> int | None:
        """ARX's ``getDerivedK``: ``k'`` of an estimator (None with a population table)."""
        return None if self.reads_cells else self.size_threshold()

    # -- evaluation ----------------------------------------------------------------------
    def _counts_only(self):
        raise SdcevalError(
            "kmap with a population table judges a class by the people its generalized "
            "cells cover, which its counts do not tell; use it in mondrian, "
            "bucketization, generalization or the lattice search, or check a release "
            "with generalized cells (or use estimator=poisson)")

    def value(self, counts, table_dist=None):
        if self.reads_cells:
            self._counts_only()
        sizes = np.asarray(counts).sum(axis=1).astype(np.int64)
        return self._achieved(sizes)

    def _achieved(self, sizes: np.ndarray) -> np.ndarray:
        """Per size, the largest ``K`` with ``k'(K) <= size`` (∞ when every ``K``
        passes: a class of all ``n`` records under ARX's cap)."""
        uniq, inv = np.unique(sizes, return_inverse=True)
        lo = np.maximum(uniq, 1).astype(np.float64)          # k'(size) <= size
        hi = lo + 1
        big = float(1 << 62)
        out = np.full(len(uniq), np.inf)
        pending = self.size_threshold(hi) <= uniq
        while pending.any():                                  # doubling: bracket K
            lo = np.where(pending, hi, lo)
            hi = np.where(pending, hi * 2, hi)
            pending &= hi < big
            pending &= self.size_threshold(hi) <= uniq
        finite = hi < big
        while True:                                           # bisection on integers
            gap = finite & (hi - lo > 1)
            if not gap.any():
                break
            mid = np.floor((lo + hi) / 2)
            ok = self.size_threshold(mid) <= uniq
            lo = np.where(gap & ok, mid, lo)
            hi = np.where(gap & ~ok, mid, hi)
        out[finite] = lo[finite]
        out[uniq == 0] = 0.0
        return out[inv.ravel()]

    def satisfied(self, counts, table_dist=None):
        if self.reads_cells:
            self._counts_only()
        return np.asarray(counts).sum(axis=1) >= self.size_threshold()

    def value_cells(self, counts, table_dist, lo, hi):
        """Per class, the people of the population inside its cells (``lo``/``hi``:
        classes × QIs leaf-code ranges, QIs in schema order); with an estimator, as
        `value`."""
        if not self.reads_cells:
            return self.value(counts, table_dist)
        return self._bound_pop().box_counts(lo, hi).astype(np.float64)

    def value_nodes(self, counts, table_dist, levels, node_ids):
        """Per class of lattice nodes (``levels``: classes × QIs, ``node_ids``: QIs ×
        classes, `sdceval.lattice.batch.ClassBatch`), the people of the population with
        the class's generalized values; with an estimator, as `value`."""
        if not self.reads_cells:
            return self.value(counts, table_dist)
        return self._bound_pop().node_counts(self._hierarchies, levels,
                                             node_ids).astype(np.float64)

    def _bound_pop(self) -> Population:
        if self._pop is None:
            raise SdcevalError("kmap with a population table must be bound to its data set "
                               "first (model.bind(dataset); methods do it)")
        return self._pop

    def min_class_size(self, table_dist=None) -> int:
        if self.reads_cells or self._fraction is None:
            return 1
        return self.size_threshold()

    def infeasible_message(self, best, total_counts) -> str:
        n = int(np.asarray(total_counts).sum())
        if self.reads_cells:
            return (f"kmap: the whole table covers {int(best)} people of the population "
                    f"table, fewer than k={self.k}; choose k <= {int(best)}")
        return (f"kmap: k={self.k} ({self.estimator}, α={self.significance:g}) needs "
                f"classes of {self.size_threshold()} records, more than the table's {n}")

    def describe(self) -> str:
        if self.reads_cells:
            return f"k={self.k} (k-map, population table {Path(self.population).name})"
        kd = f", k'={self.size_threshold()}" if self._fraction is not None else ""
        return f"k={self.k} (k-map, {self.estimator}, α={self.significance:g}{kd})"
