"""`reidentification` and `attribute_inference` (SPEC §4, "Risk on every release").

A plain n × n implementation written from the SPEC's definition is the reference: both
measures must give the same per-record vectors on releases of every method kind (and of
data sets whose QIs are dropped or passed through), for both intruders: ``uniform``
(SPEC §4 as written) and ``weighted`` (the default, a decision of ours: row j weighs
1/m_j, m_j = the original records compatible with it, the column sums of the n × n
compatibility).  The weighting changes nothing where cells do not overlap and, with r
suppressed rows, gives a record of a class of size k (1/k)/(1 + r/n).  Then the
invariants the SPEC states: a copy re-identifies unique records, MDAV k gives about
1/k, k-anonymous generalization at most 1/k per record, bucketization 1 for QI-unique
records, a fully suppressed release gives no attribute-inference gain, near-identity
noise is riskier than MDAV and strong noise.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import sdceval
from sdceval import Dataset, Hierarchy, Release, Schema
from sdceval.core.release_io import release_from_frame
from sdceval.measures import _compatibility as comp
from sdceval.measures import reidentification as mod
from sdceval.measures.attribute_disclosure import identity_release, suppressed_release

REGION = Hierarchy([[f"r{i}", f"R{i // 2}", "*"] for i in range(6)], name="region")
EDU = Hierarchy([[f"e{i}", f"g{i // 3}", "*"] for i in range(6)], name="education")


def mixed(n: int, seed: int, *, numeric_sensitive: bool = False, passthrough=(),
          qis=("age", "region", "education"), ties: bool = True) -> Dataset:
    """2 numeric attributes, QIs with hierarchies (age numeric), a sensitive attribute
    (categorical with 6 values, or a numeric score); ``passthrough`` columns are
    published unchanged instead of being QIs; ``ties=False``: distinct numeric rows."""
    rng = np.random.default_rng(seed)
    edu = rng.integers(0, 6, n)
    inc = rng.lognormal(3, 0.5, n) if not ties else np.round(rng.lognormal(3, 0.5, n))
    frame = pd.DataFrame({
        "age": rng.integers(20, 60, n),
        "region": [f"r{i}" for i in rng.integers(0, 6, n)],
        "education": [f"e{i}" for i in edu],
        "income": inc, "spend": inc * rng.uniform(0.5, 1.5, n) + edu,
        "disease": ([f"d{(e + r) % 6}" for e, r in zip(edu, rng.integers(0, 3, n))]
                    if not numeric_sensitive else rng.integers(0, 40, n) + 3 * edu),
    })
    age = Hierarchy.intervals(frame["age"], [5, 10, 20], name="age")
    schema = Schema.from_roles(
        frame, qi=[q for q in qis if q not in passthrough], sensitive="disease",
        numeric=["income", "spend"], passthrough=list(passthrough),
        hierarchies={"region": REGION, "education": EDU, "age": age})
    return Dataset(frame, schema, name="mixed")


# -- the reference: n × n, straight from the definition ----------------------------------
def _values_equal(released, original) -> np.ndarray:
    """[i, j]: record i's value equals row j's published value (compared as text, as
    an intruder reading a table would)."""
    r = pd.Series(released).astype(str).to_numpy()
    o = pd.Series(original).astype(str).to_numpy()
    return o[:, None] == r[None, :]


def reference(ds: Dataset, rel: Release, tol: float = 0.05, weighted: bool = True):
    """(reidentification, attribute_inference) per record; ``weighted``: the default
    intruder (row j picked with weight 1/m_j), else SPEC's uniform pick."""
    n, s, data = ds.n, ds.schema, rel.data
    compat = np.ones((n, n), dtype=bool)          # [record i, row j]
    for q in s.qis:
        x = np.asarray(ds.codes(q))
        if rel.cells is not None and q in rel.cells:
            lo, hi = rel.cells[q]
            compat &= (lo[None, :] <= x[:, None]) & (x[:, None] <= hi[None, :])
        elif q in data.columns:
            compat &= _values_equal(data[q], ds.frame[q])
    for c in s.passthrough:
        if c in data.columns:
            compat &= _values_equal(data[c], ds.frame[c])
    num = [c for c in s.numeric if c in data.columns]
    dist = np.zeros((n, n))
    if num:
        x, y = ds.frame[num].to_numpy(float), data[num].to_numpy(float)
        mu, sd = x.mean(axis=0), x.std(axis=0)
        sd[sd == 0] = 1.0
        xs, ys = (x - mu) / sd, (y - mu) / sd
        dist = np.sqrt(((xs[:, None, :] - ys[None, :, :]) ** 2).sum(axis=2))
    dmin = np.where(compat, dist, np.inf).min(axis=1)
    C = compat & (dist <= dmin[:, None] * (1 + 1e-12))
    fits = compat.sum(axis=0)                   # [row j]: m_j, the records it could be
    pick = (np.where(fits > 0, 1.0 / np.maximum(fits, 1), 0.0) if weighted
            else np.ones(n))                    # [row j]: its weight w_j in a pick
    size = C.sum(axis=1)
    mass = C.astype(float) @ pick               # Σ_{j ∈ C_i} w_j
    own = C[np.arange(n), np.arange(n)]
    reid = np.where(own, pick / np.where(own, mass, 1.0), 0.0)

    inference = np.zeros(n)
    col = s.sensitive
    published = (rel.kind in ("generalized", "bucketized")
                 or (rel.kind == "external" and col in data.columns))
    if published:
        h = ds.hierarchy(col)
        m = h.n_leaves
        codes = np.asarray(ds.codes(col))
        if rel.kind == "external":
            rcodes = h.encode(data[col])
        else:
            rcodes = np.asarray(rel.sensitive(ds))
        if h.numeric:
            v = h.leaf_values
            w = tol * (v[codes].max() - v[codes].min())
            match = (v[None, :] >= v[:, None] - w) & (v[None, :] <= v[:, None] + w)
        else:
            match = np.eye(m, dtype=bool)       # match[s, v]: value v matches s
        read = np.zeros((n, m))                 # read[j, v]: P(row j reads v)
        if rel.kind == "bucketized":
            b = rel.classes
            for j in range(n):
                members = rcodes[b == b[j]]
                read[j] = np.bincount(members, minlength=m) / len(members)
        else:
            read[np.arange(n), rcodes] = 1.0
        p_match = read @ match.T.astype(float)  # [j, s]: P(row j's value matches s)
        post = ((C * pick[None, :]) @ p_match)[np.arange(n), codes] / np.where(
            size > 0, mass, 1.0)
        base = match[codes][:, codes].mean(axis=1)
        inference = np.where(size > 0, post - base, 0.0)
    return reid, inference


