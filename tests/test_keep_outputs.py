"""``verify --keep-outputs DIR``: each replayed notebook saved with what its replay printed,
in DIR/<case>/<case>_<version>.ipynb, atomically, never through a link; a rerun keeps the
verdicts whose notebooks are there and runs the others again."""

from __future__ import annotations

import json
from pathlib import Path

import nbformat
import pytest
from cli_run import run_cli
from snapshot_files import tree_digest
from test_verify import Unstartable

from junobench.data import layout
from junobench.data.checkout import checkout
from junobench.errors import JunoBenchError
from junobench.verify import verify

pytest.importorskip("nbclient", reason="verify needs the run extra")
pytestmark = pytest.mark.kernel

STALE = "STALE OUTPUT FROM THE FILE"


def stale(snapshot: Path, case: str, version: str) -> None:
    """Put an output no replay prints into every code cell of a notebook (and a count)."""
    path = layout.notebook_path(snapshot, case, version)
    notebook = json.loads(path.read_text(encoding="utf-8"))
    for cell in notebook["cells"]:
        if cell["cell_type"] == "code":
            cell["outputs"] = [*cell.get("outputs", []), {"output_type": "stream", "name": "stdout",
                                                          "text": STALE}]
            cell["execution_count"] = cell.get("execution_count") or 99
    path.write_text(json.dumps(notebook), encoding="utf-8")


def kept(folder: Path) -> list[str]:
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file())


def test_each_replayed_notebook_is_kept_with_its_replays_outputs(tmp_path, capsys):
    snap = checkout(["pandas_1"], "sample", tmp_path / "snap")
    stale(snap, "pandas_1", "reproduced")
    stale(snap, "pandas_1", "fixed")
    before = tree_digest(snap)
    out = tmp_path / "out"
    (out / "mine.txt").parent.mkdir()
    (out / "mine.txt").write_text("not the verifier's", encoding="utf-8")
    code, _, err = run_cli(capsys, "verify", "--source", str(snap), "--keep-outputs", str(out), "--no-progress",
                           "--jobs", "2")
    assert code == 0, err
    assert kept(out) == ["mine.txt", "pandas_1/pandas_1_fixed.ipynb", "pandas_1/pandas_1_reproduced.ipynb"]
    assert (out / "mine.txt").read_text(encoding="utf-8") == "not the verifier's"
    assert tree_digest(snap) == before  # the snapshot is only read
    for version in ("reproduced", "fixed"):
        text = (out / "pandas_1" / f"pandas_1_{version}.ipynb").read_text(encoding="utf-8")
        assert STALE not in text  # what this replay printed, nothing the file held
        notebook = nbformat.reads(text, as_version=4)
        nbformat.validate(notebook)
        replay = notebook.metadata["junobench"]["replay"]
        assert replay["instance"] == f"pandas_1_{version}" and replay["failure"] is None
        code_cells = [c for c in notebook.cells if c.cell_type == "code"]
        ran = [run["code_cell_index"] for run in replay["runs"]]
        assert [code_cells[i].execution_count for i in ran] == list(range(1, len(ran) + 1))
        assert all(c.execution_count is None and c.outputs == [] for k, c in enumerate(code_cells) if k not in ran)
        errors = [o for c in code_cells for o in c.outputs if o.output_type == "error"]
        if version == "reproduced":  # the crash, at the target, as the replay raised it
            assert replay["runs"][-1] == {"code_cell_index": 4, "status": "error", "ename": "KeyError"}
            assert [o.ename for o in code_cells[4].outputs if o.output_type == "error"] == ["KeyError"]
            assert len(errors) == 1
        else:
            assert errors == [] and all(run["status"] == "ok" for run in replay["runs"])
        assert any(o.output_type == "execute_result" for c in code_cells for o in c.outputs)  # what it showed
    assert not [p for p in out.rglob(".*") if p.is_file()]  # no temporary file left


def test_a_rerun_keeps_the_verdicts_whose_notebooks_are_kept(tmp_path):
    snap = checkout(["pandas_1", "NBspecific_2"], "sample", tmp_path / "snap")
    report = tmp_path / "r.json"
    assert verify(source=snap, report=report, jobs=2, progress=False).ok  # no notebooks kept
    out = tmp_path / "out"
    seen: list[str] = []
    again = verify(source=snap, report=report, jobs=2, progress=False, keep_outputs=out,
                   on_case=lambda c: seen.append(c.case_id))
    assert sorted(seen) == ["NBspecific_2", "pandas_1"] and again.ok  # run again, to keep them
    assert len(kept(out)) == 4
    (out / "NBspecific_2" / "NBspecific_2_fixed.ipynb").unlink()
    seen.clear()
    verify(source=snap, report=report, jobs=2, progress=False, keep_outputs=out,
           on_case=lambda c: seen.append(c.case_id))
    assert seen == ["NBspecific_2"] and len(kept(out)) == 4
    every = verify(source=snap, report=report, executor=Unstartable(1), progress=False, keep_outputs=out)
    assert every.ok and all(c.kept for c in every)


def test_a_folder_that_is_a_file_or_holds_a_link_is_refused(tmp_path, capsys):
    target = tmp_path / "file"
    target.write_text("x", encoding="utf-8")
    code, _, err = run_cli(capsys, "verify", "pandas_1", "--source", "sample", "--keep-outputs", str(target))
    assert code == 1 and err.startswith("error:") and "not a folder" in err and len(err.strip().splitlines()) == 1
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    out = tmp_path / "out"
    out.mkdir()
    (out / "pandas_1").symlink_to(elsewhere, target_is_directory=True)
    with pytest.raises(JunoBenchError, match="never written through links"):
        verify(["pandas_1"], "sample", jobs=2, progress=False, keep_outputs=out)
    assert list(elsewhere.iterdir()) == []
    (tmp_path / "linked").symlink_to(out, target_is_directory=True)
    code, _, err = run_cli(capsys, "verify", "pandas_1", "--source", "sample", "--keep-outputs",
                           str(tmp_path / "linked"))
    assert code == 1 and "symbolic link" in err
