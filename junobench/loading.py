"""``junobench.load``: JunoBench records from any source, cached on content, filtered.

>>> import junobench
>>> cases = junobench.load("sample", "cases", library=["pandas", "numpy"])  # doctest: +SKIP
>>> notebooks = junobench.load("sample", "notebooks", root_cause="API misuse")  # doctest: +SKIP
"""

from __future__ import annotations

import difflib
import logging
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import datasets

from junobench import layout, vocab
from junobench.errors import JunoBenchError, Problem, SnapshotError
from junobench.exported import is_export, read_export
from junobench.records import CONFIGS, JunoBench, read_report
from junobench.snapshot import DEFAULT_SOURCE, fingerprint, resolve

logger = logging.getLogger("junobench")

#: Filter keyword → its vocabulary (values outside it are accepted when the data has them).
FILTERS: dict[str, tuple[str, ...]] = {
    "library": vocab.LIBRARIES,
    "root_cause": vocab.ROOT_CAUSES,
    "crash_type": vocab.CRASH_TYPES,
    "pipeline_stage": vocab.PIPELINE_STAGES,
    "source": vocab.SOURCES,
}
_LIBRARY_ALIASES = {label: prefix for prefix, label in vocab.LIBRARY_LABELS.items()}


@dataclass
class BuildReport:
    """What a build found: skipped cases with their problems, and absences."""

    snapshot: Path
    fingerprint: str
    skipped: list[str] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    absent: dict[str, list[str]] = field(default_factory=dict)
    unlisted_folders: list[str] = field(default_factory=list)

    def summary(self) -> list[str]:
        """One line per kind of finding, for the log."""
        lines = []
        if self.skipped:
            lines.append(f"skipped {len(self.skipped)} invalid case(s): {_ids(self.skipped)}")
            lines += [f"  - {p}" for p in self.problems]
        for what, ids in sorted(self.absent.items()):
            lines.append(f"{what} not in snapshot for {len(ids)} case(s): {_ids(ids)}")
        if self.unlisted_folders:
            lines.append(f"case folder(s) without a table row, not loaded: "
                         f"{_ids(self.unlisted_folders)}")
        return lines


def cache_root(cache_dir: str | Path | None = None) -> Path:
    """Where prepared records live: ``cache_dir``, ``$JUNOBENCH_CACHE`` or ~/.cache/junobench."""
    if cache_dir is not None:
        return Path(cache_dir)
    env = os.environ.get("JUNOBENCH_CACHE")
    return Path(env) if env else Path.home() / ".cache" / "junobench"


