"""One home for each computation, and commands that import only what they need
(issue 27 items 13, 20, 22 and 23).

* A comparison's options are parsed once into a `ComparisonPlan` (`plan_comparison`),
  and one function (`run_comparison`) holds the sequence of steps: the Python API and
  the ``[[comparison]]`` job (hence ``sdceval compare``) both call it.
* A keyword `sdceval.compare` does not take is an `SdcevalError` naming it, with the
  closest keyword suggested (never a raw ``TypeError``).
* (No import cycle, and no module too long without a reason: tests/test_architecture.py.)
* ``sdceval list methods`` loads neither pandas nor the scientific libraries, nor the
  measures or the experiments; ``sdceval lattice search`` does not load pydantic (the
  experiment files' schema).  Checked on ``sys.modules`` in a fresh process, never by a
  timing (benchmarks/bench_cli_startup.py measures the times).
"""
import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

import sdceval
from sdceval import SdcevalError
from sdceval.compare import ranking

ROOT = Path(__file__).resolve().parents[1]

from tests.test_compare_outputs import small  # noqa: E402,F401  (300 records, 3 numeric)



OPTIONS = dict(methods=["mdav", "noise"], target="mdav:k=3", utilities="emd:n_clusters=5",
               risk="linkage_risk:aggregate=mean")


# -- item 20: parse once, one implementation ----------------------------------------
def _spy(monkeypatch, module, name):
    calls = []
    real = getattr(module, name)

    def spy(*args, **kwargs):
        calls.append((args, kwargs))
        return real(*args, **kwargs)
    monkeypatch.setattr(module, name, spy)
    return calls


def test_a_comparison_job_parses_its_options_once_and_runs_the_apis_steps(
        small, monkeypatch):
    from sdceval.experiments.comparison_job import comparison_result
    from sdceval.experiments.executor import Executor
    from sdceval.experiments.jobs import command_job
    parses = _spy(monkeypatch, ranking, "plan_comparison")
    runs = _spy(monkeypatch, ranking, "run_comparison")
    job = command_job("comparison", small, "compare", **OPTIONS)
    assert len(parses) == 1  # checked when the job is built ...
    got = comparison_result(job, Executor(), lambda m: None, seed=0, repeats=1)
    assert len(parses) == 1  # ... and not parsed again to run it
    assert len(runs) == 1
    assert isinstance(job.plan, ranking.ComparisonPlan)
    # the API: the same parse, the same steps, the same numbers
    want = sdceval.compare(small, **OPTIONS)
    assert len(parses) == 2 and len(runs) == 2
    pd.testing.assert_frame_equal(got.table(), want.table())
    assert got.to_dict() == want.to_dict()


def test_the_plan_is_typed_and_validated_once(small):
    plan = ranking.plan_comparison(**OPTIONS)
    assert plan.risk == "linkage_risk" and plan.risk_params["aggregate"] == "mean"
    assert plan.utilities == {"emd(n_clusters=5)": ("emd", {"n_clusters": "5"})}
    assert plan.methods == ("mdav", "noise")
    with pytest.raises(Exception):  # frozen
        plan.seed = 3
    with pytest.raises(SdcevalError, match="not a risk measure"):
        ranking.plan_comparison(risk="emd")
    with pytest.raises(SdcevalError, match="Did you mean 'mdav'"):
        ranking.plan_comparison(methods=["mdv"])


# -- item 13 (first part): unknown keywords ------------------------------------------
def test_an_unknown_keyword_of_compare_is_named_with_the_right_one(small):
    with pytest.raises(SdcevalError) as exc:
        sdceval.compare(small, ["mdav"], utility="emd")
    msg = str(exc.value)
    assert "'utility'" in msg and "Did you mean 'utilities'" in msg
    assert "\n" not in msg
    with pytest.raises(SdcevalError, match="'max_evaluation'.*'max_evaluations'"):
        ranking.compare(small, ["mdav"], max_evaluation=3)


