"""Local suppression of key values until every record is k-anonymous, as sdcMicro's
``localSuppression`` (``kAnon``) does it (Templ, Kowarik & Meindl 2015 §4.2; sdcMicro
5.8.1 ``R/localSuppression.R``, ``src/calcSuppInds.cpp``, ``R/freqCalc.r``).

What is published.  A suppressed cell is sdcMicro's ``NA``: the whole domain of the QI,
``lo = 0, hi = m − 1`` (``m`` leaves), published as the label of the root of the QI's
hierarchy (``*`` for the built-in hierarchies), as `sdceval.methods.generalization`
publishes its suppressed records; read back (`sdceval.core.release_io`) the root label
is the whole domain again.  (`sdceval.methods.mondrian.generalized_frame` would label
the whole range of an interval hierarchy by its lowest node covering it, e.g.
``[1-6]``: a suppressed value must read as missing, not as an interval.)  The other
cells are the record's own value (``lo = hi = code``, the leaf's label).  Nothing else
changes; records are never dropped.

Missing values of the original (``missing = "keep"``: the missing-value leaf of the
QI's hierarchy, `sdceval.core.hierarchy.Hierarchy.missing_leaf`) are ``NA`` from the
start, as in sdcMicro: they match every value when frequencies are counted, are never
suppressed again and are not counted as suppressions; they are published as they were
(the empty missing-value label, ``lo = hi = missing_leaf``), so a release tells an
original missing value from a suppressed one (``*``), as sdcMicro's reports do (its
counts of suppressions exclude the ``NA`` of the input).

Frequencies with missing values: sdcMicro's ``freqCalc`` with ``alpha = 1`` (its
default; `sdceval.privacy.population_risk.frequencies`, where the rules are stated).  A
suppressed value matches every value: the frequency ``f`` of a record is the number of
records that agree with it on every key neither has suppressed (with sdcMicro's
exception for records whose keys are all suppressed); with design weights ``F`` is
their weight sum.  Compatibility is not transitive, so these are not class sizes:
``Release.classes`` (the distinct published key combinations) can have classes
smaller than ``k`` in a k-anonymous release (``info["missing_matches_all"]``).

The greedy algorithm (sdcMicro's ``suppSubset``).  Repeat passes until every record has
``f ≥ k``:

1. the *problem* records (``f < k``) are taken in increasing ``f`` (sdcMicro orders by
   its individual risk ``1/f``, decreasing; ties in record order);
2. for each problem record ``p`` in turn, with the data as the earlier steps of the pass
   left them: the distance to record ``j`` is the number of keys on which both have a
   value and the values differ; the *candidates* are the records at the smallest
   positive distance; the key suppressed in ``p`` is the first, in the priority order,
   on which some candidate has a value different from ``p``'s;
3. frequencies are recomputed; every problem record of a pass gets exactly one
   suppression in that pass, even if an earlier step of the pass already made it
   k-anonymous (sdcMicro's loop does so; reproducing its counts needs the same).

Priority (``importance``).  sdcMicro's importance vector gives each key a number
``1..d``: 1 is suppressed last, ``d`` first; keys are tried in decreasing importance,
ties in key order.  By default the keys with more distinct values are suppressed first
(sdcMicro: the rank of the number of categories, ``sort`` being stable, so among keys
with equally many categories the later key has the higher importance and is tried
first).  Here ``importance`` may name some keys only (``"age=7,sex=1"``); the keys not
named get importance ``d`` (tried first, in key order).

Subsets (``combs``).  ``combs = (3, 2)`` makes every record k-anonymous on every subset
of 3 keys, then of 2 keys (sdcMicro: each subset in ``combn`` order runs the algorithm
above on those keys, with the suppressions of the earlier subsets in place and the
importance restricted to the subset).  sdcMicro allows a ``k`` per size; here one ``k``
holds for every size.

Beyond sdcMicro: a target in individual risk (``risk``; sdcTools/UserSupport#266).
Instead of ``f ≥ k``, every record's individual risk (Benedetti–Franconi, as sdcMicro's
``indivRisk``, on ``f`` and ``F`` computed as above with the data set's design weights;
``1/f`` without weights; `sdceval.privacy.population_risk`) must be at most ``risk``.
Problem records are those above it, taken in decreasing risk (sdcMicro's order by
``rk``); the choice of the key is the same.  ``k`` is then not used (giving both is
refused).

Households (issue 29 item 4).  A key listed in ``schema.household_keys`` is equal for
every member of a household; when the algorithm suppresses such a key in a record, it
suppresses it in every member of the record's household, so that the release never
tells the members of a household apart on a household-level key.

Where this reading differs from sdcMicro.

* sdcMicro first drops, from every group of identical keys larger than ``k``, all but
  ``k`` records and restores them at the end ("step 3"): only a speed-up (a record
  with ``f ≥ k`` is never suppressed, suppressions only raise frequencies under
  ``alpha = 1``, and which records of a group are kept changes no candidate set), so
  this implementation works on all records and gives the same suppressions.
* Only ``alpha = 1`` (missing values match everything; sdcMicro's default) is
  implemented.  No strata (sdcMicro's ``strataVars``).
* The default importance counts the distinct values present in the data
  (sdcMicro's ``length(table(x))``; for an R factor that counts unused levels too).
* With ``combs``, sdcMicro's data-frame method indexes the importance vector by the
  keys' column positions in the data frame (``importance[kV]``), so when the keys are
  not the first columns it ranks missing entries (sdcMicro's own test on
  ``sample_Data`` passes through this); here the importance of a key is its own.
  With the first columns as keys (``keyVars = 1:d``, and always for an
  ``sdcMicroObj``) the two agree.
* Household-level keys: sdcMicro has no such rule; it suppresses more cells than the
  plain algorithm (a whole household's), never fewer.
* The risk target orders problem records by their risk with the design weights;
  sdcMicro's k-anonymity loop ignores the weights (its ``1/f``), and so does ``k``
  here.

Cost (measured; 2 cores shared, numpy).  Each pass computes the frequencies once, on
the ``U`` distinct key combinations weighted by their records (not on the ``n``
records); each suppression step compares the problem record with the combinations
present, column by column in the smallest integer type (``O(U·d)``).  The greedy order
is sequential by definition (each step sees the previous steps' suppressions), so a run
costs about ``suppressions × U × d`` plus ``O(n)`` grouping per pass.  On 1 000 000
records with 7 keys of 2 to 8 values drawn with Zipf-like frequencies (about 5 000
combinations): k = 2 in 2-3 s (293 suppressions), k = 5 in 2 s (2 425), peak memory of
the method about 400 MiB; with an eighth key of 20 values (about 40 000 combinations):
k = 2 in 8 s (16 971 suppressions), k = 5 in 21 s (58 524).  sdcMicro compares every
unsafe record with every record (``cpp_calcSuppInds``), ``suppressions × n × d``.

References
----------
Templ, Kowarik, Meindl (2015). Statistical disclosure control for micro-data using the
R package sdcMicro. Journal of Statistical Software 67(4).
Hundepool et al. (2012). Statistical Disclosure Control, §3.4.4 (local suppression).
"""
from __future__ import annotations

