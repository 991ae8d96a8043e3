"""The diff of two lists of case records, piece by piece: matching, what a case's change
lists, the input-data digests, and the words each format prints."""

from __future__ import annotations

import json
from typing import Any

import pytest

from junobench.hub.changes import (
    SnapshotDiff,
    _case_change,
    _change,
    _checked_digests,
    _dataset_changes,
    _notebook_change,
    _short,
    compare,
    match_cases,
    word_diff,
)

#: Code different enough from case to case that no two are alike.
CODE = {
    "a": ["import pandas as pd", "df = pd.read_csv('train.csv')", "df['price'].plot()",
          "model = fit(df.drop(columns=['id']))"],
    "b": ["import numpy as np", "x = np.arange(12).reshape(3, 4)", "y = x @ x.T", "print(np.linalg.inv(y))"],
    "a2": ["import pandas as pd", "df = pd.read_csv('train.csv')", "df['price'].plot()",
           "model = fit(df.drop(columns=['id', 'date']))"],  # "a" with one cell edited
    "c": ["from sklearn.svm import SVC", "clf = SVC(kernel='rbf')", "clf.fit(features, labels)",
          "scores = clf.decision_function(test)"],
}


def _notebook(cells: list[str]) -> str:
    return json.dumps({"cells": [{"cell_type": "code", "source": c} for c in cells]})


def case(case_id: str, *, eid: str | None = None, code: str | None = None, **fields: Any) -> dict[str, Any]:
    """A ``cases`` record with the notebooks of ``CODE[code]`` (none: no code at all)."""
    notebook = None if code is None else _notebook(CODE[code])
    record: dict[str, Any] = {
        "case_id": case_id, "eid": eid, "library_label": "pandas", "root_cause": "API misuse",
        "crash_type": "KeyError", "pipeline_stage": "data preparation", "ml_bug": "no", "source": "newly sampled",
        "diagnosis": "the column is read by a wrong name", "exception": "KeyError", "evalue": "'price'",
        "crash_line": 3, "target_cell_index": 2, "notebook_url": None, "original": None,
        "reproduced": notebook, "fixed": notebook, "datasets": [], "requirements": ["pandas==2.1.4"],
        "execution_order": {"reproduced": [{"code_cell_index": 0, "execution_count": 1}],
                            "fixed": [{"code_cell_index": 0, "execution_count": 1}]},
    }
    record.update(fields)
    return record


def test_cases_are_matched_by_eid_then_by_code_then_by_id_without_code():
    old = [case("pandas_1", eid="E1", code="a"), case("numpy_1", code="b"), case("misc_1"), case("svm_1", code="c")]
    new = [case("pandas_7", eid="e1 ", code="b"),  # the same eid (as compared), other code: the same case
           case("numpy_9", code="b"),  # no eid: its code says it is numpy_1, renamed
           case("misc_1"),  # no code on either side: the same id is the same case
           case("svm_1", code="a")]  # the same id, other code, no eid: another case
    assert sorted(match_cases(old, new)) == [(0, 0), (1, 1), (2, 2)]
    diff = compare(old, new)
    assert [c["case_id"] for c in diff.added] == ["svm_1"] and [c["case_id"] for c in diff.removed] == ["svm_1"]
    assert [(c.old_id, c.case_id) for c in diff.renamed] == [("numpy_1", "numpy_9"), ("pandas_1", "pandas_7")]


def test_two_eids_that_differ_are_two_cases_whatever_their_code():
    assert match_cases([case("a_1", eid="E1", code="a")], [case("a_1", eid="E2", code="a")]) == []
    assert match_cases([case("a_1", eid="E1")], [case("a_1", eid="E2")]) == []  # not even without code


def test_one_case_is_matched_once_and_the_same_id_wins_a_tie():
    old = [case("numpy_3", code="b")]
    new = [case("numpy_2", code="b"), case("numpy_3", code="b"), case("numpy_4", code="b")]
    assert match_cases(old, new) == [(0, 1)]
    old = [case("numpy_2", code="b"), case("numpy_3", code="b")]
    new = [case("numpy_3", code="b")]
    assert match_cases(old, new) == [(1, 0)]
    eids = [case("x_1", eid="E", code="a"), case("x_2", eid="E", code="a")]
    assert match_cases(eids, [case("x_2", eid="E", code="a")]) == [(1, 0)]


