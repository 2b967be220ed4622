"""Typed, bounded parameters and name lookup with suggestions."""
import pytest

from sdceval import SdcevalError, get_measure, get_method
from sdceval.core.registry import Param, parse_assignments


def test_param_parsing_and_bounds():
    k = Param("k", int, 5, low=2, high="n", protection="increasing")
    assert k.parse("7", n=100) == 7
    assert k.parse(7.0, n=100) == 7
    with pytest.raises(SdcevalError, match="'k'.*>= 2"):
        k.parse("1", n=100)
    with pytest.raises(SdcevalError, match="<= 100 \\(the number of records\\)"):
        k.parse(101, n=100)
    with pytest.raises(SdcevalError, match="type int"):
        k.parse("2.5", n=100)
    g = Param("gamma", float, 1.0, low=0, low_inclusive=False)
    with pytest.raises(SdcevalError, match="> 0"):
        g.parse(0)
    with pytest.raises(SdcevalError, match="type float"):
        g.parse("nan")
    c = Param("model", str, "k", choices=("k", "l"))
    with pytest.raises(SdcevalError, match="one of k, l"):
        c.parse("x")


def test_unknown_method_and_measure_suggest():
    with pytest.raises(SdcevalError, match="Did you mean 'mdav'"):
        get_method("mdv")
    with pytest.raises(SdcevalError, match="Did you mean 'propensity'"):
        get_measure("propensty")


def test_unknown_parameter_suggests():
    with pytest.raises(SdcevalError, match="Did you mean 'k'"):
        get_method("mdav").resolve({"kk": 3}, n=100)


def test_parse_assignments():
    assert parse_assignments(["k=5", "model = l"]) == {"k": "5", "model": "l"}
    with pytest.raises(SdcevalError, match="name=value"):
        parse_assignments(["k5"])


def test_every_method_has_documented_params():
    from sdceval.catalog import METHODS
    for spec in METHODS.all():
        assert spec.description
        for p in spec.params:
            assert p.description, (spec.name, p.name)
            if p.default is not None:
                p.parse(p.default, n=10 ** 6)
        assert spec.tunable.protection in ("increasing", "decreasing")
