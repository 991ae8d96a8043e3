"""Replays on a Ray cluster (``--executor ray``), driven from a process of their own.

:class:`RayExecutor` starts the Ray driver (:mod:`.ray_driver`) as a child process and
hands it the replay tasks; the driver joins or starts the cluster and runs each task on a
worker (:mod:`.ray_worker`): one of ``jobs`` long-lived workers (an async actor holding
``cpus`` CPUs and, when given, ``memory`` bytes, which starts the next notebook's kernel
while the current one runs), or, with ``build_envs``, a plain task in its own runtime
environment holding the task's pinned ``requirements`` (built with ``uv`` on the worker
and cached by Ray per requirement set). A task's files are checked as a local run checks
them (:mod:`.case_files`) and stream to the worker in bounded chunks (:mod:`.shipping`),
at most ``max_case_size`` bytes; no shared filesystem is needed.

Faults are not verdicts: a worker or node that dies, an environment that fails to build,
files lost with a node, a replay past its deadline, or any error of the task itself is
retried up to ``retries`` times, each attempt recorded; when every attempt fails the
outcome carries an infrastructure ``error`` instead of a replay. A notebook whose every
attempt (two or more) killed its worker gets a verdict instead: it is the notebook's
doing. Ray's own retries are off so that every attempt is counted here.

Ray lives in the child: whatever it prints goes to a log file (never to stdout), and a
lost cluster (its raylet killed, every node gone) ends the child, not junobench: the
replays in flight and the ones still to come end as infrastructure errors and
:attr:`~junobench.verify.executor.Executor.stopped` says why the run stopped. A Ray
instance the child started is stopped and its session folder removed.

Cancelling a run (Ctrl-C) cancels its Ray task: the worker is interrupted and stops its
kernel; a worker that does not stop within 15 seconds is killed (and its kernel, which
polls its parent, exits with it).

>>> executor = RayExecutor(address="auto", cpus=2, memory=4 << 30)   # doctest: +SKIP
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, fields
from multiprocessing.connection import Connection
from pathlib import Path
from types import TracebackType
from typing import Any

from junobench.errors import JunoBenchError
from junobench.verify.executor import Executor, ReplayOutcome, ReplayTask, not_run, wait_out
from junobench.verify.ray_driver import (
    PING_EVERY,
    DriverOptions,
    RaySettings,
    describe_fault,
    end_sessions_of,
    remove_session,
    require_ray,
    settle,
    task_runtime_env,
)
from junobench.verify.ray_worker import living_workers, sweep

__all__ = ["RayExecutor", "describe_fault", "remove_session", "require_ray"]

#: Seconds the driver process may take to join or start the cluster.
START_TIMEOUT = 300.0
#: Seconds the driver process may take to close (its workers, an instance it started).
CLOSE_TIMEOUT = 60.0
#: Seconds a driver stopped before it was ready may take to end before it is killed: Ray,
#: its instance killed under ``ray.init``, may hold the driver's interpreter for 30 s.
ABANDON_TIMEOUT = 10.0
#: Seconds without a word from the driver after which it is taken for hung and killed.
SILENCE = 120.0
#: Seconds of waiting for the cluster after which a line says what the driver is doing
#: (and every :data:`PROGRESS_EVERY` seconds after that).
PROGRESS_AFTER = 5.0
PROGRESS_EVERY = 30.0


@dataclass
class RayExecutor(Executor, RaySettings):
    """Replays on a Ray cluster: ``address`` (None: join the cluster of ``RAY_ADDRESS`` or of
    ``ray start`` on this machine, else start a local instance), ``cpus`` and ``memory``
    (bytes) per replay, ``retries`` of infrastructure faults, ``build_envs`` (a runtime
    environment per requirement set), ``runtime_env`` (Ray's, for every task),
    ``max_case_size`` (bytes of files a replay may ship; None: no limit), ``deadline``
    (seconds per attempt; None: from the task's time limits), ``liveness`` (seconds a
    worker may go without answering the driver's pings before it is taken for frozen).
    ``jobs`` 0: as many replays at once as the cluster's CPUs hold; more than that is
    lowered to it (``note`` says so)."""

    jobs: int = 0

    def __post_init__(self) -> None:
        self.name = "ray"
        self.remote = True
        if self.jobs < 0:
            raise JunoBenchError(f"--jobs must be at least 1, got {self.jobs}")
        if self.cpus <= 0:
            raise JunoBenchError(f"--cpus-per-notebook must be positive, got {self.cpus:g}")
        if self.memory is not None and self.memory <= 0:
            raise JunoBenchError(f"--memory-per-notebook must be positive, got {self.memory}")
        if self.retries < 0:
            raise JunoBenchError(f"--retries must be 0 or more, got {self.retries}")
        if self.max_case_size is not None and self.max_case_size <= 0:
            raise JunoBenchError(f"--max-case-size must be positive, got {self.max_case_size}")
        if not self.liveness > 2 * PING_EVERY:  # NaN too
            raise JunoBenchError(f"--liveness must be more than {2 * PING_EVERY:g} s (workers are pinged every "
                                 f"{PING_EVERY:g} s), got {self.liveness:g}")
        self._slots = None
        self.expected = 0
        self.note: str | None = None
        self.lost: str | None = None
        self.stopped: str | None = None
        self.begun: set[str] = set()
        self.log: Path | None = None
        self._process: subprocess.Popen[bytes] | None = None
        self._launched = 0.0  # when the driver process was started (seconds since the epoch)
        self._connection: Connection | None = None
        self._dumps: Callable[[Any], bytes] = _no_pickle
        self._loads: Callable[[bytes], Any] = _no_pickle
        self._lock = threading.Lock()
        self._pending: dict[int, tuple[ReplayTask, asyncio.Future[Any]]] = {}
        self._ids = itertools.count(1)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._ready: asyncio.Future[Any] | None = None
        self._closed: asyncio.Future[None] | None = None
        self._session: str | None = None
        self._keep_log = False  # the driver itself failed: its log says why
        self._closing = False  # junobench asked the driver to close
        self._heard = time.monotonic()  # when the driver last said something
        self._stuck = False
        self._watchdog: asyncio.Future[None] | None = None
        self.stage = "starting the Ray driver"  # what the driver is doing to join or start the cluster
        #: Where the lines of a long wait for the cluster go (default: stderr).
        self.notify: Callable[[str], None] = _status

    def task_runtime_env(self, task: ReplayTask) -> dict[str, Any] | None:
        """Ray's runtime environment for ``task``: the executor's, plus (``build_envs``) a
        ``uv`` environment with the task's pinned requirements."""
        return task_runtime_env(self._options(), task)

    def _options(self) -> DriverOptions:
        settings = {option.name: getattr(self, option.name) for option in fields(RaySettings)}
        settings["init_options"] = dict(self.init_options)
        if self.address is None and "ray" in sys.modules and sys.modules["ray"].is_initialized():
            with contextlib.suppress(Exception):  # a Ray Client connection has no GCS address here
                # join this process's cluster
                settings["address"] = sys.modules["ray"].get_runtime_context().gcs_address
        return DriverOptions(**settings, jobs=self.jobs, target=self.target, pass_env=tuple(self.pass_env),
                             sandbox=self.sandbox, expected=self.expected)

    # ------------------------------------------------------------------ the driver process

    async def __aenter__(self) -> RayExecutor:
        cloudpickle = require_ray().cloudpickle  # also checks that Ray is installed
        self._dumps, self._loads = cloudpickle.dumps, cloudpickle.loads
        self._loop = asyncio.get_running_loop()
        self._ready, self._closed = _heard_of(self._loop.create_future()), _heard_of(self._loop.create_future())
        ours, theirs = socket.socketpair()
        # The driver's log (Ray's own output; kept only when the driver fails): a new file
        # of ours, written by the child, never renamed into place.
        with tempfile.NamedTemporaryFile(prefix="junobench-ray-driver-", suffix=".log", delete=False) as log_file:
            fd = os.dup(log_file.fileno())
        self.log = Path(log_file.name)
        package = str(Path(__file__).resolve().parents[2])
        env = dict(os.environ)
        env["PYTHONPATH"] = package + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
        self._launched = time.time()
        try:
            self._process = subprocess.Popen(
                [sys.executable, "-m", "junobench.verify.ray_driver", str(theirs.fileno()), str(os.getpid())],
                stdin=subprocess.DEVNULL, stdout=fd, stderr=fd, pass_fds=(theirs.fileno(),), env=env,
                start_new_session=True)  # Ctrl-C reaches junobench, which stops the driver in order
        finally:
            os.close(fd)
            theirs.close()
        self._connection = Connection(ours.detach())
        threading.Thread(target=self._listen, name="junobench-ray-driver", daemon=True).start()
        self._send("start", self._options())
        try:
            info = await self._wait_ready()
        except asyncio.TimeoutError:
            await self._end()
            raise JunoBenchError(f"the Ray driver did not join or start the cluster within {START_TIMEOUT:.0f} s "
                                 f"(it was {self.stage})",
                                 file=self.address or os.environ.get("RAY_ADDRESS") or "a local instance",
                                 hint=f"see its log {self.log}") from None
        except BaseException:
            await self._end()
            raise
        self.jobs, self.note, self._session = info["jobs"], info["note"], info["session"] if info["owned"] else None
        self._slots = asyncio.Semaphore(self.jobs)
        self._watchdog = asyncio.ensure_future(self._watch_driver())
        return self

    async def _wait_ready(self) -> Any:
        """What the driver says once it joined or started the cluster, within
        :data:`START_TIMEOUT` seconds; a line on a wait of more than :data:`PROGRESS_AFTER`
        seconds says what it is doing."""
        assert self._ready is not None and self._loop is not None
        started = self._loop.time()
        told = started + PROGRESS_AFTER - PROGRESS_EVERY
        while not self._ready.done():
            now = self._loop.time()
            if now - started >= START_TIMEOUT:
                raise asyncio.TimeoutError
            if now - told >= PROGRESS_EVERY:
                told = now
                self.notify(f"ray: {self.stage} ({now - started:.0f} s so far)")
            wake = min(started + START_TIMEOUT, told + PROGRESS_EVERY)
            await asyncio.wait({self._ready}, timeout=max(0.0, wake - now))
        return self._ready.result()

    async def _watch_driver(self) -> None:
        """Kill a driver that has said nothing for :data:`SILENCE` seconds (its event loop is
        stuck): its replays then end as infrastructure errors, as when it dies."""
        while self._process is not None and self._process.poll() is None:
            await asyncio.sleep(min(5.0, SILENCE / 4))
            if time.monotonic() - self._heard > SILENCE and self._process is not None:
                self._stuck = True
                self._process.kill()
                return

    async def __aexit__(self, kind: type[BaseException] | None, error: BaseException | None,
                        trace: TracebackType | None) -> None:
        self._slots = None
        await self._end()

    async def _end(self) -> None:
        """Close the driver (its workers, an instance it started), kill it if it lingers,
        remove the session folder of an instance it started and, unless it failed, its log;
        to the end, whatever cancellations (Ctrl-C, SIGTERM) arrive meanwhile: they are
        passed on once it is done."""
        closing = asyncio.ensure_future(self._close_driver())
        try:
            await asyncio.shield(closing)
        except asyncio.CancelledError:
            await wait_out([closing])
            raise

    async def _close_driver(self) -> None:
        process = self._process
        if process is None:
            return
        if self._watchdog is not None:
            self._watchdog.cancel()
        if process.poll() is None:
            self._closing = True  # its end from now on is no failure (killed if it lingers)
            with contextlib.suppress(OSError):
                self._send("close")
            assert self._closed is not None and self._ready is not None
            ready = self._ready.done() and not self._ready.cancelled() and self._ready.exception() is None
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(asyncio.shield(self._closed), CLOSE_TIMEOUT if ready else ABANDON_TIMEOUT)
            try:
                await asyncio.to_thread(process.wait, 10 if ready else 1)
            except subprocess.TimeoutExpired:
                process.kill()  # what it started of an instance ends with it (Ray's fate sharing)
                await asyncio.to_thread(process.wait)
        if self._connection is not None:
            self._connection.close()
        if self._session is not None:
            await asyncio.to_thread(remove_session, self._session)
        # an instance the driver was starting when it ended: its session folder, named after it
        await asyncio.to_thread(end_sessions_of, process.pid, self._launched, self.init_options.get("_temp_dir"))
        await asyncio.to_thread(sweep)  # what workers on this machine left when they died
        if self.lost is not None and self._session is not None:  # workers of a lost instance end soon after
            for _ in range(30):
                if not await asyncio.to_thread(living_workers):
                    break
                await asyncio.sleep(0.5)
                await asyncio.to_thread(sweep)
        if not self._keep_log and self.log is not None:
            self.log.unlink(missing_ok=True)
        self._process = None

    @property
    def driver_pid(self) -> int | None:
        """The process id of the Ray driver, while it runs."""
        return None if self._process is None else self._process.pid

    def _send(self, *message: Any) -> None:
        assert self._connection is not None
        data = self._dumps(message)
        with self._lock:
            self._connection.send_bytes(data)

    def _listen(self) -> None:
        """The reader thread: each message of the driver to the event loop."""
        assert self._connection is not None and self._loop is not None
        while True:
            try:
                message = self._loads(self._connection.recv_bytes())
            except (EOFError, OSError):
                message = ("gone",)
            except Exception as error:  # an outcome that cannot be read back here
                message = ("fatal", f"cannot read the driver's message: {error}")
            with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
                self._loop.call_soon_threadsafe(self._receive, message)
            if message[0] in ("gone", "closed"):
                return

    def _receive(self, message: tuple[Any, ...]) -> None:
        kind = message[0]
        self._heard = time.monotonic()
        assert self._ready is not None and self._closed is not None
        if kind == "ready":
            settle(self._ready, result=message[1])
        elif kind == "stage":
            self.stage = message[1]
        elif kind == "failed":
            settle(self._ready, error=message[1])
        elif kind in ("done", "cancelled", "crashed"):
            entry = self._pending.pop(message[1], None)
            if entry is not None:
                task, future = entry
                if kind == "done":
                    settle(future, result=message[2])
                elif kind == "cancelled":
                    settle(future, error=asyncio.CancelledError())
                else:
                    why = f"the Ray driver failed on this task: {message[2].strip().splitlines()[-1]}"
                    settle(future, result=_lost(task, why))
        elif kind == "jobs":  # nodes left: fewer replays at once, and the summary says so
            self.jobs, self.note = message[1], message[2]
        elif kind == "lost":
            self._lose(message[1])
        elif kind == "fatal":
            self._keep_log = True
            self._lose(f"the Ray driver failed ({message[1].strip().splitlines()[-1]}; its log: {self.log})")
        elif kind in ("closed", "gone"):
            # A driver that said why it could not start ends on its own: no failure of its own.
            refused = self._ready.done() and not self._ready.cancelled() and self._ready.exception() is not None
            if kind == "gone" and not self._closed.done() and not self._closing and not refused:
                code = self._process.poll() if self._process is not None else None
                if self._stuck:
                    self._keep_log = True
                    self._lose(f"the Ray driver stopped answering for {SILENCE:.0f} s and was stopped "
                               f"(its log: {self.log})")
                elif self._head_lost():
                    self._lose(f"its head is gone (the Ray driver lost the head's GCS and ended; exit code {code})")
                elif self._node_died():
                    self._lose(f"its node's raylet died, and the Ray driver with it (exit code {code})")
                else:
                    self._keep_log = True
                    self._lose(f"the Ray driver process ended (exit code {code}; its log: {self.log})")
                settle(self._ready, error=JunoBenchError(
                    "the Ray driver ended before joining the cluster", hint=f"see its log {self.log}"))
            settle(self._closed, result=None)

    def _log_text(self) -> str:
        try:
            return self.log.read_text(errors="replace") if self.log is not None else ""
        except OSError:
            return ""

    def _node_died(self) -> bool:
        """Whether the driver's log says that its node or raylet died."""
        text = self._log_text()
        return "Raylet is terminated" in text or "has been marked dead" in text

    def _head_lost(self) -> bool:
        """Whether the driver's log says that Ray ended it for want of the head's GCS."""
        return "Failed to connect to GCS" in self._log_text()

    def _lose(self, why: str) -> None:
        """The cluster is lost: every replay in flight ends as an infrastructure error."""
        if self.lost is None:
            self.lost = why
            self.stopped = f"the Ray cluster was lost: {why}"
        for task, future in self._pending.values():
            settle(future, result=_lost(task, self.lost))
        self._pending.clear()

    # ------------------------------------------------------------------ replays

    def describe(self) -> str:
        memory = f", {self.memory / (1 << 30):.3g} GiB" if self.memory else ""
        text = f"ray, {self.jobs} job{'s' if self.jobs != 1 else ''}, {self.cpus:g} CPU{memory} per notebook"
        return f"{text} ({self.note})" if self.note else text

    async def run(self, task: ReplayTask) -> ReplayOutcome:
        async with self.slots:
            if self.lost is not None:
                return _lost(task, self.lost)
            self.begun.update({task.case or task.key, task.key})
            assert self._loop is not None
            key = next(self._ids)
            future: asyncio.Future[Any] = self._loop.create_future()
            self._pending[key] = (task, future)
            try:
                self._send("run", key, task)
            except OSError:
                self._pending.pop(key, None)
                return _lost(task, self.lost or "the Ray driver process is gone")
            try:
                outcome: ReplayOutcome = await asyncio.shield(future)
                return outcome
            except asyncio.CancelledError:
                if not future.done():
                    with contextlib.suppress(OSError):
                        self._send("cancel", key)
                    await wait_out([future], CLOSE_TIMEOUT)  # the driver's word that it stopped
                raise


def _status(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def _heard_of(future: asyncio.Future[Any]) -> asyncio.Future[Any]:
    """``future``, its exception taken as heard whether or not anyone awaits it (no
    "Future exception was never retrieved" at exit)."""
    future.add_done_callback(lambda done: done.cancelled() or done.exception())
    return future


def _no_pickle(value: Any) -> Any:
    raise RuntimeError("use the executor inside `async with executor:`")


def _lost(task: ReplayTask, why: str) -> ReplayOutcome:
    return ReplayOutcome(task, not_run(task, why), task.after, 0, (), error=why)
