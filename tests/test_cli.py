"""End-to-end runs of the command line on the bundled data, checking the files written."""
import json
import subprocess
import sys

import pandas as pd
import pytest

from sdceval.cli import main


def run(args, capsys):
    code = main(args)
    out = capsys.readouterr()
    return code, out.out, out.err


def test_list(capsys):
    for what in ("methods", "measures", "datasets"):
        code, out, _ = run(["list", what], capsys)
        assert code == 0 and out.strip()
    _, out, _ = run(["list", "methods"], capsys)
    assert "mdav" in out and "rank_swap" in out and "protection increasing" in out


def test_anonymize_then_evaluate(tmp_path, capsys):
    masked = tmp_path / "masked.csv"
    code, _, err = run(["anonymize", "--data", "census", "--method", "mdav", "--param", "k=5",
                        "--out", str(masked)], capsys)
    assert code == 0, err
    df = pd.read_csv(masked)
    assert df.shape == (1080, 13)
    code, out, err = run(["evaluate", "--data", "census", "--release", str(masked),
                          "--measures", "linkage_risk,propensity,emd",
                          "--out", str(tmp_path / "m.json")], capsys)
    assert code == 0, err
    assert "linkage_risk" in out and "propensity" in out and "emd" in out
    payload = json.loads((tmp_path / "m.json").read_text())
    assert {m["measure"] for m in payload["measurements"]} == {"linkage_risk", "propensity", "emd"}


def test_evaluate_says_which_figures_are_estimated_from_a_sample(tmp_path, capsys):
    """Large tables are linked on a sample of records: the console says so under the
    table, with the standard error and how to link every record."""
    masked = tmp_path / "masked.csv"
    assert run(["anonymize", "--data", "census", "--method", "noise", "--keep-order",
                "--out", str(masked)], capsys)[0] == 0
    code, out, err = run(["evaluate", "--data", "census", "--release", str(masked),
                          "--measures", "linkage_risk:sample=500,propensity", "-q"], capsys)
    assert code == 0, err
    note = " ".join(out.split())
    assert ("linkage_risk(sample=500): estimated from a random sample of 500 of the 1,080 "
            "records") in note
    assert "linkage_risk:sample=0 links every record" in note
    assert "propensity: estimated" not in note
    _, out, _ = run(["evaluate", "--data", "census", "--release", str(masked),
                     "--measures", "linkage_risk", "-q"], capsys)
    assert "estimated from a random sample" not in out   # 1 080 records: every one


@pytest.mark.slow  # over 1.5 s: the whole suite runs it
def test_compare_writes_ranking_results_and_plot(tmp_path, capsys):
    out_dir = tmp_path / "cmp"
    code, out, err = run(["compare", "--out", str(out_dir)], capsys)
    assert code == 0, err
    ranking = pd.read_csv(out_dir / "ranking.csv")
    assert list(ranking["method"]) == ["mdav", "noise", "rank_swap", "multiplicative_noise"]
    for col in ["method", "parameter", "value", "risk", "propensity", "emd",
                "rank_propensity", "rank_emd"]:
        assert col in ranking.columns
    # every method matched the target risk of mdav:k=5 closely
    results = json.loads((out_dir / "results.json").read_text())
    target = results["target"]
    assert ranking.loc[ranking.method == "mdav", "value"].item() == 5
    assert (abs(ranking["risk"] - target) / target < 0.02).all()
    assert all(m["steps"] for m in results["matches"])
    assert (out_dir / "risk_curves.png").stat().st_size > 10_000
    # people read display names and one answer line; the report is said last
    assert "MDAV microaggregation" in out and "rank_swap" not in out
    # the README's first command matches on the share of records re-identified (issue 28)
    assert out.startswith("At the re-identification rate of MDAV microaggregation k = 5")
    assert "linkage_risk" in results["risk_readings"]["noise"]
    assert out.rstrip().endswith(f"report: {out_dir / 'report.html'}")
    assert max(len(line) for line in out.splitlines()) <= 100
    assert (out_dir / "report.html").is_file()


