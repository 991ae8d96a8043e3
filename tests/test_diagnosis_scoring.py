"""End-to-end scoring of judged diagnoses: CRANE-LLM's Table 2(a) and Table 3 from its
published human judgments, junobench's own judgments files, and bad judgments."""

from __future__ import annotations

import csv
import io
import json

import pytest
from cli_run import run_cli

from junobench.diagnosis.endtoend import score_judgments
from junobench.diagnosis.judgments import Judgments, read_judgments, write_judgments
from junobench.errors import JunoBenchError

# Table 2(a) and Table 3 of the CRANE-LLM paper, as counts: tp, fp, tn, fn, partially
# correct, reasoning wrong (the paper prints GPT-5 -RT as 75.0 / 56.8 / 64.6 / 68.9 with
# 5 partially correct and 11 reasoning wrong).
PUBLISHED = {
    "gemini_2_5_flash_crash_detection_code": (69, 51, 60, 42, 1, 20),
    "gemini_2_5_flash_crash_detection_code_runinfo": (81, 47, 64, 30, 0, 18),
    "Qwen_2_5_32B_Instruct_crash_detection_code": (56, 27, 84, 55, 1, 14),
    "Qwen_2_5_32B_Instruct_crash_detection_code_runinfo": (62, 12, 99, 49, 1, 11),
    "gpt_5_crash_detection_code": (63, 21, 90, 48, 5, 11),
    "gpt_5_crash_detection_code_runinfo": (79, 20, 91, 32, 3, 7),
}
# The paper's percentages (Table 2(a), one decimal).
PERCENT = {
    "gemini_2_5_flash_crash_detection_code": (57.5, 62.2, 59.7, 58.1),
    "gemini_2_5_flash_crash_detection_code_runinfo": (63.3, 73.0, 67.8, 65.3),
    "Qwen_2_5_32B_Instruct_crash_detection_code": (67.5, 50.5, 57.7, 63.1),
    "Qwen_2_5_32B_Instruct_crash_detection_code_runinfo": (83.8, 55.9, 67.0, 72.5),
    "gpt_5_crash_detection_code": (75.0, 56.8, 64.6, 68.9),
    "gpt_5_crash_detection_code_runinfo": (79.8, 71.2, 75.2, 76.6),
}
METRICS = ("precision", "recall", "f1", "accuracy")


@pytest.fixture(scope="module")
def published(crane_summary):
    return score_judgments(crane_summary, resamples=100)


def test_table_2a_and_table_3_for_the_six_llm_settings(published):
    for setting, (tp, fp, tn, fn, partial, reasoning) in PUBLISHED.items():
        data = published[setting].to_dict()
        assert (data["tp"], data["fp"], data["tn"], data["fn"]) == (tp, fp, tn, fn), setting
        assert (data["partially_correct"], data["reasoning_wrong"]) == (partial, reasoning)
        shown = tuple(round(100 * data[m], 1) for m in METRICS)
        assert shown == PERCENT[setting], setting
    gpt = published["gpt_5_crash_detection_code"]
    assert gpt.table3_row() == {"setting": "gpt_5_crash_detection_code", "detected crashes": 79,
                                "correct": 63, "partially correct": 5, "reasoning wrong": 11}


def test_scores_equal_the_published_summary_rows(published, crane_summary):
    """The workbook's own Results_summary sheet (values its formulas computed) agrees with
    every setting, the static analysers included."""
    from python_calamine import CalamineWorkbook

    sheet = CalamineWorkbook.from_path(str(crane_summary)).get_sheet_by_name("Results_summary")
    rows = [(r[19], r) for r in sheet.to_python() if len(r) > 27 and isinstance(r[19], str)]
    models = {"LLM - gemini 2.5 flash": "gemini_2_5_flash", "LLM - gpt 5": "gpt_5",
              "LLM - qwen 2.5 32b instruct": "Qwen_2_5_32B_Instruct", "SA - pylint": "pylint",
              "SA - pyright": "pyright"}
    checked = 0
    for label, model in models.items():
        row = next(r for key, r in rows if key == label and isinstance(r[20], float))
        for offset, suffix in ((0, ""), (1, "_runinfo")):
            data = published[f"{model}_crash_detection_code{suffix}"].to_dict()
            for k, metric in enumerate(METRICS):
                assert data[metric] == pytest.approx(row[20 + 2 * k + offset], abs=1e-12)
                checked += 1
    assert checked == 40


