"""Content digests of input files, remembered so that unchanged large data is read once.

Resume (``verify --report``) and the records cache decide from what files hold, not from
their names and sizes: :meth:`ContentDigests.sha256` is the sha256 of a file's bytes. Each digest
is remembered in a small SQLite memo in the cache folder (``file-digests.sqlite``) under
the file's path, size, modification and change times, device and inode: an edit moves
the change time (no user command can set it back), so a remembered digest is used only
for the very bytes it was computed from, and a file is read again only after it changed.
Without a writable cache the digests are computed every time.

>>> _ = Path("train.csv").write_bytes(b"x,y\\n1,2\\n")
>>> with ContentDigests() as digests:
...     digests.sha256("train.csv") == hashlib.sha256(b"x,y\\n1,2\\n").hexdigest()
True
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import sqlite3
import stat
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from types import TracebackType

from junobench.data.cache import cache_root
from junobench.utf8 import is_utf8

MEMO_FILE = "file-digests.sqlite"
_CHUNK = 1 << 20
#: A file changed less than this long ago is not remembered: a second write within the
#: file system's clock tick could leave size and times as they were.
_SETTLED_NS = 2_000_000_000
#: Look-ups made one query each (a case folder); past them the memo is read at once: its
#: part under the folder given as ``under`` (a snapshot), or all of it.
_ONE_BY_ONE = 64


class ContentDigests:
    """The sha256 of files, through the memo (open it as a context manager, or call
    :meth:`close`). ``under``: the folder most files asked for are in (a snapshot), so
    that reading the memo at once reads only what it remembers there, not the digests of
    every folder ever fingerprinted."""

    def __init__(self, cache_dir: str | Path | None = None, *, under: str | Path | None = None) -> None:
        self._db: sqlite3.Connection | None = None
        self._pending: list[MemoRow] = []
        self._known: dict[str, tuple[tuple[int, ...], str]] | None = None
        self._lookups = 0
        self._under = None if under is None else os.path.join(os.path.abspath(under), "")
        try:
            folder = cache_root(cache_dir)
            folder.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(folder / MEMO_FILE, timeout=30)
            self._db.execute("CREATE TABLE IF NOT EXISTS digests (path TEXT PRIMARY KEY, size INTEGER, "
                             "mtime INTEGER, ctime INTEGER, dev INTEGER, ino INTEGER, sha256 TEXT)")
        except (OSError, sqlite3.Error):
            self._db = None  # no memo: every digest is computed

    def __enter__(self) -> ContentDigests:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        self.close()

    def sha256(self, path: str | Path, info: os.stat_result | None = None, *,
               absolute: bool = False) -> str:
        """The sha256 (hex) of the regular file ``path`` (links followed); ``OSError`` when
        it cannot be read or is not a regular file. ``info``: its ``os.stat`` when the
        caller has just taken it (one ``stat`` per file, not two); ``absolute``: ``path``
        is a ``str`` already absolute and normalised (a listing of an absolute folder)."""
        real, info = _regular(path, info, absolute)
        if not is_utf8(real):  # a name that is not UTF-8 (the memo holds text): read each time
            return _read_digest(real)[0]
        remembered = self._lookup(real, _key(info))
        if remembered is not None:
            return remembered
        digest, after = _read_digest(real)
        row = memo_row(real, info, after, digest)
        if row is not None:
            self._pending.append(row)
        return digest

    def remember(self, rows: Iterable[MemoRow]) -> None:
        """Keep digests computed elsewhere (:class:`ReadDigests` in a worker process)."""
        self._pending.extend(rows)

    def _lookup(self, real: str, key: tuple[int, int, int, int, int]) -> str | None:
        if self._db is None:
            return None
        self._lookups += 1
        outside = self._under is not None and not real.startswith(self._under)
        if outside or (self._known is None and self._lookups <= _ONE_BY_ONE):
            try:
                row = self._db.execute("SELECT size, mtime, ctime, dev, ino, sha256 FROM digests "
                                       "WHERE path = ?", (real,)).fetchone()
            except sqlite3.Error:
                return None
            return str(row[5]) if row is not None and tuple(row[:5]) == key else None
        if self._known is None:  # one query for the rest: a snapshot asks for many
            self._known = self._read_memo()
        found = self._known.get(real)
        return found[1] if found is not None and found[0] == key else None

    def _read_memo(self) -> dict[str, tuple[tuple[int, ...], str]]:
        """The memo's digests under ``under`` (a range of the path index), or all of them."""
        assert self._db is not None
        query = "SELECT path, size, mtime, ctime, dev, ino, sha256 FROM digests"
        bounds: tuple[str, ...] = ()
        if self._under is not None:  # every path that starts with "<under>/" sorts in [<under>/, <under>0)
            query += " WHERE path >= ? AND path < ?"
            bounds = (self._under, self._under[:-1] + chr(ord(os.sep) + 1))
        try:
            return {row[0]: (tuple(row[1:6]), str(row[6])) for row in self._db.execute(query, bounds)}
        except sqlite3.Error:
            return {}

    def close(self) -> None:
        """Write the new digests into the memo and close it."""
        if self._db is None:
            return
        with contextlib.suppress(sqlite3.Error), self._db:
            self._db.executemany("INSERT OR REPLACE INTO digests VALUES (?, ?, ?, ?, ?, ?, ?)",
                                 self._pending)
        self._pending = []
        self._db.close()
        self._db = None


