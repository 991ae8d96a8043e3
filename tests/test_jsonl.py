"""Every JSON Lines file junobench writes reads back as written: values may hold the
characters :meth:`str.splitlines` takes for line ends (U+2028, U+2029, U+0085, form feed,
a lone carriage return), which the writer keeps as they are; and the code of a task keeps
its lines as the notebook has them."""

from __future__ import annotations

import pytest

from junobench import jsonl
from junobench.detection.detect import finished_instances
from junobench.detection.predictions import read_jsonl, write_predictions
from junobench.detection.tasks import build_tasks, read_tasks, read_truth, strip_comments, write_tasks
from junobench.diagnosis.judge import finished, judgments_from
from junobench.diagnosis.judgments import Judgments, read_judgments, write_judgments
from junobench.errors import JunoBenchError
from junobench.runtime.info import read_runtime_info

#: Characters str.splitlines() ends a line at, though JSON keeps them raw inside a string.
SEPARATORS = ["\u2028", "\u2029", "\u0085", "\x0c", "\x1c", "\r"]


@pytest.mark.parametrize("sep", SEPARATORS)
def test_predictions_with_a_line_separator_in_a_run_read_back(tmp_path, sep):
    runs = [f'{{"reasoning": "a{sep}b", "detection": true}}', f"TRUE{sep}"]
    path = write_predictions(tmp_path / "p.jsonl", [("torch_1_reproduced", runs),
                                                    ("torch_1_fixed", ["FALSE"])])
    assert read_jsonl(path).runs == {"torch_1_reproduced": runs, "torch_1_fixed": ["FALSE"]}
    assert finished_instances(path) == {"torch_1_reproduced", "torch_1_fixed"}
    assert read_jsonl(path).runs["torch_1_reproduced"] == runs  # resuming left the file alone


@pytest.mark.parametrize("sep", SEPARATORS)
def test_tasks_and_truth_with_a_separator_in_their_code_read_back(tmp_path, sep):
    code = f"s = 'a{sep}b'  # a comment\nx = s.upper()\n"
    record = {"instance": "pandas_1_reproduced", "case_id": "pandas_1", "version": "reproduced",
              "crash": True, "diagnosis": f"one{sep}two",
              "executed_cells": [{"code_cell_index": 0, "execution_count": 1, "source": code}],
              "target_cell": {"code_cell_index": 1, "execution_count": 2, "source": "s[9]"}}
    tasks_, truths = build_tasks([record])
    out, truth = write_tasks(tasks_, truths, tmp_path / "tasks.jsonl")
    assert read_tasks(out) == tasks_
    assert read_tasks(out)[0]["executed_cells"][0]["source"] == f"s = 'a{sep}b'\nx = s.upper()\n"
    assert read_truth(truth)[0]["diagnosis"] == f"one{sep}two"


@pytest.mark.parametrize("sep", ["\u2028", "\u2029", "\u0085"])
def test_a_code_line_with_a_separator_in_a_string_stays_one_line(sep):
    code = f"print('x{sep}y')  # says x, y\nz = 1  # kept\n# a whole-line comment\n"
    assert strip_comments(code) == f"print('x{sep}y')\nz = 1\n"
    assert strip_comments(f"!pip install x{sep}y\n# gone\nz = 1\n") == f"!pip install x{sep}y\nz = 1\n"


def test_runtime_information_with_a_separator_in_a_value_reads_back(tmp_path):
    records = [{"instance": f"numpy_{n}_fixed", "status": "ok",
                "objects": {"s": {"V": {"value": f"'a{sep}b'"}}}}
               for n, sep in enumerate(SEPARATORS, start=1)]
    path = jsonl.write_jsonl(tmp_path / "runtime.jsonl", records)
    assert list(read_runtime_info(path).values()) == records


@pytest.mark.parametrize("suffix", [".jsonl", ".csv"])
def test_judgments_with_a_separator_in_a_setting_read_back(tmp_path, suffix):
    judgments = Judgments()
    for n, sep in enumerate(SEPARATORS[:3], start=1):
        judgments.add(f"model{sep}{n}", "torch_1_reproduced", "partially correct")
        judgments.add(f"model{sep}{n}", "torch_1_fixed", "wrong")
    path = write_judgments(tmp_path / f"j{suffix}", judgments)
    assert read_judgments(path).settings == judgments.settings


def test_judge_labels_with_a_separator_read_back(tmp_path):
    path = jsonl.write_jsonl(tmp_path / "labels.jsonl", [
        {"setting": f"m{sep}", "instance": "torch_1_reproduced", "pass": 1, "labels": ["[Correct]"]}
        for sep in SEPARATORS])
    assert finished(path) == {(f"m{sep}", "torch_1_reproduced", 1) for sep in SEPARATORS}
    assert set(judgments_from(path).settings) == {f"m{sep}" for sep in SEPARATORS}


def test_lines_split_at_newlines_only_and_number_them():
    assert list(jsonl.lines("a\u2028b\n\n  \nc\r\nd")) == [(1, "a\u2028b"), (4, "c\r"), (5, "d")]


def test_a_cut_last_line_is_dropped_only_when_resuming(tmp_path):
    path = tmp_path / "p.jsonl"
    path.write_text('{"instance": "torch_1_fixed", "runs": ["a\u2028"]}\n{"instance": "tor',
                    encoding="utf-8")
    with pytest.raises(JunoBenchError, match="line 2 is not valid JSON"):
        read_jsonl(path)
    assert finished_instances(path) == {"torch_1_fixed"}
    assert path.read_text(encoding="utf-8") == '{"instance": "torch_1_fixed", "runs": ["a\u2028"]}\n'


def test_a_broken_line_that_is_not_the_last_fails_naming_it_even_when_resuming(tmp_path):
    path = tmp_path / "p.jsonl"
    text = '{"instance": "torch_1_fixed", "runs": []}\n{"runs": []}\n{"instance": "x", "runs": []}\n'
    path.write_text(text, encoding="utf-8")
    with pytest.raises(JunoBenchError, match="line 2: not a predictions line") as caught:
        finished_instances(path)
    assert str(path) in str(caught.value) and path.read_text(encoding="utf-8") == text


def test_a_byte_order_mark_that_begins_a_file_is_not_read_as_content(tmp_path):
    """What Windows editors write as UTF-8 reads as what they were given."""
    path = tmp_path / "predictions.jsonl"
    write_predictions(path, [("numpy_1_reproduced", ["TRUE"]), ("numpy_1_fixed", ["FALSE"])])
    path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes())
    assert read_jsonl(path).runs == {"numpy_1_reproduced": ["TRUE"], "numpy_1_fixed": ["FALSE"]}
    inside = tmp_path / "inside.jsonl"
    inside.write_bytes(b'{"a": 1}\n\xef\xbb\xbf{"b": 2}\n')  # only the file's start is spared
    with pytest.raises(JunoBenchError, match="line 2"):
        jsonl.read_jsonl(inside, what="records")
