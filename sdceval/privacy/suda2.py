"""Special uniques: minimal sample uniques, SUDA and DIS-SUDA scores as sdcMicro's
``suda2`` computes them (issue 29 item 2).

Definitions (Elliot, Manning, Mayes, Gurd & Bane, "SUDA: a program for detecting
special uniques", 2005; Manning, Haglin & Keane, "A recursive search algorithm for
statistical disclosure assessment", Data Min. Knowl. Disc. 16:165-196, 2008; sdcMicro
5.8.1 ``R/suda2.R`` and ``src/Suda2.h``, read, not copied):

* an *item* is a (key, value) pair with a value that is not missing (``-1`` here;
  sdcMicro's ``missing`` code / NA): a record missing on a key has no item of that key,
  so it neither matches nor is matched on it;
* an *itemset* of record ``r`` is a set of ``r``'s items on distinct keys; it is a
  *sample unique* when ``r`` is the only record with those items, and a *minimal sample
  unique* (MSU) when in addition none of its proper subsets is unique.  Uniqueness is
  monotone (a superset of a unique itemset is unique), so an itemset is minimal iff each
  of its subsets with one item fewer is not unique; the empty itemset is never an MSU
  (a one-record file has one MSU per item, as in sdcMicro);
* the SUDA score of ``r`` is ``sum over its MSUs of w(|MSU|)``, with sdcMicro's
  weights: ``w(k) = (d - k)!`` (``original_scores=True``, Elliot et al.'s score with
  the maximum MSU size equal to the number of keys ``d``) or
  ``w(k) = (2^(d-k) - 1) k! (d-k)! / d!`` (``original_scores=False``, the IHSN
  implementation's);
* the DIS-SUDA score: with ``U`` sample uniques, ``P`` records in key combinations
  shared by exactly two records, the sampling fraction ``f`` (sdcMicro's
  ``DisFraction``), ``DIS = U f / (U f + P (1 - f))`` (Skinner & Elliot 2002, the
  probability that a unique match is correct), ``Q = 1 + (8 - d) / 20``,
  ``A = sum_j s_j^-Q`` over records with ``s_j > 0``::

      dis_i = 1 / (1 + (U / DIS - U) / (s_i^Q A))    (0 when s_i = 0);

* the contribution of key ``v`` to record ``r``'s score: the weights of ``r``'s MSUs
  containing ``v`` over the score (sdcMicro's ``contributionPercent``, a fraction; the
  fractions of a record sum to more than 1 when it has MSUs of size >= 2), and the
  attribute contribution ``100 sum_r c_rv s_r / sum_r s_r`` (``attribute_contributions``).

Where sdcMicro's C++ differs from the definitions, this module does what sdcMicro does
(its numbers are the acceptance values) and says so:

1. fewer than 3 keys: sdcMicro appends constant columns up to 3, so ``d = 3`` in the
   weights and in ``Q`` (and it warns); same here (a constant key has no MSU);
2. ``U`` is counted as the records alone in their bucket of a 16-bit rotate-and-add
   hash of their values (a record unique but sharing its bucket is not counted), and
   the DIS arithmetic is single precision.  Algebraically ``U / DIS - U = P (1-f) / f``
   does not depend on ``U``; the count changes only the rounding, which is reproduced
   here (the hash is taken of the codes given, missing as sdcMicro's default code
   -999, so it equals sdcMicro's when the codes are the values sdcMicro was given).
   When no record is alone in its bucket sdcMicro divides 0 by 0 (NaN scores); here the
   true number of sample uniques is used instead;
3. contributions with *correlated* items (two items held by exactly the same records,
   e.g. two keys coding one variable): sdcMicro finds one MSU per class of correlated
   items and counts ``prod_i n_i`` MSUs (``n_i`` the class sizes; the score is right),
   but credits the contributions as follows, reproduced here: for a 2-item MSU ``{a, b}``
   key(a) gets ``n_b w``, key(b) gets ``n_a w`` and every other member of either class
   gets ``w``; for ``k >= 3`` items every representative's key (the class member on the
   first key) gets ``prod n_i w`` and the other members nothing.  Without correlated
   items (the usual case) this is the definition.

``max_size`` (not in sdcMicro, which always searches every size): the largest MSU
searched.  MSUs above it are not found, so a smaller ``max_size`` can only lower the
scores (it understates risk); the weights stay sdcMicro's.

Algorithm and cost
------------------
The records are first collapsed to their distinct key combinations (a record whose
combination is shared has no MSU; it only counts).  Then a level-wise search over key
subsets ``S`` (sizes ``1..K``): a record unique on its full key is *alive* on ``S``
when it has no missing value on ``S`` and none of its ``|S|-1`` sub-itemsets is unique
or missing (they are remembered as one boolean per subset and candidate); the alive
records that are unique on ``S`` (grouping the distinct combinations on ``S`` with
``pandas.factorize``) have an MSU on ``S``.  A subset with no alive record is not
grouped, and a record dead on every subset of a level leaves the search.  Cost:
``O(sum_{k<=K} C(d, k) u)`` time for ``u`` distinct combinations (at most ``2^d u``;
hash grouping, no per-record Python loop) and ``O(C(d, k) c)`` booleans per level for
``c`` candidate records.  SUDA2's recursive search (Manning et al.) prunes the same
subsets by the same property; the count of subsets bounds both.
"""
from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from itertools import combinations
from math import factorial

