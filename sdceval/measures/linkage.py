"""Rank-based record-linkage disclosure risk (Domingo-Ferrer, Ricci & Soria-Comas, §4).

Every original record ``x`` is linked to the released record nearest to it in the
Euclidean distance between *ranks on the original's scale* (SPEC §4),

    d(x, y) = sqrt( Σ_j [R_j(x^j) − R_j(y^j)]² ),

where ``R_j`` ranks a value among the original values of attribute ``j``: an original
value gets its *mid-rank* (average rank for ties: the ``t`` records sharing a value
``v`` with ``L`` values below it all get ``L + (t + 1) / 2``), and a released value
gets the rank it would have among the original values: the mid-rank of the original
value it equals, else the linear interpolation between the mid-ranks of the two
consecutive distinct original values ``v_a < y < v_b`` around it, else (outside the
original's range) the linear extrapolation of the first or last segment (below).
``d(x, Y) = min_y d(x, y)`` is the record's risk property: the smaller, the closer a
released record resembles it, the greater the risk.

Ranks on the original's scale (issue 19 item 1; SPEC §4)
--------------------------------------------------------
Until issue 19, released values were ranked among the *released* values (average
ranks of ``Y^j``), as the paper's formula reads.  That is wrong on tied data (ages,
counts, rounded incomes): noise of gamma = 1e-9, a copy of the data for any intruder,
breaks the original's ties, so a record moves by up to its tie group's size.  SPEC §4
quotes 4.12 for it against 4.26 for MDAV k = 5 on integer data, re-identifying 44 % of
the records where the copy re-identifies 89 %; on the tied test data of
``tests/test_linkage.py`` (300 records, ``tied_dataset(300, 1, coarse=True)``) it
scored 3.592, *safer* than MDAV k = 5 (3.527), and re-identified 34.7 % where the copy
re-identifies 57.3 %.  On X's scale that noise moves each record by about 1e-5 ranks:
0.004 and 57.3 % (MDAV k = 5: 3.377).  Invariants (tested): ``Y = X`` gives ``d = 0``
for every record, and the mean distance grows with the noise (gamma 1e-9 … 10, seeds
averaged).

The change is not confined to ties: ranking ``Y`` among itself normalized away any
change of spread, and the new scale sees it.  Correlated noise inflates each variance
by ``1 + gamma``, so its risk curve no longer flattens: on Census ``mean log(1 + d)``
at gamma = 0.5 / 1 / 3 was 5.819 / 5.852 / 5.885 and is now 6.191 / 6.316 / 6.529.
MDAV k = 5 moved little (Census 5.859 → 5.844, EIA 6.337 → 6.330); releases whose
values are original values (rank swapping) did not move at all.  Bisection therefore
matches correlated noise at a much smaller gamma than before (Census 1.23 → 0.071, EIA
0.035 → 0.0059): see ``docs/reproduction.md`` §1 for every number that moved.

The paper's reading is kept as ``ranks="released"`` (each released attribute ranked
among itself), and the reproduction of its Table 1 (``experiments/
domingo_ferrer_table1.toml``, ``tests/test_compare_outputs.py``) uses it: with it the
matched parameters and the utility rankings are those of the paper (and of sdceval
before issue 19) exactly.  Which reading reproduces the paper is measured, not read
from its text: under ``ranks="original"`` the matched noise is 14x smaller than the
paper's γ = 1 and the propensity ranking at the bisected parameters agrees with the
paper in 3/6 (Census) and 5/6 (EIA) orderings instead of 6/6.  Every other use —
``sdceval compare`` on a user's data, the defaults — ranks on the original's scale.

Decisions where the paper or SPEC leave a choice
------------------------------------------------
* Outside the original's range (``y < v_1`` or ``y > v_K``) the rank is *extrapolated*
  with the end gap: ``r_1 − (v_1 − y) (r_2 − r_1) / (v_2 − v_1)`` below,
  ``r_K + (y − v_K) (r_K − r_{K−1}) / (v_K − v_{K−1})`` above.  ``R_j`` is then a
  continuous, strictly increasing piecewise-linear function of ``y``, so a released
  value's rank displacement grows with its distance from the original value however far
  the noise pushes it, and the distance keeps growing with the noise.  Clamping to the
  extreme mid-rank would not: every value beyond the maximum would share the maximum's
  rank, a record pushed outward would stay at distance 0 from the extreme original
  record, and values piling up on the extreme ranks would pull the mean distance of
  large noise down (on Census, gamma = 1 gives 6.080 clamped vs 6.316 extrapolated;
  the curve of clamped ranks flattens at large gamma on tied data).  Ranks farther than
  ``RANK_CAP`` (2^400) are capped, so squared distances stay finite.  A constant
  original attribute has no gap: every released value gets its one mid-rank (the
  attribute cannot tell records apart).
* Aggregate.  The printed Eq. (3), ``(1/n) log Σ_x d(x, Y)``, is almost constant
  (0.0119 for every Census release at the paper's matched parameters); the text asks
  for "the mean of the record distances" with a logarithm that damps large distances.
  ``aggregate="mean_log1p"`` (default) is ``mean_x log(1 + d(x, Y))``; ``"mean"`` is
  the plain mean; ``"log_mean"`` is ``log(1 + mean_x d(x, Y))`` — the log of the mean,
  with the same ``1 +`` so that a release equal to the original gives 0, not −∞.
* Scale (``scale``).  SPEC §4 reads the aggregate as it stands: ``scale="spec"``
  (default) is ``mean_x log(1 + d(x, Y))`` on raw ranks (``rank_scale="raw"``, ranks
  1..n).  MDAV k=5 then gives 5.844 on Census and 6.330 on EIA (5.859 and 6.337 with
  ``Y`` ranked among itself), not the paper's printed 0.45 and 0.58.
  ``scale="fitted_per_attribute"`` divides the aggregate by the number of attributes
  ``m`` (13 on Census, 11 on EIA): 0.4495 and 0.5755 (were 0.4507 and 0.5761).  That
  division is **fitted**: we chose it because it lands on the paper's two printed
  levels, and nothing in the paper's text says to divide by ``m``; use it only to put
  our figures next to the paper's.  Dividing by a constant changes no comparison on one
  data set: bisection's relative tolerance, the matched parameters and every ranking
  are the same in both scales.  Ranks divided by n (``rank_scale="fraction"``) give
  0.288 and 0.139 (spec scale), which would put EIA below Census.  ``per_record`` is
  always the undivided ``d(x, Y)`` in the chosen rank scale.
* Magnitudes.  Only mid-ranks and interpolation fractions ``(y − v_a) / (v_b − v_a)``
  enter, so the measure is invariant, up to rounding, to the same increasing affine map
  of an attribute in ``X`` and ``Y``, including a change of scale by 1e300 or 1e-300
  (nothing is squared before ranking; a difference that overflows near 1.8e308 is
  taken on halved values, which is exact).  Released values that are original values
  keep their ranks under any increasing map; other values depend on where they fall
  between the original values, which a non-linear map changes.
* Re-identification rate (the classic measure, reported in ``details``): record ``i``
  counts as correctly linked when release row ``i`` is at the minimum distance; when
  ``t`` released records tie at that distance (common: MDAV publishes ``k`` identical
  rows per group, and a copy of tied data links a record to the ``t`` records with the
  same values) it counts ``1/t``, the success probability of an intruder who breaks
  ties at random; a copy therefore scores (number of distinct rows) / n.
  ``reidentification_rate_any`` counts it fully instead (an upper bound: "row i among
  the nearest").
* Permutation distance (§2.1): for the correctly aligned pair ``(x_i, y_i)``,
  ``max_j |R_j(x_i^j) − R_j(y_i^j)|`` in the chosen rank scale; ``details`` gives its
  maximum and mean over records.

Nearest neighbours come from a KD-tree built on the distinct released rank vectors
(memory linear in n; never an n × n matrix).

References
----------
Domingo-Ferrer, J., Ricci, S., Soria-Comas, J. A methodology to compare anonymization
methods regarding their risk-utility trade-off, §2.1, §4 (Eq. 3), §5.1.
"""
from __future__ import annotations

