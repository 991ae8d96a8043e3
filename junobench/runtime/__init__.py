"""Runtime information for crash detection: the kernel state a target cell depends on.

Run a notebook's executed cells in a fresh kernel, stop before the target cell, and
summarise the objects the target cell reads, each field tagged S (structure), R
(representation) or V (values), as in the runtime-augmented crash-detection study.

- :mod:`.names`: the names a cell reads (pure, AST);
- :mod:`.summarise`: the summaries, computed inside the kernel (standard library only);
- :mod:`.extract`: driving the kernels (verify's runner) and writing the records;
- :mod:`.info`: reading the records, dropping categories, the prompt's text;
- :mod:`.crane`: the same information in CRANE-LLM's format (``style="crane"``).

>>> from junobench.runtime import runtime_info, runtime_texts
>>> records = runtime_info(["numpy_1"], "sample", out="runtime.jsonl")   # doctest: +SKIP
>>> print(runtime_texts("runtime.jsonl")["numpy_1_reproduced"])          # doctest: +SKIP
"""

from junobench.runtime.extract import RECORD_FIELDS, categories_without, runtime_info
from junobench.runtime.info import (
    drop_categories,
    read_runtime_info,
    runtime_annotations,
    runtime_style,
    runtime_text,
    runtime_texts,
)
from junobench.runtime.names import TargetNames, target_names
from junobench.runtime.summarise import CATEGORIES, DEFAULT_OPTIONS, summarise

__all__ = [
    "CATEGORIES",
    "DEFAULT_OPTIONS",
    "RECORD_FIELDS",
    "TargetNames",
    "categories_without",
    "drop_categories",
    "read_runtime_info",
    "runtime_annotations",
    "runtime_info",
    "runtime_style",
    "runtime_text",
    "runtime_texts",
    "summarise",
    "target_names",
]
