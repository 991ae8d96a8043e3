"""Atomic writes: a file or a folder is whole or absent at its path, never half-written.

Every writer of the project goes through here:

- :func:`atomic_path` / :func:`atomic_open` / :func:`write_text` / :func:`write_bytes`:
  a file is written to a temporary file beside its path, flushed to disk (``fsync``) and
  renamed over the path; a failure removes the temporary file and leaves the previous
  file as it was. New files get the permissions the umask allows (``0o666 & ~umask``),
  not the private ``0o600`` of a temporary file.
- :func:`staging_folder` and :func:`swap_in`: a folder is filled beside its path (a
  ``.<name>.<random>.partial`` folder) and swapped in; :func:`remove_files` then
  deletes only the files the writer had written into the folder it replaced. Over an existing folder the swap
  is one atomic exchange (Linux ``renameat2(RENAME_EXCHANGE)``, macOS ``renamex_np``), so
  the old or the new folder is at the path at every instant; where the file system cannot
  exchange, the old folder is renamed to ``.<name>.<random>.old`` first and
  :func:`recover` puts it back should the process die between the two renames.
  :func:`staged` removes the staging folder should the block filling it fail;
  :func:`swapped_in` does the three around a block that fills the folder.
- :func:`recover` removes what a killed run left beside a folder (``.partial`` and
  ``.old`` folders), through a predicate that recognises them as the writer's own.

>>> import tempfile, pathlib
>>> target = pathlib.Path(tempfile.mkdtemp()) / "notes.txt"
>>> write_text(target, "hello\\n")
>>> target.read_text(), oct(target.stat().st_mode & 0o777) == oct(file_mode())
('hello\\n', True)
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import errno
import logging
import os
import re
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import IO, Any

from junobench.errors import JunoBenchError

logger = logging.getLogger("junobench")

PARTIAL = ".partial"
OLD = ".old"


# --------------------------------------------------------------------------- permissions


def umask() -> int:
    """The process's umask, read without changing it where the system allows."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def file_mode() -> int:
    """Permissions of a new file: what ``open()`` would give (``0o666`` less the umask)."""
    return 0o666 & ~umask()


def folder_mode() -> int:
    """Permissions of a new folder: what ``mkdir`` would give (``0o777`` less the umask)."""
    return 0o777 & ~umask()


# --------------------------------------------------------------------------- files


def check_file_target(path: str | Path) -> Path:
    """``path`` as a :class:`Path`, refused when it exists and is not a regular file (a
    directory, a FIFO, a device): a writer replaces only a file. A symbolic link at
    ``path`` is replaced by the file, never written through."""
    path = Path(path)
    try:
        info = path.lstat()
    except FileNotFoundError:
        return path
    except OSError as error:
        raise JunoBenchError(f"cannot write here ({error.strerror or error})", file=path) from None
    import stat

    if stat.S_ISDIR(info.st_mode):
        raise JunoBenchError("this is a directory, not a file", file=path,
                             hint="give a file name (inside the directory, if you like)")
    if not (stat.S_ISREG(info.st_mode) or stat.S_ISLNK(info.st_mode)):
        raise JunoBenchError("this exists and is not a regular file", file=path,
                             hint="give the path of a new or regular file")
    return path


def check_append_target(path: str | Path) -> Path:
    """``path`` for a writer that appends to it (a resumable run's output), refused as
    :func:`check_file_target` refuses it, and also when it is a symbolic link: an append
    cannot replace the link, it would write through it into the file it points at."""
    path = check_file_target(path)
    if path.is_symlink():
        raise JunoBenchError("is a symbolic link: appending to it would write into the file "
                             "it points at", file=path,
                             hint="give the path of a new or regular file")
    return path


