"""Edits of a snapshot that land whole: ``add-case`` and ``renumber``.

An edit is prepared beside its place first (a staged case folder, the new tables as
temporary files, all checked); then a journal (``.junobench-edit.json`` in the snapshot)
lists what is left to do, and the edit is committed by renames:

- ``moves``: ``source → destination`` (folders and files), each done when its source
  exists and its destination does not, in order;
- ``replaces``: ``temporary file → table``, each done when its temporary file exists.

Every step can be done again without harm, so an edit killed half-way is finished by the
next editing command (:func:`finish_pending`), and a snapshot never keeps half an edit.
Paths in the journal are relative to the snapshot and checked to stay inside it.

>>> import tempfile, pathlib
>>> root = pathlib.Path(tempfile.mkdtemp())
>>> (root / "a").mkdir()
>>> commit(root, Edit(moves=[("a", "b")]))
>>> sorted(p.name for p in root.iterdir())
['b']
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from junobench.data import layout
from junobench.errors import JunoBenchError
from junobench.safety import atomic
from junobench.safety.paths import read_untrusted, relative_name

JOURNAL = layout.EDIT_JOURNAL
STAGING_PREFIX = layout.EDIT_STAGING_PREFIX
_BY_HAND = "inspect the snapshot, then remove the journal by hand"
#: Largest journal read back: an edit's journal lists a few dozen paths.
MAX_JOURNAL_BYTES = 1 << 20


@dataclass
class Edit:
    """What is left to do to commit an edit (paths relative to the snapshot)."""

    moves: list[tuple[str, str]] = field(default_factory=list)
    replaces: list[tuple[str, str]] = field(default_factory=list)
    cleanup: list[str] = field(default_factory=list)  # staging folders removed at the end
    what: str = "edit"


def editable_root(snapshot: str | Path) -> Path:
    """The snapshot directory to edit: a local folder in the published layout, not the
    bundled sample (it belongs to the installed package: copy it first), whose
    ``benchmark/`` is not a link."""
    from junobench.data.snapshot import SAMPLE, sample_path

    if str(snapshot) == SAMPLE:
        raise JunoBenchError("the bundled sample is part of the installed package and is "
                             "not edited", hint="copy it first: junobench checkout or cp -r")
    root = Path(snapshot)
    if not root.is_dir() or root.is_symlink():
        raise JunoBenchError("no such snapshot directory", file=root,
                             hint="pass a folder in the published layout")
    if root.resolve() == sample_path().resolve():
        raise JunoBenchError("the bundled sample is not edited", file=root,
                             hint="copy it to a folder of your own first")
    if layout.benchmark_dir(root).is_symlink():  # an edit would move and delete through it
        raise JunoBenchError("the benchmark/ folder is a link", file=layout.benchmark_dir(root),
                             hint="an edit changes only the snapshot's own folders: replace the "
                                  "link by the folder it points to")
    return root


def staging_dir(root: Path) -> Path:
    """A new folder inside the snapshot to prepare an edit in."""
    return Path(tempfile.mkdtemp(prefix=STAGING_PREFIX, suffix=layout.EDIT_STAGING_SUFFIX, dir=root))


def clean_leftovers(root: Path) -> list[str]:
    """Remove what an edit killed before its journal was written left in the snapshot
    (:func:`junobench.data.layout.edit_leftovers`: staging folders and temporary tables,
    known by their names); the names removed. Call it holding :func:`editing`, with no
    journal pending (a pending edit still needs its files)."""
    if (root / JOURNAL).exists():
        return []
    removed = []
    for path in layout.edit_leftovers(root):
        if path.is_dir():
            shutil.rmtree(path, ignore_errors=True)
        else:
            path.unlink(missing_ok=True)
        removed.append(path.name)
    return removed


@contextlib.contextmanager
def editing(root: Path) -> Iterator[Recovered]:
    """Hold the snapshot for an edit: one editing command at a time (a lock on its folder),
    an edit a killed run left finished first, leftovers of one killed before its journal
    removed; yields what was recovered."""
    with atomic.locked(root):
        finished = finish_pending(root)
        yield Recovered(finished, clean_leftovers(root))


@dataclass
class Recovered:
    """What :func:`editing` found of earlier runs: the edit it finished (``"add-case
    pandas_3"``), the leftovers it removed."""

    finished: str | None = None
    removed: list[str] = field(default_factory=list)

    def messages(self) -> list[str]:
        out = [f"finished an interrupted {self.finished}"] if self.finished else []
        if self.removed:
            out.append(f"removed what an interrupted edit left: {', '.join(self.removed)}")
        return out


class Prepared:
    """An edit being prepared (:func:`preparing`): its staging folder inside the snapshot
    (made when first asked for) and the new tables written as temporary files beside the
    ones they replace."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.replaces: list[tuple[str, str]] = []
        self._staging: Path | None = None

    @property
    def staging(self) -> Path:
        """A new folder inside the snapshot to prepare the edit in."""
        if self._staging is None:
            self._staging = staging_dir(self.root)
        return self._staging

    def table(self, table: str, rows: Sequence[Mapping[str, Any]], columns: Sequence[str]) -> None:
        """Write the new rows of the snapshot's ``table`` (a path relative to it) beside it,
        to replace it when the edit is committed."""
        from junobench.data.tables import write_table

        temporary = atomic.temporary_beside(
            self.root / table, lambda p: write_table(p, rows, columns, display=self.root / table))
        self.replaces.append((temporary.name, table))

    def commit(self, moves: list[tuple[str, str]], what: str) -> None:
        """:func:`commit` the moves, the new tables, and the removal of the staging folder."""
        cleanup = [self._staging.name] if self._staging is not None else []
        commit(self.root, Edit(moves=moves, replaces=self.replaces, cleanup=cleanup, what=what))

    def discard(self) -> None:
        """Remove what was prepared (ours only: other files stay)."""
        if self._staging is not None:
            shutil.rmtree(self._staging, ignore_errors=True)
        for temporary, _ in self.replaces:
            (self.root / temporary).unlink(missing_ok=True)


@contextlib.contextmanager
def preparing(root: Path) -> Iterator[Prepared]:
    """An edit to prepare and commit (:class:`Prepared`); what it prepared is removed when
    the block fails before the journal is written. Committed in part, the edit is left to
    the next editing command, which finishes it."""
    prepared = Prepared(root)
    try:
        yield prepared
    except BaseException:
        if not (root / JOURNAL).exists():
            prepared.discard()
        raise


def commit(root: Path, edit: Edit) -> None:
    """Record ``edit`` in the journal, then carry it out."""
    journal = root / JOURNAL
    if journal.exists():
        raise JunoBenchError("another edit of this snapshot is unfinished", file=journal,
                             hint="run the command again: it finishes the pending edit first")
    _check_journal(root, edit)
    atomic.write_bytes(journal, json.dumps({"what": edit.what, "moves": edit.moves,
                                     "replaces": edit.replaces, "cleanup": edit.cleanup},
                                    indent=1).encode())
    _carry_out(root, edit)


def finish_pending(root: Path) -> str | None:
    """Finish an edit a killed run left in the journal; what it was, or None."""
    journal = root / JOURNAL
    if not os.path.lexists(journal):
        return None
    try:
        if journal.is_symlink():
            raise OSError("a link, not the journal an edit writes")
        data = json.loads(read_untrusted(journal, limit=MAX_JOURNAL_BYTES, whole=True).decode("utf-8"))  # no FIFO
        edit = Edit([tuple(m) for m in data["moves"]], [tuple(r) for r in data["replaces"]],
                    list(data.get("cleanup", [])), str(data.get("what", "edit")))
        _check_journal(root, edit)
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as error:
        reason = error.strerror if isinstance(error, OSError) and error.strerror else error
        raise JunoBenchError(f"the journal of an unfinished edit cannot be read ({reason})",
                             file=journal, hint=_BY_HAND) from None
    _carry_out(root, edit)
    return edit.what


def _carry_out(root: Path, edit: Edit) -> None:
    for source, target in edit.moves:
        src, dst = root / source, root / target
        if (src.exists() or src.is_symlink()) and not (dst.exists() or dst.is_symlink()):
            os.rename(src, dst)
    for source, target in edit.replaces:
        if (root / source).exists():
            os.replace(root / source, root / target)
    for folder in edit.cleanup:
        shutil.rmtree(_inside(root, folder), ignore_errors=True)
    (root / JOURNAL).unlink(missing_ok=True)


def _check_journal(root: Path, edit: Edit) -> None:
    """Refuse a journal asking for more than an edit does: every path inside the snapshot,
    each replaced file one an edit rewrites (:data:`layout.EDITED_FILES`) from a temporary
    file beside it, and only staging folders removed."""
    for source, target in [*edit.moves, *edit.replaces]:
        _inside(root, source), _inside(root, target)
    for source, target in edit.replaces:
        if target not in layout.EDITED_FILES or not (
                source.startswith(f".{target}.") and source.endswith(layout.EDIT_TEMPORARY_SUFFIX)):
            raise JunoBenchError(f"the journal replaces {target!r} with {source!r}, which no edit "
                                 "does", file=root / JOURNAL, hint=_BY_HAND)
    for folder in edit.cleanup:
        if not (isinstance(folder, str) and "/" not in folder and folder.startswith(STAGING_PREFIX)
                and folder.endswith(layout.EDIT_STAGING_SUFFIX)):
            raise JunoBenchError(f"the journal removes {folder!r}, which is not an edit's "
                                 "staging folder", file=root / JOURNAL, hint=_BY_HAND)


def _inside(root: Path, relative: str) -> Path:
    if relative_name(relative) is None:
        raise JunoBenchError(f"path {relative!r} leaves the snapshot", file=root / JOURNAL)
    return root / relative
