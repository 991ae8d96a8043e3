"""JunoBench as typed records: a ``datasets.GeneratorBasedBuilder`` with two configs.

- ``cases``: one row per case (labels, crash, diagnosis, the three notebooks, execution
  orders, input datasets).
- ``notebooks``: one row per reproduced or fixed notebook, the unit of crash-detection
  evaluation; derived from the ``cases`` records, so each notebook is parsed once.

Both have the single split ``test``. The builder reads a snapshot directory (see
:mod:`junobench.layout`); :func:`junobench.load` picks the snapshot, keys the cache on
its content and applies filters.

>>> import datasets
>>> builder = JunoBench(config_name="cases", snapshot=str(sample_path()),
...                     fingerprint=fingerprint(sample_path()))  # doctest: +SKIP
>>> builder.download_and_prepare(); builder.as_dataset("test")  # doctest: +SKIP
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import datasets

from junobench import layout, vocab
from junobench.errors import JunoBenchError, Problem, SnapshotError
from junobench.metadata import read_metadata
from junobench.notebook import (
    CodeCell,
    NotebookError,
    Step,
    execution_order,
    find_target,
    read_notebook,
)
from junobench.notebook import crash_line as find_crash_line
from junobench.tables import DescRow, read_desc, read_diagnoses

#: File written beside the prepared records: what was skipped and what is absent.
REPORT_FILE = "junobench_report.json"

_string = datasets.Value("string")
_int = datasets.Value("int32")

CELL_RUN = {"code_cell_index": _int, "execution_count": _int, "source": _string}
LABELS = {
    "library": _string,
    "library_label": _string,
    "root_cause": _string,
    "crash_type": _string,
    "pipeline_stage": _string,
    "ml_bug": _string,
    "source": _string,
}

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


# --------------------------------------------------------------------------- one case


@dataclass
class CaseResult:
    """A case's record, or why it could not be built; plus what is absent."""

    case_id: str
    record: dict[str, Any] | None
    problems: list[Problem]
    absent: list[str]


def build_case(root: Path, row: DescRow, diagnoses: dict[str, str]) -> CaseResult:
    """Parse one case folder into its ``cases`` record (never raises for bad input)."""
    case_id = row.case_id
    problems: list[Problem] = []
    absent: list[str] = []

    def problem(text: str, path: Path | None = None, hint: str | None = None) -> None:
        file = layout.relative(root, path) if path is not None else layout.DESC_TABLE
        problems.append(Problem(text, file, case_id, hint))

    if not vocab.is_case_id(case_id):
        problem(f"case id {case_id!r} is not of the form <library>_<number>",
                hint="name cases like torch_7 or NBspecific_3")
        return CaseResult(case_id, None, problems, absent)
    folder = layout.case_dir(root, case_id)
    if not folder.is_dir():
        problem("case folder is missing", folder,
                f"add {layout.BENCHMARK_DIR}/{case_id}/ or remove the table row")
        return CaseResult(case_id, None, problems, absent)

    texts: dict[str, str | None] = {}
    cells: dict[str, tuple[CodeCell, ...]] = {}
    for version in vocab.VERSIONS:
        path = layout.notebook_path(root, case_id, version)
        if not path.is_file():
            texts[version] = None
            if version == "original":
                absent.append("original notebook")
            else:
                problem(f"{version} notebook is missing", path,
                        f"add {path.name}; every case needs reproduced and fixed notebooks")
            continue
        try:
            notebook, text = read_notebook(path, case=case_id)
        except NotebookError as error:
            problems.append(Problem(error.problem_.problem, layout.relative(root, path), case_id,
                                    error.problem_.hint))
            continue
        texts[version] = text
        cells[version] = notebook.code_cells
    if problems:
        return CaseResult(case_id, None, problems, absent)

    reproduced_path = layout.notebook_path(root, case_id, "reproduced")
    target_index = find_target(cells["reproduced"])
    if target_index is None:
        problem("the reproduced notebook has no error output, so its target cell is unknown",
                reproduced_path, "run it in its recorded order so the crash output is saved")
        return CaseResult(case_id, None, problems, absent)
    target = cells["reproduced"][target_index]
    if target.index >= len(cells["fixed"]):
        problem(f"the fixed notebook has {len(cells['fixed'])} code cells but the target is "
                f"code cell {target.index}", layout.notebook_path(root, case_id, "fixed"),
                "keep the fixed notebook's cells at the reproduced notebook's positions")
        return CaseResult(case_id, None, problems, absent)

    datasets_, data_problems = _datasets(root, row, absent)
    problems.extend(data_problems)
    if problems:
        return CaseResult(case_id, None, problems, absent)

    assert target.error is not None
    library = vocab.library_of(case_id)
    record = {
        "case_id": case_id,
        "library": library,
        "library_label": vocab.library_label(library),
        "root_cause": row.fields.get("root_cause"),
        "crash_type": row.fields.get("crash_type"),
        "pipeline_stage": row.fields.get("pipeline_stage"),
        "ml_bug": row.fields.get("ml_bug"),
        "source": row.fields.get("source"),
        "dataset_note": row.fields.get("dataset_note"),
        "eid": row.fields.get("eid"),
        "exception": target.error.ename,
        "evalue": target.error.evalue,
        "traceback": list(target.error.traceback),
        "crash_line": find_crash_line(target.error.traceback),
        "diagnosis": diagnoses.get(vocab.instance_id(case_id, "reproduced")),
        "notebook_url": row.fields.get("notebook_url"),
        "original": texts["original"],
        "reproduced": texts["reproduced"],
        "fixed": texts["fixed"],
        "target_cell_index": target.index,
        "execution_order": {
            version: _runs(cells[version], execution_order(cells[version], target.index))
            for version in vocab.EVALUATED_VERSIONS
        },
        "datasets": datasets_,
    }
    return CaseResult(case_id, record, problems, absent)


