"""construct edit CASE: labels, diagnosis, dataset metadata, a notebook or a data file, all or
nothing; the pair run again when code or data change (provenance updated); remove-case
takes several ids; construct clean removes what a killed edit left."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from processes import gone
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


def test_a_data_path_with_dots_is_read_as_written_and_stays_inside_data(snapshot, tmp_path, capsys,
                                                                         monkeypatch):
    """``.`` and ``..`` in a --data path name the folder they lead to: ``..`` does not
    copy files beside the case's data/ folder, a folder holding the snapshot is refused
    (copying it into itself never ends), and a file reached through ``..`` is put in
    under its own name."""
    work = tmp_path / "work" / "sub"
    work.mkdir(parents=True)
    (work / "extra.csv").write_text("a,b\n1,2\n", encoding="utf-8")
    for where, given in ((work, ".."), (snapshot, "."), (snapshot / "benchmark", "..")):
        monkeypatch.chdir(where)
        for verb in (["construct", "edit", str(snapshot), "pandas_1", "--no-verify"],
                     ["construct", "add-case", str(snapshot), str(variant(layout.notebook_path(
                         SAMPLE, "pandas_1", "original"), tmp_path / "nb", "dots")),
                      "--reproduced", str(variant(layout.notebook_path(SAMPLE, "pandas_1", "reproduced"),
                                                  tmp_path / "nb", "dots")),
                      "--fixed", str(variant(layout.notebook_path(SAMPLE, "pandas_1", "fixed"), tmp_path / "nb",
                                             "dots")),
                      "--library", "pandas", "--root-cause", "data confusion", "--crash-type", "key error",
                      "--stage", "data preparation", "--diagnosis", "x", "--no-verify", "--allow-similar",
                      "--dataset", "name=passengers;title=P;license=CC0"]):
            before = tree_digest(snapshot)
            code = main([*verb, "--data", f"passengers={given}"])
            err = capsys.readouterr().err
            if where is work:  # the folder above, named as it is
                assert code == 0, err
                data = layout.case_dir(snapshot, "pandas_1" if "edit" in verb else "pandas_3") / "data"
                assert (data / "work" / "sub" / "extra.csv").is_file(), sorted(data.rglob("*"))
                assert not (data.parent / "sub").exists()
                continue
            assert code == 1 and err.startswith("error:") and len(err.strip().splitlines()) == 1, err
            assert "holds the snapshot" in err and tree_digest(snapshot) == before
    monkeypatch.chdir(work)
    assert main(["construct", "edit", str(snapshot), "pandas_1", "--no-verify",
                 "--data", "passengers=../sub/extra.csv"]) == 0, capsys.readouterr().err
    assert (layout.case_dir(snapshot, "pandas_1") / "data" / "extra.csv").is_file()


def test_an_edit_reads_no_path_through_a_link(snapshot, tmp_path, capsys, monkeypatch):
    """A notebook or data path with a linked folder anywhere on the way (relative, absolute,
    after ``..``, a link into the snapshot itself) is refused, and the snapshot unchanged."""
    real = tmp_path / "real"
    real.mkdir()
    shutil.copy(layout.notebook_path(SAMPLE, "pandas_1", "fixed"), real / "fixed.ipynb")
    (real / "extra.csv").write_text("a,b\n1,2\n", encoding="utf-8")
    (tmp_path / "linked").symlink_to(real, target_is_directory=True)
    (tmp_path / "into").symlink_to(layout.case_dir(snapshot, "pandas_1"), target_is_directory=True)
    monkeypatch.chdir(tmp_path)
    before = tree_digest(snapshot)
    for argv, named in ((["--fixed", "linked/fixed.ipynb"], "linked"),
                        (["--fixed", str(tmp_path / "linked" / "fixed.ipynb")], "linked"),
                        (["--fixed", "real/../linked/fixed.ipynb"], "linked"),
                        (["--fixed", "into/pandas_1_fixed.ipynb"], "into"),
                        (["--data", "passengers=linked/extra.csv"], "linked"),
                        (["--data", f"passengers={tmp_path / 'into' / 'data' / 'passengers.csv'}"], "into")):
        code = main(["construct", "edit", str(snapshot), "pandas_1", "--no-verify", *argv])
        err = capsys.readouterr().err
        assert code == 1 and "symbolic link" in err and named in err and len(err.strip().splitlines()) == 1, err
        assert tree_digest(snapshot) == before


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


def _killed_while_running_the_pair(argv: list[str], snapshot: Path) -> list[int]:
    """Run ``junobench ARGV`` and kill it (SIGKILL: nothing of it runs after) once its
    staging folder holds the case and a kernel of it runs the pair; the kernels' pids."""
    import os
    import signal
    import subprocess
    import sys
    import time

    process = subprocess.Popen([sys.executable, "-m", "junobench", *argv], stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 600
        kernels: list[int] = []
        while process.poll() is None and time.monotonic() < deadline:
            staged = list(snapshot.glob(".junobench-edit-*.partial/benchmark/*/*_fixed.ipynb"))
            kernels = [pid for pid in _pids() if _is_kernel(pid) and _descends(pid, process.pid)]
            if staged and kernels:
                break
            time.sleep(0.05)
        assert process.poll() is None and kernels, process.stderr.read() if process.stderr else ""
        os.kill(process.pid, signal.SIGKILL)
    finally:
        if process.poll() is None:
            process.kill()
        process.wait()
    return kernels


def _pids() -> list[int]:
    return [int(p.name) for p in Path("/proc").iterdir() if p.name.isdigit()]


def _is_kernel(pid: int) -> bool:
    try:
        return b"ipykernel" in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False


def _descends(pid: int, ancestor: int) -> bool:
    for _ in range(12):
        try:
            pid = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            return False
        if pid == ancestor:
            return True
        if pid <= 1:
            return False
    return False


@pytest.mark.kernel
@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="finds the kernels through /proc")
def test_add_case_and_edit_killed_while_running_the_pair_leave_the_snapshot_and_clean_removes_the_rest(
        snapshot, tmp_path, capsys):
    before = tree_digest(snapshot)
    new = {v: variant(layout.notebook_path(SAMPLE, "pandas_1", v), tmp_path / "new", "killed")
           for v in ("original", "reproduced", "fixed")}
    data = layout.case_dir(SAMPLE, "pandas_1") / "data" / "passengers.csv"
    edited = variant(layout.notebook_path(SAMPLE, "pandas_1", "fixed"), tmp_path / "edit", "an edit killed")
    for argv in (["construct", "add-case", str(snapshot), str(new["original"]), "--reproduced", str(new["reproduced"]),
                  "--fixed", str(new["fixed"]), "--library", "pandas", "--root-cause", "data confusion",
                  "--crash-type", "key error", "--stage", "data preparation", "--diagnosis", "x", "--allow-similar",
                  "--dataset", "name=passengers;title=P;license=CC0", "--data", f"passengers={data}"],
                 ["construct", "edit", str(snapshot), "pandas_1", "--fixed", str(edited)]):
        kernels = _killed_while_running_the_pair(argv, snapshot)
        assert all(gone(pid, 60) for pid in kernels), "a kernel outlived the command that was killed"
        leftovers = sorted(p.name for p in snapshot.glob(".junobench-edit-*"))
        assert leftovers, "the kill left nothing: it came too late"
        assert main(["validate", str(snapshot)]) == 0  # the snapshot is as it was, plus the leftover
        err = capsys.readouterr().err
        assert all(name in err for name in leftovers) and f"junobench construct clean {snapshot}` removes it" in err
        assert main(["construct", "clean", str(snapshot)]) == 0
        assert "removed what an interrupted edit left" in capsys.readouterr().err
        assert tree_digest(snapshot) == before, argv[1]


