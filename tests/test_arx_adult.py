"""ARX's own Adult test cases reproduced (issue 7, items 2 and 7; docs/arx.md).

ARX's test suite (``src/test/org/deidentifier/arx/test``, commit aacd487f) asserts the
optimal transformation's information loss for Adult under several privacy models.  Here
each case's node is evaluated with ARX's suppression rule (every class violating a model
is suppressed; feasible iff the suppressed records number at most ⌊s·N⌋,
``ARXConfiguration``/``HashGroupify``) and ARX's non-uniform entropy
(`sdceval.lattice.entropy`); the slow tests check that an exhaustive minimum over the
whole lattice is exactly ARX's node and value.  The privacy checks are local
(`_arx_kept`), written after ARX's ``criteria`` classes, so that this file tests the
metric and the data, not another module's models.

Not reproduced (docs/arx.md): ARX's Grassberger entropy-ℓ cases — ARX's check stops at
the first partial sum above its bound, and with Grassberger's estimator (G(1) < 0) the
partial sums are not monotone, so its verdict depends on the order of its hash buckets,
i.e. on its search path; d-presence, t-closeness, k-map and risk-based cases use models
this file does not implement.
"""
import configparser
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from sdceval.core.dataset import Dataset
from sdceval.core.errors import SdcevalError
from sdceval.core.hierarchy import Hierarchy
from sdceval.core.loaders import ARX_ADULT_COLUMNS, BUNDLED, load_arx_adult, load_dataset
from sdceval.core.schema import Schema
from sdceval.lattice import NodeEngine
from sdceval.lattice.batch import ClassBatch
from sdceval.lattice.entropy import EntropyTables, arx_round, gs_factors

ROOT = Path(__file__).resolve().parents[1]

# (model, suppression limit, monotonic metric?, ARX's optimum, ARX's loss, ARX source)
# models: ("k", k) | ("entropy", l) (Shannon) | ("recursive", c, l); ARX's metric is
# Metric.createPrecomputedEntropyMetric(0.1, monotonic)
K_CASES = [  # nine QIs, TestAnonymizationKAnonymity cases 0-3 (adult.csv)
    (("k", 5), 0.04, True, (1, 0, 1, 1, 3, 2, 2, 0, 1), 255559.85455731067),
    (("k", 100), 0.04, True, (1, 1, 1, 1, 3, 2, 2, 1, 1), 379417.3460570988),
    (("k", 5), 0.0, True, (1, 2, 1, 1, 3, 2, 2, 1, 1), 407289.5388925293),
    (("k", 100), 0.0, True, (0, 4, 1, 1, 3, 2, 2, 1, 1), 453196.8932458743),
]
L_CASES = [  # eight QIs, occupation sensitive
    # TestAnonymizationLDiversity 0, 2 (= TestAnonymizationEntropyLDiversity 4, Shannon)
    (("entropy", 5), 0.04, False, (1, 0, 1, 1, 2, 2, 2, 1), 228878.2039109517),
    (("entropy", 5), 0.0, False, (1, 1, 1, 1, 3, 2, 2, 1), 324620.5269918692),
    # TestAnonymizationLDiversity 1, 3: no solution
    (("entropy", 100), 0.04, False, None, None),
    (("entropy", 100), 0.0, False, None, None),
    # TestAnonymizationCombinations (the cases without d-presence / t-closeness)
    (("k", 5), 0.0, True, (1, 1, 1, 1, 3, 2, 2, 1), 324620.5269918692),
    (("recursive", 4.0, 5), 0.0, True, (1, 1, 1, 1, 3, 2, 2, 1), 324620.5269918692),
    (("k", 5), 0.05, False, (0, 0, 1, 1, 2, 2, 2, 0), 180132.40848244698),
    (("recursive", 4.0, 5), 0.05, True, (1, 0, 1, 1, 2, 2, 2, 0), 198181.4042332967),
    (("recursive", 4.0, 5), 0.05, False, (1, 0, 1, 1, 2, 2, 2, 0), 209764.96161974416),
]


