"""The human evaluation: a blinded sheet of the diagnoses to judge, filled and read back as
judgments that score as CRANE-LLM's published human evaluation; the second rater's sample;
two raters' agreement."""

from __future__ import annotations

import json
import random

import pytest
from cli_run import run_cli

from junobench.diagnosis.agreement import agreement, cohen_kappa, rater_agreement, read_second_rater
from junobench.diagnosis.annotation import (
    COLUMNS,
    Item,
    allocate,
    answers_to_judge,
    export_sheet,
    read_filled,
    sample_size,
    second_rater_sample,
)
from junobench.diagnosis.endtoend import score_judgments
from junobench.diagnosis.judgments import read_judgments
from junobench.errors import JunoBenchError

QWEN = "Qwen_2_5_32B_Instruct_crash_detection_code"


@pytest.fixture(scope="module")
def qwen_sets(crane_llm_dir):
    raw = crane_llm_dir / "llms" / "llms_outputs" / "results_raw" / "Qwen_2_5_32B_Instruct"
    return {QWEN: raw / "crash_detection_code", QWEN + "_runinfo": raw / "crash_detection_code_runinfo"}


@pytest.fixture(scope="module")
def ground_truth(reference_snapshot):
    from junobench.loader import load

    rows = load(str(reference_snapshot), "notebooks").select_columns(["instance", "diagnosis"])
    return {r["instance"]: r["diagnosis"] for r in rows.to_list() if r["diagnosis"]}


def fill(path, labels):
    """Fill the judgment column as a rater would: from ``labels(row)`` (None leaves it blank)."""
    from openpyxl import load_workbook

    workbook = load_workbook(path)
    sheet = workbook["Judgments"]
    for row in sheet.iter_rows(min_row=2):
        row[5].value = labels(row)
    workbook.save(path)


def test_round_trip_gives_the_published_scores(qwen_sets, ground_truth, crane_summary, tmp_path):
    items, decided = answers_to_judge(qwen_sets, ground_truth)
    assert len(items) == 71 + 74  # the crashes each setting detected (Table 2(b) recall)
    sheet, key = export_sheet(items, tmp_path / "sheet.xlsx", tmp_path / "key.json",
                              decided=decided, seed=3)
    from openpyxl import load_workbook

    workbook = load_workbook(sheet)
    ws = workbook["Judgments"]
    rows = list(ws.iter_rows(values_only=True))
    assert list(rows[0]) == list(COLUMNS) and len(rows) == 146
    text = json.dumps([list(r) for r in rows])
    assert "Qwen" not in text and "runinfo" not in text  # blinded: settings are codes
    assert {r[1] for r in rows[1:]} == {"S1", "S2"}
    rule = ws.data_validations.dataValidation[0]
    assert rule.type == "list" and "reasoning wrong" in rule.formula1 and "F2:F146" in str(rule.sqref)
    by_instance = {r[2]: r for r in rows[1:]}
    assert by_instance["pandas_1_reproduced"][3] == ground_truth["pandas_1_reproduced"]
    published = read_judgments(crane_summary)
    codes = json.loads(key.read_text())
    # The rater fills in the published human judgments.
    fill(sheet, lambda row: published.settings[codes["items"][row[0].value]["setting"]][
        codes["items"][row[0].value]["instance"]])
    filled = read_filled(sheet, key)
    assert filled.unjudged == []
    ours = score_judgments(filled.judgments, resamples=20)
    theirs = score_judgments(published, settings=list(qwen_sets), resamples=20)
    for name in qwen_sets:
        assert ours[name].to_dict() == theirs[name].to_dict()
    assert (ours[QWEN].to_dict()["tp"], ours[QWEN].reasoning_wrong) == (56, 14)


def test_unfinished_and_tampered_sheets(tmp_path):
    items = [Item("a", f"torch_{n}_reproduced", "gt", "=HYPERLINK(\"x\")") for n in range(1, 4)]
    sheet, key = export_sheet(items, tmp_path / "s.xlsx", tmp_path / "k.json")
    fill(sheet, lambda row: "Correct" if row[0].value == "D0001" else None)
    filled = read_filled(sheet, key)
    assert filled.unjudged == ["D0002", "D0003"]
    first = json.loads(key.read_text())["items"]["D0001"]["instance"]
    assert filled.judgments.settings == {"a": {first: "correct"}}
    fill(sheet, lambda row: "perhaps")
    with pytest.raises(JunoBenchError, match="not a judgment"):
        read_filled(sheet, key)
    from openpyxl import load_workbook

    workbook = load_workbook(sheet)
    assert workbook["Judgments"]["E2"].data_type == "s"  # a prediction is text, never a formula
    workbook["Judgments"].delete_rows(3)
    for row in workbook["Judgments"].iter_rows(min_row=2):
        row[5].value = "wrong"
    workbook.save(sheet)
    with pytest.raises(JunoBenchError, match="not in the sheet"):
        read_filled(sheet, key)
    key.write_text("{}")
    with pytest.raises(JunoBenchError, match="not an annotation key"):
        read_filled(sheet, key)


