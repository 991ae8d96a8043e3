"""The worker side of ``--executor ray``: what runs inside a Ray worker process.

A :class:`ReplayWorker` (a long-lived async actor, one per slot) or :func:`replay_on_worker`
(a plain task, under ``--build-envs``) receives a task and its files
(:mod:`.shipping`), replays the notebook with verify's runner in a scratch folder and
returns the log. Everything a worker writes (the case's copy, its data included, the
kernels' folders and their connection files, which hold the kernel's key) lies in the
worker's own folder, :func:`worker_root` (``<tmp>/junobench-worker-<pid>-<start>``):
a replay's part is removed when the replay ends, for whatever reason, the folder when
the worker closes, and a worker starting later removes the folders of workers that are
no longer running (killed, or lost with their raylet), matched by process id and start
time.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import socket
import tempfile
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from junobench.envs.kernel import KernelPool, KernelTarget, StartedKernel, kernel_env, own_kernel
from junobench.envs.sandbox import Sandbox
from junobench.errors import JunoBenchError
from junobench.verify.executor import WORKSPACE, ReplayTask, Workspace, execute, fetch_cases
from junobench.verify.judge import RunLog
from junobench.verify.runner import run_sync
from junobench.verify.shipping import receive

#: Prefix of a worker's own folder in the temporary directory.
PREFIX = "junobench-worker-"

_ROOT: Path | None = None


def _stat(pid: int) -> list[str] | None:
    """The fields of ``/proc/<pid>/stat`` after the command name (Linux), from the state on;
    None when the process is gone or its entry cannot be read."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return fields if len(fields) > 19 else None


def _started(pid: int) -> str | None:
    """When process ``pid`` started (clock ticks since boot, Linux), None when it is not
    running or that cannot be read."""
    fields = _stat(pid)
    return None if fields is None else fields[19]


def _ended(fields: list[str]) -> bool:
    """Whether a process whose stat fields these are has ended (a zombie not yet reaped)."""
    return fields[0] in ("Z", "X")


def _running(pid: int, started: str) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    fields = _stat(pid)
    return fields is None or (fields[19] == started and not _ended(fields))


def sweep(base: Path | None = None) -> list[Path]:
    """Remove the folders of workers no longer running under ``base`` (default: the
    temporary directory); the folders removed."""
    base = Path(base or tempfile.gettempdir())
    removed = []
    for folder in base.glob(f"{PREFIX}*"):
        pid, _, started = folder.name[len(PREFIX):].partition("-")
        if not pid.isdigit() or int(pid) == os.getpid() or _running(int(pid), started):
            continue
        shutil.rmtree(folder, ignore_errors=True)
        removed.append(folder)
    return removed


def sweep_after(ended: Sequence[str], timeout: float = 10.0, base: Path | None = None) -> list[Path]:
    """Wait (at most ``timeout`` seconds) until the workers at ``ended`` (``host:pid``, as
    :func:`where` says) that ran on this machine are gone, then :func:`sweep` ``base``: a
    worker that was killed cannot remove its own folder, and it takes a moment to end."""
    host = socket.gethostname()
    pids = set()
    for place in ended:
        name, _, pid = place.rpartition(":")
        if name == host and pid.isdigit():
            pids.add(int(pid))
    deadline = time.monotonic() + timeout
    while pids and time.monotonic() < deadline:
        pids = {pid for pid in pids if _alive(pid)}
        if pids:
            time.sleep(0.05)
    return sweep(base)


def clear_after(ended: Sequence[Mapping[str, Any]], timeout: float = 10.0) -> dict[str, list[dict[str, Any]]]:
    """Remove the folders of the workers in ``ended`` (their :meth:`ReplayWorker.whereabouts`)
    that ran on this machine once they are gone (at most ``timeout`` seconds), and sweep
    the temporary folders they lay in; those of other machines are returned by node (a
    task on each node clears its own)."""
    host = socket.gethostname()
    here = [place for place in ended if place["host"] == host]
    elsewhere: dict[str, list[dict[str, Any]]] = {}
    for place in ended:
        if place["host"] != host:
            elsewhere.setdefault(str(place["node"]), []).append(dict(place))
    sweep_after([f"{host}:{place['pid']}" for place in here], timeout)
    bases = {Path(tempfile.gettempdir())}
    for place in here:
        root = Path(place["root"])
        if root.name.startswith(f"{PREFIX}{place['pid']}-"):
            bases.add(root.parent)
    for base in bases:
        sweep(base)
    return elsewhere


