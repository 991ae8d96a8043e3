"""``junobench validate SNAPSHOT``: is a snapshot whole and consistent?

Checks, and reports every problem found at once (none stops the others):

- ``benchmark_desc.xlsx``: present, readable, with the required columns
  (:data:`junobench.data.tables.DESC_REQUIRED`), no empty or repeated case id;
- ``ground_truth_crash_prediction.xlsx`` (when present): readable, with ``instance`` and
  ``diagnosis``;
- every case of the table: its folder, its reproduced and fixed notebooks (and the
  original when present) exist and parse, the reproduced notebook's target cell (its
  error output) and both execution orders resolve; every folder under ``benchmark/``
  has a table row;
- input datasets: every ``data/<name>.metadata.json`` follows
  ``junobench/schemas/dataset_metadata.schema.json`` and its listed files are under
  ``data/``; the table's datasets (``DatasetTitle_N``/``DatasetUrl_N``/
  ``DatasetLicenseName_N``) and the case's metadata files agree both ways (matched by
  URL, else by title); every dataset has a licence;
- no folder holds more than :data:`MAX_FILES_PER_FOLDER` files (the Hugging Face Hub's
  limit per folder);
- no two cases are one crash (same eid, notebook URL or file name, or a notebook's code:
  :mod:`junobench.data.duplicates`);
- no edit is pending: the journal of an add-case, remove-case or renumber killed half-way
  is reported with the command that finishes it.

Licence policy: every input dataset (table and metadata file) whose licence is unknown
("Unknown", "Other (specified in description)", …) or outside an allow-list
(:class:`junobench.data.licences.LicencePolicy`; by default the open licences of
:data:`junobench.data.licences.OPEN_LICENCES`) is reported, as a warning unless
``licence_policy="error"``. A ``VERSION`` file, when present, must hold a version.

Warnings (reported, not failing; problems with ``strict``): a case without its original
notebook, a case whose ``data/`` folder is absent (its data are not in the snapshot), an
instance the diagnosis table gives different diagnoses (the loader keeps the last), a
reproduced notebook whose crash is not the exception class the case table records
(``ename``, compared without case: the published table writes it in lower case), what an
edit killed before its journal left (staging folders, temporary tables).

>>> problems = validate("sample")
>>> print("\\n".join(map(str, problems)) or "valid")
valid
"""

from __future__ import annotations

import contextlib
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from junobench import vocab
from junobench.data import layout
from junobench.data.cases import parse_case_folder
from junobench.data.licences import LicencePolicy, check_policy_mode
from junobench.data.metadata import listed_file_present, load_metadata_json, validate_metadata
from junobench.data.release_files import dataset_version
from junobench.data.tables import DIAGNOSIS_REQUIRED, DescRow, read_desc, read_table, snapshot_sheet
from junobench.errors import JunoBenchError, Problem
from junobench.safety.paths import require_utf8_path

#: Files one folder may hold: a Hugging Face Hub repository refuses more.
MAX_FILES_PER_FOLDER = 10_000


@dataclass
class Validation:
    """What :func:`check` found: problems (the snapshot is invalid) and warnings."""

    root: Path
    problems: list[Problem] = field(default_factory=list)
    warnings: list[Problem] = field(default_factory=list)
    cases: int = 0
    metadata_files: int = 0

    @property
    def valid(self) -> bool:
        return not self.problems


def validate(snapshot: str | Path, *, strict: bool = False) -> list[Problem]:
    """Every problem of the snapshot (empty when valid); with ``strict``, the warnings too."""
    return check(snapshot, strict=strict).problems


