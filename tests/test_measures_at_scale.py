"""propensity, emd and query_error on large tables (issue 21 item 7): the streamed
propensity fit equals the dense computation, chunk boundaries do not matter, memory
grows with the attributes and not with the model terms; emd keeps to the thread budget
and switches to its sampled k-means summary above ``EXACT_MAX_ROWS``; query_error's
actual counts do not depend on their blocks and hold no (queries x records) matrix."""
import json
import subprocess
import sys
import textwrap
import tracemalloc

import numpy as np
import pandas as pd
import pytest

import sdceval
from sdceval import Dataset, Release, Schema
from sdceval.core import threads
from sdceval.measures import emd as emd_module
from sdceval.measures import propensity as prop
from sdceval.measures.propensity import MODELS, model_terms, propensity_scores


def pair(n=300, m=4, seed=0, noise=0.6):
    rng = np.random.default_rng(seed)
    x = rng.lognormal(size=(n, m))
    x[:, 1] += x[:, 0]                      # correlated, skewed attributes
    y = x + rng.normal(0.0, noise, x.shape) * x.std(axis=0)
    return x, y


def dense_scores(x, y, model, ridge):
    """The dense computation the module documents: stack, z-score the attributes with
    the original's mean/sd, build every model term, z-score the terms with the original
    part's mean/sd, fit the penalized logistic regression by Newton's method."""
    n = len(x)
    a = np.vstack([x, y])
    z = (a - x.mean(axis=0)) / x.std(axis=0)
    t = model_terms(z, model)
    t = (t - t[:n].mean(axis=0)) / t[:n].std(axis=0)
    d = np.c_[t, np.ones(2 * n)]
    target = np.r_[np.zeros(n), np.ones(n)]
    pen = np.r_[np.full(t.shape[1], ridge), 0.0]
    beta = np.zeros(d.shape[1])

    def objective(b):
        r = d @ b
        return np.mean(np.logaddexp(0, r) - target * r) + 0.5 * ridge * b[:-1] @ b[:-1]

    for _ in range(100):
        p = 1 / (1 + np.exp(-(d @ beta)))
        grad = d.T @ (p - target) / (2 * n) + pen * beta
        if np.abs(grad).max() < 1e-13:
            break
        hess = d.T @ (d * (p * (1 - p))[:, None]) / (2 * n) + np.diag(pen)
        step = np.linalg.solve(hess, -grad)
        t_ = 1.0
        while objective(beta + t_ * step) > objective(beta) + 1e-4 * t_ * grad @ step:
            t_ /= 2
        beta = beta + t_ * step
    return 1 / (1 + np.exp(-(d @ beta)))


@pytest.mark.parametrize("ridge", [0.01, 0.0])
@pytest.mark.parametrize("model", MODELS)
def test_streamed_fit_equals_dense_computation(model, ridge):
    x, y = pair()
    p, info = propensity_scores(x, y, model, ridge)
    ref = dense_scores(x, y, model, ridge)
    assert info["converged"] and info["gradient"] < 1e-9
    # the fit stops at a gradient of 1e-10 (the previous solver's rule), the reference
    # at 1e-13: unpenalized, the Hessian's condition leaves ~1e-9 between the two
    rtol = 1e-9 if ridge else 1e-7
    np.testing.assert_allclose(p, ref, rtol=rtol, atol=1e-12)
    u, u_ref = np.mean((p - 0.5) ** 2), np.mean((ref - 0.5) ** 2)
    assert u == pytest.approx(u_ref, rel=rtol)


@pytest.mark.parametrize("model", MODELS)
def test_chunk_boundaries_do_not_matter(monkeypatch, model):
    x, y = pair(n=500, seed=1)
    whole, _ = propensity_scores(x, y, model, 0.01)
    monkeypatch.setattr(prop, "CHUNK_ROWS", 7)    # 500 rows: a short last chunk
    tiny, info = propensity_scores(x, y, model, 0.01)
    np.testing.assert_allclose(tiny, whole, rtol=1e-12, atol=1e-15)
    assert info["n_terms"] == prop.n_model_terms(x.shape[1], model)


