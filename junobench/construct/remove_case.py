"""Remove a case from a snapshot: its folder, its row of ``benchmark_desc.xlsx`` and its
rows of the diagnosis table, at once.

The new tables are written beside the old ones and the folder is moved out of
``benchmark/`` into a staging folder, all through one journal
(:mod:`~junobench.construct.transaction`): a run killed half-way is finished by the next
editing command, and the snapshot never keeps half a case. The gap left in the
library's numbering stays until ``construct renumber`` closes it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from junobench import vocab
from junobench.construct import transaction
from junobench.data import layout
from junobench.data.tables import snapshot_table
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
    return remove_cases(snapshot, [case_id])[0]


def remove_cases(snapshot: str | Path, case_ids: Sequence[str]) -> list[Removed]:
    """Remove the folders and rows of ``case_ids`` together, in one edit: every id is
    checked first (an id the snapshot has neither a folder nor a row of refuses them all)."""
    root = transaction.editable_root(snapshot)
    with transaction.editing(root):
        return _remove(root, list(dict.fromkeys(case_ids)))


def _remove(root: Path, case_ids: list[str]) -> list[Removed]:
    if not case_ids:
        raise JunoBenchError("no case to remove", hint="name the cases, e.g. pandas_2")
    folders = {}
    for case_id in case_ids:
        folder = layout.case_dir(root, case_id)  # refuses what is not a case id
        if folder.is_symlink():
            raise JunoBenchError("the case folder is a link", file=folder, case=case_id,
                                 hint="inspect the snapshot; links are never followed or removed")
        folders[case_id] = folder.is_dir()
    wanted = set(case_ids)
    desc = snapshot_table(root, layout.DESC_TABLE)
    desc.require(["nb_name"], hint="the case table of a snapshot")
    kept = [r for r in desc.records() if _text(r.get("nb_name")) not in wanted]
    desc_counts = Counter(_text(r.get("nb_name")) for r in desc.records())
    diag_path = root / layout.DIAGNOSIS_TABLE
    diag_kept: list[dict[str, Any]] = []
    diag_counts: Counter[str | None] = Counter()
    diag_columns: list[str] = []
    if diag_path.is_file():
        diag = snapshot_table(root, layout.DIAGNOSIS_TABLE)
        diag_columns = list(diag.columns)
        diag_kept = [r for r in diag.records() if _case_of(r.get("instance")) not in wanted]
        diag_counts = Counter(_case_of(r.get("instance")) for r in diag.records())
    absent = [c for c in case_ids if not folders[c] and not desc_counts[c] and not diag_counts[c]]
    if absent:
        raise JunoBenchError(f"no case {', '.join(map(repr, absent))} in this snapshot", file=root, case=absent[0],
                             hint="nothing was removed; list cases with `junobench ls --source SNAPSHOT`")
    desc_gone = len(desc.rows) - len(kept)
    diag_gone = sum(diag_counts[c] for c in case_ids)
    with transaction.preparing(root) as prepared:
        if desc_gone:
            prepared.table(layout.DESC_TABLE, kept, desc.columns)
        if diag_gone:
            prepared.table(layout.DIAGNOSIS_TABLE, diag_kept, diag_columns)
        moves = [(f"{layout.BENCHMARK_DIR}/{case_id}", f"{prepared.staging.name}/{case_id}")
                 for case_id in case_ids if folders[case_id]]
        prepared.commit(moves, f"remove-case {' '.join(case_ids)}")
    return [Removed(c, folders[c], desc_counts[c], diag_counts[c]) for c in case_ids]


def _text(value: Any) -> str:
    return str(value).strip() if value is not None else ""


def _case_of(instance: Any) -> str | None:
    try:
        return vocab.split_instance(_text(instance))[0]
    except ValueError:
        return None
