"""Paths built from data stay inside the folder the user named; only regular files are read.

- :func:`relative_name`: a relative POSIX path from data (a manifest entry, an archive
  member, a listed data file) that neither is absolute nor climbs out with ``..``.
- :func:`inside`: a path joined from data, checked to stay under its root.
- :func:`open_regular` / :func:`read_regular` / :func:`require_regular`: a FIFO, a
  device or a socket is refused before anything is read (opening a FIFO never blocks).
- :func:`open_inside` / :func:`read_untrusted`: a file another process could replace (a
  site's, a mined corpus's, a notebook's) is reached without following a link.
- :func:`link_root` and :func:`copy_tree`: copying a folder keeps links that stay inside
  it as links and refuses links that lead out (a Hugging Face cache snapshot's links
  to its own blob store are followed, as they are how that cache stores files);
  :func:`walk_tree` decides, for every copy of a folder (a replay's workspace too).

>>> relative_name("cases/test.parquet"), relative_name("../x"), relative_name("/etc/passwd")
('cases/test.parquet', None, None)
"""

from __future__ import annotations

import errno
import os
import shutil
import stat
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from junobench.errors import JunoBenchError
from junobench.utf8 import is_utf8

_KINDS = {stat.S_IFIFO: "a FIFO (named pipe)", stat.S_IFCHR: "a character device",
          stat.S_IFBLK: "a block device", stat.S_IFSOCK: "a socket", stat.S_IFDIR: "a directory"}


class NotRegularFile(OSError):
    """A path that is a FIFO, a device, a socket or a directory where a file is read."""

    def __str__(self) -> str:
        return str(self.strerror)


def kind_of(mode: int) -> str:
    """``"a FIFO (named pipe)"``, ``"a directory"``, … for a ``st_mode``."""
    return _KINDS.get(stat.S_IFMT(mode), "not a regular file")


# --------------------------------------------------------------------------- names


def relative_name(name: object) -> str | None:
    """``name`` as a normalised relative POSIX path, or None when it is not a string, is
    empty, absolute (``/x``, ``C:x``, ``\\\\server``), uses backslashes, holds a NUL or a
    control character, or climbs out (``..``)."""
    if not isinstance(name, str) or not name or "\\" in name:
        return None
    if name.startswith("/") or (len(name) > 1 and name[1] == ":"):
        return None
    if any(ord(c) < 32 or ord(c) == 127 for c in name):
        return None
    parts = [p for p in name.split("/") if p not in ("", ".")]
    if not parts or ".." in parts:
        return None
    return "/".join(parts)


def inside(root: str | Path, *parts: str) -> Path:
    """``root / parts…`` after checking, lexically, that every part is a relative path
    (:func:`relative_name`: not absolute, not ``C:x``, no ``..``, no control character), so
    that the joined path stays under ``root``."""
    if not parts:
        raise JunoBenchError("no path inside the folder was given", file=root)
    for part in parts:
        if relative_name(part) is None:
            raise JunoBenchError(f"the path {part!r} leaves {root}", file=root,
                                 hint="paths from data must stay inside the folder they describe")
    return Path(root).joinpath(*parts)


def is_dir_entry(entry: os.DirEntry[str]) -> bool:
    """``entry.is_dir()``, False (not an error) for a link loop or an unreadable entry."""
    try:
        return entry.is_dir()
    except OSError:
        return False


def require_utf8_path(folder: Path) -> Path:
    """``folder`` (a snapshot or an export) when its path is UTF-8 text; else an error
    naming it: records, caches and reports name their folders as text, and a path with
    bytes that are not UTF-8 cannot be text."""
    if not is_utf8(str(folder)):
        raise JunoBenchError("the folder's path is not UTF-8 text", file=folder,
                             hint="move or rename it: junobench names the folders it reads as text")
    return folder


def is_within(path: str | Path, root: str | Path) -> bool:
    """Whether the real path of ``path`` is ``root``'s real path or below it."""
    real, base = os.path.realpath(path), os.path.realpath(root)
    return real == base or real.startswith(base.rstrip(os.sep) + os.sep)


