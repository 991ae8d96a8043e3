"""``junobench view``: build the site into the cache and serve it on 127.0.0.1.

The site is built (incrementally) into ``<cache>/site/<key>``, the key naming what it
was built from, then served by the standard library's HTTP server, bound to the loopback
address only, with the site's Content-Security-Policy as a header as well. Ctrl-C (or
SIGTERM) stops it cleanly: the server closes its socket and :func:`view` returns.

What it serves is what a static host of the folder would, and nothing more: only regular
files inside the folder, reached without following a link (a link or a FIFO in the folder
is not found, never followed or waited on), no directory listings, and only to a request
whose ``Host`` is 127.0.0.1 or localhost (a page of another site whose name resolves to
127.0.0.1, a DNS rebinding, gets nothing). A client that sends nothing for
:data:`IDLE_SECONDS` is disconnected; one that resets its connection is not reported.
"""

from __future__ import annotations

import functools
import hashlib
import http.server
import json
import os
import signal
import sys
import threading
import urllib.parse
import webbrowser
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from junobench.errors import JunoBenchError

if TYPE_CHECKING:
    from junobench.site.build import SiteSummary

#: The port ``junobench view`` serves on unless told (``--port``; 0 takes a free one).
DEFAULT_PORT = 7575
HOST = "127.0.0.1"
#: The names a request may give as its ``Host`` (with or without the port).
LOCAL_NAMES = frozenset({HOST, "localhost"})
#: Seconds a connection may stay silent before it is closed (a slow client holds no thread).
IDLE_SECONDS = 30.0


class Handler(http.server.SimpleHTTPRequestHandler):
    """Serves the site's folder with the site's CSP and no content sniffing; quiet. Only
    regular files inside the folder, never through a link, and only to a local ``Host``."""

    timeout = IDLE_SECONDS

    def send_head(self) -> Any:
        """The response's status and headers, and the open file to send (None when an
        error was sent)."""
        if not self.local_host():
            self.send_error(421, explain="this server answers only to 127.0.0.1 and localhost")
            return None
        if not self.path.startswith("/"):
            self.send_error(400, explain="only a path is a request target here")
            return None
        fd = site_file(self.directory, self.path)
        if fd is None:
            self.send_error(404, explain="not a file of the site")
            return None
        handle = os.fdopen(fd, "rb")
        try:
            self.send_response(200)
            self.send_header("Content-type", self.guess_type(urllib.parse.urlsplit(self.path).path))
            self.send_header("Content-Length", str(os.fstat(fd).st_size))
            self.end_headers()
        except BaseException:
            handle.close()
            raise
        return handle

    def local_host(self) -> bool:
        """Whether the request's one ``Host`` header names this machine (127.0.0.1 or
        localhost, with this server's port or none)."""
        hosts = self.headers.get_all("Host") or []
        if len(hosts) != 1:
            return False
        name, colon, port = hosts[0].strip().lower().rpartition(":")
        if not colon:
            name, port = port, ""
        address: tuple[Any, ...] = self.server.server_address  # type: ignore[assignment]  # (host, port): TCP
        return name in LOCAL_NAMES and port in ("", str(address[1]))

    def end_headers(self) -> None:
        from junobench.site.render import CSP

        self.send_header("Content-Security-Policy", CSP)
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("Referrer-Policy", "no-referrer")
        self.send_header("Cache-Control", "no-cache")
        super().end_headers()

    def log_message(self, format: str, *args: Any) -> None:
        return


class SiteServer(http.server.ThreadingHTTPServer):
    """The threading HTTP server, silent about clients that go away mid-request."""

    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A connection the client reset or let time out is its business, not an error of
        the server's: say nothing; anything else is reported as the standard server does."""
        if isinstance(sys.exc_info()[1], OSError):
            return
        super().handle_error(request, client_address)


