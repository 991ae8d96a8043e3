"""HTTP replies bounded in time and size, for the model client.

The SDK's timeout bounds each read, so a server that drips a byte at a time never times
out, and a reply is read whole into memory, however large. :func:`bounded_http_client`
gives the SDK an HTTP client whose transport ends each request at one deadline covering
connect, headers and body, and stops reading a body past ``max_bytes`` (declared or
streamed; compressed replies are not accepted, so the count is of what is kept). Both
raise the HTTP library's own errors (a timeout, a read error), which the SDK retries as
it retries a lost connection; the last one names what happened.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator
from typing import Any

#: Largest reply body read (bytes): a chat completion is a few kilobytes.
MAX_REPLY_BYTES = 8 << 20


def http_module() -> Any:
    """The HTTP library the installed ``openai`` SDK is built on (``httpx2`` or ``httpx``)."""
    import openai

    base = next(c for c in openai.DefaultAsyncHttpxClient.__mro__ if c.__name__ == "AsyncClient")
    return sys.modules[base.__module__.split(".")[0]]


def bounded_http_client(*, deadline: float, max_bytes: int = MAX_REPLY_BYTES, url: str | None = None) -> Any:
    """The SDK's default async HTTP client with a transport that enforces ``deadline``
    (seconds per request) and ``max_bytes`` (per reply body); requests to ``url`` go
    through the proxy the environment names for it (``HTTPS_PROXY``, ``NO_PROXY`` …), as
    the SDK's own client would send them."""
    import openai

    http = http_module()
    proxy = environment_proxy(url) if url else None
    inner = http.AsyncHTTPTransport(proxy=proxy) if proxy else http.AsyncHTTPTransport()
    transport = _transport_class(http)(inner, deadline=deadline, max_bytes=max_bytes)
    return openai.DefaultAsyncHttpxClient(transport=transport, timeout=deadline)


def environment_proxy(url: str) -> str | None:
    """The proxy the environment names for ``url`` (None: direct, or ``NO_PROXY`` covers it)."""
    import urllib.request
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    if not parts.hostname or urllib.request.proxy_bypass(parts.hostname):
        return None
    proxies = urllib.request.getproxies()
    return proxies.get(parts.scheme.lower()) or proxies.get("all") or None


def _transport_class(http: Any) -> type:
    class BoundedBody(http.AsyncByteStream):  # type: ignore[misc]
        """A reply body read until ``end`` (the event loop's clock) and ``max_bytes``."""
        def __init__(self, http: Any, stream: Any, request: Any, end: float, deadline: float,
                     max_bytes: int) -> None:
            self.http, self.stream, self.request = http, stream, request
            self.end, self.deadline, self.max_bytes = end, deadline, max_bytes

        async def __aiter__(self) -> AsyncIterator[bytes]:
            loop = asyncio.get_running_loop()
            chunks = self.stream.__aiter__()
            total = 0
            while True:
                remaining = self.end - loop.time()
                try:
                    if remaining <= 0:
                        raise asyncio.TimeoutError
                    chunk = await asyncio.wait_for(chunks.__anext__(), remaining)
                except StopAsyncIteration:
                    return
                except asyncio.TimeoutError:
                    raise self.http.ReadTimeout(f"reply not complete within {self.deadline:g} s",
                                                request=self.request) from None
                total += len(chunk)
                if total > self.max_bytes:
                    raise self.http.ReadError(f"reply larger than {self.max_bytes:,} bytes refused",
                                              request=self.request)
                yield chunk

        async def aclose(self) -> None:
            await self.stream.aclose()

    class BoundedTransport(http.AsyncBaseTransport):  # type: ignore[misc]
        def __init__(self, inner: Any, *, deadline: float, max_bytes: int) -> None:
            self.inner = inner
            self.deadline = deadline
            self.max_bytes = max_bytes

        async def handle_async_request(self, request: Any) -> Any:
            request.headers["Accept-Encoding"] = "identity"
            loop = asyncio.get_running_loop()
            end = loop.time() + self.deadline
            try:
                response = await asyncio.wait_for(self.inner.handle_async_request(request), self.deadline)
            except asyncio.TimeoutError:
                raise http.ReadTimeout(f"no reply within {self.deadline:g} s", request=request) from None
            problem = _refused(response.headers, self.max_bytes)
            if problem is not None:
                await response.aclose()
                raise http.ReadError(problem, request=request)
            body = BoundedBody(http, response.stream, request, end, self.deadline, self.max_bytes)
            return http.Response(status_code=response.status_code, headers=response.headers, stream=body,
                                 extensions=response.extensions, request=request)

        async def aclose(self) -> None:
            await self.inner.aclose()

    return BoundedTransport


def _refused(headers: Any, max_bytes: int) -> str | None:
    """Why a reply is refused from its headers alone (None: read its body)."""
    length = headers.get("content-length", "")
    if length.strip().isdigit() and int(length) > max_bytes:
        return f"reply of {int(length):,} bytes refused (at most {max_bytes:,})"
    encoding = headers.get("content-encoding", "identity").strip().lower()
    if encoding not in ("", "identity"):
        return f"compressed reply ({encoding}) refused: its size cannot be bounded"
    return None