def check_not_linked_out(path: str | Path, root: str | Path, *, case: str | None = None) -> None:
    """Refuse ``path`` when it is a link that leads out of the folder ``root`` (see
    :func:`link_root`): a snapshot's files are read only inside it."""
    if os.path.islink(path) and not is_within(path, link_root(root)):
        raise JunoBenchError("a link out of the snapshot", file=path, case=case,
                             hint="a snapshot's files are read only inside it: copy the file "
                                  "in instead of linking it")


def check_no_link_on_the_way(path: str | Path, *, what: str = "the path") -> Path:
    """``path`` as given, refused when any component of it, as written, is a symbolic link
    (``dir_link/file`` with ``dir_link`` a link, ``link/../x``, the last component itself):
    a file named by a user is read where the path says, never through a link. A relative
    path is checked from the working directory (the folders above it are the user's);
    an absolute one from the root."""
    given = Path(path)
    current = Path(given.anchor) if given.is_absolute() else Path()
    for part in given.parts[1:] if given.is_absolute() else given.parts:
        current = current / part
        if part in (".", ".."):
            continue
        if os.path.islink(current):
            raise JunoBenchError(f"{what} goes through a symbolic link ({current})", file=given,
                                 hint="give the real path: files are never read through links")
    return given


def unlisted_files(folder: str | Path, names: set[str]) -> list[str]:
    """What ``folder`` holds besides the files ``names`` (relative POSIX paths) and the
    folders on the way to them, as sorted relative paths: what a writer that wrote
    ``names`` did not write. A link counts as unlisted, whatever it points to."""
    folder = Path(folder)
    parents = {str(PurePosixPath(n).parents[i]) for n in names
               for i in range(len(PurePosixPath(n).parents) - 1)}
    found = []
    for current, folders, files in os.walk(folder):
        for name in sorted(folders + files):
            path = Path(current, name)
            relative = path.relative_to(folder).as_posix()
            if path.is_symlink() or not (
                (relative in names and path.is_file()) or (relative in parents and path.is_dir())
            ):
                found.append(relative)
                if name in folders:
                    folders.remove(name)
    return sorted(found)


# --------------------------------------------------------------------------- reading


def open_regular(path: str | Path) -> int:
    """A read-only file descriptor of ``path``, which must be a regular file (after links).

    Opened without blocking, so a FIFO is refused instead of waiting for a writer;
    raises :class:`NotRegularFile` (an ``OSError``) for anything but a regular file.
    """
    fd, _ = _open_regular(path)
    if hasattr(os, "set_blocking"):
        try:
            os.set_blocking(fd, True)
        except BaseException:
            os.close(fd)
            raise
    return fd


