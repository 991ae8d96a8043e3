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

from functools import cache
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
