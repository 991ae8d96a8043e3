"""Try to reproduce sampled crashes: the triage before labelling a benchmark's new cases.

For each row of a sampled table (``construct resample``'s output: ``fname, eid, ename,
evalue, …``), the notebook ``fname`` is read from the notebooks folder, its crashing cell
found from its error output (:func:`~junobench.construct.triage.crash_cell`), and the
notebook run in a fresh kernel in its execution order up to and including that cell
(:func:`~junobench.construct.triage.reproduction_order`), in a temporary workspace laid
out like Kaggle's: the notebook in ``working/`` (the working directory) and the input
datasets in ``input/<slug>/`` (so ``../input/<slug>/…`` reads them), with the literal paths
``/kaggle/input`` and ``/kaggle/working`` in the code pointed at those copies. The replay is
classified (:func:`~junobench.construct.triage.classify`) and the table written back with
the columns of :data:`RESULT_COLUMNS`. Replays run through verify's executors (local or
Ray); a rerun with the same output keeps the rows that have a verdict.

>>> result = reproduce("sampled.xlsx", "notebooks/", out="triaged.xlsx", data="inputs/")  # doctest: +SKIP
>>> result.counts()                                                                        # doctest: +SKIP
{'same exception': 41, 'missing data': 12, 'no crash': 3}
"""

from __future__ import annotations

import asyncio
import re
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from junobench.construct.triage import (
    INFRASTRUCTURE,
    NO_CRASH,
    NOT_RUN,
    OVER_QUOTA,
    SAME,
    VERDICTS,
    Reproduction,
    classify,
    crash_cell,
    reexecuted,
    reexecution_order,
    reproduction_order,
)
from junobench.data.notebook import read_notebook
from junobench.data.tables import stripped
from junobench.envs.environment import packaged
from junobench.envs.kernel import env_kernel
from junobench.envs.requirements import requirements_of
from junobench.envs.sandbox import Sandbox, require_sandbox
from junobench.errors import JunoBenchError
from junobench.verify import make_executor
from junobench.verify.executor import Executor, Place, ReplayOutcome, ReplayTask, entered_for, gather_all
from junobench.verify.runner import require_run_extra, run_sync

#: Columns added to the table, in order.
RESULT_COLUMNS: tuple[str, ...] = ("reproduced", "reproduced_detail", "reproduced_exception",
                                   "crash_cell", "reproduced_cell", "reproduced_seconds")
#: Default time limit per cell run, in seconds.
DEFAULT_TIMEOUT = 600.0
#: Seconds between two writes of the output table while replays finish.
WRITE_EVERY = 10.0

KAGGLE_INPUT = "/kaggle/input"
KAGGLE_WORKING = "/kaggle/working"
_DOWNLOAD_RECORD = ".download.json"  # construct download's record beside DEST/<owner>/<slug>/


@dataclass
class Candidate:
    """One row of the sampled table and what it takes to replay it (``problem``: why not)."""

    number: int  # row number in the table (header = 1)
    row: dict[str, Any]
    notebook: Path | None = None
    expected: str | None = None
    crash: int | None = None
    steps: tuple[Any, ...] = ()
    document_order: bool = False
    requirements: tuple[str, ...] = ()
    kaggle_paths: bool = False
    datasets: tuple[str, ...] = ()
    problem: str | None = None
    rerun: tuple[Any, ...] = ()  # the order with the crashing cell run twice, to try on no crash
    library: str | None = None  # for --quota


@dataclass
class ReproduceResult:
    """The table's rows with their :data:`RESULT_COLUMNS` filled in, and the columns."""

    rows: list[dict[str, Any]]
    columns: list[str]
    reused: int = 0
    seconds: float = 0.0
    executor: str = "local"
    outcomes: dict[int, Reproduction] = field(default_factory=dict)
    sandbox: str = ""  # where the notebooks ran (``bwrap, network off``)
    stopped: str | None = None  # why the run stopped early (a lost cluster): the rest are infrastructure errors

    def counts(self) -> dict[str, int]:
        return dict(Counter(row.get("reproduced") or "not run" for row in self.rows))


