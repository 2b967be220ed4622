"""Render self-contained HTML reports in headless Chromium and check them (issue 20 item 4).

No Python browser bindings: only Chromium's own command line, two processes per page:

* ``--dump-dom`` on a *copy* of the report with a probe ``<script>`` injected at the very
  start of ``<head>`` (before the report's CSP ``<meta>``, which therefore does not block
  it; the copy keeps the CSP, so it is enforced as in the original).  The probe records
  uncaught errors, failed resource loads (``error`` events, capture phase), CSP
  violations, unhandled rejections and ``console.error`` calls; after ``load`` it checks
  every ``<img>`` (``complete``, ``naturalWidth > 0``, ``decode()`` resolves), every
  top-level inline ``<svg>`` (non-zero bounding box) and the expected texts (``innerText``
  of a *visible* element matching a CSS selector), and writes a JSON verdict into a
  ``<pre>`` with a random id, which is parsed back from the dumped DOM.
* ``--screenshot`` of the *unmodified* file; its ``CONSOLE`` log lines on stderr are a
  second source of errors (CSP violations, uncaught exceptions).

The network is cut off inside Chromium (``--host-resolver-rules=MAP * ~NOTFOUND`` makes
every host, IP literals included, fail at once), so an external URL fails fast instead
of hanging; :func:`external_resources` reports such URLs statically as well.

Each Chromium runs in its own session with a fresh profile and ``HOME`` under one
temporary folder, under a hard timeout; afterwards its process group and any process
whose command line names that folder (the crashpad handlers detach into their own
sessions) are killed, and the folder is removed.
"""
from __future__ import annotations

import html as _html
import json
import os
import re
import secrets
import shutil
import signal
import struct
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path

import psutil
import pytest

TIMEOUT = 60.0  # seconds, per check_page call (both Chromium processes run in parallel)
VIRTUAL_TIME_BUDGET_MS = 5000
INSTALL_HINT = "install it with `apt-get install -y chromium` or set SDCEVAL_CHROMIUM"

CHROMIUM_FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--disable-default-apps", "--disable-extensions", "--mute-audio",
    "--host-resolver-rules=MAP * ~NOTFOUND",  # no network at all, failing fast
    "--hide-scrollbars", "--force-device-scale-factor=1",
    "--enable-logging=stderr", "--v=0",
    f"--virtual-time-budget={VIRTUAL_TIME_BUDGET_MS}",
]


# --------------------------------------------------------------------------- discovery

def find_chromium() -> str | None:
    """``$SDCEVAL_CHROMIUM`` (a path or a command name), else ``chromium``,
    ``chromium-browser`` or ``google-chrome`` on ``PATH``; ``None`` when there is none."""
    env = os.environ.get("SDCEVAL_CHROMIUM", "").strip()
    if env:
        path = Path(env).expanduser()
        if path.is_file() and os.access(path, os.X_OK):
            return str(path)
        found = shutil.which(env)
        if found:
            return found
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    return None


def require_chromium() -> str:
    """The Chromium executable; skips the test when there is none, but fails it when the
    environment variable ``CI`` is non-empty (CI must have a browser)."""
    exe = find_chromium()
    if exe is None:
        env = os.environ.get("SDCEVAL_CHROMIUM", "").strip()
        why = (f"SDCEVAL_CHROMIUM={env!r} is not an executable and no " if env else "no ")
        why += f"chromium, chromium-browser or google-chrome on PATH: {INSTALL_HINT}"
        if os.environ.get("CI"):
            pytest.fail(f"CI is set, so the browser check must run, but {why}", pytrace=False)
        pytest.skip(f"browser check needs Chromium: {why}")
    return exe


# --------------------------------------------------------------------------- static scan

_URL_ATTRS = {"src", "href", "xlink:href", "poster", "data", "action", "formaction",
              "background", "manifest", "ping", "codebase", "archive", "icon", "lowsrc",
              "dynsrc", "longdesc", "profile", "usemap", "imagesrcset"}
_SRCSET_ATTRS = {"srcset", "imagesrcset"}
_CSS_REF = re.compile(r"""url\(\s*(?:"([^"]*)"|'([^']*)'|([^)'"]*?))\s*\)"""
                      r"""|@import\s+(?:"([^"]*)"|'([^']*)')""", re.I)
_CSS_COMMENT = re.compile(r"/\*.*?\*/", re.S)
_HTTP = re.compile(r"""https?://[^\s"'<>()]*""", re.I)


