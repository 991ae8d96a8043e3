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
import re
import shutil
import signal
import sys
import threading
import time
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any, TypeVar

from junobench.envs.kernel import STARTUP_TIMEOUT, KernelTarget
from junobench.envs.sandbox import Sandbox
from junobench.errors import JunoBenchError
from junobench.verify.executor import ReplayOutcome, ReplayTask, not_run, refused, task_files, without_places
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
#: Seconds a long-lived worker may go without answering the driver's pings before it is
#: taken for frozen (stopped, starved, its event loop stuck), killed, and its replay retried.
LIVENESS = 30.0
#: Seconds between two pings of each worker.
PING_EVERY = 2.0
#: Seconds between two looks at the head (its GCS's port), which names a lost head at once.
HEAD_EVERY = 1.0

_Places = tuple[Any, ...]
T = TypeVar("T")

#: The session folder of the Ray instance this process started, if it did.
_SESSION: str | None = None
#: When this module was imported (in the driver process: when the process started).
_STARTED = time.time()


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
    liveness: float = LIVENESS  # seconds a worker may go without answering a ping


@dataclass
class DriverOptions(RaySettings):
    """What :class:`~junobench.verify.ray_executor.RayExecutor` asks of the driver: its
    settings, plus the replay slots and the kernels' target, variables and confinement."""

    jobs: int = 0
    target: KernelTarget | None = None
    pass_env: tuple[str, ...] = ()
    sandbox: Sandbox | None = None  # how workers confine their kernels (None: the default)
    expected: int = 0


#: Ray's switch of its C++ core's handler of fatal signals, SIGTERM among them (read when
#: Ray is imported): that handler prints a stack and aborts the process.
_NO_FAILURE_HANDLER = "RAY_DISABLE_FAILURE_SIGNAL_HANDLER"