def _check(ds, rel, tol=0.05):
    """Both measures against the reference, for both intruders; the default's
    measurements are returned."""
    out = None
    for intruder in ("uniform", "weighted"):
        want_reid, want_inf = reference(ds, rel, tol, weighted=intruder == "weighted")
        got_reid = sdceval.evaluate(ds, rel, "reidentification", intruder=intruder)
        got_inf = sdceval.evaluate(ds, rel, "attribute_inference", tol=tol,
                                   intruder=intruder)
        np.testing.assert_allclose(got_reid.per_record, want_reid, rtol=0, atol=1e-12)
        np.testing.assert_allclose(got_inf.per_record, want_inf, rtol=0, atol=1e-12)
        assert got_reid.value == pytest.approx(want_reid.mean(), abs=1e-12)
        assert got_inf.value == pytest.approx(want_inf.mean(), abs=1e-12)
        assert got_reid.details["intruder"] == intruder
        out = got_reid, got_inf
    default = sdceval.evaluate(ds, rel, "reidentification")
    np.testing.assert_array_equal(default.per_record, out[0].per_record)
    return out


METHODS = [("mdav", {"k": 3}), ("noise", {"gamma": 1e-9}), ("noise", {"gamma": 2.0}),
           ("rank_swap", {"p": 0.3}), ("mondrian", {"models": ["k=5"]}),
           ("generalization", {"models": ["k=3"], "max_suppression": 0.1}),
           ("bucketization", {"models": ["k=4"]}), ("anatomy", {"l": 3})]


@pytest.mark.parametrize("seed,n,numeric_sensitive", [(0, 60, False), (1, 97, True),
                                                       (2, 120, False)])
@pytest.mark.parametrize("method,params", METHODS, ids=[m for m, _ in METHODS])
def test_matches_the_definition_on_every_method(method, params, seed, n,
                                                numeric_sensitive):
    ds = mixed(n, seed, numeric_sensitive=numeric_sensitive)
    rel = sdceval.anonymize(ds, method, seed=seed, **params)
    reid, _ = _check(ds, rel, tol=0.05 if seed != 1 else 0.1)
    if method == "generalization":
        assert rel.suppressed.any() or seed != 0   # some rows suppressed (seed 0)


