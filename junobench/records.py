"""JunoBench as typed records: a ``datasets.GeneratorBasedBuilder`` with two configs.

- ``cases``: one row per case (labels, crash, diagnosis, the three notebooks, execution
  orders, input datasets).
- ``notebooks``: one row per reproduced or fixed notebook, the unit of crash-detection
  evaluation; derived from the ``cases`` records, so each notebook is parsed once.

Both have the single split ``test``. The builder reads a snapshot directory (see
:mod:`junobench.layout`); :func:`junobench.load` picks the snapshot, keys the cache on
its content and applies filters.

>>> from junobench.snapshot import fingerprint, sample_path
>>> builder = JunoBench(config_name="cases", snapshot=str(sample_path()),
...                     fingerprint=fingerprint(sample_path()))      # doctest: +SKIP
>>> builder.download_and_prepare(num_proc=2)                        # doctest: +SKIP
>>> builder.as_dataset("test"), read_report(builder.cache_dir)     # doctest: +SKIP
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import datasets
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from junobench import layout, vocab
from junobench.cases import LABEL_FIELDS, build_case, notebook_rows
from junobench.errors import JunoBenchError
from junobench.tables import DescRow, read_desc, read_diagnoses

#: Report files written beside the prepared records: what was skipped, what is absent.
REPORT_PREFIX = "junobench_report"

T = TypeVar("T")

_string = datasets.Value("string")
_int = datasets.Value("int32")

CELL_RUN = {"code_cell_index": _int, "execution_count": _int, "source": _string}
LABELS = dict.fromkeys(LABEL_FIELDS, _string)

CASE_FEATURES = datasets.Features(
    {
        "case_id": _string,
        **LABELS,
        "dataset_note": _string,
        "eid": _string,
        "exception": _string,
        "evalue": _string,
        "traceback": datasets.List(_string),
        "crash_line": _int,
        "diagnosis": _string,
        "notebook_url": _string,
        "original": _string,
        "reproduced": _string,
        "fixed": _string,
        "target_cell_index": _int,
        "execution_order": {
            "reproduced": datasets.List(CELL_RUN),
            "fixed": datasets.List(CELL_RUN),
        },
        "datasets": datasets.List(
            {
                "name": _string,
                "title": _string,
                "url": _string,
                "license": _string,
                "modifications": datasets.List(_string),
                "files": datasets.List(_string),
            }
        ),
    }
)

NOTEBOOK_FEATURES = datasets.Features(
    {
        "instance": _string,
        "case_id": _string,
        "version": _string,
        "crash": datasets.Value("bool"),
        **LABELS,
        "exception": _string,
        "executed_cells": datasets.List(CELL_RUN),
        "target_cell": CELL_RUN,
        "diagnosis": _string,
    }
)

FEATURES = {"cases": CASE_FEATURES, "notebooks": NOTEBOOK_FEATURES}
CONFIGS = tuple(FEATURES)

_DESCRIPTION = (
    "JunoBench: real crashes in Python machine-learning Jupyter notebooks from Kaggle. "
    "Config 'cases': one row per case; config 'notebooks': one row per reproduced or "
    "fixed notebook."
)


# --------------------------------------------------------------------------- builder

#: Records are generated in this many shards, so ``num_proc`` jobs can share them.
SHARDS = 16


@dataclass
class JunoBenchConfig(datasets.BuilderConfig):
    """``snapshot``: the snapshot directory; ``fingerprint``: its content digest, the
    cache key (an edited snapshot gets new records, never stale ones)."""

    snapshot: str | None = None
    fingerprint: str | None = None


class JunoBench(datasets.GeneratorBasedBuilder):
    """Builds JunoBench records from a snapshot directory in the published layout.

    Invalid cases are left out of the records and listed, with what is absent from the
    snapshot, in report files beside them (:func:`read_report`); :func:`junobench.load`
    fails on them unless asked to skip them.
    """

    BUILDER_CONFIG_CLASS = JunoBenchConfig
    BUILDER_CONFIGS = [
        JunoBenchConfig(name="cases", version=datasets.Version("1.0.0"),
                        description="One row per case."),
        JunoBenchConfig(name="notebooks", version=datasets.Version("1.0.0"),
                        description="One row per reproduced or fixed notebook."),
    ]
    DEFAULT_CONFIG_NAME = "cases"
    DEFAULT_WRITER_BATCH_SIZE = 512

    config: JunoBenchConfig

    def __init__(self, *args: Any, workers: int = 1, **kwargs: Any) -> None:
        #: Processes that parse case folders (the records are the same for any number).
        self.workers = max(1, workers)
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
                "ranges": _split(range(len(cases)), SHARDS),
            })]
        root = Path(self.config.snapshot)
        if not layout.benchmark_dir(root).is_dir():
            raise JunoBenchError("the benchmark/ folder is missing", file=root / layout.BENCHMARK_DIR,
                                 hint=f"a snapshot holds benchmark/<case>/ folders beside {layout.DESC_TABLE}")
        rows, problems = read_desc(root)
        listed = {r.case_id for r in rows} | {p.case for p in problems if p.case}
        _write_report(self._output_dir, "table", {
            "skipped": list(dict.fromkeys(p.case for p in problems if p.case)),
            "problems": [p.to_dict() for p in problems],
            "unlisted_folders": _unlisted_folders(root, listed),
        })
        diagnoses = read_diagnoses(root)
        return [datasets.SplitGenerator(datasets.Split.TEST, gen_kwargs={
            "root": str(root),
            "shards": [_shard_payload(i, part, diagnoses) for i, part in enumerate(_split(rows, SHARDS))],
        })]

    def _generate_examples(self, **kwargs: Any) -> Iterator[tuple[int, dict[str, Any]]]:
        if self.config.name == "notebooks":
            return self._notebook_examples(**kwargs)
        return self._case_examples(**kwargs)

    # The features are plain values, lists and structs: encoding an example changes
    # nothing, so the examples are written in Arrow batches rather than one by one
    # (same records, several times faster; tests/test_builder.py checks both agree).

    def _generate_tables(self, **kwargs: Any) -> Iterator[tuple[int, pa.Table]]:
        """The examples of :meth:`_generate_examples`, in Arrow tables of a batch each
        (the notebooks records computed column-wise from the cases records)."""
        if self.config.name == "notebooks":
            for key, cases in self._case_batches(**kwargs):
                yield key, notebook_table(cases)
            return
        if self.workers > 1 and len(kwargs["shards"]) > 1:
            yield from self._parallel_case_tables(**kwargs)
            return
        schema = self.info.features.arrow_schema
        batch: list[dict[str, Any]] = []
        first = 0
        for key, example in self._generate_examples(**kwargs):
            if not batch:
                first = key
            batch.append(example)
            if len(batch) == self._writer_batch_size:
                yield first, pa.Table.from_pylist(batch, schema=schema)
                batch = []
        if batch:
            yield first, pa.Table.from_pylist(batch, schema=schema)

    def _prepare_split_single(self, gen_kwargs: dict, fpath: str, file_format: str,
                              max_shard_size: int, job_id: int, **_: Any) -> Iterator[Any]:
        return datasets.ArrowBasedBuilder._prepare_split_single(
            self, gen_kwargs=gen_kwargs, fpath=fpath, file_format=file_format,
            max_shard_size=max_shard_size, job_id=job_id,
        )

    def _case_examples(self, root: str, shards: list[str]) -> Iterator[tuple[int, dict[str, Any]]]:
        reports = []
        for payload in shards:
            index, records, report = case_shard(root, payload)
            reports.append(report)
            for i, record in enumerate(records):
                yield index * 1_000_000 + i, record
        _write_report(self._output_dir, "cases", _merge_reports(reports))

    def _parallel_case_tables(self, root: str, shards: list[str]) -> Iterator[tuple[int, pa.Table]]:
        """Case shards parsed by ``workers`` processes, in shard order, as Arrow tables."""
        import multiprocessing

        method = "fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn"
        reports = []
        with multiprocessing.get_context(method).Pool(self.workers) as pool:
            jobs = [(root, payload) for payload in shards]
            for index, table, report in pool.imap(_case_shard_table, jobs):
                reports.append(report)
                yield index * 1_000_000, table
        _write_report(self._output_dir, "cases", _merge_reports(reports))

    def _notebook_examples(self, files: tuple[str, ...],
                           ranges: list[range]) -> Iterator[tuple[int, dict[str, Any]]]:
        for key, cases in self._case_batches(files, ranges):
            for i, case in enumerate(cases.to_pylist()):
                for j, row in enumerate(notebook_rows(case)):
                    yield 2 * (key + i) + j, row

    def _case_batches(self, files: tuple[str, ...], ranges: list[range]) -> Iterator[tuple[int, pa.Table]]:
        """The columns of the cases records that the notebooks records use, in batches."""
        cases = datasets.concatenate_datasets([datasets.Dataset.from_file(f) for f in files])
        table = cases.data.table.select(NOTEBOOK_SOURCE_COLUMNS)
        for span in ranges:
            for start in range(span.start, span.stop, self._writer_batch_size):
                stop = min(start + self._writer_batch_size, span.stop)
                yield start, table.slice(start, stop - start)

    def _cases_dataset(self) -> datasets.Dataset:
        builder = JunoBench(
            config_name="cases",
            snapshot=self.config.snapshot,
            fingerprint=self.config.fingerprint,
            cache_dir=self._cache_dir_root,
            dataset_name=self.dataset_name,
        )
        builder.download_and_prepare()
        return builder.as_dataset(split="test")


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


def _split(items: Sequence[T], parts: int) -> list[Sequence[T]]:
    """``items`` in ``parts`` contiguous slices of near-equal length (some may be empty)."""
    size, extra = divmod(len(items), parts)
    bounds = [i * size + min(i, extra) for i in range(parts + 1)]
    return [items[bounds[i]:bounds[i + 1]] for i in range(parts)]


def _unlisted_folders(root: Path, listed: set[str]) -> list[str]:
    """Case folders with no row in the case table (not part of the records)."""
    return sorted(p.name for p in layout.benchmark_dir(root).iterdir()
                  if p.is_dir() and p.name not in listed)


#: Columns of the cases records from which the notebooks records are made.
NOTEBOOK_SOURCE_COLUMNS = ["case_id", *LABEL_FIELDS, "exception", "diagnosis", "execution_order"]


def notebook_table(cases: pa.Table) -> pa.Table:
    """The notebooks records of a table of cases records, column by column.

    The same rows as :func:`junobench.cases.notebook_rows` applied to each case (a
    reproduced then a fixed row per case), without a Python object per row.
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
        parts.append(pa.table(columns, schema=NOTEBOOK_FEATURES.arrow_schema))
    both = pa.concat_tables(parts)
    interleaved = np.column_stack([np.arange(count), np.arange(count) + count]).ravel()
    return both.take(pa.array(interleaved))


