"""Singling out (WP29 Opinion 05/2014: "the possibility to isolate some or all records
which identify an individual"), measured as anonymeter 1.1.0's
``SinglingOutEvaluator`` does (Giomi et al., PETS 2023, §4.1), on every kind of release.

The intruder writes predicates from the release and wins when a predicate matches
exactly one training record:

* *univariate*: for each column, "value <= the smallest published" and "value >= the
  largest published" (numeric columns) and "value in v" for every value (cell) only
  one released row publishes;
* *multivariate*: a random released row and ``n_cols`` random columns; per column
  "value in the cell" — for an exact number ``>= v`` when ``v`` is above the column's
  published median, else ``<= v`` (anonymeter's choice, towards the tails), for exact
  text ``== v``; a ``*`` cell adds nothing.

Only predicates that single out a row of the release are kept (duplicate rows of the
release, the training and the control records count once, as anonymeter drops them),
distinct, up to ``n_attacks``, in the order they are drawn; multivariate generation
stops after ``max_attempts`` draws (anonymeter's 10 000 000).  A predicate is a released
row and a set of columns; when there are no more such pairs than ``max_attempts``, the
pairs are scanned once in a random order, each skipped with the chance
``(1 - 1/pairs)^max_attempts`` that anonymeter's draws with replacement never meet it:
the same predicates, found in the same (uniformly random) order, at the cost of the
pairs rather than of ``max_attempts`` draws, where a release with few predicates that
single out (perturbed numbers, a sample of a noisy table) would otherwise cost
10 000 000 draws (anonymeter's run of 8 minutes on 3 000 rows).  Predicates are tested in rank space, first on bit
sets of 256 and 2 048 released rows (one other row inside rules a predicate out), then
counted over all rows.  Released cells are read as sets
(`sdceval.measures._attack`): a row's cell matches a predicate when it lies inside it.
The *control* run evaluates the same predicates on the control records; since fewer
records single out more easily, their count is scaled as anonymeter does, by
``F(n_train) / F(n_control)`` with ``F(n) = c · ∫₀^w n u (1-u)^(n-1) du`` fitted by least
squares (Cohen & Nissim 2020's singling-out probability of a predicate of weight ``u``)
to the number of predicates that single out in random subsets of the control of 10 sizes
(``min(1000, n_control) .. n_control``); we fit to the exact expected number in a
subset (hypergeometric) rather than to 5 draws per size.  The *baseline* draws
``n_attacks`` predicates at random: random columns, a random published value of each and
a random operator (``==``/``!=``; numbers also ``<``, ``<=``, ``>``, ``>=``).

As in anonymeter the rates are over the ``n_attacks`` predicates asked for: when a
release lets fewer be written (``queries`` in the details; univariate predicates are
few when the release publishes few rare values), the missing ones count as failed
attacks, and the risk is the share of the attacker's budget that singles out somebody,
not the success of the few predicates written (given as ``rate_per_query``; over 2
predicates it swings from 0 to 1 and says little).
"""
from __future__ import annotations

import numpy as np

from sdceval.core.errors import SdcevalError
from sdceval.core.measurement import Measurement
from sdceval.core.registry import Param, register_measure
from sdceval.core.release import KINDS, Release
from sdceval.measures._attack import BLOCK, N_ATTACKS, SEED, read_release, summary

MODES = ("multivariate", "univariate")