@pytest.mark.parametrize("seed", [3, 4])
def test_matches_with_dropped_and_passthrough_qis(seed):
    # QIs dropped by a perturbative release are unknown to the intruder
    ds = mixed(80, seed)
    rel = sdceval.anonymize(ds, "mdav", k=4)
    m, _ = _check(ds, rel)
    assert set(m.details["linkage_attributes"]) == {"income", "spend"}
    # a column kept unchanged (--keep) is compared by equality: one group per value,
    # searched by the brute force (small groups) and the KD-tree (large ones)
    for kept in (["region"], ["age", "region"]):
        ds = mixed(110, seed, passthrough=kept)
        for method, params in (("noise", {"gamma": 0.5}), ("mdav", {"k": 3})):
            rel = sdceval.anonymize(ds, method, seed=seed, **params)
            m, _ = _check(ds, rel)
            assert m.details["linkage_attributes"]["region"] == "equal"
    # the same kept column beside a generalized and a bucketized release
    ds = mixed(90, seed, passthrough=["region"])
    for method, params in (("mondrian", {"models": ["k=4"]}), ("anatomy", {"l": 3})):
        _check(ds, sdceval.anonymize(ds, method, seed=seed, **params))


def test_large_groups_use_the_tree(monkeypatch):
    """Groups of equal kept values above `SMALL` points go to a KD-tree each."""
    monkeypatch.setattr(mod, "SMALL", 4)
    ds = mixed(100, 5, passthrough=["region"])
    _check(ds, sdceval.anonymize(ds, "noise", gamma=0.3, seed=1))
    _check(ds, sdceval.anonymize(ds, "mdav", k=3))


def test_external_releases(tmp_path):
    """A table read from disk: numeric columns by distance, values by equality; a value
    outside the domain matches nothing; the sensitive column, when present, is read."""
    ds = mixed(70, 6, passthrough=["region"])
    rel = sdceval.anonymize(ds, "noise", gamma=0.5, seed=0)
    path = tmp_path / "masked.csv"
    rel.data.to_csv(path, index=False)
    back = sdceval.core.release_io.read_release(ds, path)
    assert back.kind == "external"
    a, _ = _check(ds, back)
    b = sdceval.evaluate(ds, rel, "reidentification")
    np.testing.assert_array_equal(a.per_record, b.per_record)  # read back: same risk
    frame = rel.data.copy()
    frame["age"] = ds.frame["age"].astype(str).to_numpy()
    frame.loc[:9, "age"] = "[20-29]"            # generalized labels: not interpreted
    frame["disease"] = ds.frame["disease"].to_numpy()[::-1]
    ext = Release.external(ds, frame)
    m, _ = _check(ds, ext)
    assert m.details["no_candidates"] >= 1 and (m.per_record[:10] == 0).all()
    # only categorical values published: cells only, compared by equality
    ext = Release.external(ds, ds.frame[["age", "region", "disease"]])
    _check(ds, ext)


def test_equidistant_released_points_all_count():
    """Integer data moved by +-1: distinct released points at the same distance from a
    record are all in C_i (the KD-tree's ball lists), as in the definition."""
    ds = mixed(150, 19)
    rng = np.random.default_rng(0)
    y = ds.frame[["income", "spend"]].round().to_numpy()
    frame = ds.frame.copy()
    frame[["income", "spend"]] = y
    ds = Dataset(frame, ds.schema, name="integers")
    rel = Release.external(ds, pd.DataFrame(y + rng.choice([-1.0, 1.0], y.shape),
                                            columns=["income", "spend"]))
    m, _ = _check(ds, rel)
    assert m.details["mean_candidates"] > 1.2   # many ties between distinct points


def test_cells_and_numeric_values_together_follow_the_definition():
    # once refused; the general rule of the module notes since issue 28 (composite
    # releases: tests/test_reidentification_composite.py)
    ds = mixed(40, 20)
    rel = sdceval.anonymize(ds, "mondrian", models=["k=4"])
    frame = rel.data.copy()
    frame["income"] = ds.frame["income"]
    odd = Release(frame, "odd", kind="generalized", classes=rel.classes, cells=rel.cells)
    _check(ds, odd)