def test_cli_prints_every_setting_keyed_by_its_name(crane_summary, capsys):
    code, out, err = run_cli(capsys, "evaluate", "--judgments", str(crane_summary),
                             "--format", "json", "--resamples", "50")
    assert code == 0, err
    data = json.loads(out)["settings"]
    assert len(data) == 10 and set(PUBLISHED) <= set(data)
    gpt = data["gpt_5_crash_detection_code"]
    assert {k: gpt[k] for k in ("tp", "fp", "tn", "fn", "partially_correct", "reasoning_wrong")} == {
        "tp": 63, "fp": 21, "tn": 90, "fn": 48, "partially_correct": 5, "reasoning_wrong": 11}
    assert gpt["precision"] == 0.75 and gpt["accuracy"] == pytest.approx(153 / 222)
    low, high = gpt["intervals"]["f1"]
    assert low < gpt["f1"] < high
    libraries = {r["library"]: r for r in gpt["by_library"]}
    # CRANE-LLM's per-library rows (Results_summary): GPT-5 -RT on TensorFlow, FP 3 and FN 4.
    assert (libraries["tensorflow/keras"]["fp"], libraries["tensorflow/keras"]["fn"]) == (3, 4)
    assert sum(r["n"] for r in gpt["by_library"]) == 222


def test_text_outputs_show_table_3_and_the_paired_tests(crane_summary, capsys):
    args = ["evaluate", "--judgments", str(crane_summary), "--resamples", "50",
            "--setting", "gpt_5_crash_detection_code", "--setting",
            "gpt_5_crash_detection_code_runinfo", "--setting", "pylint_crash_detection_code"]
    code, out, _ = run_cli(capsys, *args)
    assert code == 0
    assert "Diagnoses of the detected crashes" in out and "McNemar p (Holm)" in out
    code, out, _ = run_cli(capsys, *args, "--format", "latex")
    assert out.count(r"\begin{tabular}") == 3 and "Holm" in out
    assert r"75.0 [" in out
    code, out, _ = run_cli(capsys, *args, "--format", "csv")
    rows = list(csv.DictReader(io.StringIO(out)))
    assert [r["setting"] for r in rows][:3] == args[6::2]  # then one row per pair
    assert rows[0]["reasoning_wrong"] == "11" and float(rows[0]["f1_low"]) < 0.646


@pytest.mark.parametrize("suffix", [".jsonl", ".csv"])
def test_own_judgments_round_trip(published, crane_summary, tmp_path, suffix):
    judgments = read_judgments(crane_summary)
    path = write_judgments(tmp_path / f"j{suffix}", judgments)
    again = read_judgments(path)
    assert again.settings == judgments.settings
    scores = score_judgments(path, resamples=100)
    assert {k: v.to_dict() for k, v in scores.items()} == {k: v.to_dict() for k, v in published.items()}


@pytest.mark.parametrize("suffix", [".jsonl", ".csv"])
def test_settings_a_spreadsheet_would_take_for_formulas_round_trip(tmp_path, suffix, capsys):
    """``+RT``/``-RT`` (the paper's names), ``=…``, ``@…`` and a name that starts with the
    CSV's own text mark ``'`` come back as they were; no CSV cell starts a formula."""
    names = ["+RT", "-RT", "=SUM(A1)", "@m", "'quoted", "''twice", "-1.5"]
    judgments = Judgments({name: {"torch_1_reproduced": "correct", "torch_1_fixed": "wrong"}
                           for name in names})
    path = write_judgments(tmp_path / f"j{suffix}", judgments)
    assert read_judgments(path).settings == judgments.settings
    if suffix == ".csv":
        cells = [row[1] for row in csv.reader(io.StringIO(path.read_text()))][1:]
        assert cells[::2] == ["'" + name for name in names[:-1]] + ["-1.5"]
    code, out, err = run_cli(capsys, "evaluate", "--judgments", str(path), "--format", "json",
                             "--resamples", "10")
    assert code == 0, err
    assert list(json.loads(out)["settings"]) == names


def test_a_hand_made_setting_scores_by_the_rule():
    judgments = Judgments({"mine": {
        "torch_1_reproduced": "correct",          # TP
        "torch_1_fixed": "correct",               # TN
        "torch_2_reproduced": "partially correct",  # FN: detected, diagnosis not right
        "torch_2_fixed": "wrong",                 # FP
        "numpy_1_reproduced": "wrong",            # FN: missed
        "numpy_1_fixed": "correct",               # TN
    }})
    data = score_judgments(judgments, resamples=20)["mine"].to_dict()
    assert (data["tp"], data["fp"], data["tn"], data["fn"]) == (1, 1, 2, 2)
    assert data["detected_crashes"] == 2 and data["partially_correct"] == 1


