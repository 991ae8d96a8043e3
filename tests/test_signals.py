"""Stopping a verb: SIGTERM and SIGHUP do what Ctrl-C does (schedulers stop jobs with
SIGTERM; a closed terminal sends SIGHUP): children end, what finished is written, a JSON
document is printed whole, and junobench exits with 128 + the signal's number. The Ray
executor under the same signals: tests/test_ray_stops.py."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from processes import alive, descendants, gone
from snapshot_files import edit_cell

from junobench.cli.signals import held, stop_signals
from junobench.data.checkout import checkout

ROOT = Path(__file__).resolve().parent.parent


def test_sigterm_and_sighup_interrupt_as_ctrl_c_and_output_is_held_whole():
    """Whatever handled them before (Ray's handler of SIGTERM, which exits, in a process that
    called ray.init) gives way for the block and comes back after."""
    def as_ray_does(signum: int, frame: object) -> None:
        sys.exit(signum)

    before = signal.signal(signal.SIGTERM, as_ray_does)
    try:
        for signum in (signal.SIGTERM, signal.SIGHUP):
            with pytest.raises(KeyboardInterrupt), stop_signals() as stop:
                os.kill(os.getpid(), signum)
                time.sleep(5)  # never reached: the handler raises at once
            assert stop.signum == signum and stop.code == 128 + signum
        assert signal.getsignal(signal.SIGTERM) is as_ray_does  # given back after
    finally:
        signal.signal(signal.SIGTERM, before)
    # a signal the user ignores (nohup ignores SIGHUP) stays ignored
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    try:
        with stop_signals():
            os.kill(os.getpid(), signal.SIGHUP)
            time.sleep(0.1)
    finally:
        signal.signal(signal.SIGHUP, signal.SIG_DFL)
    # while output is written, a stop waits until it is whole
    written = []
    with pytest.raises(KeyboardInterrupt), stop_signals() as stop, held():
        os.kill(os.getpid(), signal.SIGTERM)
        written.append("the whole document")
    assert written == ["the whole document"] and stop.signum == signal.SIGTERM


def _run(*argv: str, env: dict[str, str] | None = None, cwd: Path | None = None,
         background: bool = False) -> subprocess.Popen[str]:
    """``junobench ARGV…`` in a process of its own; ``background``: as a shell's background
    job (``&``) starts it, SIGINT ignored."""
    return subprocess.Popen([sys.executable, "-m", "junobench", *argv], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, cwd=cwd,
                            env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})},
                            preexec_fn=_ignore_sigint if background else None)


def _ignore_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def wait_for(predicate, process: subprocess.Popen[str], seconds: float = 180) -> None:
    """Until ``predicate()`` holds (the run reached the state a test stops it in). A
    predicate that walks the run's folders may meet one the run removes meanwhile
    (FileNotFoundError): that is "not yet", and it is asked again."""
    deadline = time.monotonic() + seconds
    while not _holds(predicate):
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()
            _, err = process.communicate()
            raise AssertionError(f"the state never came (exit {process.returncode}): {err[-2000:]}")
        time.sleep(0.1)


def _holds(predicate) -> bool:
    try:
        return bool(predicate())
    except FileNotFoundError:
        return False


def stop(process: subprocess.Popen[str], signum: int, seconds: float = 45) -> tuple[str, str, float]:
    """Send ``signum``; stdout, stderr, and the seconds the process took to end."""
    children = descendants(process.pid)
    sent = time.monotonic()
    process.send_signal(signum)
    try:
        out, err = process.communicate(timeout=seconds)
    finally:
        if process.poll() is None:
            process.kill()
    took = time.monotonic() - sent
    assert all(gone(pid, 10) for pid in children), "children outlived junobench"
    return out, err, took


@pytest.mark.kernel
@pytest.mark.slow
@pytest.mark.timeout(300)
def test_sigterm_stops_verify_with_every_case_shown_and_written(tmp_path):
    # one job: NBspecific_2 is done, pandas_1 hangs (interrupted), pandas_2 is never reached
    snap = checkout(["NBspecific_2", "pandas_1", "pandas_2"], "sample", tmp_path / "snap")
    marker = tmp_path / "kernel.pid"
    edit_cell(snap, "pandas_1", "reproduced", 0,
              f"import os, pathlib, time\npathlib.Path({str(marker)!r}).write_text(str(os.getpid()))\n"
              "time.sleep(300)")
    report, scratch = tmp_path / "r.json", tmp_path / "tmp"
    scratch.mkdir()
    run = _run("verify", "--source", str(snap), "--jobs", "1", "--format", "json", "--report", str(report),
               "--no-progress", "--sandbox", "none",  # the kernel writes its pid outside its copy
               env={"TMPDIR": str(scratch)})
    wait_for(lambda: marker.exists() and marker.read_text().strip(), run)
    kernel = int(marker.read_text())
    out, err, took = stop(run, signal.SIGTERM)
    assert run.returncode == 143, err
    assert took < 20, took
    printed = json.loads(out)  # one whole document on stdout
    states = {case: entry["status"] for case, entry in printed["cases"].items()}
    assert states == {"NBspecific_2": "passed", "pandas_1": "interrupted", "pandas_2": "not run"}
    assert printed["stopped"] == "interrupted"
    assert json.loads(report.read_text()) == printed  # what finished is written, the rest says why
    lines = [line for line in err.splitlines() if line.startswith(("interrupted", "error"))]
    assert lines == [f"interrupted by SIGTERM (1 of 3 cases done; {report} holds every case; "
                     "run the same command again to resume)"], err
    assert gone(kernel), "the kernel outlived the run"
    assert not list(scratch.iterdir()), "a case copy or kernel file was left"


def test_a_tool_junobench_runs_ends_with_what_it_started(tmp_path):
    """A tool past its limit, or junobench stopped meanwhile: the tool's whole process
    group goes (uv's builds, pyright's Node.js), not only the tool."""
    from junobench import subprocesses

    started = tmp_path / "child.pid"
    with pytest.raises(subprocess.TimeoutExpired):
        subprocesses.run(["sh", "-c", f"sleep 60 & echo $! > {started}; wait"], timeout=2)
    assert gone(int(started.read_text()), 10), "the tool's child outlived it"
    assert subprocesses.run(["sh", "-c", "echo out; echo err >&2"], capture_output=True).stdout == "out\n"


@pytest.mark.parametrize("kernel_signal", [True, False])
def test_a_bound_process_ends_when_its_parent_is_killed(tmp_path, kernel_signal):
    """junobench's Ray driver binds itself to junobench: killed outright, junobench takes it
    along (Linux's parent-death signal; without it, a look at the parent every second)."""
    child = tmp_path / "child.pid"
    bound = tmp_path / "bound.py"
    bound.write_text("import os, time\nfrom junobench.verify import lifeline\n"
                     + ("" if kernel_signal else "lifeline.PR_SET_PDEATHSIG = 0  # prctl(0, ...) sets nothing\n")
                     + f"lifeline.bind(os.getppid())\nopen({str(child)!r}, 'w').write(str(os.getpid()))\n"
                     "time.sleep(60)\n")
    code = f"import subprocess, sys, time\nsubprocess.Popen([sys.executable, {str(bound)!r}])\ntime.sleep(60)\n"
    parent = subprocess.Popen([sys.executable, "-c", code], env={**os.environ, "PYTHONPATH": str(ROOT)})
    try:
        wait_for(lambda: child.exists() and child.read_text().strip(), parent)
        parent.kill()
        parent.wait()
        assert gone(int(child.read_text()), 10), "the bound process outlived its parent"
    finally:
        if parent.poll() is None:
            parent.kill()


class SilentIndex:
    """A package index that accepts connections and never answers (a hung mirror)."""

    def __enter__(self) -> SilentIndex:
        self.server = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.server.getsockname()[1]}/simple"
        return self

    def asked(self) -> bool:
        self.server.settimeout(0.05)
        try:
            self.connection, _ = self.server.accept()
        except TimeoutError:
            return False
        return True

    def __exit__(self, *exc: object) -> None:
        self.server.close()


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_sighup_stops_env_create_and_its_installer(tmp_path):
    target = tmp_path / "env"
    with SilentIndex() as index:
        run = _run("env", "create", str(target), "NBspecific_2", "--source", "sample", "--no-progress",
                   env={"UV_INDEX_URL": index.url, "UV_DEFAULT_INDEX": index.url, "PIP_INDEX_URL": index.url,
                        "UV_HTTP_TIMEOUT": "300", "PIP_TIMEOUT": "300"})
        wait_for(index.asked, run)  # the installer waits for the index
        installers = descendants(run.pid)
        assert installers, "no installer process"
        out, err, took = stop(run, signal.SIGHUP)
    assert run.returncode == 129, err
    assert took < 20 and out == ""
    assert err.strip().splitlines()[-1] == "interrupted by SIGHUP", err
    assert not [pid for pid in installers if alive(pid)], "the installer outlived junobench"
    assert not target.exists() or not any(target.iterdir()), "a half-made environment was left"


