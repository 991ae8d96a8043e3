"""Archives are listed and checked before anything is decompressed: no absolute paths,
no ``..``, no links leaving the destination, no special files, no bombs (caps on the
members, the declared size and the compression ratio). The zip-based formats junobench
reads (xlsx tables) pass the same check before their reader opens them.
"""

from __future__ import annotations

import posixpath
import stat
import tarfile
import zipfile
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from junobench.errors import JunoBenchError

#: Default cap on an archive's total uncompressed size (declared and actual).
MAX_ARCHIVE_BYTES = 32 * 1024**3
#: Default cap on an archive's number of members (files, folders and links).
MAX_ARCHIVE_MEMBERS = 100_000
#: Default cap on the compression ratio (uncompressed / compressed) of a zip member, and of
#: a compressed tar's data so far against the whole archive (its members share one
#: compressed stream). Real data compresses up to a few dozen to one; zeros, a thousand.
MAX_COMPRESSION_RATIO = 200
#: The ratio is only judged past this many uncompressed bytes (small files vary widely).
RATIO_FROM_BYTES = 1 << 20


@dataclass(frozen=True)
class Member:
    """A regular file of an archive, as listed (nothing read yet)."""

    name: str  # normalised POSIX path inside the archive
    size: int  # declared uncompressed size
    key: Any  # zipfile.ZipInfo or tarfile.TarInfo


def archive_members(source: Path, *, max_bytes: int = MAX_ARCHIVE_BYTES,
                    max_members: int = MAX_ARCHIVE_MEMBERS,
                    max_ratio: float = MAX_COMPRESSION_RATIO,
                    refusal: Refusal | None = None) -> list[Member]:
    """The regular files of a zip or tar archive, after checking every member: refuses
    absolute paths, ``..``, links leaving the archive's root, special files, more than
    ``max_members`` members, a total declared size over ``max_bytes``, and a compression
    ratio over ``max_ratio`` (per member in a zip; in a compressed tar, the declared
    size so far against the whole archive's), naming the member in each case. Nothing is
    decompressed but the tar headers. ``refusal``: how the errors name the file and what
    they say was spared (default: an archive, nothing extracted)."""
    refusal = refusal or EXTRACTING

    def refuse(member: str, reason: str) -> JunoBenchError:
        return refusal.error(source, member, reason)

    members: list[Member] = []
    total = 0
    archive_size = max(1, source.stat().st_size)
    count = 0
    for name, size, kind, link, key in _listing(source, refusal):
        count += 1
        if count > max_members:
            raise refuse(name, f"the archive has more than {max_members:,} members "
                               "(for real data, `construct downsample` takes --max-members)")
        compressed = _compressed_size(key, archive_size)
        judged = size if isinstance(key, zipfile.ZipInfo) else total + size
        if judged > RATIO_FROM_BYTES and judged > max_ratio * compressed:
            raise refuse(name, f"it compresses {judged / max(compressed, 1):,.0f} to one, "
                               f"past the cap of {max_ratio:g} (a decompression bomb?)")
        safe = safe_name(name)
        if safe is None:
            raise refuse(name, "its path is absolute or leaves the destination (..)")
        if kind == "link":
            target = link.replace("\\", "/")
            resolved = posixpath.normpath(posixpath.join(posixpath.dirname(safe), target))
            if posixpath.isabs(target) or resolved == ".." or resolved.startswith("../"):
                raise refuse(name, f"it links outside the destination ({link})")
            continue  # safe links are not extracted: only regular files are sampled
        if kind == "special":
            raise refuse(name, "it is a device, fifo or other special file")
        if kind == "dir":
            continue
        total += size
        if total > max_bytes:
            raise refuse(name, f"the archive's declared size passes the cap of "
                               f"{human_size(max_bytes)} (a decompression bomb?)")
        members.append(Member(safe, size, key))
    return members


def _compressed_size(key: Any, archive_size: int) -> int:
    """A zip member's compressed size; for a tar member, the whole archive's size."""
    if isinstance(key, zipfile.ZipInfo):
        return max(1, key.compress_size)
    return archive_size


def _listing(source: Path, refusal: Refusal) -> Iterator[tuple[str, int, str, str, Any]]:
    """:func:`_raw_listing`, with a damaged archive (cut short, bad headers) a clear error."""
    try:
        yield from _raw_listing(source)
    except (zipfile.BadZipFile, tarfile.TarError, EOFError, zlib.error, OSError, ValueError) as error:
        raise JunoBenchError(f"{refusal.subject} is damaged or cut short ({error or type(error).__name__})",
                             file=source, hint=f"{refusal.spared}; fetch it again") from None


def _raw_listing(source: Path) -> Iterator[tuple[str, int, str, str, Any]]:
    """``(name, declared size, kind, link target, key)`` per member; kind is file, dir,
    link or special."""
    if zipfile.is_zipfile(source):
        with zipfile.ZipFile(source) as archive:
            for info in archive.infolist():
                mode = info.external_attr >> 16
                if stat.S_ISLNK(mode):
                    with archive.open(info) as link:
                        target = link.read(4096).decode("utf-8", "replace")
                    yield info.filename, 0, "link", target, info
                elif info.is_dir():
                    yield info.filename, 0, "dir", "", info
                elif stat.S_IFMT(mode) not in (0, stat.S_IFREG):  # 0: no Unix type recorded
                    yield info.filename, 0, "special", "", info
                else:
                    yield info.filename, info.file_size, "file", "", info
        return
    try:
        tar = tarfile.open(source)  # noqa: SIM115 (closed by the with below)
    except (tarfile.TarError, OSError) as error:
        raise JunoBenchError(f"not a zip or tar archive ({error})", file=source) from None
    with tar:
        for entry in tar:  # lazily: a bomb is refused before it is all decompressed
            if entry.issym() or entry.islnk():
                yield entry.name, 0, "link", entry.linkname, entry
            elif entry.isdir():
                yield entry.name, 0, "dir", "", entry
            elif entry.isfile():
                yield entry.name, entry.size, "file", "", entry
            else:
                yield entry.name, 0, "special", "", entry


def safe_name(name: str) -> str | None:
    """The member's normalised relative path, or None when it is absolute or climbs out."""
    text = name.replace("\\", "/")
    if text.startswith("/") or (len(text) > 1 and text[1] == ":"):
        return None
    parts = [p for p in text.split("/") if p not in ("", ".")]
    if not parts or ".." in parts:
        return None
    return "/".join(parts)


@dataclass(frozen=True)
class Refusal:
    """How a refused archive is named (``subject``) and what its refusal spared."""

    subject: str
    spared: str

    def error(self, source: Path, member: str, reason: str) -> JunoBenchError:
        return JunoBenchError(f"refusing {self.subject}: member {member!r}: {reason}", file=source,
                              hint=f"{self.spared}; check where the file comes from")


#: An archive about to be extracted (``construct downsample``).
EXTRACTING = Refusal("the archive", "nothing was extracted")


def unsafe_archive(source: Path, member: str, reason: str) -> JunoBenchError:
    """The error refusing an archive to extract because of ``member``."""
    return EXTRACTING.error(source, member, reason)


def human_size(size: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{size} B"
