"""The contract checks catch the deliberate mistakes they exist for (issue 27, "Done
when"): each check of tests/contracts.py, run on a broken entry registered in a
temporary registry entry (removed again by its fixture), fails.

* item 16: a job kind whose ``run`` raises, one without an example, one returning
  another type than it declares, one whose rows are not tidy, one whose result the
  results store cannot keep, one whose ``write`` lists a file it did not write;
* item 17: a noise method whose knob is inverted but declared to protect more;
* item 18: a command module left out of ``COMMANDS``;
* item 19: a measure whose value is not its declared aggregate of its per-record
  values, and one that returns per-record values without declaring an aggregate.
"""
from __future__ import annotations

import importlib
import sys
from dataclasses import dataclass, field

import numpy as np
import pytest
from contracts import (check_commands_complete, check_job_kind_runs,
                       check_measure_aggregate, check_method_direction, command_modules,
                       contract_data)

import sdceval
import sdceval.cli
import sdceval.experiments  # noqa: F401  (registers the job kinds)
from sdceval.catalog import MEASURES, METHODS
from sdceval.core.measurement import Measurement
from sdceval.core.registry import Param, register_measure, register_method
from sdceval.experiments.jobs import JOB_KINDS, register_job_kind


@pytest.fixture(scope="module")
def ds():
    return contract_data(200)


# -- item 16: job kinds -------------------------------------------------------------------
@dataclass
class Said:
    """The result of the throw-away job kinds (a dataclass of a job kind's module: the
    results store keeps it)."""

    rows: list
    files: list = field(default_factory=list)

    def to_dict(self):
        return {"rows": self.rows}

    def __str__(self):
        return f"{len(self.rows)} rows"


def _write(res, out, prefix):
    path = out / f"{prefix}said.csv"
    path.write_text("measure,value\n" + "".join(f"{r['measure']},{r['value']}\n"
                                                for r in res.rows))
    return [path]


GOOD_ROWS = [{"measure": "m", "value": 1.0, "k": 2}, {"measure": "m", "value": 0.5, "k": 5}]


def _validate(opts):
    return None


@pytest.fixture
def job_kind():
    """``register(run, **declarations)`` registers job kind ``broken`` (removed after)."""
    def register(run, **kw):
        decl = dict(description="a deliberately broken kind", section="broken",
                    keys=(), validate=_validate, write=_write,
                    rows=lambda res: res.rows, example={})
        decl.update(kw)
        register_job_kind("broken", **decl)(run)
        return JOB_KINDS["broken"]
    yield register
    JOB_KINDS.remove("broken")


def test_a_sound_kind_passes(job_kind, ds, tmp_path):
    """The throw-away kinds below differ from this one by one mistake each."""
    def run(job, spec, executor, say) -> Said:
        return Said(GOOD_ROWS)
    assert check_job_kind_runs(job_kind(run), ds, tmp_path).rows == GOOD_ROWS


def test_a_kind_whose_run_raises_fails(job_kind, ds, tmp_path):
    def run(job, spec, executor, say) -> Said:
        raise KeyError("no such column")  # the traceback `sdceval run` died with
    with pytest.raises(KeyError, match="no such column"):
        check_job_kind_runs(job_kind(run), ds, tmp_path)


def test_a_kind_without_an_example_fails(job_kind, ds, tmp_path):
    def run(job, spec, executor, say) -> Said:
        return Said(GOOD_ROWS)
    with pytest.raises(AssertionError, match="declares no example"):
        check_job_kind_runs(job_kind(run, example=None), ds, tmp_path)


def test_a_kind_returning_another_type_fails(job_kind, ds, tmp_path):
    def run(job, spec, executor, say) -> Said:
        return {"rows": GOOD_ROWS}
    with pytest.raises(AssertionError, match="returned a dict, declared"):
        check_job_kind_runs(job_kind(run), ds, tmp_path)


@pytest.mark.parametrize("rows,says", [
    ([], "gave no rows"),
    ([{"value": 1.0}], "has no 'measure'"),
    ([{"measure": "m"}], "has no 'value'"),
    ([{"measure": "m", "value": "high"}], "is not a number"),
    ([{"measure": "m", "value": 1.0, "params": {"k": 2}}], "not a scalar"),
    ([{"measure": "m", "value": 1.0}, {"measure": "m", "value": 0.5}],
     "differ only in their value"),
])
def test_a_kind_with_untidy_rows_fails(job_kind, ds, tmp_path, rows, says):
    def run(job, spec, executor, say) -> Said:
        return Said(rows)
    with pytest.raises(AssertionError, match=says):
        check_job_kind_runs(job_kind(run), ds, tmp_path)


def test_a_kind_whose_result_the_store_cannot_keep_fails(job_kind, ds, tmp_path):
    class Unkept(Said):  # not a dataclass of its own: no codec reads it back
        def __init__(self, rows):
            self.rows, self.files = rows, []

    def run(job, spec, executor, say) -> Said:
        return Unkept(GOOD_ROWS)
    with pytest.raises(AssertionError, match="cannot be stored"):
        check_job_kind_runs(job_kind(run), ds, tmp_path)


