"""Mining notebooks in parallel, results in input order: worker processes here, or Ray tasks.

:func:`mined_in_order` cuts the stream of notebooks into batches and mines each batch with
:func:`mine_batch` (a pure function: the same batch gives the same rows anywhere), in this
process (one job), in ``jobs`` worker processes, or as Ray tasks; the batches' rows come back
in input order, and at most ``2 × jobs`` batches are in flight, so memory does not grow with
the corpus. Local workers read the notebook files themselves; a Ray task is sent the bytes
(read here, bounded), so no shared file system is needed.
"""

from __future__ import annotations

import collections
import contextlib
import gc
import itertools
import os
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from junobench.errors import JunoBenchError
from junobench.mining.inputs import read_source
from junobench.mining.rows import Execution, Item, Limits, Mined, mine_notebook
from junobench.mining.summary import Summary
from junobench.safety.text import first_line

#: Notebooks per batch sent to a worker.
BATCH = 32
#: Seconds a Ray instance started here may take to stop when the run is stopped.
SHUTDOWN_LIMIT = 15.0


@dataclass(frozen=True)
class Job:
    """One notebook of a batch: what to call it, where to read it (or its bytes, or why it
    cannot be read), and how junobench's run of it went."""

    item: Item
    path: Path | None = None
    raw: bytes | None = None
    problem: str | None = None
    execution: Execution | None = None


@dataclass
class MinedBatch:
    """The rows of a batch of notebooks as Arrow record batches (config → batch), their
    counts, and how many notebooks they are (what a worker sends back)."""

    batches: dict[str, Any]
    summary: Summary
    notebooks: int


def mine_batch(jobs: Sequence[Job], limits: Limits) -> MinedBatch:
    """The rows of each notebook of a batch, as record batches, and their counts."""
    from junobench.mining.write import record_batch

    summary = Summary()
    rows: dict[str, list[dict[str, Any]]] = {"notebooks": [], "cells": [], "figures": []}
    for mined in mined_rows(jobs, limits):
        rows["notebooks"].append(mined.notebook)
        rows["cells"].extend(mined.cells)
        rows["figures"].extend(mined.figures)
        summary.add_notebook(mined.notebook, len(mined.cells))
        for figure in mined.figures:
            summary.add_figure(figure)
    return MinedBatch({config: record_batch(config, found) for config, found in rows.items()}, summary, len(jobs))


def mined_rows(jobs: Sequence[Job], limits: Limits) -> list[Mined]:
    """The rows of each notebook of a batch. A notebook that makes the mining fail (a
    fault of junobench's: bad input is a problem row already) is a row naming the failure,
    not the end of a run over a large corpus."""
    out = []
    for job in jobs:
        raw, problem = job.raw, job.problem
        if raw is None and problem is None and job.path is not None:
            raw, problem = _read(job.path, limits)
        try:
            mined = mine_notebook(job.item, raw, problem=problem, execution=job.execution, limits=limits)
        except Exception as error:  # any fault, reported on the notebook's row
            mined = mine_notebook(job.item, None, execution=job.execution, problem=(
                f"junobench failed on this notebook ({type(error).__name__}: {first_line(error, 200)}): "
                "its cells and figures are not mined; please report it"))
            mined.notebook["bytes"] = len(raw or b"")
        out.append(mined)
    return out


def _read(path: Path, limits: Limits) -> tuple[bytes | None, str | None]:
    """A notebook's bytes, or why they cannot be read."""
    try:
        return read_source(path, limits.notebook_bytes), None
    except OSError as error:
        return None, error.strerror or str(error)


def mined_in_order(jobs: Iterable[Job], limits: Limits, *, workers: int = 1, executor: str = "local",
                   ray_address: str | None = None) -> Iterator[MinedBatch]:
    """The rows of every notebook of ``jobs``, batch by batch, in order."""
    batches = _batches(jobs, BATCH)
    if executor == "ray":
        yield from _on_ray(batches, limits, workers, ray_address)
        return
    if executor != "local":
        raise JunoBenchError(f"unknown executor {executor!r}", hint="use local or ray")
    if workers <= 1:
        for batch in batches:
            yield mine_batch(batch, limits)
        return
    yield from _in_processes(batches, limits, workers)


def _batches(jobs: Iterable[Job], size: int) -> Iterator[list[Job]]:
    iterator = iter(jobs)
    while batch := list(itertools.islice(iterator, size)):
        yield batch


def _bounded(submit: Callable[[list[Job]], Any], result: Callable[[Any], MinedBatch],
             batches: Iterator[list[Job]], window: int) -> Iterator[MinedBatch]:
    """Submit batches, at most ``window`` in flight, and yield their rows in order."""
    pending: collections.deque[Any] = collections.deque()
    for batch in batches:
        pending.append(submit(batch))
        while len(pending) >= window:
            yield result(pending.popleft())
    while pending:
        yield result(pending.popleft())


