"""Every ``sdceval`` command in the README runs as written (issue 6 §3).

The commands are read from the README's ```` ```bash ```` blocks (a line, or a part of a
line between ``&&``, that starts with ``sdceval``), in the README's order, and run
through `sdceval.cli.main` in one temporary folder, so that a command reading a file an
earlier one wrote (``evaluate --release masked.csv``) finds it.  The files the "Your own
data" commands name (``mydata.csv``, ``patients.parquet``, the README's own
``schema.toml`` and its hierarchy files) are made up to match it, and the experiment
files are copied beside them.  Long runs (a whole experiment, a trade-off grid, the EIA
comparison) are marked slow.
"""
from __future__ import annotations

import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from sdceval.cli import main
from sdceval.core.fileio import read_toml

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
#: commands that run for minutes (the full experiment, a trade-off grid on Adult), and
#: the EIA comparison (the Census one runs the same code in half the time): the fast
#: subset stays under ~20 s
# every compare is slow here: tests/test_cli.py runs `sdceval compare` end to end in the
# fast suite
# `vectors` and `pbg` are run end to end in the fast suite by tests/test_cli_vectors_pbg.py
# a `--plugin` command runs in a process of its own (plugins from the command line:
# tests/test_user_model.py)
SLOW = ("sdceval run ", "sdceval tradeoff ", "sdceval compare", "sdceval vectors ",
        "sdceval pbg ", "sdceval --plugin ")


EXPECTED_EXIT: dict[str, int] = {}


def bash_blocks(text: str) -> list[str]:
    return re.findall(r"```bash\n(.*?)```", text, flags=re.S)


#: a command whose README comment says ``exit N`` (e.g. a guideline check that says
#: FAIL: exit 1) is expected to exit with N; every other command with 0
EXIT_NOTE = re.compile(r"#.*\bexit (\d+)\b")


def expected_exit(command: str) -> int:
    return EXPECTED_EXIT.get(command, 0)


def readme_commands() -> list[str]:
    cmds = []
    for block in bash_blocks(README.read_text(encoding="utf-8")):
        for line in block.splitlines():
            for part in line.split("&&"):
                words = shlex.split(part, comments=True)
                while words and re.fullmatch(r"[A-Z_][A-Z0-9_]*=.*", words[0]):
                    words = words[1:]  # VAR=value prefixes are handled in run()
                if words and words[0] == "sdceval":
                    cmds.append(part.split("#")[0].strip())
                    note = EXIT_NOTE.search(part)
                    if note:
                        EXPECTED_EXIT[cmds[-1]] = int(note.group(1))
    return cmds


def readme_schema() -> str:
    """The README's example schema file (its ```` ```toml ```` block)."""
    blocks = [b for b in re.findall(r"```toml\n(.*?)```", README.read_text(encoding="utf-8"),
                                    flags=re.S) if re.search(r"^qi\s*=", b, flags=re.M)]
    assert blocks, "the README shows an example schema.toml (a toml block with qi = ...)"
    return blocks[0]


COMMANDS = readme_commands()


def _hierarchy_file(path: Path, numeric: bool) -> list:
    """A hierarchy in the ARX layout (one row per leaf, ';'-separated, root '*'); returns
    its leaves."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if numeric:  # ages 0..99: 5-year, 10-year, 50-year intervals, root
        leaves = list(range(100))
        rows = [f"{a};[{a // 5 * 5}-{a // 5 * 5 + 4}];[{a // 10 * 10}-{a // 10 * 10 + 9}];"
                f"[{a // 50 * 50}-{a // 50 * 50 + 49}];*" for a in leaves]
    else:  # ZIP-like codes with leading zeros, generalized digit by digit
        leaves = [f"0{d1}{d2}1{d3}" for d1 in "23" for d2 in "13" for d3 in "0123"]
        rows = [f"{z};{z[:4]}*;{z[:3]}**;{z[:2]}***;*" for z in leaves]
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return leaves


def _own_data(folder: Path) -> None:
    """The files the README's "Your own data" commands read."""
    rng = np.random.default_rng(0)
    n = 400
    pd.DataFrame({"income": rng.lognormal(10, 0.5, n).round(2),
                  "expenses": rng.lognormal(9, 0.6, n).round(2),
                  "assets": rng.lognormal(11, 1.0, n).round(2)}
                 ).to_csv(folder / "mydata.csv", index=False)

    text = readme_schema()
    (folder / "schema.toml").write_text(text, encoding="utf-8")
    spec = read_toml(folder / "schema.toml", "schema")
    spec = spec.get("schema", spec)
    leaves = {}
    for col, h in spec.get("hierarchies", {}).items():
        file, numeric = (h, False) if isinstance(h, str) else (h["file"],
                                                                bool(h.get("numeric")))
        leaves[col] = _hierarchy_file(folder / file, numeric)
    names = lambda v: [v] if isinstance(v, str) else list(v or [])  # noqa: E731
    frame = {}
    for col in names(spec.get("qi")):
        frame[col] = rng.choice(np.array(leaves.get(col, ["F", "M"]), dtype=object), n)
    for role in ("sensitive", "label"):
        for col in names(spec.get(role)):
            frame[col] = rng.choice(np.array([f"{role}_{i}" for i in range(5)],
                                             dtype=object), n)
    for col in names(spec.get("numeric")):
        frame[col] = rng.normal(50, 10, n).round(1)
    df = pd.DataFrame(frame)
    try:
        df.to_parquet(folder / "patients.parquet")
    except ImportError:  # the parquet extra is not installed: that command is skipped
        pass
    df.to_csv(folder / "patients.csv", index=False)


