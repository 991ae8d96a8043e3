"""What a snapshot says about its release: its version, and the digests of its input data.

``<root>/VERSION`` (optional) holds the dataset's own version, one line such as ``1.1.0``
(``MAJOR.MINOR.PATCH``, optionally ``-pre`` or ``+build``); ``junobench release`` reads it,
exports carry it (card, ``croissant.json``, manifest). A snapshot without it is a snapshot
of no declared version. The digests of each case's input-data files (everything under
``benchmark/<case>/data/`` except the dataset metadata files) are what ``junobench diff``
compares and what an export records, since it does not hold the data itself.

>>> from junobench.data.snapshot import sample_path
>>> digests = data_digests(sample_path())
>>> sorted(digests["pandas_1"])
['passengers.csv']
>>> dataset_version(sample_path()) is None
True
"""

from __future__ import annotations

import contextlib
import os
import re
from pathlib import Path

from junobench.data import layout
from junobench.data.export import file_digest
from junobench.errors import JunoBenchError
from junobench.safety.paths import is_dir_entry, read_regular
from junobench.safety.text import shortened

#: ``MAJOR.MINOR.PATCH`` (Croissant's recommendation), an optional pre-release and build.
VERSION_PATTERN = re.compile(r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)"
                             r"(?:-[0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*)?(?:\+[0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*)?\Z")
_MAX_VERSION_BYTES = 256


def check_version(text: str, *, file: str | Path | None = None) -> str:
    """``text`` when it is a version (see :data:`VERSION_PATTERN`), else a :class:`JunoBenchError`."""
    if not VERSION_PATTERN.match(text):
        raise JunoBenchError(f"not a dataset version: {shortened(text, 41)!r}", file=file,
                             hint="write MAJOR.MINOR.PATCH, e.g. 1.1.0")
    return text


def dataset_version(root: str | Path) -> str | None:
    """The version in ``<root>/VERSION`` (None when the file is absent); a file that is not
    a regular file, too long or not a version is a :class:`JunoBenchError` naming it."""
    path = Path(root) / layout.VERSION_FILE
    if not os.path.lexists(path):
        return None
    if path.is_symlink():
        raise JunoBenchError("the dataset version is a symbolic link", file=path,
                             hint="VERSION is a regular file holding one line such as 1.1.0")
    try:
        raw = read_regular(path, limit=_MAX_VERSION_BYTES)
    except OSError as error:
        raise JunoBenchError(f"cannot read the dataset version ({error.strerror or error})", file=path,
                             hint="VERSION holds one line such as 1.1.0") from None
    try:
        text = raw.decode("utf-8").strip()
    except UnicodeDecodeError:
        raise JunoBenchError("the dataset version is not UTF-8 text", file=path,
                             hint="VERSION holds one line such as 1.1.0") from None
    return check_version(text, file=path)


def data_digests(root: str | Path) -> dict[str, dict[str, str]]:
    """Case id → {path under its ``data/`` folder: sha256} of its input-data files.

    Only the cases whose data are in the snapshot are listed: a ``data/`` folder holding
    nothing but metadata files (a snapshot fetched without its data) is not evidence that
    the data are empty. Links and anything but regular files are skipped (validate reports
    them); so are unreadable files.
    """
    found: dict[str, dict[str, str]] = {}
    bench = layout.benchmark_dir(root)
    try:
        with os.scandir(bench) as entries:
            cases = sorted(e.name for e in entries if is_dir_entry(e) and not e.is_symlink())
    except OSError:
        return found
    for case in cases:
        folder = bench / case / layout.DATA_DIR
        if folder.is_symlink() or not folder.is_dir():
            continue
        files = {name: digest for name, digest in _walk(folder) if not name.endswith(layout.METADATA_SUFFIX)}
        if files:
            found[case] = dict(sorted(files.items()))
    return found


def _walk(folder: Path) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    pending = [""]
    while pending:
        relative = pending.pop()
        try:
            with os.scandir(folder / relative) as entries:
                listing = sorted(entries, key=lambda e: e.name)
        except OSError:
            continue
        for entry in listing:
            name = f"{relative}/{entry.name}" if relative else entry.name
            if entry.is_symlink():
                continue
            if entry.is_dir(follow_symlinks=False):
                pending.append(name)
            elif entry.is_file(follow_symlinks=False):
                with contextlib.suppress(OSError):
                    out.append((name, file_digest(folder / name)["sha256"]))
    return out
