"""The parts of rater agreement and of the annotation sheets, one by one: κ against
scikit-learn's, the second-rater sheet's layout, the sample size and its allocation, the
sheet a rater fills in (its cells, widths, drop-down, key) and the filled sheet read back."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

import pytest

from junobench.data.tables import sheet_text
from junobench.diagnosis import agreement as ag
from junobench.diagnosis import annotation as an
from junobench.diagnosis.judgments import Judgments
from junobench.errors import JunoBenchError

# --------------------------------------------------------------------------- agreement


@pytest.mark.parametrize(("a", "b"), [
    (["correct", "wrong", "wrong", "correct"], ["correct", "wrong", "correct", "correct"]),
    (["correct"] * 5 + ["wrong"] * 3, ["correct"] * 4 + ["wrong"] * 4),
    (["a", "b", "c", "a", "b"], ["a", "c", "c", "b", "b"]),
])
def test_kappa_is_scikit_learns(a, b):
    from sklearn.metrics import cohen_kappa_score

    assert ag.cohen_kappa(a, b) == pytest.approx(cohen_kappa_score(a, b))
    result = ag.agreement(a, b)
    assert (result.n, result.agreed) == (len(a), sum(x == y for x, y in zip(a, b, strict=True)))


def test_kappa_of_one_shared_label_is_one_and_bad_input_is_refused():
    assert ag.cohen_kappa(["correct"] * 3, ["correct"] * 3) == 1.0
    with pytest.raises(ValueError, match="same items"):
        ag.cohen_kappa(["a"], ["a", "b"])
    with pytest.raises(ValueError, match="no items"):
        ag.cohen_kappa([], [])
    with pytest.raises(dataclasses.FrozenInstanceError):
        ag.agreement(["a"], ["a"]).kappa = 0.5  # type: ignore[misc]


def test_rater_agreement_covers_the_shared_settings_and_all_of_them():
    first = Judgments({"a": {"torch_1_reproduced": "correct"},
                       "b": {"torch_1_reproduced": "correct", "torch_2_reproduced": "wrong"},
                       "only-first": {"torch_1_reproduced": "wrong"}})
    second = Judgments({"b": {"torch_1_reproduced": "correct", "torch_2_reproduced": "correct"},
                        "a": {"torch_3_reproduced": "wrong"}, "only-second": {}})
    results = ag.rater_agreement(first, second)
    assert list(results) == ["b", "all"]  # a shares no notebook; the others are one rater's
    assert (results["all"].n, results["all"].agreed) == (2, 1)
    with pytest.raises(JunoBenchError, match="share no setting") as caught:
        ag.paired_labels(Judgments({"x": {}, "y": {}}), Judgments({"z": {}}))
    assert caught.value.problem_.hint == "settings of the first: x, y"
    text = ag.render_agreement(results, "json")
    assert text.startswith('{\n  "b": {\n    "n": 2')


def second_rater_sheet(path, rows):
    from openpyxl import Workbook

    workbook = Workbook()
    sheet = workbook.active
    sheet.title = ag.SECOND_RATER_SHEET
    for row in rows:
        sheet.append(row)
    workbook.save(path)
    return path


def test_a_second_rater_sheet_is_read_block_by_block(tmp_path):
    path = second_rater_sheet(tmp_path / "v.xlsx", [
        ["notes before any block", "x"],
        ["torch_9_reproduced", "correct", "", "correct"],  # before any block: not read
        [None, "m1_human", "m1_pred", "m1_validator"],
        ["torch_1_reproduced", "[Correct]", "p", "[Reasoning Wrong]"],
        [None, "a note", "", ""],
        ["torch_3_reproduced", "wrong", 7, "wrong"],  # still the block of m1
        [None, "m2_human", "m2_pred", "m2_validator"],
        ["torch_2_reproduced", "wrong", None, "wrong"],
    ])
    first, second = ag.read_second_rater(path)
    assert first.settings == {"m1": {"torch_1_reproduced": "correct", "torch_3_reproduced": "wrong"},
                              "m2": {"torch_2_reproduced": "wrong"}}
    assert second.settings["m1"] == {"torch_1_reproduced": "reasoning wrong", "torch_3_reproduced": "wrong"}
    second_rater_sheet(path, [[None, "m1_human"], ["torch_1_reproduced", "correct"]])  # a short row
    with pytest.raises(JunoBenchError, match=r"row 2: 'correct' / '' is not a pair of judgments") as caught:
        ag.read_second_rater(path)
    assert caught.value.problem_.case == "torch_1_reproduced"
    second_rater_sheet(path, [["a", "b"]])
    with pytest.raises(JunoBenchError, match="no rater blocks"):
        ag.read_second_rater(path)


def test_a_second_rater_sheet_s_rows_keep_their_numbers_below_empty_rows(tmp_path):
    """The reader's range starts at the first value: two empty rows above the blocks made
    row 4 "row 2" in messages. The sheet is read from A1."""
    from openpyxl import load_workbook

    path = second_rater_sheet(tmp_path / "v.xlsx", [[None, "m1_human", "m1_pred", "m1_validator"],
                                                    ["torch_1_reproduced", "correct", "", "maybe"]])
    workbook = load_workbook(path)
    workbook.active.insert_rows(1, 2)
    workbook.save(path)
    with pytest.raises(JunoBenchError, match=r"row 4: 'correct' / 'maybe' is not a pair"):
        ag.read_second_rater(path)


# --------------------------------------------------------------------------- annotation


def test_sample_size_and_its_bounds():
    assert [an.sample_size(n) for n in (0, 1, 10, 501)] == [0, 1, 10, 222]
    assert an.sample_size(100, 0.1) == 50
    for population, margin in ((-1, 0.05), (10, 0.0), (10, 1.0)):
        with pytest.raises(JunoBenchError, match="population >= 0 and a margin in"):
            an.sample_size(population, margin)


def test_allocation_by_largest_remainders():
    assert an.allocate({"a": 1, "b": 1, "c": 1}, 2) == {"a": 1, "b": 1, "c": 0}  # ties: earlier
    assert an.allocate({"a": 1, "b": 2}, 2) == {"a": 1, "b": 1}
    assert an.allocate({"a": 5, "b": 5}, 4) == {"a": 2, "b": 2}
    assert an.allocate({"a": 0, "b": 0}, 3) == {"a": 0, "b": 0}
    assert an.allocate({"a": 3, "b": 1}, 4) == {"a": 3, "b": 1}  # never more than a stratum holds


def test_cell_text_keeps_lines_and_tabs_drops_controls_and_is_cut_at_the_limit():
    assert sheet_text("a\tb\nc\x07d\x1b") == "a\tb\ncd"
    assert sheet_text("x" * 32000) == "x" * 32000
    assert sheet_text("x" * 32001) == "x" * 31999 + "…"


ITEMS = [an.Item("m1", "torch_1_reproduced", "the column is gone", "=HYPERLINK(\"x\")"),
         an.Item("m2–code", "torch_2_reproduced", "shapes differ", "a différent cause")]


def test_the_exported_sheet_its_layout_and_its_key(tmp_path):
    from openpyxl import load_workbook

    sheet, key = an.export_sheet(ITEMS, tmp_path / "s.xlsx", tmp_path / "k.json",
                                 decided={"m1": {"torch_1_fixed": "correct"}})
    ws = load_workbook(sheet)[an.SHEET]
    assert [c.value for c in ws[1]] == list(an.COLUMNS)
    assert [ws.column_dimensions[c].width for c in "ABCDEFG"] == [8, 6, 28, 60, 60, 18, 30]
    assert ws.freeze_panes == "A2"
    cells = [c for row in ws.iter_rows(min_row=2, max_col=5) for c in row]
    assert all(c.data_type == "s" for c in cells) and any(str(c.value).startswith("=") for c in cells)
    (rule,) = ws.data_validations.dataValidation
    assert str(rule.sqref) == "F2:F3" and rule.allow_blank and rule.showErrorMessage
    text = key.read_text(encoding="utf-8")
    assert text.startswith('{\n "format": "junobench-annotation-key/1",') and "différent" not in text
    assert '"m2–code"' in text  # names as written
    assert ws["F2"].value is None and ws["G2"].value is None  # the rater's columns, empty
    data = json.loads(text)
    assert sorted(data["codes"].values()) == ["m1", "m2–code"] and data["decided"]["m1"] == {"torch_1_fixed": "correct"}
    for bad in ((tmp_path / "s.csv", tmp_path / "k2.json"), (tmp_path / "t.xlsx", tmp_path / "t.xlsx"),
                (sheet, tmp_path / "k3.json"), (tmp_path / "u.xlsx", key)):
        with pytest.raises(JunoBenchError):
            an.export_sheet(ITEMS, *bad)
    empty, _ = an.export_sheet([], tmp_path / "e.xlsx", tmp_path / "e.json")
    assert not load_workbook(empty)[an.SHEET].data_validations.dataValidation  # no range, no rule


def fill(sheet, judgments):
    from openpyxl import load_workbook

    workbook = load_workbook(sheet)
    ws = workbook[an.SHEET]
    for row in ws.iter_rows(min_row=2):
        row[5].value = judgments.get(row[2].value)
    workbook.save(sheet)


def test_a_filled_sheet_reads_back_and_its_faults_are_named(tmp_path):
    from openpyxl import load_workbook

    sheet, key = an.export_sheet(ITEMS, tmp_path / "s.xlsx", tmp_path / "k.json",
                                 decided={"m1": {"torch_1_fixed": "correct"}})
    fill(sheet, {"torch_1_reproduced": "[Partially correct]"})
    filled = an.read_filled(sheet, key)
    assert filled.judgments.settings == {"m1": {"torch_1_reproduced": "partially correct",
                                                "torch_1_fixed": "correct"}}
    assert len(filled.unjudged) == 1
    assert "torch_1_fixed" not in an.read_filled(sheet, key, decided=False).judgments.settings["m1"]
    fill(sheet, {"torch_1_reproduced": "great", "torch_2_reproduced": "correct"})
    with pytest.raises(JunoBenchError, match=r"row [23]: 'great' is not a judgment") as caught:
        an.read_filled(sheet, key)
    assert caught.value.problem_.case == "torch_1_reproduced"
    workbook = load_workbook(sheet)
    ws = workbook[an.SHEET]
    ws.delete_rows(3)
    workbook.save(sheet)
    fill(sheet, {"torch_1_reproduced": "correct", "torch_2_reproduced": "correct"})
    with pytest.raises(JunoBenchError, match=r"1 items of the key are not in the sheet \(D000[12]\)"):
        an.read_filled(sheet, key)
    ws.append([5, "S1", "torch_1_reproduced"])
    workbook.save(sheet)
    with pytest.raises(JunoBenchError, match=r"row 3: item 5.0 is not in the key"):
        an.read_filled(sheet, key)
    key.write_text('{"format": "other"}')
    with pytest.raises(JunoBenchError, match="not an annotation key"):
        an.read_filled(sheet, key)
    key.write_text("[1]")
    with pytest.raises(JunoBenchError, match="not an annotation key"):
        an.read_filled(sheet, key)


@pytest.mark.parametrize(("edit", "message"), [
    (lambda k: k["items"]["D0001"].pop("setting"), "item 'D0001' has no 'setting' and 'instance'"),
    (lambda k: k["items"]["D0001"].update(instance=7), "item 'D0001' has no 'setting' and 'instance'"),
    (lambda k: k.update(items=["D0001"]), "'items' is not an object"),
    (lambda k: k.update(decided=[1]), "'decided' is not an object"),
    (lambda k: k["decided"].update(m1=["torch_1_fixed"]), "'decided' of setting 'm1' is not an object"),
    (lambda k: k["decided"]["m1"].update(torch_1_fixed=5), "key: 5 is not a judgment"),
])
def test_a_damaged_key_is_named_not_a_traceback(tmp_path, edit, message):
    """A key edited by hand (an item without its setting, a list where an object was) ended
    in a KeyError or AttributeError; it is an error naming the key file."""
    sheet, key = an.export_sheet(ITEMS, tmp_path / "s.xlsx", tmp_path / "k.json",
                                 decided={"m1": {"torch_1_fixed": "correct"}})
    fill(sheet, {"torch_1_reproduced": "correct", "torch_2_reproduced": "wrong"})
    data = json.loads(key.read_text())
    edit(data)
    key.write_text(json.dumps(data))
    with pytest.raises(JunoBenchError, match=re.escape(message)) as caught:
        an.read_filled(sheet, key)
    assert caught.value.problem_.file == str(key)


def test_a_short_row_of_a_filled_sheet_is_unjudged(tmp_path):
    from openpyxl import Workbook

    sheet, key = an.export_sheet(ITEMS[:1], tmp_path / "s.xlsx", tmp_path / "k.json")
    workbook = Workbook()
    ws = workbook.active
    ws.title = an.SHEET
    ws.append(list(an.COLUMNS))
    ws.append(["D0001", "S1", "torch_1_reproduced", "t", "p"])  # no judgment column at all
    workbook.save(sheet)
    assert an.read_filled(sheet, key).unjudged == ["D0001"]


def test_items_are_frozen_and_only_right_detections_of_crashes_need_a_judgment():
    from junobench.detection.predictions import Predictions

    with pytest.raises(dataclasses.FrozenInstanceError):
        ITEMS[0].setting = "other"  # type: ignore[misc]
    answers = Predictions(Path("p.jsonl"), "jsonl", runs={
        "torch_1_reproduced": ['{"detection": true, "reasoning": "the key is gone"}'],
        "torch_1_fixed": ["FALSE"], "torch_2_reproduced": ["FALSE"], "torch_2_fixed": ["TRUE"],
        "torch_3_fixed": ["no idea"]})
    items, decided = an.answers_to_judge({"m": answers}, {"torch_1_reproduced": "a column is gone"})
    assert items == [an.Item("m", "torch_1_reproduced", "a column is gone", "the key is gone")]
    assert decided == {"m": {"torch_1_fixed": "correct", "torch_2_reproduced": "wrong",
                             "torch_2_fixed": "wrong"}}


def test_a_changed_header_an_unknown_code_and_many_missing_rows_are_named(tmp_path):
    from openpyxl import load_workbook

    items = [an.Item("m", f"torch_{n}_reproduced", "t", "p") for n in range(1, 9)]
    sheet, key = an.export_sheet(items, tmp_path / "s.xlsx", tmp_path / "k.json")
    workbook = load_workbook(sheet)
    ws = workbook[an.SHEET]
    ws["F1"] = "verdict"
    workbook.save(sheet)
    with pytest.raises(JunoBenchError, match="not an annotation sheet"):
        an.read_filled(sheet, key)
    ws["F1"] = "judgment"
    ws["A2"] = "D0099"
    workbook.save(sheet)
    with pytest.raises(JunoBenchError, match="row 2: item 'D0099' is not in the key"):
        an.read_filled(sheet, key)
    ws.delete_rows(2, 7)
    workbook.save(sheet)
    with pytest.raises(JunoBenchError, match=r"7 items of the key are not in the sheet \(D000\d(, D000\d){4}\)"):
        an.read_filled(sheet, key)


# --------------------------------------------------------------------------- the judge


def test_the_judge_s_request_says_what_was_predicted():
    from junobench.diagnosis.judge import majority, messages

    texts = [messages({"crash": True, "diagnosis": "d"}, {"detection": d, "reasoning": None},
                      reverse=False)[1]["content"] for d in (True, False, None)]
    assert [t.split("Prediction: the target cell ")[1].split(".\n")[0] for t in texts] == [
        "crashes", "does not crash", "(no detection given)"]
    assert "Predicted reasoning: (none given)" in texts[0]
    assert majority(["wrong", "correct", None, "correct", "wrong"]) == "wrong"  # a tie: the first
    assert majority([None, None]) is None


def test_the_judge_s_defaults_and_its_output_folder(tmp_path, capsys):
    from chat_server import ChatServer
    from test_diagnosis_judge import RUNS, TRUTH, grade

    from junobench.detection.predictions import write_predictions
    from junobench.diagnosis.judge import judge

    preds = write_predictions(tmp_path / "p.jsonl", RUNS[:1])
    out = tmp_path / "new" / "folder" / "labels.jsonl"
    with ChatServer(grade, delay=0.05) as server:
        summary = judge(preds, TRUTH, out, setting="s", endpoint=server.url, model="j")
        assert len(summary.written) == 5 and len(server.requests) == 5 * 3  # five passes
        assert server.most_in_flight == 1  # one request at a time
    assert capsys.readouterr().err == ""  # no progress bar unless asked
    with pytest.raises(JunoBenchError, match="no ground truth") as caught:
        judge(write_predictions(tmp_path / "q.jsonl", [("torch_8_fixed", ["FALSE"]),
                                                        ("torch_9_fixed", ["FALSE"])]),
              TRUTH, out, setting="s", endpoint="http://127.0.0.1:9/v1", model="j")
    assert caught.value.problem_.case == "torch_8_fixed" and caught.value.problem_.file.endswith("q.jsonl:1")


def test_the_judge_shows_no_progress_unless_asked_even_on_a_terminal(tmp_path, monkeypatch):
    import io
    import sys

    from chat_server import ChatServer
    from test_diagnosis_judge import RUNS, TRUTH, grade

    from junobench.detection.predictions import write_predictions
    from junobench.diagnosis.judge import judge

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    terminal = Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    preds = write_predictions(tmp_path / "p.jsonl", RUNS[:1])
    with ChatServer(grade) as server:
        judge(preds, TRUTH, tmp_path / "a.jsonl", setting="s", endpoint=server.url, model="j", repeats=1)
        assert terminal.getvalue() == ""
        judge(preds, TRUTH, tmp_path / "b.jsonl", setting="s", endpoint=server.url, model="j", repeats=1,
              progress=True)
    assert "judge" in terminal.getvalue()  # the bar, when asked for


def test_an_unverified_answer_keeps_its_first_200_characters():
    from junobench.diagnosis.judge import UNVERIFIED, _label_text

    assert _label_text("x " * 300) == UNVERIFIED + ("x " * 100)[:200]
    assert _label_text("Fine. [Partially correct]") == "[Partially correct]"


def test_labels_files_read_back_as_judgments(tmp_path):
    from junobench.diagnosis.judge import JudgeRow, judge_agreement, judgments_from

    path = tmp_path / "labels.jsonl"
    line = ('{"setting": "m_crash_detection_code", "instance": "torch_1_reproduced", "pass": 1, '
            '"labels": ["[Correct]"]}\n')
    path.write_text(line + line.replace('"pass": 1', '"pass": 2')[:-30])  # a cut last line
    with pytest.raises(JunoBenchError, match="line 2"):
        judgments_from(path)  # read as it is: only the judge's own resuming drops a cut line
    assert path.read_text().count("\n") == 1
    path.write_text(line)
    judged = judgments_from(path)
    assert judged.path == path and judged.settings == {"m_crash_detection_code": {"torch_1_reproduced": "correct"}}
    path.write_text(line.replace('"m_crash_detection_code"', "5"))
    with pytest.raises(JunoBenchError, match="not a judge's labels line"):
        judgments_from(path)
    (row,) = judge_agreement(judged, Judgments({"m_crash_detection_code": {"torch_1_reproduced": "wrong"}}))
    assert (row.model, row.mismatches, row.accuracy) == ("m", {"-RT": 1}, {"-RT": 0.0})
    with pytest.raises(dataclasses.FrozenInstanceError):
        row.model = "x"  # type: ignore[misc]
    assert isinstance(row, JudgeRow)
    with pytest.raises(JunoBenchError, match="share no setting") as caught:
        judge_agreement(judged, Judgments({"other": {"torch_1_reproduced": "wrong"}}))
    assert caught.value.problem_.hint == "judge settings: m_crash_detection_code"


def test_a_labels_file_judging_a_notebook_twice_in_one_pass_is_refused(tmp_path, capsys):
    """Two lines for one setting, notebook and pass (two runs appending to one file, an
    edit): the last one silently replaced the first. Both are named; a pass that is a
    boolean is no pass number."""
    from cli_run import run_cli

    from junobench.diagnosis.judge import judgments_from

    path = tmp_path / "labels.jsonl"
    line = '{"setting": "m", "instance": "torch_1_reproduced", "pass": 1, "labels": ["[Correct]"]}\n'
    path.write_text(line + line.replace("Correct", "Wrong"))
    with pytest.raises(JunoBenchError, match=r"line 2: .* again \(first at line 1\)"):
        judgments_from(path)
    humans = tmp_path / "h.jsonl"
    humans.write_text('{"instance": "torch_1_reproduced", "setting": "m", "judgment": "correct"}\n')
    code, _, err = run_cli(capsys, "judge", "--labels", str(path), "--against", str(humans))
    assert code == 1 and "first at line 1" in err and "Traceback" not in err
    path.write_text(line.replace('"pass": 1', '"pass": true'))
    with pytest.raises(JunoBenchError, match="not a judge's labels line"):
        judgments_from(path)


def test_judged_folders_take_pass_folders_only(tmp_path):
    import os

    from junobench.diagnosis.judge import read_judged_folders

    root = tmp_path / "llms_outputs"
    setting = root / "results_parsed_1" / "gpt" / "crash_detection_code"
    setting.mkdir(parents=True)
    (setting / "torch_1_reproduced.json").write_text('["[Correct]", "[Correct]"]')
    (root / "results_parsed_2").write_text("a file, not a pass")
    (root / "results_parsed_1" / "notes.txt").write_text("a file beside the models")
    (root / "results_parsed_1" / "gpt" / "readme").write_text("a file beside the settings")
    elsewhere = tmp_path / "elsewhere" / "crash_detection_code"
    elsewhere.mkdir(parents=True)
    (elsewhere / "torch_2_reproduced.json").write_text('["[Wrong]"]')
    os.symlink(elsewhere.parent, root / "results_parsed_1" / "linked")
    os.symlink(elsewhere, root / "results_parsed_1" / "gpt" / "linked_setting")
    judged = read_judged_folders(root)
    assert judged.settings == {"gpt_crash_detection_code": {"torch_1_reproduced": "correct"}}
    with pytest.raises(JunoBenchError, match="no such pass folder"):
        read_judged_folders(root, passes=["results_parsed_9"])


# --------------------------------------------------------------------------- the judge in Inspect


class _Grader:
    """An Inspect model that answers every judge request the same way, and keeps them."""

    def __init__(self, answer: str) -> None:
        self.answer, self.requests = answer, []

    async def generate(self, chat):
        from types import SimpleNamespace

        self.requests.append(chat)
        return SimpleNamespace(completion=self.answer)


@pytest.mark.parametrize(("target", "answer", "judged"), [
    ("true", "Same cause. [Partially correct]", "partially correct"),
    ("false", "No crash indeed. [Correct]", "correct"),
    ("false", "Nonsense on a fixed one. [Reasoning Wrong]", "unverified"),  # not an outcome there
])
def test_the_inspect_scorer_judges_five_times_in_the_normal_order(monkeypatch, target, answer, judged):
    import asyncio
    from types import SimpleNamespace

    pytest.importorskip("inspect_ai")
    from inspect_ai.scorer import Target

    from junobench.diagnosis import inspect_judge

    grader = _Grader(answer)
    asked: list[object] = []
    monkeypatch.setattr(inspect_judge, "get_model", lambda name=None: asked.append(name) or grader)
    state = SimpleNamespace(metadata={"diagnosis": "the key is gone"},
                            output=SimpleNamespace(completion="I think it crashes: TRUE"))
    score = asyncio.run(inspect_judge.diagnosis_judge()(state, Target(target)))
    assert score.value == judged and len(grader.requests) == 5 and asked == [None]
    system, user = grader.requests[0]
    assert type(system).__name__ == "ChatMessageSystem" and system.content.startswith("You judge")
    assert user.content.index("Ground truth") < user.content.index("Prediction:")
    assert "Predicted reasoning: I think it crashes: TRUE" in user.content  # no JSON reasoning: the text
    asyncio.run(inspect_judge.diagnosis_judge(model="self")(state, Target(target)))
    asyncio.run(inspect_judge.diagnosis_judge(model="openai/judge")(state, Target(target)))
    assert asked == [None, None, "openai/judge"]


def test_the_inspect_metrics_and_the_epochs_reduction():
    pytest.importorskip("inspect_ai")
    from inspect_ai.scorer import SampleScore, Score

    from junobench.diagnosis import inspect_judge

    scores = [SampleScore(score=Score(value=v), sample_id=str(i))
              for i, v in enumerate(["correct", "partially correct", "correct", "wrong", "correct"])]
    assert inspect_judge.end_to_end_accuracy()(scores) == 0.6
    assert inspect_judge.end_to_end_accuracy()([]) == 0.0
    assert inspect_judge.partially_correct()(scores) == 1.0
    assert inspect_judge.reasoning_wrong()(scores) == 0.0
    epochs = [Score(value="x", metadata={"judge_labels": ["wrong", "correct"], "truth": True}),
              Score(value="x", metadata={"judge_labels": ["wrong"]}),
              Score(value="x", metadata={"judge_labels": ["correct", "correct"]})]
    reduced = inspect_judge.reduce_judged(epochs)
    assert reduced.metadata == {"judge_labels": [["wrong", "wrong", "correct"], ["correct", None, "correct"]],
                                "truth": True}
    assert reduced.value == "wrong"  # pass 1: wrong, pass 2: correct; a tie goes to the first
    assert inspect_judge.reduce_judged([]).value == "unverified"


def test_a_log_s_judgments_leave_out_what_could_not_be_judged(monkeypatch, tmp_path):
    from types import SimpleNamespace

    pytest.importorskip("inspect_ai")
    import inspect_ai.log

    from junobench.diagnosis import inspect_judge

    samples = [SimpleNamespace(value="correct", sample_id="torch_1_reproduced"),
               SimpleNamespace(value="unverified", sample_id="torch_1_fixed"),
               SimpleNamespace(value=0.5, sample_id="torch_2_fixed")]
    log = SimpleNamespace(reductions=[SimpleNamespace(scorer="other", samples=[]),
                                      SimpleNamespace(scorer=inspect_judge.NAME, samples=samples)])
    monkeypatch.setattr(inspect_ai.log, "read_eval_log", lambda path: log)
    judged = inspect_judge.judgments_from_log(tmp_path / "x.eval", "s")
    assert judged.settings == {"s": {"torch_1_reproduced": "correct"}}
    log.reductions = log.reductions[:1]
    with pytest.raises(JunoBenchError, match="the log has no diagnosis_judge scores"):
        inspect_judge.judgments_from_log(tmp_path / "x.eval", "s")
