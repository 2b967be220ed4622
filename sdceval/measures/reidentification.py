"""Re-identification and attribute-inference risk on every kind of release (SPEC §4,
"Risk on every release"; SPEC §5 for whole-file releases): one scale for perturbative,
generalized, bucketized, external and composite releases, so that methods and
strategies of both families can be compared, for one declared intruder.

Long because of these notes: the intruder, the formulas, the decisions SPEC §4 leaves
open and the algorithms take 150 lines, the code about 600; the code is one computation
(the links from records to released rows, which both measures read), whose helpers live
in `sdceval.measures._compatibility` and `sdceval.measures._nearest`.

The intruder
------------
The intruder knows each target record ``x_i``'s values of the columns of ``knows``
(issue 28 item 2: declared once per comparison, the same for every release; default:
every quasi-identifier, every ``numeric``-role attribute and every ``passthrough``
column, as sdcMicro's categorical and numerical key variables plus the kept columns).
The *linkage attributes* are the known columns the release publishes: a published
column the intruder does not know is not used to link, whatever the release publishes;
a known column the release drops constrains nothing.  Only columns of roles ``qi``,
``numeric`` and ``passthrough`` can be known (`known_columns` refuses others, naming
the column: the sensitive attribute is what is to be inferred).  Released row ``j`` is
*compatible* with ``x_i`` when every published cell contains ``x_i``'s value:

* a generalized cell (`Release.cells`, the leaf-code range ``[lo, hi]`` of the row's
  class; a suppressed row is the root and contains everything), on a QI or, in a
  composite release, on a numeric attribute a syntactic step took as an interval QI
  (leaf codes of ``dataset.hierarchy(col)``, like a QI's: `Dataset.codes`);
* a value published exactly (bucketized QIs, passthrough columns, the QI columns of an
  external table) equal to ``x_i``'s — compared on the leaf codes of the column's
  hierarchy, so a numeric QI published exactly is compared by equality too;
* a published ``numeric``-role value (not a cell) is always compatible; it contributes
  distance.

Among the compatible rows, ``d(x_i, y_j) = sqrt(Σ_a ((x_ia − y_ja) / σ_a)²)`` over the
published numeric-role attributes, ``σ_a`` the original's standard deviation (population;
1 for a constant column); cells contribute 0.  ``C_i`` is the set of compatible rows at
the minimal distance (ties: ``d <= (1 + 1e-12) · min``).  The intruder picks row ``j``
of ``C_i`` with probability ``w_j / W_i``, ``W_i = Σ_{j ∈ C_i} w_j``: ``w_j = 1/m_j``,
``m_j`` the number of original records compatible with row ``j`` (``intruder=
"weighted"``, the default: see the decisions), or ``w_j = 1`` (``"uniform"``, SPEC §4 as
written: ``W_i = |C_i|``).  Row ``i`` is record ``i``'s release, so

    reidentification_i   = 1[i ∈ C_i] · w_i / W_i
    attribute_inference_i = Σ_{j ∈ C_i} w_j P_j(s_i) / W_i  −  Q(s_i)

``P_j(s)``: the probability that the sensitive value read from row ``j`` matches ``s`` —
``1[s_j ≈ s]`` for a row publishing its own value (generalized, external, composite),
the share of values ``≈ s`` in ``j``'s bucket for a release whose sensitive values are
permuted within buckets (`Release.sensitive_in_buckets`: bucketized, or a composite
release with a bucketization step).  ``≈`` is equality for a categorical sensitive
attribute and ``v_s − w <= v <= v_s + w``, ``w = tol · (max − min of the original's
values)``, for a numeric one.  ``Q(s)`` is the share of original records ``≈ s``: the
guess an intruder makes without the release.  Values are the means over records; larger
= more risk.

What a value means to a data controller: ``reidentification`` is the expected share of
records an intruder re-identifies picking among the nearest released records
(about 1/k for MDAV and k-anonymous generalization, 1 for a copy and for QI-unique
records under bucketization, which protects attributes, not identity);
``attribute_inference`` is how much more often the intruder guesses a record's sensitive
value from the release than from the table's overall distribution (0: no gain).

Decisions (SPEC §4 leaves these open)
-------------------------------------
* Passthrough columns are linkage attributes by default: they are published in clear,
  and a column kept on request (``--keep``) may well be a quasi-identifier the intruder
  knows (a household id beside Mondrian k=5 re-identifies most records); a column
  published exactly as in the original links perfectly.  ``kept=False`` takes them out
  of the intruder's knowledge, declared or default (the figure without them, which
  ``sdceval anonymize`` prints beside it in a warning).  A ``knows`` that leaves a kept
  column out is the user's declaration and is honoured here, but the kept-column
  warning (`sdceval.measures._kept_keys.kept_risk`) measures the declared intruder
  *plus* the kept columns against it *less* them, so a declaration cannot silence it.
* Mixed releases (a whole-file strategy's, or a table of both cells and numbers): the
  rule above holds as it stands.  Cells decide which rows a record may be (several
  groups of cells when cells overlap or rows are suppressed), the published numbers
  which of those are nearest: ``C_i`` is the set of compatible rows at the minimal
  distance *over all* the record's compatible groups (a record whose own class is
  farther than a suppressed row's published numbers picks the suppressed row), and
  ``m_j`` counts the records compatible with row ``j``'s cells (its numbers constrain
  nothing: every record is compatible with a number).  Cells on a numeric attribute
  (an interval QI) replace its number: it is compared as a cell, never by distance.
* External tables promise nothing: numeric-role columns are compared by distance, QI and
  passthrough columns by equality of the value; a value outside the original's domain
  (e.g. a generalized label ``[20-29]`` in a table not read with
  `sdceval.core.release_io.read_release`, which recovers cells) matches no record.  A
  record with no compatible row (only possible then) scores 0 in both measures.
* A release that does not publish the sensitive attribute (perturbative releases drop
  it) teaches the intruder nothing: ``attribute_inference`` is 0 for every record.
* The weighting intruder (``intruder="weighted"``, the default) is a decision of ours,
  not in SPEC §4, which reads "picking uniformly among the nearest" (kept as
  ``intruder="uniform"``).  A suppressed row (``*`` everywhere) is compatible with every
  record, so under the uniform pick ``r`` suppressed rows join every ``C_i`` and cap
  every record's re-identification at ``1/r``: on 5 000 records (the benchmark's mixed
  data), full-domain generalization k=2 with 1 % suppression (41 rows suppressed)
  scores 0.0195 while MDAV k=5 scores 0.17, so ``sdceval compare`` matched
  generalization at a far too "safe" point.  SPEC's intruder knows the linkage
  attributes of every record, hence which records each row could be: row ``j`` is one
  of the ``m_j`` records compatible with it, uniformly, so the chance that it is the
  target's is ``1/m_j``, and the pick weighs it so.  A record of a class of 2 (both
  rows with ``m_j = 2``) then scores ``(1/2) / (1 + 41/5000) = 0.496`` instead of
  ``1/43 = 0.023``; in general a non-suppressed record of a class of size ``k`` gets
  ``(1/k) / (1 + r/n)`` instead of ``1/(k + r)``, and the release above scores 0.114.
  A suppressed record's own row weighs ``1/n`` (its ``C_i``, here the ``r`` suppressed
  rows, gives ``1/r``).  Wherever cells do not overlap, the two intruders agree: when
  cells partition the records (full-domain generalization without suppression,
  Mondrian, bucketization's exact QIs) every row of ``C_i`` has the same ``m_j``; for
  numeric values every row fits all ``n`` records, or the records of its cells' part
  when cells partition the records (recoding without suppression beside MDAV; the only
  rows in ``C_i``).  ``attribute_inference`` reads the sensitive value from the same
  weighted pick (suppressed rows' published values count with weight ``1/n``).

Algorithms (never an n × n matrix)
----------------------------------
*Cells only* (generalized, bucketized, composite releases without numbers, external
tables of values): released rows are grouped by their cells (G groups: a generalized
release's classes, a bucketized release's distinct QI vectors), records by their
distinct code vectors (U).  The
compatible (vector, group) pairs come from a fast path when, on every attribute, the
cells that are not the root are equal or disjoint (full-domain generalization,
bucketization, suppression): each vector then meets at most one group per pattern of
root cells, found by a sorted look-up in O(U·d·log G).  Otherwise (Mondrian, whose boxes
are disjoint although their ranges overlap attribute by attribute, or any release) a
general test: per attribute and distinct code, the groups whose cell contains it as a
bitset (64 groups a word, built by an XOR prefix scan over cell ends), ANDed over the
attributes: O(U·G·d/64) time, memory bounded by blocks of groups and chunks of vectors.
The weighting intruder's ``m_g`` reads the same pairs backwards (the transpose of the
vector → group compatibility): ``m_g = Σ`` of the record counts of the vectors
compatible with group ``g`` (`sdceval.measures._compatibility`, which holds this
machinery; the bitset test's pairs are kept for the second reading when they fit).
*Numeric values* (perturbative, external, composite; one implementation for all):
released rows are grouped by their cells as above (exactly-published values are cells
``lo = hi``, so a perturbative release with kept columns has one group per value and a
record meets one group), and the compatible (record, group) pairs are the (vector,
group) pairs expanded to the records of each vector.  Identical released rows of a
group are one point with a multiplicity (MDAV publishes k duplicates; a bucketized
composite splits them by bucket).  Within each group, a KD-tree
(`sdceval.measures._nearest.NearestIndex`, ``workers`` = the thread budget, queried in
space order) gives each paired record's two nearest points, and lists the points within
the tie radius only where the second is within it; groups of at most `SMALL` points are
searched by a vectorized brute force in chunks.  A record paired with several groups
(suppressed rows, overlapping cells) keeps the points at the minimal distance over all
of them.  ``m_j`` is read from the pairs as for cells.  The cost grows with the
(record, group) pairs times the group sizes: about n to 2n pairs for recoding or
Mondrian with suppressed rows (0.2 s on 100 000 records), tens of pairs per record for
cells overlapping at random (10 s).  Sums over ``C_i`` (weights, sensitive matches) are
range counts in sorted ``(source, code)`` keys.
Above ``sample`` records (default 50 000), a release with published numeric values is
linked on a random sample of the records, each against every released row, and the
value is the sample's estimate with its standard error (`sdceval.measures._nearest`:
exact nearest-neighbour search grows like ``n^1.5`` and more on data of many
dimensions); cells are linked exactly at any size.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from sdceval.core.errors import SdcevalError, suggest
from sdceval.core.measurement import Measurement
# ColumnNames lives in the core since the methods use it too; re-exported here
from sdceval.core.params import ColumnNames  # noqa: F401
from sdceval.core.registry import Param, register_measure
from sdceval.core.release import ALIGNED_KINDS as KINDS, Release
from sdceval.measures._compatibility import CHUNK, Pairs, row_weights
from sdceval.core.combos import combine as _combine
from sdceval.measures._compatibility import batches as _batches
from sdceval.measures._compatibility import expand as _expand, first as _first
from sdceval.measures._nearest import (SAMPLE, SAMPLE_PARAM, SEED_PARAM, NearestIndex,
                                       record_sample, sample_summary)

TIE = 1e-12       # relative tolerance of "at the minimal distance"
SMALL = 64        # equality groups with at most this many distinct points: brute force
INTRUDERS = ("weighted", "uniform")


# -- what the intruder links on ------------------------------------------------------
@dataclass
class Linkage:
    """The published linkage attributes of a release, row-aligned with the data set.

    ``how``: attribute -> ``"cell"``, ``"equal"`` or ``"distance"``; ``lo``/``hi``
    (n, d): released leaf-code range of each cell attribute (``lo == hi`` for exact
    values, ``-1`` for a value outside the original's domain); ``x`` (n, d) the
    original codes; ``m`` (d,) leaves per attribute; ``xs``/``ys`` (n, p) the
    standardized original and released numeric-role values, or None."""

    how: dict
    lo: np.ndarray
    hi: np.ndarray
    x: np.ndarray
    m: np.ndarray
    xs: np.ndarray | None = None
    ys: np.ndarray | None = None


def encode(hierarchy, values) -> np.ndarray:
    """Leaf codes of published values, ``-1`` for a value that is no leaf (never equal
    to an original value); like `Hierarchy.encode` but without raising."""
    s = pd.Series(values).reset_index(drop=True)
    if hierarchy.numeric:
        num = pd.to_numeric(s, errors="coerce").to_numpy(np.float64)
        pos = np.searchsorted(hierarchy.leaf_values, num).clip(0, hierarchy.n_leaves - 1)
        return np.where(hierarchy.leaf_values[pos] == num, pos, -1).astype(np.int64)
    inv, uniq = pd.factorize(s, use_na_sentinel=False)
    index = {str(v): i for i, v in enumerate(hierarchy.leaves)}
    return np.array([index.get(str(u), -1) for u in uniq], dtype=np.int64)[inv]


def _standardize(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(x − μ)/σ`` and ``(y − μ)/σ`` with the original's mean and standard deviation,
    computed after dividing by the largest magnitude, so that values near the float64
    limits neither overflow nor underflow; σ = 1 for a constant column.  Column by
    column, so that the temporaries are of one column, not of the table."""
    xs = np.empty(x.shape, dtype=np.float64)
    ys = np.empty(y.shape, dtype=np.float64)
    for j in range(x.shape[1]):
        top = np.abs(x[:, j]).max() if len(x) else 0.0
        if top == 0 or not np.isfinite(top):
            top = 1.0
        xn = x[:, j] / top
        mu, sd = xn.mean(), xn.std()
        if sd == 0 or not np.isfinite(sd):
            sd = 1.0
        xs[:, j] = (xn - mu) / sd
        ys[:, j] = (y[:, j] / top - mu) / sd
    return xs, ys


#: roles of the columns an intruder can know (module notes)
KNOWABLE_ROLES = ("qi", "numeric", "passthrough")
#: why a column of another role is not (for the error)
_UNKNOWABLE = {"sensitive": "the attribute the attacks infer",
               "label": "the class label, which no release publishes unless kept",
               "identifier": "a direct identifier, never published",
               "ignore": "a column the schema leaves out"}


def known_columns(dataset, knows=(), kept: bool = True, who: str = "the intruder"
                  ) -> list:
    """The columns the intruder knows (module notes): ``knows``, checked against the
    data set, or by default every QI, numeric-role and passthrough column; ``kept=False``
    takes the passthrough columns out of either."""
    s = dataset.schema
    knowable = [c for c in dataset.frame.columns
                if c in s and s[c].role in KNOWABLE_ROLES]
    if not knows:
        known = knowable
    else:
        known = list(knows)
        for c in known:
            if c not in s:
                raise SdcevalError(
                    f"{who}: knows names column {c!r}, which data set {dataset.name!r} "
                    f"does not have.{suggest(c, knowable)} The intruder can know: "
                    f"{', '.join(map(repr, knowable)) or 'no column'}")
            if s[c].role not in KNOWABLE_ROLES:
                raise SdcevalError(
                    f"{who}: knows names column {c!r} of role {s[c].role!r} "
                    f"({_UNKNOWABLE.get(s[c].role, 'not a key')}), which is not linked "
                    "on; name only quasi-identifiers, numeric attributes and kept "
                    f"(passthrough) columns ({', '.join(map(repr, knowable))}), or give "
                    f"{c!r} role 'qi'")
    return [c for c in known if kept or s[c].role != "passthrough"]


def linkage_attributes(dataset, release: Release, kept: bool = True, knows=(),
                       who: str = "the intruder") -> Linkage:
    """The linkage attributes ``release`` publishes among the columns the intruder
    knows (`known_columns`: ``knows``, by default every QI, numeric-role and kept
    column; module notes) and how each is compared: ``"cell"`` (a generalized cell, on
    a QI or, in a composite release, on a numeric attribute), ``"equal"`` (an exact
    value) or ``"distance"`` (a published numeric-role value).  ``kept=False``: none of
    the passthrough columns (`sdceval.measures._kept_keys`)."""
    schema, data = dataset.schema, release.data
    known = set(known_columns(dataset, knows, kept, who))
    cells = release.cells or {}
    how, lo, hi, x, m = {}, [], [], [], []

    def add(col, a, b, kind):
        how[col] = kind
        lo.append(a)
        hi.append(b)
        x.append(dataset.codes(col))
        m.append(dataset.hierarchy(col).n_leaves)

    for c in schema.qis + schema.numeric + schema.passthrough:
        if c not in known:
            continue
        if c in cells:
            a, b = cells[c]
            add(c, a, b, "equal" if np.array_equal(a, b) else "cell")
        elif c in data.columns and c not in schema.numeric:
            code = encode(dataset.hierarchy(c), data[c])
            add(c, code, code, "equal")
    n = dataset.n
    mat = (lambda parts: np.stack(parts, axis=1).astype(np.int64) if parts
           else np.zeros((n, 0), dtype=np.int64))
    out = Linkage(how, mat(lo), mat(hi), mat(x), np.array(m, dtype=np.int64))
    num = [c for c in schema.numeric if c in known and c in data.columns and c not in cells]
    if num:
        cols = [schema.numeric.index(c) for c in num]
        out.xs, out.ys = _standardize(dataset.numeric_matrix()[:, cols],
                                      release.numeric_matrix(num))
        how.update({c: "distance" for c in num})
    return out


# -- the sensitive attribute -----------------------------------------------------------
@dataclass
class Sensitive:
    """What the intruder reads about the sensitive attribute.

    ``s``: original codes per record; ``released``: released codes per row (``-1``: no
    value of the domain); ``bucket``: bucket per row for a bucketized release (the row
    publishes its bucket's distribution) else None; ``wlo``/``whi``: per code, the codes
    that match it (``≈``); ``base``: ``Q(s_i)`` per record."""

    m: int
    s: np.ndarray
    released: np.ndarray
    bucket: np.ndarray | None
    wlo: np.ndarray
    whi: np.ndarray
    base: np.ndarray
    numeric: bool


def released_sensitive(dataset, release: Release) -> np.ndarray | None:
    """Released sensitive codes per row, or None when the release does not publish the
    sensitive attribute."""
    col = dataset.schema.sensitive
    if release.kind in ("generalized", "bucketized", "composite") and (
            release.sensitive_codes is not None or col in release.data.columns):
        return np.asarray(release.sensitive(dataset), dtype=np.int64)
    if release.kind == "external" and col in release.data.columns:
        return encode(dataset.hierarchy(col), release.data[col])
    return None


def sensitive_view(dataset, release: Release, tol: float) -> Sensitive | None:
    released = released_sensitive(dataset, release)
    if released is None:
        return None
    col = dataset.schema.sensitive
    h = dataset.hierarchy(col)
    s = np.asarray(dataset.codes(col), dtype=np.int64)
    m = h.n_leaves
    if h.numeric:
        lv = h.leaf_values
        w = tol * float(lv[s].max() - lv[s].min())
        wlo = np.searchsorted(lv, lv - w, side="left")
        whi = np.searchsorted(lv, lv + w, side="right") - 1
    else:
        wlo = whi = np.arange(m)
    cum = np.r_[0, np.cumsum(np.bincount(s, minlength=m))]
    base = ((cum[whi + 1] - cum[wlo]) / dataset.n)[s]
    bucket = release.class_index()[0] if release.sensitive_in_buckets else None
    return Sensitive(m, s, released, bucket, wlo, whi, base, bool(h.numeric))


# -- sums over C_i ----------------------------------------------------------------------
@dataclass
class _Sums:
    """Accumulates, over batches of (owner, group) pairs meaning "group ⊆ C of owner",
    ``count[owner] = Σ |group|``, ``size[owner] = Σ_j w_j`` (``w_j`` = ``gw`` of row
    j's group: 1, or the weighting intruder's ``1/m_j``) and, for inference,
    ``T[key] = Σ_j w_j P_j(s_key)`` where a key is an (owner, sensitive code) pair.
    A group's rows are split into *units* of one sensitive source each: the unit
    itself for rows publishing their own value (range counts of its codes), a bucket
    otherwise (weight |unit| / |bucket|)."""

    gsize: np.ndarray
    gw: np.ndarray
    count: np.ndarray
    size: np.ndarray
    keys: tuple | None = None     # key_start, key_count (per owner), key_s (per key)
    units: tuple | None = None    # unit_start, unit_count (per group), src, weight
    sorted_keys: np.ndarray | None = None
    sens: Sensitive | None = None
    T: np.ndarray | None = None

    def add(self, owner: np.ndarray, group: np.ndarray) -> None:
        self.count += np.bincount(owner, weights=self.gsize[group],
                                  minlength=len(self.count))
        self.size += np.bincount(owner, weights=self.gsize[group] * self.gw[group],
                                 minlength=len(self.size))
        if self.sens is None:
            return
        key_start, key_count, key_s = self.keys
        unit_start, unit_count, src, weight = self.units
        sens, m = self.sens, self.sens.m
        for sl in _batches(key_count[owner] * unit_count[group]):
            o, g = owner[sl], group[sl]
            p, k = _expand(key_start[o], key_count[o])
            q, v = _expand(unit_start[g[p]], unit_count[g[p]])
            k, code = k[q], key_s[k[q]]
            first = src[v] * m
            hits = (np.searchsorted(self.sorted_keys, first + sens.whi[code], side="right")
                    - np.searchsorted(self.sorted_keys, first + sens.wlo[code], side="left"))
            self.T += np.bincount(k, weights=weight[v] * hits * self.gw[g[p[q]]],
                                  minlength=len(self.T))


def _source_keys(src_of_row: np.ndarray, sens: Sensitive) -> np.ndarray:
    ok = sens.released >= 0   # a value outside the domain matches nothing
    return np.sort(src_of_row[ok] * sens.m + sens.released[ok])


@dataclass
class Links:
    """Per record: ``count`` = ``|C_i|``; ``size`` = ``Σ_{j∈C_i} w_j``; ``own`` =
    ``i ∈ C_i``; ``own_weight`` = ``w_i`` if ``i ∈ C_i`` else 0; ``T`` =
    ``Σ_{j∈C_i} w_j P_j(s_i)`` (None without a sensitive view); ``w_j`` = 1 for the
    uniform intruder, ``1/m_j`` for the weighting one; ``info``: details; ``rows``: the
    records linked when they are a sample (the others have ``count`` 0), else None."""

    count: np.ndarray
    size: np.ndarray
    own: np.ndarray
    own_weight: np.ndarray
    T: np.ndarray | None
    info: dict
    rows: np.ndarray | None = None

    @property
    def linked(self):
        """Index of the records linked: all of them, or the sample."""
        return slice(None) if self.rows is None else self.rows


def _cell_groups(L: Linkage, n: int, weighted: bool):
    """Released rows grouped by their cells (``gid``, ``G``), records by their code
    vectors (``uid``, ``U``), the compatible (vector, group) `Pairs` and each group's
    weight ``1/m_g`` (1 for the uniform intruder): the first step of both searches."""
    gid, G = _combine(list(L.lo.T) + list(L.hi.T), n)
    rep = _first(gid, G)
    uid, U = _combine(list(L.x.T), n)
    pairs = Pairs(L.x[_first(uid, U)], L.lo[rep], L.hi[rep], L.m, chunk=CHUNK)
    # m_g: the records each group's rows could be (the pairs read backwards)
    gw = (row_weights(pairs.record_counts(np.bincount(uid, minlength=U), G)) if weighted
          else np.ones(G))
    return gid, G, uid, U, pairs, gw


def _cell_links(L: Linkage, sens: Sensitive | None, n: int, weighted: bool):
    gid, G, uid, U, pairs, gw = _cell_groups(L, n, weighted)
    # row i is compatible with record i when its own cells hold the record's codes
    own = ((L.lo <= L.x) & (L.x <= L.hi)).all(axis=1)
    sums = _Sums(np.bincount(gid, minlength=G).astype(np.float64), gw, np.zeros(U),
                 np.zeros(U))
    if sens is not None:
        kcode, kid = np.unique(uid * sens.m + sens.s, return_inverse=True)
        ku = kcode // sens.m
        sums.keys = (np.searchsorted(ku, np.arange(U)), np.bincount(ku, minlength=U),
                     kcode % sens.m)
        sums.sens, sums.T = sens, np.zeros(len(kcode))
        if sens.bucket is None:   # units = groups, rows read their own values
            sums.units = (np.arange(G), np.ones(G, dtype=np.int64), np.arange(G),
                          np.ones(G))
            sums.sorted_keys = _source_keys(gid, sens)
        else:                     # units = (group, bucket): rows read their bucket
            B = int(sens.bucket.max()) + 1
            ucode, usize = np.unique(gid * B + sens.bucket, return_counts=True)
            ug, ub = ucode // B, ucode % B
            sums.units = (np.searchsorted(ug, np.arange(G)), np.bincount(ug, minlength=G),
                          ub, usize / np.bincount(sens.bucket)[ub])
            sums.sorted_keys = _source_keys(sens.bucket, sens)
    for owner, group in pairs:
        sums.add(owner, group)
    return Links(sums.count[uid], sums.size[uid], own, np.where(own, gw[gid], 0.0),
                 None if sens is None else sums.T[kid],
                 {"compatibility": pairs.how, "groups": G, "distinct_vectors": U})


# -- numeric values --------------------------------------------------------------------
def _tree_links(points: np.ndarray, ids: np.ndarray, q: np.ndarray):
    """(query index, unit id) of the points at the minimal distance from each query."""
    dist, nearest, tied, hits = NearestIndex(points).nearest_ties(
        q, lambda d: d * (1 + TIE))
    one = np.ones(len(q), dtype=bool)
    one[tied] = False
    rows, units = [np.flatnonzero(one)], [ids[nearest[one]]]
    if len(tied):   # distinct points at the same distance: rare
        rows.append(np.repeat(tied, np.fromiter(map(len, hits), np.int64, len(hits))))
        units.append(ids[np.concatenate(hits)])
    return np.concatenate(rows), np.concatenate(units)


def _brute_links(xs, recs, starts, counts, order, points):
    """The same for records of small groups: every (record, unit of its group) pair,
    in chunks; ``starts``/``counts`` locate each record's units in ``order``."""
    for sl in _batches(counts):
        owner, flat = _expand(starts[sl], counts[sl])
        v = order[flat]
        diff = xs[recs[sl]][owner] - points[v]
        dist = np.sqrt(np.einsum("ij,ij->i", diff, diff))
        dmin = np.minimum.reduceat(dist, np.r_[0, np.cumsum(counts[sl])[:-1]])
        near = dist <= dmin[owner] * (1 + TIE)
        yield recs[sl][owner[near]], v[near]


def _distance_links(L: Linkage, sens: Sensitive | None, n: int, weighted: bool,
                    rows: np.ndarray | None = None):
    """Links where published numeric values are compared by distance (module notes,
    "Algorithms"): the compatible (record, cell group) pairs, then the nearest points
    of each pair's group, then the minimum over each record's groups."""
    # groups of rows with equal cells, the (vector, group) compatibility and 1/m_g as
    # for cells only (exactly-published values are cells lo = hi: one group per vector)
    gid, G, uid, U, pairs, group_w = _cell_groups(L, n, weighted)
    # units: distinct (group, bucket, released point), with their multiplicity
    bucket = None if sens is None else sens.bucket
    vid, V = _combine([gid] + ([] if bucket is None else [bucket]) + list(L.ys.T), n)
    rep = _first(vid, V)
    points, vg = L.ys[rep], gid[rep]
    order = np.argsort(vg, kind="stable")
    vstart = np.searchsorted(vg[order], np.arange(G))
    vcount = np.bincount(vg, minlength=G)
    # (record, group) pairs of the records linked, grouped by group
    linked = np.arange(n) if rows is None else rows
    rorder = linked[np.argsort(uid[linked], kind="stable")]
    rcount = np.bincount(uid[linked], minlength=U)
    rstart = np.r_[0, np.cumsum(rcount)[:-1]]
    recs, grps = [], []
    for owner, group in pairs:
        for sl in _batches(rcount[owner]):
            p, idx = _expand(rstart[owner[sl]], rcount[owner[sl]])
            recs.append(rorder[idx])
            grps.append(group[sl][p])
    rec = np.concatenate(recs) if recs else np.zeros(0, np.int64)
    grp = np.concatenate(grps) if grps else np.zeros(0, np.int64)
    srt = np.argsort(grp, kind="stable")
    rec, grp = rec[srt], grp[srt]
    found = []
    big = vcount[grp] > SMALL
    if big.any():
        rb, gb = rec[big], grp[big]
        cuts = np.flatnonzero(np.r_[True, gb[1:] != gb[:-1], True])
        for a, b in zip(cuts[:-1], cuts[1:]):   # one KD-tree per large group
            ids = order[vstart[gb[a]]:vstart[gb[a]] + vcount[gb[a]]]
            qi, units = _tree_links(points[ids], ids, L.xs[rb[a:b]])
            found.append((rb[a:b][qi], units))
    small = ~big
    found.extend(_brute_links(L.xs, rec[small], vstart[grp[small]], vcount[grp[small]],
                              order, points))
    rec_f = np.concatenate([f[0] for f in found]) if found else np.zeros(0, np.int64)
    unit = np.concatenate([f[1] for f in found]) if found else np.zeros(0, np.int64)
    if len(rec) > len(np.unique(rec)):
        # a record compatible with several groups (suppressed rows, overlapping cells):
        # C_i is at the minimal distance over all of them
        dist = np.empty(len(rec_f))
        for sl in _batches(np.full(len(rec_f), max(1, L.xs.shape[1]), dtype=np.int64)):
            diff = L.xs[rec_f[sl]] - points[unit[sl]]
            dist[sl] = np.sqrt(np.einsum("ij,ij->i", diff, diff))
        dmin = np.full(n, np.inf)
        np.minimum.at(dmin, rec_f, dist)
        keep = dist <= dmin[rec_f] * (1 + TIE)
        rec_f, unit = rec_f[keep], unit[keep]
    own = np.zeros(n, dtype=bool)
    own[rec_f[unit == vid[rec_f]]] = True
    # w_j: 1/m_j, m_j the original records compatible with the row's cells
    gw = group_w[vg]
    gsize = np.bincount(vid, minlength=V).astype(np.float64)
    sums = _Sums(gsize, gw, np.zeros(n), np.zeros(n))
    if sens is not None:   # owners are the records; units are the distinct points
        sums.keys = (np.arange(n), np.ones(n, dtype=np.int64), sens.s)
        if bucket is None:   # rows read their own values
            sums.units = (np.arange(V), np.ones(V, dtype=np.int64), np.arange(V),
                          np.ones(V))
            sums.sorted_keys = _source_keys(vid, sens)
        else:                # rows read their bucket: a unit lies in one bucket
            ub = bucket[rep]
            sums.units = (np.arange(V), np.ones(V, dtype=np.int64), ub,
                          gsize / np.bincount(bucket)[ub])
            sums.sorted_keys = _source_keys(bucket, sens)
        sums.sens, sums.T = sens, np.zeros(n)
    for sl in _batches(np.ones(len(rec_f), dtype=np.int64)):
        sums.add(rec_f[sl], unit[sl])
    cells = L.lo.shape[1]
    return Links(sums.count, sums.size, own, np.where(own, gw[vid], 0.0), sums.T,
                 {"compatibility": "KD-tree" + (f" per group of cells ({pairs.how})"
                                                if cells else ""),
                  "groups": G, "distinct_points": V})


def _check_intruder(intruder: str) -> None:
    if intruder not in INTRUDERS:
        raise SdcevalError(f"intruder must be one of {', '.join(INTRUDERS)}, "
                           f"not {intruder!r}")


def links(dataset, release: Release, sens: Sensitive | None = None,
          intruder: str = "weighted", sample: int = 0, seed: int = 0, kept: bool = True,
          knows=(), who: str = "the intruder") -> Links:
    """The sums over every record's ``C_i`` for the given intruder (module notes).

    Where published numeric values make it a nearest-neighbour search, a table of more
    than ``sample`` records (``sample`` > 0) is linked on a random sample of them
    (`sdceval.measures._nearest.record_sample`); cells are always linked exactly.
    ``knows``/``kept``: the intruder's knowledge (`known_columns`)."""
    _check_intruder(intruder)
    L = linkage_attributes(dataset, release, kept, knows, who)
    if L.xs is None:
        out = _cell_links(L, sens, dataset.n, intruder == "weighted")
    else:
        rows = record_sample(dataset.n, sample, seed)
        out = _distance_links(L, sens, dataset.n, intruder == "weighted", rows)
        out.rows = rows
    out.info = {"linkage_attributes": L.how, "intruder": intruder,
                "knows": known_columns(dataset, knows, kept, who), **out.info}
    return out


def _estimate(name: str, per: np.ndarray, rows: np.ndarray | None, n: int, seed: int,
              details: dict) -> Measurement:
    """The measurement from per-record values: their mean over every record, or, on a
    sample of records, its estimate (``details["sample"]``) with NaN for the others."""
    if rows is None:
        return Measurement(name, float(per.mean()), per, details=details)
    est = sample_summary(per[rows], n)
    details["sample"] = {**{k: est[k] for k in ("sampled_records", "records",
                                                "standard_error", "ci95")}, "seed": seed}
    full = np.full(n, np.nan)
    full[rows] = per[rows]
    return Measurement(name, est["estimate"], full, details=details)


# -- the measures ------------------------------------------------------------------------
INTRUDER = Param(
    "intruder", str, "weighted", choices=INTRUDERS,
    description="weighted: a compatible row j is picked with weight 1/m_j, m_j the "
                "original records it fits (default; our decision, module notes); "
                "uniform: every row of C_i equally likely (SPEC §4 as written)")
KNOWS = Param(
    "knows", ColumnNames(), (),
    description="the columns the intruder knows, the same for every release compared "
                "(comma-separated, or joined by + in a measure list: knows=age+zip); "
                "exactly these link; default: every quasi-identifier, numeric attribute "
                "and kept column")
KEPT = Param(
    "kept", bool, True,
    description="the columns published unchanged (--keep, role passthrough) are in the "
                "intruder's knowledge and link by equality (default: an exact column links "
                "perfectly); false: measure without them, for the figure they add")


@register_measure(
    "reidentification", category="risk", direction="lower_is_better", kinds=KINDS, attack=True,
    aggregate="mean",
    label="re-identification rate", unit="share of records",
    params=[INTRUDER, KNOWS, KEPT, SAMPLE_PARAM, SEED_PARAM],
    description="re-identification on every release (SPEC §4): per record the probability "
                "that an intruder picking among C_i, the compatible released records "
                "nearest to it on the published linkage attributes (row j weighted by "
                "1/m_j, m_j the records it fits; intruder=uniform: 1/|C_i|), picks its "
                "own; value = expected share of records re-identified")
def reidentification(dataset, release: Release, *, intruder: str = "weighted",
                     knows=(), kept: bool = True, sample: int = SAMPLE, seed: int = 0
                     ) -> Measurement:
    """Re-identification risk ``mean_i 1[i ∈ C_i] w_i / Σ_{j∈C_i} w_j`` (SPEC §4,
    module notes): ``w_j = 1/m_j`` (``intruder="weighted"``, the default: ``m_j`` the
    original records compatible with row ``j``) or 1 (``"uniform"``: ``1/|C_i|``,
    SPEC §4 as written).  The two agree wherever released cells do not overlap.
    ``knows``: the columns the intruder knows (`known_columns`; default every QI,
    numeric attribute and kept column): exactly those link.  ``kept=False`` leaves the
    passthrough columns out of the intruder's knowledge (the figure without them,
    `sdceval.measures._kept_keys`).

    The value is the expected share of records an intruder re-identifies picking among
    the released records nearest to each target (about 1/k for MDAV and k-anonymous
    generalization; 1 for a copy and for QI-unique records under bucketization).
    ``per_record`` is each record's probability of being picked.

    Returns
    -------
    Measurement
        ``details``: ``intruder``, ``unique_reidentifications`` (share with
        ``C_i = {i}``), ``reidentified_any`` (share with ``i ∈ C_i``),
        ``mean_candidates`` (mean ``|C_i|``), ``no_candidates`` (records with no
        compatible row), ``knows`` (the columns the intruder knows),
        ``linkage_attributes`` (how each of them the release publishes is compared),
        ``compatibility`` (the algorithm used) and sizes; on a sample of
        records (``sample``: published numeric values, more than ``sample`` records)
        these are over the sample, ``sample`` gives the value's standard error and
        95 % interval, and ``per_record`` is NaN for the records not linked.
    """
    lk = links(dataset, release, intruder=intruder, sample=sample, seed=seed, kept=kept,
               knows=knows, who="reidentification")
    per = np.divide(lk.own_weight, lk.size, out=np.zeros(dataset.n), where=lk.own)
    own, count = lk.own[lk.linked], lk.count[lk.linked]
    details = {"unique_reidentifications": float(np.mean(own & (count == 1))),
               "reidentified_any": float(np.mean(own)),
               "mean_candidates": float(np.mean(count)),
               "no_candidates": int(np.sum(count == 0)), **lk.info}
    return _estimate("reidentification", per, lk.rows, dataset.n, seed, details)


@register_measure(
    "attribute_inference", category="risk", direction="lower_is_better", kinds=KINDS, attack=True,
    aggregate="mean",
    label="attribute inference rate", unit="share of records",
    needs=("sensitive",),
    params=[Param("tol", float, 0.05, low=0.0, high=1.0, unit="fraction of the range",
                  description="a numeric sensitive value matches within tol x the "
                              "original's range (max - min)"),
            INTRUDER, KNOWS, KEPT, SAMPLE_PARAM, SEED_PARAM],
    description="attribute inference on every release (SPEC §4): per record P(the "
                "sensitive value read from a pick among the nearest compatible released "
                "records, weighted as in reidentification, matches) minus its share in "
                "the table; value = mean gain")
def attribute_inference(dataset, release: Release, *, tol: float = 0.05,
                        intruder: str = "weighted", knows=(), kept: bool = True,
                        sample: int = SAMPLE, seed: int = 0) -> Measurement:
    """Attribute-inference gain ``mean_i [Σ_{j∈C_i} w_j P_j(s_i) / Σ_{j∈C_i} w_j −
    Q(s_i)]`` (SPEC §4, module notes), ``w_j`` as in `reidentification` (``1/m_j`` by
    default, 1 for ``intruder="uniform"``: SPEC's uniform pick).

    The value is how much more often an intruder guesses a record's sensitive value by
    reading it from a pick among the released records nearest to the record than by
    guessing from the table's overall distribution (0: the release teaches nothing;
    negative: worse than the table's distribution).  A bucketized row gives its
    bucket's distribution; a numeric value matches within ``tol`` × the original's
    range.  A release that does not publish the sensitive attribute gives 0.
    ``knows``/``kept``: the intruder's knowledge, as in `reidentification`.

    Returns
    -------
    Measurement
        ``details``: ``sensitive_published``, ``mean_posterior`` (mean probability of a
        match from the release), ``mean_baseline`` (mean ``Q(s_i)``), ``tol``,
        ``intruder``, ``numeric_sensitive``, ``knows``, ``linkage_attributes``,
        ``compatibility``.
    """
    _check_intruder(intruder)
    known = known_columns(dataset, knows, kept, "attribute_inference")  # checked first
    sens = sensitive_view(dataset, release, tol)
    if sens is None:
        per = np.zeros(dataset.n)
        return Measurement("attribute_inference", 0.0, per, details={
            "sensitive_published": False, "tol": tol, "intruder": intruder, "knows": known,
            "note": "the release does not publish the sensitive attribute: the intruder "
                    "learns nothing from it (0 for every record)"})
    lk = links(dataset, release, sens, intruder=intruder, sample=sample, seed=seed,
               kept=kept, knows=knows, who="attribute_inference")
    posterior = np.divide(lk.T, lk.size, out=sens.base.astype(np.float64).copy(),
                          where=lk.count > 0)
    per = posterior - sens.base
    details = {"sensitive_published": True,
               "mean_posterior": float(posterior[lk.linked].mean()),
               "mean_baseline": float(sens.base[lk.linked].mean()), "tol": tol,
               "numeric_sensitive": sens.numeric, **lk.info}
    return _estimate("attribute_inference", per, lk.rows, dataset.n, seed, details)
