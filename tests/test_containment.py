"""Containment: hostile notebooks verified from a snapshot cannot reach the user's machine.

A snapshot is built here whose notebooks try what a hostile author would: read every
visible ``/proc/*/environ`` for a secret set in verify's environment, write to ``$HOME``,
``/tmp``, the snapshot and another case, connect to a TCP server on 127.0.0.1, leave a
``setsid`` child and a double-forked one, allocate past the memory limit, run too many
processes, print a gigabyte. An attempt that works raises ``LeakError`` inside the notebook,
so the verdict says so; the test checks the same from outside (hashes of the snapshot and
of a fake HOME, the server's connections, ``ps``, verify's own peak memory).
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import nbformat
import pytest
from processes import process_mark  # tests/ is on sys.path under pytest
from snapshot_files import edit_cell, tree_digest

from junobench.data.checkout import checkout
from junobench.envs.sandbox import Sandbox, bwrap_problem
from junobench.verify.runner import replay, run_sync

pytest.importorskip("nbclient", reason="verify needs the run extra")
pytestmark = [pytest.mark.kernel,
              pytest.mark.skipif(bwrap_problem() is not None, reason=f"no bubblewrap sandbox: {bwrap_problem()}")]

SECRET = "hf_containment_secret_6ad1f0"
MARK = process_mark("987650")  # in the command line of every process a notebook tries to leave behind
#: The same for the cancelled runs, one per executor: no mark holds another, as the local and
#: the Ray runs (tests/test_containment_ray.py) may run at the same time.
CANCEL_MARKS = {"local": process_mark("987663"), "ray": process_mark("987664")}

ATTACKS = '''
import glob, os, socket, subprocess, sys, time
class LeakError(Exception):
    pass
for path in glob.glob("/proc/*/environ") + glob.glob("/proc/*/task/*/environ"):
    try:
        text = open(path, "rb").read()
    except OSError:
        continue
    if b"{secret}" in text:
        raise LeakError("read the secret in " + path)
for path in ["{home}/stolen", os.path.expanduser("~") + "/.bashrc-x", "{outside}",
             "{snapshot}/benchmark/{other}/planted.py", "{snapshot}/benchmark/{case}/planted.py",
             "{snapshot}/benchmark_desc.xlsx"]:
    try:
        with open(path, "a") as out:
            out.write("planted")
    except OSError:
        continue
    if not path.startswith("/tmp/home"):
        raise LeakError("wrote " + path)
for path in ["{home}/.netrc", "{home}/.cache/huggingface/token"]:
    try:
        open(path).read()
    except OSError:
        continue
    raise LeakError("read " + path)
try:
    socket.create_connection(("127.0.0.1", {port}), timeout=3).close()
except OSError:
    pass
else:
    raise LeakError("connected to 127.0.0.1:{port}")
subprocess.Popen(["setsid", "sh", "-c", "sleep {mark}1"], start_new_session=True)
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        os.execvp("sleep", ["sleep", "{mark}2"])
    os._exit(0)
time.sleep(0.5)
'''

PRINT_GIGABYTE = '''
chunk = "x" * (1 << 20) + "\\n"
for _ in range(1024):
    print(chunk, end="")
'''

ALLOCATE = '''
hog = []
for _ in range(64):
    hog.append(bytearray(64 << 20))
'''

FORK_BOMB = '''
import os, time
for _ in range(400):
    try:
        if os.fork() == 0:
            time.sleep(30)
            os._exit(0)
    except OSError:
        pass
'''


def _source(snapshot: Path, case_id: str, version: str, index: int) -> str:
    path = snapshot / "benchmark" / case_id / f"{case_id}_{version}.ipynb"
    cells = [c for c in nbformat.read(path, as_version=4).cells if c.cell_type == "code"]
    return str(cells[index].source)


@pytest.fixture
def listener():
    """A TCP server on 127.0.0.1 counting the connections it accepts."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    server.settimeout(0.2)
    accepted: list[object] = []
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except OSError:
                continue
            accepted.append(conn)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield server.getsockname()[1], accepted
    stop.set()
    thread.join()
    server.close()


def _leftovers(mark: str = MARK) -> list[str]:
    ps = subprocess.run(["ps", "-eo", "pid,args"], capture_output=True, text=True, check=True).stdout
    return [line for line in ps.splitlines() if mark in line and "ps -eo" not in line]


