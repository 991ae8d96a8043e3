"""Case files to a Ray worker without a whole copy in memory: a tar stream in chunks.

The driver writes the checked entries of a task (:func:`~junobench.verify.case_files.survey`,
the one check both executors share) as a tar stream, cut into chunks of
:data:`CHUNK` bytes that go one by one into Ray's object store (:func:`ship`): the
driver holds one chunk at a time, whatever the size of the files, and Ray spills
chunks to disk when its store is full. The worker reads the chunks in order and
extracts the stream as it arrives (:func:`receive`): only folders, regular files and
links that stay inside are written (tarfile's ``data`` filter), each where the
workspace places it. A task's files larger than the executor's limit are not shipped
(:class:`TooLarge`).

>>> from junobench.data.snapshot import sample_path
>>> from junobench.verify.case_files import survey
>>> from junobench.verify.executor import Place, Workspace
>>> store: list[bytes] = []                      # stands in for Ray's object store
>>> entries = survey([Place(str(sample_path() / "benchmark" / "pandas_1"), "pandas_1")])
>>> shipment = ship(entries, put=lambda data: store.append(data) or len(store) - 1, chunk=4096)
>>> len(shipment.chunks) > 1
True
>>> root = Path("workspace").resolve()
>>> receive(shipment.chunks, Workspace(root, "pandas_1"), root, get=store.__getitem__)
>>> sorted(p.name for p in (root / "pandas_1").iterdir())
['data', 'pandas_1.ipynb', 'pandas_1_fixed.ipynb', 'pandas_1_reproduced.ipynb']
"""

from __future__ import annotations

import os
import tarfile
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from junobench.errors import JunoBenchError
from junobench.safety.paths import open_regular
from junobench.verify.case_files import DIR, LINK, Entry, Placing, total_size

#: Bytes per object-store chunk: what the driver and the worker hold of a transfer at once.
CHUNK = 32 << 20

#: Default limit of a task's files (bytes): ``--max-case-size``.
DEFAULT_LIMIT = 64 << 30


class TooLarge(Exception):
    """A task's files exceed the executor's limit: not shipped (no verdict either)."""


@dataclass(frozen=True)
class Shipment:
    """A task's files in the object store: the ``chunks`` of the tar stream (references),
    and the bytes of the files."""

    chunks: tuple[Any, ...]
    size: int


def size_text(size: float) -> str:
    """``2.0 GiB``, ``512 MiB``, ``3 KiB``."""
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{size:.3g} {unit}" if unit != "B" else f"{int(size)} B"
        size /= 1024
    raise AssertionError("unreachable")


def check_size(entries: Sequence[Entry], limit: int | None) -> int:
    """The bytes of ``entries``' files, or :class:`TooLarge` past ``limit``."""
    size = total_size(entries)
    if limit is not None and size > limit:
        raise TooLarge(f"the task's files hold {size_text(size)}, more than the {size_text(limit)} "
                       "a replay may ship to a Ray worker (raise --max-case-size, or verify from a Hub "
                       "dataset so that each worker fetches its case)")
    return size


class _Chunker:
    """A write-only stream that puts every :data:`CHUNK` bytes into the object store."""

    def __init__(self, put: Callable[[bytes], Any], chunk: int) -> None:
        self.put, self.chunk = put, chunk
        self.buffer = bytearray()
        self.chunks: list[Any] = []

    def write(self, data: bytes) -> int:
        self.buffer += data
        while len(self.buffer) >= self.chunk:
            self.chunks.append(self.put(bytes(self.buffer[: self.chunk])))
            del self.buffer[: self.chunk]
        return len(data)

    def flush(self) -> None:
        if self.buffer:
            self.chunks.append(self.put(bytes(self.buffer)))
            self.buffer.clear()