import numpy as np

from sdceval.core.combos import combine, dense
from sdceval.core.errors import SdcevalError

#: sdcMicro's default ``missing`` code (``suda2(..., missing=-999)``), which replaces
#: NA before the C++ hashes the records
SDCMICRO_MISSING = -999
#: sdcMicro pads the keys with constant columns up to this many
MIN_KEYS = 3


@dataclass(frozen=True)
class Suda2Result:
    """Per-record and summary results of `suda2` (module notes).

    ``score``/``dis_score``: (n,) SUDA and DIS-SUDA scores; ``msu_counts``: (n, K)
    number of MSUs of size ``k + 1`` per record; ``contributions``: (n, d) sdcMicro's
    ``contributionPercent`` (a fraction of the record's score; 0 without MSU);
    ``attribute_contributions``: (d,) percent of the total score (NaN when no record
    has an MSU, as sdcMicro); ``uniques``: records unique on the full key; ``pairs``:
    records whose key combination exactly one other record shares; ``dis``: the file's
    DIS probability as sdcMicro computes it (single precision; NaN without uniques);
    ``weights``: the score weight of each MSU size; ``max_size``: the largest MSU size
    searched."""

    score: np.ndarray
    dis_score: np.ndarray
    msu_counts: np.ndarray
    contributions: np.ndarray
    attribute_contributions: np.ndarray
    uniques: int
    pairs: int
    dis: float
    weights: np.ndarray
    max_size: int


def score_weights(d: int, original_scores: bool = True) -> np.ndarray:
    """sdcMicro's weight of an MSU of size ``k = 1..d`` on ``d`` keys (module notes),
    exact rationals rounded once."""
    if original_scores:
        return np.array([float(factorial(d - k)) for k in range(1, d + 1)])
    return np.array([float(Fraction((2 ** (d - k) - 1) * factorial(k) * factorial(d - k),
                                    factorial(d))) for k in range(1, d + 1)])


def _check(keys, max_size, dis_fraction) -> np.ndarray:
    arr = np.asarray(keys)
    if arr.ndim != 2:
        raise SdcevalError(f"suda2: keys must be a 2-d array (records x keys), got shape "
                           f"{arr.shape}")
    if not np.issubdtype(arr.dtype, np.integer):
        raise SdcevalError(f"suda2: keys must be integer codes (-1 = missing), got dtype "
                           f"{arr.dtype}")
    if arr.shape[1] == 0:
        raise SdcevalError("suda2: no key variable; give at least one key (QI)")
    if arr.size and arr.min() < -1:
        raise SdcevalError("suda2: key codes must be >= 0, or -1 for a missing value; "
                           f"got {int(arr.min())}")
    if max_size is not None and (isinstance(max_size, bool) or int(max_size) != max_size
                                 or max_size < 1):
        raise SdcevalError(f"suda2: max_size must be an integer >= 1 or None (every "
                           f"size), got {max_size!r}")
    if not 0.0 < float(dis_fraction) < 1.0:
        raise SdcevalError(f"suda2: dis_fraction must be in (0, 1) (the sampling "
                           f"fraction), got {dis_fraction!r}")
    return arr.astype(np.int64, copy=False)


def _factorize(values: np.ndarray) -> tuple[np.ndarray, int]:
    return dense(values, "first")


def _combine(cols: np.ndarray, sizes=None) -> tuple[np.ndarray, int]:
    """Id of each row's combination of the columns of ``cols`` (u, k), and the count
    (`sdceval.core.combos.combine`; ``sizes``: the columns are dense codes already)."""
    return combine(cols, len(cols), sizes=sizes)


