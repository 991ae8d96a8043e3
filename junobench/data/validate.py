"""``junobench validate SNAPSHOT``: are a snapshot's tables and dataset metadata files sound?

Checks, and reports every problem found at once (none stops the others):

- ``benchmark_desc.xlsx``: present, readable, with the required columns
  (:data:`junobench.data.tables.DESC_REQUIRED`), no empty or repeated case id;
- ``ground_truth_crash_prediction.xlsx`` (when present): readable, with ``instance`` and
  ``diagnosis``;
- every ``benchmark/<case>/data/<name>.metadata.json``: valid JSON that follows
  ``junobench/schemas/dataset_metadata.schema.json``, and every file it lists present
  under the case's ``data/`` folder.

>>> problems = validate("sample")
>>> print("\\n".join(map(str, problems)) or "valid")
valid
"""

from __future__ import annotations

import json
from pathlib import Path

from junobench.data import layout
from junobench.data.metadata import validate_metadata
from junobench.data.tables import DESC_REQUIRED, DIAGNOSIS_REQUIRED, read_desc, read_table
from junobench.errors import JunoBenchError, Problem


def validate(snapshot: str | Path) -> list[Problem]:
    """Every problem of the snapshot's tables and metadata files (empty when valid)."""
    root = snapshot_root(snapshot)
    problems: list[Problem] = []
    _check_desc(root, problems)
    _check_diagnoses(root, problems)
    for path in metadata_files(root):
        _check_metadata(root, path, problems)
    return problems


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
    if not path.is_file():
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
    if not path.is_file():
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
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        problems.append(Problem(f"not valid JSON ({error})", name, case, hint))
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
