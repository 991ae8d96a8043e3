"""A run of `runtime-info` or `construct reproduce` on Ray whose cluster is lost mid-run
(its driver process killed by pid) ends as `verify` does: every notebook recorded, one
`error:` line naming why the run stopped, exit status 1; and the note on `--jobs` says the
final figure when nodes leave."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import threading
import time
from pathlib import Path

import pytest
from cli_run import run_cli
from processes import parent_of, processes_with
from snapshot_files import edit_cell

from junobench.data.checkout import checkout
from junobench.data.snapshot import sample_path
from junobench.data.tables import read_table, write_table
from junobench.verify.ray_driver import jobs_note

HANG = "import os, pathlib, time\npathlib.Path({marker!r}).write_text(str(os.getpid()))\ntime.sleep(300)\n"


def test_the_jobs_note_says_the_final_figure():
    # --jobs 3 on 2 CPUs, then a node leaves: the note says 1, not 2
    assert jobs_note(3, 2, 2, 2.0, 1.0) == ("--jobs 3 lowered to 2: the cluster's 2 CPUs hold 2 notebooks "
                                            "of 1 CPU at once")
    assert jobs_note(3, 2, 1, 1.0, 1.0) == ("--jobs 3 lowered to 1: the cluster's 1 CPUs hold 1 notebook "
                                            "of 1 CPU at once, after nodes left")
    # --jobs 0 (what the cluster holds): a note only when nodes left
    assert jobs_note(0, 4, 4, 4.0, 1.0) is None
    assert jobs_note(0, 4, 2, 4.0, 2.0) == ("4 jobs lowered to 2: the cluster's 4 CPUs hold 2 notebooks "
                                            "of 2 CPU at once, after nodes left")
    assert jobs_note(2, 2, 2, 8.0, 1.0) is None


@pytest.mark.timeout(120)
def test_nodes_leaving_lower_the_jobs_again_and_the_note_follows(ray_cluster, monkeypatch):
    from junobench.verify import ray_driver

    driver = ray_driver.ClusterDriver(ray_driver.DriverOptions(jobs=3))
    driver.connect()  # the suite's cluster: 2 CPUs
    assert driver.jobs == 2 and driver.note is not None and "--jobs 3 lowered to 2" in driver.note
    left = iter([(1.0, 1e9), (0.0, 1e9)])  # one node leaves, then the last
    monkeypatch.setattr(ray_driver, "WATCH_EVERY", 0.0)
    monkeypatch.setattr(driver, "_capacity", lambda ray: next(left))
    asyncio.run(asyncio.wait_for(driver._watch_cluster(), 30))
    assert driver.jobs == 1
    assert driver.note == ("--jobs 3 lowered to 1: the cluster's 1 CPUs hold 1 notebook of 1 CPU at once, "
                           "after nodes left")
    assert driver.lost is not None and "no node" in driver.lost


def _kill_driver_when(marker: Path, done: threading.Event) -> threading.Thread:
    """Kill this process's Ray driver (by pid) once a notebook wrote ``marker``."""
    def watch() -> None:
        while not done.is_set():
            if marker.exists() and marker.read_text().strip():
                for pid in processes_with("junobench.verify.ray_driver"):
                    if parent_of(pid) == os.getpid():
                        os.kill(pid, signal.SIGKILL)
                return
            done.wait(0.2)
    thread = threading.Thread(target=watch, daemon=True)
    thread.start()
    return thread


def _one_error(err: str) -> str:
    errors = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, err
    return errors[0]


@pytest.mark.kernel
@pytest.mark.slow
@pytest.mark.timeout(300)
def test_runtime_info_on_a_lost_cluster_records_every_notebook_and_says_why(ray_cluster, tmp_path, capsys):
    snap = checkout(["pandas_1", "pandas_2"], "sample", tmp_path / "snap")
    marker = tmp_path / "kernel.pid"
    edit_cell(snap, "pandas_1", "reproduced", 0, HANG.format(marker=str(marker)) + "import pandas as pd")
    out = tmp_path / "rt.jsonl"
    done = threading.Event()
    killer = _kill_driver_when(marker, done)
    try:
        code, stdout, err = run_cli(capsys, "runtime-info", "--source", str(snap), "--out", str(out),
                                    "--executor", "ray", "--jobs", "2", "--retries", "0", "--no-progress",
                                    "--sandbox", "none")  # the marker is written outside the copy
    finally:
        done.set()
        killer.join()
    assert code == 1, err
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert {r["instance"] for r in records} == {"pandas_1_reproduced", "pandas_1_fixed",
                                               "pandas_2_reproduced", "pandas_2_fixed"}
    lost = next(r for r in records if r["instance"] == "pandas_1_reproduced")
    assert lost["problem"].startswith("infrastructure error") and "Ray driver" in lost["problem"]
    assert "wrote 4 records" in err and stdout == ""
    line = _one_error(err)
    assert "the Ray cluster was lost" in line and str(out) in line, err


@pytest.mark.kernel
@pytest.mark.slow
@pytest.mark.timeout(300)
def test_construct_reproduce_on_a_lost_cluster_writes_every_row_and_says_why(ray_cluster, tmp_path, capsys):
    notebooks = tmp_path / "notebooks"
    notebooks.mkdir()
    marker = tmp_path / "kernel.pid"
    original = json.loads((sample_path() / "benchmark" / "pandas_1" / "pandas_1.ipynb").read_text())
    code_cells = [c for c in original["cells"] if c["cell_type"] == "code"]
    code_cells[0]["source"] = HANG.format(marker=str(marker))
    (notebooks / "hangs.ipynb").write_text(json.dumps(original))
    error = next(o for c in code_cells for o in c.get("outputs", []) if o["output_type"] == "error")
    rows = [{"fname": "hangs.ipynb", "ename": error["ename"].lower(), "evalue": error["evalue"]},
            {"fname": "absent.ipynb", "ename": "keyerror", "evalue": "'x'"}]
    table, out = tmp_path / "sampled.xlsx", tmp_path / "triaged.xlsx"
    write_table(table, rows, ["fname", "ename", "evalue"])
    done = threading.Event()
    killer = _kill_driver_when(marker, done)
    started = time.monotonic()
    try:
        code, stdout, err = run_cli(capsys, "construct", "reproduce", str(table), "--notebooks", str(notebooks),
                                    "--out", str(out), "--executor", "ray", "--retries", "0", "--no-progress",
                                    "--sandbox", "none")
    finally:
        done.set()
        killer.join()
    assert code == 1, err
    assert time.monotonic() - started < 250  # not the notebook's 300 s sleep
    written = {r["fname"]: r["reproduced"] for r in read_table(out).records()}
    assert written == {"hangs.ipynb": "infrastructure error", "absent.ipynb": "not run"}
    assert "wrote 2 rows" in err and stdout == ""
    line = _one_error(err)
    assert "the Ray cluster was lost" in line and str(out) in line, err
