"""Special uniques (SUDA2) and DIS-SUDA scores of a release (issue 29 item 2), as
sdcMicro's ``suda2`` computes them on the released keys.

A record is a *special unique* when a few of its key values already single it out in
the file: its *minimal sample uniques* (MSUs) are the smallest sets of its key values no
other record shares.  The fewer values an MSU needs, and the more MSUs a record has, the
higher its SUDA score; the DIS-SUDA score turns the scores into the probability that an
intruder's unique match on the record is correct, given the sampling fraction
(``dis_fraction``, sdcMicro's ``DisFraction``; Elliot et al., "SUDA: a program for
detecting special uniques"; Skinner & Elliot 2002).  Definitions, every place where
sdcMicro's C++ is followed rather than the definitions, and the algorithm's cost:
`sdceval.privacy.suda2`.

**Value**: the mean DIS-SUDA score over the records (per record: its DIS-SUDA score,
the column sdcMicro returns as ``disScore``).  sdcMicro's ``print`` shows a table of the
records by DIS-score band (``== 0``, ``(0.0, 0.1]``, ..., ``> 0.7``) and the attribute
contributions; both are in the details, with the records above ``threshold``.  The mean
is the value because it moves with every record's score (a share above a band edge is
0 on most files at the default sampling fraction of 1 %, where DIS scores stay small)
and because it is the plain aggregate of the per-record scores that paired comparisons
read.

The keys (``keys``; default every QI) are read as for ``individual_risk``
(`sdceval.measures.population_risk.key_array`): a QI by its published cell, the whole
domain being a missing value (sdcMicro's ``NA``: an item that is missing is in no MSU).
Every release that carries QI cells is read: generalized (recoded, locally suppressed,
PRAM-ed), bucketized (exact QIs) and whole-file (composite) releases.  A numeric
attribute named in ``keys`` is read as categories: a masked number by its released
value, an interval by its cell, an attribute the release does not publish as missing
(``details["unpublished_keys"]``); perturbative releases are read too (with the default
keys, which they do not publish, no record has an MSU).  A perturbed number is read as if
it were true (sdcMicro's reading of a microaggregated key variable): an intruder
matches numbers approximately, so perturbing one does not break the match, and this
reading never overstates protection.  SUDA2 reads the published keys only (no PRAM
correction), as sdcMicro does.
"""
from __future__ import annotations

import numpy as np

from sdceval.core.measurement import Measurement
from sdceval.core.registry import Param, register_measure
from sdceval.core.release import Release
from sdceval.measures.population_risk import (
    KEY_KINDS,
    KEYS,
    check_keys,
    key_array,
    unpublished_keys,
)
from sdceval.privacy.suda2 import MIN_KEYS
from sdceval.privacy.suda2 import suda2 as suda2_scores

MAX_SIZE = Param("max_size", int, None, low=1,
                 description="largest MSU searched (default: every size, as sdcMicro); a "
                             "smaller size finds fewer MSUs, so it can only lower scores")
DIS_FRACTION = Param("dis_fraction", float, 0.01, low=0.0, high=1.0, low_inclusive=False,
                     high_inclusive=False, unit="sampling fraction",
                     description="sampling fraction of the file (sdcMicro's DisFraction)")
ORIGINAL_SCORES = Param("original_scores", bool, True,
                        description="true: Elliot et al.'s SUDA weights (d - k)! per MSU "
                                    "of size k (sdcMicro's default); false: the IHSN "
                                    "implementation's weights")
THRESHOLD = Param("threshold", float, 0.1, low=0.0, high=1.0, high_inclusive=False,
                  unit="DIS-SUDA score",
                  description="details count the records whose DIS-SUDA score exceeds it")

#: sdcMicro's ``print.suda2`` bands of DIS-SUDA scores (right-closed; the first is
#: ``(-1, eps]``): labels and upper edges
BAND_LABELS = ("== 0", "(0.0, 0.1]", "(0.1, 0.2]", "(0.2, 0.3]", "(0.3, 0.4]",
               "(0.4, 0.5]", "(0.5, 0.6]", "(0.6, 0.7]", "> 0.7")
