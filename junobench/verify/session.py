"""Verify many cases at once: one fresh kernel per notebook, through an executor.

Each reproduced or fixed notebook becomes a replay task (:func:`replay_task`: a temporary
copy of its case folder, so that relative data paths work and the snapshot is never
touched) that an executor runs (:mod:`.executor`: local kernels, by default with kernels
started ahead, or Ray tasks), then judged. Cases finish in completion order: a progress
bar (tqdm, on stderr when it is a terminal) counts them and ``on_case`` sees each one. A
replay lost to an infrastructure fault past its retries is no verdict: the case's status
is ``infrastructure error``, and a rerun runs it again.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from junobench import vocab
from junobench.cores import available_cores
from junobench.data import layout
from junobench.data.notebook import Step
from junobench.envs.kernel import KernelTarget
from junobench.envs.sandbox import Sandbox
from junobench.safety.paths import link_root
from junobench.verify.executor import (
    Executor,
    HubCase,
    LocalExecutor,
    Place,
    ReplayOutcome,
    ReplayTask,
    entered_for,
    gather_all,
)
from junobench.verify.judge import RunLog, Verdict, judge
from junobench.verify.report import CaseResult, VerifyReport
from junobench.verify.runner import run_sync
from junobench.verify.spec import DATA_ABSENT, CaseSpec

#: Default per-cell time limit, in seconds.
DEFAULT_TIMEOUT = 600.0

VERSIONS = ("reproduced", "fixed")


def default_jobs() -> int:
    """Notebooks verified at once by default: one per core this process may use."""
    return available_cores()


def verify_specs(
    specs: Sequence[CaseSpec],
    *,
    jobs: int | None = None,
    timeout: float | None = DEFAULT_TIMEOUT,
    progress: bool | None = None,
    on_case: Callable[[CaseResult], None] | None = None,
    executor: Executor | None = None,
    target: KernelTarget | None = None,
    pool: int | None = None,
    kept: Mapping[str, CaseResult] | None = None,
    fetch: Callable[[CaseSpec], HubCase] | None = None,
    pass_env: Sequence[str] = (),
    sandbox: Sandbox | None = None,
    keep_outputs: Path | None = None,
) -> VerifyReport:
    """Replay and judge every spec with ``executor`` (default: ``jobs`` local kernels of
    ``target``, ``pool`` of them started ahead: see :class:`.LocalExecutor`); cases in
    ``kept`` (case id → an earlier result) are not run again, and with nothing left to
    replay the executor is not started (no kernel, Ray driver or cluster). With ``fetch``, whoever runs a
    replay fetches the case folder from the Hub instead of receiving it. ``progress`` None
    shows a bar only on a terminal. The default executor's kernels see the credential-like
    variables named in ``pass_env``, no others, and run in ``sandbox`` (default: the default
    :class:`~junobench.envs.sandbox.Sandbox`). With ``keep_outputs`` (a folder), each
    replayed notebook is saved there with its outputs (:mod:`.kept`)."""
    runner = executor if executor is not None else LocalExecutor(jobs or default_jobs(), target=target, pool=pool,
                                                                 pass_env=tuple(pass_env),
                                                                 sandbox=sandbox or Sandbox())
    started = time.perf_counter()
    try:
        results = run_sync(_verify_all(specs, runner, timeout, progress, on_case, kept or {}, fetch,
                                       keep_outputs))
    except asyncio.CancelledError:  # Ctrl-C cancelled the run; the kernels are stopped
        raise KeyboardInterrupt from None
    return VerifyReport(results, time.perf_counter() - started, runner.jobs, executor=runner.describe(),
                        stopped=runner.stopped)


async def _verify_all(
    specs: Sequence[CaseSpec], executor: Executor, timeout: float | None, progress: bool | None,
    on_case: Callable[[CaseResult], None] | None, kept: Mapping[str, CaseResult],
    fetch: Callable[[CaseSpec], HubCase] | None, keep_outputs: Path | None = None,
) -> list[CaseResult]:
    from tqdm import tqdm

    todo = [spec for spec in specs if spec.case_id not in kept]
    replays = len(VERSIONS) * sum(1 for spec in todo if spec.runnable)
    executor.expect(replays)
    bar = tqdm(total=len(todo), unit="case", desc="verify", disable=None if progress is None
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
        if spec.case_id in kept:
            return kept[spec.case_id]
        if not spec.runnable:
            return finished(_not_run(spec))
        source = fetch(spec) if fetch is not None else None
        outcomes = await gather_all(*(executor.run(replay_task(spec, v, spec.orders[v], timeout=timeout,
                                                               fetch=source, keep_notebook=keep_outputs is not None))
                                      for v in VERSIONS))
        if keep_outputs is not None:
            from junobench.verify.kept import keep

            outcomes = [await asyncio.to_thread(keep, keep_outputs, spec.case_id, v, o)
                        for v, o in zip(VERSIONS, outcomes, strict=True)]
        return finished(case_result(spec, dict(zip(VERSIONS, outcomes, strict=True))))

    try:
        async with entered_for(executor, replays):
            return await gather_all(*(one_case(spec) for spec in specs))
    finally:
        bar.close()


async def replay_in_copy(spec: CaseSpec, version: str, steps: Sequence[Step], *, timeout: float | None,
                         after: Any = None, target: KernelTarget | None = None,
                         pass_env: Sequence[str] = (), sandbox: Sandbox | None = None) -> RunLog:
    """One replay of a case's notebook on this machine (a fresh kernel of ``target`` in a
    temporary copy of the case folder); ``after``, ``pass_env`` and ``sandbox`` as in
    :func:`~junobench.verify.runner.replay`."""
    async with LocalExecutor(1, target=target, pool=0, pass_env=tuple(pass_env),
                             sandbox=sandbox or Sandbox()) as executor:
        outcome = await executor.run(replay_task(spec, version, steps, timeout=timeout, after=after))
    return outcome.log


def replay_task(spec: CaseSpec, version: str, steps: Sequence[Step], *, timeout: float | None,
                after: Any = None, fetch: HubCase | None = None, **options: Any) -> ReplayTask:
    """The replay of a case's ``version`` notebook: ``steps`` in a copy of its case folder
    (or, with ``fetch``, the folder fetched from the Hub where the replay runs), working
    there. ``after`` as in :func:`~junobench.verify.runner.replay`; ``options`` go to the
    :class:`~junobench.verify.executor.ReplayTask`."""
    places = () if fetch is not None else (
        Place(str(spec.folder), spec.case_id, trusted=str(link_root(spec.folder.parent.parent))),)
    return ReplayTask(key=vocab.instance_id(spec.case_id, version),
                      notebook=f"{spec.case_id}/{layout.notebook_name(spec.case_id, version)}",
                      steps=tuple(steps), cwd=spec.case_id, places=places, timeout=timeout, case=spec.case_id,
                      after=after, fetch=() if fetch is None else (fetch,),
                      requirements=tuple(spec.requirements), **options)


def case_result(spec: CaseSpec, outcomes: Mapping[str, ReplayOutcome]) -> CaseResult:
    """The judged result of a case's replays; a replay lost to infrastructure faults is no
    verdict (the case's status says so), and every retry is recorded."""
    verdicts = {}
    for version, outcome in outcomes.items():
        if outcome.error is not None:
            verdicts[version] = Verdict(False, f"infrastructure error: {outcome.error}")
        else:
            verdicts[version] = _judge(spec, version, outcome.log)
    logs: dict[str, RunLog] = {v: o.log for v, o in outcomes.items()}
    return CaseResult(spec.case_id, verdicts["reproduced"], verdicts["fixed"],
                      sum(log.seconds for log in logs.values()),  # kernel time, not time queued
                      logs=logs, attempts={v: o.attempts for v, o in outcomes.items()},
                      faults={v: list(o.faults) for v, o in outcomes.items() if o.faults},
                      infrastructure=any(o.error is not None for o in outcomes.values()),
                      sandbox="; ".join(dict.fromkeys(log.sandbox for log in logs.values() if log.sandbox)) or None)


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
