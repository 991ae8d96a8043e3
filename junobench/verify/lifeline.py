"""Processes that end with their parent, and the processes below one.

junobench's Ray driver (:mod:`.ray_driver`) and each Ray worker (:mod:`.ray_worker`) run in
processes of their own; neither may outlive what it serves. :func:`bind` makes this
process receive a signal when its parent ends: Linux's parent-death signal
(``PR_SET_PDEATHSIG`` through ``prctl``), which the kernel sends the moment the parent
ends, and a thread that looks at the parent every second (other systems, and a parent
that ended before :func:`bind` ran, which the kernel would never signal).
:func:`descendants` and :func:`kill_all` end what a process started (an abandoned Ray
instance, a worker's kernels), by process id.

>>> import subprocess, sys
>>> child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
>>> child.pid in descendants(os.getpid())
True
>>> kill_all([child.pid]); child.wait() != 0
True
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import os
import signal
import sys
import threading
import time
from collections.abc import Iterable
from pathlib import Path

#: ``prctl`` option: the signal this process gets when its parent ends (linux/prctl.h).
PR_SET_PDEATHSIG = 1

#: Seconds between two looks at the parent.
EVERY = 1.0


def bind(parent: int, signum: int = signal.SIGTERM) -> None:
    """Receive ``signum`` when process ``parent`` (this process's parent) ends."""
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
            libc.prctl(PR_SET_PDEATHSIG, int(signum), 0, 0, 0)

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(EVERY)
        os.kill(os.getpid(), signum)

    threading.Thread(target=watch, name="junobench-lifeline", daemon=True).start()


def _parents() -> dict[int, int]:
    """Process id → parent id of every process (Linux ``/proc``; empty elsewhere)."""
    parents: dict[int, int] = {}
    proc = Path("/proc")
    if not proc.is_dir():
        return parents
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            parents[int(entry.name)] = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue  # gone meanwhile
    return parents


def descendants(pid: int) -> list[int]:
    """The processes below ``pid`` (children first, then theirs), Linux."""
    parents = _parents()
    found: list[int] = []
    frontier = {pid}
    while frontier:
        frontier = {child for child, parent in parents.items() if parent in frontier and child not in found}
        found += sorted(frontier)
    return found


def command_line(pid: int) -> str:
    """The command line of ``pid``, its arguments separated by spaces ('' when it is gone)."""
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def kill_all(pids: Iterable[int]) -> None:
    """SIGKILL each of ``pids`` (those already gone are skipped)."""
    for pid in pids:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
