"""A small local server that speaks the OpenAI chat-completions protocol, for tests.

It answers ``POST /v1/chat/completions`` with a completion whose text ``answer(body)``
decides (after ``delay`` seconds), and ``POST /v1/responses`` (the Responses API, which
Inspect's ``openai`` provider uses for model names it does not know) likewise; a
Responses request is recorded with its input as chat ``messages`` too, so ``answer`` and
the tests read both the same way. It records every request and the most it served at once,
checks a bearer key when given one, and can be told to fail requests (``fail(number,
body)`` returns an HTTP status, ``"drop"`` to close the connection without a reply,
``"garbage"`` for a 200 that is not JSON, ``"drip"`` for a reply sent one byte a second,
``"huge"`` for a 200 whose body streams ``huge_bytes`` of JSON without a length, ``"huge
declared"`` the same with its Content-Length, or None); ``sent`` counts the bytes those
modes wrote, ``started`` records when each request came in. ``hold(body)`` true keeps a
request unanswered until :meth:`ChatServer.release` (``held`` counts those waiting), so
a test can act while a client certainly has requests in flight. It runs on aiohttp's event loop in a
background thread, so a thousand waiting answers cost no thread each: a client's
throughput against it is bounded by the delay, not by the server.

Run as a program it serves until killed (``--mode drip`` or ``huge`` for a hostile
server), answering ``{"reasoning", "detection": false}``
after ``--delay`` seconds, and prints its base URL on the first line (for benchmarks).
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Callable
from typing import Any

from aiohttp import web
from multidict import CIMultiDictProxy

Answer = Callable[[dict[str, Any]], "str | None"]
Fail = Callable[[int, dict[str, Any]], "int | str | None"]


def target_of(body: dict[str, Any]) -> str:
    """The target cell's text in a request built by junobench.detection.prompt."""
    user = body["messages"][-1]["content"]
    return user.rsplit("# Target Cell:\n", 1)[1].strip()


def chat_messages(body: dict[str, Any]) -> list[dict[str, str]]:
    """A Responses API request's ``instructions`` and ``input`` as chat messages."""
    out = []
    if body.get("instructions"):
        out.append({"role": "system", "content": str(body["instructions"])})
    items = body.get("input")
    if isinstance(items, str):
        return [*out, {"role": "user", "content": items}]
    for item in items or []:
        content = item.get("content")
        if isinstance(content, list):
            content = "".join(part.get("text", "") for part in content if isinstance(part, dict))
        role = {"developer": "system"}.get(item.get("role", "user"), item.get("role", "user"))
        out.append({"role": role, "content": content or ""})
    return out