def _runs(code_cells: tuple[CodeCell, ...], steps: list[Step]) -> list[dict[str, Any]]:
    return [
        {"code_cell_index": s.code_cell_index, "execution_count": s.execution_count,
         "source": code_cells[s.code_cell_index].source}
        for s in steps
    ]


def _datasets(root: Path, row: DescRow, absent: list[str]) -> tuple[list[dict[str, Any]], list[Problem]]:
    """Input datasets from the metadata files, else from the table's Dataset* columns."""
    case_id = row.case_id
    files = layout.metadata_files(root, case_id)
    if not files:
        absent.append("input data")
        return [
            {"name": None, "title": d["title"], "url": d["url"], "license": d["license"],
             "modifications": [], "files": []}
            for d in row.datasets
        ], []
    out, problems = [], []
    data = layout.data_dir(root, case_id)
    missing_files = False
    for path in files:
        try:
            meta = read_metadata(path, case=case_id)
        except JunoBenchError as error:
            problems.append(Problem(error.problem_.problem, layout.relative(root, path), case_id,
                                    error.problem_.hint))
            continue
        present = [f for f in meta["files"] if (data / f).exists()]
        missing_files |= len(present) < len(meta["files"])
        out.append({
            "name": layout.dataset_name(path),
            "title": meta["title"],
            "url": meta["url"],
            "license": meta["license"],
            "modifications": [m["kind"] for m in meta["modifications"]],
            "files": present,
        })
    if missing_files:
        absent.append("input data")
    return out, problems