class KagglePaths:
    """A ``prepare`` hook: points ``/kaggle/input`` and ``/kaggle/working`` in the code cells
    at the workspace's ``input/`` and ``working/`` (picklable, runs where the kernel runs)."""

    def __call__(self, notebook: Any, path: Callable[[str], Path]) -> None:
        for cell in notebook.cells:
            if cell.cell_type == "code" and "/kaggle/" in cell.source:
                cell.source = (cell.source.replace(KAGGLE_INPUT, str(path("input")))
                               .replace(KAGGLE_WORKING, str(path("working"))))


def reproduce(
    table: str | Path,
    notebooks: str | Path,
    *,
    out: str | Path,
    data: str | Path | None = None,
    env: str | Path | None = None,
    executor: str | Executor = "local",
    jobs: int | None = None,
    timeout: float | None = DEFAULT_TIMEOUT,
    notebook_column: str = "fname",
    exception_column: str = "ename",
    message_column: str = "evalue",
    resume: bool = True,
    progress: bool | None = None,
    on_row: Callable[[dict[str, Any]], None] | None = None,
    executor_options: Mapping[str, Any] | None = None,
    quota: int | None = None,
    library_column: str | None = None,
    sandbox: Sandbox | None = None,
) -> ReproduceResult:
    """Replay each sampled crash of ``table`` (notebooks in ``notebooks``, input datasets in
    ``data``: ``DATA/<slug>/`` or ``construct download``'s ``DATA/<owner>/<slug>/``) and write
    the table with :data:`RESULT_COLUMNS` to ``out`` (xlsx, rewritten as rows finish).

    Kernels run in the interpreter of ``env`` (made by ``junobench env create``; with Ray,
    at the same path on every worker), else in junobench's own. ``executor`` is ``local``,
    ``ray`` (``executor_options``: see :func:`~junobench.verify.make_executor`; with
    ``build_envs``, each notebook runs in a Ray runtime environment of the pins, in
    junobench's packaged environment, of what its code imports) or an executor. With ``resume``
    and an earlier ``out`` of the same table, rows that already have a verdict are kept and
    not run again (an infrastructure error is run again). The notebooks run in ``sandbox``
    (default ``auto``: bubblewrap; refused where no sandbox runs, unless it says ``none``),
    which the result names (``ReproduceResult.sandbox``). ``ReproduceResult.stopped`` says
    why the run stopped early (a lost Ray cluster: the rows it did not run are infrastructure
    errors), if it did.
    """
    require_run_extra()
    folder = _check_paths(table, notebooks, out, timeout, quota)
    datasets = input_datasets(data) if data is not None else {}
    rows, columns, earlier, library_of = _read_rows(table, out, notebook_column, library_column,
                                                    resume=resume, quota=quota)
    candidates = [candidate(i + 2, row, folder, datasets, notebook_column, exception_column, message_column)
                  for i, row in enumerate(rows) if i not in earlier]
    limits = _quota_limits(quota, library_of, candidates, rows, earlier)
    policy = require_sandbox(sandbox or Sandbox(), trusted=False)  # notebooks from Kaggle: never trusted
    runner = _runner(executor, jobs, env, executor_options)
    runner.sandbox = policy
    result = ReproduceResult(rows, columns, reused=len(earlier), executor=runner.name, sandbox=policy.describe())
    writer = _Writer(out, result)
    started = time.perf_counter()
    try:
        run_sync(_run_all(runner, candidates, datasets, timeout, progress, result, writer, on_row,
                          None if data is None else str(Path(data).resolve()), limits))
    except (asyncio.CancelledError, KeyboardInterrupt):  # Ctrl-C: the kernels are stopped
        writer.flush()  # what finished is kept for the next run
        done = sum(1 for row in rows if row.get("reproduced"))
        raise KeyboardInterrupt(f"{done} of {len(rows)} rows done") from None
    except BaseException:
        writer.flush()
        raise
    result.seconds = time.perf_counter() - started
    result.executor = runner.describe()
    result.stopped = runner.stopped
    writer.flush()
    return result


