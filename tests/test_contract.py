"""The contract every registered method, measure and job kind keeps (issue 6 §4).

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
release of a kind the measure does not accept is refused naming the kinds; the value
is the declared aggregate of the per-record values (issue 27 item 19).

Issue 27 items 16-19, what is registered is *run*: every method's knob protects in its
declared direction (item 17), every job kind runs its declared example on 200 records
(item 16); the checks are the functions of tests/contracts.py, which
tests/test_contract_mistakes.py shows failing on deliberately broken entries.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
# the contract data set and the checks of items 16-19 (tests/contracts.py)
from contracts import (N, check_job_kind_runs, check_measure_aggregate,
                       check_method_direction, contract_data, contract_params)

import sdceval
import sdceval.experiments  # noqa: F401  (registers the job kinds)
from sdceval import Release, SdcevalError
from sdceval.catalog import MEASURES, METHODS
from sdceval.core.release import KINDS, publishable_columns
from sdceval.experiments.jobs import JOB_KINDS
from sdceval.measures.attribute_disclosure import identity_release, suppressed_release

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
    """Each method at its defaults with its experiment parameters (reproducible from
    the seed: `MethodSpec.experiment_params`) and `contracts.CONTRACT_PARAMS`, seeds 0, 0 and 1
    (computed once for the module)."""
    out = {}
    for name in METHOD_NAMES:
        before = _snapshot(ds)
        params = contract_params(METHODS[name])
        a = sdceval.anonymize(ds, name, seed=0, **params)
        b = sdceval.anonymize(ds, name, seed=0, **params)
        c = sdceval.anonymize(ds, name, seed=1, **params)
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
    # a synthetic release has rows of its own (a DP one: the noisy total)
    assert rel.method == method and (rel.n == ds.n or not rel.aligned)
    assert rel.check(ds) is rel
    published = [c for c in rel.data.columns if c in ds.frame.columns]
    # every data-set column is either published or reported dropped, never both
    assert sorted(published + list(rel.dropped), key=list(ds.frame.columns).index) == \
        list(ds.frame.columns)
    assert not set(published) & set(rel.dropped)
    assert published == [c for c in ds.frame.columns if c in published]   # data-set order
    for a in (rel.classes, rel.suppressed, rel.sensitive_codes):
        assert a is None or a.shape == (ds.n,)
    # a key PRAM redrew (`Release.info["perturbed_keys"]`, or a strategy step's) is an
    # exact cell of the published category, which need not be the record's own (issue 29)
    from sdceval.core.release_public import public_parameters
    perturbed = set((public_parameters(rel) or {}).get("perturbed_keys", ()))
    for q, (lo, hi) in (rel.cells or {}).items():
        codes = ds.codes(q)
        if q in perturbed:
            assert (lo == hi).all(), q
            continue
        assert ((lo <= codes) & (codes <= hi)).all(), q      # the cell holds the value


@pytest.mark.parametrize("method", METHOD_NAMES)
def test_publishes_only_protected_and_passthrough(ds, releases, method):
    rel = releases[method][0]
    s = ds.schema
    protected = {"perturbative": set(s.numeric),
                 "generalized": set(s.qis) | {s.sensitive, s.label},
                 "bucketized": set(s.qis) | {s.sensitive, s.label},
                 # a whole-file strategy publishes every column it protects, all alike
                 "composite": set(s.qis) | set(s.numeric) | {s.sensitive},
                 # new records: every column the schema uses, each synthesized
                 "synthetic": set(s.qis) | set(s.numeric) | {s.sensitive, s.label}}[rel.kind]
    published = {c for c in rel.data.columns if c in ds.frame.columns}
    assert published <= protected | set(s.passthrough)
    assert set(s.passthrough) <= published
    assert "id" in rel.dropped                       # an ignored column is never published
    assert published == set(publishable_columns(ds, rel.kind))
    for c in s.passthrough if rel.aligned else ():   # a synthetic release redraws them
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
    from sdceval.core.release_order import write_release
    from sdceval.core.release_public import public_parameters, public_path_for
    rel = releases[method][0]
    path = tmp_path / "release.csv"
    rel.data.to_csv(path, index=False)
    if public_parameters(rel) is not None:
        # PRAM-ed keys need not fit their records: without the public file of the
        # method's parameters, which names them, the file is refused naming that file;
        # with it (as anonymize writes it) the release reads back equal (issue 29).
        # A synthetic release likewise: its public file marks it synthetic (issue 32)
        with pytest.raises(SdcevalError, match="release.csv.method.json"):
            read_release(ds, path)
        write_release(rel, path, dataset=ds, keep_order=True)
        assert public_path_for(path).is_file()
    back = read_release(ds, path)
    # a perturbative release reads back as a table of numbers; so does a whole-file
    # release that published every column exactly as it is (no cell to read as a cell;
    # keys PRAM redrew are exact cells of other values: cells)
    exact = rel.kind == "composite" and not rel.buckets and all(
        ((lo == hi) & (lo == ds.codes(q))).all() for q, (lo, hi) in rel.cells.items())
    assert back.kind == ("external" if rel.kind == "perturbative" or exact else rel.kind)
    assert back.dropped == rel.dropped
    measure = {"perturbative": "il1s", "composite": "reidentification",
               "synthetic": "query_error"}.get(rel.kind, "k_anonymity")
    assert sdceval.evaluate(ds, back, measure).value == \
        pytest.approx(sdceval.evaluate(ds, rel, measure).value, rel=1e-9)
    for q, (lo, hi) in (rel.cells or {}).items():
        if q in rel.info.get("perturbed_keys", ()):
            assert back.info["perturbed_keys"] == rel.info["perturbed_keys"]
            assert (back.cells[q][0] == lo).all() and (back.cells[q][1] == hi).all(), q


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


@pytest.mark.parametrize("measure", MEASURE_NAMES)
def test_value_is_the_declared_aggregate_of_per_record(ds, aggregate_releases, measure):
    """Issue 27 item 19: on every release it accepts (one with suppressed records among
    them), at its defaults and with each yes/no or choice parameter at each of its
    other values, a measure that returns per-record values declares an aggregate and
    its value is
    its declared aggregate of its own per-record values
    (`contracts.check_measure_aggregate`)."""
    spec = MEASURES[measure]
    # every other value of a yes/no or a choice parameter, one at a time
    variants = [{p.name: v} for p in spec.params
                for v in ((not p.default,) if p.type is bool and p.default is not None
                          else p.choices) if v != p.default]
    checked = 0
    for rel in aggregate_releases:
        if rel.kind not in spec.kinds:
            continue
        if check_measure_aggregate(spec, ds, rel) is None:
            continue  # no per-record values: nothing to agree with
        checked += 1
        for params in variants:
            check_measure_aggregate(spec, ds, rel, params)
    if not checked and spec.aggregate is not None:
        pytest.fail(f"{measure} declares an aggregate but returned no per-record values")


@pytest.fixture(scope="module")
def aggregate_releases(ds, typical):
    """A release of every kind, and a generalization that suppresses some records."""
    supp = sdceval.anonymize(ds, "generalization", k=10, max_suppression=0.1)
    assert 0 < supp.suppressed.sum() < ds.n
    return [typical["generalized"], typical["perturbative"], supp,
            sdceval.anonymize(ds, "anatomy", seed=0),
            Release.external(ds, ds.frame[ds.schema.numeric], method="masked.csv")]


# -- methods: the declared protection direction (issue 27 item 17) ------------------------
#: strategies whose releases take seconds on 200 records (an optimal lattice search over
#: every key and the numeric attributes as intervals: ~45 000 nodes): the whole suite
#: runs them, the fast one not
SLOW_DIRECTION = ("generalization+intervals",)


@pytest.mark.filterwarnings("ignore:.*no split satisfies")  # k = n: one class, said
@pytest.mark.parametrize("method", [
    pytest.param(m, marks=pytest.mark.slow) if m in SLOW_DIRECTION else m
    for m in METHOD_NAMES])
def test_knob_protects_in_its_declared_direction(method):
    """At the stronger setting of its knob (by its declared ``protection``), a method's
    releases are safer on the risks the comparison matches its family on
    (`contracts.check_method_direction`): bisection steers by that direction."""
    check_method_direction(METHODS[method], contract_data(200))


# -- job kinds: each runs on a small input (issue 27 item 16) -----------------------------
JOB_KIND_NAMES = list(JOB_KINDS.names())


@pytest.mark.filterwarnings("ignore:.*no split satisfies")  # k near n: one class, said
@pytest.mark.parametrize("kind", JOB_KIND_NAMES)
def test_job_kind_runs_its_example(kind, tmp_path):
    """Each registered job kind runs its declared example on 200 records, writes its
    files and lists tidy rows, as ``sdceval run`` would, and its result reads back from
    the results store (`contracts.check_job_kind_runs`)."""
    check_job_kind_runs(JOB_KINDS[kind], contract_data(200), tmp_path)