def _support(cols: np.ndarray, sizes: list, cnt: np.ndarray) -> np.ndarray:
    """For each row of dense codes ``cols``, the records (``cnt`` per row) sharing its
    combination: counted directly on the mixed-radix code when the code space is small
    (no hashing), else on the combination ids."""
    space = int(np.prod([float(m) for m in sizes]))
    if space <= max(4 * len(cols), 1 << 16):
        strides = np.cumprod([1] + list(sizes[:0:-1]))[::-1]
        code = cols @ np.asarray(strides, dtype=np.int64)
    else:
        code, space = _combine(cols, sizes)
    return np.bincount(code, weights=cnt, minlength=space).astype(np.int64)[code]


def sdcmicro_unique_count(keys: np.ndarray) -> int:
    """The records alone in their bucket of sdcMicro's 16-bit record hash
    (``CEntry::InitValue``: rotate left by one, add the value; missing as -999, keys
    padded with 1s up to 3) — what sdcMicro counts as sample uniques (module notes, 2)."""
    n, d = keys.shape
    vals = np.where(keys < 0, SDCMICRO_MISSING, keys)
    h = np.zeros(n, dtype=np.int64)
    for j in range(max(d, MIN_KEYS)):
        v = vals[:, j] if j < d else 1
        h = (((h << 1) & 0xFFFF) + v + ((h >> 15) & 1)) % 65536
    return int((np.bincount(h, minlength=65536) == 1).sum())


def _dis_scores(score: np.ndarray, u_sdc: int, u_true: int, pairs: int, d: int,
                dis_fraction: float) -> tuple[np.ndarray, float]:
    """sdcMicro's DIS-SUDA arithmetic, in its precisions (module notes, 2)."""
    f32, f = np.float32, np.float32(dis_fraction)
    u = f32(u_sdc if u_sdc > 0 else u_true)
    with np.errstate(invalid="ignore", divide="ignore"):
        dis = f32(u * f) / f32(f32(u * f) + f32(f32(pairs) * f32(f32(1.0) - f)))
        c = float(f32(f32(u / dis) - u))
    q = float(f32(1.0) + f32(f32(8.0) - f32(d)) / f32(20.0))
    out = np.zeros(len(score))
    pos = score > 0
    if pos.any():
        sq = score[pos] ** q
        adj = float(np.sum(1.0 / sq))
        out[pos] = 1.0 / (1.0 + c / (sq * adj))
    return out, float(dis)


def _correlated(pat: np.ndarray, cnt: np.ndarray, cand: np.ndarray) -> np.ndarray:
    """For each candidate (a distinct combination held by one record) and key, the
    first key whose item of the candidate is held by exactly the same records
    (sdcMicro's correlated items, module notes 3), else the key itself.  Items held
    by one record, or missing, are never correlated."""
    u, d = pat.shape
    nonignored = np.minimum(cnt, 2)  # sdcMicro keeps 2 copies of a repeated record
    rep = np.tile(np.arange(d), (len(cand), 1))
    if len(cand) == 0:
        return rep
    freq, npat, codes = [], [], []
    for v in range(d):
        c, m = _factorize(pat[:, v])
        ok = pat[:, v] >= 0
        codes.append(np.where(ok, c, -1))
        freq.append(np.bincount(c[ok], weights=nonignored[ok], minlength=m))
        npat.append(np.bincount(c[ok], minlength=m))
    for w in range(1, d):
        for v in range(w):  # the first (lowest) key wins: sdcMicro's item order
            cv, cw = codes[v], codes[w]
            ok = (cv >= 0) & (cw >= 0)
            pair, _ = _combine(np.stack([cv[ok], cw[ok]], axis=1))
            joint = np.bincount(pair)[pair]
            same = np.zeros(u, dtype=bool)
            same[np.flatnonzero(ok)] = ((joint == npat[v][cv[ok]])
                                        & (joint == npat[w][cw[ok]])
                                        & (freq[v][cv[ok]] >= 2))
            hit = same[cand] & (rep[:, w] == w)
            rep[hit, w] = rep[hit, v]
    return rep


