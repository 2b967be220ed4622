"""What the attacks of issue 32 read of a release, their one distance, and their
statistics (shared by `singling_out`, `linkability`, `inference` and
`membership_inference`).

The protocol is anonymeter's (Giomi et al., "A Unified Framework for Quantifying Privacy
Risk in Synthetic Data", PETS 2023; anonymeter 1.1.0): the intruder holds the release
and attacks records; each attack is run on *training* records (those the release was
made from) and on *control* records held out before anonymization
(`sdceval.core.control`), and beside a *baseline* attacker who guesses at random.

Reading a release (`read_release`)
----------------------------------
Every release kind is read the same way: column ``j`` of released row ``r`` is a set of
values ``[lo, hi]`` — the values it publishes:

* an exact value (perturbative, synthetic and external tables, bucketized QIs, the
  sensitive column of a generalized table, passthrough columns) is ``lo = hi`` = the
  value (a number) or its code (categorical text: codes shared by the release, the
  training and the control records, so equal text is an equal code; a published text
  that no record has matches none);
* a generalized cell (``Release.cells``, a leaf-code range of the column's hierarchy)
  is the set of its leaves: ``[lo, hi]`` leaf codes of a categorical hierarchy, the
  smallest and largest leaf value of a numeric one; a ``*`` cell (the whole domain, a
  suppressed value) is ``[-inf, inf]``.

The intruder reads what is published, no more and no less: a singling-out predicate
built from a released row says "value in the cell" (a ``*`` cell says nothing); the
distance from a value to a cell is 0 inside it and the distance to its nearest edge
outside (categorical: 0 if the leaf is in the cell's leaf range, else 1).  For exact
values this is exactly anonymeter's reading.  Drawing a value uniformly within each cell
(the other common reading) would put records at a random distance from the cell that
contains them and so *understate* what the intruder learns; evaluation never overstates
protection.

The distance (`Search`)
-----------------------
anonymeter's mixed distance (``anonymeter.neighbors.mixed_types_kneighbors``): the sum
over the columns of ``|x - y| / range`` for a numeric column and ``1[x != y]`` for a
categorical one, ``range`` = max - min of the column over the released rows and the
records searched for (anonymeter scales by both tables it is given, call by call), with
the cell reading above.  Brute force over float32 blocks of (records x released rows) of
at most `CACHE` cells, sized to stay in a processor's cache (values shifted by a median
of their column first, so that gaps between integers up to 2^24 apart stay exact):
memory is bounded and no records x records matrix is ever formed.
Among equally near rows the intruder picks one at random, each search (each half of a
linkability target) its own seeded draw: anonymeter takes the one its unstable sort
leaves first, an arbitrary row no user can reproduce and unrelated from one search to
the next.  (One order shared by both halves of a linkability target would link a
record to the row ranked first among the rows tied on either half far more often than
anonymeter does: 1.2 % of training records against its 0.2 % on PRAM-ed Adult.)

Statistics (`summary`)
----------------------
anonymeter's ``stats/confidence.py``: each success rate is the Wilson score estimate
``(s + z²/2) / (n + z²)`` with error ``z / (n + z²) · sqrt(s (n - s) / n + z²/4)``,
``z`` = 1.96 (95 %); the risk is ``(a - c) / (1 - c)`` of the attack's and the control's
Wilson rates, its error propagated from theirs, and the risk and its interval are
clipped to [0, 1].
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from sdceval.core.control import control_of
from sdceval.core.errors import SdcevalError, suggest
from sdceval.core.registry import Param
from sdceval.core.release import Release

#: roles of the columns an attack reads when the release publishes them
ATTACK_ROLES = ("qi", "numeric", "sensitive", "label", "passthrough")
#: (queries x released rows) cells of predicate counts computed at a time
BLOCK = 1 << 21
#: (records x released rows) distances computed at a time: float32 blocks (512 kB, with
#: the byte counts of categorical mismatches) that stay in a processor's level-2 cache
CACHE = 1 << 17
#: the normal quantile of a 95 % interval (anonymeter's default confidence level)
Z95 = 1.959963984540054

N_ATTACKS = Param("n_attacks", int, 2000, low=1, unit="attacks",
                  description="attacks (targets or queries) per run; anonymeter's default "
                              "is 500, more narrow the intervals at little cost here")
SEED = Param("seed", int, 0, low=0, description="seed of the targets, queries and "
                                                "random guesses")


@dataclass
class Reading:
    """A release as the attacks read it (module notes): ``lo``/``hi`` (rows x
    columns) the published sets, rows in a seeded random order (the default tie rule
    of a `Search`);
    ``train``/``control`` the records' values (codes) in the same columns; ``numeric``
    which columns are numbers; ``order`` the released row of each reading row."""

    columns: list
    numeric: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    train: np.ndarray
    control: np.ndarray
    order: np.ndarray

    def index(self, columns) -> np.ndarray:
        return np.array([self.columns.index(c) for c in columns], dtype=np.int64)

    @property
    def exact(self) -> np.ndarray:
        """Per column, whether every released row publishes an exact value."""
        return (self.lo == self.hi).all(axis=0)


def attack_columns(dataset, release: Release) -> list:
    """The data-set columns the release publishes that an attack reads (roles
    `ATTACK_ROLES`), in the data set's order."""
    s, pub = dataset.schema, set(release.data.columns)
    return [c for c in dataset.frame.columns
            if c in s and s[c].role in ATTACK_ROLES and c in pub]


