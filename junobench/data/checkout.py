"""``checkout``: copy some cases of a snapshot into a new snapshot of their own.

The new snapshot has the published layout: the cases' folders (notebooks, input data,
dataset metadata), the matching rows of both tables, with the source's columns, and the
source's own environment declaration (``environment/``) when it has one. The
loader and ``verify`` take it like any other snapshot, and it can be edited freely.

>>> checkout(["pandas_1", "NBspecific_2"], "sample", "my-cases")
PosixPath('my-cases')
"""

from __future__ import annotations

import difflib
import os
import shutil
from collections.abc import Sequence
from pathlib import Path

from junobench import vocab
from junobench.data import layout
from junobench.data.snapshot import DEFAULT_SOURCE, resolve_cases
from junobench.data.tables import read_table, snapshot_table, stripped, write_table
from junobench.envs.environment import SNAPSHOT_FOLDER, own_files
from junobench.errors import JunoBenchError
from junobench.safety.atomic import locked, place, staged
from junobench.safety.paths import check_not_linked_out, copy_tree, is_within, link_root, require_utf8_path


def checkout(
    case_ids: Sequence[str],
    source: str | Path = DEFAULT_SOURCE,
    dest: str | Path = ".",
    *,
    revision: str | None = None,
) -> Path:
    """Copy ``case_ids`` of ``source`` into a new snapshot at ``dest``; returns ``dest``.

    Refuses a ``dest`` that exists and is not an empty directory, or lies inside the
    snapshot. Case ids must be ``<library>_<number>``. Links in a case folder are copied
    as links when they stay inside it; a link out of it is refused (naming it), as are
    FIFOs and devices. The copy is made beside ``dest`` and moved into place in one
    rename, so a failure leaves nothing half-written.
    """
    if not case_ids:
        raise JunoBenchError("no cases given", hint="name the cases to check out, e.g. pandas_1")
    for case_id in case_ids:
        if not vocab.is_case_id(case_id):
            raise JunoBenchError(f"{case_id!r} is not a case id (<library>_<number>)", case=None,
                                 hint="name cases like pandas_1 or NBspecific_3")
    dest = require_utf8_path(Path(dest))  # a snapshot to read later: its path is text
    _check_dest(dest)
    root = resolve_cases(source, case_ids, revision=revision)  # from the Hub: these cases only
    if is_within(dest, root):
        raise JunoBenchError("the destination is inside the snapshot being copied", file=dest,
                             hint="nothing in a snapshot is ever modified: choose a directory outside it")
    desc = snapshot_table(root, layout.DESC_TABLE)
    desc.require(["nb_name"], hint="the case table names cases in column nb_name")
    ids = list(dict.fromkeys(case_ids))
    known = [stripped(row[desc.columns.index("nb_name")]) for row in desc.rows]
    unknown = [c for c in ids if c not in known]
    if unknown:
        close = difflib.get_close_matches(unknown[0], [k for k in known if k], n=3)
        raise JunoBenchError(f"no case {', '.join(map(repr, unknown))} in the case table",
                             file=root / layout.DESC_TABLE, case=unknown[0],
                             hint=f"did you mean {', '.join(close)}?" if close
                             else "list the cases with `junobench ls`")
    for case_id in ids:
        folder = layout.case_dir(root, case_id)
        if not folder.is_dir():
            raise JunoBenchError("case folder is missing", file=folder, case=case_id,
                                 hint="the snapshot is incomplete; fetch it again")
        check_not_linked_out(folder, root, case=case_id)

    with staged(dest) as staging:
        wanted = set(ids)
        rows = [dict(zip(desc.columns, row, strict=False)) for row in desc.rows]
        write_table(staging / layout.DESC_TABLE,
                    [r for r in rows if stripped(r["nb_name"]) in wanted], desc.columns)
        diagnosis = root / layout.DIAGNOSIS_TABLE
        if diagnosis.is_file():
            check_not_linked_out(diagnosis, root)
            table = read_table(diagnosis)
            table.require(["instance"], hint="the diagnosis table names notebooks in column instance")
            keep = [r for r in table.records() if vocab.case_of_instance(r.get("instance")) in wanted]
            write_table(staging / layout.DIAGNOSIS_TABLE, keep, table.columns)
        for case_id in ids:
            copy_tree(layout.case_dir(root, case_id), layout.case_dir(staging, case_id),
                      trusted=link_root(root), case=case_id,
                      display=f"{layout.BENCHMARK_DIR}/{case_id}")
        _copy_environment(root, staging)
        _make_writable(staging)
        with locked(dest.parent):
            _check_dest(dest)
            place(staging, dest)
    return dest


def _copy_environment(root: Path, staging: Path) -> None:
    """The snapshot's own environment declaration (regular files of ``environment/``), so
    the copy runs in the same environment."""
    files = own_files(root)
    if files:
        (staging / SNAPSHOT_FOLDER).mkdir()
        for path in files:
            shutil.copyfile(path, staging / SNAPSHOT_FOLDER / path.name)


def _check_dest(dest: Path) -> None:
    if dest.exists() and (not dest.is_dir() or any(dest.iterdir())):
        raise JunoBenchError("destination exists and is not empty; refusing to overwrite it",
                             file=dest, hint="choose a new or empty directory for --dest")


def _make_writable(root: Path) -> None:
    """Copies of read-only files (a Hub cache, a read-only snapshot) become editable."""
    for current, folders, files in os.walk(root):
        for name in [".", *folders, *files]:
            path = Path(current, name)
            if path.is_symlink():
                continue  # its target is in the copy, and made writable there
            mode = path.stat().st_mode
            path.chmod(mode | (0o700 if path.is_dir() else 0o600))
