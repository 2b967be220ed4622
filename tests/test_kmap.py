"""k-map (issue 30 item 1; `sdceval.privacy.kmap`): the estimators' size thresholds
against ARX's loops on scipy, ARX's TestAnonymizationKMap cases, and a brute-force check
on small data that every class of a release made under k-map covers at least k people
of the population table (Mondrian, full-domain generalization), and that a release
failing it is detected."""
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import sdceval
from sdceval import Dataset, Hierarchy, Schema, SdcevalError, privacy
from sdceval.cli import main
from sdceval.privacy.kmap import (
    poisson_size_threshold,
    zero_truncated_poisson_size_threshold,
)

DATA = Path(__file__).resolve().parent / "data"
USA = 317238626  # ARX ARXPopulationModel.Region.USA


# -- the estimators: ARX's loops (KMap.calculateKPoisson / calculateKZeroPoisson) ------
def _arx_poisson(k, f, alpha):
    lam, thr, counter, value = f * k, 1 - alpha, 0, 0.0
    while value < thr:
        value = stats.poisson.cdf(counter, lam)
        counter += 1
        if counter >= k:
            break
    return min(k, counter + 1)


def _arx_zero_truncated(k, f, alpha):
    lam, thr, counter, value = f * k, 1 - alpha, 1, 0.0
    v2 = 1 - stats.poisson.pmf(0, lam)
    while value < thr:
        value += stats.poisson.pmf(counter, lam) / v2
        counter += 1
        if counter >= k:
            break
    return min(k, counter)


SETTINGS = [(k, f, a) for k in (1, 2, 3, 5, 10, 20, 50, 100, 1000)
            for f in (0.001, 0.01, 0.05, 0.1, 0.3, 1.0) for a in (0.01, 0.05, 0.2)]


def test_poisson_threshold_is_arx_loop():
    got = [int(poisson_size_threshold(k, f, a)) for k, f, a in SETTINGS]
    assert got == [_arx_poisson(k, f, a) for k, f, a in SETTINGS]
    # by hand: k = 10, f = 0.01, λ = 0.1: P(X<=0) = 0.905, P(X<=1) = 0.9953 >= 0.99 ->
    # c0 = 1, k' = c0 + 2 = 3
    assert int(poisson_size_threshold(10, 0.01, 0.01)) == 3
    assert stats.poisson.cdf(0, 0.1) < 0.99 <= stats.poisson.cdf(1, 0.1)


def test_zero_truncated_threshold_is_arx_loop():
    got = [int(zero_truncated_poisson_size_threshold(k, f, a)) for k, f, a in SETTINGS]
    assert got == [_arx_zero_truncated(k, f, a) for k, f, a in SETTINGS]
    # ARX's k-map cases on Adult (n = 30162 of the USA): k = 3 -> k' = 2, k = 1000 -> 3
    f = 30162 / USA
    assert int(zero_truncated_poisson_size_threshold(3, f, 0.01)) == 2
    assert int(zero_truncated_poisson_size_threshold(1000, f, 0.01)) == 3
    lam = 1000 * f   # by hand: P(X > 1 | X > 0) = 0.047 > 0.01 >= P(X > 2 | X > 0)
    z = -np.expm1(-lam)
    assert stats.poisson.sf(1, lam) / z > 0.01 >= stats.poisson.sf(2, lam) / z


def test_significance_edges_follow_arx():
    assert int(poisson_size_threshold(50, 0.1, 0.0)) == 50   # α = 0: k' = k
    assert int(zero_truncated_poisson_size_threshold(50, 0.1, 0.0)) == 50
    assert int(poisson_size_threshold(50, 0.1, 1.0)) == 1    # α = 1: the loop never runs
    assert int(zero_truncated_poisson_size_threshold(50, 0.1, 1.0)) == 1


@pytest.mark.parametrize("estimator", ["poisson", "zero_truncated_poisson"])
def test_value_is_the_largest_k_the_class_meets(estimator):
    sizes = np.arange(1, 40)[:, None]
    for k in (1, 2, 3, 7, 20, 300):
        m = privacy.make_model("kmap", k=k, estimator=estimator, sampling_fraction=0.05)
        ok = m.satisfied(sizes, None)
        assert ((m.value(sizes, None) >= k) == ok).all()
        assert (ok == (sizes[:, 0] >= m.size_threshold())).all()
        assert m.min_class_size(None) == m.size_threshold()


