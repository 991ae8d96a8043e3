"""Verify many cases at once: one fresh kernel per notebook, ``jobs`` kernels at a time.

Each reproduced or fixed notebook is replayed in a temporary copy of its case folder (so
relative data paths work and the snapshot is never touched), judged, and the copy
removed. A progress bar (tqdm, on stderr when it is a terminal) counts finished cases.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import tempfile
import time
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

from junobench.data import layout
from junobench.data.notebook import Step
from junobench.envs.kernel import KernelTarget, StartedKernel, own_kernel
from junobench.errors import JunoBenchError
from junobench.safety.paths import copy_tree, link_root
from junobench.verify.judge import RunLog, Verdict, judge
from junobench.verify.pool import KernelPool
from junobench.verify.report import CaseResult, VerifyReport
from junobench.verify.runner import kernel_env, replay, run_sync
from junobench.verify.spec import DATA_ABSENT, CaseSpec

#: Default per-cell time limit, in seconds.
DEFAULT_TIMEOUT = 600.0

VERSIONS = ("reproduced", "fixed")


def default_jobs() -> int:
    """Number of cores this process may use."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


def verify_specs(
    specs: Sequence[CaseSpec],
    *,
    jobs: int | None = None,
    timeout: float | None = DEFAULT_TIMEOUT,
    progress: bool | None = None,
    on_case: Callable[[CaseResult], None] | None = None,
    target: KernelTarget | None = None,
    pool: int | None = None,
    pass_env: Sequence[str] = (),
) -> VerifyReport:
    """Replay and judge every spec in kernels of ``target`` (default: junobench's own
    interpreter), ``pool`` of them started ahead (default: ``jobs``; 0: each kernel starts
    when its notebook's turn comes); ``progress`` None shows a bar only on a terminal. The
    kernels see the credential-like variables named in ``pass_env``, no others."""
    jobs = jobs or default_jobs()
    if jobs < 1:
        raise ValueError("jobs must be at least 1")
    started = time.perf_counter()
    try:
        results = run_sync(_verify_all(specs, jobs, timeout, progress, on_case, target,
                                       jobs if pool is None else pool, tuple(pass_env)))
    except asyncio.CancelledError:  # Ctrl-C cancelled the run; the kernels are stopped
        raise KeyboardInterrupt from None
    return VerifyReport(results, time.perf_counter() - started, jobs)


async def _verify_all(
    specs: Sequence[CaseSpec], jobs: int, timeout: float | None, progress: bool | None,
    on_case: Callable[[CaseResult], None] | None, target: KernelTarget | None, pool_size: int,
    pass_env: Sequence[str] = (),
) -> list[CaseResult]:
    from tqdm import tqdm

    slots = asyncio.Semaphore(jobs)
    notebooks = len(VERSIONS) * sum(1 for spec in specs if spec.runnable)
    pool = KernelPool(target or own_kernel(), size=pool_size, notebooks=notebooks,
                      env=kernel_env(keep=pass_env)) if pool_size > 0 else None
    bar = tqdm(total=len(specs), unit="case", desc="verify", disable=None if progress is None
               else not progress, dynamic_ncols=True)
    tally: dict[str, int] = {}

    def finished(result: CaseResult) -> CaseResult:
        tally[result.status] = tally.get(result.status, 0) + 1
        bar.set_postfix_str(", ".join(f"{n} {s}" for s, n in tally.items()), refresh=False)
        bar.update()
        if on_case is not None:
            on_case(result)
        return result

    async def one_case(spec: CaseSpec) -> CaseResult:
        if not spec.runnable:
            return finished(_not_run(spec))
        logs = await asyncio.gather(*(_replay_version(spec, v, timeout, slots, target, pool, pass_env)
                                      for v in VERSIONS))
        by_version = dict(zip(VERSIONS, logs, strict=True))
        verdicts = {v: _judge(spec, v, log) for v, log in by_version.items()}
        seconds = sum(log.seconds for log in logs)  # kernel time, not time queued
        return finished(CaseResult(spec.case_id, verdicts["reproduced"], verdicts["fixed"],
                                   seconds, logs=by_version))

    try:
        return list(await asyncio.gather(*(one_case(spec) for spec in specs)))
    finally:
        bar.close()
        if pool is not None:
            await pool.close()


