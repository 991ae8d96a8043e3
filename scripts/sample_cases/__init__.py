"""Source definitions of the bundled sample's cases (read by scripts/build_sample.py).

Each module here defines ``CASE``: the reproduced notebook's cells, the order its code
cells ran in (ending with the crashing target), the fix, the labels, the diagnosis and
the input datasets with the code that generates them. ``build_sample.py`` derives the
three notebooks from it and runs them, so every output in the sample is real.

- original   = the notebook as collected: data read from ``../input/<slug>/`` (the
               Kaggle layout) and no ``[reexecute]`` annotation; same cells and order.
- reproduced = data read from ``data/``; run in ``order``.
- fixed      = the reproduced notebook with ``fixed`` cell sources, run in ``fixed_order``
               (default: top to bottom up to the target).
"""

from __future__ import annotations

import importlib
import io
import pkgutil
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

CC0 = "CC0: Public Domain"


@dataclass(frozen=True)
class Cell:
    kind: str  # "markdown" or "code"
    source: str


def md(text: str) -> Cell:
    return Cell("markdown", _dedent(text))


def code(text: str) -> Cell:
    return Cell("code", _dedent(text))


def _dedent(text: str) -> str:
    import textwrap

    return textwrap.dedent(text).strip("\n")


@dataclass(frozen=True)
class Dataset:
    """One input dataset: ``make()`` returns ``{file name: DataFrame}`` (written as CSV)."""

    name: str
    title: str
    make: Callable[[], dict[str, pd.DataFrame]]
    modifications: list[dict[str, str]]
    note: str
    license: str = CC0
    url: str | None = None

    def files(self) -> dict[str, bytes]:
        out = {}
        for name, frame in self.make().items():
            buffer = io.StringIO()
            frame.to_csv(buffer, index=False, lineterminator="\n")
            out[name] = buffer.getvalue().encode("utf-8")
        return out


@dataclass(frozen=True)
class Case:
    case_id: str
    fname: str  # the original notebook's file name as collected
    kaggle_slug: str  # folder under ../input/ the original reads its data from
    root_cause: str
    crash_type: str
    pipeline_stage: str
    cells: list[Cell]
    order: list[int]  # code-cell indices in run order; the last is the target
    fixed: dict[int, str]  # code-cell index -> source in the fixed notebook
    diagnosis: str
    runinfo_help: str
    datasets: list[Dataset]
    dataset_note: str
    fixed_order: list[int] | None = None
    ml_bug: str = "ML bug"
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def target(self) -> int:
        return self.order[-1]


def synthetic(method: str, note: str | None = None) -> dict[str, str]:
    entry = {"kind": "synthetic", "method": method}
    if note:
        entry["note"] = note
    return entry


def downsampled(method: str, note: str | None = None) -> dict[str, str]:
    entry = {"kind": "downsampled", "method": method}
    if note:
        entry["note"] = note
    return entry


def rng(seed: int) -> np.random.Generator:
    return np.random.default_rng(seed)


def all_cases() -> list[Case]:
    """Every case module's ``CASE``, in case-id order (library, then number)."""
    cases = []
    for info in pkgutil.iter_modules(__path__):
        module = importlib.import_module(f"{__name__}.{info.name}")
        cases.append(module.CASE)
    return sorted(cases, key=lambda c: (c.case_id.rsplit("_", 1)[0], int(c.case_id.rsplit("_", 1)[1])))
