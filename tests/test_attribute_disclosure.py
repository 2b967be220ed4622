"""P_loss (Li & Li 2009 §4.1) and the two baseline releases."""
import math

import numpy as np
import pandas as pd
import pytest

import sdceval
from sdceval import Dataset, Hierarchy, Release, Schema, SdcevalError
from sdceval.measures.attribute_disclosure import identity_release, p_loss, suppressed_release
from sdceval.core.divergence import js_divergence


@pytest.fixture
def tiny():
    """8 records: Q(disease) = (1/2, 1/4, 1/4) over (flu, hiv, cancer)."""
    frame = pd.DataFrame({
        "age": [21, 22, 23, 24, 35, 36, 37, 38],
        "sex": ["M", "M", "F", "F", "M", "F", "M", "F"],
        "disease": ["flu", "flu", "flu", "flu", "hiv", "hiv", "cancer", "cancer"],
    })
    age = Hierarchy.intervals(range(20, 40), [10, 20], name="age")
    schema = Schema.from_roles(frame, qi=["age", "sex"], sensitive="disease",
                               hierarchies={"age": age})
    return Dataset(frame, schema, name="tiny")


def generalized(ds, classes, sensitive=None):
    """Release with the given classes; cells = each class's code range per QI."""
    classes = np.asarray(classes)
    cells = {}
    for q in ds.schema.qis:
        c = ds.codes(q)
        lo = pd.Series(c).groupby(classes).transform("min").to_numpy()
        hi = pd.Series(c).groupby(classes).transform("max").to_numpy()
        cells[q] = (lo, hi)
    return Release(data=ds.frame.copy(), method="hand", kind="generalized",
                   classes=classes, cells=cells, suppressed=np.zeros(ds.n, bool),
                   sensitive_codes=sensitive)


def test_worked_example_closed_form(tiny):
    # class 0 = the four flu records: P = (1, 0, 0) against Q = (1/2, 1/4, 1/4)
    # M = (3/4, 1/8, 1/8): KL(Q,M) = ½ ln(4/3), KL(P,M) = ln(4/3), JS = ¾ ln(4/3)
    # class 1 = (0, 1/2, 1/2): M = (1/4, 3/8, 3/8), KL(Q,M) = ½ ln 2 + ½ ln(2/3),
    # KL(P,M) = ln(4/3); JS = ½ (½ ln(4/3) + ln(4/3)) = ¾ ln(4/3) as well, by symmetry
    rel = generalized(tiny, [0, 0, 0, 0, 1, 1, 1, 1])
    m = sdceval.evaluate(tiny, rel, "p_loss")
    assert m.value == pytest.approx(0.75 * math.log(4 / 3), abs=1e-12)
    assert m.larger_is_worse
    assert m.per_record.shape == (8,)
    np.testing.assert_allclose(m.per_record, 0.75 * math.log(4 / 3))
    assert m.details["n_classes"] == 2


def test_max_and_mean_with_unequal_classes(tiny):
    # class 0: 2 flu (P=(1,0,0)); class 1: the 6 others (P=(1/3,1/3,1/3))
    rel = generalized(tiny, [0, 0, 1, 1, 1, 1, 1, 1])
    q = np.array([0.5, 0.25, 0.25])
    hi = js_divergence(q, np.array([1.0, 0, 0]))
    lo = js_divergence(q, np.full(3, 1 / 3))
    m = p_loss(tiny, rel)
    assert m.value == pytest.approx(hi)
    assert m.details["mean"] == pytest.approx((2 * hi + 6 * lo) / 8)
    assert m.per_record[0] == pytest.approx(hi) and m.per_record[-1] == pytest.approx(lo)


def test_suppressed_release_has_zero_loss(tiny):
    rel = suppressed_release(tiny)
    assert (rel.data["sex"] == "*").all()
    assert rel.cells["age"][1].max() == tiny.hierarchy("age").n_leaves - 1
    m = p_loss(tiny, rel)
    assert m.value == 0.0 and (m.per_record == 0).all()


