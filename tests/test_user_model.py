"""A privacy model defined in a user's own module (issue 18, "Done when").

The module below is written to a temporary folder, outside sdceval: one class,
registered with `register_model`.  Without any change to sdceval it must work in
Mondrian, bucketization, full-domain generalization, the lattice search, `compare`
(matched on its threshold), the trade-off, and as a check in ``evaluate`` — through the
Python API and, with ``SDCEVAL_PLUGINS`` / ``--plugin``, from the command line.
"""
from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import warnings

import numpy as np
import pytest

import sdceval
from sdceval import privacy
from sdceval.catalog import MEASURES

USER_MODULE = '''
"""p-sensitivity: every class has at least p distinct sensitive values."""
import numpy as np

from sdceval.core.registry import Param
from sdceval.privacy import PrivacyModel, register_model


@register_model
class PSensitivity(PrivacyModel):
    """Every class has at least ``p`` records with distinct sensitive values."""

    name = "p"
    title = "p-sensitivity"
    params = (Param("p", int, None, low=1, protection="increasing", grid=(2, 3, 4, 5),
                    description="distinct sensitive values per class"),)
    needs_sensitive = True
    monotone_generalization = True   # a union has at least the values of each part
    monotone_suppression = True      # ... and of its satisfying part
    example = {"p": 2}

    def __init__(self, p):
        self.p = self.check_param("p", p)
        self.threshold = float(self.p)

    def value(self, counts, table_dist=None):
        return (np.asarray(counts) > 0).sum(axis=1).astype(np.float64)

    def min_class_size(self, table_dist=None):
        return self.p
'''


@pytest.fixture(scope="module")
def user_module(tmp_path_factory):
    path = tmp_path_factory.mktemp("user") / "my_models.py"
    path.write_text(USER_MODULE)
    spec = importlib.util.spec_from_file_location("my_models", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    yield path
    # leave the registries as the other tests expect them
    privacy.MODELS.remove("p")
    MEASURES.remove("p_check")


@pytest.fixture(scope="module")
def ds(adult_small):
    return adult_small


def _distinct_per_class(ds, rel) -> np.ndarray:
    codes = ds.codes(ds.schema.sensitive)
    keep = ~rel.suppressed if rel.suppressed is not None else np.ones(ds.n, bool)
    pairs = np.unique(np.c_[rel.classes[keep], codes[keep]], axis=0)
    return np.bincount(pairs[:, 0])[np.unique(pairs[:, 0])]


@pytest.mark.parametrize("method", ["mondrian", "bucketization", "generalization"])
def test_user_model_in_every_enforcing_method(user_module, ds, method):
    for params in ({"models": ["p=3"]}, {"model": "p", "p": 3}):
        rel = sdceval.anonymize(ds, method, **params)
        assert rel.params["models"] == ("p=3",)
        assert _distinct_per_class(ds, rel).min() >= 3
    # with k as a second model
    rel = sdceval.anonymize(ds, method, models=["p=3", "k=20"])
    assert np.bincount(rel.classes[~rel.suppressed]).max() >= 20
    assert _distinct_per_class(ds, rel).min() >= 3


def test_user_model_as_a_check(user_module, ds):
    rel = sdceval.anonymize(ds, "mondrian", models=["p=4"])
    m = sdceval.evaluate(ds, rel, "p_check", p=4)
    assert m.value == _distinct_per_class(ds, rel).min() >= 4
    assert m.details["satisfies"] and m.direction == "higher_is_better"
    low = sdceval.anonymize(ds, "mondrian", models=["k=2"])
    assert not sdceval.evaluate(ds, low, "p_check", p=4).details["satisfies"]


def test_user_model_in_the_lattice_search(user_module, ds):
    from sdceval.lattice.search import LatticeProblem, evaluate_all, optimal
    problem = LatticeProblem(ds, [privacy.parse_model_spec("p=3")], rule="arx",
                             max_suppression=0.02)
    best = optimal(problem, "glm")
    table = evaluate_all(problem, ["glm"])
    feasible = table[table.feasible]
    assert best.value == pytest.approx(feasible.glm.min())


def test_user_model_matched_on_its_threshold(user_module, ds):
    from sdceval.compare.bisection import bisect_risk
    from sdceval.compare.ranking import compare
    target = sdceval.evaluate(ds, sdceval.anonymize(ds, "mondrian", models=["p=3"]),
                              "p_loss").value
    res = bisect_risk(ds, "bucketization", target, risk="p_loss",
                      fixed_params={"models": ["p=2"]}, max_evaluations=10)
    assert res.parameter == "p" and res.params["models"][0].startswith("p=")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cmp = compare(ds, ["mondrian", "bucketization"], target=target, risk="p_loss",
                      utilities="u_loss", curves=False,
                      method_params={"mondrian": {"models": ["p=2"]},
                                     "bucketization": {"model": "p"}})
    assert {r.parameter for r in cmp.matches} == {"p"}
    assert cmp.matches[0].params["models"][0] == f"p={cmp.matches[0].value}"


def test_user_model_swept_by_the_tradeoff(user_module, ds):
    from sdceval.compare.tradeoff import compute_tradeoff
    pts = compute_tradeoff(ds, models=["p", "k"], grids={"p": [2, 4], "k": [50]},
                           measures=["p_loss"])
    got = pts[pts.model == "p"]
    assert list(got.value) == [2, 4] and set(got.parameter) == {"p"}
    # a larger p protects more: worst-case P_loss does not grow
    assert got.p_loss.iloc[1] <= got.p_loss.iloc[0] + 1e-12


@pytest.mark.slow
def test_user_model_from_the_command_line(user_module, tmp_path):
    env = {**os.environ, "SDCEVAL_CACHE_DIR": str(tmp_path / "cache")}
    env.pop("SDCEVAL_PLUGINS", None)
    data = ["--data", "adult-train", "--qi", "age,education,marital-status,sex"]

    def sdceval_cli(*args, plugin=True):
        cmd = [sys.executable, "-m", "sdceval.cli", "-q"]
        cmd += ["--plugin", str(user_module)] if plugin else []
        return subprocess.run(cmd + list(args), capture_output=True, text=True, env=env,
                              timeout=600)

    out = sdceval_cli("anonymize", *data, "--method", "mondrian", "--model", "p=3",
                      "--out", str(tmp_path / "rel.csv"))
    assert out.returncode == 0, out.stderr
    out = sdceval_cli("evaluate", *data, "--release", str(tmp_path / "rel.csv"),
                      "--measures", "p_check:p=3")
    assert out.returncode == 0 and "p_check" in out.stdout, out.stderr
    out = sdceval_cli("lattice", "search", *data, "--model", "p=3")
    assert out.returncode == 0, out.stderr
    out = sdceval_cli("anonymize", *data, "--method", "mondrian", "--model", "p=3",
                      "--out", str(tmp_path / "x.csv"), plugin=False)
    assert out.returncode == 2 and "unknown privacy model 'p'" in out.stderr