# -- ARX's criteria and suppression rule (private to this file) ----------------------
def _arx_kept(batch: ClassBatch, model) -> np.ndarray:
    """Per class: does it satisfy ``model`` as ARX's criterion decides (``KAnonymity``,
    ``EntropyLDiversity`` with Shannon's estimator, ``RecursiveCLDiversity``)?  ARX
    suppresses every class that does not (``HashGroupify.analyzeAll``)."""
    sizes = batch.sizes
    if model[0] == "k":
        return sizes >= model[1]
    counts = batch.sensitive_matrix()
    distinct = (counts > 0).sum(axis=1)
    if model[0] == "entropy":
        ell = float(model[1])
        min_size = math.ceil(ell)  # LDiversity.minSize; also HashGroupify's class size
        f = counts.astype(np.float64)
        terms = np.where(counts > 0, f * np.log(np.where(counts > 0, f, 1.0)), 0.0)
        # EntropyLDiversity.isAnonymous: fail when total·(ln total − ln l) < Σ f ln f
        # (every term ≥ 0 with Shannon, so ARX's early exit changes nothing)
        bound = sizes * (np.log(sizes) - math.log(ell))
        return (sizes >= min_size) & (distinct >= min_size) & ~(bound < np.cumsum(terms, 1)[:, -1])
    if model[0] == "recursive":
        c, ell = float(model[1]), int(model[2])
        desc = -np.sort(-counts, axis=1)
        # RecursiveCLDiversity.isAnonymous: r_1 < c · (r_l + ... + r_m)
        return (sizes >= ell) & (distinct >= ell) & (desc[:, 0] < c * desc[:, ell - 1:].sum(1))
    raise AssertionError(model)


def _arx_limit(s: float, n: int) -> int:
    # ARXConfiguration.initialize: absMaxOutliers = (int) Math.floor(relMaxOutliers · n)
    return math.floor(s * n)


def _evaluate(engine, tables, entropy, model, s, monotonic, memo=None):
    """(feasible, loss, suppressed) per node of a list of class tables (``memo`` keeps
    the batch and each model's verdicts across calls on the same tables)."""
    memo = {} if memo is None else memo
    if "batch" not in memo:
        memo["batch"] = ClassBatch.of_tables(tables)
    batch = memo["batch"]
    if model not in memo:
        memo[model] = _arx_kept(batch, model)
    kept = memo[model]
    suppressed = batch.node_sum(np.where(kept, 0, batch.sizes)).astype(np.int64)
    feasible = suppressed <= _arx_limit(s, engine.n)
    return feasible, entropy.evaluate(batch, kept, monotonic=monotonic), suppressed


@pytest.fixture(scope="module")
def arx9():
    ds = load_arx_adult()
    engine = NodeEngine(ds)
    return ds, engine, EntropyTables(ds, engine.qis)


@pytest.fixture(scope="module")
def arx8():
    ds = load_arx_adult("occupation")
    engine = NodeEngine(ds)
    return ds, engine, EntropyTables(ds, engine.qis)


# -- the data set ------------------------------------------------------------------------
def test_adult_arx_is_arx_adult_csv_with_arx_hierarchies(arx9):
    ds, engine, _ = arx9
    assert "adult-arx" in BUNDLED and load_dataset("adult-arx") is ds
    assert list(ds.frame.columns) == ARX_ADULT_COLUMNS == ds.schema.qis
    assert ds.schema.sensitive is None and ds.n == 30162
    # ARX's data/adult.csv: first and last records
    assert ds.frame.iloc[0].astype(str).tolist() == [
        "Male", "39", "White", "Never-married", "Bachelors", "United-States", "State-gov",
        "Adm-clerical", "<=50K"]
    assert ds.frame.iloc[-1].astype(str).tolist() == [
        "Female", "52", "White", "Married-civ-spouse", "HS-grad", "United-States",
        "Self-emp-inc", "Exec-managerial", ">50K"]
    # adult-train's records in the same order (income is ARX's salary-class)
    train = load_dataset("adult-train").frame.rename(columns={"income": "salary-class"})
    assert ds.frame.equals(train[ARX_ADULT_COLUMNS])
    assert [ds.hierarchy(q).height for q in ds.schema.qis] == [1, 4, 1, 2, 3, 2, 2, 2, 1]
    assert engine.lattice.size == 12960
    # the hierarchies are ARX's files, read from the package through the schema file
    arx_dir = ROOT / "sdceval" / "hierarchies" / "arx"
    for q in ds.schema.qis:
        assert ds.hierarchy(q).source == (arx_dir / f"adult_hierarchy_{q}.csv").resolve()


def test_adult_arx_with_occupation_sensitive():
    ds = load_arx_adult("occupation")
    assert ds.schema.sensitive == "occupation"
    assert ds.schema.qis == [c for c in ARX_ADULT_COLUMNS if c != "occupation"]
    with pytest.raises(SdcevalError, match="unknown column of adult-arx 'ocupation'"):
        load_arx_adult("ocupation")


