"""The app's web server (issue 31): Starlette, Jinja2 templates, htmx (vendored in
``static/``, with its licence), one page per step of the workflow.

Security (docs/app.md): every request passes `Guard` first, which answers 403 to

* a Host header that is not the address the server is bound to (DNS rebinding: a page
  of another site whose name resolves to 127.0.0.1 sends its own name as Host);
* a request without the access token: ``?token=`` in the URL ``sdceval serve`` prints
  (which sets an HttpOnly, SameSite=Strict cookie and redirects to the URL without it),
  or that cookie;
* a state-changing request (any method but GET, HEAD, OPTIONS) whose Origin (else
  Referer) is not this server (cross-site request forgery);

and every response carries `APP_CSP`, the reports' content-security policy
(`sdceval.experiments.report_html.CSP`) with what the app itself needs from its own
address (its script, its styles, its figures, htmx's requests) and nothing from
anywhere else.  An `SdcevalError` is shown beside the field it concerns; any other
exception is logged with a reference id and shown as a short message with it, and the
server keeps serving (`Guard`).
"""
from __future__ import annotations

import logging
import secrets
import shutil
from http.cookies import CookieError, SimpleCookie
from pathlib import Path
from urllib.parse import parse_qsl, urlencode, urlsplit

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import (
    FileResponse,
    HTMLResponse,
    PlainTextResponse,
    RedirectResponse,
    Response,
)
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.templating import Jinja2Templates

from sdceval.app import steps
from sdceval.app.hierarchies import CHOICES as HIERARCHY_CHOICES
from sdceval.app.hierarchies import hierarchies_from_form, hierarchy_rows
from sdceval.app.workspace import Workspace, receive_upload, write_private
from sdceval.core.errors import SdcevalError
from sdceval.experiments.report_html import CSP

HERE = Path(__file__).resolve().parent
COOKIE = "sdceval_token"
SAFE_METHODS = ("GET", "HEAD", "OPTIONS")
#: the default upload limit, MB (``--max-upload``)
DEFAULT_MAX_UPLOAD_MB = 200
log = logging.getLogger("sdceval.app")


def _app_policy(base: str) -> str:
    """The reports' policy ``base`` with the sources the app's pages need added, all of
    them its own address (``'self'``): its script (htmx), its style sheet, its figures,
    htmx's requests and its forms; no page may be framed."""
    directives: dict = {}
    for part in base.split(";"):
        words = part.split()
        if words:
            directives[words[0]] = words[1:]
    for name, sources in {"script-src": ["'self'"], "style-src": ["'self'"],
                          "img-src": ["'self'"], "connect-src": ["'self'"],
                          "form-action": ["'self'"], "base-uri": ["'none'"],
                          "frame-ancestors": ["'none'"]}.items():
        have = directives.setdefault(name, [])
        have[:0] = [s for s in sources if s not in have]
    return "; ".join(" ".join([k, *v]) for k, v in directives.items())


APP_CSP = _app_policy(CSP)
SECURITY_HEADERS = [(b"content-security-policy", APP_CSP.encode()),
                    (b"x-content-type-options", b"nosniff"),
                    (b"referrer-policy", b"same-origin"),
                    (b"x-frame-options", b"DENY"),
                    (b"cache-control", b"no-store")]


def error_page(message: str, status: int, reference: str | None = None) -> HTMLResponse:
    ref = f"<p>Reference: <code>{reference}</code> (in the app's log).</p>" if reference else ""
    from html import escape
    return HTMLResponse(
        f"<!doctype html><html lang=en><head><meta charset=utf-8><title>sdceval</title>"
        f"</head><body><h1>sdceval</h1><p class=error>{escape(message)}</p>{ref}"
        f"<p><a href=\"/data\">Back to the app</a></p></body></html>", status_code=status)