def require_ray() -> Any:
    """The ``ray`` module, or a clear error when the ray extra is not installed. Imported
    here first, Ray installs no handler of SIGTERM in this process once ``ray.init`` has
    started its core: SIGTERM stops junobench (and its driver) as Ctrl-C does, at every
    stage, instead of aborting it with a stack dump. Ray's workers, which import Ray
    themselves, keep the handler."""
    added = "ray" not in sys.modules and _NO_FAILURE_HANDLER not in os.environ
    if added:
        os.environ[_NO_FAILURE_HANDLER] = "1"
    try:
        import ray
        import ray._private.ray_constants  # reads the switch
    except ImportError:
        raise JunoBenchError("--executor ray needs Ray, not installed",
                             hint="pip install 'junobench[ray]'") from None
    finally:
        if added:
            del os.environ[_NO_FAILURE_HANDLER]
    return ray


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
        self.gcs: str | None = None  # the head's address (None: a Ray Client connection)
        self.note: str | None = None
        self._submitted = 0
        self._idle: asyncio.Queue[Any] | None = None
        self._workers = 0  # long-lived workers alive or starting
        self._places: dict[Any, Any] = {}  # each long-lived worker's whereabouts (a Ray reference)
        self._killed: list[Any] = []  # those of the workers killed, whose folders stay behind them
        self._answered: dict[Any, float] = {}  # when each worker last answered a ping
        self._pinging: dict[Any, asyncio.Future[Any]] = {}
        self._alarms: dict[Any, asyncio.Future[None]] = {}  # set when a worker stops answering
        self._slots: asyncio.Semaphore | None = None
        self._shipments: dict[_Places, tuple[asyncio.Future[Shipment], int]] = {}
        self.lost: str | None = None
        self.head_lost = False
        self._watches: list[asyncio.Future[None]] = []
        self._last: Any = None

    # ------------------------------------------------------------------ start and stop

    def connect(self, stage: Callable[[str], None] | None = None) -> None:
        """Join or start the cluster, check the resources asked for, set ``jobs``; ``stage``
        hears what it is doing. A cluster to join is probed first
        (:func:`~junobench.verify.ray_probe.probe`): one that refuses, is no Ray cluster,
        wants a token or runs other versions is a one-line error within seconds."""
        ray = require_ray()
        if not ray.is_initialized():
            from junobench.verify.ray_probe import probe, resolve

            target = resolve(self.o.address)
            if target is None:
                _tell(stage, "starting a local Ray instance")
            else:
                _tell(stage, f"joining the Ray cluster at {target}")
                probe(target, self.o.address)
            try:
                ray.init(address=self.o.address, log_to_driver=False, logging_level=logging.WARNING,
                         **self.o.init_options)
            except Exception as error:  # Ray raises many kinds (AuthenticationError, ConnectionError, …)
                raise connect_error(error, self.o.address) from None
            self.owned = _started_here(ray)
        if self.owned:
            self.session = _session_dir(ray)
        with contextlib.suppress(Exception):  # a Ray Client connection has no GCS address here
            self.gcs = str(ray.get_runtime_context().gcs_address)
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

    async def start(self, stage: Callable[[str], None] | None = None) -> None:
        # A thread that outlives the call: the processes of an instance ray.init starts end
        # with the thread that started them (Ray's fate sharing), not before this process.
        await in_thread(functools.partial(self.connect, stage), keep=True)
        ray = require_ray()
        self._remote = ray.remote(_replay_task())
        self._slots = asyncio.Semaphore(self.jobs)
        if not self.o.build_envs:  # one long-lived worker per slot, each with a kernel started ahead
            from junobench.verify.ray_worker import ReplayWorker

            _tell(stage, f"starting {self.jobs} Ray worker{'s' if self.jobs != 1 else ''}")
            self._actor = ray.remote(ReplayWorker)
            self._idle = asyncio.Queue()
            for _ in range(self.jobs):
                self._idle.put_nowait(self._new_worker())
            self._watches.append(asyncio.ensure_future(self._ping_workers()))
        self._watches.append(asyncio.ensure_future(self._watch_cluster()))
        if self.gcs is not None:
            self._watches.append(asyncio.ensure_future(self._watch_head(self.gcs)))

    async def close(self) -> None:
        """Stop the watches, the workers (their kernels first; each removes its folder), and
        sweep what killed workers left; an instance started here is stopped by the process.
        With the head lost, each worker ends its own process (nothing else would soon)."""
        for watch in self._watches:
            watch.cancel()
        for shipping, _ in self._shipments.values():
            shipping.cancel()
        self._shipments.clear()
        ray = require_ray()
        # every worker alive, idle or not: one whose attempt is still being stopped
        # (cancelled twice, by Ctrl-C and by the close) never comes back to the idle ones
        workers = list(self._places)
        self._idle = None
        used = list(self._places.values())
        if workers:
            leave = self.head_lost
            if not leave:  # a worker still starting has no kernel yet: killed, not waited for
                started = set(await in_thread(lambda: ray.wait(used, num_returns=len(used), timeout=0)[0]))
                for worker in workers:
                    if self._places[worker] not in started:
                        self._kill(worker)
            closing = [worker.close.remote(leave) for worker in self._places]
            await in_thread(lambda: ray.wait(closing, num_returns=len(closing), timeout=CANCEL_GRACE))
            for worker in list(self._places):
                if leave:
                    self._forget(worker)
                else:
                    self._kill(worker)
        if not self.head_lost:
            await in_thread(functools.partial(self._sweep_nodes, used))

    def _sweep_nodes(self, used: list[Any]) -> None:
        """Remove the folders of the workers killed during the run, and of the workers of
        earlier runs that died (with a lost head, say) on the nodes no worker of this run
        started on (a worker sweeps its own node when it starts)."""
        ray = require_ray()
        if self._killed:
            self._sweep_killed()
        if self.o.build_envs:
            return  # plain tasks: a worker starts wherever Ray likes
        ran = set()
        for where in ray.wait(used, num_returns=len(used), timeout=5)[0] if used else []:
            with contextlib.suppress(Exception):  # it died before saying where it ran
                ran.add(ray.get(where)["node"])
        with contextlib.suppress(Exception):
            idle = [node["NodeID"] for node in ray.nodes() if node.get("Alive") and node["NodeID"] not in ran]
            sweeps = [self._sweeper(node).remote([]) for node in idle]
            if sweeps:
                ray.wait(sweeps, num_returns=len(sweeps), timeout=CANCEL_GRACE)

    def _kill(self, worker: Any) -> None:
        """Kill a long-lived worker (already gone with its node: nothing to do)."""
        if not self.head_lost:  # Ray kills through its head
            with contextlib.suppress(Exception):
                require_ray().kill(worker)
        place = self._forget(worker)
        if place is not None:
            self._killed.append(place)

    def _forget(self, worker: Any) -> Any:
        """Stop watching ``worker``; its whereabouts (a Ray reference), if known."""
        self._answered.pop(worker, None)
        pinging = self._pinging.pop(worker, None)
        if pinging is not None:
            pinging.cancel()
        alarm = self._alarms.pop(worker, None)
        if alarm is not None and not alarm.done():
            alarm.cancel()
        return self._places.pop(worker, None)

    def _sweep_killed(self) -> None:
        """Remove the folders the killed workers left (once they ended): those of this
        machine here, those of other nodes by a task on each."""
        from junobench.verify.ray_worker import clear_after

        ray = require_ray()
        ended = []
        for place in ray.wait(self._killed, num_returns=len(self._killed), timeout=5)[0]:
            with contextlib.suppress(Exception):  # it died before saying where it ran
                ended.append(ray.get(place))
        self._killed.clear()
        elsewhere = clear_after(ended)
        if elsewhere:
            sweeps = [self._sweeper(node).remote(places) for node, places in elsewhere.items()]
            with contextlib.suppress(Exception):
                ray.wait(sweeps, num_returns=len(sweeps), timeout=CANCEL_GRACE)

    def _sweeper(self, node: str) -> Any:
        """The sweep task of ``node`` (no CPU; it runs where it is sent, or not at all)."""
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        from junobench.verify.ray_worker import clear_after

        ray = require_ray()
        return ray.remote(clear_after).options(
            num_cpus=0, max_retries=0, scheduling_strategy=NodeAffinitySchedulingStrategy(node, soft=False))

    def _new_worker(self) -> Any:
        options: dict[str, Any] = {"num_cpus": self.o.cpus, "max_restarts": 0, "max_task_retries": 0}
        if self.o.memory is not None:
            options["memory"] = self.o.memory
        if self.o.runtime_env:
            options["runtime_env"] = self.o.runtime_env
        self._workers += 1
        worker = self._actor.options(**options).remote(self.o.target, self.o.pass_env, self.o.sandbox,
                                                       orphaned=max(60.0, 2 * self.o.liveness))
        self._places[worker] = worker.whereabouts.remote()
        self._alarms[worker] = asyncio.get_running_loop().create_future()
        self._pinging[worker] = asyncio.ensure_future(self._ping(worker, self._places[worker]))
        return worker

    async def _ping_workers(self) -> None:
        """Ping every long-lived worker every :data:`PING_EVERY` seconds; one that has been
        made and has not answered since for ``liveness`` seconds is taken for frozen: its
        alarm goes off (its attempt ends as a fault, and the worker is replaced)."""
        loop = asyncio.get_running_loop()
        before = loop.time()
        while True:
            await asyncio.sleep(PING_EVERY)
            now = loop.time()
            late = now - before > 2 * PING_EVERY  # this loop stalled: answers may wait to be read
            before = now
            for worker in list(self._places):
                if worker not in self._pinging:
                    self._pinging[worker] = asyncio.ensure_future(self._ping(worker))
                heard, alarm = self._answered.get(worker), self._alarms.get(worker)
                if (heard is not None and now - heard > self.o.liveness and not late and alarm is not None
                        and not alarm.done()):
                    alarm.set_result(None)

    async def _ping(self, worker: Any, call: Any = None) -> None:
        """Ping ``worker`` (or wait for ``call``, its first answer: once it has been made, its
        silence counts) and note when it answered."""
        try:
            await (worker.ping.remote() if call is None else call)
        except Exception:  # gone: its attempt, if any, hears it from Ray
            return
        finally:
            self._pinging.pop(worker, None)
        if worker in self._places:
            self._answered[worker] = asyncio.get_running_loop().time()

    def frozen(self, worker: Any) -> bool:
        """Whether ``worker`` stopped answering its pings."""
        alarm = self._alarms.get(worker)
        return alarm is not None and alarm.done() and not alarm.cancelled()

    async def _watch_cluster(self) -> None:
        """Look at the cluster's CPUs now and then: fewer slots when nodes left, the run
        stopped when none can run a notebook or the cluster stops answering."""
        ray = require_ray()
        while True:
            await asyncio.sleep(WATCH_EVERY)
            try:
                cpus, _ = await asyncio.wait_for(in_thread(functools.partial(self._capacity, ray)), WATCH_TIMEOUT)
            except Exception as error:
                self.lost = self.lost or f"the Ray cluster stopped answering ({describe_fault(error)})"
                return
            capacity = self._fits(cpus)
            if capacity == 0:
                self.lost = self.lost or ("no node of the Ray cluster is left to run a notebook "
                                          "(its raylet or node died)")
                return
            if capacity < self.jobs:
                self.jobs = capacity
                self.note = jobs_note(self.asked, self.first, capacity, cpus, self.o.cpus)

    async def _watch_head(self, gcs: str) -> None:
        """Knock at the head's GCS every :data:`HEAD_EVERY` seconds: refused, or silent for
        ``liveness`` seconds, the head is lost (Ray itself would wait a minute, then end
        this process without a word)."""
        from junobench.verify.ray_probe import split

        host, port = split(gcs)
        loop = asyncio.get_running_loop()
        answered = loop.time()
        while True:
            await asyncio.sleep(HEAD_EVERY)
            problem = await in_thread(functools.partial(_knock, host, port, min(5.0, self.o.liveness)))
            if problem is None:
                answered = loop.time()
            elif problem == "refuses connections" or loop.time() - answered > self.o.liveness:
                self.head_lost = True
                self.lost = self.lost or f"its head is gone (the GCS at {gcs} {problem})"
                return

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
        """Wait for one call of an attempt, within ``limit`` seconds and as long as its worker
        answers pings: None when it answered (its result in ``_last``), else the fault (the
        worker replaced when it is dead, late or frozen)."""
        ray = require_ray()
        outcome = asyncio.ensure_future(_outcome(ref))
        watched: set[asyncio.Future[Any]] = {outcome}
        alarm = self._alarms.get(worker)
        if alarm is not None:
            watched.add(alarm)
        try:
            await asyncio.wait(watched, timeout=limit, return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:
            outcome.cancel()
            await self._stop(ref, worker)
            raise
        if not outcome.done():
            outcome.cancel()
            frozen = self.frozen(worker)
            await self._stop(ref, worker, at_once=True)
            if frozen:
                return _Attempt(f"attempt {number}: the worker stopped answering for {self.o.liveness:.0f} s "
                                "(frozen or starved; it was stopped)", False)
            return _Attempt(f"attempt {number}: the replay passed its deadline of {limit or 0:.0f} s "
                            "(its worker was stopped)", False)
        try:
            self._last = outcome.result()
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
        """An idle long-lived worker (one that stopped answering meanwhile is replaced)."""
        assert self._idle is not None
        while True:
            worker = await self._idle.get()
            if not self.frozen(worker):
                return worker
            self._give_back(worker, replace=True)

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

            shipping: asyncio.Future[Shipment] = in_thread(send)
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
        if it lingers (``at_once``: a worker past its deadline is killed straight away).
        With the head lost, the worker is left to the close, which ends it."""
        ray = require_ray()
        done: list[Any] = []
        if self.head_lost and worker is not None:
            self._give_back(worker)
            return
        if not at_once:
            ray.cancel(ref)
            done, _ = await in_thread(lambda: ray.wait([ref], timeout=CANCEL_GRACE))
        if worker is not None:
            self._give_back(worker, replace=not done)
        elif not done:
            ray.cancel(ref, force=True)


async def _outcome(ref: Any) -> Any:
    return await ref


def _tell(stage: Callable[[str], None] | None, text: str) -> None:
    if stage is not None:
        stage(text)


def settle(future: asyncio.Future[Any], *, result: Any = None, error: BaseException | None = None) -> None:
    """Give ``future`` its result, or ``error``, unless it has one (or was cancelled)."""
    if future.done():
        return
    if error is not None:
        future.set_exception(error)
    else:
        future.set_result(result)


def in_thread(call: Callable[[], T], *, keep: bool = False) -> asyncio.Future[T]:
    """``call()`` in a daemon thread of its own, as a future of the running loop. Not the
    loop's executor: ``asyncio.run`` waits for its threads at the end, and a call into a
    lost cluster can block for a minute. With ``keep``, the thread lives on after the call
    until the process ends."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[T] = loop.create_future()

    def run() -> None:
        result, failure = None, None
        try:
            result = call()
        except BaseException as error:  # handed to the awaiting task
            failure = error
        with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
            loop.call_soon_threadsafe(lambda: settle(future, result=result, error=failure))
        if keep:
            threading.Event().wait()

    threading.Thread(target=run, name="junobench-ray-call", daemon=True).start()
    return future


def _knock(host: str, port: int, timeout: float) -> str | None:
    """None when ``host:port`` accepts a TCP connection, else what it did."""
    import socket

    try:
        with socket.create_connection((host, port), timeout=timeout):
            return None
    except ConnectionRefusedError:
        return "refuses connections"
    except OSError as error:
        return f"does not answer ({error.strerror or type(error).__name__})"


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
        cloudpickle = require_ray().cloudpickle
        self.connection = connection
        self.dumps: Callable[[Any], bytes] = cloudpickle.dumps
        self.loads: Callable[[bytes], Any] = cloudpickle.loads
        self.lock = threading.Lock()

    def send(self, *message: Any) -> None:
        """Send ``message`` (nothing when junobench is gone: nobody is left to hear it)."""
        data = self.dumps(message)
        with self.lock, contextlib.suppress(OSError):
            self.connection.send_bytes(data)

    def receive(self) -> tuple[Any, ...]:
        message: tuple[Any, ...] = self.loads(self.connection.recv_bytes())
        return message


#: Seconds the driver may take to end once asked to stop (by junobench, a signal, or its
#: parent's end), before it kills what it started and leaves at once.
END_LIMIT = 2 * CANCEL_GRACE + 15

#: A Ray session folder on a command line (the instance a process belongs to).
_SESSION_PATH = re.compile(r"/[^\s=]*?/session_\d{4}-\d\d-\d\d_[^/\s]+")


async def serve(channel: _Channel) -> None:
    """Answer junobench until it says ``close`` or goes away (a signal — SIGTERM, SIGHUP,
    SIGINT — or junobench's end counts as ``close``). Asked to stop while joining or
    starting the cluster, it abandons the attempt (:func:`abandon`)."""
    loop = asyncio.get_running_loop()
    inbox: asyncio.Queue[tuple[Any, ...]] = asyncio.Queue()

    def stop(signum: int) -> None:
        global _ORPHANED
        _ORPHANED = _ORPHANED or signum == ORPHANED
        inbox.put_nowait(("close",))

    with _signals_to(loop, stop) as on_signals:
        await _serve(channel, loop, inbox, on_signals)


@contextlib.contextmanager
def _signals_to(loop: asyncio.AbstractEventLoop, stop: Callable[[int], None]) -> Iterator[Callable[[], None]]:
    """Within the block, SIGTERM, SIGHUP, SIGINT and :data:`ORPHANED` call ``stop(signum)``
    in ``loop``; gives the function that sets this again (after ``ray.init``, whose handler
    of SIGTERM only prints and dies). Not ``loop.add_signal_handler``: the loop's close gives
    its signals their default action (death, for SIGUSR1), which a signal coming while this
    process cleans up would meet; here the handlers stay until :func:`main` ignores them."""
    import socket

    reader, writer = socket.socketpair()
    for end in (reader, writer):
        end.setblocking(False)

    def heard() -> None:  # the signals' numbers, written by Python's C handler
        with contextlib.suppress(OSError):
            for signum in reader.recv(64):
                stop(signum)

    def on_signals() -> None:
        for signum in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT, ORPHANED):
            signal.signal(signum, _noted)

    previous = signal.set_wakeup_fd(writer.fileno(), warn_on_full_buffer=False)
    loop.add_reader(reader.fileno(), heard)
    on_signals()
    try:
        yield on_signals
    finally:
        signal.set_wakeup_fd(previous)
        loop.remove_reader(reader.fileno())
        reader.close()
        writer.close()


