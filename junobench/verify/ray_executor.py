"""Replays as Ray tasks (``--executor ray``): the notebooks run on a Ray cluster's workers.

Each :class:`~junobench.verify.executor.ReplayTask` becomes one Ray task asking for
``cpus`` CPUs (default 1) and, when given, ``memory`` bytes. Its files travel with it: the
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
kernel, which polls its parent, exits with it).

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

from junobench.envs.kernel import KernelTarget
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
    without_places,
)
from junobench.verify.judge import RunLog
from junobench.verify.runner import run_sync

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
        if self.jobs < 0:
            raise JunoBenchError(f"--jobs must be at least 1, got {self.jobs}")
        if self.cpus <= 0:
            raise JunoBenchError(f"--cpus-per-notebook must be positive, got {self.cpus:g}")
        if self.memory is not None and self.memory <= 0:
            raise JunoBenchError(f"--memory-per-notebook must be positive, got {self.memory}")
        if self.retries < 0:
            raise JunoBenchError(f"--retries must be 0 or more, got {self.retries}")
        self._slots = None
        self._owned = False
        self._remote: Any = None
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
        return self

    async def __aexit__(self, kind: type[BaseException] | None, error: BaseException | None,
                        trace: TracebackType | None) -> None:
        for packing, _ in self._archives.values():
            packing.cancel()
        self._archives.clear()
        self._slots = None
        await self._leave()

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
            try:
                for attempt in range(1, self.retries + 2):
                    ref = self._submit(task, archive)
                    try:
                        log, after, worker = await ref
                    except asyncio.CancelledError:
                        await self._stop(ref)
                        raise
                    except ray.exceptions.TaskCancelledError:
                        raise asyncio.CancelledError from None
                    except ray.exceptions.RayError as error:
                        faults.append(f"attempt {attempt}: {describe_fault(error)}")
                        if isinstance(error, ray.exceptions.ObjectLostError):
                            archive = await self._repack(task.places)
                        continue
                    return ReplayOutcome(task, log, after, attempt, tuple(faults), worker=worker)
            finally:
                self._release(task.places)
        attempts = self.retries + 1
        last = faults[-1].split(": ", 1)[1]
        why = f"{attempts} attempt{'s' if attempts > 1 else ''} failed, the last: {last}"
        return ReplayOutcome(task, not_run(task, why), task.after, attempts, tuple(faults), error=why)

    def _submit(self, task: ReplayTask, archive: Any) -> Any:
        options: dict[str, Any] = {"num_cpus": self.cpus, "max_retries": 0, "retry_exceptions": False,
                                   "name": f"junobench:{task.key}"}
        if self.memory is not None:
            options["memory"] = self.memory
        runtime_env = self.task_runtime_env(task)
        if runtime_env:
            options["runtime_env"] = runtime_env
        return self._remote.options(**options).remote(without_places(task), archive, self.target)

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

    async def _stop(self, ref: Any) -> None:
        """Cancel a running task: interrupt it (its kernel is stopped), kill it if it lingers."""
        ray = require_ray()
        ray.cancel(ref)
        done, _ = await asyncio.to_thread(ray.wait, [ref], timeout=CANCEL_GRACE)
        if not done:
            ray.cancel(ref, force=True)


def describe_fault(error: BaseException) -> str:
    """One line for an infrastructure fault (Ray's messages run over many lines)."""
    kinds = {
        "WorkerCrashedError": "the worker died",
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
    """A tar archive of ``places`` (links kept as links, never followed)."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        for item in places:
            inside(Path("."), item.dest)  # refuse destinations that leave the workspace
            source = Path(item.source)
            if not (source.is_dir() or source.is_file()):
                raise JunoBenchError("not a file or folder", file=source)
            archive.add(source, arcname=item.dest, recursive=True)
    return buffer.getvalue()


def put_archive(places: Sequence[Place]) -> Any:
    """``places`` packed and put in Ray's object store (its reference)."""
    return require_ray().put(pack(places))


def unpack(archive: bytes, workspace: Path) -> None:
    """Extract an archive of :func:`pack` into ``workspace``: only regular files, folders and
    links that stay inside (tarfile's ``data`` filter)."""
    workspace.mkdir(parents=True, exist_ok=True)
    with tarfile.open(fileobj=io.BytesIO(archive), mode="r:") as bundle:
        if hasattr(tarfile, "data_filter"):
            try:
                bundle.extractall(workspace, filter="data")
            except tarfile.FilterError as error:
                raise JunoBenchError(f"archive member refused: {error}") from None
            return
        for member in bundle.getmembers():  # Pythons without extraction filters
            if not (member.isfile() or member.isdir()):
                raise JunoBenchError(f"archive member {member.name!r} is not a file or folder")
            inside(workspace, member.name)
        bundle.extractall(workspace)  # members checked above


# --------------------------------------------------------------------------- the worker side


def replay_on_worker(task: ReplayTask, archive: bytes, target: KernelTarget | None) -> tuple[RunLog, Any, str]:
    """The Ray task: unpack the files into a scratch folder (and fetch its Hub cases),
    replay in a kernel of ``target`` (None: this worker's interpreter, e.g. the runtime
    environment Ray built), clean up. Returns the log, the ``after`` hook and where it ran
    (``host:pid``). A ``target`` whose interpreter is not on this worker is a fault."""
    if target is not None and not Path(target.python).is_file():
        raise JunoBenchError(f"the environment's interpreter {target.python} is not on this worker",
                             hint="put the environment on a path every worker shares")
    scratch = Path(tempfile.mkdtemp(prefix=f"junobench-{task.key}-"))
    try:
        workspace = Workspace(scratch / WORKSPACE, task.cwd)
        unpack(archive, workspace.root)
        materialize(task, workspace)  # the places are in the archive; this fetches Hub cases
        log, after = run_sync(execute(task, workspace, target, kernel_log=scratch / "kernel.log"))
        return log, after, f"{socket.gethostname()}:{os.getpid()}"
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
