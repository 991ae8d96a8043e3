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

import hashlib
import json
import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from junobench.errors import JunoBenchError, Problem

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


def read_export(root: str | Path, config: str, criteria: Mapping[str, list[str]]) -> Any:
    """The records of ``config`` from an export's parquet, filtered by ``criteria``.

    Filter values are checked against the column (unknown ones fail with the closest valid
    values, as for a raw build); the filter itself is pushed down to the parquet reader,
    so row groups that cannot match are not read.
    """
    import datasets
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    from junobench.loading import BuildReport, apply_filters
    from junobench.records import FEATURES

    if config not in FEATURES:
        raise JunoBenchError(f"unknown config {config!r}", hint=f"use one of {', '.join(FEATURES)}")
    root = Path(root)
    path = root / PARQUET[config]
    expression = None
    try:
        if criteria:
            columns = pq.read_table(path, columns=list(criteria))
            apply_filters(datasets.Dataset(columns), criteria)  # raises on unknown values
            for name, values in criteria.items():
                term = pc.field(name).isin(values)
                expression = term if expression is None else expression & term
        table = pq.read_table(path, filters=expression)
    except OSError as error:
        raise JunoBenchError(f"cannot read the parquet file ({error})", file=path,
                             hint="check the export with `junobench check`") from None
    features = FEATURES[config]
    if table.schema.remove_metadata() != features.arrow_schema.remove_metadata():
        raise JunoBenchError(f"the parquet columns are not those of the {config!r} records",
                             file=path, hint="re-export with this version of junobench")
    table = table.replace_schema_metadata(features.arrow_schema.metadata)
    if (root / MANIFEST).is_file():
        report = read_manifest(root).get("report") or {}
        summary = BuildReport(root, "", skipped=report.get("skipped", []),
                              problems=[Problem(**p) for p in report.get("problems", [])],
                              absent=report.get("absent", {}),
                              unlisted_folders=report.get("unlisted_folders", [])).summary()
        for line in summary:
            logger.warning(line)
    return datasets.Dataset(table, info=datasets.DatasetInfo(features=features),
                            split=datasets.Split.TEST)
