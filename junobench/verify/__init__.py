"""Check that each case crashes as recorded and that its fix works, by running it.

For every case, in a fresh kernel whose working directory is a temporary copy of the case
folder: the reproduced notebook's recorded execution order must end with the recorded
exception class at the target cell; every run of the fixed notebook's order must
succeed. What to run (:mod:`.spec`), running it (:mod:`.runner`), judging it
(:mod:`.judge`, pure) and reporting it (:mod:`.report`) are separate.

>>> from junobench.verify import verify
>>> report = verify(source="sample", jobs=2)          # doctest: +SKIP
>>> report.ok, report["NBspecific_2"].reproduced.reason  # doctest: +SKIP
(True, 'crashed at the target (code cell 4) with KeyError, as recorded')
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import partial
from pathlib import Path
from typing import Any

from junobench import vocab
from junobench.data import layout
from junobench.data.snapshot import DEFAULT_SOURCE, SAMPLE, hub_files, hub_repo, resolve, resolve_cases
from junobench.envs.check import kernel_environment
from junobench.envs.environment import snapshot_environment
from junobench.envs.kernel import KernelTarget, env_kernel, own_kernel
from junobench.envs.sandbox import Sandbox, require_sandbox
from junobench.errors import JunoBenchError
from junobench.safety.atomic import check_file_target
from junobench.verify.executor import Executor, HubCase, LocalExecutor, ReplayOutcome, ReplayTask, hub_endpoint
from junobench.verify.judge import RunLog, StepOutcome, Verdict, judge
from junobench.verify.report import INTERRUPTED, NOT_RUN, CaseResult, Interrupted, RunFailed, VerifyReport
from junobench.verify.resume import earlier_results, inputs_digest, kept_results
from junobench.verify.runner import replay, require_run_extra
from junobench.verify.session import DEFAULT_TIMEOUT, default_jobs, verify_specs
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
    digests = {spec.case_id: digest for spec in specs if (digest := _inputs(spec, timeout, context))}
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
    cases = []
    for spec in specs:
        if spec.case_id in done:
            cases.append(done[spec.case_id])
        elif spec.case_id in executor.begun:
            cases.append(CaseResult.left(spec.case_id, INTERRUPTED, f"the run stopped ({why}) while it ran"))
        else:
            cases.append(CaseResult.left(spec.case_id, NOT_RUN, f"the run stopped ({why}) before it"))
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


def _inputs(spec: CaseSpec, timeout: float | None, environment: str) -> str | None:
    """The digest of what the case's verdict depends on (None when its folder is unreadable)."""
    names = [layout.notebook_name(spec.case_id, version) for version in vocab.EVALUATED_VERSIONS]
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
