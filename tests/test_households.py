"""A release never splits a household on a household-level key (issue 29 item 4):
every method that changes such a key changes it for all members alike, and Mondrian,
which generalizes class by class, publishes the hull of the members' cells."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import sdceval
from sdceval.core.households import household_hull, lowest_cover
from sdceval.core.loaders import load_dataset


def _split(ds, rel) -> dict:
    out = {}
    for q in ds.schema.household_keys:
        lo, hi = rel.cells[q]
        g = pd.DataFrame({"h": ds.households, "lo": lo, "hi": hi}).groupby("h").nunique()
        out[q] = int((g[["lo", "hi"]] > 1).any(axis=1).sum())
    return out


@pytest.mark.parametrize("method, params", [
    ("mondrian", {"k": 5}), ("mondrian+intervals", {"k": 5}),
    ("local_suppression", {"k": 3}), ("pram", {"pd": 0.5}), ("recode", {"level": 1}),
    ("top_bottom_coding:quantile=0.99+local_suppression:target=risk", {"risk": 0.05})])
def test_no_household_is_split_on_a_household_level_key(method, params):
    ds = load_dataset("survey")
    rel = sdceval.anonymize(ds, method, **params, seed=3)
    assert set(_split(ds, rel).values()) == {0}
    if method.startswith("mondrian"):
        # the same method without the household-level keys splits thousands
        plain = sdceval.as_dataset(ds, household_keys=[])
        assert sum(_split(ds, sdceval.anonymize(plain, method, **params)).values()) > 1000
        # every cell still holds its record's value, every record stays compatible with
        # at least k records
        for q in ds.schema.qis:
            lo, hi = rel.cells[q]
            assert ((lo <= ds.codes(q)) & (ds.codes(q) <= hi)).all()


def test_the_hull_of_a_categorical_key_is_a_node():
    ds = load_dataset("survey")
    h = ds.hierarchy("region")
    lo, hi = lowest_cover(h, np.array([0, 0, 3]), np.array([0, 1, 3]))
    assert (lo[0], hi[0]) == (0, 0) and (lo[2], hi[2]) == (3, 3)
    level = next(v for v in range(h.height + 1)
                 if h.generalize(np.array([0]), v)[0][0] == h.generalize(np.array([1]), v)[0][0])
    assert (lo[1], hi[1]) == tuple(int(x[0]) for x in h.generalize(np.array([0]), level))
    # a data set without household-level keys: cells returned as they are
    plain = sdceval.as_dataset(ds, household_keys=[])
    cells = {q: (ds.codes(q), ds.codes(q)) for q in ds.schema.qis}
    assert household_hull(plain, cells) == (cells, False)
