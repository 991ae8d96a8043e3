"""The LLM judge: its protocol through a local OpenAI-compatible server, resuming, and
its published judgments against the published human ones."""

from __future__ import annotations

import json

import pytest
from chat_server import ChatServer
from cli_run import run_cli

from junobench.detection.predictions import write_predictions
from junobench.diagnosis.judge import (
    judge,
    judge_agreement,
    judgments_from,
    read_judge_statistics,
    read_judged_folders,
    side_by_side,
)
from junobench.diagnosis.judgments import read_judgments

TRUTH = {
    "torch_1_reproduced": {"crash": True, "diagnosis": "the tensor shapes do not match"},
    "torch_1_fixed": {"crash": False, "diagnosis": None},
    "numpy_2_reproduced": {"crash": True, "diagnosis": "index out of range"},
}
RUNS = [
    ("torch_1_reproduced", [{"detection": True, "reasoning": "shapes do not match"},
                            {"detection": True, "reasoning": "wrong dtype"},
                            {"detection": True, "reasoning": "shapes do not match"}]),
    ("torch_1_fixed", [{"detection": False, "reasoning": "fine"}, {"detection": True, "reasoning": "x"},
                       {"detection": False, "reasoning": "fine"}]),
    ("numpy_2_reproduced", [{"detection": False, "reasoning": "fine"}] * 3),
]


def grade(body):
    """A judge that reads the request as a person would: detection first, then the reason."""
    user = body["messages"][-1]["content"]
    truth_crash = "the target cell crashes." in user.split("Ground truth:")[1].split("\n")[0] \
        and "does not crash" not in user.split("Ground truth:")[1].split("\n")[0]
    said_crash = "Prediction: the target cell crashes." in user
    if truth_crash != said_crash:
        return "The detection is wrong. [Wrong]"
    if not truth_crash:
        return "No crash, as predicted. [Correct]"
    return "Same cause. [Correct]" if "shapes do not match" in user.split("Predicted reasoning:")[1] \
        else "Another cause. [Reasoning Wrong]"


def test_judge_through_a_local_server_resumes_and_reduces(tmp_path, capsys):
    preds = write_predictions(tmp_path / "p.jsonl", RUNS)
    out = tmp_path / "labels.jsonl"
    with ChatServer(grade) as server:
        summary = judge(preds, TRUTH, out, setting="m_code", endpoint=server.url, model="judge",
                        repeats=2, concurrency=3)
        assert len(server.requests) == 3 * 3 * 2 and not summary.failed
        first = server.requests[0]["messages"][-1]["content"]
        assert first.index("Ground truth") < first.index("Prediction:")
        again = judge(preds, TRUTH, out, setting="m_code", endpoint=server.url, model="judge",
                      repeats=2)
        assert again.written == [] and len(again.resumed) == 6 and len(server.requests) == 18
        judge(preds, TRUTH, tmp_path / "rev.jsonl", setting="m_code", endpoint=server.url,
              model="judge", repeats=1, reverse=True)
        last = server.requests[-1]["messages"][-1]["content"]
        assert last.index("Prediction:") < last.index("Ground truth")
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(lines) == 6 and {tuple(x["labels"]) for x in lines if x["instance"] == "torch_1_fixed"} \
        == {("[Correct]", "[Wrong]", "[Correct]")}
    judged = judgments_from(out).settings["m_code"]
    assert judged == {"torch_1_reproduced": "correct", "torch_1_fixed": "correct",
                      "numpy_2_reproduced": "wrong"}
    # A cut-short last line (an interrupted run) is dropped and judged again.
    out.write_text(out.read_text()[:-20])
    with ChatServer(grade) as server:
        judge(preds, TRUTH, out, setting="m_code", endpoint=server.url, model="judge", repeats=2)
        assert len(server.requests) == 3
    assert judgments_from(out).settings["m_code"] == judged
    code, printed, err = run_cli(capsys, "evaluate", "--judgments", str(
        _write(tmp_path, judgments_from(out))), "--format", "json", "--resamples", "20")
    assert code == 0, err
    assert json.loads(printed)["settings"]["m_code"]["tp"] == 1


def _write(tmp_path, judgments):
    from junobench.diagnosis.judgments import write_judgments

    return write_judgments(tmp_path / "judged.jsonl", judgments)