def test_constant_terms_are_dropped_in_streamed_statistics():
    # an attribute constant in both tables is dropped (as in the dense rules)
    x, y = pair(n=200, seed=2)
    x[:, 2] = y[:, 2] = 0.1        # a sum of 0.1s is not exactly a multiple of 0.1
    x2, y2 = np.delete(x, 2, axis=1), np.delete(y, 2, axis=1)
    for model in MODELS:
        p, info = propensity_scores(x, y, model, 0.01)
        q, info2 = propensity_scores(x2, y2, model, 0.01)
        assert info["n_terms"] == info2["n_terms"]
        np.testing.assert_allclose(p, q, rtol=1e-12)


def test_memory_grows_with_attributes_not_model_terms():
    # 20 000 records x 13 attributes: the dense design matrix of ``pairwise`` (2n x 92
    # floats) alone would take 29 MB; the streamed fit holds the z-scored attributes
    # (4 MB), a few vectors of 2n (0.3 MB each) and one chunk of terms (3 MB)
    rng = np.random.default_rng(3)
    x = rng.lognormal(size=(20_000, 13))
    y = x * rng.lognormal(0, 0.3, x.shape)
    tracemalloc.start()
    try:
        propensity_scores(x, y)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 15e6, peak


def make(x, y):
    cols = [f"v{j}" for j in range(x.shape[1])]
    frame = pd.DataFrame(x, columns=cols)
    ds = Dataset(frame, Schema.from_roles(frame, numeric=cols), name="t")
    return ds, Release(pd.DataFrame(y, columns=cols), method="test", kind="external")


PROBE = textwrap.dedent("""
    import builtins, json, sys
    import numpy as np, pandas as pd
    from threadpoolctl import threadpool_info
    import sdceval
    from sdceval import Dataset, Release, Schema
    from sdceval.measures import propensity

    seen = {"kmeans_openmp": [], "pools": []}

    def pools():
        seen["pools"].append(max(i["num_threads"] for i in threadpool_info()))

    # scikit-learn is first imported inside the measure (the case that escaped the
    # budget): patch KMeans.fit as soon as it is imported
    real_import = builtins.__import__
    def hooked(name, *args, **kwargs):
        mod = real_import(name, *args, **kwargs)
        KMeans = getattr(sys.modules.get("sklearn.cluster._kmeans"), "KMeans", None)
        if KMeans is not None and not getattr(KMeans, "_probed", False):
            fit = KMeans.fit
            def probed(self, *a, **k):
                from sklearn.utils._openmp_helpers import _openmp_effective_n_threads
                seen["kmeans_openmp"].append(_openmp_effective_n_threads())
                pools()
                return fit(self, *a, **k)
            KMeans.fit = probed
            KMeans._probed = True
        return mod
    builtins.__import__ = hooked
    solve = propensity._Fit.solve
    def probed_solve(self, *a, **k):
        pools()
        return solve(self, *a, **k)
    propensity._Fit.solve = probed_solve

    assert "sklearn" not in sys.modules
    rng = np.random.default_rng(0)
    x = rng.lognormal(size=(3000, 5))
    cols = [f"v{j}" for j in range(5)]
    frame = pd.DataFrame(x, columns=cols)
    ds = Dataset(frame, Schema.from_roles(frame, numeric=cols), name="t")
    rel = Release(pd.DataFrame(x + rng.normal(0, 0.3, x.shape), columns=cols),
                  method="t", kind="external")
    sdceval.evaluate(ds, rel, "emd", n_clusters=10)
    sdceval.evaluate(ds, rel, "propensity")
    print(json.dumps(seen))
""")


@pytest.mark.skipif(threads.cores() < 2, reason="needs two cores to tell 1 from all")
def test_emd_and_propensity_keep_to_a_one_thread_budget():
    # a fresh process with SDCEVAL_THREADS=1: k-means' OpenMP pool (loaded by the
    # measure's first import of scikit-learn) and every BLAS pool are capped at 1
    env = {**__import__("os").environ, "SDCEVAL_THREADS": "1"}
    out = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True,
                         env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    seen = json.loads(out.stdout.strip().splitlines()[-1])
    assert seen["kmeans_openmp"] and set(seen["kmeans_openmp"]) == {1}, seen
    assert seen["pools"] and max(seen["pools"]) == 1, seen


