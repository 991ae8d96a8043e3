"""``junobench validate SNAPSHOT``: are a snapshot's tables and dataset metadata files sound?

Checks, and reports every problem found at once (none stops the others):

- ``benchmark_desc.xlsx``: present, readable, with the required columns
  (:data:`junobench.data.tables.DESC_REQUIRED`), no empty or repeated case id;
- ``ground_truth_crash_prediction.xlsx`` (when present): readable, with ``instance`` and
  ``diagnosis``;
- every ``benchmark/<case>/data/<name>.metadata.json``: valid JSON that follows
  ``junobench/schemas/dataset_metadata.schema.json``, and every file it lists present
  under the case's ``data/`` folder.

Warnings (:func:`validation_warnings`; errors with ``strict``): conflicting duplicate
rows of the diagnosis table, and reproduced notebooks whose exception is not the table's
``ename``.

>>> problems = validate("sample")   # doctest: +SKIP
>>> print("\\n".join(map(str, problems)) or "valid")   # doctest: +SKIP
"""

from __future__ import annotations

import os
from pathlib import Path

from junobench.data import layout
from junobench.data.metadata import load_metadata_json, validate_metadata
from junobench.data.notebook import read_notebook
from junobench.data.tables import DESC_REQUIRED, DIAGNOSIS_REQUIRED, read_desc, read_table
from junobench.errors import JunoBenchError, Problem
from junobench.vocab import is_case_id, split_instance


def validate(snapshot: str | Path, *, strict: bool = False) -> list[Problem]:
    """Every problem of the snapshot's tables and metadata files (empty when valid); with
    ``strict``, the :func:`validation_warnings` count as problems too."""
    root = snapshot_root(snapshot)
    problems: list[Problem] = []
    _check_desc(root, problems)
    _check_diagnoses(root, problems)
    for path in metadata_files(root):
        _check_metadata(root, path, problems)
    if strict:
        problems += validation_warnings(root)
    return problems


def validation_warnings(snapshot: str | Path) -> list[Problem]:
    """What is suspicious but does not stop a build: instances the diagnosis table gives
    different diagnoses (the loader keeps the last), and reproduced notebooks whose
    crash is not the exception class the case table records (``ename``, compared without
    case, as the published table writes it in lower case)."""
    root = snapshot_root(snapshot)
    found: list[Problem] = []
    for instance, rows in conflicting_diagnoses(root).items():
        found.append(Problem(f"instance {instance!r} has different diagnoses in rows "
                             f"{', '.join(map(str, rows))} (the last one is used)",
                             layout.DIAGNOSIS_TABLE, _case_of(instance),
                             "keep one row per notebook"))
    found += _exception_mismatches(root)
    return found


def conflicting_diagnoses(root: str | Path) -> dict[str, list[int]]:
    """Instances with two or more rows of different diagnosis text → their row numbers."""
    path = Path(root) / layout.DIAGNOSIS_TABLE
    if not path.is_file():
        return {}
    try:
        table = read_table(path, columns=DIAGNOSIS_REQUIRED)
    except JunoBenchError:
        return {}  # reported as a problem
    if table.columns != list(DIAGNOSIS_REQUIRED):
        return {}
    rows: dict[str, list[tuple[int, str]]] = {}
    for number, (instance, diagnosis) in enumerate(table.rows, start=2):
        if instance is not None:
            text = " ".join(str(diagnosis).split()) if diagnosis is not None else ""
            rows.setdefault(str(instance).strip(), []).append((number, text))
    return {instance: [n for n, _ in found] for instance, found in rows.items()
            if len({text for _, text in found}) > 1}


