"""An export's manifest read back: every shape it may not have is one error naming what is
wrong, and the names an export may list are exactly those it writes."""

from __future__ import annotations

import json
from typing import Any

import pytest

from junobench.data.export import CARD, MANIFEST, MANIFEST_FORMAT, PARQUET, is_export_name, read_manifest
from junobench.envs.environment import SNAPSHOT_FOLDER
from junobench.errors import JunoBenchError

DIGEST = "0" * 64


def _manifest(**changes: Any) -> dict[str, Any]:
    data: dict[str, Any] = {"format": MANIFEST_FORMAT, "files": {CARD: {"sha256": DIGEST, "size": 0}},
                            "rows": {"cases": 0, "notebooks": 2},
                            "report": {"skipped": [], "unlisted_folders": [], "absent": {"originals": ["a_1"]},
                                       "problems": [{"file": None, "case": "a_1", "problem": "p", "hint": None}]}}
    data.update(changes)
    return data


def _read(tmp_path, data: Any) -> dict[str, Any]:
    (tmp_path / MANIFEST).write_text(json.dumps(data), encoding="utf-8")
    return read_manifest(tmp_path)


def test_a_well_formed_manifest_is_read_as_written(tmp_path):
    data = _manifest()
    assert _read(tmp_path, data) == data  # a size of 0 and a row count of 0 are counts too


@pytest.mark.parametrize(("changes", "said"), [
    ({"files": []}, "'files' must map each path"),
    ({"files": {"../x": {"sha256": DIGEST, "size": 1}}}, "not a relative path inside the export"),
    ({"files": {"notes.txt": {"sha256": DIGEST, "size": 1}}}, "not a file an export writes"),
    ({"files": {CARD: {"sha256": DIGEST}}}, f"'files' entry {CARD!r} must be"),
    ({"files": {CARD: {"sha256": "xyz", "size": 1}}}, f"'files' entry {CARD!r} must be"),
    ({"files": {CARD: {"sha256": 7, "size": 1}}}, f"'files' entry {CARD!r} must be"),
    ({"files": {CARD: {"sha256": DIGEST, "size": -1}}}, f"'files' entry {CARD!r} must be"),
    ({"files": {CARD: {"sha256": DIGEST, "size": True}}}, f"'files' entry {CARD!r} must be"),
    ({"files": {CARD: [DIGEST, 1]}}, f"'files' entry {CARD!r} must be"),
    ({"rows": [1, 2]}, "'rows' must map each config"),
    ({"rows": {"cases": -1}}, "'rows' must map each config"),
    ({"rows": {"figures": 3}}, "'rows' must map each config"),
    ({"report": []}, "'report' must be an object"),
    ({"report": {"skipped": ["a_1", 2]}}, "'report.skipped' must be a list of strings"),
    ({"report": {"unlisted_folders": "x"}}, "'report.unlisted_folders' must be a list of strings"),
    ({"report": {"problems": {}}}, "'report.problems' must be a list"),
    ({"report": {"problems": [{"case": "a_1"}]}}, "'report.problems' must be a list"),
    ({"report": {"problems": [{"problem": "p", "where": "x"}]}}, "'report.problems' must be a list"),
    ({"report": {"problems": [{"problem": "p", "case": 3}]}}, "'report.problems' must be a list"),
    ({"report": {"problems": ["p"]}}, "'report.problems' must be a list"),
    ({"report": {"absent": {"originals": "a_1"}}}, "'report.absent' must map"),
    ({"report": {"absent": ["a_1"]}}, "'report.absent' must map"),
])
def test_each_malformed_part_is_named(tmp_path, changes, said):
    with pytest.raises(JunoBenchError, match="the checksum manifest is malformed") as caught:
        _read(tmp_path, _manifest(**changes))
    assert said in str(caught.value)


def test_a_manifest_that_is_not_one(tmp_path):
    with pytest.raises(JunoBenchError, match="the checksum manifest is missing"):
        read_manifest(tmp_path)
    for data in ([], {"format": "other/1"}):
        with pytest.raises(JunoBenchError, match=f"not a {MANIFEST_FORMAT} manifest"):
            _read(tmp_path, data)
    (tmp_path / MANIFEST).write_bytes(b"{not json")
    with pytest.raises(JunoBenchError, match="the checksum manifest is unreadable"):
        read_manifest(tmp_path)


@pytest.mark.parametrize(("name", "written"), [
    (CARD, True), (PARQUET["notebooks"], True), ("benchmark_desc.xlsx", True),
    (f"{SNAPSHOT_FOLDER}/requirements.txt", True), (f"{SNAPSHOT_FOLDER}/a/b.txt", False), (SNAPSHOT_FOLDER, False),
    ("benchmark/pandas_1/pandas_1_fixed.ipynb", True), ("benchmark/pandas_1/data/x.csv", True),
    ("benchmark/pandas_1", False), ("benchmark/not a case/x.ipynb", False), ("other/pandas_1/x", False),
])
def test_the_names_an_export_writes(name, written):
    assert is_export_name(name) is written