def check(snapshot: str | Path, *, max_files: int = MAX_FILES_PER_FOLDER,
          strict: bool = False, licences: LicencePolicy | None = None,
          licence_policy: str = "warn") -> Validation:
    """Every problem and warning of the snapshot (see the module docstring); with
    ``strict``, every warning is a problem. ``licences`` is the allow-list of input-dataset
    licences (default :meth:`LicencePolicy.default`); ``licence_policy`` (``warn``,
    ``error``, ``off``) says how a licence outside it, or unknown, is reported."""
    check_policy_mode(licence_policy)
    root = snapshot_root(snapshot)
    report = Validation(root)
    rows = _check_desc(root, report.problems)
    _check_diagnoses(root, report.problems)
    _check_duplicate_diagnoses(root, report.warnings)
    metadata = {case: layout.metadata_files(root, case) for case in _case_folders(root)}
    report.metadata_files = sum(map(len, metadata.values()))
    for files in metadata.values():
        for path in files:
            _check_metadata(root, path, report.problems)
    _check_case_collisions(_case_folders(root) + [r.case_id for r in rows or []], report.problems)
    if rows is not None:
        report.cases = len(rows)
        _check_cases(root, rows, metadata, report)
        if licence_policy != "off":
            found = report.problems if licence_policy == "error" else report.warnings
            found.extend(licence_policy_problems(root, rows, metadata, licences or LicencePolicy.default()))
        exact = _check_duplicates(root, rows, report.problems)
        _check_similar(root, rows, exact, report)
    _check_version(root, report.problems)
    _check_unfinished_edit(root, report.problems)
    _check_edit_leftovers(root, report.warnings)
    _check_folder_sizes(root, max_files, report.problems)
    _check_exportable(root, _case_folders(root), report.problems)
    if strict:
        report.problems += report.warnings
        report.warnings = []
    return report


def snapshot_root(snapshot: str | Path) -> Path:
    if str(snapshot) == "sample":
        from junobench.data.snapshot import resolve

        return Path(resolve("sample"))
    root = Path(snapshot)
    if not root.is_dir():
        raise JunoBenchError("no such snapshot directory", file=root,
                             hint="pass a folder in the published layout, or 'sample'")
    return require_utf8_path(root)


def _case_folders(root: Path) -> list[str]:
    folder = layout.benchmark_dir(root)
    if not folder.is_dir() or folder.is_symlink():
        return []
    with os.scandir(folder) as entries:
        return sorted(e.name for e in entries if e.is_dir(follow_symlinks=False))


# --------------------------------------------------------------------------- tables


def _check_desc(root: Path, problems: list[Problem]) -> list[DescRow] | None:
    path = root / layout.DESC_TABLE
    if not os.path.lexists(path):  # a FIFO or such: the reader names it
        problems.append(Problem("the case table is missing", layout.DESC_TABLE,
                                hint=f"a snapshot holds {layout.DESC_TABLE} beside benchmark/"))
        return None
    if not _table_reads(root, layout.DESC_TABLE, problems):
        return None
    rows, row_problems = read_desc(root)
    problems.extend(row_problems)
    return rows


def _check_diagnoses(root: Path, problems: list[Problem]) -> None:
    if os.path.lexists(root / layout.DIAGNOSIS_TABLE):
        _table_reads(root, layout.DIAGNOSIS_TABLE, problems)


def _table_reads(root: Path, name: str, problems: list[Problem]) -> bool:
    """Whether the snapshot's table ``name`` reads, with its required columns (else its
    problem is added)."""
    try:
        snapshot_sheet(root, name)
    except JunoBenchError as error:
        problems.append(Problem(error.problem_.problem, name, hint=error.problem_.hint))
        return False
    return True


def _check_duplicate_diagnoses(root: Path, warnings: list[Problem]) -> None:
    for instance, rows in conflicting_diagnoses(root).items():
        warnings.append(Problem(f"instance {instance!r} has different diagnoses in rows "
                                f"{', '.join(map(str, rows))} (the last one is used)",
                                layout.DIAGNOSIS_TABLE, vocab.case_of_instance(instance),
                                "keep one row per notebook"))


def conflicting_diagnoses(root: str | Path) -> dict[str, list[int]]:
    """Instances with two or more rows of different diagnosis text → their row numbers."""
    path = Path(root) / layout.DIAGNOSIS_TABLE
    if not os.path.lexists(path):
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


# --------------------------------------------------------------------------- cases


def _check_cases(root: Path, rows: list[DescRow], metadata: dict[str, list[Path]],
                 report: Validation) -> None:
    listed = {row.case_id for row in rows}
    for case in metadata:
        if case not in listed:
            report.problems.append(Problem(
                f"the case folder has no row in {layout.DESC_TABLE}",
                f"{layout.BENCHMARK_DIR}/{case}", case,
                "add its row (junobench construct add-case) or remove the folder"))
    for row in rows:
        result = parse_case_folder(root, row.case_id)
        # Metadata files are checked on their own (every file, not the case's first problem).
        report.problems.extend(p for p in result.problems
                               if not (p.file or "").endswith(layout.METADATA_SUFFIX))
        if result.record is not None:
            _check_exception(row, result.record, report.warnings)
        if "original notebook" in result.absent:
            report.warnings.append(Problem(
                "the original notebook is not in the snapshot",
                f"{layout.BENCHMARK_DIR}/{row.case_id}/{layout.notebook_name(row.case_id, 'original')}",
                row.case_id))
        if row.case_id in metadata or result.record is not None:
            _check_datasets(root, row, metadata.get(row.case_id, []), report)


