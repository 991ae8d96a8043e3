"""construct add-case and renumber: extend a snapshot end to end, whole or not at all."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from cli_run import run_cli
from snapshot_files import tree_digest, variant
from test_construct_kaggle import write_meta_kaggle, write_notebooks

from junobench.construct import transaction
from junobench.construct.add_case import NewCase, add_case
from junobench.construct.naming import file_name_of_url
from junobench.construct.renumber import plan_renumbering
from junobench.data import layout
from junobench.data.snapshot import resolve
from junobench.data.tables import read_table, write_table
from junobench.errors import JunoBenchError

SAMPLE = resolve("sample")
URL = "https://www.kaggle.com/code/alice/wine-quality"


@pytest.fixture
def snapshot(tmp_path: Path) -> Path:
    target = tmp_path / "snapshot"
    shutil.copytree(SAMPLE, target)
    return target


def _notebook(case: str, version: str) -> Path:
    return layout.notebook_path(SAMPLE, case, version)


@pytest.fixture
def other(tmp_path: Path):
    """A sample case's notebook as another case's (other code, same behaviour)."""
    def make(case: str, version: str) -> Path:
        return variant(_notebook(case, version), tmp_path / "other")
    return make


def _rows(snapshot: Path) -> dict[str, dict]:
    return {r["nb_name"]: r for r in read_table(snapshot / layout.DESC_TABLE).records()}


def _diagnoses(snapshot: Path) -> dict[str, dict]:
    return {r["instance"]: r for r in read_table(snapshot / layout.DIAGNOSIS_TABLE).records()}


def _remove_case(snapshot: Path, case: str) -> None:
    shutil.rmtree(layout.case_dir(snapshot, case))
    for name, column in ((layout.DESC_TABLE, "nb_name"), (layout.DIAGNOSIS_TABLE, "instance")):
        table = read_table(snapshot / name)
        rows = [r for r in table.records()
                if not str(r[column]).startswith((f"{case}_r", f"{case}_f")) and r[column] != case]
        write_table(snapshot / name, rows, table.columns)


def test_two_cases_added_renumbered_validated_built_and_listed(snapshot: Path, tmp_path: Path,
                                                               capsys, other) -> None:
    # 1. From Kaggle: kaggle-metadata resolves the notebook's datasets in a (fake) Meta Kaggle.
    meta = write_meta_kaggle(tmp_path / "meta-kaggle")
    datasets = tmp_path / "datasets.csv"
    code, _, _ = run_cli(capsys, "construct", "kaggle-metadata",
                         str(write_notebooks(tmp_path / "nbs.csv", [URL])),
                         "--meta-kaggle", str(meta), "--out", str(datasets))
    assert code == 0
    downloads = tmp_path / "downloads"
    (downloads / "wine").mkdir(parents=True)
    (downloads / "wine" / "winequality-red.csv").write_text("a,b\n1,2\n", encoding="utf-8")
    (downloads / "iris.csv").write_text("x,y\n3,4\n", encoding="utf-8")
    code, out, err = run_cli(
        capsys, "construct", "add-case", str(snapshot), URL + "?scriptVersionId=7",
        "--reproduced", str(other("sklearn_1", "reproduced")),
        "--fixed", str(other("sklearn_1", "fixed")),
        "--library", "sklearn", "--root-cause", "data confusion", "--crash-type",
        "data value violation", "--stage", "training", "--origin", "newly sampled",
        "--diagnosis", "The labels hold NaN, which the classifier refuses.",
        "--datasets", str(datasets), "--data", f"red-wine-quality={downloads / 'wine'}",
        "--data", f"iris={downloads / 'iris.csv'}", "--no-verify")
    assert code == 0, err
    assert out == ""  # what was added, and the verdict on the snapshot, are status lines
    assert err.startswith("added sklearn_3: sklearn_3_reproduced.ipynb, sklearn_3_fixed.ipynb; "
                          "datasets red-wine-quality, iris")
    assert "valid (11 cases" in err

    # 2. By hand: a local original, a dataset downsampled before it was added.
    prep = tmp_path / "prep"
    prep.mkdir()
    full = tmp_path / "scores_full.csv"
    full.write_text("hours,score\n" + "".join(f"{i},{i * 3}\n" for i in range(40)),
                    encoding="utf-8")
    (prep / "scores.metadata.json").write_text(json.dumps(
        {"title": "Exam scores (synthetic)", "url": None, "license": "CC0: Public Domain",
         "files": [], "modifications": []}), encoding="utf-8")
    assert run_cli(capsys, "construct", "downsample", "table", str(full), "--out",
                   str(prep / "scores.csv"), "--fraction", "0.5", "--seed", "3")[0] == 0
    code, out, err = run_cli(
        capsys, "construct", "add-case", str(snapshot), str(other("pandas_1", "original")),
        "--reproduced", str(other("pandas_1", "reproduced")),
        "--fixed", str(other("pandas_1", "fixed")),
        "--library", "pandas", "--root-cause", "API misuse", "--crash-type", "key error",
        "--stage", "data preparation", "--diagnosis", "A column is read by a wrong name.",
        "--dataset", "name=scores;title=Exam scores (synthetic);license=CC0: Public Domain",
        "--data", f"scores={prep / 'scores.csv'}", "--no-verify")
    assert code == 0, err
    assert out == "" and err.startswith("added pandas_3: pandas_3.ipynb, pandas_3_reproduced.ipynb")

    rows = _rows(snapshot)
    wine = rows["sklearn_3"]
    assert wine["NotebookUrl"] == URL and wine["fname"] == file_name_of_url(URL)
    assert (wine["DatasetTitle_1"], wine["DatasetUrl_1"], wine["DatasetLicenseName_1"]) == (
        "Red Wine Quality", "https://www.kaggle.com/datasets/bob/red-wine-quality",
        "CC0: Public Domain")
    assert (wine["DatasetTitle_2"], wine["DatasetLicenseName_2"]) == ("Iris Species", "Unknown")
    assert wine["ename"] == "valueerror" and wine["traceback"].startswith("['")
    assert wine["Libs-cause"] == "sklearn" and wine["source"] == "newly sampled"
    recorded = json.loads((snapshot / "benchmark/sklearn_3/provenance.json").read_text())
    assert recorded["added"]["tool"].startswith("junobench ") and recorded["added"]["tool"].endswith("add-case")
    assert recorded["verification"]["status"] == "not verified" and recorded["verification"]["python"] is None
    diagnoses = _diagnoses(snapshot)
    assert diagnoses["sklearn_3_reproduced"]["diagnosis"].startswith("The labels hold NaN")
    assert diagnoses["sklearn_3_fixed"]["detection"] in (False, 0)
    metadata = json.loads((snapshot / "benchmark/pandas_3/data/scores.metadata.json").read_text())
    assert metadata["files"] == ["scores.csv"]
    assert [m["kind"] for m in metadata["modifications"]] == ["downsampled"]
    assert rows["pandas_3"]["Dataset_note"] == "downsampled"
    wine_meta = json.loads(
        (snapshot / "benchmark/sklearn_3/data/red-wine-quality.metadata.json").read_text())
    assert wine_meta["files"] == ["wine/winequality-red.csv"]

    # A gap (sklearn_1 removed), closed by renumber: the dry run changes nothing.
    _remove_case(snapshot, "sklearn_1")
    before = tree_digest(snapshot)
    code, out, err = run_cli(capsys, "construct", "renumber", str(snapshot), "--dry-run")
    assert code == 0 and out.splitlines() == ["sklearn_2 -> sklearn_1", "sklearn_3 -> sklearn_2"]
    assert "dry run: 2 case(s) would be renamed" in err  # the plan is the data, the rest status
    assert tree_digest(snapshot) == before
    code, out, err = run_cli(capsys, "construct", "renumber", str(snapshot))
    assert code == 0, out + err
    assert out == "" and "sklearn_2 -> sklearn_1" in err
    assert "renamed 2 case(s)" in err and "valid (11 cases" in err
    assert (snapshot / "benchmark/sklearn_2/sklearn_2_fixed.ipynb").is_file()
    assert not (snapshot / "benchmark/sklearn_3").exists()
    assert _diagnoses(snapshot)["sklearn_2_reproduced"]["diagnosis"].startswith("The labels")

    assert run_cli(capsys, "validate", str(snapshot))[0] == 0
    code, out, err = run_cli(capsys, "build", "--source", str(snapshot))
    assert code == 0 and out == "" and "cases      11" in err
    code, out, _ = run_cli(capsys, "ls", "--source", str(snapshot), "--datasets",
                           "--format", "json")
    listed = {r["case_id"]: r for r in json.loads(out)}
    assert listed["sklearn_2"]["root_cause"] == "data confusion"
    assert listed["sklearn_2"]["crash_type"] == "data value violation"
    assert listed["sklearn_2"]["source"] == "newly sampled"
    assert sorted(listed["sklearn_2"]["datasets"]) == ["Iris Species [Unknown]",
                                                       "Red Wine Quality [CC0: Public Domain]"]
    assert listed["pandas_3"]["pipeline_stage"] == "data preparation"
    assert listed["pandas_3"]["datasets"] == ["Exam scores (synthetic) [CC0: Public Domain]"]


def test_a_case_that_would_not_build_leaves_the_snapshot_as_it_was(snapshot: Path) -> None:
    before = tree_digest(snapshot)
    case = NewCase(library="torch", reproduced=_notebook("sklearn_1", "fixed"),
                   fixed=_notebook("sklearn_1", "fixed"), root_cause="API misuse",
                   crash_type="invalid argument", pipeline_stage="training", ml_bug="ML bug",
                   diagnosis="x")
    with pytest.raises(JunoBenchError, match="no error output"):
        add_case(snapshot, case)
    bad_labels = NewCase(library="torch", reproduced=_notebook("sklearn_1", "reproduced"),
                         fixed=_notebook("sklearn_1", "fixed"), root_cause="bad luck",
                         crash_type="invalid argument", pipeline_stage="cooking",
                         ml_bug="ML bug", diagnosis="x")
    with pytest.raises(JunoBenchError) as error:
        add_case(snapshot, bad_labels)
    assert "'bad luck'" in str(error.value) and "'cooking'" in str(error.value)
    with pytest.raises(JunoBenchError, match="bundled sample"):
        add_case("sample", case)
    case.reproduced = _notebook("sklearn_1", "reproduced")
    case.notebook_url = "not a notebook"
    with pytest.raises(JunoBenchError, match="not a Kaggle notebook URL"):
        add_case(snapshot, case)
    fifo = snapshot.parent / "pipe.ipynb"
    os.mkfifo(fifo)
    case.notebook_url, case.fixed = None, fifo
    with pytest.raises(JunoBenchError, match="not a regular file"):
        add_case(snapshot, case)
    assert tree_digest(snapshot) == before
    assert sorted(p.name for p in snapshot.iterdir() if p.name.startswith(".")) == []


def test_an_edit_killed_half_way_is_finished_by_the_next_command(snapshot: Path, monkeypatch,
                                                                 capsys, other) -> None:
    case = NewCase(library="numpy", reproduced=other("numpy_1", "reproduced"),
                   fixed=other("numpy_1", "fixed"), root_cause="implementation error",
                   crash_type="tensor shape mismatch", pipeline_stage="data preparation",
                   ml_bug="ML bug", diagnosis="Windows of unequal length are stacked.")
    real_replace = transaction.os.replace
    mine = snapshot / ".mine.edit"
    mine.write_text("not junobench's", encoding="utf-8")
    before = tree_digest(snapshot)

    def killed_at_once(*args: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(transaction.os, "replace", killed_at_once)
    with pytest.raises(KeyboardInterrupt):  # while preparing: nothing is left
        add_case(snapshot, case, verify=False)
    monkeypatch.setattr(transaction.os, "replace", real_replace)
    assert tree_digest(snapshot) == before  # the maintainer's own .edit file kept
    mine.unlink()
    assert not [p for p in snapshot.iterdir() if p.name.startswith(".")]

    def killed_at_the_table(source: str, target: str) -> None:
        if Path(target).name == layout.DESC_TABLE:
            raise KeyboardInterrupt
        real_replace(source, target)

    monkeypatch.setattr(transaction.os, "replace", killed_at_the_table)
    with pytest.raises(KeyboardInterrupt):  # while committing: the journal says what is left
        add_case(snapshot, case, verify=False)
    monkeypatch.setattr(transaction.os, "replace", real_replace)
    assert (snapshot / transaction.JOURNAL).exists()
    assert (snapshot / "benchmark/numpy_2").is_dir() and "numpy_2" not in _rows(snapshot)
    code, out, err = run_cli(capsys, "construct", "renumber", str(snapshot))
    assert code == 0 and out == "" and "valid (11 cases" in err
    assert err.startswith("finished an interrupted add-case numpy_2")
    assert "numpy_2" in _rows(snapshot) and "numpy_2_reproduced" in _diagnoses(snapshot)
    assert not (snapshot / transaction.JOURNAL).exists()
    assert not [p for p in snapshot.iterdir() if p.name.startswith(".")]


def test_plan_orders_renames_so_each_new_id_is_free() -> None:
    assert plan_renumbering(["torch_2", "torch_3", "torch_5", "numpy_1"]) == [
        ("torch_2", "torch_1"), ("torch_3", "torch_2"), ("torch_5", "torch_3")]
    assert plan_renumbering(["torch_1", "torch_2"]) == []
    assert plan_renumbering(["torch_4", "numpy_3"], libraries=["numpy"]) == [("numpy_3", "numpy_1")]
