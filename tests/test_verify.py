"""``verify`` end to end: real kernels on checkouts of the bundled sample."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from cli_run import run_cli
from processes import alive, kernel_sleeping
from snapshot_files import edit_cell, tree_digest  # tests/ is on sys.path under pytest

from junobench.cli import main
from junobench.data.checkout import checkout
from junobench.envs.kernel import KernelPool, kernel_env, own_kernel
from junobench.verify import case_specs, verify, verify_specs
from junobench.verify.executor import LocalExecutor
from junobench.verify.runner import run_sync

pytest.importorskip("nbclient", reason="verify needs the run extra")
pytestmark = pytest.mark.kernel


def test_verify_sample_cases_pass_and_report(tmp_path, capsys):
    report_file = tmp_path / "r.json"
    code = main(["verify", "NBspecific_2", "pandas_2", "--source", "sample", "--jobs", "2",
                 "--report", str(report_file), "--no-progress"])
    out = capsys.readouterr()
    assert code == 0, out
    report = json.loads(report_file.read_text())["cases"]
    assert set(report) == {"NBspecific_2", "pandas_2"}
    for case in report.values():
        assert case["status"] == "passed"
        assert set(case["reproduced"]) == {"ok", "reason", "exception", "cell"}
        assert set(case["fixed"]) == {"ok", "reason"}
        assert case["seconds"] > 0
    assert report["NBspecific_2"]["reproduced"] == {
        "ok": True, "exception": "KeyError", "cell": 4,
        "reason": "crashed at the target (code cell 4) with KeyError, as recorded"}
    assert report["pandas_2"]["reproduced"]["exception"] == "AttributeError"
    assert "passed" in out.out and "2 cases: 2 passed" in out.err


def test_edited_checkout_failures_exit_1_with_the_right_reason(tmp_path, capsys):
    snap = checkout(["pandas_2", "NBspecific_2", "pandas_1"], "sample", tmp_path / "snap")
    # pandas_2: the fixed notebook's target reverted to the crashing call.
    edit_cell(snap, "pandas_2", "fixed", 4, "sales = sales.append(forecast, ignore_index=True)\nsales.tail()")
    # NBspecific_2: the reproduced notebook's target no longer crashes when run twice.
    edit_cell(snap, "NBspecific_2", "reproduced", 4,
              "# [reexecute]\ndf = df.drop(columns='num_outbound_cmds', errors='ignore')\ndf.shape")
    # pandas_1: the reproduced notebook now crashes with another exception.
    edit_cell(snap, "pandas_1", "reproduced", 4, "survival_by_class = df['Pclass'] / 'x'")
    before = tree_digest(snap)

    report_file = tmp_path / "r.json"
    code = main(["verify", "--source", str(snap), "--jobs", "2", "--report", str(report_file),
                 "--no-progress"])
    capsys.readouterr()
    assert code == 1
    report = json.loads(report_file.read_text())["cases"]
    fixed_crash = report["pandas_2"]
    assert fixed_crash["status"] == "failed" and fixed_crash["reproduced"]["ok"]
    assert fixed_crash["fixed"]["reason"].startswith(
        "still crashes: the target (code cell 4) raised AttributeError")
    no_crash = report["NBspecific_2"]
    assert no_crash["status"] == "failed" and no_crash["fixed"]["ok"]
    assert no_crash["reproduced"]["reason"].startswith(
        "no crash: the target (code cell 4) ran without error")
    other = report["pandas_1"]
    assert other["status"] == "failed" and other["reproduced"]["exception"] == "TypeError"
    assert other["reproduced"]["reason"].startswith(
        "different exception at the target (code cell 4): expected KeyError, got TypeError")
    assert tree_digest(snap) == before, "verify modified the snapshot"


def test_endless_cell_times_out_and_leaves_no_kernel(tmp_path):
    snap = checkout(["pandas_2"], "sample", tmp_path / "snap")
    edit_cell(snap, "pandas_2", "reproduced", 0, "while True: pass")
    limit = 4.0
    started = time.perf_counter()
    report = verify(source=snap, jobs=2, timeout=limit, progress=False)
    elapsed = time.perf_counter() - started
    case = report["pandas_2"]
    assert case.status == "timed out" and not report.ok
    assert case.reproduced.reason == f"timed out after {limit:g}s at code cell 0"
    assert case.fixed.ok
    log = case.logs["reproduced"]
    assert log.seconds - log.kernel_seconds < limit + 5
    assert elapsed < limit + 30  # kernel start-ups of both notebooks included
    time.sleep(0.5)
    for version_log in case.logs.values():
        assert version_log.kernel_pid is not None
        assert not alive(version_log.kernel_pid), "a kernel process was left behind"


def _kernels_of(pid: int) -> list[int]:
    """The ipykernel processes whose parent is ``pid``."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        parent = int(stat.rsplit(")", 1)[1].split()[1])
        if parent == pid and b"ipykernel_launcher" in cmdline:
            found.append(int(entry.name))
    return found


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="finds the kernels through /proc")
def test_ctrl_c_stops_the_run_and_kills_every_kernel(tmp_path):
    """Ctrl-C cancels the whole run (exit 130) and no kernel outlives it, with several
    replays running at once."""
    snap = checkout(["pandas_1", "pandas_2"], "sample", tmp_path / "snap")
    for case in ("pandas_1", "pandas_2"):
        edit_cell(snap, case, "reproduced", 0, "import time\ntime.sleep(300)")
    run = subprocess.Popen([sys.executable, "-m", "junobench", "verify", "--source", str(snap),
                            "--jobs", "2", "--no-progress"], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        kernels: list[int] = []
        while time.monotonic() < deadline and len(kernels) < 4:
            time.sleep(0.2)
            kernels = _kernels_of(run.pid)
        # two notebooks running, and a kernel started ahead for each of the other two
        assert len(kernels) == 4, "the kernels did not start"
        while time.monotonic() < deadline and sum(kernel_sleeping(pid) for pid in kernels) < 2:
            time.sleep(0.2)  # until both notebooks are in their sleeping first cell
        assert sum(kernel_sleeping(pid) for pid in kernels) == 2, "the notebooks did not reach their cell"
        run.send_signal(signal.SIGINT)
        _, err = run.communicate(timeout=60)
    finally:
        if run.poll() is None:
            run.kill()
    assert run.returncode == 130, err
    assert "interrupted" in err
    assert not [pid for pid in kernels if alive(pid)]


# --------------------------------------------------------------------------- kernels started ahead


def test_every_notebook_gets_its_own_pooled_kernel_and_none_outlives_the_run():
    from junobench.data.snapshot import sample_path

    specs = case_specs(sample_path(), ["NBspecific_2", "pandas_2", "pandas_1"])
    report = verify_specs(specs, jobs=2, pool=2, progress=False)
    assert report.ok, [c.row() for c in report]
    pids = [log.kernel_pid for case in report for log in case.logs.values()]
    assert len(pids) == 6 and len(set(pids)) == 6 and None not in pids  # never reused
    assert not any(alive(pid) for pid in pids)
    # the first two notebooks waited for the pool's first kernels to start: the wait is
    # counted as time waiting for a kernel (what benchmark_verify.py reports)
    waits = sorted(log.kernel_seconds for case in report for log in case.logs.values())
    assert waits[-1] > 0.2, waits
    # the same verdicts without the pool
    plain = verify_specs(specs, jobs=2, pool=0, progress=False)
    assert [c.row()["reproduced"] for c in plain] == [c.row()["reproduced"] for c in report]


def test_a_closed_pool_kills_the_kernels_nobody_took(tmp_path):
    async def scenario() -> tuple[list[int], list[str]]:
        pool = KernelPool(own_kernel(), size=2, notebooks=3, env=kernel_env())
        kernel = await pool.acquire()  # one taken; two more are starting or ready
        assert os.listdir(kernel.cwd) == []  # an empty working directory of its own
        await asyncio.sleep(0.5)
        waiting = [task for task in pool._starting]
        await kernel.shutdown()
        shutil.rmtree(Path(kernel.cwd).parent)  # the taker removes what it took
        await pool.close()
        started = [t.result() for t in waiting if t.done() and not t.cancelled() and not t.exception()]
        return [k.pid for k in started if k.pid], [k.cwd for k in started]

    pids, folders = run_sync(scenario())
    assert not any(alive(pid) for pid in pids)
    assert not any(os.path.exists(folder) for folder in folders)


def test_a_pooled_kernel_that_died_while_waiting_is_never_handed_out():
    async def scenario() -> tuple[int, int, bool]:
        pool = KernelPool(own_kernel(), size=1, notebooks=2, env=kernel_env())
        first = await pool.acquire()
        waiting = await pool._starting[0]  # the kernel started ahead for the second notebook
        os.kill(waiting.pid, signal.SIGKILL)
        await asyncio.sleep(0.5)
        second = await pool.acquire()
        live = await second.km.is_alive()
        for kernel in (first, second):
            await kernel.shutdown()
            shutil.rmtree(Path(kernel.cwd).parent)  # the taker removes what it took
        await pool.close()
        return waiting.pid, second.pid, live

    dead, handed, live = run_sync(scenario())
    assert handed != dead and live
    assert not alive(handed)


@pytest.mark.timeout(120)
def test_a_kernel_that_never_answers_ends_at_its_deadline_and_is_killed(tmp_path):
    from junobench.envs.kernel import KernelTarget, start_kernel

    mute = tmp_path / "python"
    pid_file = tmp_path / "pid"
    mute.write_text(f"#!/bin/sh\necho $$ > {pid_file}\nexec sleep 600\n")
    mute.chmod(0o755)
    started = time.perf_counter()
    with pytest.raises((TimeoutError, RuntimeError)):
        run_sync(start_kernel(KernelTarget(str(mute)), cwd=tmp_path, env=kernel_env(), timeout=3))
    assert time.perf_counter() - started < 30
    assert not alive(int(pid_file.read_text()))


class Unstartable(LocalExecutor):
    """An executor that fails the test when it is started."""

    async def __aenter__(self) -> LocalExecutor:
        raise AssertionError("an executor was started with nothing to replay")


def test_a_rerun_resumes_from_the_report(tmp_path):
    snap = checkout(["pandas_1", "pandas_2", "NBspecific_2"], "sample", tmp_path / "snap")
    report_file = tmp_path / "r.json"
    first = verify(source=snap, report=report_file, jobs=2, progress=False)
    assert first.ok
    written = json.loads(report_file.read_text())
    # pandas_2 was lost to the infrastructure; NBspecific_2 never reached.
    written["cases"]["pandas_2"]["status"] = "infrastructure error"
    del written["cases"]["NBspecific_2"]
    report_file.write_text(json.dumps(written))
    seen = []
    again = verify(source=snap, report=report_file, jobs=2, progress=False,
                   on_case=lambda c: seen.append(c.case_id))
    assert sorted(seen) == ["NBspecific_2", "pandas_2"]
    assert again.ok and {c.case_id: c.kept for c in again} == {"pandas_1": True, "pandas_2": False,
                                                                "NBspecific_2": False}
    assert "1 kept from the report" in again.summary()
    assert set(json.loads(report_file.read_text())["cases"]) == {"pandas_1", "pandas_2", "NBspecific_2"}

    # A changed notebook is run again; --fresh runs what is asked for though the report has it.
    edit_cell(snap, "pandas_1", "fixed", 0, "import numpy as np\nimport pandas as pd\nx = 1")
    seen.clear()
    verify(source=snap, report=report_file, jobs=2, progress=False, on_case=lambda c: seen.append(c.case_id))
    assert seen == ["pandas_1"]
    seen.clear()
    fresh = verify(["pandas_2"], source=snap, report=report_file, jobs=2, progress=False, resume=False,
                   on_case=lambda c: seen.append(c.case_id))
    assert seen == ["pandas_2"] and not fresh["pandas_2"].kept

    # Every case kept: nothing is started (with Ray, neither a driver nor a cluster).
    kept = verify(["pandas_2"], source=snap, report=report_file, executor=Unstartable(1), progress=False)
    assert kept.ok and kept["pandas_2"].kept


def test_a_report_file_that_is_not_a_report_is_refused(tmp_path, capsys):
    other = tmp_path / "notes.json"
    other.write_text('["not a report"]')
    code, _, err = run_cli(capsys, "verify", "pandas_1", "--source", "sample", "--report", str(other))
    assert code == 1 and "not a verify report" in err
    assert other.read_text() == '["not a report"]'