def test_arx_hierarchies_are_package_data():
    """Every hierarchy file ships: setuptools expands each package's globs from that
    package's folder ('*' does not enter sub-folders), and ``hierarchies/arx`` is a
    package of its own (so that setuptools does not warn about a folder it would
    otherwise treat as an undeclared package)."""
    cfg = configparser.ConfigParser()
    cfg.read(ROOT / "setup.cfg")
    data = cfg["options.package_data"]
    base = ROOT / "sdceval" / "hierarchies"
    shipped = set()
    for package, folder in (("sdceval.hierarchies", base), ("sdceval.hierarchies.arx",
                                                            base / "arx")):
        assert (folder / "__init__.py").exists()
        for g in data[package].split(","):
            shipped |= {p.relative_to(base).as_posix() for p in folder.glob(g.strip())}
    files = sorted(p.relative_to(base).as_posix() for p in base.rglob("*")
                   if p.is_file() and p.suffix in (".csv", ".toml", ".md"))
    assert len([f for f in files if f.startswith("arx/") and f.endswith(".csv")]) == 9
    assert {"arx/adult.toml", "arx/README.md"} <= set(files)
    missing = [f for f in files if f not in shipped]
    assert not missing, f"not shipped as package data: {missing}"


# -- ARX's optima, node by node ----------------------------------------------------------
@pytest.mark.parametrize("case", K_CASES, ids=lambda c: f"k{c[0][1]}-s{c[1]}")
def test_arx_k_anonymity_optimum(arx9, case):
    model, s, monotonic, node, loss = case
    _, engine, entropy = arx9
    feasible, value, _ = _evaluate(engine, [engine.classes(node)], entropy, model, s,
                                   monotonic)
    assert feasible[0]
    assert value[0] == pytest.approx(loss, rel=1e-12, abs=0)


@pytest.mark.parametrize("case", [c for c in L_CASES if c[3] is not None],
                         ids=lambda c: f"{c[0][0]}{c[0][-1]}-s{c[1]}-{'m' if c[2] else 'nm'}")
def test_arx_sensitive_optimum(arx8, case):
    model, s, monotonic, node, loss = case
    _, engine, entropy = arx8
    feasible, value, _ = _evaluate(engine, [engine.classes(node)], entropy, model, s,
                                   monotonic)
    assert feasible[0]
    assert value[0] == pytest.approx(loss, rel=1e-12, abs=0)


# -- exhaustive minima over the whole lattice --------------------------------------------
def _exhaustive(fixture, cases):
    """Per case, the feasible nodes of minimal loss and that loss (None if none)."""
    _, engine, entropy = fixture
    nodes = engine.lattice.nodes()
    nodes = nodes[np.argsort(nodes.sum(axis=1), kind="stable")]  # roll-up friendly
    loss = {i: np.full(len(nodes), np.inf) for i in range(len(cases))}
    for start in range(0, len(nodes), 512):
        part = nodes[start:start + 512]
        tables = [engine.classes(v) for v in part]
        memo = {}
        for i, (model, s, monotonic, *_rest) in enumerate(cases):
            feasible, value, _ = _evaluate(engine, tables, entropy, model, s, monotonic, memo)
            loss[i][start:start + len(part)] = np.where(feasible, value, np.inf)
    out = []
    for i in range(len(cases)):
        best = loss[i].min()
        if not np.isfinite(best):
            out.append(([], None))
            continue
        out.append(([tuple(int(x) for x in nodes[j]) for j in np.flatnonzero(loss[i] == best)],
                    float(best)))
    return out


@pytest.mark.slow
def test_exhaustive_minimum_is_arx_k_anonymity_optimum(arx9):
    for case, (optima, best) in zip(K_CASES, _exhaustive(arx9, K_CASES)):
        assert optima == [case[3]], case  # unique: no ties
        assert best == pytest.approx(case[4], rel=1e-12, abs=0)


@pytest.mark.slow
def test_exhaustive_minimum_is_arx_sensitive_optimum(arx8):
    for case, (optima, best) in zip(L_CASES, _exhaustive(arx8, L_CASES)):
        if case[3] is None:
            assert optima == [] and best is None, case  # ARX: no solution
        else:
            assert optima == [case[3]], case
            assert best == pytest.approx(case[4], rel=1e-12, abs=0)


# -- the metric itself, against a brute force on a small table ---------------------------
def _small():
    frame = pd.DataFrame({
        "a": ["x1", "x1", "x2", "x3", "x3", "x3", "x4", "x1"],
        "b": ["p", "q", "q", "q", "r", "r", "p", "p"]})
    ha = Hierarchy([["x1", "X12", "*"], ["x2", "X12", "*"], ["x3", "X34", "*"],
                    ["x4", "X34", "*"], ["x5", "X34", "*"]], name="a")
    hb = Hierarchy([["p", "*"], ["q", "*"], ["r", "*"]], name="b")
    return Dataset(frame, Schema.from_roles(frame, qi=["a", "b"],
                                            hierarchies={"a": ha, "b": hb}), name="small")