def write_sheet(path, rows):
    from openpyxl import Workbook

    workbook = Workbook()
    sheet = workbook.active
    sheet.title = "Final_evaluation"
    for row in rows:
        sheet.append(row)
    workbook.save(path)
    return path


@pytest.mark.parametrize(("rows", "message"), [
    ([["instance", "s"], ["torch_1_fixed", "partially correct"]], "no crash to diagnose"),
    ([["instance", "s"], ["torch_1_fixed", "maybe"]], "is not a judgment"),
    ([["instance", "s"], ["torch_1_fixed", "correct"], ["torch_1_fixed", "wrong"]], "twice"),
    ([["instance", "s"], ["torch_1_fixed", "correct"], ["FP_torch", 3],
      ["torch_2_fixed", "correct"]], "ended the judgments"),
    ([["instance", "s", "s"], ["torch_1_fixed", "correct", "correct"]], "appears twice"),
    ([["name", "s"], ["torch_1_fixed", "correct"]], "'instance'"),
    ([["instance", "s"], ["total", 3]], "no notebook row"),
])
def test_bad_sheets_are_named(tmp_path, rows, message, capsys):
    path = write_sheet(tmp_path / "j.xlsx", rows)
    with pytest.raises(JunoBenchError, match=message) as caught:
        read_judgments(path)
    assert str(path) in str(caught.value)
    code, _, err = run_cli(capsys, "evaluate", "--judgments", str(path))
    assert code == 1 and err.startswith("error:") and len(err.strip().splitlines()) == 1


def test_bad_lines_and_options(tmp_path, capsys):
    path = tmp_path / "j.jsonl"
    path.write_text('{"instance": "torch_1_fixed", "setting": "s", "judgment": "correct"}\n'
                    '{"instance": "../x", "setting": "s", "judgment": "correct"}\n')
    with pytest.raises(JunoBenchError, match="line 2"):
        read_judgments(path)
    path.write_text('{"instance": "torch_1_fixed", "setting": "s", "judgment": "correct"}\n')
    code, _, err = run_cli(capsys, "evaluate", "x.jsonl", "--judgments", str(path))
    assert code == 1 and "without PRED" in err
    code, _, err = run_cli(capsys, "evaluate", "--judgments", str(path), "--setting", "t")
    assert code == 1 and "no setting 't'" in err
    code, _, err = run_cli(capsys, "evaluate")
    assert code == 1 and "required: PRED (or --judgments FILE)" in err
    fifo = tmp_path / "fifo.jsonl"
    import os

    os.mkfifo(fifo)
    code, _, err = run_cli(capsys, "evaluate", "--judgments", str(fifo))
    assert code == 1 and "FIFO" in err


def test_judged_folders_are_not_the_raw_runs_and_reversed_ones_are_refused(
        crane_llm_dir, reference_snapshot, tmp_path, capsys):
    from junobench.detection.evaluate import evaluate

    outputs = crane_llm_dir / "llms" / "llms_outputs"
    judged = evaluate(outputs / "results_parsed_1" / "gpt_5" / "crash_detection_code",
                      reference_snapshot, resamples=10).to_dict()
    # What docs/diagnosis.md says: a judge run's detections are not the raw runs' majority
    # (Table 2(b), GPT-5 -RT, is .790/.712/.749/.761; the Detection_only sheet gives it).
    assert [round(judged[m], 3) for m in METRICS] == [0.800, 0.685, 0.738, 0.757]
    code, out, err = run_cli(capsys, "evaluate", "--judgments", str(
        crane_llm_dir / "results" / "results_summary.xlsx"), "--sheet", "Detection_only",
        "--format", "json", "--resamples", "10")
    assert code == 0, err
    raw = json.loads(out)["settings"]["gpt_5_crash_detection_code"]
    assert [round(raw[m], 3) for m in METRICS] == [0.790, 0.712, 0.749, 0.761]
    reversed_set = outputs / "results_parsed_reversed_1" / "gpt_5" / "crash_detection_code"
    code, out, err = run_cli(capsys, "evaluate", str(reversed_set), "--source",
                             str(reference_snapshot))
    assert code == 1 and out == "" and "reversed protocol" in err and "precision 1.000" in err
    # Refused by where it is, also as a copy and with the layout forced.
    import shutil

    copy = tmp_path / "results_parsed_reversed_2" / "m" / "s"
    shutil.copytree(reversed_set, copy)
    with pytest.raises(JunoBenchError, match="reversed protocol"):
        evaluate(copy, reference_snapshot, layout="crane-parsed")
