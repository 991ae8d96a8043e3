"""``junobench mine``: notebooks in, their text, code and figures out as a dataset.

>>> result = mine(["sample"], "mined")
>>> result.rows
{'notebooks': 30, 'cells': 240, 'figures': 4}
>>> from datasets import load_dataset
>>> load_dataset("mined", "figures", split="train")[0]["image"].format
'PNG'
"""

from __future__ import annotations

import shutil
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import junobench
from junobench.cores import available_cores
from junobench.errors import JunoBenchError
from junobench.mining.features import CONFIGS
from junobench.mining.inputs import Source, sources
from junobench.mining.kinds import chart_kinds
from junobench.mining.parallel import Job, mined_in_order
from junobench.mining.rows import Execution, Limits
from junobench.mining.summary import Summary
from junobench.mining.write import CorpusWriter, finish, replacing
from junobench.safety.paths import require_utf8_path

#: The repo id the card's loading example names, unless told another.
DEFAULT_REPO_ID = "your-name/notebook-figures"


@dataclass
class MineResult:
    """What a run of ``mine`` wrote: the folder, the rows of each config, its summary, and
    how the runs of ``--execute`` went (``runs``: notebook id → status)."""

    out: Path
    rows: dict[str, int]
    summary: Summary
    seconds: float = 0.0
    runs: dict[str, str] = field(default_factory=dict)
    sandbox: str | None = None
    executor: str | None = None
    stopped: str | None = None


def mine(
    inputs: Sequence[str | Path],
    out: str | Path,
    *,
    notebooks: str | Path | None = None,
    notebook_column: str = "fname",
    revision: str | None = None,
    execute: bool = False,
    rerun: bool = False,
    data: str | Path | None = None,
    env: str | Path | None = None,
    executor: str = "local",
    executor_options: Mapping[str, Any] | None = None,
    jobs: int | None = None,
    timeout: float | None = None,
    pass_env: Sequence[str] = (),
    sandbox: Any = None,
    limits: Limits | None = None,
    repo_id: str = DEFAULT_REPO_ID,
    progress: bool | None = None,
) -> MineResult:
    """Mine the notebooks of ``inputs`` (files, folders, ``"sample"``, a snapshot or Hub id,
    listings: :func:`junobench.mining.inputs.sources`) into the folder ``out``.

    With ``execute``, notebooks without outputs are run first (``rerun``: every notebook),
    sandboxed (``sandbox``, default ``auto``: no network), in the interpreter of ``env``,
    by ``executor`` (``local`` or ``ray``, ``executor_options`` as
    :func:`junobench.verify.make_executor` takes them), ``timeout`` seconds per cell; the
    input datasets of ``data`` are given to them (Kaggle's layout). ``jobs`` processes (or
    Ray tasks) mine at once (default: the cores). ``limits`` bounds what is read. The
    folder is replaced only when the run completes; a folder holding anything but an
    earlier mined corpus is refused.
    """
    limits = limits or Limits()
    out = require_utf8_path(Path(out).expanduser().absolute())
    if not inputs:
        raise JunoBenchError("nothing to mine", hint="give notebook files, folders, 'sample', a snapshot or a listing")
    if (execute or rerun) is False and (env is not None or data is not None):
        raise JunoBenchError("--env and --data apply to --execute (or --rerun) only")
    workers = jobs or available_cores()
    if workers < 1:
        raise JunoBenchError(f"--jobs must be at least 1, got {workers}")
    listed = [str(i) for i in inputs]
    _check_out(out, listed)
    started = time.perf_counter()
    runs = None
    spool = Path(tempfile.mkdtemp(prefix="junobench-mine-")) if (execute or rerun) else None
    try:
        if spool is not None:
            runs = _run(listed, spool, notebooks=notebooks, column=notebook_column, revision=revision,
                        rerun=rerun, data=data, env=env, executor=executor, options=executor_options, jobs=jobs,
                        timeout=timeout, pass_env=pass_env, sandbox=sandbox, limits=limits, progress=progress)
        summary = Summary()
        mapping = chart_kinds().version  # read here once, before any worker is forked
        with replacing(out) as staging:
            writer = CorpusWriter(staging)
            try:
                stream = sources(listed, notebooks=notebooks, column=notebook_column, revision=revision)
                jobs_ = _jobs(stream, runs)
                for part in _progress(mined_in_order(jobs_, limits, workers=workers, executor=executor,
                                                     ray_address=(executor_options or {}).get("address")),
                                      progress):
                    writer.add(part.batches)
                    summary.add(part.summary)
                rows = writer.close()
            except BaseException:
                writer.abort()
                raise
            finish(staging, rows, summary.to_dict(), mapping=mapping, inputs=listed,
                   repo_id=repo_id, version=str(junobench.__version__), digests=writer.digests)
    finally:
        if spool is not None:
            shutil.rmtree(spool, ignore_errors=True)
    result = MineResult(out, rows, summary, time.perf_counter() - started)
    if runs is not None:
        result.runs = {k: v.status for k, v in runs.executions.items()}
        result.sandbox, result.executor, result.stopped = runs.sandbox, runs.executor, runs.stopped
    return result


