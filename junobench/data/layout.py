"""The published snapshot layout: every path of a snapshot is spelled here, once.

::

    <root>/benchmark_desc.xlsx
    <root>/ground_truth_crash_prediction.xlsx            (optional)
    <root>/VERSION                                       (optional) the dataset's version, e.g. 1.1.0
    <root>/benchmark/<case>/<case>.ipynb                 original (may be absent)
    <root>/benchmark/<case>/<case>_reproduced.ipynb
    <root>/benchmark/<case>/<case>_fixed.ipynb
    <root>/benchmark/<case>/data/...                     input data
    <root>/benchmark/<case>/data/<name>.metadata.json    one per input dataset
    <root>/benchmark/<case>/provenance.json              (optional) where the case was verified

>>> notebook_path("/snap", "torch_1", "fixed").as_posix()
'/snap/benchmark/torch_1/torch_1_fixed.ipynb'
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable, Sequence
from pathlib import Path

from junobench import vocab
from junobench.errors import JunoBenchError
from junobench.safety.paths import check_not_linked_out, is_within, link_root

#: The published snapshot's Hub dataset repo: the source when none is named.
DEFAULT_SOURCE = "PELAB-LiU/JunoBench"
DESC_TABLE = "benchmark_desc.xlsx"
DIAGNOSIS_TABLE = "ground_truth_crash_prediction.xlsx"
#: The dataset's own version (optional; :mod:`junobench.data.release_files` reads it).
VERSION_FILE = "VERSION"
BENCHMARK_DIR = "benchmark"
DATA_DIR = "data"
METADATA_SUFFIX = ".metadata.json"
#: A case's provenance (:mod:`junobench.data.provenance`): where and when it was verified.
PROVENANCE_FILE = "provenance.json"
#: The installed ``junobench`` package folder (its data: ``sample/``, ``schemas/``).
PACKAGE_DIR = Path(__file__).resolve().parent.parent


def benchmark_dir(root: str | Path) -> Path:
    return Path(root) / BENCHMARK_DIR


def case_dir(root: str | Path, case_id: str) -> Path:
    """``<root>/benchmark/<case_id>``; a case id that is not ``<library>_<number>`` (and
    so might name another place, like ``../x``) is refused."""
    if not vocab.is_case_id(case_id):
        raise JunoBenchError(f"case id {case_id!r} is not of the form <library>_<number>",
                             case=None, file=benchmark_dir(root),
                             hint="name cases like torch_7 or NBspecific_3")
    return benchmark_dir(root) / case_id


def notebook_name(case_id: str, version: str) -> str:
    """File name of a case's notebook: the original has no suffix."""
    return f"{case_id}.ipynb" if version == "original" else f"{case_id}_{version}.ipynb"


def notebook_path(root: str | Path, case_id: str, version: str) -> Path:
    return case_dir(root, case_id) / notebook_name(case_id, version)


def notebooks_inside(root: str | Path, case_id: str, versions: Iterable[str]) -> dict[str, Path]:
    """Version → path of the case's notebooks of ``versions`` that may be read: neither
    they nor their case folder are links out of the snapshot (they may be missing)."""
    found = {}
    for version in versions:
        try:
            path = notebook_path(root, case_id, version)
            check_not_linked_out(path.parent, root)
            check_not_linked_out(path, root)
        except JunoBenchError:
            continue
        found[version] = path
    return found


def data_dir(root: str | Path, case_id: str) -> Path:
    return case_dir(root, case_id) / DATA_DIR


def metadata_files(root: str | Path, case_id: str) -> list[Path]:
    """The case's dataset metadata files, sorted by name (empty when there is no data)."""
    folder = data_dir(root, case_id)
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.iterdir() if p.name.endswith(METADATA_SUFFIX))


def dataset_name(metadata_file: str | Path) -> str:
    """``data/kdd.metadata.json`` → ``kdd``."""
    return Path(metadata_file).name[: -len(METADATA_SUFFIX)]


def relative(root: str | Path, path: str | Path) -> str:
    """``path`` relative to the snapshot root, for messages; absolute when outside it."""
    try:
        return Path(path).relative_to(root).as_posix()
    except ValueError:
        return str(path)


#: An edit of the snapshot (``construct add-case``, ``remove-case``, ``renumber``) in
#: progress: its journal, its staging folders and the temporary tables written beside
#: the ones it replaces (:mod:`junobench.construct.transaction`).
EDIT_JOURNAL = ".junobench-edit.json"
EDIT_STAGING_PREFIX = ".junobench-edit-"
EDIT_STAGING_SUFFIX = ".partial"
EDIT_TEMPORARY_SUFFIX = ".edit"
#: The case ids ``construct renumber`` changed, oldest first (exported with the tables).
RENAMED_CASES = "renamed_cases.json"
#: The root files an edit replaces through a temporary file beside them.
EDITED_FILES: tuple[str, ...] = (DESC_TABLE, DIAGNOSIS_TABLE, RENAMED_CASES)


def edit_leftovers(root: str | Path) -> list[Path]:
    """What a killed edit left in the snapshot's root before its journal was written: its
    staging folders (``.junobench-edit-*.partial/``), temporary tables
    (``.benchmark_desc.xlsx.*.edit``) and a journal it was writing, by their names; links
    are not counted."""
    root = Path(root)
    found = []
    try:
        entries = sorted(root.iterdir())
    except OSError:
        return []
    for path in entries:
        name = path.name
        if path.is_symlink():
            continue
        staging = (name.startswith(EDIT_STAGING_PREFIX) and name.endswith(EDIT_STAGING_SUFFIX)
                   and path.is_dir())
        table = name.endswith(EDIT_TEMPORARY_SUFFIX) and any(
            name.startswith(f".{edited}.") for edited in EDITED_FILES)
        journal = name.startswith(f".{EDIT_JOURNAL}.") and name.endswith(".tmp")  # half-written
        temporary = path.is_file() and (table or journal)
        if staging or temporary:
            found.append(path)
    return found


def snapshot_entries(root: Path, case_ids: Sequence[str]) -> dict[str, Path]:
    """Export name → path of the entries an export of ``case_ids`` carries: the root files,
    the environment's own files and every entry of the case folders, unchecked (links not
    followed: a link is an entry of its own; :func:`unexportable` checks each)."""
    from junobench.envs.environment import SNAPSHOT_FOLDER, own_files

    found: dict[str, Path] = {}
    for name in (DESC_TABLE, DIAGNOSIS_TABLE, VERSION_FILE):
        if os.path.lexists(root / name):
            found[name] = root / name
    for path in own_files(root):
        found[f"{SNAPSHOT_FOLDER}/{path.name}"] = path
    for case_id in case_ids:
        folder = case_dir(root, case_id)
        for current, folders, files in os.walk(folder, followlinks=False):
            folders.sort()
            here = Path(current)
            for name in sorted(files + [f for f in folders if (here / f).is_symlink()]):
                path = here / name
                found[path.relative_to(root).as_posix()] = path
    return found


def unexportable(root: Path, path: Path) -> tuple[str, str | None] | None:
    """Why an export would refuse ``path`` (the problem and a hint): a link out of the
    snapshot, an unreadable entry, anything but a regular file; None when it carries it."""
    if path.is_symlink() and not is_within(path, link_root(root)):
        return "a link out of the snapshot: not exported", "copy the file into the snapshot instead of linking it"
    try:
        mode = path.stat().st_mode
    except OSError as error:
        return f"cannot read ({error.strerror or error})", None
    if not stat.S_ISREG(mode):
        return "not a regular file: not exported", "an export carries regular files only"
    return None
