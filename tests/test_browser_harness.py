"""The headless-Chromium harness for self-contained HTML reports (tests/browser.py) can
fail: each check is shown to catch what it is for (issue 20 item 4)."""
from __future__ import annotations

import base64
import io
import struct
import tempfile
import time
import zlib

import psutil
import pytest

import browser
from browser import PageCheck, check_page, external_resources, find_chromium, require_chromium

CSP = ("<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
       "img-src data:; style-src 'unsafe-inline'\">")
METHODS = ["Mondrian", "Microaggregation", "Noise addition"]


def tiny_png(width: int = 3, height: int = 2, rgb=(255, 0, 255)) -> bytes:
    """A valid RGB PNG, by hand."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return (struct.pack(">I", len(data)) + kind + data
                + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF))
    rows = b"".join(b"\x00" + bytes(rgb) * width for _ in range(height))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b""))


def data_uri(png: bytes) -> str:
    return "data:image/png;base64," + base64.b64encode(png).decode("ascii")


def page(body: str, head: str = CSP) -> str:
    return (f"<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">{head}"
            "<title>report</title><style>body{font-family:sans-serif;margin:20px}"
            "table.ranking td{border:1px solid #999;padding:4px}</style></head>"
            f"<body>{body}</body></html>\n")


def ranking(extra_rows: str = "") -> str:
    rows = "".join(f"<tr><td>{i + 1}</td><td>{m}</td></tr>" for i, m in enumerate(METHODS))
    return f"<table class=\"ranking\"><tr><th>#</th><th>method</th></tr>{rows}{extra_rows}</table>"


def write(tmp_path, text: str, name: str = "report.html"):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def matplotlib_figures() -> tuple[str, str]:
    """(PNG data URI, inline SVG) of a small matplotlib figure, as a report embeds them."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(3, 2), dpi=60)
    ax.plot([0, 1, 2], [2, 0, 1], color="tab:blue")
    png, svg = io.BytesIO(), io.StringIO()
    fig.savefig(png, format="png")
    fig.savefig(svg, format="svg")
    plt.close(fig)
    svg_text = svg.getvalue()
    return data_uri(png.getvalue()), svg_text[svg_text.index("<svg"):]


# --------------------------------------------------------------------------- static scan

def test_external_resources_finds_every_kind_of_reference():
    text = page(
        "<img src='https://example.com/a.png'><img src='local.png'>"
        "<img srcset='data:image/png;base64,AAAA 1x, big.png 2x'>"
        "<link rel=stylesheet href='//cdn.example.org/s.css'>"
        "<a href='http://docs.example.org/'>docs</a><a href='#top'>top</a>"
        "<div style=\"background: url('bg.png')\"></div><div title='see https://x.example/t'>"
        "<svg xmlns='http://www.w3.org/2000/svg' xmlns:xlink='http://www.w3.org/1999/xlink'>"
        "<metadata><rdf:RDF><dc:type rdf:resource='http://purl.org/dc/dcmitype/StillImage'/>"
        "</rdf:RDF></metadata><rect fill='url(#grad)'/><use xlink:href='#m1'/>"
        "<image href='sprite.svg#i'/></svg>",
        head=CSP + "<style>@import \"print.css\"; /* url(commented.png) */"
                   " h1{background:url(data:image/png;base64,AAAA)} p{background:url( \"p.png\" )}"
                   "</style><script src='&#104;ttps://evil.example/x.js'></script>")
    assert external_resources(text) == [
        "print.css", "p.png", "https://evil.example/x.js", "https://example.com/a.png",
        "local.png", "big.png", "//cdn.example.org/s.css", "http://docs.example.org/",
        "bg.png", "https://x.example/t", "sprite.svg#i"]


def test_external_resources_accepts_a_self_contained_page_with_matplotlib_figures():
    png, svg = matplotlib_figures()
    assert external_resources(page(f"<img src='{png}'>{svg}<a href='#s'>s</a>")) == []


def test_require_chromium_skips_without_ci_and_fails_with_ci(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))  # an empty folder: no browser on PATH
    monkeypatch.setenv("SDCEVAL_CHROMIUM", str(tmp_path / "no-such-chromium"))
    assert find_chromium() is None
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match="apt-get install -y chromium"):
        require_chromium()
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="apt-get install -y chromium"):
        require_chromium()
    fake = tmp_path / "my-chrome"
    fake.write_text("#!/bin/sh\n")
    fake.chmod(0o755)
    monkeypatch.setenv("SDCEVAL_CHROMIUM", str(fake))
    assert find_chromium() == require_chromium() == str(fake)


