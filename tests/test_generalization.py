"""Full-domain generalization with Dewri et al.'s bounded suppression (SPEC §3)."""
import itertools

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import sdceval
from sdceval import Dataset, Hierarchy, Schema, SdcevalError, load_dataset
from sdceval.lattice import Lattice
from sdceval.methods.generalization import (evaluate_node, lattice_size, parse_levels,
                                            rule_node, search_node, suppression_threshold)

# class sizes 1, 1, 2, 3, 3, 5 at the bottom node: |E_1| = 2, |E_2| = 2, |E_3| = 6,
# |E_4| = 0, |E_5| = 5, N = 15
X = list("ab") + ["c"] * 2 + ["d"] * 3 + ["e"] * 3 + ["f"] * 5
X_TREE = Hierarchy([[v, "G1" if v in "abc" else "G2", "*"] for v in "abcdef"], name="x")


def hand_dataset(extra_qi=False):
    frame = pd.DataFrame({"x": X, "s": list("pqpqpqpqpqpqpqp"),
                          "y": [1, 2] * 7 + [3], "income": ["lo"] * 10 + ["hi"] * 5})
    qi = ["x", "y"] if extra_qi else ["x"]
    schema = Schema.from_roles(frame, qi=qi, sensitive="s", label="income",
                               hierarchies={"x": X_TREE})
    return Dataset(frame, schema, name="hand")


@pytest.mark.parametrize("eta, j, n_supp", [
    (0, 0, 0),      # |E_1| = 2 > 0 already: nothing suppressed, 1-anonymous
    (1, 0, 0),
    (2, 1, 2),      # |E_1| = 2 <= 2 < |E_1| + |E_2| = 4: suppress E_1, 2-anonymous
    (3, 1, 2),
    (4, 2, 4),      # 4 <= 4 < 10: suppress E_1, E_2
    (9, 2, 4),
    (10, 4, 10),    # 10 <= 10 (E_4 is empty), 15 > 10: suppress E_1..E_4, 5-anonymous
    (14, 4, 10),
    (15, 4, 10),    # η >= N: no j exists; the largest class is kept
    (0.2, 1, 2),    # fraction: 0.2 * 15 = 3 records
])
def test_suppression_rule_hand_example(eta, j, n_supp):
    ds = hand_dataset()
    rel = sdceval.anonymize(ds, "generalization", levels="0", max_suppression=eta)
    assert rel.info["j"] == j and rel.info["k"] == j + 1
    assert rel.suppressed.sum() == n_supp == rel.info["suppressed"]
    sizes = rel.class_sizes()
    kept = ~rel.suppressed
    assert sizes[kept].min() == j + 1  # the smallest kept class has exactly j + 1 records
    # the suppressed records are exactly those of classes of size <= j
    _, inv, cnt = np.unique(np.array(X), return_inverse=True, return_counts=True)
    assert (rel.suppressed == (cnt[inv] <= j)).all()


def test_suppression_threshold_direct():
    sizes = np.array([1, 1, 2, 3, 3, 5])
    assert [suppression_threshold(sizes, e) for e in (0, 2, 4, 10, 100)] == [1, 2, 3, 5, 5]


def test_suppressed_rows_are_star_rows_in_one_class():
    ds = hand_dataset(extra_qi=True)
    rel = sdceval.anonymize(ds, "generalization", levels="x=0,y=0", max_suppression=7)
    s = rel.suppressed
    assert s.sum() == 7  # the seven singletons; the four pairs remain
    assert (rel.data.loc[s, ["x", "y"]] == "*").all().all()
    assert len(np.unique(rel.classes[s])) == 1
    assert not np.isin(rel.classes[~s], rel.classes[s]).any()
    assert rel.classes.max() == rel.info["n_classes"] - 1  # ids 0..C-1
    assert len(np.unique(rel.classes)) == rel.info["n_classes"]
    for q in ("x", "y"):
        lo, hi = rel.cells[q]
        assert (lo[s] == 0).all() and (hi[s] == ds.hierarchy(q).n_leaves - 1).all()
    # sensitive and label columns published unchanged
    assert rel.data["s"].tolist() == ds.frame["s"].tolist()
    assert list(rel.data.columns) == ["x", "s", "y"]
    assert (rel.sensitive_codes == ds.codes("s")).all()