import itertools
import re

import numpy as np

from sdceval.core.errors import SdcevalError
from sdceval.core.registry import Param, register_method
from sdceval.core.release import Release
from sdceval.lattice.encoding import group_keys
from sdceval.methods.generalization import per_qi_integers
from sdceval.privacy.population_risk import frequencies, risks_from_frequencies

#: a suppressed key value in the code matrix (sdcMicro's NA)
MISSING = -1
#: sdcMicro's default k
DEFAULT_K = 2
#: the individual-risk threshold of ``target=risk`` when none is given: sdcMicro's
#: ``localSupp`` default (suppress the keys of records whose risk exceeds 0.15)
DEFAULT_RISK = 0.15

#: which target the comparison's search tunes (`MethodSpec.tunable_for`): k, or the
#: individual-risk threshold (``local_suppression:target=risk``)
TARGET_PARAM = Param("target", str, "k", choices=("k", "risk"),
                     description="the knob a comparison searches: k (k-anonymity), or "
                                 "risk (every record's individual risk at most a "
                                 "threshold, which moves the global risk in small steps)")
K_PARAM = Param("k", int, None, low=2, high="n", protection="increasing",
                grid=(2, 3, 5), when=(("risk", None), ("target", "k")),
                description=f"every record k-anonymous on the keys, a suppressed value "
                            f"matching every value (default {DEFAULT_K}; not with risk)")