def test_hostile_notebooks_are_contained(tmp_path, listener):
    port, accepted = listener
    snapshot = checkout(["NBspecific_2", "pandas_2"], "sample", tmp_path / "snap")
    home = tmp_path / "home"
    (home / ".cache" / "huggingface").mkdir(parents=True)
    (home / ".cache" / "huggingface" / "token").write_text(SECRET)
    (home / ".netrc").write_text(f"machine example.org password {SECRET}\n")
    outside = tmp_path / "outside.txt"
    attacks = ATTACKS.format(secret=SECRET, home=home, outside=outside, snapshot=snapshot, other="pandas_2",
                             case="NBspecific_2", port=port, mark=MARK)
    # NBspecific_2: every attack in both notebooks, a gigabyte printed, then the recorded crash
    for version in ("reproduced", "fixed"):
        first = _source(snapshot, "NBspecific_2", version, 0)
        edit_cell(snapshot, "NBspecific_2", version, 0, attacks + PRINT_GIGABYTE + first)
    # pandas_2: past the memory limit (reproduced), a fork bomb (fixed)
    edit_cell(snapshot, "pandas_2", "reproduced", 0, ALLOCATE + _source(snapshot, "pandas_2", "reproduced", 0))
    edit_cell(snapshot, "pandas_2", "fixed", 0, FORK_BOMB + _source(snapshot, "pandas_2", "fixed", 0))
    before = {"snapshot": tree_digest(snapshot), "home": tree_digest(home)}

    report = tmp_path / "report.json"
    measure = (
        # VmHWM: the peak of this process's own memory since it started Python (ru_maxrss
        # would count the memory of the test process it was forked from before the exec)
        "import re, sys\n"
        "from junobench.cli import main\n"
        "code = main(sys.argv[1:])\n"
        "with open('/proc/self/status') as status:\n"
        "    peak = re.search(r'VmHWM:\\s+(\\d+)', status.read()).group(1)\n"
        "print('maxrss', peak, file=sys.stderr)\n"
        "sys.exit(code)\n")
    env = {**os.environ, "HOME": str(home), "HF_TOKEN": SECRET, "MY_SECRET_VALUE": SECRET,
           "XDG_CACHE_HOME": str(tmp_path / "cache")}  # junobench's own cache (matplotlib's font list)
    done = subprocess.run(
        [sys.executable, "-c", measure, "verify", "--source", str(snapshot), "--jobs", "2", "--no-progress",
         "--report", str(report), "--memory", "1GiB", "--max-processes", "64", "--timeout", "120"],
        capture_output=True, text=True, env=env, timeout=600, check=False)
    assert done.returncode == 1, done.stderr[-3000:]
    cases = json.loads(report.read_text())["cases"]

    contained = cases["NBspecific_2"]
    assert contained["status"] == "passed", contained
    assert contained["reproduced"]["exception"] == "KeyError"
    assert contained["sandbox"] == "bwrap, network off"

    hog = cases["pandas_2"]
    assert hog["status"] == "out of memory", hog
    assert hog["reproduced"]["reason"].startswith("out of memory"), hog
    # the bomb: forks refused by the process limit (the cell goes on), or the notebook ended
    fixed = hog["fixed"]
    assert fixed["ok"] or fixed["reason"].startswith("too many processes"), fixed

    assert tree_digest(snapshot) == before["snapshot"], "a notebook changed the snapshot"
    assert tree_digest(home) == before["home"], "a notebook changed HOME"
    assert not outside.exists()
    assert not accepted, "a notebook connected to 127.0.0.1"
    time.sleep(0.5)
    assert _leftovers() == [], "processes outlived verify"
    rss = int(done.stderr.rsplit("maxrss", 1)[1].split()[0]) * 1024  # kilobytes on Linux
    print(f"verify's peak RSS: {rss >> 20} MiB")  # shown with -s
    assert rss < 500 << 20, f"verify itself peaked at {rss >> 20} MiB"


def test_the_output_kept_of_a_cell_is_bounded_and_marked(tmp_path):
    notebook = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_code_cell("import sys\nfor _ in range(400):\n    print('y' * 100_000)\n    sys.stdout.flush()"),
        nbformat.v4.new_code_cell("print('after')"),
    ])
    from junobench.data.notebook import Step

    log = run_sync(replay(notebook, [Step(0, 1), Step(1, 2)], cwd=tmp_path, timeout=120,
                          sandbox=Sandbox(max_output=2 << 20)))
    assert [s.status for s in log.steps] == ["ok", "ok"], log
    outputs = notebook.cells[0].outputs
    kept = sum(len(o.get("text", "")) for o in outputs)
    assert kept < (2 << 20) + (1 << 20) + 200
    assert "output cut" in outputs[-1]["text"] or any("output cut" in o.get("text", "") for o in outputs)
    assert "".join(o.get("text", "") for o in notebook.cells[1].outputs) == "after\n"  # a fresh budget
    assert log.sandbox == "bwrap, network off"


