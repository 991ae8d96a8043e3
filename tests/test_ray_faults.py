"""Ray under faults, through the command line as a user runs it: a raylet or the head's GCS
killed by pid in the middle of a run leaves a report with every case, valid JSON on
stdout, one `error:` line, and no scratch folder, kernel key or Ray session folder behind."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from processes import gone, processes_with
from snapshot_files import edit_cell

from junobench.data.checkout import checkout

pytest.importorskip("nbclient", reason="verify needs the run extra")
pytest.importorskip("ray", reason="the Ray executor needs the ray extra")
pytestmark = [pytest.mark.kernel, pytest.mark.slow, pytest.mark.ray]  # its own Ray instances

ROOT = Path(__file__).resolve().parent.parent


def wait_for(path: Path, seconds: float, process: subprocess.Popen) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and process.poll() is None:
        if path.exists() and path.read_text().strip():
            return
        time.sleep(0.2)
    raise AssertionError(f"{path} never appeared (the run exited with {process.poll()})")


@pytest.mark.timeout(420)
@pytest.mark.parametrize(("process", "why"), [("raylet", "the Ray cluster was lost"),
                                              ("gcs_server", "the Ray cluster was lost: its head is gone")])
def test_killing_the_raylet_or_the_head_mid_run_leaves_every_case_and_nothing_behind(tmp_path, process, why):
    snap = checkout(["pandas_1", "pandas_2", "NBspecific_2"], "sample", tmp_path / "snap")
    marker = tmp_path / "kernel.pid"
    edit_cell(snap, "pandas_1", "reproduced", 0,
              f"import os, pathlib, time\npathlib.Path({str(marker)!r}).write_text(str(os.getpid()))\n"
              "time.sleep(300)\nimport numpy as np\nimport pandas as pd")
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    ray_dir = Path(tempfile.mkdtemp(prefix="jbray"))  # short: Ray's socket paths must fit
    report = tmp_path / "r.json"
    # Ray's own health checks find the dead node in ~2 s, not its default ~15 s (a node is
    # dead after 5 missed checks, 3 s apart): what is tested is what junobench does then.
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TMPDIR": str(scratch), "RAY_TMPDIR": str(ray_dir),
           "RAY_health_check_period_ms": "1000", "RAY_health_check_failure_threshold": "2"}
    env.pop("RAY_ADDRESS", None)
    try:
        run = subprocess.Popen(
            [sys.executable, "-m", "junobench", "verify", "--source", str(snap), "--executor", "ray",
             "--jobs", "2", "--retries", "1", "--format", "json", "--report", str(report), "--no-progress",
             "--sandbox", "none"],  # unconfined: the kernel's pid is read from a file outside its copy
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=tmp_path)
        try:
            wait_for(marker, 240, run)
            kernel = int(marker.read_text())
            (victim,) = processes_with(str(ray_dir), process)
            os.kill(victim, signal.SIGKILL)
            out, err = run.communicate(timeout=240)
        finally:
            if run.poll() is None:
                run.kill()
        text = err.decode()
        assert run.returncode == 1, text
        printed = json.loads(out)  # stdout is the JSON report, nothing of Ray's
        written = json.loads(report.read_text())
        assert set(printed["cases"]) == set(written["cases"]) == {"pandas_1", "pandas_2", "NBspecific_2"}
        assert printed["cases"]["pandas_1"]["status"] == "infrastructure error"
        assert why in printed["stopped"]
        errors = [line for line in text.splitlines() if line.startswith("error:")]
        assert len(errors) == 1 and why in errors[0], text
        assert gone(kernel), "the kernel of the lost replay was left running"
        assert not processes_with(str(ray_dir)), "processes of the Ray instance were left running"
        assert not list(ray_dir.rglob("session_*")), "the Ray session folder was left"
        left = [p.name for p in scratch.iterdir()]
        assert not left, f"scratch folders or kernel files were left: {left}; {text}"
    finally:
        for pid in processes_with(str(ray_dir)):
            os.kill(pid, signal.SIGKILL)
        shutil.rmtree(ray_dir, ignore_errors=True)


@pytest.mark.timeout(300)
def test_the_benchmark_ships_a_big_file_in_chunks_and_measures_the_driver(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT), "RAY_TMPDIR": tempfile.mkdtemp(prefix="jbray")}
    env.pop("RAY_ADDRESS", None)
    try:
        done = subprocess.run([sys.executable, str(ROOT / "scripts" / "benchmark_scale.py"), "--only-big",
                               "--big", "96MiB"], capture_output=True, text=True, env=env, timeout=280)
        assert done.returncode == 0, done.stderr[-2000:]
        assert "0.0938 GiB data file" in done.stdout, done.stdout
        found = re.search(r"the Ray driver (\d+) \+ (\d+) MiB .* its worker (\d+) \+ (\d+) MiB", done.stdout)
        assert found and all(int(mib) > 0 for mib in found.groups()), done.stdout  # own and shared, both
        assert not list(Path(env["RAY_TMPDIR"]).rglob("session_*"))
    finally:
        for pid in processes_with(env["RAY_TMPDIR"]):
            os.kill(pid, signal.SIGKILL)
        shutil.rmtree(env["RAY_TMPDIR"], ignore_errors=True)