def _noted(signum: int, frame: Any) -> None:
    """A stop signal's Python handler: nothing (its number woke the loop, :func:`_signals_to`)."""


async def _serve(channel: _Channel, loop: asyncio.AbstractEventLoop, inbox: asyncio.Queue[tuple[Any, ...]],
                 on_signals: Callable[[], None]) -> None:
    threading.Thread(target=_listen, args=(channel, loop, inbox), daemon=True).start()
    driver = await _start(channel, inbox, on_signals)
    if driver is not None:
        await _run_jobs(channel, driver, inbox)


def _listen(channel: _Channel, loop: asyncio.AbstractEventLoop, inbox: asyncio.Queue[tuple[Any, ...]]) -> None:
    """junobench's messages into ``inbox``, until "close" (or junobench's end, which closes)."""
    while True:
        try:
            message = channel.receive()
        except (EOFError, OSError):  # junobench ended
            global _ORPHANED
            _ORPHANED = True
            message = ("close",)
        loop.call_soon_threadsafe(inbox.put_nowait, message)
        if message[0] == "close":
            return


async def _start(channel: _Channel, inbox: asyncio.Queue[tuple[Any, ...]],
                 on_signals: Callable[[], None]) -> ClusterDriver | None:
    """The driver, started as the first message says and announced "ready"; None when it
    could not start (junobench is told why) or junobench closed first."""
    first = await inbox.get()
    if first[0] != "start":
        return None
    driver = ClusterDriver(first[1])
    global _DRIVER
    _DRIVER = driver
    starting = asyncio.ensure_future(driver.start(functools.partial(channel.send, "stage")))
    stopping = asyncio.ensure_future(inbox.get())  # only "close" comes before "ready"
    await asyncio.wait({starting, stopping}, return_when=asyncio.FIRST_COMPLETED)
    on_signals()
    if not starting.done():
        _end_within(END_LIMIT)
        raise Abandoned
    stopping.cancel()
    try:
        starting.result()
    except JunoBenchError as error:
        channel.send("failed", error)
        return None
    finally:
        if stopping.done() and not stopping.cancelled():
            inbox.put_nowait(stopping.result())  # stopped as it got ready: closed by _run_jobs
    global _SESSION
    _SESSION = driver.session if driver.owned else None
    channel.send("ready", {"jobs": driver.jobs, "note": driver.note, "session": driver.session,
                           "owned": driver.owned})
    return driver


