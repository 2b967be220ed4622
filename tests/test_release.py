"""Release: a validated value object, and what each kind of release publishes."""
import dataclasses

import numpy as np
import pandas as pd
import pytest

import sdceval
from sdceval import Dataset, Hierarchy, Release, Schema, SdcevalError
from sdceval.core.release import publishable_columns

N = 120
REGION = Hierarchy([["north", "N", "*"], ["east", "N", "*"], ["south", "S", "*"],
                    ["west", "S", "*"]], name="region")


def mixed(n: int = N, seed: int = 0) -> Dataset:
    """Every role at once: an identifier (ignored), numeric, QIs, a sensitive value, a
    label and a passthrough column."""
    rng = np.random.default_rng(seed)
    x = rng.normal(50, 10, n)
    frame = pd.DataFrame({
        "id": np.arange(n),
        "age": rng.integers(20, 70, n),
        "x": x, "y": 2 * x + rng.normal(0, 5, n),
        "region": rng.choice(REGION.leaves, n),
        "note": [f"r{i % 7}" for i in range(n)],
        "disease": rng.choice(list("abcdef"), n),
        "sex": rng.choice(["F", "M"], n),
        "income": rng.choice(["<=50K", ">50K"], n),
    })
    schema = Schema.from_roles(frame, qi=["age", "region", "sex"], sensitive="disease",
                               numeric=["x", "y"], label="income", passthrough=["note"],
                               hierarchies={"region": REGION})
    return Dataset(frame, schema, name="mixed")


@pytest.fixture(scope="module")
def ds():
    return mixed()


# -- what a release publishes -----------------------------------------------------
@pytest.mark.parametrize("method", ["mdav", "noise", "rank_swap", "multiplicative_noise"])
def test_perturbative_release_publishes_only_masked_and_passthrough(ds, method):
    rel = sdceval.anonymize(ds, method, seed=1)
    assert list(rel.data.columns) == ["x", "y", "note"]       # data set order
    assert rel.dropped == ("id", "age", "region", "disease", "sex", "income")
    assert rel.data["note"].equals(ds.frame["note"])


@pytest.mark.parametrize("method,params", [("mondrian", {"k": 10}),
                                           ("generalization", {"levels": "1,1,0"})])
def test_generalized_release_publishes_qis_sensitive_passthrough(ds, method, params):
    rel = sdceval.anonymize(ds, method, **params)
    assert list(rel.data.columns) == ["age", "region", "note", "disease", "sex"]
    # the label is protected by no method: dropped unless passed through
    assert rel.dropped == ("id", "x", "y", "income")
    assert rel.data["disease"].equals(ds.frame["disease"])


@pytest.mark.parametrize("method", ["bucketization", "anatomy"])
def test_bucketized_release_adds_bucket_column(ds, method):
    rel = sdceval.anonymize(ds, method, seed=2)
    assert list(rel.data.columns) == ["age", "region", "note", "disease", "sex", "bucket"]
    assert rel.dropped == ("id", "x", "y", "income")


def test_publishable_columns_follow_the_roles(ds):
    assert publishable_columns(ds, "perturbative") == ["x", "y", "note"]
    assert publishable_columns(ds, "generalized") == ["age", "region", "note", "disease",
                                                      "sex"]


def test_constructor_refuses_an_unprotected_column(ds):
    frame = ds.frame[["x", "y", "id"]]
    with pytest.raises(SdcevalError, match="'id'.*role 'ignore'"):
        Release.perturbative(ds, frame, method="mine")
    with pytest.raises(SdcevalError, match="must publish.*'y'"):
        Release.perturbative(ds, ds.frame[["x"]], method="mine")


def test_perturbative_constructor_refuses_non_finite_values(ds):
    frame = ds.frame[["x", "y"]].copy()
    frame.loc[3, "y"] = np.inf
    with pytest.raises(SdcevalError, match="'y'.*non-finite"):
        Release.perturbative(ds, frame, method="mine")


def test_apply_refuses_a_method_that_leaks_a_column(ds, monkeypatch):
    from sdceval.catalog import METHODS
    from sdceval.core.registry import MethodSpec

    def leaky(dataset, *, seed):
        return Release(data=dataset.frame.copy(), method="leaky", kind="perturbative")

    monkeypatch.setitem(METHODS, "leaky", MethodSpec("leaky", leaky, (), "leaks"))
    with pytest.raises(SdcevalError, match="leaky.*'id'"):
        sdceval.anonymize(ds, "leaky")


# -- validation at construction ------------------------------------------------------
def frame8():
    return pd.DataFrame({"q": range(8)})


def test_kind_is_checked():
    with pytest.raises(SdcevalError, match="kind"):
        Release(frame8(), method="x", kind="masked")


@pytest.mark.parametrize("classes,match", [
    (np.zeros(7, int), "classes.*8"),
    (np.zeros(8, float), "classes.*integer"),
    (np.zeros((8, 1), int), "classes.*8"),
])
def test_classes_are_checked(classes, match):
    with pytest.raises(SdcevalError, match=match):
        Release(frame8(), method="x", kind="generalized", classes=classes)


def test_generalized_needs_classes_and_bucketized_needs_sensitive_codes():
    with pytest.raises(SdcevalError, match="generalized.*classes"):
        Release(frame8(), method="x", kind="generalized")
    with pytest.raises(SdcevalError, match="bucketized.*sensitive_codes"):
        Release(frame8(), method="x", kind="bucketized", classes=np.zeros(8, int))


