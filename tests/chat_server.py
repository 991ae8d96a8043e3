"""A small local server that speaks the OpenAI chat-completions protocol, for tests.

It answers ``POST /v1/chat/completions`` with a completion whose text ``answer(body)``
decides, records every request, checks a bearer key when given one, and can be told to
fail requests (``fail(number, body)`` returns an HTTP status, ``"drop"`` to close the
connection without a reply, ``"garbage"`` for a 200 that is not JSON, or None).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Answer = Callable[[dict[str, Any]], str]
Fail = Callable[[int, dict[str, Any]], "int | str | None"]


def target_of(body: dict[str, Any]) -> str:
    """The target cell's text in a request built by junobench.detection.prompt."""
    user = body["messages"][-1]["content"]
    return user.rsplit("# Target Cell:\n", 1)[1].strip()


class ChatServer:
    def __init__(self, answer: Answer, *, fail: Fail | None = None, api_key: str | None = None,
                 delay: float = 0.0) -> None:
        self.answer = answer
        self.fail = fail
        self.api_key = api_key
        self.delay = delay
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.served = 0
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # quiet
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", 0))
                body = json.loads(self.rfile.read(length))
                with server._lock:
                    server.requests.append(body)
                    server.headers.append(dict(self.headers))
                    number = len(server.requests)
                if self.path != "/v1/chat/completions":
                    return self._json(404, {"error": {"message": f"no route {self.path}"}})
                if server.api_key and self.headers.get("Authorization") != f"Bearer {server.api_key}":
                    return self._json(401, {"error": {"message": "invalid api key"}})
                mode = server.fail(number, body) if server.fail else None
                if mode == "drop":
                    self.close_connection = True
                    self.connection.close()
                    return None
                if mode == "garbage":
                    return self._raw(200, b"<html>bad gateway</html>")
                if isinstance(mode, int):
                    extra = {"Retry-After": "0"} if mode == 429 else {}
                    return self._json(mode, {"error": {"message": f"injected {mode}"}}, extra)
                if server.delay:
                    time.sleep(server.delay)
                reply = {
                    "id": f"chatcmpl-{number}", "object": "chat.completion", "created": 0,
                    "model": body.get("model"),
                    "choices": [{"index": 0, "finish_reason": "stop",
                                 "message": {"role": "assistant",
                                             "content": server.answer(body)}}],
                    "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
                }
                with server._lock:
                    server.served += 1
                return self._json(200, reply)

            def _json(self, status: int, data: Any, extra: dict[str, str] | None = None) -> None:
                self._raw(status, json.dumps(data).encode(), extra)

            def _raw(self, status: int, payload: bytes, extra: dict[str, str] | None = None) -> None:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                for key, value in (extra or {}).items():
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(payload)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def __enter__(self) -> ChatServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._server.shutdown()
        self._server.server_close()

    def targets(self) -> list[str]:
        with self._lock:
            return [target_of(b) for b in self.requests]
