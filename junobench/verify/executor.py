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
import contextlib
import shutil
import tempfile
from collections.abc import AsyncIterator, Awaitable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path, PurePosixPath
from types import TracebackType
from typing import Any, TypeVar

from junobench.data.notebook import Step
from junobench.envs.kernel import KernelPool, KernelTarget, StartedKernel, kernel_env, own_kernel
from junobench.envs.sandbox import Sandbox
from junobench.errors import JunoBenchError
from junobench.safety.paths import link_root
from junobench.verify.case_files import Entry, copy_entries, survey, workspace_name
from junobench.verify.judge import RunLog
from junobench.verify.runner import replay

#: The Hugging Face Hub's own address (a worker is told the Hub's address only when it differs).
DEFAULT_HUB = "https://huggingface.co"

#: Name of the workspace folder inside a task's scratch folder (the kernel's log lies beside it).
WORKSPACE = "work"


@dataclass(frozen=True)
class Place:
    """A file or folder on the driver's disk (``source``, absolute), copied to ``dest``
    (relative) in the task's workspace."""

    source: str
    dest: str
    trusted: str | None = None  # where links under ``source`` may point (see safety.paths.copy_tree)


@dataclass(frozen=True)
class HubCase:
    """A case folder that the machine running the task fetches from the Hub itself (only
    that case's files, :func:`~junobench.data.snapshot.fetch_case`), copied to ``dest``."""

    repo_id: str
    case_id: str
    dest: str
    revision: str | None = None
    endpoint: str | None = None  # the Hub's address, when not the default


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
    prepare: Any = None  # callable(notebook, path: workspace-relative str -> Path) -> None, picklable
    after: Any = None  # async callable(nbclient client) -> None, picklable, returned with its state
    requirements: tuple[str, ...] = ()  # pinned requirements of the notebook's environment
    fetch: tuple[HubCase, ...] = ()  # case folders fetched from the Hub where the task runs
    keep_notebook: bool = False  # return the replayed notebook with its outputs (RunLog.notebook)


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
    """Runs replay tasks, ``jobs`` at a time, in kernels of ``target`` (an environment's
    interpreter, :func:`junobench.envs.kernel.env_kernel`; None: the interpreter of
    whichever process runs the task) whose environment is scrubbed of credentials
    (:mod:`junobench.safety.env`) but for the variables named in ``pass_env``, confined by
    ``sandbox`` (:mod:`junobench.envs.sandbox`)."""

    jobs: int = 1
    target: KernelTarget | None = None
    pass_env: tuple[str, ...] = ()  # credential-like variables the kernels may see
    sandbox: Sandbox = field(default_factory=Sandbox)
    name: str = field(default="local", init=False)
    #: Whether tasks may run on other machines, which then fetch Hub cases themselves.
    remote: bool = field(default=False, init=False)

    def __post_init__(self) -> None:
        if self.jobs < 1:
            raise JunoBenchError(f"--jobs must be at least 1, got {self.jobs}")
        self._slots: asyncio.Semaphore | None = None
        self.expected = 0
        #: Why the executor stopped running replays before the end (a lost cluster), if it did.
        self.stopped: str | None = None
        #: The cases (task keys, for tasks of no case) whose replays began: a run stopped
        #: early tells those it interrupted from those it never reached.
        self.begun: set[str] = set()

    def expect(self, notebooks: int) -> None:
        """Say how many replays are coming (an executor may start kernels ahead for them)."""
        self.expected = notebooks

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
    """Kernels on this machine, ``jobs`` at a time, each in a temporary copy of its files;
    ``pool`` kernels (default: ``jobs + 1``; 0: none) are started ahead so that start-up
    overlaps execution (:class:`~junobench.envs.kernel.KernelPool`). One more than the
    jobs because a kernel takes about as long to start as a short notebook takes to run:
    measured on the sample, the share of time waiting for a kernel fell from 16% to 6%
    (1 job) and to 10% (2 jobs), most of what is left being the first start."""

    pool: int | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        self._pool: KernelPool | None = None

    async def __aenter__(self) -> LocalExecutor:
        await super().__aenter__()
        size = self.jobs + 1 if self.pool is None else self.pool
        if size > 0 and self.expected > 0:
            self._pool = KernelPool(self.target or own_kernel(), size=size, notebooks=self.expected,
                                    env=kernel_env(keep=self.pass_env), sandbox=self.sandbox,
                                    pass_env=self.pass_env)
        return self

    async def __aexit__(self, kind: type[BaseException] | None, error: BaseException | None,
                        trace: TracebackType | None) -> None:
        try:
            if self._pool is not None:
                await self._pool.close()
        finally:
            self._pool = None
            await super().__aexit__(kind, error, trace)

    async def run(self, task: ReplayTask) -> ReplayOutcome:
        async with self.slots:
            self.begun.update({task.case or task.key, task.key})
            if self._pool is not None:
                return await self._run_pooled(task, self._pool)
            scratch = Path(await asyncio.to_thread(tempfile.mkdtemp, prefix=f"junobench-{task.key}-"))
            try:
                return await self._replay(task, Workspace(scratch / WORKSPACE, task.cwd),
                                          kernel_log=scratch / "kernel.log", pass_env=self.pass_env,
                                          sandbox=self.sandbox)
            finally:
                await asyncio.to_thread(shutil.rmtree, scratch, True)

    async def _run_pooled(self, task: ReplayTask, pool: KernelPool) -> ReplayOutcome:
        """Replay in a kernel the pool started ahead: the task's working directory is the
        kernel's own (the task's other files go beside it), filled once it is handed out."""
        try:
            kernel = await pool.acquire()
        except (RuntimeError, OSError, TimeoutError) as error:  # as replay() reports a failed start
            return ReplayOutcome(task, not_run(task, f"{type(error).__name__}: {error}"))
        try:
            return await self._replay(task, Workspace(Path(kernel.cwd).parent, task.cwd, Path(kernel.cwd)),
                                      kernel=kernel)
        finally:
            await kernel.shutdown()
            await asyncio.to_thread(shutil.rmtree, Path(kernel.cwd).parent, True)

    async def _replay(self, task: ReplayTask, workspace: Workspace, **options: Any) -> ReplayOutcome:
        """Copy the task's files into ``workspace`` and replay it there (``options`` go to
        :func:`execute`)."""
        refused = await _materialize(task, workspace)
        if refused is not None:
            return refused
        log, after = await execute(task, workspace, self.target, **options)
        return ReplayOutcome(task, log, after)


