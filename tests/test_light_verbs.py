"""The light verbs stay light: ``--version``, ``--help`` and ``ls`` on a warm cache do not
import datasets or pandas, and the rows ``ls`` reads straight from the prepared Arrow
files are the rows of the full load (timings: scripts/benchmark_cli.py)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

import junobench
from junobench import loader
from junobench.browse import LS_FIELDS, ls
from junobench.data.prepared import index_path
from junobench.data.snapshot import sample_path
from junobench.errors import JunoBenchError, SnapshotError

_PROBE = """
import json, sys
from junobench.cli import main
try:
    code = main(sys.argv[2:])
except SystemExit as stop:  # --version and --help end through argparse
    code = stop.code
heavy = sorted(m for m in ("datasets", "pandas", "pyarrow", "numpy") if m in sys.modules)
with open(sys.argv[1], "w") as out:
    json.dump({"code": code, "imported": heavy}, out)
"""


def _probe(tmp_path: Path, *argv: str) -> dict[str, object]:
    result = tmp_path / "probe.json"
    done = subprocess.run([sys.executable, "-c", _PROBE, str(result), *argv],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    probe: dict[str, object] = json.loads(result.read_text())
    return probe


@pytest.mark.parametrize("argv", [["--version"], ["--help"], ["evaluate", "--help"], ["env", "--help"]])
def test_the_parser_imports_no_data_library(tmp_path, argv):
    probe = _probe(tmp_path, *argv)
    assert probe == {"code": 0, "imported": []}


def test_ls_on_a_warm_cache_imports_neither_datasets_nor_pandas(tmp_path):
    junobench.ls("sample")  # warms the cache the subprocess shares (JUNOBENCH_CACHE)
    probe = _probe(tmp_path, "ls", "--source", "sample", "--library", "pandas")
    assert probe["code"] == 0
    assert "datasets" not in probe["imported"] and "pandas" not in probe["imported"]


@pytest.fixture
def sample_copy(tmp_path: Path) -> Path:
    target = tmp_path / "sample"
    shutil.copytree(sample_path(), target)
    return target


def _full(source: Path, columns: list[str], cache: Path, **filters: object) -> list[dict[str, object]]:
    rows: list[dict[str, object]] = (
        junobench.load(source, cache_dir=cache, **filters).select_columns(columns).to_list())
    return rows


def _no_full_load(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("the records were loaded through datasets")

    monkeypatch.setattr(loader, "_load_root", refuse)


@pytest.mark.parametrize("filters", [{}, {"library": "pandas"}, {"root_cause": ["API misuse", "NB specific"]},
                                     {"library": "torch", "pipeline_stage": "training"}])
def test_warm_rows_are_the_rows_of_the_full_load(sample_copy, tmp_path, monkeypatch, filters):
    cache = tmp_path / "cache"
    columns = [*LS_FIELDS, "datasets"]
    expected = _full(sample_copy, columns, cache, **filters)
    notebooks = junobench.load(sample_copy, "notebooks", cache_dir=cache, **filters).to_list()
    _no_full_load(monkeypatch)
    assert loader.load_rows(sample_copy, "cases", columns, cache_dir=cache, **filters) == expected
    assert loader.load_rows(sample_copy, "notebooks", cache_dir=cache, **filters) == notebooks


def test_a_warm_ls_refuses_an_unknown_filter_value_as_the_full_load_does(sample_copy, tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    _full(sample_copy, ["case_id"], cache)
    _no_full_load(monkeypatch)
    with pytest.raises(JunoBenchError, match="did you mean 'API misuse'"):
        loader.load_rows(sample_copy, "cases", ["case_id"], cache_dir=cache, root_cause="API misuse!")


def test_an_edited_snapshot_is_read_anew(sample_copy, tmp_path, monkeypatch):
    monkeypatch.setenv("JUNOBENCH_CACHE", str(tmp_path / "cache"))
    before = {row["case_id"]: row for row in ls(sample_copy)}
    assert before["pandas_1"]["root_cause"] != "implementation error"
    table_path = sample_copy / "benchmark_desc.xlsx"
    table = pd.read_excel(table_path, engine="openpyxl")
    table.loc[table["nb_name"] == "pandas_1", "label_root_cause"] = "implementation error"
    table.to_excel(table_path, index=False)
    after = {row["case_id"]: row for row in ls(sample_copy)}
    assert after["pandas_1"]["root_cause"] == "implementation error"


def test_a_cleared_cache_is_prepared_again(sample_copy, tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    monkeypatch.setenv("JUNOBENCH_CACHE", str(cache))
    first = ls(sample_copy)
    records = {arrow.parent.parent.parent for arrow in cache.rglob("*.arrow")}
    assert records and all(index_path(sample_copy, "cases").parent not in r.parents for r in records)
    for folder in records:  # the records go, the index of them stays
        shutil.rmtree(folder)
    assert ls(sample_copy) == first
    assert list(cache.rglob("*.arrow"))


def test_problems_fail_a_warm_ls_unless_skipped(sample_copy, tmp_path, monkeypatch):
    monkeypatch.setenv("JUNOBENCH_CACHE", str(tmp_path / "cache"))
    (sample_copy / "benchmark/pandas_1/pandas_1_reproduced.ipynb").unlink()
    skipped = ls(sample_copy, skip_invalid=True)
    assert "pandas_1" not in {row["case_id"] for row in skipped}
    with pytest.raises(SnapshotError, match="pandas_1"):
        ls(sample_copy)
    assert ls(sample_copy, skip_invalid=True) == skipped


def test_an_index_naming_files_outside_the_cache_is_not_followed(sample_copy, tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    expected = _full(sample_copy, list(LS_FIELDS), cache)
    index = index_path(sample_copy, "cases", cache)
    entry = json.loads(index.read_text())
    outside = tmp_path / "outside.arrow"
    shutil.copy(entry["files"][0], outside)
    entry["files"] = [str(outside)]
    index.write_text(json.dumps(entry))
    _no_full_load(monkeypatch)
    with pytest.raises(AssertionError, match="through datasets"):
        loader.load_rows(sample_copy, "cases", list(LS_FIELDS), cache_dir=cache)
    monkeypatch.undo()
    assert loader.load_rows(sample_copy, "cases", list(LS_FIELDS), cache_dir=cache) == expected


@pytest.mark.parametrize("damage", [
    b"", b"{not json", b"[]", b'"text"',
    {"files": 7}, {"files": "abc"}, {"files": [None]}, {"report": "x"}, {"report": {"problems": [1]}},
    {"fingerprint": None},
])
def test_a_damaged_index_is_passed_over(sample_copy, tmp_path, damage):
    cache = tmp_path / "cache"
    expected = _full(sample_copy, list(LS_FIELDS), cache)
    index = index_path(sample_copy, "cases", cache)
    if isinstance(damage, bytes):
        index.write_bytes(damage)
    else:
        index.write_text(json.dumps({**json.loads(index.read_text()), **damage}))
    assert loader.load_rows(sample_copy, "cases", list(LS_FIELDS), cache_dir=cache) == expected


def test_an_index_that_is_a_fifo_is_passed_over(sample_copy, tmp_path):
    cache = tmp_path / "cache"
    expected = _full(sample_copy, list(LS_FIELDS), cache)
    index = index_path(sample_copy, "cases", cache)
    index.unlink()
    os.mkfifo(index)
    assert loader.load_rows(sample_copy, "cases", list(LS_FIELDS), cache_dir=cache) == expected
