"""Issue 28 items 3 and 7: a candidate is matched only within a tolerance of the target
(never at a knob value that gives no protection), step-valued knobs stop at the step,
and ``compare`` shows its progress per candidate and per evaluation."""

import pytest

import sdceval
from sdceval import SdcevalError
from sdceval.catalog import MEASURES, METHODS, get_measure, get_method
from sdceval.compare.bisection import RiskCurve, bisect_risk
from sdceval.core.measurement import Measurement
from sdceval.core.progress import RunProgress
from sdceval.core.registry import MeasureSpec, MethodSpec, Param
from sdceval.core.release import Release
from sdceval.methods.swapping import p_step, swap_window

from conftest import cli_error


def _jump(level):
    """A risk that jumps across 0.3 between level 4 and 5 (a coarse knob)."""
    return 0.5 if level < 5 else 0.1


def _smooth(level):
    return 1.0 / level


def _identity(level):
    """Level 1 publishes the data as they are (risk 0.217), any protection 0.1 or
    less."""
    return 0.217 if level == 1 else 0.2 / level


CURVES = {"toy_jump": _jump, "toy_smooth": _smooth, "toy_identity": _identity}


@pytest.fixture
def toys(monkeypatch):
    """Toy methods on a numeric data set whose risk ``toy_risk`` is a known function of
    their integer level (larger level = more protection, less risk)."""
    def make(ds, *, seed, level):
        x = ds.frame[ds.schema.numeric].copy()
        # a visible change so that utilities differ between levels
        x = x + (level - 1) * 0.01 * x.std()
        return Release.perturbative(ds, x, method="toy", info={"level": level})

    def risk(ds, rel):
        curve = CURVES[rel.info["method_name"]] if "method_name" in rel.info else None
        return Measurement("toy_risk", curve(rel.info["level"]), direction="lower_is_better")

    for name, curve in CURVES.items():
        def made(ds, *, level, seed, _name=name):
            rel = make(ds, seed=seed, level=level)
            rel.info["method_name"] = _name
            return rel
        low = 1 if name == "toy_identity" else 2
        monkeypatch.setitem(METHODS, name, MethodSpec(
            name, made, (Param("level", int, 3, low=low, high=50, protection="increasing",
                               grid=(low, 3, 10),
                               unprotected=1 if name == "toy_identity" else None),),
            "perturbative"))
    monkeypatch.setitem(MEASURES, "toy_risk", MeasureSpec(
        "toy_risk", risk, (), "toy", "risk", direction="lower_is_better"))


# -- A. tolerance -----------------------------------------------------------------------
def test_a_jump_across_the_target_is_nearest_reachable_not_matched(toys, small_numeric):
    res = bisect_risk(small_numeric, "toy_jump", 0.3, risk="toy_risk")
    # bracketed (levels 4 and 5 straddle 0.3) but 67 % away on either side
    assert res.bracketed and not res.matched
    assert res.tolerance_rule == "relative"
    assert res.tolerance_size == pytest.approx(0.015)
    assert res.nearest_note().startswith(f"nearest reachable: {res.risk:.4g} (level=")


def test_an_unmatched_method_is_listed_and_not_ranked(toys, small_numeric):
    comp = sdceval.compare(small_numeric, ["toy_jump", "toy_smooth"], target=0.3,
                           risk="toy_risk", utilities="il1s", curves=False)
    assert comp.ranked() == ["toy_smooth"]
    table = comp.table().set_index("method")
    assert not table.loc["toy_jump", "matched"]
    assert table["rank_il1s"].isna()["toy_jump"]
    note = next(n for n in comp.footnotes() if "toy_jump" in n)
    assert "nearest reachable:" in note and "unranked" in note
    assert "a wider tolerance" in note and "another risk measure" in note
    assert "matched" in comp.display_table().columns
    assert comp.to_dict()["matches"][0]["matched"] is False


