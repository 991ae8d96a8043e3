"""A notebook's cells and outputs as mining reads them: every cell, every output, bounded.

:func:`parse` decodes a notebook's JSON with msgspec level by level: the notebook's cells
are kept as raw JSON and decoded one at a time, each cell's outputs likewise, and each
output's data values (base64 images, HTML, specifications) stay raw until a reader asks
for one. So a malformed cell or output is a problem of that cell (named, the rest read),
and a large HTML table or text output is never turned into a Python string. nbformat 3
notebooks are upgraded with nbformat first.

>>> nb = parse(b'{"nbformat": 4, "nbformat_minor": 5, "metadata": {"kernelspec": {"language": "python"}},'
...            b' "cells": [{"cell_type": "markdown", "source": ["# Title"], "metadata": {}}]}')
>>> nb.language, nb.cells[0].kind, nb.cells[0].source
('python', 'markdown', '# Title')
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import msgspec

from junobench.errors import JunoBenchError
from junobench.safety.text import first_line, multiline


class _Output(msgspec.Struct):
    output_type: Any = None
    data: dict[str, msgspec.Raw] | None = None
    ename: Any = None
    evalue: Any = None


class _Cell(msgspec.Struct):
    cell_type: Any = None
    source: Any = ""
    execution_count: Any = None
    outputs: list[msgspec.Raw] | None = None


class _Notebook(msgspec.Struct):
    cells: list[msgspec.Raw] | None = None
    metadata: Any = None
    nbformat: Any = None


class _TypedOutput(msgspec.Struct):
    output_type: str
    data: dict[str, msgspec.Raw] | None = None
    ename: str | None = None
    evalue: str | None = None


class _TypedCell(msgspec.Struct):
    cell_type: str
    source: str | list[str] = ""
    execution_count: int | None = None
    outputs: list[_TypedOutput] | None = None


class _TypedNotebook(msgspec.Struct):
    cells: list[_TypedCell]
    metadata: Any = None
    nbformat: int | None = None


_notebook = msgspec.json.Decoder(_Notebook).decode
_typed = msgspec.json.Decoder(_TypedNotebook).decode
_cell = msgspec.json.Decoder(_Cell).decode
_output = msgspec.json.Decoder(_Output).decode

#: Output types of nbformat 4.
OUTPUT_TYPES = frozenset({"stream", "display_data", "execute_result", "error"})


@dataclass
class Output:
    """One output of a code cell: its type, its data (MIME type → raw JSON value) and, for
    an error, the exception's class and message."""

    kind: str
    data: dict[str, bytes] = field(default_factory=dict)
    ename: str | None = None
    evalue: str | None = None


@dataclass
class Cell:
    """One cell: its position among all cells, kind (code, markdown, raw), source, execution
    count, outputs, and what was wrong with it (``problems``)."""

    position: int
    kind: str
    source: str
    execution_count: int | None = None
    outputs: list[Output] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


@dataclass
class ParsedNotebook:
    """A notebook's cells, kernel language and kernel name (as its metadata says), nbformat."""

    cells: list[Cell]
    language: str | None
    kernel: str | None
    nbformat: int | None


def parse(raw: bytes) -> ParsedNotebook:
    """The cells of a notebook's JSON; a :class:`JunoBenchError` when it is not a notebook."""
    fast = _well_formed(raw)
    if fast is not None:
        return fast
    try:
        top = _notebook(raw)
    except (msgspec.DecodeError, ValueError, RecursionError) as error:
        raise JunoBenchError(f"not a notebook: {first_line(error, 160)}") from None
    if top.nbformat in (1, 2, 3):
        return parse(_upgraded(raw))
    if top.cells is None:
        raise JunoBenchError("not a notebook: no 'cells' list" if top.nbformat is None
                             else f"not a notebook of nbformat 4: nbformat {top.nbformat!r}, no 'cells' list")
    language, kernel = _kernel(top.metadata)
    cells = [_read_cell(position, chunk) for position, chunk in enumerate(top.cells)]
    return ParsedNotebook(cells, language, kernel, top.nbformat if isinstance(top.nbformat, int) else None)


