"""Every kind of report rendered in headless Chromium (issue 20 item 4): the page loads
with no console error, no resource from elsewhere and every figure decoded, and the
names of its main table are visible text.  Screenshots go to the test's folder (and to
$SDCEVAL_SCREENSHOTS when set, to look at them)."""
from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from browser import check_page, require_chromium
from reports import shared_reports

KINDS = ("compare", "tradeoff", "vectors", "pbg", "lattice", "run")


@pytest.fixture(scope="module")
def reports(tmp_path_factory):
    require_chromium()
    return shared_reports(tmp_path_factory)


@pytest.mark.browser
@pytest.mark.parametrize("kind", KINDS)
def test_report_renders_in_a_browser(reports, kind, tmp_path):
    r = reports[kind]
    shot = tmp_path / f"{kind}.png"
    expect = {"table.ranking": r.names, ".answer": [r.names[0]]
              if kind in ("compare", "run") else []}
    if kind == "compare":
        # whole-file strategies (issue 28): the column x strategy table and the attacks
        # read at every matched release
        expect["table.treatment"] = ["income", "spend", "masked", "generalized", "as is"]
        expect["table.attacks"] = [*r.names, "attribute inference rate",
                                   "sample uniques on the published categorical keys"]
    result = check_page(r.html, expect=expect, screenshot=shot, height=2000)
    assert result.ok, str(result)
    assert result.images >= (0 if kind == "lattice" else 1)
    assert shot.stat().st_size > 20_000
    keep = os.environ.get("SDCEVAL_SCREENSHOTS")
    if keep:
        Path(keep).mkdir(parents=True, exist_ok=True)
        shutil.copy(shot, Path(keep) / shot.name)