def case_collisions(case_ids: list[str]) -> list[list[str]]:
    """Groups of case ids that differ only in case (``Foo_1``, ``foo_1``): one folder on a
    case-insensitive file system (macOS, Windows)."""
    groups: dict[str, set[str]] = {}
    for case_id in case_ids:
        groups.setdefault(case_id.casefold(), set()).add(case_id)
    return [sorted(group) for _, group in sorted(groups.items()) if len(group) > 1]


def _check_case_collisions(case_ids: list[str], problems: list[Problem]) -> None:
    for group in case_collisions(case_ids):
        problems.append(Problem(
            f"case ids {' and '.join(group)} differ only in case: they collide on a "
            "case-insensitive file system", f"{layout.BENCHMARK_DIR}/{group[0]}", group[0],
            "rename all but one (junobench construct renumber)"))


def _check_exception(row: DescRow, record: dict[str, Any], warnings: list[Problem]) -> None:
    """The reproduced notebook crashes with the exception class the table records."""
    expected, found = row.fields.get("ename"), record.get("exception")
    if not expected or not found:
        return
    if found.rsplit(".", 1)[-1].lower() != expected.rsplit(".", 1)[-1].lower():
        warnings.append(Problem(
            f"the reproduced notebook crashes with {found}, but {layout.DESC_TABLE} records "
            f"{expected!r} (ename)",
            f"{layout.BENCHMARK_DIR}/{row.case_id}/{layout.notebook_name(row.case_id, 'reproduced')}",
            row.case_id, "check which exception the case is about, and fix the table or the notebook"))


def _check_datasets(root: Path, row: DescRow, files: list[Path], report: Validation) -> None:
    """The table's datasets and the metadata files agree both ways; licences present."""
    case = row.case_id
    table_file = layout.DESC_TABLE
    named = [(slot, d) for slot, d in enumerate(row.datasets, start=1)
             if not vocab.is_no_data(d.get("title"))]
    for slot, dataset in named:
        if not dataset.get("license"):
            report.problems.append(Problem(
                f"dataset {slot} ({dataset.get('title') or dataset.get('url')}) has no licence",
                table_file, case, f"fill DatasetLicenseName_{slot}"))
    if not layout.data_dir(root, case).is_dir():
        if named:
            report.warnings.append(Problem(
                f"the table names {len(named)} input dataset(s) but the case has no data/ "
                "folder: its data are not in the snapshot",
                f"{layout.BENCHMARK_DIR}/{case}", case))
        return
    described = [(path, _json(path)) for path in files]
    if not all(isinstance(data, dict) for _, data in described):
        return  # an unreadable metadata file is reported already; it may be the missing one
    unmatched = list(described)
    for slot, dataset in named:
        match = next((item for item in unmatched if _same_dataset(dataset, item[1])), None)
        if match is None:
            report.problems.append(Problem(
                f"dataset {slot} of the table ({dataset.get('title') or dataset.get('url')}) "
                "has no metadata file in data/", table_file, case,
                "write data/<name>.metadata.json for it (same URL or title)"))
        else:
            unmatched.remove(match)
    for path, data in unmatched:
        report.problems.append(Problem(
            f"describes {data.get('title')!r}, which is not among the case's datasets in "
            f"{layout.DESC_TABLE}", layout.relative(root, path), case,
            "add it to the DatasetTitle_N/DatasetUrl_N/DatasetLicenseName_N columns or "
            "remove the file"))


def _same_dataset(row: dict[str, Any], metadata: dict[str, Any]) -> bool:
    url, meta_url = _url_key(row.get("url")), _url_key(metadata.get("url"))
    if url and meta_url:
        return url == meta_url
    title = (row.get("title") or "").strip().casefold()
    return bool(title) and title == str(metadata.get("title") or "").strip().casefold()


