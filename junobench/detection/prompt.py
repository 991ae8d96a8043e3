"""The crash-detection prompt of both papers: executed cells in order, then the target cell,
and a JSON answer ``{"reasoning": str, "detection": bool}``.

The user message is a list of sections (:func:`sections`): ``Executed Cells``, then
``Runtime Information`` when the task carries ``runtime_info``, then ``Target Cell``. A new
kind of context is a new section here, and nothing else changes. A task of ``style``
``"crane"`` (read from CRANE-LLM's published inputs, :mod:`junobench.detection.crane_inputs`)
is sent as CRANE-LLM sent it: its user message is CRANE-LLM's document, byte for byte.

>>> task = {"executed_cells": [{"source": "x = 1"}], "target_cell": {"source": "y + x"}}
>>> print(user_message(task))
# Executed Cells:
## Cell 1:
x = 1
<BLANKLINE>
# Target Cell:
y + x
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from junobench.detection import crane_inputs

_INTRO = "You detect crashes in machine-learning Jupyter notebooks before they happen."
_GIVEN = {
    "executed": "- [Executed Cells]: the code cells that have already run without error, "
                "in the order they ran;",
    "runtime": "- [Runtime Information]: facts about the notebook's state just before the "
               "target cell runs (such as the types, shapes and values of variables it uses);",
    "target": "- [Target Cell]: the cell that runs next.",
}
_CONTRACT = """\
Decide whether running the [Target Cell] now will crash (raise an exception).

Answer with exactly one JSON object and nothing else:
{"reasoning": "<why, in one or two sentences>", "detection": <true or false>}
Use "detection": true only if you are certain the [Target Cell] will crash; \
if you are not certain, use "detection": false."""


def has_runtime_info(task: Mapping[str, Any]) -> bool:
    return bool(task.get("runtime_info"))


def system_message(task: Mapping[str, Any] | None = None) -> str:
    """Instructions and the output contract; mentions runtime information when given."""
    given = [_GIVEN["executed"]]
    if task is not None and has_runtime_info(task):
        given.append(_GIVEN["runtime"])
    given.append(_GIVEN["target"])
    return "\n".join([_INTRO, "You are given:", *given, "", _CONTRACT])


def sections(task: Mapping[str, Any]) -> list[tuple[str, str]]:
    """``(title, body)`` of each part of the user message, in order."""
    out = [("Executed Cells", executed_cells_text(task.get("executed_cells") or []))]
    if has_runtime_info(task):
        out.append(("Runtime Information", str(task["runtime_info"]).strip()))
    out.append(("Target Cell", (task["target_cell"].get("source") or "").strip("\n")))
    return out


def executed_cells_text(cells: list[Mapping[str, Any]]) -> str:
    if not cells:
        return "(no cell has run yet)"
    parts = []
    for number, cell in enumerate(cells, start=1):
        text = f"## Cell {number}:\n{(cell.get('source') or '').strip(chr(10))}"
        if cell.get("outputs"):
            text += f"\n### Output of cell {number}:\n{str(cell['outputs']).strip(chr(10))}"
        parts.append(text)
    return "\n\n".join(parts)


def user_message(task: Mapping[str, Any]) -> str:
    """The sections as one text: ``# Title:`` then the body, a blank line between them (a
    ``crane``-style task: CRANE-LLM's document, see :mod:`junobench.detection.crane_inputs`)."""
    if task.get("style") == crane_inputs.STYLE:
        return crane_inputs.render_document(task)
    return "\n\n".join(f"# {title}:\n{body}" for title, body in sections(task))


def messages(task: Mapping[str, Any]) -> list[dict[str, str]]:
    """Chat messages (system, user) for an OpenAI-compatible chat-completions request."""
    return [{"role": "system", "content": system_message(task)},
            {"role": "user", "content": user_message(task)}]