def test_text_form_and_sampling_fraction_sources():
    m = privacy.parse_model_spec("kmap:k=5,estimator=poisson,sampling_fraction=0.01")
    assert m.to_text() == ("kmap:k=5,estimator=poisson,significance=0.01,"
                           "sampling_fraction=0.01,population_size=0.0,population=none")
    assert privacy.parse_model_spec(m.to_text()).param_values() == m.param_values()
    ds = _survey_like()
    by_size = privacy.parse_model_spec("kmap:k=50,population_size=20000").bind(ds)
    assert by_size.size_threshold() == int(poisson_size_threshold(50, ds.n / 20000, 0.01))
    # no fraction, no size: the weights' sum is the population size
    by_weights = privacy.parse_model_spec("kmap:k=50").bind(ds)
    assert by_weights.size_threshold() == int(
        poisson_size_threshold(50, ds.n / ds.weights.sum(), 0.01))


def _survey_like():
    rng = np.random.default_rng(3)
    n = 200
    frame = pd.DataFrame({"a": rng.choice(list("xyz"), n), "b": rng.choice(list("pq"), n),
                          "w": rng.uniform(20, 40, n)})
    return Dataset(frame, Schema.from_roles(frame, qi=["a", "b"], weight="w"), name="s")


# -- ARX's TestAnonymizationKMap -------------------------------------------------------
# estimator cases (ARX rule, 5 % suppression, non-monotonic precomputed entropy 0.1):
# KMap(k, 0.01, Region.USA, ZERO_TRUNCATED_POISSON) -> (node, loss)
ARX_ESTIMATED = [(3, (0, 0, 1, 1, 0, 2, 2, 0), 130804.5332092598),
                 (1000, (0, 0, 1, 1, 1, 2, 1, 0), 151894.1394841501)]
# population cases: KMap(k, DataSubset(adult.csv, adult_subset.csv)) -> (suppression,
# metric: "m" monotonic / "nm" non-monotonic entropy, node, loss)
ARX_SUBSET = [(3, 0.0, "m", (0, 0, 1, 2, 3, 2, 2, 0), 23387.494246375998),
              (5, 0.0, "nm", (1, 0, 1, 2, 3, 2, 2, 1), 28551.7222913157),
              (7, 0.05, "m", (0, 0, 1, 1, 2, 2, 2, 0), 17075.7181747451),
              (3, 0.05, "nm", (0, 0, 1, 1, 1, 2, 1, 0), 15121.633326877098),
              (2, 0.0, "m", (1, 0, 1, 1, 3, 2, 2, 0), 23108.1673304724),
              (10, 0.0, "nm", (0, 1, 1, 2, 3, 2, 2, 0), 30238.2081484441),
              (5, 0.05, "m", (0, 0, 1, 0, 2, 2, 2, 1), 17053.8743069776)]
# ARX's AECS cases: (k, suppression, node, ARX's AECS = records / (kept classes + one
# class of the suppressed records))
ARX_SUBSET_AECS = [(5, 0.0, (1, 0, 1, 2, 3, 2, 2, 1), 45.014925373134325),
                   (20, 0.05, (1, 0, 1, 1, 3, 2, 1, 0), 11.424242424242424),
                   (10, 0.05, (0, 0, 1, 1, 3, 2, 1, 0), 7.215311004784689)]


@pytest.fixture(scope="module")
def arx8():
    from sdceval.core.loaders import load_arx_adult
    return load_arx_adult("occupation")


@pytest.fixture(scope="module")
def arx_subset(arx8, tmp_path_factory):
    """ARX's research subset as the sample and ARX's Adult as the population table."""
    rows = np.loadtxt(DATA / "arx_adult_subset_rows.txt", dtype=np.int64, comments="#")
    sub = Dataset(arx8.frame.iloc[rows].reset_index(drop=True), arx8.schema,
                  name="adult-subset")
    pop = tmp_path_factory.mktemp("kmap") / "adult_population.csv"
    arx8.frame[list(arx8.schema.qis)].to_csv(pop, index=False)
    return sub, pop


