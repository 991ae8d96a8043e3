"""Check that each case crashes as recorded and that its fix works, by running it.

For every case, in a fresh kernel whose working directory is a temporary copy of the case
folder: the reproduced notebook's recorded execution order must end with the recorded
exception class at the target cell; every run of the fixed notebook's order must
succeed. What to run (:mod:`.spec`), running it (:mod:`.runner`, in a kernel of
:mod:`junobench.envs.kernel`), where it runs (:mod:`.executor`: local kernels, or Ray
tasks), judging it (:mod:`.judge`, pure) and reporting it (:mod:`.report`) are separate;
this module ties them together. Each notebook is replayed in a temporary copy of its case
folder (:func:`replay_task`: relative data paths work, the snapshot is never touched).
Cases finish in completion order: a progress bar (tqdm, on stderr when it is a terminal)
counts them and ``on_case`` sees each one. A replay lost to an infrastructure fault past
its retries is no verdict: the case's status is ``infrastructure error``, and a rerun
runs it again.

>>> from junobench.verify import verify
>>> report = verify(source="sample", jobs=2)          # doctest: +SKIP
>>> report.ok, report["NBspecific_2"].reproduced.reason  # doctest: +SKIP
(True, 'crashed at the target (code cell 4) with KeyError, as recorded')
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import partial
from pathlib import Path
from typing import Any

from junobench import vocab
from junobench.cores import available_cores
from junobench.data import layout
from junobench.data.notebook import Step
from junobench.data.snapshot import DEFAULT_SOURCE, SAMPLE, hub_files, hub_repo, resolve, resolve_cases
from junobench.envs.check import kernel_environment
from junobench.envs.environment import snapshot_environment
from junobench.envs.kernel import KernelTarget, env_kernel, own_kernel
from junobench.envs.sandbox import Sandbox, require_sandbox
from junobench.errors import JunoBenchError
from junobench.safety.atomic import check_file_target
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
    hub_endpoint,
)
from junobench.verify.judge import RunLog, StepOutcome, Verdict, judge
from junobench.verify.report import CaseResult, Interrupted, RunFailed, VerifyReport, unfinished
from junobench.verify.resume import earlier_results, inputs_digest, kept_results
from junobench.verify.runner import replay, require_run_extra, run_sync
from junobench.verify.spec import DATA_ABSENT, CaseSpec, case_specs

#: Executor names accepted by :func:`make_executor` and ``--executor``.
EXECUTORS: tuple[str, ...] = ("local", "ray")

__all__ = [
    "DATA_ABSENT",
    "DEFAULT_TIMEOUT",
    "EXECUTORS",
    "CaseResult",
    "CaseSpec",
    "Executor",
    "LocalExecutor",
    "ReplayOutcome",
    "ReplayTask",
    "RunLog",
    "Sandbox",
    "StepOutcome",
    "Verdict",
    "VerifyReport",
    "case_specs",
    "default_jobs",
    "judge",
    "make_executor",
    "replay",
    "verify",
]


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
    ``target``, ``pool`` of them started ahead: see :class:`~junobench.verify.executor.LocalExecutor`); cases in
    ``kept`` (case id → an earlier result) are not run again, and with nothing left to
    replay the executor is not started (no kernel, Ray driver or cluster). With ``fetch``, whoever runs a
    replay fetches the case folder from the Hub instead of receiving it. ``progress`` None
    shows a bar only on a terminal. The default executor's kernels see the credential-like
    variables named in ``pass_env``, no others, and run in ``sandbox`` (default: the default
    :class:`~junobench.envs.sandbox.Sandbox`). With ``keep_outputs`` (a folder), each
    replayed notebook is saved there with its outputs (:mod:`~junobench.verify.kept`)."""
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


