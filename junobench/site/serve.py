"""``junobench view``: build the site into the cache and serve it on 127.0.0.1.

The site is built (incrementally) into ``<cache>/site/<key>``, the key naming what it
was built from, then served by the standard library's HTTP server, bound to the loopback
address only, with the site's Content-Security-Policy as a header as well. Ctrl-C (or
SIGTERM) stops it cleanly: the server closes its socket and :func:`view` returns.
"""

from __future__ import annotations

import functools
import hashlib
import http.server
import json
import signal
import threading
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


class Handler(http.server.SimpleHTTPRequestHandler):
    """Serves the site's folder with the site's CSP and no content sniffing; quiet."""

    def end_headers(self) -> None:
        from junobench.site.render import CSP

        self.send_header("Content-Security-Policy", CSP)
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("Referrer-Policy", "no-referrer")
        self.send_header("Cache-Control", "no-cache")
        super().end_headers()

    def log_message(self, format: str, *args: Any) -> None:
        return


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


def listen(folder: str | Path, port: int = DEFAULT_PORT) -> http.server.ThreadingHTTPServer:
    """A server of ``folder`` bound to 127.0.0.1:``port`` (0: a free port), not yet serving."""
    if type(port) is not int or not 0 <= port <= 65535:
        raise JunoBenchError(f"{port!r} is not a port number", hint="pass --port N with N from 0 to 65535 "
                             "(0: any free port)")
    handler = functools.partial(Handler, directory=str(folder))
    try:
        server = http.server.ThreadingHTTPServer((HOST, port), handler)
    except OSError as error:
        raise JunoBenchError(f"cannot serve on {HOST}:{port} ({error.strerror or error})",
                             hint="another program may use the port: pass --port N (0: any free port)"
                             ) from None
    server.daemon_threads = True
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
