"""An export directory (the Hugging Face Hub layout) and reading records from it.

::

    <dir>/README.md                                  the dataset card (YAML configs + features)
    <dir>/cases/test-00000-of-00001.parquet          config "cases", split "test"
    <dir>/notebooks/test-00000-of-00001.parquet      config "notebooks", split "test"
    <dir>/checksums.json                             sha256 and size of every other file

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
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from junobench.errors import JunoBenchError

CARD = "README.md"
MANIFEST = "checksums.json"
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


def is_export(root: str | Path) -> bool:
    """Whether ``root`` holds the parquet files of both configs."""
    return all((Path(root) / path).is_file() for path in PARQUET.values())


def file_digest(path: str | Path) -> dict[str, Any]:
    """``{"sha256": hex, "size": bytes}`` of a file."""
    digest = hashlib.sha256()
    size = 0
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
            size += len(block)
    return {"sha256": digest.hexdigest(), "size": size}


def read_manifest(root: str | Path) -> dict[str, Any]:
    """The parsed manifest of an export; a missing or malformed one is a :class:`JunoBenchError`."""
    path = Path(root) / MANIFEST
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise JunoBenchError("the checksum manifest is missing", file=path,
                             hint="re-export with `junobench export`") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise JunoBenchError(f"the checksum manifest is unreadable ({error})", file=path,
                             hint="re-export with `junobench export`") from None
    if not isinstance(data, dict) or data.get("format") != MANIFEST_FORMAT:
        raise JunoBenchError(f"not a {MANIFEST_FORMAT} manifest", file=path,
                             hint="re-export with this version of junobench")
    files = data.get("files")
    if not isinstance(files, dict) or not all(
        isinstance(v, dict) and isinstance(v.get("sha256"), str) and isinstance(v.get("size"), int)
        for v in files.values()
    ):
        raise JunoBenchError("the manifest's 'files' must map each path to its sha256 and size",
                             file=path, hint="re-export with `junobench export`")
    return data


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
    dataset = _mapped(arrow_copy(path, config, cache_dir), info, path)
    if dataset is None:
        dataset = datasets.Dataset(_read_parquet(path, config, criteria), info=info,
                                   split=datasets.Split.TEST)
    elif criteria:
        dataset = datasets.Dataset(_filtered(dataset.data.table, criteria), info=info,
                                   split=datasets.Split.TEST)
    _log_build_report(root)
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
    parquet's size and modification time and of the records' schema, so a re-export (or a
    junobench with other features) makes a new copy and the old one is removed. Written
    to a temporary file and renamed, so a copy is whole or absent. None when the cache
    cannot be written: the caller then reads the parquet directly.
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
    target = folder / f"{config}-{stat.st_size}-{stat.st_mtime_ns}-{schema}.arrow"
    if target.is_file():
        return target
    try:  # a writable cache first, so that without one the parquet is read only once
        folder.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=folder, prefix=f".{config}-", suffix=".tmp")
    except OSError as error:
        logger.debug("no Arrow copy of %s in the cache (%s): reading the parquet", path, error)
        return None
    try:
        with os.fdopen(handle, "wb") as sink:
            table = _read_parquet(path, config, {})  # checked before anything is cached
            with pa.ipc.new_stream(sink, table.schema) as writer:
                writer.write_table(table, max_chunksize=1000)
        os.replace(temporary, target)
    except OSError as error:  # disk full: read the parquet directly
        Path(temporary).unlink(missing_ok=True)
        logger.debug("no Arrow copy of %s in the cache (%s): reading the parquet", path, error)
        return None
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    for old in folder.glob(f"{config}-*.arrow"):  # copies of earlier versions of the file
        if old != target:
            with contextlib.suppress(OSError):  # still mapped elsewhere (Windows): next time
                old.unlink(missing_ok=True)
    return target


def _read_parquet(path: Path, config: str, criteria: Mapping[str, list[str]]) -> Any:
    """The parquet's table (filters pushed down to the reader), checked against the features."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from junobench.data.records import FEATURES

    try:
        if criteria:
            _filter_expression(pq.read_table(path, columns=list(criteria)), criteria)
        table = pq.read_table(path, filters=_filter_expression(None, criteria))
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


def _log_build_report(root: Path) -> None:
    """Log the problems the export's build reported, as a raw build does."""
    from junobench.data.preparation import BuildReport

    if not (root / MANIFEST).is_file():
        return
    report = read_manifest(root).get("report") or {}
    for line in BuildReport.from_dict(report, snapshot=root).summary():
        logger.warning(line)
