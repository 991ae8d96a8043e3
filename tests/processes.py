"""Helpers for tests that check which processes (kernels, workers) are left running."""

from __future__ import annotations

import os
import platform
import time
from pathlib import Path

#: Linux system calls of a sleep (``nanosleep``, ``clock_nanosleep``: ``time.sleep``).
_SLEEP_CALLS = {"x86_64": {35, 230}, "aarch64": {101, 115}}


def process_mark(prefix: str) -> str:
    """A number for the command lines of the processes a test's notebooks start, found by
    ``ps`` afterwards: a six-digit ``prefix`` and this process's id, zero-padded, so that
    marks of equal length never hold one another, whether the other test runs in this
    test run or in another one on the same machine."""
    assert len(prefix) == 6 and prefix.isdigit(), prefix
    return f"{prefix}{os.getpid():08d}"


def alive(pid: int) -> bool:
    """Whether process ``pid`` still runs (a zombie does not: it is no leftover kernel)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    status = Path(f"/proc/{pid}/status")
    return not (status.exists() and "State:\tZ" in status.read_text())


def gone(pid: int, seconds: float = 20) -> bool:
    """Whether process ``pid`` ends within ``seconds``."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not alive(pid):
            return True
        time.sleep(0.2)
    return False


def parent_of(pid: int) -> int:
    """The parent process of ``pid`` (Linux)."""
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])


def descendants(pid: int) -> list[int]:
    """Processes below ``pid``, parents before children (Linux)."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                parents[int(entry.name)] = parent_of(int(entry.name))
            except (OSError, IndexError, ValueError):
                continue  # gone meanwhile
    found, frontier = [], [pid]
    while frontier:
        frontier = sorted(p for p, parent in parents.items() if parent in frontier)
        found += frontier
    return found


def processes_with(text: str, name: str | None = None) -> list[int]:
    """Process ids whose command line holds ``text`` (and whose name is ``name``), Linux."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            command = (entry / "cmdline").read_bytes()
            comm = (entry / "comm").read_text().strip()
        except OSError:
            continue
        if text.encode() in command and (name is None or comm == name):
            found.append(int(entry.name))
    return found


def kernel_sleeping(pid: int, seconds: float = 60) -> bool:
    """Whether the Jupyter kernel of process ``pid`` (itself, or below it inside its
    sandbox) sleeps with its main thread for at least ``seconds`` more: it runs a cell
    such as ``time.sleep(300)``, not a short sleep of its start-up (Linux, read from
    /proc: the system call, and the time it sleeps until)."""
    for process in [pid, *descendants(pid)]:
        try:
            command = Path(f"/proc/{process}/cmdline").read_bytes()
            if b"\0-m\0ipykernel_launcher\0" in command and _sleep_left(process) >= seconds:
                return True
        except (OSError, ValueError, IndexError):
            continue
    return False


def _sleep_left(pid: int) -> float:
    """Seconds process ``pid``'s main thread still sleeps (0 when it does not)."""
    import struct

    fields = Path(f"/proc/{pid}/syscall").read_text().split()
    if not fields[0].isdigit() or int(fields[0]) not in _SLEEP_CALLS.get(platform.machine(), set()):
        return 0.0
    args = [int(f, 16) for f in fields[1:4]]
    clock_nanosleep = int(fields[0]) in (230, 115)
    pointer = args[2] if clock_nanosleep else args[0]
    with open(f"/proc/{pid}/mem", "rb") as memory:
        memory.seek(pointer)
        sec, nsec = struct.unpack("qq", memory.read(16))
    until = sec + nsec / 1e9
    absolute = clock_nanosleep and args[1] & 1  # TIMER_ABSTIME, on CLOCK_MONOTONIC
    return until - time.monotonic() if absolute else until