def _well_formed(raw: bytes) -> ParsedNotebook | None:
    """A notebook of the usual shape (every value of the type nbformat 4 gives it) decoded in
    one pass; None for any other, which :func:`parse` reads cell by cell, output by output."""
    try:
        top = _typed(raw)
    except (msgspec.DecodeError, ValueError, RecursionError):
        return None
    if top.nbformat != 4:
        return None
    cells = []
    for position, raw_cell in enumerate(top.cells):
        count = raw_cell.execution_count
        source = raw_cell.source if type(raw_cell.source) is str else "".join(raw_cell.source)
        cell = Cell(position, raw_cell.cell_type, source, count if count is not None and 0 <= count < 2**31 else None)
        for number, output in enumerate(raw_cell.outputs or ()):
            if output.output_type not in OUTPUT_TYPES:
                cell.problems.append(f"cell {position}, output {number}: unknown output type "
                                     f"{output.output_type[:60]!r}")
            cell.outputs.append(Output(output.output_type, {k: bytes(v) for k, v in (output.data or {}).items()},
                                       output.ename, output.evalue))
        cells.append(cell)
    language, kernel = _kernel(top.metadata)
    return ParsedNotebook(cells, language, kernel, 4)


def _read_cell(position: int, chunk: msgspec.Raw) -> Cell:
    try:
        raw = _cell(chunk)
    except (msgspec.DecodeError, ValueError, RecursionError) as error:
        return Cell(position, "unreadable", "", problems=[f"cell {position}: not a cell ({first_line(error, 160)})"])
    kind = raw.cell_type if isinstance(raw.cell_type, str) else "unreadable"
    cell = Cell(position, kind, multiline(raw.source))
    if not isinstance(raw.source, str | list) or (isinstance(raw.source, list) and not all(
            isinstance(s, str) for s in raw.source)):
        cell.problems.append(f"cell {position}: its source is not text")
    if isinstance(raw.execution_count, int) and not isinstance(raw.execution_count, bool) \
            and 0 <= raw.execution_count < 2**31:
        cell.execution_count = raw.execution_count
    for number, item in enumerate(raw.outputs or ()):
        try:
            output = _output(item)
        except (msgspec.DecodeError, ValueError, RecursionError) as error:
            cell.problems.append(f"cell {position}, output {number}: not an output ({first_line(error, 160)})")
            cell.outputs.append(Output("unreadable"))
            continue
        kind = output.output_type if isinstance(output.output_type, str) else "unreadable"
        if kind not in OUTPUT_TYPES:
            cell.problems.append(f"cell {position}, output {number}: unknown output type {str(kind)[:60]!r}")
        cell.outputs.append(Output(kind, {k: bytes(v) for k, v in (output.data or {}).items()},
                                   _str(output.ename), _str(output.evalue)))
    return cell


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _kernel(metadata: Any) -> tuple[str | None, str | None]:
    """The kernel's language (lower case) and name, from ``kernelspec`` or ``language_info``."""
    if not isinstance(metadata, dict):
        return None, None
    spec = metadata.get("kernelspec")
    info = metadata.get("language_info")
    spec = spec if isinstance(spec, dict) else {}
    info = info if isinstance(info, dict) else {}
    language = spec.get("language") or info.get("name")
    name = spec.get("name")
    return (language.strip().lower() if isinstance(language, str) and language.strip() else None,
            name if isinstance(name, str) else None)


def _upgraded(raw: bytes) -> bytes:
    """An nbformat 1–3 notebook upgraded to nbformat 4 (nbformat's conversion)."""
    import nbformat

    try:
        notebook = nbformat.reads(raw.decode("utf-8"), as_version=4)
    except Exception as error:  # nbformat raises many types for malformed old notebooks
        raise JunoBenchError(f"not a notebook: cannot upgrade it to nbformat 4 ({first_line(error, 160)})") from None
    return json.dumps(notebook, ensure_ascii=False).encode("utf-8")