def test_the_second_raters_sample_is_drawn_as_the_paper_drew_it():
    assert sample_size(501) == 222
    assert [sample_size(n) for n in (0, 1, 50, 10_000)] == [0, 1, 44, 385]
    shares = allocate({"g": 90, "g+": 99, "q": 71, "q+": 74, "p": 79, "p+": 88}, 222)
    assert sum(shares.values()) == 222 and shares["g+"] == max(shares.values())
    items = [Item(s, f"torch_{n}_reproduced", "", "") for s, size in
             (("g", 90), ("g+", 99), ("q", 71), ("q+", 74), ("p", 79), ("p+", 88))
             for n in range(1, size + 1)]
    first = second_rater_sample(items, seed=1)
    assert len(first) == 222 and first == second_rater_sample(items, seed=1)
    assert first != second_rater_sample(items, seed=2)
    per = {s: sum(i.setting == s for i in first) for s in shares}
    assert per == shares


def test_kappa_is_cohens():
    sklearn = pytest.importorskip("sklearn.metrics")
    rng = random.Random(0)
    labels = ["correct", "partially correct", "reasoning wrong", "wrong"]
    for _ in range(200):
        n = rng.randint(2, 40)
        a = [rng.choice(labels) for _ in range(n)]
        b = [x if rng.random() < 0.6 else rng.choice(labels) for x in a]
        if len(set(a) | set(b)) == 1:
            continue
        assert cohen_kappa(a, b) == pytest.approx(sklearn.cohen_kappa_score(a, b), abs=1e-12)
    assert agreement(["correct", "wrong"], ["wrong", "wrong"]).raw == 0.5


def test_published_second_rater_sheet(crane_llm_dir, capsys):
    path = crane_llm_dir / "results" / "evaluation_human_LLMjudge_validation.xlsx"
    first, second = read_second_rater(path)
    results = rater_agreement(first, second)
    overall = results["all"]
    assert (overall.n, overall.agreed) == (156, 155)
    assert overall.kappa == pytest.approx(0.98873, abs=1e-5)
    assert results["gpt_5_code"].kappa == pytest.approx(35 / 39, abs=1e-12)
    code, out, err = run_cli(capsys, "agreement", "--second-rater", str(path), "--format", "json")
    assert code == 0, err
    assert json.loads(out)["all"]["kappa"] == pytest.approx(overall.kappa)


def test_annotation_commands_on_blind_predictions(tmp_path, capsys):
    from openpyxl import load_workbook

    from junobench.detection.detect import detect_static
    from junobench.detection.tasks import read_tasks

    code, _, err = run_cli(capsys, "tasks", "--source", "sample", "--out", str(tmp_path / "t.jsonl"))
    assert code == 0, err
    preds = detect_static(read_tasks(tmp_path / "t.jsonl"), tmp_path / "p.jsonl").out
    truth = str(tmp_path / "t.truth.jsonl")
    sheet, key = str(tmp_path / "s.xlsx"), str(tmp_path / "k.json")
    code, _, err = run_cli(capsys, "annotate", "export", str(preds), "--source", "sample",
                           "--sheet", sheet, "--key", key)
    assert code == 1 and "blind task ids" in err  # without the ground truth they name nothing
    code, out, err = run_cli(capsys, "annotate", "export", str(preds), "--truth", truth,
                             "--name", "static", "--sheet", sheet, "--key", key)
    assert code == 0, err
    assert out == ""
    count = int(err.split()[1])
    assert count >= 1
    code, _, err = run_cli(capsys, "annotate", "export", str(preds), "--truth", truth,
                           "--sheet", sheet, "--key", key)
    assert code == 1 and "exists already" in err  # a filled sheet is never overwritten
    workbook = load_workbook(sheet)
    for row in workbook["Judgments"].iter_rows(min_row=2):
        row[5].value = "partially correct"
    workbook.save(sheet)
    judged = tmp_path / "j.csv"
    code, out, err = run_cli(capsys, "annotate", "read", sheet, "--key", key, "--out", str(judged))
    assert code == 0, err
    assert out == "" and "wrote 20 judgments" in err  # every notebook of the sample
    code, out, err = run_cli(capsys, "evaluate", "--judgments", str(judged), "--format", "json",
                             "--resamples", "10")
    data = json.loads(out)["settings"]["static"]
    assert data["tp"] == 0 and data["partially_correct"] == count and data["n"] == 20
    # The second rater's sample of these diagnoses, on its own sheet with no settled rows.
    code, out, err = run_cli(capsys, "annotate", "export", str(preds), "--truth", truth,
                             "--sheet", str(tmp_path / "s2.xlsx"), "--key", str(tmp_path / "k2.json"),
                             "--second-rater")
    assert code == 0, err
    assert f"sample of {count}" in err
    assert json.loads((tmp_path / "k2.json").read_text())["decided"] == {}
