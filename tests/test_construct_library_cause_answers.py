"""The library-cause estimator's answers on every real traceback, pinned.

Every traceback of the reference tables (the empirical study's dev rows, the benchmark's
labelling sheet and its description table), in each form a caller may pass it (the
tables' literal-list string, a list of strings, one plain text, cut short, with the cell
numbers of a later run), with and without the cell's code, with and without
``benchmark``: :func:`estimate` and :func:`explain` answer exactly as pinned here. A
speed-up that changes one answer, or one clue, fails; a change of the estimator that is
meant to change answers re-pins the digest (and says so).
"""

from __future__ import annotations

import ast
import hashlib
import json
import re
from pathlib import Path

import nbformat
import pytest

from junobench.construct.library_cause import estimate, explain
from junobench.data.tables import read_table

TABLES = ("empirical_labeled_crashes.dev.xlsx", "benchmark_labels.xlsx",
          "junobench-snapshot/benchmark_desc.xlsx")
CELL_COUNT = re.compile(r"(Cell In ?\[|<ipython-input-)(\d+)")

#: sha256 of the answers per form (see :func:`answers`).
PINNED = {
    "stored": "d551dfd45112ce0230ff018e4eccfbe8d0af5054a469fb32a9340362dd894625",
    "list": "0989c856dd7a19f57449299f8a802dd39254b2ee859f4c702d4b07fb811130f2",
    "text": "0bdff798966bc747ad4c79f9e1321997b84cbc7c2a24b50e5723ac3873844461",
    "cut": "b863b33d2bc1d80503b5fb15ef5bff58936821a102bc2b8ea057bebb3b2b388a",
    "renumbered": "d551dfd45112ce0230ff018e4eccfbe8d0af5054a469fb32a9340362dd894625",
}


def forms(traceback: str) -> dict[str, list[object]]:
    """A traceback as each caller may pass it."""
    try:
        items = ast.literal_eval(traceback)
    except (ValueError, SyntaxError):
        items = None
    listed = [str(item) for item in items] if isinstance(items, list) else None
    return {
        "stored": [traceback],
        "list": [listed] if listed is not None else [],
        "text": ["\n".join(listed)] if listed is not None else [],
        "cut": [traceback[: len(traceback) * k // 5] for k in range(1, 5)],
        "renumbered": [CELL_COUNT.sub(lambda m: f"{m.group(1)}{int(m.group(2)) + 1000}",
                                      traceback)],
    }


@pytest.fixture(scope="module")
def crashes(reference_dir: Path) -> list[tuple[str, str]]:
    """Every reference traceback with a cell's code (its own notebook's, else one of the
    benchmark's notebooks in turn)."""
    notebooks = sorted((reference_dir / "junobench-snapshot" / "benchmark").glob(
        "*/*_reproduced.ipynb"))
    codes = {path.parent.name: "\n".join(cell.source for cell in nbformat.read(path, 4).cells
                                         if cell.cell_type == "code") for path in notebooks}
    ordered = list(codes.values())
    out = []
    for name in TABLES:
        for i, row in enumerate(read_table(reference_dir / name).records()):
            code = codes.get(str(row.get("nb_name"))) or ordered[i % len(ordered)]
            out.append((str(row["traceback"]), code))
    return out


def answers(crashes: list[tuple[str, str]], form: str) -> list[object]:
    """estimate and explain on every crash in one form, with and without code and
    benchmark."""
    out: list[object] = []
    for traceback, code in crashes:
        for value in forms(traceback)[form]:
            for cell in (None, code):
                for benchmark in (False, True):
                    clues = explain(value, cell, benchmark=benchmark)
                    out.append([estimate(value, cell, benchmark=benchmark),
                                [[e.library, e.weight, e.kind, e.text] for e in clues]])
    return out


@pytest.mark.parametrize("form", list(PINNED))
def test_answers_on_every_reference_traceback_are_pinned(crashes, form: str) -> None:
    found = answers(crashes, form)
    assert len(found) > 1000
    digest = hashlib.sha256(json.dumps(found).encode()).hexdigest()
    assert digest == PINNED[form], f"the {form} answers changed"