class ChatServer:
    def __init__(self, answer: Answer, *, fail: Fail | None = None, api_key: str | None = None,
                 delay: float = 0.0, port: int = 0, huge_bytes: int = 2 << 30,
                 hold: Callable[[dict[str, Any]], bool] | None = None) -> None:
        self.answer = answer
        self.hold = hold
        self.held = 0
        self._released: asyncio.Event | None = None
        self.fail = fail
        self.api_key = api_key
        self.delay = delay
        self.port = port
        self.requests: list[dict[str, Any]] = []
        #: Request headers, looked up case-insensitively.
        self.headers: list[CIMultiDictProxy[str]] = []
        self.served = 0
        self.huge_bytes = huge_bytes
        self.sent = 0
        self.started: list[float] = []
        self.in_flight = 0
        self.most_in_flight = 0
        self._lock = threading.Lock()
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._runner: web.AppRunner | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def inspect_args(self) -> dict[str, Any]:
        """Keyword arguments for ``inspect_ai.eval`` that send its model to this server.

        Inspect memoizes a model by name and arguments, not by ``OPENAI_BASE_URL``: without
        the base URL in the arguments, an earlier test's model (pointing at a server since
        closed) would be reused, and its refused requests retried with back-off for hours.
        A few retries bound any other failure.
        """
        return {"model_base_url": self.url, "max_retries": 2}

    def __enter__(self) -> ChatServer:
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self._start(), self._loop).result(timeout=30)
        return self

    def __exit__(self, *exc: Any) -> None:
        asyncio.run_coroutine_threadsafe(self._stop(), self._loop).result(timeout=30)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=30)
        self._loop.close()

    def release(self) -> None:
        """Answer the held requests, and every request from now on."""
        self.hold = None
        if self._released is not None:
            self._loop.call_soon_threadsafe(self._released.set)

    def targets(self) -> list[str]:
        with self._lock:
            return [target_of(b) for b in self.requests]

    async def _start(self) -> None:
        self._released = asyncio.Event()
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_route("*", "/{tail:.*}", self._handle)
        self._runner = web.AppRunner(app, access_log=None, handle_signals=False)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", self.port, backlog=1024)
        await site.start()
        self.port = self._runner.addresses[0][1]

    async def _stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        raw = await request.read()
        try:
            body = json.loads(raw) if raw else {}
        except ValueError:
            body = {}
        responses = request.path == "/v1/responses"
        if responses and isinstance(body, dict):
            body = {**body, "messages": chat_messages(body)}
        with self._lock:
            self.requests.append(body)
            self.headers.append(request.headers)
            self.started.append(time.monotonic())
            number = len(self.requests)
        if request.method != "POST" or request.path not in ("/v1/chat/completions", "/v1/responses"):
            return _json(404, {"error": {"message": f"no route {request.method} {request.path}"}})
        if self.api_key and request.headers.get("Authorization") != f"Bearer {self.api_key}":
            return _json(401, {"error": {"message": "invalid api key"}})
        mode = self.fail(number, body) if self.fail else None
        if mode == "drop":
            assert request.transport is not None
            request.transport.abort()  # the connection goes, no reply
            return web.Response()
        if mode == "drip":
            return await self._drip(request, number, body)
        if mode in ("huge", "huge declared"):
            return await self._huge(request, declared=mode == "huge declared")
        if mode == "garbage":
            return web.Response(status=200, body=b"<html>bad gateway</html>",
                                content_type="application/json")
        if isinstance(mode, int):
            extra = {"Retry-After": "0"} if mode == 429 else {}
            return _json(mode, {"error": {"message": f"injected {mode}"}}, extra)
        with self._lock:
            self.in_flight += 1
            self.most_in_flight = max(self.most_in_flight, self.in_flight)
        try:
            hold = self.hold
            if hold is not None and hold(body) and self._released is not None:
                with self._lock:
                    self.held += 1
                await self._released.wait()
            if self.delay:
                await asyncio.sleep(self.delay)
            content = self.answer(body)
        finally:
            with self._lock:
                self.in_flight -= 1
        with self._lock:
            self.served += 1
        if responses:
            return _json(200, _response(number, body, content))
        return _json(200, _completion(number, body, content))


    async def _drip(self, request: web.Request, number: int, body: dict[str, Any]) -> web.StreamResponse:
        """A whole completion, one byte a second (headers at once)."""
        text = json.dumps(_completion(number, body, self.answer(body))).encode()
        reply = web.StreamResponse(status=200, headers={"Content-Type": "application/json"})
        reply.content_length = len(text)
        await reply.prepare(request)
        try:
            for i in range(len(text)):
                await reply.write(text[i:i + 1])
                with self._lock:
                    self.sent += 1
                await asyncio.sleep(1.0)
        except (ConnectionError, RuntimeError):
            pass  # the client gave up
        return reply

    async def _huge(self, request: web.Request, *, declared: bool) -> web.StreamResponse:
        """A JSON string of ``huge_bytes`` bytes, streamed as fast as the client reads."""
        reply = web.StreamResponse(status=200, headers={"Content-Type": "application/json"})
        if declared:
            reply.content_length = self.huge_bytes
        await reply.prepare(request)
        chunk = b"x" * (1 << 20)
        try:
            await reply.write(b'"')
            left = self.huge_bytes - 2
            while left > 0:
                part = chunk[:left]
                await reply.write(part)
                left -= len(part)
                with self._lock:
                    self.sent += len(part)
            await reply.write(b'"')
        except (ConnectionError, RuntimeError):
            pass
        return reply


def _completion(number: int, body: dict[str, Any], content: str | None) -> dict[str, Any]:
    """A chat completion reply carrying ``content``."""
    return {
        "id": f"chatcmpl-{number}", "object": "chat.completion", "created": 0,
        "model": body.get("model"),
        "choices": [{"index": 0, "finish_reason": "stop",
                     "message": {"role": "assistant", "content": content}}],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
    }


def _response(number: int, body: dict[str, Any], text: str) -> dict[str, Any]:
    """A completed Responses API reply carrying ``text``."""
    return {
        "id": f"resp-{number}", "object": "response", "created_at": 0, "status": "completed",
        "model": body.get("model"), "error": None, "incomplete_details": None,
        "instructions": body.get("instructions"), "metadata": {}, "parallel_tool_calls": True,
        "temperature": body.get("temperature"), "tool_choice": "auto", "tools": [],
        "top_p": None, "max_output_tokens": body.get("max_output_tokens"),
        "output": [{"type": "message", "id": f"msg-{number}", "status": "completed",
                    "role": "assistant",
                    "content": [{"type": "output_text", "text": text, "annotations": []}]}],
        "usage": {"input_tokens": 1, "output_tokens": 1, "total_tokens": 2,
                  "input_tokens_details": {"cached_tokens": 0},
                  "output_tokens_details": {"reasoning_tokens": 0}},
    }


def _json(status: int, data: Any, extra: dict[str, str] | None = None) -> web.Response:
    return web.Response(status=status, text=json.dumps(data), content_type="application/json",
                        headers=extra)


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--delay", type=float, default=0.0, help="seconds before each answer")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--mode", choices=("drip", "huge", "huge declared"), default=None,
                        help="answer every request this way (a hostile server)")
    args = parser.parse_args()
    no_crash = json.dumps({"reasoning": "nothing undefined", "detection": False})
    mode = args.mode
    with ChatServer(lambda body: no_crash, delay=args.delay, port=args.port,
                    fail=None if mode is None else lambda number, body: mode) as running:
        print(running.url, flush=True)
        threading.Event().wait()
