"""Judgments files that would mislead the end-to-end scores are refused or flagged: a
notebook outside the benchmark, a misspelled name (also in the last row), every malformed
row named at once, a setting without a crashing notebook, and the two published CRANE-LLM
sheets where they disagree; the paired tests are in every output format."""

from __future__ import annotations

import csv
import io
import json
import re

import pytest
from cli_run import run_cli

from junobench.diagnosis.endtoend import notes, score_judgments
from junobench.diagnosis.judgments import Judgments, read_judgments, write_judgments
from junobench.errors import JunoBenchError


def write_sheet(path, rows, title="Final_evaluation"):
    from openpyxl import Workbook

    workbook = Workbook()
    sheet = workbook.active
    sheet.title = title
    for row in rows:
        sheet.append(row)
    workbook.save(path)
    return path


def lines(path, records):
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def test_a_notebook_outside_the_published_222_is_refused_naming_its_row(tmp_path, capsys):
    path = write_sheet(tmp_path / "j.xlsx", [
        ["instance", "s"], ["torch_1_reproduced", "correct"], ["torch_99_reproduced", "correct"],
        ["torch_1_fixed", "correct"]])
    with pytest.raises(JunoBenchError, match=r"row 3: 'torch_99_reproduced' is not a notebook of "
                       r"JunoBench as published \(222 notebooks\)") as caught:
        score_judgments(path, resamples=10)
    assert caught.value.problem_.case == "torch_99_reproduced"
    code, out, err = run_cli(capsys, "evaluate", "--judgments", str(path))
    assert code == 1 and out == "" and "row 3" in err and "torch_99_reproduced" in err
    jsonl = lines(tmp_path / "j.jsonl", [
        {"instance": "torch_1_fixed", "setting": "s", "judgment": "correct"},
        {"instance": "lightgbm_2_fixed", "setting": "s", "judgment": "wrong"}])
    with pytest.raises(JunoBenchError, match="line 2: 'lightgbm_2_fixed' is not a notebook"):
        score_judgments(jsonl, resamples=10)


def test_the_notebooks_of_another_snapshot_are_checked_against_it(tmp_path, capsys):
    """With --source, the judgments may name the snapshot's notebooks, and only those."""
    path = lines(tmp_path / "j.jsonl", [
        {"instance": "pandas_1_reproduced", "setting": "s", "judgment": "correct"},
        {"instance": "pandas_1_fixed", "setting": "s", "judgment": "correct"}])
    assert score_judgments(path, source="sample", resamples=10)["s"].report.overall.tp == 1
    code, _, err = run_cli(capsys, "evaluate", "--judgments", str(path), "--source", "sample")
    assert code == 0, err
    other = lines(tmp_path / "k.jsonl", [
        {"instance": "torch_1_reproduced", "setting": "s", "judgment": "correct"}])
    code, _, err = run_cli(capsys, "evaluate", "--judgments", str(other), "--source", "sample")
    assert code == 1 and "line 1: 'torch_1_reproduced' is not a notebook of sample" in err


def test_a_misspelled_name_in_the_last_row_is_named_not_dropped(tmp_path):
    path = write_sheet(tmp_path / "j.xlsx", [
        ["instance", "a", "b"], ["torch_1_reproduced", "correct", "wrong"],
        ["torch_1_fixed", "correct", "correct"], ["torch_2_reprodcued", "wrong", "correct"]])
    with pytest.raises(JunoBenchError, match="row 4: 'torch_2_reprodcued' does not name a notebook"):
        read_judgments(path)
    # ... and in a row of judgments without a name, or with a name cut short
    for name in (None, "torch_2"):
        write_sheet(path, [["instance", "a"], ["torch_1_fixed", "correct"], [name, "wrong"]])
        with pytest.raises(JunoBenchError, match=r"row 3: .* does not name a notebook"):
            read_judgments(path)


