"""Contract checks of registry entries, one plain function per contract (issue 27 items
16-19): the contract suite (tests/test_contract.py) calls each on every registered
entry, and tests/test_contract_mistakes.py calls the same function on a deliberately
broken entry in a temporary registry and checks that it fails.

* `check_job_kind_runs` — a job kind's declared ``example`` is built into a job on a
  small data set, *run*, its rows and files written; the result is of the declared
  type, the rows are tidy, the files exist, and the result read back from the results
  store gives the same rows and files (item 16);
* `check_method_direction` — a method applied at a weak and a strong setting of its
  knob protects more at the strong one, measured by the risks a comparison matches its
  family on, so bisection steers the right way (item 17);
* `check_commands_complete` — every command module of ``sdceval/cli`` is a command
  (item 18);
* `check_measure_aggregate` — a measure's value is its declared aggregate of its own
  per-record values (item 19).

Each check fails with an ``AssertionError`` naming the entry and the broken contract
(or lets the entry's own error through: a job whose ``run`` raises fails with it).
"""
from __future__ import annotations

import json
import math
import pkgutil
import typing
from collections.abc import Mapping
from numbers import Real
from pathlib import Path

import numpy as np
import pandas as pd

from sdceval import Dataset, Hierarchy, Schema, SdcevalError

N = 240
REGION = Hierarchy([["north", "N", "*"], ["east", "N", "*"], ["south", "S", "*"],
                    ["west", "S", "*"]], name="region")
EDUCATION = Hierarchy([[f"e{i}", f"g{i // 3}", "*"] for i in range(6)], name="education")


