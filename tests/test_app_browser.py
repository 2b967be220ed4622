"""The local web app in a real browser (issue 31 item 4): Playwright (pytest-playwright's
``page`` fixture) driving Debian's Chromium through ``executable_path`` (no browser
download: `browser_type_launch_args` below overrides pytest-playwright's fixture),
headless, against ``sdceval serve`` started as a subprocess.

The new user's flow of the issue's "Done when" (upload a mixed CSV, fix roles, run the
default candidates, refresh mid-run, results, release with its private key, the
experiment file rerun with ``sdceval run`` to the same ranking); cancel; an over-limit
upload; a bad role; a cross-origin POST; a page answered during a run; two runs at once.
Every request a page makes is recorded and must go to 127.0.0.1.  Every server is
stopped with SIGINT (Ctrl-C) and must leave no child process.
"""
from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import urlsplit

import numpy as np
import pandas as pd
import pytest

from tests.browser import find_chromium, require_chromium
from tests.children import alive, descendants

pytest.importorskip("playwright.sync_api", reason="the browser tests need playwright "
                    '(pip install -e ".[test]")')
pytest.importorskip("pytest_playwright", reason="the browser tests need pytest-playwright "
                    '(pip install -e ".[test]")')
pytest.importorskip("starlette", reason='the app needs its extra: pip install -e ".[app]"')
if find_chromium() is None and not os.environ.get("CI"):
    pytest.skip("the browser tests need Chromium (apt-get install -y chromium, or set "
                "SDCEVAL_CHROMIUM); under CI they fail instead", allow_module_level=True)

from playwright.sync_api import expect

pytestmark = [pytest.mark.browser, pytest.mark.slow]

#: how long a run of the tests may take, ms (2 shared cores)
RUN_TIMEOUT_MS = 300_000


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args):
    """pytest-playwright's launch arguments with the system's Chromium: Playwright's own
    browser download is never used (``playwright install`` is not run)."""
    return {**browser_type_launch_args, "executable_path": require_chromium(),
            "headless": True, "args": ["--no-sandbox"]}


@pytest.fixture
def browser_context_args(browser_context_args):
    return {**browser_context_args, "viewport": {"width": 1200, "height": 900},
            "accept_downloads": True}


