"""Aggregate query answering: relative error of random COUNT queries (Li & Li 2009, §5.2),
answered from any kind of release (SPEC §4, "Utility on every release").

A query is ``SELECT COUNT(*) WHERE A_1 ∈ b_1 AND ... AND A_qd ∈ b_qd AND S = s``: ``qd``
distinct query attributes drawn at random, on each a random set ``b_a`` of values
covering a fraction ``sel`` of that attribute's domain, and one sensitive value ``s``.
The actual count comes from the original table, the reconstructed count from the release
(`UniformEstimator`), and

    ρ = (1/|Q|) Σ_q |rec_count_q − act_count_q| / act_count_q × 100

over the queries with a non-zero actual count (the ratio is undefined otherwise).

Query attributes
----------------
The QIs (Li & Li's workload), then, only when the data set has them, the
``numeric``-role attributes (what perturbative methods protect), in schema order.  The
workload is drawn attribute by attribute in that order from one seeded generator, so a
data set without numeric attributes gets exactly the queries it got before numeric
attributes were added (the Li & Li reproduction on Adult is unchanged).  A data set
without a sensitive attribute gets queries without the ``S = s`` term (plain counts of
the attribute predicates; no sensitive value is drawn); one with neither QIs nor numeric
attributes has nothing to query (an error).  Passthrough columns are not query
attributes.

Answering from every release (reconstructed counts)
---------------------------------------------------
* generalized cells (generalization, Mondrian): the uniform assumption, each released
  record weighted by ``|cell ∩ b_a| / |cell|`` in leaves, as for U_loss (Li & Li §4.2);
* bucketized releases: exact QIs, each record carries its bucket's sensitive
  distribution;
* composite releases (whole-file strategies, `Release.composite`): every column as it is
  published — QI cells and the interval cells of the numeric attributes a syntactic
  step generalized (uniform assumption, as above), masked numbers (below), the released
  sensitive values, or, when they are permuted within buckets
  (`Release.sensitive_in_buckets`), each record its bucket's distribution;
* published numbers (perturbative releases: MDAV, noise, rank swapping, multiplicative
  noise; numeric columns of an external table) are taken exactly: a released value
  counts (weight 1) when it lies in the predicate's value interval, else 0;
* synthetic releases (issue 32: new records, any number, no record correspondence):
  every column is published as plain values (numbers exactly, labels as their leaves),
  and the reconstructed count, a count over the release's own records, is scaled by
  ``n_original / n_release`` (``details["scale"]``) to estimate the original's count —
  the release stands for a table of the original's size;
* a column the release does not publish is *fully suppressed* (SPEC §4): its cell is the
  whole domain, weight ``|b_a| / |domain_a|``, uniform over the hierarchy's leaves (for a
  numeric attribute: over its distinct original values, not over the value range); an
  unpublished sensitive attribute (perturbative releases drop it) is uniform over its
  values, ``1/m`` per value — not the table's distribution, which the release does not
  publish either.

Edges of a range predicate.  On a numeric attribute ``b_a`` is a contiguous run of the
hierarchy's leaves (the sorted distinct original values ``v_i..v_j``), i.e. the closed
value interval ``[v_i, v_j]``, the query ``A BETWEEN v_i AND v_j`` an analyst would run
on the released table: a perturbed value ``y`` counts when ``v_i <= y <= v_j`` (both ends
included; a value between ``v_j`` and ``v_{j+1}`` is outside).  Original values are
leaves, so the original table answers every query exactly.

Decisions where the paper is silent (documented here and in the docstring):

* ``sel`` is read, by default (``selectivity="overall"``), as the *expected selectivity
  of the whole predicate*, as in the workload of Anatomy (Xiao & Tao 2006) that Li & Li
  cite for it: each chosen attribute covers a fraction ``sel^(1/qd)`` of its domain, so
  the query region has volume ``sel`` whatever ``qd``.  Only this reading explains the
  paper's Fig. 3(c) finding ("when query selectivity is fixed, the number of points in
  the retrieved region is larger when qd is larger").  The literal reading of §5.2
  ("the fraction of selected values for each quasi-identifier") is
  ``selectivity="per_qi"``: ``|b_a| = ceil(sel · |domain_a|)``.  Measured on Adult
  (qd=4, sel=0.05, 1000 queries): per-QI answers only 151 queries with a median true
  count of 2, so tiny counts dominate and the error is not even monotone in k (Mondrian
  k=100 188 % > suppressed 128 %); overall answers 923 and orders releases sensibly.
  The domain is the attribute's hierarchy leaves; at least one value is selected.
* Categorical attributes get a random subset of leaves; numeric ones (interval
  hierarchies) a random contiguous run of leaves, i.e. a range predicate.
* ``s`` is drawn uniformly from the sensitive domain.
* Defaults ``qd = min(4, number of query attributes)``, ``sel = 0.05``: the values the
  paper fixes in Fig. 3(b) and 3(c), except that a data set with fewer than 4 query
  attributes gets queries on all of them (``qd`` cannot exceed their number; an
  explicit larger ``qd`` is an error).  The registry's default is ``None``, meaning
  that rule (`default_qd`).
* The same ``seed`` gives the same queries for every release compared.
* A generalized, bucketized or composite release must carry its cells
  (`Release.cells`; `publishes_cells`); a perturbative release of a data set without numeric attributes publishes nothing a
  perturbative method protects (no method makes one) and is refused.
"""
from __future__ import annotations

