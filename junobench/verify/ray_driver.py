"""The Ray driver of ``--executor ray``: a process of its own, between junobench and the cluster.

:class:`~junobench.verify.ray_executor.RayExecutor` starts this module as a child process
(``python -m junobench.verify.ray_driver FD``) and talks to it over a socket: it sends the
options, then replay tasks; this process joins (or starts) the cluster, runs each task on
a worker (:class:`ClusterDriver`) and sends the outcome back. Whatever befalls the
cluster (a raylet killed, a node lost, Ray printing to its standard streams) befalls this
process, not junobench's: its output goes to a log file, never to junobench's stdout, and
if it dies, junobench records the replays it had in flight as infrastructure errors.

The driver here ships each task's checked files (:mod:`.shipping`), bounds every replay by
a deadline (a worker that does not answer in time is killed and the replay retried),
keeps ``jobs`` at what the cluster's CPUs hold, checking again while it runs, and stops
the run with a ``fatal`` message when no node is left to run a notebook.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import math
import os
import shutil
import signal
import sys
import threading
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from junobench.envs.kernel import KernelTarget
from junobench.envs.sandbox import Sandbox
from junobench.errors import JunoBenchError
from junobench.verify.executor import ReplayOutcome, ReplayTask, not_run, refused, task_files, without_places
from junobench.verify.runner import STARTUP_TIMEOUT
from junobench.verify.shipping import DEFAULT_LIMIT, Shipment, TooLarge, ship

#: Seconds a cancelled task may take to stop its kernel before its worker is killed.
CANCEL_GRACE = 15.0
#: Seconds between two looks at the cluster's resources (nodes that left).
WATCH_EVERY = 3.0
#: Seconds a look at the cluster may take before the cluster counts as lost.
WATCH_TIMEOUT = 60.0
#: Seconds granted per step beyond its time limit (the kernel's replies, output).
STEP_GRACE = 30.0
#: Seconds between two signs of life of the driver's event loop to junobench.
HEARTBEAT = 5.0
#: Bytes per second a worker is granted to receive its files, at the least.
TRANSFER_RATE = 20 << 20

_Places = tuple[Any, ...]

#: The session folder of the Ray instance this process started, if it did.
_SESSION: str | None = None


@dataclass
class RaySettings:
    """How replays run on a Ray cluster: what a user sets on
    :class:`~junobench.verify.ray_executor.RayExecutor`, handed on to its driver process."""

    address: str | None = None
    cpus: float = 1.0
    memory: int | None = None
    retries: int = 2
    build_envs: bool = False
    runtime_env: dict[str, Any] | None = None
    init_options: dict[str, Any] = field(default_factory=dict)
    max_case_size: int | None = DEFAULT_LIMIT
    deadline: float | None = None  # seconds per attempt; None: from the task's time limits


@dataclass
class DriverOptions(RaySettings):
    """What :class:`~junobench.verify.ray_executor.RayExecutor` asks of the driver: its
    settings, plus the replay slots and the kernels' target, variables and confinement."""

    jobs: int = 0
    target: KernelTarget | None = None
    pass_env: tuple[str, ...] = ()
    sandbox: Sandbox | None = None  # how workers confine their kernels (None: the default)
    expected: int = 0


def require_ray() -> Any:
    """The ``ray`` module, or a clear error when the ray extra is not installed."""
    try:
        import ray
    except ImportError:
        raise JunoBenchError("--executor ray needs Ray, not installed",
                             hint="pip install 'junobench[ray]'") from None
    return ray


class ClusterLost(Exception):
    """No node of the cluster is left to run a notebook, or the cluster stopped answering."""


