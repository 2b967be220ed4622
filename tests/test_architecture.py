"""The package's shape (SPEC §1): layers import only downward, no import cycles, no
module shadows a standard-library module."""
import sys
from pathlib import Path

import pytest

grimp = pytest.importorskip("grimp")
importlinter_cli = pytest.importorskip("importlinter.cli")

ROOT = Path(__file__).resolve().parents[1]


def test_layer_contract_holds():
    # the [importlinter] contract in setup.cfg: cli > experiments > compare > catalog >
    # methods | measures > lattice > privacy > core (compare | pbg over vectors over catalog); in-function imports count too
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
    graph = grimp.build_graph("sdceval")
    # a package's __init__ re-exporting its children is not a cycle of concepts; the
    # root package (the public API) imports from every layer by design
    for m in list(graph.modules):
        if m == "sdceval":
            graph.remove_module(m)
    cycles = [c for c in _cycles(graph)
              if not all(x == c[0] or x.startswith(c[0] + ".") for x in c)]
    assert not cycles, f"import cycles: {cycles}"


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