@pytest.mark.parametrize("case", ARX_ESTIMATED, ids=lambda c: f"k{c[0]}")
def test_arx_estimated_kmap_node(arx8, case):
    from sdceval.lattice.search import LatticeProblem
    k, node, loss = case
    m = privacy.parse_model_spec(
        f"kmap:k={k},estimator=zero_truncated_poisson,population_size={USA}")
    problem = LatticeProblem(arx8, [m], rule="arx", max_suppression=0.05)
    assert problem.models[0].size_threshold() == (2 if k == 3 else 3)
    got = problem.evaluate_node(node, ["nu_entropy_nm"])
    assert got["feasible"]
    assert got["nu_entropy_nm"] == pytest.approx(loss, rel=1e-12, abs=0)


@pytest.mark.parametrize("case", ARX_SUBSET, ids=lambda c: f"k{c[0]}-s{c[1]}-{c[2]}")
def test_arx_population_kmap_node(arx_subset, case):
    from sdceval.lattice.search import LatticeProblem
    sub, pop = arx_subset
    k, s, mono, node, loss = case
    metric = "nu_entropy" if mono == "m" else "nu_entropy_nm"
    problem = LatticeProblem(sub, [privacy.parse_model_spec(f"kmap:k={k},population={pop}")],
                             rule="arx", max_suppression=s)
    got = problem.evaluate_node(node, [metric])
    assert got["feasible"]
    assert got[metric] == pytest.approx(loss, rel=1e-12, abs=0)


@pytest.mark.parametrize("case", ARX_SUBSET_AECS, ids=lambda c: f"k{c[0]}-s{c[1]}")
def test_arx_population_kmap_aecs_node(arx_subset, case):
    from sdceval.lattice.search import LatticeProblem
    sub, pop = arx_subset
    k, s, node, aecs = case
    problem = LatticeProblem(sub, [privacy.parse_model_spec(f"kmap:k={k},population={pop}")],
                             rule="arx", max_suppression=s)
    got = problem.evaluate_node(node, ["classes"])
    assert got["feasible"]
    # ARX's AECS counts the suppressed records as one class (sdceval's avg_class_size
    # averages over the kept classes only): compared on ARX's definition
    assert sub.n / (got["classes"] + (got["suppressed"] > 0)) == pytest.approx(aecs, rel=1e-12)


@pytest.mark.slow
@pytest.mark.parametrize("case", [ARX_SUBSET[0], ARX_SUBSET[2], ARX_SUBSET[3]],
                         ids=lambda c: f"k{c[0]}-s{c[1]}-{c[2]}")
def test_arx_population_kmap_optimum(arx_subset, case):
    """The optimal search with k-map on a population table finds ARX's node."""
    from sdceval.lattice.search import LatticeProblem, optimal
    sub, pop = arx_subset
    k, s, mono, node, loss = case
    problem = LatticeProblem(sub, [privacy.parse_model_spec(f"kmap:k={k},population={pop}")],
                             rule="arx", max_suppression=s)
    res = optimal(problem, "nu_entropy" if mono == "m" else "nu_entropy_nm", progress=False)
    assert res.levels == node and res.ties == [node]
    assert res.value == pytest.approx(loss, rel=1e-12, abs=0)


@pytest.mark.slow
def test_arx_estimated_kmap_optimum(arx8):
    from sdceval.lattice.search import LatticeProblem, optimal
    k, node, loss = ARX_ESTIMATED[0]
    m = privacy.parse_model_spec(
        f"kmap:k={k},estimator=zero_truncated_poisson,population_size={USA}")
    res = optimal(LatticeProblem(arx8, [m], rule="arx", max_suppression=0.05),
                  "nu_entropy_nm", progress=False)
    assert res.levels == node and res.value == pytest.approx(loss, rel=1e-12, abs=0)