def test_structures_a_kind_cannot_have():
    with pytest.raises(SdcevalError, match="perturbative.*cells"):
        Release(frame8(), method="x", kind="perturbative",
                cells={"q": (np.zeros(8, int), np.zeros(8, int))})
    with pytest.raises(SdcevalError, match="external.*classes"):
        Release(frame8(), method="x", kind="external", classes=np.zeros(8, int))


@pytest.mark.parametrize("cells,match", [
    ({"q": (np.zeros(8, int), np.zeros(7, int))}, "cells.*'q'.*8"),
    ({"q": (np.ones(8, int), np.zeros(8, int))}, "'q'.*lo <= hi"),
    ({"q": (np.full(8, -1), np.zeros(8, int))}, "'q'.*0 <= lo"),
    ({"q": (np.zeros(8), np.zeros(8))}, "'q'.*integer"),
    ({"q": np.zeros(8, int)}, "'q'.*pair"),
])
def test_cells_are_checked(cells, match):
    with pytest.raises(SdcevalError, match=match):
        Release(frame8(), method="x", kind="generalized", classes=np.zeros(8, int),
                cells=cells)


def test_suppressed_and_sensitive_codes_are_checked():
    with pytest.raises(SdcevalError, match="suppressed.*bool"):
        Release(frame8(), method="x", kind="generalized", classes=np.zeros(8, int),
                suppressed=np.zeros(8, int))
    with pytest.raises(SdcevalError, match="sensitive_codes.*8"):
        Release(frame8(), method="x", kind="bucketized", classes=np.zeros(8, int),
                sensitive_codes=np.zeros(5, int))
    with pytest.raises(SdcevalError, match="sensitive_codes.*>= 0"):
        Release(frame8(), method="x", kind="bucketized", classes=np.zeros(8, int),
                sensitive_codes=np.full(8, -2))


def test_generalized_defaults_to_nothing_suppressed():
    rel = Release(frame8(), method="x", kind="generalized", classes=np.zeros(8, int))
    assert rel.suppressed.dtype == bool and not rel.suppressed.any()


def test_release_is_immutable_and_owns_its_arrays():
    classes = np.zeros(8, int)
    lo = np.zeros(8, int)
    rel = Release(frame8(), method="x", kind="generalized", classes=classes,
                  cells={"q": (lo, lo)})
    classes[0] = 5
    lo[0] = 3
    assert rel.classes[0] == 0 and rel.cells["q"][0][0] == 0   # copies, not views
    with pytest.raises(dataclasses.FrozenInstanceError):
        rel.classes = np.ones(8, int)
    with pytest.raises(ValueError):
        rel.classes[0] = 1                                       # read-only
    with pytest.raises(TypeError):
        rel.cells["q"] = (lo, lo)
    with pytest.raises(TypeError):
        del rel.cells["q"]


def test_release_pickles():
    import pickle
    rel = Release(frame8(), method="x", kind="generalized", classes=np.zeros(8, int),
                  cells={"q": (np.zeros(8, int), np.zeros(8, int))})
    back = pickle.loads(pickle.dumps(rel))
    assert back.cells["q"][0].tolist() == [0] * 8 and back.kind == "generalized"


# -- validation against the data set ------------------------------------------------
def test_check_against_the_data_set(ds):
    rel = sdceval.anonymize(ds, "mondrian", k=10)
    short = Release(rel.data.iloc[:5], method="m", kind="generalized",
                    classes=np.zeros(5, int))
    with pytest.raises(SdcevalError, match="row-aligned"):
        short.check(ds)
    cells = dict(rel.cells)
    del cells["sex"]
    with pytest.raises(SdcevalError, match="no cells for QI.*'sex'"):
        dataclasses.replace(rel, cells=cells).check(ds)
    cells = dict(rel.cells, sex=(np.zeros(N, int), np.full(N, 5)))
    with pytest.raises(SdcevalError, match="cells of QI 'sex' are not leaf-code ranges"):
        dataclasses.replace(rel, cells=cells).check(ds)
    bad = dataclasses.replace(rel, sensitive_codes=np.full(N, 6))
    with pytest.raises(SdcevalError, match="sensitive codes outside 0..5"):
        bad.check(ds)


def test_one_sensitive_policy(ds):
    """The released sensitive codes are the release's when it carries them, else the
    data set's; a bucketized release always carries them (checked at construction)."""
    gen = sdceval.anonymize(ds, "mondrian", k=10)
    plain = dataclasses.replace(gen, sensitive_codes=None)
    assert np.array_equal(plain.sensitive(ds), ds.codes("disease"))
    for m in ("p_loss", "l_diversity", "t_closeness"):
        assert sdceval.evaluate(ds, plain, m).value == sdceval.evaluate(ds, gen, m).value
    buck = sdceval.anonymize(ds, "bucketization", seed=0)
    assert np.array_equal(buck.sensitive(ds), buck.sensitive_codes)


def test_external_release(ds):
    rel = Release.external(ds, ds.frame[["x", "y"]], method="masked.csv")
    assert rel.kind == "external" and rel.dropped == ("id", "age", "region", "note",
                                                      "disease", "sex", "income")
    with pytest.raises(SdcevalError, match="row-aligned"):
        Release.external(ds, ds.frame.iloc[:3], method="masked.csv")
