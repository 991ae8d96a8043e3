"""Run a crash detector over tasks and write canonical predictions.

Two detectors: a model behind an OpenAI-compatible chat-completions endpoint (the API that
vLLM, Ollama, llama.cpp's server and hosted services share), asked ``runs`` times per task
with the papers' prompt; and the built-in static baseline (:mod:`junobench.detection.baseline`).

The model runner writes one line per finished instance, appended and flushed as soon as
all its runs are in, so an interrupted run loses at most the instances in flight; run
the same command again and it skips the instances already in the output. Requests that
fail for a passing reason (connection errors, timeouts, HTTP 429 and 5xx, malformed
replies) are retried with exponential backoff; a request the server rejects (HTTP 400,
e.g. a prompt longer than the model's context) skips that instance and reports it, as
the papers skipped such cases. The API key is read from an environment variable, sent
only in the ``Authorization`` header, and never printed.

>>> chat_url("http://localhost:8000/v1")
'http://localhost:8000/v1/chat/completions'
"""

from __future__ import annotations

import json
import os
import queue
import random
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from junobench.detection import prompt
from junobench.detection.baseline import static_detect
from junobench.detection.predictions import jsonl_line, write_predictions
from junobench.detection.tasks import task_key
from junobench.errors import JunoBenchError
from junobench.safety.atomic import check_file_target

DEFAULT_API_KEY_ENV = "OPENAI_API_KEY"
DEFAULT_RUNS = 5
_RETRY_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504, 520, 522, 524})
_REJECT_STATUS = frozenset({400, 413, 422})
_MAX_DELAY = 60.0


class RequestRejected(Exception):
    """The server refused this request for good (the instance is skipped)."""