# --------------------------------------------------------------------------- in Chromium

@pytest.mark.browser
def test_a_good_report_passes_and_its_screenshot_shows_it(tmp_path):
    png, svg = matplotlib_figures()
    path = write(tmp_path, page(
        "<h1 style='background:#ff00ff;color:#fff'>sdceval report – ℓ-diversity ≥ 3</h1>"
        f"<figure><img alt='trade-off' src='{png}'></figure>{svg}{ranking()}"
        f"<div style='height:3000px'></div><img alt=below src='{data_uri(tiny_png())}'>"))
    shot = tmp_path / "shots" / "report.png"
    start = time.monotonic()
    result = check_page(path, {"table.ranking": METHODS, "h1": ["ℓ-diversity ≥ 3"]},
                        screenshot=shot, width=1000, height=700)
    elapsed = time.monotonic() - start
    assert result.ok, str(result)
    assert (result.images, result.svgs, result.screenshot) == (2, 1, shot)
    assert elapsed < 20, elapsed
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR"
    assert struct.unpack(">II", data[16:24]) == (1000, 700)
    from matplotlib.image import imread
    pixels = imread(shot)  # decodes the whole PNG; the magenta heading must be in it
    magenta = (pixels[..., 0] > 0.95) & (pixels[..., 1] < 0.05) & (pixels[..., 2] > 0.95)
    assert magenta[:200].sum() > 1000 and not magenta[400:].any()


@pytest.mark.browser
def test_broken_data_uri_images_are_reported(tmp_path):
    good = tiny_png()
    truncated = data_uri(good[:40])  # a valid signature and IHDR, no image data
    garbage = "data:image/png;base64,AAAAAAAAAAAA"
    path = write(tmp_path, page(f"<img alt=good src='{data_uri(good)}'>"
                                f"<img alt=cut src='{truncated}'><img alt=junk src='{garbage}'>"))
    result = check_page(path)
    assert not result.ok and result.images == 3
    assert len(result.broken_images) == 2, str(result)
    assert 'alt="cut"' in result.broken_images[0] and 'alt="junk"' in result.broken_images[1]
    assert all("data:image/png" in b for b in result.broken_images)
    assert result.external_resources == []


@pytest.mark.browser
@pytest.mark.parametrize("csp", [CSP, ""], ids=["with-csp", "without-csp"])
def test_an_external_image_is_reported_and_fails_fast(tmp_path, csp):
    url = "https://example.com/x.png"
    path = write(tmp_path, page(f"{ranking()}<img src='{url}'>", head=csp))
    start = time.monotonic()
    result = check_page(path, {"table.ranking": METHODS})
    assert time.monotonic() - start < 20
    assert result.external_resources == [url]
    assert not result.ok and not result.missing_texts
    assert any(url in b for b in result.broken_images), str(result)
    if csp:  # blocked by the policy: seen by the probe and in the unmodified page's log
        assert any(e.startswith("CSP violation: img-src") and url in e for e in result.errors)
        assert any(e.startswith("console (unmodified page)") and url in e for e in result.errors)


@pytest.mark.browser
def test_csp_violations_of_the_unmodified_page_are_reported(tmp_path):
    (tmp_path / "local.png").write_bytes(tiny_png())  # exists, but img-src allows data: only
    path = write(tmp_path, page(f"{ranking()}<img src='local.png'><script>var x = 1;</script>"))
    result = check_page(path, {"table.ranking": METHODS})
    assert result.external_resources == ["local.png"]
    csp = [e for e in result.errors if e.startswith("CSP violation")]
    assert any(e.startswith("CSP violation: img-src blocked file") for e in csp), str(result)
    assert any(e.startswith("CSP violation: script-src-elem blocked inline <script>")
               for e in csp), str(result)
    assert "failed to load <img>: local.png" in result.errors
    console = [e for e in result.errors if e.startswith("console (unmodified page)")]
    assert any("local.png" in e and "Content Security Policy" in e for e in console)
    assert any("inline script" in e and "Content Security Policy" in e for e in console)


SCRIPT_ERRORS = {  # a page's own script -> what the harness must report
    "console.error('boom', {n: 1})": 'console.error: boom {"n":1}',
    "throw new Error('kaboom')": "uncaught: Uncaught Error: kaboom",
    "window.addEventListener('load', function () { undefinedFunction(); })":
        "uncaught: Uncaught ReferenceError: undefinedFunction is not defined",
    "Promise.reject(new TypeError('nope'))": "unhandled rejection: TypeError: nope",
}


