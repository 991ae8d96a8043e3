"""Where notebook replays run: one seam for ``verify``, ``runtime-info`` and ``construct reproduce``.

A :class:`ReplayTask` says what to replay: the files its scratch folder needs (copied from
the driver's disk, :class:`Place`), the notebook among them, the steps of its execution
order, the working directory, the time limit, and optional hooks that must be picklable
(they travel to remote workers): ``prepare`` edits the notebook in memory before the
replay, ``after`` inspects the kernel once every step succeeded and is returned with
what it found. An executor runs tasks and returns a :class:`ReplayOutcome` for each:

:func:`junobench.verify.make_executor` makes one by name:

- :class:`LocalExecutor` (the default): ``jobs`` kernels at a time on this machine;
- :class:`~junobench.verify.ray_executor.RayExecutor` (``--executor ray``): one Ray task
  per replay, the files shipped with it (no shared filesystem), bounded retries of
  infrastructure faults (:attr:`ReplayOutcome.error` when they persist).

Callers start as many :meth:`Executor.run` coroutines as they like inside
``async with executor:``; the executor bounds how many run at once, and results arrive in
completion order. Cancelling a ``run`` (Ctrl-C) stops its kernel wherever it runs.

>>> task = ReplayTask("x", "nb/x.ipynb", (Step(0, 1),), cwd="nb", places=(Place("/data/x", "nb"),),
...                   timeout=60)
>>> outcome = run_sync(run_tasks(LocalExecutor(2), [task]))[0]   # doctest: +SKIP
>>> outcome.log.steps[0].status                                  # doctest: +SKIP
'ok'
"""

from __future__ import annotations

import asyncio
import shutil
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import TracebackType
from typing import Any

from junobench.data.notebook import Step
from junobench.errors import JunoBenchError
from junobench.safety.paths import relative_name
from junobench.verify.judge import RunLog
from junobench.verify.runner import replay

#: Name of the workspace folder inside a task's scratch folder (the kernel's log lies beside it).
WORKSPACE = "work"


@dataclass(frozen=True)
class Place:
    """A file or folder on the driver's disk (``source``, absolute), copied to ``dest``
    (relative) in the task's workspace."""

    source: str
    dest: str


@dataclass(frozen=True)
class ReplayTask:
    """One notebook replay; paths (``notebook``, ``cwd``, :attr:`Place.dest`) are relative
    to the task's workspace. ``key`` names it in messages (e.g. ``pandas_1_reproduced``)."""

    key: str
    notebook: str
    steps: tuple[Step, ...]
    cwd: str
    places: tuple[Place, ...]
    timeout: float | None
    case: str | None = None
    prepare: Any = None  # callable(notebook, workspace: Path) -> None, picklable
    after: Any = None  # async callable(nbclient client) -> None, picklable, returned with its state
    pass_env: tuple[str, ...] = ()
    requirements: tuple[str, ...] = ()  # pinned requirements of the notebook's environment


@dataclass
class ReplayOutcome:
    """What became of a task: the replay's ``log`` and its ``after`` hook (as the worker left
    it), how many ``attempts`` it took, the ``faults`` of the failed ones, and ``error``
    when no attempt succeeded: an infrastructure error, not a verdict on the notebook."""

    task: ReplayTask
    log: RunLog
    after: Any = None
    attempts: int = 1
    faults: tuple[str, ...] = ()
    error: str | None = None
    worker: str | None = None

    @property
    def ok(self) -> bool:
        """True when the replay happened (whatever the notebook did)."""
        return self.error is None


