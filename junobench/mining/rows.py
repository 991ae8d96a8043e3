"""One notebook mined: its ``notebooks`` row, its ``cells`` rows and its ``figures`` rows.

:func:`mine_notebook` is a pure function of a notebook's bytes and what is known about it
(its id, case, whether junobench ran it), the bounds and the chart-kind mapping: the same
bytes give the same rows wherever they are mined (one process, several, or a Ray cluster).
Nothing in a notebook makes it raise: a notebook that is not one, of another kernel's
language, too large, or whose outputs are malformed is a row whose ``problems`` (a figure's
``problem``) say so.

For each code cell, the plotting calls of :mod:`.calls` are matched with its visual
outputs: when the cell shows as many figures as its code has ``show()``-separated groups
of chart calls, the n-th figure gets the n-th group; otherwise every figure of the cell gets
all of the cell's chart calls. A figure's ``kind``, ``purpose`` and ``library`` are those of
its first chart call; code in the cell that says what the figure is for (a confusion
matrix computed, ``history.history`` read) overrides a data purpose (see
:meth:`~junobench.mining.kinds.ChartKinds.purpose_evidence`); its ``stage`` follows
:meth:`~junobench.mining.kinds.ChartKinds.stage`.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from junobench.errors import JunoBenchError
from junobench.mining.calls import CellCalls, CodeReader
from junobench.mining.kinds import ChartKinds, chart_kinds
from junobench.mining.parse import Cell, ParsedNotebook, parse
from junobench.mining.visuals import MAX_OUTPUT_BYTES, MAX_PIXELS, TEXTUAL, is_visual, visual_of
from junobench.safety.text import shortened

#: Characters kept of the markdown text that precedes a figure.
MARKDOWN_LIMIT = 4000
#: Kernel languages whose code is analysed (a notebook with no language stated counts as Python).
PYTHON = frozenset({"python", "python3", "python2", "ipython", "ipython3"})
_HEADING = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.+?)[ \t]*#*[ \t]*$", re.MULTILINE)
_HTML_HEADING = re.compile(r"<h[1-6][^>]*>(.*?)</h[1-6]>", re.IGNORECASE | re.DOTALL)
_TAG = re.compile(r"<[^>]{0,200}>")


@dataclass(frozen=True)
class Limits:
    """Bounds on what is read: a notebook file, one output's data, one image's pixels."""

    notebook_bytes: int = 256 << 20
    output_bytes: int = MAX_OUTPUT_BYTES
    pixels: int = MAX_PIXELS


@dataclass(frozen=True)
class Item:
    """A notebook to mine: its id (unique in the corpus), and its case and version when it
    is one of a benchmark snapshot's notebooks."""

    notebook: str
    case_id: str | None = None
    version: str | None = None


@dataclass(frozen=True)
class Execution:
    """What junobench's run of a notebook did: ``status`` (``ok``, ``error``: a cell raised,
    ``timeout``, ``failed``: the run could not start or the kernel died, ``not run``: it
    cannot be, e.g. another kernel's notebook) and ``error`` (what happened)."""

    status: str
    error: str | None = None


def ran(execution: Execution | None) -> bool:
    """Whether junobench ran the notebook (whatever came of it)."""
    return execution is not None and execution.status != "not run"


@dataclass
class Mined:
    """The rows of one notebook."""

    notebook: dict[str, Any]
    cells: list[dict[str, Any]] = field(default_factory=list)
    figures: list[dict[str, Any]] = field(default_factory=list)


def mine_notebook(item: Item, raw: bytes | None, *, problem: str | None = None, execution: Execution | None = None,
                  limits: Limits = Limits(), kinds: ChartKinds | None = None) -> Mined:
    """The rows of the notebook ``raw`` (None: it could not be read, ``problem`` says why)."""
    kinds = kinds or chart_kinds()
    row = _notebook_row(item, len(raw or b""), execution)
    if raw is None or problem is not None:
        row["problems"].append(problem or "not read")
        return Mined(row)
    try:
        notebook = parse(raw)
    except JunoBenchError as error:
        row["problems"].append(error.problem_.problem)
        return Mined(row)
    return _mine(item, notebook, row, execution, limits, kinds)


def _notebook_row(item: Item, size: int, execution: Execution | None) -> dict[str, Any]:
    return {
        "notebook": item.notebook, "case_id": item.case_id, "version": item.version, "language": None,
        "kernel": None, "nbformat": None, "bytes": size, "cells": 0, "code_cells": 0, "markdown_cells": 0,
        "markdown_words": 0, "imports": [], "outputs": [], "figures": 0, "executed": ran(execution),
        "execution": execution.status if execution else None, "error": execution.error if execution else None,
        "problems": [],
    }


