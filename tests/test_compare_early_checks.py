"""`compare` checks every measure's needs before the first evaluation (issue 28 item 7):
a utility that needs a label on data without one, or a measure that does not accept a
method's releases, fails at once with one line naming it and the fix, and no release is
drawn or measured."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import sdceval
from sdceval.cli import main
from sdceval.core.errors import SdcevalError
from sdceval.core.registry import MeasureSpec, MethodSpec


@pytest.fixture
def frame():
    rng = np.random.default_rng(1)
    return pd.DataFrame({"a": rng.normal(size=100), "b": rng.normal(size=100),
                         "zip": rng.choice(["01", "02", "03"], 100)})


@pytest.fixture
def no_work(monkeypatch):
    """Fail the test if any release is drawn or any measure evaluated."""
    def refuse(self, *args, **kwargs):
        raise AssertionError(f"{self.name} ran before the checks")
    monkeypatch.setattr(MethodSpec, "apply", refuse)
    monkeypatch.setattr(MeasureSpec, "evaluate", refuse)


def test_a_utility_needing_a_label_fails_before_any_evaluation(frame, no_work):
    with pytest.raises(SdcevalError) as err:
        sdceval.compare(frame, ["mdav", "noise"], numeric=["a", "b"],
                        utilities="query_error,ml_utility", curves=False)
    msg = str(err.value)
    assert "\n" not in msg
    assert "ml_utility" in msg and "--label" in msg and "--utility" in msg


def test_a_measure_refusing_a_methods_releases_names_both(frame, no_work):
    # propensity reads numeric releases only; on a file with numeric attributes and QIs
    # mdav and mondrian are compared as whole-file strategies, whose composite releases
    # it does not read: the message names the measure and the candidate as compared
    with pytest.raises(SdcevalError) as err:
        sdceval.compare(frame, ["mdav", "mondrian"], numeric=["a", "b"], qi=["zip"],
                        risk="reidentification", utilities="propensity", curves=False)
    msg = str(err.value)
    assert "propensity" in msg and "mdav+recode" in msg and "composite" in msg
    assert "--methods" in msg
    # a candidate it reads is not the one named: on QIs alone Mondrian's generalized
    # release is read by glm, the strategy's composite one is not
    with pytest.raises(SdcevalError) as err:
        sdceval.compare(frame.drop(columns=["a", "b"]), ["mondrian", "mondrian+intervals"],
                        qi=["zip"], risk="reidentification", utilities="glm", curves=False)
    msg = str(err.value)
    assert "'glm'" in msg and "'mondrian+intervals'" in msg and "'mondrian'" not in msg
    assert "--methods" in msg


def test_the_cli_says_it_in_one_line(frame, tmp_path, capsys, no_work):
    frame.drop(columns="zip").to_csv(tmp_path / "f.csv", index=False)
    code = main(["compare", "--data", str(tmp_path / "f.csv"), "--numeric", "a,b",
                 "--methods", "mdav,noise", "--utility", "ml_utility",
                 "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1 and "ml_utility" in err


def test_default_utilities_leave_out_what_the_data_cannot_feed():
    """ARX's Adult has no label, no sensitive attribute and no numeric attribute: the
    default utilities keep only those that run on it (ml_utility would stop the
    comparison), while a utility the user names is still checked and refused."""
    from sdceval.compare.families import comparison_defaults, usable_utilities
    from sdceval.core.loaders import load_dataset
    ds = load_dataset("adult-arx")
    got = comparison_defaults(ds, methods=["mondrian", "generalization"])
    assert got["utilities"] == "query_error"
    assert usable_utilities(ds, "ml_utility") == "ml_utility"   # nothing fits: said later
    assert comparison_defaults(ds, methods=["mondrian"], utilities="ml_utility")[
        "utilities"] == "ml_utility"