@dataclass
class Executor:
    """Runs replay tasks, ``jobs`` at a time (the base: local, this process's kernels)."""

    jobs: int = 1
    name: str = field(default="local", init=False)

    def __post_init__(self) -> None:
        if self.jobs < 1:
            raise JunoBenchError(f"--jobs must be at least 1, got {self.jobs}")
        self._slots: asyncio.Semaphore | None = None

    async def __aenter__(self) -> Executor:
        self._slots = asyncio.Semaphore(self.jobs)
        return self

    async def __aexit__(self, kind: type[BaseException] | None, error: BaseException | None,
                        trace: TracebackType | None) -> None:
        self._slots = None

    @property
    def slots(self) -> asyncio.Semaphore:
        if self._slots is None:
            raise RuntimeError("use the executor inside `async with executor:`")
        return self._slots

    def describe(self) -> str:
        """``local, 2 jobs``: for summaries."""
        return f"{self.name}, {self.jobs} job{'s' if self.jobs != 1 else ''}"

    async def run(self, task: ReplayTask) -> ReplayOutcome:
        raise NotImplementedError


@dataclass
class LocalExecutor(Executor):
    """Kernels on this machine, ``jobs`` at a time, each in a temporary copy of its files."""

    async def run(self, task: ReplayTask) -> ReplayOutcome:
        async with self.slots:
            scratch = Path(await asyncio.to_thread(tempfile.mkdtemp, prefix=f"junobench-{task.key}-"))
            try:
                try:
                    await asyncio.to_thread(place_all, task.places, scratch / WORKSPACE)
                except (JunoBenchError, OSError) as error:
                    return ReplayOutcome(task, not_run(task, f"cannot copy the task's files: {error}"))
                log, after = await execute(task, scratch)
                return ReplayOutcome(task, log, after)
            finally:
                await asyncio.to_thread(shutil.rmtree, scratch, True)


async def run_tasks(executor: Executor, tasks: Sequence[ReplayTask]) -> list[ReplayOutcome]:
    """Run ``tasks`` with ``executor`` (entered here); outcomes in the tasks' order."""
    async with executor:
        return list(await asyncio.gather(*(executor.run(t) for t in tasks)))


def place_all(places: Sequence[Place], workspace: Path) -> None:
    """Copy every place into ``workspace`` (created); a destination that leaves it is refused."""
    workspace.mkdir(parents=True, exist_ok=True)
    for item in places:
        target = inside(workspace, item.dest)
        source = Path(item.source)
        target.parent.mkdir(parents=True, exist_ok=True)
        if source.is_dir():
            shutil.copytree(source, target, dirs_exist_ok=True)
        elif source.is_file():
            shutil.copy2(source, target)
        else:
            raise JunoBenchError("not a file or folder", file=source)


def inside(root: Path, relative: str) -> Path:
    """``root / relative``, refused when it is absolute or climbs out of ``root``
    (:func:`junobench.safety.paths.relative_name`)."""
    if relative_name(relative) is None:
        raise JunoBenchError(f"path {relative!r} leaves the task's workspace")
    return root / relative


async def execute(task: ReplayTask, scratch: Path) -> tuple[RunLog, Any]:
    """Replay ``task`` whose files are in ``scratch``/work (the kernel's own log beside it);
    returns the log and the ``after`` hook. Runs on whichever machine holds the files."""
    import nbformat

    workspace = scratch / WORKSPACE
    try:
        path = inside(workspace, task.notebook)
        cwd = inside(workspace, task.cwd)
        notebook = await asyncio.to_thread(nbformat.read, path, as_version=4)
    except (JunoBenchError, OSError, ValueError) as error:
        return not_run(task, f"cannot read the notebook {task.notebook}: {error}"), task.after
    if task.prepare is not None:
        task.prepare(notebook, workspace)
    log = await replay(notebook, task.steps, cwd=cwd, timeout=task.timeout,
                       kernel_log=scratch / "kernel.log", after=task.after, pass_env=task.pass_env)
    return log, task.after


def not_run(task: ReplayTask, why: str) -> RunLog:
    """The log of a replay that could not start."""
    return RunLog(steps=(), planned=len(task.steps), failure=why, timeout=task.timeout)


def without_places(task: ReplayTask) -> ReplayTask:
    """``task`` with its places dropped (they travel separately, as an archive)."""
    return replace(task, places=())


async def cancel_quietly(coroutines: Sequence[asyncio.Future[Any]]) -> None:
    """Cancel ``coroutines`` and wait until they are done."""
    for item in coroutines:
        item.cancel()
    await asyncio.gather(*coroutines, return_exceptions=True)
