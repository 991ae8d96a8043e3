"""Pure parts of the evaluation: run parsing, layouts, votes, metrics (no snapshot needed)."""

from __future__ import annotations

import json
import string

import pytest
from hypothesis import given
from hypothesis import strategies as st

from junobench.detection.evaluate import score
from junobench.detection.layouts import read_predictions
from junobench.detection.metrics import Confusion, confusion, scores
from junobench.detection.predictions import parse_run, read_jsonl
from junobench.detection.votes import vote
from junobench.errors import JunoBenchError

LABELS = [
    {"instance": f"{case}_{version}", "case_id": case, "version": version,
     "crash": version == "reproduced", "library": case.split("_")[0],
     "library_label": {"NBspecific": "notebook-specific"}.get(case.split("_")[0],
                                                              case.split("_")[0]),
     "root_cause": cause}
    for case, cause in [("torch_1", "API misuse"), ("pandas_2", "data confusion"),
                        ("NBspecific_3", "NB specific")]
    for version in ("reproduced", "fixed")
]


@pytest.mark.parametrize(("raw", "expected"), [
    ({"reasoning": "x", "detection": True}, True),
    ('{"reasoning": "shape mismatch", "detection": true}', True),
    ("FALSE", False),
    (" true. ", True),
    ("**TRUE**", True),
    ('"FALSE"', False),
    ('The cell looks fine.\n```json\n{"reasoning": "ok", "detection": false}\n```', False),
    ('<think>maybe {"detection": true}</think>\n{"reasoning": "r", "detection": false}', False),
    ('{"detection": "true"}', True),
    (True, True),
])
def test_runs_that_parse(raw, expected):
    assert parse_run(raw).detection is expected


@pytest.mark.parametrize("raw", [
    "[Error-skipping]", "", "I think it will crash", "TRUE or FALSE", '{"detection": "yes"}',
    '{"reasoning": "no verdict"}', '{"detection": true} and {"detection": false}', None, 3,
    ["TRUE"], '{"detection": 1}',
])
def test_runs_that_do_not_parse_are_never_guessed(raw):
    verdict = parse_run(raw)
    assert verdict.detection is None and verdict.problem


@given(st.one_of(st.text(), st.binary().map(lambda b: b.decode("latin-1")),
                 st.recursive(st.none() | st.booleans() | st.integers() | st.text(),
                              lambda inner: st.lists(inner) | st.dictionaries(st.text(), inner))))
def test_any_output_gives_a_verdict_never_an_exception(raw):
    verdict = parse_run(raw)
    assert verdict.detection in (True, False, None)
    assert (verdict.detection is None) == (verdict.problem is not None)


@given(st.text(alphabet=string.printable, max_size=300))
def test_reading_any_jsonl_text_gives_predictions_or_a_clean_error(tmp_path_factory, text):
    path = tmp_path_factory.mktemp("p") / "pred.jsonl"
    path.write_text(text)
    try:
        read_jsonl(path)
    except JunoBenchError as error:
        assert str(path) in str(error)


def test_votes():
    assert vote([True, True, False, None, None], "majority") == [True]
    assert vote([True, False, None], "majority") == [False]  # tie → no crash
    assert vote([None, None], "majority") == []
    assert vote([None, True, False], "first-valid") == [True]
    assert vote([True, None, False], "all-runs") == [True, False]
    with pytest.raises(JunoBenchError, match="unknown vote"):
        vote([True], "best-of-3")


def test_metrics_with_crash_as_positive():
    c = confusion([(True, True)] * 3 + [(True, False)] + [(False, True)] + [(False, False)] * 5)
    assert (c.tp, c.fn, c.fp, c.tn) == (3, 1, 1, 5)
    s = scores(c)
    assert s["precision"] == 0.75 and s["recall"] == 0.75 and s["accuracy"] == 0.8
    assert s["reproduced_correct"] == 3 and s["reproduced_total"] == 4
    assert s["fixed_correct"] == 5 and s["fixed_total"] == 6
    assert scores(Confusion(tn=2))["precision"] is None  # undefined, not 0


