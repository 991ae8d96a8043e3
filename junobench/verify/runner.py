"""Running a notebook's recorded order in a fresh Jupyter kernel (nbclient + ipykernel).

:func:`replay` starts a kernel with the working directory given, runs the steps of an
execution order one by one (a ``[reexecute]`` target runs twice), stops at the first run
that raises or exceeds the per-cell timeout, and always kills the kernel. It records
outputs and execution counts into the notebook object, the way Jupyter would, and returns
a :class:`~junobench.verify.judge.RunLog` for the judge.

The kernel is the IPython kernel of the running interpreter (not whatever ``python3``
kernelspec the machine has registered), so it sees the packages junobench runs with.

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
import os
import time
from collections.abc import Awaitable, Callable, Coroutine, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

from junobench.data.notebook import Step
from junobench.errors import JunoBenchError
from junobench.safety.env import scrub
from junobench.verify.judge import ERROR, OK, TIMEOUT, RunLog, StepOutcome

T = TypeVar("T")

#: How long a kernel may take to start and answer (seconds).
STARTUP_TIMEOUT = 120

#: Environment defaults for the kernel: single-threaded maths libraries (parallel kernels
#: do not oversubscribe the cores), a fixed hash seed, no debugger start-up chatter.
KERNEL_ENV_DEFAULTS: dict[str, str] = {
    "PYTHONHASHSEED": "0",
    "OMP_NUM_THREADS": "1",
    "OPENBLAS_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
    "PYDEVD_DISABLE_FILE_VALIDATION": "1",
}


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


def kernel_env(base: Mapping[str, str] | None = None, *, keep: Iterable[str] = ()) -> dict[str, str]:
    """The kernel's environment: ``base`` (default: ours) without its credential-like
    variables (:mod:`junobench.safety.env`; those named in ``keep`` stay), plus
    :data:`KERNEL_ENV_DEFAULTS` where unset; ``MPLBACKEND`` is dropped so figures render
    inline as in Jupyter."""
    env = scrub(os.environ if base is None else base, keep=keep)
    env.pop("MPLBACKEND", None)
    for key, value in KERNEL_ENV_DEFAULTS.items():
        env.setdefault(key, value)
    return env


def _kernel_manager_class() -> type:
    from jupyter_client.kernelspec import KernelSpecManager
    from jupyter_client.manager import AsyncKernelManager
    from traitlets import default

    class InterpreterKernelManager(AsyncKernelManager):
        """Always the ipykernel of this interpreter: no kernelspec directories are searched,
        so ``python3`` resolves to ipykernel's built-in spec (``sys.executable``)."""

        @default("kernel_spec_manager")
        def _no_kernel_dirs(self) -> KernelSpecManager:
            return KernelSpecManager(kernel_dirs=[], parent=self)

    return InterpreterKernelManager


async def replay(
    notebook: Any,
    steps: Sequence[Step],
    *,
    cwd: str | Path,
    timeout: float | None,
    env: Mapping[str, str] | None = None,
    kernel_log: str | Path | None = None,
    after: Callable[[Any], Awaitable[None]] | None = None,
    pass_env: Iterable[str] = (),
) -> RunLog:
    """Run ``steps`` (code-cell indices, in order) of ``notebook`` (an nbformat
    ``NotebookNode``, updated in place) in a new kernel started in ``cwd``.

    ``timeout`` is per run of a cell, in seconds (None: no limit). The kernel is killed
    when the replay ends, whatever happened. The kernel's own stdout/stderr (not the
    notebook's outputs) go to ``kernel_log`` (default: discarded); its last line is
    quoted when the kernel fails. ``after``, when given, is awaited with the nbclient
    ``NotebookClient`` once every step has run without error, before the kernel stops
    (to inspect the kernel's state, e.g. :mod:`junobench.runtime`). The kernel's
    environment is ``env`` (default: ours) without credentials (:func:`kernel_env`), but
    for the variables named in ``pass_env``.
    """
    from nbclient import NotebookClient
    from nbclient.exceptions import CellTimeoutError, DeadKernelError

    positions = [i for i, cell in enumerate(notebook.cells) if cell.cell_type == "code"]
    client = NotebookClient(
        notebook,
        kernel_name="python3",
        kernel_manager_class=_kernel_manager_class(),
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
    log_path = Path(kernel_log) if kernel_log is not None else Path(os.devnull)
    try:
        with log_path.open("ab") as sink:
            # Started and stopped here rather than in nbclient's async_setup_kernel()
            # context, which installs its own SIGINT/SIGTERM handlers on the event loop (one
            # per replay, each replacing the last, and swallowing Ctrl-C): Ctrl-C must
            # cancel the whole run and kill every kernel.
            client.km = client.create_kernel_manager()
            try:
                await client.async_start_new_kernel(env=kernel_env(env, keep=pass_env), stdout=sink,
                                                    stderr=sink)
                await client.async_start_new_kernel_client()
                kernel_seconds = time.perf_counter() - started
                kernel_pid = _pid(client)
                for step in steps:
                    current = step.code_cell_index
                    position = positions[current]
                    cell = notebook.cells[position]
                    replies.clear()
                    try:
                        await client.async_execute_cell(cell, position)
                    except CellTimeoutError:
                        outcomes.append(StepOutcome(step.code_cell_index, TIMEOUT))
                        break
                    outcomes.append(_outcome(step.code_cell_index, cell, replies))
                    if outcomes[-1].status != OK:
                        break
                else:
                    current = None
                    if after is not None:
                        await after(client)
            finally:
                await _stop_kernel(client)
    except DeadKernelError:
        where = f" while running code cell {current}" if current is not None else ""
        failure = f"the kernel died{where}" + _last_line(kernel_log)
    except (RuntimeError, OSError, TimeoutError) as error:
        failure = f"{type(error).__name__}: {error}" + _last_line(kernel_log)
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
    )


async def _stop_kernel(client: Any) -> None:
    """Kill the replay's kernel and release its channels and connection files, with
    jupyter_client's public calls. ``client.km`` is None when nbclient already cleaned up
    after a kernel that failed to start."""
    km, kc = client.km, client.kc
    client.km = client.kc = None
    try:
        if kc is not None:
            kc.stop_channels()
    finally:
        if km is not None:
            if await km.is_alive():
                await km.shutdown_kernel(now=True)  # also cleans up its resources
            else:
                await km.cleanup_resources()


def _outcome(index: int, cell: Any, replies: list[dict[str, Any]]) -> StepOutcome:
    content = replies[-1].get("content", {}) if replies else {}
    for output in cell.get("outputs", []):
        if output.get("output_type") == "error":
            return StepOutcome(index, ERROR, output.get("ename"), output.get("evalue"))
    if content.get("status") == "error":
        return StepOutcome(index, ERROR, content.get("ename"), content.get("evalue"))
    return StepOutcome(index, OK)


def _last_line(path: str | Path | None) -> str:
    if path is None:
        return ""
    try:
        lines = [ln for ln in Path(path).read_text(errors="replace").splitlines() if ln.strip()]
    except OSError:
        return ""
    return f" ({lines[-1].strip()})" if lines else ""


def _pid(client: Any) -> int | None:
    provisioner = getattr(client.km, "provisioner", None)
    pid = getattr(provisioner, "pid", None)
    if pid is None:
        process = getattr(provisioner, "process", None)
        pid = getattr(process, "pid", None)
    return pid


def run_sync(coroutine: Coroutine[Any, Any, T]) -> T:
    """Run a coroutine to completion, also from inside a running event loop (Jupyter)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coroutine)
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coroutine).result()
