"""Start-up time of the command line (issue 6 §3: `sdceval --help` and `sdceval list`
under 1 s; it took 4 s when POT and matplotlib loaded at start-up).

Run: python benchmarks/bench_cli_startup.py [repeats]
Prints the best and median wall time of each command over ``repeats`` runs (default 5),
each a fresh process, then the imports that cost most under ``python -X importtime``
for each `sdceval list` (libraries sdceval's modules import, with what they pull in, and
the largest self times).
"""
from __future__ import annotations

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


def main(repeats: int = 5) -> None:
    for args in COMMANDS:
        t = wall(args, repeats)
        best, med = min(t), statistics.median(t)
        status = "PASS" if best < TARGET else "MISS"
        print(f"sdceval {' '.join(args):14s} best {best:5.2f} s  median {med:5.2f} s "
              f"(target < {TARGET:.0f} s) {status}")
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
