"""The Inspect task ``junobench/crash_detection``, run offline through Inspect's ``openai``
provider against the local chat-completions server, and its log scored by ``evaluate``.
Inspect (~2 s to import) is imported by the tests that use it, not at collection, which
every pytest worker does for every module."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from chat_server import ChatServer
from cli_run import run_cli  # tests/ is on sys.path under pytest

from junobench.detection import prompt
from junobench.detection.evaluate import evaluate
from junobench.detection.layouts import read_predictions
from junobench.detection.tasks import tasks


def is_prompt(body: dict) -> bool:
    return "# Target Cell:" in body["messages"][-1]["content"]


def prompts(server: ChatServer) -> list[dict]:
    return [b for b in server.requests if is_prompt(b)]


def unparsable(target: str) -> bool:
    return len(target) % 5 == 0


def dissents(target: str) -> bool:
    return len(target) % 3 == 0 and not unparsable(target)


class Detector:
    """A model that knows the sample's answers and answers in three styles, with a wrong
    answer on some epochs of some notebooks and an unparsable one on others."""

    def __init__(self) -> None:
        items, truths = tasks("sample")
        # Keyed by the whole user message: two notebooks of a case may share a target cell.
        self.crash = {prompt.user_message(t): r["crash"] for t, r in zip(items, truths, strict=True)}
        assert len(self.crash) == len(items)
        self.asked: dict[str, int] = {}

    def __call__(self, body: dict) -> str:
        if not is_prompt(body):
            return "hello, world"  # Inspect's check that the model answers at all
        target = body["messages"][-1]["content"]
        number = self.asked[target] = self.asked.get(target, 0) + 1
        crash = self.crash[target]
        if dissents(target) and number == 2:
            crash = not crash  # one dissenting epoch: the majority still wins
        if unparsable(target) and number == 1:
            return "I cannot tell."  # unparsable: does not vote
        styles = [json.dumps({"reasoning": "read the code", "detection": crash}),
                  f"Sure.\n```json\n{json.dumps({'reasoning': 'r', 'detection': crash})}\n```",
                  "TRUE" if crash else "FALSE"]
        return styles[number % 3]


@pytest.fixture
def openai_env(monkeypatch):
    def point(server: ChatServer) -> None:
        monkeypatch.setenv("OPENAI_BASE_URL", server.url)
        monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    monkeypatch.setenv("INSPECT_DISPLAY", "none")
    return point


def test_inspect_runs_the_task_end_to_end_and_evaluate_scores_its_log(openai_env, tmp_path,
                                                                       capsys):
    from inspect_ai import eval as inspect_eval

    from junobench.inspect_tasks import crash_detection

    detector = Detector()
    with ChatServer(detector) as server:
        openai_env(server)
        (log,) = inspect_eval(crash_detection(source="sample", runs=3), model="openai/tiny",
                              log_dir=str(tmp_path / "logs"), display="none", **server.inspect_args)
    assert log.status == "success", log.error
    assert len(prompts(server)) == 20 * 3  # 20 notebooks, 3 epochs
    # The model got the built-in prompt, unchanged (here through the Responses API, which
    # Inspect's openai provider uses for a model name it does not know).
    items, _ = tasks("sample")
    sent = {(b["messages"][0]["content"], b["messages"][-1]["content"]) for b in prompts(server)}
    assert sent == {(prompt.system_message(t), prompt.user_message(t)) for t in items}
    assert all(b["model"] == "tiny" and "input" in b for b in prompts(server))
    # Inspect's own scores: every notebook decided right by the majority of its epochs.
    (score,) = log.results.scores
    assert score.reducer == "crash_majority"
    metrics = {name: m.value for name, m in score.metrics.items()}
    assert metrics["accuracy"] == metrics["f1"] == metrics["precision"] == metrics["recall"] == 1.0
    # The log is a predictions file: each sample's epochs are its runs.
    path = Path(log.location)
    predictions = read_predictions(path)
    assert predictions.layout == "inspect" and len(predictions.runs) == 20
    assert all(len(runs) == 3 for runs in predictions.runs.values())
    report = evaluate(path, "sample")
    assert report.layout == "inspect" and report.missing == []
    assert (report.overall.tp, report.overall.tn, report.overall.fp, report.overall.fn) == (10, 10, 0, 0)
    bad = sum(unparsable(t) for t in detector.crash)
    assert len(report.unparsable) == bad and bad > 0
    every = evaluate(path, "sample", vote="all-runs").overall  # each epoch on its own
    assert every.n == 60 - bad
    assert every.fp + every.fn == sum(dissents(t) for t in detector.crash) > 0
    code, out, err = run_cli(capsys, "evaluate", str(path), "--source", "sample", "--format", "json")
    assert code == 0, err
    assert json.loads(out)["layout"] == "inspect" and json.loads(out)["accuracy"] == 1.0


def test_filters_and_runs_are_task_options(openai_env, tmp_path):
    from inspect_ai import eval as inspect_eval
    from inspect_ai.log import read_eval_log

    from junobench.inspect_tasks import crash_detection

    detector = Detector()
    with ChatServer(detector) as server:
        openai_env(server)
        (log,) = inspect_eval(crash_detection(source="sample", library="pandas,numpy", runs=2),
                              model="openai/tiny", model_args={"responses_api": False},
                              log_dir=str(tmp_path), display="none", **server.inspect_args)
    assert log.status == "success", log.error
    assert log.eval.config.epochs == 2
    ids = {str(s.id) for s in read_eval_log(log.location).samples}
    assert ids and all(i.startswith(("pandas_", "numpy_")) for i in ids)
    assert len(prompts(server)) == 2 * len(ids)
    assert all("input" not in b for b in prompts(server))  # chat completions this time


def test_inspect_eval_command_finds_the_registered_task(openai_env, tmp_path):
    """``inspect eval junobench/crash_detection`` resolves through the package's entry point."""
    from inspect_ai.log import list_eval_logs, read_eval_log

    with ChatServer(Detector()) as server:
        env = {**os.environ, "OPENAI_BASE_URL": server.url, "OPENAI_API_KEY": "test-key",
               "INSPECT_DISPLAY": "none", "INSPECT_LOG_DIR": str(tmp_path)}
        done = subprocess.run(
            [sys.executable, "-m", "inspect_ai", "eval", "junobench/crash_detection",
             "--model", "openai/tiny", "-T", "source=sample", "-T", "library=sklearn",
             "-T", "runs=1", "--log-dir", str(tmp_path)],
            cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    (info,) = list_eval_logs(str(tmp_path))
    log = read_eval_log(info)
    assert log.eval.task == "junobench/crash_detection" and log.status == "success"
    assert {str(s.id) for s in log.samples} == {f"sklearn_{n}_{v}" for n in (1, 2)
                                                for v in ("reproduced", "fixed")}
    assert len(prompts(server)) == 4


def test_the_inspect_task_sends_crane_llms_published_inputs(crane_llm_dir, reference_snapshot):
    from junobench.inspect_tasks import crash_detection

    folder = crane_llm_dir / "llms/llms_inputs/executed_code_runinfo"
    task = crash_detection(source=str(reference_snapshot), crane_inputs=str(folder),
                           library="lightgbm,statsmodels")
    samples = list(task.dataset)
    assert len(samples) == 6
    for sample in samples:
        assert sample.input[1].content == (folder / "other" / f"{sample.id}.txt").read_text()
