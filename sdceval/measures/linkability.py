"""Linkability (WP29 Opinion 05/2014: "the ability to link at least two records
concerning the same data subject"), measured as anonymeter 1.1.0's
``LinkabilityEvaluator`` does (Giomi et al., PETS 2023, §4.2), on every kind of release.

The intruder holds two files about the same people, one with the columns
``aux_first``, the other with ``aux_second``, and links them through the release: a
target record is *linked* when the ``n_neighbors`` released rows nearest to its first
half and those nearest to its second half share a row (anonymeter's mixed distance with
the cell reading of `sdceval.measures._attack`; among equally near rows a random one,
drawn for each half on its own).  Default halves: the intruder's
key columns the release publishes (the quasi-identifiers and numeric attributes, in the
data set's order) cut in two, the first half the larger, as anonymeter's example splits
its columns.  The control run links control records; the baseline links two random
sets of ``n_neighbors`` rows.
"""
from __future__ import annotations

import numpy as np

from sdceval.core.errors import SdcevalError
from sdceval.core.measurement import Measurement
from sdceval.core.params import ColumnNames
from sdceval.core.registry import Param, register_measure
from sdceval.core.release import KINDS, Release
from sdceval.measures._attack import (BLOCK, N_ATTACKS, SEED, Search, check_columns,
                                      read_release, sample_rows, summary)

WHO = "linkability"


def halves(dataset, release: Release, reading, first=(), second=()) -> tuple[list, list]:
    """The intruder's two sets of columns (module notes), checked."""
    if first or second:
        if not (first and second):
            raise SdcevalError(f"{WHO}: give both aux_first and aux_second (the columns of "
                               "the intruder's two files), or neither for the default split")
        check_columns(dataset, release, list(first) + list(second), "aux_first/aux_second",
                      WHO)
        both = set(first) & set(second)
        if both:
            raise SdcevalError(f"{WHO}: column {sorted(both)[0]!r} is in both aux_first and "
                               "aux_second; the two files share no column")
        return list(first), list(second)
    s = dataset.schema
    keys = [c for c in reading.columns if s[c].role in ("qi", "numeric")]
    if len(keys) < 2:
        raise SdcevalError(
            f"{WHO}: the {release.kind} release publishes {len(keys)} key column(s) "
            f"({', '.join(keys) or 'none'}); linking two files needs two at least: "
            "name the intruder's files with aux_first=... and aux_second=...")
    cut = (len(keys) + 1) // 2
    return keys[:cut], keys[cut:]


def linked(first: np.ndarray, second: np.ndarray) -> np.ndarray:
    """Per target, whether its two sets of nearest rows share one."""
    return (first[:, :, None] == second[:, None, :]).any(axis=(1, 2))


def random_sets(rng, n: int, m: int, k: int) -> np.ndarray:
    """``n`` random sets of ``k`` distinct rows of ``m`` (the baseline's guesses)."""
    if k == 1:
        return rng.integers(0, m, size=(n, 1))
    out = np.empty((n, k), dtype=np.int64)
    step = max(1, BLOCK // m)
    for a in range(0, n, step):
        b = min(n, a + step)
        out[a:b] = np.argpartition(rng.random((b - a, m)), k - 1, axis=1)[:, :k]
    return out


@register_measure(
    "linkability", category="risk", direction="lower_is_better", kinds=KINDS,
    needs=("control",), attack=True, label="linkability risk", unit="attack risk",
    params=[Param("aux_first", ColumnNames(), (),
                  description="columns of the intruder's first file (default: the first "
                              "half of the published quasi-identifiers and numeric "
                              "attributes)"),
            Param("aux_second", ColumnNames(), (),
                  description="columns of the intruder's second file (default: the other "
                              "half)"),
            Param("n_neighbors", int, 1, low=1, unit="rows",
                  description="nearest released rows per half (anonymeter's 1)"),
            N_ATTACKS, SEED],
    description="anonymeter's linkability attack (PETS 2023) on any release: share of "
                "records whose two halves have a nearest released row in common, in "
                "excess of the control records', (a - c) / (1 - c)")
def linkability(dataset, release: Release, *, aux_first=(), aux_second=(),
                n_neighbors: int = 1, n_attacks: int = 2000, seed: int = 0) -> Measurement:
    """Linkability risk ``(a - c) / (1 - c)`` (module notes), ``a``/``c`` the Wilson
    rates of training / control records linked.

    Returns
    -------
    Measurement
        ``value`` the risk (clipped to [0, 1]); ``details``: the rates and 95 %
        intervals of the attack, the control and the baseline, ``risk_ci``,
        ``aux_first``/``aux_second`` and ``baseline_beats_attack``.
    """
    r = read_release(dataset, release, WHO, seed)
    first, second = halves(dataset, release, r, aux_first, aux_second)
    rng = np.random.default_rng(seed)
    one, two = (Search(r, r.index(first), ties=[seed, 1]),
                Search(r, r.index(second), ties=[seed, 2]))

    def attack(records):
        targets = records[sample_rows(len(records), n_attacks, rng)]
        hit = linked(one.nearest(targets, n_neighbors)[0], two.nearest(targets, n_neighbors)[0])
        return int(hit.sum()), len(targets)

    main, control = attack(r.train), attack(r.control)
    k = min(n_neighbors, len(r.lo))
    guess = linked(random_sets(rng, main[1], len(r.lo), k),
                   random_sets(rng, main[1], len(r.lo), k))
    details = {"aux_first": first, "aux_second": second, "n_neighbors": k,
               **summary(main, control, (int(guess.sum()), main[1]))}
    return Measurement(WHO, details["risk"], details=details)