def test_step_tolerance_when_the_knob_step_is_larger(toys, small_numeric):
    """1/level: target 0.27 lies between level 3 (0.333) and 4 (0.25); 0.25 is 7.4 %
    away, more than ±5 %, but one step of the knob there moves the risk by 0.05 or
    more: matched, and the output says the step rule applied."""
    res = bisect_risk(small_numeric, "toy_smooth", 0.27, risk="toy_risk")
    assert res.value == 4 and res.matched
    assert res.tolerance_rule == "step"
    assert res.tolerance_size == pytest.approx(0.25 - 0.2)  # the smaller side, 4 -> 5
    assert "one step of level" in res.describe_tolerance()


def test_within_five_percent_is_matched_by_the_relative_rule(toys, small_numeric):
    res = bisect_risk(small_numeric, "toy_smooth", 0.26, risk="toy_risk")
    assert res.matched and res.tolerance_rule == "relative"
    assert "±5 % of the target" in res.describe_tolerance()


# -- A. no protection is never a match --------------------------------------------------
def test_the_unprotected_value_is_never_a_match_for_a_protective_target(toys, small_numeric):
    # 0.21 is 3 % from level 1's 0.217: within ±5 %, but level 1 publishes the data as
    # they are
    res = bisect_risk(small_numeric, "toy_identity", 0.21, risk="toy_risk")
    assert res.value != 1 and not res.matched
    comp = sdceval.compare(small_numeric, ["toy_identity", "toy_smooth"], target=0.21,
                           risk="toy_risk", utilities="il1s", curves=False)
    assert "toy_identity" not in comp.ranked()


def test_the_unprotected_value_matches_the_unprotected_risk(toys, small_numeric):
    res = bisect_risk(small_numeric, "toy_identity", 0.217, risk="toy_risk")
    assert res.value == 1 and res.matched and not res.unprotected


def test_k_anonymity_k_1_declares_no_protection():
    k = get_method("generalization").tunable_for({}).param
    assert k.unprotected == 1


def test_generalization_at_k_1_is_not_a_match(adult_small):
    """The issue's case: generalization 'matched' at k = 1 with a target a little below
    the unprotected risk; the search never reports k = 1 as matched."""
    rel = get_method("generalization").apply(adult_small, {"k": 1}, seed=0)
    unprotected = get_measure("reidentification").evaluate(adult_small, rel, {}).value
    res = bisect_risk(adult_small, "generalization", 0.97 * unprotected,
                      risk="reidentification")
    assert not (res.matched and res.value == 1)
    assert res.value != 1


# -- B. step-valued knobs ---------------------------------------------------------------
def test_rank_swap_p_declares_its_step():
    p = get_method("rank_swap").param("p")
    assert p.step is p_step
    lo, hi = p.step_of(0.2, 300, {})
    assert (lo, hi) == pytest.approx((60 / 300, 61 / 300))
    assert swap_window(300, lo)[1] == 60 and swap_window(300, hi)[1] == 61
    assert p.step_of(0.001, 300, {}) == pytest.approx((0.0, 2 / 300))


def test_rank_swap_stops_at_the_step(monkeypatch, small_numeric):
    """Risk of rank swapping at p is a step function of floor(p n): bisection stops
    once two adjacent windows straddle the target, with one release per window."""
    real = get_measure("linkage_risk").evaluate
    target = 0.5 * (real(small_numeric, get_method("rank_swap").apply(
        small_numeric, {"p": 0.10}, seed=0), {}).value + real(small_numeric, get_method(
            "rank_swap").apply(small_numeric, {"p": 0.11}, seed=0), {}).value)
    released = []
    evaluate = RiskCurve._risk

    def spy(self, value):
        released.append(swap_window(300, value)[1])
        return evaluate(self, value)
    monkeypatch.setattr(RiskCurve, "_risk", spy)
    res = bisect_risk(small_numeric, "rank_swap", target, risk="linkage_risk")
    assert res.bracketed
    # before: 40 evaluations (halving flat steps until the budget ran out)
    assert res.evaluations == len(released) < 20
    assert len(set(released)) == len(released)  # one release per window
    windows = sorted({swap_window(300, s.value)[1]: s.risk for s in res.steps}.items())
    pairs = [(a, b) for a, b in zip(windows, windows[1:])
             if min(a[1], b[1]) <= target <= max(a[1], b[1])]
    assert any(b[0] - a[0] == 1 for a, b in pairs)  # the exact step found