def connect_error(error: BaseException, address: str | None) -> JunoBenchError:
    """The error of a failed ``ray.init``; it names token authentication, the usual cause
    of a cluster that is there but refuses us (Ray itself only says it failed to connect)."""
    text = " ".join(str(error).split())
    where = address or os.environ.get("RAY_ADDRESS") or "a local instance"
    tokens = "RAY_AUTH_TOKEN, RAY_AUTH_TOKEN_PATH or ~/.ray/auth_token (`ray get-auth-token` on the head)"
    if os.environ.get("RAY_AUTH_MODE", "").lower() == "token" or "auth" in text.lower():
        hint = (f"token authentication is on (RAY_AUTH_MODE=token): check that the token in {tokens} is the "
                "cluster's, and --ray-address")
    else:
        hint = (f"check --ray-address (e.g. ray://head:10001 or auto); a cluster with token authentication "
                f"needs RAY_AUTH_MODE=token and its token in {tokens}")
    return JunoBenchError(f"cannot start or join the Ray cluster ({text})", file=where, hint=hint)


def describe_fault(error: BaseException) -> str:
    """What went wrong, in full: a kind (``the worker died``) and Ray's message on one line."""
    kinds = {
        "WorkerCrashedError": "the worker died",
        "ActorDiedError": "the worker died",
        "ActorUnavailableError": "the worker was unreachable",
        "NodeDiedError": "the node died",
        "LocalRayletDiedError": "the node's raylet died",
        "OutOfMemoryError": "the worker was killed for lack of memory",
        "RuntimeEnvSetupError": "the environment failed to build",
        "ObjectLostError": "the task's files were lost",
        "TaskUnschedulableError": "the task cannot be scheduled",
        "ActorUnschedulableError": "the worker cannot be scheduled",
        "RayTaskError": "the task failed",
    }
    names = [base.__name__ for base in type(error).__mro__]
    what = next((kinds[n] for n in names if n in kinds), type(error).__name__)
    cause = getattr(error, "cause", None)
    detail = f"{type(cause).__name__}: {cause}" if isinstance(cause, BaseException) else str(error)
    if what == "the worker died" and _node_died(detail):
        what = "the worker's node died"
    lines = [line.strip() for line in detail.splitlines() if line.strip()]
    useful = [line for line in lines if not line.startswith(("Traceback", "File ", "^"))]
    return f"{what} ({'; '.join(useful or lines or [type(error).__name__])})"


def _node_died(text: str) -> bool:
    lowered = text.lower()
    return "node" in lowered and any(word in lowered for word in ("node has died", "node died", "marked dead",
                                                                   "raylet", "node is dead"))


@dataclass
class _Attempt:
    fault: str
    worker_died: bool  # the worker process died while the node lived on


def jobs_note(asked: int, first: int, jobs: int, cpus: float, per_notebook: float) -> str | None:
    """What the run's summary says of the replays it ran at once: ``asked`` (``--jobs``; 0:
    as many as the cluster holds), ``first`` at the start, ``jobs`` now (the final figure
    once the run ends) on the cluster's ``cpus`` now. None when the run kept to ``asked``."""
    wanted = asked or first
    if jobs >= wanted:
        return None
    text = (f"{f'--jobs {asked}' if asked else f'{first} jobs'} lowered to {jobs}: the cluster's {cpus:g} CPUs "
            f"hold {jobs} notebook{'s' if jobs != 1 else ''} of {per_notebook:g} CPU at once")
    return f"{text}, after nodes left" if jobs < first else text


