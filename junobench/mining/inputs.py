"""What to mine: notebook files, folders of them, a benchmark snapshot, a construction listing.

:func:`sources` turns the inputs into a stream of :class:`Source`\\ s, in input order (a
folder's notebooks sorted by path), each with a unique notebook id:

- a ``.ipynb`` file: its file name;
- a folder: every ``*.ipynb`` below it, as ``<folder name>/<path inside>``
  (``.ipynb_checkpoints`` and other hidden folders skipped); a folder in the snapshot
  layout (``benchmark_desc.xlsx`` beside ``benchmark/``) is a snapshot;
- a snapshot: ``sample``, a snapshot folder or a Hub dataset id (resolved as ``--source``
  is, :func:`junobench.data.snapshot.resolve`): each case's original, reproduced and fixed
  notebook, as ``<case>/<file>`` with its case id and version;
- a listing of the construction pipeline: an ``.xlsx`` table naming notebooks in a column
  (``fname``, as ``construct resample`` writes it), read from ``notebooks`` (default: the
  table's folder).

Nothing is followed out of an input: a symbolic link, or anything but a regular file, is a
notebook row whose problem says so, and a listed name that is absolute or climbs out
(``..``) likewise. Notebook files are read by :func:`read_source`: without following a
link, non-blocking, refused by their size before they are read.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from junobench import vocab
from junobench.data import layout
from junobench.errors import JunoBenchError
from junobench.mining.rows import Item
from junobench.safety.paths import kind_of, relative_name

#: Versions of a case's notebooks, in the order they are mined.
VERSIONS = vocab.VERSIONS


@dataclass(frozen=True)
class Source:
    """A notebook to mine: its :class:`~junobench.mining.rows.Item`, its file (None with a
    ``problem``), and where a run of it works: ``folder`` copied whole (a snapshot's case
    folder, whose notebook ``run_name`` is inside it), else the notebook alone."""

    item: Item
    path: Path | None
    problem: str | None = None
    folder: Path | None = None
    run_name: str | None = None


def sources(inputs: Sequence[str | Path], *, notebooks: str | Path | None = None, column: str = "fname",
            revision: str | None = None) -> Iterator[Source]:
    """The notebooks of ``inputs`` (see the module's notes); ids repeated across inputs are
    refused."""
    seen: set[str] = set()
    for given in inputs:
        for source in _one(given, notebooks=notebooks, column=column, revision=revision):
            if source.item.notebook in seen:
                raise JunoBenchError(f"two notebooks have the id {source.item.notebook!r}", file=str(given),
                                     hint="give each input once, and inputs of different names")
            seen.add(source.item.notebook)
            yield source


def _one(given: str | Path, *, notebooks: str | Path | None, column: str, revision: str | None) -> Iterator[Source]:
    from junobench.data.snapshot import SAMPLE, resolve

    text = str(given)
    path = Path(text).expanduser()
    if text == SAMPLE or (not os.path.lexists(path) and "/" in text and not text.startswith((".", "/"))):
        yield from snapshot_sources(resolve(text, revision=revision))
        return
    try:
        info = path.lstat()
    except OSError as error:
        raise JunoBenchError(f"cannot read the input ({error.strerror or error})", file=path,
                             hint="give notebook files, folders, a snapshot ('sample', a folder, a Hub id) "
                                  "or a listing (.xlsx)") from None
    if stat.S_ISLNK(info.st_mode):
        raise JunoBenchError("the input is a symbolic link", file=path, hint="give its real path")
    if stat.S_ISDIR(info.st_mode):
        if (path / layout.DESC_TABLE).is_file() and (path / layout.BENCHMARK_DIR).is_dir():
            yield from snapshot_sources(path.resolve())
        else:
            yield from folder_sources(path)
        return
    if path.suffix.lower() == ".xlsx":
        yield from listing_sources(path, notebooks if notebooks is not None else path.parent, column)
        return
    if path.suffix.lower() != ".ipynb":
        raise JunoBenchError("not a notebook (.ipynb), a folder, a snapshot or a listing (.xlsx)", file=path)
    yield _file(Item(path.name), path, info.st_mode)


def _file(item: Item, path: Path, mode: int) -> Source:
    if stat.S_ISLNK(mode):
        return Source(item, None, "a symbolic link: not followed")
    if not stat.S_ISREG(mode):
        return Source(item, None, f"{kind_of(mode)}, not a regular file: not read")
    return Source(item, path)


def folder_sources(folder: Path) -> Iterator[Source]:
    """The notebooks below ``folder``, sorted by path; links and hidden folders not followed."""
    top = folder.resolve().name or str(folder)

    def walk(current: Path, prefix: str) -> Iterator[Source]:
        try:
            entries = sorted(os.scandir(current), key=lambda e: e.name)
        except OSError as error:
            raise JunoBenchError(f"cannot list the folder ({error.strerror or error})", file=current) from None
        for entry in entries:
            name = f"{prefix}/{entry.name}"
            if entry.name.startswith("."):
                continue
            try:
                mode = entry.stat(follow_symlinks=False).st_mode
            except OSError:
                continue
            if stat.S_ISDIR(mode):
                yield from walk(Path(entry.path), name)
            elif entry.name.lower().endswith(".ipynb"):
                yield _file(Item(name), Path(entry.path), mode)

    yield from walk(folder, top)


def snapshot_sources(root: Path) -> Iterator[Source]:
    """Each case's notebooks (original, reproduced, fixed; those present), in table order."""
    from junobench.data.tables import read_desc

    rows, _ = read_desc(root)
    for row in rows:
        case = row.case_id
        if not vocab.is_case_id(case):
            continue
        folder = layout.case_dir(root, case)
        for version in VERSIONS:
            name = layout.notebook_name(case, version)
            path = folder / name
            item = Item(f"{case}/{name}", case, version)
            try:
                mode = path.lstat().st_mode
            except FileNotFoundError:
                continue  # an absent original is the snapshot's own absence, not a notebook
            except OSError as error:
                yield Source(item, None, f"cannot read ({error.strerror or error})")
                continue
            source = _file(item, path, mode)
            yield Source(source.item, source.path, source.problem, folder, name)


def listing_sources(table: Path, notebooks: str | Path, column: str) -> Iterator[Source]:
    """The notebooks a listing names in ``column``, read from the folder ``notebooks``."""
    from junobench.data.tables import read_table

    folder = Path(notebooks)
    if not folder.is_dir():
        raise JunoBenchError("the notebooks folder of the listing does not exist", file=folder,
                             hint="pass --notebooks DIR, the folder that holds the listed notebooks")
    listing = read_table(table)
    listing.require([column], hint="the listing names each notebook in this column (--notebook-column)")
    for number, row in enumerate(listing.records(), start=2):
        name = row.get(column)
        text = str(name).strip() if name is not None else ""
        if not text:
            continue
        item = Item(text)
        relative = relative_name(text)
        if relative is None:
            yield Source(item, None, f"row {number}: {text[:80]!r} is not a path inside the notebooks folder")
            continue
        path = folder.joinpath(*relative.split("/"))
        linked = _linked(folder, relative)
        if linked is not None:
            yield Source(item, None, f"row {number}: {linked}")
            continue
        try:
            mode = path.lstat().st_mode
        except OSError as error:
            yield Source(item, None, f"row {number}: cannot read ({error.strerror or error})")
            continue
        yield _file(item, path, mode)


def _linked(folder: Path, relative: str) -> str | None:
    """Why a listed path is not read when a folder on its way is a link (None: none is)."""
    current = folder
    for part in relative.split("/")[:-1]:
        current = current / part
        if current.is_symlink():
            return f"{current.name} is a symbolic link: not followed"
    return None


def read_source(path: Path, limit: int) -> bytes:
    """The bytes of a notebook file: a regular file, not through a link, at most ``limit``
    bytes (an ``OSError`` otherwise, whose ``strerror`` says why)."""
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except OSError as error:
        if error.errno == errno.ELOOP:
            raise OSError(errno.ELOOP, "a symbolic link: not followed") from None
        raise
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise OSError(errno.EINVAL, f"{kind_of(info.st_mode)}, not a regular file: not read")
        if info.st_size > limit:
            raise OSError(errno.EFBIG, f"{info.st_size:,} bytes, over the {limit:,}-byte bound of a notebook: "
                                       "not read (--max-notebook-size)")
        chunks = [os.read(fd, info.st_size + 1)]
        while chunks[-1] and sum(map(len, chunks)) <= limit:
            chunks.append(os.read(fd, 1 << 20))
        data = b"".join(chunks)
        if len(data) > limit:
            raise OSError(errno.EFBIG, f"over the {limit:,}-byte bound of a notebook: not read "
                                       "(--max-notebook-size)")
        return data
    finally:
        os.close(fd)