def _alive(pid: int) -> bool:
    """Whether process ``pid`` exists and is not a zombie (ended, not yet reaped)."""
    fields = _stat(pid)
    return fields is not None and not _ended(fields)


def living_workers(base: Path | None = None) -> list[Path]:
    """The folders under ``base`` (default: the temporary directory) of workers still running."""
    base = Path(base or tempfile.gettempdir())
    living = []
    for folder in base.glob(f"{PREFIX}*"):
        pid, _, started = folder.name[len(PREFIX):].partition("-")
        if pid.isdigit() and int(pid) != os.getpid() and _running(int(pid), started):
            living.append(folder)
    return living


def worker_root() -> Path:
    """This worker's own folder (made on first use, after sweeping those of dead workers);
    the process's temporary files, kernel connection files included, go there."""
    global _ROOT
    if _ROOT is None or not _ROOT.is_dir():
        base = Path(tempfile.gettempdir() if _ROOT is None else _ROOT.parent)
        sweep(base)
        root = base / f"{PREFIX}{os.getpid()}-{_started(os.getpid()) or 0}"
        root.mkdir(mode=0o700, exist_ok=True)
        tempfile.tempdir = str(root)  # jupyter_client writes connection files with mkstemp
        _ROOT = root
    return _ROOT


def close_root() -> None:
    """Remove this worker's folder."""
    global _ROOT
    if _ROOT is not None:
        shutil.rmtree(_ROOT, ignore_errors=True)
        tempfile.tempdir = str(_ROOT.parent)
        _ROOT = None


def _get(ref: Any) -> bytes:
    import ray

    data: bytes = ray.get(ref)
    return data


def unpack(chunks: Sequence[Any], task: ReplayTask, workspace: Workspace) -> None:
    """Write the shipped files of ``task`` into ``workspace``, then fetch its Hub cases."""
    receive(chunks, workspace, workspace.root, get=_get)
    fetch_cases(task, workspace)


def replay_on_worker(task: ReplayTask, chunks: Sequence[Any], target: KernelTarget | None,
                     pass_env: Sequence[str] = (), sandbox: Sandbox | None = None) -> tuple[RunLog, Any, str]:
    """The Ray task: receive the files into a scratch folder (and fetch its Hub cases),
    replay in a kernel of ``target`` (None: this worker's interpreter, e.g. the runtime
    environment Ray built), clean up. Returns the log, the ``after`` hook and where it ran
    (``host:pid``). A ``target`` whose interpreter is not on this worker is a fault."""
    _check_target(target)
    scratch = Path(tempfile.mkdtemp(prefix=f"replay-{os.getpid()}-", dir=worker_root()))
    try:
        workspace = Workspace(scratch / WORKSPACE, task.cwd)
        unpack(chunks, task, workspace)
        log, after = run_sync(execute(task, workspace, target, kernel_log=scratch / "kernel.log", pass_env=pass_env,
                                      sandbox=sandbox))
        return log, after, where()
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


