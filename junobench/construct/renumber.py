"""Close the gaps in a library's case numbering: ``torch_1, torch_3, torch_7`` become
``torch_1, torch_2, torch_3``, in the same order.

Folders, the notebooks named after the case, the ``nb_name`` of ``benchmark_desc.xlsx``
and the ``instance`` of the diagnosis table are renamed together, and the map appended to
the snapshot's ``renamed_cases.json`` (exported with the tables, so that a published id
can be followed), committed through one journal (:mod:`~junobench.construct.transaction`):
a run killed half-way is finished by the next editing command.

>>> plan_renumbering(["torch_1", "torch_3", "torch_7", "NBspecific_2"])
[('NBspecific_2', 'NBspecific_1'), ('torch_3', 'torch_2'), ('torch_7', 'torch_3')]
"""

from __future__ import annotations

import datetime
import json
import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from junobench import vocab
from junobench.construct import provenance, transaction
from junobench.construct.add_case import case_ids
from junobench.data import layout
from junobench.data.tables import read_table, write_table
from junobench.errors import JunoBenchError
from junobench.safety.paths import check_not_linked_out, read_regular


def plan_renumbering(ids: Iterable[str], libraries: Sequence[str] | None = None
                     ) -> list[tuple[str, str]]:
    """``(old, new)`` pairs that number each library's cases 1, 2, … in their order; in an
    order where every new id is free when its turn comes."""
    by_library: dict[str, list[int]] = {}
    for case_id in ids:
        if vocab.is_case_id(case_id):
            by_library.setdefault(vocab.library_of(case_id), []).append(
                int(case_id.rpartition("_")[2]))
    plan = []
    for library in sorted(by_library):
        if libraries is not None and library not in libraries:
            continue
        for new, old in enumerate(sorted(set(by_library[library])), start=1):
            if old != new:
                plan.append((f"{library}_{old}", f"{library}_{new}"))
    return plan


def renumber(snapshot: str | Path, *, libraries: Sequence[str] | None = None,
             dry_run: bool = False) -> list[tuple[str, str]]:
    """Renumber the snapshot's cases (those of ``libraries``, or all); returns the plan.
    With ``dry_run`` nothing is changed."""
    root = transaction.editable_root(snapshot)
    if dry_run:
        return plan_renumbering(case_ids(root), libraries)
    with transaction.editing(root):
        return _renumber(root, libraries)


def _renumber(root: Path, libraries: Sequence[str] | None) -> list[tuple[str, str]]:
    plan = plan_renumbering(case_ids(root), libraries)
    if not plan:
        return plan
    entries = renamed_cases(root)  # read first: an unreadable record stops before any write
    mapping = dict(plan)
    replaces = []
    desc_path = root / layout.DESC_TABLE
    if desc_path.is_file():
        desc = read_table(desc_path)
        rows = [_renamed(r, "nb_name", mapping.get) for r in desc.records()]
        tmp = transaction.temporary_beside(desc_path, lambda p: write_table(p, rows, desc.columns))
        replaces.append((tmp.name, layout.DESC_TABLE))
    diag_path = root / layout.DIAGNOSIS_TABLE
    if diag_path.is_file():
        diag = read_table(diag_path)
        diag_rows = [_renamed(r, "instance", lambda i: _instance(i, mapping))
                     for r in diag.records()]
        tmp = transaction.temporary_beside(
            diag_path, lambda p: write_table(p, diag_rows, diag.columns))
        replaces.append((tmp.name, layout.DIAGNOSIS_TABLE))
    entries.append({"when": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
                    "tool": provenance.tool("renumber"), "renamed": dict(plan)})
    text = json.dumps({"renumbered": entries}, indent=1, ensure_ascii=False) + "\n"
    tmp = transaction.temporary_beside(root / layout.RENAMED_CASES,
                                       lambda p: _write_text(p, text))
    replaces.append((tmp.name, layout.RENAMED_CASES))
    moves = []
    bench = layout.BENCHMARK_DIR
    for old, new in plan:
        moves.append((f"{bench}/{old}", f"{bench}/{new}"))
        for version in vocab.VERSIONS:
            moves.append((f"{bench}/{new}/{layout.notebook_name(old, version)}",
                          f"{bench}/{new}/{layout.notebook_name(new, version)}"))
    try:
        transaction.commit(root, transaction.Edit(moves=moves, replaces=replaces,
                                                  what="renumber"))
    except BaseException:
        if not (root / transaction.JOURNAL).exists():
            for tmp_name, _ in replaces:
                (root / tmp_name).unlink(missing_ok=True)
        raise
    return plan


def renamed_cases(root: str | Path) -> list[dict[str, Any]]:
    """The renumberings recorded in the snapshot's :data:`~junobench.data.layout.RENAMED_CASES`
    (``{"renumbered": [{"when", "tool", "renamed": {old: new}}, …]}``, oldest first); empty
    when there is none."""
    path = Path(root) / layout.RENAMED_CASES
    if not os.path.lexists(path):
        return []
    check_not_linked_out(path, root)
    try:
        data = json.loads(read_regular(path, limit=16 << 20).decode("utf-8"))
        entries = data["renumbered"]
        if not isinstance(entries, list) or not all(
                isinstance(e, dict) and isinstance(e.get("renamed"), dict) for e in entries):
            raise TypeError("'renumbered' is not a list of {'renamed': {old: new}}")
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise JunoBenchError(f"the record of renamed cases cannot be read ({error})", file=path,
                             hint="restore it from the snapshot's history; nothing was changed"
                             ) from None
    return entries


def _write_text(path: Path, text: str) -> None:
    path.write_text(text, encoding="utf-8")


def _renamed(row: dict[str, Any], column: str, rename: Any) -> dict[str, Any]:
    value = row.get(column)
    new = rename(str(value)) if value is not None else None
    return {**row, column: new} if new else row


def _instance(instance: str, mapping: dict[str, str]) -> str | None:
    try:
        case_id, version = vocab.split_instance(instance)
    except ValueError:
        return None
    return vocab.instance_id(mapping[case_id], version) if case_id in mapping else None
