"""What to run for each case: read from a snapshot, never written to it.

A :class:`CaseSpec` holds, for one case, the reproduced and fixed execution orders
(:func:`junobench.data.notebook.execution_order`), the target cell, the recorded exception
class, and whether the case's input data is in the snapshot. Problems that make a case
impossible to run (an unreadable notebook, no target) are kept on the spec so that the
other cases still run and this one is reported as failed.

>>> from junobench.data.snapshot import sample_path
>>> specs = case_specs(sample_path(), ["pandas_1"])
>>> specs[0].expected_exception
'KeyError'
"""

from __future__ import annotations

import difflib
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from junobench import vocab
from junobench.data import layout
from junobench.data.filters import filter_rows, normalise_filters
from junobench.data.metadata import read_metadata
from junobench.data.notebook import CodeCell, Step, execution_order, find_target, read_notebook
from junobench.data.tables import DescRow, read_desc
from junobench.envs.environment import snapshot_environment
from junobench.envs.requirements import local_modules, requirements_of
from junobench.errors import JunoBenchError

#: Reason given for a case whose input data is absent.
DATA_ABSENT = "skipped: input data not in snapshot"


@dataclass(frozen=True)
class CaseSpec:
    """One case to verify. ``problem`` is set when it cannot run at all."""

    case_id: str
    folder: Path
    target: int | None = None
    expected_exception: str | None = None
    orders: dict[str, tuple[Step, ...]] = field(default_factory=dict)
    data_absent: bool = False
    problem: str | None = None
    note: str | None = None
    requirements: tuple[str, ...] = ()

    @property
    def runnable(self) -> bool:
        return self.problem is None and not self.data_absent


def case_specs(
    root: str | Path,
    case_ids: Sequence[str] | None = None,
    *,
    filters: Mapping[str, str | Iterable[str] | None] | None = None,
    present: Collection[str] | None = None,
) -> list[CaseSpec]:
    """Specs of the snapshot's cases (table order), or of ``case_ids`` (given order).

    ``filters`` are the filter keywords of :func:`junobench.load` (``library``,
    ``root_cause``, ``crash_type``, ``pipeline_stage``, ``origin``) → a value or a list.
    ``present`` lists the snapshot's files (root-relative, ``/``-separated) when its input
    data is not on this disk but elsewhere (a Hub repo whose workers fetch their cases):
    whether a case's data is there is then read from it. Unknown case ids raise
    :class:`JunoBenchError`.
    """
    root = Path(root)
    rows, _ = read_desc(root)
    by_id = {row.case_id: row for row in rows}
    if case_ids:
        unknown = [c for c in case_ids if c not in by_id]
        if unknown:
            close = difflib.get_close_matches(unknown[0], list(by_id), n=3)
            raise JunoBenchError(
                f"no case {', '.join(map(repr, unknown))} in this snapshot",
                file=root / layout.DESC_TABLE, case=unknown[0],
                hint=f"did you mean {', '.join(close)}?" if close else "list cases with `junobench ls`")
        rows = [by_id[c] for c in dict.fromkeys(case_ids)]
    if filters:
        criteria = normalise_filters(filters)
        labels = [_labels(row) for row in rows]
        kept = {id(fields) for fields in filter_rows(labels, criteria)}
        rows = [row for row, fields in zip(rows, labels, strict=True) if id(fields) in kept]
    listed = None if present is None else frozenset(present)
    return [case_spec(root, row, listed) for row in rows]


def _labels(row: DescRow) -> dict[str, object]:
    """The row's label fields as records have them (``library`` from the case id)."""
    library = vocab.library_of(row.case_id) if vocab.is_case_id(row.case_id) else None
    return {**row.fields, "library": library}