def _brute(ds, levels, kept_records=None):
    """ARX's definitions on the records: Σ_records log2(F(gen)/f(leaf)) per QI, plus for
    the suppressed records Σ_g c(g) log2(S/c(g)) over their generalized values."""
    total_m = total_nm = 0.0
    sup = None if kept_records is None else ~kept_records
    for q, lv in zip(ds.schema.qis, levels):
        h = ds.hierarchy(q)
        codes = ds.codes(q)
        leaf = pd.Series(codes)
        gen = pd.Series(h.node_of[lv][codes])
        f = leaf.map(leaf.value_counts())
        big_f = gen.map(gen.value_counts())
        g_q = float(np.sum(np.log2(big_f / f)))
        extra = 0.0
        if sup is not None and sup.any():
            c = gen[sup].value_counts().to_numpy(float)
            extra = float(np.sum(c * np.log2(sup.sum() / c)))
        total_m += g_q
        total_nm += g_q + extra
    return total_m, total_nm


def _floored(value, exact, d=2):
    """ARX floors each of the d per-QI losses to 10 decimals: the node's loss is at most
    d·1e-10 below the exact value (and never above it, up to float noise)."""
    return -1e-12 <= exact - value <= d * 1e-10 + 1e-12


@pytest.mark.parametrize("levels", [(0, 0), (1, 0), (2, 0), (0, 1), (1, 1), (2, 1)])
def test_entropy_matches_brute_force(levels):
    ds = _small()
    engine = NodeEngine(ds)
    entropy = EntropyTables(ds, engine.qis)
    table = engine.classes(levels)
    batch = ClassBatch.of_tables([table])
    kept = table.sizes >= 2  # suppress the singletons
    kept_records = kept[engine.record_classes(table)]
    mono, nm = _brute(ds, levels, kept_records)
    assert _floored(entropy.nu_entropy(batch, kept, "monotonic")[0], mono)
    assert _floored(entropy.nu_entropy(batch, kept, "non_monotonic")[0], nm)
    # the monotonic variant depends on the levels only (suppression adds nothing)
    assert entropy.nu_entropy(batch, np.ones_like(kept), "monotonic")[0] == \
        entropy.nu_entropy(batch, kept, "monotonic")[0] == entropy.of_levels(levels)[0]
    # nothing suppressed: both variants agree
    everything = np.ones_like(kept)
    assert entropy.nu_entropy(batch, everything, "non_monotonic")[0] == \
        entropy.nu_entropy(batch, everything, "monotonic")[0]


def test_non_monotonic_charges_suppressed_generalized_values_not_root():
    ds = _small()
    engine = NodeEngine(ds)
    entropy = EntropyTables(ds, engine.qis)
    table = engine.classes((1, 0))  # a at X12/X34, b at leaves
    batch = ClassBatch.of_tables([table])
    # suppress the two classes (X12, q) [x1 q, x2 q] and (X34, p) [x4 p]: S = 3
    ids = np.asarray(table.node_ids)
    labels_a = ds.hierarchy("a").labels[1][ids[0]]
    labels_b = ds.hierarchy("b").labels[0][ids[1]]
    sup = ((labels_a == "X12") & (labels_b == "q")) | ((labels_a == "X34") & (labels_b == "p"))
    assert table.sizes[sup].sum() == 3
    extra = (entropy.nu_entropy(batch, ~sup, "non_monotonic")
             - entropy.nu_entropy(batch, ~sup, "monotonic"))[0]
    # a: X12 ×2, X34 ×1 -> 2 log2(3/2) + log2 3; b: q ×2, p ×1 -> the same
    want = 2 * (2 * math.log2(1.5) + math.log2(3))
    assert abs(extra - want) <= 4e-10


def test_batch_of_many_nodes_equals_one_by_one(arx9):
    _, engine, entropy = arx9
    nodes = [(1, 0, 1, 1, 3, 2, 2, 0, 1), (0, 0, 0, 0, 0, 0, 0, 0, 0),
             (1, 4, 1, 2, 3, 2, 2, 2, 1), (0, 2, 1, 0, 1, 1, 0, 1, 0)]
    tables = [engine.classes(v) for v in nodes]
    batch = ClassBatch.of_tables(tables)
    kept = batch.sizes >= 5
    for variant in ("monotonic", "non_monotonic"):
        together = entropy.nu_entropy(batch, kept, variant)
        alone = [entropy.nu_entropy(ClassBatch.of_tables([t]), t.sizes >= 5, variant)[0]
                 for t in tables]
        assert np.array_equal(together, alone)
    assert np.array_equal(entropy.of_levels(nodes), entropy.nu_entropy(batch, kept))
    assert entropy.of_levels(nodes)[1] == 0.0  # the bottom loses nothing


