"""One case folder → its ``cases`` record; a ``cases`` record → its ``notebooks`` records.

Pure functions over the snapshot layout (:mod:`junobench.layout`), no ``datasets``:
the builder in :mod:`junobench.records` calls them. Bad input never raises here; it is
returned as :class:`~junobench.errors.Problem` objects naming file and case.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from junobench import layout, vocab
from junobench.errors import JunoBenchError, Problem
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
from junobench.tables import DescRow

#: Label fields shared by both configs, in record order.
LABEL_FIELDS: tuple[str, ...] = (
    "library", "library_label", "root_cause", "crash_type", "pipeline_stage", "ml_bug", "source",
)


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
    folder_rel = f"{layout.BENCHMARK_DIR}/{case_id}"

    def problem(text: str, file: str = layout.DESC_TABLE, hint: str | None = None) -> CaseResult:
        problems.append(Problem(text, file, case_id, hint))
        return CaseResult(case_id, None, problems, absent)

    if not vocab.is_case_id(case_id):
        return problem(f"case id {case_id!r} is not of the form <library>_<number>",
                       hint="name cases like torch_7 or NBspecific_3")
    folder = os.path.join(root, folder_rel)
    if not os.path.isdir(folder):
        return problem("case folder is missing", folder_rel,
                       f"add {folder_rel}/ or remove the table row")

    texts: dict[str, str | None] = {}
    cells: dict[str, tuple[CodeCell, ...]] = {}
    for version in vocab.VERSIONS:
        name = layout.notebook_name(case_id, version)
        path = os.path.join(folder, name)
        texts[version] = None
        try:
            notebook, text = read_notebook(path, case=case_id)
        except NotebookError as error:
            if os.path.exists(path):
                problem(error.problem_.problem, f"{folder_rel}/{name}", error.problem_.hint)
            elif version == "original":
                absent.append("original notebook")
            else:
                problem(f"{version} notebook is missing", f"{folder_rel}/{name}",
                        f"add {name}; every case needs reproduced and fixed notebooks")
            continue
        texts[version] = text
        cells[version] = notebook.code_cells
    if problems:
        return CaseResult(case_id, None, problems, absent)

    target_index = find_target(cells["reproduced"])
    if target_index is None:
        return problem("the reproduced notebook has no error output, so its target cell is unknown",
                       f"{folder_rel}/{layout.notebook_name(case_id, 'reproduced')}",
                       "run it in its recorded order so the crash output is saved")
    target = cells["reproduced"][target_index]
    if target_index >= len(cells["fixed"]):
        return problem(f"the fixed notebook has {len(cells['fixed'])} code cells but the target is "
                       f"code cell {target_index}",
                       f"{folder_rel}/{layout.notebook_name(case_id, 'fixed')}",
                       "keep the fixed notebook's cells at the reproduced notebook's positions")

    has_data = os.path.isdir(os.path.join(folder, layout.DATA_DIR))
    metadata = layout.metadata_files(root, case_id) if has_data else []
    if metadata:
        datasets_ = _datasets_from_metadata(root, case_id, metadata, absent, problems)
        if problems:
            return CaseResult(case_id, None, problems, absent)
    else:  # no metadata files: the table's Dataset* columns describe the data
        if not has_data:
            absent.append("input data")
        datasets_ = [{"name": None, **d, "modifications": [], "files": []} for d in row.datasets]

    error = target.error
    assert error is not None
    library = vocab.library_of(case_id)
    fields = row.fields
    record = {
        "case_id": case_id,
        "library": library,
        "library_label": vocab.library_label(library),
        "root_cause": fields.get("root_cause"),
        "crash_type": fields.get("crash_type"),
        "pipeline_stage": fields.get("pipeline_stage"),
        "ml_bug": fields.get("ml_bug"),
        "source": fields.get("source"),
        "dataset_note": fields.get("dataset_note"),
        "eid": fields.get("eid"),
        "exception": error.ename,
        "evalue": error.evalue,
        "traceback": list(error.traceback),
        "crash_line": find_crash_line(error.traceback),
        "diagnosis": diagnoses.get(vocab.instance_id(case_id, "reproduced")),
        "notebook_url": fields.get("notebook_url"),
        "original": texts["original"],
        "reproduced": texts["reproduced"],
        "fixed": texts["fixed"],
        "target_cell_index": target_index,
        "execution_order": {
            version: _runs(cells[version], execution_order(cells[version], target_index))
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


def _datasets_from_metadata(root: Path, case_id: str, files: list[Path], absent: list[str],
                            problems: list[Problem]) -> list[dict[str, Any]]:
    """Input datasets described by metadata ``files``; data files absent on disk are left out."""
    out = []
    data = layout.data_dir(root, case_id)
    missing = False
    for path in files:
        try:
            meta = read_metadata(path, case=case_id)
        except JunoBenchError as error:
            problems.append(Problem(error.problem_.problem, layout.relative(root, path), case_id,
                                    error.problem_.hint))
            continue
        present = [f for f in meta["files"] if (data / f).exists()]
        missing |= len(present) < len(meta["files"])
        out.append({
            "name": layout.dataset_name(path),
            "title": meta["title"],
            "url": meta["url"],
            "license": meta["license"],
            "modifications": [m["kind"] for m in meta["modifications"]],
            "files": present,
        })
    if missing:
        absent.append("input data")
    return out


def notebook_rows(case: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """The two ``notebooks`` records of a ``cases`` record."""
    labels = {key: case[key] for key in LABEL_FIELDS}
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