@dataclass(frozen=True)
class Workspace:
    """Where a task's files lie: paths relative to the workspace under ``root``, except
    (``cwd_at``) the task's working directory ``cwd`` and what it holds, placed at a
    directory of their own (a pooled kernel's)."""

    root: Path
    cwd: str
    cwd_at: Path | None = None

    def path(self, relative: str) -> Path:
        """The absolute place of a workspace-relative path (refused when it is absolute or
        climbs out: :func:`~junobench.verify.case_files.workspace_name`)."""
        path = self.root / workspace_name(relative)
        if self.cwd_at is None:
            return path
        rel, cwd = PurePosixPath(relative), PurePosixPath(self.cwd)
        if rel == cwd or cwd in rel.parents:
            return self.cwd_at / rel.relative_to(cwd)
        return path

    @property
    def working(self) -> Path:
        return self.path(self.cwd)


async def run_tasks(executor: Executor, tasks: Sequence[ReplayTask]) -> list[ReplayOutcome]:
    """Run ``tasks`` with ``executor`` (entered here); outcomes in the tasks' order."""
    executor.expect(len(tasks))
    async with executor:
        return await gather_all(*(executor.run(t) for t in tasks))


@contextlib.asynccontextmanager
async def entered_for(executor: Executor, replays: int) -> AsyncIterator[Executor]:
    """``executor`` entered for the ``replays`` to come, and not started at all for none: a
    rerun that keeps every earlier result starts no kernel, Ray driver or cluster."""
    if not replays:
        yield executor
        return
    async with executor:
        yield executor


T = TypeVar("T")


async def gather_all(*runs: Awaitable[T]) -> list[T]:
    """:func:`asyncio.gather` that never ends while one of ``runs`` still runs.

    When the caller is cancelled (Ctrl-C) or one run fails, every other run is cancelled
    once and awaited, further cancellations notwithstanding: what a run holds (a kernel, a
    Ray worker) is given back before the caller goes on, e.g. out of ``async with
    executor``. (``gather`` returns as soon as the first run ends cancelled, and leaves the
    rest to finish while the executor closes under them.)

    >>> asyncio.run(gather_all(asyncio.sleep(0, "a"), asyncio.sleep(0, "b")))
    ['a', 'b']
    """
    tasks = [asyncio.ensure_future(run) for run in runs]
    try:
        if tasks:
            await asyncio.wait(tasks, return_when=asyncio.FIRST_EXCEPTION)
    except asyncio.CancelledError:
        await _cancel_and_wait_out(tasks)
        raise
    failed = next((task for task in tasks if task.done() and not task.cancelled() and task.exception()), None)
    if failed is not None:
        await _cancel_and_wait_out(tasks)
        raise failed.exception()  # type: ignore[misc]
    if any(task.cancelled() for task in tasks):
        raise asyncio.CancelledError
    return [task.result() for task in tasks]


async def _cancel_and_wait_out(tasks: Sequence[asyncio.Future[Any]]) -> None:
    """Cancel the tasks not done, once each, and :func:`wait_out` them all."""
    for task in tasks:
        task.cancel()  # nothing for a task already done
    await wait_out(tasks)