def _check_paths(table: str | Path, notebooks: str | Path, out: str | Path, timeout: float | None,
                 quota: int | None) -> Path:
    """The notebooks folder, once the arguments are checked (before anything is read)."""
    if timeout is not None and timeout <= 0:
        raise JunoBenchError(f"--timeout must be positive, got {timeout:g}")
    if quota is not None and quota < 1:
        raise JunoBenchError(f"--quota must be at least 1, got {quota}")
    written = Path(out)
    if written.exists() and written.resolve() == Path(table).resolve():
        raise JunoBenchError("--out is the sampled table itself", file=written,
                             hint="write the result to another file")
    if not written.parent.is_dir():
        raise JunoBenchError("the output's folder does not exist", file=written)
    folder = Path(notebooks)
    if not folder.is_dir():
        raise JunoBenchError("the notebooks folder does not exist", file=folder,
                             hint="pass the folder that holds the sampled notebooks")
    return folder


def _read_rows(table: str | Path, out: str | Path, notebook_column: str, library_column: str | None,
               *, resume: bool, quota: int | None
               ) -> tuple[list[dict[str, Any]], list[str], dict[int, dict[str, Any]], str | None]:
    """The sampled table's rows (those of an earlier ``out`` with a verdict filled in), the
    output's columns, the rows kept from ``out`` by index, and the library column a
    ``quota`` counts by."""
    from junobench.data.tables import read_table

    source = read_table(table)
    source.require([notebook_column], hint="the sampled table names each crash's notebook")
    library_of = _library_column(source.columns, library_column, table) if quota is not None else None
    rows: list[dict[str, Any]] = [dict(r) for r in source.records()]
    columns = [c for c in source.columns if c not in RESULT_COLUMNS] + list(RESULT_COLUMNS)
    earlier = previous_results(out, rows, notebook_column) if resume else {}
    for number, kept in earlier.items():
        rows[number].update(kept)
    return rows, columns, earlier, library_of


def _quota_limits(quota: int | None, library_of: str | None, candidates: Sequence[Candidate],
                  rows: Sequence[Mapping[str, Any]], earlier: Mapping[int, Mapping[str, Any]]
                  ) -> _Quota | None:
    """How many more crashes of each library may reproduce (those kept from an earlier run
    count), with each candidate's library noted; None without a quota."""
    if quota is None or library_of is None:
        return None
    for item in candidates:
        item.library = stripped(item.row.get(library_of)) or "(none)"
    done = [stripped(rows[i].get(library_of)) or "(none)" for i, kept in earlier.items()
            if kept.get("reproduced") == SAME]
    return _Quota(quota, {lib: done.count(lib) for lib in set(done)})


def _runner(executor: str | Executor, jobs: int | None, env: str | Path | None,
            options: Mapping[str, Any] | None) -> Executor:
    """The executor that replays the notebooks, its kernels in ``env`` when given."""
    kernels = env_kernel(env) if env is not None else None
    if not isinstance(executor, Executor):
        return make_executor(executor, jobs=jobs, target=kernels, **dict(options or {}))
    if kernels is not None:
        executor.target = kernels
    return executor


