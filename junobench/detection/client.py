"""The one way junobench asks a model: an OpenAI-compatible chat-completions endpoint (the
API that vLLM, Ollama, llama.cpp's server and hosted services share) through the
``openai`` SDK's async client, and the one loop that runs a batch of such requests for
``detect`` (:mod:`.detect`) and ``judge`` (:mod:`junobench.diagnosis.judge`).

A batch is a list of :class:`Job`: a job is one line of the output file (a notebook's
runs, or one judge pass over a notebook's answers) and asks one request per message
list. Up to ``concurrency`` requests are in flight at once; a job's line is appended,
flushed and synced as soon as all its answers are in, so an interrupted batch loses at
most the jobs in flight, and the next one skips the jobs already in the file. The SDK
retries what may pass (connection errors, timeouts, HTTP 408/409/429/5xx, honouring
``Retry-After``) with its exponential backoff, ``retries`` times; a reply that is not a
completion is asked again as often. A request the server rejects (HTTP 400/413/422, e.g.
a prompt longer than the model's context) skips that job and reports it; a wrong key, URL
or model stops the batch with one error. The API key is read from an environment
variable, sent only in the ``Authorization`` header, and never printed. Replies are
bounded in time and size (:mod:`.bounded`).

Inspect (``inspect eval junobench/crash_detection``, :mod:`junobench.inspect_tasks`) is
the other way to run the same prompt and judge: through Inspect's own model providers
and loop, for users of Inspect; docs/development.md says why junobench's verbs do not
run on it.

>>> base_url("http://localhost:8000/v1/chat/completions")
'http://localhost:8000/v1'
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from junobench.errors import JunoBenchError

if TYPE_CHECKING:
    from openai import AsyncOpenAI

DEFAULT_API_KEY_ENV = "OPENAI_API_KEY"
DEFAULT_RETRIES = 5
DEFAULT_TIMEOUT = 600.0
#: Sent when no key is set: local servers ignore it, the SDK needs one.
NO_KEY = "no-key"
_REJECT_STATUS = frozenset({400, 413, 422})

Messages = list[dict[str, str]]


class RequestRejected(Exception):
    """The server refused this request for good (the job is skipped)."""


class RequestFailed(Exception):
    """A request still failing after the retries (the job is left for the next run)."""


def base_url(endpoint: str) -> str:
    """The SDK's base URL of an endpoint given as a base (``…/v1``) or in full."""
    url = endpoint.strip().rstrip("/")
    if not url.startswith(("http://", "https://")):
        raise JunoBenchError(f"endpoint {endpoint!r} is not an http(s) URL",
                             hint="pass e.g. --endpoint http://localhost:8000/v1")
    return url.removesuffix("/chat/completions")


@dataclass
class ChatSettings:
    """What every request carries besides the messages."""

    model: str
    temperature: float | None = None
    max_tokens: int | None = None
    json_mode: bool = False

    def request(self, messages: Messages) -> dict[str, Any]:
        body: dict[str, Any] = {"model": self.model, "messages": messages}
        if self.temperature is not None:
            body["temperature"] = self.temperature
        if self.max_tokens is not None:
            body["max_tokens"] = self.max_tokens
        if self.json_mode:
            body["response_format"] = {"type": "json_object"}
        return body


@dataclass
class Endpoint:
    """Where requests go and how hard to try: the options ``detect`` and ``judge`` share."""

    url: str
    settings: ChatSettings
    concurrency: int = 1
    api_key_env: str = DEFAULT_API_KEY_ENV
    retries: int = DEFAULT_RETRIES
    timeout: float = DEFAULT_TIMEOUT

    def check(self) -> None:
        if self.concurrency < 1:
            raise JunoBenchError(f"--concurrency must be at least 1, not {self.concurrency}")
        if self.retries < 0:
            raise JunoBenchError(f"--retries must be at least 0, not {self.retries}")
        base_url(self.url)


def make_client(endpoint: str, *, api_key: str | None, retries: int = DEFAULT_RETRIES,
                timeout: float = DEFAULT_TIMEOUT) -> AsyncOpenAI:
    """The SDK's async client for ``endpoint``, with its retries; each request ends at
    ``timeout`` seconds (connect, headers and body together) and its reply body at
    :data:`~junobench.detection.bounded.MAX_REPLY_BYTES` (:mod:`.bounded`)."""
    try:
        from openai import AsyncOpenAI
    except ImportError:
        raise JunoBenchError("running a model needs the openai SDK",
                             hint="pip install 'junobench[detect]'") from None
    from junobench.detection.bounded import bounded_http_client

    return AsyncOpenAI(base_url=base_url(endpoint), api_key=api_key or NO_KEY,
                       max_retries=retries, timeout=timeout,
                       http_client=bounded_http_client(deadline=timeout, url=base_url(endpoint)))


