"""An export directory (the Hugging Face Hub layout) and reading records from it.

::

    <dir>/README.md                                  the dataset card (YAML configs + features)
    <dir>/cases/test-00000-of-00001.parquet          config "cases", split "test"
    <dir>/notebooks/test-00000-of-00001.parquet      config "notebooks", split "test"
    <dir>/croissant.json                             Croissant 1.0 metadata (JSON-LD, with RAI fields)
    <dir>/checksums.json                             sha256 and size of every other file, the dataset
                                                     version and the input-data digests

Stock ``datasets.load_dataset(dir, "cases")`` reads it; so does :func:`junobench.load`,
which reads the parquet directly (filters pushed down) instead of rebuilding records.

>>> parquet_path("notebooks")
'notebooks/test-00000-of-00001.parquet'
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from junobench.data import layout
from junobench.errors import JunoBenchError
from junobench.safety.atomic import atomic_open
from junobench.safety.paths import open_regular, read_regular, relative_name
from junobench.safety.text import shortened

CARD = "README.md"
MANIFEST = "checksums.json"
CROISSANT = "croissant.json"
SPLIT = "test"
CONFIG_NAMES = ("cases", "notebooks")
DEFAULT_CONFIG = "cases"
#: Manifest format tag; a manifest of another format is refused, not misread.
MANIFEST_FORMAT = "junobench-export/1"

logger = logging.getLogger("junobench")


def parquet_path(config: str) -> str:
    """The parquet file of ``config``, relative to the export directory (POSIX)."""
    return f"{config}/{SPLIT}-00000-of-00001.parquet"


PARQUET: dict[str, str] = {config: parquet_path(config) for config in CONFIG_NAMES}
#: The files an export holds besides its manifest (all listed in the manifest); the record
#: of renamed cases only when the snapshot has one.
EXPORT_FILES: frozenset[str] = frozenset({CARD, CROISSANT, *PARQUET.values(), layout.RENAMED_CASES})
#: The snapshot layout's root files an export carries (so that a release runs).
LAYOUT_FILES: frozenset[str] = frozenset({layout.DESC_TABLE, layout.DIAGNOSIS_TABLE, layout.VERSION_FILE})


def is_export_name(name: str) -> bool:
    """Whether ``name`` (a relative POSIX path) is a file an export writes: its own files
    (:data:`EXPORT_FILES`), the snapshot's tables and version, the environment's files,
    and the files of case folders (``benchmark/<case>/…``)."""
    from junobench import vocab
    from junobench.envs.environment import SNAPSHOT_FOLDER

    if name in EXPORT_FILES or name in LAYOUT_FILES:
        return True
    parts = name.split("/")
    if parts[0] == SNAPSHOT_FOLDER:
        return len(parts) == 2
    return len(parts) >= 3 and parts[0] == layout.BENCHMARK_DIR and vocab.is_case_id(parts[1])


def is_export(root: str | Path) -> bool:
    """Whether ``root`` holds the parquet files of both configs."""
    return all((Path(root) / path).is_file() for path in PARQUET.values())


def file_digest(path: str | Path) -> dict[str, Any]:
    """``{"sha256": hex, "size": bytes}`` of a regular file (anything else raises ``OSError``)."""
    digest = hashlib.sha256()
    size = 0
    with os.fdopen(open_regular(path), "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
            size += len(block)
    return {"sha256": digest.hexdigest(), "size": size}


def is_file_digest(entry: object) -> bool:
    """Whether a manifest's entry has :func:`file_digest`'s form: ``{"sha256": 64 hex
    digits, "size": bytes}``.

    >>> is_file_digest({"sha256": "0" * 64, "size": 3}), is_file_digest({"sha256": "x", "size": 3})
    (True, False)
    """
    return (isinstance(entry, dict) and isinstance(entry.get("sha256"), str)
            and _SHA256.match(entry["sha256"]) is not None and _count(entry.get("size")))


#: A manifest larger than this is refused unread.
MAX_MANIFEST_BYTES = 256 << 20
_SHA256 = re.compile(r"^[0-9a-f]{64}$")


def read_manifest(root: str | Path) -> dict[str, Any]:
    """The parsed, checked manifest of an export; a missing or malformed one is a
    :class:`JunoBenchError` naming the problem. Its ``files`` must be exactly files an
    export writes (relative paths: never absolute, never ``..``), each with its sha256
    and size; ``rows`` and ``report`` must have the shape :func:`export` gives them."""
    path = Path(root) / MANIFEST
    hint = "re-export with `junobench export`"
    try:
        data = json.loads(read_regular(path, limit=MAX_MANIFEST_BYTES).decode("utf-8"))
    except FileNotFoundError:
        raise JunoBenchError("the checksum manifest is missing", file=path, hint=hint) from None
    except OSError as error:
        raise JunoBenchError(f"the checksum manifest is unreadable ({error.strerror or error})",
                             file=path, hint=hint) from None
    except (UnicodeDecodeError, ValueError, RecursionError) as error:
        reason = "nested too deeply" if isinstance(error, RecursionError) else str(error)[:200]
        raise JunoBenchError(f"the checksum manifest is unreadable ({reason})", file=path,
                             hint=hint) from None
    if not isinstance(data, dict) or data.get("format") != MANIFEST_FORMAT:
        raise JunoBenchError(f"not a {MANIFEST_FORMAT} manifest", file=path,
                             hint="re-export with this version of junobench")
    problem = _manifest_problem(data)
    if problem:
        raise JunoBenchError(f"the checksum manifest is malformed: {problem}", file=path, hint=hint)
    return data


def _manifest_problem(data: dict[str, Any]) -> str | None:
    files = data.get("files")
    if not isinstance(files, dict):
        return "'files' must map each path to its sha256 and size"
    for name, entry in files.items():
        if relative_name(name) != name:
            return f"'files' lists {shortened(repr(name), 81)}, which is not a relative path inside the export"
        if not is_export_name(name):
            return f"'files' lists {shortened(repr(name), 81)}, which is not a file an export writes"
        if not is_file_digest(entry):
            return f"'files' entry {name!r} must be {{\"sha256\": 64 hex digits, \"size\": bytes}}"
    rows = data.get("rows", {})
    if not (isinstance(rows, dict) and all(k in CONFIG_NAMES and _count(v) for k, v in rows.items())):
        return "'rows' must map each config to its row count"
    report = data.get("report", {})
    if not isinstance(report, dict):
        return "'report' must be an object"
    lists = {"skipped": report.get("skipped", []), "unlisted_folders": report.get("unlisted_folders", [])}
    for key, value in lists.items():
        if not _strings(value):
            return f"'report.{key}' must be a list of strings"
    problems = report.get("problems", [])
    if not (isinstance(problems, list) and all(
            isinstance(p, dict) and isinstance(p.get("problem"), str)
            and set(p) <= {"file", "case", "problem", "hint"}
            and all(v is None or isinstance(v, str) for v in p.values()) for p in problems)):
        return "'report.problems' must be a list of {file, case, problem, hint}"
    absent = report.get("absent", {})
    if not (isinstance(absent, dict) and all(map(_strings, absent.values()))):
        return "'report.absent' must map what is absent to lists of case ids"
    if not (data.get("version") is None or isinstance(data["version"], str)):
        return "'version' must be the snapshot's version text"
    digests = data.get("data", {})
    if not (isinstance(digests, dict) and all(
            isinstance(files, dict) and all(isinstance(name, str) and isinstance(digest, str)
                                            and _SHA256.match(digest) for name, digest in files.items())
            for files in digests.values())):
        return "'data' must map each case to its data files' sha256 digests"
    return None


def _strings(value: Any) -> bool:
    """Whether ``value`` is a list of strings (checked without a Python call per item)."""
    return isinstance(value, list) and set(map(type, value)) <= {str}


def _count(value: Any) -> bool:
    return type(value) is int and value >= 0


def verify_file(root: Path, name: str, data: bytes | None = None) -> bytes:
    """The bytes of the export's file ``name``, checked against the manifest's size and
    sha256; a mismatch is a :class:`JunoBenchError` naming the file."""
    manifest = read_manifest(root)
    path = root / name
    expected = manifest["files"].get(name)
    if expected is None:
        raise JunoBenchError("not listed in the export's manifest", file=path,
                             hint="re-export, or run `junobench check` on the export")
    if data is None:
        try:
            data = read_regular(path)
        except OSError as error:
            raise JunoBenchError(f"cannot read the parquet file ({error.strerror or error})",
                                 file=path, hint="check the export with `junobench check`") from None
    if len(data) != expected["size"]:
        detail = f"size {len(data)} bytes, the manifest says {expected['size']}"
    elif hashlib.sha256(data).hexdigest() != expected["sha256"]:
        detail = "its sha256 is not the manifest's"
    else:
        return data
    raise JunoBenchError(f"the file does not match the export's manifest ({detail}): it changed "
                         "after export", file=path,
                         hint="re-export, or run `junobench check` on the export")


def read_export(root: str | Path, config: str, criteria: Mapping[str, list[str]],
                cache_dir: str | Path | None = None) -> Any:
    """The records of ``config`` from an export's parquet, filtered by ``criteria``.

    The parquet is turned once into an Arrow file in the cache (see :func:`arrow_copy`) that
    every later load memory-maps, as ``datasets`` does with its own cache: loading a large
    export costs next to nothing and no memory. Filter values are checked against the column
    (unknown ones fail with the closest valid values, as for a raw build); only the matching
    rows are copied. Without a writable cache the parquet is read directly, filters pushed
    down to its reader.
    """
    import datasets

    from junobench.data.records import FEATURES

    if config not in FEATURES:
        raise JunoBenchError(f"unknown config {config!r}", hint=f"use one of {', '.join(FEATURES)}")
    root = Path(root)
    path = root / PARQUET[config]
    features = FEATURES[config]
    info = datasets.DatasetInfo(features=features)
    manifest = read_manifest(root)  # an export without a sound manifest is refused, not trusted
    dataset = _mapped(arrow_copy(path, config, cache_dir), info, path)
    if dataset is None:
        dataset = datasets.Dataset(_read_parquet(path, config, criteria), info=info,
                                   split=datasets.Split.TEST)
    elif criteria:
        dataset = datasets.Dataset(_filtered(dataset.data.table, criteria), info=info,
                                   split=datasets.Split.TEST)
    _log_build_report(root, manifest)
    return dataset


def _mapped(copy: Path | None, info: Any, parquet: Path) -> Any:
    """The memory-mapped dataset of an Arrow copy; None without a copy, or when the copy
    is damaged (it is then removed, and the next load makes it again). A copy cut short
    between two record batches still reads, so its row count is checked against the
    parquet's footer."""
    import datasets
    import pyarrow as pa
    import pyarrow.parquet as pq

    if copy is None:
        return None
    try:
        dataset = datasets.Dataset.from_file(str(copy), info=info, split=datasets.Split.TEST)
        rows = pq.ParquetFile(parquet).metadata.num_rows
        if dataset.num_rows != rows:
            raise ValueError(f"{dataset.num_rows} rows instead of {rows}")
        return dataset
    except (OSError, ValueError, pa.ArrowException) as error:
        logger.warning("%s: damaged cache file removed (%s); reading the export's parquet",
                       copy, error)
        with contextlib.suppress(OSError):
            copy.unlink()
        return None