class ReplayWorker:
    """A long-lived Ray worker (an async actor) for one slot: it replays one notebook at a
    time, each in a fresh kernel of ``target``, and starts the next notebook's kernel while
    the current one runs (verify's :class:`~junobench.envs.kernel.KernelPool`, size 1).

    The driver pings it every few seconds (:meth:`ping`); a worker not pinged for
    ``orphaned`` seconds takes its driver for gone (ended with its cluster's head, or
    killed where Ray cannot end its workers): it kills its kernels, removes its folder and
    ends its process."""

    def __init__(self, target: KernelTarget | None, pass_env: Sequence[str] = (),
                 sandbox: Sandbox | None = None, orphaned: float | None = None) -> None:
        self.target = target
        self.pass_env = tuple(pass_env)
        self.sandbox = sandbox or Sandbox()
        self.pool: KernelPool | None = None
        self.current: tuple[ReplayTask, StartedKernel] | None = None
        self.pinged = time.monotonic()
        worker_root()
        if orphaned is not None:
            threading.Thread(target=self._watch_driver, args=(orphaned,), name="junobench-orphan",
                             daemon=True).start()

    def _watch_driver(self, orphaned: float) -> None:
        while time.monotonic() - self.pinged < orphaned:
            time.sleep(min(5.0, orphaned / 4))
        leave(1)

    async def ping(self) -> None:
        """Answer the driver (it takes a worker that stops answering for frozen)."""
        self.pinged = time.monotonic()

    def whereabouts(self) -> dict[str, Any]:
        """Where this worker runs (its node's host name and id, its process id, its folder):
        what the driver needs to remove its folder once it is killed."""
        import ray

        return {"host": socket.gethostname(), "pid": os.getpid(), "root": str(worker_root()),
                "node": ray.get_runtime_context().get_node_id()}

    async def prepare(self, task: ReplayTask, chunks: Sequence[Any], more: bool) -> None:
        """Get ready to replay ``task``: a kernel started (with ``more``, the next one starts
        too) and the task's files received from ``chunks`` into its folder. Separate from
        :meth:`replay` so that the driver bounds the start-up on its own."""
        await self.discard()
        _check_target(self.target)
        if self.pool is None:
            self.pool = KernelPool(self.target or own_kernel(), size=1, notebooks=0,
                                   env=kernel_env(keep=self.pass_env), scratch=worker_root(),
                                   sandbox=self.sandbox, pass_env=self.pass_env)
        self.pool.remaining = 1 + int(more)
        kernel = await self.pool.acquire()
        self.current = (task, kernel)
        workspace = Workspace(Path(kernel.cwd).parent, task.cwd, Path(kernel.cwd))
        try:
            await asyncio.to_thread(unpack, chunks, task, workspace)
        except BaseException:
            await self.discard()
            raise

    async def replay(self) -> tuple[RunLog, Any, str]:
        """Replay the task :meth:`prepare` got ready; its kernel and folder are removed after."""
        if self.current is None:
            raise RuntimeError("nothing prepared to replay")
        task, kernel = self.current
        try:
            workspace = Workspace(Path(kernel.cwd).parent, task.cwd, Path(kernel.cwd))
            log, after = await execute(task, workspace, self.target, kernel=kernel)
            return log, after, where()
        finally:
            await self.discard()

    async def discard(self) -> None:
        """Stop the kernel of a prepared task and remove its folder, if any."""
        current, self.current = self.current, None
        if current is not None:
            kernel = current[1]
            try:
                await kernel.shutdown()
            finally:
                await asyncio.to_thread(shutil.rmtree, Path(kernel.cwd).parent, True)

    async def close(self, leave_too: bool = False) -> None:
        """Stop the kernels (prepared, started ahead), if any, and remove the worker's folder;
        with ``leave_too`` (the cluster's head is lost: Ray cannot end this process), end
        the process just after answering."""
        try:
            await self.discard()
            if self.pool is not None:
                await self.pool.close()
        finally:
            close_root()
            if leave_too:
                asyncio.get_running_loop().call_later(0.5, leave, 0)


def leave(code: int) -> None:
    """End this worker's process now: its kernels (every process below it) killed, its
    folder removed."""
    from junobench.verify.lifeline import descendants, kill_all

    kill_all(descendants(os.getpid()))
    close_root()
    os._exit(code)


def _check_target(target: KernelTarget | None) -> None:
    if target is not None and not Path(target.python).is_file():
        raise JunoBenchError(f"the environment's interpreter {target.python} is not on this worker",
                             hint="put the environment on a path every worker shares")


def where() -> str:
    """``host:pid`` of this process."""
    return f"{socket.gethostname()}:{os.getpid()}"
