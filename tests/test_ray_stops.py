"""A Ray run stopped at each stage — joining a cluster, starting its own instance, running,
writing — or unable to join, through the command line as a user runs it: it ends in
seconds with one clear line, one whole JSON document (every case: done, interrupted or
not run) and the report of what finished, and leaves no process, Ray session folder,
worker folder, kernel file or driver log behind; junobench killed outright, its Ray
driver ends itself. A frozen worker is noticed by its heartbeat and its notebook retried."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from processes import alive, gone, parent_of, processes_with
from snapshot_files import edit_cell
from test_signals import _run, stop, wait_for

from junobench.data.checkout import checkout
from junobench.envs.sandbox import Sandbox
from junobench.verify import verify
from junobench.verify.ray_driver import END_LIMIT

pytest.importorskip("nbclient", reason="verify needs the run extra")
pytest.importorskip("ray", reason="the Ray executor needs the ray extra")
pytestmark = [pytest.mark.kernel, pytest.mark.slow, pytest.mark.ray, pytest.mark.timeout(300)]

HANG = "import os, pathlib, time\npathlib.Path({marker!r}).write_text(str(os.getpid()))\ntime.sleep(300)\n"


@pytest.fixture
def places(tmp_path: Path) -> Iterator[dict[str, Path]]:
    """A Ray temp folder (short: Ray's socket paths must fit) and a TMPDIR of the run's own;
    what still runs from the Ray folder afterwards is killed."""
    ray_dir = Path(tempfile.mkdtemp(prefix="jbray"))
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    yield {"ray": ray_dir, "tmp": scratch}
    for pid in processes_with(str(ray_dir)):
        os.kill(pid, signal.SIGKILL)
    shutil.rmtree(ray_dir, ignore_errors=True)


def own_instance(places: dict[str, Path]) -> dict[str, str]:
    """The environment of a run that starts its own Ray instance there."""
    return {"RAY_TMPDIR": str(places["ray"]), "TMPDIR": str(places["tmp"]), "RAY_ADDRESS": ""}


def until(predicate, seconds: float = 15) -> bool:
    """Whether ``predicate()`` holds within ``seconds`` (what is ending may take a moment)."""
    deadline = time.monotonic() + seconds
    while not predicate():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


def drivers_of(pid: int) -> list[int]:
    """The Ray driver of junobench's process ``pid``, and any process forked from it (which
    has the driver's command line until it runs another program)."""
    return [p for p in processes_with("junobench.verify.ray_driver") if Path(f"/proc/{p}/cmdline").exists()
            and Path(f"/proc/{p}/cmdline").read_bytes().split(b"\0")[-2:-1] == [str(pid).encode()]]


def driver_of(pid: int) -> int | None:
    """The Ray driver junobench's process ``pid`` started (its child), or None."""
    children = []
    for found in drivers_of(pid):
        try:
            if parent_of(found) == pid:
                children.append(found)
        except OSError:  # ended meanwhile
            continue
    return children[0] if len(children) == 1 else None


def left_behind(run: subprocess.Popen[str], places: dict[str, Path]) -> dict[str, list[str]]:
    """What a run left: its driver, processes of its Ray instance, session folders, files in
    its TMPDIR (worker folders and their kernel files, the driver's log)."""
    # as long as a driver may take to end what it started (END_LIMIT: an orphaned driver lets
    # ray.init finish before it stops the instance, which takes longer on a loaded machine)
    until(lambda: not drivers_of(run.pid) and not processes_with(str(places["ray"])), END_LIMIT + 15)
    found = {"driver": [str(p) for p in drivers_of(run.pid)],
             "instance": [str(p) for p in processes_with(str(places["ray"]))],
             "sessions": [str(p) for p in places["ray"].rglob("session_*")],
             "tmp": [p.name for p in places["tmp"].iterdir()]}
    return {what: items for what, items in found.items() if items}


@contextlib.contextmanager
def refusing_port() -> Iterator[int]:
    """A port where connections are refused: bound by this process and not listening, so
    that nothing else takes it meanwhile (a port closed again may be anyone's)."""
    with socket.socket() as bound:
        bound.bind(("", 0))
        yield bound.getsockname()[1]


def one_line(err: str, start: str) -> str:
    lines = [line for line in err.splitlines() if line.startswith(("error:", "interrupted"))]
    assert len(lines) == 1 and lines[0].startswith(start), err
    assert "Future exception" not in err and "Traceback" not in err, err
    return lines[0]


def states(out: str) -> dict[str, str]:
    document = json.loads(out)
    return {case: entry["status"] for case, entry in document["cases"].items()}


def test_an_address_that_is_no_cluster_or_hangs_ends_in_seconds_with_one_line(places):
    """Refused: one line saying so, at once. A listener that never answers: the probe
    bounds the wait, and SIGTERM meanwhile ends the run in seconds."""
    env = own_instance(places)
    with refusing_port() as port:
        run = _run("verify", "pandas_1", "pandas_2", "--source", "sample", "--executor", "ray", "--format", "json",
                   "--ray-address", f"127.0.0.1:{port}", "--no-progress", env=env)
        out, err = run.communicate(timeout=120)
        assert run.returncode == 1, err
        assert "connection refused" in one_line(err, f"error: 127.0.0.1:{port}")
        assert states(out) == {"pandas_1": "not run", "pandas_2": "not run"}
        assert "connection refused" in json.loads(out)["stopped"]
        assert left_behind(run, places) == {}
        # runtime-info's document likewise: every notebook of the cases, not run
        run = _run("runtime-info", "pandas_1", "--source", "sample", "--executor", "ray", "--format", "json",
                   "--ray-address", f"127.0.0.1:{port}", "--out", str(places["tmp"].parent / "r.jsonl"),
                   "--no-progress", env=env)
        out, err = run.communicate(timeout=120)
    assert run.returncode == 1 and "connection refused" in one_line(err, f"error: 127.0.0.1:{port}"), err
    document = json.loads(out)
    assert {key: value["status"] for key, value in document["notebooks"].items()} == {
        "pandas_1_reproduced": "not run", "pandas_1_fixed": "not run"}
    assert "connection refused" in document["stopped"]
    assert left_behind(run, places) == {}

    with socket.create_server(("", 0)) as silent:  # Ray takes 127.0.0.1 for this host's address
        silent.settimeout(0.05)
        run = _run("verify", "pandas_1", "--source", "sample", "--executor", "ray", "--format", "json",
                   "--ray-address", f"127.0.0.1:{silent.getsockname()[1]}", "--no-progress", env=env)
        knocks: list[socket.socket] = []

        def knocked() -> bool:
            try:
                knocks.append(silent.accept()[0])
            except TimeoutError:
                return False
            return True

        wait_for(knocked, run)  # the driver is joining: the probe waits for an answer
        out, err, took = stop(run, signal.SIGTERM)
    assert run.returncode == 143 and took < 40, (took, err)
    one_line(err, "interrupted by SIGTERM (0 of 1 cases done")
    assert states(out) == {"pandas_1": "not run"}
    assert left_behind(run, places) == {}


def test_a_cluster_that_wants_a_token_or_runs_other_versions_or_no_ray_is_one_line(ray_cluster, monkeypatch):
    """Each within seconds, before ray.init: what answers is not Ray, wants a token this
    process does not send, or runs another Ray than this one."""
    from ray.experimental import internal_kv

    from junobench.errors import JunoBenchError
    from junobench.verify.executor import run_tasks
    from junobench.verify.ray_executor import RayExecutor
    from junobench.verify.ray_probe import probe
    from junobench.verify.runner import run_sync

    address = ray_cluster.get_runtime_context().gcs_address
    with socket.create_server(("", 0)) as web:  # answers as a web server does
        def answer() -> None:
            with contextlib.suppress(OSError):  # closed at the end
                while True:
                    web.accept()[0].sendall(b"HTTP/1.1 400 Bad Request\r\n\r\n")

        threading.Thread(target=answer, daemon=True).start()
        with pytest.raises(JunoBenchError, match=r"not a Ray cluster \(it answers 'HTTP/1.1 400 Bad Request', not"):
            probe(f"127.0.0.1:{web.getsockname()[1]}")
    from ray._common.usage.usage_constants import CLUSTER_METADATA_KEY as key

    namespace = b"cluster"
    metadata = internal_kv._internal_kv_get(key, namespace=namespace)
    internal_kv._internal_kv_put(key, json.dumps({**json.loads(metadata), "ray_version": "2.0.0"}), overwrite=True,
                                 namespace=namespace)
    try:
        with pytest.raises(JunoBenchError, match=r"version mismatch: the cluster runs Ray 2\.0\.0 on Python "
                           r"3\.\d+\.\d+, this machine Ray 2\.\d+"):
            probe(address)
    finally:
        internal_kv._internal_kv_put(key, metadata, overwrite=True, namespace=namespace)
    monkeypatch.setenv("RAY_AUTH_MODE", "disabled")  # the driver sends no token; the cluster wants one
    monkeypatch.setattr("junobench.verify.ray_executor.PROGRESS_AFTER", 0.1)  # less than the driver's start
    executor, lines = RayExecutor(address=address), []
    executor.notify = lines.append
    started = time.monotonic()
    with pytest.raises(JunoBenchError, match=r"the cluster requires token authentication \(auth required\)"):
        run_sync(run_tasks(executor, []))
    assert time.monotonic() - started < 30
    assert lines and all(re.fullmatch(r"ray: [a-z].* \(\d+ s so far\)", line) for line in lines), lines


def test_stopped_while_it_starts_its_own_instance(places):
    """SIGHUP while Ray starts the instance junobench asked for: the half-started instance
    ends. junobench killed outright at that moment: its driver ends the instance itself."""
    env = own_instance(places)
    for signum in (signal.SIGHUP, signal.SIGKILL):
        run = _run("verify", "pandas_1", "--source", "sample", "--executor", "ray", "--format", "json",
                   "--no-progress", env=env)
        wait_for(lambda: any(places["ray"].rglob("session_*")), run)  # ray.init is starting it
        if signum == signal.SIGKILL:
            run.kill()
            run.communicate()
        else:
            out, err, took = stop(run, signum)
            assert run.returncode == 129 and took < 40, (took, err)
            one_line(err, "interrupted by SIGHUP")
            assert states(out) == {"pandas_1": "not run"}
        assert left_behind(run, places) == {}, signum


def test_a_driver_held_while_it_starts_its_instance_is_killed_when_the_run_is_stopped(places):
    """Ray holds the driver's interpreter while it waits for a new instance's head (up to
    30 s when that head was killed under it): stopped meanwhile, junobench does not wait for
    such a driver past a short grace; it kills it, whose instance ends with it, and removes
    the session folder Ray named after it and the driver's log."""
    run = _run("verify", "pandas_1", "--source", "sample", "--executor", "ray", "--format", "json",
               "--no-progress", env=own_instance(places))
    wait_for(lambda: any(places["ray"].rglob("session_*")) and driver_of(run.pid) is not None, run)
    driver = driver_of(run.pid)
    assert driver is not None
    os.kill(driver, signal.SIGSTOP)  # as Ray holds it: alive, and deaf to junobench
    out, err, took = stop(run, signal.SIGTERM)
    assert run.returncode == 143 and took < 40, (took, err)  # a hang guard: the grace is 10 s
    one_line(err, "interrupted by SIGTERM (0 of 1 cases done")
    assert states(out) == {"pandas_1": "not run"}
    assert gone(driver)
    assert left_behind(run, places) == {}


def test_sigterm_mid_run_on_its_own_instance_and_junobench_killed_on_a_joined_one(places, tmp_path, ray_cluster):
    snap = checkout(["NBspecific_2", "pandas_1", "pandas_2"], "sample", tmp_path / "snap")
    marker = tmp_path / "kernel.pid"
    edit_cell(snap, "pandas_1", "reproduced", 0, HANG.format(marker=str(marker)) + "import pandas as pd")
    report = tmp_path / "r.json"
    # its own instance, one job: NBspecific_2 done, pandas_1 running, pandas_2 not reached
    run = _run("verify", "--source", str(snap), "--executor", "ray", "--jobs", "1", "--format", "json",
               "--report", str(report), "--no-progress", "--sandbox", "none", env=own_instance(places))
    wait_for(lambda: marker.exists() and marker.read_text().strip(), run)
    kernel = int(marker.read_text())
    out, err, took = stop(run, signal.SIGTERM)
    assert run.returncode == 143 and took < 40, (took, err)
    one_line(err, "interrupted by SIGTERM (1 of 3 cases done")
    assert states(out) == {"NBspecific_2": "passed", "pandas_1": "interrupted", "pandas_2": "not run"}
    assert json.loads(report.read_text()) == json.loads(out)
    assert gone(kernel)
    assert left_behind(run, places) == {}

    # junobench killed outright while a notebook runs on a cluster it joined (the suite's):
    # its driver ends itself, and its workers their kernels and folders; the cluster lives on
    marker.unlink()
    env = {"RAY_ADDRESS": ray_cluster.get_runtime_context().gcs_address, "TMPDIR": str(places["tmp"])}
    run = _run("verify", "--source", str(snap), "pandas_1", "--executor", "ray", "--no-progress",
               "--sandbox", "none", env=env)
    wait_for(lambda: marker.exists() and marker.read_text().strip(), run)
    kernel = int(marker.read_text())
    worker = parent_of(kernel)
    driver = driver_of(run.pid)
    assert driver is not None
    run.kill()
    run.communicate()
    assert gone(driver) and gone(kernel) and gone(worker), "the driver, its kernel or its worker outlived junobench"
    assert not list(Path(tempfile.gettempdir()).glob(f"junobench-worker-{worker}-*")), "a worker folder was left"
    assert left_behind(run, places) == {}  # the driver's log too
    assert ray_cluster.cluster_resources().get("CPU") == 2


def test_sigterm_while_the_verdicts_are_written_waits_for_the_whole_document(places, ray_cluster, tmp_path):
    """The run is over and junobench is writing its JSON document to a pipe nobody reads
    yet: SIGTERM then stops it only once the document is whole."""
    read, write = os.pipe()
    os.write(write, b"x" * _fill(write))  # the pipe is full: the document's first write waits
    env = {"RAY_ADDRESS": ray_cluster.get_runtime_context().gcs_address, "TMPDIR": str(places["tmp"])}
    report = tmp_path / "r.json"
    run = subprocess.Popen([sys.executable, "-m", "junobench", "verify", "NBspecific_2", "--source", "sample",
                            "--executor", "ray", "--format", "json", "--report", str(report), "--no-progress"],
                           stdout=write, stderr=subprocess.PIPE, text=True, env={**os.environ, **env})
    os.close(write)
    wait_for(lambda: _writing(run.pid), run)
    run.send_signal(signal.SIGTERM)
    assert until(lambda: _writing(run.pid) or run.poll() is not None, 5)
    with os.fdopen(read, "rb") as pipe:
        data = pipe.read()
    err = run.stderr.read()
    run.wait(30)
    assert run.returncode == 143, err
    document = json.loads(data.lstrip(b"x"))
    assert document == json.loads(report.read_text()) and document["cases"]["NBspecific_2"]["status"] == "passed"
    one_line(err, "interrupted by SIGTERM")
    assert left_behind(run, places) == {}


def _fill(fd: int) -> int:
    """Shrink the pipe at ``fd`` to one page; its size."""
    import fcntl

    return fcntl.fcntl(fd, 1031, 4096)  # F_SETPIPE_SZ


def _writing(pid: int) -> bool:
    """Whether process ``pid`` waits to write to a full pipe."""
    try:
        return "pipe_write" in Path(f"/proc/{pid}/wchan").read_text()
    except OSError:
        return False


def test_mine_on_ray_refused_stopped_while_starting_or_done_leaves_nothing(places, tmp_path):
    """mine --executor ray joins as verify's driver does, from junobench's own process: an
    address that refuses is one line in seconds; SIGTERM while Ray starts its instance ends
    it once started (junobench's handler, not Ray's); a whole run removes its instance's
    session folder."""
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    shutil.copy(checkout(["pandas_1"], "sample", tmp_path / "snap") / "benchmark/pandas_1/pandas_1.ipynb", corpus)
    env = own_instance(places)
    mined = tmp_path / "mined"
    with refusing_port() as port:
        run = _run("mine", str(corpus), "--out", str(mined), "--executor", "ray", "--ray-address",
                   f"127.0.0.1:{port}", "--no-progress", env=env)
        _, err = run.communicate(timeout=120)
    assert run.returncode == 1 and "connection refused" in one_line(err, f"error: 127.0.0.1:{port}"), err
    run = _run("mine", str(corpus), "--out", str(mined), "--executor", "ray", "--no-progress", env=env)
    wait_for(lambda: any(places["ray"].rglob("session_*")), run)  # ray.init is starting it
    # Ray's start is let finish, then stopped: a hang guard past a start on a loaded machine
    _, err, took = stop(run, signal.SIGTERM, seconds=120)
    assert run.returncode == 143 and took < 90, (took, err)
    one_line(err, "interrupted by SIGTERM")
    assert left_behind(run, places) == {} and not mined.exists()
    run = _run("mine", str(corpus), "--out", str(mined), "--executor", "ray", "--no-progress", env=env)
    _, err = run.communicate(timeout=240)
    assert run.returncode == 0 and "wrote 1 notebooks" in err, err
    assert left_behind(run, places) == {}


def test_sigterm_once_ray_runs_in_the_process_is_still_junobench_s(places):
    """Ray's C++ core takes SIGTERM over in a process that starts it (a stack dump, then
    abort): junobench imports Ray without that handler, so a stop signal that comes while
    ``ray.init`` runs in a thread (as junobench's driver runs it) reaches junobench's own."""
    code = ("import os, signal, sys, threading\n"
            "from junobench.verify.ray_driver import require_ray\n"
            "ray = require_ray()\n"
            "signal.signal(signal.SIGTERM, lambda *_: os._exit(42))\n"
            "def init():\n"
            "    ray.init(include_dashboard=False, log_to_driver=False)\n"
            "    print('started', flush=True)\n"
            "    threading.Event().wait()\n"
            "threading.Thread(target=init, daemon=True).start()\n"
            "threading.Event().wait()\n")
    run = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           env={**os.environ, **own_instance(places)})
    try:
        assert run.stdout.readline() == "started\n", run.stderr.read()
        run.send_signal(signal.SIGTERM)
        _, err = run.communicate(timeout=60)
    finally:
        if run.poll() is None:
            run.kill()
    assert run.returncode == 42 and "SIGTERM received" not in err, (run.returncode, err[-2000:])


