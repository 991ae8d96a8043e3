"""validate's licence policy: licences outside the allow-list, and unknown ones, reported."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from junobench.cli import main
from junobench.data import layout
from junobench.data.licences import LicencePolicy, lookup, read_licence_list
from junobench.data.release_files import VERSION_PATTERN, dataset_version
from junobench.data.snapshot import resolve
from junobench.data.tables import read_table, write_table
from junobench.data.validate import check
from junobench.errors import JunoBenchError


@pytest.fixture
def sample_copy(tmp_path: Path) -> Path:
    target = tmp_path / "sample"
    shutil.copytree(resolve("sample"), target)
    return target


def set_licence(root: Path, case: str, licence: str) -> None:
    """The licence of the case's (single) dataset, in its metadata file and the table."""
    [meta] = layout.metadata_files(root, case)
    data = json.loads(meta.read_text(encoding="utf-8"))
    data["license"] = licence
    meta.write_text(json.dumps(data), encoding="utf-8")
    table = read_table(root / layout.DESC_TABLE)
    rows = table.records()
    for row in rows:
        if row["nb_name"] == case:
            row["DatasetLicenseName_1"] = licence
    write_table(root / layout.DESC_TABLE, rows, table.columns)


def test_names_of_one_licence_share_its_spdx_id() -> None:
    assert lookup("CC0: Public Domain").spdx == lookup("cc0-1.0").spdx == "CC0-1.0"
    assert lookup("Database: Open Database, Contents: Database Contents (DbCL)").open
    assert not lookup("CC BY-NC-SA 4.0").open
    assert lookup("Allow academic research") is None
    policy = LicencePolicy.default()
    assert policy.verdict("Apache 2.0") == "allowed"
    assert policy.verdict("Other (specified in description)") == "unknown"
    assert policy.verdict("Allow academic research") == "not allowed"
    assert LicencePolicy.of(["Allow academic research"]).verdict("allow  ACADEMIC research") == "allowed"


def test_a_non_open_and_an_unknown_licence_are_reported(sample_copy: Path, capsys) -> None:
    assert not [w for w in check(sample_copy).warnings if "licence" in w.problem]
    set_licence(sample_copy, "pandas_1", "CC BY-NC-SA 4.0")
    set_licence(sample_copy, "numpy_1", "Unknown")

    warnings = [w for w in check(sample_copy).warnings if "licence" in w.problem]
    assert {(w.case, w.problem) for w in warnings} == {
        ("pandas_1", "input-dataset licence 'CC BY-NC-SA 4.0' is not in the allow-list"),
        ("numpy_1", "input-dataset licence unknown (Unknown)"),
    }
    assert main(["validate", str(sample_copy)]) == 0  # warnings by default
    err = capsys.readouterr().err
    assert "'CC BY-NC-SA 4.0' is not in the allow-list: pandas_1" in err
    assert "licence unknown (Unknown): numpy_1" in err

    assert main(["validate", str(sample_copy), "--licence-policy", "error"]) == 1
    out = capsys.readouterr().out
    assert "case pandas_1" in out and "case numpy_1" in out and "2 problem(s)" in out

    # allowed by name (any spelling of it): only the unknown one is left
    assert main(["validate", str(sample_copy), "--licence-policy", "error",
                 "--allow-licence", "cc by-nc-sa 4.0"]) == 1
    out = capsys.readouterr().out
    assert "1 problem(s)" in out and "numpy_1" in out and "pandas_1" not in out
    assert main(["validate", str(sample_copy), "--licence-policy", "off"]) == 0
    assert "licence" not in capsys.readouterr().err


def test_an_allow_list_file_replaces_the_default(sample_copy: Path, tmp_path: Path, capsys) -> None:
    listing = tmp_path / "licences.txt"
    listing.write_text("# only this one\nMIT\n\n", encoding="utf-8")
    assert read_licence_list(listing) == ["MIT"]
    assert main(["validate", str(sample_copy), "--licences", str(listing), "--licence-policy", "error"]) == 1
    out = capsys.readouterr().out
    assert "input-dataset licence 'CC0: Public Domain' is not in the allow-list" in out
    assert main(["validate", str(sample_copy), "--licences", str(tmp_path / "absent.txt")]) == 1
    assert "error: " in capsys.readouterr().err
    with pytest.raises(JunoBenchError, match="cannot read the licence list"):
        LicencePolicy.from_options(file=tmp_path)


def test_a_malformed_version_file_is_a_problem(sample_copy: Path) -> None:
    (sample_copy / "VERSION").write_text("1.2.0\n", encoding="utf-8")
    assert check(sample_copy).problems == []
    (sample_copy / "VERSION").write_text("latest\n", encoding="utf-8")
    [problem] = check(sample_copy).problems
    assert problem.file == "VERSION" and "not a dataset version" in problem.problem


@settings(max_examples=100, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(st.binary(max_size=300), st.text(max_size=40))
def test_any_version_file_or_licence_name_is_a_value_or_a_clean_error(tmp_path: Path, raw: bytes, name: str) -> None:
    (tmp_path / "VERSION").write_bytes(raw)
    try:
        version = dataset_version(tmp_path)
    except JunoBenchError as error:
        assert "VERSION" in str(error)
    else:
        assert version is not None and VERSION_PATTERN.match(version)
    assert LicencePolicy.default().verdict(name) in ("allowed", "unknown", "not allowed")
