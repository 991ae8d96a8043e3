"""junobench diff A B: the bundled sample against an edited copy of it, and against its export."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from snapshot_files import edit_cell

import junobench
from junobench.cli import main
from junobench.data import layout
from junobench.data.snapshot import resolve
from junobench.data.tables import read_table, write_table
from junobench.hub.changes import code_cells, compare
from junobench.hub.write_export import export


def rename_case(root: Path, old: str, new: str) -> None:
    """Rename a case: its folder, notebooks and the rows of both tables."""
    folder = layout.case_dir(root, old)
    for path in folder.glob(f"{old}*.ipynb"):
        path.rename(folder / path.name.replace(old, new, 1))
    folder.rename(layout.case_dir(root, new))
    for table_name, column in ((layout.DESC_TABLE, "nb_name"), (layout.DIAGNOSIS_TABLE, "instance")):
        table = read_table(root / table_name)
        rows = table.records()
        for row in rows:
            if str(row[column]).startswith(old + "_") or row[column] == old:
                row[column] = new + str(row[column])[len(old):]
        write_table(root / table_name, rows, table.columns)


def edit_rows(root: Path, table_name: str, column: str, key: str, **values: object) -> None:
    table = read_table(root / table_name)
    rows = table.records()
    for row in rows:
        if row[column] == key:
            row.update(values)
    write_table(root / table_name, rows, table.columns)


def drop_case(root: Path, case: str) -> None:
    shutil.rmtree(layout.case_dir(root, case))
    for table_name, column in ((layout.DESC_TABLE, "nb_name"), (layout.DIAGNOSIS_TABLE, "instance")):
        table = read_table(root / table_name)
        rows = [r for r in table.records() if not (r[column] == case or str(r[column]).startswith(case + "_r")
                                                   or str(r[column]).startswith(case + "_f"))]
        write_table(root / table_name, rows, table.columns)


@pytest.fixture(scope="module")
def edited(tmp_path_factory) -> Path:
    """The sample with one case of each kind of change."""
    root = tmp_path_factory.mktemp("diff") / "edited"
    shutil.copytree(resolve("sample"), root)
    drop_case(root, "seaborn_1")                                          # removed
    rename_case(root, "sklearn_2", "sklearn_3")                           # renamed (same eid)
    edit_rows(root, layout.DESC_TABLE, "nb_name", "pandas_1", label_root_cause="API misuse")      # label
    edit_rows(root, layout.DIAGNOSIS_TABLE, "instance", "numpy_1_reproduced",
              diagnosis="A rewritten diagnosis.")                         # diagnosis
    edit_cell(root, "pandas_2", "fixed", 1, "import pandas as pd  # edited\n")  # notebook code
    data = root / "benchmark/NBspecific_1/data/student_scores.csv"
    data.write_bytes(data.read_bytes() + b"\n")                           # data file
    # added: a copy of matplotlib_1 under a new id and eid
    shutil.copytree(layout.case_dir(root, "matplotlib_1"), layout.case_dir(root, "matplotlib_2"))
    for path in layout.case_dir(root, "matplotlib_2").glob("matplotlib_1*.ipynb"):
        path.rename(path.with_name(path.name.replace("matplotlib_1", "matplotlib_2")))
    table = read_table(root / layout.DESC_TABLE)
    rows = table.records()
    new = dict(next(r for r in rows if r["nb_name"] == "matplotlib_1"), nb_name="matplotlib_2", eid="new-eid-1")
    write_table(root / layout.DESC_TABLE, [*rows, new], table.columns)
    return root


def test_every_kind_of_change_is_found(edited: Path) -> None:
    d = junobench.diff("sample", edited)
    assert [c["case_id"] for c in d.added] == ["matplotlib_2"]
    assert [c["case_id"] for c in d.removed] == ["seaborn_1"]
    assert [(c.old_id, c.case_id) for c in d.renamed] == [("sklearn_2", "sklearn_3")]
    changed = {c.case_id: c for c in d.changed}
    assert set(changed) == {"pandas_1", "numpy_1", "pandas_2", "NBspecific_1"}
    assert changed["pandas_1"].labels == {"root_cause": ["data confusion", "API misuse"]}
    assert changed["numpy_1"].diagnosis[1] == "A rewritten diagnosis."
    assert changed["pandas_2"].notebooks == {"fixed": "code cell 1 edited"}
    assert changed["NBspecific_1"].data == {"changed": ["student_scores.csv"]}
    assert d.summary() == "1 added, 1 removed, 1 renamed, 4 changed (10 → 10 cases)"

    back = junobench.diff(edited, "sample")
    assert [c["case_id"] for c in back.added] == ["seaborn_1"]
    assert [(c.old_id, c.case_id) for c in back.renamed] == [("sklearn_3", "sklearn_2")]


def test_the_three_formats(edited: Path, capsys) -> None:
    assert main(["diff", "sample", str(edited), "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["renamed"] == [{"old_id": "sklearn_2", "case_id": "sklearn_3",
                                "eid": data["renamed"][0]["eid"]}]
    assert {c["case_id"] for c in data["changed"]} == {"pandas_1", "numpy_1", "pandas_2", "NBspecific_1"}

    assert main(["diff", "sample", str(edited), "--format", "markdown"]) == 0
    notes = capsys.readouterr().out
    for heading in ("### Added", "### Removed", "### Renamed", "### Changed"):
        assert heading in notes
    assert "- `sklearn_2` → `sklearn_3`" in notes
    assert "root cause: data confusion → API misuse" in notes

    assert main(["diff", "sample", str(edited)]) == 0
    table = capsys.readouterr().out
    assert "renamed  sklearn_2 → sklearn_3" in table and "fixed notebook: code cell 1 edited" in table


def test_an_export_carries_its_data_digests(edited: Path, tmp_path: Path) -> None:
    """Against an export of the sample, the same changes, data included."""
    export("sample", tmp_path / "export")
    d = junobench.diff(tmp_path / "export", edited)
    assert {c.case_id for c in d.changed} == {"pandas_1", "numpy_1", "pandas_2", "NBspecific_1"}
    assert {c.case_id: c for c in d.changed}["NBspecific_1"].data == {"changed": ["student_scores.csv"]}
    assert junobench.diff(tmp_path / "export", "sample").empty


def test_data_compared_only_where_both_sides_hold_it() -> None:
    case = {"case_id": "torch_1", "eid": "e1", "datasets": [{"name": "x", "files": ["x.csv"]}]}
    d = compare([case], [case], {"torch_1": {"x.csv": "a"}}, None)
    assert d.empty and "not compared for 1 case" in d.notes[0]
    assert compare([case], [case], {"torch_1": {"x.csv": "a"}}, {"torch_1": {"x.csv": "a"}}).empty


def test_markdown_escapes_what_the_data_says() -> None:
    a = {"case_id": "torch_1", "eid": "e1", "diagnosis": "old"}
    b = {"case_id": "torch_1", "eid": "e1", "diagnosis": "<script>x</script> | *bold*"}
    text = compare([a], [b]).markdown()
    assert "<script>" not in text and "| *bold*" not in text


def test_code_cells_ignore_outputs_and_metadata() -> None:
    nb = {"cells": [{"cell_type": "code", "source": ["a = 1\n", "b"], "outputs": [{"x": 1}], "metadata": {}},
                    {"cell_type": "markdown", "source": "text"}]}
    other = {"cells": [{"cell_type": "code", "source": "a = 1\nb", "outputs": [], "metadata": {"k": 2}}]}
    assert code_cells(json.dumps(nb)) == code_cells(json.dumps(other)) == ["a = 1\nb"]
    assert code_cells("not json") is None
    a = {"case_id": "torch_1", "eid": "e1", "reproduced": json.dumps(nb)}
    b = {"case_id": "torch_1", "eid": "e1", "reproduced": json.dumps(other)}
    assert compare([a], [b]).empty


def test_a_case_added_twice_under_one_eid_shows_as_added() -> None:
    """Two cases with one eid (a case added twice): one is matched, the other is new."""
    a = {"case_id": "pandas_3", "eid": "e3", "diagnosis": "d"}
    twice = [a, {**a, "case_id": "pandas_4"}]
    d = compare([a], twice)
    assert [c["case_id"] for c in d.added] == ["pandas_4"] and d.changes == []
    assert [c["case_id"] for c in compare(twice, [a]).removed] == ["pandas_4"]
    # without eids, cases are matched by id
    plain = [{"case_id": "torch_1", "diagnosis": "x"}]
    assert compare(plain, [{"case_id": "torch_1", "diagnosis": "y"}]).changed[0].diagnosis == ["x", "y"]


def test_a_bad_source_is_one_error_line(tmp_path: Path, capsys) -> None:
    assert main(["diff", "sample", str(tmp_path / "absent")]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "absent" in err and "Traceback" not in err


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=15)
_cells = st.lists(st.fixed_dictionaries({"cell_type": st.sampled_from(["code", "markdown", 3]),
                                         "source": st.one_of(st.text(max_size=20), st.lists(st.text(max_size=5)),
                                                             _json)}), max_size=4)


@settings(max_examples=200)
@given(st.one_of(st.text(max_size=50), _json.map(json.dumps), _cells.map(lambda c: json.dumps({"cells": c}))),
       st.one_of(st.text(max_size=50), _cells.map(lambda c: json.dumps({"cells": c}))))
def test_any_notebook_text_is_compared_without_raising(a: str, b: str) -> None:
    cells = code_cells(a)
    assert cells is None or all(isinstance(c, str) for c in cells)
    d = compare([{"case_id": "torch_1", "eid": "e", "fixed": a}], [{"case_id": "torch_1", "eid": "e", "fixed": b}])
    assert d.empty == (a == b or (code_cells(a) is not None and code_cells(a) == code_cells(b)))
