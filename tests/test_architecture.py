"""The package's shape (SPEC §1): layers import only downward, no import cycles, no
module shadows a standard-library module, no module longer than `MAX_LINES` lines
without a reason."""
import sys
from pathlib import Path

import pytest

grimp = pytest.importorskip("grimp")
importlinter_cli = pytest.importorskip("importlinter.cli")

ROOT = Path(__file__).resolve().parents[1]


def test_layer_contract_holds():
    # the [importlinter] contract in setup.cfg: cli > experiments > compare > catalog >
    # methods | measures > lattice > privacy > core (compare | pbg over vectors | guidelines
    # over catalog); in-function imports count too
    code = importlinter_cli.lint_imports(config_filename=str(ROOT / "setup.cfg"))
    assert code == 0, "import-linter contract broken: run `lint-imports` for the details"


def _cycles(graph) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]
    sys.setrecursionlimit(max(10000, sys.getrecursionlimit()))

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph.find_modules_directly_imported_by(v):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for m in sorted(graph.modules):
        if m not in index:
            visit(m)
    return out


def test_no_import_cycles():
    """Every module, the package root and each package's ``__init__`` included (issue
    27 item 22): a package that imports its children and is imported back by one of
    them is a cycle too (``sdceval.cli.common`` reading the commands from
    ``sdceval.cli``; ``sdceval.experiments.store`` reading the version from the root)."""
    cycles = _cycles(grimp.build_graph("sdceval"))
    assert not cycles, f"import cycles: {cycles}"


#: the longest a module may be without saying why
MAX_LINES = 600
#: the phrase a longer module's docstring opens its reason with
LONG_BECAUSE = "Long because"


def test_every_module_is_short_or_says_why():
    long = []
    for path in sorted((ROOT / "sdceval").rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        lines = text.count("\n") + (not text.endswith("\n"))
        if lines <= MAX_LINES:
            continue
        head = "\n".join(text.splitlines()[:12])
        if LONG_BECAUSE not in head:
            long.append(f"{path.relative_to(ROOT)} ({lines} lines)")
    assert not long, (f"modules over {MAX_LINES} lines whose docstring does not say "
                      f"why ({LONG_BECAUSE!r} in its first lines): {long}")


def test_no_module_named_after_the_standard_library():
    names = {p.stem for p in (ROOT / "sdceval").rglob("*.py")} | \
        {p.name for p in (ROOT / "sdceval").rglob("*") if p.is_dir()}
    clash = sorted(names & set(sys.stdlib_module_names))
    assert not clash, f"modules named after stdlib modules: {clash}"


def test_cycle_finder_finds_a_cycle():
    g = grimp.ImportGraph()
    for a, b in [("p.a", "p.b"), ("p.b", "p.c"), ("p.c", "p.a"), ("p.c", "p.d")]:
        g.add_import(importer=a, imported=b)
    assert _cycles(g) == [["p.a", "p.b", "p.c"]]