def site_file(folder: str | Path, target: str) -> int | None:
    """A read-only descriptor of the regular file that the request target ``target``
    (``/cases/x.html?q``) names in ``folder`` (``/`` is ``/index.html``), or None when it
    names none: a name that climbs out (``..``, encoded or not), holds a backslash or a
    control character, goes through a link, or is a directory, a FIFO or a device. Each
    folder on the way is opened without following a link, and the file without blocking."""
    from junobench.safety.paths import open_inside, relative_name

    if not target.startswith("/") or target.startswith("//"):
        return None
    try:
        path = urllib.parse.unquote(urllib.parse.urlsplit(target).path, errors="strict")
    except (ValueError, UnicodeError):
        return None
    if path.endswith("/"):
        path += "index.html"
    name = relative_name(path[1:])
    if name is None:
        return None
    try:
        return open_inside(folder, name)
    except (OSError, ValueError):
        return None


def site_folder(source: str | Path, predictions: Sequence[str | Path], options: dict[str, Any],
                cache_dir: str | Path | None = None) -> Path:
    """Where the site of these inputs lives in the cache (one folder per set of inputs)."""
    from junobench.data.cache import cache_root

    named = json.dumps([str(source), [str(Path(p).absolute()) for p in predictions],
                        {k: str(v) for k, v in sorted(options.items())}], sort_keys=True)
    key = hashlib.sha256(named.encode()).hexdigest()[:16]
    return cache_root(cache_dir) / "site" / key


def view(
    source: str | Path,
    predictions: Sequence[str | Path] = (),
    *,
    port: int = DEFAULT_PORT,
    open_browser: bool = True,
    cache_dir: str | Path | None = None,
    on_ready: Callable[[str, SiteSummary], None] | None = None,
    **options: Any,
) -> SiteSummary:
    """Build the site (as :func:`~junobench.site.build.site` with ``options``) into the
    cache and serve it on ``127.0.0.1:port`` until interrupted; ``on_ready`` is called
    with the URL once the server listens. The port is taken before the build, so that a
    port in use is said at once. Returns what the build did."""
    from junobench.site.build import site

    folder = site_folder(source, predictions, {k: v for k, v in options.items() if v is not None}, cache_dir)
    server = listen(folder, port)
    try:
        summary = site(source, folder, predictions, **options)
    except BaseException:
        server.server_close()
        raise
    serve(server, open_browser=open_browser,
          on_ready=None if on_ready is None else lambda url: on_ready(url, summary))
    return summary


def listen(folder: str | Path, port: int = DEFAULT_PORT) -> SiteServer:
    """A server of ``folder`` bound to 127.0.0.1:``port`` (0: a free port), not yet serving."""
    if type(port) is not int or not 0 <= port <= 65535:
        raise JunoBenchError(f"{port!r} is not a port number", hint="pass --port N with N from 0 to 65535 "
                             "(0: any free port)")
    handler = functools.partial(Handler, directory=str(folder))
    try:
        server = SiteServer((HOST, port), handler)
    except OSError as error:
        raise JunoBenchError(f"cannot serve on {HOST}:{port} ({error.strerror or error})",
                             hint="another program may use the port: pass --port N (0: any free port)"
                             ) from None
    return server


def serve(server: http.server.ThreadingHTTPServer, *, open_browser: bool = True,
          on_ready: Callable[[str], None] | None = None) -> None:
    """Serve with ``server`` (from :func:`listen`) until Ctrl-C or SIGTERM, then close it."""
    url = f"http://{HOST}:{server.server_address[1]}/index.html"
    stop = threading.Event()

    def stopped(signum: int, frame: Any) -> None:
        stop.set()

    previous = None
    if threading.current_thread() is threading.main_thread():
        previous = signal.signal(signal.SIGTERM, stopped)
    thread = threading.Thread(target=server.serve_forever, name="junobench-view", daemon=True)
    thread.start()
    try:
        if on_ready is not None:
            on_ready(url)
        if open_browser:
            webbrowser.open(url)
        while not stop.wait(0.5):
            pass
    except KeyboardInterrupt:
        pass
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