def test_summary_rows_below_the_notebooks_end_the_table(tmp_path):
    path = write_sheet(tmp_path / "j.xlsx", [
        ["instance", "a"], ["torch_1_reproduced", "correct"], ["torch_1_fixed", "wrong"],
        ["FP_torch", 1], ["accuracy", "0.5"], ["total_wrong_reproduced", 0]])
    assert read_judgments(path).settings == {"a": {"torch_1_reproduced": "correct",
                                                   "torch_1_fixed": "wrong"}}


@pytest.mark.parametrize("suffix", [".xlsx", ".jsonl", ".csv"])
def test_every_malformed_row_is_named_in_one_error(tmp_path, suffix, capsys):
    good = [("torch_1_reproduced", "s", "correct"), ("torch_1_fixed", "s", "correct")]
    bad = [("torch_2_reproduced", "s", "maybe"), ("torch_2_fixed", "s", "partially correct"),
           ("../x_fixed", "s", "correct"), ("torch_3_fixed", "s", "nonsense")]
    rows = good[:1] + bad[:2] + good[1:] + bad[2:]
    path = tmp_path / f"j{suffix}"
    if suffix == ".xlsx":
        write_sheet(path, [["instance", "s"], *[[i, j] for i, _, j in rows]])
        places = ["row 3", "row 4", "row 6", "row 7"]
    elif suffix == ".jsonl":
        lines(path, [{"instance": i, "setting": s, "judgment": j} for i, s, j in rows])
        places = ["line 2", "line 3", "line 5", "line 6"]
    else:
        path.write_text("instance,setting,judgment\n" + "".join(f"{i},{s},{j}\n" for i, s, j in rows))
        places = ["row 3", "row 4", "row 6", "row 7"]
    with pytest.raises(JunoBenchError) as caught:
        read_judgments(path)
    message = str(caught.value)
    assert "4 rows or lines are wrong" in message
    assert all(f"{place}:" in message for place in places), message
    assert "'maybe'" in message and "fixed notebook" in message and "'nonsense'" in message
    code, _, err = run_cli(capsys, "evaluate", "--judgments", str(path))
    assert code == 1 and len(err.strip().splitlines()) == 1


def test_more_than_eight_bad_rows_are_all_named(tmp_path):
    path = lines(tmp_path / "j.jsonl", [{"instance": f"torch_{n}_fixed", "setting": "s",
                                         "judgment": "meh"} for n in range(1, 13)])
    with pytest.raises(JunoBenchError) as caught:
        read_judgments(path)
    assert "12 rows or lines are wrong" in str(caught.value)
    assert str(caught.value).count("is not a judgment") == 8  # the first eight in full
    assert "and 4 more (line 9, line 10, line 11, line 12)" in str(caught.value)


def test_a_setting_without_a_crashing_notebook_is_flagged_not_scored_zero(tmp_path, capsys):
    judgments = Judgments({"fixed-only": {"torch_1_fixed": "wrong", "torch_2_fixed": "correct"},
                           "both": {"torch_1_reproduced": "wrong", "torch_1_fixed": "correct"}})
    results = score_judgments(judgments, resamples=50)
    fixed_only = results["fixed-only"].to_dict()
    assert fixed_only["f1"] is None and fixed_only["recall"] is None
    assert fixed_only["intervals"]["f1"] is None
    assert results["both"].to_dict()["f1"] == 0.0  # crashes judged, none found: a real 0
    assert notes(results) == ["setting 'fixed-only' judges no crashing (reproduced) notebook: "
                              "its recall and F1 are undefined (n/a)"]
    path = write_judgments(tmp_path / "j.jsonl", judgments)
    code, out, err = run_cli(capsys, "evaluate", "--judgments", str(path), "--resamples", "50")
    assert code == 0 and "warning: setting 'fixed-only' judges no crashing" in err
    row = next(line for line in out.splitlines() if line.startswith("fixed-only"))
    assert re.search(r"\]\s+n/a\s+n/a\s+0\.500 \[", row), row  # recall and F1 n/a, not 0.000
    code, out, err = run_cli(capsys, "evaluate", "--judgments", str(path), "--format", "json",
                             "--resamples", "50")
    assert "judges no crashing" in json.loads(out)["notes"][0]


