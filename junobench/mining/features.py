"""The three configs of a mined corpus, as ``datasets`` features: ``notebooks``, ``cells``,
``figures`` (its ``image`` a :class:`datasets.Image`, so that stock ``load_dataset`` gives
decoded pictures and the Hub's viewer shows them).

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
def features() -> dict[str, Any]:
    """Config name → its ``datasets.Features``."""
    from datasets import Features, Image, List, Value

    text, number, big = Value("string"), Value("int32"), Value("int64")
    call = {"library": text, "function": text, "text": text, "line": number, "via": text}
    return {
        "notebooks": Features({
            "notebook": text, "case_id": text, "version": text, "language": text, "kernel": text,
            "nbformat": number, "bytes": big, "cells": number, "code_cells": number, "markdown_cells": number,
            "markdown_words": number, "imports": List(text), "outputs": List({"mime": text, "count": number}),
            "figures": number, "executed": Value("bool"), "execution": text, "error": text, "problems": List(text),
        }),
        "cells": Features({
            "notebook": text, "cell": number, "cell_type": text, "source": text, "execution_count": number,
            "headings": List(text), "words": number, "outputs": List(text), "figures": number, "error": text,
        }),
        "figures": Features({
            "figure": text, "notebook": text, "case_id": text, "version": text, "cell": number, "output": number,
            "image": Image(), "mime": text, "width": number, "height": number, "bytes": big, "text": text,
            "code": text, "calls": List(call), "unknown_calls": List(text), "library": text, "kind": text,
            "purpose": text, "purpose_reason": text, "stage": text, "stage_reason": text, "executed": Value("bool"),
            "markdown": text, "heading": text, "problem": text,
        }),
    }


@cache
def schemas() -> dict[str, Any]:
    """Config name → the Arrow schema of its features (computed once: ``datasets`` builds it
    anew on every access)."""
    return {config: found.arrow_schema for config, found in features().items()}


def parquet_path(config: str, shard: int = 0, shards: int = 1) -> str:
    """A config's parquet file, relative to the output folder (POSIX)."""
    return f"{config}/{SPLIT}-{shard:05d}-of-{shards:05d}.parquet"


#: Each config's one parquet file, relative to the output folder.
PARQUET: dict[str, str] = {config: parquet_path(config) for config in CONFIGS}