class ClusterDriver:
    """Runs replay tasks on a Ray cluster, ``jobs`` at a time (see the module's docstring)."""

    def __init__(self, options: DriverOptions) -> None:
        self.o = options
        self.jobs = options.jobs
        self.asked = options.jobs
        self.first = options.jobs  # the replays at once when the run started
        self.owned = False
        self.session: str | None = None
        self.note: str | None = None
        self._submitted = 0
        self._idle: asyncio.Queue[Any] | None = None
        self._workers = 0  # long-lived workers alive or starting
        self._places: dict[Any, Any] = {}  # each long-lived worker's ``host:pid`` (a Ray reference)
        self._killed: list[Any] = []  # those of the workers killed, whose folders stay behind them
        self._slots: asyncio.Semaphore | None = None
        self._shipments: dict[_Places, tuple[asyncio.Future[Shipment], int]] = {}
        self.lost: str | None = None
        self._watch: asyncio.Task[None] | None = None
        self._last: Any = None

    # ------------------------------------------------------------------ start and stop

    def connect(self) -> None:
        """Join or start the cluster, check the resources asked for, set ``jobs``."""
        ray = require_ray()
        if not ray.is_initialized():
            try:
                ray.init(address=self.o.address, log_to_driver=False, logging_level=logging.WARNING,
                         **self.o.init_options)
            except Exception as error:  # Ray raises many kinds (AuthenticationError, ConnectionError, …)
                raise connect_error(error, self.o.address) from None
            self.owned = _started_here(ray)
        if self.owned:
            self.session = _session_dir(ray)
        cpus, memory = self._capacity(ray)
        if self.o.cpus > cpus:
            raise JunoBenchError(f"each notebook asks for {self.o.cpus:g} CPUs; the Ray cluster has {cpus:g}",
                                 hint="lower --cpus-per-notebook")
        if self.o.memory is not None and self.o.memory > memory:
            raise JunoBenchError(f"each notebook asks for {self.o.memory} bytes of memory; the Ray cluster "
                                 f"has {int(memory)}", hint="lower --memory-per-notebook")
        capacity = self._fits(cpus)
        self.jobs = capacity if self.jobs == 0 else min(self.jobs, capacity)
        self.first = self.jobs
        self.note = jobs_note(self.asked, self.first, self.jobs, cpus, self.o.cpus)

    def _capacity(self, ray: Any) -> tuple[float, float]:
        resources = ray.cluster_resources()
        return float(resources.get("CPU", 0)), float(resources.get("memory", 0))

    def _fits(self, cpus: float) -> int:
        return math.floor(cpus / self.o.cpus + 1e-9)

    async def start(self) -> None:
        await asyncio.to_thread(self.connect)
        ray = require_ray()
        self._remote = ray.remote(_replay_task())
        self._slots = asyncio.Semaphore(self.jobs)
        if not self.o.build_envs:  # one long-lived worker per slot, each with a kernel started ahead
            from junobench.verify.ray_worker import ReplayWorker

            self._actor = ray.remote(ReplayWorker)
            self._idle = asyncio.Queue()
            for _ in range(self.jobs):
                self._idle.put_nowait(self._new_worker())
        self._watch = asyncio.ensure_future(self._watch_cluster())

    async def close(self) -> None:
        """Stop the watch, the workers (their kernels first), and an instance started here."""
        if self._watch is not None:
            self._watch.cancel()
        for shipping, _ in self._shipments.values():
            shipping.cancel()
        self._shipments.clear()
        ray = require_ray()
        if self._idle is not None and self.lost is None:
            # every worker alive, idle or not: one whose attempt is still being stopped
            # (cancelled twice, by Ctrl-C and by the close) never comes back to the idle ones
            workers = list(self._places)
            self._idle = None
            closing = [worker.close.remote() for worker in workers]
            if closing:
                await asyncio.to_thread(ray.wait, closing, num_returns=len(closing), timeout=CANCEL_GRACE)
            for worker in workers:
                await asyncio.to_thread(self._kill, worker)
        if self._killed:
            await asyncio.to_thread(self._sweep_killed)

    def _kill(self, worker: Any) -> None:
        """Kill a long-lived worker (already gone with its node: nothing to do)."""
        with contextlib.suppress(Exception):
            require_ray().kill(worker)
        place = self._places.pop(worker, None)
        if place is not None:
            self._killed.append(place)

    def _sweep_killed(self) -> None:
        """Remove the folders the killed workers of this machine left (once they ended)."""
        from junobench.verify.ray_worker import sweep_after

        ray = require_ray()
        ended = []
        for place in self._killed:
            with contextlib.suppress(Exception):  # it died before saying where it ran
                ended.append(ray.get(place, timeout=5))
        self._killed.clear()
        sweep_after(ended)

    def _new_worker(self) -> Any:
        options: dict[str, Any] = {"num_cpus": self.o.cpus, "max_restarts": 0, "max_task_retries": 0}
        if self.o.memory is not None:
            options["memory"] = self.o.memory
        if self.o.runtime_env:
            options["runtime_env"] = self.o.runtime_env
        self._workers += 1
        worker = self._actor.options(**options).remote(self.o.target, self.o.pass_env, self.o.sandbox)
        self._places[worker] = worker.place.remote()
        return worker

    async def _watch_cluster(self) -> None:
        """Look at the cluster's CPUs now and then: fewer slots when nodes left, the run
        stopped when none can run a notebook or the cluster stops answering."""
        ray = require_ray()
        while True:
            await asyncio.sleep(WATCH_EVERY)
            try:
                cpus, _ = await asyncio.wait_for(asyncio.to_thread(self._capacity, ray), WATCH_TIMEOUT)
            except Exception as error:
                self.lost = f"the Ray cluster stopped answering ({describe_fault(error)})"
                return
            capacity = self._fits(cpus)
            if capacity == 0:
                self.lost = "no node of the Ray cluster is left to run a notebook (its raylet or node died)"
                return
            if capacity < self.jobs:
                self.jobs = capacity
                self.note = jobs_note(self.asked, self.first, capacity, cpus, self.o.cpus)

    # ------------------------------------------------------------------ one task

    def is_lost(self) -> bool:
        """Whether the cluster was lost (the watch may say so at any await)."""
        return self.lost is not None

    def deadlines(self, task: ReplayTask, size: int) -> tuple[float, float | None]:
        """Seconds each stage of an attempt of ``task`` may take: getting ready (a worker and
        its kernel started, the files received), then running the steps (each step's time
        limit with a margin; None when the steps have no limit). ``deadline`` sets both."""
        if self.o.deadline is not None:
            return self.o.deadline, self.o.deadline
        ready = 2 * STARTUP_TIMEOUT + size / TRANSFER_RATE
        if task.timeout is None:
            return ready, None
        return ready, (len(task.steps) + 1) * (task.timeout + STEP_GRACE)

    async def run(self, task: ReplayTask) -> ReplayOutcome:
        assert self._slots is not None
        if self.lost is not None:
            return _infrastructure(task, self.lost, 0, ())
        async with self._slots:
            try:
                shipment = await self._ship(task)
            except JunoBenchError as error:  # the one check of case files refused one
                return ReplayOutcome(task, refused(task, str(error)))
            except TooLarge as error:
                return _infrastructure(task, str(error), 0, ())
            except OSError as error:
                return _infrastructure(task, f"cannot send the task's files: {error}", 0, ())
            self._submitted += 1
            attempts: list[_Attempt] = []
            try:
                for number in range(1, self.o.retries + 2):
                    if self.is_lost():
                        break
                    result = await self._attempt(task, shipment, number)
                    if isinstance(result, _Attempt):
                        attempts.append(result)
                        if "the task's files were lost" in result.fault:
                            shipment = await self._ship(task, again=True)
                        continue
                    log, after, where = result
                    faults = tuple(a.fault for a in attempts)
                    return ReplayOutcome(task, log, after, number, faults, worker=where)
            finally:
                self._release(task.places)
        faults = tuple(a.fault for a in attempts)
        if len(attempts) >= 2 and all(a.worker_died for a in attempts):
            why = (f"the notebook killed the Ray worker running it, on each of the {len(attempts)} attempts "
                   f"(the last: {attempts[-1].fault.split(': ', 1)[1]})")
            log = not_run(task, why)
            return ReplayOutcome(task, log, task.after, len(attempts), faults)
        if self.is_lost():
            return _infrastructure(task, str(self.lost), len(attempts), faults)
        last = faults[-1].split(": ", 1)[1]
        count = len(attempts)
        why = f"{count} attempt{'s' if count > 1 else ''} failed, the last: {last}"
        return _infrastructure(task, why, count, faults)

    async def _attempt(self, task: ReplayTask, shipment: Shipment, number: int) -> Any:
        """One attempt on a worker: its outcome, or the :class:`_Attempt` of its fault."""
        ready, running = self.deadlines(task, shipment.size)
        if self._idle is None:  # a plain task (build_envs): one call for both stages
            fault = await self._wait(self._submit(task, shipment), None,
                                     None if running is None else ready + running, number)
            return self._last if fault is None else fault
        worker = await self._placed_worker(number)
        if isinstance(worker, _Attempt):
            return worker
        name = f"junobench:{task.key}"
        more = self.o.expected - self._submitted >= self.jobs  # start the worker's next kernel now
        fault = await self._wait(worker.prepare.options(name=name).remote(without_places(task), shipment.chunks, more),
                                 worker, ready, number)
        if fault is None:
            fault = await self._wait(worker.replay.options(name=name).remote(), worker, running, number)
        if fault is not None:
            return fault
        self._give_back(worker)
        return self._last

    async def _wait(self, ref: Any, worker: Any, limit: float | None, number: int) -> _Attempt | None:
        """Wait for one call of an attempt, within ``limit`` seconds: None when it answered
        (its result in ``_last``), else the fault (the worker replaced when it is dead or late)."""
        ray = require_ray()
        try:
            self._last = await asyncio.wait_for(_outcome(ref), limit)
        except asyncio.CancelledError:
            await self._stop(ref, worker)
            raise
        except asyncio.TimeoutError:
            await self._stop(ref, worker, at_once=True)
            return _Attempt(f"attempt {number}: the replay passed its deadline of {limit or 0:.0f} s "
                            "(its worker was stopped)", False)
        except ray.exceptions.TaskCancelledError:
            self._give_back(worker, replace=True)
            raise asyncio.CancelledError from None
        except ray.exceptions.RayError as error:
            fault = describe_fault(error)
            dead = isinstance(error, ray.exceptions.RayActorError)
            if worker is not None and not dead:  # it is alive: it drops what it prepared
                worker.discard.remote()
            self._give_back(worker, replace=dead)
            died = fault.startswith("the worker died") and self.lost is None
            return _Attempt(f"attempt {number}: {fault}", died)
        return None

    async def _take_worker(self) -> Any:
        assert self._idle is not None
        return await self._idle.get()

    async def _placed_worker(self, number: int) -> Any:
        """An idle long-lived worker, once the cluster has placed it (the attempt's deadlines
        start then: waiting for a free CPU, which other jobs on the cluster may hold, is
        queueing, not a fault); the :class:`_Attempt` of its fault when it cannot be made. A
        worker still waiting when the cluster shrank below the workers is dropped."""
        while True:
            worker = await self._take_worker()
            place = self._places.get(worker)
            if place is None:
                return worker
            placing = asyncio.ensure_future(_outcome(place))
            try:
                while not placing.done() and self.lost is None and self._workers <= self.jobs:
                    await asyncio.wait({placing}, timeout=WATCH_EVERY)
            except asyncio.CancelledError:
                placing.cancel()
                self._give_back(worker)
                raise
            if placing.done():
                placing.exception()  # seen here; _wait reads the answer again and judges it
                fault = await self._wait(place, worker, None, number)
                return worker if fault is None else fault
            placing.cancel()
            if self.lost is not None:
                self._give_back(worker)
                return _Attempt(f"attempt {number}: {self.lost}", False)
            self._workers -= 1  # the cluster shrank: this worker will not be placed
            self._kill(worker)

    def _give_back(self, worker: Any, *, replace: bool = False) -> None:
        """Return a long-lived worker to the idle ones (a new one in place of a dead one, as
        long as the cluster still holds as many)."""
        if worker is None:
            return
        if self._idle is None:  # closed meanwhile: nothing is given out any more
            self._kill(worker)
            return
        if replace:
            self._workers -= 1
            self._kill(worker)
            if self._workers >= self.jobs or self.lost is not None:
                return
            worker = self._new_worker()
        elif self._workers > self.jobs:  # the cluster shrank: one slot less
            self._workers -= 1
            self._kill(worker)
            return
        self._idle.put_nowait(worker)

    def _submit(self, task: ReplayTask, shipment: Shipment) -> Any:
        """The plain task of ``task`` (``build_envs``), in its own runtime environment."""
        bare = without_places(task)
        options: dict[str, Any] = {"num_cpus": self.o.cpus, "max_retries": 0, "retry_exceptions": False,
                                   "name": f"junobench:{task.key}"}
        if self.o.memory is not None:
            options["memory"] = self.o.memory
        runtime_env = task_runtime_env(self.o, task)
        if runtime_env:
            options["runtime_env"] = runtime_env
        return self._remote.options(**options).remote(bare, shipment.chunks, self.o.target, self.o.pass_env,
                                                      self.o.sandbox)

    async def _ship(self, task: ReplayTask, *, again: bool = False) -> Shipment:
        """The task's files in the object store (once for every task that needs the same)."""
        entry = self._shipments.get(task.places)
        if entry is None or again:
            ray = require_ray()
            limit = self.o.max_case_size

            def send() -> Shipment:
                return ship(task_files(task), put=ray.put, limit=limit)

            shipping: asyncio.Future[Shipment] = asyncio.ensure_future(asyncio.to_thread(send))
            self._shipments[task.places] = (shipping, 1 if entry is None else entry[1] + int(not again))
        else:
            shipping, users = entry
            self._shipments[task.places] = (shipping, users + 1)
        try:
            return await asyncio.shield(shipping)
        except BaseException:
            if not again:
                self._release(task.places)
            raise

    def _release(self, places: _Places) -> None:
        entry = self._shipments.get(places)
        if entry is None:
            return
        shipping, users = entry
        if users <= 1:
            del self._shipments[places]  # the last task using them: the object store may free them
        else:
            self._shipments[places] = (shipping, users - 1)

    async def _stop(self, ref: Any, worker: Any, *, at_once: bool = False) -> None:
        """Stop a running attempt: interrupt it (its kernel is stopped) and kill its worker
        if it lingers (``at_once``: a worker past its deadline is killed straight away)."""
        ray = require_ray()
        done: list[Any] = []
        if not at_once:
            ray.cancel(ref)
            done, _ = await asyncio.to_thread(ray.wait, [ref], timeout=CANCEL_GRACE)
        if worker is not None:
            self._give_back(worker, replace=not done)
        elif not done:
            ray.cancel(ref, force=True)