# -- brute force on small data ---------------------------------------------------------
AGES = np.arange(20, 70)
ZIP = Hierarchy([[f"z{i:02d}", f"r{i // 3}", "*"] for i in range(12)], name="zip")
SEX = Hierarchy([["F", "*"], ["M", "*"]], name="sex")
AGE = Hierarchy.intervals(AGES, (5, 10, 50), name="age")
K = 15


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    """A population of 3000 people, a 10 % sample of it, and the population table
    written both aggregated (a count column) and one row per person."""
    rng = np.random.default_rng(7)
    P = 3000
    people = pd.DataFrame({"age": rng.choice(AGES, P),
                           "zip": rng.choice(ZIP.leaves, P, p=np.linspace(1, 3, 12) / 24),
                           "sex": rng.choice(["F", "M"], P)})
    sample = people.iloc[np.sort(rng.choice(P, 300, replace=False))].reset_index(drop=True)
    schema = Schema.from_roles(sample, qi=["age", "zip", "sex"],
                               hierarchies={"age": AGE, "zip": ZIP, "sex": SEX})
    ds = Dataset(sample, schema, name="sample")
    d = tmp_path_factory.mktemp("pop")
    agg = people.groupby(["age", "zip", "sex"]).size().rename("count").reset_index()
    agg.sample(frac=1, random_state=1).to_csv(d / "pop.csv", index=False)
    people.to_csv(d / "people.csv", index=False)
    return ds, people, d


def _brute_force(ds, release, people) -> tuple[np.ndarray, np.ndarray]:
    """Per published (not suppressed) class: the people whose values fall in its cells,
    counted by a plain loop over the population; and the class's sample size."""
    classes = np.asarray(release.classes)
    kept = np.ones(ds.n, bool) if release.suppressed is None else ~np.asarray(
        release.suppressed)
    covered, sizes = [], []
    for c in np.unique(classes[kept]):
        r = int(np.flatnonzero((classes == c) & kept)[0])
        allowed = {}
        for q in ds.schema.qis:
            h = ds.hierarchy(q)
            lo, hi = (int(release.cells[q][0][r]), int(release.cells[q][1][r]))
            allowed[q] = {str(v) for v in (h.leaf_values[lo:hi + 1].astype(int)
                                           if h.numeric else h.leaves[lo:hi + 1])}
        n = 0
        for person in people.itertuples(index=False):
            if all(str(getattr(person, q)) in allowed[q] for q in ds.schema.qis):
                n += 1
        covered.append(n)
        sizes.append(int(((classes == c) & kept).sum()))
    return np.array(covered), np.array(sizes)


@pytest.mark.parametrize("table", ["pop.csv", "people.csv"])
def test_mondrian_release_meets_kmap_by_brute_force(small, table):
    ds, people, d = small
    rel = sdceval.anonymize(ds, "mondrian", models=f"kmap:k={K},population={d / table}")
    covered, sizes = _brute_force(ds, rel, people)
    assert len(covered) > 5                      # a real partition, not one class
    assert (covered >= K).all()
    assert (sizes < K).any()   # k-map, not k-anonymity: small sample classes are kept
    assert rel.info["achieved"]["k"] == covered.min()


def test_generalization_release_meets_kmap_by_brute_force(small):
    ds, people, d = small
    rel = sdceval.anonymize(ds, "generalization", models=f"kmap:k={K},population={d / 'pop.csv'}",
                            suppression_rule="arx", max_suppression=0.05)
    covered, sizes = _brute_force(ds, rel, people)
    assert len(covered) > 3 and (covered >= K).all()
    assert (sizes < K).any()
    assert rel.suppressed is None or rel.suppressed.sum() <= 0.05 * ds.n


def test_generalization_without_suppression_meets_kmap(small):
    ds, people, d = small
    rel = sdceval.anonymize(ds, "generalization", models=f"kmap:k={K},population={d / 'pop.csv'}",
                            suppression_rule="arx", max_suppression=0)
    covered, _ = _brute_force(ds, rel, people)
    assert (covered >= K).all()