class Guard:
    """ASGI middleware: the Host, token and origin checks and the security headers of
    every response (module docstring), and the last catch of an unexpected exception."""

    def __init__(self, app, token: str, hosts, log_file: Path | None = None):
        self.app, self.token = app, token
        self.hosts = None if hosts is None else {h.lower() for h in hosts}
        self.log_file = log_file

    def _host_ok(self, headers: dict) -> bool:
        return self.hosts is None or headers.get("host", "").lower() in self.hosts

    def _origin_ok(self, headers: dict) -> bool:
        host = headers.get("host", "").lower()
        origin = headers.get("origin")
        if origin is None:
            ref = headers.get("referer")
            if not ref:
                return False
            parts = urlsplit(ref)
            origin = f"{parts.scheme}://{parts.netloc}"
        return origin.lower() == f"http://{host}"

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        headers = {k.decode("latin-1").lower(): v.decode("latin-1")
                   for k, v in scope.get("headers", [])}
        query = dict(parse_qsl(scope.get("query_string", b"").decode("latin-1")))
        cookie = SimpleCookie()
        try:
            cookie.load(headers.get("cookie", ""))
        except CookieError:  # a malformed Cookie header: as if none, hence no token
            cookie = SimpleCookie()
        given = query.get("token") or (cookie[COOKIE].value if COOKIE in cookie else "")

        async def send_secured(message):
            if message["type"] == "http.response.start":
                message = dict(message)
                message["headers"] = list(message.get("headers", [])) + SECURITY_HEADERS
            await send(message)

        if not self._host_ok(headers):
            return await self._refuse(scope, receive, send_secured, (
                f"Host {headers.get('host', '')!r} is not this app's address: open the "
                "URL sdceval serve printed"))
        if not given or not secrets.compare_digest(given, self.token):
            return await self._refuse(scope, receive, send_secured, (
                "no access token: open the URL sdceval serve printed (with ?token=...)"))
        if scope["method"] not in SAFE_METHODS and not self._origin_ok(headers):
            return await self._refuse(scope, receive, send_secured, (
                "a request from another site (Origin/Referer not this app) is refused"))
        if "token" in query and scope["method"] == "GET":
            rest = urlencode([(k, v) for k, v in parse_qsl(
                scope.get("query_string", b"").decode("latin-1")) if k != "token"])
            response = RedirectResponse(scope["path"] + (f"?{rest}" if rest else ""), 303)
            response.set_cookie(COOKIE, self.token, httponly=True, samesite="strict",
                                path="/")
            return await response(scope, receive, send_secured)
        started = {"yes": False}

        async def send_tracked(message):
            if message["type"] == "http.response.start":
                started["yes"] = True
            await send_secured(message)
        try:
            await self.app(scope, receive, send_tracked)
        except Exception:
            reference = secrets.token_hex(4)
            log.exception("unexpected error, reference %s (%s %s)", reference,
                          scope["method"], scope["path"])
            if not started["yes"]:
                await error_page(
                    "Something unexpected went wrong; the app keeps running. Please "
                    "report it with this reference.", 500, reference)(
                        scope, receive, send_secured)

    @staticmethod
    async def _refuse(scope, receive, send, why: str):
        await PlainTextResponse(f"403 Forbidden: {why}\n", 403)(scope, receive, send)


