"""Edit a case of a snapshot: its labels, diagnosis, dataset metadata, a notebook or a data file.

``construct edit CASE`` goes through the same all-or-nothing step as ``add-case``
(:mod:`~junobench.construct.transaction`): the case folder is copied into a staging
folder and edited there, the new tables are written beside the old ones, all is checked
(the case still builds; a changed notebook is compared with the other cases for
near-duplicates), the pair is run again when code or data changed (unless
``verify=False``, which the case's provenance then records as *not verified*), and only
then does one journal swap the new folder and tables in. A refusal leaves the snapshot
byte for byte as it was.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from junobench import vocab
from junobench.construct import provenance, transaction
from junobench.construct.add_case import (
    LABELS,
    LARGE_FILE,
    Progress,
    allowed_similar,
    check_sources,
    near_duplicates,
    similar_entries,
    staged_record,
)
from junobench.construct.pair_check import pair_verification
from junobench.data import layout
from junobench.data import provenance as case_provenance
from junobench.data.metadata import read_metadata, validate_metadata, write_metadata
from junobench.data.tables import snapshot_table
from junobench.errors import JunoBenchError
from junobench.safety.paths import check_no_link_on_the_way, copy_tree

#: Dataset fields ``--set-dataset NAME.FIELD=VALUE`` changes → the table column of its slot.
DATASET_FIELDS: dict[str, str | None] = {"title": "DatasetTitle", "url": "DatasetUrl",
                                         "license": "DatasetLicenseName", "note": None}


@dataclass
class CaseEdit:
    """What to change (None / empty: unchanged)."""

    labels: dict[str, str] = field(default_factory=dict)          # root_cause, crash_type, pipeline_stage, ml_bug
    diagnosis: str | None = None
    datasets: dict[str, dict[str, str]] = field(default_factory=dict)  # name → {field: value}
    notebooks: dict[str, Path] = field(default_factory=dict)      # version → new file
    data: dict[str, list[Path]] = field(default_factory=dict)     # dataset name → files/folders to put in data/

    @property
    def runs_differently(self) -> bool:
        """Whether the change can change what the notebooks do (code or data)."""
        return bool(self.notebooks or self.data)


@dataclass
class Edited:
    """What :func:`edit_case` changed."""

    case_id: str
    changes: list[str]
    checked: str
    warnings: list[str] = field(default_factory=list)


def edit_case(snapshot: str | Path, case_id: str, edit: CaseEdit, *, verify: bool = True,
              env: str | Path | None = None, timeout: float | None = None, allow_new_labels: bool = False,
              allow_similar: bool = False, large_file: int = LARGE_FILE, refuse_large: bool = False,
              progress: Progress | None = None) -> Edited:
    """Apply ``edit`` to the case ``case_id`` of the snapshot (see the module docstring)."""
    root = transaction.editable_root(snapshot)
    with transaction.editing(root):
        return _edit(root, case_id, edit, verify=verify, env=env, timeout=timeout,
                     allow_new_labels=allow_new_labels, allow_similar=allow_similar, large_file=large_file,
                     refuse_large=refuse_large, progress=progress or (lambda _: None))


def _edit(root: Path, case_id: str, edit: CaseEdit, *, verify: bool, env: str | Path | None,
          timeout: float | None, allow_new_labels: bool, allow_similar: bool, large_file: int,
          refuse_large: bool, progress: Progress) -> Edited:
    folder = layout.case_dir(root, case_id)
    if folder.is_symlink() or not folder.is_dir():
        raise JunoBenchError("no such case folder", file=folder, case=case_id,
                             hint="list cases with `junobench ls --source SNAPSHOT`")
    desc_path = root / layout.DESC_TABLE
    desc = snapshot_table(root, layout.DESC_TABLE)
    desc.require(["nb_name"], hint="the case table of a snapshot")
    rows = desc.records()
    index = next((i for i, r in enumerate(rows) if str(r.get("nb_name") or "").strip() == case_id), None)
    if index is None:
        raise JunoBenchError(f"no row of {case_id} in {layout.DESC_TABLE}", file=desc_path, case=case_id)
    changes = _check(edit, allow_new_labels)
    for version, path in edit.notebooks.items():
        check_no_link_on_the_way(path, what=f"the {version} notebook path")
        if not path.is_file():
            raise JunoBenchError("not a regular file", file=path, case=case_id)
    warnings = check_sources(root, edit.data, large_file, refuse=refuse_large)

    with transaction.preparing(root) as prepared:
        staging = prepared.staging
        progress(f"copying {case_id} to edit it")
        new = layout.case_dir(staging, case_id)
        copy_tree(folder, new, case=case_id, display=f"{layout.BENCHMARK_DIR}/{case_id}")
        row, record = _apply(staging, case_id, edit, rows[index])
        similar = []
        if edit.notebooks:
            progress(f"comparing the edited {case_id} with the snapshot's other cases")
            similar = near_duplicates(root, staging, case_id, allow=allow_similar, exclude=case_id)
        recorded = case_provenance.read(root, case_id) or {}
        checked = "the pair was not run again (neither code nor data changed)"
        if edit.runs_differently:
            checked, recorded["verification"] = pair_verification(
                staging, case_id, row, record.get("datasets") or [], step="edit", verify=verify, env=env,
                timeout=timeout, snapshot=root, progress=progress)
        when = case_provenance.now()
        recorded["edited"] = {"when": when, "tool": provenance.tool("edit")}
        recorded["similar"] = [*recorded.get("similar", []), *similar_entries(similar, when)]
        recorded.pop("format", None)
        case_provenance.write(new, recorded)
        prepared.table(layout.DESC_TABLE, [*rows[:index], row, *rows[index + 1:]], desc.columns)
        if edit.diagnosis is not None:
            _diagnosis(prepared, case_id, edit.diagnosis)
        rel = staging.name
        prepared.commit([(f"{layout.BENCHMARK_DIR}/{case_id}", f"{rel}/{case_id}.old"),
                         (f"{rel}/{layout.BENCHMARK_DIR}/{case_id}", f"{layout.BENCHMARK_DIR}/{case_id}")],
                        f"edit {case_id}")
    return Edited(case_id, changes, checked, [*warnings, *allowed_similar(similar)])


def _apply(staging: Path, case_id: str, edit: CaseEdit, row: Mapping[str, Any]
           ) -> tuple[dict[str, Any], dict[str, Any]]:
    """Apply the edit to the case folder copied under ``staging``; the case's new table row
    (its labels, dataset slots and, with a new notebook, its crash) and its staged record."""
    new = layout.case_dir(staging, case_id)
    row = dict(row)
    for version, path in edit.notebooks.items():
        shutil.copyfile(path, new / layout.notebook_name(case_id, version))
    for name, values in edit.datasets.items():
        _set_dataset(new, case_id, name, values, row)
    for name, sources in edit.data.items():
        _put_data(new, case_id, name, sources)
    record = staged_record(staging, case_id, "the edited case", hint="nothing was changed")
    for key, value in edit.labels.items():
        row[LABELS[key][0]] = value
    if edit.notebooks:
        row.update({"ename": str(record["exception"]).lower(), "evalue": record["evalue"],
                    "traceback": repr(list(record["traceback"]))})
    return row, record


def _check(edit: CaseEdit, allow_new_labels: bool) -> list[str]:
    """What the edit changes, in words; a label outside its vocabulary, an unknown field,
    version or an empty change is an error."""
    changes = []
    for key, value in edit.labels.items():
        column, values = LABELS[key]
        if not value.strip() or (not allow_new_labels and value not in values):
            raise JunoBenchError(f"{column} {value!r} is not one of: {', '.join(values)}",
                                 hint="labels use the published vocabulary (--allow-new-labels to extend it)")
        changes.append(f"{column} = {value!r}")
    if edit.diagnosis is not None:
        if not edit.diagnosis.strip():
            raise JunoBenchError("the diagnosis is empty")
        changes.append("diagnosis")
    for name, assigned in edit.datasets.items():
        unknown = [k for k in assigned if k not in DATASET_FIELDS]
        if unknown:
            raise JunoBenchError(f"dataset {name!r}: unknown field {unknown[0]!r}",
                                 hint=f"one of {', '.join(DATASET_FIELDS)}")
        changes += [f"dataset {name} {k}" for k in assigned]
    for version in edit.notebooks:
        if version not in vocab.VERSIONS:
            raise JunoBenchError(f"unknown notebook version {version!r}", hint="original, reproduced or fixed")
        changes.append(f"{version} notebook")
    changes += [f"data of {name}" for name in edit.data]
    if not changes:
        raise JunoBenchError("nothing to change", hint="see `junobench construct edit --help`")
    return changes


def _metadata(case_folder: Path, case_id: str, name: str) -> Path:
    path = case_folder / layout.DATA_DIR / f"{name}{layout.METADATA_SUFFIX}"
    if not path.is_file():
        known = sorted(p.name[: -len(layout.METADATA_SUFFIX)]
                       for p in (case_folder / layout.DATA_DIR).glob(f"*{layout.METADATA_SUFFIX}"))
        raise JunoBenchError(f"no dataset {name!r} in the case", case=case_id,
                             hint=f"its datasets: {', '.join(known) or '(none)'}")
    return path


def _set_dataset(case_folder: Path, case_id: str, name: str, values: Mapping[str, str], row: dict[str, Any]) -> None:
    """Change a dataset's metadata file, and the table slot that names it (same URL or title)."""
    path = _metadata(case_folder, case_id, name)
    meta = read_metadata(path, case=case_id)
    slot = _slot(row, meta)
    for key, value in values.items():
        meta[key] = value or None
        column = DATASET_FIELDS[key]
        if column is not None and slot is not None:
            row[f"{column}_{slot}"] = value or None
    _write_metadata(path, case_id, meta)