def _exception_mismatches(root: Path) -> list[Problem]:
    try:
        rows, _ = read_desc(root)
    except JunoBenchError:
        return []  # reported as a problem
    found = []
    for row in rows:
        expected = row.fields.get("ename")
        if not expected or not is_case_id(row.case_id):
            continue
        path = layout.notebook_path(root, row.case_id, "reproduced")
        try:
            notebook, _ = read_notebook(path, case=row.case_id)
        except JunoBenchError:
            continue  # the build reports it
        target = notebook.target_index
        error = notebook.code_cells[target].error if target is not None else None
        if error is None or not error.ename:
            continue
        if error.ename.rsplit(".", 1)[-1].lower() != expected.rsplit(".", 1)[-1].lower():
            found.append(Problem(f"the reproduced notebook crashes with {error.ename}, but "
                                 f"{layout.DESC_TABLE} records {expected!r} (ename)",
                                 layout.relative(root, path), row.case_id,
                                 "check which exception the case is about, and fix the table "
                                 "or the notebook"))
    return found


def _case_of(instance: str) -> str | None:
    try:
        return split_instance(instance)[0]
    except ValueError:
        return None


def metadata_files(root: Path) -> list[Path]:
    """Every dataset metadata file of every case folder, sorted."""
    folder = layout.benchmark_dir(root)
    if not folder.is_dir():
        return []
    return [p for case in sorted(folder.iterdir()) if case.is_dir()
            for p in layout.metadata_files(root, case.name)]


def snapshot_root(snapshot: str | Path) -> Path:
    if str(snapshot) == "sample":
        from junobench.data.snapshot import resolve

        return Path(resolve("sample"))
    root = Path(snapshot)
    if not root.is_dir():
        raise JunoBenchError("no such snapshot directory", file=root,
                             hint="pass a folder in the published layout, or 'sample'")
    return root


def _check_desc(root: Path, problems: list[Problem]) -> None:
    path = root / layout.DESC_TABLE
    if not os.path.lexists(path):
        problems.append(Problem("the case table is missing", layout.DESC_TABLE,
                                hint=f"a snapshot holds {layout.DESC_TABLE} beside benchmark/"))
        return
    try:
        table = read_table(path)
    except JunoBenchError as error:
        problems.append(Problem(error.problem_.problem, layout.DESC_TABLE, hint=error.problem_.hint))
        return
    missing = [c for c in DESC_REQUIRED if c not in table.columns]
    if missing:
        problems.append(Problem(f"missing required column(s) {', '.join(map(repr, missing))}",
                                layout.DESC_TABLE,
                                hint="use the published columns of benchmark_desc.xlsx"))
        return
    _, row_problems = read_desc(root)
    problems.extend(row_problems)


def _check_diagnoses(root: Path, problems: list[Problem]) -> None:
    path = root / layout.DIAGNOSIS_TABLE
    if not os.path.lexists(path):
        return
    try:
        table = read_table(path)
    except JunoBenchError as error:
        problems.append(Problem(error.problem_.problem, layout.DIAGNOSIS_TABLE,
                                hint=error.problem_.hint))
        return
    missing = [c for c in DIAGNOSIS_REQUIRED if c not in table.columns]
    if missing:
        problems.append(Problem(f"missing required column(s) {', '.join(map(repr, missing))}",
                                layout.DIAGNOSIS_TABLE,
                                hint="the diagnosis table has columns instance and diagnosis"))


def _check_metadata(root: Path, path: Path, problems: list[Problem]) -> None:
    name = layout.relative(root, path)
    case = path.parent.parent.name
    hint = "see junobench/schemas/dataset_metadata.schema.json"
    try:
        data = load_metadata_json(path, case=case)
    except JunoBenchError as error:
        problems.append(Problem(error.problem_.problem, name, case, hint))
        return
    schema_problems = validate_metadata(data)
    problems.extend(Problem(p, name, case, hint) for p in schema_problems)
    files = data.get("files") if isinstance(data, dict) else None
    if schema_problems or not isinstance(files, list):
        return
    data_dir = path.parent
    for listed in files:
        if not (data_dir / listed).exists():
            problems.append(Problem(f"lists {listed!r}, which is not in data/", name, case,
                                    "add the file or remove it from 'files'"))