def test_gs_factor_and_rounding_follow_arx():
    assert gs_factors(0.5) == (1.0, 1.0)
    assert gs_factors(0.0) == (1.0, 0.0)  # only generalization counts
    assert gs_factors(1.0) == (0.0, 1.0)  # only suppression counts
    assert gs_factors(0.25) == (1.0, 0.5) and gs_factors(0.75) == (0.5, 1.0)
    assert arx_round(np.array([1.23456789012345]))[0] == 1.2345678901
    ds = _small()
    engine = NodeEngine(ds)
    only_sup = EntropyTables(ds, engine.qis, gs_factor=1.0)
    table = engine.classes((1, 1))
    batch = ClassBatch.of_tables([table])
    assert only_sup.nu_entropy(batch, np.ones(table.n_classes, bool), "non_monotonic")[0] == 0


def test_entropy_bad_input():
    ds = _small()
    engine = NodeEngine(ds)
    entropy = EntropyTables(ds, engine.qis)
    table = engine.classes((1, 0))
    batch = ClassBatch.of_tables([table])
    with pytest.raises(SdcevalError, match="unknown variant 'monotone'"):
        entropy.nu_entropy(batch, None, "monotone")
    with pytest.raises(SdcevalError, match="give kept"):
        entropy.nu_entropy(batch, None, "non_monotonic")
    with pytest.raises(SdcevalError, match="boolean mask with one entry per class"):
        entropy.nu_entropy(batch, np.ones(table.n_classes + 1, bool), "non_monotonic")
    with pytest.raises(SdcevalError, match="boolean mask"):
        entropy.nu_entropy(batch, table.sizes, "non_monotonic")
    with pytest.raises(SdcevalError, match="level 3 of QI 'a' is outside 0..2"):
        entropy.of_levels([3, 0])
    with pytest.raises(SdcevalError, match="expected nodes with 2 levels"):
        entropy.of_levels([1, 0, 0])
    with pytest.raises(SdcevalError, match=r"gs_factor must be in \[0, 1\]"):
        EntropyTables(ds, engine.qis, gs_factor=1.5)


# -- the package's optimal search finds ARX's optimum ---------------------------------------
def _package_model(model):
    """The `sdceval.privacy` model of a case (not this file's private checks)."""
    from sdceval.privacy import make_model
    if model[0] == "k":
        return make_model("k", k=model[1])
    if model[0] == "entropy":
        return make_model("l", l=model[1], variant="entropy")
    return make_model("cl", c=model[1], l=model[2])


def _slow_unless_pruned(case):
    # models that are not monotone under suppression (entropy ℓ, recursive (c,ℓ)) with
    # a suppression limit, and the non-monotonic metric with one, are checked over most
    # of the 4 320 nodes: seconds each
    model, s, monotonic = case[:3]
    slow = s > 0 and (model[0] != "k" or not monotonic)
    return pytest.param(case, marks=pytest.mark.slow) if slow else case


@pytest.mark.parametrize("case", [_slow_unless_pruned(c) for c in K_CASES + L_CASES],
                         ids=lambda c: f"{c[0][0]}{c[0][-1]}-s{c[1]}-{'m' if c[2] else 'nm'}")
def test_optimal_search_finds_arx_optimum(arx9, arx8, case):
    """`optimal` with the package's models, ARX's rule and ARX's metric returns ARX's
    node and loss (or, where ARX has no solution, says none is feasible), each
    the unique optimum (no ties)."""
    from sdceval.lattice.search import LatticeProblem, optimal
    model, s, monotonic, node, loss = case
    ds, engine, _ = arx9 if len(case[3] or ()) == 9 or case in K_CASES else arx8
    problem = LatticeProblem(ds, [_package_model(model)], rule="arx", max_suppression=s,
                             engine=engine)
    metric = "nu_entropy" if monotonic else "nu_entropy_nm"
    if node is None:
        with pytest.raises(SdcevalError, match="no node satisfies"):
            optimal(problem, metric, progress=False)
        return
    res = optimal(problem, metric, progress=False)
    assert res.levels == node and res.ties == [node]
    assert res.value == pytest.approx(loss, rel=1e-12, abs=0)
    assert res.checked < engine.lattice.size