def test_levels_generalize_to_hierarchy_nodes():
    ds = hand_dataset()
    rel = sdceval.anonymize(ds, "generalization", levels="1", max_suppression=0)
    assert rel.data["x"].tolist() == ["G1"] * 4 + ["G2"] * 11
    assert rel.info["k"] == 4 and rel.info["n_classes"] == 2
    assert rel.kind == "generalized" and rel.method == "generalization"


@pytest.fixture(scope="module")
def adult_train():
    return load_dataset("adult-train")


def test_cells_contain_original_values(adult_train):
    ds = adult_train
    rel = sdceval.anonymize(ds, "generalization", levels="2,1,1,1,0,1")
    keep = ~rel.suppressed
    for q in ds.schema.qis:
        lo, hi = rel.cells[q]
        code = ds.codes(q)
        assert ((lo <= code) & (code <= hi)).all()
        h = ds.hierarchy(q)
        # the cell is the record's node at its level; labels are that node's labels
        lv = rel.info["levels"][q]
        node = h.node_of[lv][code]
        assert (lo[keep] == h.lo[lv][node[keep]]).all()
        assert (rel.data[q][keep].to_numpy() == h.labels[lv][node[keep]]).all()


def test_release_is_k_anonymous_after_suppression(adult_train):
    ds = adult_train
    rel = sdceval.anonymize(ds, "generalization", levels="3,1,1,1,1,0",
                            max_suppression=0.01)
    keep = ~rel.suppressed
    assert 0 < keep.sum() < ds.n and rel.suppressed.sum() <= 0.01 * ds.n
    # independent recomputation: group the published labels of the kept rows
    groups = rel.data.loc[keep].groupby(ds.schema.qis).size()
    assert groups.min() == rel.info["k"]
    assert len(groups) + 1 == rel.info["n_classes"]
    # and the rule's j is minimal: also suppressing the next size class would exceed η
    qis = ds.schema.qis
    gen = pd.DataFrame({q: ds.hierarchy(q).generalize(ds.codes(q), rel.info["levels"][q])[0]
                        for q in qis})
    sizes = gen.assign(one=1).groupby(qis)["one"].transform("size").to_numpy()
    assert (sizes[rel.suppressed] < rel.info["k"]).all()
    assert (sizes <= rel.info["k"]).sum() > rel.info["eta"]


def brute_force_optimum(ds, k, eta_frac):
    """Every lattice node by pandas grouping of the generalized codes, Dewri's rule by a
    loop over class sizes, GLM from the release measure: the feasible nodes (j + 1 >= k)
    with the lowest GLM (within 1e-9 relative)."""
    qis = ds.schema.qis
    hs = [ds.hierarchy(q) for q in qis]
    eta = eta_frac * ds.n if eta_frac < 1 else eta_frac
    found = []
    for levels in itertools.product(*[range(h.height + 1) for h in hs]):
        cols = {q: h.node_of[lv][ds.codes(q)] for q, h, lv in zip(qis, hs, levels)}
        sizes = pd.DataFrame(cols).assign(one=1).groupby(qis)["one"].transform("size")
        by_size = pd.Series(sizes.to_numpy()).value_counts()
        j, total = 0, 0
        while True:  # smallest j with |E_1| + ... + |E_{j+1}| > η
            total += int(by_size.get(j + 1, 0))
            if total > eta or j + 1 >= sizes.max():
                break
            j += 1
        if j + 1 < k:
            continue
        rel = sdceval.anonymize(ds, "generalization", levels=",".join(map(str, levels)),
                                max_suppression=eta_frac)
        found.append((sdceval.evaluate(ds, rel, "glm", normalized=False).value, levels))
    best = min(v for v, _ in found)
    return [lv for v, lv in found if v <= best + 1e-9 * max(1, best)], best


