"""Whole-file strategies (issue 28 item 1, SPEC §5; `sdceval.methods.strategy`) and
global recoding (`sdceval.methods.recoding`): every strategy publishes the same
columns, each column as its step left it."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import sdceval
from sdceval.catalog import METHODS, get_method
from sdceval.core.errors import SdcevalError
from sdceval.core.treatment import column_treatment
from sdceval.methods.strategy import BUILTIN, Step, canonical, interval_view, parse_steps


def mixed_frame(n: int = 400, seed: int = 3) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    age = rng.integers(18, 90, n)
    return pd.DataFrame({
        "zip": rng.choice([f"0{a}{b}{c}" for a in "12" for b in "0123" for c in "05"], n),
        "age": age, "sex": rng.choice(["F", "M"], n),
        "income": (rng.lognormal(10, 0.5, n) * (1 + age / 100)).round(-2),
        "visits": rng.poisson(2 + age / 30, n),
        "diagnosis": rng.choice(["flu", "asthma", "none", "copd"], n)})


@pytest.fixture(scope="module")
def ds():
    return sdceval.as_dataset(mixed_frame(), qi=["zip", "age", "sex"],
                              numeric=["income", "visits"], sensitive="diagnosis")


def test_every_builtin_strategy_publishes_the_same_columns(ds):
    columns = set()
    for name in BUILTIN:
        rel = get_method(name).apply(ds, {}, seed=0)
        assert rel.kind == "composite"
        columns.add(tuple(c for c in rel.data.columns if c != "bucket"))
        # every QI has a cell; the cells fit their records
        for q in ds.schema.qis:
            lo, hi = rel.cells[q]
            code = ds.codes(q)
            assert ((lo <= code) & (code <= hi)).all()
    assert columns == {("zip", "age", "sex", "income", "visits", "diagnosis")}


def test_column_treatment_of_strategies(ds):
    t = column_treatment(ds, get_method("mdav+recode").apply(ds, {"k": 5, "level": 1},
                                                              seed=0))
    assert t == {"zip": "generalized", "age": "generalized", "sex": "generalized",
                 "income": "masked", "visits": "masked", "diagnosis": "as is"}
    t = column_treatment(ds, get_method("mondrian+intervals").apply(ds, {"k": 5}, seed=0))
    assert t["income"].startswith("generalized") and t["visits"].startswith("generalized")
    assert t["diagnosis"] == "as is"
    # a group no step covers is published as it is (its cells exact)
    rel = get_method("mdav").apply(ds, {"k": 5}, seed=0)
    assert rel.kind == "perturbative"   # a method alone is not a whole-file strategy


def test_a_one_step_strategy_publishes_the_rest_as_is(ds):
    # "mdav" alone is the method; its strategy with the QIs as they are is recode at
    # level 0
    rel = get_method("mdav+recode").apply(ds, {"k": 5, "level": 0}, seed=0)
    t = column_treatment(ds, rel)
    assert t["zip"] == t["age"] == t["sex"] == "as is"
    assert t["income"] == "masked"


def test_intervals_cells_use_the_data_sets_leaf_codes(ds):
    rel = get_method("mondrian+intervals").apply(ds, {"k": 10}, seed=0)
    view = interval_view(ds)
    assert view.schema.qis == ["zip", "age", "sex", "income", "visits"]
    for c in ("income", "visits"):
        assert ds.hierarchy(c) is view.hierarchy(c)
        lo, hi = rel.cells[c]
        code = ds.codes(c)
        assert ((lo <= code) & (code <= hi)).all() and (hi > lo).any()
    # Mondrian's classes hold at least k records over all five keys
    assert np.bincount(rel.class_index()[0]).min() >= 10


def test_steps_draw_from_the_strategys_seed(ds):
    alone = get_method("noise").apply(ds, {"gamma": 0.3}, seed=11)
    whole = get_method("noise+recode").apply(ds, {"gamma": 0.3, "level": 2}, seed=11)
    assert np.array_equal(alone.data[["income", "visits"]].to_numpy(),
                          whole.data[["income", "visits"]].to_numpy())
    again = get_method("noise+recode").apply(ds, {"gamma": 0.3, "level": 2}, seed=11)
    pd.testing.assert_frame_equal(whole.data, again.data)


def test_recode_caps_the_level_at_each_hierarchy(ds):
    rel = get_method("recode").apply(ds, {"level": 5}, seed=0)
    heights = {q: ds.hierarchy(q).height for q in ds.schema.qis}
    assert rel.info["levels"] == heights
    assert (rel.data["sex"] == "*").all()
    bottom = get_method("recode").apply(ds, {"level": 0}, seed=0)
    assert (bottom.data["zip"].astype(str) == ds.frame["zip"].astype(str)).all()
    assert not bottom.suppressed.any() and not rel.suppressed.any()
    named = get_method("recode").apply(ds, {"levels": "zip=1"}, seed=0)
    assert named.info["levels"] == {"zip": 1, "age": 0, "sex": 0}


def test_strategy_texts_and_lists_are_one_parse():
    a = parse_steps("noise:gamma=0.5 + recode:level=2")
    b = parse_steps(["recode:level=2", "noise:gamma=0.5"])
    assert canonical(a) == canonical(b) == "noise:gamma=0.5+recode:level=2"
    assert parse_steps([Step("mondrian"), "intervals"])[1].method == "intervals"
    # an exponent is not a step separator
    assert parse_steps("noise:gamma=1e+0+recode")[0].fixed == (("gamma", "1e+0"),)
    spec = get_method("noise:gamma=0.5+recode:level=2")
    assert spec.name in METHODS and spec.family == "strategy"
    # the fixed parameters are not the strategy's: no knob left on noise, recode's
    # level is fixed too, so nothing protects beyond them
    assert [p.name for p in spec.params] == ["levels", "breaks"]


@pytest.mark.parametrize("text, words", [
    ("mdav+noise", "two steps protect the numeric columns"),
    ("mdav+intervals", "needs a QI step and no perturbative one"),
    ("mondrian+intervals+intervals", "given twice"),
    ("mdva+recode", "unknown method 'mdva'"),
    ("mdav+recode+mdav+recode", "two steps"),
    ("mondrian+intervals:x=1", "takes no parameters"),
])
def test_bad_strategies_are_refused_naming_the_fix(text, words):
    with pytest.raises(SdcevalError, match=words):
        get_method(text)


def test_a_parameter_two_steps_share_is_refused():
    with pytest.raises(SdcevalError, match="both take parameter 'k'"):
        get_method("mdav+bucketization")
    # fixing it in one step resolves it
    assert get_method("mdav:k=3+bucketization").tunable.name == "k"


def test_knob_and_grid_of_a_strategy():
    spec = get_method("mdav+recode")
    assert spec.tunable.name == "k"
    grid = spec.grid_knobs({})
    assert [(p.name, v) for p, v in grid] == [("level", (0, 1, 2))]
    assert spec.grid_knobs({"level": 1}) == []
    assert spec.grid_knobs({"levels": "zip=2"}) == []   # levels overrides level
    assert get_method("mondrian+intervals").grid_knobs({}) == []


def test_a_strategy_needs_its_groups(ds):
    census = sdceval.load_dataset("census")
    with pytest.raises(SdcevalError, match="protects the quasi-identifiers"):
        get_method("mdav+recode").apply(census, {}, seed=0)


def test_a_step_tolerance_is_capped_at_half_the_target(ds):
    """Recoding every key moves the risk by a large step per level: a target between
    two levels, nearer one of them but more than 50 % away from it, is not "equal
    risk" (`sdceval.compare.tolerance.MAX_STEP`); within 50 % it is matched on the
    step rule."""
    from sdceval.compare.bisection import bisect_risk
    risk = {lv: sdceval.evaluate(ds, get_method("recode+intervals").apply(
        ds, {"level": lv}, seed=0), "reidentification").value for lv in (1, 2, 3)}
    r2, r3 = risk[2], risk[3]
    assert risk[1] > r2 > r3
    far = (r2 / 1.5 + max(r3, (r2 + r3) / 2)) / 2      # nearest r2, > 50 % below it
    assert abs(r2 - far) / far > 0.5 and r2 - far < far - r3
    res = bisect_risk(ds, "recode+intervals", far, risk="reidentification")
    assert res.value == 2 and not res.matched and "capped at ±50 %" in res.nearest_note()
    near = r2 / 1.3                                     # 30 % away, within the step
    res = bisect_risk(ds, "recode+intervals", near, risk="reidentification")
    assert res.value == 2 and res.matched and res.tolerance_rule == "step"


def test_a_strategy_too_costly_on_the_data_is_left_out_of_the_defaults_only():
    """Full-domain generalization over 3 QIs and 6 numeric attributes as intervals
    searches a lattice of millions of nodes at every evaluation: it is left out of the
    default candidates, with the reason, and still runs when named."""
    from sdceval.compare.families import applicable_methods, comparison_defaults, left_out
    rng = np.random.default_rng(0)
    n = 300
    frame = pd.DataFrame({"zip": rng.choice([f"0{i:04d}" for i in range(100)], n),
                          "age": rng.integers(18, 90, n), "sex": rng.choice(["F", "M"], n),
                          **{f"x{j}": rng.normal(size=n).round(2) for j in range(6)},
                          "dx": rng.choice(list("abc"), n)})
    wide = sdceval.as_dataset(frame, qi=["zip", "age", "sex"],
                              numeric=[f"x{j}" for j in range(6)], sensitive="dx")
    why = left_out(wide)
    assert list(why) == ["generalization+intervals"]
    assert "lattice over the 9 keys has" in why["generalization+intervals"]
    assert "generalization+intervals" not in applicable_methods(wide)
    named = comparison_defaults(wide, methods=["generalization+intervals", "mdav+recode"])
    assert named["methods"] == ["generalization+intervals", "mdav+recode"]
    assert left_out(sdceval.as_dataset(mixed_frame(), qi=["zip", "age", "sex"],
                                       numeric=["income", "visits"],
                                       sensitive="diagnosis")) == {}


def test_strategies_in_an_experiment_file_the_api_and_the_cli_are_one_parse(tmp_path):
    """User-defined strategies: text in a TOML ``[[comparison]]``, a list of steps in
    Python, text on the command line: one parse, one canonical name."""
    from sdceval.compare.ranking import plan_comparison
    from sdceval.experiments.spec import load_spec
    frame = mixed_frame(120)
    frame.to_csv(tmp_path / "p.csv", index=False)
    (tmp_path / "s.toml").write_text('qi = ["zip", "age", "sex"]\nnumeric = ["income", '
                                     '"visits"]\nsensitive = "diagnosis"\n')
    (tmp_path / "exp.toml").write_text(f"""