BAND_EDGES = np.arange(8) * 0.1 + np.finfo(float).eps


def dis_bands(dis: np.ndarray) -> dict[str, int]:
    """Records per DIS-score band, as sdcMicro's ``print.suda2``
    (``cut(dis, breaks = c(-1, seq(0, 0.7, 0.1) + eps, Inf))``)."""
    band = np.searchsorted(BAND_EDGES, dis, side="left")
    counts = np.bincount(band, minlength=len(BAND_LABELS))
    return {label: int(c) for label, c in zip(BAND_LABELS, counts)}


@register_measure(
    "suda2", category="risk", direction="lower_is_better", kinds=KEY_KINDS,
    aggregate="mean", data_check=check_keys,
    no_partial="minimal sample uniques are unique against every record of the file",
    label="mean DIS-SUDA score (special uniques)", unit="",
    params=[MAX_SIZE, DIS_FRACTION, ORIGINAL_SCORES, THRESHOLD, KEYS],
    description="sdcMicro's suda2 on the released keys: minimal sample uniques, SUDA "
                "score and DIS-SUDA score per record (the probability that a unique match "
                "is correct); value = mean DIS-SUDA score, details: records per DIS band "
                "(sdcMicro's print), attribute contributions, special uniques")
def suda2(dataset, release: Release, *, max_size: int | None = None,
          dis_fraction: float = 0.01, original_scores: bool = True,
          threshold: float = 0.1, keys=()) -> Measurement:
    """``mean_i dis_i``, ``dis_i`` record ``i``'s DIS-SUDA score on the release's keys
    (module notes; `sdceval.privacy.suda2`).

    Returns
    -------
    Measurement
        ``per_record`` ``dis_i``; ``details``: ``dis_bands`` (records per band, sdcMicro's
        print), ``attribute_contributions`` (percent of the total SUDA score per key,
        empty when no record has an MSU), ``special_uniques`` (records with an MSU),
        ``sample_uniques`` (records unique on all keys), ``pairs`` (records sharing their
        key combination with exactly one other), ``msus_by_size`` (MSUs found per size),
        ``max_suda_score``, ``mean_suda_score``, ``above_threshold``, ``threshold``,
        ``dis`` (the file's DIS probability), ``max_size``, ``dis_fraction``,
        ``original_scores``; ``note`` with fewer than 3 QIs (scored as sdcMicro pads
        them).
    """
    keys, cols = key_array(dataset, release, keys, "measure 'suda2'")
    r = suda2_scores(keys, max_size=max_size, dis_fraction=dis_fraction,
                     original_scores=original_scores)
    n = len(r.score)
    special = r.score > 0
    attr = ({q: float(c) for q, c in zip(cols, r.attribute_contributions)}
            if special.any() else {})
    dis = r.dis_score
    return Measurement("suda2", float(dis.mean()) if n else 0.0, dis, details={
        "dis_bands": dis_bands(dis), "attribute_contributions": attr,
        "special_uniques": int(special.sum()), "sample_uniques": r.uniques,
        "pairs": r.pairs,
        "msus_by_size": {k + 1: int(c) for k, c in enumerate(r.msu_counts.sum(axis=0))},
        "max_suda_score": float(r.score.max()) if n else 0.0,
        "mean_suda_score": float(r.score.mean()) if n else 0.0,
        "above_threshold": int((dis > threshold).sum()), "threshold": threshold,
        "dis": r.dis if np.isfinite(r.dis) else None, "max_size": r.max_size,
        "dis_fraction": dis_fraction, "original_scores": original_scores, "keys": cols,
        "unpublished_keys": unpublished_keys(dataset, release, cols),
        **({"note": f"{keys.shape[1]} key(s): scored as sdcMicro does, as if constant "
                    "keys made them 3 (sdcMicro warns its result might be wrong)"}
           if keys.shape[1] < MIN_KEYS else {})})


__all__ = ["BAND_LABELS", "dis_bands", "suda2"]