async def complete(client: AsyncOpenAI, settings: ChatSettings, messages: Messages,
                   *, malformed_retries: int = DEFAULT_RETRIES,
                   secret: str | None = None) -> str:
    """One completion's text. Raises :class:`RequestRejected`, :class:`RequestFailed`, or
    :class:`JunoBenchError` for what no retry fixes (key, URL, model)."""
    import openai

    def scrub(text: str) -> str:
        return text.replace(secret, "***") if secret else text

    where = str(client.base_url)
    for attempt in range(malformed_retries + 1):
        try:
            reply = await client.chat.completions.create(**settings.request(messages))
        except openai.APIStatusError as error:
            message = scrub(f"HTTP {error.status_code} from {where}: {_server_message(error)}")
            if error.status_code in _REJECT_STATUS:
                raise RequestRejected(message) from None
            if error.status_code in (401, 403):
                raise JunoBenchError(message, hint="set the API key in the environment variable "
                                     "named by --api-key-env, or check its permissions") from None
            if error.status_code == 404:
                raise JunoBenchError(message, hint="check --endpoint (an OpenAI-compatible base "
                                     "URL such as http://localhost:8000/v1) and --model") from None
            raise RequestFailed(message) from None
        except (openai.APIConnectionError, openai.APITimeoutError) as error:
            cause = f" ({error.__cause__})" if error.__cause__ is not None and str(error.__cause__) else ""
            raise RequestFailed(scrub(f"cannot reach {where}: {error}{cause}")) from None
        except (ValueError, openai.APIResponseValidationError) as error:
            if attempt == malformed_retries:
                raise RequestFailed(scrub(f"malformed reply from {where}: {error}")) from None
            continue
        text = _text(reply)
        if text is not None:
            return text
        if attempt == malformed_retries:
            raise RequestFailed(f"malformed reply from {where}: no message text in it")
    raise AssertionError("unreachable")


def _text(reply: Any) -> str | None:
    """The first choice's text ('' for an empty message); None when the reply has none
    (``content: null`` included: such a reply is asked again, never stored as '')."""
    try:
        content = reply.choices[0].message.content
    except (AttributeError, IndexError, TypeError):
        return None
    if content is None:
        return None
    if isinstance(content, list):  # content parts
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return str(content)


def _server_message(error: Any) -> str:
    body = getattr(error, "body", None)
    if isinstance(body, dict):
        inner = body.get("error", body)
        text = inner.get("message") if isinstance(inner, dict) else inner
        if text:
            return " ".join(str(text).split())[:300]
    return " ".join(str(getattr(error, "message", error)).split())[:300]


# --------------------------------------------------------------------------- the batch loop


@dataclass(frozen=True)
class Job:
    """One line of the output: ``key`` names it, each message list is one request."""

    key: str
    requests: Sequence[Messages]


@dataclass
class Summary:
    """What a batch did, by job key."""

    out: Path
    written: list[str] = field(default_factory=list)
    resumed: list[str] = field(default_factory=list)
    rejected: dict[str, str] = field(default_factory=dict)
    failed: dict[str, str] = field(default_factory=dict)

    @property
    def complete(self) -> bool:
        return not self.failed


def run_jobs(jobs: Sequence[Job], out: Path, endpoint: Endpoint, line: Callable[[Job, list[str]], str],
             summary: Summary, *, progress: bool = False, desc: str = "requests",
             log: Callable[[str], None] | None = None, client: AsyncOpenAI | None = None) -> None:
    """Ask every job's requests (``endpoint.concurrency`` in flight at once) and append
    ``line(job, answers)`` to ``out`` as each job completes; ``summary`` collects what was
    written, rejected and failed. ``client`` replaces the SDK client built from
    ``endpoint`` (for tests and proxies)."""
    endpoint.check()
    secret = os.environ.get(endpoint.api_key_env) or None
    if client is None:
        client = make_client(endpoint.url, api_key=secret, retries=endpoint.retries,
                             timeout=endpoint.timeout)
    batch = _Batch(client, endpoint, secret, line, summary, log or (lambda message: None))
    asyncio.run(batch.all(jobs, out, progress, desc))


@dataclass
class _Batch:
    client: AsyncOpenAI
    endpoint: Endpoint
    secret: str | None
    line: Callable[[Job, list[str]], str]
    summary: Summary
    say: Callable[[str], None]

    async def all(self, jobs: Sequence[Job], out: Path, progress: bool, desc: str) -> None:
        limit = asyncio.Semaphore(self.endpoint.concurrency)
        running = [asyncio.ensure_future(self.one(job, limit)) for job in jobs]
        bar = _progress(len(jobs), enabled=progress, desc=desc)
        try:
            with out.open("a", encoding="utf-8") as handle:
                for finished in asyncio.as_completed(running):
                    job, answers, error = await finished
                    # In a thread: the fsync must not stall the requests in flight.
                    await asyncio.to_thread(self.record, job, answers, error, handle)
                    bar.update(1)
        finally:
            for task in running:
                task.cancel()
            await asyncio.gather(*running, return_exceptions=True)
            bar.close()
            await self.client.close()

    async def one(self, job: Job, limit: asyncio.Semaphore
                  ) -> tuple[Job, list[str] | None, Exception | None]:
        """All requests of one job; the first error ends the job."""

        async def ask(messages: Messages) -> str:
            async with limit:
                return await complete(self.client, self.endpoint.settings, messages,
                                      malformed_retries=self.endpoint.retries, secret=self.secret)

        try:
            return job, list(await asyncio.gather(*(ask(m) for m in job.requests))), None
        except (RequestRejected, RequestFailed, JunoBenchError) as error:
            return job, None, error

    def record(self, job: Job, answers: list[str] | None, error: Exception | None,
               handle: TextIO) -> None:
        if isinstance(error, RequestRejected):
            self.summary.rejected[job.key] = str(error)
            self.say(f"{job.key}: skipped, the server rejected the request: {error}")
            return
        if isinstance(error, RequestFailed):
            self.summary.failed[job.key] = str(error)
            self.say(f"{job.key}: failed after retries: {error}")
            return
        if error is not None:
            raise error
        assert answers is not None
        handle.write(self.line(job, answers))
        handle.flush()
        os.fsync(handle.fileno())
        self.summary.written.append(job.key)


def _progress(total: int, *, enabled: bool, desc: str) -> Any:
    from tqdm.auto import tqdm

    return tqdm(total=total, unit="job", desc=desc, disable=not enabled or None)
