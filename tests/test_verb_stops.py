"""Every verb that starts processes, stopped by SIGTERM or SIGHUP as Ctrl-C stops it:
runtime-info, construct reproduce, construct add-case, mine --execute, detect (an endpoint,
or pylint) and judge. Each is stopped in a state it is known to be in (a kernel asleep in a
notebook's cell, requests held by the server, the analyser running), not after a while: it
ends in seconds with one ``interrupted by …`` line and 128 + the signal's number, what
finished is written (what was not is not), its processes end, and its TMPDIR is left empty
(no case copy, kernel connection file or worker folder). verify and env create under the
same signals: tests/test_signals.py; the Ray executor: tests/test_ray_stops.py."""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import nbformat
import pytest
from chat_server import ChatServer
from processes import alive, descendants, kernel_sleeping, processes_with
from snapshot_files import edit_cell, tree_digest, variant
from test_signals import ROOT, _run, stop, wait_for

from junobench.data import layout
from junobench.data.checkout import checkout
from junobench.data.snapshot import resolve
from junobench.data.tables import read_table, write_table

#: A cell that marks its working folder (a copy in the verb's TMPDIR), then sleeps.
HANG = "import pathlib, time\npathlib.Path('hanging.marker').write_text('')\ntime.sleep(300)"


@pytest.fixture
def scratch(tmp_path: Path) -> Path:
    """The stopped verb's TMPDIR: it must be empty once the verb has ended."""
    folder = tmp_path / "tmp"
    folder.mkdir()
    return folder


def asleep(run: subprocess.Popen[str], scratch: Path) -> list[int]:
    """Once the cell :data:`HANG` runs in a kernel below ``run`` (its marker is in the copy
    the kernel works in, and the kernel sleeps): the processes below ``run``."""
    below: list[int] = []

    def sleeping() -> bool:
        if not any(scratch.rglob("hanging.marker")):
            return False
        below[:] = descendants(run.pid)
        return any(kernel_sleeping(pid) for pid in below)

    wait_for(sleeping, run)
    return below


def ended(run: subprocess.Popen[str], signum: int, scratch: Path, *,
          started: list[int] | None = None) -> tuple[str, str]:
    """Stop ``run`` with ``signum``: it ends in seconds, says so on its last line, leaves no
    process and nothing in its TMPDIR; its stdout and stderr."""
    started = list(started or descendants(run.pid))
    out, err, took = stop(run, signum)
    assert run.returncode == 128 + signum, err
    assert took < 20, (took, err)
    assert "Traceback" not in err, err
    assert err.strip().splitlines()[-1].startswith(f"interrupted by {signal.Signals(signum).name}"), err
    assert not [pid for pid in started if alive(pid)], "a process outlived the verb"
    assert sorted(p.name for p in scratch.iterdir()) == [], "the verb left files in its TMPDIR"
    return out, err


@pytest.mark.kernel
@pytest.mark.slow
@pytest.mark.timeout(300)
@pytest.mark.parametrize("background", [False, True])
def test_sigterm_stops_runtime_info_with_the_finished_records_written(tmp_path, scratch, background):
    """Also run as a background job (SIGINT ignored: asyncio then leaves the stop to a
    KeyboardInterrupt in its loop), with --format json: every notebook's state on stdout."""
    snap = checkout(["NBspecific_2", "pandas_1"], "sample", tmp_path / "snap")
    edit_cell(snap, "pandas_1", "reproduced", 0, HANG)
    out = tmp_path / "info.jsonl"
    run = _run("runtime-info", "--source", str(snap), "--jobs", "1", "--out", str(out), "--no-progress",
               "--format", "json", env={"TMPDIR": str(scratch)}, background=background)
    printed, err = ended(run, signal.SIGTERM, scratch, started=asleep(run, scratch))
    written = [json.loads(line) for line in out.read_text().splitlines()]
    assert [(r["instance"], r["status"]) for r in written] == [
        ("NBspecific_2_reproduced", "ok"), ("NBspecific_2_fixed", "ok")]
    assert err.strip().splitlines()[-1] == (f"interrupted by SIGTERM (2 of 4 notebooks done; {out} holds them; "
                                            "run the same command again to resume)")
    document = json.loads(printed)
    assert document["out"] == str(out) and document["stopped"] == "interrupted"
    assert {instance: state["status"] for instance, state in document["notebooks"].items()} == {
        "NBspecific_2_reproduced": "ok", "NBspecific_2_fixed": "ok", "pandas_1_reproduced": "interrupted",
        "pandas_1_fixed": "not run"}


