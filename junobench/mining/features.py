"""The three configs of a mined corpus: ``notebooks``, ``cells``, ``figures``. Their columns
are Arrow schemas (:func:`schemas`: what the workers build rows with, ``datasets`` not
imported), and ``datasets`` features derived from them (``image`` a :class:`datasets.Image`,
so that stock ``load_dataset`` gives decoded pictures and the Hub's viewer shows them).

>>> sorted(features())
['cells', 'figures', 'notebooks']
>>> type(features()["figures"]["image"]).__name__
'Image'
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterator, Sequence
from functools import cache
from pathlib import Path
from typing import Any

CONFIGS: tuple[str, ...] = ("notebooks", "cells", "figures")
#: The default config of the card (what the Hub's viewer opens first): the pictures.
DEFAULT_CONFIG = "figures"
SPLIT = "train"
#: The column of ``figures`` that holds the picture (a :class:`datasets.Image`).
IMAGE_COLUMN = "image"
#: The key of each config's rows (unique in a mined corpus).
KEYS: dict[str, tuple[str, ...]] = {"notebooks": ("notebook",), "cells": ("notebook", "cell"),
                                    "figures": ("figure",)}
DESCRIPTIONS: dict[str, str] = {
    "notebooks": "One row per notebook: kernel, counts of cells, markdown words, imports, outputs by MIME "
                 "type, figures, whether junobench ran it and how that went, and every problem found.",
    "cells": "One row per cell: kind, source, position, execution count, markdown headings and words, "
             "output types, figures, the exception of an error output.",
    "figures": "One row per visual output: the image (PNG, JPEG, GIF, WebP; SVG rasterised), or the "
               "specification (Plotly, Vega, Bokeh) as JSON text, its size, the producing cell's code, the "
               "plotting calls found in it, the chart kind, purpose and pipeline stage, and the markdown "
               "text before it.",
}


@cache
def schemas() -> dict[str, Any]:
    """Config name → the Arrow schema of its rows, without ``datasets`` (the worker processes
    build their record batches from it before ``datasets`` is imported, or without it).
    The ``image`` column is stored as ``datasets.Image`` stores an image."""
    import pyarrow as pa

    text, number, big, texts = pa.string(), pa.int32(), pa.int64(), pa.list_(pa.string())
    call = pa.struct([("library", text), ("function", text), ("text", text), ("line", number), ("via", text)])
    return {
        "notebooks": pa.schema([
            ("notebook", text), ("case_id", text), ("version", text), ("language", text), ("kernel", text),
            ("nbformat", number), ("bytes", big), ("cells", number), ("code_cells", number),
            ("markdown_cells", number), ("markdown_words", number), ("imports", texts),
            ("outputs", pa.list_(pa.struct([("mime", text), ("count", number)]))), ("figures", number),
            ("executed", pa.bool_()), ("execution", text), ("error", text), ("problems", texts),
        ]),
        "cells": pa.schema([
            ("notebook", text), ("cell", number), ("cell_type", text), ("source", text), ("execution_count", number),
            ("headings", texts), ("words", number), ("outputs", texts), ("figures", number), ("error", text),
        ]),
        "figures": pa.schema([
            ("figure", text), ("notebook", text), ("case_id", text), ("version", text), ("cell", number),
            ("output", number), (IMAGE_COLUMN, pa.struct([("bytes", pa.binary()), ("path", text)])), ("mime", text),
            ("width", number), ("height", number), ("bytes", big), ("text", text), ("code", text),
            ("calls", pa.list_(call)), ("unknown_calls", texts), ("library", text), ("kind", text),
            ("purpose", text), ("purpose_reason", text), ("stage", text), ("stage_reason", text),
            ("executed", pa.bool_()), ("markdown", text), ("heading", text), ("problem", text),
        ]),
    }


@cache
def features() -> dict[str, Any]:
    """Config name → its ``datasets.Features``: those of :func:`schemas`, the ``image``
    column a :class:`datasets.Image`."""
    from datasets import Features, Image

    found = {config: Features.from_arrow_schema(schema) for config, schema in schemas().items()}
    found["figures"][IMAGE_COLUMN] = Image()
    return found


def written_schemas() -> dict[str, Any]:
    """Config name → the Arrow schema its parquet file is written with: :func:`schemas`'
    with ``datasets``' metadata of its features (what ``load_dataset`` reads them as)."""
    return {config: found.arrow_schema for config, found in features().items()}


#: Each config's one parquet file, relative to the output folder (POSIX).
PARQUET: dict[str, str] = {config: f"{config}/{SPLIT}-00000-of-00001.parquet" for config in CONFIGS}


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

    from junobench.errors import JunoBenchError
    from junobench.mining.write import MANIFEST, read_manifest
    from junobench.safety.paths import kind_of

    hint = "mine it again: a corpus is read as `junobench mine` wrote it"
    name = PARQUET[config]
    path = folder / name
    entry = read_manifest(folder, hint="give the folder `junobench mine --out` wrote").get(name)
    if entry is None:
        raise JunoBenchError(f"{MANIFEST} does not list {name}", file=folder / MANIFEST, hint=hint)
    nofollow = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        parent = os.open(folder / config, nofollow | os.O_DIRECTORY)
        try:
            fd = os.open(path.name, nofollow | os.O_NONBLOCK, dir_fd=parent)
        finally:
            os.close(parent)
    except FileNotFoundError:
        raise JunoBenchError("missing", file=path, hint=hint) from None
    except OSError as error:
        problem = "a symbolic link, never followed" if error.errno in (errno.ELOOP, errno.ENOTDIR) else error.strerror
        raise JunoBenchError(f"cannot be read: {problem}", file=path, hint=hint) from None
    try:
        mode, size = (info := os.fstat(fd)).st_mode, info.st_size
        if not stat.S_ISREG(mode):
            raise JunoBenchError(f"{kind_of(mode)}, not a regular file", file=path, hint=hint)
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

    from junobench.errors import JunoBenchError

    path = folder / PARQUET[config]
    hint = "mine it again: a corpus is read as `junobench mine` wrote it"
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
