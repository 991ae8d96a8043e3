"""Predictions and names that try to mislead evaluate: an answer naming `detection` twice
is unparsable (the last one does not win), NaN runs keep their notebook in `n`, and
Markdown output shows a model's name as text, never as HTML or markup."""

from __future__ import annotations

import json

import pytest
from cli_run import run_cli

from junobench.detection.evaluate import score
from junobench.detection.layouts import read_predictions
from junobench.detection.predictions import parse_run, read_jsonl
from junobench.errors import JunoBenchError
from junobench.render import render

ROWS = [{"instance": "pandas_1_reproduced", "crash": True, "case_id": "pandas_1", "library": "pandas"},
        {"instance": "pandas_1_fixed", "crash": False, "case_id": "pandas_1", "library": "pandas"}]


@pytest.mark.parametrize("raw", [
    '{"detection": true, "detection": false}',
    '{"detection": false, "reasoning": "x", "detection": false}',
    'Here: ```json\n{"reasoning": "r", "detection": true, "detection": false}\n```',
    json.dumps('{"detection": true, "detection": false}'),
    '<think>{"detection": true}</think>{"detection": false, "detection": true}',
])
def test_an_answer_naming_detection_twice_is_unparsable(raw):
    verdict = parse_run(raw)
    assert verdict.detection is None and "twice" in (verdict.problem or "")


def test_other_repeated_keys_do_not_matter_and_one_detection_still_counts():
    assert parse_run('{"reasoning": "a", "reasoning": "b", "detection": true}').detection is True
    assert parse_run('{"detection": true} and later {"detection": true}').detection is True


def test_a_run_object_in_a_predictions_file_with_two_detections_is_unparsable(tmp_path):
    jsonl = tmp_path / "p.jsonl"
    jsonl.write_text('{"instance": "pandas_1_fixed", "runs": [{"detection": false, "detection": true}]}\n')
    report = score(ROWS, read_jsonl(jsonl).runs)
    assert [u.problem for u in report.unparsable] == ["'detection' given twice in one object"]
    folder = tmp_path / "buggy_fixed"
    (folder / "fixed").mkdir(parents=True)
    (folder / "fixed" / "pandas_1.json").write_text('[{"detection": false, "detection": true}]')
    assert parse_run(read_predictions(folder).runs["pandas_1_fixed"][0]).detection is None


def test_a_predictions_line_naming_its_instance_twice_is_refused(tmp_path):
    jsonl = tmp_path / "p.jsonl"
    jsonl.write_text('{"instance": "pandas_1_fixed", "instance": "pandas_1_reproduced", "runs": []}\n')
    with pytest.raises(JunoBenchError, match="line 1 names instance twice"):
        read_jsonl(jsonl)


def test_nan_runs_are_unparsable_and_their_notebook_stays_in_n(tmp_path):
    jsonl = tmp_path / "p.jsonl"
    jsonl.write_text('{"instance": "pandas_1_reproduced", "runs": [NaN, NaN]}\n'
                     '{"instance": "pandas_1_fixed", "runs": ["FALSE"]}\n')
    report = score(ROWS, read_jsonl(jsonl).runs)
    assert report.to_dict()["notebooks"] == 2 and report.undecided == ["pandas_1_reproduced"]
    assert len(report.unparsable) == 2 and report.overall.fn == 1  # no crash said: a missed crash


def test_markdown_shows_html_and_markup_in_names_as_text(capsys, tmp_path):
    name = '<script>alert(1)</script> *x* [l](javascript:x) | y'
    table = render([{"setting": name, "n": 1}], "markdown")
    assert "<script>" not in table and "&lt;script&gt;" in table and "\\[l\\]" in table
    assert table.splitlines()[2].count("|") - table.splitlines()[2].count("\\|") == 3
    jsonl = tmp_path / "p.jsonl"
    jsonl.write_text('{"instance": "pandas_1_fixed", "runs": ["FALSE"]}\n'
                     '{"instance": "pandas_1_reproduced", "runs": ["TRUE"]}\n')
    for argv in (["evaluate", str(jsonl), "--source", "sample", "--format", "markdown"],
                 ["evaluate", str(jsonl), str(jsonl), "--name", "<b>a</b>", "--name", "<img src=x>",
                  "--source", "sample", "--format", "markdown"]):
        code, out, err = run_cli(capsys, *argv)
        assert code == 0, err
        assert "<b>" not in out and "<img" not in out
    assert "&lt;img src=x&gt;" in out