def test_a_case_keeps_its_id_over_a_closer_copy_under_another_id():
    assert match_cases([case("a_1", code="a2")], [case("a_1", code="a"), case("b_1", code="a2")]) == [(0, 0)]


def test_each_case_is_in_one_pair_at_most_even_where_ids_repeat():
    assert match_cases([case("a_1", code="a")], [case("a_1", code="a"), case("a_1", code="a")]) == [(0, 0)]
    assert match_cases([case("a_1"), case("a_1")], [case("a_1")]) == [(1, 0)]
    # equally alike, the copy under the same id is taken, also once the first pair of that id is made
    old = [case("a_1", code="a"), case("a_1", code="a")]
    new = [case("b_1", code="a"), case("a_1", code="a"), case("a_1", code="a")]
    assert sorted(match_cases(old, new)) == [(0, 2), (1, 1)]


def test_ids_sort_by_library_then_number():
    new = [case(name) for name in ("x_10", "x", "X_2", "x_0", "a_3")]
    assert [c["case_id"] for c in compare([], new).added] == ["a_3", "x", "x_0", "X_2", "x_10"]


def test_what_a_matched_case_s_change_lists():
    a = case("pandas_1", eid="E1", code="a", datasets=[
        {"name": "houses", "title": "Houses", "url": "u", "license": "CC0", "modifications": [], "files": ["a.csv"]},
        {"url": "https://x/sales", "title": "Sales", "license": None, "modifications": ["sampled"], "files": []}])
    b = case("pandas_1", eid=None, code="a", root_cause="data confusion", evalue="'cost'",
             diagnosis="the column is read by a name that the data does not hold",
             requirements=["pandas==2.1.4", "numpy==1.26.4"],
             execution_order={"reproduced": [{"code_cell_index": 0, "execution_count": 2}],
                              "fixed": [{"code_cell_index": 0, "execution_count": 1}]},
             datasets=[{"name": "houses", "title": "Houses v2", "url": "u", "license": "CC0",
                        "modifications": ["cleaned"], "files": ["a.csv", "b.csv"]},
                       {"url": "https://x/sales", "title": "Sales", "license": None, "modifications": [], "files": []},
                       {"name": "extra", "title": "Extra", "url": None, "license": None, "files": []}])
    change = _case_change(a, b)
    assert change.eid == "E1" and change.changed and not change.renamed
    assert change.lines() == [
        "root cause: API misuse → data confusion",
        "diagnosis: the column is read by a [-wrong-] name {+that the data does not hold+}",
        "message: 'price' → 'cost'",
        "reproduced notebook: execution order changed",
        "dataset 'extra' added (no licence)",
        "dataset 'houses' title: Houses → Houses v2",
        "dataset 'houses' modifications added: cleaned",
        "dataset 'houses' files added: b.csv",
        "dataset 'https://x/sales' modifications removed: sampled",
        "requirements added: numpy==1.26.4",
    ]
    without_files = _case_change(a, b, files=False)
    assert "dataset 'houses' files added: b.csv" not in without_files.lines()
    b["datasets"][2]["license"] = "MIT"
    assert "dataset 'extra' added (MIT)" in _case_change(a, b).lines()
    assert _case_change(a, dict(a, eid="E1")).changed is False


def test_a_dataset_is_named_by_its_name_else_its_url_else_its_title():
    lines = _dataset_changes([], [{"title": "Only a title"}, {"url": "https://x", "title": "T"}, {"name": "n"}])
    assert lines == ["'Only a title' added (no licence)", "'https://x' added (no licence)", "'n' added (no licence)"]
    assert _dataset_changes([{"name": "n", "license": "CC0"}], []) == ["'n' removed"]
    held = {"name": "n", "files": ["a.csv"]}
    assert _dataset_changes([held], [dict(held, files=["a.csv", "b.csv"])]) == ["'n' files added: b.csv"]


@pytest.mark.parametrize(("old", "new", "said"), [
    (["a", "b"], ["A", "B", "C"], "code cells 0, 1, 2 edited; 1 code cell(s) added"),
    (["a", "b", "c"], ["a"], "2 code cell(s) removed"),
    (["a"], ["a", "b", "c"], "2 code cell(s) added"),
    (["a", "b", "c"], ["X"], "code cell 0 edited; 2 code cell(s) removed"),
    (["a", "b"], ["a", "B"], "code cell 1 edited"),
    (["a", "b"], ["A", "B"], "code cells 0, 1 edited"),
    (["a", "b"], ["a", "b"], None),
])
def test_what_changed_in_a_notebook_s_code(old, new, said):
    assert _notebook_change(_notebook(old), _notebook(new)) == said


