"""junobench: JunoBench, real crashes in Python ML Jupyter notebooks, as typed records.

>>> import junobench
>>> cases = junobench.load("sample")                                   # doctest: +SKIP
>>> torch = junobench.load(library="torch", root_cause="API misuse")   # doctest: +SKIP
"""

from __future__ import annotations

from junobench.errors import JunoBenchError, Problem, SnapshotError
from junobench.vocab import (
    CRASH_TYPES,
    LIBRARIES,
    LIBRARY_LABELS,
    PIPELINE_STAGES,
    ROOT_CAUSES,
    SOURCES,
    VERSIONS,
)

__all__ = [
    "CRASH_TYPES",
    "LIBRARIES",
    "LIBRARY_LABELS",
    "PIPELINE_STAGES",
    "ROOT_CAUSES",
    "SOURCES",
    "VERSIONS",
    "JunoBenchError",
    "Problem",
    "SnapshotError",
    "load",
]


def __getattr__(name: str):  # lazy: importing junobench does not import datasets
    if name == "load":
        from junobench.loading import load

        return load
    raise AttributeError(f"module 'junobench' has no attribute {name!r}")
