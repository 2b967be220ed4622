"""``sdceval serve``: the local web app (issue 31, `sdceval.app`, docs/app.md).

Binds 127.0.0.1 (``--host`` may name another loopback address; any other address is
refused unless ``--allow-remote``: the app reads and writes files in its folder, and on
another interface anyone on the network who gets the URL could), on ``--port`` or a
free port, and prints the URL with a random access token (opened in a browser with
``--open``, or when a display is there unless ``--no-open``).  One folder (``--folder``,
default `sdceval.app.workspace.default_folder`) holds uploads, runs, releases and keys,
owner-only.  Ctrl-C stops the server and ends every worker process of the runs
(`sdceval.app.runs.RunManager.shutdown`).  Starlette and uvicorn are imported here
only, so the other commands start as fast as before.
"""
from __future__ import annotations

import ipaddress
import os
import secrets
import socket
import sys

from sdceval.cli.common import _add_command
from sdceval.core.errors import SdcevalError

APP_EXTRA = 'pip install "sdceval[app]"'


def add_parser(sub):
    s = _add_command(sub, "serve", "start the local web app: from your file to a chosen, "
                                   "certified release in the browser", cmd_serve)
    s.add_argument("--host", default="127.0.0.1",
                   help="address to listen on (default 127.0.0.1: this computer only); "
                        "another than a loopback address needs --allow-remote")
    s.add_argument("--allow-remote", action="store_true",
                   help="allow a --host other than loopback: anyone who can reach it and "
                        "has the URL with its token can read your data")
    s.add_argument("--port", type=int, default=0,
                   help="port (default: a free one)")
    s.add_argument("--folder", default=None,
                   help="the folder of uploads, runs, releases and keys (owner-only; "
                        "default: sdceval/app in your data folder, e.g. "
                        "~/.local/share/sdceval/app)")
    s.add_argument("--max-upload", type=float, default=None, metavar="MB",
                   help="the largest file an upload may be, in MB (default 200)")
    s.add_argument("--open", dest="open_browser", action="store_true", default=None,
                   help="open the app in a browser (default: when a display is there)")
    s.add_argument("--no-open", dest="open_browser", action="store_false",
                   help="do not open a browser")
    return s


def is_loopback(host: str) -> bool:
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def allowed_hosts(host: str, port: int) -> list[str] | None:
    """The Host headers a request may carry (DNS-rebinding guard): the bound address
    and port (``localhost`` too on loopback); None (any) when bound to every interface
    with --allow-remote."""
    if host in ("0.0.0.0", "::"):
        return None
    shown = f"[{host}]" if ":" in host else host
    names = [shown] + (["localhost", "127.0.0.1"] if is_loopback(host) else [])
    return [f"{n}:{port}" for n in dict.fromkeys(names)]


def _display() -> bool:
    return sys.platform in ("darwin", "win32") or bool(
        os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))


def _log_to(folder) -> None:
    """The app's log (unexpected errors with their reference) in ``logs/app.log``."""
    import logging

    from sdceval.app.workspace import private_dir, write_private
    path = private_dir(folder / "logs") / "app.log"
    if not path.exists():
        write_private(path, "")
    handler = logging.FileHandler(path, encoding="utf-8")
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(message)s"))
    logger = logging.getLogger("sdceval.app")
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)


def cmd_serve(args) -> int:
    from pathlib import Path
    if not is_loopback(args.host) and not args.allow_remote:
        raise SdcevalError(
            f"--host {args.host}: the app listens on this computer only (127.0.0.1) "
            "unless you give --allow-remote: it reads and writes the files of its folder, "
            "and anyone who can reach that address and has the URL could read your data")
    if not 0 <= args.port <= 65535:
        raise SdcevalError(f"--port {args.port}: give a port 1..65535, or 0 for a free one")
    if args.max_upload is not None and not args.max_upload > 0:
        raise SdcevalError(f"--max-upload {args.max_upload:g}: give a size in MB > 0")
    try:
        import uvicorn

        from sdceval.app.server import DEFAULT_MAX_UPLOAD_MB, create_app
    except ImportError as exc:
        raise SdcevalError(f"sdceval serve needs the app's libraries ({exc.name} is "
                           f"missing): {APP_EXTRA}") from None
    from sdceval.app.workspace import default_folder, private_dir
    folder = private_dir(Path(args.folder).resolve()) if args.folder else default_folder()
    family = socket.AF_INET6 if ":" in args.host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((args.host, args.port))
        sock.listen(128)  # a browser opened at once waits for uvicorn, never refused
    except OSError as exc:
        sock.close()
        raise SdcevalError(f"cannot listen on {args.host}:{args.port} ({exc.strerror}): "
                           "give another --port, or 0 for a free one") from None
    port = sock.getsockname()[1]
    token = secrets.token_urlsafe(24)
    _log_to(folder)
    app = create_app(folder, token, allowed_hosts(args.host, port), None,
                     args.max_upload or DEFAULT_MAX_UPLOAD_MB)
    shown = f"[{args.host}]" if ":" in args.host else args.host
    url = f"http://{shown}:{port}/?token={token}"
    print(f"sdceval app: {url}\nfolder: {folder}\nCtrl-C stops it.", flush=True)
    if args.open_browser or (args.open_browser is None and _display()):
        import webbrowser
        webbrowser.open(url)
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off",
                                           access_log=False))
    try:
        try:
            server.run(sockets=[sock])
        except KeyboardInterrupt:
            pass   # uvicorn raises the Ctrl-C it handled again once it has shut down
    finally:
        pages = app.pages
        if pages._runs is not None:  # every worker and command it started ends
            pages._runs.shutdown()
        sock.close()
        print("sdceval app: stopped", file=sys.stderr, flush=True)
    # Ctrl-C is how the app is stopped: uvicorn has handled it and ended cleanly, so
    # the command succeeded (not "interrupted", exit 130)
    from sdceval.core import interrupts
    interrupts.clear()
    return 0
