"""How the builder prepares records quickly: folder shards parsed by worker processes
while the tables are read, joined with the tables' fields, written as Arrow.

Case folders are taken in :func:`~junobench.data.cases.case_order` and split into shards.
Each shard is parsed (in a worker process when there are several) into the folder's
part of each record; meanwhile a thread reads the tables. The two parts are joined
shard by shard, so records stream out in case order without holding the snapshot in
memory. Problems and absences are collected into a report as they go.
"""

from __future__ import annotations

import contextlib
import gc
import importlib
import multiprocessing
import os
import shutil
import tempfile
import threading
from collections import deque
from collections.abc import Callable, Generator, Iterable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from junobench import vocab
from junobench.data import layout
from junobench.data.cache import cache_root
from junobench.data.cases import (
    LABEL_FIELDS,
    case_order,
    complete_record,
    parse_case_folder,
    table_columns,
    table_datasets,
)
from junobench.data.digests import MemoRow, ReadDigests
from junobench.data.notebook import MAX_NOTEBOOK_BYTES
from junobench.data.report import BuildReport as BuildReport
from junobench.data.snapshot import Entry, fingerprint, folder_entries
from junobench.data.tables import DescRow, read_desc, read_diagnoses
from junobench.envs.environment import snapshot_environment
from junobench.errors import JunoBenchError, Problem
from junobench.safety.paths import is_dir_entry

T = TypeVar("T")
K = TypeVar("K")
R = TypeVar("R")


def case_folders(root: str | Path) -> list[str]:
    """Names of the folders under ``benchmark/``, in case order."""
    with os.scandir(layout.benchmark_dir(root)) as entries:
        return sorted((e.name for e in entries if is_dir_entry(e)), key=case_order)


def split(items: Sequence[T], parts: int) -> list[Sequence[T]]:
    """``items`` in ``parts`` contiguous slices of near-equal length (some may be empty)."""
    size, extra = divmod(len(items), parts)
    bounds = [i * size + min(i, extra) for i in range(parts + 1)]
    return [items[bounds[i]:bounds[i + 1]] for i in range(parts)]


# --------------------------------------------------------------------------- folders


@dataclass
class FolderShard:
    """The folder part of the records of a shard of case folders."""

    ids: list[str]                          # cases with a record, in order
    records: list[dict[str, Any]] | pa.Table | str  # parsed; as an Arrow table; its spool file
    problems: list[Problem] = field(default_factory=list)
    absent: dict[str, list[str]] = field(default_factory=dict)
    unpinned: dict[str, list[str]] = field(default_factory=dict)
    #: With ``digests``: each folder's fingerprint entries, and the memo rows of its files.
    entries: dict[str, list[Entry]] = field(default_factory=dict)
    memo: list[MemoRow] = field(default_factory=list)


def parse_folders(root: str, ids: Sequence[str], digests: bool = False) -> FolderShard:
    """The folder part of the records of the case folders ``ids``; with ``digests``, also
    their fingerprint entries (:func:`~junobench.data.snapshot.folder_entries`), each
    notebook read once for both."""
    records: list[dict[str, Any]] = []
    shard = FolderShard([], records)
    env = snapshot_environment(root)  # read once per shard, not once per case
    reader = ReadDigests(keep=_notebook_to_keep) if digests else None
    absolute = os.path.abspath(root)
    for case_id in ids:
        if reader is not None:
            relative = f"{layout.BENCHMARK_DIR}/{case_id}"
            shard.entries[relative] = folder_entries(absolute, relative, reader)
        result = parse_case_folder(root, case_id, env, read=reader.kept if reader else None)
        if reader is not None:
            reader.kept.clear()
        for what in result.absent:
            shard.absent.setdefault(what, []).append(case_id)
        shard.problems += result.problems
        if result.unpinned:
            shard.unpinned[case_id] = result.unpinned
        if result.record is not None:
            shard.ids.append(case_id)
            records.append(result.record)
    if reader is not None:
        shard.memo = reader.rows
    return shard


def _notebook_to_keep(path: str, size: int) -> bool:
    return path.endswith(".ipynb") and size <= MAX_NOTEBOOK_BYTES


def _parse_folders_to_arrow(job: tuple[str, Sequence[str], pa.Schema, str | None, bool]) -> FolderShard:
    """A shard's records as an Arrow table; with a ``spool`` path, written there as an Arrow
    file (a worker hands back the path, and the parent maps the file without copying)."""
    root, ids, schema, spool, digests = job
    shard = parse_folders(root, ids, digests)
    rows = shard.records
    assert isinstance(rows, list)
    # column by column: half the time of Table.from_pylist, which looks each field up per row
    table = pa.Table.from_pydict({f.name: [row.get(f.name) for row in rows] for f in schema}, schema=schema)
    if spool is None:
        shard.records = table
        return shard
    with pa.OSFile(spool, "wb") as sink, pa.ipc.new_file(sink, schema) as writer:
        writer.write_table(table)
    shard.records = spool
    return shard