class RetryableError(Exception):
    """A failure that may pass: try again after a pause (``retry_after`` seconds if given)."""

    def __init__(self, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


# --------------------------------------------------------------------------- the client


def chat_url(endpoint: str) -> str:
    """The chat-completions URL of an endpoint given as a base (``…/v1``) or in full."""
    url = endpoint.rstrip("/")
    if not url.startswith(("http://", "https://")):
        raise JunoBenchError(f"endpoint {endpoint!r} is not an http(s) URL",
                             hint="pass e.g. --endpoint http://localhost:8000/v1")
    return url if url.endswith("/chat/completions") else f"{url}/chat/completions"


@dataclass
class ChatClient:
    """One OpenAI-compatible chat-completions endpoint and the request settings."""

    endpoint: str
    model: str
    api_key: str | None = field(default=None, repr=False)
    temperature: float | None = None
    max_tokens: int | None = None
    json_mode: bool = False
    timeout: float = 600.0

    def __post_init__(self) -> None:
        self.url = chat_url(self.endpoint)

    def body(self, messages: list[dict[str, str]]) -> dict[str, Any]:
        body: dict[str, Any] = {"model": self.model, "messages": messages}
        if self.temperature is not None:
            body["temperature"] = self.temperature
        if self.max_tokens is not None:
            body["max_tokens"] = self.max_tokens
        if self.json_mode:
            body["response_format"] = {"type": "json_object"}
        return body

    def complete(self, messages: list[dict[str, str]]) -> str:
        """One completion's text. Raises :class:`RetryableError`, :class:`RequestRejected`
        or :class:`JunoBenchError` (a problem no retry fixes: bad key, wrong URL or model)."""
        data = json.dumps(self.body(messages)).encode("utf-8")
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        request = urllib.request.Request(self.url, data=data, headers=headers, method="POST")
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                raw = response.read()
        except urllib.error.HTTPError as error:
            raise self._http_error(error) from None
        except (urllib.error.URLError, TimeoutError, ConnectionError, OSError) as error:
            reason = getattr(error, "reason", error)
            raise RetryableError(self._scrub(f"cannot reach {self.url}: {reason}")) from None
        return self._content(raw)

    def _http_error(self, error: urllib.error.HTTPError) -> Exception:
        try:
            detail = error.read().decode("utf-8", "replace")
        except OSError:
            detail = ""
        detail = self._scrub(_server_message(detail))
        status = error.code
        message = f"HTTP {status} from {self.url}" + (f": {detail}" if detail else "")
        if status in _RETRY_STATUS:
            return RetryableError(message, _retry_after(error.headers.get("Retry-After")))
        if status in _REJECT_STATUS:
            return RequestRejected(message)
        if status in (401, 403):
            return JunoBenchError(message, hint="set the API key in the environment variable "
                                  "named by --api-key-env, or check its permissions")
        if status == 404:
            return JunoBenchError(message, hint="check --endpoint (an OpenAI-compatible base URL "
                                  "such as http://localhost:8000/v1) and --model")
        return JunoBenchError(message, hint="check the server's log")

    def _content(self, raw: bytes) -> str:
        try:
            reply = json.loads(raw)
            content = reply["choices"][0]["message"].get("content")
        except (ValueError, KeyError, IndexError, TypeError, AttributeError):
            text = raw[:200].decode("utf-8", "replace")
            raise RetryableError(self._scrub(f"malformed reply from {self.url}: {text!r}")) from None
        if content is None:
            return ""
        if isinstance(content, list):  # content parts
            return "".join(p.get("text", "") for p in content if isinstance(p, dict))
        return str(content)

    def _scrub(self, text: str) -> str:
        return text.replace(self.api_key, "***") if self.api_key else text


def _server_message(body: str) -> str:
    try:
        data = json.loads(body)
    except ValueError:
        return " ".join(body.split())[:300]
    error = data.get("error") if isinstance(data, dict) else None
    if isinstance(error, dict) and error.get("message"):
        return str(error["message"])[:300]
    if isinstance(error, str):
        return error[:300]
    return " ".join(body.split())[:300]


def _retry_after(value: str | None) -> float | None:
    try:
        return max(0.0, float(value)) if value is not None else None
    except ValueError:
        return None


def ask(
    client: ChatClient,
    messages: list[dict[str, str]],
    *,
    retries: int = 5,
    backoff: float = 2.0,
    sleep: Callable[[float], None] = time.sleep,
    stop: threading.Event | None = None,
    on_retry: Callable[[str], None] | None = None,
) -> str:
    """One completion, retrying passing failures up to ``retries`` times with exponential
    backoff (``backoff``·2^k seconds, jittered, at most 60 s; a ``Retry-After`` wins)."""
    for attempt in range(retries + 1):
        try:
            return client.complete(messages)
        except RetryableError as error:
            if attempt == retries or (stop is not None and stop.is_set()):
                raise
            delay = error.retry_after if error.retry_after is not None else min(
                _MAX_DELAY, backoff * 2 ** attempt * (0.5 + random.random() / 2))
            if on_retry is not None:
                on_retry(f"{error} (retry {attempt + 1}/{retries} in {delay:.1f}s)")
            if stop is not None:
                if stop.wait(delay):
                    raise
            else:
                sleep(delay)
    raise AssertionError("unreachable")


# --------------------------------------------------------------------------- resuming


def finished_instances(out: Path) -> set[str]:
    """Instances already in an output file. A last line cut short by an interruption is
    dropped (the file is rewritten without it); any other broken line is an error."""
    if not out.exists():
        return set()
    text = out.read_text(encoding="utf-8")
    lines = text.splitlines(keepends=True)
    done: list[tuple[str, str]] = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
            instance = item["instance"]
            if not isinstance(instance, str) or not isinstance(item.get("runs"), list):
                raise TypeError
        except (ValueError, KeyError, TypeError):
            if number == len(lines) and not line.endswith("\n"):
                write_predictions(out, [(i, json.loads(raw)["runs"]) for i, raw in done])
                return {i for i, _ in done}
            raise JunoBenchError(f"line {number} is not a predictions line", file=out,
                                 hint="pass another --out, or repair the file") from None
        done.append((instance, line))
    if lines and not text.endswith("\n"):
        with out.open("a", encoding="utf-8") as handle:
            handle.write("\n")
    return {i for i, _ in done}


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
    retries: int = 5,
    backoff: float = 2.0,
    timeout: float = 600.0,
    max_tokens: int | None = None,
    json_mode: bool = False,
    progress: bool = True,
    log: Callable[[str], None] | None = None,
) -> DetectSummary:
    """Ask the model ``runs`` times per task; append ``{"instance", "runs"}`` lines to ``out``.

    Instances already in ``out`` are skipped (resume). Returns what was written, resumed,
    rejected by the server, and what failed after all retries (run again to retry them).

    >>> detect(tasks, "preds.jsonl", endpoint="http://localhost:8000/v1",
    ...        model="Qwen/Qwen2.5-Coder-32B-Instruct")                  # doctest: +SKIP
    """
    if runs < 1:
        raise JunoBenchError(f"--runs must be at least 1, not {runs}")
    if concurrency < 1:
        raise JunoBenchError(f"--concurrency must be at least 1, not {concurrency}")
    out = check_file_target(out)  # appended to: a directory or a FIFO is refused
    out.parent.mkdir(parents=True, exist_ok=True)
    client = ChatClient(endpoint, model, api_key=os.environ.get(api_key_env) or None,
                        temperature=temperature, max_tokens=max_tokens, json_mode=json_mode,
                        timeout=timeout)
    summary = DetectSummary(out)
    done = finished_instances(out)
    summary.resumed = [task_key(t) for t in tasks if task_key(t) in done]
    pending = [t for t in tasks if task_key(t) not in done]
    say = log or (lambda message: None)
    stop = threading.Event()

    def one(task: dict[str, Any]) -> list[str]:
        messages = prompt.messages(task)
        instance = task_key(task)

        def retrying(message: str) -> None:
            say(f"{instance}: {message}")

        answers = []
        for _ in range(runs):
            if stop.is_set():
                raise _Stopped
            answers.append(ask(client, messages, retries=retries, backoff=backoff, stop=stop,
                               on_retry=retrying))
        return answers

    jobs: queue.SimpleQueue[dict[str, Any]] = queue.SimpleQueue()
    for task in pending:
        jobs.put(task)
    results: queue.SimpleQueue[tuple[str, list[str] | None, BaseException | None]] = (
        queue.SimpleQueue())

    def worker() -> None:
        while not stop.is_set():
            try:
                task = jobs.get_nowait()
            except queue.Empty:
                return
            try:
                results.put((task_key(task), one(task), None))
            except BaseException as error:  # handed to the main thread
                results.put((task_key(task), None, error))

    # Daemon threads: an interrupted run exits at once, leaving requests in flight behind.
    for number in range(min(concurrency, len(pending))):
        threading.Thread(target=worker, name=f"junobench-detect-{number}", daemon=True).start()
    bar = _progress(len(pending), enabled=progress)
    try:
        with out.open("a", encoding="utf-8") as handle:
            for _ in range(len(pending)):
                instance, answers, error = _next(results)
                _record(instance, answers, error, handle, summary, say)
                bar.update(1)
    finally:
        stop.set()
        bar.close()
    return summary


class _Stopped(Exception):
    """The run was stopped before this instance finished."""


def _next(results: queue.SimpleQueue[Any]) -> Any:
    while True:  # a timeout keeps the main thread responsive to Ctrl-C
        try:
            return results.get(timeout=0.5)
        except queue.Empty:
            continue


def _record(instance: str, answers: list[str] | None, error: BaseException | None,
            handle: TextIO, summary: DetectSummary, say: Callable[[str], None]) -> None:
    if isinstance(error, RequestRejected):
        summary.rejected[instance] = str(error)
        say(f"{instance}: skipped, the server rejected the request: {error}")
        return
    if isinstance(error, RetryableError):
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
