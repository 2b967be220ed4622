"""Membership inference from the distance to the closest released record (DCR), on
every kind of release (issue 32 item 1).

The intruder holds a record and asks whether it was among those the release was made
from: the closer the nearest released row, the likelier.  ``n_attacks`` training
records (members) and as many control records (non-members, held out before
anonymization, `sdceval.core.control`) are drawn; each one's DCR is its distance to
the nearest released row (anonymeter's mixed distance with the cell reading of
`sdceval.measures._attack`, one range per column over the release and both sets of
records).  The value is the AUC of "closer = member": the probability that a random
member is nearer the release than a random non-member, ties counted one half
(Mann-Whitney).  0.5: the release tells members from non-members no better than a coin;
1: every member is nearer than every non-member (a copy of the original).  The details
give ``risk`` = ``max(0, 2 (AUC - 0.5))`` on the scale of the other attacks.

SDMetrics' ``DCROverfittingProtection`` is given beside it (SDMetrics' definition:
for each released row its DCR to the training data and to the holdout data; ``p`` the
share of rows strictly closer to the training data; score ``min(1, 2 (1 - p))``: 1 when
at most half the rows are closer to the training data, 0 when all are), on up to
``n_attacks`` released rows (SDMetrics' ``num_rows_subsample``) against all training
and all control records, as SDMetrics does.  A training set larger than the control set
is nearer by its size alone, so the score reads below 1 even for a release unrelated to
its records (``closer_to_training`` above 1/2): compare it between releases of the same
split, or hold out as many records as are trained on.
"""
from __future__ import annotations

import numpy as np

from sdceval.core.measurement import Measurement
from sdceval.core.registry import register_measure
from sdceval.core.release import KINDS, Release
from sdceval.measures._attack import N_ATTACKS, SEED, Reading, Search, read_release, \
    sample_rows

WHO = "membership_inference"


def auc_closer(members: np.ndarray, others: np.ndarray) -> float:
    """P(member's DCR < non-member's) + P(equal) / 2, from ranks (Mann-Whitney U)."""
    from scipy.stats import rankdata
    ranks = rankdata(np.concatenate([-members, -others]))
    n1, n2 = len(members), len(others)
    return float((ranks[:n1].sum() - n1 * (n1 + 1) / 2) / (n1 * n2))


def _records_as_release(r: Reading, records: np.ndarray) -> Reading:
    """Records as the rows searched (to find each released row's nearest record)."""
    return Reading(r.columns, r.numeric, records, records, records, records,
                   np.arange(len(records)))


@register_measure(
    "membership_inference", category="risk", direction="lower_is_better", kinds=KINDS,
    needs=("control",), label="membership inference AUC",
    params=[N_ATTACKS, SEED],
    description="distance to the closest released record as a membership test: AUC of "
                "'closer = member' over training records vs held-out control records "
                "(0.5 = no signal); SDMetrics' DCR overfitting protection in the details")
def membership_inference(dataset, release: Release, *, n_attacks: int = 2000,
                         seed: int = 0) -> Measurement:
    """AUC of membership by distance to the closest released record (module notes).

    Returns
    -------
    Measurement
        ``value`` the AUC; ``details``: ``risk`` (``max(0, 2 (AUC - 0.5))``),
        ``median_dcr_members``/``median_dcr_control``, ``dcr_overfitting_protection``
        and ``closer_to_training`` (SDMetrics' score and share), sizes.
    """
    r = read_release(dataset, release, WHO, seed)
    rng = np.random.default_rng(seed)
    size = min(n_attacks, len(r.train), len(r.control))
    members = r.train[sample_rows(len(r.train), size, rng)]
    others = r.control[sample_rows(len(r.control), size, rng)]
    everything = np.arange(len(r.columns))
    search = Search(r, everything, scale_with=np.concatenate([members, others]))
    d_in, d_out = search.nearest(members)[1][:, 0], search.nearest(others)[1][:, 0]
    auc = auc_closer(d_in, d_out)
    # SDMetrics: each released row's DCR to the training and to the control records
    # (the distance is symmetric: the records are searched from the rows' sets)
    rows = sample_rows(len(r.lo), n_attacks, rng)
    to = []
    for recs in (r.train, r.control):
        s = Search(_records_as_release(r, recs), everything)
        s.scale = search.scale
        to.append(s.nearest(r.lo[rows], records_hi=r.hi[rows])[1][:, 0])
    closer = float(np.mean(to[0] < to[1]))
    details = {"auc": auc, "risk": max(0.0, 2 * (auc - 0.5)), "members": size,
               "non_members": size,
               "median_dcr_members": float(np.median(d_in)),
               "median_dcr_control": float(np.median(d_out)),
               "dcr_overfitting_protection": min(1.0, 2 * (1 - closer)),
               "closer_to_training": closer, "released_rows_compared": len(rows)}
    return Measurement(WHO, auc, details=details)