def folder_shards(root: str, shards: Sequence[Sequence[str]], *, workers: int = 1,
                  schema: pa.Schema | None = None, spool: str | None = None,
                  digests: bool = False) -> Shards:
    """Parse the shards in order; with ``schema``, records come as Arrow tables, and with
    several ``workers`` the shards are parsed by that many processes, which hand their
    tables over as Arrow files in the ``spool`` directory (and with ``digests`` the
    folders' fingerprint entries, :meth:`ParallelShards.fingerprint_entries`). The
    processes start (fork) in this call, before the caller starts any thread of its own,
    and start parsing at once (:class:`ParallelShards`). Either way, ``close()`` stops
    what is left of the parsing.

    Workers run without the cycle collector: parsing makes no reference cycles, and a
    collection would touch (and so copy) every page a forked worker shares with its parent.
    """
    if schema is None:
        return (parse_folders(root, ids) for ids in shards)
    if workers < 2 or len(shards) < 2 or spool is None:
        return (_parse_folders_to_arrow((root, ids, schema, None, False)) for ids in shards)
    jobs = [(root, ids, schema, os.path.join(spool, f"shard-{i:05d}.arrow"), digests)
            for i, ids in enumerate(shards)]
    method = "fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn"
    return ParallelShards(multiprocessing.get_context(method).Pool(workers, initializer=gc.disable), jobs)


class ParallelShards(Iterator[FolderShard]):
    """The shards a pool's processes parse, from the moment it is made; iterating gives
    them in order, read back from their Arrow files. :meth:`close` stops the processes
    (done when the iteration ends or fails)."""

    def __init__(self, pool: Any, jobs: list[tuple[str, Sequence[str], pa.Schema, str, bool]]) -> None:
        self._pool: Any = pool
        self._results = pool.imap(_parse_folders_to_arrow, jobs)
        self._done: deque[FolderShard] = deque()

    def fingerprint_entries(self) -> tuple[dict[str, list[Entry]], list[MemoRow]]:
        """Every folder's fingerprint entries and the memo rows of their digests, once
        every shard is parsed (the shards are kept for the iteration)."""
        try:
            self._done.extend(self._results)
        except BaseException:
            self.close()
            raise
        entries = {name: found for shard in self._done for name, found in shard.entries.items()}
        return entries, [row for shard in self._done for row in shard.memo]

    def __next__(self) -> FolderShard:
        try:
            shard: FolderShard = self._done.popleft() if self._done else next(self._results)
        except BaseException:
            self.close()
            raise
        path = str(shard.records)
        with pa.memory_map(path) as source:
            shard.records = pa.ipc.open_file(source).read_all()
        os.unlink(path)
        return shard

    def close(self) -> None:
        if self._pool is not None:
            self._pool.terminate()
            self._pool = None


#: Shards as :func:`folder_shards` gives them: parsed here, or by a pool's processes.
Shards = Generator[FolderShard, None, None] | ParallelShards


@contextmanager
def frozen_heap() -> Iterator[None]:
    """Leave the objects that exist now out of garbage collection while records are
    prepared: collections then scan only what the build makes, not the whole heap of the
    caller (and forked workers inherit the frozen heap). Undone on exit."""
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


# --------------------------------------------------------------------------- shards


