"""Rank swapping (SPEC §3; Domingo-Ferrer et al. §5; Moore 1996).

Each numeric attribute is masked independently: its values are sorted and every value
is exchanged with another whose rank differs by at most ``p * n``.  Each column keeps
its multiset of values (hence all its univariate statistics); the link between a
record's attributes is what gets perturbed.
"""
from __future__ import annotations

import math

import numpy as np

from sdceval.core.registry import Param, register_method
from sdceval.core.scaling import column_exponents, from_unit, to_unit
from sdceval.methods._numeric import numeric_release

__all__ = ["p_step", "rank_swap", "swap_ranks", "swap_window", "rank_swap_column"]

# Rejection draws tried before listing the free ranks of a window explicitly.
_TRIES = 8


def swap_ranks(n: int, window: int, seed: np.random.Generator) -> np.ndarray:
    """The rank permutation of one attribute: ``perm[i]`` is the rank whose value rank
    ``i`` receives.

    Ranks are visited in increasing order; a rank not yet swapped is paired with a rank
    drawn uniformly among the not-yet-swapped ranks in ``(i, i + window]``, and the two
    exchange values; if there is none it keeps its value.  So ``perm`` is an involution
    with ``|perm[i] - i| <= window``.

    The walk is inherently sequential; it runs as a tight Python loop over a byte array
    (about 0.3 µs per rank).  A uniform draw over the window is accepted if its rank is
    free (rejection sampling, which is uniform over the free ranks); after ``_TRIES``
    failures the free ranks of the window are listed and one is drawn uniformly, which
    also detects an exhausted window.  Draws come from ``seed`` in a fixed order, so the
    result is reproducible.
    """
    perm = list(range(n))
    if n < 2 or window < 1:
        return np.asarray(perm, dtype=np.int64)
    taken = bytearray(n)
    first = seed.random(n).tolist()          # one draw per rank, always consumed
    extra = iter(())                          # further draws, only on rejection
    last = n - 1
    for i in range(n):
        if taken[i]:
            continue
        hi = min(i + window, last)
        width = hi - i
        if width == 0:
            continue
        j = i + 1 + int(first[i] * width)
        tries = 1
        while taken[j] and tries < _TRIES:
            u = next(extra, None)
            if u is None:
                extra = iter(seed.random(4096).tolist())
                u = next(extra)
            j = i + 1 + int(u * width)
            tries += 1
        if taken[j]:
            free = np.flatnonzero(np.frombuffer(taken, dtype=np.uint8, count=width,
                                                offset=i + 1) == 0)
            if len(free) == 0:
                continue
            u = next(extra, None)
            if u is None:
                extra = iter(seed.random(4096).tolist())
                u = next(extra)
            j = i + 1 + int(free[int(u * len(free))])
        taken[j] = 1
        perm[i], perm[j] = j, i
    return np.asarray(perm, dtype=np.int64)


def swap_window(n: int, p: float, top_bottom_percent: float = 0.0) -> tuple[int, int]:
    """``(cut, w)``: the number of values top- and bottom-coded at each end, and the
    window ``w = max(1, floor(p * (n - 2 cut)))`` (a 1e-9 allowance keeps e.g.
    ``0.29 * 100`` from flooring to 28)."""
    cut = int(math.floor(n * top_bottom_percent / 100.0 + 1e-9)) if top_bottom_percent else 0
    return cut, max(1, int(math.floor(p * (n - 2 * cut) + 1e-9)))


def rank_swap_column(x: np.ndarray, p: float, seed: np.random.Generator,
                     top_bottom_percent: float = 0.0) -> np.ndarray:
    """Rank-swap one column (see `rank_swap`); returns a new float64 array."""
    x = np.asarray(x, dtype=np.float64)
    n = len(x)
    order = np.argsort(x, kind="stable")      # ties keep record order
    values = x[order]
    cut, window = swap_window(n, p, top_bottom_percent)
    if cut > 0:
        # sdcMicro's rankSwap: the lowest and highest `percent` % of the values are
        # replaced by their mean and left out of the swapping; the mean is taken in
        # power-of-two units (exact) so a sum of values near 1e308 cannot overflow
        exp = column_exponents(values[:, None])
        for part in (slice(0, cut), slice(n - cut, n)):
            values[part] = from_unit(to_unit(values[part, None], exp).mean(axis=0), exp)[0]
    perm = swap_ranks(n - 2 * cut, window, seed)
    values[cut:n - cut] = values[cut:n - cut][perm]
    out = np.empty(n)
    out[order] = values
    return out


