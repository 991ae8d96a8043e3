"""The LLM judge: its protocol through a local OpenAI-compatible server, resuming, and
its published judgments against the published human ones."""

from __future__ import annotations

import json

import pytest
from chat_server import ChatServer
from cli_run import run_cli

from junobench.detection.judge import (
    judge,
    judge_agreement,
    judgments_from,
    read_judge_statistics,
    read_judged_folders,
    side_by_side,
)
from junobench.detection.judgments import read_judgments
from junobench.detection.predictions import write_predictions

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
        assert again.written == [] and again.resumed == 6 and len(server.requests) == 18
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
    assert json.loads(printed)["m_code"]["tp"] == 1


def _write(tmp_path, judgments):
    from junobench.detection.judgments import write_judgments

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
