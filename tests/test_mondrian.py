"""Mondrian (sdceval.methods.mondrian): hand examples, every privacy model verified by an
independent recomputation on the published table, cells, finality, errors."""
import numpy as np
import pandas as pd
import pytest

import sdceval
from sdceval import Dataset, Hierarchy, Schema, SdcevalError, get_method

from privacy_data import (QIS, SENS, class_distributions, covers, delta_of, emd,
                          ground_matrix, groups, js, synthetic)


@pytest.fixture(scope="module")
def ds():
    return synthetic(3000, seed=1)


def one_qi(values, sens=None, hierarchy=None):
    frame = pd.DataFrame({"x": values, "s": sens if sens is not None else ["a"] * len(values)})
    if hierarchy is None:  # numeric: one interval level that covers everything, then *
        hierarchy = Hierarchy.intervals(sorted(set(values)), [1000], name="x")
    hier = {"x": hierarchy}
    return Dataset(frame, Schema.from_roles(frame, qi=["x"], sensitive="s", hierarchies=hier))


# -- hand examples -------------------------------------------------------------------
def test_numeric_median_split_hand():
    d = one_qi(list(range(1, 9)))
    rel = sdceval.anonymize(d, "mondrian", k=2)
    # [1..8] -> ≤4 | >4 -> each again at its (lower) median
    assert rel.data["x"].tolist() == ["[1-2]"] * 2 + ["[3-4]"] * 2 + ["[5-6]"] * 2 + ["[7-8]"] * 2
    rel = sdceval.anonymize(d, "mondrian", k=3)
    assert rel.data["x"].tolist() == ["[1-4]"] * 4 + ["[5-8]"] * 4
    assert rel.classes.tolist() == [0] * 4 + [1] * 4


def test_numeric_median_equal_to_max_cuts_below():
    # lower median is 2 = the maximum: the cut moves to 1 | 2
    d = one_qi([2, 1, 2, 1, 2, 2])
    rel = sdceval.anonymize(d, "mondrian", k=2)
    assert rel.data["x"].tolist() == ["2", "1", "2", "1", "2", "2"]
    # strict: equal values never straddle a cut, so 5 × "1" + 1 × "2" cannot split at k=2
    d = one_qi([1, 1, 1, 1, 1, 2])
    with pytest.warns(UserWarning):
        rel = sdceval.anonymize(d, "mondrian", k=2)
    assert set(rel.data["x"]) == {"[0-999]"} and rel.info["n_classes"] == 1  # whole range


def test_categorical_children_and_lca_node():
    h = Hierarchy([["a", "X", "*"], ["b", "X", "*"], ["c", "Y", "*"], ["d", "Y", "*"]], name="x")
    d = one_qi(list("aaabbbcccddd"), hierarchy=h)
    assert sdceval.anonymize(d, "mondrian", k=3).data["x"].tolist() == list("aaabbbcccddd")
    assert sdceval.anonymize(d, "mondrian", k=4).data["x"].tolist() == ["X"] * 6 + ["Y"] * 6
    with pytest.warns(UserWarning, match="single equivalence class"):
        assert set(sdceval.anonymize(d, "mondrian", k=7).data["x"]) == {"*"}
    # the node is the smallest one covering the values present: X, not the root
    d = one_qi(list("aaabb"), hierarchy=h)
    with pytest.warns(UserWarning):
        rel = sdceval.anonymize(d, "mondrian", k=3)
    assert set(rel.data["x"]) == {"X"}
    assert rel.cells["x"][0].tolist() == [0] * 5 and rel.cells["x"][1].tolist() == [1] * 5


def test_widest_normalized_range_first():
    # root: both QIs span their full range (tie -> x, the first); in the part x <= 3,
    # x spans 3/7 of its range and y all of it, so y is cut next
    frame = pd.DataFrame({"x": range(8), "y": [0, 10] * 4, "s": ["a"] * 8})
    hx = Hierarchy.intervals(range(8), [4], name="x")
    d = Dataset(frame, Schema.from_roles(frame, qi=["x", "y"], sensitive="s",
                                         hierarchies={"x": hx}))
    rel = sdceval.anonymize(d, "mondrian", k=2)
    assert rel.data["x"].tolist() == ["[0-2]", "[1-3]", "[0-2]", "[1-3]",
                                      "[4-6]", "[5-7]", "[4-6]", "[5-7]"]
    assert rel.data["y"].tolist() == ["0", "10"] * 4


