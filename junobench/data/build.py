"""Prepare the records of a local snapshot: one builder per config, cached on content.

>>> from junobench.data.build import prepare
>>> from junobench.data.snapshot import sample_path
>>> built, report = prepare(sample_path())
>>> built["cases"].num_rows, report.skipped
(10, [])
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from junobench.cores import available_cores
from junobench.data import layout
from junobench.data.cache import cache_root
from junobench.data.preparation import EarlyParse, start_parsing
from junobench.data.prepared import index_path, junobench_version, remember
from junobench.data.report import BuildReport
from junobench.data.schema import CONFIGS
from junobench.data.snapshot import fingerprint
from junobench.errors import JunoBenchError, SnapshotError

if TYPE_CHECKING:  # datasets is imported once the parsing has started (a second or two)
    import datasets

    from junobench.data.records import JunoBench


def builder_for(root: Path, config: str, *, cache_dir: str | Path | None = None, workers: int = 1,
                content: str | None = None, early: EarlyParse | None = None) -> JunoBench:
    """The builder of ``config`` for a local snapshot, keyed on its content (its
    :func:`~junobench.data.snapshot.fingerprint`, computed unless given as ``content``)."""
    from junobench.data.records import JunoBench

    if config not in CONFIGS:
        raise JunoBenchError(f"unknown config {config!r}", hint=f"use one of {', '.join(CONFIGS)}")
    return JunoBench(
        config_name=config,
        snapshot=str(root),
        fingerprint=content or fingerprint(root),
        junobench=junobench_version(),
        cache_dir=str(cache_root(cache_dir)),
        dataset_name="junobench",
        workers=workers,
        early=early,
    )


def build(
    root: Path, config: str = "cases", *, skip_invalid: bool = False,
    cache_dir: str | Path | None = None, num_proc: int | None = None,
) -> tuple[datasets.Dataset, BuildReport]:
    """Prepare (or reuse) the records of ``config`` for a local snapshot; returns them and
    the report. See :func:`prepare`."""
    built, report = prepare(root, (config,), skip_invalid=skip_invalid, cache_dir=cache_dir,
                            num_proc=num_proc)
    return built[config], report


def prepare(
    root: Path, configs: Iterable[str] = CONFIGS, *, skip_invalid: bool = False,
    cache_dir: str | Path | None = None, num_proc: int | None = None,
) -> tuple[dict[str, datasets.Dataset], BuildReport]:
    """Prepare (or reuse) the records of ``configs`` for a local snapshot.

    Invalid cases fail with every problem listed (:class:`SnapshotError`), unless
    ``skip_invalid``. Large snapshots are parsed by ``num_proc`` processes (default: one
    per core when there are at least :data:`PARALLEL_FROM` case folders); the first time
    a snapshot folder is prepared into a cache, they start before its cache key is known.
    """
    if num_proc is None:
        num_proc = _default_num_proc(root)
    early = start_parsing(root, num_proc, cache_dir) if _first_preparation(root, cache_dir) else None
    try:
        return _prepare(root, configs, skip_invalid, cache_dir, num_proc, early)
    finally:
        if early is not None:
            early.close()


def _first_preparation(root: Path, cache_dir: str | Path | None) -> bool:
    """Whether no records of the snapshot folder ``root`` were noted in the cache (then
    they are most likely prepared now, and parsing can start before the key is known)."""
    return not any(index_path(root, c, cache_dir).exists() for c in CONFIGS)


def _prepare(root: Path, configs: Iterable[str], skip_invalid: bool, cache_dir: str | Path | None,
             num_proc: int, early: EarlyParse | None) -> tuple[dict[str, datasets.Dataset], BuildReport]:
    content = early.fingerprint(root) if early is not None else fingerprint(root)
    wanted = list(dict.fromkeys(configs))
    builders = {c: builder_for(root, c, cache_dir=cache_dir, workers=num_proc, content=content,
                               early=early if c == "cases" else None)
                for c in dict.fromkeys(["cases", *wanted])}  # notebooks derive from cases
    from junobench.data.records import read_report

    _prepare_one(builders["cases"])
    data = read_report(builders["cases"].cache_dir)
    report = BuildReport.from_dict(data, snapshot=root, fingerprint=content)
    if report.problems and not skip_invalid:
        raise SnapshotError(report.problems, root=root)
    splits = builders["cases"].info.splits or {}
    if "test" not in splits or not splits["test"].num_examples:
        raise _nothing_to_build(root, report)
    for config, builder in builders.items():
        if config != "cases":
            _prepare_one(builder)
    built = {c: builders[c].as_dataset(split="test") for c in wanted}
    for config, dataset in built.items():
        remember(root, config, content, [f["filename"] for f in dataset.cache_files], data,
                 cache_dir=cache_dir)
    return built, report


def _prepare_one(builder: JunoBench) -> None:
    import datasets

    try:
        builder.download_and_prepare()
    except datasets.exceptions.DatasetGenerationError as error:
        if isinstance(error.__cause__, JunoBenchError):
            raise error.__cause__ from None
        raise


def _nothing_to_build(root: Path, report: BuildReport) -> JunoBenchError:
    """The error for a snapshot without one valid case (the records would be empty)."""
    if report.skipped:
        first = report.problems[0] if report.problems else None
        return JunoBenchError(
            f"no valid case left: all {len(report.skipped)} case(s) of the table are invalid"
            + (f" (first: {first})" if first else ""), file=root / layout.DESC_TABLE,
            hint="fix them (`junobench validate` and `junobench ls` without --skip-invalid "
                 "list every problem)")
    return JunoBenchError("the case table lists no cases", file=root / layout.DESC_TABLE,
                          hint="add one row per case under the header")


#: Snapshots with at least this many case folders are prepared in parallel.
PARALLEL_FROM = 1000


def _default_num_proc(root: Path) -> int:
    cores = available_cores()
    if cores < 2:
        return 1
    try:
        count = sum(1 for _ in os.scandir(root / layout.BENCHMARK_DIR))
    except OSError:
        return 1
    return min(cores, 4) if count >= PARALLEL_FROM else 1
