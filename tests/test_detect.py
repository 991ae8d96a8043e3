"""``junobench detect`` against a local server that speaks the chat-completions protocol."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from chat_server import ChatServer, target_of

from junobench.cli import main
from junobench.detection.client import base_url
from junobench.detection.detect import detect, finished_instances
from junobench.detection.layouts import read_predictions
from junobench.detection.tasks import build_tasks, write_tasks

REPO = Path(__file__).resolve().parent.parent


def record(case: str, version: str, target: str, executed: list[str]) -> dict:
    return {
        "instance": f"{case}_{version}", "case_id": case, "version": version,
        "crash": version == "reproduced", "library": case.split("_")[0],
        "library_label": case.split("_")[0], "root_cause": "API misuse",
        "crash_type": "key error", "pipeline_stage": "training", "ml_bug": "ML bug",
        "source": None, "exception": "KeyError" if version == "reproduced" else None,
        "diagnosis": "the column is gone" if version == "reproduced" else None,
        "executed_cells": [{"code_cell_index": i, "execution_count": i + 1, "source": s}
                           for i, s in enumerate(executed)],
        "target_cell": {"code_cell_index": len(executed), "execution_count": len(executed) + 1,
                        "source": target},
    }


def fixture_tasks(n: int = 6) -> list[dict]:
    records = []
    for k in range(n):
        case = f"pandas_{k + 1}"
        records.append(record(case, "reproduced", f"crash_{k} = df['gone']  # boom",
                              ["import pandas as pd", "df = pd.DataFrame({'a': [1]})"]))
        records.append(record(case, "fixed", f"fine_{k} = df['a']", ["import pandas as pd",
                              "df = pd.DataFrame({'a': [1]})"]))
    tasks, _ = build_tasks(records)
    return tasks


def answer(body: dict) -> str:
    """A model that is right: crash for the reproduced targets (they start with 'crash_')."""
    crash = target_of(body).startswith("crash_")
    return json.dumps({"reasoning": "looked at it", "detection": crash})


def by_target(tasks: list[dict]) -> dict[str, str]:
    return {t["target_cell"]["source"].strip(): t["id"] for t in tasks}


def test_detect_writes_runs_per_task_that_evaluate_reads(tmp_path):
    tasks = fixture_tasks(3)
    out = tmp_path / "pred.jsonl"
    with ChatServer(answer) as server:
        summary = detect(tasks, out, endpoint=server.url, model="tiny", runs=5, temperature=0.01,
                         concurrency=2, progress=False)
    assert sorted(summary.written) == sorted(t["id"] for t in tasks)
    predictions = read_predictions(out)
    assert predictions.layout == "jsonl"
    assert set(predictions.runs) == {t["id"] for t in tasks}
    assert all(len(runs) == 5 for runs in predictions.runs.values())
    assert len(server.requests) == 5 * len(tasks)
    body = server.requests[0]
    assert body["model"] == "tiny" and body["temperature"] == 0.01
    system, user = body["messages"]
    assert system["role"] == "system" and '"detection"' in system["content"]
    assert user["content"].index("# Executed Cells:") < user["content"].index("# Target Cell:")
    assert "# boom" not in json.dumps(server.requests)  # comments are stripped


@pytest.mark.skipif(os.name != "posix", reason="interrupts the run with SIGINT")
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_resume_after_interruption_does_not_repeat_finished_instances(tmp_path, signum):
    """SIGINT (or SIGTERM, as a scheduler sends) while requests are in flight (the server
    holds those of the last three tasks until the run is interrupted: a state, not a
    moment, however loaded the machine) exits 128 + the signal's number with the finished
    tasks written; the rerun asks only the rest."""
    tasks = fixture_tasks(6)
    task_file, _ = write_tasks(tasks, [], tmp_path / "tasks.jsonl", tmp_path / "truth.jsonl")
    out = tmp_path / "pred.jsonl"
    first_three = {t["target_cell"]["source"].strip() for t in tasks[:3]}
    with ChatServer(answer, hold=lambda body: target_of(body) not in first_three) as server:
        command = [sys.executable, "-m", "junobench", "detect", "--tasks", str(task_file),
                   "--endpoint", server.url, "--model", "tiny", "--out", str(out),
                   "--no-progress"]
        first = subprocess.Popen(command, cwd=REPO, stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True)
        try:
            deadline = time.monotonic() + 300  # a bound for a broken run, not a wait
            while not (server.held and out.exists() and len(out.read_text().splitlines()) == 3):
                if first.poll() is not None:
                    pytest.fail(f"detect ended before the interrupt: {first.communicate()}")
                if time.monotonic() > deadline:
                    pytest.fail("three tasks were not written while the rest were held")
                time.sleep(0.02)
            first.send_signal(signum)
            _, err = first.communicate(timeout=300)
        finally:
            if first.poll() is None:
                first.kill()
        assert first.returncode == 128 + signum, err
        assert err.strip().splitlines()[-1].startswith("interrupted"), err
        done_first = finished_instances(out)
        assert done_first == {t["id"] for t in tasks[:3]}
        asked_first = len(server.requests)

        server.release()
        second = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=300)
        assert second.returncode == 0, second.stderr
        assert second.stdout == "" and "3 were already there" in second.stderr
        asked_again = {by_target(tasks)[t] for t in server.targets()[asked_first:]}
    assert not asked_again & done_first
    predictions = read_predictions(out)  # also checks that no instance appears twice
    assert set(predictions.runs) == {t["id"] for t in tasks}
    assert all(len(runs) == 5 for runs in predictions.runs.values())


def test_survives_a_server_that_fails_some_requests(tmp_path):
    tasks = fixture_tasks(4)
    modes = {2: 500, 3: "drop", 5: 429, 7: "garbage", 11: 503, 12: 502}

    with ChatServer(answer, fail=lambda n, body: modes.get(n)) as server:
        summary = detect(tasks, tmp_path / "pred.jsonl", endpoint=server.url, model="tiny",
                         runs=5, retries=3, progress=False)
    assert summary.complete and not summary.rejected
    assert len(summary.written) == len(tasks)
    assert server.served == 5 * len(tasks)
    runs = read_predictions(tmp_path / "pred.jsonl").runs
    assert all(len(r) == 5 for r in runs.values())


def test_gives_up_on_an_instance_after_the_retries_and_reports_it(tmp_path, capsys):
    tasks = fixture_tasks(2)
    broken = tasks[1]["target_cell"]["source"].strip()

    def fail(n: int, body: dict) -> int | None:
        return 500 if target_of(body) == broken else None

    with ChatServer(answer, fail=fail) as server:
        summary = detect(tasks, tmp_path / "pred.jsonl", endpoint=server.url, model="tiny",
                         runs=2, retries=1, progress=False)
    assert list(summary.failed) == [tasks[1]["id"]]
    assert "HTTP 500" in summary.failed[tasks[1]["id"]]
    assert tasks[1]["id"] not in finished_instances(tmp_path / "pred.jsonl")
    assert len(summary.written) == len(tasks) - 1


def test_a_rejected_request_skips_the_instance(tmp_path):
    tasks = fixture_tasks(2)
    too_long = tasks[0]["target_cell"]["source"].strip()

    def fail(n: int, body: dict) -> int | None:
        return 400 if target_of(body) == too_long else None

    with ChatServer(answer, fail=fail) as server:
        summary = detect(tasks, tmp_path / "pred.jsonl", endpoint=server.url, model="tiny",
                         runs=3, progress=False)
    assert list(summary.rejected) == [tasks[0]["id"]]
    assert summary.complete
    assert len(read_predictions(tmp_path / "pred.jsonl").runs) == len(tasks) - 1


def test_api_key_comes_from_the_environment_and_is_never_printed(tmp_path, monkeypatch, capsys):
    secret = "sk-test-5ecret-do-not-print"
    tasks = fixture_tasks(1)
    task_file, _ = write_tasks(tasks, [], tmp_path / "tasks.jsonl", tmp_path / "truth.jsonl")
    out = tmp_path / "pred.jsonl"
    with ChatServer(answer, api_key=secret) as server:
        monkeypatch.setenv("MY_LLM_KEY", secret)
        code = main(["detect", "--tasks", str(task_file), "--endpoint", server.url,
                     "--model", "tiny", "--api-key-env", "MY_LLM_KEY", "--out", str(out),
                     "--runs", "2", "--no-progress"])
        assert code == 0
        assert all(h.get("Authorization") == f"Bearer {secret}" for h in server.headers)
        monkeypatch.setenv("MY_LLM_KEY", "sk-wrong-" + secret)
        code_bad = main(["detect", "--tasks", str(task_file), "--endpoint", server.url,
                         "--model", "tiny", "--api-key-env", "MY_LLM_KEY",
                         "--out", str(tmp_path / "other.jsonl"), "--no-progress"])
    captured = capsys.readouterr()
    assert code_bad == 1
    assert "HTTP 401" in captured.err and "API key" in captured.err
    assert secret not in captured.out + captured.err
    assert secret not in out.read_text()


def test_wrong_url_is_one_clear_error(tmp_path, capsys):
    tasks = fixture_tasks(1)
    task_file, _ = write_tasks(tasks, [], tmp_path / "tasks.jsonl", tmp_path / "truth.jsonl")
    with ChatServer(answer) as server:
        code = main(["detect", "--tasks", str(task_file), "--endpoint",
                     server.url.replace("/v1", "/nope"), "--model", "tiny",
                     "--out", str(tmp_path / "p.jsonl"), "--no-progress"])
    err = capsys.readouterr().err
    assert code == 1 and "HTTP 404" in err and "Traceback" not in err


def test_unreachable_server_is_retried_then_reported(tmp_path):
    tasks = fixture_tasks(1)[:1]
    summary = detect(tasks, tmp_path / "pred.jsonl", endpoint="http://127.0.0.1:9/v1",
                     model="tiny", runs=1, retries=1, timeout=2, progress=False)
    assert list(summary.failed) == [tasks[0]["id"]]
    assert "cannot reach http://127.0.0.1:9/v1" in summary.failed[tasks[0]["id"]]
    assert not (tmp_path / "pred.jsonl").read_text()


def test_a_cut_last_line_is_dropped_on_resume(tmp_path):
    out = tmp_path / "pred.jsonl"
    out.write_text('{"instance": "torch_1_fixed", "runs": ["FALSE"]}\n'
                   '{"instance": "torch_1_reproduced", "runs": ["TR')
    assert finished_instances(out) == {"torch_1_fixed"}
    assert out.read_text() == '{"instance": "torch_1_fixed", "runs": ["FALSE"]}\n'


def test_endpoint_needs_a_model_and_an_http_url(tmp_path, capsys):
    assert main(["detect", "--endpoint", "http://x/v1", "--out", str(tmp_path / "p.jsonl"),
                 "--source", "sample"]) == 1
    assert "--model" in capsys.readouterr().err
    with pytest.raises(Exception, match="not an http"):
        base_url("localhost:8000")
    assert base_url("https://api.example.com/v1/chat/completions/") == "https://api.example.com/v1"


def test_requests_go_concurrently_and_answers_keep_their_order(tmp_path):
    tasks = fixture_tasks(4)
    with ChatServer(answer, delay=0.2) as server:
        summary = detect(tasks, tmp_path / "pred.jsonl", endpoint=server.url, model="tiny",
                         runs=5, concurrency=7, progress=False)
    assert summary.complete and len(summary.written) == len(tasks)
    assert server.most_in_flight == 7  # 20 requests, never more than 7 at a time
    runs = read_predictions(tmp_path / "pred.jsonl").runs
    for task in tasks:
        crash = task["target_cell"]["source"].startswith("crash_")
        assert [json.loads(r)["detection"] for r in runs[task["id"]]] == [crash] * 5


def test_detect_help_lists_the_options(capsys):
    with pytest.raises(SystemExit):
        main(["detect", "--help"])
    text = capsys.readouterr().out
    for option in ("--endpoint", "--model", "--runs", "--temperature", "--concurrency",
                   "--baseline", "--api-key-env", "--out", "--retries", "--timeout"):
        assert option in text