@pytest.mark.parametrize("fmt", ["json", "csv", "table", "markdown", "latex"])
def test_paired_tests_and_holm_values_are_in_every_format(crane_summary, capsys, fmt):
    settings = ["gpt_5_crash_detection_code", "gpt_5_crash_detection_code_runinfo",
                "pylint_crash_detection_code"]
    code, out, err = run_cli(capsys, "evaluate", "--judgments", str(crane_summary), "--format", fmt,
                             "--resamples", "50", *[a for s in settings for a in ("--setting", s)])
    assert code == 0, err
    if fmt == "json":
        data = json.loads(out)
        assert list(data["settings"]) == settings and data["notebooks"] == 222
        (first, *_) = data["tests"]
        assert (first["a"], first["b"]) == tuple(settings[:2])
        assert first["mcnemar"]["p_holm"] >= first["mcnemar"]["p_value"]
        assert len(data["tests"]) == 3 and first["f1_difference"]["p_holm"] is not None
    elif fmt == "csv":
        rows = list(csv.DictReader(io.StringIO(out)))
        pairs = [r for r in rows if " vs " in r["setting"]]
        assert len(pairs) == 3 and all(r["mcnemar_p_holm"] and r["f1_difference_p_holm"] for r in pairs)
        assert pairs[0]["mcnemar_only_a"] == "8" and pairs[0]["mcnemar_only_b"] == "25"
    else:
        assert "Holm" in out and "only A right" in out.replace("\\", "")


def test_the_two_published_sheets_disagree_on_three_notebooks_and_it_is_said(
        crane_llm_dir, crane_summary, capsys):
    expected = ["numpy_10_reproduced", "numpy_15_reproduced", "NBspecific_11_reproduced"]
    code, out, err = run_cli(capsys, "evaluate", "--judgments", str(crane_summary), "--resamples",
                             "20", "--setting", "gpt_5_crash_detection_code", "--format", "json")
    assert code == 0, err
    said = [line for line in err.splitlines() if "disagree" in line]
    assert len(said) == 1 and all(i in said[0] for i in expected) and "3 judgment(s)" in said[0]
    assert "sheet Final_evaluation and results_summary.xlsx, sheet Detection_only" in said[0]
    assert said[0].removeprefix("warning: ") in json.loads(out)["notes"]
    detection = crane_llm_dir / "results" / "results_detection_only.xlsx"
    code, out, err = run_cli(capsys, "evaluate", "--judgments", str(crane_summary), "--sheet",
                             "Detection_only", "--detection-only", str(detection), "--resamples", "20")
    assert code == 0 and "disagree" not in err  # the same judgments in two files
    code, out, err = run_cli(capsys, "evaluate", "--judgments", str(detection), "--detection-only",
                             str(crane_summary), "--resamples", "20")
    assert code == 0 and all(i in err for i in expected) and "disagree" in err
    # One sheet alone says nothing of the other.
    code, out, err = run_cli(capsys, "evaluate", "--judgments", str(detection), "--resamples", "20")
    assert code == 0 and "disagree" not in err


def test_one_malformed_row_is_named_with_its_notebook_and_hint(tmp_path):
    path = write_sheet(tmp_path / "j.xlsx", [
        ["instance", "a", "b"], ["torch_1_reproduced", "correct", "wrong"],
        ["torch_1_fixed", "correct", "partially correct"]])
    with pytest.raises(JunoBenchError) as caught:
        read_judgments(path)
    assert str(caught.value).startswith(f"{path}: case torch_1_fixed: row 3: setting 'b': "
                                        "'partially correct' on a fixed notebook")
    assert caught.value.problem_.hint.startswith("a fixed notebook's judgment is correct")
    write_sheet(path, [["instance", "a"], ["torch_1_fixed", "maybe"], ["torch_2_fixed", "correct"],
                       ["torch_2_reproduced", "partially correct"], ["torch_3_fixed", "reasoning wrong"]])
    with pytest.raises(JunoBenchError) as caught:  # two problems of different kinds
        read_judgments(path)
    assert caught.value.problem_.case is None and "2 rows or lines are wrong" in str(caught.value)
    assert "judgments are one of" in caught.value.problem_.hint