def python_files() -> dict[str, str]:
    """The README's ```` ```python ```` blocks that are files of a user's own (their
    first line is ``# NAME.py: ...``), by file name."""
    out = {}
    for block in re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"),
                            flags=re.S):
        m = re.match(r"# ([\w/]+\.py)", block)
        if m:
            out[m.group(1)] = block
    return out


def example_scripts() -> list[str]:
    """The README's ``python docs/examples/NAME.py`` commands (a part of a line between
    ``&&``): scripts that write the files the ``sdceval`` command after them reads."""
    return [p.strip() for block in bash_blocks(README.read_text(encoding="utf-8"))
            for line in block.splitlines() for p in line.split("&&")
            if p.strip().startswith("python docs/examples/")]


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    folder = tmp_path_factory.mktemp("readme")
    shutil.copytree(ROOT / "experiments", folder / "experiments")
    _own_data(folder)
    for command in example_scripts():   # run as written, in the folder, by this Python
        script = shlex.split(command)[1]
        subprocess.run([sys.executable, str(ROOT / script)], cwd=folder, check=True,
                       timeout=120, capture_output=True)
    for name, text in python_files().items():
        if "/" not in name:  # a plugin of the user's (not a file inside sdceval)
            (folder / name).write_text(text, encoding="utf-8")
    return folder


def _producer(path: str, before: str) -> str | None:
    """The last README command before ``before`` that writes ``path`` (``--out path``;
    a release's certificate, key or public file is written with the release)."""
    for beside in (".certificate.json", ".private-key.csv", ".method.json"):
        path = path.removesuffix(beside)
    found = None
    for c in COMMANDS[:COMMANDS.index(before)] if before in COMMANDS else COMMANDS:
        words = shlex.split(c)
        if any(a == "--out" and b == path for a, b in zip(words, words[1:])):
            found = c
    return found


def run(command: str, folder: Path, monkeypatch) -> int:
    monkeypatch.chdir(folder)
    # a command reading a file that an earlier README command writes runs after it; under
    # pytest-xdist the earlier one may have run on another worker, so run it here first
    for word in shlex.split(command):
        if not (folder / word).exists():
            first = _producer(word, command)
            if first is not None and run(first, folder, monkeypatch) != 0:
                return 2
    words = shlex.split(command)
    while words[0] != "sdceval":
        name, value = words.pop(0).split("=", 1)
        monkeypatch.setenv(name, value)
    if any(w.endswith(".parquet") for w in words) and not (folder / "patients.parquet").exists():
        pytest.skip("pyarrow (the 'parquet' extra) is not installed")
    if "--plugin" in words:  # in its own process: the plugin's registrations stay there
        return subprocess.run([sys.executable, "-m", "sdceval.cli", *words[1:]],
                              cwd=folder, timeout=600).returncode
    return main(words[1:])


def test_readme_has_the_commands():
    assert len(COMMANDS) >= 10
    for sub in ("list", "anonymize", "evaluate", "compare", "run", "hierarchy", "tradeoff"):
        assert any(c.split()[1] == sub for c in COMMANDS), sub


def slow(command: str) -> bool:
    """A slow command, or one reading what a slow command writes (it runs that first)."""
    if command.startswith(SLOW):
        return True
    producers = (_producer(w, command) for w in shlex.split(command))
    return any(p is not None and slow(p) for p in producers)


@pytest.mark.parametrize("command", [
    pytest.param(c, marks=pytest.mark.slow) if slow(c) else c for c in COMMANDS])
def test_readme_command_runs(command, workdir, monkeypatch, capsys):
    code = run(command, workdir, monkeypatch)
    out = capsys.readouterr()
    assert code == expected_exit(command), f"`{command}` exited {code}:\n{out.err}"


def test_a_readme_comment_states_a_nonzero_exit():
    """The guideline check of the unprotected file is expected to say FAIL (exit 1)."""
    fail = [c for c in COMMANDS if c.startswith("sdceval check --guideline ema-0070")
            and "--release" not in c]
    assert fail and expected_exit(fail[0]) == 1


@pytest.mark.slow  # a fresh interpreter each (the registry contract runs in the fast suite)
@pytest.mark.parametrize("name", sorted(python_files()))
def test_readme_extending_example_runs(name, tmp_path):
    """Each "Extending sdceval" example runs as written, in a fresh interpreter (its
    registrations must not reach the other tests); the command module is added to a
    parser and run."""
    code = python_files()[name]
    if name.startswith("sdceval/cli/"):
        code += ("\nimport argparse\nfrom sdceval.cli.common import _HelpFormatter\n"
                 "p = argparse.ArgumentParser(formatter_class=_HelpFormatter)\n"
                 "add_parser(p.add_subparsers(dest='command'))\n"
                 "a = p.parse_args(['roles', '--data', 'census', '--numeric', 'AFNLWGT'])\n"
                 "a.quiet = True\nraise SystemExit(a.func(a))\n")
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip()


def test_readme_commands_write_under_out():
    """Issue 22 item 17: every README command writes under ``out/`` (git-ignored), and
    no two commands of one kind write into the same folder (a second ``compare``
    overwrote the main job's ``out/compare``)."""
    outs: dict[str, list[str]] = {}
    for command in COMMANDS:
        words = shlex.split(command)
        if "--print-schema" in words:
            continue  # prints, writes nothing
        given = [b for a, b in zip(words, words[1:]) if a == "--out"]
        sub = words[1] if words[1] != "--plugin" else words[3]
        if sub in ("compare", "tradeoff", "pbg", "vectors") and not given:
            given = [f"out/{sub}"]  # their default folders
        for path in given:
            assert path.startswith("out/"), f"`{command}` writes {path} outside out/"
            outs.setdefault(sub, []).append(path)
    for sub, paths in outs.items():
        assert len(paths) == len(set(paths)), f"two `{sub}` commands write {paths}"
