"""The pandas-first Python API (issue 19 item 8): DataFrames with roles as keywords in
`sdceval.anonymize`, `sdceval.evaluate` and `sdceval.compare`."""
from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

import sdceval
from sdceval.catalog import MEASURES, METHODS
from sdceval.core.frames import ROLE_KEYWORDS, as_dataset


@pytest.fixture(scope="module")
def patients():
    rng = np.random.default_rng(3)
    n = 400
    return pd.DataFrame({
        "patient_id": rng.choice(10 ** 6, n, replace=False).astype(str),
        "zip": rng.choice(["02116", "02118", "02139", "02140"], n),
        "age": rng.integers(18, 90, n),
        "sex": rng.choice(["F", "M"], n),
        "income": rng.lognormal(10, 0.5, n).round(-2),
        "visits": rng.poisson(3, n),
        "diagnosis": rng.choice(["flu", "asthma", "diabetes", "none"], n)})


def test_anonymize_and_evaluate_take_a_frame_and_its_roles(patients):
    before = patients.copy(deep=True)
    rel = sdceval.anonymize(patients, "mdav", k=5, numeric=["income", "visits"])
    assert list(rel.data.columns) == ["income", "visits"]
    ds = sdceval.load_dataset("census")  # a Dataset still works as before
    assert sdceval.anonymize(ds, "mdav", k=5).kind == "perturbative"
    a = sdceval.evaluate(patients, rel, "linkage_risk", numeric=["income", "visits"])
    # the same release read back as a plain table (an external release) scores the same
    b = sdceval.evaluate(patients, rel.data, "linkage_risk", numeric=["income", "visits"])
    assert a.value == b.value
    pd.testing.assert_frame_equal(patients, before)  # the caller's frame is untouched


def test_roles_give_generalization_its_qis(patients):
    rel = sdceval.anonymize(patients, "mondrian", models=["k=10"],
                            qi=["zip", "age", "sex"], sensitive="diagnosis")
    assert rel.kind == "generalized" and np.bincount(rel.classes).min() >= 10
    m = sdceval.evaluate(patients, rel, "k_anonymity", qi=["zip", "age", "sex"],
                         sensitive="diagnosis")
    assert m.value >= 10


def test_a_frame_without_roles_gets_the_command_lines_inference(patients):
    ds = as_dataset(patients)
    # patient_id identifies the records (by its name): never a numeric attribute
    assert set(ds.schema.numeric) == {"age", "income", "visits"}
    assert ds.schema["patient_id"].role == "identifier"
    assert any("roles inferred" in m for m in ds.messages)
    numbered = patients.assign(row=np.arange(1, len(patients) + 1))
    rel = sdceval.anonymize(numbered, "mdav", k=5)
    assert "row" not in rel.data.columns and "patient_id" not in rel.data.columns


def test_bad_inputs_are_named(patients):
    with pytest.raises(sdceval.SdcevalError, match="pandas DataFrame or an sdceval Dataset"):
        sdceval.anonymize(patients.to_dict(), "mdav", k=5)
    with pytest.raises(sdceval.SdcevalError, match="release must be a Release"):
        sdceval.evaluate(patients, [1, 2], "linkage_risk", numeric=["income"])
    with pytest.raises(sdceval.SdcevalError, match="column 'incme' .role numeric. is not in the data. Did you mean 'income'"):
        sdceval.anonymize(patients, "mdav", k=5, numeric=["incme"])


def test_compare_takes_a_frame(patients):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        comp = sdceval.compare(patients, ["mdav", "noise"], numeric=["income", "visits"],
                               curves=False)
    assert set(comp.table().method) == {"mdav", "noise"}
    from sdceval.compare import compare  # the function, as before
    assert callable(compare) and callable(sdceval.compare)


def test_no_parameter_is_named_like_a_role_keyword():
    for spec in [*METHODS.values(), *MEASURES.values()]:
        clash = [p.name for p in spec.params if p.name in ROLE_KEYWORDS]
        assert not clash, f"{spec.name}: {clash} would be read as roles"