# -- the server -------------------------------------------------------------------------
#: ``sdceval`` with Ctrl-C restored: a test run started in the background by a
#: non-interactive shell ignores SIGINT and the child would inherit that
#: (`tests.children.default_sigint`; no ``preexec_fn``: Playwright's asyncio runs
#: threads in this process, and forking with threads running is unsafe)
SERVE = ("import signal, sys; signal.signal(signal.SIGINT, signal.default_int_handler); "
         "from sdceval.cli import main; sys.exit(main(sys.argv[1:]))")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """``sdceval serve`` in a subprocess: its URL with the token, base, folder."""

    def __init__(self, folder: Path, *options: str):
        self.folder = folder
        env = {**os.environ, "DISPLAY": "", "WAYLAND_DISPLAY": ""}
        self.proc = subprocess.Popen(
            [sys.executable, "-c", SERVE, "serve", "--folder", str(folder),
             "--port", str(_free_port()), "--no-open", *options],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        line = self.proc.stdout.readline()
        found = re.search(r"(http://127\.0\.0\.1:\d+)/\?token=(\S+)", line)
        if not found:
            self.proc.kill()
            pytest.fail(f"sdceval serve printed no URL: {line}{self.proc.stderr.read()}")
        self.url, self.base = found.group(0), found.group(1)

    def children(self) -> list:
        return descendants(self.proc.pid)

    def stop(self) -> None:
        """Ctrl-C; the server ends and no process it started is left."""
        started = self.children()
        self.proc.send_signal(signal.SIGINT)
        try:
            self.proc.wait(timeout=60)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()
        err = self.proc.stderr.read()
        assert self.proc.returncode == 0, err   # Ctrl-C is a clean stop
        deadline = time.monotonic() + 10
        while alive(started) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert alive(started) == [], f"left after Ctrl-C: {alive(started)}"




@pytest.fixture
def serve(tmp_path):
    """Start ``sdceval serve [options]`` (a folder under tmp_path); each is stopped
    with SIGINT at the end, which must leave no child process."""
    servers = []

    def start(*options: str) -> Server:
        servers.append(Server(tmp_path / f"app{len(servers)}", *options))
        return servers[-1]
    yield start
    for server in servers:
        server.stop()


@pytest.fixture
def requests_seen(page):
    """Every URL the page requests; at the end all must be on 127.0.0.1."""
    seen: list[str] = []
    page.on("request", lambda r: seen.append(r.url))
    yield seen
    outside = [u for u in seen if urlsplit(u).hostname != "127.0.0.1"]
    assert seen and not outside, outside


# -- data and steps -----------------------------------------------------------------------
def mixed_csv(path: Path, n: int = 300, seed: int = 3) -> Path:
    """A user's mixed file: an id, numbers, text codes with leading zeros, a date, and
    missing values in a categorical key."""
    rng = np.random.default_rng(seed)
    df = pd.DataFrame({
        "record": [f"R{i:05d}" for i in range(n)],
        "age": rng.integers(18, 90, n),
        "sex": rng.choice(["f", "m"], n),
        "region": rng.choice(["007", "012", "031", "045", "090"], n),
        "visit": (pd.Timestamp("2023-01-01")
                  + pd.to_timedelta(rng.integers(0, 365, n), unit="D")).strftime("%Y-%m-%d"),
        "income": np.round(rng.lognormal(8, 0.5, n), 2),
        "hours": np.round(rng.normal(38, 6, n), 1)})
    df.loc[rng.choice(n, 12, replace=False), "region"] = np.nan
    df.to_csv(path, index=False)
    return path


def upload(page, path: Path):
    page.set_input_files("#file", str(path))
    with page.expect_navigation() as nav:
        page.click("button:has-text('Upload')")
    return nav.value


def set_roles(page, base: str, roles: dict, missing: str = "keep"):
    page.goto(base + "/roles")
    for column, role in roles.items():
        page.select_option(f"select[name=role_{column}]", role)
    page.select_option("select[name=missing]", missing)
    with page.expect_navigation() as nav:
        page.click("text=Save the roles and go on")
    return nav.value


def save_goal(page, methods: str | None = None, repeats: int | None = None):
    if methods is not None:
        page.fill("#methods", methods)
    if repeats is not None:
        page.fill("#repeats", str(repeats))
    with page.expect_navigation():
        page.click("text=Save the goal and go on")
    assert page.url.endswith("/run"), page.inner_text("main")


def start_run(page) -> str:
    with page.expect_navigation():
        page.click("text=Start the comparison")
    found = re.search(r"/run/([0-9a-f-]+)$", page.url)
    assert found, page.inner_text("main")
    return found.group(1)


def use_bundled(page, base: str, name: str):
    page.goto(base + "/data")
    page.select_option("#bundled", name)
    with page.expect_navigation():
        page.click("text=Use it")


def start_long_census_run(page, server) -> str:
    """A run long enough to act on while it goes: the paper's four methods on the
    bundled census, 5 repeats; its id."""
    page.goto(server.url)
    use_bundled(page, server.base, "census")
    page.goto(server.base + "/goal")
    save_goal(page, "mdav\nnoise\nrank_swap\nmultiplicative_noise", repeats=5)
    return start_run(page)


def ranking_rows(page) -> list[list[str]]:
    rows = page.locator("table.ranking tr")
    return [[c.strip() for c in rows.nth(i).locator("td").all_inner_texts()]
            for i in range(1, rows.count())]


def rank_column(page) -> int:
    headers = page.locator("table.ranking th").all_inner_texts()
    return headers.index("rank")


# -- the new user's flow ------------------------------------------------------------------
def test_a_new_user_goes_from_a_mixed_csv_to_a_release_and_reruns_it(
        page, serve, requests_seen, tmp_path):
    from sdceval.cli import main
    server = serve()
    page.goto(server.url)
    upload(page, mixed_csv(tmp_path / "mixed.csv"))
    expect(page.locator("#records")).to_have_text("300")
    expect(page.locator("td.missing[data-column=region]")).to_have_text("12")
    # codes with leading zeros kept as written (read as numbers they would be 12, 31)
    expect(page.locator("#columns tr:has-text('region')")).to_contain_text("012, 031")

    page.goto(server.base + "/roles")
    expect(page.locator("#role_age")).to_have_value("numeric")   # inferred
    expect(page.locator("#role_record")).to_have_value("identifier")
    set_roles(page, server.base, {"age": "qi", "sex": "qi", "region": "qi"}, "keep")
    assert page.url.endswith("/goal")
    # the QIs' hierarchies, shown and changed through a builder
    page.goto(server.base + "/roles#hierarchies")
    expect(page.locator("section.hierarchy h3")).to_have_text(["age", "sex", "region"])
    expect(page.locator("section.hierarchy:has(h3:text-is('age'))")).to_contain_text(
        "built from the data: intervals")
    page.select_option("#hier_age", "intervals")
    page.fill("input[name=levels_age]", "2")
    with page.expect_navigation():
        page.click("text=Apply the hierarchies")
    expect(page.locator("section.hierarchy:has(h3:text-is('age')) th")).to_have_count(4)
    expect(page.locator("#hier_age")).to_have_value("intervals")
    page.goto(server.base + "/goal")
    methods = page.locator("#methods").input_value().split()
    assert len(methods) >= 6, methods            # the default candidates
    save_goal(page, repeats=3)

    run_id = start_run(page)
    expect(page.locator("#state")).to_have_text(re.compile("queued|running"))
    page.reload()                                # a refresh mid-run loses nothing
    assert page.url.endswith(f"/run/{run_id}")
    expect(page.locator("#state")).to_have_text(re.compile("queued|running|done"))
    expect(page.locator("#state")).to_have_text("done", timeout=RUN_TIMEOUT_MS)

    page.click("text=See the results")
    expect(page.locator("#answer")).to_contain_text("the most utility")
    rows = ranking_rows(page)
    assert len(rows) == len(methods)
    r = rank_column(page)
    app_ranks = [row[r] for row in rows]
    assert "None" not in str(rows) and "True" not in str(rows)
    assert page.locator("main img").count() == 1

    page.goto(f"{server.base}/release/{run_id}")
    chosen = page.locator("#candidate").input_value()
    with page.expect_navigation():
        page.click("text=Make the release")
    got = {}
    expect(page.locator("#downloads .private")).to_contain_text("PRIVATE key file")
    for what in ("release", "key"):
        with page.expect_download() as download:
            page.click(f"#downloads a[href*='/file/{what}?']")
        got[what] = tmp_path / download.value.suggested_filename
        download.value.save_as(got[what])
    assert "private" in got["key"].name.lower() and "private" not in got["release"].name
    release = pd.read_csv(got["release"])
    assert len(release) > 0 and "record" not in release.columns, chosen
    assert "PRIVATE" in got["key"].read_text().splitlines()[0].upper()

    page.goto(f"{server.base}/reproduce/{run_id}")
    with page.expect_download() as download:
        page.click(f"a[href='/reproduce/{run_id}/file/toml']")
    toml = tmp_path / "experiment.toml"
    download.value.save_as(toml)
    assert download.value.suggested_filename == "experiment.toml"

    # the experiment file, rerun with the CLI, ranks the candidates the same way
    assert main(["run", str(toml), "--out", str(tmp_path / "rerun"), "-q"]) == 0
    ours = sorted((tmp_path / "rerun").glob("*_ranking.csv"))
    app = sorted((server.folder / "runs" / run_id / "out").glob("*_ranking.csv"))
    assert len(ours) == len(app) == 1
    cli, web = pd.read_csv(ours[0]), pd.read_csv(app[0])
    ranks = [c for c in web.columns if c.startswith("rank_")]
    assert ranks and list(cli["method"]) == list(web["method"])
    pd.testing.assert_frame_equal(cli[["method", *ranks]], web[["method", *ranks]])
    # the page's ranks are those of the file, row by row ("–" for an unranked one)
    shown = ["–" if pd.isna(k) else str(int(k)) for k in cli[ranks[0]]]
    assert [v.split()[0] for v in app_ranks] == shown


# -- cancel, limits, errors, origins ------------------------------------------------------
def test_a_cancelled_run_reads_cancelled(page, serve, requests_seen):
    server = serve()
    run_id = start_long_census_run(page, server)
    expect(page.locator("#cancel")).to_be_visible()
    with page.expect_navigation():
        page.click("#cancel")
    expect(page.locator("#state")).to_have_text("cancelled")
    page.reload()
    expect(page.locator("#state")).to_have_text("cancelled")
    page.goto(server.base + "/run")
    expect(page.locator("#runs")).to_contain_text(run_id)
    expect(page.locator("#runs")).to_contain_text("cancelled")
    assert alive(server.children()) == []


def test_an_upload_over_the_limit_gets_a_message_on_the_page(page, serve, requests_seen,
                                                              tmp_path):
    server = serve("--max-upload", "1")
    page.goto(server.url)
    big = mixed_csv(tmp_path / "big.csv", n=40_000)
    assert big.stat().st_size > 1024 * 1024
    response = upload(page, big)
    assert response.status == 413
    expect(page.locator("#error-file")).to_contain_text("larger than the upload limit")
    expect(page.locator("#error-file")).to_contain_text("1 MB")
    expect(page.locator("#records")).to_have_count(0)
    assert not any((server.folder / "uploads").rglob("*.csv"))


def test_a_bad_role_gets_its_message_beside_the_field(page, serve, requests_seen,
                                                       tmp_path):
    server = serve()
    page.goto(server.url)
    upload(page, mixed_csv(tmp_path / "mixed.csv"))
    response = set_roles(page, server.base, {"sex": "weight", "age": "qi"}, "keep")
    assert response.status == 400 and page.url.endswith("/roles")
    beside = page.locator("td:has(#role_sex) #error-role_sex")
    expect(beside).to_be_visible()
    expect(beside).to_contain_text("sex")
    expect(page.locator("#role_sex")).to_have_value("weight")   # the form as sent


def test_a_cross_origin_post_is_refused(page, serve, requests_seen):
    server = serve()
    page.goto(server.url)                  # the cookie with the token is set
    for origin in ("http://evil.example", "http://localhost:1", "null"):
        r = page.request.post(server.base + "/data/bundled", form={"name": "census"},
                              headers={"Origin": origin}, max_redirects=0)
        assert r.status == 403, origin
        assert "another site" in r.text()
    ok = page.request.post(server.base + "/data/bundled", form={"name": "census"},
                           headers={"Origin": server.base}, max_redirects=0)
    assert ok.status == 303


# -- during runs --------------------------------------------------------------------------
def test_two_runs_at_once_are_not_mixed_and_pages_answer_during_them(
        page, serve, requests_seen, tmp_path):
    server = serve()
    first = start_long_census_run(page, server)
    page.goto(server.base + "/data")
    upload(page, mixed_csv(tmp_path / "mixed.csv"))
    set_roles(page, server.base, {"age": "qi", "sex": "qi", "region": "qi"}, "keep")
    save_goal(page, "rank_swap+recode\nmultiplicative_noise+recode", repeats=3)
    second = start_run(page)
    assert first != second
    # the app answers a page while both run (one generous bound: 1 s)
    page.goto(server.base + "/run")
    states = dict(zip(page.locator("#runs td:nth-child(3)").all_inner_texts(),
                      page.locator("#runs td:nth-child(6)").all_inner_texts()))
    assert states.get(first) in ("queued", "running"), states     # two at once
    assert states.get(second) in ("queued", "running"), states
    started = time.perf_counter()
    r = page.request.get(server.base + "/run")
    took = time.perf_counter() - started
    assert r.status == 200 and first in r.text()
    assert took < 1.0, f"the Run page took {took:.2f} s during two runs"
    for run_id in (first, second):
        page.goto(f"{server.base}/run/{run_id}")
        expect(page.locator("#state")).to_have_text("done", timeout=RUN_TIMEOUT_MS)
    page.goto(f"{server.base}/results/{first}")
    one = [row[0] for row in ranking_rows(page)]
    assert page.locator("h1").inner_text().endswith(first)
    page.goto(f"{server.base}/results/{second}")
    two = [row[0] for row in ranking_rows(page)]
    # each run's own candidates (display names: "MDAV microaggregation", ...)
    assert len(one) == 4 and "MDAV" in one[0] and "noise" in one[1], one
    assert "swapping" in one[2] and "recoding" not in " ".join(one), one
    assert len(two) == 2 and "swapping + recoding" in two[0], two
    assert "multiplicative noise + recoding" in two[1], two
    page.goto(f"{server.base}/compare?a={first}&b={second}")
    expect(page.locator(".answer")).to_have_count(2)
    tomls = [(server.folder / "runs" / i / "experiment.toml").read_text()
             for i in (first, second)]
    assert 'data = "census"' in tomls[0] and "mixed.csv" in tomls[1]
