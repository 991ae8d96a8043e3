"""Extract runtime information: run a notebook up to its target cell, then look inside.

For each reproduced or fixed notebook, in a fresh kernel working in a temporary copy of
the case folder (verify's executors, :mod:`junobench.verify.executor`): run
the executed cells in execution order, stop before the target cell's (last) run, and
execute one inspection snippet that summarises the names the target cell reads
(:mod:`.names`) with :mod:`.summarise`, whose source is sent along so that the kernel
imports nothing of junobench (nor anything the notebook did not import). The target cell
never runs. One record per notebook (see :func:`runtime_info`).

>>> records = runtime_info(["pandas_1"], "sample", exclude=["V"])        # doctest: +SKIP
>>> records[0]["objects"]["df"]["S"]["columns"][:3]                      # doctest: +SKIP
['PassengerId', 'Survived', 'Pclass']
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import json
import sys
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from junobench import vocab
from junobench.data import layout
from junobench.data.notebook import read_notebook
from junobench.data.snapshot import DEFAULT_SOURCE, resolve_cases
from junobench.envs.check import KernelEnvironment, kernel_environment
from junobench.envs.environment import snapshot_environment
from junobench.envs.kernel import own_kernel
from junobench.envs.sandbox import Sandbox
from junobench.errors import JunoBenchError
from junobench.jsonl import write_jsonl
from junobench.runtime import crane
from junobench.runtime.info import payload_problem
from junobench.runtime.names import target_names
from junobench.runtime.summarise import CATEGORIES, DEFAULT_OPTIONS, summarise
from junobench.safety.atomic import check_file_target
from junobench.safety.text import first_line
from junobench.verify import DEFAULT_TIMEOUT, case_inputs, replay_task
from junobench.verify.executor import Executor, entered_for, gather_all
from junobench.verify.judge import OK, TIMEOUT, RunLog
from junobench.verify.report import unfinished
from junobench.verify.runner import require_run_extra, run_sync
from junobench.verify.spec import DATA_ABSENT, CaseSpec, case_specs

#: MIME type of the inspection's result in the kernel's display output.
MIME = "application/vnd.junobench.runtime+json"

#: Fields of a runtime-information record, in order.
RECORD_FIELDS = ("instance", "case_id", "version", "target_cell", "status", "problem",
                 "categories", "names", "attributes", "undefined", "objects", "environment",
                 "capped", "imported_by_inspection", "parsed", "seconds", "inputs", "style",
                 "annotations", "sandbox")

#: The formats of runtime information: junobench's (S/R/V-tagged fields) and CRANE-LLM's.
STYLES = ("junobench", crane.STYLE)

#: Seconds between two writes of ``out`` while notebooks finish.
WRITE_EVERY = 10.0

#: The ``problem`` of a record whose replay was lost to infrastructure faults (no verdict).
INFRASTRUCTURE = "infrastructure error"

_SNIPPET = """\
def __junobench_runtime_info(source, request, mime):
    import types
    from IPython import get_ipython
    from IPython.display import display
    shell = get_ipython()
    module = types.ModuleType("junobench_runtime_summarise")
    exec(compile(source, "<junobench runtime summarise>", "exec"), module.__dict__)
    request = dict(request, hidden=sorted(shell.user_ns_hidden))
    display({mime: module.inspect_namespace(shell.user_ns, request)}, raw=True)
try:
    __junobench_runtime_info(%s, %s, %s)
finally:
    del __junobench_runtime_info
