"""The contract every registered method and measure keeps (issue 6 §4).

Parametrized over the live registries: registering a method or a measure adds it here.

Methods: the input is never mutated; the release is valid for the data set and
row-aligned; it publishes only what the method protects plus the passthrough columns and
says which columns it dropped; the same seed gives the same release and, for a random
method, another seed another release; a bad parameter (out of bounds, wrong type,
unknown name) is an `SdcevalError` naming the parameter.

Measures: ``per_record`` (when given) has one finite value per record (``+inf`` only
where the value itself is infinite, e.g. δ-disclosure of a class lacking a value); the
value moves in the declared direction from the original table to a heavily protected
release (less risk, more loss); a bad parameter is an `SdcevalError` naming it; a
release of a kind the measure does not accept is refused naming the kinds.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import sdceval
from sdceval import Dataset, Hierarchy, Release, Schema, SdcevalError
from sdceval.catalog import MEASURES, METHODS
from sdceval.core.release import KINDS, publishable_columns
from sdceval.measures.attribute_disclosure import identity_release, suppressed_release

N = 240
REGION = Hierarchy([["north", "N", "*"], ["east", "N", "*"], ["south", "S", "*"],
                    ["west", "S", "*"]], name="region")
EDUCATION = Hierarchy([[f"e{i}", f"g{i // 3}", "*"] for i in range(6)], name="education")


def contract_data(n: int = N, seed: int = 0) -> Dataset:
    """One data set with every role, so that every method and measure applies to it:
    numeric attributes (perturbative methods), four QIs with hierarchies, a sensitive
    attribute that depends on a QI (so classes differ), a label, a passthrough column
    and an identifier the schema ignores."""
    rng = np.random.default_rng(seed)
    x = rng.lognormal(3, 0.5, n)
    edu = rng.integers(0, 6, n)
    frame = pd.DataFrame({
        "id": np.arange(n),
        "age": rng.integers(18, 80, n),
        "x": x, "y": x * rng.uniform(0.5, 1.5, n), "z": rng.normal(0, 1, n),
        "region": rng.choice(REGION.leaves, n),
        "education": [f"e{i}" for i in edu],
        "sex": rng.choice(["F", "M"], n),
        "disease": [f"d{(e + r) % 6}" for e, r in zip(edu, rng.integers(0, 3, n))],
        "income": rng.choice(["<=50K", ">50K"], n, p=[0.7, 0.3]),
        "batch": rng.choice(["a", "b"], n),
    })
    schema = Schema.from_roles(
        frame, qi=["age", "region", "education", "sex"], sensitive="disease",
        numeric=["x", "y", "z"], label="income", passthrough=["batch"],
        hierarchies={"region": REGION, "education": EDUCATION})
    return Dataset(frame, schema, name="contract")


@pytest.fixture(scope="module")
def ds():
    return contract_data()


METHOD_NAMES = sorted(METHODS)
MEASURE_NAMES = sorted(MEASURES)


def _snapshot(ds):
    return ds.frame.copy(deep=True), {c: np.array(ds.codes(c)) for c in
                                      ds.schema.qis + [ds.schema.sensitive]}


@pytest.fixture(scope="module")
def releases(ds):
    """Each method at its defaults, seeds 0, 0 and 1 (computed once for the module)."""
    out = {}
    for name in METHOD_NAMES:
        before = _snapshot(ds)
        a = sdceval.anonymize(ds, name, seed=0)
        b = sdceval.anonymize(ds, name, seed=0)
        c = sdceval.anonymize(ds, name, seed=1)
        out[name] = (a, b, c, before, _snapshot(ds))
    return out


# -- methods ---------------------------------------------------------------------------
@pytest.mark.parametrize("method", METHOD_NAMES)
def test_input_never_mutated(releases, method):
    _, _, _, before, after = releases[method]
    pd.testing.assert_frame_equal(before[0], after[0])
    for c in before[1]:
        assert np.array_equal(before[1][c], after[1][c]), c


@pytest.mark.parametrize("method", METHOD_NAMES)
def test_release_valid_and_row_aligned(ds, releases, method):
    rel = releases[method][0]
    spec = METHODS[method]
    assert isinstance(rel, Release) and rel.kind == spec.kind and rel.kind in KINDS
    assert rel.method == method and rel.n == ds.n
    assert rel.check(ds) is rel
    published = [c for c in rel.data.columns if c in ds.frame.columns]
    # every data-set column is either published or reported dropped, never both
    assert sorted(published + list(rel.dropped), key=list(ds.frame.columns).index) == \
        list(ds.frame.columns)
    assert not set(published) & set(rel.dropped)
    assert published == [c for c in ds.frame.columns if c in published]   # data-set order
    for a in (rel.classes, rel.suppressed, rel.sensitive_codes):
        assert a is None or a.shape == (ds.n,)
    for q, (lo, hi) in (rel.cells or {}).items():
        codes = ds.codes(q)
        assert ((lo <= codes) & (codes <= hi)).all(), q      # the cell holds the value


@pytest.mark.parametrize("method", METHOD_NAMES)
def test_publishes_only_protected_and_passthrough(ds, releases, method):
    rel = releases[method][0]
    s = ds.schema
    protected = {"perturbative": set(s.numeric),
                 "generalized": set(s.qis) | {s.sensitive, s.label},
                 "bucketized": set(s.qis) | {s.sensitive, s.label}}[rel.kind]
    published = {c for c in rel.data.columns if c in ds.frame.columns}
    assert published <= protected | set(s.passthrough)
    assert set(s.passthrough) <= published
    assert "id" in rel.dropped                       # an ignored column is never published
    assert published == set(publishable_columns(ds, rel.kind))
    for c in s.passthrough:
        assert rel.data[c].tolist() == ds.frame[c].tolist()


@pytest.mark.parametrize("method", METHOD_NAMES)
def test_same_seed_same_release(releases, method):
    a, b, c, _, _ = releases[method]
    pd.testing.assert_frame_equal(a.data, b.data)
    for f in ("classes", "suppressed", "sensitive_codes"):
        x, y = getattr(a, f), getattr(b, f)
        assert (x is None and y is None) or np.array_equal(x, y), f
    if METHODS[method].random:
        assert not a.data.equals(c.data), "a random method ignored its seed"
    else:
        pd.testing.assert_frame_equal(a.data, c.data)


@pytest.mark.parametrize("method", METHOD_NAMES)
def test_release_reads_back(ds, releases, method, tmp_path):
    """What ``sdceval anonymize --out`` writes, ``sdceval evaluate --release`` reads:
    the same kind (a perturbative release reads back as an external table of numbers)
    and the same value of a measure that accepts it."""
    from sdceval.core.release_io import read_release
    rel = releases[method][0]
    path = tmp_path / "release.csv"
    rel.data.to_csv(path, index=False)
    back = read_release(ds, path)
    assert back.kind == ("external" if rel.kind == "perturbative" else rel.kind)
    assert back.dropped == rel.dropped
    measure = "il1s" if rel.kind == "perturbative" else "k_anonymity"
    assert sdceval.evaluate(ds, back, measure).value == \
        pytest.approx(sdceval.evaluate(ds, rel, measure).value, rel=1e-9)


def _bad_values(p, n):
    """Out-of-bounds values for a parameter (none if it is unbounded)."""
    if p.choices:
        return ["no-such-choice"]
    out = []
    lo, hi = p.bounds(n)
    if lo is not None:
        out.append(lo - 1 if p.low_inclusive else lo)
    if hi is not None:
        out.append(hi + 1 if p.high_inclusive else hi)
    return out


def _bad_cases(specs, n):
    for spec in specs:
        yield spec.name, "no_such_parameter", 1, "no_such_parameter"
        for p in spec.params:
            for v in _bad_values(p, n):
                yield spec.name, p.name, v, repr(p.name)
            if p.type in (int, float):
                yield spec.name, p.name, "abc", repr(p.name)
            elif p.type is bool:
                yield spec.name, p.name, "maybe", repr(p.name)


@pytest.mark.parametrize("method,param,value,named",
                         list(_bad_cases(METHODS.all(), N)))
def test_method_bad_parameter(ds, method, param, value, named):
    with pytest.raises(SdcevalError, match=named):
        sdceval.anonymize(ds, method, **{param: value})


# -- measures ----------------------------------------------------------------------------
@pytest.fixture(scope="module")
def baselines(ds):
    """(original, heavily protected) releases per family of kinds: the unprotected table
    and every QI suppressed (Li & Li §4.3) for the generalization measures; the original
    values and strong correlated noise for the numeric ones."""
    original = Release.perturbative(ds, ds.frame[ds.schema.numeric], method="original")
    return {"generalized": (identity_release(ds), suppressed_release(ds)),
            "perturbative": (original, sdceval.anonymize(ds, "noise", gamma=4.0, seed=0))}


def _family(spec) -> str:
    return "generalized" if "generalized" in spec.kinds else "perturbative"


@pytest.fixture(scope="module")
def typical(ds):
    """A release each measure accepts: Mondrian for the generalization measures, MDAV
    (groups as classes) for the numeric ones."""
    return {"generalized": sdceval.anonymize(ds, "mondrian", k=5),
            "perturbative": sdceval.anonymize(ds, "mdav", k=5)}


@pytest.mark.parametrize("measure", MEASURE_NAMES)
def test_per_record_has_one_finite_value_per_record(ds, typical, measure):
    spec = MEASURES[measure]
    m = sdceval.evaluate(ds, typical[_family(spec)], measure)
    assert m.measure == measure and m.direction == spec.direction
    assert isinstance(m.value, float) and not np.isnan(m.value)
    if m.per_record is not None:
        v = np.asarray(m.per_record, dtype=float)
        assert v.shape == (ds.n,)
        assert np.isfinite(v).all() or (np.isinf(m.value) and not np.isnan(v).any())


@pytest.mark.parametrize("measure", MEASURE_NAMES)
def test_direction_is_consistent(ds, baselines, measure):
    spec = MEASURES[measure]
    original, protected = baselines[_family(spec)]
    a = sdceval.evaluate(ds, original, measure).value
    b = sdceval.evaluate(ds, protected, measure).value
    # protection lowers risk (a better value) and raises loss (a worse one)
    protection_helps = spec.category in ("risk", "privacy")
    better = b < a if spec.direction == "lower_is_better" else b > a
    assert better == protection_helps, (measure, a, b)


@pytest.mark.parametrize("measure", MEASURE_NAMES)
def test_measure_refuses_other_kinds(ds, typical, measure):
    spec = MEASURES[measure]
    candidates = [typical["generalized"], typical["perturbative"],
                  Release.external(ds, ds.frame[ds.schema.numeric], method="masked.csv")]
    refused = [r for r in candidates if r.kind not in spec.kinds]
    if not refused:
        pytest.skip(f"{measure} accepts every kind of release")
    for rel in refused:
        with pytest.raises(SdcevalError, match=f"'{measure}'.*{rel.kind}.*accepts "
                                               f"{', '.join(spec.kinds)}"):
            sdceval.evaluate(ds, rel, measure)


@pytest.mark.parametrize("measure,param,value,named",
                         list(_bad_cases(MEASURES.all(), N)))
def test_measure_bad_parameter(ds, typical, measure, param, value, named):
    rel = typical[_family(MEASURES[measure])]
    with pytest.raises(SdcevalError, match=named):
        sdceval.evaluate(ds, rel, measure, **{param: value})