import threading
import weakref

import numpy as np

from sdceval.core.errors import SdcevalError
from sdceval.core.measurement import Measurement
from sdceval.core.glossary import register_term
from sdceval.core.partial import PartialForm
from sdceval.core.registry import Param, register_measure
from sdceval.core.release import Release
from sdceval.core.combos import combine
from sdceval.measures._compatibility import first
from sdceval.measures._nearest import (SAMPLE, SAMPLE_PARAM, SEED_PARAM, NearestIndex,
                                       record_sample, sample_summary)
from sdceval.measures._numeric_pair import NUMERIC_KINDS, numeric_pair
from sdceval.measures._ranks import (RANK_CAP, OriginalScale,  # noqa: F401 (re-exported)
                                     _original_scale, rank_matrix, ranks_on_original)

register_term("reidentification_rate", "re-identification rate (nearest record)",
              "share of original records whose nearest released record (on the original's "
              "scale) is their own, ties shared: an intruder's expected hit rate",
              "riskier", unit="share of records")
register_term("reidentification_rate_any", "re-identification rate (any tie)",
              "share of original records whose own released record is among the nearest "
              "ones (ties counted as hits): an upper bound on the linkage hit rate",
              "riskier", unit="share of records")

AGGREGATES = ("mean_log1p", "mean", "log_mean")
RANK_SCALES = ("raw", "fraction")
#: the defaults of the two parameters whose other values name a variant in `readings`
DEFAULTS = {"aggregate": "mean_log1p", "rank_scale": "raw", "ranks": "original"}
#: where released values are ranked: among the original's values (SPEC §4, the default)
#: or among the released values themselves (the reading of the paper that reproduces
#: its Table 1: module notes)
RANKS = ("original", "released")
#: "spec": the aggregate as SPEC §4 defines it; "fitted_per_attribute": divided by the
#: number of attributes, a scale fitted to the paper's printed 0.45 / 0.58 (module notes)
SCALES = ("spec", "fitted_per_attribute")