def test_l_model_blocks_homogeneous_split():
    # cutting x at 2 would leave two classes each with a single sensitive value
    d = one_qi([1, 1, 2, 2, 3, 3, 4, 4], sens=list("aabbaabb"),
               hierarchy=Hierarchy.intervals(range(1, 5), [2], name="x"))
    assert sdceval.anonymize(d, "mondrian", k=2).info["n_classes"] == 4
    rel = sdceval.anonymize(d, "mondrian", model="l", l=2)
    assert rel.data["x"].tolist() == ["[1-2]"] * 4 + ["[3-4]"] * 4
    assert rel.info["achieved"] == {"l": 2.0}


# -- every model verified independently ------------------------------------------------
MODELS = [
    dict(model="k", k=15),
    dict(model="l", l=3.5),
    dict(model="l", l=4, l_variant="distinct"),
    dict(model="l", l=3, l_variant="entropy"),
    dict(model="t", t=0.1, distance="js"),
    dict(model="t", t=0.2, distance="emd"),                      # hierarchical (auto)
    dict(model="t", t=0.2, distance="emd", ground="equal"),
    dict(model="t", t=0.1, distance="emd", ground="ordered"),
    dict(model="delta", delta=1.2),
    dict(model="l", l=3.0, k=25),
]


@pytest.mark.parametrize("params", MODELS, ids=lambda p: "-".join(map(str, p.values())))
def test_release_satisfies_model_independently(ds, params):
    rel = sdceval.anonymize(ds, "mondrian", **params)
    g = groups(rel)
    keys = g.ngroup()
    # the published labels delimit exactly the method's classes
    assert keys.nunique() == rel.info["n_classes"] > 1
    assert pd.crosstab(keys, rel.classes).astype(bool).sum(axis=1).eq(1).all()
    sizes = g.size()
    P, Q = class_distributions(ds, rel.data[SENS], keys)
    model = params["model"]
    if "k" in params:
        assert sizes.min() >= params["k"]
    if model == "l":
        variant = params.get("l_variant", "probabilistic")
        if variant == "probabilistic":
            assert (P.max(axis=1) <= 1 / params["l"] + 1e-12).all()
        elif variant == "distinct":
            assert ((P > 0).sum(axis=1) >= params["l"]).all()
        else:
            ent = -np.where(P > 0, P * np.log(np.where(P > 0, P, 1)), 0).sum(axis=1)
            assert (np.exp(ent) >= params["l"] - 1e-9).all()
    elif model == "t":
        if params["distance"] == "js":
            dist = [js(p, Q) for p in P]
        else:
            kind = {"auto": "hierarchical"}.get(params.get("ground", "auto"),
                                                params.get("ground"))
            D = ground_matrix(ds.hierarchy(SENS), kind)
            dist = [emd(p, Q, D) for p in P]
        assert max(dist) <= params["t"] + 1e-9
        assert rel.info["achieved"]["t"] == pytest.approx(max(dist), abs=1e-9)
    elif model == "delta":
        assert max(delta_of(p, Q) for p in P) <= params["delta"] + 1e-9


def test_generalized_cells_contain_original(ds):
    rel = sdceval.anonymize(ds, "mondrian", model="t", t=0.15, distance="js")
    for c in QIS:
        lo, hi = rel.cells[c]
        code = ds.codes(c)
        assert ((lo <= code) & (code <= hi)).all()
        h = ds.hierarchy(c)
        pairs = pd.DataFrame({"label": rel.data[c], "value": ds.frame[c]}).drop_duplicates()
        assert all(covers(h, lab, v) for lab, v in zip(pairs["label"], pairs["value"])), c


def _ok_k(part, sens, k=20):
    return len(part) >= k


def _ok_l(part, sens, l=3.5):  # noqa: E741
    return sens[part].value_counts(normalize=True).max() <= 1 / l + 1e-12


@pytest.mark.parametrize("params, ok", [(dict(k=20), _ok_k),
                                        (dict(model="l", l=3.5), _ok_l)], ids=["k", "l"])