def test_a_release_that_fails_kmap_is_detected(small):
    ds, people, d = small
    rel = sdceval.anonymize(ds, "mondrian", models="k=2")
    covered, _ = _brute_force(ds, rel, people)
    assert (covered < K).any()
    m = sdceval.evaluate(ds, rel, "k_map", k=K, population=str(d / "pop.csv"))
    assert m.details["satisfies"] is False
    assert m.details["violating_classes"] == int((covered < K).sum())
    assert m.value == covered.min()
    # per record: the people its class covers
    np.testing.assert_array_equal(np.unique(m.per_record), np.unique(covered))
    ok = sdceval.evaluate(ds, sdceval.anonymize(
        ds, "mondrian", models=f"kmap:k={K},population={d / 'pop.csv'}"),
        "k_map", k=K, population=str(d / "pop.csv"))
    assert ok.details["satisfies"] is True


def test_population_feasibility_is_monotone_on_the_lattice(small):
    """Every class of a feasible node satisfies; so does every class of its successors
    (a more general class covers at least the people of each of its parts)."""
    from sdceval.lattice.search import LatticeProblem
    ds, _, d = small
    problem = LatticeProblem(ds, [privacy.parse_model_spec(
        f"kmap:k={K},population={d / 'pop.csv'}")], rule="arx", max_suppression=0)
    lat = problem.lattice
    feasible = {tuple(v): problem.evaluate_node(v, [])["feasible"] for v in lat.nodes()}
    assert any(feasible.values()) and not all(feasible.values())
    for v, ok in feasible.items():
        if ok:
            assert all(feasible[tuple(s)] for s in lat.successors(np.array(v)))


def test_estimators_in_mondrian_and_generalization(small):
    ds, _, _ = small
    spec = "kmap:k=40,estimator=zero_truncated_poisson,sampling_fraction=0.1"
    kd = int(zero_truncated_poisson_size_threshold(40, 0.1, 0.01))
    assert 1 < kd < 40
    for rel in (sdceval.anonymize(ds, "mondrian", models=spec),
                sdceval.anonymize(ds, "generalization", models=spec,
                                  suppression_rule="arx", max_suppression=0.02)):
        keep = np.ones(ds.n, bool) if rel.suppressed is None else ~rel.suppressed
        sizes = np.bincount(np.asarray(rel.classes)[keep])
        assert sizes[sizes > 0].min() >= kd


# -- bad input ---------------------------------------------------------------------------
def test_bad_population_tables(small, tmp_path):
    ds, people, _ = small
    people.drop(columns="zip").to_csv(tmp_path / "nozip.csv", index=False)
    with pytest.raises(SdcevalError, match="lacks the quasi-identifier.*'zip'"):
        sdceval.anonymize(ds, "mondrian", models=f"kmap:k=5,population={tmp_path / 'nozip.csv'}")
    for bad in ("2.5", "-1", "many"):
        t = people.assign(count="1")
        t.loc[7, "count"] = bad
        t.to_csv(tmp_path / "bad.csv", index=False)
        with pytest.raises(SdcevalError, match="'count' must hold whole numbers >= 0.*row 8"):
            sdceval.anonymize(ds, "mondrian", models=f"kmap:k=5,population={tmp_path / 'bad.csv'}")
    people.assign(zip="z99").to_csv(tmp_path / "unknown.csv", index=False)
    with pytest.raises(SdcevalError, match="'z99'"):
        sdceval.anonymize(ds, "mondrian", models=f"kmap:k=5,population={tmp_path / 'unknown.csv'}")
    with pytest.raises(SdcevalError, match="does not exist"):
        sdceval.anonymize(ds, "mondrian", models=f"kmap:k=5,population={tmp_path / 'none.csv'}")
    with pytest.raises(SdcevalError, match="exceeds the 3000 people"):
        sdceval.anonymize(ds, "mondrian", models=f"kmap:k=3001,population={_d(small)}")


def _d(small):
    return small[2] / "pop.csv"