async def _outcome(ref: Any) -> Any:
    return await ref


def task_runtime_env(options: DriverOptions, task: ReplayTask) -> dict[str, Any] | None:
    """Ray's runtime environment for ``task``: the executor's, plus (``build_envs``) a
    ``uv`` environment with the task's pinned requirements."""
    env = dict(options.runtime_env or {})
    if options.build_envs and task.requirements:
        uv = env.get("uv") or {}
        packages = list(uv.get("packages", []) if isinstance(uv, dict) else uv)
        packages += [r for r in task.requirements if r not in packages]
        env["uv"] = {**(uv if isinstance(uv, dict) else {}), "packages": packages}
    return env or None


def _infrastructure(task: ReplayTask, why: str, attempts: int, faults: tuple[str, ...]) -> ReplayOutcome:
    return ReplayOutcome(task, not_run(task, why), task.after, attempts, faults, error=why)


def _replay_task() -> Any:
    from junobench.verify.ray_worker import replay_on_worker

    return replay_on_worker


def _started_here(ray: Any) -> bool:
    node = getattr(ray._private.worker, "_global_node", None)
    return node is not None and getattr(node, "head", False)


def _session_dir(ray: Any) -> str | None:
    node = getattr(ray._private.worker, "_global_node", None)
    try:
        return str(node.get_session_dir_path()) if node is not None else None
    except Exception:
        return None