def test_verify_stopped_before_it_knows_its_cases_prints_a_document_of_those_named(capsys):
    """--format json prints one document whatever ends the run: here a case id the snapshot
    lacks, found before anything runs; every case named is in it, not run, with the reason."""
    from junobench.cli import main

    assert main(["verify", "pandas_1", "nosuch_1", "--source", "sample", "--format", "json"]) == 1
    out, err = capsys.readouterr()
    document = json.loads(out)
    assert {case: entry["status"] for case, entry in document["cases"].items()} == {
        "pandas_1": "not run", "nosuch_1": "not run"}
    assert "no case 'nosuch_1'" in document["stopped"]
    assert [line for line in err.splitlines() if line.startswith("error:")] == [f"error: {document['stopped']}"]


def test_the_ray_driver_hears_stop_signals_until_it_has_cleaned_up():
    """The driver's stop signals wake its loop, and keep a handler once the loop has closed:
    a second one (junobench's end is signalled twice: by the kernel, and by the driver's own
    look at its parent) that comes while the driver removes what it started must not kill it
    with the signal's default action (SIGUSR1's is death)."""
    code = textwrap.dedent("""\
        import asyncio, os, signal
        from junobench.verify.ray_driver import ORPHANED, _signals_to

        heard = []

        async def serve():
            loop = asyncio.get_running_loop()
            with _signals_to(loop, heard.append):
                os.kill(os.getpid(), ORPHANED)
                while not heard:
                    await asyncio.sleep(0.01)

        asyncio.run(serve())
        os.kill(os.getpid(), ORPHANED)  # the loop is closed: cleaning up
        os.kill(os.getpid(), signal.SIGTERM)
        print(heard, flush=True)
    """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0 and done.stdout == f"[{int(signal.SIGUSR1)}]\n", (done.returncode, done.stderr)


def test_a_cell_run_cancelled_leaves_no_failing_poll_behind():
    """nbclient's poll of the kernel's life (every second) outlives a cell run cancelled by
    Ctrl-C; once the replay has let go of the kernel client, the poll ends quietly instead
    of failing in a task nobody awaits (a traceback on stderr after `interrupted`)."""
    import asyncio

    import nbformat

    from junobench.verify.client import bounded_client

    client = bounded_client(nbformat.v4.new_notebook(), max_output=0)

    async def poll() -> bool:
        client.task_poll_for_reply = asyncio.get_running_loop().create_future()
        client.kc = None  # the replay let go of it
        await asyncio.wait_for(client._async_poll_kernel_alive(), 30)
        return bool(client.task_poll_for_reply.cancelled())

    assert asyncio.run(poll())