def _write_metadata(path: Path, case_id: str, meta: dict[str, Any]) -> None:
    """Write the staged metadata file ``path``; invalid metadata is refused naming the
    case's file in the snapshot (the staged copy is gone once the edit is refused)."""
    problems = validate_metadata(meta)
    if problems:
        raise JunoBenchError("invalid dataset metadata: " + "; ".join(problems), case=case_id,
                             file=f"{layout.BENCHMARK_DIR}/{case_id}/{layout.DATA_DIR}/{path.name}",
                             hint="nothing was changed")
    write_metadata(path, meta)


def _slot(row: Mapping[str, Any], meta: Mapping[str, Any]) -> int | None:
    for slot in range(1, 100):
        title, url = row.get(f"DatasetTitle_{slot}"), row.get(f"DatasetUrl_{slot}")
        if f"DatasetTitle_{slot}" not in row:
            return None
        if (url and url == meta.get("url")) or (title and str(title).strip() == str(meta.get("title") or "").strip()):
            return slot
    return None


def _put_data(case_folder: Path, case_id: str, name: str, sources: Sequence[Path]) -> None:
    """Copy ``sources`` into the case's ``data/`` (replacing files of the same name) and list
    them in the dataset's metadata."""
    path = _metadata(case_folder, case_id, name)
    meta = read_metadata(path, case=case_id)
    data = case_folder / layout.DATA_DIR
    files = set(meta.get("files") or [])
    for source in map(Path, map(os.path.abspath, sources)):
        target = data / source.name
        if target.is_dir() and not target.is_symlink():
            shutil.rmtree(target)
        elif target.exists() or target.is_symlink():
            target.unlink()
        if source.is_dir():
            copy_tree(source, target, display=source)
            files |= {(Path(source.name) / p.relative_to(source)).as_posix()
                      for p in source.rglob("*") if p.is_file()}
        else:
            shutil.copyfile(source, target)
            files.add(source.name)
    meta["files"] = sorted(files)
    _write_metadata(path, case_id, meta)