def p_step(p: float, n: int, params: dict) -> tuple[float, float]:
    """The values of ``p`` that give the same window as ``p`` on ``n`` records
    (`swap_window`: ``w = max(1, floor(p m))`` on the ``m = n - 2 cut`` ranks swapped):
    ``[w/m, (w+1)/m)``, and ``(0, 2/m)`` for the window of one rank.  Rank swapping's
    release depends on p only through w, so bisection searches windows, not reals."""
    cut, w = swap_window(n, p, params.get("top_bottom_percent") or 0.0)
    m = max(n - 2 * cut, 1)
    return (0.0 if w <= 1 else w / m, (w + 1) / m)


@register_method(
    "rank_swap", family="perturbative", random=True,
    label="rank swapping",
    description="Rank swapping: each numeric attribute's values are swapped with values "
                "whose ranks differ by at most p * n",
    params=[Param("p", float, default=0.2, low=0.0, high=1.0, low_inclusive=False,
                  protection="increasing", unit="fraction of n", step=p_step,
                  grid=(0.01, 0.05, 0.075, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9),
                  description="maximum rank distance of a swap as a fraction of the number "
                              "of records (0.2 = a 20 % window)"),
            Param("top_bottom_percent", float, default=0.0, low=0.0, high=50.0,
                  high_inclusive=False, unit="percent",
                  description="as sdcMicro's TopPercent/BottomPercent: this percentage of "
                              "the lowest and of the highest values of each attribute is "
                              "replaced by its mean and not swapped (0 = off)")])
def rank_swap(dataset, *, p: float = 0.2, top_bottom_percent: float = 0.0,
              seed: np.random.Generator):
    """Rank swapping of every numeric attribute.

    Parameters
    ----------
    dataset : Dataset
    p : float
        ``0 < p <= 1``; two values may be swapped only if their ranks differ by at most
        ``w = max(1, floor(p * n))``.
    top_bottom_percent : float
        ``0 <= t < 50``; if ``t > 0``, the ``floor(n t / 100)`` lowest and highest values
        of each attribute are first replaced by their mean (top/bottom coding) and
        excluded from swapping, and ``w`` is computed on the remaining ranks.
    seed : numpy.random.Generator

    Returns
    -------
    Release
        ``kind="perturbative"``, the numeric columns replaced by the swapped values.

    Notes
    -----
    Domingo-Ferrer et al. §5: "the ranks of two swapped values cannot differ by more
    than p % of the total number of records".  SPEC §3 reads ``p`` as a fraction
    (``p = 0.2`` = a 20 % window), as sdcMicro's ``rankSwap`` does.  Algorithm (Moore
    1996; `swap_ranks`): sort the values (a stable sort, so tied values are ranked in
    record order); visit the ranks in increasing order; pair each rank not yet swapped
    with a uniformly drawn not-yet-swapped rank among the next ``w``; exchange their
    values; a rank with no free partner keeps its value.  Without top/bottom coding each
    column's multiset of values is preserved exactly and no value moves more than ``w``
    ranks.  sdcMicro's ``rankSwap`` (``RankSwapping.h``) draws the partner the same way
    (its window ``(i, i + p n)`` is open at the top); the μ-ARGUS-derived routine in
    its sources (``rankSwap.cpp``) instead moves from one random draw to the nearest
    free rank.  Attributes are processed left to right, each consuming its own draws
    from ``seed``.

    References
    ----------
    Moore, R. (1996). Controlled data-swapping techniques for masking public use
    microdata sets. U.S. Bureau of the Census, RR 96-04.
    """
    x = dataset.numeric_matrix(who="rank_swap")
    masked = np.column_stack([rank_swap_column(x[:, j], p, seed, top_bottom_percent)
                              for j in range(x.shape[1])])
    cut, window = swap_window(len(x), p, top_bottom_percent)
    return numeric_release(dataset, masked, info={"window": window, "coded_each_end": cut},
                           method="rank_swap")
