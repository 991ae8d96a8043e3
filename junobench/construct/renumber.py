"""Close the gaps in a library's case numbering: ``torch_1, torch_3, torch_7`` become
``torch_1, torch_2, torch_3``, in the same order.

Folders, the notebooks named after the case, the ``nb_name`` of ``benchmark_desc.xlsx``
and the ``instance`` of the diagnosis table are renamed together, committed through one
journal (:mod:`~junobench.construct.transaction`): a run killed half-way is finished by
the next editing command. Which published ids changed is not recorded here: a case keeps
its identity through its eid or its code (:func:`junobench.hub.changes.match_cases`), and
``junobench release`` records the renames and removals of published ids in the
release's ``renamed_cases.json`` (so that ids never published, such as a case added
and renumbered since, do not appear there).

>>> plan_renumbering(["torch_1", "torch_3", "torch_7", "NBspecific_2"])
[('NBspecific_2', 'NBspecific_1'), ('torch_3', 'torch_2'), ('torch_7', 'torch_3')]
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from junobench import vocab
from junobench.construct import transaction
from junobench.construct.add_case import case_ids
from junobench.data import layout
from junobench.data.tables import snapshot_table
from junobench.errors import JunoBenchError


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
    for old, _ in plan:
        folder = layout.case_dir(root, old)
        if folder.is_symlink():  # its notebooks would be renamed where the link points
            raise JunoBenchError("the case folder is a link", file=folder, case=old,
                                 hint="inspect the snapshot; links are never followed or renamed")
    mapping = dict(plan)
    with transaction.preparing(root) as prepared:
        if (root / layout.DESC_TABLE).is_file():
            desc = snapshot_table(root, layout.DESC_TABLE)
            prepared.table(layout.DESC_TABLE, [_renamed(r, "nb_name", mapping.get) for r in desc.records()],
                           desc.columns)
        if (root / layout.DIAGNOSIS_TABLE).is_file():
            diag = snapshot_table(root, layout.DIAGNOSIS_TABLE)
            prepared.table(layout.DIAGNOSIS_TABLE, [_renamed(r, "instance", lambda i: _instance(i, mapping))
                                                    for r in diag.records()], diag.columns)
        moves = []
        bench = layout.BENCHMARK_DIR
        for old, new in plan:
            moves.append((f"{bench}/{old}", f"{bench}/{new}"))
            for version in vocab.VERSIONS:
                moves.append((f"{bench}/{new}/{layout.notebook_name(old, version)}",
                              f"{bench}/{new}/{layout.notebook_name(new, version)}"))
        prepared.commit(moves, "renumber")
    return plan


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