# -- the option --------------------------------------------------------------------------
def test_tolerance_option_in_the_api(toys, small_numeric):
    comp = sdceval.compare(small_numeric, ["toy_jump", "toy_smooth"], target=0.3,
                           risk="toy_risk", utilities="il1s", curves=False, tolerance=0.7)
    assert sorted(comp.ranked()) == ["toy_jump", "toy_smooth"]
    with pytest.raises(SdcevalError, match="tolerance must be"):
        sdceval.compare(small_numeric, ["toy_smooth"], target=0.3, risk="toy_risk",
                        tolerance=1.5)


def test_tolerance_option_in_the_cli(tmp_path, capsys):
    from sdceval.cli import main
    args = ["compare", "--data", "census", "--methods", "mdav,noise", "--target", "6.0",
            "--risk-measure", "linkage_risk", "--utility", "il1s",
            "--out", str(tmp_path / "o")]
    assert main([*args, "--tolerance", "0.2"]) == 0
    err = capsys.readouterr().err  # stderr is not a terminal here: plain lines
    assert "[1/2] mdav: searching" in err and "[2/2] noise: searching" in err
    assert "  mdav: evaluation 1: k=" in err and "  noise: evaluation 1: gamma=" in err
    assert "matched within ±20 % of the target" in err
    import json
    got = json.loads((tmp_path / "o" / "results.json").read_text())
    assert {m["tolerance"] for m in got["matches"]} == {0.2}
    err = cli_error([*args, "--tolerance", "2"], capsys)
    assert "tolerance must be" in err


def test_tolerance_option_in_a_comparison_job(small_numeric):
    from sdceval.experiments.jobs import command_job
    job = command_job("comparison", small_numeric, "compare", methods=["mdav"],
                      tolerance=0.25)
    assert job.plan.search["tolerance"] == 0.25
    with pytest.raises(SdcevalError, match="tolerance must be"):
        command_job("comparison", small_numeric, "compare", tolerance="wide")


# -- C. progress -------------------------------------------------------------------------
def test_progress_lines_per_candidate_and_evaluation(toys, small_numeric):
    lines = []
    sdceval.compare(small_numeric, ["toy_smooth", "toy_jump"], target=0.3,
                    risk="toy_risk", utilities="il1s", curves=False, progress=lines.append)
    starts = [ln for ln in lines if ln.startswith("[")]
    assert [ln.split(":")[0] for ln in starts] == ["[1/2] toy_smooth", "[2/2] toy_jump"]
    evals = [ln for ln in lines if ": evaluation " in ln]
    assert any(ln.strip().startswith("toy_smooth: evaluation 1: level=") for ln in evals)
    assert any("toy_jump: evaluation" in ln for ln in evals)
    # every evaluation line after the first estimates the time left
    assert all(ln.rstrip().endswith(" left") for ln in evals)
    assert any("about" in ln for ln in evals)


def test_time_left_estimate():
    now = [0.0]
    run = RunProgress(None, 3, clock=lambda: now[0], bar=_Off())
    assert run.time_left() is None
    run.candidate("a")
    now[0] = 2.0
    run.evaluation("x")            # 2 s an evaluation, 12 a candidate assumed
    assert run.time_left() == pytest.approx(2 * (11 + 12 * 2))
    now[0] = 10.0
    run.candidate("b")             # a took 10 s
    assert run.time_left() == pytest.approx(10 + 10)
    now[0] = 14.0
    assert run.time_left() == pytest.approx(6 + 10)


def test_progress_is_quiet_under_q(tmp_path, capsys):
    from sdceval.cli import main
    assert main(["-q", "compare", "--data", "census", "--methods", "mdav,noise",
                 "--risk-measure", "linkage_risk", "--utility", "il1s",
                 "--out", str(tmp_path / "o")]) == 0
    assert "evaluation" not in capsys.readouterr().err


class _Off:
    disable = True

    def update(self, n=1):
        pass

    def close(self):
        pass