def test_a_frozen_worker_is_noticed_by_its_heartbeat_and_its_notebook_retried(ray_cluster, tmp_path):
    from junobench.verify.ray_executor import RayExecutor

    snap = checkout(["pandas_1"], "sample", tmp_path / "snap")
    marker = tmp_path / "kernel.pid"
    edit_cell(snap, "pandas_1", "reproduced", 0,
              f"import os, pathlib, time\nmarker = pathlib.Path({str(marker)!r})\nfirst = not marker.exists()\n"
              "marker.write_text(str(os.getpid()))\nif first:\n    time.sleep(240)\nimport numpy as np\n"
              "import pandas as pd")
    frozen: list[tuple[int, float, int, float]] = []

    def freeze_the_first_worker() -> None:
        while not (marker.exists() and marker.read_text()):
            time.sleep(0.1)
        kernel = int(marker.read_text())
        worker = parent_of(kernel)
        os.kill(worker, signal.SIGSTOP)  # alive, and silent
        since = time.monotonic()
        while marker.read_text() in ("", str(kernel)):  # until the second attempt's kernel starts
            time.sleep(0.1)
        again = int(marker.read_text())
        frozen.append((worker, since, parent_of(again) if alive(again) else -1, time.monotonic()))

    freezer = threading.Thread(target=freeze_the_first_worker, daemon=True)
    freezer.start()
    liveness = 6.0
    unconfined = Sandbox("none")  # the notebook writes its marker outside its copy
    remote = verify(source=snap, executor=RayExecutor(retries=1, liveness=liveness), progress=False,
                    sandbox=unconfined)
    freezer.join()
    ((worker, since, elsewhere, retried),) = frozen
    assert gone(worker), "the frozen worker was left"
    assert elsewhere != worker  # the retry ran on another worker
    case = remote["pandas_1"]
    assert case.attempts["reproduced"] == 2, case.reproduced.reason
    (fault,) = case.faults["reproduced"]
    assert fault == f"attempt 1: the worker stopped answering for {liveness:.0f} s (frozen or starved; it was stopped)"
    assert retried - since < 120  # the heartbeat ended the attempt, not the notebook's 240 s
    local = verify(source=snap, progress=False, sandbox=unconfined, jobs=1)
    assert [(c.status, c.reproduced, c.fixed) for c in remote] == [(c.status, c.reproduced, c.fixed) for c in local]


