"""A case gets in once and only when its pair behaves; remove-case, renumber's map, and what
a killed edit leaves: cleaned by the next one, named by validate."""

from __future__ import annotations

import json
import os
import platform
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from cli_run import run_cli
from snapshot_files import tree_digest, variant

import junobench
from junobench import vocab
from junobench.construct import transaction
from junobench.construct.add_case import Dataset, NewCase, add_case
from junobench.construct.remove_case import remove_case
from junobench.construct.renumber import renumber
from junobench.data import duplicates, layout
from junobench.data.snapshot import resolve
from junobench.data.tables import read_table, write_table
from junobench.data.validate import check
from junobench.errors import JunoBenchError

SAMPLE = resolve("sample")
REPO = Path(__file__).resolve().parent.parent
URL = "https://www.kaggle.com/code/alice/wine-quality"


def _notebook(case: str, version: str) -> Path:
    return layout.notebook_path(SAMPLE, case, version)


@pytest.fixture
def snapshot(tmp_path: Path) -> Path:
    target = tmp_path / "snapshot"
    shutil.copytree(SAMPLE, target)
    return target


def _case(tmp_path: Path, source: str = "pandas_1", **fields: object) -> NewCase:
    """A new case made of a sample case's notebooks with other code (not a duplicate)."""
    other = tmp_path / f"other-{source}"
    case = NewCase(library=source.rpartition("_")[0],
                   reproduced=variant(_notebook(source, "reproduced"), other),
                   fixed=variant(_notebook(source, "fixed"), other),
                   root_cause="API misuse", crash_type="key error",
                   pipeline_stage="data preparation", ml_bug="ML bug", diagnosis="A wrong name.")
    for name, value in fields.items():
        setattr(case, name, value)
    return case


def _ids(snapshot: Path) -> set[str]:
    return {str(r["nb_name"]) for r in read_table(snapshot / layout.DESC_TABLE).records()}


def _dot_entries(snapshot: Path) -> list[str]:
    return sorted(p.name for p in snapshot.iterdir() if p.name.startswith("."))


# --------------------------------------------------------------------------- duplicates


def test_a_case_the_snapshot_has_is_refused_naming_it(snapshot: Path, tmp_path: Path) -> None:
    first = add_case(snapshot, _case(tmp_path, eid="e-77", notebook_url=URL), verify=False)
    assert first.case_id == "pandas_3"
    before = tree_digest(snapshot)
    again = [
        # the same add-case
        _case(tmp_path, eid="e-77", notebook_url=URL),
        # the same eid (case aside), other notebooks
        _case(tmp_path / "b", "numpy_1", eid=" E-77", notebook_url=None),
        # the same notebook URL written another way
        _case(tmp_path / "c", "numpy_1", notebook_url="kaggle.com/kernels/Alice/wine-quality/?x=1"),
        # a sample case's notebooks given again, without eid or URL
        NewCase(library="sklearn", reproduced=_notebook("sklearn_1", "reproduced"),
                fixed=variant(_notebook("sklearn_1", "fixed"), tmp_path / "d"),
                root_cause="API misuse", crash_type="key error", pipeline_stage="training",
                ml_bug="ML bug", diagnosis="x"),
    ]
    expected = ["pandas_3 (same eid)", "pandas_3 (same eid)", "pandas_3 (same notebook URL)",
                "sklearn_1 (same reproduced notebook's code)"]
    for case, named in zip(again, expected, strict=True):
        with pytest.raises(JunoBenchError, match="already in the snapshot") as error:
            add_case(snapshot, case, verify=False)
        assert named in str(error.value)
    assert tree_digest(snapshot) == before and _dot_entries(snapshot) == []


