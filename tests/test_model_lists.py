"""Privacy models as a list everywhere (issue 18 items 1, 2, 4): the ``models``
parameter's forms, the shorthands parsed in one place, the knob bisection and the
trade-off tune, and the suppression limit declared once."""
from __future__ import annotations

import numpy as np
import pytest

import sdceval
from sdceval import privacy
from sdceval.catalog import get_method
from sdceval.core.errors import SdcevalError
from sdceval.core.suppression import MAX_SUPPRESSION, limit_records
from sdceval.lattice.suppression import (RULES, SUPPRESSION_RULE, DewriRule, register_rule,
                                         suppression_options)
from sdceval.privacy.model_list import canonical, from_shorthand

ENFORCING = ["mondrian", "bucketization", "generalization"]


def test_every_form_gives_one_canonical_tuple():
    want = ("l=3.0,variant=distinct", "k=5")
    assert canonical(["l=3,variant=distinct", "k=5"]) == want
    assert canonical("l=3,variant=distinct;k=5") == want
    assert canonical([privacy.LDiversity(3, "distinct"), privacy.KAnonymity(5)]) == want
    assert canonical(want) == want  # idempotent: resolved parameters resolve again
    assert canonical(None) == () and canonical([]) == ()
    assert canonical("cl:c=3,l=2") == ("cl:c=3.0,l=2",)
    # t-closeness keeps "auto": the ground is resolved per data set, when bound
    assert canonical("t=0.2") == ("t=0.2,distance=emd,ground=auto",)


@pytest.mark.parametrize("bad,msg", [
    (["k=5", "k=10"], "names privacy model 'k' twice"),
    ("kk=5", "unknown privacy model 'kk'"),
    ("l=0.5", "'l'.*>= 1"),
    (5, "must be privacy models"),
    ([5], "is not a privacy model"),
])
def test_bad_model_lists_are_named(bad, msg):
    with pytest.raises(SdcevalError, match=msg):
        get_method("mondrian").resolve({"models": bad})


def test_shorthands_are_read_in_one_place():
    assert from_shorthand({"k": 10}, "m") == ("k=10",)
    assert from_shorthand({"model": "l"}, "m") == ("l=4.0,variant=probabilistic",)
    assert from_shorthand({"model": "l", "l": 3, "l_variant": "distinct", "k": 25}, "m") \
        == ("l=3.0,variant=distinct", "k=25")
    assert from_shorthand({"model": "t", "t": 0.1, "distance": "js"}, "m") \
        == ("t=0.1,distance=js,ground=auto",)
    with pytest.raises(SdcevalError, match="'delta' applies to model='delta' only"):
        from_shorthand({"model": "k", "delta": 1.2}, "m")
    with pytest.raises(SdcevalError, match="'model' must be one of k, l, t, delta"):
        from_shorthand({"model": "beta"}, "m")


@pytest.mark.parametrize("method", ENFORCING)
def test_shorthand_and_model_list_give_the_same_release(method, adult_small):
    a = sdceval.anonymize(adult_small, method, model="l", l=3, l_variant="distinct", k=5)
    b = sdceval.anonymize(adult_small, method, models=["l=3,variant=distinct", "k=5"])
    np.testing.assert_array_equal(a.classes, b.classes)
    assert a.params == b.params
    with pytest.raises(SdcevalError, match="not both"):
        sdceval.anonymize(adult_small, method, models=["k=5"], k=10)


def test_method_signatures_list_no_model_parameter():
    for method in ENFORCING:
        names = [p.name for p in get_method(method).params]
        assert "models" in names
        assert not set(names) & {"k", "l", "t", "delta", "c", "model", "variant"}
        # the shorthands are declared by the models, read through one ParamType
        assert {"model", "k", "l", "t", "delta", "c"} <= set(get_method(method).shorthands)


def test_knob_is_the_first_models_threshold():
    spec = get_method("mondrian")
    knob = spec.tunable_for({"models": ["t=0.2,distance=js", "k=5"]})
    assert knob.name == "t" and knob.protection == "decreasing" and knob.carrier == "models"
    base = spec.resolve({"models": ["t=0.2,distance=js", "k=5"]})
    assert knob.set(base, 0.3)["models"] == ("t=0.3,distance=js,ground=auto", "k=5")
    # no model given: k, the shorthand's default model
    assert get_method("generalization").tunable_for({}).name == "k"
    # a plain parameter stays a plain knob
    mdav = get_method("mdav").tunable_for({})
    assert mdav.name == "k" and mdav.carrier == "k" and mdav.set({}, 7) == {"k": 7}


def test_suppression_limit_is_declared_once():
    assert MAX_SUPPRESSION.parse(0.5) == 0.5 and MAX_SUPPRESSION.parse(3) == 3.0
    assert MAX_SUPPRESSION.default == 0.01
    for bad, msg in [(2.5, "whole number"), (-1, ">= 0"), (True, "must be a number"),
                     ("x", "must be a number")]:
        with pytest.raises(SdcevalError, match=msg):
            MAX_SUPPRESSION.parse(bad)
    assert limit_records(0.01, 30162) == 301
    assert suppression_options({}) == ("dewri", 0.01)
    gen = {p.name: p for p in get_method("generalization").params}
    assert gen["max_suppression"] is MAX_SUPPRESSION
    assert gen["suppression_rule"] is SUPPRESSION_RULE


def test_rule_choices_come_from_the_rules_registry():
    with pytest.raises(SdcevalError, match="unknown suppression rule 'drewi'"):
        SUPPRESSION_RULE.parse("drewi")

    @register_rule
    class Strict(DewriRule):
        name = "strict_test"
        description = "a test rule"

    try:
        assert SUPPRESSION_RULE.parse("strict_test") == "strict_test"
        assert suppression_options({"rule": "strict_test"})[0] == "strict_test"
    finally:
        RULES.remove("strict_test")


def test_cli_model_equals_param_shorthand(tmp_path, capsys):
    from sdceval.cli import main
    a, b = tmp_path / "a.csv", tmp_path / "b.csv"
    assert main(["-q", "anonymize", "--data", "adult", "--method", "mondrian",
                 "--param", "model=l", "--param", "l=4", "--keep-order", "--out", str(a)]) == 0
    assert main(["-q", "anonymize", "--data", "adult", "--method", "mondrian",
                 "--model", "l=4", "--keep-order", "--out", str(b)]) == 0
    assert a.read_bytes() == b.read_bytes()
    assert main(["-q", "anonymize", "--data", "census", "--method", "mdav", "--model", "k=5",
                 "--out", str(tmp_path / "c.csv")]) == 2
    assert "enforces no privacy model" in capsys.readouterr().err
