"""Replays as Ray tasks (``--executor ray``): the notebooks run on a Ray cluster's workers.

Each :class:`~junobench.verify.executor.ReplayTask` becomes one Ray task asking for
``cpus`` CPUs (default 1) and, when given, ``memory`` bytes: a call to one of ``jobs``
long-lived workers (:class:`ReplayWorker`, an async actor holding those resources, which
starts the next notebook's kernel while the current one runs, as the local executor
does), or, with ``build_envs``, a plain task in its own runtime environment
(:func:`replay_on_worker`). Its files travel with it: the
driver packs the task's places into a tar archive once (shared by the tasks that need
the same files, e.g. a case's reproduced and fixed notebooks), puts it in Ray's object
store, and the worker unpacks it into a scratch folder of its own, so that no shared
filesystem is needed. The worker replays the notebook with verify's runner (the same
kernel start as locally) and returns the log and the ``after`` hook.

Faults are not verdicts: a worker or node that dies, an environment that fails to build,
an archive that is lost, or any error of the task itself is retried up to ``retries``
times, each attempt recorded; when every attempt fails the outcome carries an
infrastructure ``error`` instead of a replay. Ray's own retries are off so that every
attempt is counted here. With ``build_envs``, each task asks Ray for a runtime
environment holding its pinned ``requirements`` (built with ``uv`` on the worker and
cached by Ray per requirement set); the kernel then runs in that environment's
interpreter.

Cancelling a run (Ctrl-C) cancels its Ray task: the worker is interrupted and stops its
kernel; a worker that does not stop within :data:`CANCEL_GRACE` seconds is killed (and its
kernel, which polls its parent, exits with it). A dead long-lived worker is replaced.

>>> executor = RayExecutor(address="auto", cpus=2, memory=4 << 30)   # doctest: +SKIP
"""

from __future__ import annotations

import asyncio
import io
import logging
import os
import shutil
import socket
import tarfile
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any

from junobench.envs.kernel import KernelTarget, own_kernel
from junobench.envs.sandbox import Sandbox
from junobench.errors import JunoBenchError
from junobench.verify.executor import (
    WORKSPACE,
    Executor,
    Place,
    ReplayOutcome,
    ReplayTask,
    Workspace,
    execute,
    inside,
    materialize,
    not_run,
    place,
    without_places,
)
from junobench.verify.judge import RunLog
from junobench.verify.pool import KernelPool
from junobench.verify.runner import kernel_env, run_sync

#: Seconds a cancelled task may take to stop its kernel before its worker is killed.
CANCEL_GRACE = 15.0

_Archive = tuple[Place, ...]


def require_ray() -> Any:
    """The ``ray`` module, or a clear error when the ray extra is not installed."""
    try:
        import ray
    except ImportError:
        raise JunoBenchError("--executor ray needs Ray, not installed",
                             hint="pip install 'junobench[ray]'") from None
    return ray