def _url_key(url: Any) -> str:
    text = str(url or "").strip().rstrip("/").removesuffix("/data")
    return text.split("://", 1)[-1].removeprefix("www.").casefold()


def _json(path: Path) -> Any:
    try:
        return load_metadata_json(path)
    except JunoBenchError:
        return None


def _check_metadata(root: Path, path: Path, problems: list[Problem]) -> None:
    name = layout.relative(root, path)
    case = path.parent.parent.name
    hint = "see junobench/schemas/dataset_metadata.schema.json"
    try:
        data = load_metadata_json(path, case=case)
    except JunoBenchError as error:
        problems.append(Problem(error.problem_.problem, name, case, error.problem_.hint or hint))
        return
    schema_problems = validate_metadata(data)
    problems.extend(Problem(p, name, case, hint) for p in schema_problems)
    files = data.get("files") if isinstance(data, dict) else None
    if schema_problems or not isinstance(files, list):
        return
    data_dir = path.parent
    for listed in files:
        if not listed_file_present(data_dir, listed):
            problems.append(Problem(f"lists {listed!r}, which is not in data/", name, case,
                                    "add the file or remove it from 'files'"))


# --------------------------------------------------------------------------- licences


def licence_policy_problems(root: Path, rows: list[DescRow], metadata: dict[str, list[Path]],
                            policy: LicencePolicy) -> list[Problem]:
    """Every input dataset (table row and metadata file) whose licence is unknown or not in
    ``policy``'s allow-list, once per case, dataset and licence."""
    found: list[Problem] = []
    seen: set[tuple[str, str, str]] = set()

    def report(case: str, title: str, licence: str | None, file: str) -> None:
        verdict = policy.verdict(licence)
        if verdict == "allowed" or (case, title, str(licence)) in seen:
            return
        seen.add((case, title, str(licence)))
        if verdict == "unknown":
            found.append(Problem(
                f"input-dataset licence unknown ({licence or 'none stated'})", file, case,
                f"dataset {title!r}: find the licence on the source's page and record it, or replace "
                "the data with a synthetic stand-in (construct synthetic)"))
        else:
            found.append(Problem(
                f"input-dataset licence {licence!r} is not in the allow-list", file, case,
                f"dataset {title!r}: allow the licence with --allow-licence {_quoted(str(licence))} or "
                "a --licences file, or replace the data (construct synthetic)"))

    for row in rows:
        for dataset in row.datasets:
            title = dataset.get("title")
            if vocab.is_no_data(title) or not dataset.get("license"):
                continue  # no licence at all is a problem of its own
            report(row.case_id, str(title or dataset.get("url")), dataset.get("license"), layout.DESC_TABLE)
    for case, files in metadata.items():
        for path in files:
            data = _json(path)
            if isinstance(data, dict) and isinstance(data.get("license"), str):
                report(case, str(data.get("title") or layout.dataset_name(path)), data["license"],
                       layout.relative(root, path))
    return found


def _quoted(text: str) -> str:
    return f"'{text}'" if re.search(r"[^\w.+-]", text) else text


# --------------------------------------------------------------------------- version


def _check_version(root: Path, problems: list[Problem]) -> None:
    """A ``VERSION`` file, when present, holds a dataset version."""
    try:
        dataset_version(root)
    except JunoBenchError as error:
        problems.append(Problem(error.problem_.problem, layout.VERSION_FILE, hint=error.problem_.hint))


# --------------------------------------------------------------------------- duplicates


def _check_duplicates(root: Path, rows: list[DescRow], problems: list[Problem]) -> set[frozenset[str]]:
    """Two cases that are one crash: same eid, notebook URL or file name, or a notebook's
    code; the pairs found."""
    from junobench.data import duplicates

    pairs = set()
    for found in duplicates.find_duplicates(duplicates.snapshot_keys(root, rows)):
        pairs.add(frozenset((found.case, found.earlier)))
        problems.append(Problem(
            f"the case repeats {found.earlier} (same {found.what})", layout.DESC_TABLE,
            found.case, f"a crash is a case once: remove one (junobench construct remove-case "
                        f"SNAPSHOT {found.case})"))
    return pairs


