"""Whole-record suppression is closed over households (issue 29 item 4): full-domain
generalization suppresses the household of every suppressed record whole, to a fixed
point, within the user's suppression limit (`sdceval.core.households.close_suppression`,
`sdceval.methods.generalization`)."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import sdceval
from sdceval.core.households import close_suppression
from sdceval.core.loaders import load_dataset


def _frame(rows):
    return pd.DataFrame(rows, columns=["hid", "region", "sex"])


#: households A, B in region 1; C holds the one 'X' (a class of one), D and E region 2
CHAIN = _frame([(1, "r1", "M"), (1, "r1", "F"), (2, "r1", "M"), (2, "r1", "F"),
                (3, "r2", "M"), (3, "r2", "X"), (4, "r2", "M"), (4, "r2", "F"),
                (5, "r2", "F"), (5, "r2", "F")])


def _survey_like(df):
    return sdceval.as_dataset(df, qi=["region", "sex"], household="hid",
                              household_keys=["region"])


def _split(ds, rel) -> int:
    """Households whose members are published with different household-level cells."""
    out = 0
    for q in ds.schema.household_keys:
        lo, hi = rel.cells[q]
        g = pd.DataFrame({"h": ds.households, "lo": lo, "hi": hi}).groupby("h").nunique()
        out += int((g[["lo", "hi"]] > 1).any(axis=1).sum())
    return out


def _kept_class_sizes(ds, rel) -> np.ndarray:
    """Size, among the records not suppressed, of each such record's combination of
    published cells."""
    keep = ~rel.suppressed
    parts = [pd.Series(c[keep]) for q in ds.schema.qis for c in rel.cells[q]]
    key = pd.MultiIndex.from_arrays(parts) if parts else None
    return pd.Series(1, index=key).groupby(level=list(range(len(parts)))).transform("size"
                                                                                    ).to_numpy()


def test_a_suppressed_member_no_longer_splits_its_household():
    # k = 2 at the bottom node: only C's 'X' is in a class of one; suppressing it alone
    # published C's region as '*' for one member and 'r2' for the other
    ds = _survey_like(_frame([(1, "r1", "M"), (1, "r1", "F"), (2, "r1", "M"), (2, "r1", "F"),
                              (3, "r2", "M"), (3, "r2", "X"), (4, "r2", "M"), (4, "r2", "M")]))
    rel = sdceval.anonymize(ds, "generalization", levels="0,0", max_suppression=3)
    assert _split(ds, rel) == 0
    assert rel.suppressed.tolist() == [False] * 4 + [True, True, False, False]
    assert rel.info["household_closure"]["added"] == 1
    # without the household-level key the rule suppresses the one record, as before
    plain = sdceval.as_dataset(ds, household_keys=[])
    assert sdceval.anonymize(plain, "generalization", levels="0,0",
                             max_suppression=3).suppressed.sum() == 1


def test_the_closure_is_a_fixed_point():
    ds = _survey_like(CHAIN)
    rel = sdceval.anonymize(ds, "generalization", levels="0,0", max_suppression=4)
    # C is suppressed for its 'X'; C's 'M' leaves D's 'M' alone in (r2, M), so D goes
    # too; E's two 'F' stay a class of 2
    assert np.flatnonzero(rel.suppressed).tolist() == [4, 5, 6, 7]
    assert _split(ds, rel) == 0 and rel.info["k"] == 2
    assert (_kept_class_sizes(ds, rel) >= 2).all()


def test_close_suppression_by_itself():
    # households {0,1,2} {3,4} {5,6} {7,8,9}; classes {0,1} {2,3,7} {4,5} {8,9} {6}
    classes = np.array([0, 0, 1, 1, 2, 2, 4, 1, 3, 3])
    households = np.array([0, 0, 0, 1, 1, 2, 2, 3, 3, 3])
    start = np.zeros(10, dtype=bool)
    start[6] = True   # class 4 (one record) suppressed by the rule
    ok = lambda kept: np.bincount(classes[kept], minlength=5) >= 2
    out = close_suppression(classes, start, households, ok)
    # household 2 takes record 5, which leaves record 4 alone in class 2; household 1
    # takes record 3, leaving class 1 with records 2 and 7 (still 2): the fixed point
    assert np.flatnonzero(out).tolist() == [3, 4, 5, 6]
    assert start.sum() == 1  # the caller's array is not changed
    # a threshold of 3: class 1 fails too, household 0 and 3 follow, then everything
    ok3 = lambda kept: np.bincount(classes[kept], minlength=5) >= 3
    assert close_suppression(classes, start, households, ok3).all()
    # nothing suppressed: nothing to close
    assert not close_suppression(classes, np.zeros(10, dtype=bool), households, ok).any()


def test_the_release_never_exceeds_the_limit():
    ds = _survey_like(CHAIN)
    # the closure needs 4 records; with a limit of 3 the rule is applied under a smaller
    # limit until the household-closed suppression fits
    rel = sdceval.anonymize(ds, "generalization", levels="0,0", max_suppression=3)
    assert rel.suppressed.sum() <= 3 and _split(ds, rel) == 0
    assert (_kept_class_sizes(ds, rel) >= rel.info["k"]).all()
    # with a model the search picks a node that is k-anonymous within the limit
    rel = sdceval.anonymize(ds, "generalization", k=2, max_suppression=3)
    assert rel.suppressed.sum() <= 3 and _split(ds, rel) == 0
    assert (_kept_class_sizes(ds, rel) >= 2).all()


@pytest.mark.parametrize("k", [2, 5])
def test_no_household_of_the_survey_is_split(k):
    ds = load_dataset("survey")
    rel = sdceval.anonymize(ds, "generalization", k=k)
    assert _split(ds, rel) == 0
    assert rel.suppressed.sum() <= rel.info["eta"]
    assert (_kept_class_sizes(ds, rel) >= k).all()
    assert (_kept_class_sizes(ds, rel) >= rel.info["k"]).all()
    # suppressed households are suppressed whole
    hit = np.bincount(ds.households, weights=rel.suppressed) > 0
    assert (rel.suppressed == hit[ds.households]).all()


def test_the_closure_keeps_the_model_of_every_class_left():
    """A class the removed mates leave failing the model is suppressed too: under
    ARX's rule with distinct 3-diversity every class left has 3 sensitive values."""
    ds = load_dataset("survey")
    rel = sdceval.anonymize(ds, "generalization", models=("l=3,variant=distinct",),
                            suppression_rule="arx", max_suppression=0.01)
    assert rel.info["household_closure"]["added"] > 0
    assert rel.suppressed.sum() <= rel.info["eta"] and _split(ds, rel) == 0
    keep = ~rel.suppressed
    s = ds.codes(ds.schema.sensitive)
    assert pd.Series(s[keep]).groupby(rel.classes[keep]).nunique().min() >= 3