def test_identity_release_is_max_over_qi_combinations(tiny):
    rel = identity_release(tiny)
    assert rel.kind == "generalized"
    for q in tiny.schema.qis:
        np.testing.assert_array_equal(rel.cells[q][0], tiny.codes(q))
        np.testing.assert_array_equal(rel.cells[q][1], tiny.codes(q))
    # every record is its own QI combination here: revealing a value of frequency 1/4
    q = np.array([0.5, 0.25, 0.25])
    m = p_loss(tiny, rel)
    assert m.value == pytest.approx(js_divergence(q, np.array([0.0, 1, 0])))
    assert m.details["n_classes"] == 8


def test_bucketized_release_uses_released_values(tiny):
    # two buckets; the released (permuted) values are what the adversary sees
    released = tiny.codes("disease")[[1, 0, 3, 2, 5, 4, 7, 6]]
    rel = Release(data=tiny.frame.copy(), method="hand", kind="bucketized",
                  classes=np.array([0, 0, 0, 0, 1, 1, 1, 1]),
                  cells={q: (tiny.codes(q), tiny.codes(q)) for q in tiny.schema.qis},
                  sensitive_codes=released)
    assert p_loss(tiny, rel).value == pytest.approx(0.75 * math.log(4 / 3))


def test_errors(tiny):
    plain = Release(data=tiny.frame.copy(), method="noise", kind="perturbative")
    with pytest.raises(SdcevalError, match="'p_loss' does not apply to a perturbative "
                                           "release.*accepts generalized, bucketized"):
        p_loss(tiny, plain)
    short = Release(data=tiny.frame.iloc[:4].copy(), method="x", kind="generalized",
                    classes=np.zeros(4, int))
    with pytest.raises(SdcevalError, match="row-aligned"):
        p_loss(tiny, short)
    bad = generalized(tiny, [0] * 8, sensitive=np.full(8, 7))
    with pytest.raises(SdcevalError, match="outside 0..2"):
        p_loss(tiny, bad)
    nosens = Dataset(tiny.frame, Schema.from_roles(tiny.frame, qi=["sex"]), name="ns")
    with pytest.raises(SdcevalError, match="sensitive"):
        p_loss(nosens, generalized(nosens, [0] * 8))
    # a bucketized release without its permuted values cannot even be built
    with pytest.raises(SdcevalError, match="sensitive_codes"):
        Release(data=tiny.frame.copy(), method="b", kind="bucketized",
                classes=np.zeros(8, int))


# -- Adult: Li & Li's published figures (SPEC §2) -----------------------------------------
LI_LI_Q = {"Tech-support": 0.0314, "Craft-repair": 0.1331, "Other-service": 0.1063,
           "Sales": 0.1196, "Exec-managerial": 0.1323, "Prof-specialty": 0.1329,
           "Handlers-cleaners": 0.0452, "Machine-op-inspct": 0.0657,
           "Adm-clerical": 0.1225, "Farming-fishing": 0.0327, "Transport-moving": 0.0512,
           "Priv-house-serv": 0.0052, "Protective-serv": 0.0216, "Armed-Forces": 0.0003}


@pytest.fixture(scope="module")
def adult():
    return sdceval.load_dataset("adult")


def test_adult_q_and_revealed_value_losses(adult):
    dom = list(adult.domain("occupation"))
    q = np.bincount(adult.codes("occupation"), minlength=len(dom)) / adult.n
    paper = np.array([LI_LI_Q[v] for v in dom])
    # 13 of 14 agree after rounding; Priv-house-serv is 232/45222 = 0.00513 (paper 0.0052)
    assert np.abs(q - paper).max() < 1e-4
    assert (np.round(q, 4) == paper).sum() == 13
    onehot = np.eye(len(dom))
    assert round(float(js_divergence(q, onehot[dom.index("Craft-repair")])), 3) == 0.488
    assert round(float(js_divergence(q, onehot[dom.index("Armed-Forces")])), 3) == 0.692


def test_adult_baselines(adult):
    orig = p_loss(adult, identity_release(adult))
    # an Armed-Forces record alone with its QI combination: the largest possible loss
    assert orig.value == pytest.approx(0.6917, abs=1e-4)
    assert orig.value == orig.per_record.max()
    assert p_loss(adult, suppressed_release(adult)).value == 0.0