def test_a_long_notebook_s_one_edit_is_one_edit():
    cells = ["pass"] * 150 + [f"x{i} = {i}" for i in range(100)]
    edited = [*cells[:200], "x50 = -1", *cells[201:]]
    assert _notebook_change(_notebook(cells), _notebook(edited)) == "code cell 200 edited"


def test_notebooks_added_removed_or_unreadable():
    assert _notebook_change(None, _notebook(["a"])) == "added"
    assert _notebook_change(_notebook(["a"]), None) == "removed"
    assert _notebook_change(_notebook(["a"]), "{not json") == "changed (not readable as a notebook)"
    same_code = json.dumps({"cells": [{"cell_type": "code", "source": "a", "outputs": [1]}]})
    assert _notebook_change(_notebook(["a"]), same_code) is None  # outputs and metadata aside


def test_input_data_is_compared_where_both_sides_hold_it():
    data = [{"name": "d", "title": "D", "url": None, "license": "CC0", "modifications": [], "files": ["x.csv"]}]
    old = [case("a_1", eid="E1", datasets=data), case("a_2", eid="E2", datasets=data), case("a_3", eid="E3")]
    new = [case("a_1", eid="E1", datasets=data), case("a_2", eid="E2", datasets=data), case("a_3", eid="E3")]
    diff = compare(old, new, {"a_1": {"x.csv": "1", "y.csv": "2", "gone.csv": "3"}, "a_2": {"x.csv": "1"}},
                   {"a_1": {"x.csv": "1", "y.csv": "9", "new.csv": "4"}, "a_2": {"x.csv": "1"}})
    assert [(c.case_id, c.data) for c in diff.changed] == [
        ("a_1", {"added": ["new.csv"], "removed": ["gone.csv"], "changed": ["y.csv"]})]
    assert diff.notes == []  # a_3 holds no data on either side
    one_side = compare(old, new, {"a_1": {"x.csv": "1"}}, None)
    assert one_side.changed == []
    assert one_side.notes == ["input-data files not compared for 2 case(s) whose data one side does not hold: "
                              "a_1, a_2"]
    records_only = compare(old, new)
    assert records_only.notes[0].endswith(": a_1, a_2")


def test_a_dataset_s_file_list_is_compared_where_both_sides_say_what_they_hold():
    before = [{"name": "d", "title": "D", "url": None, "license": "CC0", "modifications": [], "files": ["x.csv"]}]
    after = [dict(before[0], files=["x.csv", "y.csv"])]
    old, new = [case("a_1", eid="E1", datasets=before)], [case("a_1", eid="E1", datasets=after)]
    added = "dataset 'd' files added: y.csv"

    def lines(old_data: Any, new_data: Any) -> list[str]:
        changed = compare(old, new, old_data, new_data).changed
        return changed[0].lines() if changed else []

    assert added in lines(None, None)  # records alone: their lists are all there is
    assert added in lines({"a_1": {"x.csv": "1"}}, {"a_1": {"x.csv": "1", "y.csv": "2"}})
    for old_data, new_data in (({"a_1": {"x.csv": "1"}}, None), (None, {"a_1": {"x.csv": "1"}}),
                               ({"a_1": {"x.csv": "1"}}, {}), ({}, {"a_1": {"x.csv": "1"}})):
        assert added not in lines(old_data, new_data)  # one side holds no data: its list says nothing


def test_the_cases_whose_data_is_not_compared_are_named_up_to_eight():
    data = [{"name": "d", "title": "D", "url": None, "license": "CC0", "modifications": [], "files": ["x.csv"]}]
    for count, tail in ((8, "x_8"), (9, "x_8 …")):
        cases = [case(f"x_{n}", eid=f"E{n}", datasets=data) for n in range(1, count + 1)]
        note = compare(cases, cases).notes[0]
        assert note.startswith(f"input-data files not compared for {count} case(s)") and note.endswith(tail)


def test_recorded_digests_are_kept_only_as_case_to_file_to_text():
    assert _checked_digests(["not", "a", "mapping"]) is None
    assert _checked_digests({"a_1": {"x.csv": "1"}, "a_2": {"x.csv": 2}, "a_3": "x", 4: {"x.csv": "1"},
                             "a_5": {3: "1"}}) == {"a_1": {"x.csv": "1"}}


