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
distinct, up to ``n_attacks``; multivariate generation stops after ``50 · n_attacks``
attempts (anonymeter: 10 000 000).  Released cells are read as sets
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

from sdceval.core.measurement import Measurement
from sdceval.core.registry import Param, register_measure
from sdceval.core.release import KINDS, Release
from sdceval.measures._attack import BLOCK, N_ATTACKS, SEED, read_release, summary

MODES = ("multivariate", "univariate")
#: multivariate predicates drawn per released-row predicate kept, at most
ATTEMPTS = 50
#: released rows a multivariate predicate is first tried on
PROBE = 256


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
        low, high, a, b = self._ranks(lo, hi)
        exact = bool((lo == hi).all())
        out = np.empty(len(self), dtype=np.int64)
        step = max(1, BLOCK // max(1, lo.shape[0]))
        for s in range(0, len(self), step):
            e = min(len(self), s + step)
            hold = np.ones((e - s, lo.shape[0]), dtype=bool)
            for p in range(self.cols.shape[1]):
                c = self.cols[s:e, p]
                ap, bp, neg = a[s:e, p, None], b[s:e, p, None], self.neg[s:e, p]
                x = low[c]
                y = x if exact else high[c]
                inside = (ap <= x) & (y <= bp)
                if neg.any():
                    outside = (y < ap) | (x > bp)
                    inside = np.where(neg[:, None], outside, inside)
                hold &= inside
            out[s:e] = hold.sum(axis=1)
        return out

    def _ranks(self, lo, hi):
        """Rows' edges and predicates' bounds as ranks among each column's edges:
        ``a <= x`` iff ``rank_ge(a) <= rank(x)``, ``x <= b`` iff ``rank(x) <= rank_le(b)``."""
        d = lo.shape[1]
        kind = np.int16 if 2 * lo.shape[0] < 2 ** 15 - 2 else np.int32
        low, high = np.empty((d, len(lo)), kind), np.empty((d, len(lo)), kind)
        a, b = np.empty(self.cols.shape, kind), np.empty(self.cols.shape, kind)
        for j in range(d):
            edges = np.unique(np.concatenate([lo[:, j], hi[:, j]]))
            low[j] = np.searchsorted(edges, lo[:, j])
            high[j] = np.searchsorted(edges, hi[:, j])
            at = self.cols == j
            a[at] = np.searchsorted(edges, self.a[at], "left")
            b[at] = np.searchsorted(edges, self.b[at], "right") - 1
        return low, high, a, b


def _first_unique(q: Queries) -> Queries:
    """The distinct predicates, each at its first place (anonymeter keeps each once)."""
    _, first = np.unique(q.key(), axis=0, return_index=True)
    return q.take(np.sort(first))


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
    exact = low == high
    up = numeric[cols] & exact & (low > median[cols])
    down = numeric[cols] & exact & ~up
    a = np.where(down, -np.inf, low)
    b = np.where(up, np.inf, high)
    return Queries(cols, a, b)


def _columns(rng, n: int, d: int, p: int) -> np.ndarray:
    """``p`` distinct random columns of ``d`` for each of ``n`` predicates, sorted."""
    return np.sort(np.argsort(rng.random((n, d)), axis=1)[:, :p], axis=1)


def _multivariate(lo, hi, numeric, n_attacks, n_cols, rng) -> tuple[Queries, int]:
    exact = lo == hi
    median = np.array([np.median(lo[exact[:, j], j]) if exact[:, j].any() else 0.0
                       for j in range(lo.shape[1])])
    kept, attempts = None, 0
    # a predicate matches the row it was written from; one other match among a few
    # hundred rows rules it out before it is counted over the whole release
    probe = np.sort(rng.permutation(len(lo))[:PROBE])
    in_probe = np.isin(np.arange(len(lo)), probe)
    while attempts < ATTEMPTS * n_attacks:
        size = max(1000, 2 * (n_attacks - (len(kept) if kept else 0)))
        rows = rng.integers(0, len(lo), size=size)
        q = _from_rows(lo, hi, numeric, median, rows, _columns(rng, size, lo.shape[1], n_cols))
        attempts += size
        if len(lo) > 2 * PROBE:
            alone = q.count(lo[probe], hi[probe]) - in_probe[rows] == 0
            q = q.take(np.flatnonzero(alone))
        q = q.take(np.flatnonzero(q.count(lo, hi) == 1))
        if kept is not None:
            q = Queries(*(np.concatenate([x, y]) for x, y in (
                (kept.cols, q.cols), (kept.a, q.a), (kept.b, q.b), (kept.neg, q.neg))))
        kept = _first_unique(q)
        if len(kept) >= n_attacks:
            break
    return kept.take(np.arange(min(n_attacks, len(kept)))), attempts


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


def size_correction(counts: np.ndarray, n_control: int, n_train: int) -> tuple[float, str]:
    """``F(n_train) / F(n_control)`` fitted to the expected number of the predicates
    (matching ``counts`` control records each) that single out in random subsets of
    the control (module notes), and a note when the fit fails (then 1)."""
    from scipy.optimize import curve_fit
    from scipy.stats import hypergeom
    if n_control == n_train:
        return 1.0, ""
    sizes = np.repeat(np.linspace(min(1000, n_control), n_control, 10).astype(int), 5)
    c = counts[counts > 0]
    if not len(c):
        return 1.0, ""
    uniq, inv = np.unique(sizes, return_inverse=True)
    expected = hypergeom.pmf(1, n_control, c[None, :], uniq[:, None]).sum(axis=1)[inv]
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
            SEED],
    description="anonymeter's singling-out attack (PETS 2023) on any release: share of "
                "predicates written from the release that match exactly one training "
                "record, in excess of the control records', (a - c) / (1 - c)")
def singling_out(dataset, release: Release, *, mode: str = "multivariate",
                 n_attacks: int = 2000, n_cols: int = 3, seed: int = 0) -> Measurement:
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
    both = np.unique(np.concatenate([r.lo, r.hi], axis=1), axis=0)
    lo, hi = both[:, :r.lo.shape[1]], both[:, r.lo.shape[1]:]
    train, control = np.unique(r.train, axis=0), np.unique(r.control, axis=0)
    p = min(n_cols, lo.shape[1]) if mode == "multivariate" else 1
    values = column_values(lo, hi)
    if mode == "univariate":
        q = _univariate(lo, hi, r.numeric, values, rng)
        q = _first_unique(q.take(np.flatnonzero(q.count(lo, hi) == 1)))
        q, attempts = q.take(np.arange(min(n_attacks, len(q)))), len(q)
    else:
        q, attempts = _multivariate(lo, hi, r.numeric, n_attacks, p, rng)
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