RISK_PARAM = Param("risk", float, None, low=0.0, high=1.0, low_inclusive=False,
                   protection="decreasing", scale="log", grid=(0.01, 0.3),
                   when=(("target", "risk"),),
                   description="instead of k: every record's individual risk (Benedetti-"
                               "Franconi with the design weights; 1/f without) at most "
                               "this")
IMPORTANCE_PARAM = Param(
    "importance", str, None,
    description="which keys to spare: sdcMicro's importance, 1 = suppressed last, "
                "d = first ('age=7,sex=1', the others d; or one per QI in schema order); "
                "default: keys with more distinct values first")
COMBS_PARAM = Param(
    "combs", str, None,
    description="k-anonymity on every subset of the keys of these sizes, in this order "
                "('3,2'; sdcMicro's combs); default: on all keys together")


# -- parameters ---------------------------------------------------------------------------
def parse_importance(qis, raw) -> np.ndarray | None:
    """sdcMicro's importance vector (one integer ``1..d`` per QI, schema order) from
    ``"age=7,sex=1"`` (keys not named: ``d``), ``"3,1,2"`` / a sequence (one per QI)
    or a mapping; None when not given."""
    d = len(qis)
    out = per_qi_integers(qis, raw, who="local_suppression", param="importance",
                          unit="importance", example="age=7,sex=1", fill=d)
    if out is None:
        return None
    bad = [(q, v) for q, v in zip(qis, out) if not 1 <= v <= d]
    if bad:
        q, v = bad[0]
        raise SdcevalError(f"local_suppression: importance {v} of QI {q!r} is outside "
                           f"1..{d} (1 = suppressed last, {d} = first)")
    return np.array(out, dtype=np.int64)


def parse_combs(qis, raw) -> tuple[int, ...] | None:
    """The subset sizes of ``combs`` (each ``1..d``: ``"3,2"`` or a sequence), or None
    when not given."""
    if raw is None:
        return None
    text = raw if isinstance(raw, str) else ",".join(map(str, np.atleast_1d(raw)))
    # tolerate str() of a Python list, which is what reaches us from Param.parse
    items = [t for t in re.split(r"[\s,\[\]()]+", text) if t]
    sizes = []
    for t in items:
        try:
            f = float(t)
            if not f.is_integer():
                raise ValueError
        except ValueError:
            raise SdcevalError(f"local_suppression: combs size {t!r} is not an integer "
                               "(give subset sizes such as combs='3,2')") from None
        sizes.append(int(f))
    d = len(qis)
    bad = [s for s in sizes if not 1 <= s <= d]
    if bad:
        raise SdcevalError(f"local_suppression: combs size {bad[0]} is outside 1..{d} "
                           f"(the number of quasi-identifiers: {', '.join(qis)})")
    return tuple(sizes) or None


def default_importance(X: np.ndarray) -> np.ndarray:
    """sdcMicro's default importance: the rank (1 = fewest) of each key's number of
    distinct values, ties in key order (a stable sort)."""
    n_values = np.array([len(np.unique(col[col != MISSING])) for col in X.T])
    order = np.argsort(n_values, kind="stable")
    out = np.empty(len(order), dtype=np.int64)
    out[order] = np.arange(1, len(order) + 1)
    return out


def priority(importance: np.ndarray) -> np.ndarray:
    """Keys in the order they are tried: decreasing importance, ties in key order
    (sdcMicro: ``order((d + 1) - importance)``)."""
    return np.argsort(-np.asarray(importance), kind="stable")


# -- distinct key combinations ---------------------------------------------------------------
def _keys(P: np.ndarray, radix: np.ndarray) -> tuple[np.ndarray, int]:
    """One int64 per row of ``P`` (values ``-1..radix-2`` per column), equal iff the rows
    are equal, and the size of the key space: a mixed radix while it fits, else the
    rank of the row."""
    space = float(np.prod(radix.astype(float)))
    if space >= 2.0 ** 62:
        key = np.unique(P, axis=0, return_inverse=True)[1].ravel().astype(np.int64)
        return key, int(key.max()) + 1 if len(key) else 0
    key = np.zeros(len(P), dtype=np.int64)
    for c in range(P.shape[1] - 1, -1, -1):  # column by column: no int matmul
        key *= int(radix[c])
        key += P[:, c] + 1
    return key, int(space)