@pytest.mark.browser
def test_script_errors_are_reported(tmp_path):
    # no CSP here, so that the page's own scripts run (real reports have no scripts); one
    # <script> each, in one page to save a browser start; console.log is not an error
    scripts = "".join(f"<script>{js}</script>" for js in ["console.log('all is well')", *SCRIPT_ERRORS])
    path = write(tmp_path, page(f"{ranking()}{scripts}", head=""))
    result = check_page(path, {"table.ranking": METHODS})
    assert not result.ok
    probe = [e for e in result.errors if not e.startswith("console (unmodified page)")]
    assert len(probe) == len(SCRIPT_ERRORS), str(result)
    for message in SCRIPT_ERRORS.values():
        assert any(e.startswith(message) for e in probe), (message, str(result))
    assert not any("all is well" in e for e in result.errors)
    # the unmodified page's log (no levels there) adds the two uncaught exceptions and the
    # rejection ("Uncaught (in promise) TypeError: nope")
    assert sum(e.startswith("console (unmodified page): Uncaught") for e in result.errors) == 3
    assert not (result.broken_images or result.missing_texts or result.external_resources)


@pytest.mark.browser
def test_hidden_expected_texts_are_reported_missing(tmp_path):
    path = write(tmp_path, page(
        ranking("<tr style='display:none'><td>4</td><td>Secret method</td></tr>")
        + "<p class='note' style='display:none'>Hidden note</p>"
        + "<p class='faint' style='visibility:hidden'>Invisible note</p>"))
    assert "Secret method" in path.read_text() and "Hidden note" in path.read_text()
    result = check_page(path, {"table.ranking": [*METHODS, "Secret method"],
                               "p.note": ["Hidden note"], "p.faint": ["Invisible note"]})
    assert not result.ok
    assert result.missing_texts == [
        'table.ranking: "Secret method" (not in the visible text)',
        'p.note: "Hidden note" (no matching element is visible)',
        'p.faint: "Invisible note" (no matching element is visible)'], str(result)
    assert result.errors == [] and result.broken_images == []


@pytest.mark.browser
def test_missing_expected_texts_are_reported(tmp_path):
    path = write(tmp_path, page(ranking()))
    result = check_page(path, {"table.ranking": [*METHODS, "Swapping"],
                               "table.absent": ["Mondrian"], "td:bad(": ["x"]})
    assert not result.ok
    assert result.missing_texts == [
        'table.ranking: "Swapping" (not in the visible text)',
        'table.absent: "Mondrian" (no element matches)',
        'td:bad(: "x" (invalid selector)'], str(result)


@pytest.mark.browser
def test_zero_size_and_hidden_svgs_are_reported(tmp_path):
    svg = "<svg xmlns='http://www.w3.org/2000/svg' width='{}' height='40'><rect width='10' height='10'/></svg>"
    path = write(tmp_path, page(
        svg.format(80) + svg.format(0) + f"<div style='display:none'>{svg.format(80)}</div>"
        + f"<details><summary>more</summary>{svg.format(80)}</details>"))
    result = check_page(path)
    assert result.svgs == 4 and not result.ok
    assert [b.split(":")[0] for b in result.broken_images] == ["svg[1]", "svg[2]"], str(result)


@pytest.mark.browser
def test_a_hung_page_is_killed_at_the_timeout_and_nothing_is_left(tmp_path, monkeypatch):
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))  # where check_page's folder goes
    monkeypatch.setattr(browser, "TIMEOUT", 3.0)
    path = write(tmp_path, page("<p>spin</p><script>for (;;) {}</script>", head=""))
    start = time.monotonic()
    result = check_page(path)
    assert time.monotonic() - start < 12
    assert sum("did not finish within 3 s" in e for e in result.errors) == 2, str(result)
    assert list(scratch.iterdir()) == []  # the profiles are removed
    left = []
    for proc in psutil.process_iter(["cmdline", "status"]):
        try:
            if (proc.info["status"] != psutil.STATUS_ZOMBIE
                    and any(str(scratch) in a for a in proc.info["cmdline"] or [])):
                left.append(proc.pid)
        except psutil.Error:
            pass
    assert left == []


def test_page_check_ok_needs_every_list_empty():
    assert PageCheck().ok
    for name in ("errors", "broken_images", "missing_texts", "external_resources"):
        assert not PageCheck(**{name: ["x"]}).ok
    assert PageCheck(images=3, svgs=2).ok