def test_unreadable_answers_are_kept_and_not_counted(tmp_path):
    preds = write_predictions(tmp_path / "p.jsonl", RUNS[:1])
    out = tmp_path / "labels.jsonl"
    with ChatServer(lambda body: "I cannot tell.") as server:
        judge(preds, TRUTH, out, setting="s", endpoint=server.url, model="j", repeats=1)
    (line,) = [json.loads(x) for x in out.read_text().splitlines()]
    assert all(label.startswith("Cannot verify: I cannot tell") for label in line["labels"])
    assert judgments_from(out).settings == {}


def test_published_judge_agrees_with_the_humans_as_published(crane_llm_dir, capsys):
    human = read_judgments(crane_llm_dir / "results" / "results_summary.xlsx")
    published = read_judge_statistics(crane_llm_dir / "results" / "llm_judge_statistics.xlsx")
    rows = []
    for tree in ("llms/llms_outputs", "sas/sas_outputs"):
        rows += side_by_side(judge_agreement(read_judged_folders(crane_llm_dir / tree), human),
                             published)
    assert len(rows) == 5
    for row in rows:
        for kind in ("-RT", "+RT"):
            assert row[f"F ({kind})"] == row[f"published F ({kind})"], row
            assert row[f"accuracy ({kind})"] == pytest.approx(row[f"published accuracy ({kind})"])
    code, out, err = run_cli(capsys, "judge", "--folders", str(crane_llm_dir / "llms/llms_outputs"),
                             "--against", str(crane_llm_dir / "results/results_summary.xlsx"),
                             "--published", str(crane_llm_dir / "results/llm_judge_statistics.xlsx"),
                             "--format", "json")
    assert code == 0, err
    gpt = next(r for r in json.loads(out) if r["model"] == "gpt_5")
    assert (gpt["F (-RT)"], gpt["published F (-RT)"], gpt["F (+RT)"]) == (32, 32, 23)


def test_inspect_scorer_judges_each_epoch_and_reduces_as_crane(tmp_path, monkeypatch):
    """The Inspect task with ``judge=self``: the detector answers, then judges its answers;
    the judge's outcomes reduce over the epochs and read back as judgments."""
    pytest.importorskip("inspect_ai")
    from inspect_ai import eval as inspect_eval

    from junobench.detection.tasks import tasks
    from junobench.diagnosis.inspect_judge import judgments_from_log
    from junobench.inspect_tasks import crash_detection

    items, truths = tasks("sample", library="pandas")
    crash = {t["target_cell"]["source"].strip(): r["crash"] for t, r in zip(items, truths, strict=True)}

    def model(body):
        user = body["messages"][-1]["content"]
        if "# Target Cell:" in user:  # the detector: always right, always the same reason
            target = user.rsplit("# Target Cell:\n", 1)[1].strip()
            return json.dumps({"detection": crash.get(target, False), "reasoning": "a KeyError"})
        if "Ground truth:" in user:
            return "The cause matches. [Correct]" if "does not crash" in user \
                else "Another cause. [Reasoning Wrong]"
        return "hello"

    with ChatServer(model) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.url)
        monkeypatch.setenv("OPENAI_API_KEY", "test-key")
        monkeypatch.setenv("INSPECT_DISPLAY", "none")
        (log,) = inspect_eval(crash_detection(source="sample", library="pandas", runs=2,
                                              judge="self", judge_passes=3),
                              model="openai/diagnosis-tiny", model_args={"responses_api": False},
                              log_dir=str(tmp_path), display="none", **server.inspect_args)
    assert log.status == "success", log.error
    judged = [b for b in server.requests if "Ground truth:" in b["messages"][-1]["content"]]
    assert len(judged) == len(items) * 2 * 3  # every epoch's answer, 3 passes
    assert any("Ground-truth diagnosis: " in b["messages"][-1]["content"] and "(none given)"
               not in b["messages"][-1]["content"] for b in judged)
    scores = {s.name: s for s in log.results.scores}
    metrics = {k: m.value for k, m in scores["diagnosis_judge"].metrics.items()}
    reproduced = sum(r["crash"] for r in truths)
    assert metrics["reasoning_wrong"] == reproduced
    assert metrics["end_to_end_accuracy"] == pytest.approx((len(items) - reproduced) / len(items))
    judgments = judgments_from_log(log.location, "tiny")
    data = score_judgments_dict(judgments)
    assert (data["tp"], data["fn"], data["reasoning_wrong"]) == (0, reproduced, reproduced)


def score_judgments_dict(judgments):
    from junobench.diagnosis.endtoend import score_judgments

    return score_judgments(judgments, resamples=10)["tiny"].to_dict()