def small_dataset():
    rng = np.random.default_rng(7)
    n = 400
    frame = pd.DataFrame({"age": rng.integers(20, 60, n),
                          "edu": rng.choice(list("abcdef"), n, p=[.3, .2, .2, .1, .1, .1]),
                          "sex": rng.choice(["M", "F"], n), "occ": rng.choice(list("uvw"), n)})
    edu = Hierarchy([[v, "lo" if v in "abc" else "hi", "*"] for v in "abcdef"], name="edu")
    age = Hierarchy.intervals(range(20, 60), [5, 10, 20], name="age")
    schema = Schema.from_roles(frame, qi=["age", "edu", "sex"], sensitive="occ",
                               hierarchies={"edu": edu, "age": age})
    return Dataset(frame, schema, name="small")


@pytest.mark.parametrize("k, eta", [(2, 0.01), (5, 0.01), (10, 0.05), (25, 0), (40, 10)])
def test_k_picks_the_optimal_k_anonymous_node(k, eta):
    ds = small_dataset()
    assert lattice_size(ds) == 5 * 3 * 2
    optimal, best = brute_force_optimum(ds, k, eta)
    rel = sdceval.anonymize(ds, "generalization", k=k, max_suppression=eta)
    levels = tuple(rel.info["levels"].values())
    # ties: the lowest node, then the lexicographically smallest levels
    assert levels == min(optimal, key=lambda v: (sum(v), v))
    assert sorted(map(tuple, rel.info["search"]["ties"])) == sorted(optimal)
    assert rel.info["k"] >= k
    assert rel.info["search"]["value"] == pytest.approx(best, rel=1e-12)
    assert sdceval.evaluate(ds, rel, "glm", normalized=False).value == pytest.approx(best)


def test_optimal_loss_grows_with_k_on_adult(adult_train):
    # the nodes feasible for a larger k are feasible for a smaller one (j + 1 >= k), so
    # the optimum can only get worse as k grows
    rels = [sdceval.anonymize(adult_train, "generalization", k=k, metric="nu_entropy")
            for k in (5, 50)]
    values = [r.info["search"]["value"] for r in rels]
    assert values == sorted(values) and values[0] > 0
    assert [r.info["k"] >= k for r, k in zip(rels, (5, 50))] == [True, True]


def test_level_errors_name_the_qi():
    ds = small_dataset()
    with pytest.raises(SdcevalError, match=r"level 4 for QI 'edu' is outside 0..2"):
        sdceval.anonymize(ds, "generalization", levels="0,4,0")
    with pytest.raises(SdcevalError, match=r"level 9 for QI 'age' is outside 0..4"):
        sdceval.anonymize(ds, "generalization", levels="age=9")
    with pytest.raises(SdcevalError, match=r"2 value\(s\) but .* 3 quasi-identifiers "
                                           r"\(age, edu, sex\)"):
        sdceval.anonymize(ds, "generalization", levels="1,1")
    with pytest.raises(SdcevalError, match="'eud', which is not a quasi-identifier.*'edu'"):
        sdceval.anonymize(ds, "generalization", levels="eud=1")
    with pytest.raises(SdcevalError, match="'x' for QI 'sex' is not an integer"):
        sdceval.anonymize(ds, "generalization", levels="0,0,x")
    with pytest.raises(SdcevalError, match="mixes named"):
        sdceval.anonymize(ds, "generalization", levels="age=1,1,0")
    with pytest.raises(SdcevalError, match="either levels .* or a privacy model"):
        sdceval.anonymize(ds, "generalization", levels="1,1,0", k=5)
    with pytest.raises(SdcevalError, match="whole number"):
        sdceval.anonymize(ds, "generalization", max_suppression=2.5)
    with pytest.raises(SdcevalError, match="max_suppression"):
        sdceval.anonymize(ds, "generalization", max_suppression=-0.1)


def test_parse_levels_forms():
    ds = small_dataset()
    assert parse_levels(ds, None) == (0, 0, 0)
    assert parse_levels(ds, "") == (0, 0, 0)
    assert parse_levels(ds, "edu=2, sex=1") == (0, 2, 1)
    assert parse_levels(ds, [1, 2, 0]) == (1, 2, 0)
    assert parse_levels(ds, str([1, 2, 0])) == (1, 2, 0)
    assert parse_levels(ds, {"age": 3}) == (3, 0, 0)