def test_a_message_too_large_is_refused_marked_and_the_next_cell_still_heard(tmp_path):
    from junobench.data.notebook import Step

    notebook = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_code_cell("print('z' * (8 << 20))"),  # one message of 8 MiB
        nbformat.v4.new_code_cell("print('after')\n1 / 0"),
    ])
    log = run_sync(replay(notebook, [Step(0, 1), Step(1, 2)], cwd=tmp_path, timeout=120,
                          sandbox=Sandbox(max_output=1 << 20)))
    assert [s.status for s in log.steps] == ["ok", "error"] and log.steps[1].ename == "ZeroDivisionError"
    assert [o["text"] for o in notebook.cells[0].outputs] == [
        "[junobench: output cut: a message larger than 1 MiB was refused]\n"]
    assert "".join(o.get("text", "") for o in notebook.cells[1].outputs) == "after\n"
    assert notebook.cells[1].outputs[-1]["ename"] == "ZeroDivisionError"


def test_network_on_reaches_the_loopback_and_the_report_says_so(tmp_path, listener):
    port, accepted = listener
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(
        f"import socket\nsocket.create_connection(('127.0.0.1', {port}), timeout=5).close()")])
    from junobench.data.notebook import Step

    off = run_sync(replay(notebook, [Step(0, 1)], cwd=tmp_path, timeout=60, sandbox=Sandbox()))
    assert off.steps[0].status == "error" and off.steps[0].ename == "ConnectionRefusedError"
    on = run_sync(replay(notebook, [Step(0, 1)], cwd=tmp_path, timeout=60, sandbox=Sandbox(network=True)))
    assert on.steps[0].status == "ok" and on.sandbox == "bwrap, network on"
    deadline = time.monotonic() + 5
    while not accepted and time.monotonic() < deadline:
        time.sleep(0.05)
    assert len(accepted) == 1


def test_cancelling_a_sandboxed_run_leaves_no_process(tmp_path):
    check_cancelled_run("local", tmp_path)


def check_cancelled_run(executor: str, tmp_path: Path) -> None:
    """Two sandboxed notebooks that loop, each with a child of its own, on ``executor``,
    cancelled as Ctrl-C does once both run: no process of theirs is left (the Ray run:
    tests/test_containment_ray.py)."""
    import asyncio

    from junobench.data.notebook import Step
    from junobench.verify import make_executor
    from junobench.verify.executor import Place, ReplayTask, run_tasks

    mark = CANCEL_MARKS[executor]
    tasks = []
    for i in range(2):
        folder = tmp_path / f"case{i}"
        folder.mkdir()
        source = f"import subprocess, time\nsubprocess.Popen(['sleep', '{mark}{i}'], start_new_session=True)\n" \
                 "while True: time.sleep(0.1)"
        nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(source)]), folder / "nb.ipynb")
        tasks.append(ReplayTask(f"t{i}", "case/nb.ipynb", (Step(0, 1),), "case", (Place(str(folder), "case"),), 120))

    def started(run: asyncio.Future) -> bool:
        """Whether both notebooks' children showed while the run went on (a state, not a clock)."""
        while not run.done():
            if len(_leftovers(mark)) >= 2:
                return True
            time.sleep(0.2)
        return False

    async def main() -> bool:
        run = asyncio.ensure_future(run_tasks(make_executor(executor, jobs=2), tasks))
        both = await asyncio.to_thread(started, run)
        run.cancel()  # what Ctrl-C does
        with pytest.raises(asyncio.CancelledError):
            await run
        return both

    assert run_sync(main()), "the notebooks' children never showed"
    deadline = time.monotonic() + 20
    while _leftovers(mark) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _leftovers(mark) == [], "a sandboxed process outlived the cancelled run"


def test_sandbox_none_and_network_show_in_the_report(tmp_path, capsys):
    from junobench.cli import main

    report = tmp_path / "r.json"
    code = main(["verify", "NBspecific_2", "--source", "sample", "--sandbox", "none", "--network", "--no-progress",
                 "--report", str(report)])
    err = capsys.readouterr().err
    assert code == 0, err
    assert err.count("warning: --sandbox none") == 1
    saved = json.loads(report.read_text())
    assert saved["cases"]["NBspecific_2"]["sandbox"] == "none, network on"
    assert saved["environment"]["sandbox"]["kind"] == "none" and saved["environment"]["sandbox"]["network"]
    code = main(["verify", "NBspecific_2", "--source", "sample", "--network", "--no-progress", "--format", "json"])
    out = capsys.readouterr().out
    assert code == 0 and json.loads(out)["cases"]["NBspecific_2"]["sandbox"] == "bwrap, network on"