def patterns(X: np.ndarray, radix: np.ndarray):
    """Distinct rows of ``X``: ``(P, inverse, counts)`` (grouped by counting when the
    key space is small, `sdceval.lattice.encoding.group_keys`)."""
    inverse, first, _ = group_keys(*_keys(X, radix), kind="quicksort")
    return X[first], inverse, np.bincount(inverse, minlength=len(first))


# -- the greedy algorithm --------------------------------------------------------------
def _record_frequencies(P: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Per distinct combination (rows of ``P``), the number of records compatible with
    it — or, given weight sums per combination as ``counts``, their weight: sdcMicro's
    ``f_k`` / ``F_k`` computed on the ``U`` combinations rather than the ``n``
    records, the combinations weighted by their records (with ``alpha = 1`` every
    compatible record counts once: `frequencies`' ``F_k`` is exactly this sum)."""
    return frequencies(P, np.asarray(counts, dtype=np.float64))[1]


class _Table:
    """The distinct key combinations present while suppressing, one column per key
    (``T``, d × rows, the smallest integer type that holds the codes: the comparisons of
    every step read less memory), how many records have each (``count``), each record's
    row (``row``) and a look-up of rows by their values.  A row left by all its records
    is blanked to all missing — at distance 0 from everything, never a candidate — and
    dropped from the look-up."""

    def __init__(self, P: np.ndarray, inverse: np.ndarray, counts: np.ndarray,
                 radix: np.ndarray):
        top = int(radix.max()) if len(radix) else 1
        self.dtype = next(t for t in (np.int8, np.int16, np.int32, np.int64)
                          if top <= np.iinfo(t).max)
        self.T = np.ascontiguousarray(P.T, dtype=self.dtype)
        self.count = counts.astype(np.int64)
        self.row = inverse.astype(np.int64)
        self.size = len(P)
        self.index = {self.T[:, i].tobytes(): i for i in range(self.size)}

    def values(self, row: int) -> np.ndarray:
        return self.T[:, row].copy()

    def row_of(self, values: np.ndarray) -> int:
        key = values.tobytes()
        i = self.index.get(key)
        if i is None:
            if self.size == self.T.shape[1]:  # grow by doubling
                self.T = np.concatenate([self.T, np.full_like(self.T, MISSING)], axis=1)
                self.count = np.concatenate([self.count, np.zeros_like(self.count)])
            i = self.size
            self.T[:, i] = values
            self.size += 1
            self.index[key] = i
        return i

    def move(self, records: np.ndarray, values: np.ndarray) -> None:
        """Give ``records`` (all in one row) the key combination ``values``."""
        old = self.row[records[0]]
        new = self.row_of(values)
        self.count[old] -= len(records)
        self.count[new] += len(records)
        self.row[records] = new
        if self.count[old] == 0:
            del self.index[self.T[:, old].tobytes()]
            self.T[:, old] = MISSING

    def choose(self, v: np.ndarray, order: np.ndarray) -> int:
        """The key to suppress in a record with values ``v``: the first key of ``order``
        on which a record at the smallest positive distance differs (module notes), or
        -1 when every record is compatible with it."""
        T = self.T[:, :self.size]
        seen = [c for c in range(len(v)) if v[c] != MISSING]
        dist = np.zeros(self.size, dtype=np.int16)
        for c in seen:
            dist += (T[c] != v[c]) & (T[c] != MISSING)
        dist[dist == 0] = len(v) + 1
        nearest = int(dist.min())
        if nearest > len(v):
            return -1
        cand = np.flatnonzero(dist == nearest)
        for c in order:
            if v[c] != MISSING and ((T[c, cand] != v[c]) & (T[c, cand] != MISSING)).any():
                return int(c)
        raise AssertionError("a candidate differs on some key")  # pragma: no cover


class _Households:
    """Members of each household (one sort), for the household-level keys."""

    def __init__(self, households: np.ndarray):
        self.of = np.asarray(households)
        order = np.argsort(self.of, kind="stable")
        starts = np.r_[0, np.flatnonzero(np.diff(self.of[order])) + 1, len(order)]
        self.order, self.starts = order, starts
        self.slot = np.empty(int(self.of.max()) + 1 if len(self.of) else 0, dtype=np.int64)
        self.slot[self.of[order[starts[:-1]]]] = np.arange(len(starts) - 1)

    def members(self, record: int) -> np.ndarray:
        s = self.slot[self.of[record]]
        return self.order[self.starts[s]:self.starts[s + 1]]


def _suppress_subset(X, cols, radix, order, unsafe, households, household_cols, who):
    """Run the greedy algorithm on keys ``cols`` of ``X`` (changed in place) until
    ``unsafe(P, counts, inverse) -> (mask, urgency)``, given the distinct key
    combinations, flags none (per combination; ``urgency``: problem records are taken in
    decreasing urgency, ties in record order).  Returns the number of passes."""
    passes = 0
    sub_order = np.array([cols.index(c) for c in order if c in cols])
    while True:
        P, inverse, counts = patterns(X[:, cols], radix[cols])
        mask, urgency = unsafe(P, counts, inverse)
        problems = np.flatnonzero(mask[inverse])
        if not len(problems):
            return passes
        passes += 1
        problems = problems[np.argsort(-urgency[inverse[problems]], kind="stable")]
        table = _Table(P, inverse, counts, radix[cols])
        for r in problems:
            v = table.values(table.row[r])
            c = table.choose(v, sub_order)
            if c < 0:
                raise SdcevalError(
                    f"{who}: record {int(r)} is compatible with every record and still "
                    "does not meet the target; it cannot be protected by suppression "
                    "(lower k or raise risk)")
            key = cols[c]
            if households is not None and key in household_cols:
                group = households.members(r)
                group = group[X[group, key] != MISSING]
            else:
                group = np.array([r])
            X[group, key] = MISSING
            # the members of a household may sit in different rows of the table
            rows = table.row[group]
            for row in np.unique(rows):
                moved = group[rows == row]
                w = table.values(row)
                w[c] = MISSING
                table.move(moved, w)


def suppress(X: np.ndarray, radix: np.ndarray, *, k: int | None = None,
             risk: float | None = None, importance=None, combs=None, weights=None,
             households=None, household_cols=(), who: str = "local_suppression"
             ) -> tuple[np.ndarray, dict]:
    """sdcMicro's local suppression (module notes) on the code matrix ``X`` (n × d,
    values ``0..radix-2``, ``-1`` = already missing).  Returns the suppressed copy and
    ``{"passes": ...}``.  ``importance``: sdcMicro's vector (default
    `default_importance`); ``combs``: subset sizes; ``households``: a household code per
    record, with ``household_cols`` the household-level key columns."""
    X = np.array(X, dtype=np.int64, copy=True)
    n, d = X.shape
    radix = np.asarray(radix, dtype=np.int64)
    imp = default_importance(X) if importance is None else np.asarray(importance)
    order = priority(imp)
    hh = _Households(households) if households is not None and len(household_cols) else None
    hcols = set(household_cols)

    if risk is None:
        k = DEFAULT_K if k is None else int(k)
        if n < k:
            raise SdcevalError(f"{who}: k = {k} is larger than the number of records ({n})")

        def unsafe(P, counts, inverse):
            f = _record_frequencies(P, counts)
            return f < k, -f
    else:
        w = None if weights is None else np.asarray(weights, dtype=float)

        def unsafe(P, counts, inverse):
            f = _record_frequencies(P, counts)
            F = f if w is None else _record_frequencies(
                P, np.bincount(inverse, weights=w, minlength=len(P)))
            r = risks_from_frequencies(f, F, survey=w is not None)
            return r > risk, r

        # the least risk suppression can reach: a record compatible with every record
        floor = float(risks_from_frequencies([n], [n if w is None else w.sum()])[0])
        if floor > risk:
            raise SdcevalError(
                f"{who}: risk = {risk:g} cannot be reached: even a record with every key "
                f"suppressed has individual risk {floor:.4g} on these {n} records; give "
                f"risk >= {floor:.4g}")

    subsets = ([list(range(d))] if not combs else
               [list(c) for s in combs for c in itertools.combinations(range(d), s)])
    passes = 0
    for cols in subsets:
        passes += _suppress_subset(X, cols, radix, order, unsafe, hh, hcols, who)
    return X, {"passes": passes, "importance": imp}


# -- the method ---------------------------------------------------------------------------
@register_method(
    "local_suppression", family="generalization", random=False,
    label="local suppression",
    params=[TARGET_PARAM, K_PARAM, RISK_PARAM, IMPORTANCE_PARAM, COMBS_PARAM],
    description="cell-level suppression of key values (published as '*', matching every "
                "value) until every record is k-anonymous, or below an individual risk; "
                "sdcMicro's localSuppression with its importance and combs")
def local_suppression(dataset, *, seed, target, k, risk, importance, combs) -> Release:
    """Local suppression (module notes).

    Parameters
    ----------
    dataset : Dataset
    seed : numpy.random.Generator
        Unused (the algorithm is deterministic).
    target : "k" or "risk"
        The knob a comparison searches (``risk`` needs no k; without a ``risk``,
        `DEFAULT_RISK`); a ``risk`` given selects the risk target whatever ``target``
        says.
    k : int or None
        Every record compatible with at least ``k`` records (default 2).
    risk : float or None
        Instead of ``k``: every record's individual risk at most ``risk``.
    importance : str or None
        sdcMicro's importance per QI (`parse_importance`).
    combs : str or None
        Subset sizes (`parse_combs`).

    Returns
    -------
    Release
        kind ``"generalized"``: suppressed cells ``(0, m − 1)`` labelled with the root
        label, the others exact; ``classes`` the distinct published key combinations;
        ``info``: ``suppressions`` per QI, ``total``, ``target``, ``importance`` per QI,
        ``combs``, ``passes``, ``n_classes`` and ``missing_matches_all`` (True: the
        target holds for the records compatible with each record, not for the
        classes).
    """
    who = "local_suppression"
    qis = list(dataset.schema.qis)
    if not qis:
        raise SdcevalError(f"{who} needs quasi-identifiers, but data set {dataset.name!r} "
                           "has none; give them (e.g. --qi age,sex)")
    if risk is not None and k is not None:
        raise SdcevalError(f"{who}: give k (k-anonymity) or risk (an individual-risk "
                           "target), not both")
    if target == "risk" and risk is None:
        risk = DEFAULT_RISK
    imp = parse_importance(qis, importance)
    sizes = parse_combs(qis, combs)
    hs = [dataset.hierarchy(q) for q in qis]
    X = np.stack([np.asarray(dataset.codes(q), dtype=np.int64) for q in qis], axis=1)
    radix = np.array([h.n_leaves + 1 for h in hs], dtype=np.int64)
    # a missing value of the original (missing = "keep") is sdcMicro's NA from the
    # start: it matches every value, and is never suppressed nor counted again
    absent = np.column_stack([X[:, j] == h.missing_leaf if h.missing_leaf is not None
                              else np.zeros(len(X), dtype=bool)
                              for j, h in enumerate(hs)])
    X_in = np.where(absent, MISSING, X)
    hkeys = list(getattr(dataset.schema, "household_keys", None) or [])
    households = getattr(dataset, "households", None) if hkeys else None
    out, run = suppress(X_in, radix, k=k, risk=risk, importance=imp, combs=sizes,
                        weights=getattr(dataset, "weights", None), households=households,
                        household_cols=[qis.index(q) for q in hkeys], who=who)
    gone = (out == MISSING) & ~absent
    cells, frame = {}, {}
    for j, (q, h) in enumerate(zip(qis, hs)):
        code, m = X[:, j], h.n_leaves
        cells[q] = (np.where(gone[:, j], 0, code), np.where(gone[:, j], m - 1, code))
        # the leaf's label, or the root's (the whole domain) for a suppressed value
        labels = np.append(h.labels[0], h.labels[-1][0]).astype(object)
        frame[q] = labels[np.where(gone[:, j], m, code)]
    # classes of the published labels: a missing value (its leaf) is not a '*'
    classes = patterns(np.where(gone, MISSING, X), radix)[1].astype(np.int64)
    import pandas as pd  # here, not at the top: `sdceval list methods` loads no pandas
    per_key = {q: int(s) for q, s in zip(qis, gone.sum(axis=0))}
    target = {"risk": risk} if risk is not None else {"k": DEFAULT_K if k is None else k}
    return Release.generalized(
        dataset, pd.DataFrame(frame, columns=qis), method=who, classes=classes,
        cells=cells,
        info={"suppressions": per_key, "total": int(gone.sum()), "target": target,
              "importance": {q: int(v) for q, v in zip(qis, run["importance"])},
              "combs": list(sizes) if sizes else None, "passes": run["passes"],
              # the guarantee is on compatible records, not on the classes (notes)
              "missing_matches_all": True,
              "n_classes": int(classes.max()) + 1 if len(classes) else 0})


__all__ = ["MISSING", "default_importance", "local_suppression", "parse_combs",
           "parse_importance", "patterns", "priority", "suppress"]
