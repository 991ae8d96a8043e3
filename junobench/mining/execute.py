"""Running notebooks before they are mined (``mine --execute``), through verify's executors.

A notebook is run when it has no output besides errors (never run, cleared, or
reconstructed), or every notebook with ``rerun``. Its code cells run in a fresh kernel in
the sandbox (:mod:`junobench.envs.sandbox`; no network unless asked), locally or on Ray
(:func:`junobench.verify.runner_for`), in their recorded order: the cells that carry an
execution count, ascending (a ``[reexecute]`` cell twice), or every code cell from the top
when none does; the run stops at the first cell that raises, as a notebook does. A snapshot's
notebook works in a copy of its case folder (its data beside it); any other notebook works
alone in ``working/``, with the input datasets of ``data`` in ``input/<slug>/`` (Kaggle's
layout, ``/kaggle/input`` in its code pointed there), as ``construct reproduce`` lays it out.

The run's outputs are put into the notebook as it was read (its own sources, not the
copies the run edited), written to a spool folder and mined from there: a notebook that
failed is mined with what it produced, its row saying how the run went.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from junobench.data.notebook import Step, has_reexecute_marker
from junobench.mining.inputs import Source, read_source
from junobench.mining.parse import ParsedNotebook, parse
from junobench.mining.rows import PYTHON, Execution
from junobench.verify.executor import Executor, Place, ReplayOutcome, ReplayTask, entered_for, gather_all


class _Holder:
    """Where the executed notebook is kept, between the two hooks of a task."""

    def __init__(self) -> None:
        self.notebook: Any = None
        self.sources: list[Any] = []


@dataclass
class Capture:
    """A ``prepare`` hook that keeps the notebook a run fills in (and its cells' sources
    before ``inner`` edits them); picklable, so it works where the kernel runs."""

    holder: _Holder = field(default_factory=_Holder)
    inner: Any = None

    def __call__(self, notebook: Any, path: Callable[[str], Path]) -> None:
        self.holder.notebook = notebook
        self.holder.sources = [cell.get("source", "") for cell in notebook.cells]
        for cell in notebook.cells:  # what was saved is replaced by what this run produces
            if cell.get("cell_type") == "code":
                cell["outputs"] = []
                cell["execution_count"] = None
        if self.inner is not None:
            self.inner(notebook, path)


@dataclass
class Returned:
    """The ``after`` hook of a captured run: returned with the task's outcome, it carries the
    executed notebook back from wherever the run happened."""

    holder: _Holder

    async def __call__(self, client: Any) -> None:
        return None

    def notebook_bytes(self) -> bytes | None:
        """The executed notebook's JSON, its cells' sources as they were read."""
        notebook = self.holder.notebook
        if notebook is None:
            return None
        for cell, source in zip(notebook.cells, self.holder.sources, strict=False):
            cell["source"] = source
        import nbformat

        text: str = nbformat.writes(notebook)
        return text.encode("utf-8")


def needs_run(notebook: ParsedNotebook, *, rerun: bool) -> str | None:
    """Why a notebook cannot be run (another kernel's language, no code), or None when it
    should be run: always with ``rerun``, else when it has no output besides errors."""
    if notebook.language is not None and notebook.language not in PYTHON:
        return f"not run: a notebook of the {notebook.language} kernel (junobench runs Python kernels)"
    if not any(cell.kind == "code" for cell in notebook.cells):
        return "not run: no code cell"
    if rerun:
        return None
    produced = any(o.kind != "error" for cell in notebook.cells for o in cell.outputs)
    return "" if produced else None


def run_order(notebook: ParsedNotebook) -> list[Step]:
    """The code cells to run, in order: those with an execution count, ascending (ties in
    notebook order; a ``[reexecute]`` cell twice in a row), or all of them from the top."""
    code = [cell for cell in notebook.cells if cell.kind == "code"]
    counted = sorted((c.execution_count, index) for index, c in enumerate(code) if c.execution_count is not None)
    if not counted:
        return [Step(index, None) for index in range(len(code))]
    steps = []
    for count, index in counted:
        if has_reexecute_marker(code[index].source):
            steps.append(Step(index, None))
        steps.append(Step(index, count))
    return steps


@dataclass
class Planned:
    """A notebook to run: its source, steps, and the datasets its run gets."""

    source: Source
    steps: tuple[Step, ...]
    datasets: tuple[str, ...] = ()
    kaggle_paths: bool = False


def plan(source: Source, raw: bytes, datasets: Mapping[str, Path], *, rerun: bool) -> Planned | str | None:
    """What to run for ``source`` (its bytes ``raw``): a :class:`Planned`, a reason it is not
    run (another kernel), or None when it is mined as it is."""
    try:
        notebook = parse(raw)
    except Exception:  # not a notebook: mined as it is, its row says why
        return None
    why = needs_run(notebook, rerun=rerun)
    if why is not None:
        return why or None
    code = "\n".join(c.source for c in notebook.cells if c.kind == "code")
    used = tuple(slug for slug in datasets if re.search(rf"(?<![\w.-]){re.escape(slug)}(?![\w.-])", code))
    return Planned(source, tuple(run_order(notebook)), used or tuple(datasets),
                   "/kaggle/input" in code or "/kaggle/working" in code)


def task_of(planned: Planned, datasets: Mapping[str, Path], timeout: float | None,
            trusted: str | None) -> tuple[ReplayTask, Returned]:
    """The replay task of a planned run, and the hook its executed notebook comes back in."""
    from junobench.construct.reproduce import KagglePaths
    from junobench.safety.paths import link_root

    source = planned.source
    assert source.path is not None
    capture = Capture(inner=KagglePaths() if planned.kaggle_paths and source.folder is None else None)
    returned = Returned(capture.holder)
    if source.folder is not None and source.run_name is not None:
        case = source.folder.name
        places: tuple[Place, ...] = (Place(str(source.folder), case,
                                           trusted=str(link_root(source.folder.parent.parent))),)
        notebook, cwd = f"{case}/{source.run_name}", case
    else:
        notebook, cwd = f"working/{source.path.name}", "working"
        places = (Place(str(source.path), notebook),
                  *(Place(str(datasets[slug]), f"input/{slug}", trusted=trusted) for slug in planned.datasets))
    task = ReplayTask(key=source.item.notebook, notebook=notebook, steps=planned.steps, cwd=cwd, places=places,
                      timeout=timeout, case=source.item.case_id or source.item.notebook, prepare=capture,
                      after=returned)
    return task, returned


def execution_of(outcome: ReplayOutcome) -> Execution:
    """How a run went, as the ``notebooks`` row says it."""
    log = outcome.log
    if outcome.error is not None:
        return Execution("failed", f"infrastructure error: {outcome.error}")
    if log.input_error:
        return Execution("failed", log.input_error)
    if log.failure:
        return Execution("failed", log.failure)
    for step in log.steps:
        if step.status == "timeout":
            return Execution("timeout", f"code cell {step.code_cell_index} ran past the time limit")
        if step.status != "ok":
            return Execution("error", f"{step.ename}: {step.evalue} (code cell {step.code_cell_index})"[:2000])
    return Execution("ok")


@dataclass
class RunResult:
    """The runs of ``mine --execute``: notebook id → how it went, and the spooled file."""

    executions: dict[str, Execution] = field(default_factory=dict)
    spooled: dict[str, Path] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)
    sandbox: str = ""
    executor: str = ""
    stopped: str | None = None


def run_all(items: Iterable[Source], executor: Executor, spool: Path, *, limit: int, rerun: bool,
            datasets: Mapping[str, Path], timeout: float | None, trusted: str | None,
            progress: Callable[[], None] | None = None) -> RunResult:
    """Run the notebooks of ``items`` that need it (see :func:`needs_run`) with ``executor``,
    spooling each executed notebook into ``spool``."""
    from junobench.verify.runner import run_sync

    result = RunResult()
    planned: list[Planned] = []
    for source in items:
        if source.path is None:
            continue
        try:
            raw = read_source(source.path, limit)
        except OSError:
            continue  # mined later with the reason it cannot be read
        found = plan(source, raw, datasets, rerun=rerun)
        if isinstance(found, Planned):
            planned.append(found)
        elif isinstance(found, str):
            result.skipped[source.item.notebook] = found

    async def one(number: int, item: Planned) -> None:
        task, returned = task_of(item, datasets, timeout, trusted)
        outcome = await executor.run(task)
        hook = outcome.after if isinstance(outcome.after, Returned) else returned
        data = await asyncio.to_thread(hook.notebook_bytes)
        result.executions[item.source.item.notebook] = execution_of(outcome)
        if data is not None:
            path = spool / f"{number:08d}.ipynb"
            await asyncio.to_thread(path.write_bytes, data)
            result.spooled[item.source.item.notebook] = path
        if progress is not None:
            progress()

    async def everything() -> None:
        executor.expect(len(planned))
        async with entered_for(executor, len(planned)):
            await gather_all(*(one(number, item) for number, item in enumerate(planned)))

    run_sync(everything())
    result.executor = executor.describe()
    result.sandbox = executor.sandbox.describe()
    result.stopped = executor.stopped
    return result


def data_folders(data: str | Path | None) -> dict[str, Path]:
    """Slug → folder of the input datasets for runs (``DATA/<slug>/`` or ``construct
    download``'s layout), as ``construct reproduce`` reads them."""
    if data is None:
        return {}
    from junobench.construct.reproduce import input_datasets

    return input_datasets(data)