def notebook_rows(case: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """The two ``notebooks`` records of a ``cases`` record."""
    labels = {key: case[key] for key in LABELS}
    for version in vocab.EVALUATED_VERSIONS:
        runs = case["execution_order"][version]
        crash = version == "reproduced"
        yield {
            "instance": vocab.instance_id(case["case_id"], version),
            "case_id": case["case_id"],
            "version": version,
            "crash": crash,
            **labels,
            "exception": case["exception"] if crash else None,
            "executed_cells": runs[:-1],
            "target_cell": runs[-1],
            "diagnosis": case["diagnosis"] if crash else None,
        }


# --------------------------------------------------------------------------- builder


@dataclass
class JunoBenchConfig(datasets.BuilderConfig):
    """``snapshot``: the snapshot directory; ``fingerprint``: its content digest (the
    cache key); ``skip_invalid``: build the valid cases and report the others."""

    snapshot: str | None = None
    fingerprint: str | None = None
    skip_invalid: bool = False


class JunoBench(datasets.GeneratorBasedBuilder):
    """Builds JunoBench records from a snapshot directory in the published layout."""

    BUILDER_CONFIG_CLASS = JunoBenchConfig
    BUILDER_CONFIGS = [
        JunoBenchConfig(name="cases", version=datasets.Version("1.0.0"),
                        description="One row per case."),
        JunoBenchConfig(name="notebooks", version=datasets.Version("1.0.0"),
                        description="One row per reproduced or fixed notebook."),
    ]
    DEFAULT_CONFIG_NAME = "cases"
    DEFAULT_WRITER_BATCH_SIZE = 256

    config: JunoBenchConfig

    def _info(self) -> datasets.DatasetInfo:
        return datasets.DatasetInfo(
            description=_DESCRIPTION,
            features=FEATURES[self.config.name],
            homepage="https://huggingface.co/datasets/PELAB-LiU/JunoBench",
        )

    def _split_generators(self, dl_manager: Any) -> list[datasets.SplitGenerator]:
        if not self.config.snapshot:
            raise ValueError("JunoBench needs snapshot=<directory>; use junobench.load()")
        root = Path(self.config.snapshot)
        if self.config.name == "notebooks":
            return [datasets.SplitGenerator(datasets.Split.TEST,
                                            gen_kwargs={"cases": self._cases_dataset()})]
        if not layout.benchmark_dir(root).is_dir():
            raise JunoBenchError("the benchmark/ folder is missing", file=root / layout.BENCHMARK_DIR,
                                 hint="a snapshot holds benchmark/<case>/ folders beside "
                                 f"{layout.DESC_TABLE}")
        rows, problems = read_desc(root)
        diagnoses = read_diagnoses(root)
        return [datasets.SplitGenerator(
            datasets.Split.TEST,
            gen_kwargs={"root": root, "rows": rows, "diagnoses": diagnoses,
                        "table_problems": problems},
        )]

    def _generate_examples(self, **kwargs: Any) -> Iterator[tuple[int, dict[str, Any]]]:
        if self.config.name == "notebooks":
            yield from self._notebook_examples(kwargs["cases"])
        else:
            yield from self._case_examples(**kwargs)

    def _case_examples(self, root: Path, rows: list[DescRow], diagnoses: dict[str, str],
                       table_problems: list[Problem]) -> Iterator[tuple[int, dict[str, Any]]]:
        problems = list(table_problems)
        absent: dict[str, list[str]] = {}
        skipped: list[str] = list(dict.fromkeys(p.case for p in table_problems if p.case))
        key = 0
        for row in rows:
            result = build_case(root, row, diagnoses)
            for what in result.absent:
                absent.setdefault(what, []).append(row.case_id)
            if result.record is None:
                problems.extend(result.problems)
                skipped.append(row.case_id)
                continue
            if problems and not self.config.skip_invalid:
                continue  # the build fails below; keep collecting problems
            yield key, result.record
            key += 1
        if problems and not self.config.skip_invalid:
            raise SnapshotError(problems, root=root)
        report = {
            "skipped": skipped,
            "problems": [p.to_dict() for p in problems],
            "absent": {what: sorted(ids) for what, ids in absent.items()},
            "unlisted_folders": _unlisted_folders(root, {r.case_id for r in rows} | set(skipped)),
        }
        Path(self._output_dir, REPORT_FILE).write_text(json.dumps(report, indent=1))

    def _notebook_examples(self, cases: datasets.Dataset) -> Iterator[tuple[int, dict[str, Any]]]:
        columns = ["case_id", *LABELS, "exception", "diagnosis", "execution_order"]
        key = 0
        for batch in cases.select_columns(columns).iter(batch_size=512):
            for i in range(len(batch["case_id"])):
                for row in notebook_rows({c: batch[c][i] for c in columns}):
                    yield key, row
                    key += 1
        report = Path(cases.cache_files[0]["filename"]).parent / REPORT_FILE
        if report.is_file():
            Path(self._output_dir, REPORT_FILE).write_bytes(report.read_bytes())

    def _cases_dataset(self) -> datasets.Dataset:
        builder = JunoBench(
            config_name="cases",
            snapshot=self.config.snapshot,
            fingerprint=self.config.fingerprint,
            skip_invalid=self.config.skip_invalid,
            cache_dir=self._cache_dir_root,
            dataset_name=self.dataset_name,
        )
        builder.download_and_prepare()
        return builder.as_dataset(split="test")


def _unlisted_folders(root: Path, listed: set[str]) -> list[str]:
    """Case folders with no row in the case table (not part of the records)."""
    folder = layout.benchmark_dir(root)
    if not folder.is_dir():
        return []
    return sorted(p.name for p in folder.iterdir() if p.is_dir() and p.name not in listed)