def remove_session(session: str) -> None:
    """Remove the session folder of a Ray instance junobench started (and Ray's
    ``session_latest`` link when it points there), after ending what still runs from it."""
    folder = Path(session)
    if not folder.name.startswith("session_"):
        return
    _end_processes_of(folder)
    latest = folder.parent / "session_latest"
    if latest.is_symlink() and os.path.realpath(latest) == os.path.realpath(folder):
        latest.unlink(missing_ok=True)
    shutil.rmtree(folder, ignore_errors=True)


def _end_processes_of(folder: Path) -> None:
    """Kill, by process id, what still runs with ``folder`` on its command line (Linux)."""
    proc = Path("/proc")
    if not proc.is_dir():
        return
    needle = str(folder).encode()
    for entry in proc.iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            command = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if needle in command:
            with contextlib.suppress(OSError):
                os.kill(int(entry.name), signal.SIGKILL)


# --------------------------------------------------------------------------- the process


class _Channel:
    """Pickled messages over the socket to junobench (one writer at a time)."""

    def __init__(self, connection: Connection) -> None:
        from ray import cloudpickle

        self.connection = connection
        self.dumps: Callable[[Any], bytes] = cloudpickle.dumps
        self.loads: Callable[[bytes], Any] = cloudpickle.loads
        self.lock = threading.Lock()

    def send(self, *message: Any) -> None:
        data = self.dumps(message)
        with self.lock:
            self.connection.send_bytes(data)

    def receive(self) -> tuple[Any, ...]:
        message: tuple[Any, ...] = self.loads(self.connection.recv_bytes())
        return message


