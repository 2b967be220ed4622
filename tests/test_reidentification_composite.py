"""`reidentification`, `attribute_inference` and `sample_uniques` on whole-file
(``composite``) releases (issue 28 item 1) and for a declared intruder (``knows``,
item 2).

A brute-force oracle written here with plain loops over records and rows, straight from
the module notes of `sdceval.measures.reidentification` (compatible rows, distance over
the published numeric values, ``C_i`` at the minimal distance, weights ``1/m_j``), is
compared to the measures on small random composite releases: cells coarse or exact on
the QIs, overlapping or partitioning, suppressed rows (root cells), masked numeric
values with ties and duplicates, cells on a numeric-role column, bucketized sensitive
values, kept columns, both intruders and random ``knows`` subsets.  Then worked
examples small enough to check by hand.
"""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import sdceval
from sdceval import Dataset, Hierarchy, Release, Schema

REGION = Hierarchy([[f"r{i}", f"R{i // 2}", "*"] for i in range(6)], name="region")
TIE = 1e-12


def table(n: int, seed: int, *, numeric_sensitive: bool = False,
          kept: bool = False) -> Dataset:
    """Two QIs (age numeric with intervals, region), two numeric attributes (income
    with few distinct values: ties; spend), a sensitive attribute and, with ``kept``,
    a household id published unchanged."""
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame({
        "age": rng.integers(20, 50, n),
        "region": [f"r{i}" for i in rng.integers(0, 6, n)],
        "income": rng.integers(10, 16, n).astype(float),
        "spend": np.round(rng.normal(50, 10, n), 1),
        "disease": ([f"d{i}" for i in rng.integers(0, 4, n)] if not numeric_sensitive
                    else rng.integers(0, 30, n).astype(float)),
    })
    if kept:
        frame["household"] = [f"h{i}" for i in rng.integers(0, max(2, n // 2), n)]
    age = Hierarchy.intervals(frame["age"], [5, 10, 20], name="age")
    schema = Schema.from_roles(frame, qi=["age", "region"], numeric=["income", "spend"],
                               sensitive="disease",
                               passthrough=["household"] if kept else [],
                               hierarchies={"region": REGION, "age": age})
    return Dataset(frame, schema, name="composite")


def random_cells(h: Hierarchy, codes: np.ndarray, rng, overlap: bool):
    """Per row a cell holding its own code: a node of a random level (cells that
    partition the records within a level), or, with ``overlap``, a random range."""
    n = len(codes)
    if overlap:
        lo = np.clip(codes - rng.integers(0, 3, n), 0, None)
        hi = np.clip(codes + rng.integers(0, 3, n), None, h.n_leaves - 1)
        return lo, hi
    lo, hi = codes.copy(), codes.copy()
    level = rng.integers(0, h.height + 1, n)
    for v in range(h.height + 1):
        a, b = h.generalize(codes, v)
        lo[level == v], hi[level == v] = a[level == v], b[level == v]
    return lo, hi


def composite(ds: Dataset, seed: int, *, suppress: float, overlap: bool,
              spend_cells: bool, buckets: bool, duplicates: bool) -> Release:
    """A random composite release of ``ds`` (module docstring of this file)."""
    rng = np.random.default_rng(seed + 1)
    n = ds.n
    sup = rng.random(n) < suppress
    cells, data = {}, {}
    for q in ds.schema.qis:
        h = ds.hierarchy(q)
        lo, hi = random_cells(h, np.asarray(ds.codes(q)), rng, overlap)
        lo[sup], hi[sup] = 0, h.n_leaves - 1
        cells[q] = (lo, hi)
        data[q] = h.labels_of(lo, hi)
    income = ds.frame["income"].to_numpy(float)
    if duplicates:   # group means (microaggregation-like): duplicated released points
        group = rng.integers(0, max(1, n // 3), n)
        means = pd.Series(income).groupby(group).transform("mean").to_numpy()
        data["income"] = means
    else:            # integer noise on integer values: many equidistant points
        data["income"] = income + rng.integers(-1, 2, n)
    spend = ds.frame["spend"].to_numpy(float)
    if spend_cells:  # an interval QI step on a numeric attribute: no number published
        h = ds.hierarchy("spend")
        lo, hi = random_cells(h, np.asarray(ds.codes("spend")), rng, overlap)
        cells["spend"] = (lo, hi)
        data["spend"] = h.labels_of(lo, hi)
    else:
        data["spend"] = spend + np.round(rng.normal(0, 3, n), 1)
    classes = sens = None
    if buckets:      # sensitive values permuted within classes of about 3 rows
        classes = rng.integers(0, max(1, n // 3), n)
        s = np.asarray(ds.codes("disease")).copy()
        for c in np.unique(classes):
            idx = np.flatnonzero(classes == c)
            s[idx] = s[rng.permutation(idx)]
        sens = s
    return Release.composite(ds, pd.DataFrame(data), cells=cells, classes=classes,
                             suppressed=sup, sensitive_codes=sens, buckets=buckets,
                             method="random composite")


# -- the oracle: loops over records and rows, straight from the module notes -----------
def oracle(ds: Dataset, rel: Release, *, knows=None, kept: bool = True,
           weighted: bool = True, tol: float = 0.05):
    """(reidentification, attribute_inference, sample_uniques) per record."""
    s, n, data = ds.schema, ds.n, rel.data
    cells = dict(rel.cells or {})
    known = list(knows) if knows else list(s.qis) + list(s.numeric) + list(s.passthrough)
    if not kept:
        known = [c for c in known if c not in s.passthrough]
    known = [c for c in known if c in data.columns or c in cells]
    codes = {c: np.asarray(ds.codes(c)) for c in known if c in cells}
    exact = [c for c in known if c not in cells and c in s.passthrough + s.qis]
    num = [c for c in known if c in s.numeric and c not in cells]
    mu = {c: ds.frame[c].mean() for c in num}
    sd = {c: ds.frame[c].std(ddof=0) or 1.0 for c in num}

    def compatible(i, j):
        for c in codes:
            lo, hi = cells[c]
            if not lo[j] <= codes[c][i] <= hi[j]:
                return False
        return all(str(data[c].iloc[j]) == str(ds.frame[c].iloc[i]) for c in exact)

    def dist(i, j):
        return math.sqrt(sum(((ds.frame[c].iloc[i] - mu[c]) / sd[c]
                              - (float(data[c].iloc[j]) - mu[c]) / sd[c]) ** 2
                             for c in num))

    comp = [[compatible(i, j) for j in range(n)] for i in range(n)]
    m = [sum(comp[i][j] for i in range(n)) for j in range(n)]
    w = [(1.0 / m[j] if m[j] else 0.0) if weighted else 1.0 for j in range(n)]
    # sensitive: released codes, matching rule, buckets
    h = ds.hierarchy("disease")
    orig = np.asarray(ds.codes("disease"))
    released = np.asarray(rel.sensitive(ds))
    if h.numeric:
        v = h.leaf_values
        width = tol * (v[orig].max() - v[orig].min())

        def match(a, b):
            return v[b] - width <= v[a] <= v[b] + width
    else:
        def match(a, b):
            return a == b
    q = [sum(match(orig[k], orig[i]) for k in range(n)) / n for i in range(n)]
    bucket = rel.classes if rel.sensitive_in_buckets else None

    def p(j, code):   # P_j(s): a row's own value, or its bucket's share
        if bucket is None:
            return float(match(released[j], code))
        members = [k for k in range(n) if bucket[k] == bucket[j]]
        return sum(match(released[k], code) for k in members) / len(members)

    reid, inference = np.zeros(n), np.zeros(n)
    for i in range(n):
        rows = [j for j in range(n) if comp[i][j]]
        if not rows:
            continue
        d = {j: dist(i, j) for j in rows}
        dmin = min(d.values())
        C = [j for j in rows if d[j] <= dmin * (1 + TIE)]
        W = sum(w[j] for j in C)
        reid[i] = w[i] / W if i in C else 0.0
        inference[i] = sum(w[j] * p(j, orig[i]) for j in C) / W - q[i]
    # sample uniques: a row's combination of published (known) key cells / values
    keys = [tuple([(int(cells[c][0][j]), int(cells[c][1][j])) for c in codes]
                  + [str(data[c].iloc[j]) for c in exact]) for j in range(n)]
    uniq = np.array([float(keys.count(keys[j]) == 1) for j in range(n)])
    return reid, inference, uniq


def check(ds, rel, *, knows=None, kept=True, tol=0.05):
    params = {"kept": kept, **({"knows": knows} if knows is not None else {})}
    for intruder in ("weighted", "uniform"):
        reid, inf, uniq = oracle(ds, rel, knows=knows, kept=kept,
                                 weighted=intruder == "weighted", tol=tol)
        got = sdceval.evaluate(ds, rel, "reidentification", intruder=intruder, **params)
        np.testing.assert_allclose(got.per_record, reid, rtol=0, atol=1e-9)
        assert got.value == pytest.approx(reid.mean(), abs=1e-9)
        got = sdceval.evaluate(ds, rel, "attribute_inference", intruder=intruder,
                               tol=tol, **params)
        np.testing.assert_allclose(got.per_record, inf, rtol=0, atol=1e-9)
    got = sdceval.evaluate(ds, rel, "sample_uniques", **params)
    np.testing.assert_array_equal(got.per_record, uniq)


KNOWABLE = ("age", "region", "income", "spend", "household")


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**31), n=st.integers(4, 22),
       suppress=st.sampled_from([0.0, 0.15, 0.4]), overlap=st.booleans(),
       spend_cells=st.booleans(), buckets=st.booleans(), duplicates=st.booleans(),
       numeric_sensitive=st.booleans(), kept=st.booleans(),
       knows=st.one_of(st.none(), st.lists(st.sampled_from(KNOWABLE), min_size=1,
                                           max_size=4, unique=True)))
@pytest.mark.slow  # over 1.5 s: the whole suite runs it
def test_composite_matches_the_oracle(seed, n, suppress, overlap, spend_cells, buckets,
                                      duplicates, numeric_sensitive, kept, knows):
    ds = table(n, seed, numeric_sensitive=numeric_sensitive, kept=kept)
    if knows is not None and not kept:
        knows = [c for c in knows if c != "household"] or None
    rel = composite(ds, seed, suppress=suppress, overlap=overlap, spend_cells=spend_cells,
                    buckets=buckets, duplicates=duplicates)
    check(ds, rel, knows=knows, tol=0.1 if numeric_sensitive else 0.05)


@pytest.mark.parametrize("seed", range(4))
def test_composite_kept_false_and_knows_together(seed):
    """``kept=False`` takes the kept columns out of any knowledge, declared or not."""
    ds = table(18, seed, kept=True)
    rel = composite(ds, seed, suppress=0.2, overlap=seed % 2 == 1, spend_cells=False,
                    buckets=False, duplicates=True)
    check(ds, rel, kept=False)
    check(ds, rel, knows=["region", "household", "income"], kept=False)
    check(ds, rel, knows=["region", "household", "income"])


def test_existing_kinds_with_knows_match_the_oracle():
    """``knows`` on releases of the other kinds (MDAV, Mondrian, bucketization)."""
    ds = table(30, 7, kept=True)
    for method, params in (("mdav", {"k": 3}), ("mondrian", {"models": ["k=3"]}),
                           ("bucketization", {"models": ["k=3"]})):
        rel = sdceval.anonymize(ds, method, **params)
        for knows in (None, ["region"], ["income"], ["age", "household"]):
            reid, _, uniq = oracle(ds, rel, knows=knows)
            params = {} if knows is None else {"knows": knows}
            got = sdceval.evaluate(ds, rel, "reidentification", **params)
            np.testing.assert_allclose(got.per_record, reid, rtol=0, atol=1e-9)
            got = sdceval.evaluate(ds, rel, "sample_uniques", **params)
            np.testing.assert_array_equal(got.per_record, uniq)


# -- worked examples ---------------------------------------------------------------------
def four() -> Dataset:
    """Four records: region r0 r1 r2 r3 (R0 = {r0, r1}, R1 = {r2, r3}), income 10 20 30
    40, disease flu flu cold hiv."""
    frame = pd.DataFrame({"region": ["r0", "r1", "r2", "r3"],
                          "income": [10.0, 20.0, 30.0, 40.0],
                          "disease": ["flu", "flu", "cold", "hiv"]})
    schema = Schema.from_roles(frame, qi=["region"], numeric=["income"],
                               sensitive="disease", hierarchies={"region": REGION})
    return Dataset(frame, schema, name="four")


def recoded(ds, income, suppressed=(False, False, False, False), **kw) -> Release:
    """Region recoded to level 1 (R0 R0 R1 R1), rows in ``suppressed`` to ``*``, the
    income published as ``income``."""
    sup = np.array(suppressed)
    lo, hi = ds.hierarchy("region").generalize(np.asarray(ds.codes("region")), 1)
    lo, hi = np.where(sup, 0, lo), np.where(sup, 5, hi)
    frame = pd.DataFrame({"region": ds.hierarchy("region").labels_of(lo, hi),
                          "income": income})
    return Release.composite(ds, frame, cells={"region": (lo, hi)}, suppressed=sup, **kw)


def test_worked_example_recoding_plus_masked_numbers_with_a_suppressed_row():
    """Rows 0-2 publish R0 R0 R1, row 3 is suppressed (``*``); incomes 11 19 35 35.

    m_j (records each row fits): rows 0, 1: records 0, 1 (m = 2); row 2: records 2, 3
    (m = 2); row 3: every record (m = 4).  Record 0 (r0, 10) fits rows 0, 1, 3 at
    distances 1, 9, 25 (in σ units, the same factor): C = {0}, risk 1; record 1 (r1,
    20): C = {1}, risk 1.  Record 2 (r2, 30) fits rows 2, 3, both at 35: C = {2, 3},
    weighted (1/2) / (1/2 + 1/4) = 2/3, uniform 1/2; record 3 (r3, 40): the same C,
    weighted (1/4) / (3/4) = 1/3, uniform 1/2.  Mean 3/4 for both intruders."""
    ds = four()
    rel = recoded(ds, [11.0, 19.0, 35.0, 35.0], suppressed=(False, False, False, True))
    w = sdceval.evaluate(ds, rel, "reidentification")
    u = sdceval.evaluate(ds, rel, "reidentification", intruder="uniform")
    np.testing.assert_allclose(w.per_record, [1, 1, 2 / 3, 1 / 3], atol=1e-12)
    np.testing.assert_allclose(u.per_record, [1, 1, 1 / 2, 1 / 2], atol=1e-12)
    assert w.value == pytest.approx(0.75) and u.value == pytest.approx(0.75)
    # an intruder who knows only the region: no distance, every compatible row ties.
    # Record 0: rows 0, 1, 3 weigh 1/2, 1/2, 1/4: (1/2) / (5/4) = 0.4, record 1 too;
    # records 2, 3 as above: 2/3 and 1/3; mean (0.4 + 0.4 + 2/3 + 1/3) / 4 = 0.45
    r = sdceval.evaluate(ds, rel, "reidentification", knows=["region"])
    np.testing.assert_allclose(r.per_record, [0.4, 0.4, 2 / 3, 1 / 3], atol=1e-12)
    assert r.value == pytest.approx(0.45)
    # one who knows only the income: every row fits every record (m = 4), nearest
    # rows 0, 1, {2, 3}, {2, 3}: 1, 1, 1/2, 1/2
    r = sdceval.evaluate(ds, rel, "reidentification", knows="income")
    np.testing.assert_allclose(r.per_record, [1, 1, 0.5, 0.5], atol=1e-12)
    # sample uniques on the published keys (the region cells R0 R0 R1 *): rows 2, 3
    su = sdceval.evaluate(ds, rel, "sample_uniques")
    np.testing.assert_array_equal(su.per_record, [0, 0, 1, 1])
    # attribute inference, weighted: record 2 (cold) reads cold from row 2 (w 1/2) and
    # hiv from row 3 (w 1/4): 2/3 - Q(cold) = 2/3 - 1/4; record 3 (hiv): 1/3 - 1/4;
    # records 0, 1 read flu from their own row: 1 - 1/2
    ai = sdceval.evaluate(ds, rel, "attribute_inference")
    np.testing.assert_allclose(ai.per_record, [0.5, 0.5, 2 / 3 - 0.25, 1 / 3 - 0.25],
                               atol=1e-12)


def test_worked_example_numeric_attribute_as_interval_cells():
    """Mondrian over the QIs with the income as an interval QI: no number published.
    Cells R0 x [10-20] for records 0, 1 and R1 x [30-40] for records 2, 3: each record
    fits the two rows of its box (m = 2): risk 1/2 each, and every row shares its key
    combination with another: no sample unique."""
    ds = four()
    lo, hi = ds.hierarchy("region").generalize(np.asarray(ds.codes("region")), 1)
    ilo, ihi = np.array([0, 0, 2, 2]), np.array([1, 1, 3, 3])
    h = ds.hierarchy("income")
    frame = pd.DataFrame({"region": ds.hierarchy("region").labels_of(lo, hi),
                          "income": h.labels_of(ilo, ihi)})
    rel = Release.composite(ds, frame, cells={"region": (lo, hi), "income": (ilo, ihi)})
    r = sdceval.evaluate(ds, rel, "reidentification")
    np.testing.assert_allclose(r.per_record, [0.5] * 4, atol=1e-12)
    assert r.details["linkage_attributes"] == {"region": "cell", "income": "cell"}
    assert sdceval.evaluate(ds, rel, "sample_uniques").value == 0
    # the income alone, as a cell: the same boxes
    r = sdceval.evaluate(ds, rel, "reidentification", knows=["income"])
    np.testing.assert_allclose(r.per_record, [0.5] * 4, atol=1e-12)


def test_worked_example_bucketized_composite():
    """Region recoded to level 1, income published exactly, the disease permuted within
    the buckets {0, 1}, {2, 3}: each record links its own row (risk 1) and reads its
    bucket's distribution.  Records 0, 1 (flu): bucket {flu, flu} gives 1, Q(flu) = 1/2,
    gain 1/2; records 2 (cold) and 3 (hiv): bucket {cold, hiv} gives 1/2, Q = 1/4, gain
    1/4.  Mean gain (1/2 + 1/2 + 1/4 + 1/4) / 4 = 0.375."""
    ds = four()
    s = np.asarray(ds.codes("disease"))
    rel = recoded(ds, [10.0, 20.0, 30.0, 40.0], classes=[0, 0, 1, 1],
                  sensitive_codes=s[[1, 0, 3, 2]], buckets=True)
    assert rel.sensitive_in_buckets
    assert sdceval.evaluate(ds, rel, "reidentification").value == pytest.approx(1.0)
    ai = sdceval.evaluate(ds, rel, "attribute_inference")
    np.testing.assert_allclose(ai.per_record, [0.5, 0.5, 0.25, 0.25], atol=1e-12)
    assert ai.value == pytest.approx(0.375)


def test_mdav_plus_recoding_at_scale_uses_the_sample():
    """Above ``sample`` records a composite release with published numbers is linked on
    a sample of the records, each against every released row; cells with suppressed
    rows (several groups per record) go through the same search."""
    ds = table(3000, 1)
    rel = composite(ds, 1, suppress=0.02, overlap=False, spend_cells=False,
                    buckets=False, duplicates=True)
    full = sdceval.evaluate(ds, rel, "reidentification", sample=0)
    est = sdceval.evaluate(ds, rel, "reidentification", sample=1000, seed=3)
    rows = np.flatnonzero(~np.isnan(est.per_record))
    assert len(rows) == 1000
    np.testing.assert_allclose(est.per_record[rows], full.per_record[rows], atol=1e-12)
    assert abs(est.value - full.value) < 4 * est.details["sample"]["standard_error"] + 1e-9
