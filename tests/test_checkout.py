"""``junobench checkout``: cases copied into a new snapshot the loader accepts."""

from __future__ import annotations

from pathlib import Path

import pytest

from junobench.cli import main
from junobench.data import layout
from junobench.data.checkout import checkout
from junobench.data.snapshot import sample_path
from junobench.data.tables import read_desc, read_diagnoses, read_table
from junobench.errors import JunoBenchError


def files(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def test_checkout_copies_cases_and_their_table_rows(tmp_path):
    dest = checkout(["pandas_1", "NBspecific_2"], "sample", tmp_path / "snap")
    rows, problems = read_desc(dest)
    assert [r.case_id for r in rows] == ["NBspecific_2", "pandas_1"]  # source table order
    assert problems == []
    source_table = read_table(sample_path() / layout.DESC_TABLE)
    copied = read_table(dest / layout.DESC_TABLE)
    assert copied.columns == source_table.columns
    assert all(row in source_table.rows for row in copied.rows)
    assert set(read_diagnoses(dest)) == {"pandas_1_reproduced", "NBspecific_2_reproduced"}
    assert len(read_table(dest / layout.DIAGNOSIS_TABLE).rows) == 4
    for case_id in ("pandas_1", "NBspecific_2"):
        assert files(layout.case_dir(dest, case_id)) == files(layout.case_dir(sample_path(), case_id))
    assert not layout.case_dir(dest, "pandas_2").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["snap"]  # no staging left behind


def test_checkout_is_loadable_like_any_snapshot(tmp_path):
    import junobench

    dest = checkout(["numpy_1", "seaborn_1"], "sample", tmp_path / "snap")
    cases = junobench.load(str(dest), cache_dir=tmp_path / "cache")
    assert sorted(cases["case_id"]) == ["numpy_1", "seaborn_1"]
    assert all(d["files"] for case in cases["datasets"] for d in case)


def test_checkout_into_an_empty_directory(tmp_path):
    (tmp_path / "empty").mkdir()
    checkout(["pandas_2"], "sample", tmp_path / "empty")
    assert (tmp_path / "empty" / layout.DESC_TABLE).is_file()


def test_checkout_refuses_a_non_empty_directory(tmp_path):
    dest = tmp_path / "busy"
    dest.mkdir()
    (dest / "keep.txt").write_text("mine")
    with pytest.raises(JunoBenchError, match="not empty; refusing to overwrite"):
        checkout(["pandas_2"], "sample", dest)
    assert files(dest) == {"keep.txt": b"mine"}


def test_checkout_unknown_case_names_it_and_suggests(tmp_path, capsys):
    code = main(["checkout", "pandas_9", "--source", "sample", "--dest", str(tmp_path / "x")])
    err = capsys.readouterr().err
    assert code == 1
    assert "no case 'pandas_9'" in err and "did you mean" in err and "Traceback" not in err
    assert not (tmp_path / "x").exists()


def test_checkout_cli(tmp_path, capsys):
    code = main(["checkout", "sklearn_2", "--source", "sample", "--dest", str(tmp_path / "one")])
    assert code == 0
    captured = capsys.readouterr()
    assert captured.out == "" and "checked out 1 case(s)" in captured.err
    assert (tmp_path / "one" / "benchmark" / "sklearn_2" / "data" / "wine_quality.csv").is_file()


def test_checkout_of_a_snapshot_without_data_copies_what_is_there(reference_snapshot, tmp_path):
    dest = checkout(["torch_7"], str(reference_snapshot), tmp_path / "snap")
    assert (dest / "benchmark" / "torch_7" / "torch_7_reproduced.ipynb").is_file()
    assert [r.case_id for r in read_desc(dest)[0]] == ["torch_7"]
    assert set(read_diagnoses(dest)) <= {"torch_7_reproduced"}
