"""JunoBench as typed records: a ``datasets.ArrowBasedBuilder`` with two configs.

- ``cases``: one row per case (labels, crash, diagnosis, the three notebooks, execution
  orders, input datasets).
- ``notebooks``: one row per reproduced or fixed notebook, the unit of crash-detection
  evaluation; derived from the ``cases`` records, so each notebook is parsed once.

Both have the single split ``test``. The builder reads a snapshot directory (see
:mod:`junobench.data.layout`); :func:`junobench.load` picks the snapshot, keys the cache on
its content and applies filters.

>>> from junobench.data.snapshot import fingerprint, sample_path
>>> builder = JunoBench(config_name="cases", snapshot=str(sample_path()),
...                     fingerprint=fingerprint(sample_path()))
>>> builder.download_and_prepare()
>>> builder.as_dataset("test").num_rows, read_report(builder.cache_dir)["skipped"]
(10, [])
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import datasets
import pyarrow as pa

from junobench.data import layout
from junobench.data.preparation import (
    NOTEBOOK_SOURCE_COLUMNS,
    BuildReport,
    EarlyParse,
    case_shards,
    computed_ahead,
    folder_shards,
    frozen_heap,
    joined,
    notebook_table,
    read_tables_in_background,
    split,
)
from junobench.data.prepared import RECORDS_VERSION
from junobench.data.schema import CONFIGS as CONFIGS
from junobench.data.schema import FOLDER_SCHEMA, SCHEMAS
from junobench.envs.environment import snapshot_environment
from junobench.errors import JunoBenchError

# The two datasets internals this builder relies on, each because datasets offers no
# public way; tests/test_builder.py fails if datasets drops or renames either:
#
# 1. ``_patched_for_streaming`` (this module's flag): every builder's __init__ (and its
#    unpickling in each worker process) rewrites the module that defines the builder for
#    streaming: ``open``, ``os.path.*`` and ``Path`` become remote-aware wrappers, and
#    SciPy, pandas and XML readers are imported to wrap theirs. This builder reads a local
#    snapshot only, so the module declares itself already done.
# 2. ``self._output_dir`` (a builder attribute): the folder being prepared, which datasets
#    moves to the cache folder when preparation succeeds. The build report must be
#    written there, to move with the records (a report written to the public
#    ``cache_dir`` would outlive a failed preparation); so are the workers' spool files,
#    unless they started before the builder (:func:`~junobench.data.preparation.start_parsing`).
_patched_for_streaming = True

#: Report files written beside the prepared records: what was skipped, what is absent.
REPORT_PREFIX = "junobench_report"

#: The records' features: their Arrow schemas (:mod:`.schema`) in ``datasets``' terms.
FEATURES = {config: datasets.Features.from_arrow_schema(schema) for config, schema in SCHEMAS.items()}
CASE_FEATURES, NOTEBOOK_FEATURES = FEATURES["cases"], FEATURES["notebooks"]
#: The schemas of the records as written (with ``datasets``' metadata of their features).
CASE_SCHEMA = CASE_FEATURES.arrow_schema
NOTEBOOK_SCHEMA = NOTEBOOK_FEATURES.arrow_schema

_DESCRIPTION = (
    "JunoBench: real crashes in Python machine-learning Jupyter notebooks from Kaggle. "
    "Config 'cases': one row per case; config 'notebooks': one row per reproduced or "
    "fixed notebook."
)


# --------------------------------------------------------------------------- builder

#: Shards of the notebooks records (split of the cases records into writer batches).
SHARDS = 16


@dataclass
class JunoBenchConfig(datasets.BuilderConfig):
    """``snapshot``: the snapshot directory; ``fingerprint``: its content digest, the
    cache key (an edited snapshot gets new records, never stale ones); ``junobench``:
    the release that prepares them (another release, whose checks may differ, prepares
    its own)."""

    snapshot: str | None = None
    fingerprint: str | None = None
    junobench: str | None = None


class JunoBench(datasets.ArrowBasedBuilder):
    """Builds JunoBench records from a snapshot directory in the published layout.

    The records are plain values, lists and structs, so they are made and written as
    Arrow tables of a batch each (:meth:`_generate_tables`), not example by example.

    Invalid cases are left out of the records and listed, with what is absent from the
    snapshot, in report files beside them (:func:`read_report`); :func:`junobench.load`
    fails on them unless asked to skip them.
    """

    BUILDER_CONFIG_CLASS = JunoBenchConfig
    BUILDER_CONFIGS = [
        JunoBenchConfig(name="cases", version=datasets.Version(RECORDS_VERSION),
                        description="One row per case."),
        JunoBenchConfig(name="notebooks", version=datasets.Version(RECORDS_VERSION),
                        description="One row per reproduced or fixed notebook."),
    ]
    DEFAULT_CONFIG_NAME = "cases"
    DEFAULT_WRITER_BATCH_SIZE = 512

    config: JunoBenchConfig

    def __init__(self, *args: Any, workers: int = 1, early: EarlyParse | None = None, **kwargs: Any) -> None:
        #: Processes that parse case folders (the records are the same for any number).
        self.workers = max(1, workers)
        #: The case folders' parsing, when it started before this builder (the caller closes it).
        self.early = early
        #: The cache folder asked for (the notebooks config prepares the cases there).
        self.cache_root: str | None = kwargs.get("cache_dir")
        super().__init__(*args, **kwargs)

    def _info(self) -> datasets.DatasetInfo:
        return datasets.DatasetInfo(
            description=_DESCRIPTION,
            features=FEATURES[self.config.name],
            homepage="https://huggingface.co/datasets/PELAB-LiU/JunoBench",
        )

    def _split_generators(self, dl_manager: Any) -> list[datasets.SplitGenerator]:
        if not self.config.snapshot:
            raise ValueError("JunoBench needs snapshot=<directory>; use junobench.load()")
        if self.config.name == "notebooks":
            cases = self._cases_dataset()
            for report in _report_files(_dataset_dir(cases)):
                shutil.copyfile(report, Path(self._output_dir) / report.name)
            return [datasets.SplitGenerator(datasets.Split.TEST, gen_kwargs={
                "files": tuple(f["filename"] for f in cases.cache_files),
                "ranges": split(range(len(cases)), SHARDS),
            })]
        root = Path(self.config.snapshot)
        if not layout.benchmark_dir(root).is_dir():
            raise JunoBenchError("the benchmark/ folder is missing", file=root / layout.BENCHMARK_DIR,
                                 hint=f"a snapshot holds benchmark/<case>/ folders beside {layout.DESC_TABLE}")
        if not os.path.lexists(root / layout.DESC_TABLE):  # a FIFO or such: the reader says so
            raise JunoBenchError("the case table is missing", file=root / layout.DESC_TABLE,
                                 hint=f"a snapshot holds {layout.DESC_TABLE} beside benchmark/")
        snapshot_environment(root)  # a bad environment file fails here, with its name
        folders, shards = (self.early.folders, self.early.shards) if self.early else case_shards(root, self.workers)
        return [datasets.SplitGenerator(datasets.Split.TEST, gen_kwargs={
            "root": str(root), "folders": folders, "shards": shards,
        })]

    def _generate_tables(self, **kwargs: Any) -> Iterator[tuple[int, pa.Table]]:
        """The records in Arrow tables of a batch each: the cases records parsed shard by
        shard, the notebooks records computed column-wise from the cases records.
        (tests/test_builder.py checks them against datasets' per-example writing.)"""
        if self.config.name == "notebooks":
            yield from computed_ahead(self._case_batches(**kwargs), _notebooks_of)
        else:
            yield from enumerate(self._case_parts(**kwargs, schema=CASE_SCHEMA))

    def _case_parts(self, root: str, folders: list[str], shards: list[list[str]],
                    schema: pa.Schema | None = None) -> Iterator[Any]:
        """The cases records shard by shard: lists of dicts, or Arrow tables with ``schema``
        (then parsed by ``workers`` processes); the report is written at the end."""
        report = BuildReport()
        early = self.early if schema is not None and self.early and self.early.shards == shards else None
        with frozen_heap(), (nullcontext(None) if early else
                             tempfile.TemporaryDirectory(prefix="spool-", dir=self._output_dir)) as spool:
            parsed = early.parsed if early else folder_shards(
                root, shards, workers=self.workers, spool=spool, schema=None if schema is None else FOLDER_SCHEMA)
            try:
                tables = early.tables if early is not None and early.tables is not None \
                    else read_tables_in_background(root)  # after the workers started
                yield from joined(root, folders, parsed, tables, report, schema)
            finally:
                parsed.close()  # the workers stop, whatever happened
        _write_report(self._output_dir, "cases", report.to_dict())

    def _case_batches(self, files: tuple[str, ...], ranges: list[range]) -> Iterator[tuple[int, pa.Table]]:
        """The columns of the cases records that the notebooks records use, in batches."""
        cases = datasets.concatenate_datasets([datasets.Dataset.from_file(f) for f in files])
        table = cases.data.table.select(NOTEBOOK_SOURCE_COLUMNS)
        for span in ranges:
            for start in range(span.start, span.stop, self.DEFAULT_WRITER_BATCH_SIZE):
                stop = min(start + self.DEFAULT_WRITER_BATCH_SIZE, span.stop)
                yield start, table.slice(start, stop - start)

    def _cases_dataset(self) -> datasets.Dataset:
        builder = JunoBench(
            config_name="cases",
            snapshot=self.config.snapshot,
            fingerprint=self.config.fingerprint,
            junobench=self.config.junobench,
            cache_dir=self.cache_root,
            dataset_name=self.dataset_name,
        )
        builder.download_and_prepare()
        return builder.as_dataset(split="test")


def _notebooks_of(cases: pa.Table) -> pa.Table:
    return notebook_table(cases, NOTEBOOK_SCHEMA)


def read_report(directory: str | Path) -> dict[str, Any]:
    """The merged build report of prepared records: ``skipped``, ``problems`` (dicts),
    ``absent`` (what → case ids) and ``unlisted_folders``."""
    parts = [json.loads(p.read_text(encoding="utf-8")) for p in _report_files(Path(directory))]
    merged = _merge_reports(parts)
    merged["unlisted_folders"] = [name for part in parts for name in part.get("unlisted_folders", [])]
    return merged


def _write_report(directory: str, part: str, report: dict[str, Any]) -> None:
    Path(directory, f"{REPORT_PREFIX}-{part}.json").write_text(json.dumps(report), encoding="utf-8")


def _report_files(directory: Path) -> list[Path]:
    return sorted(directory.glob(f"{REPORT_PREFIX}-*.json"))


def _dataset_dir(dataset: datasets.Dataset) -> Path:
    return Path(dataset.cache_files[0]["filename"]).parent


def _merge_reports(reports: list[dict[str, Any]]) -> dict[str, Any]:
    merged: dict[str, Any] = {"skipped": [], "problems": [], "absent": {}, "unpinned": {}}
    for report in reports:
        merged["skipped"] += report.get("skipped", [])
        merged["problems"] += report.get("problems", [])
        merged["unpinned"].update(report.get("unpinned", {}))
        for what, ids in report.get("absent", {}).items():
            merged["absent"].setdefault(what, []).extend(ids)
    return merged