def arrow_copy(path: Path, config: str, cache_dir: str | Path | None = None) -> Path | None:
    """A memory-mappable Arrow copy of the export parquet ``path`` of ``config``.

    Kept in ``<cache>/exports/<hash of the parquet's real path>/`` under a name made of the
    parquet's size, inode, modification and change times and of the records' schema, so
    a re-export, any change to the file (even one that keeps its size and modification
    time: the change time moves) or a junobench with other features makes a new copy,
    and the old one is removed. The parquet is checked against the export's manifest
    before it is copied. Written to a temporary file and renamed, so a copy is whole or
    absent. None when the cache cannot be written: the caller then reads the parquet
    directly (and checks it each time).
    """
    import pyarrow as pa

    from junobench.data.cache import cache_root
    from junobench.data.records import FEATURES

    try:
        stat = path.stat()
        real = str(path.resolve())
    except OSError as error:
        raise JunoBenchError(f"cannot read the parquet file ({error})", file=path,
                             hint="check the export with `junobench check`") from None
    folder = cache_root(cache_dir) / "exports" / hashlib.sha256(real.encode()).hexdigest()[:20]
    schema = hashlib.sha256(FEATURES[config].arrow_schema.to_string().encode()).hexdigest()[:8]
    key = f"{stat.st_size}-{stat.st_ino}-{stat.st_mtime_ns}-{stat.st_ctime_ns}"
    target = folder / f"{config}-{key}-{schema}.arrow"
    if target.is_file():
        return target
    try:  # a writable cache first, so that without one the parquet is read only once
        folder.mkdir(parents=True, exist_ok=True)
        writable = os.access(folder, os.W_OK)
    except OSError:
        writable = False
    if not writable:
        logger.debug("no Arrow copy of %s: the cache %s cannot be written", path, folder)
        return None
    table = _read_parquet(path, config, {})  # checked before anything is cached
    try:
        with atomic_open(target, "wb") as sink, pa.ipc.new_stream(sink, table.schema) as writer:
            writer.write_table(table, max_chunksize=1000)
    except JunoBenchError as error:  # disk full: read the parquet directly
        logger.debug("no Arrow copy of %s in the cache (%s): reading the parquet", path, error)
        return None
    for old in folder.glob(f"{config}-*.arrow"):  # copies of earlier versions of the file
        if old != target:
            with contextlib.suppress(OSError):  # still mapped elsewhere (Windows): next time
                old.unlink(missing_ok=True)
    return target


