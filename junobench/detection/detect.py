"""Run a crash detector over tasks and write canonical predictions.

Two detectors: a model behind an OpenAI-compatible chat-completions endpoint, asked
``runs`` times per task with the papers' prompt (:mod:`.client`: one line per finished
task, appended and synced, so a second run resumes where the first stopped; rejected
requests skip their task; the API key never printed); and the built-in static baseline
(:mod:`junobench.detection.baseline`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from junobench import jsonl
from junobench.detection import prompt
from junobench.detection.baseline import static_detect
from junobench.detection.client import (
    DEFAULT_API_KEY_ENV,
    DEFAULT_RETRIES,
    DEFAULT_TIMEOUT,
    ChatSettings,
    Endpoint,
    Job,
    Summary,
    run_jobs,
)
from junobench.detection.names import DEFAULT_RUNS
from junobench.detection.predictions import jsonl_line, write_predictions
from junobench.detection.tasks import task_key
from junobench.errors import JunoBenchError
from junobench.safety.atomic import check_append_target

if TYPE_CHECKING:
    from openai import AsyncOpenAI

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


def resume(tasks: Sequence[Mapping[str, Any]], out: str | Path) -> tuple[Summary, set[str]]:
    """The summary of a run that appends to ``out`` (a directory or a FIFO is refused), the
    tasks already in it counted as resumed, and their ids (:func:`finished_instances`); a
    symbolic link is refused, as appends would go through it."""
    path = check_append_target(out)
    path.parent.mkdir(parents=True, exist_ok=True)
    done = finished_instances(path)
    return Summary(path, resumed=[task_key(t) for t in tasks if task_key(t) in done]), done


def _line_problem(item: Any) -> str | None:
    if isinstance(item, dict) and isinstance(item.get("instance"), str) \
            and isinstance(item.get("runs"), list):
        return None
    return "not a predictions line"


# --------------------------------------------------------------------------- running


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
) -> Summary:
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
    where = Endpoint(endpoint, ChatSettings(model, temperature, max_tokens, json_mode),
                     concurrency, api_key_env, retries, timeout)
    where.check()
    summary, done = resume(tasks, out)
    jobs = [Job(task_key(t), [prompt.messages(t)] * runs) for t in tasks if task_key(t) not in done]
    run_jobs(jobs, summary.out, where, lambda job, answers: jsonl_line(job.key, answers), summary,
             progress=progress, desc="detect", log=log, client=client)
    return summary


def detect_static(tasks: Iterable[dict[str, Any]], out: str | Path) -> Summary:
    """Run the static baseline (one deterministic run per task) and write ``out`` whole."""
    items = [(task_key(t), [static_detect(t)]) for t in tasks]
    path = write_predictions(out, items)
    return Summary(path, written=[i for i, _ in items])