def blobs(n, seed):
    rng = np.random.default_rng(seed)
    centres = rng.uniform(0, 100, size=(10, 4))
    x = centres[rng.integers(0, 10, n)] + rng.normal(0, 2.0, (n, 4))
    return x, x + rng.normal(0, 3.0, x.shape)


def fitted_rows(monkeypatch):
    """Patch KMeans.fit to record the number of rows each fit sees."""
    from sklearn.cluster import KMeans
    rows = []
    fit = KMeans.fit

    def spy(self, a, *args, **kwargs):
        rows.append((len(a), self.n_init))
        return fit(self, a, *args, **kwargs)
    monkeypatch.setattr(KMeans, "fit", spy)
    return rows


def test_emd_sampled_path_above_the_threshold(monkeypatch):
    x, y = blobs(4000, 0)
    ds, rel = make(x, y)
    rows = fitted_rows(monkeypatch)
    emd_module._SUMMARIES.clear()
    exact = sdceval.evaluate(ds, rel, "emd", n_clusters=10).value
    assert rows == [(4000, emd_module.N_INIT)] * 2
    rows.clear()
    monkeypatch.setattr(emd_module, "EXACT_MAX_ROWS", 3000)
    monkeypatch.setattr(emd_module, "SAMPLE_ROWS", 1500)
    emd_module._SUMMARIES.clear()
    sampled = sdceval.evaluate(ds, rel, "emd", n_clusters=10)
    # per table: restarts on the sample, then Lloyd's iterations on every record
    assert rows == [(1500, emd_module.SAMPLE_N_INIT), (4000, 1)] * 2
    # every record is assigned (shares are multiples of 1/n, not of 1/1500)
    cx, wx, _ = emd_module.cluster_distribution(
        (x - x.min(axis=0)) / np.ptp(x, axis=0), 10, 0)
    assert np.allclose(wx * 4000, np.round(wx * 4000)) and wx.sum() == pytest.approx(1)
    assert sampled.value == pytest.approx(exact, rel=0.05)
    # deterministic, independent of row order, and 0 for identical tables
    perm = np.random.default_rng(1).permutation(4000)
    emd_module._SUMMARIES.clear()
    shuffled = sdceval.evaluate(*make(x, y[perm]), "emd", n_clusters=10).value
    assert shuffled == sampled.value
    assert sdceval.evaluate(*make(x, x.copy()), "emd", n_clusters=10).value == 0.0


def test_distinct_rows_of_a_sorted_table():
    rng = np.random.default_rng(4)
    a = rng.integers(0, 3, size=(500, 3)).astype(float)
    a[::7, 0] = -0.0
    a[1::7, 0] = 0.0
    a = a[np.lexsort(a.T[::-1])]
    assert emd_module._distinct_sorted(a) == len(np.unique(a, axis=0))
    assert emd_module._distinct_sorted(a[:1]) == 1