def _mine(item: Item, notebook: ParsedNotebook, row: dict[str, Any], execution: Execution | None,
          limits: Limits, kinds: ChartKinds) -> Mined:
    python = notebook.language is None or notebook.language in PYTHON
    row.update(language=notebook.language, kernel=notebook.kernel, nbformat=notebook.nbformat,
               cells=len(notebook.cells))
    if not python:
        row["problems"].append(f"a notebook of the {notebook.language} kernel: its code is not analysed "
                               "(plotting calls are read from Python code only); its figures are kept")
    reader = CodeReader(kinds)
    mimes: Counter[str] = Counter()
    mined = Mined(row)
    markdown: str | None = None
    heading: str | None = None
    words = 0
    for cell in notebook.cells:
        row["problems"].extend(cell.problems)
        headings: list[str] = []
        if cell.kind == "markdown":
            row["markdown_cells"] += 1
            count = len(cell.source.split())
            words += count
            headings = _headings(cell.source)
            markdown = shortened(cell.source, MARKDOWN_LIMIT) if cell.source.strip() else markdown
            heading = headings[-1] if headings else heading
            mined.cells.append(_cell_row(item, cell, headings, count, [], 0))
            continue
        if cell.kind != "code":
            mined.cells.append(_cell_row(item, cell, [], 0, [], 0))
            continue
        row["code_cells"] += 1
        visual = any(o.data and any(map(is_visual, o.data)) for o in cell.outputs)
        analysis = reader.read(cell.source, calls=visual) if python else CellCalls(parsed=False)
        types, figures = _outputs(item, cell, analysis, kinds, limits, mimes, row["problems"])
        for figure in figures:
            figure.update(executed=ran(execution), markdown=markdown, heading=heading)
        mined.figures.extend(figures)
        mined.cells.append(_cell_row(item, cell, [], 0, types, len(figures)))
    row.update(markdown_words=words, imports=sorted(reader.modules), figures=len(mined.figures),
               outputs=[{"mime": mime, "count": count} for mime, count in sorted(mimes.items())])
    return mined


def _cell_row(item: Item, cell: Cell, headings: list[str], words: int, outputs: list[str],
              figures: int) -> dict[str, Any]:
    error = next((o for o in cell.outputs if o.kind == "error"), None)
    return {"notebook": item.notebook, "cell": cell.position, "cell_type": cell.kind, "source": cell.source,
            "execution_count": cell.execution_count, "headings": headings, "words": words,
            "outputs": outputs, "figures": figures, "error": (error.ename or "error") if error else None}


def _outputs(item: Item, cell: Cell, analysis: CellCalls, kinds: ChartKinds, limits: Limits,
             mimes: Counter[str], problems: list[str]) -> tuple[list[str], list[dict[str, Any]]]:
    """The cell's output types (``display_data image/png``), and its figure rows."""
    types: list[str] = []
    found = []
    for number, output in enumerate(cell.outputs):
        if output.kind in ("stream", "error", "unreadable") or not output.data:
            mimes[output.kind] += 1
            types.append(output.kind)
            continue
        for mime, value in output.data.items():
            mimes[mime] += 1
            types.append(f"{output.kind} {mime}")
            if mime not in TEXTUAL and not is_visual(mime):
                problems.append(f"cell {cell.position}, output {number}: unknown MIME type {mime[:80]!r} "
                                "(counted, not read)")
            elif not is_visual(mime) and len(value) > limits.output_bytes:
                problems.append(f"cell {cell.position}, output {number}: {mime} of {len(value):,} bytes, over the "
                                f"{limits.output_bytes:,}-byte bound (counted, not read)")
        visual = visual_of(output.data, max_bytes=limits.output_bytes, max_pixels=limits.pixels)
        if visual is not None:
            found.append((number, visual))
    if not found:
        return types, []
    segments = analysis.segments()
    grouped = len(found) > 1 and len(segments) == len(found)
    evidence = kinds.purpose_evidence(analysis.evidence)
    figures = []
    for index, (number, visual) in enumerate(found):
        calls = segments[index] if grouped else analysis.calls
        first = calls[0] if calls else None
        purpose, reason = (first.purpose, f"{first.library} {first.function}") if first else (None, None)
        if evidence is not None and purpose not in ("model evaluation", "training progress"):
            purpose, reason = evidence
        stage, stage_reason = kinds.stage(purpose, analysis.evidence)
        figures.append({
            "figure": f"{item.notebook}#{cell.position}.{number}", "notebook": item.notebook,
            "case_id": item.case_id, "version": item.version, "cell": cell.position, "output": number,
            "image": None if visual.image is None else {"bytes": visual.image, "path": None},
            "mime": visual.mime, "width": visual.width, "height": visual.height, "bytes": visual.size,
            "text": visual.text, "code": cell.source, "calls": [c.to_row() for c in calls],
            "unknown_calls": [f"{c.text} ({c.library}.{c.function})" for c in analysis.unknown],
            "library": first.library if first else None, "kind": first.kind if first else None,
            "purpose": purpose, "purpose_reason": reason, "stage": stage, "stage_reason": stage_reason,
            "problem": visual.problem,
        })
    return types, figures


def _headings(text: str) -> list[str]:
    found = [(m.start(), m.group(2)) for m in _HEADING.finditer(text)] if "#" in text else []
    if "<" in text:
        found += [(m.start(), _TAG.sub("", m.group(1)).strip()) for m in _HTML_HEADING.finditer(text)]
    return [heading for _, heading in sorted(found) if heading]
