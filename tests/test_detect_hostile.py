"""`detect` against a hostile server: a reply dripped a byte a second ends at the
deadline, a huge reply is cut at the cap with bounded memory, a null message is asked
again; an output file with an instance twice is refused."""

from __future__ import annotations

import json
import time
import tracemalloc

import pytest
from chat_server import ChatServer
from cli_run import run_cli
from test_detect import answer, fixture_tasks

from junobench.detection.bounded import MAX_REPLY_BYTES
from junobench.detection.detect import detect
from junobench.errors import JunoBenchError


def test_a_dripping_server_is_cut_at_one_deadline_per_attempt(tmp_path):
    tasks = fixture_tasks(1)[:1]
    with ChatServer(answer, fail=lambda n, body: "drip") as server:
        started = time.monotonic()
        summary = detect(tasks, tmp_path / "p.jsonl", endpoint=server.url, model="m", runs=1,
                         retries=1, timeout=2.0, progress=False)
        took = time.monotonic() - started
    assert list(summary.failed) == [tasks[0]["id"]] and not summary.written
    assert "within 2 s" in summary.failed[tasks[0]["id"]]
    assert len(server.requests) == 2  # the first attempt and one retry, each cut at 2 s
    assert 2 * 2.0 <= took < 30  # two deadlines and a backoff, not the drip's minutes
    assert server.sent <= 2 * 3  # a byte a second: what two attempts of 2 s can take


@pytest.mark.parametrize("mode", ["huge", "huge declared"])
def test_a_huge_reply_is_cut_at_the_cap_and_memory_stays_bounded(tmp_path, mode):
    tasks = fixture_tasks(1)[:1]
    with ChatServer(answer, fail=lambda n, body: mode, huge_bytes=256 << 20) as server:
        tracemalloc.start()
        try:
            summary = detect(tasks, tmp_path / "p.jsonl", endpoint=server.url, model="m", runs=1,
                             retries=1, timeout=60, progress=False)
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
    assert list(summary.failed) == [tasks[0]["id"]]
    assert "refused" in summary.failed[tasks[0]["id"]]
    assert len(server.requests) == 2  # counted as a failed attempt, and retried
    assert peak < 8 * MAX_REPLY_BYTES  # not the 256 MiB the server offered


def test_a_null_message_is_asked_again_never_stored_as_empty(tmp_path):
    tasks = fixture_tasks(1)[:1]
    replies = iter([None, None, json.dumps({"reasoning": "r", "detection": True})])
    with ChatServer(lambda body: next(replies)) as server:
        summary = detect(tasks, tmp_path / "p.jsonl", endpoint=server.url, model="m", runs=1,
                         retries=3, progress=False)
    assert summary.written == [tasks[0]["id"]] and len(server.requests) == 3
    runs = json.loads((tmp_path / "p.jsonl").read_text())["runs"]
    assert runs == [json.dumps({"reasoning": "r", "detection": True})]
    with ChatServer(lambda body: None) as server:
        summary = detect(tasks, tmp_path / "q.jsonl", endpoint=server.url, model="m", runs=1,
                         retries=1, progress=False)
    assert list(summary.failed) == [tasks[0]["id"]] and "no message text" in summary.failed[tasks[0]["id"]]
    assert not (tmp_path / "q.jsonl").read_text()


def test_an_output_with_an_instance_twice_is_refused_with_its_lines(tmp_path, capsys):
    tasks = fixture_tasks(2)
    out = tmp_path / "p.jsonl"
    line = json.dumps({"instance": tasks[0]["id"], "runs": ["TRUE"]})
    other = json.dumps({"instance": tasks[1]["id"], "runs": ["TRUE"]})
    out.write_text(f"{line}\n{other}\n{line}\n")
    with ChatServer(answer) as server:
        with pytest.raises(JunoBenchError, match=r"line 3: instance .* appears twice \(first at line 1\)"):
            detect(tasks, out, endpoint=server.url, model="m", runs=1, progress=False)
        task_file = tmp_path / "tasks.jsonl"
        task_file.write_text("".join(json.dumps(t) + "\n" for t in tasks))
        code, _, err = run_cli(capsys, "detect", "--tasks", str(task_file), "--endpoint", server.url,
                               "--model", "m", "--out", str(out), "--no-progress")
        assert code == 1 and err.startswith("error: ") and "line 3" in err and len(err.splitlines()) == 1
        assert server.requests == []
    assert out.read_text() == f"{line}\n{other}\n{line}\n"  # nothing changed


@pytest.mark.parametrize(("url", "proxy"), [
    ("https://api.example.com/v1", "http://proxy.test:3128"),
    ("http://plain.example.com/v1", "http://plain-proxy.test:8080"),
    ("http://127.0.0.1:8000/v1", None),
    ("https://inside.corp/v1", None),
])
def test_the_bounded_client_keeps_the_environment_s_proxy(monkeypatch, url, proxy):
    from junobench.detection.bounded import environment_proxy

    for name in ("https_proxy", "http_proxy", "all_proxy", "no_proxy"):
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.upper(), raising=False)
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.test:3128")
    monkeypatch.setenv("HTTP_PROXY", "http://plain-proxy.test:8080")
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost,.corp")
    assert environment_proxy(url) == proxy


def test_an_output_that_is_a_symbolic_link_is_refused_not_appended_through(tmp_path):
    """The resumable writers (a model's runs, an analyser's, the judge's labels) append to
    --out: a link there would have them write into the file it points at."""
    from test_analysers import fake_runner

    from junobench.detection.analysers import detect_analyser
    from junobench.diagnosis.judge import judge

    tasks = fixture_tasks(1)
    target = tmp_path / "precious.txt"
    target.write_text("keep me\n")
    out = tmp_path / "p.jsonl"
    out.symlink_to(target)
    with pytest.raises(JunoBenchError, match="is a symbolic link"):
        detect_analyser(tasks, out, "pylint", runner=fake_runner(["[]"])[0])
    with ChatServer(answer) as server:
        with pytest.raises(JunoBenchError, match="is a symbolic link"):
            detect(tasks, out, endpoint=server.url, model="m", runs=1, progress=False)
        runs = tmp_path / "runs.jsonl"
        runs.write_text('{"instance": "pandas_1_reproduced", "runs": ["TRUE"]}\n')
        with pytest.raises(JunoBenchError, match="is a symbolic link"):
            judge(runs, {"pandas_1_reproduced": {"crash": True, "diagnosis": "d"}}, out,
                  setting="s", endpoint=server.url, model="m", progress=False)
        assert server.requests == []
    assert out.is_symlink() and target.read_text() == "keep me\n"