def test_bad_parameters(small):
    ds = small[0]
    with pytest.raises(SdcevalError, match="'k'"):
        privacy.parse_model_spec("kmap:k=0,sampling_fraction=0.1")
    with pytest.raises(SdcevalError, match="needs sampling_fraction"):
        sdceval.anonymize(ds, "mondrian", models="kmap:k=5")     # no weights
    with pytest.raises(SdcevalError, match="needs population=FILE"):
        privacy.parse_model_spec("kmap:k=5,estimator=population")
    with pytest.raises(SdcevalError, match="not both"):
        privacy.parse_model_spec("kmap:k=5,sampling_fraction=0.1,population_size=100")
    with pytest.raises(SdcevalError, match="smaller than the 300 records"):
        sdceval.anonymize(ds, "mondrian", models="kmap:k=5,population_size=100")
    with pytest.raises(SdcevalError, match="'significance'"):
        privacy.parse_model_spec("kmap:k=5,sampling_fraction=0.1,significance=1.5")
    # counts alone cannot judge a class against a population table
    with pytest.raises(SdcevalError, match="its counts do not tell"):
        privacy.parse_model_spec(f"kmap:k=5,population={_d(small)}").value(
            np.array([[3]]), None)


def test_cli_anonymize_with_kmap(small, tmp_path, capsys):
    ds, _, d = small
    ds.frame.to_csv(tmp_path / "sample.csv", index=False)
    out = tmp_path / "out.csv"
    for model in ("kmap:k=3,estimator=poisson,sampling_fraction=0.1",
                  f"kmap:k={K},population={d / 'pop.csv'}"):
        code = main(["-q", "anonymize", "--data", "adult", "--method", "mondrian",
                     "--model", model, "--out", str(out)]) if "poisson" in model else main(
            ["-q", "anonymize", "--data", str(tmp_path / "sample.csv"), "--qi",
             "age,zip,sex", "--method", "mondrian", "--model", model, "--out", str(out)])
        err = capsys.readouterr().err
        assert code == 0, err
        assert out.exists() and len(pd.read_csv(out)) > 0
    code = main(["-q", "anonymize", "--data", "adult", "--method", "mondrian", "--model",
                 "kmap:k=3,estimator=population", "--out", str(out)])
    assert code == 2 and "needs population=FILE" in capsys.readouterr().err


def test_unknown_estimator_is_named():
    with pytest.raises(SdcevalError, match="estimator must be one of auto, population, "
                                           "poisson, zero_truncated_poisson"):
        privacy.parse_model_spec("kmap:k=5,estimator=binomial,sampling_fraction=0.1")


def test_bucketization_buckets_cover_k_people(tmp_path):
    """Bucketization partitions as Mondrian: each bucket's box covers >= k people."""
    rng = np.random.default_rng(1)
    people = pd.DataFrame({"zip": rng.choice(ZIP.leaves, 3000),
                           "sex": rng.choice(["F", "M"], 3000),
                           "d": rng.choice(list("abcd"), 3000)})
    people.groupby(["zip", "sex"]).size().rename("count").reset_index().to_csv(
        tmp_path / "pop.csv", index=False)
    s = people.sample(300, random_state=0).reset_index(drop=True)
    ds = Dataset(s, Schema.from_roles(s, qi=["zip", "sex"], sensitive="d",
                                      hierarchies={"zip": ZIP}), name="b")
    rel = sdceval.anonymize(ds, "bucketization",
                            models=f"kmap:k=30,population={tmp_path / 'pop.csv'};l=2,variant=distinct")
    covered, _ = _brute_force(ds, rel, people)
    assert len(covered) > 5 and (covered >= 30).all()
    assert rel.info["achieved"]["k"] == covered.min()


def test_mondrian_reports_k_and_kmap_each_under_its_own_name():
    """With k-anonymity and k-map together Mondrian's ``achieved`` keeps both levels
    (both models' threshold parameter is ``k``: each is keyed by its model's name)."""
    from sdceval.core.loaders import load_dataset
    ds = load_dataset("adult-arx")
    rel = sdceval.anonymize(ds, "mondrian",
                            models=["k=5", "kmap:k=3,estimator=poisson,sampling_fraction=0.1"])
    got = rel.info["achieved"]
    assert set(got) >= {"k", "kmap"}
    assert got["k"] == rel.class_sizes().min()