def _crashing(path: Path, source: str) -> str:
    """A Kaggle-like notebook at ``path`` whose second cell crashed with a KeyError; its name."""
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_code_cell(source, execution_count=1),
                      nbformat.v4.new_code_cell("{}['k']", execution_count=2)]
    notebook.cells[1].outputs = [nbformat.v4.new_output("error", ename="KeyError", evalue="'k'", traceback=[])]
    nbformat.write(notebook, path)
    return path.name


@pytest.mark.kernel
@pytest.mark.slow
@pytest.mark.timeout(300)
def test_sighup_stops_construct_reproduce_with_the_finished_rows_written(tmp_path, scratch):
    notebooks = tmp_path / "notebooks"
    notebooks.mkdir()
    names = [_crashing(notebooks / "quick.ipynb", "x = 1"), _crashing(notebooks / "slow.ipynb", HANG)]
    table, out = tmp_path / "sampled.xlsx", tmp_path / "triaged.xlsx"
    write_table(table, [{"fname": name, "ename": "keyerror", "evalue": "'k'"} for name in names],
                ["fname", "ename", "evalue"])
    run = _run("construct", "reproduce", str(table), "--notebooks", str(notebooks), "--out", str(out),
               "--jobs", "1", "--no-progress", env={"TMPDIR": str(scratch)})
    _, err = ended(run, signal.SIGHUP, scratch, started=asleep(run, scratch))
    rows = {row["fname"]: row["reproduced"] for row in read_table(out).records()}
    assert rows == {"quick.ipynb": "same exception", "slow.ipynb": None}
    assert err.strip().splitlines()[-1] == (f"interrupted by SIGHUP (1 of 2 rows done; {out} holds every row; "
                                            "run the same command again to resume)")


@pytest.mark.kernel
@pytest.mark.slow
@pytest.mark.timeout(300)
def test_sigterm_stops_add_case_while_it_runs_the_pair_and_leaves_the_snapshot_as_it_was(tmp_path, scratch):
    snapshot = tmp_path / "snapshot"
    shutil.copytree(resolve("sample"), snapshot)
    before = tree_digest(snapshot)
    pair = {version: variant(layout.notebook_path(snapshot, "pandas_1", version), tmp_path / "new")
            for version in ("reproduced", "fixed")}
    hanging = json.loads(pair["reproduced"].read_text())
    next(c for c in hanging["cells"] if c["cell_type"] == "code")["source"] = HANG
    pair["reproduced"].write_text(json.dumps(hanging))
    run = _run("construct", "add-case", str(snapshot), str(pair["reproduced"]), "--reproduced",
               str(pair["reproduced"]), "--fixed", str(pair["fixed"]), "--library", "pandas", "--root-cause",
               "API misuse", "--crash-type", "key error", "--stage", "data preparation", "--diagnosis",
               "A column is read by a wrong name.", "--no-progress", env={"TMPDIR": str(scratch)})
    ended(run, signal.SIGTERM, scratch, started=asleep(run, scratch))
    assert tree_digest(snapshot) == before  # nothing added, no staging folder or journal left
    assert not [p.name for p in snapshot.iterdir() if p.name.startswith(".")]