def _check_out(out: Path, inputs: list[str]) -> None:
    """Refuse an output folder inside an input, or holding one (nothing read is written to)."""
    resolved = out.resolve()
    for given in inputs:
        path = Path(given).expanduser()
        if not path.exists():
            continue
        root = path.resolve()
        if resolved == root or root in resolved.parents or resolved in root.parents:
            raise JunoBenchError("the output folder is an input, inside one or holds one", file=out,
                                 hint="nothing mine reads is ever written to: choose a folder outside the inputs")


def _run(inputs: list[str], spool: Path, *, notebooks: str | Path | None, column: str, revision: str | None,
         rerun: bool, data: str | Path | None, env: str | Path | None, executor: str,
         options: Mapping[str, Any] | None, jobs: int | None, timeout: float | None, pass_env: Sequence[str],
         sandbox: Any, limits: Limits, progress: bool | None) -> Any:
    from junobench.mining.execute import data_folders, run_all
    from junobench.verify import DEFAULT_TIMEOUT, bundled, runner_for
    from junobench.verify.runner import require_run_extra

    require_run_extra()
    trusted = all(bundled(i) for i in inputs)
    timeout = timeout if timeout is not None else DEFAULT_TIMEOUT
    runner = runner_for(executor, jobs=jobs, timeout=timeout, env=env, executor_options=options, pass_env=pass_env,
                        sandbox=sandbox, trusted=trusted)
    datasets = data_folders(data)
    items = sources(inputs, notebooks=notebooks, column=column, revision=revision)
    return run_all(items, runner, spool, limit=limits.notebook_bytes, rerun=rerun, datasets=datasets, timeout=timeout,
                   trusted=None if data is None else str(Path(data).resolve()))


def _jobs(stream: Iterator[Source], runs: Any) -> Iterator[Job]:
    for source in stream:
        if runs is None:
            yield Job(source.item, source.path, None, source.problem)
            continue
        notebook = source.item.notebook
        skipped = runs.skipped.get(notebook)
        execution = runs.executions.get(notebook) if skipped is None else Execution("not run", skipped)
        yield Job(source.item, runs.spooled.get(notebook, source.path), None, source.problem, execution)


def _progress(parts: Iterator[Any], progress: bool | None) -> Iterator[Any]:
    from tqdm import tqdm

    with tqdm(unit="notebook", desc="mine", dynamic_ncols=True,
              disable=None if progress is None else not progress) as bar:
        for part in parts:
            bar.update(part.notebooks)
            yield part


__all__ = ["CONFIGS", "DEFAULT_REPO_ID", "MineResult", "mine"]