import math
import weakref
from dataclasses import dataclass

import numpy as np
import pandas as pd

from sdceval.core.errors import SdcevalError
from sdceval.core.measurement import Measurement
from sdceval.core.partial import PartialForm
from sdceval.core.registry import Param, register_measure
from sdceval.core.release import KINDS, Release, require
from sdceval.measures.utility_loss import Predicates, UniformEstimator, publishes_cells


@dataclass(frozen=True)
class CountQueries:
    """A workload of random COUNT queries and their actual answers.

    Attributes
    ----------
    predicates : Predicates
        The attribute part of every query (over `query_attributes`).
    sensitive : ndarray of int, shape (n_queries,)
        The sensitive value code each query counts; ``-1`` for every query of a data set
        without a sensitive attribute (no ``S = s`` term).
    actual : ndarray of float, shape (n_queries,)
        Counts in the original table.
    """

    predicates: Predicates
    sensitive: np.ndarray
    actual: np.ndarray

    def __len__(self) -> int:
        return len(self.sensitive)


_QUERIES: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()

#: elements of one (queries x groups) boolean block of `original_counts`
_BLOCK = 1 << 22

#: the paper's predicate dimension (Li & Li 2009 Fig. 3(b)); capped by the number of
#: query attributes
PAPER_QD = 4


def default_qd(n_attributes: int) -> int:
    """``qd`` when none is given: ``min(4, n_attributes)`` (module notes)."""
    return min(PAPER_QD, n_attributes)


def query_attributes(dataset) -> tuple[str, ...]:
    """The attributes a query may constrain: the QIs, then the ``numeric``-role
    attributes (module notes)."""
    return tuple(dataset.schema.qis) + tuple(dataset.schema.numeric)


