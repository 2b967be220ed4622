"""Information-loss measures: GLM, CM, discernibility, average class size (SPEC §4)."""
import dataclasses

import numpy as np
import pandas as pd
import pytest

import sdceval
from sdceval import Dataset, Hierarchy, Schema, SdcevalError
from sdceval.measures.attribute_disclosure import identity_release, suppressed_release
from sdceval.core.release import external_release

TREE = Hierarchy([["a1", "A", "X", "*"], ["a2", "A", "X", "*"], ["a3", "A", "X", "*"],
                  ["b1", "B", "X", "*"], ["b2", "B", "X", "*"],
                  ["c1", "C", "Y", "*"], ["c2", "C", "Y", "*"]], name="cat")
AGE = Hierarchy.intervals(range(17, 91), [5, 10, 20, 40, 80], name="age")


@pytest.fixture
def glm_data():
    frame = pd.DataFrame({"age": [17, 18, 19, 90], "cat": ["a1", "a2", "b1", "c1"],
                          "s": list("pqpq")})
    schema = Schema.from_roles(frame, qi=["age", "cat"], sensitive="s",
                               hierarchies={"age": AGE, "cat": TREE})
    return Dataset(frame, schema, name="glm")


def test_glm_hand_example(glm_data):
    rel = sdceval.anonymize(glm_data, "generalization", levels="1,1", max_suppression=0)
    assert not rel.suppressed.any()
    # age [15-19] covers the leaves 17..19 of 17..90: 2/73; [90-94] holds only 90: 0
    # cat A: (3-1)/(7-1); B and C: (2-1)/(7-1)
    age = np.array([2, 2, 2, 0]) / 73
    cat = np.array([2, 2, 1, 1]) / 6
    m = sdceval.evaluate(glm_data, rel, "glm")
    assert m.per_record == pytest.approx((age + cat) / 2)
    assert m.value == pytest.approx(((age + cat) / 2).mean())
    assert m.details["per_qi"] == pytest.approx({"age": age.mean(), "cat": cat.mean()})
    total = sdceval.evaluate(glm_data, rel, "glm", normalized=False)
    assert total.per_record == pytest.approx(age + cat)
    assert total.value == pytest.approx((age + cat).sum())


def test_glm_original_is_zero_and_suppressed_is_one(glm_data):
    assert sdceval.evaluate(glm_data, identity_release(glm_data), "glm").value == 0
    rel = sdceval.anonymize(glm_data, "generalization", levels="0,0", max_suppression=0)
    assert sdceval.evaluate(glm_data, rel, "glm").value == 0
    m = sdceval.evaluate(glm_data, suppressed_release(glm_data), "glm")
    assert (m.per_record == 1).all() and m.value == 1
    top = sdceval.anonymize(glm_data, "generalization", levels="6,3")
    assert (sdceval.evaluate(glm_data, top, "glm").per_record == 1).all()
    m = sdceval.evaluate(glm_data, suppressed_release(glm_data), "glm", normalized=False)
    assert (m.per_record == 2).all() and m.value == 8


def test_suppressed_records_lose_one_per_qi(glm_data):
    # age level 1 gives classes {17,18,19} x ..., cat level 2: X, X, X, Y -> sizes 3, 1
    rel = sdceval.anonymize(glm_data, "generalization", levels="1,2", max_suppression=1)
    assert rel.suppressed.tolist() == [False, False, False, True]
    m = sdceval.evaluate(glm_data, rel, "glm")
    assert m.per_record[3] == 1
    assert m.per_record[:3] == pytest.approx([(2 / 73 + 4 / 6) / 2] * 3)


@pytest.fixture
def labelled():
    frame = pd.DataFrame({"x": list("aaabbcdd"), "y": list("yynnnyyn"),
                          "s": list("pqpqpqpq")})
    schema = Schema.from_roles(frame, qi=["x"], sensitive="s", label="y")
    return Dataset(frame, schema, name="labelled")


