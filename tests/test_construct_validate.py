"""junobench validate SNAPSHOT: tables and dataset metadata files, every problem at once."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from junobench.cli import main
from junobench.data import layout
from junobench.data.snapshot import resolve
from junobench.data.tables import read_table, write_table
from junobench.data.validate import validate


@pytest.fixture
def sample_copy(tmp_path: Path) -> Path:
    target = tmp_path / "sample"
    shutil.copytree(resolve("sample"), target)
    return target


def test_the_bundled_sample_is_valid(capsys) -> None:
    assert main(["validate", "sample"]) == 0
    assert "valid" in capsys.readouterr().out


def test_the_reference_snapshot_is_valid(reference_snapshot: Path) -> None:
    assert validate(reference_snapshot) == []


def test_every_problem_is_reported(sample_copy: Path, capsys) -> None:
    metadata = sorted(sample_copy.glob("benchmark/*/data/*.metadata.json"))
    assert len(metadata) >= 3
    metadata[0].write_text("{ not json", encoding="utf-8")
    broken = json.loads(metadata[1].read_text(encoding="utf-8"))
    del broken["license"]
    broken["files"].append("../../outside.csv")
    metadata[1].write_text(json.dumps(broken), encoding="utf-8")
    listed = json.loads(metadata[2].read_text(encoding="utf-8"))
    listed["files"].append("gone.csv")
    metadata[2].write_text(json.dumps(listed), encoding="utf-8")
    desc = read_table(sample_copy / layout.DESC_TABLE)
    columns = [c for c in desc.columns if c != "label_root_cause"]
    write_table(sample_copy / layout.DESC_TABLE, desc.records(), columns)

    assert main(["validate", str(sample_copy)]) == 1
    printed = capsys.readouterr().out
    assert "label_root_cause" in printed and layout.DESC_TABLE in printed
    assert metadata[0].name in printed and "not valid JSON" in printed
    assert metadata[1].name in printed and "'license' is a required property" in printed
    assert "../../outside.csv" in printed
    assert "'gone.csv'" in printed and metadata[2].name in printed
    assert printed.startswith("5 problem(s)")
    case = metadata[0].parent.parent.name
    assert f"case {case}" in printed


def test_duplicate_case_ids_and_a_broken_diagnosis_table(sample_copy: Path) -> None:
    desc = read_table(sample_copy / layout.DESC_TABLE)
    rows = desc.records()
    write_table(sample_copy / layout.DESC_TABLE, [*rows, rows[0]], desc.columns)
    write_table(sample_copy / layout.DIAGNOSIS_TABLE, [{"instance": "x"}], ["instance"])
    problems = [str(p) for p in validate(sample_copy)]
    assert any("duplicate case id" in p for p in problems)
    assert any(layout.DIAGNOSIS_TABLE in p and "diagnosis" in p for p in problems)


def test_a_missing_case_table_or_folder(tmp_path: Path, capsys) -> None:
    (tmp_path / "empty").mkdir()
    assert [p.problem for p in validate(tmp_path / "empty")] == ["the case table is missing"]
    assert main(["validate", str(tmp_path / "nope")]) == 1
    assert "no such snapshot directory" in capsys.readouterr().err


def test_notebooks_targets_and_folders_are_checked(sample_copy: Path, capsys) -> None:
    (sample_copy / "benchmark/pandas_1/pandas_1_fixed.ipynb").unlink()
    (sample_copy / "benchmark/numpy_1/numpy_1_reproduced.ipynb").write_text("{}", encoding="utf-8")
    reproduced = sample_copy / "benchmark/sklearn_1/sklearn_1_reproduced.ipynb"
    notebook = json.loads(reproduced.read_text(encoding="utf-8"))
    for cell in notebook["cells"]:
        if cell["cell_type"] == "code":
            cell["outputs"] = [o for o in cell["outputs"] if o.get("output_type") != "error"]
    reproduced.write_text(json.dumps(notebook), encoding="utf-8")
    shutil.copytree(sample_copy / "benchmark/pandas_2", sample_copy / "benchmark/pandas_9")

    assert main(["validate", str(sample_copy)]) == 1
    printed = capsys.readouterr().out
    assert printed.startswith("4 problem(s)")
    assert "case pandas_1: fixed notebook is missing" in printed
    assert "numpy_1_reproduced.ipynb: case numpy_1: unsupported nbformat" in printed
    assert "case sklearn_1: the reproduced notebook has no error output" in printed
    assert "benchmark/pandas_9: case pandas_9: the case folder has no row" in printed


def test_table_datasets_and_metadata_files_agree_both_ways(sample_copy: Path) -> None:
    desc = read_table(sample_copy / layout.DESC_TABLE)
    rows = desc.records()
    by_case = {r["nb_name"]: r for r in rows}
    by_case["pandas_1"]["DatasetLicenseName_1"] = None
    by_case["numpy_1"]["DatasetTitle_2"] = "Gyroscope recordings"
    by_case["numpy_1"]["DatasetLicenseName_2"] = "CC BY 4.0"
    write_table(sample_copy / layout.DESC_TABLE, rows, desc.columns)
    unrelated = sample_copy / "benchmark/sklearn_2/data/iris.metadata.json"
    unrelated.write_text(json.dumps({"title": "Iris", "url": None, "license": "CC0: Public Domain",
                                     "files": [], "modifications": []}), encoding="utf-8")

    problems = [str(p) for p in validate(sample_copy)]
    assert any("case pandas_1: dataset 1" in p and "has no licence" in p for p in problems)
    assert any("case numpy_1: dataset 2 of the table (Gyroscope recordings) has no metadata"
               in p for p in problems)
    assert any(p.startswith("benchmark/sklearn_2/data/iris.metadata.json: case sklearn_2: "
                            "describes 'Iris'") for p in problems)
    assert len(problems) == 3


def test_folders_over_the_hub_file_limit(sample_copy: Path) -> None:
    from junobench.data.validate import check

    crowded = sample_copy / "benchmark/pandas_1/data/images"
    crowded.mkdir()
    for i in range(6):
        (crowded / f"{i}.png").write_bytes(b"")
    report = check(sample_copy, max_files=5)
    assert [str(p) for p in report.problems] == [
        "benchmark/pandas_1/data/images: case pandas_1: the folder holds 6 files, more than "
        "the 5 a Hugging Face Hub folder may hold (split it into subfolders or downsample "
        "the data)"]
    assert check(sample_copy).valid


def test_absent_data_and_originals_are_warnings(reference_snapshot: Path, capsys) -> None:
    assert main(["validate", str(reference_snapshot)]) == 0
    captured = capsys.readouterr()
    assert "valid (111 cases" in captured.out
    assert "warning: the original notebook is not in the snapshot: " in captured.err
    assert "(111 in all)" in captured.err