#: Case folders per shard (at most): a shard's records are parsed, joined and written
#: together. Small shards keep memory low and spread evenly over worker processes.
SHARD_CASES = 200
def shard_count(cases: int, workers: int = 1) -> int:
    """How many shards ``cases`` case folders are parsed in: at most :data:`SHARD_CASES`
    each, and at least 8 per worker process, so that no worker idles at the end.

    >>> shard_count(111), shard_count(11_100, workers=2)
    (1, 56)
    """
    needed = -(-cases // SHARD_CASES)
    return max(1, needed, 8 * workers if workers > 1 else 1)


def case_shards(root: str | Path, workers: int = 1) -> tuple[list[str], list[Sequence[str]]]:
    """The case folders of a snapshot, in case order, and the shards they are parsed in."""
    folders = case_folders(root)
    return folders, split(folders, shard_count(len(folders), workers))


@dataclass
class EarlyParse:
    """A snapshot's case folders being parsed by worker processes before its builder
    runs (:func:`start_parsing`); :meth:`close` stops them and removes their spool."""

    folders: list[str]
    shards: list[Sequence[str]]
    parsed: Shards
    spool: tempfile.TemporaryDirectory[str]
    #: The snapshot's tables, read in a thread while the workers parse.
    tables: Future[Tables] | None = None

    def fingerprint(self, root: Path) -> str:
        """The snapshot's :func:`~junobench.data.snapshot.fingerprint`, its case folders
        as the workers read them (each file read once, for the parsing and the digest)."""
        if not isinstance(self.parsed, ParallelShards):
            return fingerprint(root)
        entries, rows = self.parsed.fingerprint_entries()
        return fingerprint(root, folders=entries, rows=rows)

    def close(self) -> None:
        self.parsed.close()
        self.spool.cleanup()


#: The name of an early parse's spool folder in the cache: then its process id and "-".
_SPOOL = "junobench-spool-"


def start_parsing(root: Path, workers: int, cache_dir: str | Path | None = None) -> EarlyParse | None:
    """Start the worker processes on a snapshot's case folders now, for a builder made
    later (``JunoBench(..., early=...)``): a first preparation computes the cache key of
    the records (a walk of every file, on one core) while the other cores parse. ``None``
    with fewer than two workers, or a snapshot the builder will refuse (it says why)."""
    if workers < 2 or not layout.benchmark_dir(root).is_dir() or not os.path.lexists(root / layout.DESC_TABLE):
        return None
    try:
        snapshot_environment(root)
        folders, shards = case_shards(root, workers)
        parent = cache_root(cache_dir)
        parent.mkdir(parents=True, exist_ok=True)
        _remove_orphan_spools(parent)
        spool = tempfile.TemporaryDirectory(prefix=f"{_SPOOL}{os.getpid()}-", dir=parent)
    except (JunoBenchError, OSError):
        return None
    from junobench.data.schema import FOLDER_SCHEMA

    parsed = folder_shards(str(root), shards, workers=workers, schema=FOLDER_SCHEMA, spool=spool.name,
                           digests=True)
    # While the workers parse, this process reads the tables and imports the builder (and
    # ``datasets``, most of a second): both would otherwise wait until the parsing is done.
    tables = read_tables_in_background(root)
    threading.Thread(target=_import_quietly, args=("junobench.data.records",), daemon=True,
                     name="junobench-import").start()
    return EarlyParse(folders, shards, parsed, spool, tables)


def _import_quietly(module: str) -> None:
    """Import ``module`` now (in a thread); a failure is left for the import that needs it."""
    with contextlib.suppress(Exception):
        importlib.import_module(module)


def _remove_orphan_spools(cache: Path) -> None:
    """Remove the spool folders (``junobench-spool-<pid>-*``) of killed preparations: those
    whose process no longer runs. Others' are left alone, and so is anything else."""
    for entry in cache.glob(f"{_SPOOL}*-*"):
        pid = entry.name[len(_SPOOL):].split("-", 1)[0]
        if not pid.isdigit() or entry.is_symlink() or not entry.is_dir():
            continue
        try:
            os.kill(int(pid), 0)
        except ProcessLookupError:
            shutil.rmtree(entry, ignore_errors=True)
        except (PermissionError, OverflowError, ValueError):
            continue  # another user's process, or not a process id



# --------------------------------------------------------------------------- tables


@dataclass
class Tables:
    """The snapshot's tables, keyed by case id."""

    rows: dict[str, DescRow]
    diagnoses: dict[str, str]
    problems: list[Problem]

    @property
    def listed(self) -> set[str]:
        """Case ids the case table names (including rows it names twice)."""
        return set(self.rows) | {p.case for p in self.problems if p.case}


def read_tables(root: str | Path) -> Tables:
    rows, problems = read_desc(root)
    return Tables({r.case_id: r for r in rows}, read_diagnoses(root), problems)


def read_tables_in_background(root: str | Path) -> Future[Tables]:
    """Start reading the tables in a thread (the spreadsheet reader releases the GIL)."""
    executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="junobench-tables")
    future = executor.submit(read_tables, root)
    executor.shutdown(wait=False)
    return future


# --------------------------------------------------------------------------- joining


def joined(root: str, folders: Sequence[str], shards: Iterable[FolderShard],
           tables: Future[Tables], report: BuildReport, schema: pa.Schema | None = None
           ) -> Iterator[list[dict[str, Any]] | pa.Table]:
    """Records of each shard (dicts, or an Arrow table with ``schema``), joined with the
    tables' fields; cases the table does not list are left out. Fills ``report``."""
    known: Tables | None = None
    listed: set[str] = set()
    for shard in shards:
        if known is None:
            known = tables.result()
            listed = known.listed  # once: the tables do not change while shards come in
        for problem in shard.problems:
            if problem.case in listed:
                report.problems.append(problem)
                if problem.case not in report.skipped:
                    report.skipped.append(problem.case)
        for what, ids in shard.absent.items():
            report.absent.setdefault(what, []).extend(i for i in ids if i in listed)
        report.unpinned.update({c: names for c, names in shard.unpinned.items() if c in known.rows})
        keep = [i for i, case_id in enumerate(shard.ids) if case_id in known.rows]
        ids = [shard.ids[i] for i in keep]
        if isinstance(shard.records, pa.Table):
            assert schema is not None
            part = shard.records if len(keep) == len(shard.ids) else shard.records.take(pa.array(keep, pa.int64()))
            yield _join_table(part, ids, known, schema)
        else:
            rows = shard.records
            assert isinstance(rows, list)  # parsed here, never spooled
            yield [complete_record(rows[i], known.rows[rows[i]["case_id"]], known.diagnoses) for i in keep]
    known = known or tables.result()
    _finish_report(root, folders, known, report)