def test_notebook_content_is_compared_without_outputs_counts_or_metadata(snapshot: Path,
                                                                         tmp_path: Path) -> None:
    original = json.loads(_notebook("pandas_1", "original").read_text(encoding="utf-8"))
    original["metadata"] = {"kernelspec": {"name": "other"}}
    for cell in original["cells"]:
        if cell["cell_type"] == "code":
            cell.update(outputs=[], execution_count=None, metadata={"collapsed": True})
            cell["source"] = "".join(cell["source"]).rstrip() + "   \n\n"
    resaved = tmp_path / "resaved.ipynb"
    resaved.write_text(json.dumps(original), encoding="utf-8")
    case = _case(tmp_path, original=resaved)
    before = tree_digest(snapshot)
    with pytest.raises(JunoBenchError, match=r"as pandas_1 \(same original notebook's code\)"):
        add_case(snapshot, case, verify=False)
    assert tree_digest(snapshot) == before
    case.original = variant(resaved, tmp_path / "changed", "one more line")
    assert add_case(snapshot, case, verify=False).case_id == "pandas_3"


def test_a_fixed_notebook_with_the_reproduced_code_is_refused(snapshot: Path,
                                                              tmp_path: Path) -> None:
    case = _case(tmp_path)
    case.fixed = case.reproduced
    (snapshot / ".notes.edit").write_text("a file of the maintainer's", encoding="utf-8")
    before = tree_digest(snapshot)
    with pytest.raises(JunoBenchError, match="fixed notebook's code is the reproduced"):
        add_case(snapshot, case, verify=False)
    assert tree_digest(snapshot) == before


def test_a_rerun_after_a_kill_while_committing_finishes_and_adds_nothing_more(
        snapshot: Path, tmp_path: Path, monkeypatch, capsys) -> None:
    real_replace = transaction.os.replace

    def killed(source: str, target: str) -> None:
        if Path(target).name == layout.DESC_TABLE:
            raise KeyboardInterrupt
        real_replace(source, target)

    monkeypatch.setattr(transaction.os, "replace", killed)
    case = _case(tmp_path, notebook_url=URL)
    with pytest.raises(KeyboardInterrupt):
        add_case(snapshot, case, verify=False)
    monkeypatch.setattr(transaction.os, "replace", real_replace)
    assert (snapshot / transaction.JOURNAL).exists()
    code, out, err = run_cli(capsys, "construct", "add-case", str(snapshot), URL,
                             "--reproduced", str(case.reproduced), "--fixed", str(case.fixed),
                             "--library", "pandas", "--root-cause", "API misuse",
                             "--crash-type", "key error", "--stage", "data preparation",
                             "--diagnosis", "A wrong name.", "--no-verify")
    assert code == 1 and out == ""
    assert err.startswith("finished an interrupted add-case pandas_3")
    assert "error: " in err and "already in the snapshot as pandas_3" in err.split("error: ", 1)[1]
    assert "pandas_3" in _ids(snapshot) and "pandas_4" not in _ids(snapshot)
    assert not (snapshot / "benchmark/pandas_4").exists()
    assert check(snapshot).valid


def test_validate_reports_two_cases_that_are_one_crash(snapshot: Path) -> None:
    shutil.copytree(layout.case_dir(snapshot, "pandas_1"), snapshot / "benchmark/pandas_3")
    for version in ("original", "reproduced", "fixed"):
        os.rename(snapshot / "benchmark/pandas_3" / layout.notebook_name("pandas_1", version),
                  snapshot / "benchmark/pandas_3" / layout.notebook_name("pandas_3", version))
    table = read_table(snapshot / layout.DESC_TABLE)
    rows = table.records()
    copy = {**next(r for r in rows if r["nb_name"] == "pandas_1"), "nb_name": "pandas_3",
            "eid": "another", "NotebookUrl": None, "fname": None}
    write_table(snapshot / layout.DESC_TABLE, [*rows, copy], table.columns)
    problems = [str(p) for p in check(snapshot).problems]
    assert any("pandas_3" in p and "repeats pandas_1 (same original notebook's code)" in p
               for p in problems), problems


def test_keys_of_a_case() -> None:
    assert duplicates.url_key("http://kaggle.com/notebooks/A/b/") == "kaggle.com/a/b"
    assert duplicates.url_key(None) is None
    found = duplicates.find_duplicates({"a_1": {"fname": "x.ipynb"}, "a_2": {"eid": "1"},
                                        "a_3": {"eid": "2", "fname": "X.ipynb"}})
    assert [(d.case, d.earlier, d.what) for d in found] == [("a_3", "a_1", "notebook file name")]