def test_input_not_mutated():
    ds = small_dataset()
    before = ds.frame.copy()
    codes = {q: ds.codes(q).copy() for q in ds.schema.qis}
    rel = sdceval.anonymize(ds, "generalization", levels="2,1,1")
    rel.data.loc[0, "age"] = "changed"
    pd.testing.assert_frame_equal(ds.frame, before)
    for q, c in codes.items():
        assert (ds.codes(q) == c).all()


def test_no_qis_is_an_error():
    frame = pd.DataFrame({"a": [1.0, 2.0, 3.0]})
    ds = Dataset(frame, Schema.from_roles(frame, numeric=["a"]))
    with pytest.raises(SdcevalError, match="needs quasi-identifiers"):
        sdceval.anonymize(ds, "generalization")


def test_numeric_qi_without_hierarchy_uses_automatic_intervals():
    rng = np.random.default_rng(1)
    frame = pd.DataFrame({"inc": rng.normal(5e4, 1e4, 200).round(2),
                          "s": rng.choice(list("ab"), 200)})
    ds = Dataset(frame, Schema.from_roles(frame, qi=["inc"], sensitive="s"))
    h = ds.hierarchy("inc")
    rel = sdceval.anonymize(ds, "generalization", levels=str(h.height - 1))
    lo, hi = rel.cells["inc"]
    code = ds.codes("inc")
    assert ((lo <= code) & (code <= hi)).all() and rel.info["k"] > 1


def reference_node(ds, levels, eta_frac):
    """Dewri's rule on the records, with pandas and a plain loop over class sizes:
    (classes, sizes, suppressed, cells, k) as `Node` holds them (kept classes in order
    of their node ids, QI by QI; the suppressed records one last class)."""
    qis = ds.schema.qis
    gen = pd.DataFrame({q: ds.hierarchy(q).node_of[lv][ds.codes(q)]
                        for q, lv in zip(qis, levels)})
    raw = gen.groupby(qis, sort=True).ngroup().to_numpy()
    sizes = np.bincount(raw)
    eta = eta_frac * ds.n if eta_frac < 1 else eta_frac
    k = None
    for s in np.unique(sizes):  # smallest s with R(s) > η, else the largest
        if sizes[sizes <= s].sum() > eta:
            k = int(s)
            break
    k = int(sizes.max()) if k is None else k
    keep = sizes >= k
    supp = ~keep[raw]
    relabel = np.where(keep, np.cumsum(keep) - 1, keep.sum())
    out_sizes = np.r_[sizes[keep], [sizes[~keep].sum()] if supp.any() else []]
    cells = {}
    for q, lv in zip(qis, levels):
        lo, hi = ds.hierarchy(q).generalize(ds.codes(q), lv)
        lo, hi = np.where(supp, 0, lo), np.where(supp, ds.hierarchy(q).n_leaves - 1, hi)
        cells[q] = (lo, hi)
    return relabel[raw], out_sizes.astype(np.int64), supp, cells, k


@pytest.mark.parametrize("eta", [0, 1, 3, 0.05, 0.3, 400])
def test_rule_node_and_evaluate_node_equal_the_reference(eta):
    ds = small_dataset()
    for levels in Lattice.of(ds).nodes():
        classes, sizes, supp, cells, k = reference_node(ds, levels, eta)
        for node in (evaluate_node(ds, levels, eta), rule_node(ds, levels, "dewri", eta)):
            assert (node.suppressed == supp).all() and node.k == k
            assert (node.classes == classes).all() and (node.sizes == sizes).all()
            for q in ds.schema.qis:
                assert (node.cells[q][0] == cells[q][0]).all()
                assert (node.cells[q][1] == cells[q][1]).all()
    node = evaluate_node(ds, (1, 1, 0), 0.05, cells=False)
    assert node.cells is None and node.sizes.sum() == ds.n


def test_arx_rule_suppresses_exactly_the_violating_classes():
    ds = small_dataset()
    rel = sdceval.anonymize(ds, "generalization", k=5, suppression_rule="arx",
                            max_suppression=0.05)
    gen = pd.DataFrame({q: ds.hierarchy(q).node_of[lv][ds.codes(q)]
                        for q, lv in rel.info["levels"].items()})
    sizes = gen.assign(one=1).groupby(list(gen.columns))["one"].transform("size")
    assert (rel.suppressed == (sizes.to_numpy() < 5)).all()
    assert rel.suppressed.sum() <= int(0.05 * ds.n) and rel.info["rule"] == "arx"