def ship(entries: Sequence[Entry], *, put: Callable[[bytes], Any], chunk: int = CHUNK,
         limit: int | None = DEFAULT_LIMIT) -> Shipment:
    """``entries`` as a tar stream in chunks handed to ``put`` (``ray.put``); files are read
    as regular files (a file swapped for a FIFO since the survey is refused)."""
    size = check_size(entries, limit)
    out = _Chunker(put, chunk)
    with tarfile.open(fileobj=out, mode="w|", format=tarfile.PAX_FORMAT) as archive:  # type: ignore[call-overload]
        for entry in entries:
            info = tarfile.TarInfo(entry.dest)
            info.mode, info.mtime = entry.mode & 0o777, int(entry.mtime)
            if entry.kind == DIR:
                info.type = tarfile.DIRTYPE
                archive.addfile(info)
            elif entry.kind == LINK:
                info.type, info.linkname = tarfile.SYMTYPE, entry.link or "."
                archive.addfile(info)
            else:
                assert entry.source is not None
                try:
                    fd = open_regular(entry.source)
                except OSError as error:
                    raise JunoBenchError(f"cannot read ({error.strerror or error})", file=entry.source) from None
                with os.fdopen(fd, "rb") as reader:
                    info.size = os.fstat(reader.fileno()).st_size
                    archive.addfile(info, _Exactly(reader, info.size))
    out.flush()
    return Shipment(tuple(out.chunks), size)


class _Exactly:
    """``size`` bytes of a file (a file that shrank since is padded, one that grew cut):
    the tar header already holds the size."""

    def __init__(self, reader: IO[bytes], size: int) -> None:
        self.reader, self.left = reader, size

    def read(self, n: int = -1) -> bytes:
        n = self.left if n < 0 else min(n, self.left)
        data = self.reader.read(n)
        data += b"\0" * (n - len(data))
        self.left -= n
        return data


class _Chunks:
    """A read-only stream over the chunks of a shipment, fetched one at a time."""

    def __init__(self, chunks: Iterable[Any], get: Callable[[Any], bytes]) -> None:
        self.pending: Iterator[Any] = iter(chunks)
        self.get = get
        self.current = memoryview(b"")

    def read(self, n: int = -1) -> bytes:
        parts = []
        while n != 0:
            if not self.current:
                ref = next(self.pending, None)
                if ref is None:
                    break
                self.current = memoryview(self.get(ref))
            take = len(self.current) if n < 0 else min(n, len(self.current))
            parts.append(bytes(self.current[:take]))
            self.current = self.current[take:]
            n = n - take if n > 0 else n
        return b"".join(parts)


def receive(chunks: Iterable[Any], workspace: Placing, root: Path, *, get: Callable[[Any], bytes]) -> None:
    """Extract the tar stream of ``chunks`` (fetched with ``get``, ``ray.get``) into
    ``root``, each member where ``workspace`` places it: folders, regular files and links
    that stay inside only."""
    root.mkdir(parents=True, exist_ok=True)
    with tarfile.open(fileobj=_Chunks(chunks, get), mode="r|") as stream:  # type: ignore[call-overload]
        for member in stream:
            extract(stream, member, workspace, root)


def extract(stream: tarfile.TarFile, member: tarfile.TarInfo, workspace: Placing, root: Path) -> None:
    """Extract one ``member`` of ``stream`` where ``workspace`` places it under ``root``."""
    try:
        member.name = workspace.path(member.name).relative_to(root).as_posix()
    except ValueError:
        raise JunoBenchError(f"archive member refused: {member.name!r} lands outside the workspace") from None
    if not hasattr(tarfile, "data_filter"):  # Pythons without extraction filters
        if not (member.isfile() or member.isdir()):
            raise JunoBenchError(f"archive member {member.name!r} is not a file or folder")
        stream.extract(member, root)  # checked above
        return
    try:
        stream.extract(member, root, filter="data")
    except tarfile.FilterError as error:
        raise JunoBenchError(f"archive member refused: {error}") from None