def test_an_empty_cell_is_a_notebook_the_setting_does_not_judge(tmp_path):
    path = write_sheet(tmp_path / "j.xlsx", [
        ["instance", "a", "b"], ["torch_1_reproduced", "correct", None],
        ["torch_1_fixed", None, "wrong"]])
    assert read_judgments(path).settings == {"a": {"torch_1_reproduced": "correct"},
                                            "b": {"torch_1_fixed": "wrong"}}


@pytest.mark.parametrize(("instance", "judged", "found"), [
    ("torch_1_reproduced", "correct", True), ("torch_1_reproduced", "partially correct", True),
    ("torch_1_reproduced", "reasoning wrong", True), ("torch_1_reproduced", "wrong", False),
    ("torch_1_fixed", "correct", False), ("torch_1_fixed", "wrong", True),
])
def test_which_judgments_say_a_crash_was_detected(instance, judged, found):
    from junobench.diagnosis.judgments import detected

    assert detected(instance, judged) is found


@pytest.mark.parametrize(("record", "message"), [
    ({"instance": 5, "setting": "s", "judgment": "correct"}, "line 1: instance 5 does not name a notebook"),
    ({"instance": None, "setting": "s", "judgment": "correct"}, "line 1: instance None does not name"),
    ({"instance": "torch_1_fixed", "judgment": "correct"}, "line 1: no setting"),
    ({"instance": "torch_1_fixed", "setting": 3, "judgment": "correct"}, "line 1: no setting"),
    ({"instance": "torch_1_fixed", "setting": "  ", "judgment": "correct"}, "line 1: no setting"),
])
def test_lines_without_a_notebook_or_a_setting_are_named(tmp_path, record, message):
    path = lines(tmp_path / "j.jsonl", [record])
    with pytest.raises(JunoBenchError, match=message):
        read_judgments(path)


def test_the_outputs_of_two_settings_and_of_three(tmp_path):
    """Two settings: one pair, its tests in JSON, no Holm (a family of one); three: Holm.
    JSON keeps names as written, indented by two; LaTeX titles are comments."""
    from junobench.diagnosis.endtoend import render_scores

    judgments = Judgments({name: {"torch_1_reproduced": "correct", "torch_1_fixed": outcome,
                                  "numpy_1_reproduced": "wrong", "numpy_1_fixed": "correct"}
                           for name, outcome in (("−RT", "correct"), ("+RT", "wrong"), ("c", "correct"))})
    two = score_judgments(Judgments({k: judgments.settings[k] for k in ("−RT", "+RT")}), resamples=20)
    data = json.loads(text := render_scores(two, "json"))
    assert '\n  "settings": {\n    "−RT"' in text  # as written, two spaces a level
    assert len(data["tests"]) == 1 and data["notebooks"] == 4
    assert data["settings"]["−RT"]["by_library"][0]["intervals"]["f1"] is not None
    assert "Holm" not in render_scores(two, "table")
    three = score_judgments(judgments, resamples=20)
    assert "Holm-adjusted p-values over the pairs" in render_scores(three, "table")
    latex = render_scores(three, "latex")
    assert latex.startswith("% End-to-end") and latex.count("\n% ") == 2
    assert not render_scores(three, "markdown").startswith("%")
    with pytest.raises(JunoBenchError, match=r"unknown format 'yaml'.*use table, json"):
        render_scores(three, "yaml")
    with pytest.raises(JunoBenchError, match="no setting"):
        render_scores({}, "json")