def test_no_linkage_attribute_published():
    ds = mixed(50, 7)
    frame = pd.DataFrame({"other": np.arange(ds.n)})
    rel = Release(frame, "nothing", kind="external")
    m = sdceval.evaluate(ds, rel, "reidentification")
    assert m.value == pytest.approx(1 / ds.n)
    assert sdceval.evaluate(ds, rel, "attribute_inference").value == 0.0


# -- the intruders ---------------------------------------------------------------------
@pytest.mark.parametrize("n,k,suppression", [(400, 3, 0.05), (600, 2, 0.01)])
def test_suppressed_rows_weigh_one_over_n(n, k, suppression):
    """The example of the module notes: with r suppressed rows (``*`` in every QI), a
    record of a published class of size c gets (1/c) / (1 + r/n) from the weighting
    intruder (SPEC's uniform pick: 1/(c + r)), a suppressed record 1/r from both; the
    sensitive value is read from the same weighted pick."""
    ds = mixed(n, 21)
    rel = sdceval.anonymize(ds, "generalization", models=[f"k={k}"],
                            max_suppression=suppression)
    sup = rel.suppressed
    r = int(sup.sum())
    assert 0 < r < n
    for q in ds.schema.qis:   # suppressed rows are the root in every QI
        lo, hi = rel.cells[q]
        assert (lo[sup] == 0).all() and (hi[sup] == ds.hierarchy(q).n_leaves - 1).all()
    # each row's class: the rows with its cells; c = its size
    key = np.stack([np.r_[rel.cells[q][0], rel.cells[q][1]].reshape(2, n)
                    for q in ds.schema.qis], axis=0).reshape(-1, n).T
    _, cls, c = np.unique(key, axis=0, return_inverse=True, return_counts=True)
    cls = cls.ravel()
    size = c[cls].astype(float)
    assert len(np.unique(size[~sup])) > 1 and (size[~sup] >= k).all()
    weighted = sdceval.evaluate(ds, rel, "reidentification").per_record
    uniform = sdceval.evaluate(ds, rel, "reidentification", intruder="uniform").per_record
    np.testing.assert_allclose(weighted[~sup], (1 / size[~sup]) / (1 + r / n),
                               rtol=1e-12, atol=0)
    np.testing.assert_allclose(uniform[~sup], 1 / (size[~sup] + r), rtol=1e-12, atol=0)
    np.testing.assert_allclose(weighted[sup], 1 / r, rtol=1e-12)
    np.testing.assert_allclose(uniform[sup], 1 / r, rtol=1e-12)
    assert weighted.mean() > 2 * uniform.mean()
    # attribute inference: the class's rows weigh 1/c each, the suppressed rows 1/n
    s = np.asarray(ds.codes(ds.schema.sensitive))
    released = np.asarray(rel.sensitive(ds))
    base = np.bincount(s)[s] / n
    hits_class = np.array([np.sum((cls == cls[i]) & (released == s[i])) for i in range(n)])
    hits_sup = np.array([np.sum(sup & (released == s[i])) for i in range(n)])
    want = (hits_class / size + hits_sup / n) / (1 + r / n) - base
    got = sdceval.evaluate(ds, rel, "attribute_inference").per_record
    np.testing.assert_allclose(got[~sup], want[~sup], rtol=0, atol=1e-12)


def test_intruders_agree_where_cells_do_not_overlap():
    """Cells that partition the records (full-domain generalization without
    suppression, Mondrian, bucketization's exact QIs, a copy, one class of ``*``) and
    numeric values (every row fits all n records, or those sharing its exactly-published
    values): every row of C_i has the same m_j, so the weighting changes nothing."""
    ds = mixed(150, 22)
    kept = mixed(150, 22, passthrough=["region"])
    releases = [(ds, identity_release(ds)), (ds, suppressed_release(ds))]
    for data, method, params in (
            (ds, "generalization", {"models": ["k=3"], "max_suppression": 0}),
            (ds, "mondrian", {"models": ["k=4"]}),
            (ds, "bucketization", {"models": ["k=3"]}),
            (ds, "anatomy", {"l": 3}), (ds, "mdav", {"k": 3}),
            (kept, "noise", {"gamma": 0.5}), (kept, "mdav", {"k": 3})):
        releases.append((data, sdceval.anonymize(data, method, seed=0, **params)))
    for data, rel in releases:
        for name in ("reidentification", "attribute_inference"):
            a = sdceval.evaluate(data, rel, name, intruder="uniform")
            b = sdceval.evaluate(data, rel, name)
            np.testing.assert_allclose(b.per_record, a.per_record, rtol=0, atol=1e-12,
                                       err_msg=f"{rel.method} {name}")