@contextlib.contextmanager
def atomic_path(path: str | Path, *, suffix: str = ".tmp") -> Iterator[Path]:
    """A temporary path beside ``path`` for a writer that takes a path; when the block
    ends without error the file there is synced and renamed over ``path`` (with
    :func:`file_mode` permissions), otherwise removed. ``suffix`` ends the temporary
    name (for writers that pick a format from it). Failing to write is a
    :class:`JunoBenchError` naming ``path``."""
    path = check_file_target(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handle, name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=suffix, dir=path.parent)
        os.close(handle)
    except OSError as error:
        raise JunoBenchError(f"cannot write ({error.strerror or error})", file=path) from None
    temporary = Path(name)
    try:
        yield temporary
        _fsync(temporary)
        os.chmod(temporary, file_mode())
        os.replace(temporary, path)
        _fsync(path.parent)
    except OSError as error:
        temporary.unlink(missing_ok=True)
        raise JunoBenchError(f"cannot write ({error.strerror or error})", file=path,
                             hint="the previous file, if any, is unchanged") from None
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise


@contextlib.contextmanager
def atomic_open(path: str | Path, mode: str = "w", *, encoding: str | None = "utf-8",
                newline: str | None = None) -> Iterator[IO[Any]]:
    """``open(path, mode)`` through :func:`atomic_path`: the file appears whole at the end
    of the block, or not at all."""
    binary = "b" in mode
    with atomic_path(path) as temporary, open(
        temporary, mode, encoding=None if binary else encoding,
        newline=None if binary else newline,
    ) as handle:
        yield handle


def write_text(path: str | Path, text: str, *, newline: str | None = "\n") -> None:
    """Write ``text`` (UTF-8) atomically."""
    with atomic_open(path, "w", newline=newline) as handle:
        handle.write(text)


def write_bytes(path: str | Path, data: bytes) -> None:
    """Write ``data`` atomically."""
    with atomic_open(path, "wb") as handle:
        handle.write(data)


def temporary_beside(path: str | Path, write: Callable[[Path], None], *, suffix: str = ".edit") -> Path:
    """A complete temporary file beside ``path``, filled by ``write``, synced, with
    :func:`file_mode` permissions, for a caller that renames it over ``path`` later (an
    edit committed through a journal); removed if ``write`` fails."""
    path = Path(path)
    handle, name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=suffix, dir=path.parent)
    os.close(handle)
    temporary = Path(name)
    try:
        write(temporary)
        _fsync(temporary)
        os.chmod(temporary, file_mode())
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
    return temporary