def test_invariants_on_random_households():
    """On small random files, for a given node and for a searched one: no household is
    split, suppressed households are whole, every record left is in a class of at least
    the release's k (and the model's), the suppression stays within the limit, and
    closing the result again changes nothing (a fixed point)."""
    closed = 0
    for seed in range(15):
        rng = np.random.default_rng(seed)
        n_h = int(rng.integers(8, 30))
        sizes = rng.integers(1, 4, n_h)
        hid = np.repeat(np.arange(n_h), sizes)
        region = rng.choice(["n", "s", "e"], n_h)[hid]
        df = pd.DataFrame({"hid": hid, "region": region,
                           "sex": rng.choice(["M", "F"], len(hid)),
                           "age": rng.choice(["young", "mid", "old"], len(hid))})
        ds = sdceval.as_dataset(df, qi=["region", "sex", "age"], household="hid",
                                household_keys=["region"])
        limit = int(rng.integers(1, max(2, len(df) // 4)))
        for params in ({"levels": "0,0,0"}, {"k": 2}):
            try:
                rel = sdceval.anonymize(ds, "generalization", max_suppression=limit,
                                        **params)
            except sdceval.SdcevalError as e:  # no node within the limit: said so
                assert "max_suppression" in str(e) or "suppression limit" in str(e)
                continue
            supp = rel.suppressed
            assert supp.sum() <= limit and _split(ds, rel) == 0
            hit = np.bincount(ds.households, weights=supp) > 0
            assert (supp == hit[ds.households]).all()
            if (~supp).any():
                left = _kept_class_sizes(ds, rel)
                assert (left >= rel.info["k"]).all()
                if "k" in params:
                    assert (left >= 2).all()
            codes = pd.Series(rel.classes).factorize()[0]
            k = rel.info["k"]

            def ok(kept, c=codes, k=k):
                return np.bincount(c[kept], minlength=c.max() + 1) >= k
            assert (close_suppression(codes, supp, ds.households, ok) == supp).all()
            closed += rel.info["household_closure"]["added"] > 0
    assert closed >= 5  # the closure acted on several of the files
