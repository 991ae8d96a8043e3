"""Remove a case from a snapshot: its folder, its row of ``benchmark_desc.xlsx`` and its
rows of the diagnosis table, at once.

The new tables are written beside the old ones and the folder is moved out of
``benchmark/`` into a staging folder, all through one journal
(:mod:`~junobench.construct.transaction`): a run killed half-way is finished by the next
editing command, and the snapshot never keeps half a case. The gap left in the
library's numbering stays until ``construct renumber`` closes it.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from junobench import vocab
from junobench.construct import transaction
from junobench.data import layout
from junobench.data.tables import read_table, write_table
from junobench.errors import JunoBenchError


@dataclass
class Removed:
    """What :func:`remove_case` removed: the folder (when there was one) and table rows."""

    case_id: str
    folder: bool
    desc_rows: int
    diagnosis_rows: int


def remove_case(snapshot: str | Path, case_id: str) -> Removed:
    """Remove ``case_id``'s folder and rows (see the module docstring). A case the snapshot
    has neither a folder nor a row of is an error."""
    root = transaction.editable_root(snapshot)
    with transaction.editing(root):
        return _remove(root, case_id)


def _remove(root: Path, case_id: str) -> Removed:
    folder = layout.case_dir(root, case_id)  # refuses what is not a case id
    has_folder = folder.is_dir() and not folder.is_symlink()
    if folder.is_symlink():
        raise JunoBenchError("the case folder is a link", file=folder, case=case_id,
                             hint="inspect the snapshot; links are never followed or removed")
    desc_path = root / layout.DESC_TABLE
    desc = read_table(desc_path)
    desc.require(["nb_name"], hint="the case table of a snapshot")
    kept = [r for r in desc.records() if _text(r.get("nb_name")) != case_id]
    desc_gone = len(desc.rows) - len(kept)
    diag_path = root / layout.DIAGNOSIS_TABLE
    diag_kept: list[dict[str, Any]] = []
    diag_gone = 0
    diag_columns: list[str] = []
    if diag_path.is_file():
        diag = read_table(diag_path)
        diag_columns = list(diag.columns)
        diag_kept = [r for r in diag.records() if _case_of(r.get("instance")) != case_id]
        diag_gone = len(diag.rows) - len(diag_kept)
    if not has_folder and not desc_gone and not diag_gone:
        raise JunoBenchError(f"no case {case_id!r} in this snapshot", file=root, case=case_id,
                             hint="list cases with `junobench ls --source SNAPSHOT`")
    staging = transaction.staging_dir(root)
    replaces = []
    try:
        if desc_gone:
            tmp = transaction.temporary_beside(desc_path,
                                               lambda p: write_table(p, kept, desc.columns))
            replaces.append((tmp.name, layout.DESC_TABLE))
        if diag_gone:
            tmp = transaction.temporary_beside(
                diag_path, lambda p: write_table(p, diag_kept, diag_columns))
            replaces.append((tmp.name, layout.DIAGNOSIS_TABLE))
        moves = [(f"{layout.BENCHMARK_DIR}/{case_id}", f"{staging.name}/{case_id}")] \
            if has_folder else []
        transaction.commit(root, transaction.Edit(moves=moves, replaces=replaces,
                                                  cleanup=[staging.name],
                                                  what=f"remove-case {case_id}"))
    except BaseException:
        if (root / transaction.JOURNAL).exists():
            raise  # committed in part: the next editing command finishes it
        shutil.rmtree(staging, ignore_errors=True)
        for name, _ in replaces:
            (root / name).unlink(missing_ok=True)
        raise
    return Removed(case_id, has_folder, desc_gone, diag_gone)


def _text(value: Any) -> str:
    return str(value).strip() if value is not None else ""


def _case_of(instance: Any) -> str | None:
    try:
        return vocab.split_instance(_text(instance))[0]
    except ValueError:
        return None
