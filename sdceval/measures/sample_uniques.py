"""Sample uniques on the published keys (SPEC §5, "every attack at the matched point";
issue 28 item 5): the share of records whose released row is the only one in the release
with its combination of published key values.

The keys are the key attributes the release publishes among the columns the intruder
knows (``knows``, the same declaration as `sdceval.measures.reidentification`'s; default
every QI, numeric attribute and kept column), compared as that intruder compares them
(`linkage_attributes`): a generalized cell by its leaf-code range (a suppressed row's
root range is one more combination; in a composite release, a numeric attribute
published as an interval is a cell too), an exact value (bucketized QIs, kept columns)
by its code.  A row whose combination no other row shares is a *sample unique* (the
count of sdcMicro's ``fk = 1`` over its categorical key variables, Templ, Kowarik &
Meindl 2015, "Statistical Disclosure Control for Micro-Data Using the R Package
sdcMicro", §3.1): an intruder who knows the keys of a record in the release can single
it out.

Masked numeric values are not keys here: a continuous value, once perturbed, is unique
almost surely whatever the protection, so counting it would call every perturbative
release 100 % unique and say nothing; their disclosure risk is the record-linkage
measures' (`reidentification`, `linkage_risk`).  A release publishing no categorical key
has one combination, hence no unique (beyond a one-row table); ``details["keys"]``
names the keys used.
"""
from __future__ import annotations

import numpy as np

from sdceval.core.measurement import Measurement
from sdceval.core.registry import register_measure
from sdceval.core.release import ALIGNED_KINDS as KINDS, Release
from sdceval.core.combos import combine
from sdceval.measures.reidentification import KEPT, KNOWS, linkage_attributes


@register_measure(
    "sample_uniques", category="risk", direction="lower_is_better", kinds=KINDS,
    aggregate="mean", attack=True, params=[KNOWS, KEPT],
    label="sample uniques on the published categorical keys", unit="share of records",
    description="share of records whose released row is unique in the release on the "
                "published categorical keys (QI cells or values, numeric attributes "
                "published as intervals, kept columns; masked "
                "numeric values are not keys); per record 1 if unique else 0")
def sample_uniques(dataset, release: Release, *, knows=(), kept: bool = True
                   ) -> Measurement:
    """``mean_i 1[f_i = 1]``, ``f_i`` the number of released rows with row ``i``'s
    published key combination (module notes).  ``knows``: the columns the intruder
    knows (keys are among them; default every QI, numeric attribute and kept column);
    ``kept=False`` leaves the kept (passthrough) columns out of the keys.

    Returns
    -------
    Measurement
        ``per_record`` 1.0 for a sample unique, else 0.0; ``details``: ``uniques`` (the
        count), ``combinations`` (distinct key combinations), ``keys`` (the published
        key attributes and how each is compared).
    """
    lk = linkage_attributes(dataset, release, kept=kept, knows=knows,
                            who="sample_uniques")
    n = dataset.n
    cols = [lk.lo[:, j] for j in range(lk.lo.shape[1])]
    cols += [lk.hi[:, j] for j in range(lk.hi.shape[1])]
    ids, count = combine(cols, n)
    size = np.bincount(ids, minlength=count)[ids] if n else np.zeros(0, dtype=np.int64)
    per = (size == 1).astype(np.float64)
    return Measurement("sample_uniques", float(per.mean()) if n else 0.0, per, details={
        "uniques": int(per.sum()), "combinations": int(count),
        "keys": {a: h for a, h in lk.how.items() if h != "distance"}})


__all__ = ["sample_uniques"]