def _diagnosis(prepared: transaction.Prepared, case_id: str, text: str) -> None:
    table = snapshot_table(prepared.root, layout.DIAGNOSIS_TABLE)
    table.require(["instance", "diagnosis"], hint="the diagnosis table of a snapshot")
    instance = vocab.instance_id(case_id, "reproduced")
    rows = [{**r, "diagnosis": text.strip()} if str(r.get("instance") or "").strip() == instance else r
            for r in table.records()]
    if not any(str(r.get("instance") or "").strip() == instance for r in rows):
        rows.append({"instance": instance, "diagnosis": text.strip(), "detection": True})
    prepared.table(layout.DIAGNOSIS_TABLE, rows, table.columns)


def parse_assignments(items: Sequence[str]) -> dict[str, dict[str, str]]:
    """``NAME.FIELD=VALUE`` items → {name: {field: value}}."""
    out: dict[str, dict[str, str]] = {}
    for item in items:
        target, sep, value = item.partition("=")
        name, dot, key = target.partition(".")
        if not sep or not dot or not name or key not in DATASET_FIELDS:
            raise JunoBenchError(f"--set-dataset {item!r}: expected NAME.FIELD=VALUE with FIELD one of "
                                 f"{', '.join(DATASET_FIELDS)}")
        out.setdefault(name, {})[key] = value.strip()
    return out


def parse_data(items: Sequence[str]) -> dict[str, list[Path]]:
    out: dict[str, list[Path]] = {}
    for item in items:
        name, sep, path = item.partition("=")
        if not sep or not name or not path:
            raise JunoBenchError(f"--data {item!r}: expected NAME=PATH")
        out.setdefault(name, []).append(Path(path))
    return out


def edit_summary(edited: Edited) -> str:
    return f"edited {edited.case_id}: {', '.join(edited.changes)}"