def test_unknown_intruder_is_refused():
    ds = mixed(40, 23)
    rel = sdceval.anonymize(ds, "mdav", k=3)
    for name in ("reidentification", "attribute_inference"):
        with pytest.raises(sdceval.SdcevalError, match="intruder"):
            sdceval.evaluate(ds, rel, name, intruder="bayes")
        with pytest.raises(sdceval.SdcevalError, match="intruder"):
            getattr(mod, name)(ds, rel, intruder="bayes")


# -- the algorithms agree with each other --------------------------------------------------
@pytest.mark.parametrize("method,params", [("generalization", {"models": ["k=3"],
                                                               "max_suppression": 0.1}),
                                           ("mondrian", {"models": ["k=3"]}),
                                           ("bucketization", {"models": ["k=3"]})])
def test_bitset_test_equals_fast_path_and_reference(method, params, monkeypatch):
    ds = mixed(150, 8)
    rel = sdceval.anonymize(ds, method, **params)
    L = mod.linkage_attributes(ds, rel)
    gid, G = comp.combine(list(L.lo.T) + list(L.hi.T), ds.n)
    glo, ghi = L.lo[comp.first(gid, G)], L.hi[comp.first(gid, G)]
    uid, U = comp.combine(list(L.x.T), ds.n)
    ux = L.x[comp.first(uid, U)]
    truth = {(u, g) for u in range(U) for g in range(G)
             if ((glo[g] <= ux[u]) & (ux[u] <= ghi[g])).all()}
    # m_g (records compatible with group g), straight from the records
    m_truth = np.array([((glo[g] <= L.x) & (L.x <= ghi[g])).all(axis=1).sum()
                        for g in range(G)])
    ucount = np.bincount(uid, minlength=U)
    for chunk in (comp.CHUNK, 70):   # tiny chunks: many blocks of groups and vectors
        pairs = list(comp.bitset_pairs(ux, glo, ghi, chunk=chunk))
        got = [(u, g) for us, gs in pairs for u, g in zip(us.tolist(), gs.tolist())]
        assert len(got) == len(set(got)) and set(got) == truth
        for keep in (comp.CHUNK, 10):   # pairs kept for the second reading, or not
            reader = comp.Pairs(ux, glo, ghi, L.m, chunk=chunk, keep=keep)
            for _ in range(2):
                np.testing.assert_array_equal(reader.record_counts(ucount, G), m_truth)
    fast = comp.disjoint_pairs(ux, glo, ghi, L.m)
    # 301**8 mixed-radix keys would overflow int64: the joint numbering still finds
    # each vector's one group (exact cells; vector 300 is in none)
    many = np.tile(np.arange(301)[:, None], (1, 8))
    us, gs = comp.disjoint_pairs(many[[0, 7, 299, 300]], many[:300], many[:300],
                                 np.full(8, 1000))
    assert us.tolist() == [0, 1, 2] and gs.tolist() == [0, 7, 299]
    if method == "mondrian":
        assert fast is None     # ranges overlap attribute by attribute
        monkeypatch.setattr(mod, "CHUNK", 70)
        _check(ds, rel)         # the measures with tiny chunks
    else:
        assert set(zip(fast[0].tolist(), fast[1].tolist())) == truth


# -- invariants (SPEC §4) ------------------------------------------------------------------
def test_a_copy_reidentifies_unique_records():
    ds = mixed(200, 9, ties=False)
    rel = identity_release(ds)
    m = sdceval.evaluate(ds, rel, "reidentification")
    x = np.stack([ds.codes(q) for q in ds.schema.qis], axis=1)
    _, inv, counts = np.unique(x, axis=0, return_inverse=True, return_counts=True)
    per_class = counts[inv.ravel()]
    np.testing.assert_allclose(m.per_record, 1.0 / per_class)
    assert (m.per_record[per_class == 1] == 1).all() and (per_class == 1).any()
    noisy = sdceval.anonymize(ds, "noise", gamma=1e-12, seed=0)   # numeric rows distinct
    assert (sdceval.evaluate(ds, noisy, "reidentification").per_record == 1).all()


def test_mdav_gives_about_one_over_k():
    ds = mixed(500, 10, ties=False)
    k = 5
    m = sdceval.evaluate(ds, sdceval.anonymize(ds, "mdav", k=k), "reidentification")
    assert 1 / (2 * k) <= m.value <= 1 / k
    assert m.details["unique_reidentifications"] == 0