@pytest.mark.parametrize("argv", [["--diagnosis", "d" * 40_000],
                                  ["--diagnosis", "\x01" * 5_000],  # 35,000 characters escaped
                                  ["--set-dataset", "passengers.title=" + "t" * 40_000]])
def test_a_text_longer_than_a_cell_is_refused_not_cut(snapshot, capsys, argv):
    """openpyxl cuts a text past 32,767 characters: the edit committed a cut diagnosis, or a
    table title that no longer matched the dataset's metadata (an invalid snapshot)."""
    before = tree_digest(snapshot)
    code = main(["construct", "edit", str(snapshot), "pandas_1", "--no-verify", *argv])
    err = capsys.readouterr().err
    table = layout.DIAGNOSIS_TABLE if argv[0] == "--diagnosis" else layout.DESC_TABLE
    assert code == 1 and len(err.splitlines()) == 1, err
    assert err.startswith(f"error: {snapshot / table}: case pandas_1: row ")
    assert "more than the 32,767 a spreadsheet cell holds (shorten it: nothing was written)" in err
    assert tree_digest(snapshot) == before


def test_invalid_dataset_metadata_names_the_snapshot_file_not_the_staged_copy(snapshot, capsys):
    before = tree_digest(snapshot)
    for value in ("url=javascript:alert(1)", "license="):
        code = main(["construct", "edit", str(snapshot), "pandas_1", "--no-verify",
                     "--set-dataset", f"passengers.{value}"])
        err = capsys.readouterr().err
        assert code == 1 and len(err.splitlines()) == 1, err
        assert err.startswith("error: benchmark/pandas_1/data/passengers.metadata.json: case pandas_1: "
                              "invalid dataset metadata: "), err
        assert ".partial" not in err and tree_digest(snapshot) == before
