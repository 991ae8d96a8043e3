"""Helpers for tests that check which processes (kernels, workers) are left running."""

from __future__ import annotations

import os
import time
from pathlib import Path


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