def case_spec(root: str | Path, row: DescRow, present: Collection[str] | None = None) -> CaseSpec:
    """The spec of one case of the table (problems recorded, not raised); ``present`` as in
    :func:`case_specs`."""
    root = Path(root)
    case_id = row.case_id
    if not vocab.is_case_id(case_id):
        return CaseSpec(case_id, layout.benchmark_dir(root), problem=f"case id {case_id!r} is not "
                        "of the form <library>_<number>")
    folder = layout.case_dir(root, case_id)
    if not folder.is_dir():
        return CaseSpec(case_id, folder, problem=f"case folder {layout.relative(root, folder)} "
                        "is missing")
    cells: dict[str, tuple[CodeCell, ...]] = {}
    for version in vocab.EVALUATED_VERSIONS:
        path = layout.notebook_path(root, case_id, version)
        if not path.is_file():
            return CaseSpec(case_id, folder, problem=f"{version} notebook "
                            f"{layout.relative(root, path)} is missing")
        try:
            notebook, _ = read_notebook(path, case=case_id)
        except JunoBenchError as error:
            return CaseSpec(case_id, folder, problem=f"{layout.relative(root, path)}: "
                            f"{error.problem_.problem}")
        cells[version] = notebook.code_cells
    try:
        absent = data_absent(root, row, present)
    except JunoBenchError as error:
        return CaseSpec(case_id, folder, problem=str(error))
    reproduced = cells["reproduced"]
    target = find_target(reproduced)
    note = None
    if target is None:
        # The crash output was removed: fall back to the last cell that ran, and the
        # exception class of the case table.
        counted = [c for c in reproduced if c.execution_count is not None]
        expected = row.fields.get("ename")
        if not counted or not expected:
            return CaseSpec(case_id, folder, data_absent=absent, problem=(
                "the reproduced notebook has no error output, so its target cell and "
                "exception are unknown"))
        target = max(counted, key=lambda c: (c.execution_count, c.index)).index
        note = (f"the reproduced notebook has no error output: target taken as the last "
                f"cell run (code cell {target}), exception from {layout.DESC_TABLE}")
    else:
        crash = reproduced[target].error
        expected = crash.ename if crash is not None and crash.ename else row.fields.get("ename")
        if not expected:
            return CaseSpec(case_id, folder, target=target, data_absent=absent,
                            problem="the recorded exception class is unknown (empty ename)")
    if target >= len(cells["fixed"]):
        return CaseSpec(case_id, folder, target=target, data_absent=absent, problem=(
            f"the fixed notebook has {len(cells['fixed'])} code cells; the target is code "
            f"cell {target}"))
    orders = {v: tuple(execution_order(cells[v], target)) for v in vocab.EVALUATED_VERSIONS}
    needs = requirements_of((c.source for version in cells.values() for c in version),
                            snapshot_environment(root), local=local_modules(folder))
    return CaseSpec(case_id, folder, target, expected, orders, absent, None, note,
                    tuple(needs.requirements))


def data_absent(root: str | Path, row: DescRow, present: Collection[str] | None = None) -> bool:
    """True when the case's input data is not in the snapshot.

    With metadata files, every file they list must exist under ``data/``; without them,
    a case whose table row names datasets needs some file under ``data/``. With
    ``present`` (the snapshot's files, root-relative), existence is read from that list
    rather than the disk. Raises :class:`JunoBenchError` for an invalid metadata file.
    """
    data = layout.data_dir(root, row.case_id)

    def exists(path: Path) -> bool:
        return path.exists() if present is None else layout.relative(root, path) in present

    files = layout.metadata_files(root, row.case_id)
    if files:
        for path in files:
            meta = read_metadata(path, case=row.case_id)
            if any(not exists(data / name) for name in meta["files"]):
                return True
        return False
    if not row.datasets:
        return False
    if present is not None:
        prefix = layout.relative(root, data) + "/"
        return not any(name.startswith(prefix) and not name.endswith(layout.METADATA_SUFFIX)
                       for name in present)
    return not data.is_dir() or not any(
        p.is_file() and not p.name.endswith(layout.METADATA_SUFFIX) for p in data.rglob("*"))