# --------------------------------------------------------------------------- leftovers


def _kill_during_commit(snapshot: Path, case: NewCase) -> None:
    """Run add_case in a child killed (SIGKILL) just before its journal is written."""
    script = (
        "import os, signal, sys\n"
        "from pathlib import Path\n"
        "from junobench.construct import transaction\n"
        "from junobench.construct.add_case import Dataset, NewCase, add_case\n"
        "transaction.commit = lambda *a, **k: os.kill(os.getpid(), signal.SIGKILL)\n"
        f"add_case({str(snapshot)!r}, NewCase(library='pandas', reproduced=Path({str(case.reproduced)!r}),"
        f" fixed=Path({str(case.fixed)!r}), root_cause='API misuse', crash_type='key error',"
        " pipeline_stage='data preparation', ml_bug='ML bug', diagnosis='x'), verify=False)\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=120, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert done.returncode == -signal.SIGKILL, done.stderr


def test_what_a_killed_preparation_left_is_named_by_validate_and_removed_by_the_next_run(
        snapshot: Path, tmp_path: Path, capsys) -> None:
    case = _case(tmp_path)
    _kill_during_commit(snapshot, case)
    left = _dot_entries(snapshot)
    assert any(n.startswith(".junobench-edit-") and n.endswith(".partial") for n in left), left
    assert any(n.startswith(".benchmark_desc.xlsx.") and n.endswith(".edit") for n in left), left
    assert "pandas_3" not in _ids(snapshot)
    report = check(snapshot)
    assert report.valid
    assert {w.file for w in report.warnings if "interrupted" in w.problem} == set(left)
    foreign = snapshot / ".mine.edit"
    foreign.write_text("not junobench's", encoding="utf-8")
    code, out, err = run_cli(capsys, "construct", "remove-case", str(snapshot), "sklearn_2")
    assert code == 0, err
    assert out == "" and err.startswith("removed what an interrupted edit left: ")
    assert _dot_entries(snapshot) == [".mine.edit"]  # what junobench did not name stays
    assert add_case(snapshot, case, verify=False).case_id == "pandas_3"


def test_validate_names_a_pending_renumber_and_how_to_finish_it(snapshot: Path, monkeypatch,
                                                                capsys) -> None:
    remove_case(snapshot, "pandas_1")
    real_replace = transaction.os.replace

    def killed(source: str, target: str) -> None:
        if Path(target).name == layout.DESC_TABLE:
            raise KeyboardInterrupt
        real_replace(source, target)

    monkeypatch.setattr(transaction.os, "replace", killed)
    with pytest.raises(KeyboardInterrupt):
        renumber(snapshot)
    monkeypatch.setattr(transaction.os, "replace", real_replace)
    code, out, _ = run_cli(capsys, "validate", str(snapshot))
    assert code == 1
    assert "an unfinished renumber is pending" in out
    assert f"run junobench construct renumber {snapshot} again" in out
    code, out, err = run_cli(capsys, "construct", "renumber", str(snapshot))
    assert code == 0 and out == "" and err.startswith("finished an interrupted renumber")
    assert run_cli(capsys, "validate", str(snapshot))[0] == 0


# --------------------------------------------------------------------------- remove, renumber


def test_remove_case_takes_the_folder_and_both_tables_rows(snapshot: Path, capsys) -> None:
    code, out, err = run_cli(capsys, "construct", "remove-case", str(snapshot), "pandas_1")
    assert code == 0, err
    assert out == ""
    assert err.startswith("removed pandas_1: its folder, 1 row(s) of benchmark_desc.xlsx, "
                          "2 diagnosis row(s)")
    assert "valid (9 cases" in err
    assert not (snapshot / "benchmark/pandas_1").exists() and "pandas_1" not in _ids(snapshot)
    instances = {r["instance"] for r in read_table(snapshot / layout.DIAGNOSIS_TABLE).records()}
    assert not {i for i in instances if str(i).startswith("pandas_1_")}
    assert _dot_entries(snapshot) == []
    before = tree_digest(snapshot)
    code, _, err = run_cli(capsys, "construct", "remove-case", str(snapshot), "pandas_1")
    assert code == 1 and "no case 'pandas_1'" in err
    code, _, err = run_cli(capsys, "construct", "remove-case", str(snapshot), "../x")
    assert code == 1 and err.startswith("error: ")
    assert tree_digest(snapshot) == before


def test_remove_case_killed_half_way_is_finished_by_the_next_command(snapshot: Path,
                                                                     monkeypatch) -> None:
    real_replace = transaction.os.replace

    def killed(source: str, target: str) -> None:
        if Path(target).name == layout.DIAGNOSIS_TABLE:
            raise KeyboardInterrupt
        real_replace(source, target)

    monkeypatch.setattr(transaction.os, "replace", killed)
    with pytest.raises(KeyboardInterrupt):
        remove_case(snapshot, "sklearn_1")
    monkeypatch.setattr(transaction.os, "replace", real_replace)
    assert not check(snapshot).valid
    assert remove_case(snapshot, "numpy_1").case_id == "numpy_1"
    assert not {"sklearn_1", "numpy_1"} & _ids(snapshot)
    assert check(snapshot).valid and _dot_entries(snapshot) == []


def test_renumber_keeps_its_map_in_the_snapshot_and_export_carries_it(snapshot: Path,
                                                                       tmp_path: Path,
                                                                       capsys) -> None:
    from junobench.data.export import read_manifest

    remove_case(snapshot, "NBspecific_1")
    code, _, err = run_cli(capsys, "construct", "renumber", str(snapshot))
    assert code == 0 and "NBspecific_2 -> NBspecific_1" in err and "next release records" in err
    # renumbering records nothing: the release records the published ids renamed (test_release)
    assert not (snapshot / layout.RENAMED_CASES).exists()
    # a record the snapshot holds (an earlier release's) goes out with the export as it is
    record = b'{"releases": [{"version": "1.0.0", "renamed": {"pandas_2": "pandas_1"}, "removed": []}]}\n'
    (snapshot / layout.RENAMED_CASES).write_bytes(record)
    code, _, err = run_cli(capsys, "export", "--source", str(snapshot), "--out", str(tmp_path / "out"))
    assert code == 0, err
    assert (tmp_path / "out" / layout.RENAMED_CASES).read_bytes() == record
    assert layout.RENAMED_CASES in read_manifest(tmp_path / "out")["files"]
    (snapshot / layout.RENAMED_CASES).write_text("{not json", encoding="utf-8")
    code, _, err = run_cli(capsys, "export", "--source", str(snapshot), "--out", str(tmp_path / "out2"))
    assert code == 1 and "record of renamed cases cannot be read" in err


# --------------------------------------------------------------------------- the pair is run


@pytest.mark.kernel
def test_the_pair_is_run_before_the_case_gets_in(tmp_path: Path, capsys) -> None:
    snapshot = tmp_path / "snapshot"
    shutil.copytree(SAMPLE, snapshot)
    remove_case(snapshot, "pandas_1")
    data = layout.data_dir(SAMPLE, "pandas_1") / "passengers.csv"
    common = ["--library", "pandas", "--root-cause", "API misuse", "--crash-type", "key error",
              "--stage", "data preparation", "--diagnosis", "A wrong name.", "--dataset",
              "name=passengers;title=Passengers;license=CC0: Public Domain",
              "--data", f"passengers={data}"]
    reproduced = str(_notebook("pandas_1", "reproduced"))
    # A "fixed" notebook that still crashes (the reproduced one, other code): refused.
    crashing = variant(_notebook("pandas_1", "reproduced"), tmp_path / "crashing")
    before = tree_digest(snapshot)
    code, _, err = run_cli(capsys, "construct", "add-case", str(snapshot),
                           str(_notebook("pandas_1", "original")), "--reproduced", reproduced,
                           "--fixed", str(crashing), *common)
    assert code == 1
    assert "the pair does not behave as a case must: fixed: still crashes" in err
    assert "KeyError" in err and "--no-verify" in err
    assert tree_digest(snapshot) == before and _dot_entries(snapshot) == []
    # A reproduced notebook that does not crash at its target: refused too.
    quiet = variant(_notebook("pandas_1", "fixed"), tmp_path / "quiet")
    with pytest.raises(JunoBenchError, match="reproduced: no crash"):
        add_case(snapshot, NewCase(library="pandas", reproduced=_with_error(quiet, tmp_path),
                                   fixed=_notebook("pandas_1", "fixed"), root_cause="API misuse",
                                   crash_type="key error", pipeline_stage="data preparation",
                                   ml_bug="ML bug", diagnosis="x",
                                   datasets=[Dataset("passengers", "Passengers", None, "CC0",
                                                     sources=[data])]))
    assert tree_digest(snapshot) == before
    # The true pair: run, then added, its provenance saying so.
    code, out, err = run_cli(capsys, "construct", "add-case", str(snapshot),
                             str(_notebook("pandas_1", "original")), "--reproduced", reproduced,
                             "--fixed", str(_notebook("pandas_1", "fixed")), *common)
    assert code == 0, err
    assert out == "" and "verified in junobench's own environment: reproduced: crashed at the target" in err
    recorded = junobench.load(snapshot).filter(lambda c: c["case_id"] == "pandas_3")[0]["provenance"]
    assert recorded["status"] == "verified" and recorded["environment"] == "junobench's own environment"
    assert recorded["python"] == platform.python_version() and recorded["sandbox"].endswith("network off")
    assert any(lib.startswith("pandas==") for lib in recorded["libraries"]), recorded
    assert recorded["detail"].startswith("reproduced: crashed at the target")
    # --no-verify lets the crashing pair in, and says so in its provenance.
    code, out, err = run_cli(capsys, "construct", "add-case", str(snapshot),
                             str(variant(_notebook("pandas_1", "original"), tmp_path / "o")),
                             "--reproduced", str(variant(_notebook("pandas_1", "reproduced"),
                                                         tmp_path / "r", "a third case")),
                             "--fixed", str(crashing), *common, "--no-verify")
    assert code == 0 and out == "", err
    recorded = junobench.load(snapshot).filter(lambda c: c["case_id"] == "pandas_4")[0]["provenance"]
    assert recorded["status"] == "not verified" and recorded["detail"] == "added with --no-verify"


def _with_error(notebook: Path, tmp_path: Path) -> Path:
    """The fixed notebook given the reproduced notebook's error output at the same cell."""
    crashed = json.loads(_notebook("pandas_1", "reproduced").read_text(encoding="utf-8"))
    data = json.loads(notebook.read_text(encoding="utf-8"))
    crash_cells = [c for c in crashed["cells"] if c["cell_type"] == "code"]
    cells = [c for c in data["cells"] if c["cell_type"] == "code"]
    for mine, theirs in zip(cells, crash_cells, strict=False):
        mine["execution_count"] = theirs.get("execution_count")
        if any(o.get("output_type") == "error" for o in theirs.get("outputs", [])):
            mine["outputs"] = theirs["outputs"]
    path = tmp_path / "quiet_reproduced.ipynb"
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


@pytest.mark.kernel
def test_the_pair_runs_in_the_pinned_environment(sample_env, tmp_path: Path, capsys) -> None:
    # numpy_1 uses np.NaN, gone in NumPy 2: its pair behaves only in the pinned environment.
    snapshot = tmp_path / "snapshot"
    shutil.copytree(SAMPLE, snapshot)
    remove_case(snapshot, "numpy_1")
    data = layout.data_dir(SAMPLE, "numpy_1")
    name = next(p.name for p in data.iterdir() if not p.name.endswith(".metadata.json"))
    argv = ["construct", "add-case", str(snapshot), str(_notebook("numpy_1", "original")),
            "--reproduced", str(_notebook("numpy_1", "reproduced")),
            "--fixed", str(_notebook("numpy_1", "fixed")), "--library", "numpy",
            "--root-cause", "API misuse", "--crash-type", "key error", "--stage", "training",
            "--diagnosis", "x", "--dataset", "name=d;title=D;license=CC0",
            "--data", f"d={data / name}", "--timeout", "120"]
    import numpy

    if int(numpy.__version__.split(".")[0]) >= 2:
        before = tree_digest(snapshot)
        code, _, err = run_cli(capsys, *argv)
        assert code == 1 and "the pair does not behave" in err
        assert f"numpy {numpy.__version__} where the benchmark pins 1.26.4" in err
        assert tree_digest(snapshot) == before
    code, out, err = run_cli(capsys, *argv, "--env", str(sample_env.path))
    assert code == 0, err
    assert out == "" and "verified in its pinned environment: reproduced: crashed at the target" in err


def test_remove_case_takes_what_there_is_of_a_half_present_case(snapshot: Path) -> None:
    shutil.rmtree(layout.case_dir(snapshot, "pandas_2"))  # a row without its folder
    removed = remove_case(snapshot, "pandas_2")
    assert (removed.folder, removed.desc_rows, removed.diagnosis_rows) == (False, 1, 2)
    shutil.copytree(layout.case_dir(snapshot, "pandas_1"), snapshot / "benchmark/pandas_9")
    removed = remove_case(snapshot, "pandas_9")  # a folder without its row
    assert (removed.folder, removed.desc_rows) == (True, 0)
    assert check(snapshot).valid
    (snapshot / "benchmark/pandas_8").symlink_to(layout.case_dir(SAMPLE, "pandas_1"))
    before = tree_digest(snapshot)
    with pytest.raises(JunoBenchError, match="the case folder is a link"):
        remove_case(snapshot, "pandas_8")
    assert tree_digest(snapshot) == before and layout.case_dir(SAMPLE, "pandas_1").is_dir()


def test_validate_names_cases_sharing_an_eid_or_a_notebook_url(snapshot: Path) -> None:
    table = read_table(snapshot / layout.DESC_TABLE)
    rows = table.records()
    by_id = {r["nb_name"]: r for r in rows}
    by_id["sklearn_2"]["eid"] = by_id["sklearn_1"]["eid"]
    by_id["pandas_1"]["NotebookUrl"] = URL
    by_id["numpy_1"]["NotebookUrl"] = URL.upper().replace("/CODE/", "/kernels/") + "?x=1"
    write_table(snapshot / layout.DESC_TABLE, rows, table.columns)
    problems = {p.case: p.problem for p in check(snapshot).problems}
    assert problems["sklearn_2"] == "the case repeats sklearn_1 (same eid)"
    assert problems["pandas_1"] == "the case repeats numpy_1 (same notebook URL)"  # table order
    assert duplicates.url_key("None") is None and duplicates.url_key(" nan ") is None


def test_a_record_of_renamed_cases_linked_out_of_the_snapshot_is_refused(snapshot: Path,
                                                                          tmp_path: Path,
                                                                          capsys) -> None:
    secret = tmp_path / "secret.json"
    secret.write_text('{"renumbered": []}', encoding="utf-8")
    (snapshot / layout.RENAMED_CASES).symlink_to(secret)
    code, _, err = run_cli(capsys, "export", "--source", str(snapshot), "--out",
                           str(tmp_path / "out"))
    assert code == 1 and "a link out of the snapshot" in err
    assert not (tmp_path / "out").exists()
    (snapshot / layout.EDIT_JOURNAL).unlink(missing_ok=True)
    os.mkfifo(snapshot / layout.EDIT_JOURNAL)
    problems = [p.problem for p in check(snapshot).problems]  # a FIFO journal is not read
    assert any(p.startswith("an unfinished edit is pending") for p in problems), problems


@pytest.mark.parametrize("journal", ["fifo", "link", "huge", "removes benchmark", "replaces a table"])
def test_a_hostile_journal_is_refused_before_anything_is_done(snapshot: Path, tmp_path: Path,
                                                              journal: str, capsys) -> None:
    path = snapshot / layout.EDIT_JOURNAL
    if journal == "fifo":
        os.mkfifo(path)  # read blocking, the next edit hung
    elif journal == "link":
        (tmp_path / "secret.json").write_text('{"moves": [], "replaces": []}', encoding="utf-8")
        path.symlink_to(tmp_path / "secret.json")
    elif journal == "huge":
        path.write_text('{"moves": [], "replaces": [], "what": "' + "x" * (2 << 20) + '"}')
    else:
        edit = ({"cleanup": ["benchmark"]} if journal == "removes benchmark" else
                {"replaces": [[layout.DIAGNOSIS_TABLE, layout.DESC_TABLE]]})
        path.write_text(json.dumps({"what": "x", "moves": [], "replaces": [], **edit}), encoding="utf-8")
    before = tree_digest(snapshot)
    code, out, err = run_cli(capsys, "construct", "clean", str(snapshot))
    assert code == 1 and out == "" and len(err.strip().splitlines()) == 1, err
    assert err.startswith(f"error: {path}: the journal") and "remove the journal by hand" in err
    assert tree_digest(snapshot) == before



def test_an_edit_never_moves_or_renames_through_a_link_out_of_the_snapshot(snapshot: Path,
                                                                          tmp_path: Path) -> None:
    linked = tmp_path / "outside/sklearn_5"
    shutil.copytree(layout.case_dir(snapshot, "sklearn_1"), linked)
    for version in vocab.VERSIONS:
        (linked / layout.notebook_name("sklearn_1", version)).rename(
            linked / layout.notebook_name("sklearn_5", version))
    (snapshot / "benchmark/sklearn_5").symlink_to(linked)
    theirs = tree_digest(linked)
    with pytest.raises(JunoBenchError, match="the case folder is a link"):
        renumber(snapshot)  # would rename sklearn_5.ipynb to sklearn_2.ipynb where the link points
    assert tree_digest(linked) == theirs
    (snapshot / "benchmark/sklearn_5").unlink()
    bench = tmp_path / "outside/benchmark"
    shutil.move(snapshot / "benchmark", bench)
    (snapshot / "benchmark").symlink_to(bench)
    theirs, before = tree_digest(bench), tree_digest(snapshot)
    with pytest.raises(JunoBenchError, match="the benchmark/ folder is a link"):
        remove_case(snapshot, "pandas_2")  # would delete the folder the link points into
    with pytest.raises(JunoBenchError, match="the benchmark/ folder is a link"):
        add_case(snapshot, _case(tmp_path), verify=False)  # would write into it
    assert tree_digest(bench) == theirs and tree_digest(snapshot) == before


@pytest.mark.parametrize("table", [layout.DESC_TABLE, layout.DIAGNOSIS_TABLE])
def test_an_edit_or_checkout_never_reads_a_table_linked_out_of_the_snapshot(
        snapshot: Path, tmp_path: Path, table: str, capsys) -> None:
    elsewhere = tmp_path / "elsewhere.xlsx"  # another snapshot's table, or any spreadsheet
    shutil.copy(snapshot / table, elsewhere)
    (snapshot / table).unlink()
    (snapshot / table).symlink_to(elsewhere)
    before = tree_digest(snapshot)
    for args in (["construct", "remove-case", str(snapshot), "pandas_2"],
                 ["construct", "edit", str(snapshot), "pandas_1", "--diagnosis", "x", "--no-verify"],
                 ["construct", "renumber", str(snapshot)],
                 ["checkout", "--source", str(snapshot), "--dest", str(tmp_path / "out"), "pandas_1"]):
        code, _, err = run_cli(capsys, *args)
        if table == layout.DIAGNOSIS_TABLE and args[1] == "renumber":
            continue  # nothing to renumber: the diagnosis table is not read
        assert code == 1 and err == f"error: {snapshot / table}: a link out of the snapshot (a " \
            "snapshot's files are read only inside it: copy the file in instead of linking it)\n", args
    assert tree_digest(snapshot) == before and (snapshot / table).is_symlink()
    assert not (tmp_path / "out").exists()
