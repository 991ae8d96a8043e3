"""Each kind of bad input gets one clear message naming file and case, exit code 1."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest
from openpyxl import load_workbook

from junobench.cli import main


def drop_column(table, column: str) -> None:
    workbook = load_workbook(table)
    sheet = workbook.active
    header = [c.value for c in sheet[1]]
    sheet.delete_cols(header.index(column) + 1)
    workbook.save(table)


def duplicate_row(table, case_id: str) -> None:
    workbook = load_workbook(table)
    sheet = workbook.active
    row = next(r for r in sheet.iter_rows(min_row=2, values_only=True) if r[0] == case_id)
    sheet.append(list(row))
    workbook.save(table)


def break_reproduced(snapshot, case_id: str) -> None:
    path = snapshot / f"benchmark/{case_id}/{case_id}_reproduced.ipynb"
    nb = json.loads(path.read_text())
    for cell in nb["cells"]:
        cell["outputs"] = [] if cell["cell_type"] == "code" else cell.get("outputs")
    path.write_text(json.dumps(nb))


BREAKAGES = {
    "missing_column": (lambda s: drop_column(s / "benchmark_desc.xlsx", "label_root_cause"),
                       ["benchmark_desc.xlsx", "missing required column(s) 'label_root_cause'"]),
    "missing_folder": (lambda s: shutil.rmtree(s / "benchmark/sklearn_5"),
                       ["benchmark/sklearn_5", "case sklearn_5", "case folder is missing"]),
    "missing_notebook": (lambda s: (s / "benchmark/numpy_4/numpy_4_fixed.ipynb").unlink(),
                         ["benchmark/numpy_4/numpy_4_fixed.ipynb", "case numpy_4",
                          "fixed notebook is missing"]),
    "invalid_json": (lambda s: (s / "benchmark/torch_3/torch_3_fixed.ipynb").write_text("{oops"),
                     ["benchmark/torch_3/torch_3_fixed.ipynb", "case torch_3", "not valid JSON"]),
    "no_error_output": (lambda s: break_reproduced(s, "pandas_2"),
                        ["benchmark/pandas_2/pandas_2_reproduced.ipynb", "case pandas_2",
                         "has no error output"]),
    "duplicate_ids": (lambda s: duplicate_row(s / "benchmark_desc.xlsx", "seaborn_1"),
                      ["benchmark_desc.xlsx", "case seaborn_1", "duplicate case id"]),
}


@pytest.mark.parametrize("kind", sorted(BREAKAGES))
def test_bad_input_is_reported_clearly_and_skip_invalid_builds_the_rest(kind, snapshot_copy, capsys):
    breakage, expected = BREAKAGES[kind]
    breakage(snapshot_copy)
    code = main(["ls", "--source", str(snapshot_copy), "--format", "json"])
    out, err = capsys.readouterr()
    assert code == 1
    assert out == ""
    assert "Traceback" not in err
    for fragment in expected:
        assert fragment in err
    if kind == "missing_column":
        return  # nothing can be built without the labels
    code = main(["ls", "--source", str(snapshot_copy), "--format", "json", "--skip-invalid"])
    out, err = capsys.readouterr()
    assert code == 0
    listed = {c["case_id"] for c in json.loads(out)}
    bad_case = expected[1].removeprefix("case ")
    assert bad_case not in listed
    assert len(listed) == 110
    assert f"skipped 1 invalid case(s): {bad_case}" in err


def test_missing_snapshot_and_missing_table(tmp_path, capsys):
    assert main(["ls", "--source", str(tmp_path / "nowhere")]) == 1
    assert "no such snapshot directory" in capsys.readouterr().err
    (tmp_path / "benchmark").mkdir()
    assert main(["ls", "--source", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert "benchmark_desc.xlsx: the case table is missing" in err


def test_strict_build_lists_every_problem_at_once(snapshot_copy, capsys):
    (snapshot_copy / "benchmark/torch_3/torch_3_fixed.ipynb").write_text("{oops")
    (snapshot_copy / "benchmark/numpy_4/numpy_4_fixed.ipynb").unlink()
    assert main(["ls", "--source", str(snapshot_copy)]) == 1
    err = capsys.readouterr().err
    assert "2 problem(s) found" in err and "torch_3" in err and "numpy_4" in err
    assert "--skip-invalid" in err


def test_console_script_prints_no_traceback_for_bad_input(tmp_path):
    result = subprocess.run([sys.executable, "-m", "junobench", "ls", "--source", str(tmp_path / "x")],
                            capture_output=True, text=True, check=False)
    assert result.returncode == 1
    assert result.stderr.startswith("error: ") and "Traceback" not in result.stderr


def test_table_rows_are_numbered_as_in_the_sheet_and_empty_rows_are_skipped(snapshot_copy):
    """A problem names the row a spreadsheet shows: rows after an empty one keep their
    number, and the empty row itself is no problem."""
    from junobench.data.tables import read_desc

    table = snapshot_copy / "benchmark_desc.xlsx"
    before, _ = read_desc(snapshot_copy)
    workbook = load_workbook(table)
    sheet = workbook.active
    sheet.insert_rows(4)  # row 4 empty; the case of row 4 moves to row 5
    sheet.cell(row=6, column=1).value = None  # the case now in row 6 loses its id
    workbook.save(table)
    rows, problems = read_desc(snapshot_copy)
    assert [str(p) for p in problems] == [
        "benchmark_desc.xlsx: row 6: empty nb_name (give every row its case id)"]
    assert [(r.case_id, r.row_number) for r in rows][:3] == [
        (before[0].case_id, 2), (before[1].case_id, 3), (before[2].case_id, 5)]
    assert len(rows) == len(before) - 1



def test_rows_keep_their_sheet_numbers_with_an_empty_first_column_and_an_empty_first_row_is_refused(snapshot_copy):
    """The reader skips no empty area: with column A empty the rows are still numbered as
    the sheet shows them; with row 1 empty the header is not guessed from a later row."""
    from junobench.data.tables import read_desc
    from junobench.errors import JunoBenchError

    table = snapshot_copy / "benchmark_desc.xlsx"
    workbook = load_workbook(table)
    sheet = workbook.active
    sheet.insert_cols(1)  # an empty column A before the table
    sheet.cell(row=4, column=2).value = None  # row 4 loses its id
    workbook.save(table)
    _, problems = read_desc(snapshot_copy)
    assert [str(p) for p in problems] == ["benchmark_desc.xlsx: row 4: empty nb_name (give every row its case id)"]
    sheet.insert_rows(1)  # an empty row 1 above the header
    workbook.save(table)
    with pytest.raises(JunoBenchError, match="row 1 is empty: the header must be the sheet's first row"):
        read_desc(snapshot_copy)


def test_a_column_named_twice_is_refused_not_read_from_one_of_the_two(snapshot_copy, capsys):
    """A second ``label_root_cause`` column (a stale copy, say) was read in place of the
    first, silently; which of the two is meant is a guess, so the table is refused."""
    table = snapshot_copy / "benchmark_desc.xlsx"
    workbook = load_workbook(table)
    sheet = workbook.active
    first = [c.value for c in sheet[1]].index("label_root_cause") + 1
    stale = sheet.max_column + 1
    sheet.cell(row=1, column=stale).value = "label_root_cause"
    for row in range(2, sheet.max_row + 1):
        sheet.cell(row=row, column=stale).value = "API misuse"
    workbook.save(table)
    for verb in (["ls", "--source", str(snapshot_copy)], ["validate", str(snapshot_copy)]):
        code = main(verb)
        out, err = capsys.readouterr()
        assert code == 1 and "Traceback" not in out + err
        assert f"column 'label_root_cause' appears twice (columns {first} and {stale})" in out + err


def test_a_huge_case_id_is_cut_in_messages_not_echoed_whole(tmp_path, capsys):
    """A 10,000-character id from a table made every message about it 20 KB long."""
    from junobench.data.tables import read_table, write_table
    from junobench.errors import Problem

    snapshot = tmp_path / "snap"
    assert main(["checkout", "--source", "sample", "--dest", str(snapshot), "pandas_1"]) == 0
    table = read_table(snapshot / "benchmark_desc.xlsx")
    rows = [dict(zip(table.columns, row, strict=True)) for row in table.rows]
    huge = "pandas_" + "9" * 10_000
    write_table(snapshot / "benchmark_desc.xlsx", [*rows, {**rows[0], "nb_name": huge}], table.columns)
    capsys.readouterr()
    assert main(["validate", str(snapshot)]) == 1
    said = capsys.readouterr()
    assert "case pandas_99999" in said.out and len(said.out + said.err) < 5_000
    shown = str(Problem("x" * 9_000, f"benchmark/{huge}/{huge}_fixed.ipynb", huge, "y" * 9_000))
    cut_x, cut_y = "x" * 999 + "…" + "x" * 1000, "y" * 999 + "…" + "y" * 1000  # both ends kept
    assert shown.endswith(f"_fixed.ipynb: case {huge[:79]}…: {cut_x} ({cut_y})")


def test_an_earlier_report_nested_too_deeply_or_a_fifo_is_one_error(tmp_path, capsys):
    import importlib.util
    import os

    from junobench.errors import JunoBenchError
    from junobench.verify.resume import earlier_results

    report = tmp_path / "report.json"
    report.write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(JunoBenchError, match=r"cannot read the earlier report \(nested too deeply\)"):
        earlier_results(report)
    if importlib.util.find_spec("nbclient") is not None:  # verify itself needs the run extra
        code = main(["verify", "NBspecific_2", "--source", "sample", "--report", str(report), "--no-progress"])
        err = capsys.readouterr().err
        assert code == 1 and err.startswith("error: ") and len(err.splitlines()) == 1, err
        assert "report.json: cannot read the earlier report (nested too deeply)" in err
    os.mkfifo(tmp_path / "fifo.json")
    with pytest.raises(JunoBenchError, match="not a regular file"):  # not a wait for a writer
        earlier_results(tmp_path / "fifo.json")