def test_k_anonymous_generalization_at_most_one_over_k():
    ds = mixed(300, 11)
    rel = sdceval.anonymize(ds, "generalization", models=["k=4"], max_suppression=0)
    assert not rel.suppressed.any()
    m = sdceval.evaluate(ds, rel, "reidentification")
    assert (m.per_record <= 1 / 4 + 1e-12).all() and m.value > 0


def test_bucketization_reidentifies_qi_unique_records():
    ds = mixed(300, 12)
    x = np.stack([ds.codes(q) for q in ds.schema.qis], axis=1)
    _, inv, counts = np.unique(x, axis=0, return_inverse=True, return_counts=True)
    unique = counts[inv.ravel()] == 1
    for method, params in (("bucketization", {"models": ["k=5"]}), ("anatomy", {"l": 3})):
        m = sdceval.evaluate(ds, sdceval.anonymize(ds, method, **params),
                             "reidentification")
        assert (m.per_record[unique] == 1).all() and unique.any()


def test_full_suppression_teaches_nothing():
    ds = mixed(200, 13)
    rel = suppressed_release(ds)
    m = sdceval.evaluate(ds, rel, "attribute_inference")
    assert m.value <= 1e-12 and np.abs(m.per_record).max() <= 1e-12
    assert sdceval.evaluate(ds, rel, "reidentification").value == pytest.approx(1 / ds.n)
    gain = sdceval.evaluate(ds, identity_release(ds), "attribute_inference").value
    assert gain > 0.05


def test_near_identity_noise_is_riskiest():
    ds = mixed(400, 14, ties=False)
    risk = {name: sdceval.evaluate(ds, sdceval.anonymize(ds, method, seed=0, **params),
                                   "reidentification").value
            for name, method, params in (("copy", "noise", {"gamma": 1e-9}),
                                         ("mdav", "mdav", {"k": 5}),
                                         ("strong", "noise", {"gamma": 2.0}))}
    assert risk["copy"] > risk["mdav"] and risk["copy"] > risk["strong"]
    assert risk["copy"] == 1.0


def test_perturbative_release_hides_the_sensitive_attribute():
    ds = mixed(60, 15)
    m = sdceval.evaluate(ds, sdceval.anonymize(ds, "mdav", k=3), "attribute_inference")
    assert m.value == 0 and not m.details["sensitive_published"]
    assert (m.per_record == 0).all() and "learns nothing" in m.details["note"]


def test_read_back_generalized_release_same_risk(tmp_path):
    ds = mixed(120, 16)
    rel = sdceval.anonymize(ds, "mondrian", models=["k=4"])
    back = release_from_frame(ds, rel.data)
    for name in ("reidentification", "attribute_inference"):
        np.testing.assert_allclose(sdceval.evaluate(ds, back, name).per_record,
                                   sdceval.evaluate(ds, rel, name).per_record, atol=1e-12)


def test_scale_and_thread_budget_do_not_change_values():
    from sdceval.core import threads
    ds = mixed(150, 17, ties=False)
    frame = ds.frame.copy()
    frame[["income", "spend"]] *= 1e250
    big = Dataset(frame, ds.schema, name="big")
    rel = sdceval.anonymize(ds, "noise", gamma=0.2, seed=0)
    scaled = Release.external(big, rel.data[["income", "spend"]] * 1e250)
    a = sdceval.evaluate(ds, rel, "reidentification").per_record
    np.testing.assert_array_equal(a, sdceval.evaluate(big, scaled,
                                                      "reidentification").per_record)
    threads.set_budget(2)
    try:
        b = sdceval.evaluate(ds, rel, "reidentification").per_record
    finally:
        threads.set_budget(None)
    np.testing.assert_array_equal(a, b)


@pytest.mark.slow
def test_large_release_is_fast():
    """50 000 records: no n × n anywhere (seconds, not minutes)."""
    import time
    ds = mixed(50_000, 18)
    for method, params in (("mdav", {"k": 5}), ("mondrian", {"models": ["k=5"]})):
        rel = sdceval.anonymize(ds, method, **params)
        t0 = time.perf_counter()
        for name in ("reidentification", "attribute_inference"):
            sdceval.evaluate(ds, rel, name)
        assert time.perf_counter() - t0 < 10