def _check_similar(root: Path, rows: list[DescRow], exact: set[frozenset[str]], report: Validation) -> None:
    """Near-duplicates (:mod:`junobench.data.similarity`): a problem, or a warning when the
    later case's provenance records that it was allowed (``--allow-similar``)."""
    from junobench.data import provenance, similarity

    ids = list(dict.fromkeys(r.case_id for r in rows if vocab.is_case_id(r.case_id)))
    prints = {case: similarity.folder_prints(root, case) for case in ids}
    for pair in similarity.similar_pairs(prints):
        if frozenset((pair.case, pair.other)) in exact:
            continue  # reported as the same crash already
        allowed = set()
        for case in (pair.case, pair.other):
            with contextlib.suppress(JunoBenchError):  # an unreadable one is reported with its case
                allowed |= {s["case"] for s in (provenance.read(root, case) or {}).get("similar", [])}
        text = f"the case is a near-duplicate of {pair.describe()}"
        if allowed & {pair.case, pair.other}:
            report.warnings.append(Problem(f"{text}, allowed with --allow-similar",
                                           f"{layout.BENCHMARK_DIR}/{pair.case}", pair.case))
        else:
            report.problems.append(Problem(
                text, f"{layout.BENCHMARK_DIR}/{pair.case}", pair.case,
                "a crash is a case once: remove one (junobench construct remove-case SNAPSHOT "
                f"{pair.case}), or keep both with add-case's --allow-similar"))


# --------------------------------------------------------------------------- edits


def _check_unfinished_edit(root: Path, problems: list[Problem]) -> None:
    """A journal left by an edit killed half-way: the snapshot is between two states."""
    path = root / layout.EDIT_JOURNAL
    if not os.path.lexists(path):
        return
    what = "edit"
    try:
        import json

        from junobench.safety.paths import read_regular

        what = str(json.loads(read_regular(path, limit=1 << 20).decode("utf-8")).get("what") or what)
    except (OSError, ValueError, AttributeError):
        pass  # a journal no command could read: named as it is
    command = (f"junobench construct renumber {root}" if what.split()[:1] == ["renumber"]
               else "the same command" if what.split()[:1] in (["add-case"], ["remove-case"])
               else "junobench construct add-case, remove-case or renumber")
    problems.append(Problem(
        f"an unfinished {what} is pending (its journal {layout.EDIT_JOURNAL}): the snapshot "
        "is half-way between two states", layout.EDIT_JOURNAL, None,
        f"run {command} again: it finishes the pending edit first"))


def _check_edit_leftovers(root: Path, warnings: list[Problem]) -> None:
    """Staging folders and temporary tables of an edit killed before it committed."""
    if os.path.lexists(root / layout.EDIT_JOURNAL):
        return  # the pending edit still needs them
    for path in layout.edit_leftovers(root):
        warnings.append(Problem(
            "left by an interrupted add-case, edit, remove-case or renumber (not part of the snapshot; "
            f"`junobench construct clean {root}` removes it)", path.name, None,
            "the next edit removes it too"))


# --------------------------------------------------------------------------- folders


def _check_folder_sizes(root: Path, limit: int, problems: list[Problem]) -> None:
    """Folders (links not followed) holding more than ``limit`` files."""
    pending = [str(root)]
    while pending:
        folder = pending.pop()
        files = 0
        try:
            with os.scandir(folder) as entries:
                for entry in entries:
                    if entry.is_dir(follow_symlinks=False):
                        pending.append(entry.path)
                    else:
                        files += 1
        except OSError:
            continue
        if files > limit:
            relative = layout.relative(root, folder)
            case = _case_of(relative)
            problems.append(Problem(
                f"the folder holds {files:,} files, more than the {limit:,} a Hugging Face "
                "Hub folder may hold", relative if relative != "." else str(root), case,
                "split it into subfolders or downsample the data"))


def _check_exportable(root: Path, case_ids: list[str], problems: list[Problem]) -> None:
    """Every file an export would refuse (a link out of the snapshot, a FIFO, a device),
    unless a problem names it already (a notebook's own check)."""
    named = {p.file for p in problems}
    for name, path in layout.snapshot_entries(root, case_ids).items():
        refused = layout.unexportable(root, path)
        if refused is not None and name not in named and str(path) not in named \
                and path.name not in named:
            problems.append(Problem(refused[0], name, _case_of(name), refused[1]))


def _case_of(relative: str) -> str | None:
    parts = relative.split("/")
    if len(parts) >= 2 and parts[0] == layout.BENCHMARK_DIR:
        return parts[1]
    return None
