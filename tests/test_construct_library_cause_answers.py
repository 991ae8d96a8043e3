"""The library-cause estimator's answers on every real traceback, pinned.

Every traceback of the reference tables (the empirical study's dev rows, the benchmark's
labelling sheet and its description table), in each form a caller may pass it (the
tables' literal-list string, a list of strings, one plain text, cut short, with the cell
numbers of a later run), with and without the cell's code, with and without
``benchmark``: :func:`estimate` and :func:`explain` answer exactly as pinned here. A
speed-up that changes one answer, or one clue, fails, naming the first traceback whose
answers changed (table, row, form) and showing them; a change of the estimator that is
meant to change answers re-pins (``python tests/test_construct_library_cause_answers.py``
rewrites the per-traceback pins; the digests below are printed by the failing test).
"""

from __future__ import annotations

import ast
import hashlib
import json
import re
import sys
from pathlib import Path

import nbformat
import pytest

from junobench.construct.library_cause import estimate, explain
from junobench.data.tables import read_table

TABLES = ("empirical_labeled_crashes.dev.xlsx", "benchmark_labels.xlsx",
          "junobench-snapshot/benchmark_desc.xlsx")
CELL_COUNT = re.compile(r"(Cell In ?\[|<ipython-input-)(\d+)")
#: Per traceback and form, the first 10 hex digits of the sha256 of its answers.
PINS = Path(__file__).with_name("library_cause_answers.json")

#: sha256 of the answers per form (see :func:`answers`).
PINNED = {
    "stored": "f0acafeb9ce248a791f6bc8182b61e581f2363bfa3fee7e3081f6e5f65980611",
    "list": "43a6ea782300c303bb9e7823b6ece51f694ca6a3b6c9712f21b8052f61305788",
    "text": "01de8b30b143074b43c6b6c788b7fb89ea847cfb3f8530067a8a0682a9ef6dd8",
    "cut": "2fb8ea589f0497cc8fd835154cf8da18eba4fe31c25c6cac53b3def75dc62336",
    "renumbered": "f0acafeb9ce248a791f6bc8182b61e581f2363bfa3fee7e3081f6e5f65980611",
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
def crashes(reference_dir: Path) -> list[tuple[str, str, str]]:
    return reference_crashes(reference_dir)


def reference_crashes(reference_dir: Path) -> list[tuple[str, str, str]]:
    """Every reference traceback (named ``table row N``) with a cell's code (its own
    notebook's, else one of the benchmark's notebooks in turn)."""
    notebooks = sorted((reference_dir / "junobench-snapshot" / "benchmark").glob(
        "*/*_reproduced.ipynb"))
    codes = {path.parent.name: "\n".join(cell.source for cell in nbformat.read(path, 4).cells
                                         if cell.cell_type == "code") for path in notebooks}
    ordered = list(codes.values())
    out = []
    for name in TABLES:
        for i, row in enumerate(read_table(reference_dir / name).records()):
            code = codes.get(str(row.get("nb_name"))) or ordered[i % len(ordered)]
            out.append((f"{name} row {i + 2}", str(row["traceback"]), code))
    return out


def answers_of(traceback: str, code: str, form: str) -> list[object]:
    """estimate and explain on one crash in one form, with and without code and benchmark."""
    out: list[object] = []
    for value in forms(traceback)[form]:
        for cell in (None, code):
            for benchmark in (False, True):
                clues = explain(value, cell, benchmark=benchmark)
                out.append([estimate(value, cell, benchmark=benchmark),
                            [[e.library, e.weight, e.kind, e.text] for e in clues]])
    return out


def pin(answers: list[object]) -> str:
    return hashlib.sha256(json.dumps(answers).encode()).hexdigest()[:10]


def first_changed(crashes: list[tuple[str, str, str]], pinned: list[str], form: str
                  ) -> tuple[list[object], tuple[str, str, list[object]] | None]:
    """Every answer in ``form``, and the first crash whose answers differ from its pin
    (its name, traceback and answers), or None."""
    found: list[object] = []
    for (where, traceback, code), expected in zip(crashes, pinned, strict=True):
        each = answers_of(traceback, code, form)
        if pin(each) != expected:
            return found, (where, traceback, each)
        found += each
    return found, None


@pytest.mark.parametrize("form", list(PINNED))
def test_answers_on_every_reference_traceback_are_pinned(crashes, form: str) -> None:
    pinned = json.loads(PINS.read_text(encoding="utf-8"))[form]
    assert len(pinned) == len(crashes), "the reference tables changed: re-pin"
    found, changed = first_changed(crashes, pinned, form)
    if changed is not None:
        where, traceback, each = changed
        pytest.fail(f"the {form} answers changed first on {where} (traceback "
                    f"{traceback[:160]!r}…): now {json.dumps(each, ensure_ascii=False)[:1500]}")
    assert len(found) > 1000
    digest = hashlib.sha256(json.dumps(found).encode()).hexdigest()
    assert digest == PINNED[form], f"the {form} answers changed: digest now {digest}"


def test_the_first_changed_traceback_is_named() -> None:
    crashes = [("t.xlsx row 2", "['x', 'LinAlgError: bad']", "import numpy as np"),
               ("t.xlsx row 3", "['x', 'ParserError: bad']", ""),
               ("t.xlsx row 4", "['x', 'KeyError: 1']", "")]
    pins = [pin(answers_of(tb, code, "stored")) for _, tb, code in crashes]
    assert first_changed(crashes, pins, "stored")[1] is None
    wrong = [pins[0], "0" * 10, "0" * 10]
    found, changed = first_changed(crashes, wrong, "stored")
    assert changed is not None and changed[0] == "t.xlsx row 3"
    assert changed[2] == answers_of(crashes[1][1], "", "stored")
    assert found == answers_of(*crashes[0][1:], "stored")


def repin(reference_dir: Path) -> None:
    """Rewrite :data:`PINS` from the estimator as it answers now."""
    crashes = reference_crashes(reference_dir)
    pins = {form: [pin(answers_of(tb, code, form)) for _, tb, code in crashes] for form in PINNED}
    lines = ",\n".join(f"{json.dumps(form)}: {json.dumps(values)}" for form, values in pins.items())
    PINS.write_text("{\n" + lines + "\n}\n", encoding="utf-8")


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))
    from reference import reference_dir as default_reference

    repin(default_reference())