@pytest.mark.parametrize(("text", "message"), [
    ("instance,setting,judgment\rtorch_1_fixed,s,wrong\rtorch_1_reproduced,s,maybe\r",
     "row 3: 'maybe' is not a judgment"),
    ("instance,setting,judgment\ntorch_1_fixed,s" + "x" * 200_000 + ",wrong\n",
     "row 2: not readable as CSV"),
    ("instance,setting,judgment,judgment\ntorch_1_fixed,s,correct,wrong\n",
     "column 'judgment' appears twice"),
    ("instance,setting,judgment\ntorch_1_fixed,s,correct,wrong\n",
     "row 2: 4 cells, more than the header's 3 columns"),
])
def test_csv_rows_the_reader_cannot_take_are_named_not_a_traceback(tmp_path, capsys, text,
                                                                    message):
    """Old Mac line ends (``\\r``) are lines; a field past the CSV reader's limit, a column
    named twice (which of its cells counts?) and a cell past the header are named."""
    path = tmp_path / "j.csv"
    path.write_bytes(text.encode())
    with pytest.raises(JunoBenchError, match=re.escape(message)):
        read_judgments(path)
    code, _, err = run_cli(capsys, "agreement", str(path), str(path))
    assert code == 1 and "Traceback" not in err and message in err


def test_csv_line_ends_of_every_kind_read_the_same_judgments(tmp_path):
    rows = "instance,setting,judgment{0}torch_1_fixed,s,wrong{0}{0}torch_1_reproduced,\"a{0}b\",correct{0}"
    read = []
    for end in ("\n", "\r\n", "\r"):
        path = tmp_path / "j.csv"
        path.write_bytes(rows.format(end).encode())
        read.append(read_judgments(path).settings)
    assert read[0] == {"s": {"torch_1_fixed": "wrong"}, "a\nb": {"torch_1_reproduced": "correct"}}
    assert read[1] == {"s": {"torch_1_fixed": "wrong"}, "a\r\nb": {"torch_1_reproduced": "correct"}}
    assert read[2] == {"s": {"torch_1_fixed": "wrong"}, "a\rb": {"torch_1_reproduced": "correct"}}


def test_a_sheet_is_read_from_a1_so_rows_keep_their_numbers(tmp_path):
    """The spreadsheet reader's range starts at the first value: a sheet whose first rows or
    columns are empty was read shifted, and its rows misnumbered in messages ("row 3" for
    row 5). It is read from A1: a header not in row 1, column A, is refused."""
    from openpyxl import Workbook

    rows = (["instance", "s"], ["torch_1_reproduced", "correct"], ["torch_1_fixed", "maybe"])
    for inserted in ("rows", "cols"):
        workbook = Workbook()
        sheet = workbook.active
        sheet.title = "Final_evaluation"
        for row in rows:
            sheet.append(row)
        getattr(sheet, f"insert_{inserted}")(1, 2)
        workbook.save(path := tmp_path / f"{inserted}.xlsx")
        with pytest.raises(JunoBenchError, match="header row is not 'instance'"):
            read_judgments(path)
    with pytest.raises(JunoBenchError, match="row 3: 'maybe' is not a judgment"):
        read_judgments(write_sheet(tmp_path / "j.xlsx", rows))


def test_a_sheet_with_one_value_far_from_the_others_is_refused_before_it_is_read(tmp_path):
    """Judgments and review sheets are opened as the snapshot tables are: the reader would
    allocate the sheet's whole box (512 GiB here) and abort the process, no error line."""
    import subprocess
    import sys

    from openpyxl import Workbook

    workbook = Workbook()
    sheet = workbook.active
    sheet.title = "Final_evaluation"
    sheet.append(["instance", "setting", "judgment"])
    sheet.append(["numpy_1_reproduced", "a", "Correct"])
    sheet["XFD1048576"] = "far"
    path = tmp_path / "judgments.xlsx"
    workbook.save(path)
    code = ("import sys; from pathlib import Path; from junobench.data.tables import named_sheet\n"
            "from junobench.errors import JunoBenchError\n"
            "try:\n    named_sheet(Path(sys.argv[1]), 'Final_evaluation')\n"
            "except JunoBenchError as error:\n    print(error)")
    for argv in ([sys.executable, "-m", "junobench", "evaluate", "--judgments", str(path)],
                 [sys.executable, "-c", code, str(path)]):  # processes of their own: an abort would end pytest's
        done = subprocess.run(argv, capture_output=True, text=True, timeout=300, check=False)
        said = done.stdout + done.stderr
        assert done.returncode in (0, 1) and "17,179,869,184 cells from A1" in said and "panicked" not in said, said