def _open_regular(path: str | Path) -> tuple[int, os.stat_result]:
    """:func:`open_regular`'s descriptor, left non-blocking (which changes nothing for a
    regular file), and its ``fstat``."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise NotRegularFile(0, f"{kind_of(info.st_mode)}, not a regular file", str(path))
    except BaseException:
        os.close(fd)
        raise
    return fd, info


#: Largest text file (tasks, runtime information, predictions, judgments, a detector's
#: outputs) read whole into memory: a larger one, or a sparse file posing as one, is
#: refused by its size before it is read.
MAX_TEXT_BYTES = 1 << 30


def read_regular(path: str | Path, *, limit: int | None = None) -> bytes:
    """The bytes of the regular file ``path`` (see :func:`open_regular`); with ``limit``,
    a file larger than ``limit`` bytes raises ``OSError`` (EFBIG) before it is read."""
    fd, info = _open_regular(path)
    try:
        size = info.st_size
        if limit is not None and size > limit:
            raise OSError(27, f"larger than {limit} bytes", str(path))
        chunks = [os.read(fd, size + 1)]
        if len(chunks[0]) == size:  # all the file held, and the read stopped at its end
            return chunks[0]
        while chunks[-1]:  # until end of file, should the file have grown (or a read come short)
            chunks.append(os.read(fd, 1 << 20))
            if limit is not None and sum(map(len, chunks)) > limit:
                raise OSError(27, f"larger than {limit} bytes", str(path))
    finally:
        os.close(fd)
    return b"".join(chunks)


def open_inside(folder: str | Path, name: str, *, follow_folder: bool = False) -> int:
    """A read-only descriptor of the regular file ``name`` (``/``-separated, already a
    :func:`relative_name`) under ``folder``, reached without following a link: each folder
    on the way opened with ``O_NOFOLLOW`` (``folder`` itself too, unless ``follow_folder``),
    the file without following a link and without blocking (a FIFO never hangs the
    reader), then made blocking again. ``OSError`` when it cannot be: ``ELOOP`` or
    ``ENOTDIR`` for a link on the way, :class:`NotRegularFile` for anything but a regular
    file."""
    nofollow = os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
    *folders, last = name.split("/")
    parent = os.open(folder, (os.O_RDONLY if follow_folder else nofollow) | os.O_DIRECTORY)
    try:
        for part in folders:
            below = os.open(part, nofollow | os.O_DIRECTORY, dir_fd=parent)
            os.close(parent)
            parent = below
        fd = os.open(last, nofollow | os.O_NONBLOCK, dir_fd=parent)
    finally:
        os.close(parent)
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise NotRegularFile(0, f"{kind_of(mode)}, not a regular file", name)
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


def read_untrusted(path: str | Path, *, limit: int, tail: bool = False, whole: bool = False) -> bytes:
    """At most ``limit`` bytes (the first ones, or the last with ``tail``) of ``path``, a
    file that an untrusted process (a notebook) could write or replace: opened without
    following a link at its name, without blocking (a FIFO cannot hang the reader), and
    read only when it is a regular file (else :class:`NotRegularFile`). With ``whole``, a
    file longer than ``limit`` is an ``OSError`` (EFBIG), not read cut."""
    if whole:
        data = read_untrusted(path, limit=limit + 1)
        if len(data) > limit:
            raise OSError(errno.EFBIG, f"larger than {limit} bytes")  # the caller names the file
        return data
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    fd = os.open(path, flags)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise NotRegularFile(0, f"{kind_of(info.st_mode)}, not a regular file", str(path))
        return read_bounded(fd, limit=limit, tail=tail)
    finally:
        os.close(fd)


def read_bounded(fd: int, *, limit: int, tail: bool = False) -> bytes:
    """At most ``limit`` bytes of the regular file open at ``fd``: from its start, or its
    last ``limit`` bytes with ``tail`` (whatever the file's offset)."""
    start = max(0, os.fstat(fd).st_size - limit) if tail else 0
    chunks: list[bytes] = []
    left = limit
    while left > 0:
        chunk = os.pread(fd, min(left, 1 << 20), start)
        if not chunk:
            break
        chunks.append(chunk)
        start += len(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def require_regular(path: str | Path) -> None:
    """Raise :class:`NotRegularFile` when ``path`` exists and is not a regular file (after
    links), ``FileNotFoundError`` when it is missing; for readers that open by path."""
    mode = os.stat(path).st_mode
    if not stat.S_ISREG(mode):
        raise NotRegularFile(0, f"{kind_of(mode)}, not a regular file", str(path))


# --------------------------------------------------------------------------- copying


def link_root(root: str | Path) -> Path:
    """The folder links under ``root`` may point into: ``root`` itself, or for a snapshot
    in the Hugging Face cache (``…/datasets--o--n/snapshots/<rev>``) the repo's cache
    folder, whose ``blobs/`` hold the files the snapshot links to."""
    root = Path(root)
    if root.parent.name == "snapshots" and (root.parent.parent / "blobs").is_dir():
        return root.parent.parent
    return root


def link_inside(path: str | Path, root: str | Path) -> bool:
    """Whether ``path`` is a link whose target, followed to the end, exists inside
    :func:`link_root` of ``root`` (a snapshot's own files, or its Hub cache's blobs)."""
    if not os.path.islink(path):
        return False
    real = os.path.realpath(path)
    return os.path.exists(real) and is_within(real, link_root(root))


@dataclass(frozen=True)
class Walked:
    """An item of a folder as :func:`walk_tree` decides it: its ``path`` under the folder
    walked, that path ``relative`` to it (POSIX), its ``info`` (``lstat``), and what to
    make of it: a file to ``read`` (the item, or the file a link into the trusted folder
    leads to), a link to make to ``link`` (relative to the item's folder), or, with
    neither, a folder."""

    path: Path
    relative: str
    info: os.stat_result
    read: Path | None = None
    link: str | None = None


def walk_tree(source: Path, *, trusted: str | Path | None,
              refuse: Callable[[Path, str], Exception]) -> Iterator[Walked]:
    """The items of the folder ``source`` in copy order (a folder before what it holds,
    names sorted), each decided as a copy must: a link whose target stays inside
    ``source`` is kept as a link (and not walked into); a link into ``trusted`` (default
    ``source``) to a regular file is read as that file; any other link, and any FIFO,
    device or socket, raises ``refuse(path, problem)``."""
    base = os.path.realpath(source)
    trusted_base = os.path.realpath(trusted) if trusted is not None else base
    for current, folders, files in os.walk(source):
        here = Path(current)
        for name in sorted(folders + files):
            path = here / name
            relative = path.relative_to(source).as_posix()
            try:
                info = path.lstat()
            except OSError as error:
                raise refuse(path, f"cannot read ({error.strerror or error})") from None
            if stat.S_ISLNK(info.st_mode):
                real = os.path.realpath(path)
                if not os.path.exists(real):
                    raise refuse(path, "a broken link (or a link loop)")
                if is_within(real, base):
                    yield Walked(path, relative, info, link=os.path.relpath(real, os.path.realpath(here)))
                    if name in folders:
                        folders.remove(name)  # the link stands for it; do not walk it twice
                elif is_within(real, trusted_base) and os.path.isfile(real):
                    yield Walked(path, relative, info, read=Path(real))
                else:
                    raise refuse(path, f"a link out of the folder (to {real})")
            elif stat.S_ISDIR(info.st_mode):
                yield Walked(path, relative, info)
            elif stat.S_ISREG(info.st_mode):
                yield Walked(path, relative, info, read=path)
            else:
                raise refuse(path, f"{kind_of(info.st_mode)}: only regular files are copied")


def copy_tree(source: str | Path, target: str | Path, *, trusted: str | Path | None = None,
              case: str | None = None, display: str | Path | None = None) -> None:
    """Copy the folder ``source`` to the new folder ``target``, reading only regular files.

    A link whose target stays inside ``source`` is copied as a (relative) link; a link
    into ``trusted`` (default ``source``; see :func:`link_root`) is copied as the file it
    points to; any other link, and any FIFO, device or socket, is refused with a
    :class:`JunoBenchError` naming it (``display`` is how ``source`` is named):
    :func:`walk_tree` decides.
    """
    source, target = Path(source), Path(target)
    shown = Path(display) if display is not None else source

    def refuse(path: Path, problem: str) -> JunoBenchError:
        return JunoBenchError(problem, file=shown / path.relative_to(source), case=case,
                              hint="a copy never follows links out of the folder, and reads "
                                   "regular files only")

    target.mkdir(parents=True, exist_ok=True)
    for item in walk_tree(source, trusted=trusted, refuse=refuse):
        into = target / item.relative
        if item.link is not None:
            os.symlink(item.link, into)
        elif item.read is not None:
            _copy_file(item.read, into, refuse_path=item.path, refuse=refuse)
        else:
            into.mkdir(exist_ok=True)


def _copy_file(source: Path, target: Path, *, refuse_path: Path, refuse: object) -> None:
    try:
        fd = open_regular(source)
    except OSError as error:
        raise refuse(refuse_path, f"cannot read ({error.strerror or error})") from None  # type: ignore[operator]
    with os.fdopen(fd, "rb") as reader, open(target, "wb") as writer:
        shutil.copyfileobj(reader, writer, 1 << 20)
    shutil.copystat(source, target)
