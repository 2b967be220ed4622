"""Every kind of HTML report, made by the commands on one small mixed file (issue 20):
shared by tests/test_reports.py (content) and tests/test_report_browser.py (a real
browser).  The file carries marker values (a unique sensitive value, incomes with odd
decimals) that must never reach a report: reports hold aggregates only."""
from __future__ import annotations

import contextlib
import io
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

#: a sensitive value one record holds, and the incomes of the first records: a report
#: that printed a record would contain them
SECRET = "SECRET-DX-7781"


@dataclass
class Report:
    kind: str
    html: Path
    stdout: str
    #: the names the page's main table must show as visible text (display names)
    names: list[str]


def write_data(root: Path) -> list[str]:
    """A 400-record file with two QIs (age with a decade hierarchy, sex), a sensitive
    diagnosis, two numeric attributes; returns the data options."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "age.csv").write_text("".join(
        f"{a};[{a // 10 * 10}-{a // 10 * 10 + 9}];*\n" for a in range(100)))
    (root / "sex.csv").write_text("f;*\nm;*\n")
    (root / "schema.toml").write_text(
        'qi = ["age", "sex"]\nsensitive = "d"\nnumeric = ["income", "spend"]\n'
        '[hierarchies]\nage = { file = "age.csv", numeric = true }\n'
        'sex = { file = "sex.csv", numeric = false }\n')
    rng = np.random.default_rng(7)
    n = 400
    income = np.round(rng.lognormal(10, 0.5, n), 3) + 0.123
    frame = pd.DataFrame({"age": rng.integers(18, 90, n), "sex": rng.choice(["f", "m"], n),
                          "d": rng.choice(list("abcde"), n), "income": income,
                          "spend": np.round(income * rng.uniform(0.2, 0.9, n), 3)})
    frame.loc[17, "d"] = SECRET
    frame.to_csv(root / "p.csv", index=False)
    return ["--data", str(root / "p.csv"), "--schema", str(root / "schema.toml")]


def markers(root: Path) -> list[str]:
    """Values of single records that no report may contain."""
    frame = pd.read_csv(root / "p.csv")
    return [SECRET, *(f"{v:.3f}" for v in frame["income"].iloc[:5])]


def _run(args) -> str:
    from sdceval.cli import main
    buf, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(err):
        code = main(["-q", *args])
    assert code == 0, (args, err.getvalue(), buf.getvalue())
    return buf.getvalue()


def shared_reports(tmp_path_factory) -> dict[str, Report]:
    """`make_reports` once per test session, shared by the pytest-xdist workers (the
    first makes them under a lock in the session's common temporary folder, the others
    read its manifest)."""
    import fcntl
    import json
    base = tmp_path_factory.getbasetemp()
    common = base.parent if base.name.startswith("popen-gw") else base
    root = common / "sdceval_reports"
    manifest = root / "manifest.json"
    with open(common / "sdceval_reports.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not manifest.exists():
            made = make_reports(root)
            manifest.write_text(json.dumps({k: {"html": str(r.html), "stdout": r.stdout,
                                                "names": r.names}
                                            for k, r in made.items()}))
    return {k: Report(k, Path(v["html"]), v["stdout"], v["names"])
            for k, v in json.loads(manifest.read_text()).items()}


def make_reports(root: Path) -> dict[str, Report]:
    """Run compare, tradeoff, vectors, pbg, lattice search and run into ``root``."""
    from sdceval.core.glossary import display_name
    data = write_data(root / "data")
    out = {}
    stdout = _run(["compare", *data, "--methods", "mdav,noise,mondrian", "--repeats", "2",
                   "--utility", "query_error", "--out", str(root / "compare")])
    # mixed families on a mixed file: whole-file strategies (mdav -> mdav+recode, ...)
    out["compare"] = Report("compare", root / "compare" / "report.html", stdout,
                            [display_name(m) for m in ("mdav+recode", "noise+recode",
                                                       "mondrian+intervals")])
    stdout = _run(["tradeoff", *data, "--models", "k,l", "--grid", "k=5,20", "--grid",
                   "l=2,3", "--measures", "p_loss,u_loss", "--workers", "1", "--out",
                   str(root / "tradeoff")])
    out["tradeoff"] = Report("tradeoff", root / "tradeoff" / "report.html", stdout,
                             ["Mondrian, k-anonymity k = 5"])
    stdout = _run(["vectors", *data, "--release", "mondrian:k=5", "--release",
                   "generalization:k=5", "--out", str(root / "vectors")])
    out["vectors"] = Report("vectors", root / "vectors" / "report.html", stdout,
                            ["Mondrian k = 5", "full-domain generalization k = 5"])
    stdout = _run(["pbg", *data, "--objectives", "k,glm", "--runs", "2", "--out",
                   str(root / "pbg")])
    out["pbg"] = Report("pbg", root / "pbg" / "report.html", stdout,
                        ["archive size", "representation ratio (RR)"])
    stdout = _run(["lattice", "search", *data, "--model", "k=5", "--out",
                   str(root / "lattice" / "optimum.json")])
    out["lattice"] = Report("lattice", root / "lattice" / "optimum.report.html", stdout,
                            ["age", "sex"])
    (root / "exp.toml").write_text(f"""
[experiment]
name = "report-test"
description = "a comparison and an evaluation on a small mixed file"
output = "{(root / 'run').as_posix()}"
[[comparison]]
data = "{(root / 'data' / 'p.csv').as_posix()}"
schema = "{(root / 'data' / 'schema.toml').as_posix()}"
methods = ["mdav", "noise"]
utilities = "propensity"
risk = "linkage_risk"
[[evaluation]]
data = "{(root / 'data' / 'p.csv').as_posix()}"
schema = "{(root / 'data' / 'schema.toml').as_posix()}"
releases = ["mondrian:k=5", "mondrian:k=20"]
measures = "reidentification,query_error"
""")
    stdout = _run(["run", str(root / "exp.toml")])
    out["run"] = Report("run", root / "run" / "report.html", stdout,
                        [display_name(m) for m in ("mdav", "noise")])
    return out