def test_bad_inputs_give_clear_errors(tmp_path, capsys):
    code, _, err = run(["anonymize", "--data", "census", "--method", "mdav", "--param", "k=1",
                        "--out", str(tmp_path / "x.csv")], capsys)
    assert code == 2 and "'k'" in err and ">= 2" in err
    code, _, err = run(["anonymize", "--data", "census", "--method", "mdav", "--param",
                        "k=5000", "--out", str(tmp_path / "x.csv")], capsys)
    assert code == 2 and "1080" in err
    code, _, err = run(["anonymize", "--data", "census", "--method", "nosie",
                        "--out", str(tmp_path / "x.csv")], capsys)
    assert code == 2 and "Did you mean 'noise'" in err
    code, _, err = run(["compare", "--data", "cencus", "--out", str(tmp_path)], capsys)
    assert code == 2 and "Did you mean 'census'" in err
    code, _, err = run(["evaluate", "--data", "census", "--release", str(tmp_path / "no.csv")],
                       capsys)
    assert code == 2 and "does not exist" in err
    code, _, err = run(["compare", "--target", "50", "--methods", "mdav",
                        "--out", str(tmp_path / "c")], capsys)
    assert code == 2 and "reachable" in err


def test_output_never_overwrites_input(tmp_path, capsys):
    src = tmp_path / "in.csv"
    pd.read_csv(__import__("sdceval.core.loaders", fromlist=["_data_file"])._data_file("census.csv.gz").open("rb"),
                compression="gzip").to_csv(src, index=False)
    before = src.read_bytes()
    code, _, err = run(["anonymize", "--data", str(src), "--method", "mdav", "--out", str(src)],
                       capsys)
    assert code == 2 and "input file" in err
    assert src.read_bytes() == before


def test_console_script_entry_point():
    res = subprocess.run([sys.executable, "-m", "sdceval.cli", "list", "datasets"],
                         capture_output=True, text=True, check=True)
    assert "census" in res.stdout


# -- the command-line process (issue 6 §2-3) -------------------------------------------
import argparse  # noqa: E402
import os  # noqa: E402

import numpy as np  # noqa: E402


from sdceval import cli  # noqa: E402
from sdceval.core import threads  # noqa: E402


def _subparsers(parser):
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return action.choices
    return {}


def test_every_option_has_help_and_shows_its_default():
    parser = cli.build_parser()
    commands = {"": parser, **_subparsers(parser)}
    for name, p in commands.items():
        formatter = p._get_formatter()
        for action in p._actions:
            if isinstance(action, (argparse._HelpAction, argparse._SubParsersAction)) \
                    or action.dest == "version":
                continue
            where = f"sdceval {name} {'/'.join(action.option_strings) or action.dest}"
            assert action.help, f"{where} has no help text"
            shown = formatter._expand_help(action)
            if action.option_strings and action.nargs != 0 and not action.required:
                # an option that takes a value says what happens without it
                assert "default" in shown, f"{where}: no default shown"
    compare_help = " ".join(_subparsers(parser)["compare"].format_help().split())
    assert "(default: census)" in compare_help and "(default: mdav:k=5)" in compare_help


def test_threads_option_and_environment(monkeypatch, capsys):
    seen = []
    monkeypatch.setattr(cli, "cmd_list", lambda args: seen.append(threads.budget()) or 0)
    for argv in (["--threads", "2", "list", "datasets"], ["list", "datasets", "--threads", "3"]):
        seen.clear()
        assert cli.main(argv) == 0
        assert seen == [int(argv[1]) if argv[0] == "--threads" else int(argv[-1])]
    assert threads.budget() == threads.DEFAULT  # main leaves the process's budget alone
    monkeypatch.setenv(threads.ENV, "2")
    seen.clear()
    assert cli.main(["list", "datasets"]) == 0 and seen == [2]
    monkeypatch.setenv(threads.ENV, "many")
    code, _, err = run(["list", "datasets"], capsys)
    assert code == 2 and threads.ENV in err and "many" in err
    code, _, err = run(["--threads", "-1", "list", "datasets"], capsys)
    assert code == 2 and ">= 0" in err
    help_text = " ".join(cli.build_parser().format_help().split())
    assert "--threads N" in help_text and threads.ENV in help_text and "else 1" in help_text


