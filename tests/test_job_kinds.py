"""Job kinds as one registry (issue 18 item 6): experiment files, the runner, the
commands and ``sdceval list jobs`` read `sdceval.experiments.jobs.JOB_KINDS`, and
``sdceval compare`` is a ``[[comparison]]`` job run alone (with ``--model``)."""
import json

import numpy as np
import pandas as pd
import pytest
from conftest import cli_error, cli_run

from sdceval import SdcevalError
from sdceval.compare.ranking import compare
from sdceval.core.loaders import open_dataset
from sdceval.core.registry import Param
from sdceval.experiments import JOB_KINDS, load_spec, run_experiment
from sdceval.experiments.jobs import command_job, register_job_kind

@pytest.mark.parametrize("name", JOB_KINDS.names())
def test_every_kind_validates_minimal_options_and_declares_itself(name):
    kind = JOB_KINDS[name]
    assert kind.name == name and kind.description and kind.section
    assert all(isinstance(p, Param) and p.name in kind.options for p in kind.params)
    # the options the kind declares as its example (the contract suite runs them)
    kind.check({"data": "adult-train", **(kind.example or {})}, where="t")
    with pytest.raises(SdcevalError, match=r"t: unknown key 'dta'.*Did you mean 'data'"):
        kind.check({"dta": "census"}, where="t")


def test_sections_are_distinct_and_kinds_keep_their_order():
    assert JOB_KINDS.names()[:6] == ("comparison", "evaluation", "tradeoff", "lattice",
                                     "vectors", "pbg")
    sections = [k.section for k in JOB_KINDS.values()]
    assert len(set(sections)) == len(sections)


def test_list_jobs_names_every_kind(capsys):
    code, out, _ = cli_run(["list", "jobs"], capsys)
    assert code == 0
    for kind in JOB_KINDS.values():
        assert any(line.split()[:1] == [kind.name] and kind.description in line
                   for line in out.splitlines())


def test_a_kind_registered_later_runs_from_a_file(tmp_path):
    class Echo:
        files = []

        def __init__(self, text):
            self.text = text

        def to_dict(self):
            return {"said": self.text}

        def __str__(self):
            return self.text

    def validate(opts):
        if not isinstance(opts.get("say", ""), str):
            raise SdcevalError("'say' must be text")

    @register_job_kind("echo", description="says its option", section="echoes",
                       keys=("say",), validate=validate,
                       params=(Param("say", str, default="hi"),))
    def run_echo(job, spec, executor, say):
        return Echo(job.options.get("say", "hi"))
    try:
        p = tmp_path / "e.toml"
        p.write_text('[[echo]]\ndata = "census"\nsay = 3\n')
        with pytest.raises(SdcevalError, match=r"\[\[echo\]\] #1: 'say' must be text"):
            load_spec(p)
        p.write_text('[experiment]\nname = "t"\n[[echo]]\ndata = "census"\nsay = "ho"\n')
        res = run_experiment(p, out=tmp_path / "r")
        results = json.loads((tmp_path / "r" / "results.json").read_text())
        assert results["echoes"] == {"echo0_census": {"said": "ho"}}
        assert list(results)[-3:] == ["echoes", "paper", "run"]
        assert "[echo0_census]\nho" in res.summary()
    finally:
        JOB_KINDS.remove("echo")


def test_command_job_checks_options_as_a_file_does():
    ds = open_dataset("census")
    job = command_job("comparison", ds, "compare", methods=["mdav"], risks=None)
    assert job.options == {"data": "census", "methods": ["mdav"]}
    assert job.tag == "" and job.data_ref() == {"data": "census"}
    with pytest.raises(SdcevalError, match="Did you mean 'rank_swap'"):
        command_job("comparison", ds, "compare", methods=["rankswap"])
    with pytest.raises(SdcevalError, match="unknown key 'method'"):
        command_job("comparison", ds, "compare", method=["mdav"])


# -- sdceval compare --model ----------------------------------------------------------------
@pytest.fixture
def small_generalizable(tmp_path):
    """300 records: age (a numeric hierarchy of decades), sex, a sensitive d."""
    (tmp_path / "age.csv").write_text("".join(
        f"{a};[{a // 10 * 10}-{a // 10 * 10 + 9}];*\n" for a in range(100)))
    (tmp_path / "sex.csv").write_text("f;*\nm;*\n")
    (tmp_path / "schema.toml").write_text(
        'qi = ["age", "sex"]\nsensitive = "d"\n[hierarchies]\n'
        'age = { file = "age.csv", numeric = true }\n'
        'sex = { file = "sex.csv", numeric = false }\n')
    rng = np.random.default_rng(0)
    pd.DataFrame({"age": rng.integers(0, 100, 300), "sex": rng.choice(["f", "m"], 300),
                  "d": rng.choice(list("abcd"), 300)}).to_csv(tmp_path / "p.csv", index=False)
    return ["--data", str(tmp_path / "p.csv"), "--schema", str(tmp_path / "schema.toml")]


@pytest.mark.filterwarnings("ignore:mondrian. no split satisfies")  # k near n: one class
def test_compare_models_are_fixed_and_the_first_threshold_is_tuned(small_generalizable,
                                                                   tmp_path, capsys):
    out = tmp_path / "o"
    args = ["compare", *small_generalizable, "--methods", "mondrian", "--model", "k=5",
            "--model", "l=2", "--risk-measure", "p_loss", "--target", "mondrian:k=10",
            "--utility", "glm", "--repeats", "2", "--out", str(out)]
    code, stdout, err = cli_run(args, capsys)
    assert code == 0, err
    assert stdout.startswith("At the worst-case attribute disclosure (P_loss) of Mondrian "
                             "k = 10")
    match = json.loads((out / "results.json").read_text())["matches"][0]
    assert match["parameter"] == "k" and match["bracketed"]
    models = match["params"]["models"]
    assert len(models) == 2 and models[0] == f"k={match['value']}" and "l=2" in models[1]
    # the command and the Python API agree: one orchestration (given the same repeats:
    # the command's default is 5, the API's 1)
    ds = open_dataset(small_generalizable[1], schema_file=small_generalizable[3])
    want = compare(ds, ["mondrian"], target="mondrian:k=10", risk="p_loss",
                   utilities="glm", method_params={"mondrian": {"models": ["k=5", "l=2"]}},
                   repeats=2)
    got = pd.read_csv(out / "ranking.csv")
    assert list(got.columns) == list(want.table().columns)
    assert got.loc[0, "value"] == want.table().loc[0, "value"]
    assert {"ranking.csv", "results.json", "risk_curves.png"} <= {
        p.name for p in out.iterdir()}


def test_compare_model_needs_a_method_that_enforces_models(small_generalizable, capsys):
    msg = cli_error(["compare", "--methods", "mdav,noise", "--model", "k=5"], capsys)
    assert "--model" in msg and "mondrian" in msg
    msg = cli_error(["compare", *small_generalizable, "--methods", "mondrian", "--model",
                     "kk=5", "--risk-measure", "p_loss"], capsys)
    assert "Did you mean 'k'" in msg
