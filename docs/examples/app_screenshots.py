"""Screenshots of each step of the local web app (docs/app.md, README): data preview,
roles, goal, run in progress, results, release and reproduce, as
``docs/figures/app_<step>.png``, 1200 px wide.

It writes the mixed patient file of docs/examples/clinic.py into a temporary folder,
starts ``sdceval serve`` on a free port with a temporary app folder, walks the workflow
in headless Chromium (Playwright driving the system's Chromium: ``SDCEVAL_CHROMIUM`` or
``chromium`` on PATH; no browser download), and stops the server with Ctrl-C (SIGINT).

Run: python docs/examples/app_screenshots.py [OUT_FOLDER]   (default: docs/figures)
Needs: pip install -e ".[app]" playwright
"""
from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from playwright.sync_api import expect, sync_playwright

HERE = Path(__file__).resolve().parent
OUT = Path(sys.argv[1]) if len(sys.argv) > 1 else HERE.parent / "figures"
WIDTH = 1200
ROLES = {"record_no": "identifier", "zip": "qi", "age": "qi", "sex": "qi",
         "marital": "qi", "income": "numeric", "hours": "numeric",
         "diagnosis": "sensitive"}


def chromium() -> str:
    exe = os.environ.get("SDCEVAL_CHROMIUM") or next(
        (shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome")
         if shutil.which(n)), None)
    if not exe:
        sys.exit("no Chromium: apt-get install -y chromium, or set SDCEVAL_CHROMIUM")
    return shutil.which(exe) or exe


def serve(folder: Path) -> tuple[subprocess.Popen, str]:
    env = {**os.environ, "DISPLAY": "", "WAYLAND_DISPLAY": ""}
    proc = subprocess.Popen([sys.executable, "-m", "sdceval", "serve", "--folder",
                             str(folder), "--no-open"], stdout=subprocess.PIPE, text=True,
                            env=env)
    line = proc.stdout.readline()
    found = re.search(r"http://127\.0\.0\.1:\d+/\?token=\S+", line)
    if not found:
        proc.kill()
        sys.exit(f"sdceval serve printed no URL: {line}")
    return proc, found.group(0)


def shot(page, name: str) -> None:
    path = OUT / f"app_{name}.png"
    page.screenshot(path=str(path), full_page=True)
    print("wrote", path)


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="sdceval-shots-") as tmp:
        tmp = Path(tmp)
        subprocess.run([sys.executable, str(HERE / "clinic.py"), str(tmp)], check=True)
        data = tmp / "clinic.csv"
        proc, url = serve(tmp / "app")
        base = url.split("/?")[0]
        try:
            with sync_playwright() as p:
                browser = p.chromium.launch(executable_path=chromium(), headless=True,
                                            args=["--no-sandbox"])
                page = browser.new_page(viewport={"width": WIDTH, "height": 800})
                page.goto(url)
                page.set_input_files("#file", str(data))
                with page.expect_navigation():
                    page.click("button:has-text('Upload')")
                shot(page, "data")
                page.goto(base + "/roles")
                for column, role in ROLES.items():
                    page.select_option(f"select[name=role_{column}]", role)
                shot(page, "roles")
                with page.expect_navigation():
                    page.click("text=Save and review the hierarchies")
                page.select_option("#hier_age", "intervals")
                page.fill("input[name=levels_age]", "3")
                with page.expect_navigation():
                    page.click("text=Apply the hierarchies")
                path = OUT / "app_hierarchies.png"
                page.locator("form[action='/hierarchies']").screenshot(path=str(path))
                print("wrote", path)
                page.goto(base + "/goal")
                shot(page, "goal")
                with page.expect_navigation():
                    page.click("text=Save the goal and go on")
                with page.expect_navigation():
                    page.click("text=Start the comparison")
                run_id = page.url.rsplit("/", 1)[1]
                # a step under way, with its progress and estimate
                expect(page.locator("#status progress")).to_have_attribute(
                    "value", re.compile(r"0\.[1-9]"), timeout=120_000)
                time.sleep(1.5)
                shot(page, "run")
                expect(page.locator("#state")).to_have_text("done", timeout=600_000)
                page.goto(f"{base}/results/{run_id}")
                shot(page, "results")
                page.goto(f"{base}/release/{run_id}")
                with page.expect_navigation():
                    page.click("text=Make the release")
                shot(page, "release")
                page.goto(f"{base}/reproduce/{run_id}")
                shot(page, "reproduce")
                browser.close()
        finally:
            proc.send_signal(signal.SIGINT)
            proc.wait(timeout=60)


if __name__ == "__main__":
    main()
