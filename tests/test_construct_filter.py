"""construct filter: the benchmark's inclusion criteria over the labeled crashes."""

from __future__ import annotations

from pathlib import Path

import pytest

from junobench.cli import main
from junobench.construct.filter import ML_BUG, Criteria, filter_candidates, filter_table
from junobench.data.tables import read_table, write_table

DEV = "empirical_labeled_crashes.dev.xlsx"


def test_dev_rows_give_the_documented_counts(reference_dir: Path, tmp_path: Path, capsys) -> None:
    out = tmp_path / "candidates.xlsx"
    assert main(["construct", "filter", str(reference_dir / DEV), "--out", str(out)]) == 0
    captured = capsys.readouterr()
    assert captured.out == ""  # the counts of each step are a status of the file written
    printed = captured.err
    lines = {line.rsplit(None, 2)[0].strip(): line.split()[-2:] for line in printed.splitlines()
             if line.split()[-1].isdigit()}
    assert lines["labeled crashes"] == ["493", "483"]
    assert lines["Kaggle notebooks"][0] == "237"
    assert lines["ML library or notebook-specific"][0] == "189"
    assert lines["reproducible root cause"] == ["168", "163"]
    written = read_table(out)
    assert len(written.rows) == 168
    assert written.columns == read_table(reference_dir / DEV).columns
    rows = written.records()
    assert all(r["nb_source"] == 1 for r in rows)
    assert not {r["label_root_cause"] for r in rows} & {"insufficient resources",
                                                       "file/path not found or exist"}


def test_each_criterion_applies(tmp_path: Path) -> None:
    rows = [
        {"fname": "a", "nb_source": 1.0, "label_if_ML_bug": ML_BUG, "label_root_cause": "misunderstanding of APIs"},
        {"fname": "a", "nb_source": 1.0, "label_if_ML_bug": ML_BUG, "label_root_cause": "typo"},
        {"fname": "b", "nb_source": "1", "label_if_ML_bug": "general code error",
         "label_root_cause": "NB specific - execution order"},
        {"fname": "c", "nb_source": 2.0, "label_if_ML_bug": ML_BUG, "label_root_cause": "invalid argument"},
        {"fname": "d", "nb_source": 1.0, "label_if_ML_bug": "general code error", "label_root_cause": "typo"},
        {"fname": "e", "nb_source": 1.0, "label_if_ML_bug": ML_BUG, "label_root_cause": " Insufficient resources"},
    ]
    kept, steps = filter_candidates(rows)
    assert [r["fname"] for r in kept] == ["a", "a", "b"]
    assert [(s.rows, s.notebooks) for s in steps] == [(6, 5), (5, 4), (4, 3), (3, 2)]
    loose = Criteria(excluded_root_causes=())
    assert [r["fname"] for r in filter_candidates(rows, loose)[0]] == ["a", "a", "b", "e"]
    github = Criteria(sources=("2",))
    assert [r["fname"] for r in filter_candidates(rows, github)[0]] == ["c"]


def test_criteria_are_configurable_from_the_cli(reference_dir: Path, tmp_path: Path, capsys) -> None:
    out = tmp_path / "c.xlsx"
    assert main(["construct", "filter", str(reference_dir / DEV), "--out", str(out),
                 "--exclude-root-cause", "insufficient resources"]) == 0
    last = next(line for line in capsys.readouterr().err.splitlines()
                if line.startswith("reproducible root cause"))
    assert last.split()[-2] == "182"  # only 7 of the 189 rows have that root cause
    assert len(read_table(out).rows) == 182


def test_missing_columns_are_named(tmp_path: Path, capsys) -> None:
    table = tmp_path / "labeled.xlsx"
    write_table(table, [{"fname": "a", "nb_source": 1}], ["fname", "nb_source"])
    assert main(["construct", "filter", str(table), "--out", str(tmp_path / "o.xlsx")]) == 1
    error = capsys.readouterr().err
    assert "label_if_ML_bug" in error and "label_root_cause" in error and "labeled.xlsx" in error
    assert not (tmp_path / "o.xlsx").exists()


def test_refuses_to_overwrite_its_input(tmp_path: Path) -> None:
    table = tmp_path / "labeled.xlsx"
    write_table(table, [{"fname": "a"}], ["fname"])
    with pytest.raises(Exception, match="overwrite"):
        filter_table(table, table)