# -- item 23: commands import only what they need --------------------------------------
HEAVY = ("pandas", "scipy", "sklearn", "matplotlib", "pydantic", "pyarrow", "ot",
         "sdceval.experiments", "sdceval.measures", "sdceval.compare")


def _modules_after(argv, cache=None) -> tuple[set, str]:
    """The modules a fresh process has loaded after ``sdceval ARGV``, and its output."""
    code = ("import contextlib, io, json, sys\n"
            "from sdceval.cli import main\n"
            "buf = io.StringIO()\n"
            "with contextlib.redirect_stdout(buf):\n"
            f"    rc = main({list(argv)!r})\n"
            "print(json.dumps({'rc': rc, 'out': buf.getvalue(),"
            " 'modules': sorted(sys.modules)}))\n")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=ROOT, timeout=300,
                         env={**_env(), **({"SDCEVAL_CACHE_DIR": str(cache)} if cache else {})})
    assert res.returncode == 0, res.stderr
    got = json.loads(res.stdout.splitlines()[-1])
    assert got["rc"] == 0, res.stderr
    return set(got["modules"]), got["out"]


def _env():
    import os
    env = dict(os.environ)
    env.pop("SDCEVAL_PLUGINS", None)
    return env


def _loaded(modules, names):
    return sorted(n for n in names if n in modules or any(m.startswith(n + ".")
                                                          for m in modules))


def test_list_methods_loads_no_heavy_library():
    modules, out = _modules_after(["list", "methods"])
    assert "mdav" in out and "rank_swap" in out and "protection increasing" in out
    assert _loaded(modules, HEAVY) == []


@pytest.mark.slow
def test_lattice_search_does_not_load_the_experiment_file_schema(tmp_path):
    modules, out = _modules_after(["lattice", "search", "--data", "adult-train", "--qi",
                                   "age,education,race,sex", "--model", "k=5", "-q"],
                                  cache=tmp_path)
    assert "optimum" in out
    assert _loaded(modules, ("pydantic", "sdceval.experiments.spec",
                             "sdceval.experiments.runner", "sdceval.experiments.store",
                             "matplotlib")) == []


def test_a_test_replaces_a_data_command_through_the_package(monkeypatch, capsys):
    """The seam the tests use instead of the cycle: `sdceval.cli.build_parser` reads
    each command's function from `sdceval.cli` when it builds the parser, and the
    --print-schema wrapper runs what it was given."""
    from sdceval import cli
    seen = []
    monkeypatch.setattr(cli, "cmd_anonymize", lambda args: seen.append(args.method) or 0)
    assert cli.main(["anonymize", "--data", "census", "--method", "mdav", "--out",
                     "unused.csv"]) == 0
    assert seen == ["mdav"]
    assert cli.main(["anonymize", "--data", "census", "--print-schema"]) == 0
    assert seen == ["mdav"] and "# schema of census" in capsys.readouterr().out


def test_list_methods_shows_the_plugins_the_environment_names(tmp_path):
    """``list methods`` no longer loads the catalog, which loads the plugins: it loads
    them itself when ``$SDCEVAL_PLUGINS`` names some."""
    plugin = tmp_path / "my_methods.py"
    plugin.write_text(
        "from sdceval.core.registry import Param, register_method\n"
        "@register_method('my_top_coding', family='perturbative', params=[Param('k', int,"
        " default=5, low=1, protection='increasing', description='x')],"
        " description='my own top coding')\n"
        "def my_top_coding(dataset, *, k=5, seed):\n"
        "    raise NotImplementedError\n")
    res = subprocess.run([sys.executable, "-m", "sdceval", "list", "methods"],
                         capture_output=True, text=True, cwd=tmp_path, timeout=120,
                         env={**_env(), "SDCEVAL_PLUGINS": str(plugin)})
    assert res.returncode == 0, res.stderr
    assert "my_top_coding" in res.stdout and "mdav" in res.stdout