def test_lexicographic_order_is_lexsort():
    # the fast canonical order is the permutation of np.lexsort (stable, -0.0 == 0.0)
    rng = np.random.default_rng(5)
    for trial in range(60):
        n, m = int(rng.integers(1, 300)), int(rng.integers(1, 5))
        a = rng.integers(-2, 3, size=(n, m)).astype(float)
        if trial % 3 == 0:
            a = rng.normal(size=(n, m))
            a[rng.random(n) < 0.3, 0] = 0.0
        a[(rng.random(a.shape) < 0.2) & (a == 0)] = -0.0
        if trial % 4 == 0:
            a = np.vstack([a, a[: n // 2]])
        np.testing.assert_array_equal(emd_module._lexicographic_order(a),
                                      np.lexsort(a.T[::-1]))


# -- query_error's workload: actual counts grouped, in bounded blocks ------------------------
def query_data(n, seed=0):
    """A mixed table: 4 QIs (age with intervals, a 300-value code, sex, 16 values) and a
    14-valued sensitive attribute."""
    from sdceval import Hierarchy
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame({
        "age": np.clip(rng.normal(40, 13, n).round(), 17, 90).astype(int),
        "zip": pd.Categorical.from_codes(rng.integers(0, 300, n),
                                         [f"z{i:03d}" for i in range(300)]),
        "sex": rng.choice(["F", "M"], n),
        "edu": pd.Categorical.from_codes(rng.integers(0, 16, n),
                                         [f"e{i:02d}" for i in range(16)]),
        "occ": pd.Categorical.from_codes(rng.integers(0, 14, n),
                                         [f"o{i:02d}" for i in range(14)]),
    })
    hier = {"age": Hierarchy.intervals(range(17, 91), [5, 10, 20, 40], name="age")}
    schema = Schema.from_roles(frame, qi=["age", "zip", "sex", "edu"], sensitive="occ",
                               hierarchies=hier)
    return Dataset(frame, schema, name=f"queries-{n}")


def test_query_blocks_do_not_matter(monkeypatch):
    from sdceval.measures import queries
    ds = query_data(3000, seed=1)
    whole = queries.random_queries(ds, n_queries=300).actual
    # 50 elements: a few queries per block, groups of a value cut into chunks of 50
    monkeypatch.setattr(queries, "_BLOCK", 50)
    queries._QUERIES.clear()
    assert np.array_equal(queries.random_queries(ds, n_queries=300).actual, whole)


def test_query_workload_memory_does_not_grow_with_queries_times_records():
    # 100 000 records, 1000 queries: grouping holds a few arrays of n (0.8 MB each) and
    # one (queries x groups) boolean block (13 MB peak); the reconstruction it replaced
    # held (queries x distinct records) float weights in 32 MB blocks (159 MB peak)
    from sdceval.measures import queries
    ds = query_data(100_000)
    for c in ds.schema.qis + [ds.schema.sensitive]:
        ds.codes(c)                                  # the data set's, computed once
    tracemalloc.start()
    try:
        qs = queries.random_queries(ds)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 30e6, peak
    assert (qs.actual > 0).all()


# -- privacy checks: classes from the release's O(n) index ---------------------------------
def test_privacy_checks_equal_the_sorted_renumbering(monkeypatch):
    # the checks number classes by Release.class_index instead of sorting the ids in
    # class_counts: the same numbering (sorted ids), so every value, per-record level
    # and detail is the one computed before; ids sparse and far apart take
    # class_index's fallback
    import dataclasses

    from privacy_data import synthetic

    from sdceval import privacy
    ds = synthetic(n=600, seed=3)
    releases = [sdceval.anonymize(ds, "generalization", levels="3,1,1,0",
                                  max_suppression=0.05),
                sdceval.anonymize(ds, "mondrian", k=8),
                sdceval.anonymize(ds, "bucketization", models=["l=2"])]
    gen = releases[0]
    assert gen.suppressed.any()
    ids = np.random.default_rng(0).permutation(gen.classes.max() + 1) * 7 + 3
    releases += [dataclasses.replace(gen, classes=ids[gen.classes]),
                 dataclasses.replace(gen, classes=ids[gen.classes] * 10**12)]
    # each check with its model's example settings besides the threshold (k-map's
    # estimator needs a sampling fraction on data without weights)
    checks = {cls.check_name: {k: v for k, v in cls.example.items() if k != cls.parameter}
              for cls in privacy.MODELS.values()}
    assert {"k_anonymity", "l_diversity", "t_closeness"} <= set(checks)

    def run():
        out = []
        for rel in releases:
            for name, extra in checks.items():
                spec = sdceval.get_measure(name)
                threshold = spec.params[0]
                for params in ({}, {threshold.name: 2}, {"include_suppressed": True}):
                    out.append(spec.evaluate(ds, rel, {**extra, **params}))
        return out
    now = run()
    # the computation before: class_counts renumbering the raw ids by np.unique
    monkeypatch.setattr(Release, "class_index", lambda self: (self.classes, None))
    before = run()
    for a, b in zip(now, before, strict=True):
        assert a.value == b.value or (np.isnan(a.value) and np.isnan(b.value))
        np.testing.assert_array_equal(a.per_record, b.per_record)
        assert a.details == b.details