def _fsync(path: Path) -> None:
    """Flush a file's (or a folder's entries') data to disk; a no-op where not possible."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


# --------------------------------------------------------------------------- folders


def leftover_pattern(out: Path) -> re.Pattern[str]:
    """Names of the staging and swapped-out folders of ``out`` (beside it)."""
    return re.compile(rf"^\.{re.escape(out.name)}\.[A-Za-z0-9_]{{8}}({PARTIAL}|{OLD})$")


def staging_folder(out: str | Path) -> Path:
    """A new empty folder beside ``out`` (``.<name>.<random>.partial``), with
    :func:`folder_mode` permissions, to fill and then :func:`swap_in`."""
    out = Path(out)
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.", suffix=PARTIAL, dir=out.parent))
        staging.chmod(folder_mode())
    except OSError as error:
        raise JunoBenchError(f"cannot write beside the folder ({error.strerror or error})",
                             file=out) from None
    return staging


def place(staging: Path, out: Path) -> None:
    """Put the complete folder ``staging`` at ``out``, which must be missing or an empty
    folder (one atomic rename); a folder that meanwhile got content is never replaced."""
    _fsync(staging)
    try:
        os.rename(staging, out)
    except OSError as error:
        if error.errno in _NOT_EMPTY or out.exists():
            raise JunoBenchError("the destination exists and is not empty; refusing to overwrite it",
                                 file=out, hint="choose a new or empty directory") from None
        raise JunoBenchError(f"cannot write ({error.strerror or error})", file=out) from None
    _fsync(out.parent)


def swap_in(staging: Path, out: Path) -> Path | None:
    """Put the complete folder ``staging`` at ``out``; returns where the folder that was
    at ``out`` went (None when there was none), for the caller to remove what it wrote.

    A missing or empty ``out`` is replaced by one rename. An existing folder is exchanged
    with ``staging`` atomically where the system can (it is then at ``staging``);
    otherwise it is renamed to a ``.old`` folder first, which :func:`recover` restores
    should the process die before the second rename.
    """
    _fsync(staging)
    try:
        os.rename(staging, out)  # a missing out, or an empty folder (replaced atomically)
        _fsync(out.parent)
        return None
    except OSError as error:
        if not out.is_dir() or error.errno not in _NOT_EMPTY:
            raise
    if exchange(staging, out):
        old = staging
    else:
        old = move_aside(out)
        try:
            os.rename(staging, out)
        except BaseException:
            os.rename(old, out)
            raise
    _fsync(out.parent)
    return old


_NOT_EMPTY = (errno.ENOTEMPTY, errno.EEXIST)


def move_aside(folder: Path) -> Path:
    """Rename ``folder`` to a new ``.<name>.<random>.old`` folder beside it, which
    :func:`recover` puts back should the process die before a new ``folder`` is complete;
    returns where it went."""
    old = Path(tempfile.mkdtemp(prefix=f".{folder.name}.", suffix=OLD, dir=folder.parent))
    old.rmdir()
    os.rename(folder, old)
    return old


def exchange(a: Path, b: Path) -> bool:
    """Swap two paths in one atomic step; False where the system or file system cannot."""
    function = _exchange_function()
    if function is None:
        return False
    if function(os.fsencode(a), os.fsencode(b)) == 0:
        return True
    code = ctypes.get_errno()
    if code in (errno.EINVAL, errno.ENOSYS, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EXDEV):
        return False
    raise OSError(code, os.strerror(code), str(a), None, str(b))


def _exchange_function() -> Callable[[bytes, bytes], int] | None:
    """``rename-exchange(a, b)`` of this platform, or None."""
    platform: str = sys.platform  # a variable: every branch is checked, whatever the platform
    libc = _libc() if platform.startswith("linux") or platform == "darwin" else None
    if libc is None:
        return None
    if platform == "darwin":
        swap: Callable[..., int] | None = getattr(libc, "renamex_np", None)
        if swap is None:
            return None
        swap.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_uint]  # type: ignore[attr-defined]
        rename_swap = 2
        return lambda a, b: swap(a, b, rename_swap)
    exchange2: Callable[..., int] | None = getattr(libc, "renameat2", None)
    if exchange2 is None:
        return None
    exchange2.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p,  # type: ignore[attr-defined]
                          ctypes.c_uint]
    at_fdcwd, rename_exchange = -100, 2
    return lambda a, b: exchange2(at_fdcwd, a, at_fdcwd, b, rename_exchange)


def _libc() -> Any:
    name = ctypes.util.find_library("c")
    try:
        return ctypes.CDLL(name, use_errno=True)
    except OSError:
        return None


def remove_files(folder: Path, names: Iterator[str] | list[str]) -> list[str]:
    """Delete the files ``names`` (relative POSIX paths) of ``folder`` and the folders they
    leave empty, then ``folder`` itself when empty; anything else stays. Returns what
    stayed (relative paths), so that nothing the writer did not write is ever deleted."""
    for name in names:
        with contextlib.suppress(FileNotFoundError, IsADirectoryError, NotADirectoryError):
            (folder / name).unlink()
    for current, _, _ in sorted(os.walk(folder), key=lambda entry: -len(entry[0])):
        with contextlib.suppress(OSError):
            os.rmdir(current)
    if not folder.exists():
        return []
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if not p.is_dir())


@contextlib.contextmanager
def staged(out: str | Path) -> Iterator[Path]:
    """A :func:`staging_folder` beside ``out`` for the block to fill and, as its last step,
    move to ``out`` (:func:`place` or :func:`swap_in`); removed with all it holds when the
    block fails.

    >>> import tempfile, pathlib
    >>> out = pathlib.Path(tempfile.mkdtemp()) / "copy"
    >>> with staged(out) as staging:
    ...     _ = (staging / "a.txt").write_text("a")
    ...     place(staging, out)
    >>> sorted(p.name for p in out.parent.iterdir()), (out / "a.txt").read_text()
    (['copy'], 'a')
    """
    staging = staging_folder(out)
    try:
        yield staging
    except BaseException:
        remove_tree(staging)
        raise


@contextlib.contextmanager
def swapped_in(out: Path, written: Iterable[str] | Callable[[Path], Iterable[str]], *,
               kept: str | None = None) -> Iterator[Path]:
    """A :func:`staging_folder` beside ``out`` for the block to fill: :func:`swap_in` at
    ``out`` when the block ends without error, then the files ``written`` (what the writer
    wrote there before; a callable is given the folder replaced, to read them from it)
    removed from the folder it replaced (:func:`remove_files`); removed itself otherwise.

    Files that stay in the folder replaced (the writer did not write them) are warned
    about with the message ``kept``, when given, whose ``%(old)s`` is that folder,
    ``%(out)s`` is ``out`` and ``%(files)s`` names the first five files.

    >>> import tempfile, pathlib
    >>> out = pathlib.Path(tempfile.mkdtemp()) / "site"
    >>> out.mkdir(); _ = (out / "index.html").write_text("old")
    >>> with swapped_in(out, ["index.html"]) as staging:
    ...     _ = (staging / "page.html").write_text("new")
    >>> sorted(p.name for p in out.parent.iterdir()), sorted(p.name for p in out.iterdir())
    (['site'], ['page.html'])
    """
    with staged(out) as staging:
        yield staging
        old = swap_in(staging, out)
    if old is None:
        return
    left = remove_files(old, list(written(old) if callable(written) else written))
    if left and kept is not None:
        logger.warning(kept, {"old": old, "out": out, "files": ", ".join(left[:5])})


@contextlib.contextmanager
def locked(folder: str | Path) -> Iterator[None]:
    """Hold an exclusive lock on ``folder`` (``flock`` on it) for the block, so that two
    runs writing beside each other take turns; no lock where the system has none."""
    try:
        import fcntl
    except ImportError:  # not POSIX
        yield
        return
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        yield
        return
    try:
        with contextlib.suppress(OSError):
            fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # releases the lock


def remove_tree(folder: Path) -> None:
    """Delete a folder this process made (a staging folder) and all it holds."""
    shutil.rmtree(folder, ignore_errors=True)


def recover(out: str | Path, *, owned: Callable[[Path], bool]) -> list[Path]:
    """Clean up after a killed run that wrote ``out``: when ``out`` is missing, the newest
    ``.old`` folder beside it is put back; then every ``.partial`` and ``.old`` folder
    beside it that ``owned`` recognises as the writer's own is removed. Folders not
    recognised are left with a warning. Returns what was removed or restored."""
    out = Path(out)
    pattern = leftover_pattern(out)
    try:
        found = [p for p in out.parent.iterdir() if pattern.match(p.name) and p.is_dir()
                 and not p.is_symlink()]
    except OSError:
        return []
    touched: list[Path] = []
    if not os.path.lexists(out):
        olds = sorted((p for p in found if p.name.endswith(OLD) and owned(p)),
                      key=lambda p: p.stat().st_mtime_ns)
        if olds:
            os.rename(olds[-1], out)
            logger.warning("%s: restored the previous version left by an interrupted run", out)
            found.remove(olds[-1])
            touched.append(out)
    for leftover in found:
        if owned(leftover):
            remove_tree(leftover)
            touched.append(leftover)
        else:
            logger.warning("%s: left as it is: it looks like an interrupted run's folder but "
                           "holds files this writer does not write", leftover)
    return touched