class App:
    """The pages (one per step) over a `Workspace` and a run manager."""

    def __init__(self, folder: Path, max_upload_mb: float = DEFAULT_MAX_UPLOAD_MB,
                 run_manager=None):
        self.ws = Workspace(folder)
        self.limit = int(max_upload_mb * 1024 * 1024)
        self.max_upload_mb = max_upload_mb
        self._runs = run_manager
        self.templates = Jinja2Templates(directory=str(HERE / "templates"))
        self.templates.env.globals["ranking_view"] = steps.ranking_view
        from sdceval.core.glossary import display_name
        self.templates.env.globals["display_name"] = display_name

    # -- helpers ------------------------------------------------------------------
    @property
    def runs(self):
        if self._runs is None:
            from sdceval.app.runs import RunManager
            self._runs = RunManager(self.ws.folder)
        return self._runs

    def render(self, request, name: str, status: int = 200, **context):
        state = self.ws.state
        context.setdefault("errors", {})
        context.update(request=request, state=state, run_id=state.get("run"),
                       max_upload_mb=self.max_upload_mb, folder=str(self.ws.folder))
        return self.templates.TemplateResponse(request, name, context, status_code=status)

    def source(self) -> dict | None:
        return self.ws.state.get("source")

    def need_data(self):
        return RedirectResponse("/data", 303)

    # -- Data ----------------------------------------------------------------------
    async def data(self, request: Request, errors=None, status=200):
        from sdceval.core.loaders import BUNDLED
        source = self.source()
        info = None
        errors = dict(errors or {})
        if source:
            try:
                info = await run_in_threadpool(steps.preview, source)
            except SdcevalError as exc:
                errors.setdefault("file", str(exc))
        bundled = [(n, d.description) for n, d in BUNDLED.items()]
        return self.render(request, "data.html", status, preview=info, bundled=bundled,
                           errors=errors)

    async def upload(self, request: Request):
        up = await receive_upload(request, self.ws.uploads, self.limit)
        if up.too_large:
            return await self.data(request, {"file": (
                f"the file {up.filename!r} is larger than the upload limit, "
                f"{self.max_upload_mb:g} MB; it was not kept: start the app with a larger "
                "limit (sdceval serve --max-upload MB) or upload a smaller file")}, 413)
        if up.path is None:
            return await self.data(request, {"file": "choose a file to upload (CSV, "
                                             "Parquet, SPSS, Stata or SAS)"}, 400)
        source = {"kind": "upload", "path": str(up.path), "filename": up.filename}
        try:
            await run_in_threadpool(steps.preview, source)
        except SdcevalError as exc:
            shutil.rmtree(up.path.parent, ignore_errors=True)  # its own folder
            return await self.data(request, {"file": str(exc)}, 400)
        self.ws.update(source=source, roles=None, goal=None)
        return RedirectResponse("/data", 303)

    async def pick_bundled(self, request: Request):
        from sdceval.core.loaders import BUNDLED
        form = await request.form()
        name = str(form.get("name", ""))
        if name not in BUNDLED:
            return await self.data(request, {"bundled": f"no bundled data set {name!r}"},
                                   400)
        self.ws.update(source={"kind": "bundled", "name": name}, roles=None, goal=None)
        return RedirectResponse("/data", 303)

    # -- Roles ---------------------------------------------------------------------
    async def roles(self, request: Request, errors=None, form=None, status=200):
        source = self.source()
        if not source:
            return self.need_data()
        table = await run_in_threadpool(steps.role_rows, source, self.ws.state.get("roles"))
        if form is not None:  # a refused form is shown as it was sent
            for row in table["rows"]:
                row["role"] = form.get(f"role_{row['name']}", row["role"])
                row["kind"] = form.get(f"kind_{row['name']}", row["kind"])
                row["household_key"] = bool(form.get(f"hhkey_{row['name']}"))
            table["missing"] = form.get("missing", table["missing"])
        hierarchies, problem = [], ""
        if self.ws.state.get("roles"):
            try:
                ds = await run_in_threadpool(self._dataset)
                hierarchies = await run_in_threadpool(
                    hierarchy_rows, ds, self.ws.state["roles"].get("hierarchy_choices"))
            except SdcevalError as exc:
                problem = str(exc)
        if form is not None:  # a refused hierarchy form is shown as it was sent
            for h in hierarchies:
                h["builder"] = form.get(f"hier_{h['name']}", h["builder"])
                h["levels"] = form.get(f"levels_{h['name']}", h["levels"])
        return self.render(request, "roles.html", status, table=table, errors=errors or {},
                           hierarchies=hierarchies, choices=HIERARCHY_CHOICES,
                           hierarchy_problem=problem)

    async def save_roles(self, request: Request):
        source = self.source()
        if not source:
            return self.need_data()
        # three fields a column: a wide file passes Starlette's default of 1000
        form = {k: str(v) for k, v in (await request.form(max_fields=1_000_000)).items()}
        columns = [r["name"] for r in
                   (await run_in_threadpool(steps.role_rows, source, None))["rows"]]
        try:
            saved = steps.roles_from_form(form, columns)
            # the hierarchies chosen before stay chosen for the columns still QIs
            saved["hierarchy_choices"] = dict(
                (self.ws.state.get("roles") or {}).get("hierarchy_choices") or {})
            await run_in_threadpool(steps.apply_roles, source, saved,
                                    self.ws.folder / "schema.toml")
        except steps.FieldErrors as exc:
            return await self.roles(request, exc.errors, form, 400)
        self.ws.update(roles=saved, goal=None)
        if form.get("next") == "hierarchies":
            return RedirectResponse("/roles#hierarchies", 303)
        return RedirectResponse("/goal", 303)

    async def save_hierarchies(self, request: Request):
        source, saved = self.source(), self.ws.state.get("roles")
        if not source:
            return self.need_data()
        if not saved:
            return await self.roles(request, {"hierarchies": "save the roles first: the "
                                              "hierarchies are those of the QIs"}, None, 400)
        form = {k: str(v) for k, v in (await request.form(max_fields=1_000_000)).items()}
        new = {**saved, "hierarchies": {}}
        try:
            new["hierarchy_choices"] = hierarchies_from_form(form, saved["roles"].get("qi", []))
            await run_in_threadpool(steps.apply_roles, source, new,
                                    self.ws.folder / "schema.toml")
        except steps.FieldErrors as exc:
            # the schema file on disk is rewritten from the roles still in force
            await run_in_threadpool(steps.apply_roles, source, dict(saved),
                                    self.ws.folder / "schema.toml")
            return await self.roles(request, exc.errors, form, 400)
        self.ws.update(roles=new, goal=None)
        return RedirectResponse("/roles#hierarchies", 303)

    # -- Goal ----------------------------------------------------------------------
    def _dataset(self):
        from sdceval.core.loaders import open_dataset
        source = self.source()
        if self.ws.state.get("roles"):
            return open_dataset(steps.data_argument(source),
                                schema_file=str(self.ws.folder / "schema.toml"))
        return open_dataset(steps.data_argument(source))

    async def goal(self, request: Request, errors=None, form=None, status=200):
        if not self.source():
            return self.need_data()
        errors = dict(errors or {})
        try:
            ds = await run_in_threadpool(self._dataset)
            defaults = await run_in_threadpool(steps.goal_defaults, ds)
        except SdcevalError as exc:
            return await self.roles(request, {"roles": str(exc)}, None, 400)
        if defaults.get("problem"):
            errors.setdefault("methods", defaults["problem"])
        saved = self.ws.state.get("goal") or {}
        values = form or {
            "methods": "\n".join(saved.get("methods") or defaults["methods"]),
            "target_kind": saved.get("target_kind", "default"),
            "target_number": saved.get("target_number", ""),
            "target_reference": saved.get("target_reference", ""),
            "guideline": saved.get("guideline", ""),
            "utilities": saved.get("utilities", ""), "intruder": saved.get("intruder", ""),
            "repeats": str(saved.get("repeats", 1))}
        return self.render(request, "goal.html", status, defaults=defaults, values=values,
                           errors=errors)

    async def save_goal(self, request: Request):
        if not self.source():
            return self.need_data()
        form = {k: str(v) for k, v in (await request.form()).items()}
        try:
            ds = await run_in_threadpool(self._dataset)
            goal = await run_in_threadpool(steps.goal_config, form, ds)
        except steps.FieldErrors as exc:
            return await self.goal(request, exc.errors, form, 400)
        self.ws.update(goal={**goal, **{k: form.get(k, "") for k in (
            "target_kind", "target_number", "target_reference")}})
        return RedirectResponse("/run", 303)

    # -- Run -----------------------------------------------------------------------
    def config(self) -> dict:
        """The run's configuration: the ``[[comparison]]`` table of an experiment file."""
        source = self.source()
        goal = {k: v for k, v in (self.ws.state.get("goal") or {}).items()
                if k in ("methods", "target", "guideline", "utilities", "intruder",
                         "repeats")}
        config = {"title": f"{steps.source_label(source)}", "data": steps.data_argument(source),
                  **goal}
        if self.ws.state.get("roles"):
            config["schema"] = str(self.ws.snapshot(self.ws.folder / "schema.toml"))
        return config

    async def run_list(self, request: Request, errors=None, status=200):
        runs = await run_in_threadpool(self.runs.runs)
        return self.render(request, "run.html", status, runs=runs, errors=errors or {},
                           ready=bool(self.source()))

    async def run_start(self, request: Request):
        if not self.source():
            return self.need_data()
        if not self.ws.state.get("goal"):
            return await self.run_list(request, {"start": (
                "save the goal first (step 3): the target and the candidates")}, 400)
        try:
            run_id = await run_in_threadpool(self.runs.start, self.config())
        except SdcevalError as exc:
            return await self.run_list(request, {"start": str(exc)}, 400)
        self.ws.update(run=run_id)
        return RedirectResponse(f"/run/{run_id}", 303)

    async def run_page(self, request: Request):
        run_id = request.path_params["run_id"]
        status = await run_in_threadpool(self.runs.status, run_id)
        self.ws.update(run=run_id)
        return self.render(request, "run_page.html", status=200, run=status)

    async def run_status(self, request: Request):
        status = await run_in_threadpool(self.runs.status, request.path_params["run_id"])
        return self.render(request, "run_status.html", run=status)

    async def run_cancel(self, request: Request):
        run_id = request.path_params["run_id"]
        await run_in_threadpool(self.runs.cancel, run_id)
        return RedirectResponse(f"/run/{run_id}", 303)

    async def run_resume(self, request: Request):
        run_id = request.path_params["run_id"]
        await run_in_threadpool(self.runs.resume, run_id)
        return RedirectResponse(f"/run/{run_id}", 303)

    async def compare(self, request: Request):
        ids = [request.query_params.get("a", ""), request.query_params.get("b", "")]
        sides = []
        for run_id in ids:
            try:
                sides.append({"id": run_id,
                              "results": await run_in_threadpool(self.runs.results, run_id)})
            except SdcevalError as exc:
                sides.append({"id": run_id, "error": str(exc)})
        runs = await run_in_threadpool(self.runs.runs)
        return self.render(request, "compare.html", sides=sides, runs=runs)

    # -- Results, Release, Reproduce -----------------------------------------------
    async def results(self, request: Request):
        run_id = request.path_params["run_id"]
        try:
            res = await run_in_threadpool(self.runs.results, run_id)
        except SdcevalError as exc:
            return self.render(request, "results.html", 409, res=None,
                               errors={"run": str(exc)}, shown=run_id)
        self.ws.update(run=run_id)
        return self.render(request, "results.html", res=res, shown=run_id)

    async def figure(self, request: Request):
        res = await run_in_threadpool(self.runs.results, request.path_params["run_id"])
        n = request.path_params["n"]
        figures = list(res.get("figures") or [])
        if not 0 <= n < len(figures):
            return PlainTextResponse("no such figure", 404)
        return FileResponse(figures[n], media_type="image/png")

    async def release(self, request: Request):
        run_id = request.path_params["run_id"]
        errors, made, candidates = {}, {}, []
        try:
            res = await run_in_threadpool(self.runs.results, run_id)
            candidates = res.get("ranked") or []
        except SdcevalError as exc:
            errors["run"] = str(exc)
        chosen = candidates[0] if candidates else None   # the top-ranked
        if request.method == "POST":
            chosen = str((await request.form()).get("candidate", ""))
            try:
                made = await run_in_threadpool(self.runs.release, run_id, chosen)
            except SdcevalError as exc:
                errors["candidate"] = str(exc)
        return self.render(request, "release.html",
                           400 if errors and request.method == "POST" else 200,
                           shown=run_id, candidates=candidates, chosen=chosen,
                           made=made, errors=errors)

    async def release_file(self, request: Request):
        run_id, what = request.path_params["run_id"], request.path_params["what"]
        candidate = request.query_params.get("candidate", "")
        paths = await run_in_threadpool(self.runs.release, run_id, candidate)
        if what not in paths or not Path(paths[what]).is_file():
            return PlainTextResponse(f"no {what} for this release", 404)
        path = Path(paths[what])
        name = path.name
        if what == "key" and "private" not in name.lower():
            name = f"PRIVATE-KEY-{name}"  # never mistaken for a file to publish
        return FileResponse(path, filename=name)

    async def reproduce(self, request: Request):
        run_id = request.path_params["run_id"]
        try:
            rep = await run_in_threadpool(self.runs.reproduce, run_id)
        except SdcevalError as exc:
            return self.render(request, "reproduce.html", 404, rep=None, shown=run_id,
                               errors={"run": str(exc)})
        return self.render(request, "reproduce.html", rep=rep, shown=run_id)

    async def reproduce_file(self, request: Request):
        run_id, what = request.path_params["run_id"], request.path_params["what"]
        rep = await run_in_threadpool(self.runs.reproduce, run_id)
        names = {"toml": "experiment.toml", "command": "command.sh", "python": "run.py"}
        if what not in names:
            return PlainTextResponse("no such file", 404)
        return Response(rep[what] + ("" if rep[what].endswith("\n") else "\n"),
                        media_type="text/plain; charset=utf-8",
                        headers={"content-disposition":
                                 f'attachment; filename="{names[what]}"'})

    async def home(self, request: Request):
        return RedirectResponse("/data", 303)

    async def not_found(self, request: Request, exc: Exception):
        """An address with no page (404), or a page that does not take the request's
        method (405): the app's page with the step bar and a way back, not Starlette's
        bare text."""
        code = getattr(exc, "status_code", 404)
        if code == 405:
            heading, message = "Not here", (f"the page {request.url.path} does not take "
                                            f"a {request.method} request")
        else:
            heading, message = "Not found", f"no page at {request.url.path}"
        response = self.render(request, "notfound.html", code, heading=heading,
                               message=message)
        response.headers.update(getattr(exc, "headers", None) or {})
        return response