def test_the_formats_say_the_same_in_their_own_words():
    old = [case("pandas_1", eid="E1", code="a"), case("numpy_1", eid="E2", code="b")]
    new = [case("pandas_2", eid="E1", code="a", crash_type="ValueError"), case("svm_1", eid="E3", code="c")]
    diff = compare(old, new, old="v1", new="v2")
    diff.notes.append("a note with `code` in it")
    assert not diff.empty and diff.summary() == "1 added, 1 removed, 1 renamed, 1 changed (2 → 2 cases)"
    markdown = diff.markdown(heading="1.1.0 (2025-01-02)")
    assert markdown.splitlines()[:3] == ["## 1.1.0 (2025-01-02)", "", "1 added, 1 removed, 1 renamed, 1 changed "
                                                                     "(2 → 2 cases)."]
    for section in ("### Added", "### Removed", "### Renamed", "### Changed", "### Notes"):
        assert section in markdown.splitlines()
    assert "- `svm_1`: pandas, API misuse, KeyError, KeyError" in markdown
    assert "  - crash type: KeyError → ValueError" in markdown
    assert "- a note with \\`code\\` in it" in markdown
    assert diff.markdown(level=3).startswith("1 added") and "#### Added" in diff.markdown(level=3)
    text = diff.render("json")
    assert text.startswith('{\n  "old": "v1"') and "2 → 2 cases" in text
    assert json.loads(text)["renamed"] == [{"old_id": "pandas_1", "case_id": "pandas_2", "eid": "E1"}]
    table = diff.render("table")
    assert table.splitlines()[0] == "v1 → v2: 1 added, 1 removed, 1 renamed, 1 changed (2 → 2 cases)"
    assert "  changed  pandas_2" in table and "             crash type: KeyError → ValueError" in table
    assert diff.render("markdown").startswith("## Changes from v1 to v2")
    with pytest.raises(ValueError, match="unknown format 'xml'"):
        diff.render("xml")
    only_added = compare([], [case("x_1")])
    assert not only_added.empty and only_added.summary().startswith("1 added")
    assert SnapshotDiff("a", "b", 3, 3).summary() == "no change: 3 cases in both"


def test_a_short_value_is_shown_whole_and_a_long_one_as_a_word_diff():
    eighty, eighty_one = "x" * 80, "y" * 81
    assert _short(eighty) == eighty and _short(eighty_one) == "y" * 79 + "…"
    assert _short(None) == "(none)" and _short("a  b\n c") == "a b c"
    assert _change("a", eighty) == f"a → {eighty}"
    assert _change("a", eighty_one) == f"[-a-] {{+{eighty_one}+}}"


@pytest.mark.parametrize(("old", "new", "said"), [
    ("", "new words", "{+new words+}"),
    ("old words", None, "[-old words-] (now none)"),
    (None, "", "(none)"),
    ("one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen",
     "one two three four five six seven eight nine ten eleven twelve thirteen fourteen FIFTEEN",
     "… nine ten eleven twelve thirteen fourteen [-fifteen-] {+FIFTEEN+}"),
    ("a b c d e f g h i j k l m n o p q r s t", "A b c d e f g h i j k l m n o p q r s T",
     "[-a-] {+A+} b c d e f g … n o p q r s [-t-] {+T+}"),
    ("a b c d e f g h i j k l m n o", "A b c d e f g h i j k l m n O",  # 13 between: shown whole
     "[-a-] {+A+} b c d e f g h i j k l m n [-o-] {+O+}"),
    ("a b c d e f g h i j k l m n o p", "A b c d e f g h i j k l m n o P",  # 14: two words dropped
     "[-a-] {+A+} b c d e f g … j k l m n o [-p-] {+P+}"),
    ("keep this", "keep that", "keep [-this-] {+that+}"),
    ("drop this word", "drop word", "drop [-this-] word"),
])
def test_word_diffs(old, new, said):
    assert word_diff(old, new) == said


def test_a_long_text_s_one_edit_is_one_edit():
    words = " ".join(f"w{i % 40}" for i in range(250))
    edited = words.replace("w7 w8 w9", "w7 CHANGED w9", 1)
    assert word_diff(words, edited) == "… w2 w3 w4 w5 w6 w7 [-w8-] {+CHANGED+} w9 w10 w11 w12 w13 w14 …"
