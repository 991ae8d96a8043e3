"""construct edit CASE: labels, diagnosis, dataset metadata, a notebook or a data file, all or
nothing; the pair run again when code or data change (provenance updated); remove-case
takes several ids; construct clean removes what a killed edit left."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from snapshot_files import tree_digest, variant

import junobench
import junobench.hub.write_export
from junobench.cli import main
from junobench.data import layout
from junobench.data.snapshot import resolve
from junobench.data.tables import read_table

SAMPLE = resolve("sample")


@pytest.fixture
def snapshot(tmp_path: Path) -> Path:
    target = tmp_path / "snapshot"
    shutil.copytree(SAMPLE, target)
    return target


def case(snapshot: Path, case_id: str) -> dict:
    return junobench.load(snapshot).filter(lambda c: c["case_id"] == case_id)[0]


def test_labels_diagnosis_and_dataset_metadata(snapshot, capsys):
    code = main(["construct", "edit", str(snapshot), "pandas_1", "--root-cause", "API misuse",
                 "--diagnosis", "The column name has a trailing space.",
                 "--set-dataset", "passengers.license=CC BY 4.0", "--set-dataset", "passengers.title=Ferry riders"])
    err = capsys.readouterr().err
    assert code == 0, err
    assert "edited pandas_1: label_root_cause = 'API misuse', diagnosis, dataset passengers license" in err
    assert "not run again" in err and "valid (10 cases" in err
    record = case(snapshot, "pandas_1")
    assert record["root_cause"] == "API misuse" and record["diagnosis"] == "The column name has a trailing space."
    assert [(d["title"], d["license"]) for d in record["datasets"]] == [("Ferry riders", "CC BY 4.0")]
    row = next(r for r in read_table(snapshot / layout.DESC_TABLE).records() if r["nb_name"] == "pandas_1")
    assert (row["DatasetTitle_1"], row["DatasetLicenseName_1"]) == ("Ferry riders", "CC BY 4.0")
    # the diff of the edit shows it, the diagnosis as a word diff
    d = junobench.diff("sample", snapshot)
    assert d.summary().startswith("0 added, 0 removed, 0 renamed, 1 changed")
    assert "diagnosis: The [-crash is-] {+column name has+} a [-KeyError" in d.table()
    assert "{+trailing space.+}" in d.table()


def test_a_refused_edit_changes_nothing(snapshot, tmp_path, capsys):
    before = tree_digest(snapshot)
    for argv in (["--root-cause", "not a root cause"], ["--set-dataset", "nope.title=x"], [],
                 ["--reproduced", str(layout.notebook_path(SAMPLE, "pandas_1", "fixed")), "--no-verify"],
                 ["--reproduced", str(layout.notebook_path(SAMPLE, "sklearn_1", "reproduced")), "--no-verify"]):
        code = main(["construct", "edit", str(snapshot), "pandas_1", *argv])
        err = capsys.readouterr().err
        assert code == 1 and err.startswith("error:") and len(err.splitlines()) == 1, (argv, err)
        assert tree_digest(snapshot) == before
    # the last one: the notebook would make pandas_1 a near-duplicate of sklearn_1
    assert "near-duplicate of sklearn_1" in err


def test_a_new_notebook_without_verifying_is_recorded_so(snapshot, tmp_path, capsys):
    new = variant(layout.notebook_path(SAMPLE, "pandas_1", "fixed"), tmp_path / "nb", "an edited fix")
    code = main(["construct", "edit", str(snapshot), "pandas_1", "--fixed", str(new), "--no-verify"])
    assert code == 0, capsys.readouterr().err
    provenance = case(snapshot, "pandas_1")["provenance"]
    assert provenance["status"] == "not verified" and provenance["detail"] == "edited with --no-verify"
    recorded = json.loads((layout.case_dir(snapshot, "pandas_1") / "provenance.json").read_text())
    assert recorded["edited"]["tool"].endswith("construct edit")


def test_a_new_data_file_is_put_in_and_listed(snapshot, tmp_path, capsys):
    extra = tmp_path / "extra.csv"
    extra.write_text("a,b\n1,2\n", encoding="utf-8")
    code = main(["construct", "edit", str(snapshot), "pandas_1", "--data", f"passengers={extra}", "--no-verify"])
    assert code == 0, capsys.readouterr().err
    assert (layout.data_dir(snapshot, "pandas_1") / "extra.csv").read_text() == "a,b\n1,2\n"
    assert sorted(case(snapshot, "pandas_1")["datasets"][0]["files"]) == ["extra.csv", "passengers.csv"]


@pytest.mark.kernel
def test_a_changed_notebook_is_run_again(snapshot, tmp_path, capsys):
    new = variant(layout.notebook_path(SAMPLE, "pandas_1", "fixed"), tmp_path / "nb", "an edited fix")
    code = main(["construct", "edit", str(snapshot), "pandas_1", "--fixed", str(new)])
    err = capsys.readouterr().err
    assert code == 0, err
    assert "verified in junobench's own environment: reproduced: crashed at the target" in err
    assert case(snapshot, "pandas_1")["provenance"]["status"] == "verified"
    # a fixed notebook that crashes is refused after its run; nothing changes
    crashing = variant(layout.notebook_path(SAMPLE, "pandas_1", "reproduced"), tmp_path / "bad", "still broken")
    before = tree_digest(snapshot)
    code = main(["construct", "edit", str(snapshot), "pandas_1", "--fixed", str(crashing)])
    err = capsys.readouterr().err
    assert code == 1 and "the pair does not behave" in err and tree_digest(snapshot) == before


def test_remove_case_takes_several_ids_or_none(snapshot, capsys):
    before = tree_digest(snapshot)
    assert main(["construct", "remove-case", str(snapshot), "pandas_1", "torch_9"]) == 1
    assert "no case 'torch_9'" in capsys.readouterr().err and tree_digest(snapshot) == before
    assert main(["construct", "remove-case", str(snapshot), "pandas_1", "numpy_1", "pandas_1"]) == 0
    err = capsys.readouterr().err
    assert "removed pandas_1" in err and "removed numpy_1" in err and "valid (8 cases" in err
    assert not layout.case_dir(snapshot, "numpy_1").exists()


def test_clean_removes_what_a_killed_edit_left_and_validate_names_the_command(snapshot, capsys):
    partial = snapshot / ".junobench-edit-x1y2.partial"
    (partial / "benchmark/pandas_9").mkdir(parents=True)
    (partial / "benchmark/pandas_9/big.csv").write_bytes(b"0" * 1000)
    assert main(["validate", str(snapshot)]) == 0
    err = capsys.readouterr().err
    assert f"junobench construct clean {snapshot}` removes it" in err and partial.name in err
    assert main(["construct", "clean", str(snapshot)]) == 0
    assert f"removed what an interrupted edit left: {partial.name}" in capsys.readouterr().err
    assert not partial.exists()
    assert main(["construct", "clean", str(snapshot)]) == 0
    assert "nothing to clean" in capsys.readouterr().err


@pytest.mark.kernel
def test_verify_record_updates_the_provenance_and_the_card(snapshot, tmp_path, capsys):
    new = variant(layout.notebook_path(SAMPLE, "pandas_1", "fixed"), tmp_path / "nb", "an edited fix")
    assert main(["construct", "edit", str(snapshot), "pandas_1", "--fixed", str(new), "--no-verify"]) == 0
    assert case(snapshot, "pandas_1")["provenance"]["status"] == "not verified"
    assert main(["verify", "pandas_1", "NBspecific_2", "--source", str(snapshot), "--record", "--jobs", "2"]) == 0
    err = capsys.readouterr().err
    assert "recorded in the provenance of 2 case(s): pandas_1: verified, NBspecific_2: verified" in err
    found = case(snapshot, "pandas_1")["provenance"]
    assert found["status"] == "verified" and found["tool"].endswith("verify --record")
    assert any(lib.startswith("pandas==") for lib in found["libraries"]) and found["python"]
    result = junobench.hub.write_export.export(snapshot, tmp_path / "export")
    card = (result.out / "README.md").read_text()
    assert "2 of 10 cases were verified by running them" in card and "8 case(s) carry no record" in card
    # the sample (package data) and a Hub repo are not recorded into, and nothing runs
    assert main(["verify", "pandas_1", "--source", "sample", "--record"]) == 1
    assert "not edited" in capsys.readouterr().err