def verify(
    case_ids: Sequence[str] | None = None,
    source: str | Path = DEFAULT_SOURCE,
    *,
    revision: str | None = None,
    jobs: int | None = None,
    timeout: float | None = DEFAULT_TIMEOUT,
    report: str | Path | None = None,
    progress: bool | None = None,
    on_case: Callable[[CaseResult], None] | None = None,
    filters: Mapping[str, str | Iterable[str]] | None = None,
    env: str | Path | None = None,
    executor: str | Executor = "local",
    executor_options: Mapping[str, Any] | None = None,
    resume: bool = True,
    pass_env: Sequence[str] = (),
    sandbox: Sandbox | None = None,
    keep_outputs: str | Path | None = None,
) -> VerifyReport:
    """Verify ``case_ids`` (default: every case, or those matching ``filters``) of ``source``.

    ``filters`` maps the filter keywords of :func:`junobench.load` (``library``,
    ``root_cause``, ``crash_type``, ``pipeline_stage``, ``origin``) to a value or a list.
    ``jobs`` kernels run at once (default: the number of cores, or what a Ray cluster's
    CPUs hold); ``timeout`` is the limit per cell run, in seconds. ``executor`` is
    ``local``, ``ray`` (``executor_options``: see :func:`make_executor`) or an executor.
    Kernels run in the interpreter of ``env`` (a folder made by ``junobench env create``;
    with Ray, at the same path on every worker), else in junobench's own; either way the
    report records that interpreter (as this machine sees it) against the snapshot's
    environment, and each case's unmet pins (``mismatches``). With ``report``, the JSON
    report is written there as cases finish; with ``resume``, the cases an earlier report
    there gave a verdict for, with the same inputs, are kept and not run again. The
    snapshot is only read. ``report.ok`` is True when every case passed. The kernels get
    our environment without credential-like variables (:mod:`junobench.safety.env`), except
    those named in ``pass_env``, and run in ``sandbox`` (default: ``auto``, no network, the
    default limits; see :func:`runner_for`); the report names it for every case. With
    ``keep_outputs`` (a folder), every replayed notebook is saved there with its outputs,
    ``<case>/<case>_<version>.ipynb`` (:mod:`junobench.verify.kept`); a case kept from the
    earlier report runs again unless the folder holds both its notebooks. A run stopped
    early raises :class:`~junobench.verify.report.Interrupted` (Ctrl-C: a
    KeyboardInterrupt) or :class:`~junobench.verify.report.RunFailed` (a JunoBenchError, e.g.
    a Ray cluster it cannot join), whose ``report`` holds every case, those not finished
    ``interrupted`` or ``not run``; with ``report``, that is what is written.
    """
    require_run_extra()
    runner = runner_for(executor, jobs=jobs, timeout=timeout, env=env, executor_options=executor_options,
                        pass_env=pass_env, sandbox=sandbox, trusted=bundled(source))
    target = runner.target
    # On a cluster, workers fetch their own case from the Hub (with its data) rather than
    # receiving it from here: this machine reads the tables and notebooks only.
    repo = hub_repo(source) if runner.remote else None
    root = resolve(source, revision=revision) if repo is not None else resolve_cases(
        source, case_ids, revision=revision,
        choose=(lambda tables: [s.case_id for s in case_specs(tables, filters=filters)]) if filters else None)
    present = None if repo is None else hub_files(repo, revision=revision)
    specs = case_specs(root, case_ids, filters=filters, present=present)
    if not specs:
        raise JunoBenchError("no cases to verify", file=root,
                             hint="check the case ids and filters (`junobench ls`)")
    if report is not None:
        check_file_target(report)  # before the notebooks run, not after
    kept_folder = None
    if keep_outputs is not None:
        from junobench.verify.kept import prepare_folder

        kept_folder = prepare_folder(keep_outputs)
    found = kernel_environment(target or own_kernel(), snapshot_environment(root))
    environment = found.to_json(r for spec in specs for r in spec.requirements)
    environment["sandbox"] = runner.sandbox.to_json()
    context = f"{'' if target is None else target.python}{sandbox_key(runner.sandbox)}"
    digests = {spec.case_id: digest for spec in specs if (digest := case_inputs(spec, timeout, context))}
    kept = kept_results(earlier_results(report), digests) if report is not None and resume else {}
    if kept_folder is not None:  # a kept verdict without its notebooks runs again, to keep them
        from junobench.verify import kept as kept_notebooks

        kept = {case: result for case, result in kept.items()
                if kept_notebooks.present(kept_folder, case, vocab.EVALUATED_VERSIONS)}
    done: dict[str, CaseResult] = dict(kept)
    by_id = {spec.case_id: spec for spec in specs}

    def judged(case: CaseResult) -> None:
        case.mismatches = found.mismatches(by_id[case.case_id].requirements)
        case.inputs = digests.get(case.case_id)
        done[case.case_id] = case
        if report is not None:  # what finished is kept, whatever happens to the rest
            VerifyReport([done[s.case_id] for s in specs if s.case_id in done],
                         environment=environment).write(report)
        if on_case is not None:
            on_case(case)

    fetch = None if repo is None else partial(_hub_case, repo, revision, hub_endpoint())
    started = time.perf_counter()
    try:
        result = verify_specs(specs, timeout=timeout, progress=progress, on_case=judged, executor=runner,
                              kept=kept, fetch=fetch, keep_outputs=kept_folder)
    except (KeyboardInterrupt, JunoBenchError) as stop:
        why = "interrupted" if isinstance(stop, KeyboardInterrupt) else str(stop)
        left = stopped_report(specs, done, runner, why, environment, time.perf_counter() - started)
        if report is not None:
            left.write(report)
        if isinstance(stop, KeyboardInterrupt):
            raise Interrupted(left) from None
        raise RunFailed(stop, left) from None
    result.environment = environment
    if report is not None:
        result.write(report)
    return result