def test_score_lists_missing_and_breaks_down():
    runs = {"torch_1_reproduced": ["TRUE", "TRUE", "FALSE"],
            "torch_1_fixed": ["FALSE"] * 5,
            "pandas_2_reproduced": ["FALSE", "TRUE"],  # tie → no crash
            "NBspecific_3_fixed": ["[Error-skipping]", "TRUE"]}
    report = score(LABELS, runs)
    assert report.missing == ["pandas_2_fixed", "NBspecific_3_reproduced"]
    c = report.overall
    assert (c.tp, c.fp, c.tn, c.fn) == (1, 1, 1, 1)
    assert [u.instance for u in report.unparsable] == ["NBspecific_3_fixed"]
    by = report.breakdown("library")
    assert list(by) == ["torch", "pandas", "notebook-specific"]  # vocabulary order
    assert by["torch"] == Confusion(tp=1, tn=1)
    rows = report.breakdown_rows("root-cause")
    assert rows[0]["root cause"] == "API misuse" and rows[0]["reproduced"] == "1/1"


def test_unknown_instances_are_errors_but_filtered_out_ones_are_not():
    with pytest.raises(JunoBenchError, match="torch_9_fixed"):
        score(LABELS, {"torch_9_fixed": ["TRUE"]})
    known = {row["instance"] for row in LABELS}
    report = score(LABELS[:2], {"pandas_2_fixed": ["TRUE"], "torch_1_fixed": ["FALSE"]},
                   known=known)
    assert report.evaluated == ["torch_1_fixed"]


def test_the_three_layouts_are_recognised(tmp_path):
    (tmp_path / "inst").mkdir()
    (tmp_path / "inst" / "torch_1_fixed.json").write_text(json.dumps(
        [{"reasoning": "r", "detection": False}]))
    (tmp_path / "cases" / "buggy").mkdir(parents=True)
    (tmp_path / "cases" / "fixed").mkdir()
    (tmp_path / "cases" / "buggy" / "torch_1.json").write_text('["TRUE"]')
    (tmp_path / "cases" / "fixed" / "torch_1.json").write_text('["FALSE", "FALSE"]')
    (tmp_path / "p.jsonl").write_text('{"instance": "torch_1_fixed", "runs": ["FALSE"]}\n\n')
    assert read_predictions(tmp_path / "inst").layout == "instances"
    cases = read_predictions(tmp_path / "cases")
    assert cases.layout == "buggy/fixed"
    assert cases.runs == {"torch_1_reproduced": ["TRUE"], "torch_1_fixed": ["FALSE", "FALSE"]}
    assert read_predictions(tmp_path / "p.jsonl").runs == {"torch_1_fixed": ["FALSE"]}


@pytest.mark.parametrize(("name", "content", "message"), [
    ("pred.jsonl", '{"instance": "torch_1_fixed", "runs": "TRUE"}\n', "'runs' is str"),
    ("pred.jsonl", '{"instance": "torch_1_fixed", "runs": []}\n'
                   '{"instance": "torch_1_fixed", "runs": []}\n', "appears twice"),
    ("pred.jsonl", "not json\n", "line 1 is not valid JSON"),
    ("pred.jsonl", '{"instance": "torch_one", "runs": []}\n', "not an instance id"),
])
def test_bad_canonical_files_are_clear_errors(tmp_path, name, content, message):
    path = tmp_path / name
    path.write_text(content)
    with pytest.raises(JunoBenchError, match=message) as info:
        read_predictions(path)
    assert str(path) in str(info.value)


def test_bad_files_in_folders_are_named(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "notes.json").write_text("[]")
    with pytest.raises(JunoBenchError, match=r"notes\.json"):
        read_predictions(tmp_path / "a")
    (tmp_path / "b" / "buggy").mkdir(parents=True)
    (tmp_path / "b" / "buggy" / "torch_1.json").write_text("{broken")
    with pytest.raises(JunoBenchError, match="not valid JSON") as info:
        read_predictions(tmp_path / "b")
    assert "torch_1.json" in str(info.value)
    (tmp_path / "c").mkdir()
    with pytest.raises(JunoBenchError, match="not a predictions folder"):
        read_predictions(tmp_path / "c")
