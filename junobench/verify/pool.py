"""Kernels started ahead: a small pool per environment so that start-up overlaps execution.

Each kernel of the pool is started (:func:`junobench.envs.kernel.start_kernel`) in its own
new, empty working directory and handed out once, to one notebook, which copies its case
folder into that directory and runs there; a kernel is never reused. While notebooks run,
the pool keeps ``size`` kernels starting or ready, and never starts more than the
notebooks still to come. Closing the pool kills the kernels nobody took and removes their
directories.

>>> pool = KernelPool(own_kernel(), size=2, notebooks=10, env=kernel_env())   # doctest: +SKIP
>>> kernel = await pool.acquire()                                            # doctest: +SKIP
"""

from __future__ import annotations

import asyncio
import shutil
import tempfile
import time
from collections import deque
from collections.abc import Mapping
from pathlib import Path

from junobench.envs.kernel import KernelTarget, StartedKernel, start_kernel

#: Name of the working directory inside each kernel's scratch folder.
WORK_DIR = "case"
#: The kernel's own output, beside the working directory.
KERNEL_LOG = "kernel.log"


class KernelPool:
    """Up to ``size`` kernels of ``target`` started ahead for ``notebooks`` notebooks, their
    folders in ``scratch`` (default: the temporary directory)."""

    def __init__(self, target: KernelTarget, *, size: int, notebooks: int, env: Mapping[str, str],
                 startup_timeout: float = 120, scratch: Path | None = None) -> None:
        self.target = target
        self.size = max(0, size)
        self.remaining = notebooks  # kernels still to hand out
        self.env = dict(env)
        self.startup_timeout = startup_timeout
        self.scratch = None if scratch is None else str(scratch)
        self._starting: deque[asyncio.Task[StartedKernel]] = deque()
        self._closed = False

    def _fill(self) -> None:
        while not self._closed and len(self._starting) < min(self.size, self.remaining):
            self._starting.append(asyncio.ensure_future(self._start()))

    async def _start(self, attempts: int = 2) -> StartedKernel:
        """A kernel in a new empty folder; one that dies while starting (a busy machine,
        a port taken meanwhile) is tried once more."""
        for attempt in range(1, attempts + 1):
            scratch = Path(await asyncio.to_thread(tempfile.mkdtemp, prefix="junobench-kernel-",
                                                      dir=self.scratch))
            work = scratch / WORK_DIR
            work.mkdir()
            try:
                return await start_kernel(self.target, cwd=work, env=self.env, log=scratch / KERNEL_LOG,
                                           timeout=self.startup_timeout)
            except RuntimeError:
                await asyncio.to_thread(shutil.rmtree, scratch, True)
                if attempt == attempts:
                    raise
            except BaseException:
                await asyncio.to_thread(shutil.rmtree, scratch, True)
                raise
        raise AssertionError("unreachable")

    async def acquire(self) -> StartedKernel:
        """A started kernel for one notebook (its ``cwd`` is empty and its own); the caller
        shuts it down and removes ``Path(kernel.cwd).parent`` when done."""
        if self._closed:
            raise RuntimeError("the kernel pool is closed")
        asked = time.perf_counter()
        self._fill()
        task = self._starting.popleft() if self._starting else asyncio.ensure_future(self._start())
        self.remaining = max(0, self.remaining - 1)
        self._fill()  # the next kernel starts while this one is used
        kernel = await task
        if not await kernel.km.is_alive():  # died while it waited: never hand out a dead kernel
            await kernel.shutdown()
            await asyncio.to_thread(shutil.rmtree, Path(kernel.cwd).parent, True)
            kernel = await self._start()
        kernel.waited = time.perf_counter() - asked
        return kernel

    async def close(self) -> None:
        """Kill every kernel not handed out and remove its directory."""
        self._closed = True
        while self._starting:
            task = self._starting.popleft()
            task.cancel()
            try:
                kernel = await task
            except BaseException:  # cancelled or failed to start: nothing left running
                continue
            await kernel.shutdown()
            await asyncio.to_thread(shutil.rmtree, Path(kernel.cwd).parent, True)