def _read_parquet(path: Path, config: str, criteria: Mapping[str, list[str]]) -> Any:
    """The parquet's table (filters pushed down to the reader), checked against the
    export's manifest and against the features."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from junobench.data.records import FEATURES

    data = verify_file(path.parent.parent, PARQUET[config])
    try:
        source = pa.BufferReader(data)
        if criteria:
            _filter_expression(pq.read_table(source, columns=list(criteria)), criteria)
            source = pa.BufferReader(data)
        table = pq.read_table(source, filters=_filter_expression(None, criteria))
    except (OSError, pa.ArrowException) as error:
        raise JunoBenchError(f"cannot read the parquet file ({error})", file=path,
                             hint="check the export with `junobench check`") from None
    features = FEATURES[config]
    if table.schema.remove_metadata() != features.arrow_schema.remove_metadata():
        raise JunoBenchError(f"the parquet columns are not those of the {config!r} records",
                             file=path, hint="re-export with this version of junobench")
    return table.replace_schema_metadata(features.arrow_schema.metadata)


def _filter_expression(columns: Any, criteria: Mapping[str, list[str]]) -> Any:
    """The pyarrow expression of ``criteria`` (None without criteria). Given the filter
    ``columns``, unknown values fail first, with the closest valid ones."""
    import datasets
    import pyarrow.compute as pc

    from junobench.data.filters import apply_filters

    if columns is not None:
        apply_filters(datasets.Dataset(columns), criteria)  # raises on unknown values
    expression = None
    for name, values in criteria.items():
        term = pc.field(name).isin(values)
        expression = term if expression is None else expression & term
    return expression


def _filtered(table: Any, criteria: Mapping[str, list[str]]) -> Any:
    """The rows of a (memory-mapped) table that match ``criteria``, copied."""
    expression = _filter_expression(table.select(list(criteria)), criteria)
    return table.filter(expression).combine_chunks()


def _log_build_report(root: Path, manifest: Mapping[str, Any]) -> None:
    """Log the problems the export's build reported (in its manifest), as a raw build does."""
    from junobench.data.preparation import BuildReport

    report = manifest.get("report") or {}
    for line in BuildReport.from_dict(report, snapshot=root).summary():
        logger.warning(line)