async def _run_jobs(channel: _Channel, driver: ClusterDriver, inbox: asyncio.Queue[tuple[Any, ...]]) -> None:
    """Run and cancel replays as junobench asks, report each, until "close"; then cancel
    what runs and close the driver."""
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
        _end_within(END_LIMIT)
        loss.cancel()
        beating.cancel()
        for job in running.values():
            job.cancel()
        if running:
            await asyncio.wait(list(running.values()), timeout=CANCEL_GRACE + 5)
        await asyncio.wait_for(driver.close(), CANCEL_GRACE + 10)


class Abandoned(Exception):
    """The driver was asked to stop while it joined or started the cluster."""


#: The driver of this process, once it exists.
_DRIVER: ClusterDriver | None = None
#: The signal this process gets when junobench ends (not SIGTERM, which Ray takes over).
ORPHANED = signal.SIGUSR1
#: Whether junobench ended first (nobody is left to read the driver's log: it goes too).
_ORPHANED = False


def _drop_log() -> None:
    """Remove this process's log (its standard output, a file junobench made) when
    junobench ended first: nobody is left to read or remove it."""
    if not _ORPHANED:
        return
    with contextlib.suppress(OSError):
        log = Path(os.readlink("/proc/self/fd/1"))
        if log.name.startswith("junobench-ray-driver-") and log.suffix == ".log":
            log.unlink()


