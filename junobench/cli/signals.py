"""How a verb is stopped: SIGTERM and SIGHUP as Ctrl-C, and output that is never cut short.

Schedulers (Slurm, Kubernetes, systemd, CI runners) stop a job with SIGTERM, and a closed
terminal sends SIGHUP; :func:`stop_signals` makes both do what Ctrl-C (SIGINT) does: a
verb running notebooks stops its kernels, its Ray driver and workers, writes what
finished, and junobench exits with ``128 + the signal's number``. :func:`held` holds
every stop signal while a verb prints its result (a JSON document is printed whole), and
stops the verb just after.

>>> import os, signal, time
>>> try:
...     with stop_signals():
...         os.kill(os.getpid(), signal.SIGTERM)    # as a scheduler stops a job
...         time.sleep(30)
... except KeyboardInterrupt:
...     print("stopped as by Ctrl-C")
stopped as by Ctrl-C
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from types import FrameType
from typing import Any

#: The signals that stop a verb as Ctrl-C does, besides SIGINT itself.
STOPS: tuple[signal.Signals, ...] = (signal.SIGTERM, signal.SIGHUP)


@dataclass
class Stop:
    """The signal that stopped the verb (SIGINT unless another one came)."""

    signum: int = signal.SIGINT

    @property
    def name(self) -> str:
        return signal.Signals(self.signum).name

    @property
    def code(self) -> int:
        """The exit status: 128 + the signal's number (130 for Ctrl-C)."""
        return 128 + self.signum


#: The stop of the verb running now (one verb runs at a time in a process).
_CURRENT = Stop()


@contextlib.contextmanager
def stop_signals() -> Iterator[Stop]:
    """Within the block, SIGTERM and SIGHUP call whatever SIGINT calls: Python raises
    KeyboardInterrupt, or asyncio cancels the run it is running (KeyboardInterrupt too when
    SIGINT is ignored, as in a background job). Only in the main thread (signal handlers
    are set there), and not for a signal ignored already (``nohup``)."""
    global _CURRENT
    _CURRENT = Stop()
    if threading.current_thread() is not threading.main_thread():
        yield _CURRENT
        return
    stop = _CURRENT

    def as_interrupt(signum: int, frame: FrameType | None) -> Any:
        stop.signum = signum
        interrupt = signal.getsignal(signal.SIGINT)
        if callable(interrupt):
            return interrupt(signal.SIGINT, frame)
        raise KeyboardInterrupt

    # one the user ignores (nohup ignores SIGHUP) stays ignored; another handler (Ray's of
    # SIGTERM in a process that called ray.init) gives way for the block
    previous = {signum: signal.signal(signum, as_interrupt) for signum in STOPS
                if signal.getsignal(signum) is signal.SIG_DFL or callable(signal.getsignal(signum))}
    try:
        yield stop
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


@contextlib.contextmanager
def held() -> Iterator[None]:
    """Within the block, a stop signal (SIGINT, SIGTERM, SIGHUP) is noted, not acted on;
    after it, the first one noted raises KeyboardInterrupt: what the block prints is whole."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    noted: list[int] = []

    def note(signum: int, frame: FrameType | None) -> None:
        noted.append(signum)

    previous = {signum: signal.signal(signum, note) for signum in (signal.SIGINT, *STOPS)}
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
    if noted:
        _CURRENT.signum = noted[0]
        raise KeyboardInterrupt