def stopped_report(specs: Sequence[CaseSpec], done: Mapping[str, CaseResult], executor: Executor, why: str,
                   environment: dict[str, Any] | None, seconds: float = 0.0) -> VerifyReport:
    """The report of a run stopped early (``why``): every case of ``specs``, those not
    ``done`` ``interrupted`` when their replays had begun, else ``not run``."""
    cases = [done[spec.case_id] if spec.case_id in done
             else CaseResult.left(spec.case_id, *unfinished(why, spec.case_id in executor.begun)) for spec in specs]
    return VerifyReport(cases, seconds, executor.jobs, environment=environment, executor=executor.describe(),
                        stopped=why)


def runner_for(executor: str | Executor = "local", *, jobs: int | None = None, timeout: float | None = None,
               env: str | Path | None = None, executor_options: Mapping[str, Any] | None = None,
               pass_env: Sequence[str] = (), sandbox: Sandbox | None = None, trusted: bool = False) -> Executor:
    """The executor a run of notebooks uses: ``executor`` itself, or the one
    :func:`make_executor` makes of its name (``jobs``, ``executor_options``), with kernels
    in the interpreter of ``env`` (None: this one) that see no credential-like variables but
    those of ``pass_env``, confined by ``sandbox`` (default ``auto``: bubblewrap where it
    runs). Where no sandbox runs, notebooks that are not ``trusted`` (junobench's own
    sample) are refused unless ``sandbox`` says ``none``. ``jobs`` and ``timeout`` (per
    cell) are checked here."""
    policy = require_sandbox(sandbox or Sandbox(), trusted=trusted)
    if jobs is not None and jobs < 1:
        raise JunoBenchError(f"--jobs must be at least 1, got {jobs}")
    if timeout is not None and timeout <= 0:
        raise JunoBenchError(f"--timeout must be positive, got {timeout:g}")
    target = env_kernel(env) if env is not None else None
    runner = executor if isinstance(executor, Executor) else make_executor(
        executor, jobs=jobs, target=target, **dict(executor_options or {}))
    if isinstance(executor, Executor) and target is not None:
        runner.target = target
    runner.pass_env = tuple(pass_env)
    runner.sandbox = policy
    return runner


def bundled(source: str | Path) -> bool:
    """Whether ``source`` names junobench's own sample (whose notebooks the package ships)."""
    if str(source) == SAMPLE:
        return True
    try:
        return Path(source).resolve() == (layout.PACKAGE_DIR / SAMPLE).resolve()
    except (OSError, RuntimeError):
        return False


def sandbox_key(sandbox: Sandbox) -> str:
    """What of a sandbox a verdict depends on (the network and the limits), for digests."""
    if not sandbox.confined:
        return "|none"
    return f"|net={int(sandbox.network)}|mem={sandbox.memory}|tasks={sandbox.processes}"


def _hub_case(repo: str, revision: str | None, endpoint: str | None, spec: CaseSpec) -> HubCase:
    """The case folder a worker fetches from the Hub for ``spec``."""
    return HubCase(repo, spec.case_id, spec.case_id, revision=revision, endpoint=endpoint)


def case_inputs(spec: CaseSpec, timeout: float | None, environment: str,
                versions: Sequence[str] = vocab.EVALUATED_VERSIONS) -> str | None:
    """The digest of what the case's verdict (or its ``versions`` notebooks' records)
    depends on (None when its folder is unreadable)."""
    names = [layout.notebook_name(spec.case_id, version) for version in versions]
    try:
        return inputs_digest(spec.folder, timeout=timeout, notebooks=names, extra=environment)
    except JunoBenchError:
        return None


def make_executor(name: str = "local", *, jobs: int | None = None, target: KernelTarget | None = None,
                  **options: Any) -> Executor:
    """The executor called ``name`` (:data:`EXECUTORS`), its kernels in ``target``'s
    interpreter (None: that of the process running the replay). ``jobs`` defaults to the number
    of cores (local) or to what the Ray cluster's CPUs hold; ``options`` are the
    :class:`~junobench.verify.ray_executor.RayExecutor`'s (``address``, ``cpus``,
    ``memory``, ``retries``, ``build_envs``, ``max_case_size``, ``deadline``, ``liveness``)."""
    if name == "local":
        if options:
            raise JunoBenchError(f"option(s) {', '.join(sorted(options))} apply to --executor ray only")
        return LocalExecutor(jobs or default_jobs(), target=target)
    if name == "ray":
        from junobench.verify.ray_executor import RayExecutor

        return RayExecutor(jobs=jobs or 0, target=target, **options)
    raise JunoBenchError(f"unknown executor {name!r}", hint=f"use one of {', '.join(EXECUTORS)}")
