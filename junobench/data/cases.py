"""One case folder → its ``cases`` record; a ``cases`` record → its ``notebooks`` records.

Pure functions over the snapshot layout (:mod:`junobench.data.layout`), no ``datasets``:
the builder in :mod:`junobench.data.records` calls them. Bad input never raises here; it is
returned as :class:`~junobench.errors.Problem` objects naming file and case.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from junobench import vocab
from junobench.data import layout
from junobench.data.metadata import listed_file_present, read_metadata
from junobench.data.notebook import (
    CodeCell,
    NotebookError,
    execution_runs,
    find_target,
    read_notebook,
)
from junobench.data.provenance import read as read_provenance
from junobench.data.provenance import record_field
from junobench.data.tables import DescRow
from junobench.envs.environment import Environment, snapshot_environment
from junobench.envs.requirements import local_modules, requirements_of
from junobench.errors import JunoBenchError, Problem
from junobench.safety.paths import is_dir_entry, is_within, link_root

#: Label fields shared by both configs, in record order.
LABEL_FIELDS: tuple[str, ...] = (
    "library", "library_label", "root_cause", "crash_type", "pipeline_stage", "ml_bug", "source",
)


_LINK_HINT = "a snapshot's files are read only inside it: copy the file in instead of linking it"

#: The fields of one run of an execution order, in record order. A folder's record holds
#: each run as a tuple of them (what Arrow takes for a struct, without a dict per run);
#: :func:`complete_record` gives them as dicts.
RUN_FIELDS: tuple[str, ...] = ("code_cell_index", "execution_count", "source")

#: Record fields that come from the tables; every other field comes from the case folder.
TABLE_FIELDS: tuple[str, ...] = (
    "root_cause", "crash_type", "pipeline_stage", "ml_bug", "source", "dataset_note", "eid",
    "notebook_url", "diagnosis",
)


@dataclass
class CaseResult:
    """What a case folder gives its record (None when it cannot be built), and why not;
    plus what is absent from the snapshot and the imports its environment does not pin."""

    case_id: str
    record: dict[str, Any] | None
    problems: list[Problem]
    absent: list[str]
    unpinned: list[str] = field(default_factory=list)


def case_order(case_id: str) -> tuple[str, int, str]:
    """Sort key of case ids: by library prefix, then by number (``torch_2`` < ``torch_10``)."""
    prefix, _, number = case_id.rpartition("_")
    return (prefix, int(number), "") if vocab.is_case_id(case_id) else ("\uffff", 0, case_id)


def parse_case_folder(root: str | Path, case_id: str, env: Environment | None = None, *,
                      read: Mapping[str, bytes] | None = None) -> CaseResult:
    """The fields of a case's record that its folder gives: notebooks, crash, orders (each
    run a tuple of :data:`RUN_FIELDS`) and the datasets of its metadata files
    (``datasets`` None when it has none); requirements pinned from ``env`` (default: the
    snapshot's). ``read``: the bytes of notebooks read already, by absolute path. Never
    raises for bad input: problems name the file and the case."""
    problems: list[Problem] = []
    absent: list[str] = []
    folder_rel = f"{layout.BENCHMARK_DIR}/{case_id}"

    def problem(text: str, file: str = folder_rel, hint: str | None = None) -> CaseResult:
        problems.append(Problem(text, file, case_id, hint))
        return CaseResult(case_id, None, problems, absent)

    if not vocab.is_case_id(case_id):
        return problem(f"case id {case_id!r} is not of the form <library>_<number>",
                       hint="name cases like torch_7 or NBspecific_3")
    folder = os.path.join(root, folder_rel)
    try:
        with os.scandir(folder) as found:
            entries = {entry.name: entry for entry in found}
    except (FileNotFoundError, NotADirectoryError):
        return problem("case folder is missing", hint=f"add {folder_rel}/ or remove the table row")
    except OSError as error:
        return problem(f"cannot list the case folder ({error.strerror or error})",
                       hint="check its permissions")
    if os.path.islink(folder) and not is_within(folder, link_root(root)):
        return problem("the case folder is a link out of the snapshot", hint=_LINK_HINT)

    texts: dict[str, str | None] = {}
    cells: dict[str, tuple[CodeCell, ...]] = {}
    for version in vocab.VERSIONS:
        name = layout.notebook_name(case_id, version)
        path = os.path.join(folder, name)
        texts[version] = None
        if name not in entries:
            if version == "original":
                absent.append("original notebook")
            else:
                problem(f"{version} notebook is missing", f"{folder_rel}/{name}",
                        f"add {name}; every case needs reproduced and fixed notebooks")
            continue
        if entries[name].is_symlink() and not is_within(path, link_root(root)):
            problem("a link out of the snapshot", f"{folder_rel}/{name}", _LINK_HINT)
            continue
        try:
            notebook, text = read_notebook(path, case=case_id,
                                           raw=read.get(os.path.abspath(path)) if read else None)
        except NotebookError as error:
            problem(error.problem_.problem, f"{folder_rel}/{name}", error.problem_.hint)
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
    if target_index >= len(cells["fixed"]):
        return problem(f"the fixed notebook has {len(cells['fixed'])} code cells but the target is "
                       f"code cell {target_index}",
                       f"{folder_rel}/{layout.notebook_name(case_id, 'fixed')}",
                       "keep the fixed notebook's cells at the reproduced notebook's positions")

    datasets_ = None
    data_dir = entries.get(layout.DATA_DIR)
    if data_dir is not None and is_dir_entry(data_dir):
        metadata = layout.metadata_files(root, case_id)
        if metadata:
            datasets_ = _datasets_from_metadata(Path(root), case_id, metadata, absent, problems)
            if problems:
                return CaseResult(case_id, None, problems, absent)
    else:
        absent.append("input data")

    try:
        provenance = record_field(read_provenance(root, case_id))
    except JunoBenchError as error:
        return problem(error.problem_.problem, f"{folder_rel}/{layout.PROVENANCE_FILE}", error.problem_.hint)
    crash = cells["reproduced"][target_index].error
    assert crash is not None
    library = vocab.library_of(case_id)
    needs = requirements_of((c.source for version in cells.values() for c in version),
                            env or snapshot_environment(root),
                            local=local_modules(folder, entries.values()))
    record = {
        "case_id": case_id,
        "library": library,
        "library_label": vocab.library_label(library),
        "exception": crash.ename,
        "evalue": crash.evalue,
        "traceback": list(crash.traceback),
        "crash_line": crash.crash_line,
        "original": texts["original"],
        "reproduced": texts["reproduced"],
        "fixed": texts["fixed"],
        "target_cell_index": target_index,
        "execution_order": {version: execution_runs(cells[version], target_index)
                            for version in vocab.EVALUATED_VERSIONS},
        "datasets": datasets_,
        "requirements": needs.requirements,
        "provenance": provenance,
    }
    return CaseResult(case_id, record, problems, absent, needs.unpinned)


def table_fields(row: DescRow, diagnoses: dict[str, str]) -> dict[str, Any]:
    """The fields of a case's record that the tables give (see :data:`TABLE_FIELDS`)."""
    return {name: values[0] for name, values in table_columns([row], diagnoses).items()}


def table_columns(rows: Sequence[DescRow], diagnoses: dict[str, str]) -> dict[str, list[Any]]:
    """:func:`table_fields` of several rows, field by field (no dict per row)."""
    columns = {name: [row.fields.get(name) for row in rows] for name in TABLE_FIELDS if name != "diagnosis"}
    columns["diagnosis"] = [diagnoses.get(vocab.instance_id(row.case_id, "reproduced")) for row in rows]
    return {name: columns[name] for name in TABLE_FIELDS}


def table_datasets(row: DescRow) -> list[dict[str, Any]]:
    """A case's input datasets as the table's ``Dataset*`` columns describe them (no files)."""
    return [{"name": None, **d, "modifications": [], "files": []} for d in row.datasets]


def complete_record(folder_record: dict[str, Any], row: DescRow, diagnoses: dict[str, str]) -> dict[str, Any]:
    """The whole ``cases`` record: the folder's fields joined with the table's, each run
    of its execution orders a dict."""
    record = {**folder_record, **table_fields(row, diagnoses)}
    if record["datasets"] is None:
        record["datasets"] = table_datasets(row)
    record["execution_order"] = {version: [dict(zip(RUN_FIELDS, run, strict=True)) for run in runs]
                                 for version, runs in folder_record["execution_order"].items()}
    return record


def _datasets_from_metadata(root: Path, case_id: str, files: list[Path], absent: list[str],
                            problems: list[Problem]) -> list[dict[str, Any]]:
    """Input datasets described by metadata ``files``; data files absent on disk are left out."""
    out = []
    data = layout.data_dir(root, case_id)
    missing = False
    for path in files:
        if path.is_symlink() and not is_within(path, link_root(root)):
            problems.append(Problem("a link out of the snapshot", layout.relative(root, path), case_id,
                                    _LINK_HINT))
            continue
        try:
            meta = read_metadata(path, case=case_id)
        except JunoBenchError as error:
            problems.append(Problem(error.problem_.problem, layout.relative(root, path), case_id,
                                    error.problem_.hint))
            continue
        present = [f for f in meta["files"] if listed_file_present(data, f)]
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

