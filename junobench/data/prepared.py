"""Prepared records read back without ``datasets``: an index of which Arrow files hold the
records of a snapshot's content, written when they are prepared, read by the light verbs.

Loading records through ``datasets`` costs about a second of imports before any work; a
``junobench ls`` on a warm cache needs only the Arrow files that the builder wrote. After
each preparation :func:`remember` notes, per snapshot folder and config, the content
fingerprint, the files and the build report; :func:`recall` serves them (memory-mapped)
while the snapshot's fingerprint, junobench's version and the records' version are still
those noted, and the files are still regular files in the cache. Anything else (no index,
an edited snapshot, a cleared cache, problems to fail on) returns ``None``: the caller
then loads through ``datasets``, which prepares the records and notes them again.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from junobench.data.cache import cache_root
from junobench.data.report import BuildReport
from junobench.errors import JunoBenchError
from junobench.safety.paths import is_within, read_regular

if TYPE_CHECKING:
    import pyarrow as pa

#: The version of the records (the builder's configs); records of another version are
#: prepared anew.
RECORDS_VERSION = "1.2.0"
_FOLDER = "prepared"
_INDEX_LIMIT = 1 << 20


def index_path(root: str | Path, config: str, cache_dir: str | Path | None = None) -> Path:
    """Where the index of ``config``'s records of the snapshot at ``root`` is kept."""
    key = hashlib.sha256(f"{Path(root).resolve()}\0{config}".encode()).hexdigest()[:32]
    return cache_root(cache_dir) / _FOLDER / f"{key}.json"


def remember(root: str | Path, config: str, content: str, files: list[str], report: dict[str, Any],
             cache_dir: str | Path | None = None) -> None:
    """Note that ``files`` (Arrow files in the cache) hold ``config``'s records of the
    snapshot at ``root`` whose fingerprint is ``content``. Best effort: an index that
    cannot be written only means the next load goes through ``datasets``."""
    from junobench.safety.atomic import atomic_open

    entry = {"snapshot": str(Path(root).resolve()), "config": config, "fingerprint": content,
             "junobench": junobench_version(), "records": RECORDS_VERSION, "files": files,
             "report": report}
    path = index_path(root, config, cache_dir)
    if _read_index(path) == entry:
        return
    try:
        with atomic_open(path) as handle:
            handle.write(json.dumps(entry))  # one call of the C encoder (json.dump runs a Python one)
    except (JunoBenchError, OSError):
        return


def recall(root: str | Path, config: str, *, content: str, skip_invalid: bool = False,
           cache_dir: str | Path | None = None) -> tuple[pa.Table, BuildReport] | None:
    """The records of ``config`` noted for the snapshot at ``root`` (fingerprint
    ``content``) and their build report, or ``None`` when they must be prepared or loaded
    through ``datasets`` (see the module's description)."""
    entry = _read_index(index_path(root, config, cache_dir))
    if entry is None or entry.get("snapshot") != str(Path(root).resolve()) \
            or entry.get("config") != config or entry.get("fingerprint") != content \
            or entry.get("junobench") != junobench_version() \
            or entry.get("records") != RECORDS_VERSION:
        return None
    try:
        report = BuildReport.from_dict(entry.get("report") or {}, snapshot=Path(root), fingerprint=content)
    except (TypeError, ValueError, AttributeError):  # an index that is not junobench's
        return None
    if report.problems and not skip_invalid:
        return None  # the full load fails with every problem listed
    files = entry.get("files")
    base = cache_root(cache_dir)
    if not isinstance(files, list) or not files \
            or not all(isinstance(f, str) and is_within(f, base) and _regular(f) for f in files):
        return None
    import pyarrow as pa

    try:
        tables = [pa.ipc.open_stream(pa.memory_map(f)).read_all() for f in files]
        table = pa.concat_tables(tables)
    except (OSError, pa.ArrowException):
        return None
    if not table.num_rows:
        return None
    return table, report


def _read_index(path: Path) -> dict[str, Any] | None:
    try:
        entry = json.loads(read_regular(path, limit=_INDEX_LIMIT))
    except (OSError, ValueError):
        return None
    return entry if isinstance(entry, dict) else None


def _regular(path: str) -> bool:
    import stat

    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except OSError:
        return False


def junobench_version() -> str:
    """The installed junobench's version (records prepared by another are not served)."""
    import junobench

    return str(junobench.__version__)