def _join_table(part: pa.Table, ids: list[str], tables: Tables, schema: pa.Schema) -> pa.Table:
    columns = {name: pa.array(values, pa.string())
               for name, values in table_columns([tables.rows[i] for i in ids], tables.diagnoses).items()}
    datasets = part["datasets"]
    if datasets.null_count:  # cases without metadata files: the table describes their data
        datasets = pa.array(
            [d if d is not None else table_datasets(tables.rows[i])
             for d, i in zip(datasets.to_pylist(), ids, strict=True)],
            schema.field("datasets").type,
        )
    columns["datasets"] = datasets
    return pa.Table.from_arrays([columns[n] if n in columns else part[n] for n in schema.names], schema=schema)


def _finish_report(root: str, folders: Sequence[str], tables: Tables, report: BuildReport) -> None:
    present = set(folders)
    report.problems[:0] = tables.problems
    report.skipped[:0] = [p.case for p in tables.problems if p.case and p.case not in report.skipped]
    for case_id in sorted(set(tables.rows) - present, key=case_order):  # listed, no folder
        result = parse_case_folder(root, case_id)
        report.problems += result.problems
        report.skipped.append(case_id)
    listed = tables.listed
    report.unlisted_folders = [f for f in folders if f not in listed]


# --------------------------------------------------------------------------- notebooks

#: Columns of the cases records from which the notebooks records are made.
NOTEBOOK_SOURCE_COLUMNS = ["case_id", *LABEL_FIELDS, "exception", "diagnosis", "execution_order"]


def notebook_table(cases: pa.Table, schema: pa.Schema) -> pa.Table:
    """The notebooks records of a table of cases records, column by column.

    Per case a reproduced then a fixed row: the case's labels, its exception and
    diagnosis on the reproduced row only, its execution order's last run as the target and
    the runs before it as the executed cells; without a Python object per row.
    """
    count = cases.num_rows
    parts = []
    for version in vocab.EVALUATED_VERSIONS:
        runs = pc.struct_field(cases["execution_order"], version).combine_chunks()
        offsets = np.asarray(runs.offsets)
        values = runs.values.slice(int(offsets[0]), int(offsets[-1] - offsets[0]))
        offsets = offsets - offsets[0]
        last = offsets[1:] - 1  # each order ends with the target's run
        keep = np.ones(len(values), dtype=bool)
        keep[last] = False
        executed = pa.ListArray.from_arrays(pa.array(offsets - np.arange(count + 1), pa.int32()),
                                            values.filter(pa.array(keep)))
        crash = version == "reproduced"
        columns = {
            "instance": pc.binary_join_element_wise(cases["case_id"], pa.scalar(version), "_"),
            "case_id": cases["case_id"],
            "version": pa.array([version] * count, pa.string()),
            "crash": pa.array([crash] * count, pa.bool_()),
            **{name: cases[name] for name in LABEL_FIELDS},
            "exception": cases["exception"] if crash else pa.nulls(count, pa.string()),
            "executed_cells": executed,
            "target_cell": values.take(pa.array(last)),
            "diagnosis": cases["diagnosis"] if crash else pa.nulls(count, pa.string()),
        }
        parts.append(pa.table(columns, schema=schema))
    both = pa.concat_tables(parts)
    interleaved = np.column_stack([np.arange(count), np.arange(count) + count]).ravel()
    return both.take(pa.array(interleaved))


def computed_ahead(batches: Iterable[tuple[K, T]], function: Callable[[T], R], depth: int = 2
                   ) -> Iterator[tuple[K, R]]:
    """``(key, function(batch))`` for each of ``batches``, in order, each computed in a
    thread up to ``depth`` batches before it is asked for: Arrow's compute functions
    release the GIL, so computing a batch overlaps with writing the one before.

    >>> list(computed_ahead(enumerate([1, 2, 3]), lambda x: x * 10))
    [(0, 10), (1, 20), (2, 30)]
    """
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="junobench-ahead") as pool:
        pending: deque[tuple[K, Future[R]]] = deque()
        for key, batch in batches:
            pending.append((key, pool.submit(function, batch)))
            if len(pending) > depth:
                done_key, done = pending.popleft()
                yield done_key, done.result()
        while pending:
            done_key, done = pending.popleft()
            yield done_key, done.result()