def test_a_worker_whose_driver_stops_pinging_ends_itself_and_its_kernels(tmp_path):
    """Where Ray cannot end a worker (its head lost with the driver), the worker does: not
    pinged for ``orphaned`` seconds, it kills what it started, removes its folder, ends."""
    code = ("import subprocess, sys, time\n"
            "from junobench.verify.ray_worker import ReplayWorker, worker_root\n"
            "worker = ReplayWorker(None, orphaned=1.0)\n"
            "kernel = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(120)'])\n"
            "print(worker_root(), kernel.pid, flush=True)\n"
            "time.sleep(120)\n")
    run = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True,
                           env={**os.environ, "TMPDIR": str(tmp_path)})
    folder, kernel = run.stdout.readline().split()
    assert Path(folder).is_dir() and Path(folder).parent == tmp_path
    assert run.wait(60) == 1  # on its own, long before its 120 s
    assert gone(int(kernel)) and not Path(folder).exists()


def test_a_driver_that_could_not_start_ends_on_its_own_without_its_log_kept():
    """The driver says why it could not start ("failed"), then ends on its own: heard
    before junobench begins to close it, its end is no failure of its own, and its log
    goes (a race that left junobench-ray-driver-*.log behind on a refused address)."""
    import asyncio

    from junobench.errors import JunoBenchError
    from junobench.verify.ray_executor import RayExecutor

    async def heard_in_that_order() -> RayExecutor:
        executor = RayExecutor()
        loop = asyncio.get_running_loop()
        executor._loop = loop
        executor._ready, executor._closed = loop.create_future(), loop.create_future()
        executor._receive(("failed", JunoBenchError("127.0.0.1:9: connection refused")))
        executor._receive(("gone",))
        return executor

    executor = asyncio.run(heard_in_that_order())
    assert executor._keep_log is False and executor.lost is None and executor._closed.done()
