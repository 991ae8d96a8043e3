"""Running a notebook's recorded order in a fresh Jupyter kernel (nbclient + ipykernel).

:func:`replay` starts a kernel with the working directory given, runs the steps of an
execution order one by one (a ``[reexecute]`` target runs twice), stops at the first run
that raises or exceeds the per-cell timeout, and always kills the kernel. It records
outputs and execution counts into the notebook object, the way Jupyter would, and returns
a :class:`~junobench.verify.judge.RunLog` for the judge.

The kernel is an IPython kernel of the interpreter a :class:`~junobench.envs.kernel.KernelTarget`
names: by default the running interpreter (not whatever ``python3`` kernelspec the machine
has registered), or that of an environment made by ``junobench env create``; how it is
started lives in :func:`junobench.envs.kernel.start_kernel`.

>>> import nbformat
>>> nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("1/0")])
>>> log = run_sync(replay(nb, [Step(0, 1)], cwd=".", timeout=60))  # doctest: +SKIP
>>> log.steps[0].ename  # doctest: +SKIP
'ZeroDivisionError'
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import math
import time
from collections.abc import Awaitable, Callable, Coroutine, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

from junobench.data.notebook import Step
from junobench.envs.kernel import (
    KERNEL_NAME,
    STARTUP_TIMEOUT,
    KernelTarget,
    StartedKernel,
    kernel_env,
    own_kernel,
    start_kernel,
)
from junobench.envs.sandbox import Sandbox
from junobench.errors import JunoBenchError
from junobench.verify.judge import ERROR, OK, TAMPERED, TIMEOUT, RunLog, StepOutcome
from junobench.verify.outputs import refused_reply

T = TypeVar("T")

def require_run_extra() -> None:
    """Fail clearly when the packages for running notebooks are not installed."""
    missing = []
    for module in ("nbclient", "ipykernel", "jupyter_client"):
        try:
            __import__(module)
        except ImportError:
            missing.append(module)
    if missing:
        raise JunoBenchError(f"running notebooks needs {', '.join(missing)}, not installed",
                             hint="pip install 'junobench[run]'")


async def replay(
    notebook: Any,
    steps: Sequence[Step],
    *,
    cwd: str | Path,
    timeout: float | None,
    env: Mapping[str, str] | None = None,
    kernel_log: str | Path | None = None,
    after: Callable[[Any], Awaitable[None]] | None = None,
    target: KernelTarget | None = None,
    kernel: Awaitable[StartedKernel] | None = None,
    pass_env: Iterable[str] = (),
    sandbox: Sandbox | None = None,
    writable: Iterable[str | Path] = (),
) -> RunLog:
    """Run ``steps`` (code-cell indices, in order) of ``notebook`` (an nbformat
    ``NotebookNode``, updated in place) in a new kernel started in ``cwd``.

    The kernel runs in ``target``'s interpreter (default: junobench's own); ``kernel``,
    when given, is a kernel already being started for this notebook (by a pool), awaited
    instead of starting one. ``timeout`` is per run of a cell, in seconds (None: no
    limit). The kernel is killed when the replay ends, whatever happened. The kernel's
    own stdout/stderr (not the notebook's outputs) go to ``kernel_log`` (default:
    discarded); its last line is quoted when the kernel fails. ``after``, when given, is
    awaited with the nbclient ``NotebookClient`` once every step has run without error,
    before the kernel stops (to inspect the kernel's state, e.g. :mod:`junobench.runtime`).
    ``RunLog.kernel_seconds`` is the time spent waiting for the kernel. The kernel's
    environment is ``env`` (default: ours) without credentials (:func:`~junobench.envs.kernel.kernel_env`), but
    for the variables named in ``pass_env`` (a pooled ``kernel`` has the pool's). The kernel
    runs in ``sandbox`` (default: the default :class:`~junobench.envs.sandbox.Sandbox`; a
    pooled ``kernel`` is in the pool's), where ``cwd`` and ``writable`` are the only folders
    it may write; the output kept per cell run is the sandbox's ``max_output``, and a kernel
    that a limit ended says so in ``RunLog.failure`` (``out of memory: …``).
    """
    from nbclient.exceptions import CellTimeoutError, DeadKernelError

    from junobench.verify.client import bounded_client

    policy = sandbox or Sandbox()
    pass_env = tuple(pass_env)
    positions = [i for i, cell in enumerate(notebook.cells) if cell.cell_type == "code"]
    client = bounded_client(
        notebook,
        max_output=policy.max_output,
        kernel_name=KERNEL_NAME,
        timeout=max(1, math.ceil(timeout)) if timeout else None,
        startup_timeout=STARTUP_TIMEOUT,
        allow_errors=True,
        record_timing=False,
        shutdown_kernel="immediate",
        interrupt_on_timeout=False,
        iopub_timeout=10,
        resources={"metadata": {"path": str(cwd)}},
    )
    outcomes: list[StepOutcome] = []
    failure: str | None = None
    kernel_seconds = 0.0
    kernel_pid: int | None = None
    replies: list[dict[str, Any]] = []
    client.on_cell_executed = lambda cell, cell_index, execute_reply: replies.append(execute_reply)
    current: int | None = None  # code cell running, for failure messages
    started = time.perf_counter()
    running: StartedKernel | None = None
    limit: str | None = None
    tail = ""
    try:
        # Started and stopped here rather than with client.async_setup_kernel(), which
        # takes over SIGINT: Ctrl-C must cancel the whole run (and kill every kernel).
        try:
            if kernel is None:
                kernel = start_kernel(target or own_kernel(), cwd=cwd, env=kernel_env(env, keep=pass_env),
                                      log=kernel_log, timeout=STARTUP_TIMEOUT, sandbox=policy, writable=writable,
                                      pass_env=pass_env)
            running = await kernel
            client.set_max_output(running.sandbox.max_output)
            kernel_log = running.log
            # (a kernel started ahead: the time its user waited for the pool to hand it out)
            kernel_seconds = time.perf_counter() - started + running.waited
            kernel_pid = running.pid
            client.km, client.kc = running.km, running.kc
            await asyncio.to_thread(running.hand_over)  # the task's files, copied in after it started
            if running.sandbox.max_output:
                client.watch()
            await client.probe(STARTUP_TIMEOUT)
            for step in steps:
                current = step.code_cell_index
                position = positions[current]
                cell = notebook.cells[position]
                replies.clear()
                client.new_run()
                try:
                    refused = await client.run(cell, position, running.limit)
                except CellTimeoutError:
                    outcomes.append(StepOutcome(step.code_cell_index, TIMEOUT))
                    break
                await client.recover(cell)
                unread = refused_reply(running.sandbox.max_output)
                outcomes.append(StepOutcome(step.code_cell_index, ERROR, None, unread) if refused
                                else _outcome(step.code_cell_index, cell, replies))
                if outcomes[-1].status != OK:
                    break
                changed = client.tampered(replies[-1]) if replies else []
                if changed:
                    failure = (f"{TAMPERED}: code cell {step.code_cell_index} changed how the kernel runs code "
                               f"({', '.join(changed)}), so later cells may not run as written")
                    break
            else:
                current = None
                if after is not None:
                    await after(client)
        finally:
            client.unwatch()
            client.km = client.kc = None
            if running is not None:
                limit = running.limit()  # before its runtime folder goes
                tail = running.log_tail()
                await running.shutdown()
    except DeadKernelError:
        where = f" while running code cell {current}" if current is not None else ""
        failure = f"{limit}{where}" if limit else f"the kernel died{where}" + _last_line(tail)
    except (RuntimeError, OSError, TimeoutError) as error:
        failure = f"{type(error).__name__}: {error}" + _last_line(tail)
    if not kernel_seconds:
        kernel_seconds = time.perf_counter() - started
    return RunLog(
        steps=tuple(outcomes),
        planned=len(steps),
        failure=failure,
        timeout=timeout,
        seconds=time.perf_counter() - started,
        kernel_seconds=kernel_seconds,
        kernel_pid=kernel_pid,
        sandbox=(running.sandbox if running is not None else policy).describe(),
    )


def _outcome(index: int, cell: Any, replies: list[dict[str, Any]]) -> StepOutcome:
    content = replies[-1].get("content", {}) if replies else {}
    for output in cell.get("outputs", []):
        if output.get("output_type") == "error":
            return StepOutcome(index, ERROR, output.get("ename"), output.get("evalue"))
    if content.get("status") == "error":
        return StepOutcome(index, ERROR, content.get("ename"), content.get("evalue"))
    return StepOutcome(index, OK)


def _last_line(tail: str) -> str:
    """`` (the last line)`` of the end of a kernel's log (:meth:`StartedKernel.log_tail`)."""
    lines = [ln for ln in tail.splitlines() if ln.strip()]
    return f" ({lines[-1].strip()[:500]})" if lines else ""


def run_sync(coroutine: Coroutine[Any, Any, T]) -> T:
    """Run a coroutine to completion, also from inside a running event loop (Jupyter).
    Interrupted where asyncio does not turn Ctrl-C into a cancellation (SIGINT ignored, as
    in a background job, and a stop signal raising KeyboardInterrupt in the loop), the tasks
    left are cancelled and awaited before the loop closes: what they end with as they stop
    (a kernel that dies as it is stopped) is theirs to handle, not a traceback on stderr."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        runner_class = getattr(asyncio, "Runner", None)
        if runner_class is None:  # Python 3.10 (its Ctrl-C is a KeyboardInterrupt in the loop as it is)
            return asyncio.run(coroutine)
        with runner_class() as runner:
            try:
                result: T = runner.run(coroutine)
                return result
            except KeyboardInterrupt:
                loop = runner.get_loop()
                left = asyncio.all_tasks(loop)
                for task in left:
                    task.cancel()
                loop.run_until_complete(asyncio.gather(*left, return_exceptions=True))
                raise
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coroutine).result()