def test_dewri_lattices_on_adult_train(adult_train):
    """Dewri et al. 2010 §7: 17920 nodes with salary class as a QI, 8960 without."""
    qis = ["age", "workclass", "education", "marital-status", "race", "sex",
           "native-country"]
    with_salary = Dataset(adult_train.frame,
                          adult_train.schema.with_roles(qi=qis + ["income"]))
    without = Dataset(adult_train.frame, adult_train.schema.with_roles(qi=qis))
    assert with_salary.schema.qis == qis + ["income"] and with_salary.schema.label is None
    assert without.schema.label == "income"
    assert lattice_size(with_salary) == 17920 and lattice_size(without) == 8960
    rel = sdceval.anonymize(without, "generalization", k=10, metric="nu_entropy")
    assert rel.info["k"] >= 10 and rel.suppressed.sum() <= 0.01 * adult_train.n


# -- kept classes have >= k records, whatever max_suppression (issue 6) -----------------
@st.composite
def small_case(draw):
    """A tiny data set (one categorical and one integer QI), a k and an η; η ranges over
    fractions, counts below n and counts >= n (the whole table may be suppressed)."""
    n = draw(st.integers(2, 24))
    xs = draw(st.lists(st.sampled_from("abcd"), min_size=n, max_size=n))
    ys = draw(st.lists(st.integers(0, 5), min_size=n, max_size=n))
    k = draw(st.integers(2, n))
    eta = draw(st.one_of(st.sampled_from([0, 0.01, 0.1, 0.5, 0.99]),
                         st.integers(1, 3 * n)))
    return xs, ys, k, eta