def abandon() -> None:
    """End what this process started of a Ray instance (``ray.init`` may still be starting
    it, in a thread nothing can stop): every process below this one, killed, and the
    session folders they name, removed."""
    from junobench.verify.lifeline import command_line, descendants, kill_all

    sessions: set[str] = set()
    for _ in range(2):  # once more for what was starting meanwhile
        below = descendants(os.getpid())
        sessions.update(m.group(0) for pid in below for m in _SESSION_PATH.finditer(command_line(pid)))
        kill_all(below)
    for session in sessions:
        remove_session(session)
    end_sessions_of(os.getpid(), _STARTED, _DRIVER.o.init_options.get("_temp_dir") if _DRIVER is not None else None)


def end_sessions_of(pid: int, since: float, temp_dir: str | None = None) -> None:
    """End the Ray instances process ``pid`` started (what runs from their session folders,
    killed; the folders removed), found before any of their processes named them: the
    sessions Ray named after it, in ``temp_dir`` (default: Ray's temporary folder), made
    since ``since`` (seconds since the epoch: when it started; an older session named
    after the same process id is another's, whose process had the id before)."""
    import datetime

    with contextlib.suppress(Exception):
        from ray._common.utils import get_default_ray_temp_dir

        base = Path(temp_dir or get_default_ray_temp_dir())  # type: ignore[no-untyped-call]
        for folder in base.glob(f"session_*_{pid}"):
            with contextlib.suppress(ValueError):
                stamp = folder.name.removeprefix("session_").rsplit("_", 1)[0]  # 2026-11-29_02-04-16_721933
                if datetime.datetime.strptime(stamp, "%Y-%m-%d_%H-%M-%S_%f").timestamp() >= since - 1:
                    remove_session(str(folder))