async def _sdceval_error(request: Request, exc: Exception):
    # an SdcevalError no page caught (a run id that does not exist, ...): its message
    return error_page(str(exc), 400)


async def _unexpected(request: Request, exc: Exception):
    # Starlette answers with this page, then raises the exception again for `Guard`,
    # which sees the answer started and keeps serving
    reference = secrets.token_hex(4)
    log.error("unexpected error, reference %s (%s %s)", reference, request.method,
              request.url.path, exc_info=exc)
    return error_page("Something unexpected went wrong; the app keeps running. Please "
                      "report it with this reference.", 500, reference)


def create_app(folder, token: str, hosts=("127.0.0.1",), port: int | None = None,
               max_upload_mb: float = DEFAULT_MAX_UPLOAD_MB, run_manager=None):
    """The ASGI app: the pages (`App`) behind `Guard`.  ``hosts``: the Host headers
    accepted (with ``:port`` when ``port`` is given; None: any, for ``--allow-remote``
    on every interface)."""
    pages = App(Path(folder), max_upload_mb, run_manager)
    if hosts is not None and port is not None:
        hosts = [f"{h}:{port}" for h in hosts]
    rid = "{run_id:str}"
    routes = [
        Route("/", pages.home), Route("/data", pages.data),
        Route("/data/upload", pages.upload, methods=["POST"]),
        Route("/data/bundled", pages.pick_bundled, methods=["POST"]),
        Route("/roles", pages.roles), Route("/roles", pages.save_roles, methods=["POST"]),
        Route("/hierarchies", pages.save_hierarchies, methods=["POST"]),
        Route("/goal", pages.goal), Route("/goal", pages.save_goal, methods=["POST"]),
        Route("/run", pages.run_list), Route("/run", pages.run_start, methods=["POST"]),
        Route("/compare", pages.compare),
        Route(f"/run/{rid}", pages.run_page),
        Route(f"/run/{rid}/status", pages.run_status),
        Route(f"/run/{rid}/cancel", pages.run_cancel, methods=["POST"]),
        Route(f"/run/{rid}/resume", pages.run_resume, methods=["POST"]),
        Route(f"/results/{rid}", pages.results),
        Route(f"/results/{rid}/figure/{{n:int}}", pages.figure),
        Route(f"/release/{rid}", pages.release, methods=["GET", "POST"]),
        Route(f"/release/{rid}/file/{{what:str}}", pages.release_file),
        Route(f"/reproduce/{rid}", pages.reproduce),
        Route(f"/reproduce/{rid}/file/{{what:str}}", pages.reproduce_file),
        Mount("/static", StaticFiles(directory=str(HERE / "static")), name="static"),
    ]
    inner = Starlette(routes=routes, exception_handlers={
        SdcevalError: _sdceval_error, 404: pages.not_found, 405: pages.not_found,
        Exception: _unexpected})
    inner.state.pages = pages
    app = Guard(inner, token, hosts)
    app.pages = pages
    return app


__all__ = ["APP_CSP", "COOKIE", "DEFAULT_MAX_UPLOAD_MB", "Guard", "create_app",
           "write_private"]