@dataclass
class RayExecutor(Executor):
    """Replays on a Ray cluster: ``address`` (None: join the cluster of ``RAY_ADDRESS`` or of
    ``ray start`` on this machine, else start a local instance), ``cpus`` and ``memory``
    (bytes) per replay, ``retries`` of infrastructure faults, ``build_envs`` (a runtime
    environment per requirement set), ``runtime_env`` (Ray's, for every task). ``jobs`` 0:
    as many replays at once as the cluster's CPUs hold."""

    jobs: int = 0
    address: str | None = None
    cpus: float = 1.0
    memory: int | None = None
    retries: int = 2
    build_envs: bool = False
    runtime_env: dict[str, Any] | None = None
    init_options: dict[str, Any] = field(default_factory=dict)

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
        self._slots = None
        self.expected = 0
        self._owned = False
        self._remote: Any = None
        self._actor: Any = None
        self._idle: asyncio.Queue[Any] | None = None
        self._submitted = 0
        self._archives: dict[_Archive, tuple[asyncio.Task[Any], int]] = {}

    async def __aenter__(self) -> RayExecutor:
        ray = require_ray()
        if not ray.is_initialized():
            try:
                ray.init(address=self.address, log_to_driver=False, logging_level=logging.WARNING,
                         **self.init_options)
            except (ConnectionError, ValueError, RuntimeError) as error:
                where = self.address or os.environ.get("RAY_ADDRESS") or "a local instance"
                raise JunoBenchError(f"cannot start or join the Ray cluster ({error})", file=where,
                                     hint="check --ray-address (e.g. ray://head:10001 or auto)") from None
            self._owned = True
        cluster = ray.cluster_resources()
        cpus = float(cluster.get("CPU", 0))
        if self.cpus > cpus:
            await self._leave()
            raise JunoBenchError(f"each notebook asks for {self.cpus:g} CPUs; the Ray cluster has {cpus:g}",
                                 hint="lower --cpus-per-notebook")
        if self.memory is not None and self.memory > cluster.get("memory", 0):
            await self._leave()
            raise JunoBenchError(f"each notebook asks for {self.memory} bytes of memory; the Ray cluster "
                                 f"has {int(cluster.get('memory', 0))}", hint="lower --memory-per-notebook")
        if self.jobs == 0:
            self.jobs = max(1, int(cpus // self.cpus))
        self._remote = ray.remote(replay_on_worker)
        self._slots = asyncio.Semaphore(self.jobs)
        self._submitted = 0
        if not self.build_envs:  # one long-lived worker per slot, each with a kernel started ahead
            self._actor = ray.remote(ReplayWorker)
            self._idle = asyncio.Queue()
            for _ in range(self.jobs):
                self._idle.put_nowait(self._new_worker())
        return self

    async def __aexit__(self, kind: type[BaseException] | None, error: BaseException | None,
                        trace: TracebackType | None) -> None:
        for packing, _ in self._archives.values():
            packing.cancel()
        self._archives.clear()
        self._slots = None
        try:
            await self._close_workers()
        finally:
            await self._leave()

    def _new_worker(self) -> Any:
        options: dict[str, Any] = {"num_cpus": self.cpus, "max_restarts": 0, "max_task_retries": 0}
        if self.memory is not None:
            options["memory"] = self.memory
        if self.runtime_env:
            options["runtime_env"] = self.runtime_env
        return self._actor.options(**options).remote(self.target, self.pass_env, self.sandbox)

    async def _close_workers(self) -> None:
        """Stop the long-lived workers: their kernels started ahead first, then the processes."""
        if self._idle is None:
            return
        ray = require_ray()
        workers = []
        while not self._idle.empty():
            workers.append(self._idle.get_nowait())
        self._idle = None
        closing = [worker.close.remote() for worker in workers]
        if closing:
            await asyncio.to_thread(ray.wait, closing, num_returns=len(closing), timeout=CANCEL_GRACE)
        for worker in workers:
            ray.kill(worker)

    async def _leave(self) -> None:
        if self._owned:
            require_ray().shutdown()
            self._owned = False

    def describe(self) -> str:
        memory = f", {self.memory / (1 << 30):.3g} GiB" if self.memory else ""
        return f"ray, {self.jobs} job{'s' if self.jobs != 1 else ''}, {self.cpus:g} CPU{memory} per notebook"

    async def run(self, task: ReplayTask) -> ReplayOutcome:
        ray = require_ray()
        faults: list[str] = []
        async with self.slots:
            try:
                archive = await self._archive(task.places)
            except (JunoBenchError, OSError) as error:
                return ReplayOutcome(task, not_run(task, f"cannot pack the task's files: {error}"))
            self._submitted += 1
            try:
                for attempt in range(1, self.retries + 2):
                    worker = None if self._idle is None else await self._idle.get()
                    ref = self._submit(task, archive, worker)
                    try:
                        log, after, where = await ref
                    except asyncio.CancelledError:
                        await self._stop(ref, worker)
                        raise
                    except ray.exceptions.TaskCancelledError:
                        self._give_back(worker, replace=True)
                        raise asyncio.CancelledError from None
                    except ray.exceptions.RayError as error:
                        faults.append(f"attempt {attempt}: {describe_fault(error)}")
                        self._give_back(worker, replace=isinstance(error, ray.exceptions.RayActorError))
                        if isinstance(error, ray.exceptions.ObjectLostError):
                            archive = await self._repack(task.places)
                        continue
                    self._give_back(worker)
                    return ReplayOutcome(task, log, after, attempt, tuple(faults), worker=where)
            finally:
                self._release(task.places)
        attempts = self.retries + 1
        last = faults[-1].split(": ", 1)[1]
        why = f"{attempts} attempt{'s' if attempts > 1 else ''} failed, the last: {last}"
        return ReplayOutcome(task, not_run(task, why), task.after, attempts, tuple(faults), error=why)

    def _give_back(self, worker: Any, *, replace: bool = False) -> None:
        """Return a long-lived worker to the idle ones (a new one in place of a dead one)."""
        if worker is None or self._idle is None:
            return
        if replace:
            require_ray().kill(worker)
            worker = self._new_worker()
        self._idle.put_nowait(worker)

    def _submit(self, task: ReplayTask, archive: Any, worker: Any) -> Any:
        if worker is not None:  # start the worker's next kernel now if more notebooks are to come
            more = self.expected - self._submitted >= self.jobs
            return worker.replay.options(name=f"junobench:{task.key}").remote(without_places(task), archive, more)
        options: dict[str, Any] = {"num_cpus": self.cpus, "max_retries": 0, "retry_exceptions": False,
                                   "name": f"junobench:{task.key}"}
        if self.memory is not None:
            options["memory"] = self.memory
        runtime_env = self.task_runtime_env(task)
        if runtime_env:
            options["runtime_env"] = runtime_env
        return self._remote.options(**options).remote(without_places(task), archive, self.target, self.pass_env,
                                                      self.sandbox)

    def task_runtime_env(self, task: ReplayTask) -> dict[str, Any] | None:
        """Ray's runtime environment for ``task``: the executor's, plus (``build_envs``) a
        ``uv`` environment with the task's pinned requirements."""
        env = dict(self.runtime_env or {})
        if self.build_envs and task.requirements:
            uv = env.get("uv") or {}
            packages = list(uv.get("packages", []) if isinstance(uv, dict) else uv)
            packages += [r for r in task.requirements if r not in packages]
            env["uv"] = {**(uv if isinstance(uv, dict) else {}), "packages": packages}
        return env or None

    async def _archive(self, places: _Archive) -> Any:
        """The object-store reference of ``places`` packed (once for every task that needs them)."""
        entry = self._archives.get(places)
        if entry is None:
            packing = asyncio.ensure_future(asyncio.to_thread(put_archive, places))
            self._archives[places] = (packing, 1)
        else:
            packing, users = entry
            self._archives[places] = (packing, users + 1)
        try:
            return await asyncio.shield(packing)
        except BaseException:
            self._release(places)
            raise

    def _release(self, places: _Archive) -> None:
        entry = self._archives.get(places)
        if entry is None:
            return
        packing, users = entry
        if users <= 1:
            del self._archives[places]  # the last task using it: the object store may free it
        else:
            self._archives[places] = (packing, users - 1)

    async def _repack(self, places: _Archive) -> Any:
        """Pack ``places`` again (their archive was lost with a node)."""
        packing = asyncio.ensure_future(asyncio.to_thread(put_archive, places))
        entry = self._archives.get(places)
        self._archives[places] = (packing, entry[1] if entry else 1)
        return await asyncio.shield(packing)

    async def _stop(self, ref: Any, worker: Any) -> None:
        """Cancel a running task: interrupt it (its kernel is stopped), kill it if it lingers."""
        ray = require_ray()
        ray.cancel(ref)
        done, _ = await asyncio.to_thread(ray.wait, [ref], timeout=CANCEL_GRACE)
        if worker is not None:
            if done:
                self._give_back(worker)
            else:
                self._give_back(worker, replace=True)
        elif not done:
            ray.cancel(ref, force=True)


def describe_fault(error: BaseException) -> str:
    """One line for an infrastructure fault (Ray's messages run over many lines)."""
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
        "RayTaskError": "the task failed",
    }
    names = [base.__name__ for base in type(error).__mro__]
    what = next((kinds[n] for n in names if n in kinds), type(error).__name__)
    cause = getattr(error, "cause", None)
    detail = f"{type(cause).__name__}: {cause}" if isinstance(cause, BaseException) else str(error)
    lines = [line.strip() for line in detail.splitlines() if line.strip()]
    useful = [line for line in lines if not line.startswith(("Traceback", "File ", "^"))]
    return f"{what} ({(useful or lines or [type(error).__name__])[-1][:300]})"


# --------------------------------------------------------------------------- archives


def pack(places: Sequence[Place]) -> bytes:
    """A tar archive of ``places``, copied as a local run copies them first (links inside a
    folder kept, links into its trusted root read as files, anything else refused)."""
    with tempfile.TemporaryDirectory(prefix="junobench-pack-") as staging:
        root = Path(staging)
        for item in places:
            place(Path(item.source), inside(root, item.dest), trusted=item.trusted)
        buffer = io.BytesIO()
        with tarfile.open(fileobj=buffer, mode="w") as archive:
            for entry in sorted(root.iterdir()):
                archive.add(entry, arcname=entry.name, recursive=True)
        return buffer.getvalue()


def put_archive(places: Sequence[Place]) -> Any:
    """``places`` packed and put in Ray's object store (its reference)."""
    return require_ray().put(pack(places))


def unpack(archive: bytes, workspace: Path | Workspace) -> None:
    """Extract an archive of :func:`pack` into ``workspace`` (each member where the
    workspace places it): only regular files, folders and links that stay inside
    (tarfile's ``data`` filter)."""
    if isinstance(workspace, Path):
        workspace = Workspace(workspace, ".")
    root = workspace.root
    root.mkdir(parents=True, exist_ok=True)
    with tarfile.open(fileobj=io.BytesIO(archive), mode="r:") as bundle:
        members = bundle.getmembers()
        for member in members:
            member.name = workspace.path(member.name).relative_to(root).as_posix()
        if hasattr(tarfile, "data_filter"):
            try:
                bundle.extractall(root, members=members, filter="data")
            except tarfile.FilterError as error:
                raise JunoBenchError(f"archive member refused: {error}") from None
            return
        for member in members:  # Pythons without extraction filters
            if not (member.isfile() or member.isdir()):
                raise JunoBenchError(f"archive member {member.name!r} is not a file or folder")
        bundle.extractall(root, members=members)  # members checked above


# --------------------------------------------------------------------------- the worker side


def replay_on_worker(task: ReplayTask, archive: bytes, target: KernelTarget | None,
                     pass_env: Sequence[str] = (), sandbox: Sandbox | None = None) -> tuple[RunLog, Any, str]:
    """The Ray task: unpack the files into a scratch folder (and fetch its Hub cases),
    replay in a kernel of ``target`` (None: this worker's interpreter, e.g. the runtime
    environment Ray built), clean up. Returns the log, the ``after`` hook and where it ran
    (``host:pid``). A ``target`` whose interpreter is not on this worker is a fault."""
    _check_target(target)
    scratch = Path(tempfile.mkdtemp(prefix=f"junobench-{task.key}-"))
    try:
        workspace = Workspace(scratch / WORKSPACE, task.cwd)
        unpack(archive, workspace)
        materialize(task, workspace)  # the places are in the archive; this fetches Hub cases
        log, after = run_sync(execute(task, workspace, target, kernel_log=scratch / "kernel.log", pass_env=pass_env,
                                      sandbox=sandbox))
        return log, after, _where()
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


class ReplayWorker:
    """A long-lived Ray worker (an async actor) for one slot: it replays one notebook at a
    time, each in a fresh kernel of ``target``, and starts the next notebook's kernel while
    the current one runs (verify's :class:`~junobench.verify.pool.KernelPool`, size 1)."""

    def __init__(self, target: KernelTarget | None, pass_env: Sequence[str] = (),
                 sandbox: Sandbox | None = None) -> None:
        self.target = target
        self.pass_env = tuple(pass_env)
        self.sandbox = sandbox or Sandbox()
        self.pool: KernelPool | None = None

    async def replay(self, task: ReplayTask, archive: bytes, more: bool) -> tuple[RunLog, Any, str]:
        """Replay ``task`` (its files in ``archive``); with ``more``, start the next kernel."""
        _check_target(self.target)
        if self.pool is None:
            self.pool = KernelPool(self.target or own_kernel(), size=1, notebooks=0,
                                   env=kernel_env(keep=self.pass_env), sandbox=self.sandbox,
                                   pass_env=self.pass_env)
        self.pool.remaining = 1 + int(more)
        kernel = await self.pool.acquire()
        try:
            workspace = Workspace(Path(kernel.cwd).parent, task.cwd, Path(kernel.cwd))
            await asyncio.to_thread(unpack, archive, workspace)
            await asyncio.to_thread(materialize, task, workspace)  # Hub cases, if any
            log, after = await execute(task, workspace, self.target, kernel=kernel)
            return log, after, _where()
        finally:
            await kernel.shutdown()
            await asyncio.to_thread(shutil.rmtree, Path(kernel.cwd).parent, True)

    async def close(self) -> None:
        """Stop the kernel started ahead, if any."""
        if self.pool is not None:
            await self.pool.close()


def _check_target(target: KernelTarget | None) -> None:
    if target is not None and not Path(target.python).is_file():
        raise JunoBenchError(f"the environment's interpreter {target.python} is not on this worker",
                             hint="put the environment on a path every worker shares")


def _where() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"