async def wait_out(futures: Sequence[asyncio.Future[Any]], seconds: float | None = None) -> None:
    """Wait until every one of ``futures`` has ended (at most ``seconds``), whatever
    cancellations of the caller arrive meanwhile; what the ended ones raised is taken as
    heard (the caller's own exception, if any, is the one that counts)."""
    loop = asyncio.get_running_loop()
    deadline = None if seconds is None else loop.time() + seconds
    pending = {future for future in futures if not future.done()}
    while pending and (deadline is None or loop.time() < deadline):
        try:
            _, pending = await asyncio.wait(pending, timeout=None if deadline is None else deadline - loop.time())
        except asyncio.CancelledError:
            continue
    for future in futures:
        if future.done() and not future.cancelled():
            future.exception()


async def _materialize(task: ReplayTask, workspace: Workspace) -> ReplayOutcome | None:
    """Copy the task's files into ``workspace``; the outcome of a task whose files are
    refused (an input error) or cannot be copied, else None."""
    try:
        await asyncio.to_thread(materialize, task, workspace)
    except JunoBenchError as error:
        return ReplayOutcome(task, refused(task, str(error)))
    except OSError as error:
        return ReplayOutcome(task, not_run(task, f"cannot copy the task's files: {error}"))
    return None


def task_files(task: ReplayTask) -> list[Entry]:
    """The checked entries of the task's places (:func:`~junobench.verify.case_files.survey`:
    the one check of case files, whichever executor runs the task)."""
    return survey(task.places, case=task.case)


def materialize(task: ReplayTask, workspace: Workspace, *, entries: Sequence[Entry] | None = None) -> None:
    """Copy the task's places (``entries``: their survey, when already made), and its Hub
    cases (fetched here), into ``workspace``."""
    copy_entries(task_files(task) if entries is None else entries, workspace)
    fetch_cases(task, workspace)


def fetch_cases(task: ReplayTask, workspace: Workspace) -> None:
    """Fetch the task's Hub cases here and copy them into ``workspace``."""
    if not task.fetch:
        return
    from junobench.data.snapshot import fetch_case

    for case in task.fetch:
        options: dict[str, Any] = {"endpoint": case.endpoint} if case.endpoint else {}
        folder = fetch_case(case.repo_id, case.case_id, revision=case.revision, **options)
        fetched = Place(str(folder), case.dest, trusted=str(link_root(folder.parent.parent)))
        copy_entries(survey([fetched], case=case.case_id), workspace)


def hub_endpoint() -> str | None:
    """The Hub address this process uses, when it is not the default one (workers use it too)."""
    from huggingface_hub import constants

    return None if constants.ENDPOINT.rstrip("/") == DEFAULT_HUB else constants.ENDPOINT


async def execute(task: ReplayTask, workspace: Workspace, target: KernelTarget | None, *,
                  kernel_log: Path | None = None, kernel: StartedKernel | None = None,
                  pass_env: Sequence[str] = (), sandbox: Sandbox | None = None) -> tuple[RunLog, Any]:
    """Replay ``task`` whose files are in ``workspace``, in a new kernel of ``target`` (None:
    this interpreter's; its environment keeps the credential-like variables of ``pass_env``
    only) confined by ``sandbox`` with the workspace its only writable folder, or in
    ``kernel`` (started ahead in the working directory); returns the log and the ``after``
    hook. Runs on whichever machine holds the files."""
    import nbformat

    try:
        path = workspace.path(task.notebook)
        notebook = await asyncio.to_thread(nbformat.read, path, as_version=4)
    except (JunoBenchError, OSError, ValueError) as error:
        return not_run(task, f"cannot read the notebook {task.notebook}: {error}"), task.after
    if task.prepare is not None:
        task.prepare(notebook, workspace.path)
    if task.keep_notebook:  # the file keeps what this replay ran, nothing the notebook held before
        for cell in notebook.cells:
            if cell.cell_type == "code":
                cell.outputs, cell.execution_count = [], None
    log = await replay(notebook, task.steps, cwd=workspace.working, timeout=task.timeout, kernel_log=kernel_log,
                       after=task.after, target=target, kernel=None if kernel is None else _given(kernel),
                       pass_env=pass_env, sandbox=sandbox, writable=[workspace.root])
    if task.keep_notebook:  # (outputs nbformat cannot write: the replay stands, unkept)
        with contextlib.suppress(ValueError, TypeError):
            log = replace(log, notebook=await asyncio.to_thread(nbformat.writes, notebook))
    return log, task.after


async def _given(kernel: StartedKernel) -> StartedKernel:
    return kernel


def not_run(task: ReplayTask, why: str) -> RunLog:
    """The log of a replay that could not start."""
    return RunLog(steps=(), planned=len(task.steps), failure=why, timeout=task.timeout)


def refused(task: ReplayTask, why: str) -> RunLog:
    """The log of a replay whose files were refused (an input error, judged as such)."""
    return RunLog(steps=(), planned=len(task.steps), input_error=why, timeout=task.timeout)


def without_places(task: ReplayTask) -> ReplayTask:
    """``task`` with its places dropped (they travel separately, as an archive)."""
    return replace(task, places=())
