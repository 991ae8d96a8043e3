"""A mined corpus read back (summaries, review sheets, the site's gallery): each parquet
file opened as data from elsewhere, checked against the corpus' manifest and the schema
``mine`` writes, its rows streamed a batch at a time.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from junobench.errors import JunoBenchError
from junobench.mining.features import PARQUET, schemas
from junobench.mining.write import MANIFEST, read_manifest
from junobench.safety.paths import NotRegularFile, open_inside

#: What to do about a corpus that is not as ``mine`` wrote it.
AGAIN = "mine it again: a corpus is read as `junobench mine` wrote it"
#: The columns no row of a config may leave empty: its key, and what places a row.
REQUIRED: dict[str, tuple[str, ...]] = {"notebooks": ("notebook",), "cells": ("notebook", "cell", "cell_type"),
                                        "figures": ("figure", "notebook", "cell", "output")}


def open_config(folder: Path, config: str) -> Any:
    """``config``'s parquet file in the mined corpus ``folder`` (a ``pyarrow.parquet.ParquetFile``),
    opened as data from elsewhere is: its folder and itself never through a link, without
    blocking (a FIFO is refused, not waited on), only a regular file, and only of the size
    the corpus' ``checksums.json`` gives it. Anything else is a :class:`JunoBenchError`
    naming the file."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    hint = AGAIN
    name = PARQUET[config]
    path = folder / name
    entry = read_manifest(folder, hint="give the folder `junobench mine --out` wrote").get(name)
    if entry is None:
        raise JunoBenchError(f"{MANIFEST} does not list {name}", file=folder / MANIFEST, hint=hint)
    try:
        fd = open_inside(folder, f"{config}/{path.name}", follow_folder=True)  # the folder the user named
    except FileNotFoundError:
        raise JunoBenchError("missing", file=path, hint=hint) from None
    except NotRegularFile as error:
        raise JunoBenchError(str(error), file=path, hint=hint) from None
    except OSError as error:
        problem = "a symbolic link, never followed" if error.errno in (errno.ELOOP, errno.ENOTDIR) else error.strerror
        raise JunoBenchError(f"cannot be read: {problem}", file=path, hint=hint) from None
    try:
        size = os.fstat(fd).st_size
        if size != entry["size"]:
            raise JunoBenchError(f"{size:,} bytes, where {MANIFEST} says {entry['size']:,}: the file changed after "
                                 "it was mined", file=path, hint=hint)
        handle = os.fdopen(os.dup(fd), "rb")
        try:
            return pq.ParquetFile(handle)
        except BaseException:
            handle.close()
            raise
    except (pa.ArrowException, OSError, ValueError) as error:
        raise JunoBenchError(f"not a parquet file ({str(error)[:200]})", file=path, hint=hint) from None
    finally:
        os.close(fd)


def read_rows(folder: Path, config: str, columns: Sequence[str], *, batch_size: int) -> Iterator[dict[str, Any]]:
    """The rows (``columns`` only) of ``config``'s parquet file in the mined corpus
    ``folder`` (:func:`open_config`), read ``batch_size`` rows at a time (no more held).
    A column missing or of another type than :func:`schemas` gives it, a row leaving a
    :data:`REQUIRED` column empty (rows counted from 0, as ``datasets`` does), or a file
    that cannot be read is a :class:`JunoBenchError` naming the file (and the row)."""
    import pyarrow as pa

    path = folder / PARQUET[config]
    hint = AGAIN
    file = open_config(folder, config)
    try:
        found, expected = file.schema_arrow, schemas()[config]
        for column in columns:
            if found.get_field_index(column) < 0:
                raise JunoBenchError(f"no column {column!r}: not a {config} file of a mined corpus", file=path,
                                     hint=hint)
            if not found.field(column).type.equals(expected.field(column).type):
                raise JunoBenchError(f"column {column!r} is {found.field(column).type}, not "
                                     f"{expected.field(column).type}", file=path, hint=hint)
        required = [c for c in REQUIRED[config] if c in columns]
        start = 0
        try:
            for batch in file.iter_batches(columns=list(columns), batch_size=batch_size):
                for column in required:
                    values = batch.column(column)
                    if values.null_count:
                        row = start + values.is_null().to_pylist().index(True)
                        raise JunoBenchError(f"row {row}: {column} is empty", file=path, hint=hint)
                yield from batch.to_pylist()
                start += batch.num_rows
        except (pa.ArrowException, OSError, ValueError) as error:
            raise JunoBenchError(f"cannot read the rows from row {start} on ({str(error)[:200]})", file=path,
                                 hint=hint) from None
    finally:
        file.close(force=True)


def count_rows(folder: Path, config: str) -> int:
    """How many rows ``config``'s parquet file in the mined corpus ``folder`` says it has
    (its footer's count; opened by :func:`open_config`)."""
    file = open_config(folder, config)
    try:
        return int(file.metadata.num_rows)
    finally:
        file.close(force=True)