def _tiny(xs, ys):
    frame = pd.DataFrame({"x": xs, "y": ys, "s": ["p", "q"] * (len(xs) // 2)
                          + ["p"] * (len(xs) % 2)})
    return Dataset(frame, Schema.from_roles(frame, qi=["x", "y"], sensitive="s"), name="tiny")


@settings(max_examples=30, deadline=None)
@given(small_case())
def test_kept_classes_have_at_least_k_records(case):
    xs, ys, k, eta = case
    ds = _tiny(xs, ys)
    rel = sdceval.anonymize(ds, "generalization", k=k, max_suppression=eta)
    kept = ~rel.suppressed
    assert kept.any()
    # independent recount of the published (generalized) QI labels of the kept rows
    sizes = rel.data.loc[kept].groupby(["x", "y"]).size()
    assert sizes.min() >= k
    assert sizes.min() == rel.info["k"]
    limit = eta * ds.n if eta < 1 else eta
    assert rel.suppressed.sum() <= limit


@settings(max_examples=20, deadline=None)
@given(small_case())
def test_rule_k_is_the_smallest_kept_class_for_any_node(case):
    xs, ys, _, eta = case
    ds = _tiny(xs, ys)
    rel = sdceval.anonymize(ds, "generalization", levels="0,0", max_suppression=eta)
    kept = ~rel.suppressed
    assert kept.any()
    assert rel.data.loc[kept].groupby(["x", "y"]).size().min() == rel.info["k"]


def test_k_with_suppression_of_everything_allowed_still_gives_k():
    # classes of 3, 3, 2, 1 at the bottom node: with η >= n the rule alone would keep the
    # classes of 3, which are not 5-anonymous; the search must generalize instead
    frame = pd.DataFrame({"x": list("aaabbbccd"), "s": list("pqpqpqpqp")})
    ds = Dataset(frame, Schema.from_roles(frame, qi=["x"], sensitive="s"))
    for eta in (9, 20):
        rel = sdceval.anonymize(ds, "generalization", k=5, max_suppression=eta)
        assert rel.info["levels"] == {"x": 1} and rel.info["k"] == 9
        assert not rel.suppressed.any()


# -- lattice size bound (issue 6) ----------------------------------------------------
def many_numeric_qis(n_qis=9, n=2000):
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({f"x{i}": rng.normal(0, 1, n).round(3) for i in range(n_qis)})
    frame["s"] = rng.choice(list("abc"), n)
    return Dataset(frame, Schema.from_roles(frame, qi=[f"x{i}" for i in range(n_qis)],
                                            sensitive="s"), name="wide")


@pytest.mark.slow
def test_nine_numeric_qis_search_finishes():
    """Issue 7: 9 numeric QIs with automatic hierarchies (10 077 696 nodes) on 2 000
    records; the search prunes with monotonicity and the GLM bound."""
    ds = many_numeric_qis()
    rel = sdceval.anonymize(ds, "generalization", k=5)
    assert rel.info["search"]["lattice_size"] == lattice_size(ds) > 10_000_000
    assert rel.info["k"] >= 5
    assert rel.info["search"]["nodes_checked"] < 100_000


def test_lattice_too_large_to_search_is_refused_before_any_node(monkeypatch):
    import sdceval.lattice.search as search
    ds = many_numeric_qis()
    monkeypatch.setattr(search, "MAX_SEARCH_NODES", 1000)

    def boom(*a, **kw):
        raise AssertionError("a node was evaluated")
    monkeypatch.setattr(search._Search, "check", boom)
    with pytest.raises(SdcevalError) as exc:
        sdceval.anonymize(ds, "generalization", k=5)
    msg = str(exc.value)
    assert f"{lattice_size(ds):,}" in msg and "coarser hierarchies" in msg
    # one node (levels) is always fine, however large the lattice
    rel = sdceval.anonymize(ds, "generalization", levels=",".join(["5"] * 9))
    assert rel.info["k"] == ds.n


def test_search_progress_bar_only_on_a_terminal(monkeypatch, capsys):
    import sdceval.core.progress as progress
    import sdceval.lattice.search as search
    ds = small_dataset()
    bars = []
    real = search.progress_bar

    def spy(*a, **kw):
        bar = real(*a, **kw)
        bars.append((bar, bar.disable))   # close() disables a bar: record it now
        return bar
    monkeypatch.setattr(search, "progress_bar", spy)
    model = [sdceval.privacy.KAnonymity(5)]
    search_node(ds, model, max_suppression=0.0)
    assert bars and all(off for _, off in bars)   # pytest's stderr is not a TTY
    monkeypatch.setattr(progress.sys.stderr, "isatty", lambda: True, raising=False)
    monkeypatch.setenv(progress.QUIET_ENV, "1")
    bars.clear()
    search_node(ds, model, max_suppression=0.0)
    assert bars and all(off for _, off in bars)   # quiet wins over a terminal
    monkeypatch.delenv(progress.QUIET_ENV)
    bars.clear()
    search_node(ds, model, max_suppression=0.0)
    assert bars and not bars[0][1]                # a terminal, not quiet: shown (delayed)
    bars.clear()
    _, res = search_node(ds, model, max_suppression=0.0, progress=True)
    assert bars and not bars[0][1] and bars[0][0].n == res.checked
    assert "optimal search" in capsys.readouterr().err


def test_cli_quiet_silences_search_progress(monkeypatch, tmp_path):
    import sdceval.core.progress as progress
    from sdceval.cli import main
    from sdceval.methods import generalization as gen
    monkeypatch.delenv(progress.QUIET_ENV, raising=False)
    seen = []
    search = gen.search_node

    def spy(*args, **kwargs):  # what the search sees while the CLI runs
        seen.append(progress.quiet())
        return search(*args, **kwargs)

    monkeypatch.setattr(gen, "search_node", spy)
    out = tmp_path / "rel.csv"
    assert main(["-q", "anonymize", "--data", "adult-train", "--method", "generalization",
                 "--param", "k=5", "--out", str(out)]) == 0
    assert seen == [True]
    assert not progress.quiet()  # restored when main returns


def test_a_bar_that_cannot_show_does_not_import_tqdm():
    import subprocess
    import sys
    code = ("import sys\nfrom sdceval.core.progress import progress_bar\n"
            "bar = progress_bar('x', total=3, enabled=False)\nbar.update(2)\nbar.close()\n"
            "bar = progress_bar('y', total=3)\n"  # stderr is a pipe here: cannot show
            "print(bar.n, bar.disable, 'tqdm' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.split()
    assert out == ["0", "True", "False"]