def aggregate_distances(d: np.ndarray, how: str) -> float:
    """``mean log(1+d)``, ``mean d`` or ``log(1 + mean d)`` (see the module notes)."""
    if how == "mean_log1p":
        return float(np.mean(np.log1p(d)))
    if how == "mean":
        return float(np.mean(d))
    return float(np.log1p(np.mean(d)))


def _sample_details(dist: np.ndarray, hits: np.ndarray, aggregate: str, divisor: float,
                    n: int, seed: int) -> dict:
    """Standard errors of the estimates from a sample of records: the aggregate's
    (``log(1 + mean d)`` by the delta method, ``se(mean d) / (1 + mean d)``) and the
    re-identification rate's."""
    if aggregate == "log_mean":
        est = sample_summary(dist, n)
        se = est["standard_error"] / (1.0 + est["estimate"]) / divisor
        value = float(np.log1p(est["estimate"])) / divisor
    else:
        est = sample_summary((np.log1p(dist) if aggregate == "mean_log1p" else dist)
                             / divisor, n)
        se, value = est["standard_error"], est["estimate"]
    rate = sample_summary(hits, n)
    return {"sampled_records": len(dist), "records": n, "seed": seed,
            "standard_error": se, "ci95": [value - 1.959964 * se, value + 1.959964 * se],
            "reidentification_rate_se": rate["standard_error"]}