def candidate(number: int, row: dict[str, Any], folder: Path, datasets: Mapping[str, Path],
              notebook_column: str, exception_column: str, message_column: str) -> Candidate:
    """What to replay for one row (a ``problem`` instead when it cannot be)."""
    item = Candidate(number, row)
    name = row.get(notebook_column)
    if not name or not str(name).strip():
        item.problem = f"no notebook named in column {notebook_column!r}"
        return item
    path = notebook_path(folder, str(name).strip())
    if path is None:
        item.problem = f"notebook {name!r} is not a file inside the notebooks folder"
        return item
    try:
        notebook, _ = read_notebook(path)
    except JunoBenchError as error:
        item.problem = f"cannot read the notebook: {error.problem_.problem}"
        return item
    cells = notebook.code_cells
    ename = stripped(row.get(exception_column))
    target = crash_cell(cells, ename, stripped(row.get(message_column)))
    if target is None:
        item.problem = "the notebook has no error output, so its crashing cell is unknown"
        return item
    crashed = cells[target].error
    assert crashed is not None
    steps, document_order = reproduction_order(cells, target)
    code = "\n".join(c.source for c in cells)
    used = tuple(slug for slug in datasets if re.search(rf"(?<![\w.-]){re.escape(slug)}(?![\w.-])", code))
    item.notebook, item.crash, item.steps = path, target, tuple(steps)
    item.rerun = () if document_order else tuple(reexecution_order(cells, steps) or ())
    item.expected = ename or crashed.ename
    item.document_order = document_order
    item.kaggle_paths = KAGGLE_INPUT in code or KAGGLE_WORKING in code
    item.datasets = used or tuple(datasets)  # none named: all of them, as a notebook may list ../input
    item.requirements = tuple(requirements_of((c.source for c in cells), packaged()).requirements)
    return item


def notebook_path(folder: Path, name: str) -> Path | None:
    """``folder/name`` when it is a regular file inside ``folder`` (links resolved), else None."""
    relative = Path(name)
    if relative.is_absolute() or ".." in relative.parts:
        return None
    path = folder / relative
    try:
        resolved = path.resolve(strict=True)
        resolved.relative_to(folder.resolve())
    except (OSError, ValueError, RuntimeError):
        return None
    return resolved if resolved.is_file() else None


def input_datasets(data: str | Path) -> dict[str, Path]:
    """Slug → folder of the input datasets under ``data``: ``DATA/<slug>/`` as Kaggle mounts
    them, or ``DATA/<owner>/<slug>/`` with the ``<slug>.download.json`` record that
    ``construct download`` writes. Links out of ``data`` are skipped."""
    root = Path(data)
    if not root.is_dir():
        raise JunoBenchError("the data folder does not exist", file=root,
                             hint="pass the folder that holds the input datasets (DATA/<slug>/)")
    top = root.resolve()
    found: dict[str, Path] = {}
    for entry in sorted(root.iterdir()):
        if not _inside(entry, top) or not entry.is_dir():
            continue
        downloads = [p for p in sorted(entry.iterdir()) if p.name.endswith(_DOWNLOAD_RECORD)]
        if downloads:
            for record in downloads:
                folder = entry / record.name[: -len(_DOWNLOAD_RECORD)]
                if folder.is_dir() and _inside(folder, top):
                    found.setdefault(folder.name, folder)
        else:
            found.setdefault(entry.name, entry)
    return found


def previous_results(out: str | Path, rows: Sequence[Mapping[str, Any]], notebook_column: str
                     ) -> dict[int, dict[str, Any]]:
    """Row index → result columns kept from an earlier ``out`` of the same table: rows whose
    notebook matches and whose ``reproduced`` value is a verdict."""
    from junobench.data.tables import read_table

    path = Path(out)
    if not path.is_file():
        return {}
    try:
        earlier = read_table(path)
    except JunoBenchError:
        return {}
    if "reproduced" not in earlier.columns or notebook_column not in earlier.columns:
        raise JunoBenchError("the output exists and is not a table written by construct reproduce",
                             file=path, hint="choose another --out, or remove the file")
    old = earlier.records()
    if len(old) != len(rows):
        return {}  # another table: run everything again
    kept: dict[int, dict[str, Any]] = {}
    for index, (before, now) in enumerate(zip(old, rows, strict=True)):
        if before.get(notebook_column) != now.get(notebook_column) or before.get("reproduced") not in VERDICTS:
            continue
        kept[index] = {c: before.get(c) for c in RESULT_COLUMNS}
    return kept