def _shard_payload(index: int, rows: Sequence[DescRow], diagnoses: dict[str, str]) -> str:
    """A shard of table rows as one JSON string: cheap to hand to a worker process."""
    needed = {vocab.instance_id(r.case_id, "reproduced") for r in rows}
    return json.dumps({
        "index": index,
        "rows": [[r.case_id, r.row_number, r.fields, r.datasets] for r in rows],
        "diagnoses": {k: v for k, v in diagnoses.items() if k in needed},
    })


def _read_shard_payload(payload: str) -> tuple[int, list[DescRow], dict[str, str]]:
    data = json.loads(payload)
    return data["index"], [DescRow(*r) for r in data["rows"]], data["diagnoses"]


def case_shard(root: str, payload: str) -> tuple[int, list[dict[str, Any]], dict[str, Any]]:
    """The records of one shard of table rows, and its report (skipped, problems, absent)."""
    index, rows, diagnoses = _read_shard_payload(payload)
    records, problems, skipped = [], [], []
    absent: dict[str, list[str]] = {}
    for row in rows:
        result = build_case(Path(root), row, diagnoses)
        for what in result.absent:
            absent.setdefault(what, []).append(row.case_id)
        if result.record is None:
            problems.extend(p.to_dict() for p in result.problems)
            skipped.append(row.case_id)
        else:
            records.append(result.record)
    return index, records, {"skipped": skipped, "problems": problems, "absent": absent}


def _case_shard_table(job: tuple[str, str]) -> tuple[int, pa.Table, dict[str, Any]]:
    index, records, report = case_shard(*job)
    return index, pa.Table.from_pylist(records, schema=CASE_FEATURES.arrow_schema), report


def _merge_reports(reports: list[dict[str, Any]]) -> dict[str, Any]:
    merged: dict[str, Any] = {"skipped": [], "problems": [], "absent": {}}
    for report in reports:
        merged["skipped"] += report.get("skipped", [])
        merged["problems"] += report.get("problems", [])
        for what, ids in report.get("absent", {}).items():
            merged["absent"].setdefault(what, []).extend(ids)
    return merged
