"""CRANE-LLM's prompt documents: read its published inputs as tasks, and write tasks back.

CRANE-LLM (the runtime-augmented study) sent each notebook as one text, its user message,
published per notebook as ``<library>/<instance>.txt`` in ``llms/llms_inputs/
executed_code`` (code only) and ``executed_code_runinfo`` (with runtime information); its
static analysers read the same document as Python (the headings are comments), with
runtime type annotations in ``sas/sas_inputs/executed_code_runinfo``. A document is:

- ``# Executed Cells:`` then, per executed cell in execution order, ``## Cell <i>:``, the
  cell's code and a blank line (``No cell has been executed`` when none ran);
- with runtime information, ``# Current relevent runtime information:`` (sic) and the
  summaries of the objects the target cell uses, a ``pprint``-ed Python dict;
- ``# Target Cell:`` and the target cell's code (the annotated inputs have
  ``# Annotated Target Code:``: type annotations of the names it uses, then its code).

:func:`parse_document` splits a document into a task (``style: "crane"``) whose rendering
by :func:`render_document` is the document again, byte for byte; that is checked for
every file read, so a task made from a published input is exactly what CRANE-LLM sent.

>>> doc = "# Executed Cells:\\n## Cell 1:\\nx = 1\\n\\n# Target Cell:\\nprint(y)"
>>> task = parse_document(doc)
>>> task["executed_cells"][0]["source"], task["target_cell"]["source"]
('x = 1', 'print(y)')
>>> render_document(task) == doc
True
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from junobench import vocab
from junobench.errors import JunoBenchError
from junobench.safety.paths import read_regular

#: The ``style`` of a task whose prompt is a CRANE-LLM document.
STYLE = "crane"
EXECUTED = "# Executed Cells:\n"
NONE_EXECUTED = "No cell has been executed\n"
RUNTIME = "# Current relevent runtime information:\n"
TARGET = "Target Cell"
ANNOTATED = "Annotated Target Code"
#: Target headings a document may have (the annotated one is the analysers' input).
TARGET_TITLES: tuple[str, ...] = (TARGET, ANNOTATED)
_CELL = "## Cell {}:\n"
_MAX_FILE = 16 * 1024 * 1024
_HINT = ("pass a folder of CRANE-LLM inputs as published: llms/llms_inputs/executed_code, "
         "llms/llms_inputs/executed_code_runinfo or sas/sas_inputs/executed_code_runinfo")


def render_document(task: Mapping[str, Any]) -> str:
    """The CRANE-LLM document of a task: its executed cells, its runtime information (when
    the task has any, even an empty ``{}``) and its target cell."""
    parts = [EXECUTED]
    cells = task.get("executed_cells") or []
    if not cells:
        parts.append(NONE_EXECUTED)
    for number, cell in enumerate(cells, start=1):
        parts.append(_CELL.format(number) + str(cell.get("source") or "") + "\n\n")
    if task.get("runtime_info") is not None:
        parts.append(RUNTIME + str(task["runtime_info"]) + "\n")
    title = task.get("target_title") or TARGET
    parts.append(f"# {title}:\n" + str(task["target_cell"].get("source") or ""))
    return "".join(parts)


def parse_document(text: str, *, file: str | Path | None = None,
                   instance: str | None = None) -> dict[str, Any]:
    """A task (without ``id``) holding the parts of a CRANE-LLM document; a JunoBenchError
    naming ``file`` when the text is not such a document."""

    def fail(problem: str) -> JunoBenchError:
        return JunoBenchError(f"not a CRANE-LLM input: {problem}", file=file, case=instance,
                              hint=_HINT)

    if not text.startswith(EXECUTED):
        raise fail(f"it does not start with {EXECUTED.strip()!r}")
    rest = text[len(EXECUTED):]
    ends = [RUNTIME] + [f"# {title}:\n" for title in TARGET_TITLES]
    cells: list[dict[str, Any]] = []
    if rest.startswith(NONE_EXECUTED):
        rest = rest[len(NONE_EXECUTED):]
    else:
        number = 1
        if not rest.startswith(_CELL.format(1)):
            raise fail("the executed cells do not start with '## Cell 1:'")
        while rest.startswith(_CELL.format(number)):
            body = rest[len(_CELL.format(number)):]
            stops = [body.find("\n\n" + marker) for marker in [_CELL.format(number + 1), *ends]]
            found = [stop for stop in stops if stop >= 0]
            if not found:
                raise fail(f"cell {number} is not followed by a cell or a section")
            stop = min(found)
            cells.append({"code_cell_index": None, "execution_count": None,
                          "source": body[:stop]})
            rest = body[stop + 2:]
            number += 1
    task: dict[str, Any] = {"style": STYLE, "executed_cells": cells}
    if rest.startswith(RUNTIME):
        body = rest[len(RUNTIME):]
        stops = [body.find("\n# " + title + ":\n") for title in TARGET_TITLES]
        found = [stop for stop in stops if stop >= 0]
        if not found:
            raise fail("the runtime information is not followed by the target cell")
        task["runtime_info"] = body[:min(found)]
        rest = body[min(found) + 1:]
    match = re.match(r"# (.+?):\n", rest)
    if match is None or match.group(1) not in TARGET_TITLES:
        raise fail("no '# Target Cell:' section after the executed cells")
    if match.group(1) != TARGET:
        task["target_title"] = match.group(1)
    task["target_cell"] = {"code_cell_index": None, "execution_count": None,
                           "source": rest[match.end():]}
    if render_document(task) != text:  # a guard on the grammar above, never expected
        raise fail("its parts do not give the same text back")
    return task


def read_documents(folder: str | Path) -> dict[str, dict[str, Any]]:
    """instance → task of every ``<instance>.txt`` in ``folder`` and its library subfolders
    (as CRANE-LLM publishes them: ``numpy/numpy_1_reproduced.txt``, small libraries in
    ``other/``). Links are refused; a file named after no notebook, or found twice, is an
    error."""
    root = Path(folder)
    if root.is_symlink() or not root.is_dir():
        raise JunoBenchError("not a folder of CRANE-LLM inputs", file=root, hint=_HINT)
    files = sorted(root.glob("*.txt"))
    for sub in sorted(root.iterdir()):
        if sub.is_symlink():
            raise JunoBenchError("is a symbolic link; inputs are read from the folder named only",
                                 file=sub, hint="copy the files into the folder")
        if sub.is_dir():
            files += sorted(sub.glob("*.txt"))
    out: dict[str, dict[str, Any]] = {}
    origin: dict[str, Path] = {}
    for file in files:
        instance = file.stem
        if not vocab.is_instance(instance):
            raise JunoBenchError(f"file name {file.name!r} names no notebook", file=file,
                                 hint="CRANE-LLM names its inputs <case>_reproduced.txt or "
                                 "<case>_fixed.txt")
        if file.is_symlink():
            raise JunoBenchError("is a symbolic link; inputs are read from regular files only",
                                 file=file, case=instance, hint="copy the file into the folder")
        if instance in out:
            raise JunoBenchError(f"two inputs for {instance} (the other is {origin[instance]})",
                                 file=file, case=instance, hint="keep one file per notebook")
        try:
            text = read_regular(file, limit=_MAX_FILE).decode("utf-8")
        except (OSError, UnicodeDecodeError) as error:
            raise JunoBenchError(f"cannot read the CRANE-LLM input ({error})", file=file,
                                 case=instance, hint=_HINT) from None
        out[instance] = parse_document(text, file=file, instance=instance)
        origin[instance] = file
    if not out:
        raise JunoBenchError("no <instance>.txt files in it or its library folders", file=root,
                             hint=_HINT)
    return out