def test_a_kind_listing_a_file_it_did_not_write_fails(job_kind, ds, tmp_path):
    def run(job, spec, executor, say) -> Said:
        return Said(GOOD_ROWS)
    with pytest.raises(AssertionError, match="does not exist"):
        check_job_kind_runs(job_kind(run, write=lambda res, out, prefix: [
            out / f"{prefix}missing.csv"]), ds, tmp_path)


# -- item 17: a method's declared direction -----------------------------------------------
@pytest.fixture
def inverted_noise():
    """Noise whose knob is inverted (``quiet`` = 1 / gamma: more quiet, less noise) but
    declared ``protection="increasing"`` — a method doing the opposite of its name."""
    noise = METHODS["noise"].func

    @register_method("inverted_noise", description="noise, knob inverted", random=True,
                     params=[Param("quiet", float, 1.0, low=0.0, low_inclusive=False,
                                   high=1000.0, protection="increasing",
                                   grid=(0.33, 3.0, 100.0), scale="log")])
    def inverted(dataset, *, quiet: float = 1.0, seed):
        return noise(dataset, gamma=1.0 / quiet, seed=seed)
    yield METHODS["inverted_noise"]
    METHODS.remove("inverted_noise")


def test_a_method_with_its_direction_declared_wrong_fails(inverted_noise, ds):
    with pytest.raises(AssertionError, match="declared to protect more.*went from"):
        check_method_direction(inverted_noise, ds)
    # with the direction it really has, the same method passes
    from dataclasses import replace
    knob = inverted_noise.params[0]
    fixed = replace(inverted_noise, params=(replace(knob, protection="decreasing"),))
    risks = check_method_direction(fixed, ds)
    assert set(risks) == {"reidentification", "linkage_risk"}


# -- item 18: every command module is a command -------------------------------------------
def test_a_command_module_left_out_of_commands_fails(tmp_path, monkeypatch):
    pkg = tmp_path / "fakecli"
    pkg.mkdir()
    for name in ("__init__", "__main__", "common", "_helpers", "alpha", "beta"):
        (pkg / f"{name}.py").write_text("")
    monkeypatch.syspath_prepend(str(tmp_path))
    fake = importlib.import_module("fakecli")
    try:
        modules = command_modules(fake)
        assert modules == ["alpha", "beta"]
        alpha = importlib.import_module("fakecli.alpha")
        beta = importlib.import_module("fakecli.beta")
        check_commands_complete(modules, (alpha, beta))
        with pytest.raises(AssertionError, match="beta are not in COMMANDS"):
            check_commands_complete(modules, (alpha,))
        # COMMANDS as module names or a mapping of them works the same
        with pytest.raises(AssertionError, match="beta are not in COMMANDS"):
            check_commands_complete(modules, {"alpha": "fakecli.alpha"})
    finally:
        for name in [m for m in sys.modules if m == "fakecli" or m.startswith("fakecli.")]:
            del sys.modules[name]


def test_a_module_added_to_sdcevals_cli_but_not_to_commands_fails():
    modules = command_modules(sdceval.cli) + ["forgotten"]
    with pytest.raises(AssertionError, match="forgotten are not in COMMANDS"):
        check_commands_complete(modules, sdceval.cli.COMMANDS)


# -- item 19: a measure's value and its per-record values ---------------------------------
@pytest.fixture
def measure():
    """``register(value_of, aggregate)`` registers measure ``broken_mean``: per record
    the IL1s deviations, value ``value_of(per_record)`` (removed after)."""
    il1s = MEASURES["il1s"]

    def register(value_of, aggregate):
        @register_measure("broken_mean", category="information_loss",
                          direction="lower_is_better", kinds=il1s.kinds, needs=il1s.needs,
                          description="a deliberately broken measure", aggregate=aggregate)
        def broken(dataset, release):
            per = il1s.func(dataset, release).per_record
            return Measurement("broken_mean", value_of(per), per)
        return MEASURES["broken_mean"]
    yield register
    MEASURES.remove("broken_mean")


@pytest.fixture(scope="module")
def release(ds):
    return sdceval.anonymize(ds, "noise", gamma=0.5, seed=0)


def test_a_sound_measure_passes(measure, ds, release):
    assert check_measure_aggregate(measure(lambda v: float(v.mean()), "mean"), ds,
                                   release) == "mean"


def test_a_measure_whose_value_is_not_its_declared_aggregate_fails(measure, ds, release):
    spec = measure(lambda v: float(v.max()), "mean")  # says mean, returns the maximum
    with pytest.raises(AssertionError, match="but the mean of its per-record values"):
        check_measure_aggregate(spec, ds, release)


def test_a_measure_with_per_record_values_and_no_aggregate_fails(measure, ds, release):
    spec = measure(lambda v: float(np.mean(v)), None)
    with pytest.raises(AssertionError, match="declares no aggregate"):
        check_measure_aggregate(spec, ds, release)