def test_classes_are_final(ds, params, ok):
    """No class has an allowed strict cut left on any QI (cuts recomputed here)."""
    rel = sdceval.anonymize(ds, "mondrian", **params)
    frame = ds.frame
    sens = frame[SENS]
    for cls in np.unique(rel.classes):
        rows = np.flatnonzero(rel.classes == cls)
        for c in QIS:
            h = ds.hierarchy(c)
            codes = ds.codes(c)[rows]
            if codes.min() == codes.max():
                continue
            if h.numeric:
                v = np.sort(codes)
                med = v[(len(v) - 1) // 2]
                if med == v[-1]:
                    med = v[v < med].max()
                parts = [rows[codes <= med], rows[codes > med]]
            else:
                table = h.to_frame()
                anc = table.set_index("level0", drop=False).loc[frame[c].iloc[rows].astype(str)]
                # the lowest level with a single node, then its children one level down
                lev = next(j for j in range(h.height + 1) if anc[f"level{j}"].nunique() == 1)
                child = anc[f"level{lev - 1}"].to_numpy()
                parts = [rows[child == u] for u in np.unique(child)]
            assert not all(ok(p, sens) for p in parts), (cls, c, [len(p) for p in parts])


def test_release_contract(ds):
    before = ds.frame.copy()
    rel = sdceval.anonymize(ds, "mondrian", k=10, seed=5)
    assert rel.kind == "generalized" and rel.method == "mondrian"
    assert sorted(np.unique(rel.classes)) == list(range(rel.info["n_classes"]))
    assert rel.suppressed.dtype == bool and not rel.suppressed.any()
    assert np.array_equal(rel.sensitive_codes, ds.codes(SENS))
    assert set(rel.cells) == set(QIS)
    assert list(rel.data.columns) == ["age", "workclass", "education", "sex", "occupation"]
    assert "income" in rel.dropped  # the label: protected by no method
    pd.testing.assert_frame_equal(ds.frame, before)
    again = sdceval.anonymize(ds, "mondrian", k=10, seed=99)
    assert np.array_equal(again.classes, rel.classes)  # deterministic, seed unused
    assert rel.params["seed"] == 5 and rel.params["models"] == ("k=10",)


def test_default_k_and_min_size_only_when_given(ds):
    assert sdceval.anonymize(ds, "mondrian").info["achieved"] == {"k": 10.0}
    rel = sdceval.anonymize(ds, "mondrian", model="t", t=0.3, distance="js")
    assert rel.info["models"] == ["t=0.3 (js)"]
    assert np.bincount(rel.classes).min() < 30
    rel = sdceval.anonymize(ds, "mondrian", model="t", t=0.3, distance="js", k=30)
    assert np.bincount(rel.classes).min() >= 30
    assert rel.info["achieved"]["k"] >= 30


def test_tunable_parameter_follows_model():
    spec = get_method("mondrian")
    assert spec.tunable_for({}).name == "k"
    for model, name, direction in [("k", "k", "increasing"), ("l", "l", "increasing"),
                                   ("t", "t", "decreasing"), ("delta", "delta", "decreasing")]:
        p = spec.tunable_for({"model": model})
        assert (p.name, p.protection) == (name, direction)


# -- infeasible models, errors -------------------------------------------------------
def test_infeasible_l_raises(ds):
    top = ds.frame[SENS].value_counts().iloc[0]
    best = ds.n / top
    with pytest.raises(SdcevalError, match=rf"l=20 .*maximum achievable ℓ is {best:.4g}"):
        sdceval.anonymize(ds, "mondrian", model="l", l=20)
    with pytest.raises(SdcevalError, match="l=11 .*maximum achievable ℓ is 10 "):
        sdceval.anonymize(ds, "mondrian", model="l", l=11, l_variant="distinct")


def test_delta_without_allowed_split_is_single_class(ds):
    with pytest.warns(UserWarning, match="single equivalence class"):
        rel = sdceval.anonymize(ds, "mondrian", model="delta", delta=0.01)
    assert rel.info["n_classes"] == 1 and len(rel.info["warnings"]) == 1
    assert set(rel.data["age"]) == {"*"} or rel.data["age"].nunique() == 1
    assert rel.info["achieved"]["delta"] == 0.0
    with pytest.warns(UserWarning):
        assert sdceval.anonymize(ds, "mondrian", model="t", t=1e-6,
                                 distance="js").info["n_classes"] == 1


def test_parameter_errors(ds):
    with pytest.raises(SdcevalError, match="'t' applies to model='t' only"):
        sdceval.anonymize(ds, "mondrian", model="k", t=0.3)
    with pytest.raises(SdcevalError, match="'l_variant' applies to model='l'"):
        sdceval.anonymize(ds, "mondrian", model="t", l_variant="entropy")
    with pytest.raises(SdcevalError, match="ground='ordered' applies to distance='emd'"):
        sdceval.anonymize(ds, "mondrian", model="t", distance="js", ground="ordered")
    # issue 18: Mondrian takes k-anonymity's own declaration (k >= 1, as the lattice)
    with pytest.raises(SdcevalError, match="'k'.*>= 1"):
        sdceval.anonymize(ds, "mondrian", k=0)
    with pytest.raises(SdcevalError, match="'t'.*> 0"):
        sdceval.anonymize(ds, "mondrian", model="t", t=0)
    with pytest.raises(SdcevalError, match="one of k, l, t, delta"):
        sdceval.anonymize(ds, "mondrian", model="beta")


def test_data_errors():
    frame = pd.DataFrame({"x": [1, 2, 3, 4], "s": list("abab")})
    nos = Dataset(frame, Schema.from_roles(frame, qi=["x"]))
    assert sdceval.anonymize(nos, "mondrian", k=2).info["n_classes"] == 2
    with pytest.raises(SdcevalError, match="model='l' needs a sensitive attribute"):
        sdceval.anonymize(nos, "mondrian", model="l", l=2)
    noqi = Dataset(frame, Schema.from_roles(frame, sensitive="s"))
    with pytest.raises(SdcevalError, match="needs quasi-identifiers"):
        sdceval.anonymize(noqi, "mondrian", k=2)
    # a sensitive column cannot also be a QI (the schema refuses it before Mondrian)
    with pytest.raises(SdcevalError, match="cannot also be a quasi-identifier"):
        Schema.from_roles(frame, qi=["x", "s"], sensitive="s")
    missing = frame.assign(x=[1, None, 3, 4])
    with pytest.raises(SdcevalError, match="missing values"):
        Dataset(missing, Schema.from_roles(missing, qi=["x"], sensitive="s"))


# -- Adult (Li & Li's setting) ---------------------------------------------------------
@pytest.fixture(scope="module")
def adult():
    return sdceval.load_dataset("adult")


def test_adult_k10_and_js_t_independently(adult):
    qis = adult.schema.qis
    rel = sdceval.anonymize(adult, "mondrian", k=10)
    g = rel.data.groupby(qis, sort=False)
    assert g.ngroups == rel.info["n_classes"] and g.size().min() >= 10
    for c in qis:
        lo, hi = rel.cells[c]
        assert ((lo <= adult.codes(c)) & (adult.codes(c) <= hi)).all()
    rel = sdceval.anonymize(adult, "mondrian", model="t", t=0.15, distance="js")
    keys = rel.data.groupby(qis, sort=False).ngroup()
    tab = pd.crosstab(keys, rel.data["occupation"])
    P = tab.to_numpy(float) / tab.to_numpy().sum(axis=1, keepdims=True)
    Q = adult.frame["occupation"].value_counts(normalize=True).reindex(tab.columns).to_numpy()
    assert max(js(p, Q) for p in P) <= 0.15 + 1e-9


def test_adult_js_of_revealed_value_matches_li_li(adult):
    """SPEC §2: JS(Q, one-hot) is 0.488 for Craft-repair and 0.692 for Armed-Forces."""
    from sdceval.privacy import TCloseness, table_distribution
    h = adult.hierarchy("occupation")
    Q = table_distribution(adult.codes("occupation"), h.n_leaves)
    onehot = np.eye(h.n_leaves)
    v = TCloseness(0.1, "js").value(onehot, Q)
    leaves = list(h.leaves)
    assert v[leaves.index("Craft-repair")] == pytest.approx(0.488, abs=5e-4)
    assert v[leaves.index("Armed-Forces")] == pytest.approx(0.692, abs=5e-4)