async def _run_all(executor: Executor, candidates: Sequence[Candidate], datasets: Mapping[str, Path],
                   timeout: float | None, progress: bool | None, result: ReproduceResult,
                   writer: _Writer, on_row: Callable[[dict[str, Any]], None] | None,
                   trusted: str | None = None, quota: _Quota | None = None) -> None:
    from tqdm import tqdm

    bar = tqdm(total=len(candidates), unit="notebook", desc="reproduce", dynamic_ncols=True,
               disable=None if progress is None else not progress)
    tally: dict[str, int] = {}

    def finished(item: Candidate, verdict: Reproduction, seconds: float) -> None:
        row = result.rows[item.number - 2]
        row.update({"reproduced": verdict.outcome, "reproduced_detail": verdict.detail,
                    "reproduced_exception": verdict.exception, "crash_cell": item.crash,
                    "reproduced_cell": verdict.cell, "reproduced_seconds": round(seconds, 3)})
        result.outcomes[item.number - 2] = verdict
        tally[verdict.outcome] = tally.get(verdict.outcome, 0) + 1
        bar.set_postfix_str(", ".join(f"{n} {s}" for s, n in tally.items()), refresh=False)
        bar.update()
        writer.changed()
        if on_row is not None:
            on_row(row)

    async def one(item: Candidate) -> None:
        if item.problem is not None:
            finished(item, Reproduction(NOT_RUN, item.problem), 0.0)
            return
        outcome = await executor.run(replay_task(item, datasets, timeout, trusted))
        verdict, seconds = judge_outcome(item, outcome), outcome.log.seconds
        if verdict.outcome == NO_CRASH and item.rerun:
            again = await executor.run(replay_task(item, datasets, timeout, trusted, steps=item.rerun))
            count = item.rerun[-1].execution_count
            verdict = reexecuted(judge_outcome(item, again), count, verdict)
            seconds += again.log.seconds
        finished(item, verdict, seconds)

    try:
        async with entered_for(executor, sum(1 for item in candidates if item.problem is None)):
            if quota is None:
                await gather_all(*(one(item) for item in candidates))
            else:
                await _within_quota(candidates, quota, max(1, executor.jobs), one, finished)
    finally:
        bar.close()


class _Quota:
    """How many crashes each library may reproduce, and how many it has (or has running)."""

    def __init__(self, limit: int, reproduced: Mapping[str, int]) -> None:
        self.limit = limit
        self.reproduced = dict(reproduced)
        self.running: dict[str, int] = {}

    def full(self, library: str) -> bool:
        return self.reproduced.get(library, 0) >= self.limit

    def busy(self, library: str) -> bool:
        return self.reproduced.get(library, 0) + self.running.get(library, 0) >= self.limit


async def _within_quota(candidates: Sequence[Candidate], quota: _Quota, workers: int,
                        one: Callable[[Candidate], Any],
                        finished: Callable[[Candidate, Reproduction, float], None]) -> None:
    """Run ``candidates`` in table order, ``workers`` at a time, never more of a library at
    once than could still be needed for its quota; those left when it is met are over quota."""
    import asyncio

    waiting = list(candidates)
    changed = asyncio.Condition()

    async def run(item: Candidate) -> None:
        library = item.library or "(none)"
        quota.running[library] = quota.running.get(library, 0) + 1
        try:
            await one(item)
        finally:
            quota.running[library] -= 1
            if item.row.get("reproduced") == SAME:
                quota.reproduced[library] = quota.reproduced.get(library, 0) + 1
            async with changed:
                changed.notify_all()

    def next_item() -> Candidate | None:
        """The first waiting row whose library may still need it (over-quota rows settled)."""
        for item in [i for i in waiting if quota.full(i.library or "(none)")]:
            waiting.remove(item)
            finished(item, Reproduction(OVER_QUOTA, f"not tried: {quota.limit} crash(es) of "
                                        f"{item.library} reproduced already (--quota)"), 0.0)
        chosen = next((i for i in waiting if not quota.busy(i.library or "(none)")), None)
        if chosen is not None:
            waiting.remove(chosen)
        return chosen

    async def worker() -> None:
        while True:
            async with changed:
                chosen = next_item()
                while chosen is None and waiting:
                    await changed.wait()
                    chosen = next_item()
            if chosen is None:
                return
            await run(chosen)

    await gather_all(*(worker() for _ in range(min(workers, len(candidates)) or 1)))