#: A memo row: path, size, modification and change times (ns), device, inode, sha256.
MemoRow = tuple[str, int, int, int, int, int, str]


def _key(info: os.stat_result) -> tuple[int, int, int, int, int]:
    return info.st_size, info.st_mtime_ns, info.st_ctime_ns, info.st_dev, info.st_ino


def memo_row(real: str, info: os.stat_result, after: os.stat_result, digest: str) -> MemoRow | None:
    """The memo row of a digest of ``real`` (``info``: its ``stat`` before it was read,
    ``after``: once read), or None: a file that changed while it was read, or so recently
    that another write could share its times, is not remembered."""
    settled = time.time_ns() - max(info.st_mtime_ns, info.st_ctime_ns) > _SETTLED_NS
    if settled and _key(after) == _key(info):
        return (real, *_key(info), digest)
    return None


class ReadDigests:
    """The sha256 of files read now, without the memo (a worker process, which reads the
    files of its case folders anyway): the memo rows they make are kept in ``rows`` for
    the parent's memo (:meth:`ContentDigests.remember`), and the bytes of the files
    ``keep(path, size)`` accepts in ``kept``, so that a parser uses the very bytes that
    were hashed instead of reading them again. Same interface as :class:`ContentDigests`."""

    def __init__(self, keep: Callable[[str, int], bool]) -> None:
        self.keep = keep
        self.rows: list[MemoRow] = []
        self.kept: dict[str, bytes] = {}

    def sha256(self, path: str | Path, info: os.stat_result | None = None, *,
               absolute: bool = False) -> str:
        real, info = _regular(path, info, absolute)
        if self.keep(real, info.st_size):
            data, after = _read_whole(real)
            self.kept[real] = data
            digest = hashlib.sha256(data).hexdigest()
        else:
            digest, after = _read_digest(real)
        row = memo_row(real, info, after, digest) if is_utf8(real) else None
        if row is not None:
            self.rows.append(row)
        return digest


def _regular(path: str | Path, info: os.stat_result | None, absolute: bool) -> tuple[str, os.stat_result]:
    """``path`` absolute and its ``stat`` (``info`` when given); ``OSError`` unless it is a
    regular file."""
    real = path if absolute and isinstance(path, str) else os.path.abspath(path)
    if info is None:
        info = os.stat(real)
    if not stat.S_ISREG(info.st_mode):
        raise OSError(0, "not a regular file", str(path))
    return real, info


def _read_whole(path: str) -> tuple[bytes, os.stat_result]:
    """The bytes of the regular file ``path`` and its ``fstat`` once read."""
    from junobench.safety.paths import open_regular

    fd = open_regular(path)
    try:
        chunks = []
        while chunk := os.read(fd, _CHUNK):
            chunks.append(chunk)
        return b"".join(chunks), os.fstat(fd)
    finally:
        os.close(fd)


def _read_digest(path: str) -> tuple[str, os.stat_result]:
    """The sha256 (hex) of the regular file ``path`` and its ``fstat`` once read (what the
    digest is of: a change while it was read shows in its times)."""
    from junobench.safety.paths import open_regular

    fd = open_regular(path)
    try:
        digest = hashlib.sha256()
        while chunk := os.read(fd, _CHUNK):
            digest.update(chunk)
        return digest.hexdigest(), os.fstat(fd)
    finally:
        os.close(fd)