def test_cm_hand_example(labelled):
    rel = sdceval.anonymize(labelled, "generalization", levels="0", max_suppression=0)
    m = sdceval.evaluate(labelled, rel, "cm")
    # a: y y n -> 1 minority; b: n n -> 0; c: alone -> 0; d: y n (tie) -> 1
    assert m.value == pytest.approx(2 / 8)
    assert m.per_record.sum() == 2 and m.per_record[2] == 1
    assert m.per_record[6:].sum() == 1
    # suppressing class c (|E_1| = 1 <= η = 1 < |E_1| + |E_2| = 5) adds its record
    rel = sdceval.anonymize(labelled, "generalization", levels="0", max_suppression=1)
    assert rel.suppressed.tolist() == [False] * 5 + [True] + [False] * 2
    m = sdceval.evaluate(labelled, rel, "cm")
    assert m.value == pytest.approx(3 / 8) and m.per_record[5] == 1
    assert m.details == {"minority": 2, "suppressed": 1}
    # one class of everything: majority y (4 of 8) ties n; 4 penalized either way
    top = sdceval.anonymize(labelled, "generalization", levels="1")
    assert sdceval.evaluate(labelled, top, "cm").value == pytest.approx(4 / 8)


def test_discernibility_of_known_partition(labelled):
    rel = sdceval.anonymize(labelled, "generalization", levels="0", max_suppression=0)
    m = sdceval.evaluate(labelled, rel, "discernibility")
    assert m.value == 3 ** 2 + 2 ** 2 + 1 + 2 ** 2  # 18
    assert m.per_record.tolist() == [3, 3, 3, 2, 2, 1, 2, 2]
    rel = sdceval.anonymize(labelled, "generalization", levels="0", max_suppression=1)
    m = sdceval.evaluate(labelled, rel, "discernibility")
    assert m.value == 9 + 4 + 4 + 8  # the suppressed record counts N = 8
    assert m.details["normalized"] == pytest.approx(25 / 64)


def test_avg_class_size(labelled):
    rel = sdceval.anonymize(labelled, "generalization", levels="0", max_suppression=0)
    assert sdceval.evaluate(labelled, rel, "avg_class_size").value == 8 / 4
    assert sdceval.evaluate(labelled, rel, "avg_class_size", k=2).value == 1.0
    rel = sdceval.anonymize(labelled, "generalization", levels="0", max_suppression=1)
    m = sdceval.evaluate(labelled, rel, "avg_class_size")
    assert m.value == 7 / 3 and m.details == {"n_classes": 3, "kept": 7}
    m = sdceval.evaluate(labelled, suppressed_release(labelled), "avg_class_size")
    assert m.value == 8  # everything suppressed: one '*' class of N records


def test_errors(labelled, glm_data):
    ext = external_release(labelled, labelled.frame)
    for measure in ("glm", "cm", "discernibility", "avg_class_size"):
        with pytest.raises(SdcevalError, match=f"'{measure}' does not apply to an? external "
                                               "release.*accepts generalized, bucketized"):
            sdceval.evaluate(labelled, ext, measure)
    rel = sdceval.anonymize(glm_data, "generalization", levels="0,0")
    with pytest.raises(SdcevalError, match="cm' needs a class label.*--label"):
        sdceval.evaluate(glm_data, rel, "cm")
    bad = dataclasses.replace(rel, cells={"age": rel.cells["age"]})
    with pytest.raises(SdcevalError, match="no cells for QI.*'cat'"):
        sdceval.evaluate(glm_data, bad, "glm")
    bad = dataclasses.replace(rel, cells={"age": rel.cells["age"],
                                          "cat": (np.zeros(4, int), np.full(4, 9))})
    with pytest.raises(SdcevalError, match="cells of QI 'cat' are not leaf-code ranges"):
        sdceval.evaluate(glm_data, bad, "glm")
    nocells = dataclasses.replace(rel, cells=None)
    with pytest.raises(SdcevalError, match="'glm' needs the generalized cell"):
        sdceval.evaluate(glm_data, nocells, "glm")


def test_measures_registered_as_information_loss():
    for name in ("glm", "cm", "discernibility", "avg_class_size"):
        spec = sdceval.get_measure(name)
        assert spec.category == "information_loss" and spec.larger_is_worse


def test_glm_on_adult_matches_the_k_search():
    ds = sdceval.load_dataset("adult")
    rel = sdceval.anonymize(ds, "generalization", k=10)
    m = sdceval.evaluate(ds, rel, "glm")
    assert 0 < m.value < 1 and m.per_record.shape == (ds.n,)
    # the search optimizes the un-normalized total; the measure is its mean per record
    # and QI
    d = len(ds.schema.qis)
    assert m.value == pytest.approx(rel.info["search"]["value"] / (ds.n * d), rel=1e-12)
    assert rel.info["search"]["metric"] == "glm"
