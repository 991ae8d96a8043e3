"""``junobench view``'s server given hostile requests: only the site's regular files, never
through a link, never waiting on a FIFO, only to a local ``Host``, quiet about clients
that go away. A small folder stands for a built site (the server reads nothing else)."""

from __future__ import annotations

import os
import socket
import struct
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from junobench.site import serve
from junobench.site.serve import listen

SECRET = b"the secret outside the site"


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, int]]:
    """A site folder holding pages, a link out to a file and to a folder, a link inside,
    a FIFO and a folder; served on a free port. Yields the folder and the port."""
    tmp_path = tmp_path_factory.mktemp("served")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.html").write_bytes(SECRET)
    folder = tmp_path / "site"
    (folder / "cases").mkdir(parents=True)
    (folder / "index.html").write_bytes(b"<p>the index</p>")
    (folder / "cases" / "pandas_1.html").write_bytes(b"<p>pandas_1</p>")
    (folder / "secret.html").symlink_to(outside / "secret.html")
    (folder / "out").symlink_to(outside)
    (folder / "alias.html").symlink_to(folder / "index.html")
    os.mkfifo(folder / "fifo.html")
    server = listen(folder, 0)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield folder, server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def ask(port: int, request: bytes, *, timeout: float = 10) -> bytes:
    """The whole response to the raw ``request`` (the server closes after one)."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as connection:
        connection.sendall(request)
        chunks = []
        while chunk := connection.recv(1 << 16):
            chunks.append(chunk)
    return b"".join(chunks)


def get(port: int, target: str, host: str | None = "127.0.0.1", method: str = "GET") -> tuple[int, bytes]:
    header = "" if host is None else f"Host: {host}\r\n"
    response = ask(port, f"{method} {target} HTTP/1.0\r\n{header}\r\n".encode("latin-1"))
    status = int(response.split(b" ", 2)[1])
    return status, response.partition(b"\r\n\r\n")[2]


def test_the_sites_pages_are_served(served):
    _, port = served
    assert get(port, "/") == (200, b"<p>the index</p>")
    assert get(port, "/index.html?x=../../etc/passwd") == (200, b"<p>the index</p>")
    assert get(port, "/cases/pandas_1.html") == (200, b"<p>pandas_1</p>")
    assert get(port, "/cases/pandas_1.html", method="HEAD") == (200, b"")


@pytest.mark.parametrize("target", [
    "/secret.html", "/out/secret.html", "/alias.html", "/fifo.html", "/cases/", "/cases", "/out/",
    "/../outside/secret.html", "/%2e%2e/outside/secret.html", "/cases/..%2f..%2foutside/secret.html",
    "/..%5coutside%5csecret.html", "/index.html%00.png", "/%ff%fe"])
def test_links_fifos_folders_and_climbing_paths_are_not_found(served, target):
    """A link (out of the folder or inside it) is never followed, a FIFO never waited on,
    a folder never listed, and an encoded NUL is a 404, not a traceback."""
    _, port = served
    started = time.monotonic()
    status, body = get(port, target)
    assert status == 404 and SECRET not in body and b"pandas_1" not in body
    assert time.monotonic() - started < 5


@pytest.mark.parametrize("target", ["http://127.0.0.1/index.html", "*", "index.html"])
def test_a_request_target_that_is_not_a_path_is_refused(served, target):
    _, port = served
    assert get(port, target)[0] == 400


def test_only_a_request_for_this_machine_is_served(served):
    """DNS rebinding: a page of ``evil.example`` whose name now resolves to 127.0.0.1 asks
    with its own name as ``Host`` and gets nothing."""
    _, port = served
    for host in ("evil.example", f"evil.example:{port}", f"127.0.0.1.evil.example:{port}",
                 "localhost:1", f"localhost@evil.example:{port}", "", None):
        assert get(port, "/index.html", host=host)[0] == 421, host
    two = ask(port, f"GET /index.html HTTP/1.0\r\nHost: 127.0.0.1\r\nHost: evil.example:{port}\r\n\r\n".encode())
    assert two.startswith(b"HTTP/1.0 421")
    for host in ("127.0.0.1", f"127.0.0.1:{port}", f"localhost:{port}", f"LocalHost:{port}"):
        assert get(port, "/index.html", host=host) == (200, b"<p>the index</p>"), host


def test_a_client_that_resets_or_goes_silent_is_dropped_quietly(tmp_path, monkeypatch, capfd):
    (tmp_path / "index.html").write_bytes(b"<p>the index</p>")
    monkeypatch.setattr(serve.Handler, "timeout", 0.5)
    server = listen(tmp_path, 0)
    port = server.server_address[1]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        reset = socket.create_connection(("127.0.0.1", port))
        reset.sendall(b"GET /index.html HTTP/1.0\r\nHost: 127.0.0.1\r\n")
        time.sleep(0.2)
        reset.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        reset.close()
        with socket.create_connection(("127.0.0.1", port), timeout=10) as silent:
            silent.sendall(b"GET /index.html HTTP/1.0\r\n")
            assert silent.recv(100) == b""  # closed by the server, not by our timeout
        assert get(port, "/index.html") == (200, b"<p>the index</p>")
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
    assert capfd.readouterr().err == ""