[experiment]
name = "strategies"
output = "{(tmp_path / 'out').as_posix()}"
[[comparison]]
data = "{(tmp_path / 'p.csv').as_posix()}"
schema = "{(tmp_path / 's.toml').as_posix()}"
methods = ["recode:level=2 + noise", "mondrian+intervals"]
intruder = "zip,age,income"
""")
    spec = load_spec(tmp_path / "exp.toml")
    plan = spec.jobs[0].plan
    assert plan.methods == ("noise+recode:level=2", "mondrian+intervals")
    assert plan.intruder == ("zip", "age", "income")
    python = plan_comparison([["noise", "recode:level=2"], "mondrian+intervals"])
    assert python.methods == plan.methods
    with pytest.raises(SdcevalError, match="two steps protect the qis columns"):
        plan_comparison(["recode+mondrian"])


def test_the_cli_declares_one_intruder_and_names_the_strategies(tmp_path, capsys):
    from sdceval.cli import main
    mixed_frame(200).to_csv(tmp_path / "p.csv", index=False)
    code = main(["compare", "--data", str(tmp_path / "p.csv"), "--qi", "zip,age,sex",
                 "--numeric", "income,visits", "--sensitive", "diagnosis",
                 "--methods", "mdav,mondrian", "--intruder", "zip,age,sex,income",
                 "--repeats", "1", "--out", str(tmp_path / "out")])
    out, err = capsys.readouterr()
    assert "mdav read as mdav+recode" in err and "mondrian read as mondrian+intervals" in err
    assert "the intruder knows zip, age, sex, income (every candidate)" in err
    import json
    results = json.loads((tmp_path / "out" / "results.json").read_text())
    assert results["risk_params"]["knows"] == ["zip", "age", "sex", "income"]
    ranked = [m for m in results["matches"] if m["matched"]]
    assert code == (0 if len(ranked) >= 2 else 2), err   # exit 2: fewer than two ranked
    assert "MDAV + recoding" in out and "Mondrian (all keys)" in out


def test_a_deterministic_key_step_is_made_once_per_parameters(monkeypatch):
    """A strategy's search bisects its numeric knob at a fixed recoding level: the
    recoding is made once and reused (it draws nothing: the numbers are unchanged)."""
    import dataclasses

    from sdceval.core.registry import METHODS
    from sdceval.methods import strategy
    calls = []
    spec = METHODS["recode"]

    def counting(dataset, **kw):
        calls.append(kw.get("level"))
        return spec.func(dataset, **kw)

    monkeypatch.setitem(METHODS._items if hasattr(METHODS, "_items") else METHODS,
                        "recode", dataclasses.replace(spec, func=counting))
    monkeypatch.setattr(strategy, "_KEY_STEPS", type(strategy._KEY_STEPS)())
    from contracts import contract_data
    ds = contract_data()
    a = sdceval.anonymize(ds, "noise+recode", gamma=0.3, level=1, seed=4)
    sdceval.anonymize(ds, "noise+recode", gamma=0.6, level=1, seed=4)
    c = sdceval.anonymize(ds, "noise+recode", gamma=0.3, level=1, seed=4)
    assert calls == [1]
    assert a.data.equals(c.data)
    sdceval.anonymize(ds, "noise+recode", gamma=0.3, level=2, seed=4)
    assert calls == [1, 2]