def _in_processes(batches: Iterator[list[Job]], limits: Limits, workers: int) -> Iterator[MinedBatch]:
    import concurrent.futures
    import multiprocessing
    import shutil
    import tempfile

    # fork: a worker starts at once and does not import the caller's main module again (a
    # script calling mine() needs no ``if __name__ == "__main__"`` guard); forkserver elsewhere.
    methods = multiprocessing.get_all_start_methods()
    context = multiprocessing.get_context("fork" if "fork" in methods else "forkserver")
    spool = tempfile.mkdtemp(prefix="junobench-mine-", dir=_shared_memory())
    numbers = itertools.count()
    try:
        # A worker's collector need not go through what it was forked with (the imports,
        # the caller's objects) again and again: frozen, it sees only what mining makes.
        with concurrent.futures.ProcessPoolExecutor(workers, mp_context=context, initializer=gc.freeze) as pool:
            try:
                yield from _bounded(
                    lambda batch: pool.submit(_mine_to_file, batch, limits, os.path.join(spool, str(next(numbers)))),
                    lambda future: _read_spooled(future.result()), batches, 2 * workers)
            except BaseException:
                pool.shutdown(wait=False, cancel_futures=True)
                raise
    finally:
        shutil.rmtree(spool, ignore_errors=True)


def _shared_memory() -> str | None:
    """A folder in memory for the workers' record batches (``/dev/shm``), or None: the
    system's temporary folder."""
    return "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK | os.X_OK) else None


@dataclass
class _Spooled:
    """What a worker process sends back: the counts, and where its record batches are (an
    Arrow IPC stream per config, in ``path.<config>``)."""

    path: str
    configs: list[str]
    summary: Summary
    notebooks: int


def _mine_to_file(jobs: Sequence[Job], limits: Limits, path: str) -> _Spooled:
    """:func:`mine_batch` in a worker process, its record batches written to ``path`` (a
    new file in the spool folder) rather than pickled through the pipe: written once by the
    worker and mapped by the writing process, the images are not copied again."""
    import pyarrow as pa

    mined = mine_batch(jobs, limits)
    for config, batch in mined.batches.items():
        with pa.OSFile(f"{path}.{config}", "wb") as sink, pa.ipc.new_stream(sink, batch.schema) as stream:
            stream.write_batch(batch)
    return _Spooled(path, list(mined.batches), mined.summary, mined.notebooks)


def _read_spooled(spooled: _Spooled) -> MinedBatch:
    """The record batches a worker wrote (memory-mapped: no copy; each config's in its own
    file, so that the small rows a writer holds for a while hold no images), the files removed."""
    import pyarrow as pa

    batches = {}
    try:
        for config in spooled.configs:
            with pa.memory_map(f"{spooled.path}.{config}") as mapped:
                batches[config] = pa.ipc.open_stream(mapped).read_next_batch()
    finally:
        for config in spooled.configs:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(f"{spooled.path}.{config}")
    return MinedBatch(batches, spooled.summary, spooled.notebooks)


def _on_ray(batches: Iterator[list[Job]], limits: Limits, workers: int,
            address: str | None) -> Iterator[MinedBatch]:
    from junobench.verify.ray_driver import remove_session, require_ray

    ray = require_ray()
    started = False
    session = None
    if not ray.is_initialized():
        session = _join_or_start(ray, address)
        started = True
    try:
        remote = ray.remote(num_cpus=1, max_retries=2)(mine_batch)
        window = 2 * max(workers, int(ray.cluster_resources().get("CPU", 1)))

        def submit(batch: list[Job]) -> Any:
            return remote.remote([_with_bytes(job, limits) for job in batch], limits)

        yield from _bounded(submit, ray.get, batches, window)
    finally:
        if started:
            ray.shutdown()
        if session is not None:
            remove_session(session)


def _join_or_start(ray: Any, address: str | None) -> str | None:
    """``ray.init`` here, as the Ray driver of ``verify`` joins: a cluster to join is probed
    first (one that refuses, is no Ray cluster, wants a token or runs other versions is a
    one-line error within seconds); ``ray.init`` runs in a thread of its own, so that Ray
    takes no stop signal over, and that thread lives on: Ray's processes end with the
    thread that started them. Stopped (Ctrl-C, SIGTERM, SIGHUP) while Ray starts an
    instance, the start is let finish and the instance is then stopped: killed under
    ``ray.init``, Ray would wait for its head's port while holding the interpreter (up to
    30 s); stopped again meanwhile, it is killed at once. The session folder of an
    instance started here, if one was."""
    from junobench.verify.ray_driver import _session_dir, _started_here, connect_error, end_sessions_of
    from junobench.verify.ray_probe import probe, resolve

    target = resolve(address)
    if target is not None:
        probe(target, address)
    ready = threading.Event()
    failed: list[BaseException] = []
    since = time.time()

    def init() -> None:
        try:
            ray.init(address=address, include_dashboard=False, log_to_driver=False, logging_level="error")
        except BaseException as error:  # handed to the caller
            failed.append(error)
        ready.set()
        threading.Event().wait()

    threading.Thread(target=init, name="junobench-ray-init", daemon=True).start()
    try:
        _until(ready)
    except BaseException:
        try:
            _until(ready)
            if not failed:
                closing = threading.Thread(target=ray.shutdown, daemon=True)
                closing.start()
                closing.join(SHUTDOWN_LIMIT)
        finally:  # what is left of the instance ends, whatever came meanwhile
            end_sessions_of(os.getpid(), since)
        raise
    if failed:
        raise connect_error(failed[0], address) from None
    return _session_dir(ray) if _started_here(ray) else None


def _until(event: threading.Event) -> None:
    """Wait for ``event``, a stop signal heard within a moment whichever thread it reaches."""
    while not event.wait(0.2):
        pass


def _with_bytes(job: Job, limits: Limits) -> Job:
    """``job`` with its notebook's bytes read here (a Ray worker may be on another machine)."""
    if job.path is None or job.raw is not None or job.problem is not None:
        return job
    return Job(job.item, None, *_read(job.path, limits), job.execution)