def _srcset_urls(value: str) -> list[str]:
    """The URLs of a ``srcset`` (HTML's parsing rules: a URL runs to whitespace and may
    itself contain commas, as ``data:`` URLs do; a trailing comma ends the candidate)."""
    urls, i, n = [], 0, len(value)
    while i < n:
        while i < n and (value[i].isspace() or value[i] == ","):
            i += 1
        j = i
        while j < n and not value[j].isspace():
            j += 1
        url = value[i:j]
        i = j
        if url.endswith(","):
            url = url.rstrip(",")
        else:  # skip the descriptors, up to a comma outside parentheses
            depth = 0
            while i < n and not (value[i] == "," and depth == 0):
                depth += {"(": 1, ")": -1}.get(value[i], 0)
                i += 1
        if url:
            urls.append(url)
    return urls


def _is_local(target: str) -> bool:
    t = target.strip()
    return t.lower().startswith("data:") or t.startswith("#")


def _is_relative_link(value: str) -> bool:
    """A link to a file beside the page: no scheme, no host, no way up the tree."""
    v = value.strip()
    return bool(v) and ":" not in v and not v.startswith(("/", "\\")) and ".." not in v


class _ResourceScanner(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.found: list[str] = []
        self._in_style = False
        self._metadata_depth = 0  # inside an SVG <metadata> (RDF: names, not loads)

    def _add(self, target: str) -> None:
        target = target.strip()
        if target and not _is_local(target) and target not in self.found:
            self.found.append(target)

    def _css(self, text: str) -> None:
        text = _CSS_COMMENT.sub("", text)
        for m in _CSS_REF.finditer(text):
            self._add(next(g for g in m.groups() if g is not None))

    def handle_starttag(self, tag, attrs):
        self._tag(tag, attrs)
        if tag == "style":
            self._in_style = True
        elif tag == "metadata":
            self._metadata_depth += 1

    def handle_startendtag(self, tag, attrs):
        self._tag(tag, attrs)

    def handle_endtag(self, tag):
        if tag == "style":
            self._in_style = False
        elif tag == "metadata" and self._metadata_depth:
            self._metadata_depth -= 1

    def handle_data(self, data):
        if self._in_style:
            self._css(data)

    def _tag(self, tag, attrs):
        if self._metadata_depth or tag == "metadata":
            return
        for name, value in attrs:
            if value is None or name == "xmlns" or name.startswith("xmlns:"):
                continue  # namespace names (http://www.w3.org/2000/svg) are not loads
            if name in _SRCSET_ATTRS:
                for url in _srcset_urls(value):
                    self._add(url)
            elif name in _URL_ATTRS:
                if tag == "a" and name == "href" and _is_relative_link(value):
                    # a link to a result file beside the report (ranking.csv) is
                    # navigation the reader chooses, not a resource the page loads
                    pass
                else:
                    self._add(value)
            if _is_local(value):
                continue
            self._css(value)  # style="background:url(..)", fill="url(#grad)" ...
            for m in _HTTP.finditer(value):
                self._add(m.group(0))


def external_resources(html_text: str) -> list[str]:
    """Every ``src``/``href``/``srcset``/``url()``/``@import`` target (attributes,
    ``style`` attributes and ``<style>`` elements) that is neither ``data:`` nor a
    ``#fragment``, plus every ``http://``/``https://`` URL in any attribute value, in
    document order without duplicates.  Namespace declarations (``xmlns``) and SVG
    ``<metadata>`` are skipped; an ``<a href>`` link counts unless it is relative to the
    page's folder (a report links the result files beside it: ``ranking.csv``)."""
    scanner = _ResourceScanner()
    scanner.feed(html_text)
    scanner.close()
    return scanner.found


# --------------------------------------------------------------------------- the probe

_PROBE = r"""
(function () {
  "use strict";
  var ID = %(id)s, EXPECT = %(expect)s;
  var errors = [], done = null, out = null;
  function short(s) { s = String(s); return s.length > 100 ? s.slice(0, 97) + "..." : s; }
  function render() {
    if (!done) return;
    done.errors = errors.slice();
    if (!out) {
      out = document.createElement("pre");
      out.id = ID;
      out.style.display = "none";
      (document.body || document.documentElement).appendChild(out);
    }
    out.textContent = JSON.stringify(done);
  }
  function record(msg) { errors.push(msg); render(); }
  function fmt(a) {
    if (a instanceof Error) return a.name + ": " + a.message;
    if (typeof a === "string") return a;
    try { return JSON.stringify(a); } catch (e) { return String(a); }
  }
  var origError = console.error;
  console.error = function () {
    record("console.error: " + Array.prototype.map.call(arguments, fmt).join(" "));
    return origError.apply(console, arguments);
  };
  window.addEventListener("error", function (e) {
    var t = e.target;
    if (e instanceof ErrorEvent || t === window) {
      record("uncaught: " + (e.message || fmt(e.error)) +
             (e.filename ? " (" + short(e.filename) + ":" + e.lineno + ")" : ""));
    } else if (t && t.tagName) {
      var url = t.currentSrc || t.src || t.href ||
                (t.getAttribute && (t.getAttribute("href") || t.getAttribute("xlink:href"))) || "";
      record("failed to load <" + t.tagName.toLowerCase() + ">: " + short(url));
    } else {
      record("error event: " + e.type);
    }
  }, true);
  window.addEventListener("unhandledrejection", function (e) {
    record("unhandled rejection: " + fmt(e.reason));
  });
  document.addEventListener("securitypolicyviolation", function (e) {
    // blockedURI of a file: URL is just "file"; the element names what was blocked
    var t = e.target, what = "";
    if (t && t.tagName) {
      what = "<" + t.tagName.toLowerCase();
      ["src", "href", "xlink:href", "data"].forEach(function (a) {
        var v = t.getAttribute(a);
        if (v !== null) what += " " + a + "=" + JSON.stringify(short(v));
      });
      what += ">";
    }
    record("CSP violation: " + e.effectiveDirective + " blocked " +
           short(e.blockedURI || "(inline)") + (what ? " " + what : "") +
           " [" + e.originalPolicy + "]");
  });
  function norm(s) { return String(s).replace(/[\s\u00a0]+/g, " ").trim(); }
  function visible(el) {
    if (el.checkVisibility) return el.checkVisibility({checkOpacity: true, checkVisibilityCSS: true});
    return el.getClientRects().length > 0;
  }
  function checkTexts() {
    var missing = [];
    Object.keys(EXPECT).forEach(function (sel) {
      var els;
      try { els = Array.prototype.slice.call(document.querySelectorAll(sel)); }
      catch (e) { EXPECT[sel].forEach(function (t) {
        missing.push(sel + ": " + JSON.stringify(t) + " (invalid selector)"); }); return; }
      var shown = els.filter(visible).map(function (el) { return norm(el.innerText); });
      EXPECT[sel].forEach(function (t) {
        if (!els.length) missing.push(sel + ": " + JSON.stringify(t) + " (no element matches)");
        else if (!shown.length) missing.push(sel + ": " + JSON.stringify(t) + " (no matching element is visible)");
        else if (!shown.some(function (s) { return s.indexOf(norm(t)) >= 0; }))
          missing.push(sel + ": " + JSON.stringify(t) + " (not in the visible text)");
      });
    });
    return missing;
  }
  function checkSvgs(broken) {
    // top-level inline <svg>s, measured with every <details> opened (a closed one hides them)
    var closed = Array.prototype.filter.call(document.querySelectorAll("details"),
                                             function (d) { return !d.open; });
    closed.forEach(function (d) { d.open = true; });
    var svgs = Array.prototype.filter.call(document.querySelectorAll("svg"), function (s) {
      return !(s.parentElement && s.parentElement.closest("svg"));
    });
    svgs.forEach(function (s, i) {
      var r = s.getBoundingClientRect();
      if (!(r.width > 0 && r.height > 0))
        broken.push("svg[" + i + "]" + (s.id ? "#" + s.id : "") + ": size " + r.width + "x" + r.height);
    });
    closed.forEach(function (d) { d.open = false; });
    return svgs.length;
  }
  function decodeError(img) {
    // drawing forces a synchronous decode (img.decode() would race --dump-dom: it runs
    // off the virtual-time clock)
    try {
      var c = document.createElement("canvas");
      c.width = c.height = 1;
      c.getContext("2d").drawImage(img, 0, 0, 1, 1);
      return null;
    } catch (e) { return e.name + ": " + e.message; }
  }
  // everything synchronously inside "load" (registered before the page's own listeners;
  // errors they raise later re-render the verdict): --dump-dom waits for the load event
  window.addEventListener("load", function () {
    var imgs = Array.prototype.slice.call(document.images), broken = [];
    imgs.forEach(function (img, i) {
      var bad = !img.complete || !(img.naturalWidth > 0), why = bad ? null : decodeError(img);
      if (bad || why)
        broken.push("img[" + i + "] " + short(img.getAttribute("src") || img.currentSrc || "") +
                    (img.alt ? " alt=" + JSON.stringify(img.alt) : "") +
                    ": complete=" + img.complete + " naturalWidth=" + img.naturalWidth +
                    (why ? " decode: " + why : ""));
    });
    var missing = checkTexts();
    var nsvg = checkSvgs(broken);
    done = {images: imgs.length, svgs: nsvg, broken: broken, missing: missing};
    render();
  });
})();
"""

_HEAD = re.compile(r"<head(?:\s[^>]*)?>", re.I)
_HTML = re.compile(r"<html(?:\s[^>]*)?>", re.I)
_DOCTYPE = re.compile(r"<!doctype[^>]*>", re.I)
_CHARSET = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?\s*utf-?8""", re.I)
# stderr CONSOLE lines do not carry the level (all "INFO"): keep the ones that are errors
_CONSOLE = re.compile(r":CONSOLE:?\d*\]\s*\"(.*)\", source: (.*)$")
_CONSOLE_ERROR = re.compile(r"Content Security Policy|Uncaught|Failed to load|net::ERR_|"
                            r"Refused to|Not allowed to load", re.I)


def _inject(text: str, probe: str) -> str:
    tag = f"<script>{probe}</script>"
    for pattern in (_HEAD, _HTML, _DOCTYPE):
        m = pattern.search(text)
        if m:
            return text[:m.end()] + tag + text[m.end():]
    return tag + text


# --------------------------------------------------------------------------- processes

def _kill_leftovers(pgid: int, marker: str) -> None:
    """Kill the process group of one Chromium (its leader not yet reaped) and any process
    naming its private temp folder (the crashpad handlers run in sessions of their own)."""
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    stray = []
    for proc in psutil.process_iter(["cmdline"]):
        try:
            if any(marker in arg for arg in (proc.info["cmdline"] or [])):
                proc.kill()
                stray.append(proc)
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            pass
    # they are not our children: once killed they linger as zombies until init reaps them
    deadline = time.monotonic() + 5
    while stray and time.monotonic() < deadline:
        alive = []
        for proc in stray:
            try:
                if proc.status() != psutil.STATUS_ZOMBIE:
                    alive.append(proc)
            except psutil.NoSuchProcess:
                pass
        stray = alive
        if stray:
            time.sleep(0.02)


class _Chromium:
    """One headless Chromium run with a private HOME/profile under ``root``."""

    def __init__(self, exe: str, root: Path, name: str, args: list[str]):
        self.root = root / name
        self.root.mkdir()
        self.stdout = self.root / "stdout"
        self.stderr = self.root / "stderr"
        env = dict(os.environ, HOME=str(self.root), XDG_CONFIG_HOME=str(self.root / "config"),
                   XDG_CACHE_HOME=str(self.root / "cache"))
        with open(self.stdout, "wb") as out, open(self.stderr, "wb") as err:
            self.proc = subprocess.Popen(
                [exe, *CHROMIUM_FLAGS, f"--user-data-dir={self.root / 'profile'}", *args],
                stdin=subprocess.DEVNULL, stdout=out, stderr=err, env=env,
                start_new_session=True)
        self.timed_out = False

    def wait(self, deadline: float) -> None:
        """Wait for the exit (or the deadline), then clean up.  The leader is reaped only
        after its process group was killed: until then its pid, the group's id, cannot
        be reused by an unrelated process."""
        try:
            while os.waitid(os.P_PID, self.proc.pid,
                            os.WEXITED | os.WNOWAIT | os.WNOHANG) is None:
                if time.monotonic() >= deadline:
                    self.timed_out = True
                    break
                time.sleep(0.02)
        finally:
            _kill_leftovers(self.proc.pid, str(self.root))
            if self.proc.poll() is None:
                self.proc.kill()
            self.proc.wait()

    def failure(self, what: str) -> str | None:
        if self.timed_out:
            return f"{what}: Chromium did not finish within {TIMEOUT:.0f} s (killed)"
        if self.proc.returncode != 0:
            tail = "\n".join(self.stderr_text().splitlines()[-5:])
            return f"{what}: Chromium exited with code {self.proc.returncode}: {tail}"
        return None

    def stdout_text(self) -> str:
        return self.stdout.read_text("utf-8", "replace")

    def stderr_text(self) -> str:
        return self.stderr.read_text("utf-8", "replace")


def _png_size(path: Path) -> tuple[int, int] | None:
    data = path.read_bytes()[:24]
    if len(data) < 24 or data[:8] != b"\x89PNG\r\n\x1a\n" or data[12:16] != b"IHDR":
        return None
    return struct.unpack(">II", data[16:24])


# --------------------------------------------------------------------------- the check

@dataclass
class PageCheck:
    errors: list[str] = field(default_factory=list)
    images: int = 0
    broken_images: list[str] = field(default_factory=list)  # <img>s and zero-size <svg>s
    svgs: int = 0
    missing_texts: list[str] = field(default_factory=list)
    screenshot: Path | None = None
    external_resources: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not (self.errors or self.broken_images or self.missing_texts
                    or self.external_resources)

    def __str__(self) -> str:
        lines = [f"PageCheck(ok={self.ok}, images={self.images}, svgs={self.svgs}, "
                 f"screenshot={self.screenshot})"]
        for name in ("errors", "broken_images", "missing_texts", "external_resources"):
            lines += [f"  {name}: {item}" for item in getattr(self, name)]
        return "\n".join(lines)


def check_page(html: Path, expect: dict[str, list[str]] | None = None,
               screenshot: Path | None = None, width: int = 1280,
               height: int = 2400) -> PageCheck:
    """Render ``html`` in headless Chromium and check it (see the module docstring).

    ``expect`` maps a CSS selector to texts that must appear in the ``innerText`` of a
    visible element it matches.  ``screenshot``: where to write a ``width`` x ``height``
    PNG of the unmodified page (a temporary one is taken and discarded otherwise)."""
    exe = require_chromium()
    html = Path(html).resolve()
    raw = html.read_bytes()
    result = PageCheck(screenshot=None)
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        result.errors.append(f"{html.name} is not valid UTF-8: {exc}")
        text = raw.decode("utf-8", "replace")
    if not (raw.startswith(b"\xef\xbb\xbf") or _CHARSET.search(raw[:1024])):
        result.errors.append('no <meta charset="utf-8"> in the first 1024 bytes: '
                             "the browser may guess the encoding")
    result.external_resources = external_resources(text)

    token = "__verdict_" + secrets.token_hex(8)
    probe = _PROBE % {"id": json.dumps(token),
                      "expect": json.dumps(expect or {}).replace("<", "\\u003c")}
    root = Path(tempfile.mkdtemp(prefix="sdceval-browser-"))
    try:
        # the copy sits next to nothing: relative URLs in it fail like in the original
        probe_dir = root / "page"
        probe_dir.mkdir()
        probed = probe_dir / html.name
        probed.write_bytes(b"\xef\xbb\xbf" + _inject(text, probe).encode("utf-8"))
        shot = Path(screenshot).resolve() if screenshot is not None else root / "shot.png"
        shot.parent.mkdir(parents=True, exist_ok=True)
        if shot.exists():
            shot.unlink()
        size = f"--window-size={width},{height}"
        deadline = time.monotonic() + TIMEOUT
        dom_run = _Chromium(exe, root, "dom", [size, "--dump-dom", probed.as_uri()])
        shot_run = _Chromium(exe, root, "shot", [size, f"--screenshot={shot}", html.as_uri()])
        dom_run.wait(deadline)
        shot_run.wait(deadline)

        failure = dom_run.failure("probe run")
        if failure:
            result.errors.append(failure)
        else:
            dumped = dom_run.stdout_text()
            m = re.search(r'<pre id="%s"[^>]*>(.*?)</pre>' % token, dumped, re.S)
            if not m:
                result.errors.append("probe run: no verdict in the dumped DOM (the page did "
                                     f"not finish loading within {VIRTUAL_TIME_BUDGET_MS} ms "
                                     "of virtual time, or the probe script did not run)")
            else:
                verdict = json.loads(_html.unescape(m.group(1)))
                result.errors += verdict["errors"]
                result.images = verdict["images"]
                result.svgs = verdict["svgs"]
                result.broken_images = verdict["broken"]
                result.missing_texts = verdict["missing"]

        failure = shot_run.failure("screenshot run")
        if failure:
            result.errors.append(failure)
        else:
            for line in shot_run.stderr_text().splitlines():
                m = _CONSOLE.search(line)
                if m and _CONSOLE_ERROR.search(m.group(1)):
                    result.errors.append(f"console (unmodified page): {m.group(1)}")
            got = _png_size(shot) if shot.exists() else None
            if got is None:
                result.errors.append(f"screenshot run: no PNG written to {shot}")
            elif got[0] != width:
                result.errors.append(f"screenshot is {got[0]}x{got[1]}, not {width} wide")
            elif screenshot is not None:
                result.screenshot = shot
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return result