def contract_data(n: int = N, seed: int = 0, control: bool = True) -> Dataset:
    """One data set with every role, so that every method, measure and job kind applies
    to it: numeric attributes (perturbative methods), four QIs with hierarchies, a
    sensitive attribute that depends on a QI (so classes differ), a label, a passthrough
    column and an identifier the schema ignores."""
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
        # survey design (issue 29): design weights and households of 1-4 persons
        "w": rng.uniform(1, 200, n).round(1),
        "hid": np.repeat(np.arange(n), rng.integers(1, 5, n))[:n],
    })
    schema = Schema.from_roles(
        frame, qi=["age", "region", "education", "sex"], sensitive="disease",
        numeric=["x", "y", "z"], label="income", passthrough=["batch"],
        weight="w", household="hid",
        hierarchies={"region": REGION, "education": EDUCATION})
    ds = Dataset(frame, schema, name="contract")
    if control:  # records held out before anonymization, for the attacks (issue 32):
        # a separate draw, so the records above stay as they were
        ds.control = contract_data(max(20, n // 4), seed + 1, control=False)
    return ds


# -- item 16: every job kind runs ---------------------------------------------------------
#: a row's fields are plain scalars (what the results store keeps and ``sdceval results``
#: filters on)
_SCALARS = (str, bool, int, float, type(None), np.integer, np.floating, np.bool_)


def check_rows_tidy(name: str, rows) -> None:
    """Tidy rows (one measurement per row): a non-empty list of dicts with text keys and
    scalar values, each with a ``measure`` (text) and a ``value`` (a number or None),
    and no two rows alike in every field but the value (else two different
    measurements cannot be told apart, e.g. a threshold left out)."""
    assert isinstance(rows, list) and rows, f"job kind {name!r}: rows() gave no rows"
    seen: dict[tuple, int] = {}
    for i, row in enumerate(rows):
        assert isinstance(row, dict), f"job kind {name!r}: row {i} is not a dict: {row!r}"
        assert all(isinstance(k, str) for k in row), f"job kind {name!r}: row {i} keys"
        for k, v in row.items():
            assert isinstance(v, _SCALARS), (f"job kind {name!r}: row {i} field {k!r} is "
                                             f"a {type(v).__name__}, not a scalar")
        assert isinstance(row.get("measure"), str) and row["measure"], \
            f"job kind {name!r}: row {i} has no 'measure': {row!r}"
        assert "value" in row, f"job kind {name!r}: row {i} has no 'value': {row!r}"
        v = row["value"]
        assert v is None or (isinstance(v, Real) and not isinstance(v, bool)), \
            f"job kind {name!r}: row {i} value {v!r} is not a number"
        ident = tuple(sorted((k, repr(x)) for k, x in row.items() if k != "value"))
        assert ident not in seen, (f"job kind {name!r}: rows {seen[ident]} and {i} differ "
                                   f"only in their value ({row!r}): a field saying what "
                                   "was measured is missing")
        seen[ident] = i


def check_job_kind_runs(kind, dataset: Dataset, out) -> typing.Any:
    """Build the job of ``kind``'s declared ``example`` on ``dataset`` (checked as a
    file's table is), run it serially, write its files in ``out`` and list its rows, as
    ``sdceval run`` does; check the result's declared type (``run``'s return
    annotation), ``to_dict()`` (JSON), its text and HTML section, the rows
    (`check_rows_tidy`), the files (each exists, is not empty, lies in ``out`` under
    the job's prefix) and the result read back from the store
    (`check_result_stored`).  Returns the result."""
    from sdceval.experiments.executor import Executor
    from sdceval.experiments.jobs import command_job, report_section
    from sdceval.experiments.spec import ExperimentSpec

    name = kind.name
    example = getattr(kind, "example", None)
    assert isinstance(example, dict), (
        f"job kind {name!r} declares no example: register it with example={{...}}, the "
        "options of a small job (the contract suite runs it)")
    declared = typing.get_type_hints(kind.run).get("return")
    assert isinstance(declared, type), (f"job kind {name!r}: run() declares no result "
                                        "type (its return annotation)")
    assert kind.write is not None and kind.rows is not None, (
        f"job kind {name!r} declares no write() or rows(): its files or measurements "
        "would be lost")
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    job = command_job(name, dataset, "contract", **example)
    spec = ExperimentSpec("contract", out / "contract.toml", seed=0)
    result = kind.run(job, spec, Executor(), lambda message: None)
    assert isinstance(result, declared), (f"job kind {name!r}: run() returned a "
                                          f"{type(result).__name__}, declared {declared}")
    json.dumps(result.to_dict(), default=lambda o: o.item() if hasattr(o, "item") else
               str(o) if isinstance(o, Path) else _unserializable(name, o))
    assert isinstance(str(result), str)
    rows = kind.rows(result)
    check_rows_tidy(name, rows)
    prefix = f"{job.key}_"
    files = kind.write(result, out, prefix)
    assert isinstance(files, list) and files, f"job kind {name!r}: write() wrote no file"
    for f in files:
        f = Path(f)
        assert f.is_file(), f"job kind {name!r}: write() lists {f} but it does not exist"
        assert f.stat().st_size > 0, f"job kind {name!r}: {f} is empty"
        assert f.parent.resolve() == out.resolve() and f.name.startswith(prefix), \
            f"job kind {name!r}: {f} is not in the output folder under {prefix!r}"
    result.files = list(files)
    section = report_section(name, result)
    assert section.title and set(map(Path, files)) <= set(map(Path, section.files))
    check_result_stored(kind, result, rows, files, out / "resumed", prefix)
    return result


def check_result_stored(kind, result, rows, files, out: Path, prefix: str) -> None:
    """The result reads back from the results store's encoding (a resumed run takes it
    from there: `sdceval.experiments.result_codec`) with the same rows, and writes the
    same files."""
    from sdceval.experiments import result_codec
    try:
        back = result_codec.decode(result_codec.encode(result))
    except result_codec.Unstorable as exc:
        raise AssertionError(f"job kind {kind.name!r}: its result cannot be stored "
                             f"({exc}): every resume would compute it again") from None
    assert repr(kind.rows(back)) == repr(rows), \
        f"job kind {kind.name!r}: the result read back from the store gives other rows"
    out.mkdir(parents=True, exist_ok=True)
    again = kind.write(back, out, prefix)
    assert sorted(Path(f).name for f in again) == sorted(Path(f).name for f in files), \
        f"job kind {kind.name!r}: the result read back from the store writes other files"


def _unserializable(name, o):
    raise AssertionError(f"job kind {name!r}: to_dict() holds a {type(o).__name__}, not "
                         "JSON")


# -- item 17: every method protects in its declared direction -----------------------------
#: the risks a method's family is checked on, and whether a tie between the weak and the
#: strong setting is legitimate.  The comparison matches every family on its default risk
#: (`sdceval.compare.families.default_risk`: re-identification with QIs); perturbative
#: methods also on the linkage distance (its default without QIs), syntactic ones on the
#: class size achieved.  Bucketization publishes the QIs exactly: its classes protect
#: the sensitive attribute, so re-identification may stay where it is (never rise).
FAMILY_RISKS = {"perturbative": (("default", False), ("linkage_risk", False)),
                # the population risk of the keys too (the contract data are a survey)
                "generalization": (("default", False), ("k_anonymity", False),
                                   ("individual_risk", False)),
                "bucketization": (("default", True), ("k_anonymity", False)),
                # a whole-file strategy: the default risk and the uniques on the keys
                "strategy": (("default", False), ("sample_uniques", True)),
                # new records (issue 32): the worst attack (the default risk of a
                # synthetic candidate) and membership inference's AUC (CART at minbucket
                # 1 copies records); a DP histogram's samples come from noisy cells, with
                # no record to overfit at either end of ε (AUC about 0.5 or below: no
                # signal, in no order), so the attacks alone judge it
                "synthetic": (("default", False), ("membership_inference", False)),
                "dp": (("default", False),)}

#: parameters a method needs on the contract data beyond its defaults: the DP
#: histogram's joint table over all ten columns has 1.15e7 cells, above its limit (its
#: refusal is tested in tests/test_dp_histogram.py)
CONTRACT_PARAMS = {"dp_histogram": {"columns": "age,sex,region"}}


def contract_params(spec) -> dict:
    """What the contract suite runs ``spec`` with besides its knob: its experiment
    parameters (reproducible from the seed) and `CONTRACT_PARAMS`."""
    return {**spec.experiment_params, **CONTRACT_PARAMS.get(spec.name, {})}


def knob_values(spec, knob, dataset) -> list:
    """Settings of ``knob`` in its declared grid (else its finite bounds) that hold for
    ``dataset``'s size, ascending."""
    lo, hi = knob.param.bounds(dataset.n)
    ok = (lambda v: (lo is None or (v >= lo if knob.param.low_inclusive else v > lo))
          and (hi is None or (v <= hi if knob.param.high_inclusive else v < hi)))
    values = sorted(v for v in knob.param.grid if ok(v))
    if len(values) < 2:
        values = sorted({v for v in (lo, hi) if v is not None and ok(v)} | set(values))
    assert len(values) >= 2, (f"method {spec.name!r}: knob {knob.name!r} has neither a "
                              "grid nor finite bounds to pick two settings from")
    return values


def _knob_on_keys(spec, knob) -> bool:
    """Whether a strategy's knob belongs to the step that protects its keys."""
    from sdceval.methods.strategy import GROUP
    return any(GROUP.get(m.family) == "qis" and knob.param.name in {p.name for p in m.params}
               for _, m in spec.step_specs())


def check_method_direction(spec, dataset: Dataset, seed: int = 0) -> dict:
    """Apply the method at the two settings of its knob (`MethodSpec.tunable`) farthest
    apart (the highest one that the data allow), with a fixed seed; at the setting its
    declared ``protection`` calls stronger, every risk of `FAMILY_RISKS` must be better
    (the same only where a tie is legitimate).  Returns ``{measure: (weak, strong)}``."""
    from sdceval.compare.families import default_risk

    knob = spec.tunable
    assert knob.param.protection in ("increasing", "decreasing"), \
        f"method {spec.name!r}: knob {knob.name!r} declares no protection direction"
    values = knob_values(spec, knob, dataset)
    base = contract_params(spec)
    low = (values[0], spec.apply(dataset, knob.set(base, values[0]), seed=seed))
    high = None
    for v in reversed(values[1:]):  # the farthest setting the data allow
        try:
            high = (v, spec.apply(dataset, knob.set(base, v), seed=seed))
            break
        except SdcevalError:
            continue
    assert high is not None, \
        f"method {spec.name!r}: no second setting of {knob.name!r} runs"
    (wv, weak), (sv, strong) = (low, high) if knob.param.protection == "increasing" \
        else (high, low)
    out = {}
    risks = FAMILY_RISKS[spec.family]
    if spec.family == "strategy":   # a bucketization step protects attributes, not identity
        buckets = any(m.family == "bucketization" for _, m in spec.step_specs())
        risks = tuple((name, tie or buckets) for name, tie in risks)
    from sdceval.core.release_public import public_parameters
    if (public_parameters(strong) or {}).get("perturbed_keys") or \
            strong.info.get("perturbed_keys"):
        # PRAM protects by redrawing keys, not by enlarging the published classes or
        # making the published combinations less unique: neither judges it (its
        # smallest class may stay, its uniques even rise; sdcMicro warns likewise)
        risks = tuple((name, tie) for name, tie in risks
                      if name not in ("k_anonymity", "sample_uniques"))
    if strong.info.get("missing_matches_all"):
        # local suppression: a suppressed value matches every value, so its guarantee is
        # on compatible records, not on the published classes (distinct combinations)
        risks = tuple((name, tie or name == "k_anonymity") for name, tie in risks)
    for measure, tie_ok in risks:
        # the comparison's default without a survey's weights: re-identification, which
        # reads every column (a survey's population risk reads the keys only, so it
        # cannot judge a knob on the numeric attributes; it is checked on the keys'
        # methods above)
        if measure == "default":
            measure = "reidentification"
            if spec.kind == "synthetic":   # no record correspondence: the attacks
                measure = default_risk(dataset, [spec.name])
            elif spec.family == "strategy" and _knob_on_keys(spec, knob):
                # a knob on the keys beside numbers published nearly as they are
                # (top coding): the survey's population risk of the keys judges it
                measure = default_risk(dataset, [spec.name])
        from sdceval.compare.composite import risk_spec
        m = risk_spec(measure)
        a = m.evaluate(dataset, weak).value
        b = m.evaluate(dataset, strong).value
        out[measure] = (a, b)
        better = b < a if m.direction == "lower_is_better" else b > a
        assert better or (tie_ok and b == a), (
            f"method {spec.name!r}: {knob.name} = {wv} -> {sv} is declared to protect more "
            f"(protection={knob.param.protection!r}) but {measure} went from {a:.4g} to "
            f"{b:.4g} ({m.direction})")
    return out


# -- item 18: every command module is a command -------------------------------------------
#: modules of the command package that are not commands
NOT_COMMANDS = ("__init__", "__main__", "common")


def command_modules(package) -> list[str]:
    """The modules of ``package`` (listed with pkgutil) that must be commands: all but
    `NOT_COMMANDS` and private helpers (``_name``)."""
    return sorted(m.name for m in pkgutil.iter_modules(package.__path__)
                  if m.name not in NOT_COMMANDS and not m.name.startswith("_"))


def _short(entry) -> str:
    name = entry if isinstance(entry, str) else getattr(entry, "__name__", repr(entry))
    return name.rsplit(".", 1)[-1]


def check_commands_complete(modules, commands) -> None:
    """Every module of ``modules`` is one of ``commands`` (modules or module names; a
    mapping's values), and every command is such a module."""
    entries = commands.values() if isinstance(commands, Mapping) else commands
    registered = {_short(c) for c in entries}
    missing = sorted(set(modules) - registered)
    assert not missing, (f"command module(s) {', '.join(missing)} are not in COMMANDS "
                         "(sdceval/cli/__init__.py): the command would vanish")
    stray = sorted(registered - set(modules))
    assert not stray, f"COMMANDS names {', '.join(stray)}, not modules of the package"


# -- item 19: a measure's value is its declared aggregate of its per-record values --------
def check_measure_aggregate(spec, dataset: Dataset, release, params: dict | None = None
                            ) -> str | None:
    """Evaluate the measure; when it returns per-record values, it must declare an
    aggregate (`MeasureSpec.aggregate`) and its value must equal that aggregate of the
    per-record values (`sdceval.core.measurement.AGGREGATES`, suppressed records from
    the release).  Returns the aggregate's name (None: no per-record values, or the
    measure declares that under ``params`` its value is no aggregate of them)."""
    from sdceval.core.measurement import AGGREGATES

    m = spec.evaluate(dataset, release, params)
    if m.per_record is None:
        return None
    assert spec.aggregate is not None, (
        f"measure {spec.name!r} returns per-record values but declares no aggregate "
        f"(register it with aggregate=, one of {', '.join(AGGREGATES)})")
    name = spec.aggregate_for(params)
    if name is None:  # declared: under these parameters the value is no aggregate
        return None
    assert name in AGGREGATES, f"measure {spec.name!r}: unknown aggregate {name!r}"
    per = np.asarray(m.per_record, dtype=float)
    got = AGGREGATES[name](per, release.suppressed)
    assert math.isclose(got, m.value, rel_tol=1e-9, abs_tol=1e-12) or got == m.value, (
        f"measure {spec.name!r} ({params or 'defaults'}, release {release.method!r}): "
        f"value {m.value!r} but the {name} of its per-record values is {got!r}")
    return name
