"""Tools junobench runs (uv, pip, static analysers), ended with everything they started.

:func:`run` is :func:`subprocess.run` whose tool runs in a process group of its own:
when junobench is stopped (Ctrl-C, SIGTERM, SIGHUP), or the tool passes its time limit,
the whole group is killed — the tool and whatever it started (uv's builds, pyright's
Node.js) — not only the tool, whose children would live on.

>>> run(["true"], capture_output=True).returncode
0
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from collections.abc import Sequence
from typing import Any


def run(command: Sequence[str], *, timeout: float | None = None, input: str | None = None,
        **options: Any) -> subprocess.CompletedProcess[str]:
    """:func:`subprocess.run` of ``command`` in text mode (``options`` as there; ``check``
    is not supported), its process group killed when the call ends in any exception (the
    time limit's :class:`subprocess.TimeoutExpired` included, raised after)."""
    options["text"] = True
    if options.pop("capture_output", False):
        options["stdout"] = options["stderr"] = subprocess.PIPE
    if options.pop("check", False):
        raise ValueError("check=True is not supported")
    if input is not None:
        options["stdin"] = subprocess.PIPE
    with subprocess.Popen(list(command), start_new_session=True, **options) as process:
        try:
            out, err = process.communicate(input, timeout=timeout)
        except BaseException:
            _kill_group(process)
            raise
    return subprocess.CompletedProcess(process.args, process.returncode, out, err)


def _kill_group(process: subprocess.Popen[Any]) -> None:
    with contextlib.suppress(OSError):
        os.killpg(process.pid, signal.SIGKILL)
    process.kill()
    process.wait()