async def _replay_version(spec: CaseSpec, version: str, timeout: float | None,
                          slots: asyncio.Semaphore, target: KernelTarget | None,
                          pool: KernelPool | None, pass_env: Sequence[str] = ()) -> RunLog:
    async with slots:
        return await replay_in_copy(spec, version, spec.orders[version], timeout=timeout, target=target,
                                    pool=pool, pass_env=pass_env)


async def replay_in_copy(
    spec: CaseSpec, version: str, steps: Sequence[Step], *, timeout: float | None,
    after: Callable[[Any], Awaitable[None]] | None = None,
    target: KernelTarget | None = None,
    pool: KernelPool | None = None,
    pass_env: Sequence[str] = (),
) -> RunLog:
    """Replay ``steps`` of the case's ``version`` notebook in a fresh kernel of ``target``
    working in a temporary copy of the case folder (removed afterwards); ``after`` and
    ``pass_env`` as in :func:`replay`. With ``pool``, the kernel is one the pool started
    ahead (of the pool's target and environment), and the case folder is copied into its
    empty working directory. The copy never follows a link out of the snapshot nor reads
    a FIFO (:func:`junobench.safety.paths.copy_tree`): such a case is a failed run, naming
    the file."""
    import nbformat

    if pool is not None:
        return await _replay_in_pooled_kernel(spec, version, steps, timeout, after, pool)
    scratch = Path(await asyncio.to_thread(tempfile.mkdtemp, prefix=f"junobench-{spec.case_id}-"))
    try:
        work = scratch / spec.case_id
        try:
            await _copy_case(spec, work)
        except JunoBenchError as error:
            return RunLog(steps=(), planned=len(steps), failure=f"cannot copy the case folder: {error}",
                          timeout=timeout)
        path = work / layout.notebook_name(spec.case_id, version)
        notebook = await asyncio.to_thread(nbformat.read, path, as_version=4)
        return await replay(notebook, steps, cwd=work, timeout=timeout,
                            kernel_log=scratch / "kernel.log", after=after, target=target,
                            pass_env=pass_env)
    finally:
        await asyncio.to_thread(shutil.rmtree, scratch, True)


async def _copy_case(spec: CaseSpec, work: Path) -> None:
    """The case folder copied into ``work`` (links inside it kept, none followed out)."""
    await asyncio.to_thread(copy_tree, spec.folder, work, case=spec.case_id,
                            trusted=link_root(spec.folder.parent.parent))


async def _replay_in_pooled_kernel(spec: CaseSpec, version: str, steps: Sequence[Step],
                                   timeout: float | None, after: Callable[[Any], Awaitable[None]] | None,
                                   pool: KernelPool) -> RunLog:
    import nbformat

    path = spec.folder / layout.notebook_name(spec.case_id, version)
    notebook = await asyncio.to_thread(nbformat.read, path, as_version=4)
    taken: list[StartedKernel] = []

    async def ready() -> StartedKernel:
        kernel = await pool.acquire()
        taken.append(kernel)
        try:
            await _copy_case(spec, Path(kernel.cwd))
        except JunoBenchError as error:  # the replay reports it as the run's failure
            raise RuntimeError(f"cannot copy the case folder: {error}") from None
        return kernel

    try:
        return await replay(notebook, steps, cwd=spec.folder, timeout=timeout, after=after, kernel=ready())
    finally:
        for kernel in taken:
            await kernel.shutdown()
            await asyncio.to_thread(shutil.rmtree, Path(kernel.cwd).parent, True)


def _judge(spec: CaseSpec, version: str, log: RunLog) -> Verdict:
    assert spec.target is not None
    verdict = judge(version, log, target=spec.target, expected=spec.expected_exception)
    if spec.note and version == "reproduced" and not verdict.ok:
        return Verdict(verdict.ok, f"{verdict.reason}; {spec.note}", verdict.exception,
                       verdict.cell)
    return verdict


def _not_run(spec: CaseSpec) -> CaseResult:
    if spec.problem is not None:
        reason = f"cannot run: {spec.problem}"
        return CaseResult(spec.case_id, Verdict(False, reason), Verdict(False, reason))
    return CaseResult(spec.case_id, Verdict(False, DATA_ABSENT), Verdict(False, DATA_ABSENT),
                      skipped=True)