def random_queries(dataset, n_queries: int = 1000, qd: int | None = None,
                   sel: float = 0.05, seed: int = 0, selectivity: str = "overall"
                   ) -> CountQueries:
    """Draw (and cache per data set) ``n_queries`` COUNT queries; see the module notes.
    ``qd=None`` is `default_qd` of the data set's number of query attributes."""
    attrs = query_attributes(dataset)
    if not attrs:
        raise SdcevalError(
            f"query_error needs quasi-identifiers or numeric attributes to query, but data "
            f"set {dataset.name!r} has neither; give some columns role 'qi' or 'numeric'")
    if qd is None:
        qd = default_qd(len(attrs))
    if not 1 <= qd <= len(attrs):
        raise SdcevalError(
            f"query_error: qd={qd} must be between 1 and the number of query attributes "
            f"(quasi-identifiers and numeric attributes; {len(attrs)}: {', '.join(attrs)})")
    if not 0 < sel <= 1:
        raise SdcevalError(f"query_error: sel must be a fraction in (0, 1], got {sel}")
    if n_queries < 1:
        raise SdcevalError(f"query_error: n_queries must be >= 1, got {n_queries}")
    if selectivity not in ("overall", "per_qi"):
        raise SdcevalError(f"query_error: selectivity must be 'overall' or 'per_qi', "
                           f"got {selectivity!r}")
    frac = float(sel) ** (1.0 / qd) if selectivity == "overall" else float(sel)
    key = (attrs, dataset.schema.sensitive, int(n_queries), int(qd), frac, int(seed))
    per_ds = _QUERIES.setdefault(dataset, {})
    if key not in per_ds:
        per_ds[key] = _draw(dataset, attrs, int(n_queries), int(qd), frac, int(seed))
    return per_ds[key]


def _draw(dataset, attrs, n_queries, qd, sel, seed) -> CountQueries:
    rng = np.random.default_rng(seed)
    hier = [dataset.hierarchy(a) for a in attrs]
    rows = [[] for _ in attrs]
    select = np.full((n_queries, len(attrs)), -1, dtype=np.int64)
    for i in range(n_queries):        # draws only; nothing here touches the records
        for a in np.sort(rng.choice(len(attrs), size=qd, replace=False)):
            n_leaves = hier[a].n_leaves
            size = min(n_leaves, max(1, math.ceil(sel * n_leaves - 1e-9)))
            row = np.zeros(n_leaves, dtype=bool)
            if hier[a].numeric:
                start = int(rng.integers(0, n_leaves - size + 1))
                row[start:start + size] = True
            else:
                row[rng.choice(n_leaves, size=size, replace=False)] = True
            select[i, a] = len(rows[a])
            rows[a].append(row)
    col = dataset.schema.sensitive
    if col is None:                   # no S = s term, and no draw for it
        sensitive = np.full(n_queries, -1, dtype=np.int64)
    else:
        sensitive = rng.integers(0, dataset.hierarchy(col).n_leaves, size=n_queries)
    preds = Predicates(attrs, [np.array(r, dtype=bool).reshape(len(r), h.n_leaves)
                               for r, h in zip(rows, hier)], select)
    return CountQueries(preds, sensitive, original_counts(dataset, preds, sensitive))


def _group_ids(columns: list, n: int) -> tuple[np.ndarray, int]:
    """Group id of each record by its combination of codes (non-negative integers, one
    array per column) and the number of groups, by hashing: O(n), no sort."""
    key, bound = np.zeros(n, dtype=np.int64), 1
    for c in columns:
        size = int(c.max()) + 1 if len(c) else 1
        if bound * size >= 2 ** 62:   # the mixed-radix key would overflow: renumber it
            key, uniq = pd.factorize(key)
            key, bound = key.astype(np.int64), len(uniq)
        key = key * size + c
        bound *= size
    ids, uniq = pd.factorize(key)
    return ids, len(uniq)