def builder_for(root: Path, config: str, *, cache_dir: str | Path | None = None, workers: int = 1,
                content: str | None = None) -> JunoBench:
    """The builder of ``config`` for a local snapshot, keyed on its content (its
    :func:`~junobench.snapshot.fingerprint`, computed unless given as ``content``)."""
    if config not in CONFIGS:
        raise JunoBenchError(f"unknown config {config!r}", hint=f"use one of {', '.join(CONFIGS)}")
    return JunoBench(
        config_name=config,
        snapshot=str(root),
        fingerprint=content or fingerprint(root),
        cache_dir=str(cache_root(cache_dir)),
        dataset_name="junobench",
        workers=workers,
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
    per core when there are at least :data:`PARALLEL_FROM` case folders).
    """
    if num_proc is None:
        num_proc = _default_num_proc(root)
    content = fingerprint(root)
    wanted = list(dict.fromkeys(configs))
    builders = {c: builder_for(root, c, cache_dir=cache_dir, workers=num_proc, content=content)
                for c in dict.fromkeys(["cases", *wanted])}  # notebooks derive from cases
    for builder in builders.values():
        try:
            builder.download_and_prepare()
        except datasets.exceptions.DatasetGenerationError as error:
            if isinstance(error.__cause__, JunoBenchError):
                raise error.__cause__ from None
            raise
    data = read_report(builders["cases"].cache_dir)
    report = BuildReport(
        root, content, skipped=data["skipped"],
        problems=[Problem(**p) for p in data["problems"]],
        absent={what: sorted(ids) for what, ids in data["absent"].items()},
        unlisted_folders=data["unlisted_folders"],
    )
    if report.problems and not skip_invalid:
        raise SnapshotError(report.problems, root=root)
    return {c: builders[c].as_dataset(split="test") for c in wanted}, report


#: Snapshots with at least this many case folders are prepared in parallel.
PARALLEL_FROM = 1000


def _default_num_proc(root: Path) -> int:
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    if cores < 2:
        return 1
    try:
        count = sum(1 for _ in os.scandir(root / layout.BENCHMARK_DIR))
    except OSError:
        return 1
    return min(cores, 4) if count >= PARALLEL_FROM else 1


def load(
    source: str | Path = DEFAULT_SOURCE,
    config: str = "cases",
    *,
    revision: str | None = None,
    skip_invalid: bool = False,
    cache_dir: str | Path | None = None,
    **filters: str | Iterable[str] | None,
) -> datasets.Dataset:
    """JunoBench records of ``config`` (``cases`` or ``notebooks``), split ``test``.

    ``source`` is a snapshot directory, ``"sample"`` (the bundled mini benchmark) or a Hub
    dataset repo id (default ``PELAB-LiU/JunoBench``, at ``revision``). Filters —
    ``library``, ``root_cause``, ``crash_type``, ``pipeline_stage``, ``source`` — take a
    value or a list of values; a record must match one value of every filter given.
    Problems are logged once, on the ``junobench`` logger. A ``source`` holding an export
    (``junobench export``: a directory, or a Hub repo with its parquet files) is read from
    its parquet (memory-mapped from an Arrow copy in the cache), instead of rebuilding the
    records.
    """
    criteria = normalise_filters(filters)
    root = resolve(source, revision=revision)
    if is_export(root):
        return read_export(root, config, criteria, cache_dir=cache_dir)
    dataset, report = build(root, config, skip_invalid=skip_invalid, cache_dir=cache_dir)
    for line in report.summary():
        logger.warning(line)
    return apply_filters(dataset, criteria)


def normalise_filters(filters: Mapping[str, str | Iterable[str] | None]) -> dict[str, list[str]]:
    """Check filter names and turn each value into a list (``None`` means no filter)."""
    out: dict[str, list[str]] = {}
    for name, value in filters.items():
        if name not in FILTERS:
            raise JunoBenchError(f"unknown filter {name!r}",
                                 hint=f"filters are {', '.join(FILTERS)}")
        if value is None:
            continue
        values = [value] if isinstance(value, str) else list(value)
        if not all(isinstance(v, str) for v in values):
            raise JunoBenchError(f"filter {name!r} takes strings, got {values!r}")
        if name == "library":
            values = [_LIBRARY_ALIASES.get(v, v) for v in values]
        if values:
            out[name] = values
    return out


def apply_filters(dataset: datasets.Dataset, criteria: Mapping[str, list[str]]) -> datasets.Dataset:
    """Rows matching every criterion; an unknown value fails with the closest valid ones."""
    if not criteria:
        return dataset
    keep: list[int] | None = None
    for name, values in criteria.items():
        column = dataset.data.column(name).to_pylist()
        present = {v for v in column if v is not None}
        for value in values:
            if value not in present and value not in FILTERS[name]:
                choices = sorted(present | set(FILTERS[name]))
                close = difflib.get_close_matches(value, choices, n=3, cutoff=0.4)
                hint = f"did you mean {', '.join(map(repr, close))}?" if close else (
                    f"values are {', '.join(map(repr, choices))}")
                raise JunoBenchError(f"no {name} {value!r} in JunoBench", hint=hint)
        wanted = set(values)
        rows = {i for i, v in enumerate(column) if v in wanted}
        keep = sorted(rows if keep is None else rows.intersection(keep))
    return dataset.select(keep or [])


def _ids(ids: list[str], limit: int = 8) -> str:
    shown = ", ".join(ids[:limit])
    return shown + (f", … (+{len(ids) - limit})" if len(ids) > limit else "")