"""


def categories_without(exclude: Iterable[str] = ()) -> tuple[str, ...]:
    """The categories left after ``exclude`` (``S``, ``R``, ``V``; case-insensitive)."""
    dropped = {c.upper() for c in exclude}
    unknown = sorted(dropped - set(CATEGORIES))
    if unknown:
        raise JunoBenchError(f"unknown runtime-information categor{'y' if len(unknown) == 1 else 'ies'} "
                             f"{', '.join(unknown)}", hint="use S (structure), R (representation) "
                             "or V (values)")
    return tuple(c for c in CATEGORIES if c not in dropped)


def request_for(target_source: str, categories: Sequence[str] = CATEGORIES,
                options: Mapping[str, int] | None = None, *, style: str = "junobench",
                executed: Sequence[tuple[int, str]] = (), signatures: bool = False
                ) -> dict[str, Any]:
    """What to ask the kernel about a target cell (names, attributes, bound names, limits);
    in CRANE-LLM's ``style`` also where the executed cells (``(code-cell index, source)``
    in execution order) last defined each name, and whether to give signatures."""
    found = target_names(target_source)
    request = {"names": list(found.names),
               "attributes": {k: list(v) for k, v in found.attributes.items()},
               "bound": sorted(found.bound), "categories": list(categories),
               "options": {**DEFAULT_OPTIONS, **(options or {})}, "parsed": found.parsed}
    if style == crane.STYLE:
        request.update(style=style, origins=crane.origins(executed), signatures=signatures)
    return request


def inspection_code(request: Mapping[str, Any]) -> str:
    """The code the kernel runs to summarise the requested names (stdlib-only, self-contained)."""
    plain = json.loads(json.dumps(request))  # Python literals only
    module = crane if request.get("style") == crane.STYLE else sys.modules[summarise.__module__]
    return _SNIPPET % (repr(_module_source(module.__name__)), repr(plain), repr(MIME))


@functools.cache
def _module_source(name: str) -> str:
    """The source the kernel runs for a style module: the shared probes, then the module."""
    from junobench.runtime import probes

    return probes.kernel_source(inspect.getsource(probes), inspect.getsource(sys.modules[name]))


class Inspection:
    """An ``after`` hook for :func:`~junobench.verify.runner.replay`: runs the inspection of
    ``request`` in the kernel and keeps its ``payload`` (or the ``problem``)."""

    def __init__(self, request: Mapping[str, Any], timeout: float | None) -> None:
        self.request = request
        self.timeout = timeout
        self.payload: dict[str, Any] | None = None
        self.problem: str | None = None

    async def __call__(self, client: Any) -> None:
        import nbformat
        from nbclient.exceptions import CellTimeoutError, DeadKernelError

        cell = nbformat.v4.new_code_cell(inspection_code(self.request))
        client.nb.cells.append(cell)  # the replay's in-memory copy, never saved
        try:
            await client.async_execute_cell(cell, len(client.nb.cells) - 1, store_history=False)
        except CellTimeoutError:
            limit = f" after {self.timeout:g}s" if self.timeout else ""
            self.problem = f"the inspection timed out{limit}"
            return
        except DeadKernelError:
            raise
        except Exception as error:  # one notebook's trouble never stops the others
            self.problem = f"the inspection failed: {type(error).__name__}: {error}"
            return
        for output in cell.get("outputs", []):
            if output.get("output_type") == "error":
                self.problem = f"the inspection failed: {output.get('ename')}: {output.get('evalue')}"
                return
            data = output.get("data", {})
            if isinstance(data, dict) and MIME in data:
                try:
                    payload = json.loads(data[MIME]) if isinstance(data[MIME], str) else data[MIME]
                except (ValueError, RecursionError) as error:
                    self.problem = f"the kernel's answer is not JSON ({type(error).__name__})"
                    return
                self.problem = payload_problem(payload, str(self.request.get("style") or "junobench"))
                if self.problem is None:
                    self.payload = payload
                return
        self.problem = "the inspection produced no result"


class RuntimeRecords(list[dict[str, Any]]):
    """The records of one :func:`runtime_info` run; ``stopped`` says why the run stopped
    early (a lost cluster: the notebooks it did not run are infrastructure errors), if it did."""

    stopped: str | None = None


def runtime_info(
    case_ids: Sequence[str] | None = None,
    source: str | Path = DEFAULT_SOURCE,
    *,
    versions: Sequence[str] = vocab.EVALUATED_VERSIONS,
    exclude: Iterable[str] = (),
    revision: str | None = None,
    jobs: int | None = None,
    timeout: float | None = DEFAULT_TIMEOUT,
    options: Mapping[str, int] | None = None,
    filters: Mapping[str, str | Iterable[str]] | None = None,
    out: str | Path | None = None,
    progress: bool | None = None,
    on_record: Callable[[dict[str, Any]], None] | None = None,
    env: str | Path | None = None,
    executor: str | Executor = "local",
    executor_options: Mapping[str, Any] | None = None,
    resume: bool = True,
    pass_env: Sequence[str] = (),
    style: str = "junobench",
    signatures: bool = False,
    sandbox: Sandbox | None = None,
) -> RuntimeRecords:
    """Runtime information of the notebooks of ``case_ids`` (default: every case, or those
    matching ``filters``) in ``versions``, one record each (fields :data:`RECORD_FIELDS`).

    ``exclude`` drops categories (``S``, ``R``, ``V``): their fields are not computed.
    ``jobs`` kernels run at once; ``timeout`` limits each cell run and the inspection, in
    seconds; ``options`` overrides :data:`~junobench.runtime.summarise.DEFAULT_OPTIONS`.
    With ``out``, the records are written there as JSON Lines (atomically). A record's
    ``status`` is ``ok``, ``failed`` (``problem`` says why, and which pins of the
    snapshot's environment the kernel did not meet) or ``skipped`` (no input data).
    Kernels run in the interpreter of ``env`` (made by ``junobench env create``), else in
    junobench's own. ``executor`` is ``local`` or ``ray`` (``executor_options``: see
    :func:`junobench.verify.make_executor`) or an executor; a notebook whose replay was
    lost to infrastructure faults past the retries is ``failed`` with a ``problem``
    starting ``infrastructure error``. With ``out`` and ``resume``, the records an earlier
    ``out`` holds for the same inputs (``inputs``), but for infrastructure errors, are kept
    and not extracted again. The kernels see no credential-like variables but those named
    in ``pass_env``, and run in ``sandbox`` (as ``verify``'s: default
    ``auto``). ``records.stopped`` says why the run stopped early (a lost Ray cluster), if
    it did. ``style`` ``"crane"`` writes CRANE-LLM's summaries instead
    (:mod:`junobench.runtime.crane`; ``signatures`` adds callables' signatures to them).
    """
    from junobench.verify import bundled, runner_for

    require_run_extra()
    categories = categories_without(exclude)
    if style not in STYLES:
        raise JunoBenchError(f"unknown runtime-information style {style!r}",
                             hint=f"use one of {', '.join(STYLES)}")
    if signatures and style != crane.STYLE:
        raise JunoBenchError("signatures are asked for in the crane style only (junobench's "
                             "style gives them with R)", hint="add --style crane")
    bad = [v for v in versions if v not in vocab.EVALUATED_VERSIONS]
    if bad or not versions:
        raise JunoBenchError(f"unknown version {bad[0] if bad else '(none)'!r}",
                             hint="use reproduced or fixed")
    options = _check_options(options)
    runner = runner_for(executor, jobs=jobs, timeout=timeout, env=env, executor_options=executor_options,
                        pass_env=pass_env, sandbox=sandbox, trusted=bundled(source))
    target = runner.target
    if out is not None:
        check_file_target(out)  # before the notebooks run, not after
    root = resolve_cases(source, case_ids, revision=revision,
                         choose=(lambda tables: [s.case_id for s in case_specs(tables, filters=filters)])
                         if filters else None)
    specs = case_specs(root, case_ids, filters=filters)
    if not specs:
        raise JunoBenchError("no cases to extract runtime information from", file=root,
                             hint="check the case ids and filters (`junobench ls`)")
    work = [(spec, version) for spec in specs for version in dict.fromkeys(versions)]
    found = kernel_environment(target or own_kernel(), snapshot_environment(root))
    context = (f"{target.python if target else ''}|{sorted(categories)}|{sorted(options.items())}"
               + (f"|{style}|{signatures}" if style != "junobench" else ""))
    digests = {(spec.case_id, version): case_inputs(spec, timeout, context, (version,)) for spec, version in work}
    kept = _earlier(out, digests) if out is not None and resume else {}
    done: dict[tuple[str, str], dict[str, Any]] = dict(kept)
    last = [time.monotonic()]

    def save() -> None:
        if out is not None:
            write_jsonl(out, [done[(s.case_id, v)] for s, v in work if (s.case_id, v) in done])
            last[0] = time.monotonic()

    def finished(record: dict[str, Any]) -> None:
        done[(record["case_id"], record["version"])] = record
        if time.monotonic() - last[0] >= WRITE_EVERY:
            save()  # what finished is kept, whatever happens to the rest
        if on_record is not None:
            on_record(record)

    def left(why: str) -> dict[str, dict[str, Any]]:
        return notebook_states(work, done, runner.begun, why)

    try:
        records = run_sync(_extract_all(root, work, categories, options, runner, timeout, progress, finished,
                                        found, digests, kept, style, signatures))
    except (asyncio.CancelledError, KeyboardInterrupt):  # Ctrl-C: the kernels are stopped
        save()
        stop = KeyboardInterrupt(f"{len(done)} of {len(work)} notebooks done")
        stop.states = left("interrupted")  # type: ignore[attr-defined]
        raise stop from None
    except JunoBenchError as error:  # a cluster it cannot join
        save()
        error.states = left(str(error))  # type: ignore[attr-defined]
        raise
    except BaseException:  # what finished is kept, whatever stopped the rest
        save()
        raise
    done.update({(r["case_id"], r["version"]): r for r in records})
    save()
    result = RuntimeRecords(records)
    result.stopped = runner.stopped
    return result


def notebook_states(work: Sequence[tuple[CaseSpec, str]], done: Mapping[tuple[str, str], Mapping[str, Any]],
                    begun: Iterable[str], why: str) -> dict[str, dict[str, Any]]:
    """Instance → ``{"status", "problem"}`` of every notebook of a run stopped early (``why``):
    a record's, else ``interrupted`` (its replay had begun) or ``not run``."""
    started = set(begun)
    states = {}
    for spec, version in work:
        instance = vocab.instance_id(spec.case_id, version)
        record = done.get((spec.case_id, version))
        if record is not None:
            states[instance] = {"status": record["status"], "problem": record["problem"]}
        else:
            state, problem = unfinished(why, instance in started)
            states[instance] = {"status": state, "problem": problem}
    return states


def _earlier(out: str | Path, digests: Mapping[tuple[str, str], str | None]) -> dict[tuple[str, str], dict[str, Any]]:
    """Records of an earlier ``out`` to keep: same instance and inputs, not an infrastructure error."""
    from junobench.runtime.info import read_runtime_info

    if not Path(out).exists():
        return {}
    earlier = read_runtime_info(out)
    kept = {}
    for (case_id, version), digest in digests.items():
        record = earlier.get(vocab.instance_id(case_id, version))
        if (record is not None and digest is not None and record.get("inputs") == digest
                and not str(record.get("problem") or "").startswith(INFRASTRUCTURE)):
            kept[(case_id, version)] = record
    return kept


def _check_options(options: Mapping[str, int] | None) -> dict[str, int]:
    merged = {**DEFAULT_OPTIONS, **(options or {})}
    unknown = sorted(set(merged) - set(DEFAULT_OPTIONS) - {"max_probe"})
    if unknown:
        raise JunoBenchError(f"unknown runtime-information option(s) {', '.join(unknown)}",
                             hint=f"options are {', '.join(DEFAULT_OPTIONS)}")
    for key, value in merged.items():
        if not isinstance(value, int) or value < (0 if key == "max_items" else 1):
            raise JunoBenchError(f"{key} must be a positive whole number, got {value!r}")
    return merged


async def _extract_all(root: Path, work: Sequence[tuple[CaseSpec, str]], categories: Sequence[str],
                       options: Mapping[str, int], executor: Executor, timeout: float | None,
                       progress: bool | None, on_record: Callable[[dict[str, Any]], None] | None,
                       found: KernelEnvironment, digests: Mapping[tuple[str, str], str | None],
                       kept: Mapping[tuple[str, str], dict[str, Any]], style: str = "junobench",
                       signatures: bool = False) -> list[dict[str, Any]]:
    from tqdm import tqdm

    todo = [(spec, version) for spec, version in work if (spec.case_id, version) not in kept]
    replays = sum(1 for spec, _ in todo if spec.runnable)
    executor.expect(replays)
    bar = tqdm(total=len(todo), unit="notebook", desc="runtime-info", dynamic_ncols=True,
               disable=None if progress is None else not progress)

    async def one(spec: CaseSpec, version: str) -> dict[str, Any]:
        if (spec.case_id, version) in kept:
            return kept[(spec.case_id, version)]
        record = await extract_notebook(root, spec, version, categories, options, timeout, executor,
                                        style=style, signatures=signatures)
        record["inputs"] = digests.get((spec.case_id, version))
        unmet = found.mismatches(spec.requirements)
        if record["status"] == "failed" and unmet:
            record["problem"] += f" (environment: {'; '.join(unmet)})"
        bar.update()
        if on_record is not None:
            on_record(record)
        return record

    try:
        async with entered_for(executor, replays):
            return await gather_all(*(one(spec, version) for spec, version in work))
    finally:
        bar.close()


async def extract_notebook(root: Path, spec: CaseSpec, version: str, categories: Sequence[str],
                           options: Mapping[str, int], timeout: float | None,
                           executor: Executor, *, style: str = "junobench",
                           signatures: bool = False) -> dict[str, Any]:
    """The runtime-information record of one notebook of a case spec, replayed by
    ``executor`` (entered by the caller), in ``style``."""
    record = new_record(spec.case_id, version, spec.target, categories, style)
    if spec.problem is not None or spec.data_absent:
        record.update(status="skipped" if spec.problem is None else "failed",
                      problem=DATA_ABSENT if spec.problem is None else f"cannot run: {spec.problem}")
        return record
    assert spec.target is not None
    try:
        notebook, _ = read_notebook(layout.notebook_path(root, spec.case_id, version), case=spec.case_id)
    except JunoBenchError as error:
        record.update(status="failed", problem=f"cannot read the notebook: {error.problem_.problem}")
        return record
    steps = spec.orders[version][:-1]  # everything before the target's (last) run
    executed = [(step.code_cell_index, notebook.code_cells[step.code_cell_index].source)
                for step in steps]
    request = request_for(notebook.code_cells[spec.target].source, categories, options,
                          style=style, executed=executed, signatures=signatures)
    record.update(names=request["names"], attributes=request["attributes"], parsed=request.pop("parsed"))
    outcome = await executor.run(replay_task(spec, version, steps, timeout=timeout,
                                             after=Inspection(request, timeout)))
    record["seconds"] = round(outcome.log.seconds, 3)  # the replay's, not the time it waited
    record["sandbox"] = outcome.log.sandbox
    if outcome.error is not None:
        record.update(status="failed", problem=f"{INFRASTRUCTURE}: {outcome.error}")
        return record
    inspection: Inspection = outcome.after  # as the kernel's host left it
    problem = run_problem(outcome.log) or inspection.problem
    if problem is None and inspection.payload is None:
        problem = "the inspection did not run"
    if problem is not None:
        record.update(status="failed", problem=problem)
        return record
    payload = inspection.payload or {}
    record.update(status="ok", **{k: payload.get(k) for k in (
        "objects", "undefined", "environment", "capped", "imported_by_inspection")})
    if style == crane.STYLE:
        record["annotations"] = payload.get("annotations") or {}
    return record


def new_record(case_id: str, version: str, target: int | None, categories: Sequence[str],
               style: str = "junobench") -> dict[str, Any]:
    """An empty record (every field present) for one notebook."""
    return {"instance": vocab.instance_id(case_id, version), "case_id": case_id, "version": version,
            "target_cell": target, "status": "failed", "problem": None, "categories": list(categories),
            "names": [], "attributes": {}, "undefined": [], "objects": {}, "environment": {},
            "capped": None, "imported_by_inspection": [], "parsed": True, "seconds": 0.0, "inputs": None,
            "style": style, "annotations": {},
            "sandbox": None}


def run_problem(log: RunLog) -> str | None:
    """Why the cells before the target did not all run (None when they did)."""
    for step in log.steps:
        if step.status == TIMEOUT:
            limit = f" after {log.timeout:g}s" if log.timeout else ""
            return f"code cell {step.code_cell_index} timed out{limit}, before the target"
        if step.status != OK:
            value = first_line(step.evalue)
            detail = f"{step.ename}: {value}" if value else str(step.ename)
            return f"code cell {step.code_cell_index} raised {detail}, before the target"
    if log.input_error is not None:
        return f"input error: {log.input_error}"
    if log.failure is not None:
        return f"kernel failure: {log.failure}"
    if len(log.steps) < log.planned:
        return f"incomplete run: {len(log.steps)} of {log.planned} cells ran"
    return None