def link(rx: np.ndarray, ry: np.ndarray, rows: np.ndarray | None = None
         ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Link every row of ``rx`` to its nearest row of ``ry`` (Euclidean).

    ``rx`` and ``ry`` should be raw ranks.  The original's mid-ranks are multiples of
    ½, and so are the ranks of released values equal to original values (copies,
    swapped values): their squared distances are sums of exactly representable numbers
    and ties among them are exact (below about 10^6 records).  Interpolated ranks carry
    a rounding error of about one ulp of their magnitude, and the tree may sum the
    squares in another order than the aligned distance; so a released row counts as
    nearest when its distance exceeds the minimum ``d`` by at most
    ``(8 + 2m) · eps · (d + max_j |rx_j|)`` (m attributes; about 1e-11 ranks at
    n = 10^4), far below any real difference between two released rows.

    ``rows``: the records the rows of ``rx`` are (their own released rows in ``ry``);
    default ``rx`` is every record, row ``i`` record ``i``.

    Returns
    -------
    distance : (len(rx),) float
        ``d(x_i, Y)``.
    correct : (len(rx),) bool
        Release row ``i`` is among the nearest rows of record ``i`` (up to rounding).
    ties : (len(rx),) int
        Number of release rows at the minimum distance, for the correct records
        (1 elsewhere).
    """
    # identical released rows (MDAV groups) become one tree point with a multiplicity,
    # so ties cost nothing and a release of n equal rows is not an O(n²) ball count
    vid, n_distinct = combine(list(ry.T), len(ry))   # hashing: no sorted n x m copy
    uy = ry[first(vid, n_distinct)]
    counts = np.bincount(vid, minlength=n_distinct)
    del vid
    return link_to(NearestIndex(uy), counts, rx, ry if rows is None else ry[rows])


def link_to(index: NearestIndex, counts: np.ndarray, rx: np.ndarray, own: np.ndarray
            ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """`link` against an index built beforehand (``index`` over the release's distinct
    rank vectors, ``counts`` the released rows each stands for; ``own`` the records'
    own released rank vectors, row-aligned with ``rx``): a worker that links many
    parts of a table builds its tree once (`sdceval.experiments.partitioned`)."""
    dist, nearest = index.nearest(rx)
    slack = (8 + 2 * rx.shape[1]) * np.finfo(np.float64).eps
    radius = dist + slack * (dist + np.abs(rx).max(axis=1))
    own_dist = np.sqrt(((rx - own) ** 2).sum(axis=1))
    correct = own_dist <= radius
    ties = np.ones(len(rx), dtype=np.int64)
    idx = np.flatnonzero(correct)
    if len(idx):
        # ties are only needed for correct links (few, unless the release is close to
        # a copy): the distinct points in a ball of the minimal radius around each
        n_distinct = index.count_within(rx[idx], radius[idx])
        one = n_distinct <= 1
        ties[idx[one]] = counts[nearest[idx[one]]]
        hard = idx[~one]  # distinct released rows at the same distance: rare
        if len(hard):
            hits = index.within(rx[hard], radius[hard])
            lens = np.fromiter(map(len, hits), dtype=np.int64, count=len(hits))
            ties[hard] = np.add.reduceat(counts[np.concatenate(hits)],
                                         np.r_[0, np.cumsum(lens)[:-1]])
    return dist, correct, ties


# -- in parts of a table (`sdceval.core.partial`) --------------------------------------
class _Index:
    """One ``ranks`` reading of the release, sent to every worker once: its distinct
    rank vectors (the tree's points), the released rows each stands for, each row's own
    vector (``points[inverse[i]]`` is row ``i``'s) and the original's scale; the
    KD-tree is built on a process's first use (`_TREES`, not pickled)."""

    def __init__(self, whole, params: dict):
        self.n, ranks = whole.n, params["ranks"]
        self.scale = whole.memo("linkage scale", lambda: OriginalScale.from_counts(
            *zip(*(whole.value_counts(c) for c in whole.schema.numeric))))
        y = whole.release_numbers()
        ry = self.scale.rank(y) if ranks == "original" else rank_matrix(y)
        inverse, count = combine(list(ry.T), len(ry))  # distinct rows, as `link` finds them
        self.points = ry[first(inverse, count)]
        # row numbers in 4 bytes where they fit: the index travels to every worker
        small = np.int32 if len(y) < np.iinfo(np.int32).max else np.int64
        self.counts = np.bincount(inverse, minlength=count).astype(small)
        self.inverse = inverse.astype(small)

    def tree(self) -> NearestIndex:
        with _TREE_LOCK:
            if self not in _TREES:
                _TREES[self] = NearestIndex(self.points)
            return _TREES[self]


#: the KD-tree of each `_Index` in this process, gone with the index
_TREES: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()
_TREE_LOCK = threading.Lock()


def _link_part(index: _Index, part) -> dict:
    """Per rank scale: ``[Σ log(1+d), Σ d, Σ hit/ties, Σ hit, Σ perm, max perm]`` over
    the part's records, each linked to its nearest released row (`link_to`)."""
    rx = index.scale.rank(part.numbers)
    own = index.points[index.inverse[part.rows]]
    dist, correct, ties = link_to(index.tree(), index.counts, rx, own)
    perm = np.abs(rx - own).max(axis=1)
    out = {}
    for rank_scale in RANK_SCALES:
        unit = 1.0 / index.n if rank_scale == "fraction" else 1.0
        out[rank_scale] = np.r_[link_sums(dist * unit, correct, ties), (perm * unit).sum(),
                                (perm * unit).max()]
    return out


def _add_links(*parts) -> dict:
    out = {}
    for k in parts[0]:
        s = np.stack([p[k] for p in parts])
        out[k] = np.r_[s[:, :5].sum(axis=0), s[:, 5].max()]
    return out


def _link_finish(index: _Index, merged, params) -> Measurement:
    sums = merged[params["rank_scale"]]
    return linkage_measurement(sums[:4], index.n, (float(sums[4]), float(sums[5])),
                               index.n, len(index.points[0]), params)


def _check_parts(name: str, schema, release_meta, where: str) -> None:
    if not schema.numeric:
        raise SdcevalError(f"{name} needs numeric attributes, but the schema gives none "
                           "with role 'numeric'; give the masked columns role 'numeric'")
    lacking = [c for c in schema.numeric if c not in release_meta.columns]
    if lacking:
        raise SdcevalError(f"{name} compares published numbers, but release {where} lacks "
                           f"the numeric column(s) {', '.join(map(repr, lacking))}; give "
                           "a perturbative release of those columns")


#: per-record nearest-neighbour queries against a broadcast index of the whole release:
#: a record's distance, hit and ties depend on the record and the release only, so the
#: sums over records add up over parts; the original's scale comes from value counts
#: merged over parts (`OriginalScale.from_counts`: a value gets exactly its mid-rank)
PARTIAL = PartialForm(
    partial=_link_part, merge=_add_links, finish=_link_finish, prepare=_Index,
    key=lambda params: params["ranks"], reads="numbers", hierarchies=(),
    counts=("numeric",), check=_check_parts,
    fixed={"sample": (0, "the partitioned path links every record; leave sample out "
                         "(or sample=0)")})


@register_measure(
    "linkage_risk", category="risk", direction="higher_is_better", kinds=NUMERIC_KINDS,
    label="record-linkage distance", partial=PARTIAL,
    needs=("numeric",),
    # per record the distance; the fitted scale also divides by the number of
    # attributes, so it is no aggregate of the distances alone (None)
    aggregate=lambda p: None if p["scale"] != "spec" else
    {"log_mean": "log1p_mean"}.get(p["aggregate"], p["aggregate"]),
    params=[
        Param("aggregate", str, DEFAULTS["aggregate"], choices=AGGREGATES,
              description="mean_log1p: mean log(1+d); mean: mean d; log_mean: "
                          "log(1 + mean d)"),
        Param("rank_scale", str, DEFAULTS["rank_scale"], choices=RANK_SCALES,
              description="raw: ranks 1..n; fraction: ranks / n"),
        Param("ranks", str, DEFAULTS["ranks"], choices=RANKS,
              description="original: released values ranked among the original's values "
                          "(SPEC §4: right on tied data); released: each released "
                          "attribute ranked among itself (the reading that reproduces "
                          "Domingo-Ferrer et al.'s Table 1, used by its experiment file)"),
        Param("scale", str, "spec", choices=SCALES,
              description="spec: the aggregate as SPEC §4 defines it (MDAV k=5: 5.84 "
                          "Census, 6.33 EIA); fitted_per_attribute: divided by the number "
                          "of attributes, a scale FITTED to land on the paper's printed "
                          "0.45 / 0.58, not read from its text"),
        SAMPLE_PARAM, SEED_PARAM],
    description="record-linkage risk (Domingo-Ferrer et al. §4): each original record "
                "linked to the nearest released record in Euclidean rank distance, "
                "released values ranked on the original's scale; "
                "value = aggregate of the distances (smaller = more risk)")
def linkage_risk(dataset, release: Release, *, aggregate: str = "mean_log1p",
                 rank_scale: str = "raw", ranks: str = "original", scale: str = "spec",
                 sample: int = SAMPLE, seed: int = 0) -> Measurement:
    """Rank-distance linkage risk ``R(X, Y)`` (see the module notes for the choices).

    Parameters
    ----------
    dataset : Dataset
    release : Release
        A perturbative or external release (numbers in the numeric columns).
    aggregate : {"mean_log1p", "mean", "log_mean"}
    rank_scale : {"raw", "fraction"}
    ranks : {"original", "released"}
        Where released values are ranked (module notes).
    scale : {"spec", "fitted_per_attribute"}
        ``"fitted_per_attribute"`` divides the aggregate by the number of numeric
        attributes ``m``, a scale fitted to the paper's printed levels (module notes).
    sample, seed : int
        Tables of more than ``sample`` records (default 50 000; 0 = never) are linked
        on a simple random sample of ``sample`` records (drawn with ``seed``, the same
        for every release), each against the whole release: the value and the rates
        are then estimates (``details["sample"]``: standard errors, 95 % intervals) and
        ``per_record`` is NaN for the records not linked
        (`sdceval.measures._nearest`).

    Returns
    -------
    Measurement
        ``value`` = the aggregate (smaller = more risk, ``larger_is_worse=False``);
        ``per_record`` = ``d(x, Y)``; ``details``: ``reidentification_rate`` (ties
        shared, ``1/t``), ``reidentification_rate_any``, ``mean_distance``,
        ``permutation_distance_max`` / ``_mean``, ``aggregates`` (all three, same
        scaling as ``value``), ``by_scale`` (the chosen aggregate in every scale),
        ``rank_scale``, ``scale``, ``n_attributes``, and ``readings``: the other
        scalar readings of this release's risk that `compare` reports next to the
        matched value (both re-identification rates and the value in the other scale).
    """
    x, y = numeric_pair(dataset, release, "linkage_risk")
    scale_x = _original_scale(dataset, x)
    if ranks == "original":
        rx, ry = scale_x.ranks, scale_x.rank(y)  # both on the original's scale (SPEC §4)
    else:  # the paper's reading: each released attribute ranked among itself
        rx, ry = scale_x.ranks, rank_matrix(y)
    rows = record_sample(len(x), sample, seed)
    # on raw ranks: exact ties, then rescale
    dist, correct, ties = link(rx if rows is None else rx[rows], ry, rows)
    unit = 1.0 / len(x) if rank_scale == "fraction" else 1.0
    dist = dist * unit
    perm = np.zeros(len(x))
    for j in range(x.shape[1]):   # column by column: no n x m temporary
        np.maximum(perm, np.abs(rx[:, j] - ry[:, j]), out=perm)
    perm *= unit
    params = {"aggregate": aggregate, "rank_scale": rank_scale, "ranks": ranks,
              "scale": scale}
    out = linkage_measurement(link_sums(dist, correct, ties), len(dist),
                              (float(perm.sum()), float(perm.max())), len(x), x.shape[1],
                              params)
    if rows is not None:
        divisor = x.shape[1] if scale == "fitted_per_attribute" else 1
        out.details["sample"] = _sample_details(dist, correct / ties, aggregate, divisor,
                                                len(x), seed)
        out.per_record = np.full(len(x), np.nan)
        out.per_record[rows] = dist
    else:
        out.per_record = dist
    return out


def link_sums(dist: np.ndarray, correct: np.ndarray, ties: np.ndarray) -> np.ndarray:
    """``[Σ log(1 + d), Σ d, Σ correct / ties, Σ correct]`` over linked records: what
    `linkage_measurement` needs, and what parts of a table add up to."""
    return np.array([np.log1p(dist).sum(), dist.sum(), (correct / ties).sum(),
                     float(correct.sum())])


def linkage_measurement(sums: np.ndarray, linked: int, perm: tuple[float, float], n: int,
                        m: int, params: dict) -> Measurement:
    """`linkage_risk`'s value and details from `link_sums` over ``linked`` records and
    the permutation distance's sum and maximum over all ``n`` records (``m``
    attributes; ``params``: aggregate, rank_scale, ranks, scale).  Means are sums
    divided by counts, as ``np.mean`` computes them."""
    s_log, s_dist, s_hit, s_any = (float(v) for v in sums)
    aggregate, scale = params["aggregate"], params["scale"]
    mean_d = s_dist / linked
    raw = {"mean_log1p": s_log / linked, "mean": mean_d, "log_mean": float(np.log1p(mean_d))}
    divisors = {"spec": 1, "fitted_per_attribute": m}
    aggregates = {a: raw[a] / divisors[scale] for a in AGGREGATES}
    by_scale = {s: raw[aggregate] / d for s, d in divisors.items()}
    reid, reid_any = s_hit / linked, s_any / linked
    # label the other-scale value as its measure variant, so a comparison table shows
    # e.g. linkage_risk(scale=fitted_per_attribute) next to the matched spec-scale risk
    fixed = {k: params[k] for k in ("aggregate", "rank_scale", "ranks")
             if params[k] != DEFAULTS[k]}
    readings = {"reidentification_rate": reid, "reidentification_rate_any": reid_any}
    for s, v in by_scale.items():
        if s != scale:
            label = ",".join(f"{k}={val}" for k, val in {**fixed, "scale": s}.items())
            readings[f"linkage_risk({label})"] = v
    details = {
        "reidentification_rate": reid,
        "reidentification_rate_any": reid_any,
        "mean_distance": mean_d,
        "permutation_distance_max": perm[1],
        "permutation_distance_mean": perm[0] / n,
        "aggregates": aggregates,
        "aggregate": aggregate,
        "by_scale": by_scale,
        "rank_scale": params["rank_scale"],
        "ranks": params["ranks"],
        "scale": scale,
        "n_attributes": m,
        "readings": readings,
    }
    return Measurement("linkage_risk", aggregates[aggregate], details=details)