def check_columns(dataset, release: Release, columns, what: str, who: str) -> list:
    """``columns`` checked as published attack columns, naming the one that is not."""
    readable = attack_columns(dataset, release)
    for c in columns:
        if c not in readable:
            why = ("is not a column of the data set" if c not in dataset.schema else
                   f"has role {dataset.schema[c].role!r}, which no attack reads"
                   if dataset.schema[c].role not in ATTACK_ROLES else
                   f"is not published by the {release.kind} release")
            raise SdcevalError(f"{who}: {what} names column {c!r}, which {why}."
                               f"{suggest(c, readable)} Columns the attack can read: "
                               f"{', '.join(map(repr, readable)) or 'none'}")
    return list(columns)


def _encode_leaves(hierarchy, values) -> np.ndarray:
    from sdceval.measures.reidentification import encode
    return encode(hierarchy, values).astype(np.float64)


def read_release(dataset, release: Release, who: str, seed: int = 0) -> Reading:
    """The release, the training and the control records as the attacks read them
    (module notes); the one reading of every kind of release."""
    control = control_of(dataset, who)
    cols = attack_columns(dataset, release)
    if not cols:
        raise SdcevalError(f"{who}: the {release.kind} release of {release.method!r} "
                           f"publishes no column of {dataset.name!r} an attack reads")
    cells = release.cells or {}
    m, d = release.n, len(cols)
    lo, hi = np.empty((m, d)), np.empty((m, d))
    tr, ct = np.empty((dataset.n, d)), np.empty((control.n, d))
    num = np.zeros(d, dtype=bool)
    for j, c in enumerate(cols):
        if c in cells:
            h = dataset.hierarchy(c)
            a, b = cells[c]
            whole = (a == 0) & (b == h.n_leaves - 1)
            if h.numeric:
                num[j] = True
                a, b = h.leaf_values[a], h.leaf_values[b]
                tr[:, j] = dataset.frame[c].to_numpy(np.float64)
                ct[:, j] = control.frame[c].to_numpy(np.float64)
            else:
                a, b = a.astype(np.float64), b.astype(np.float64)
                tr[:, j] = dataset.codes(c)
                ct[:, j] = _encode_leaves(h, control.frame[c])
            lo[:, j] = np.where(whole, -np.inf, a)
            hi[:, j] = np.where(whole, np.inf, b)
        elif dataset.schema[c].kind == "numeric":
            num[j] = True
            y = pd.to_numeric(release.data[c], errors="coerce").to_numpy(np.float64)
            if not np.isfinite(y).all():
                raise SdcevalError(
                    f"{who}: release column {c!r} (numeric) holds text, missing or "
                    "infinite values; read a generalized table with "
                    "sdceval.core.release_io.read_release so that its cells are known")
            lo[:, j] = hi[:, j] = y
            tr[:, j] = dataset.frame[c].to_numpy(np.float64)
            ct[:, j] = control.frame[c].to_numpy(np.float64)
        else:
            # categorical values published exactly: one code per text over the three
            # tables, so a published text no record has matches none
            text = np.concatenate([t[c].to_numpy(dtype=object) for t in
                                   (dataset.frame, control.frame, release.data)])
            if pd.api.types.infer_dtype(text, skipna=False) != "string":
                text = text.astype(str)      # numbers or missing values: as their text
            codes = pd.factorize(text)[0].astype(np.float64)
            tr[:, j], ct[:, j] = codes[:dataset.n], codes[dataset.n:dataset.n + control.n]
            lo[:, j] = hi[:, j] = codes[dataset.n + control.n:]
    order = np.random.default_rng([seed, 32]).permutation(m)
    return Reading(cols, num, lo[order], hi[order], tr, ct, order)


