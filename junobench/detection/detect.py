"""Run a crash detector over tasks and write canonical predictions.

Two detectors: a model behind an OpenAI-compatible chat-completions endpoint (the API that
vLLM, Ollama, llama.cpp's server and hosted services share), asked ``runs`` times per task
with the papers' prompt through the ``openai`` SDK's async client; and the built-in static
baseline (:mod:`junobench.detection.baseline`).

Up to ``concurrency`` requests are in flight at once. The runner writes one line per
finished task, appended and flushed as soon as all its runs are in, so an interrupted run
loses at most the tasks in flight; run the same command again and it skips the tasks
already in the output. The SDK retries what may pass (connection errors, timeouts, HTTP
408/409/429/5xx, honouring ``Retry-After``) with its exponential backoff, ``retries``
times; a reply that is not a completion is asked again as often. A request the server
rejects (HTTP 400/413/422, e.g. a prompt longer than the model's context) skips that task
and reports it, as the papers skipped such cases; a wrong key, URL or model stops the run
with one error. The API key is read from an environment variable, sent only in the
``Authorization`` header, and never printed.

>>> base_url("http://localhost:8000/v1/chat/completions")
'http://localhost:8000/v1'
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from junobench import jsonl
from junobench.detection import prompt
from junobench.detection.baseline import static_detect
from junobench.detection.predictions import jsonl_line, write_predictions
from junobench.detection.tasks import task_key
from junobench.errors import JunoBenchError
from junobench.safety.atomic import check_file_target

if TYPE_CHECKING:
    from openai import AsyncOpenAI

DEFAULT_API_KEY_ENV = "OPENAI_API_KEY"
DEFAULT_RUNS = 5
DEFAULT_RETRIES = 5
DEFAULT_TIMEOUT = 600.0
#: Sent when no key is set: local servers ignore it, the SDK needs one.
NO_KEY = "no-key"
_REJECT_STATUS = frozenset({400, 413, 422})


class RequestRejected(Exception):
    """The server refused this request for good (the task is skipped)."""


class RequestFailed(Exception):
    """A request still failing after the retries (the task is left for the next run)."""


# --------------------------------------------------------------------------- the client


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

    def request(self, messages: list[dict[str, str]]) -> dict[str, Any]:
        body: dict[str, Any] = {"model": self.model, "messages": messages}
        if self.temperature is not None:
            body["temperature"] = self.temperature
        if self.max_tokens is not None:
            body["max_tokens"] = self.max_tokens
        if self.json_mode:
            body["response_format"] = {"type": "json_object"}
        return body


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


async def complete(client: AsyncOpenAI, settings: ChatSettings, messages: list[dict[str, str]],
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


# --------------------------------------------------------------------------- resuming


def finished_instances(out: Path) -> set[str]:
    """Instances already in an output file. A last line cut short by an interruption is
    dropped (the file is rewritten without it); any other broken line, and an instance on
    two lines, is an error naming the lines."""
    first_line: dict[str, int] = {}
    for number, item in jsonl.read_jsonl(out, what="predictions", resume=True,
                                         problem_of=_line_problem,
                                         hint="pass another --out, or repair the file"):
        instance = item["instance"]
        if instance in first_line:
            raise JunoBenchError(f"line {number}: instance {instance!r} appears twice (first at line "
                                 f"{first_line[instance]})", file=out, case=instance,
                                 hint="keep one line per instance, or pass another --out")
        first_line[instance] = number
    return set(first_line)


def _line_problem(item: Any) -> str | None:
    if isinstance(item, dict) and isinstance(item.get("instance"), str) \
            and isinstance(item.get("runs"), list):
        return None
    return "not a predictions line"


# --------------------------------------------------------------------------- running


@dataclass
class DetectSummary:
    """What a detection run did."""

    out: Path
    written: list[str] = field(default_factory=list)
    resumed: list[str] = field(default_factory=list)
    rejected: dict[str, str] = field(default_factory=dict)
    failed: dict[str, str] = field(default_factory=dict)

    @property
    def complete(self) -> bool:
        return not self.failed


def detect(
    tasks: Sequence[dict[str, Any]],
    out: str | Path,
    *,
    endpoint: str,
    model: str,
    runs: int = DEFAULT_RUNS,
    temperature: float | None = None,
    concurrency: int = 1,
    api_key_env: str = DEFAULT_API_KEY_ENV,
    retries: int = DEFAULT_RETRIES,
    timeout: float = DEFAULT_TIMEOUT,
    max_tokens: int | None = None,
    json_mode: bool = False,
    progress: bool = True,
    log: Callable[[str], None] | None = None,
    client: AsyncOpenAI | None = None,
) -> DetectSummary:
    """Ask the model ``runs`` times per task, ``concurrency`` requests at a time; append
    ``{"instance", "runs"}`` lines to ``out`` (``instance`` is the task's id).

    Tasks already in ``out`` are skipped (resume). Returns what was written, resumed,
    rejected by the server, and what failed after all retries (run again to retry them).
    ``client`` replaces the SDK client built from ``endpoint`` (for tests and proxies).

    >>> detect(tasks, "preds.jsonl", endpoint="http://localhost:8000/v1",
    ...        model="Qwen/Qwen2.5-Coder-32B-Instruct")                  # doctest: +SKIP
    """
    if runs < 1:
        raise JunoBenchError(f"--runs must be at least 1, not {runs}")
    if concurrency < 1:
        raise JunoBenchError(f"--concurrency must be at least 1, not {concurrency}")
    if retries < 0:
        raise JunoBenchError(f"--retries must be at least 0, not {retries}")
    out = check_file_target(out)  # appended to: a directory or a FIFO is refused
    out.parent.mkdir(parents=True, exist_ok=True)
    secret = os.environ.get(api_key_env) or None
    if client is None:
        client = make_client(endpoint, api_key=secret, retries=retries, timeout=timeout)
    settings = ChatSettings(model, temperature, max_tokens, json_mode)
    summary = DetectSummary(out)
    done = finished_instances(out)
    summary.resumed = [task_key(t) for t in tasks if task_key(t) in done]
    pending = [t for t in tasks if task_key(t) not in done]
    run = _Run(client, settings, runs, concurrency, retries, secret, log or (lambda m: None))
    asyncio.run(run.all(pending, out, summary, progress))
    return summary


@dataclass
class _Run:
    """One detection run: the client, its settings, and the limit on requests in flight."""

    client: AsyncOpenAI
    settings: ChatSettings
    runs: int
    concurrency: int
    retries: int
    secret: str | None
    say: Callable[[str], None]

    async def all(self, pending: Sequence[dict[str, Any]], out: Path, summary: DetectSummary,
                  progress: bool) -> None:
        limit = asyncio.Semaphore(self.concurrency)
        jobs = [asyncio.ensure_future(self.one(task, limit)) for task in pending]
        bar = _progress(len(pending), enabled=progress)
        try:
            with out.open("a", encoding="utf-8") as handle:
                for finished in asyncio.as_completed(jobs):
                    instance, answers, error = await finished
                    # In a thread: the fsync must not stall the requests in flight.
                    await asyncio.to_thread(_record, instance, answers, error, handle, summary,
                                            self.say)
                    bar.update(1)
        finally:
            for job in jobs:
                job.cancel()
            await asyncio.gather(*jobs, return_exceptions=True)
            bar.close()
            await self.client.close()

    async def one(self, task: dict[str, Any], limit: asyncio.Semaphore
                  ) -> tuple[str, list[str] | None, Exception | None]:
        """All runs of one task (each its own request); the first error ends the task."""
        messages = prompt.messages(task)

        async def ask() -> str:
            async with limit:
                return await complete(self.client, self.settings, messages,
                                      malformed_retries=self.retries, secret=self.secret)

        instance = task_key(task)
        try:
            return instance, list(await asyncio.gather(*(ask() for _ in range(self.runs)))), None
        except (RequestRejected, RequestFailed, JunoBenchError) as error:
            return instance, None, error


def _record(instance: str, answers: list[str] | None, error: Exception | None,
            handle: TextIO, summary: DetectSummary, say: Callable[[str], None]) -> None:
    if isinstance(error, RequestRejected):
        summary.rejected[instance] = str(error)
        say(f"{instance}: skipped, the server rejected the request: {error}")
        return
    if isinstance(error, RequestFailed):
        summary.failed[instance] = str(error)
        say(f"{instance}: failed after retries: {error}")
        return
    if error is not None:
        raise error
    assert answers is not None
    handle.write(jsonl_line(instance, answers))
    handle.flush()
    os.fsync(handle.fileno())
    summary.written.append(instance)


def _progress(total: int, *, enabled: bool) -> Any:
    from tqdm.auto import tqdm

    return tqdm(total=total, unit="notebook", desc="detect", disable=not enabled or None)


def detect_static(tasks: Iterable[dict[str, Any]], out: str | Path) -> DetectSummary:
    """Run the static baseline (one deterministic run per task) and write ``out`` whole."""
    items = [(task_key(t), [static_detect(t)]) for t in tasks]
    path = write_predictions(out, items)
    return DetectSummary(path, written=[i for i, _ in items])