@pytest.mark.slow  # over 1.5 s: the whole suite runs it
def test_process_executor_splits_the_thread_budget(monkeypatch):
    """processes x threads never exceed the budget; each worker sees its share."""
    from sdceval.experiments.executor import ProcessExecutor
    monkeypatch.setattr(threads, "_budget", None)
    threads.set_budget(1)
    try:
        ex = ProcessExecutor(4)
        assert (ex.workers, ex.threads_each) == (1, 1)
        assert "raise --threads" in ex.describe()
        threads.set_budget(4)
        ex = ProcessExecutor(2)
        assert (ex.workers, ex.threads_each) == (2, 2)
        got = ex.map(_worker_view, [{"i": i} for i in range(4)])
    finally:
        threads.set_budget(None)
    assert [g[0] for g in got] == [0, 1, 2, 3]  # task order kept
    assert {g[1] for g in got} == {2}  # each worker's budget: its share
    assert {g[2] for g in got} == {"2"}  # native pools sized before any library loads
    assert len({g[3] for g in got}) <= 2 and os.getpid() not in {g[3] for g in got}


def _worker_view(i):
    return i, threads.budget(), os.environ.get("OMP_NUM_THREADS"), os.getpid()


def test_broken_pipe_keeps_the_files(tmp_path):
    """`sdceval evaluate ... | head`: files are written first; a closed stdout ends the
    process quietly with 141 (128 + SIGPIPE), not with a traceback and not with 0."""
    masked = tmp_path / "masked.csv"
    assert main(["-q", "anonymize", "--method", "mdav", "--out", str(masked)]) == 0
    proc = subprocess.Popen([sys.executable, "-m", "sdceval.cli", "evaluate", "--release",
                             str(masked), "--measures", "linkage_risk,il1s",
                             "--out", str(tmp_path / "m.json")],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    proc.stdout.close()  # the reader is gone before anything is printed
    err = proc.stderr.read()
    assert proc.wait() == 141, err
    assert "Traceback" not in err and "BrokenPipe" not in err
    assert json.loads((tmp_path / "m.json").read_text())["measurements"]


def test_outputs_respect_the_umask(tmp_path, capsys):
    for umask, mode in ((0o022, 0o644), (0o077, 0o600), (0o002, 0o664)):
        old = os.umask(umask)
        try:
            out = tmp_path / f"m{umask:o}.csv"
            code, _, err = run(["-q", "anonymize", "--method", "mdav", "--out", str(out)],
                               capsys)
        finally:
            os.umask(old)
        assert code == 0, err
        assert out.stat().st_mode & 0o777 == mode


def test_out_never_overwrites_a_hierarchy_file_of_the_schema(tmp_path, capsys):
    hier = tmp_path / "age.csv"
    hier.write_text("".join(f"{a};[{a // 10 * 10}-{a // 10 * 10 + 9}];*\n"
                            for a in range(100)))
    (tmp_path / "schema.toml").write_text(
        'qi = ["age"]\nsensitive = "d"\n[hierarchies]\nage = { file = "age.csv", '
        'numeric = true }\n')
    rng = np.random.default_rng(0)
    pd.DataFrame({"age": rng.integers(0, 100, 200),
                  "d": rng.choice(list("abcd"), 200)}).to_csv(tmp_path / "p.csv", index=False)
    before = hier.read_bytes()
    code, _, err = run(["anonymize", "--data", str(tmp_path / "p.csv"), "--schema",
                        str(tmp_path / "schema.toml"), "--method", "mondrian",
                        "--param", "k=5", "--out", str(hier)], capsys)
    assert code == 2 and "input file" in err, err
    assert hier.read_bytes() == before
    assert not list(tmp_path.glob("*.tmp"))


def test_out_never_overwrites_the_experiment_file(tmp_path, capsys, monkeypatch):
    """An experiment file that happens to carry the name of an output is refused."""
    exp = tmp_path / "results.json"  # TOML, whatever its name
    exp.write_text('[experiment]\nname = "e"\noutput = "."\n\n[[evaluation]]\n'
                   'data = "census"\nreleases = ["mdav:k=5"]\nmeasures = ["il1s"]\n')
    monkeypatch.chdir(tmp_path)
    before = exp.read_bytes()
    code, _, err = run(["-q", "run", str(exp), "--executor", "serial"], capsys)
    assert code == 2 and "input file" in err, err
    assert exp.read_bytes() == before


def test_notes_of_the_dataset_go_to_stderr(tmp_path, capsys):
    """Roles inferred from the data (no --numeric, no schema) are said, one line each."""
    from sdceval.core.loaders import open_dataset
    rng = np.random.default_rng(0)
    data = tmp_path / "own.csv"
    pd.DataFrame({"a": rng.normal(size=50), "b": rng.normal(size=50),
                  "t": rng.choice(["u", "v"], 50)}).to_csv(data, index=False)
    notes = open_dataset(str(data)).messages
    assert notes
    out = ["anonymize", "--data", str(data), "--method", "mdav", "--out",
           str(tmp_path / "x.csv")]
    code, _, err = run(out, capsys)
    assert code == 0, err
    for note in notes:
        assert f"note: {note}\n" in err
    code, _, err = run(["-q"] + out, capsys)
    assert code == 0 and not any(note in err for note in notes)


def test_list_measures_says_what_larger_means(capsys):
    _, out, _ = run(["list", "measures"], capsys)
    lines = {line.split()[0]: line for line in out.splitlines() if not line.startswith(" ")}
    assert "larger distance = less risk" in lines["linkage_risk"]
    assert "larger = more loss" in lines["propensity"]
    assert "larger = better" not in out and "larger = worse" not in out


def test_messages_show_values_not_numpy_reprs(tmp_path, capsys):
    """anatomy's 'not ℓ-eligible' message names the most frequent sensitive value."""
    code, _, err = run(["anonymize", "--data", "adult", "--method", "anatomy", "--param",
                        "l=9", "--out", str(tmp_path / "a.csv")], capsys)
    assert code == 2 and "'Craft-repair'" in err, err
    assert "np." not in err
    import sdceval
    with pytest.raises(sdceval.SdcevalError) as e:  # the library's own message too
        sdceval.anonymize(sdceval.load_dataset("adult"), "anatomy", l=9)
    assert "np.str_" not in str(e.value) and "'Craft-repair'" in str(e.value)


def test_bundled_names_in_the_help_are_the_bundled_data_sets():
    from sdceval.core.loaders import BUNDLED
    assert tuple(BUNDLED) == cli.BUNDLED_NAMES


def test_help_and_list_do_not_load_heavy_libraries():
    """Start-up (issue 6 §3): `sdceval --help` loads none of the numeric stack, and
    `sdceval list` not the plotting, model-fitting or statistics libraries (the
    measures import them when they run)."""
    code = ("import sys, contextlib, io\n"
            "from sdceval import cli\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n"
            "    try: cli.main(['--help'])\n"
            "    except SystemExit: pass\n"
            "print(sorted(m for m in ('pandas', 'scipy', 'matplotlib', 'sklearn', 'ot')"
            " if m in sys.modules))\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n"
            "    cli.main(['list', 'methods']); cli.main(['list', 'measures'])\n"
            "print(sorted(m for m in ('matplotlib', 'sklearn', 'ot', 'distributed',"
            " 'scipy.stats') if m in sys.modules))\n")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    help_mods, list_mods = res.stdout.splitlines()
    assert help_mods == "[]", help_mods
    assert list_mods == "[]", list_mods


def test_anonymize_names_the_dropped_columns_and_keeps_what_is_asked(tmp_path, capsys):
    rng = np.random.default_rng(1)
    n = 120
    pd.DataFrame({"id": np.arange(n), "a": rng.normal(size=n), "b": rng.normal(size=n),
                  "note": rng.choice(["x", "y"], n)}).to_csv(tmp_path / "d.csv", index=False)
    base = ["anonymize", "--data", str(tmp_path / "d.csv"), "--numeric", "a,b",
            "--method", "mdav"]
    code, _, err = run(base + ["--out", str(tmp_path / "r1.csv")], capsys)
    assert code == 0, err
    assert "dropped 2 column(s) that mdav does not protect: id, note" in err
    assert list(pd.read_csv(tmp_path / "r1.csv").columns) == ["a", "b"]
    code, _, err = run(base + ["--keep", "note", "--out", str(tmp_path / "r2.csv")], capsys)
    assert code == 0, err
    assert "dropped 1 column(s) that mdav does not protect: id" in err
    assert list(pd.read_csv(tmp_path / "r2.csv").columns) == ["a", "b", "note"]