def original_counts(dataset, predicates: Predicates, sensitive: np.ndarray) -> np.ndarray:
    """Each query's count in the original table, exactly, shape ``(len(predicates),)``.

    The records are grouped once by their leaf codes on the query attributes and the
    sensitive attribute (``g``: a distinct combination, ``|g|`` its records); the count
    of query ``q`` with sensitive value ``s`` is

        act_q = Σ_{g : s_g = s} |g| · Π_{a ∈ q} rows_qa[code_ga]

    (``rows_qa`` the query's leaf set on attribute ``a``; no ``s_g = s`` term without a
    sensitive attribute).  An original value is a leaf, so this is the reconstruction
    of `original_release` (exact cells and published values weigh 0 or 1), which the
    workload used before issue 21 item 7 (tests/test_queries.py pins the two equal):
    the estimator weighs every query on every distinct record in floating point, this
    only the groups of the query's sensitive value, in booleans, in blocks of queries
    on the same attributes and value and of at most ``_BLOCK`` groups that bound the
    ``(queries × groups)`` matrix at ``_BLOCK`` elements.  Counts are sums of
    integers, exact in float64 whatever the blocks.
    """
    attrs = tuple(predicates.qis)
    n = dataset.n
    col = dataset.schema.sensitive
    codes = [np.asarray(dataset.codes(a)) for a in attrs]
    sens = np.asarray(dataset.codes(col)) if col is not None else np.zeros(n, np.int64)
    ids, n_groups = _group_ids(codes + [sens], n)
    size = np.bincount(ids, minlength=n_groups).astype(np.float64)
    rep = np.empty(n_groups, dtype=np.int64)
    rep[ids] = np.arange(n)           # any record of a group has the group's codes
    # groups ordered by sensitive value: those of value s are one slice
    order = np.argsort(sens[rep], kind="stable")
    rep, size = rep[order], size[order]
    bounds = np.searchsorted(sens[rep], np.arange(int(sens.max()) + 2))
    group_codes = [c[rep] for c in codes]
    rows = [np.asarray(r, dtype=bool) for r in predicates.rows]
    select = np.asarray(predicates.select)
    value = np.maximum(np.asarray(sensitive, dtype=np.int64), 0)
    out = np.zeros(len(select))
    # blocks of queries with one sensitive value and one set of attributes
    _, pattern = np.unique(select >= 0, axis=0, return_inverse=True)
    block_key = value * (int(pattern.max()) + 1 if len(pattern) else 1) + pattern.ravel()
    order = np.argsort(block_key, kind="stable")
    cuts = np.flatnonzero(np.diff(block_key[order])) + 1
    for idx in np.split(order, cuts):
        if not len(idx):
            continue
        s = int(value[idx[0]])
        if s + 1 >= len(bounds):
            continue                  # a value above every record's: count 0
        used = np.flatnonzero(select[idx[0]] >= 0)
        for g0 in range(int(bounds[s]), int(bounds[s + 1]), _BLOCK):
            g1 = min(g0 + _BLOCK, int(bounds[s + 1]))
            step = max(1, _BLOCK // (g1 - g0))
            for b in range(0, len(idx), step):
                part = idx[b:b + step]
                w = np.ones((len(part), g1 - g0), dtype=bool)
                for a in used:
                    w &= rows[a][select[part, a]][:, group_codes[a][g0:g1]]
                out[part] += w @ size[g0:g1]
    return out


def original_release(dataset) -> Release:
    """The original table as a release: every QI an exact cell (``lo = hi = code``),
    the numeric attributes and the sensitive values published unchanged."""
    s = dataset.schema
    cols = list(query_attributes(dataset)) + ([s.sensitive] if s.sensitive else [])
    cells = {q: (dataset.codes(q), dataset.codes(q)) for q in s.qis}
    return Release(dataset.frame[cols], "original", kind="generalized",
                   classes=np.zeros(dataset.n, dtype=np.int64), cells=cells,
                   sensitive_codes=dataset.codes(s.sensitive) if s.sensitive else None,
                   info={"baseline": "the original table"}).check(dataset)


def reconstructed_counts(dataset, release: Release, queries: CountQueries) -> np.ndarray:
    """Each query's count reconstructed from ``release`` (module notes), shape
    ``(len(queries),)``; a synthetic release's counts scaled by `count_scale`."""
    attrs = tuple(queries.predicates.qis)
    est = UniformEstimator(dataset, release, "query_error", columns=attrs)
    # without a sensitive attribute the estimator's one "value" (code 0) is the record
    counts = est.counts(queries.predicates, np.maximum(queries.sensitive, 0))
    return counts * count_scale(dataset, release)


def count_scale(dataset, release: Release) -> float:
    """``n_original / n_release`` for a release with no record correspondence (a
    synthetic file of any size stands for a table of the original's size), else 1."""
    if release.aligned:
        return 1.0
    if release.n == 0:
        raise SdcevalError(f"query_error: release of {release.method!r} has no records")
    return dataset.n / release.n


# -- in parts of a table (`sdceval.core.partial`) ------------------------------------
@dataclass(frozen=True)
class _Workload:
    """The queries of one set of parameters, drawn on the whole table's hierarchies."""

    predicates: Predicates
    sensitive: np.ndarray
    attributes: tuple


def _workload(whole, params: dict) -> _Workload:
    # the workload depends only on the hierarchies and the seed: drawn on two records
    # of the whole table's schema, it is the in-memory measure's
    domain = whole.domain()
    w = random_queries(domain, params["n_queries"], params["qd"], params["sel"],
                       params["seed"], params["selectivity"])
    return _Workload(w.predicates, w.sensitive, query_attributes(domain))


def _part_counts(w: _Workload, part) -> tuple[np.ndarray, np.ndarray]:
    """A part's actual and reconstructed count of every query: sums over records."""
    ds = part.dataset
    return (original_counts(ds, w.predicates, w.sensitive),
            reconstructed_counts(ds, part.release, CountQueries(
                w.predicates, w.sensitive, np.zeros(len(w.sensitive)))))


def _sum_counts(*parts) -> tuple[np.ndarray, np.ndarray]:
    return sum(p[0] for p in parts), sum(p[1] for p in parts)


def _finish(w: _Workload, merged, params: dict) -> Measurement:
    qd = params["qd"] if params["qd"] is not None else default_qd(len(w.attributes))
    return _error(merged[0], merged[1], qd, params["sel"], w.attributes)


def _check_parts(name: str, schema, release_meta, where: str) -> None:
    if not (schema.qis or schema.numeric):
        raise SdcevalError(f"{name} needs quasi-identifiers or numeric attributes to "
                           "query, but the schema gives neither; give some columns role "
                           "'qi' or 'numeric'")


#: ``act_q = Σ_p act_q(p)``, ``rec_q = Σ_p rec_q(p)`` over parts p of the table (each
#: record weighs ``Π_a |cell_a ∩ b_a| / |cell_a|`` on its own), then ρ; the parts'
#: data sets carry the whole table's hierarchies, so codes and domains agree
PARTIAL = PartialForm(
    partial=_part_counts, merge=_sum_counts, finish=_finish, prepare=_workload,
    key=lambda p: tuple(sorted((k, p[k]) for k in ("n_queries", "qd", "sel", "seed",
                                                    "selectivity"))),
    hierarchies=("qi", "sensitive", "numeric"), check=_check_parts)


@register_measure(
    "query_error", category="utility", direction="lower_is_better", kinds=KINDS,
    label="query error (%)", partial=PARTIAL,
    params=[
        Param("n_queries", int, default=1000, low=1,
              description="number of random COUNT queries (the paper uses 1000)"),
        Param("qd", int, default=None, low=1,
              description="predicate dimension: attributes per query (QIs, then numeric "
                          "attributes), at most their number; default min(4, their "
                          "number) (4 is the paper's)"),
        Param("sel", float, default=0.05, low=0, high=1, low_inclusive=False,
              unit="fraction of an attribute's domain",
              description="query selectivity: fraction of each chosen attribute's values "
                          "selected"),
        Param("seed", int, default=0, low=0,
              description="seed of the query workload (same queries for every release)"),
        Param("selectivity", str, default="overall", choices=("overall", "per_qi"),
              description="'overall': sel is the predicate's selectivity, each attribute "
                          "covers sel^(1/qd) (Anatomy's workload); 'per_qi': each covers "
                          "sel"),
    ],
    description="aggregate query answering (Li & Li 2009 §5.2), from any release: mean "
                "relative error (%) of random COUNT queries on qd attributes (QIs, numeric "
                "attributes) and one sensitive value; generalized cells under the uniform "
                "assumption, buckets by their distributions, published numbers exactly, "
                "unpublished columns fully suppressed; a synthetic release's counts scaled "
                "by n_original / n_release")
def query_error(dataset, release: Release, n_queries: int = 1000, qd: int | None = None,
                sel: float = 0.05, seed: int = 0, selectivity: str = "overall"
                ) -> Measurement:
    """Average relative error ρ (%) of random COUNT queries (Li & Li 2009, §5.2).

    Parameters
    ----------
    dataset : Dataset
        Original data with QIs and/or numeric attributes (the query attributes) and,
        optionally, a sensitive attribute (without one, queries have no ``S = s`` term).
    release : Release
        Any kind; a generalized, bucketized or composite release must carry
        `Release.cells`; a synthetic release's counts are scaled by
        ``n_original / n_release``.
    n_queries : int
        Number of queries drawn.
    qd : int or None
        Number of attributes in each query's predicate; ``None``: ``min(4, number of
        query attributes)`` (`default_qd`).
    sel : float
        Query selectivity: with ``selectivity="overall"`` each chosen attribute covers
        ``ceil(sel^(1/qd) · |domain|)`` values; with ``"per_qi"`` ``ceil(sel ·
        |domain|)``.
    seed : int
        Seed of the workload; fixed so that every release answers the same queries.

    Returns
    -------
    Measurement
        ``value`` = ρ in percent; ``details``: ``n_queries``, ``n_answered`` (queries
        with a non-zero actual count, the ones averaged), ``median``, ``qd`` (the
        predicate dimension used), ``attributes`` (the query attributes) and, for a
        synthetic release, ``scale`` (n_original / n_release, the factor of its
        reconstructed counts).

    Notes
    -----
    ``ρ = mean_q |rec_q − act_q| / act_q × 100`` over queries with ``act_q > 0``.
    Reconstructed counts weight each released record by the fraction of its cell's
    leaves inside the predicate (a published number: 1 inside the closed value
    interval, 0 outside; an unpublished column: the whole domain), times its sensitive
    value (generalization, a composite release), its bucket's sensitive distribution
    (values permuted within buckets) or ``1/m`` (not published).  See the module docstring for the decisions.
    """
    if publishes_cells(dataset, release):
        require(dataset, ("cells",), "query_error", release)
    if release.kind == "perturbative" and not dataset.schema.numeric:
        raise SdcevalError(
            f"measure 'query_error' does not apply to a perturbative release (of "
            f"{release.method!r}) of data set {dataset.name!r}, which has no numeric "
            "attributes: a perturbative release publishes only masked numeric attributes")
    attrs = query_attributes(dataset)
    if qd is None:
        qd = default_qd(len(attrs))
    queries = random_queries(dataset, n_queries, qd, sel, seed, selectivity)
    rec = reconstructed_counts(dataset, release, queries)
    out = _error(queries.actual, rec, qd, sel, attrs)
    if not release.aligned:   # a row per record elsewhere: the scale is 1, not shown
        out.details["scale"] = count_scale(dataset, release)
    return out


def _error(act: np.ndarray, rec: np.ndarray, qd: int, sel: float, attrs) -> Measurement:
    """``ρ = mean_{act_q > 0} |rec_q − act_q| / act_q × 100`` and its details."""
    ok = act > 0
    if not ok.any():
        raise SdcevalError(
            f"query_error: none of the {len(act)} queries (qd={qd}, sel={sel}) selects "
            "any original record; raise sel or lower qd")
    err = np.abs(rec[ok] - act[ok]) / act[ok] * 100.0
    return Measurement("query_error", float(err.mean()), None,
                       details={"n_queries": int(len(act)), "n_answered": int(ok.sum()),
                                "median": float(np.median(err)), "qd": int(qd),
                                "attributes": list(attrs)})