def _end_within(seconds: float) -> None:
    """Leave at the latest ``seconds`` from now, whatever hangs: what this process started
    is killed, its instance's session folder removed, and the process exits."""
    def leave() -> None:
        abandon()
        _drop_log()
        os._exit(1)

    timer = threading.Timer(seconds, leave)
    timer.daemon = True
    timer.start()


def main(argv: list[str] | None = None) -> int:
    """``python -m junobench.verify.ray_driver FD [PARENT]``: serve junobench (process
    ``PARENT``, whose end ends this process too) over the socket ``FD``."""
    from junobench.verify.lifeline import bind

    args = sys.argv[1:] if argv is None else argv

    def leave(signum: int, frame: Any) -> None:  # junobench ended before anything started here
        global _ORPHANED
        _ORPHANED = True
        _drop_log()
        os._exit(0)

    signal.signal(ORPHANED, leave)
    bind(int(args[1]) if len(args) > 1 else os.getppid(), ORPHANED)
    channel = _Channel(Connection(int(args[0])))
    lost_head = False
    try:
        asyncio.run(serve(channel))
    except Abandoned:
        abandon()
        _drop_log()
        channel.send("closed")
        os._exit(0)  # ray.init's thread cannot be stopped: leave without it
    except BaseException as error:  # a bug: say so before going
        with contextlib.suppress(OSError):
            channel.send("fatal", "".join(traceback.format_exception(error)))
        raise
    finally:
        for signum in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT, ORPHANED):  # ending already, within END_LIMIT
            signal.signal(signum, signal.SIG_IGN)
        lost_head = _DRIVER is not None and _DRIVER.head_lost
        ray = sys.modules.get("ray")
        if ray is not None and ray.is_initialized() and not lost_head:  # with no head, shutdown hangs
            closing = threading.Thread(target=ray.shutdown, daemon=True)
            closing.start()
            closing.join(CANCEL_GRACE)
        if lost_head and _SESSION is not None:
            abandon()
        if _SESSION is not None:  # an instance started here: junobench removes it too, unless it is gone
            remove_session(_SESSION)
        _drop_log()
    channel.send("closed")
    return 0


if __name__ == "__main__":
    os._exit(main())