def replay_task(item: Candidate, datasets: Mapping[str, Path], timeout: float | None,
                trusted: str | None = None, *, steps: Sequence[Any] | None = None) -> ReplayTask:
    """The replay of a candidate: its notebook in ``working/``, its datasets in ``input/``
    (links in them may point anywhere under ``trusted``, the data folder)."""
    assert item.notebook is not None
    name = f"working/{item.notebook.name}"
    places = (Place(str(item.notebook), name),
              *(Place(str(datasets[slug]), f"input/{slug}", trusted=trusted) for slug in item.datasets))
    return ReplayTask(key=f"row{item.number}" + ("-twice" if steps is not None else ""), notebook=name,
                      steps=tuple(item.steps if steps is None else steps), cwd="working",
                      places=places, timeout=timeout, case=str(item.row.get("fname")),
                      prepare=KagglePaths() if item.kaggle_paths else None, requirements=item.requirements)


def judge_outcome(item: Candidate, outcome: ReplayOutcome) -> Reproduction:
    """The classification of a finished task, with what the detail should also say."""
    assert item.crash is not None and item.expected is not None
    if outcome.error is not None:
        verdict = Reproduction(INFRASTRUCTURE, outcome.error)
    else:
        verdict = classify(outcome.log, crash_cell=item.crash, expected=item.expected)
    notes = []
    if item.document_order:
        notes.append("no execution counts: cells run in document order")
    if item.kaggle_paths:
        notes.append("/kaggle paths pointed at the workspace")
    if outcome.faults and outcome.error is None:
        notes.append(f"attempt {outcome.attempts} ({'; '.join(outcome.faults)})")
    if not notes:
        return verdict
    return Reproduction(verdict.outcome, f"{verdict.detail}; {'; '.join(notes)}", verdict.exception,
                        verdict.cell)


class _Writer:
    """Writes the output table at most every :data:`WRITE_EVERY` seconds, and on flush."""

    def __init__(self, out: str | Path, result: ReproduceResult) -> None:
        self.out = Path(out)
        self.result = result
        self.last = time.monotonic()

    def changed(self) -> None:
        if time.monotonic() - self.last >= WRITE_EVERY:
            self.flush()

    def flush(self) -> None:
        from junobench.data.tables import write_table

        write_table(self.out, self.result.rows, self.result.columns)
        self.last = time.monotonic()


def _library_column(columns: Sequence[str], wanted: str | None, table: str | Path) -> str:
    """The column naming each row's library, for ``--quota``."""
    candidates = [wanted] if wanted else ["Libs-cause-estimated", "Libs-cause", "library"]
    found = next((c for c in candidates if c in columns), None)
    if found is None:
        raise JunoBenchError(f"--quota needs a library column ({' or '.join(candidates)})",
                             file=table, hint="score the table with `construct library-cause`, "
                                              "or name the column with --library-column")
    return found


def _inside(path: Path, top: Path) -> bool:
    try:
        path.resolve().relative_to(top)
    except (OSError, ValueError, RuntimeError):
        return False
    return True