async def serve(channel: _Channel) -> None:
    """Answer junobench until it says ``close`` or goes away."""
    loop = asyncio.get_running_loop()
    inbox: asyncio.Queue[tuple[Any, ...]] = asyncio.Queue()

    def listen() -> None:
        while True:
            try:
                message = channel.receive()
            except (EOFError, OSError):
                message = ("close",)
            loop.call_soon_threadsafe(inbox.put_nowait, message)
            if message[0] == "close":
                return

    threading.Thread(target=listen, daemon=True).start()
    first = await inbox.get()
    options = first[1]
    driver = ClusterDriver(options)
    try:
        await driver.start()
    except JunoBenchError as error:
        channel.send("failed", error)
        return
    global _SESSION
    _SESSION = driver.session if driver.owned else None
    channel.send("ready", {"jobs": driver.jobs, "note": driver.note, "session": driver.session,
                           "owned": driver.owned})
    running: dict[int, asyncio.Task[ReplayOutcome]] = {}

    def finished(key: int, job: asyncio.Task[ReplayOutcome]) -> None:
        running.pop(key, None)
        if job.cancelled():
            channel.send("cancelled", key)
        elif job.exception() is not None:
            error = job.exception()
            channel.send("crashed", key, "".join(traceback.format_exception(error)))
        else:
            channel.send("done", key, job.result())

    async def watch_loss() -> None:  # and the slots lowered when nodes leave
        jobs = driver.jobs
        while driver.lost is None:
            await asyncio.sleep(0.5)
            if driver.jobs != jobs:
                jobs = driver.jobs
                channel.send("jobs", jobs, driver.note)
        channel.send("lost", driver.lost)

    async def beat() -> None:  # junobench stops a driver whose event loop stops answering
        while True:
            channel.send("alive")
            await asyncio.sleep(HEARTBEAT)

    loss = asyncio.ensure_future(watch_loss())
    beating = asyncio.ensure_future(beat())
    try:
        while True:
            message = await inbox.get()
            if message[0] == "run":
                key, task = message[1], message[2]
                job = asyncio.ensure_future(driver.run(task))
                running[key] = job
                job.add_done_callback(functools.partial(finished, key))
            elif message[0] == "cancel":
                cancelled = running.get(message[1])
                if cancelled is not None:
                    cancelled.cancel()
            elif message[0] == "close":
                break
    finally:
        loss.cancel()
        beating.cancel()
        for job in running.values():
            job.cancel()
        if running:
            await asyncio.wait(list(running.values()), timeout=CANCEL_GRACE + 5)
        await asyncio.wait_for(driver.close(), CANCEL_GRACE + 10)


def main(argv: list[str] | None = None) -> int:
    """``python -m junobench.verify.ray_driver FD``: serve junobench over the socket ``FD``."""
    args = sys.argv[1:] if argv is None else argv
    channel = _Channel(Connection(int(args[0])))
    try:
        asyncio.run(serve(channel))
    except BaseException as error:  # a bug: say so before going
        with contextlib.suppress(OSError):
            channel.send("fatal", "".join(traceback.format_exception(error)))
        raise
    finally:
        ray = sys.modules.get("ray")
        if ray is not None and ray.is_initialized():
            closing = threading.Thread(target=ray.shutdown, daemon=True)
            closing.start()
            closing.join(CANCEL_GRACE)
        if _SESSION is not None:  # an instance started here: junobench removes it too, unless it is gone
            remove_session(_SESSION)
    with contextlib.suppress(OSError):
        channel.send("closed")
    return 0


if __name__ == "__main__":
    os._exit(main())
