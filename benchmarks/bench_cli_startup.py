"""Start-up time of the command line (issue 6 §3: `sdceval --help` and `sdceval list`
under 1 s; it took 4 s when POT and matplotlib loaded at start-up).

Run: python benchmarks/bench_cli_startup.py [repeats]
Prints the best and median wall time of each command over ``repeats`` runs (default 5),
each a fresh process, then the two ratios of issue 27 item 23, each measured side by
side (the processes interleaved, so that a busy machine slows both alike):

* ``sdceval list methods`` / ``python -c "import pandas"`` (target: at most 1.0; the
  command loads no pandas, `sdceval.cli.listing`), wall and CPU time;
* ``sdceval lattice search`` (adult-train, four QIs, k = 5) now / as before, the previous
  behaviour reproduced by importing the experiment runner and file reader first (what
  importing `sdceval.experiments` did: pydantic and the results store), with the
  number of modules each loads;

then the imports that cost most under ``python -X importtime`` for each `sdceval list`
(libraries sdceval's modules import, with what they pull in, and the largest self
times).
"""
from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import time

TARGET = 1.0
COMMANDS = (["--help"], ["list", "methods"], ["list", "measures"])


def launcher() -> list[str]:
    exe = shutil.which("sdceval")
    return [exe] if exe else [sys.executable, "-m", "sdceval.cli"]


def wall(args: list[str], repeats: int) -> list[float]:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        subprocess.run(launcher() + args, check=True, stdout=subprocess.DEVNULL)
        times.append(time.perf_counter() - t0)
    return times


def importtime(args: list[str]) -> list[tuple[int, int, int, str]]:
    """(self us, cumulative us, depth, module) for every import of the command."""
    res = subprocess.run([sys.executable, "-X", "importtime", "-m", "sdceval.cli", *args],
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                         check=True)
    rows = []
    for line in res.stderr.splitlines():
        if not line.startswith("import time:") or "self [us]" in line:
            continue
        self_us, cum_us, name = line[len("import time:"):].split("|")
        depth = (len(name) - len(name.lstrip())) // 2
        rows.append((int(self_us), int(cum_us), depth, name.strip()))
    return rows


LATTICE_SEARCH = ["lattice", "search", "--data", "adult-train", "--qi",
                  "age,education,race,sex", "--model", "k=5", "-q"]
#: what importing `sdceval.experiments` loaded before issue 27 item 23
PREVIOUS_IMPORTS = "import sdceval.experiments.runner, sdceval.experiments.spec"


def in_process(args: list[str], before: str = "") -> list[str]:
    """``sdceval ARGS`` in a fresh interpreter after ``before``; it prints the number
    of modules loaded on stderr's last line."""
    code = (f"{before}\nimport sys\nfrom sdceval.cli import main\nrc = main({args!r})\n"
            "print(len(sys.modules), file=sys.stderr)\nsys.exit(rc)")
    return [sys.executable, "-c", code]


def side_by_side(commands: dict[str, list[str]], repeats: int) -> dict[str, dict]:
    """Each command ``repeats`` times, interleaved: wall and CPU (user + system)
    seconds of every run, and the module count a command prints last on stderr."""
    got = {k: {"wall": [], "cpu": [], "modules": None} for k in commands}
    for _ in range(repeats):
        for name, argv in commands.items():
            before = os.times()
            t0 = time.perf_counter()
            res = subprocess.run(argv, check=True, stdout=subprocess.DEVNULL,
                                 stderr=subprocess.PIPE, text=True)
            got[name]["wall"].append(time.perf_counter() - t0)
            after = os.times()
            got[name]["cpu"].append(after.children_user - before.children_user
                                    + after.children_system - before.children_system)
            tail = res.stderr.strip().splitlines()[-1:] or [""]
            if tail[0].isdigit():
                got[name]["modules"] = int(tail[0])
    return got


def ratio(got: dict, a: str, b: str, what: str) -> str:
    med = {k: statistics.median(got[k][what]) for k in (a, b)}
    best = {k: min(got[k][what]) for k in (a, b)}
    return (f"{what:4s} median {med[a]:.3f} / {med[b]:.3f} s = {med[a] / med[b]:.2f}x, "
            f"best {best[a]:.3f} / {best[b]:.3f} s = {best[a] / best[b]:.2f}x")


def report_ratios(repeats: int) -> dict:
    """The two ratios of issue 27 item 23 (module notes)."""
    out = {}
    got = side_by_side({"list methods": launcher() + ["list", "methods"],
                        "import pandas": [sys.executable, "-c", "import pandas"]}, repeats)
    print("\nsdceval list methods / python -c 'import pandas' (target <= 1.00x):")
    for what in ("wall", "cpu"):
        print("  " + ratio(got, "list methods", "import pandas", what))
    out["list_methods"] = got
    got = side_by_side({"now": in_process(LATTICE_SEARCH),
                        "before": in_process(LATTICE_SEARCH, PREVIOUS_IMPORTS),
                        "import pandas": [sys.executable, "-c",
                                          "import sys, pandas; print(len(sys.modules), "
                                          "file=sys.stderr)"]}, repeats)
    print(f"\nsdceval {' '.join(LATTICE_SEARCH)}: now / before (and / import pandas):")
    for what in ("wall", "cpu"):
        print("  " + ratio(got, "now", "before", what))
        print("  " + ratio(got, "now", "import pandas", what))
    print(f"  modules loaded: now {got['now']['modules']}, before "
          f"{got['before']['modules']}, import pandas {got['import pandas']['modules']}")
    out["lattice_search"] = got
    return out


def main(repeats: int = 5) -> None:
    for args in COMMANDS:
        t = wall(args, repeats)
        best, med = min(t), statistics.median(t)
        status = "PASS" if best < TARGET else "MISS"
        print(f"sdceval {' '.join(args):14s} best {best:5.2f} s  median {med:5.2f} s "
              f"(target < {TARGET:.0f} s) {status}")
    got = report_ratios(repeats)
    if os.environ.get("BENCH_JSON"):
        with open(os.environ["BENCH_JSON"], "w") as f:
            json.dump(got, f, indent=1)
    for args in COMMANDS[1:]:
        report_imports(args)


def report_imports(args: list[str]) -> None:
    rows = importtime(args)
    total = sum(r[0] for r in rows) / 1e6
    print(f"\npython -X importtime -m sdceval.cli {' '.join(args)}: {total:.2f} s of imports")
    # importtime lists a module after the modules it imports, one indentation deeper:
    # a row's importer is the next row that is less indented
    direct = []
    for i, (self_us, cum_us, depth, name) in enumerate(rows):
        parent = next((r[3] for r in rows[i + 1:] if r[2] < depth), "")
        if not name.startswith("sdceval") and parent.startswith("sdceval"):
            direct.append((cum_us, name, parent))
    print("  libraries sdceval imports (cumulative, with what they import):")
    for cum_us, name, parent in sorted(direct, reverse=True)[:6]:
        print(f"    {cum_us / 1e6:6.3f} s  {name:28s} from {parent}")
    print("  largest self times:")
    for self_us, cum_us, depth, name in sorted(rows, key=lambda r: -r[0])[:5]:
        print(f"    {self_us / 1e6:6.3f} s  {name}")

if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 5)
