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