class Queries:
    """Conjunctions of interval predicates: predicate ``q`` holds for a row when, for
    each position ``p``, its value in column ``cols[q, p]`` lies in ``[a, b]`` (outside
    it where ``neg``)."""

    def __init__(self, cols, a, b, neg=None):
        self.cols, self.a, self.b = cols, a, b
        self.neg = np.zeros(cols.shape, dtype=bool) if neg is None else neg

    def __len__(self):
        return len(self.cols)

    def take(self, rows) -> "Queries":
        return Queries(self.cols[rows], self.a[rows], self.b[rows], self.neg[rows])

    def key(self) -> np.ndarray:
        return np.concatenate([self.cols, self.a, self.b, self.neg], axis=1).astype(np.float64)

    def count(self, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
        """Per predicate, the rows whose sets ``[lo, hi]`` lie inside it (outside it
        where negated): exact values are ``lo = hi``.  Compared as ranks among each
        column's values (small integers: a quarter of the memory traffic of floats, the
        same answers)."""
        if self.cols.shape[1] == 1:
            one = self._one_column(lo, hi)
            if one is not None:
                return one
        low, high, a, b = self._ranks(lo, hi)
        out = np.empty(len(self), dtype=np.int64)
        step = max(1, BLOCK // max(1, lo.shape[0]))
        for s in range(0, len(self), step):
            e = min(len(self), s + step)
            out[s:e] = _inside(low, high, self.cols[s:e], a[s:e], b[s:e],
                               self.neg[s:e]).sum(axis=1)
        return out

    def _one_column(self, lo, hi):
        """Counts of one-column predicates over exact values, from each column's sorted
        values (``a <= x <= b``: two binary searches; outside: the others), or None
        when a column holds cells."""
        c = self.cols[:, 0]
        used = np.unique(c)
        if not (lo[:, used] == hi[:, used]).all():
            return None
        out = np.empty(len(self), dtype=np.int64)
        for j in used:
            at = c == j
            x = np.sort(lo[:, j])
            out[at] = (np.searchsorted(x, self.b[at, 0], "right")
                       - np.searchsorted(x, self.a[at, 0], "left"))
        return np.where(self.neg[:, 0], len(lo) - out, out)

    def _ranks(self, lo, hi):
        """Rows' edges and predicates' bounds as ranks among each column's edges:
        ``a <= x`` iff ``rank_ge(a) <= rank(x)``, ``x <= b`` iff ``rank(x) <= rank_le(b)``."""
        kind = np.int16 if 2 * lo.shape[0] < 2 ** 15 - 2 else np.int32
        edges, low, high = ranked(lo, hi, kind)
        a, b = np.empty(self.cols.shape, kind), np.empty(self.cols.shape, kind)
        for j, e in enumerate(edges):
            at = self.cols == j
            a[at] = np.searchsorted(e, self.a[at], "left")
            b[at] = np.searchsorted(e, self.b[at], "right") - 1
        return low, high, a, b


def ranked(lo, hi, kind=np.int32) -> tuple[list, np.ndarray, np.ndarray]:
    """Per column its published edges (sorted, distinct), and the ranks among them of
    each row's low and high edge, ``(d, rows)``: sets compared as small integers."""
    d = lo.shape[1]
    low, high = np.empty((d, len(lo)), kind), np.empty((d, len(lo)), kind)
    edges = []
    for j in range(d):
        edges.append(np.unique(np.concatenate([lo[:, j], hi[:, j]])))
        low[j], high[j] = np.searchsorted(edges[j], lo[:, j]), np.searchsorted(edges[j], hi[:, j])
    return edges, low, high


def _inside(low, high, cols, a, b, neg=None) -> np.ndarray:
    """(predicates x rows): whether each row's ranked set ``[low, high]`` lies inside
    each predicate's ``[a, b]`` on every one of its columns (outside it where ``neg``)."""
    hold = np.ones((len(cols), low.shape[1]), dtype=bool)
    for p in range(cols.shape[1]):
        x, y = low[cols[:, p]], high[cols[:, p]]
        ap, bp = a[:, p, None], b[:, p, None]
        inside = (ap <= x) & (y <= bp)
        if neg is not None and neg[:, p].any():
            inside = np.where(neg[:, p, None], (y < ap) | (x > bp), inside)
        hold &= inside
    return hold


def distinct_rows(x: np.ndarray) -> np.ndarray:
    """The distinct rows of ``x`` in the order they first appear (anonymeter's
    ``drop_duplicates``)."""
    return x[first_rows(x)]


def first_rows(x: np.ndarray) -> np.ndarray:
    """The place of each distinct row of ``x`` where it first appears, in order: each
    column's values coded, the codes combined into one integer per row (recoded
    whenever the product would overflow), its first places (one sort per column, where
    ``np.unique(axis=0)`` sorts rows as records)."""
    key = np.zeros(len(x), dtype=np.int64)
    size = 1
    for j in range(x.shape[1]):
        _, code = np.unique(x[:, j], return_inverse=True)
        k = int(code.max()) + 1 if len(code) else 1
        if size * k >= 1 << 62:
            _, key = np.unique(key, return_inverse=True)
            size = int(key.max()) + 1
        key = key * k + code.ravel()
        size *= k
    _, first = np.unique(key, return_index=True)
    return np.sort(first)


def _first_unique(q: Queries) -> Queries:
    """The distinct predicates, each at its first place (anonymeter keeps each once)."""
    return q.take(first_rows(q.key()))


def column_values(lo, hi) -> list:
    """Per column, its distinct published sets ``(lo, hi)`` and how many rows publish
    each."""
    out = []
    for j in range(lo.shape[1]):
        if (lo[:, j] == hi[:, j]).all():
            v, counts = np.unique(lo[:, j], return_counts=True)
            out.append((np.stack([v, v], axis=1), counts))
        else:
            out.append(np.unique(np.stack([lo[:, j], hi[:, j]], axis=1), axis=0,
                                 return_counts=True))
    return out


def _univariate(lo, hi, numeric, values, rng) -> Queries:
    cols, a, b = [], [], []
    for j in range(lo.shape[1]):
        fin_hi, fin_lo = hi[:, j][np.isfinite(hi[:, j])], lo[:, j][np.isfinite(lo[:, j])]
        if numeric[j] and len(fin_hi):
            cols += [j, j]
            a += [-np.inf, fin_lo.max()]
            b += [fin_hi.min(), np.inf]
        pairs, counts = values[j]
        rare = pairs[(counts == 1) & ~(np.isinf(pairs[:, 0]) & np.isinf(pairs[:, 1]))]
        cols += [j] * len(rare)
        a += list(rare[:, 0])
        b += list(rare[:, 1])
    q = Queries(np.array(cols, dtype=np.int64)[:, None], np.array(a)[:, None],
                np.array(b)[:, None])
    return q.take(rng.permutation(len(q)))


def _from_rows(lo, hi, numeric, median, rows, cols) -> Queries:
    """Multivariate predicates from released ``rows`` on ``cols`` (module notes)."""
    low, high = lo[rows[:, None], cols], hi[rows[:, None], cols]
    up, down = _directions(numeric[cols], low == high, low > median[cols])
    return Queries(cols, np.where(down, -np.inf, low), np.where(up, np.inf, high))


def _directions(numeric, exact, above):
    """Where a predicate says ``>= v`` (an exact number above the median) and where
    ``<= v`` (an exact number at most the median)."""
    up = numeric & exact & above
    return up, numeric & exact & ~above


def _columns(rng, n: int, d: int, p: int) -> np.ndarray:
    """``p`` distinct random columns of ``d`` for each of ``n`` predicates, sorted."""
    return np.sort(np.argsort(rng.random((n, d)), axis=1)[:, :p], axis=1)


class _Bits:
    """Which of some released rows (``rows``; ``member`` marks them) lie inside a
    predicate, as bit sets: for column ``j`` and a bound ``a`` (a rank), the rows whose
    low edge is ``>= a`` are the ``k`` with the largest low edges, ``k`` looked up per
    rank, their set the running OR of those rows' bits (the same for ``<= b`` on high
    edges); a predicate's rows are the AND over its columns, counted by popcount."""

    def __init__(self, low, high, rows):
        self.rows = rows
        n, words = len(rows), (len(rows) + 63) // 64
        one = np.zeros((n, words * 8), dtype=np.uint8)
        one[np.arange(n), np.arange(n) // 8] = 1 << (np.arange(n) % 8)
        one = one.view(np.uint64)                       # row i's bit alone
        counts, bits, offset = ([], []), ([], []), []
        for j in range(len(low)):
            at = np.arange(int(max(low[j].max(), high[j].max())) + 1)
            offset.append(sum(map(len, counts[0])))
            for t, (edges, desc) in enumerate(((low[j][rows], True), (high[j][rows], False))):
                acc = np.zeros((n + 1, words), dtype=np.uint64)
                np.bitwise_or.accumulate(one[np.argsort(-edges if desc else edges)], axis=0,
                                         out=acc[1:])
                s = np.sort(edges)
                counts[t].append(n - np.searchsorted(s, at, "left") if desc
                                 else np.searchsorted(s, at, "right"))
                bits[t].append(acc)
        self.offset = np.array(offset)
        self.ge, self.le = np.concatenate(counts[0]), np.concatenate(counts[1])
        self.ge_bits, self.le_bits = np.stack(bits[0]), np.stack(bits[1])  # (d, n+1, words)
        self.member = np.zeros(low.shape[1], dtype=bool)
        self.member[rows] = True

    def hits(self, cols, a, b) -> np.ndarray:
        """Per predicate (columns ``cols``, rank bounds ``[a, b]``), how many of the
        rows lie inside it."""
        acc = None
        for t in range(cols.shape[1]):
            c, off = cols[:, t], self.offset[cols[:, t]]
            x = self.ge_bits[c, self.ge[off + a[:, t]]] & self.le_bits[c, self.le[off + b[:, t]]]
            acc = x if acc is None else acc & x
        return np.bitwise_count(acc).sum(axis=1, dtype=np.int64)


class _Writer:
    """Multivariate predicates written from the (distinct) released rows, in rank space
    (each column's published edges ranked once), filtered by bit sets over a few
    hundred and a few thousand released rows before they are counted over all rows:
    a predicate matches the row it was written from, so one other match rules it out."""

    LEVELS = (256, 2048)

    def __init__(self, lo, hi, numeric):
        m, d = lo.shape
        self.m = m
        exact = lo == hi
        self.median = np.array([np.median(lo[exact[:, j], j]) if exact[:, j].any() else 0.0
                                for j in range(d)])
        edges, low, high = ranked(lo, hi)
        top = np.array([len(e) - 1 for e in edges], dtype=np.int32)
        self.low, self.high = low, high
        up, down = _directions(numeric[None, :], exact, lo > self.median)
        self.a = np.where(down, 0, low.T)            # (m, d) rank bounds of each row's
        self.b = np.where(up, top, high.T)           # predicate on each column
        self.levels = []
        for size in self.LEVELS:
            rows = np.unique(np.linspace(0, m - 1, min(size, m)).astype(np.int64))
            self.levels.append(_Bits(low, high, rows))
            if len(rows) == m:
                break

    def _alone(self, cols, a, b) -> np.ndarray:
        """Which predicates match one released row only, counted over the rows in
        chunks (in the reading's random order), a predicate dropped as soon as it
        matches two: few survive the bit sets, and those that do not single out
        rarely need more than a chunk or two."""
        count = np.zeros(len(cols), dtype=np.int64)
        live = np.arange(len(cols))
        for s in range(0, self.m, CHUNK):
            part = slice(s, min(self.m, s + CHUNK))
            count[live] += _inside(self.low[:, part], self.high[:, part], cols[live],
                                   a[live], b[live]).sum(axis=1)
            live = live[count[live] < 2]
            if not len(live):
                break
        return count == 1

    def singling(self, rows, cols) -> np.ndarray:
        """Which predicates (from ``rows`` on ``cols``) match their own row only."""
        a, b = self.a[rows[:, None], cols], self.b[rows[:, None], cols]
        keep = np.arange(len(rows))
        for level in self.levels:
            alone = level.hits(cols[keep], a[keep], b[keep]) == level.member[rows[keep]]
            keep = keep[alone]
            if not len(keep):
                break
        if len(keep) and len(self.levels[-1].rows) < self.m:
            keep = keep[self._alone(cols[keep], a[keep], b[keep])]
        out = np.zeros(len(rows), dtype=bool)
        out[keep] = True
        return out


#: predicates drawn per batch
BATCH = 8192
#: released rows a predicate that passed the bit sets is counted over at a time
CHUNK = 4096


def _multivariate(lo, hi, numeric, n_attacks, n_cols, max_attempts, rng
                  ) -> tuple[Queries, int]:
    """Up to ``n_attacks`` distinct predicates that single out a released row, in the
    order anonymeter draws them (module notes), and the attempts made."""
    from itertools import combinations
    from math import comb
    w = _Writer(lo, hi, numeric)
    m, d = lo.shape
    if m * float(d) ** n_cols >= 2.0 ** 62:
        raise SdcevalError(f"singling_out: n_cols={n_cols} on {d} columns and {m} released "
                           "rows is too many to tell predicates apart; use fewer n_cols")
    space = m * comb(d, n_cols)
    scan = space <= max_attempts
    if scan:
        # anonymeter's max_attempts draws with replacement miss a given pair with
        # probability (1 - 1/space)^max_attempts and meet the others first in a
        # uniformly random order: a random order of all pairs, each skipped with that
        # chance, is the same draw at a cost of `space`, not `max_attempts`
        order = rng.permutation(space)
        miss = float(np.exp(max_attempts * np.log1p(-1.0 / space))) if space > 1 else 0.0
        combos = np.array(list(combinations(range(d), n_cols)), dtype=np.int64)
    found, seen, attempts = [], np.empty(0, np.int64), 0
    total = space if scan else max_attempts
    while attempts < total and len(seen) < n_attacks:
        size = min(BATCH, total - attempts)
        if scan:
            pick = order[attempts:attempts + size]
            if miss > 0:
                pick = pick[rng.random(len(pick)) >= miss]
            rows, cols = pick // len(combos), combos[pick % len(combos)]
        else:
            rows = rng.integers(0, m, size=size)
            cols = _columns(rng, size, d, n_cols)
        attempts += size
        hit = np.flatnonzero(w.singling(rows, cols))
        # a predicate is its row and columns: one integer, kept at its first draw
        key = rows[hit] * d ** n_cols + (cols[hit] * d ** np.arange(n_cols)).sum(axis=1)
        _, first = np.unique(key, return_index=True)
        first = np.sort(first)
        new = first[~np.isin(key[first], seen)]
        found.append(np.column_stack([rows[hit[new]], cols[hit[new]]]))
        seen = np.concatenate([seen, key[new]])
    keys = (np.concatenate(found) if found else np.empty((0, 1 + n_cols), np.int64))
    keys = keys[:n_attacks]
    return _from_rows(lo, hi, numeric, w.median, keys[:, 0], keys[:, 1:]), attempts


def _random(lo, numeric, values, n, p, rng) -> Queries:
    """The baseline's predicates: random columns, a random published value (cell) of
    each, a random operator."""
    d = lo.shape[1]
    cols = _columns(rng, n, d, p)
    values = [v for v, _ in values]
    width = max(len(v) for v in values)
    table = np.full((d, width, 2), np.nan)
    for j, v in enumerate(values):
        table[j, :len(v)] = v
    sizes = np.array([len(v) for v in values])
    pick = (rng.random(cols.shape) * sizes[cols]).astype(np.int64)
    low, high = table[cols, pick, 0], table[cols, pick, 1]
    # operators: 0 ==, 1 !=, 2 >, 3 <, 4 >=, 5 <= (text: == and != only)
    op = np.where(numeric[cols], rng.integers(0, 6, cols.shape), rng.integers(0, 2, cols.shape))
    a = np.select([op == 2, (op == 3) | (op == 5)], [np.nextafter(high, np.inf), -np.inf], low)
    b = np.select([op == 3, (op == 2) | (op == 4)], [np.nextafter(low, -np.inf), np.inf], high)
    return Queries(cols, a, b, op == 1)


def _model(n, w, norm):
    """anonymeter's ``norm · ∫₀^w n u (1-u)^(n-1) du`` (module notes)."""
    return norm * (1 - (n * w + 1) * (1 - w) ** n) / (n + 1)


def _singles(n: int, counts: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    """Expected number of the predicates (matching ``counts`` of ``n`` records each)
    that match exactly one record of a random subset of each size: the hypergeometric
    ``P(X = 1) = K C(n - K, s - 1) / C(n, s)`` summed over the predicates (in log
    gamma functions: scipy's ``hypergeom.pmf`` costs fifty times more)."""
    from scipy.special import gammaln
    k, s = counts[None, :].astype(np.float64), sizes[:, None].astype(np.float64)
    ok = n - k >= s - 1
    rest = np.where(ok, n - k - s + 2, 1.0)
    log_p = (np.log(k) + gammaln(n - k + 1) - gammaln(s) - gammaln(rest)
             - gammaln(n + 1) + gammaln(s + 1) + gammaln(n - s + 1))
    return np.where(ok, np.exp(log_p), 0.0).sum(axis=1)


def size_correction(counts: np.ndarray, n_control: int, n_train: int) -> tuple[float, str]:
    """``F(n_train) / F(n_control)`` fitted to the expected number of the predicates
    (matching ``counts`` control records each) that single out in random subsets of
    the control (module notes), and a note when the fit fails (then 1)."""
    from scipy.optimize import curve_fit
    if n_control == n_train:
        return 1.0, ""
    c = counts[counts > 0]
    if not len(c):
        return 1.0, ""
    # anonymeter's 10 sizes; its 5 draws at each weigh every size alike, so each size
    # once leads least squares to the same optimum
    sizes = np.linspace(min(1000, n_control), n_control, 10).astype(int)
    expected = _singles(n_control, c, sizes)
    w0 = 1 / sizes.max()
    p0 = (w0, 1 / _model(sizes.max(), w0, 1.0))
    try:
        (w, norm), _ = curve_fit(_model, sizes.astype(np.float64), expected,
                                 bounds=(0, (1, np.inf)), p0=p0)
        f = _model(n_train, w, norm) / _model(n_control, w, norm)
    except (RuntimeError, ValueError, ZeroDivisionError, FloatingPointError):
        return 1.0, "the control's size correction could not be fitted (not applied)"
    if not np.isfinite(f):
        return 1.0, "the control's size correction could not be fitted (not applied)"
    return float(f), ""


@register_measure(
    "singling_out", category="risk", direction="lower_is_better", kinds=KINDS,
    needs=("control",), attack=True, label="singling-out risk", unit="attack risk",
    params=[Param("mode", str, "multivariate", choices=MODES,
                  description="multivariate: predicates on n_cols columns of a released "
                              "row; univariate: extreme and rare values of one column"),
            N_ATTACKS,
            Param("n_cols", int, 3, low=1, unit="columns",
                  description="columns of a multivariate predicate (anonymeter's 3)"),
            Param("max_attempts", int, 10_000_000, low=1, unit="predicates",
                  description="multivariate predicates drawn at most to find n_attacks "
                              "that single out a released row (anonymeter's 10 000 000)"),
            SEED],
    description="anonymeter's singling-out attack (PETS 2023) on any release: share of "
                "predicates written from the release that match exactly one training "
                "record, in excess of the control records', (a - c) / (1 - c)")
def singling_out(dataset, release: Release, *, mode: str = "multivariate",
                 n_attacks: int = 2000, n_cols: int = 3, max_attempts: int = 10_000_000,
                 seed: int = 0) -> Measurement:
    """Singling-out risk ``(a - c) / (1 - c)`` (module notes), ``a``/``c`` the Wilson
    rates of predicates singling out a training / control record.

    Returns
    -------
    Measurement
        ``value`` the risk (clipped to [0, 1]); ``details``: the rates and 95 %
        intervals of the attack, the control and the baseline, ``risk_ci``, ``queries``
        (predicates written), ``control_correction`` and ``baseline_beats_attack``.
    """
    r = read_release(dataset, release, "singling_out", seed)
    rng = np.random.default_rng(seed)
    both = distinct_rows(np.concatenate([r.lo, r.hi], axis=1))
    lo, hi = both[:, :r.lo.shape[1]], both[:, r.lo.shape[1]:]
    train, control = distinct_rows(r.train), distinct_rows(r.control)
    p = min(n_cols, lo.shape[1]) if mode == "multivariate" else 1
    values = column_values(lo, hi)
    if mode == "univariate":
        q = _univariate(lo, hi, r.numeric, values, rng)
        q = _first_unique(q.take(np.flatnonzero(q.count(lo, hi) == 1)))
        q, attempts = q.take(np.arange(min(n_attacks, len(q)))), len(q)
    else:
        q, attempts = _multivariate(lo, hi, r.numeric, n_attacks, p, max_attempts, rng)
    base = _random(lo, r.numeric, values, n_attacks, p, rng)
    s_base = int((base.count(train, train) == 1).sum())
    details = {"mode": mode, "n_cols": p, "columns": r.columns, "queries": len(q),
               "attempts": attempts, "released_rows": len(lo), "training_rows": len(train),
               "control_rows": len(control)}
    if not len(q):
        details["note"] = ("no predicate written from the release singles out a released "
                           "row: the attack cannot start (risk 0)")
        details.update(summary((0, n_attacks), (0, n_attacks), (s_base, n_attacks)))
        return Measurement("singling_out", details["risk"], details=details)
    s_main = int((q.count(train, train) == 1).sum())
    on_control = q.count(control, control)
    corr, note = size_correction(on_control, len(control), len(train))
    s_ctrl = float((on_control == 1).sum()) * corr
    details["control_correction"] = corr
    if note:
        details["note"] = note
    details["rate_per_query"] = s_main / len(q)
    if len(q) < n_attacks:
        details["fewer_queries"] = (f"only {len(q)} of the {n_attacks} predicates asked for "
                                    "could be written; the others count as failed "
                                    "attacks (anonymeter's rule)")
    details.update(summary((s_main, n_attacks), (min(s_ctrl, n_attacks), n_attacks),
                           (s_base, n_attacks)))
    return Measurement("singling_out", details["risk"], details=details)
