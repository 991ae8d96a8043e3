"""junobench: JunoBench, real crashes in Python ML Jupyter notebooks, as typed records.

>>> import junobench
>>> cases = junobench.load("sample")
>>> cases.num_rows
10
>>> torch = junobench.load(library="torch", root_cause="API misuse")   # doctest: +SKIP
"""

from __future__ import annotations

from typing import Any

from junobench.errors import JunoBenchError, Problem, SnapshotError
from junobench.vocab import (
    CRASH_TYPES,
    LIBRARIES,
    LIBRARY_LABELS,
    ORIGINS,
    PIPELINE_STAGES,
    ROOT_CAUSES,
    SOURCES,
    VERSIONS,
)

__all__ = [
    "CRASH_TYPES",
    "LIBRARIES",
    "LIBRARY_LABELS",
    "ORIGINS",
    "PIPELINE_STAGES",
    "ROOT_CAUSES",
    "SOURCES",
    "VERSIONS",
    "JunoBenchError",
    "Problem",
    "SnapshotError",
    "diff",
    "format_case",
    "load",
    "ls",
    "show",
]


#: Public names imported on first use, so that ``import junobench`` stays light (no ``datasets``).
_LAZY: dict[str, str] = {
    "load": "junobench.loader",
    "ls": "junobench.browse",
    "show": "junobench.browse",
    "format_case": "junobench.browse",
    "diff": "junobench.hub.changes",
}


def __getattr__(name: str) -> Any:
    if name == "__version__":
        return _version()
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'junobench' has no attribute {name!r}")


def _version() -> str:
    """``junobench.__version__``: the installed distribution's version, whose one source is
    ``version`` in pyproject.toml ("unknown" in a source tree that was never installed)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("junobench")
    except PackageNotFoundError:
        return "unknown"