@pytest.mark.kernel
@pytest.mark.slow
@pytest.mark.timeout(300)
def test_sigterm_stops_mine_execute_and_the_earlier_corpus_stays(tmp_path, scratch):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_code_cell(HANG)]
    nbformat.write(notebook, corpus / "slow.ipynb")
    out = tmp_path / "mined"
    run = subprocess.run([sys.executable, "-m", "junobench", "mine", str(corpus), "--out", str(out), "--no-progress"],
                         capture_output=True, text=True, timeout=240)
    assert run.returncode == 0, run.stderr
    earlier = tree_digest(out)
    run = _run("mine", str(corpus), "--out", str(out), "--execute", "--jobs", "1", "--no-progress",
               env={"TMPDIR": str(scratch)})
    ended(run, signal.SIGTERM, scratch, started=asleep(run, scratch))
    assert tree_digest(out) == earlier  # replaced only by a run that completes


def _tasks(tmp_path: Path) -> tuple[Path, list[str]]:
    """Crash-detection tasks of the sample's pandas notebooks (four); their ids."""
    tasks = tmp_path / "tasks.jsonl"
    code = subprocess.run([sys.executable, "-m", "junobench", "tasks", "--library", "pandas", "--source", "sample",
                           "--out", str(tasks)], capture_output=True, text=True, timeout=120)
    assert code.returncode == 0, code.stderr
    return tasks, [json.loads(line)["id"] for line in tasks.read_text().splitlines()]


SLOW_PYLINT = textwrap.dedent("""\
    import os, sys, time
    if sys.orig_argv[1:3] == ["-m", "pylint"] and os.environ.get("SLOW_PYLINT"):
        marker = os.environ["SLOW_PYLINT"]
        if os.path.exists(marker):  # the second task's analysis: it never ends
            time.sleep(300)
        open(marker, "w").close()
""")


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_sighup_stops_detect_while_pylint_runs(tmp_path, scratch):
    pytest.importorskip("pylint", reason="the pylint baseline needs the sa extra")
    tasks, ids = _tasks(tmp_path)
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(SLOW_PYLINT)
    marker, out = tmp_path / "analysed", tmp_path / "pred.jsonl"
    run = _run("detect", "--baseline", "pylint", "--tasks", str(tasks), "--out", str(out),
               env={"TMPDIR": str(scratch), "SLOW_PYLINT": str(marker), "PYTHONPATH": f"{site}:{ROOT}"})
    analysers: list[int] = []

    def second_analysis() -> bool:
        analysers[:] = [p for p in descendants(run.pid) if p in processes_with("pylint")]
        return marker.exists() and out.exists() and len(out.read_text().splitlines()) == 1 and bool(analysers)

    wait_for(second_analysis, run)
    ended(run, signal.SIGHUP, scratch, started=analysers)
    assert [json.loads(line)["instance"] for line in out.read_text().splitlines()] == ids[:1]


@pytest.mark.timeout(300)
def test_sigterm_stops_judge_with_the_finished_passes_written(tmp_path, scratch):
    from junobench.detection.predictions import write_predictions

    runs = [(instance, [{"detection": True, "reasoning": "a column is missing"}])
            for instance in ("pandas_1_reproduced", "pandas_1_fixed", "pandas_2_reproduced")]
    predictions, out = write_predictions(tmp_path / "p.jsonl", runs), tmp_path / "labels.jsonl"
    with ChatServer(lambda body: "Same cause. [Correct]", hold=lambda body: len(server.requests) > 2) as server:
        run = _run("judge", str(predictions), "--setting", "m", "--source", "sample", "--out", str(out),
                   "--endpoint", server.url, "--model", "judge", "--repeats", "1", "--no-progress",
                   env={"TMPDIR": str(scratch)})
        wait_for(lambda: server.held > 0 and out.exists() and len(out.read_text().splitlines()) == 2, run)
        ended(run, signal.SIGTERM, scratch)
        server.release()
    assert sorted(json.loads(line)["instance"] for line in out.read_text().splitlines()) == [
        "pandas_1_fixed", "pandas_1_reproduced"]