# -- the distance --------------------------------------------------------------------------
class Search:
    """Nearest released rows of records on some columns (module notes): anonymeter's
    mixed distance with the cell reading, brute force in bounded blocks."""

    def __init__(self, reading: Reading, columns: np.ndarray, scale_with=None,
                 ties=None):
        self.num = reading.numeric[columns]
        # ``ties``: the seed of this search's own random order of the rows (equally near
        # rows: the first in it), else the reading's order
        m = len(reading.lo)
        self.rank = (np.arange(m) if ties is None
                     else np.random.default_rng(ties).permutation(m))
        self.lo = np.ascontiguousarray(reading.lo[self.rank][:, columns].T)   # (d, m)
        self.hi = np.ascontiguousarray(reading.hi[self.rank][:, columns].T)
        self.exact = (self.lo == self.hi).all(axis=1)
        self.columns = columns
        self.scale = None if scale_with is None else self._scale(scale_with[:, columns])
        # distances are computed in float32 (`distances`), on values shifted by the
        # median of each numeric column's published values, so that integers within
        # 2^24 of it stay exact
        self.shift = np.zeros(len(columns))
        for j in np.flatnonzero(self.num):
            finite = self.lo[j][np.isfinite(self.lo[j])]
            self.shift[j] = np.median(finite) if len(finite) else 0.0
        self.lo32 = (self.lo - self.shift[:, None]).astype(np.float32)
        self.hi32 = (self.hi - self.shift[:, None]).astype(np.float32)

    def _f32(self, x: np.ndarray) -> np.ndarray:
        return (x - self.shift).astype(np.float32)

    def _scale(self, targets: np.ndarray) -> np.ndarray:
        """Per column max - min over the released rows' finite edges and ``targets``
        (1 for a categorical or constant column)."""
        out = np.ones(len(self.columns))
        for j in np.flatnonzero(self.num):
            vals = np.concatenate([self.lo[j], self.hi[j], targets[:, j]])
            vals = vals[np.isfinite(vals)]
            r = float(vals.max() - vals.min()) if len(vals) else 0.0
            out[j] = r if r > 0 else 1.0
        return out

    def distances(self, x: np.ndarray, scale: np.ndarray, x_hi: np.ndarray | None = None
                  ) -> np.ndarray:
        """(len(x), m) distances of records ``x`` (their values in the columns; or sets
        ``[x, x_hi]``: the gap between two sets, 0 when they meet), in float32."""
        # float32 blocks of at most `CACHE` cells stay in the processor's cache (two to
        # three times the speed of large float64 blocks); a numeric gap is taken
        # before it is scaled, so that equal gaps stay equal distances (ties).
        # Categorical mismatches are counted in bytes and added once.
        d = np.zeros((len(x), self.lo32.shape[1]), dtype=np.float32)
        t = np.empty_like(d)
        cats = int((~self.num).sum())
        miss = np.zeros(d.shape, dtype=np.uint8 if cats < 256 else np.int32) if cats else None
        x_hi = x if x_hi is None else x_hi
        point = (x == x_hi).all(axis=0)
        x, x_hi = self._f32(x), self._f32(x_hi)
        for j in range(len(self.columns)):
            v, w = x[:, j, None], x_hi[:, j, None]
            lo, hi = self.lo32[j], self.hi32[j]
            fast = self.exact[j] and point[j]
            if self.num[j]:
                if fast:
                    np.subtract(lo, v, out=t)
                    np.abs(t, out=t)
                else:
                    np.maximum(lo - w, v - hi, out=t)
                    np.maximum(t, np.float32(0.0), out=t)
                t *= np.float32(1.0 / scale[j])
                d += t
            elif fast:
                miss += lo != v
            else:
                miss += (w < lo) | (v > hi)
        if cats:
            d += miss
        return d

    def blocks(self, n: int):
        step = max(1, CACHE // max(1, self.lo.shape[1]))
        return ((a, min(n, a + step)) for a in range(0, n, step))

    def nearest(self, records: np.ndarray, k: int = 1, records_hi: np.ndarray | None = None
                ) -> tuple[np.ndarray, np.ndarray]:
        """Indices (reading rows) and distances of the ``k`` nearest released rows of
        each record (rows of ``records`` over all the reading's columns; or sets
        ``[records, records_hi]``), ties broken by the reading's row order."""
        x = records[:, self.columns]
        x_hi = None if records_hi is None else records_hi[:, self.columns]
        scale = self.scale if self.scale is not None else self._scale(x)
        m = self.lo.shape[1]
        k = min(k, m)
        idx = np.empty((len(x), k), dtype=np.int64)
        dist = np.empty((len(x), k), dtype=np.float32)
        for a, b in self.blocks(len(x)):
            d = self.distances(x[a:b], scale, None if x_hi is None else x_hi[a:b])
            if k == 1:
                i = d.argmin(axis=1)[:, None]    # the first of equal minima
            else:
                kth = np.partition(d, k - 1, axis=1)[:, k - 1:k]
                eq = d == kth
                need = k - (d < kth).sum(axis=1, keepdims=True)
                take = (d < kth) | (eq & (np.cumsum(eq, axis=1) <= need))
                i = np.nonzero(take)[1].reshape(-1, k)
                # nearest first; equally near ones in the row order
                i = np.take_along_axis(i, np.argsort(np.take_along_axis(d, i, axis=1),
                                                     axis=1, kind="stable"), axis=1)
            idx[a:b] = self.rank[i]
            dist[a:b] = np.take_along_axis(d, i, axis=1)
        return idx, dist


# -- statistics ----------------------------------------------------------------------------
def wilson(successes: float, total: int) -> tuple[float, float]:
    """Wilson score estimate of a success rate and its 95 % error (module notes)."""
    z2 = Z95 * Z95
    if total <= 0:
        return float("nan"), float("nan")
    var = successes * (total - successes) / total
    rate = (successes + 0.5 * z2) / (total + z2)
    err = Z95 / (total + z2) * np.sqrt(max(var, 0.0) + 0.25 * z2)
    return float(rate), float(err)


def _bound(value: float, err: float) -> tuple[float, list]:
    clip = lambda v: float(min(max(v, 0.0), 1.0))   # noqa: E731
    return clip(value), [clip(value - err), clip(value + err)]


def summary(main: tuple, control: tuple, baseline: tuple) -> dict:
    """Rates, intervals and risk of an attack from (successes, attacks) of the main,
    control and baseline runs (module notes: anonymeter's rules)."""
    a, ea = wilson(*main)
    c, ec = wilson(*control)
    b, eb = wilson(*baseline)
    if c >= 1:
        residual, err = float("nan"), float("nan")
    else:
        residual = (a - c) / (1 - c)
        err = float(np.hypot(ea / abs(1 - c), ec * (a - 1) / (1 - c) ** 2))
    risk, risk_ci = _bound(residual, err) if np.isfinite(residual) else (float("nan"),
                                                                        [np.nan, np.nan])
    out = {"risk": risk, "risk_ci": risk_ci, "residual": residual,
           "attack_rate": a, "attack_rate_ci": _bound(a, ea)[1],
           "control_rate": c, "control_rate_ci": _bound(c, ec)[1],
           "baseline_rate": b, "baseline_rate_ci": _bound(b, eb)[1],
           "attacks": int(main[1]), "control_attacks": int(control[1]),
           "baseline_attacks": int(baseline[1]), "successes": float(main[0]),
           "control_successes": float(control[0]), "baseline_successes": float(baseline[0]),
           "baseline_beats_attack": bool(b >= a)}
    if b >= a:
        out["warning"] = ("the random-guess baseline does as well as the attack "
                          f"({b:.3f} >= {a:.3f}): the attack is no better than guessing "
                          "on this release, so its risk says little (anonymeter warns "
                          "the same)")
    if c >= 1:
        out["warning"] = ("the attack succeeds on every control record: no excess on the "
                          "training records can be measured (anonymeter warns the same)")
    return out


def sample_rows(n: int, size: int, rng) -> np.ndarray:
    """``min(size, n)`` distinct records drawn at random (the attack's targets)."""
    return np.sort(rng.choice(n, size=min(size, n), replace=False))