def test_record_files_past_the_size_cap_are_refused_before_they_are_read(tmp_path, monkeypatch):
    """Predictions, a detector's run files and tasks are read whole: a file past the cap
    (here a sparse one, larger than the cap set low) is refused by its size, not read."""
    from junobench import jsonl
    from junobench.detection import layouts

    for module in (jsonl, layouts):
        monkeypatch.setattr(module, "MAX_TEXT_BYTES", 1 << 20)
    jsonl_file = tmp_path / "p.jsonl"
    with jsonl_file.open("wb") as handle:
        handle.truncate((1 << 20) + 1)
    with pytest.raises(JunoBenchError, match="larger than 1048576 bytes"):
        read_jsonl(jsonl_file)
    folder = tmp_path / "buggy_fixed" / "fixed"
    folder.mkdir(parents=True)
    with (folder / "pandas_1.json").open("wb") as handle:
        handle.truncate((1 << 20) + 1)
    with pytest.raises(JunoBenchError, match="larger than 1048576 bytes"):
        read_predictions(folder.parent)
    with pytest.raises(JunoBenchError, match="larger than 1048576 bytes"):
        jsonl.read_instance_records(jsonl_file, what="tasks", hint="", problem_of=lambda r: None)


def test_sets_that_share_no_notebook_are_compared_on_none_without_a_traceback(capsys, tmp_path):
    """Two prediction sets (or two judged settings) with no notebook in common: the paired
    bootstrap draws from no case, and the comparison says 0 notebooks in every format."""
    from junobench.detection.uncertainty import paired_difference

    assert paired_difference([], [], resamples=5).interval is None
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    a.write_text('{"instance": "pandas_1_fixed", "runs": ["FALSE"]}\n')
    b.write_text('{"instance": "pandas_2_fixed", "runs": ["FALSE"]}\n')
    for fmt in ("table", "json", "csv", "markdown", "latex"):
        code, out, err = run_cli(capsys, "evaluate", str(a), str(b), "--source", "sample",
                                 "--resamples", "5", "--format", fmt)
        assert code == 0 and "Traceback" not in err, err
    assert json.loads(run_cli(capsys, "evaluate", str(a), str(b), "--source", "sample",
                              "--resamples", "5", "--format", "json")[1])["tests"][0]["notebooks"] == 0
    judged = tmp_path / "j.jsonl"
    judged.write_text('{"instance": "pandas_1_fixed", "setting": "a", "judgment": "correct"}\n'
                      '{"instance": "pandas_2_fixed", "setting": "b", "judgment": "wrong"}\n')
    code, out, err = run_cli(capsys, "evaluate", "--judgments", str(judged), "--source", "sample",
                             "--resamples", "5")
    assert code == 0 and "Paired tests on the 0 notebooks" in out, err


def test_a_name_utf8_cannot_encode_is_escaped_in_latex(capsys, tmp_path):
    """A set named with a byte that is not UTF-8 (``--name`` from the shell) or a lone
    surrogate read from JSON is escaped in the LaTeX table, as in the other formats."""
    assert "a\\textbackslash xff" in render([{"setting": "a\udcff", "n": 1}], "latex")
    jsonl = tmp_path / "p.jsonl"
    jsonl.write_text('{"instance": "pandas_1_fixed", "runs": ["FALSE"]}\n')
    code, out, err = run_cli(capsys, "evaluate", str(jsonl), str(jsonl), "--name", "a\udcff",
                             "--name", "b", "--source", "sample", "--resamples", "5",
                             "--format", "latex")
    assert code == 0 and "xff" in out, err
    judged = tmp_path / "j.jsonl"
    judged.write_text('{"instance": "pandas_1_fixed", "setting": "m\\ud800", "judgment": "correct"}\n')
    code, out, err = run_cli(capsys, "evaluate", "--judgments", str(judged), "--source", "sample",
                             "--resamples", "5", "--format", "latex")
    assert code == 0 and "ud800" in out, err


@pytest.mark.parametrize("content", ["", "\n\n", "   \n"])
def test_a_predictions_file_without_one_run_is_an_error_not_a_score_of_nothing(capsys, tmp_path, content):
    empty = tmp_path / "empty.jsonl"
    empty.write_text(content)
    with pytest.raises(JunoBenchError, match="no predictions"):
        read_predictions(empty)
    code, _, err = run_cli(capsys, "evaluate", str(empty), "--source", "sample")
    assert code != 0 and "empty.jsonl: no predictions" in err and "Traceback" not in err
