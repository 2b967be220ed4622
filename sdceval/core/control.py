"""A control set: records held out before anonymization (issue 32 item 1).

The attacks of `sdceval.measures.singling_out`, `linkability`, `inference` and
`membership_inference` follow anonymeter's protocol (Giomi et al., "A Unified Framework
for Quantifying Privacy Risk in Synthetic Data", PETS 2023, §3): part of the original is
held out *before* any method runs, the release is made from the rest (the *training*
records), and each attack is run twice, on training records and on the held-out
*control* records.  What the attack achieves on the control records is what the release
teaches about anyone from the same population; only the excess on the training records
is a leak about the records released.

`hold_out` returns the training data set, with the held-out records as its
``control`` attribute.  Both are built with the hierarchies of the *whole* data set fixed
in their schemas (so a leaf code means the same value in the two, and a generalized cell
of the release reads the same on either) and with the same roles.  The draw is a simple
random sample of records (of households, when the data set has a household column, so
that no household is split between the two), seeded; the caller's data set and frame
are left as they are.
"""
from __future__ import annotations

import numpy as np

from sdceval.core.dataset import Dataset
from sdceval.core.errors import SdcevalError
from sdceval.core.schema import ColumnSpec, Schema

#: default share of the records held out: 20 %, a control set of 500-1 000 records (the
#: size anonymeter's documentation advises) for files of 2 500-5 000 records
FRACTION = 0.2


def _fixed_schema(dataset: Dataset) -> Schema:
    """The data set's schema with every coded column's hierarchy fixed (the one built
    from the whole data set when the user gave none)."""
    s = dataset.schema
    coded = set(s.qis) | {c for c in (s.sensitive, s.label) if c is not None}
    cols = []
    for c in s.columns:
        h = c.hierarchy
        if c.name in coded:
            h = dataset.hierarchy(c.name)
        cols.append(ColumnSpec(c.name, c.role, c.kind, h))
    return Schema(cols, missing=s.missing, household_keys=s.household_keys, kept=s.kept)


def hold_out(dataset: Dataset, fraction: float | None = FRACTION, size: int | None = None,
             seed: int = 0) -> Dataset:
    """The training data set (the records methods will anonymize) whose ``control`` is
    a `Dataset` of the records held out.

    ``size`` (a number of records) wins over ``fraction`` (a share of them).  With a
    household column whole households are held out, as many as give about that share.
    Both parts keep the data set's roles and the hierarchies built on all its records,
    so their codes agree.  Seeded (``numpy.random.default_rng(seed)``); the caller's
    data set is not changed.
    """
    if not isinstance(dataset, Dataset):
        raise SdcevalError(f"hold_out needs a Dataset, got {type(dataset).__name__}")
    n = dataset.n
    if size is not None:
        if not isinstance(size, (int, np.integer)) or isinstance(size, bool):
            raise SdcevalError(f"hold_out: size must be a number of records, got {size!r}")
        want = int(size)
    else:
        if fraction is None or not 0 < float(fraction) < 1:
            raise SdcevalError(f"hold_out: fraction must be between 0 and 1 (exclusive), "
                               f"got {fraction!r}")
        want = int(round(float(fraction) * n))
    if not 2 <= want <= n - 2:
        raise SdcevalError(
            f"hold_out: a control set of {want} of the {n} records of {dataset.name!r} "
            "leaves too few on one side; each part needs at least 2 records (give a "
            "fraction or size between them)")
    rng = np.random.default_rng(seed)
    hh = dataset.households
    if hh is None:
        held = np.zeros(n, dtype=bool)
        held[rng.choice(n, size=want, replace=False)] = True
    else:
        # whole households, in a random order, until the share is reached
        order = rng.permutation(int(hh.max()) + 1)
        sizes = np.bincount(hh)[order]
        take = order[: int(np.searchsorted(np.cumsum(sizes), want)) + 1]
        held = np.isin(hh, take)
        if held.all() or held.sum() < 2:
            raise SdcevalError(f"hold_out: the households of {dataset.name!r} cannot be "
                               "split into two parts of at least 2 records at this size")
    schema = _fixed_schema(dataset)
    frame = dataset.frame
    training = Dataset(frame[~held].reset_index(drop=True), schema, name=dataset.name)
    training.control = Dataset(frame[held].reset_index(drop=True), schema,
                               name=f"{dataset.name} (control)")
    training.input_files = dataset.input_files
    return training


def control_of(dataset: Dataset, who: str) -> Dataset:
    """The data set's control set, or the one-line error saying how to make one."""
    from sdceval.core.release_needs import require
    require(dataset, ("control",), who)
    return dataset.control