def suda2(keys, *, max_size: int | None = None, dis_fraction: float = 0.01,
          original_scores: bool = True) -> Suda2Result:
    """MSUs, SUDA and DIS-SUDA scores and key contributions of the records of ``keys``
    (an (n, d) integer array of category codes, ``-1`` = missing), as sdcMicro's
    ``suda2(data, missing=-999, DisFraction=dis_fraction,
    original_scores=original_scores)`` (module notes: definitions, where sdcMicro's
    reading is followed, algorithm and cost).  ``max_size``: the largest MSU searched
    (None: every size, as sdcMicro)."""
    keys = _check(keys, max_size, dis_fraction)
    n, d = keys.shape
    dw = max(d, MIN_KEYS)
    size = d if max_size is None else min(int(max_size), d)
    weights = score_weights(dw, original_scores)
    msu = np.zeros((n, size), dtype=np.int64)
    contrib = np.zeros((n, d))
    if n == 0:
        empty = np.zeros(0)
        return Suda2Result(empty, empty, msu, contrib, np.full(d, np.nan), 0, 0,
                           float("nan"), weights[:size], size)
    pid, u = _combine(keys)
    cnt = np.bincount(pid, minlength=u)
    first = np.unique(pid, return_index=True)[1]  # the first record of each combination
    pat = keys[first]
    cand = np.flatnonzero(cnt == 1)  # combinations held by one record
    rec = first[cand]  # ... and that record
    miss = pat < 0
    any_missing = bool(miss.any())
    dense = [_factorize(pat[:, j]) for j in range(d)]  # missing (-1) gets a code too
    codes = np.stack([c for c, _ in dense], axis=1)
    sizes = [m for _, m in dense]
    rep = _correlated(pat, cnt, cand)
    cmsu = np.zeros((len(cand), size), dtype=np.int64)
    ccon = np.zeros((len(cand), d))
    live = np.arange(len(cand))  # candidates still in the search
    blocked = {(): np.zeros(len(cand), dtype=bool)}
    for k in range(1, size + 1):
        nxt, cmiss = {}, miss[cand[live]]
        for s in combinations(range(d), k):
            sl = list(s)
            b = cmiss[:, sl].any(axis=1) if any_missing else np.zeros(len(live), bool)
            for i in range(k):
                b |= blocked[s[:i] + s[i + 1:]]
            if b.all():
                nxt[s] = b
                continue
            if any_missing:
                ok = ~miss[:, sl].any(axis=1)
                support = np.zeros(u, dtype=np.int64)
                support[ok] = _support(codes[:, sl][ok], [sizes[j] for j in sl], cnt[ok])
            else:
                support = _support(codes[:, sl], [sizes[j] for j in sl], cnt)
            alive = np.flatnonzero(~b)
            found = alive[support[cand[live[alive]]] == 1]
            if len(found):
                _credit(found, live, s, rep, cmsu, ccon, weights)
                b[found] = True
            nxt[s] = b
        if k == size:
            break
        still = ~np.logical_and.reduce(list(nxt.values()))
        if not still.any():
            break
        blocked = {s: b[still] for s, b in nxt.items()}
        live = live[still]
    msu[rec] = cmsu
    score = msu @ weights[:size]
    scored = score[rec] > 0
    contrib[rec[scored]] = ccon[scored] / score[rec[scored], None]
    total = score.sum()
    with np.errstate(invalid="ignore", divide="ignore"):
        attr = 100.0 * (contrib * score[:, None]).sum(axis=0) / total
    pairs = int(2 * (cnt == 2).sum())
    dis_score, dis = _dis_scores(score, sdcmicro_unique_count(keys), len(cand), pairs,
                                 dw, dis_fraction)
    return Suda2Result(score, dis_score, msu, contrib, attr, len(cand), pairs, dis,
                       weights[:size], size)


def _credit(found: np.ndarray, live: np.ndarray, s: tuple, rep: np.ndarray,
            cmsu: np.ndarray, ccon: np.ndarray, weights: np.ndarray) -> None:
    """Count the MSU on keys ``s`` of the candidates ``live[found]`` and credit the
    keys' contributions as sdcMicro does (module notes, 3)."""
    k, c = len(s), live[found]
    cmsu[c, k - 1] += 1
    w = weights[k - 1]
    r = rep[c]
    sl = list(s)
    canonical = (r[:, sl] == np.array(sl)).all(axis=1)
    if k == 1:
        ccon[c, s[0]] += w
        return
    c, r = c[canonical], r[canonical]
    if len(c) == 0:
        return
    cls = np.stack([(r == v).sum(axis=1) for v in sl], axis=1)  # class sizes
    if k == 2:
        v, x = s
        ccon[c, v] += cls[:, 1] * w
        ccon[c, x] += cls[:, 0] * w
        others = ((r == v) | (r == x))
        others[:, v] = others[:, x] = False
        ccon[c] += others * w
    else:
        ccon[np.ix_(c, sl)] += (cls.prod(axis=1) * w)[:, None]


__all__ = ["MIN_KEYS", "SDCMICRO_MISSING", "Suda2Result", "score_weights",
           "sdcmicro_unique_count", "suda2"]
