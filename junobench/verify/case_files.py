"""The files a replay needs, checked once, whichever executor runs it.

:func:`survey` lists what a task's places hold (:class:`Entry`: folders, regular files,
links that stay inside their folder) under the rules of a local copy
(:func:`junobench.safety.paths.walk_tree` decides for both, and for
:func:`~junobench.safety.paths.copy_tree`): a link into the place's trusted root is read
as the file it points to, any other link, FIFO, device or socket is refused with a
:class:`~junobench.errors.JunoBenchError` naming it. The local executor copies the
entries (:func:`copy_entries`); the Ray executor streams the same entries to its workers
(:mod:`.shipping`), so the same files give the same replay, and the same refusal, on
both. Names are kept as they are (a file name may hold a newline); only where they
lead is checked (:func:`workspace_name`).

>>> from junobench.data.snapshot import sample_path
>>> from junobench.verify.executor import Place
>>> entries = survey([Place(str(sample_path() / "benchmark" / "pandas_1"), "cases/pandas_1")])
>>> [(e.dest, e.kind) for e in entries][:4]
[('cases', 'dir'), ('cases/pandas_1', 'dir'), ('cases/pandas_1/data', 'dir'), ('cases/pandas_1/pandas_1.ipynb', 'file')]
"""

from __future__ import annotations

import os
import shutil
import stat
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from junobench.errors import JunoBenchError
from junobench.safety.paths import kind_of, open_regular, walk_tree

DIR, FILE, LINK = "dir", "file", "link"

#: Where to read how a refused file breaks the rules.
HINT = "a copy never follows links out of the folder, and reads regular files only"


class PlaceLike(Protocol):
    """A file or folder to copy (:class:`junobench.verify.executor.Place`)."""

    @property
    def source(self) -> str: ...

    @property
    def dest(self) -> str: ...

    @property
    def trusted(self) -> str | None: ...


@dataclass(frozen=True)
class Entry:
    """One item of a task's workspace: ``dest`` (workspace-relative POSIX path), its
    ``kind`` (:data:`DIR`, :data:`FILE`, :data:`LINK`), for a file the ``source`` to read
    and its ``size``, for a link its relative ``link`` target, and the ``mode`` bits."""

    dest: str
    kind: str
    source: str | None = None
    size: int = 0
    link: str | None = None
    mode: int = 0o644
    mtime: float = 0.0


def workspace_name(name: str) -> str:
    """``name`` as a workspace-relative path: refused (:class:`JunoBenchError`) when it is
    empty, absolute, climbs out with ``..`` or holds a NUL; other characters (spaces,
    newlines) are a file's own business."""
    parts = [p for p in name.split("/") if p not in ("", ".")]
    if not name or name.startswith("/") or "\0" in name or not parts or ".." in parts:
        raise JunoBenchError(f"path {name!r} leaves the task's workspace")
    return "/".join(parts)


def survey(places: Iterable[PlaceLike], *, case: str | None = None) -> list[Entry]:
    """The entries of ``places`` in copy order (a folder before what it holds), or the
    :class:`JunoBenchError` of the first file a copy refuses."""
    entries: list[Entry] = []
    for place in places:
        dest = workspace_name(place.dest)
        source = Path(place.source)
        for parent in reversed(Path(dest).parents[:-1]):
            entries.append(Entry(parent.as_posix(), DIR, mode=0o755))
        if source.is_dir() and not source.is_symlink():
            entries.append(Entry(dest, DIR, mode=0o755))
            entries.extend(_walk(source, dest, place.trusted, case))
        else:
            entries.append(_file(source, dest, source, case))
    return entries


def _walk(source: Path, dest: str, trusted: str | None, case: str | None) -> Iterator[Entry]:
    for item in walk_tree(source, trusted=trusted, refuse=lambda path, problem: _refuse(path, problem, case)):
        target, info = f"{dest}/{item.relative}", item.info
        if item.link is not None:
            yield Entry(target, LINK, link=item.link)
        elif item.read is not None and stat.S_ISLNK(info.st_mode):  # read as the trusted file it leads to
            yield _file(item.read, target, item.path, case)
        elif item.read is not None:
            yield Entry(target, FILE, str(item.path), info.st_size, mode=stat.S_IMODE(info.st_mode),
                        mtime=info.st_mtime)
        else:
            yield Entry(target, DIR, mode=stat.S_IMODE(info.st_mode) | 0o700, mtime=info.st_mtime)


def _file(source: Path, dest: str, shown: Path, case: str | None) -> Entry:
    try:
        info = os.stat(source)
    except OSError as error:
        raise _refuse(shown, f"cannot read ({error.strerror or error})", case) from None
    if not stat.S_ISREG(info.st_mode):
        raise _refuse(shown, f"{kind_of(info.st_mode)}: only regular files are copied", case)
    return Entry(dest, FILE, str(source), info.st_size, mode=stat.S_IMODE(info.st_mode), mtime=info.st_mtime)


def _refuse(path: Path, problem: str, case: str | None) -> JunoBenchError:
    return JunoBenchError(problem, file=path, case=case, hint=HINT)


def total_size(entries: Sequence[Entry]) -> int:
    """Bytes of the files among ``entries``."""
    return sum(entry.size for entry in entries if entry.kind == FILE)


class Placing(Protocol):
    """Where entries go (:class:`junobench.verify.executor.Workspace`)."""

    def path(self, relative: str) -> Path: ...


def copy_entries(entries: Iterable[Entry], workspace: Placing) -> None:
    """Write ``entries`` into ``workspace``: folders made, files copied (read as regular
    files once more, so that one swapped for a FIFO since the survey is still refused),
    links made."""
    for entry in entries:
        target = workspace.path(entry.dest)
        if entry.kind == DIR:
            target.mkdir(parents=True, exist_ok=True)
        elif entry.kind == LINK:
            target.parent.mkdir(parents=True, exist_ok=True)
            os.symlink(entry.link or ".", target)
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
            assert entry.source is not None
            try:
                fd = open_regular(entry.source)
            except OSError as error:
                raise _refuse(Path(entry.source), f"cannot read ({error.strerror or error})", None) from None
            with os.fdopen(fd, "rb") as reader, open(target, "wb") as writer:
                shutil.copyfileobj(reader, writer, 1 << 20)
            os.chmod(target, entry.mode & 0o777)
