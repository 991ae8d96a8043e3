"""Notebook parsing: code cells, the target cell, the execution order, tracebacks.

Pure functions, no kernel. The JunoBench rules, defined here once:

- Code cells that carry an execution count ran, in ascending count order (ties in
  notebook order); cells without a count did not run; markdown cells never run.
- The target cell of a reproduced notebook is the code cell with an ``error`` output
  (the first in execution order if several have one); in the fixed notebook it is the
  code cell at the same code-cell position.
- The cells executed before the crash are those with a count lower than the target's
  (all counted cells when the target has no count).
- A cell whose first line is a comment carrying ``[reexecute]`` ran once before and runs
  again at its own count: it appears twice in a row in the order, the first run with
  no recorded count. When it is the target, the order ends with the target twice.
- The crash line comes from the traceback's first frame, in either IPython style:
  ``<ipython-input-N-…> in <cell line: K>`` / ``----> K`` and ``Cell In[N], line K``.

>>> nb = parse_notebook('''{"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [
...   {"cell_type": "code", "execution_count": 2, "metadata": {}, "outputs": [], "source": "y = x"},
...   {"cell_type": "code", "execution_count": 1, "metadata": {}, "outputs": [], "source": "x = 1"}]}''')
>>> [(s.code_cell_index, s.execution_count) for s in execution_order(nb.code_cells, 0)]
[(1, 1), (0, 2)]
"""

from __future__ import annotations

import ast
import errno
import json
import operator
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

import msgspec

from junobench.errors import JunoBenchError
from junobench.safety.archives import human_size
from junobench.safety.paths import read_regular

_ANSI = re.compile(r"\x1b(?:\[[0-9;?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)|[@-Z\\-_])")
_REEXECUTE = re.compile(r"^\s*#.*\[reexecute\]", re.IGNORECASE)
# First frame of a cell: IPython >= 8 ("Cell In[3], line 4"), 8.0-8.4 ("Input In [3], in
# <cell line: 4>()"), older ("<ipython-input-3-…> in <cell line: 4>" or "in <module>"
# followed by "----> 4 …"), and ipykernel temp files ("/tmp/ipykernel_1/2.py in <module>").
_CELL_LINE = re.compile(r"(?:Cell In ?\[\s*\d*\s*\]|Input In ?\[\s*\d*\s*\]).*?line:? (\d+)")
_CELL_LINE_TAG = re.compile(r"<cell line: (\d+)>")
_CELL_FRAME = re.compile(
    r"Cell In ?\[|Input In ?\[|<ipython-input-[^>]*>|[\\/]ipykernel_\d+[\\/][^\s:]+\.py"
)


def _may_name_cell(frame: str) -> bool:
    """Whether ``frame`` holds a text that every match of ``_CELL_FRAME`` holds."""
    return "In[" in frame or "In [" in frame or "<ipython-input-" in frame or "ipykernel_" in frame


_ARROW_LINE = re.compile(r"^\s*-*>\s*(\d+)", re.MULTILINE)
_STRING_LITERAL = re.compile(r"""'(?:[^'\\\n]|\\.)*'|"(?:[^"\\\n]|\\.)*\"""", re.DOTALL)


class NotebookError(JunoBenchError):
    """A notebook that cannot be read or lacks what the benchmark needs."""


@dataclass(frozen=True, slots=True)
class ErrorOutput:
    """An ``error`` output of a code cell (traceback lines without ANSI codes)."""

    ename: str
    evalue: str
    traceback: tuple[str, ...]

    @property
    def crash_line(self) -> int | None:
        """The crashing line of the cell (see :func:`crash_line`)."""
        return _crash_line(self.traceback)


class CodeCell(NamedTuple):
    """A code cell; ``index`` is its position among the notebook's code cells."""

    index: int  # type: ignore[assignment]  # the published field name; shadows tuple.index
    source: str
    execution_count: int | None
    error: ErrorOutput | None = None

    @property
    def reexecute(self) -> bool:
        """True when the first line carries the ``[reexecute]`` marker."""
        return has_reexecute_marker(self.source)


def has_reexecute_marker(source: str) -> bool:
    """True when a cell's first line is a comment carrying ``[reexecute]``."""
    return bool(_REEXECUTE.match(source))


def without_reexecute_marker(source: str) -> str:
    """A cell's code without its ``[reexecute]`` marker line (unchanged when it has none)."""
    return source.partition("\n")[2] if has_reexecute_marker(source) else source


class Step(NamedTuple):
    """One run of a cell in an execution order (``execution_count`` None: unrecorded run)."""

    code_cell_index: int
    execution_count: int | None


@dataclass(frozen=True, slots=True)
class Notebook:
    """A parsed notebook: its code cells and its nbformat v4 JSON text (``upgraded_from``:
    the nbformat version it was upgraded from, its text then the upgraded notebook's)."""

    code_cells: tuple[CodeCell, ...]
    text: str
    upgraded_from: int | None = None

    @property
    def target_index(self) -> int | None:
        """Code-cell index of the crashing cell (see :func:`find_target`)."""
        return find_target(self.code_cells)


# --------------------------------------------------------------------------- reading


def read_notebook(path: str | Path, *, case: str | None = None,
                  raw: bytes | None = None) -> tuple[Notebook, str]:
    """Read and parse a notebook file; returns the notebook and its (v4) JSON text.
    ``raw``: the file's bytes, when they were read already."""
    try:  # only a regular file up to MAX_NOTEBOOK_BYTES is read (a FIFO or a device is
        # refused, and a larger file before it is read)
        raw = read_regular(path, limit=MAX_NOTEBOOK_BYTES) if raw is None else raw
    except OSError as error:
        if error.errno == errno.EFBIG:
            raise NotebookError(f"the notebook is larger than {human_size(MAX_NOTEBOOK_BYTES)}, "
                                "more than junobench reads", file=path, case=case,
                                hint="clear its outputs (a notebook that large is mostly outputs)") from None
        raise NotebookError(f"cannot read the notebook ({error.strerror or error})", file=path,
                            case=case, hint="check that the file exists and is readable") from None
    notebook = parse_notebook(raw, file=path, case=case)
    return notebook, notebook.text


#: Largest notebook read (parsing holds about three times its size in memory); real
#: notebooks, outputs included, stay far below.
MAX_NOTEBOOK_BYTES = 1 << 30


def parse_notebook(
    raw: str | bytes, *, file: str | Path | None = None, case: str | None = None
) -> Notebook:
    """Parse notebook JSON (nbformat 4, or older upgraded with nbformat) into code cells.

    Raises :class:`NotebookError` naming ``file`` and ``case`` for anything that is not a
    notebook; never another exception.
    """
    try:
        text = raw.decode("utf-8") if isinstance(raw, (bytes, bytearray)) else raw
    except UnicodeDecodeError as error:
        raise NotebookError(f"not UTF-8 text ({error.reason} at byte {error.start})", file=file,
                            case=case, hint=_RESAVE) from None
    code_cells = _typed_code_cells(text)
    if code_cells is not None:
        return Notebook(code_cells, text)
    return _checked_notebook(text, file, case)


_RESAVE = "open it in Jupyter and save it again"


def _checked_notebook(text: str, file: str | Path | None, case: str | None) -> Notebook:
    """:func:`parse_notebook` value by value: what a notebook of another shape than
    :class:`_NotebookShape` holds (or what is wrong with it, in a :class:`NotebookError`)."""

    def fail(problem: str, hint: str = _RESAVE) -> NotebookError:
        return NotebookError(problem, file=file, case=case, hint=hint)

    try:
        data = json.loads(text)
    except (ValueError, RecursionError) as error:  # JSONDecodeError, or a number too long
        where = f" (line {error.lineno}, column {error.colno})" if isinstance(
            error, json.JSONDecodeError) else ""
        message = (error.msg if isinstance(error, json.JSONDecodeError) else
                   "nested too deeply" if isinstance(error, RecursionError) else str(error)[:120])
        raise fail(f"not valid JSON: {message}{where}") from None
    if not isinstance(data, dict):
        raise fail("not a notebook: the JSON is not an object")
    upgraded_from = None
    major = data.get("nbformat")
    if major != 4:
        data, upgraded_from = _upgrade(data, fail)
    cells = data.get("cells")
    if not isinstance(cells, list):
        raise fail("not a notebook: no 'cells' list")
    code_cells: list[CodeCell] = []
    for position, cell in enumerate(cells):
        if type(cell) is not dict:
            raise fail(f"cell {position} is not an object")
        if cell.get("cell_type") != "code":
            continue
        source = cell.get("source", "")
        if type(source) is list:
            try:
                source = "".join(source)
            except TypeError:
                source = None
        if type(source) is not str:
            raise fail(f"cell {position}: 'source' is neither a string nor a list of strings")
        count = cell.get("execution_count")
        if count is not None and (type(count) is not int or not 0 <= count <= MAX_INT32):
            shown = repr(count) if len(repr(count)) < 40 else repr(count)[:40] + "…"
            raise fail(f"cell {position}: execution_count {shown} is not an integer "
                       f"from 0 to {MAX_INT32}")
        crash = None
        outputs = cell.get("outputs")
        if outputs:
            if type(outputs) is not list:
                raise fail(f"cell {position}: 'outputs' is not a list")
            crash = next((_error_output(o.get("ename", ""), o.get("evalue", ""), o.get("traceback", []))
                          for o in outputs if type(o) is dict and o.get("output_type") == "error"), None)
        code_cells.append(CodeCell(len(code_cells), source, count, crash))
    if _MAY_HOLD_SURROGATE(text):
        _refuse_surrogates(code_cells, fail)
    if upgraded_from is not None:
        text = json.dumps(data, ensure_ascii=False)
    return Notebook(tuple(code_cells), text, upgraded_from)


# The shape of a notebook that parses without a word (nbformat 4, every value of a type
# the checks accept), decoded by msgspec straight into these structs: the other keys are
# skipped, not turned into Python objects, and the types are checked while decoding.
# Whatever msgspec refuses (another shape, a lone surrogate, NaN) goes value by value
# through _checked_notebook, which gives the same cells or says what is wrong.


class _OutputShape(msgspec.Struct):
    output_type: Any = None
    ename: Any = ""
    evalue: Any = ""
    traceback: Any = []


class _CellShape(msgspec.Struct):
    cell_type: Any = None
    source: str | list[str] = ""
    execution_count: int | None = None
    outputs: list[_OutputShape] | None = None


class _NotebookShape(msgspec.Struct):
    cells: list[_CellShape]
    nbformat: Any = None


_decode_shape = msgspec.json.Decoder(_NotebookShape).decode


def _typed_code_cells(text: str) -> tuple[CodeCell, ...] | None:
    """The code cells of a notebook of :class:`_NotebookShape` (None for any other)."""
    try:
        notebook = _decode_shape(text)
    except (msgspec.DecodeError, ValueError, RecursionError):  # ValueError: a str with a lone surrogate
        return None
    if notebook.nbformat != 4:
        return None
    code_cells: list[CodeCell] = []
    new_cell = tuple.__new__  # CodeCell(...) without its Python-level __new__ (once per cell)
    for cell in notebook.cells:
        if cell.cell_type != "code":
            continue
        source = cell.source
        if type(source) is list:
            source = "".join(source)
        count = cell.execution_count
        if count is not None and not 0 <= count <= MAX_INT32:
            return None
        crash = None
        if cell.outputs:
            crash = next((_error_output(o.ename, o.evalue, o.traceback)
                          for o in cell.outputs if o.output_type == "error"), None)
        code_cells.append(new_cell(CodeCell, (len(code_cells), source, count, crash)))
    return tuple(code_cells)


#: Largest execution count or line number a record holds (they are stored as int32).
MAX_INT32 = 2**31 - 1
_MAY_HOLD_SURROGATE = re.compile(r"\\u[dD][89a-fA-F]").search


def _refuse_surrogates(cells: Sequence[CodeCell], fail: Any) -> None:
    """Raise when a cell's source or error output holds a lone surrogate: a ``\\udXXX``
    escape without its pair decodes to a string that is not valid Unicode."""
    for cell in cells:
        texts = [cell.source]
        if cell.error is not None:
            texts += [cell.error.ename, cell.error.evalue, *cell.error.traceback]
        for text in texts:
            try:
                text.encode("utf-8")
            except UnicodeEncodeError as error:
                raise fail(f"code cell {cell.index} holds a lone surrogate "
                           f"(\\u{ord(text[error.start]):04x}), which is not valid Unicode",
                           "replace the escape by the character it stands for") from None


def _upgrade(data: dict[str, Any], fail: Any) -> tuple[dict[str, Any], int]:
    import nbformat

    major = data.get("nbformat")
    if not isinstance(major, int) or isinstance(major, bool) or major not in (1, 2, 3):
        raise fail(f"unsupported nbformat version {major!r}",
                   "JunoBench reads nbformat 4 notebooks (older ones are upgraded)")
    try:
        upgraded = nbformat.convert(nbformat.from_dict(data), 4)
    except Exception as error:  # nbformat raises many types for malformed old notebooks
        raise fail(f"cannot upgrade nbformat {major} notebook to version 4 ({error})") from None
    return json.loads(json.dumps(upgraded)), major


def _error_output(ename: Any, evalue: Any, traceback: Any) -> ErrorOutput:
    return ErrorOutput(ename=str(ename), evalue=str(evalue), traceback=tuple(parse_traceback(traceback)))


# --------------------------------------------------------------------------- order


def find_target(code_cells: Sequence[CodeCell]) -> int | None:
    """Code-cell index of the cell with an error output (first in execution order)."""
    crashed = [c for c in code_cells if c.error is not None]
    if not crashed:
        return None
    return min(crashed, key=_run_key).index


def execution_order(code_cells: Sequence[CodeCell], target: int) -> list[Step]:
    """The runs that lead to and include ``target`` (a code-cell index), in order.

    Ends with the target; a ``[reexecute]`` cell runs twice in a row, the first time
    with no recorded count.
    """
    return [Step(index, count) for index, count, _ in execution_runs(code_cells, target)]


def execution_runs(code_cells: Sequence[CodeCell], target: int) -> list[tuple[int, int | None, str]]:
    """:func:`execution_order` as plain ``(code-cell index, count, source)`` tuples (what
    the record builder stores, without a :class:`Step` per run)."""
    if not 0 <= target < len(code_cells):
        raise IndexError(f"target code cell {target} out of range (0..{len(code_cells) - 1})")
    target_cell = code_cells[target]
    limit = target_cell.execution_count
    if limit is None:
        before = [c for c in code_cells if c[2] is not None and c[0] != target]
    else:  # the target's own count is not below itself
        before = [c for c in code_cells if c[2] is not None and c[2] < limit]
    before.sort(key=_COUNT)  # stable: equal counts keep notebook order
    before.append(target_cell)
    runs: list[tuple[int, int | None, str]] = []
    for index, source, count, _ in before:
        if _REEXECUTE.match(source):
            runs.append((index, None, source))
        runs.append((index, count, source))
    return runs


_COUNT = operator.itemgetter(2)  # CodeCell.execution_count


def _run_key(cell: CodeCell) -> tuple[int, int]:
    count = cell.execution_count
    return (count if count is not None else 1 << 62, cell.index)


# --------------------------------------------------------------------------- tracebacks


def strip_ansi(text: str) -> str:
    """Remove ANSI colour and control sequences."""
    return _ANSI.sub("", text)


def parse_traceback(value: Any) -> list[str]:
    """Normalise a traceback to a list of ANSI-free strings, one per frame/line group.

    Accepts a list of strings, a single string, a Python-literal string of a list (as
    the published tables store them), and such a literal cut short (Excel's cell limit):
    the complete items are kept and the cut item is kept as far as it goes.

    >>> parse_traceback("['a', 'b\\\\n']")
    ['a', 'b\\n']
    >>> parse_traceback("['KeyError: 1', 'cut her")
    ['KeyError: 1', 'cut her']
    """
    if value is None:
        return []
    if isinstance(value, (list, tuple)):
        return [strip_ansi(v if isinstance(v, str) else str(v)) for v in value]
    if not isinstance(value, str):
        return [strip_ansi(str(value))]
    text = value.strip()
    if text.startswith("["):
        items = _literal_list(text)
        if items is not None:
            return [strip_ansi(v) for v in items]
    return [strip_ansi(value)] if value else []


def _literal_list(text: str) -> list[str] | None:
    try:
        parsed = ast.literal_eval(text)
    except (ValueError, SyntaxError, MemoryError, RecursionError, TypeError):
        return _salvage_literal_list(text)
    if isinstance(parsed, list):
        return [v if isinstance(v, str) else str(v) for v in parsed]
    return None


def _salvage_literal_list(text: str) -> list[str] | None:
    """Items of a truncated ``['…', '…`` literal: complete ones, then the cut remainder."""
    items: list[str] = []
    end = 1
    for match in _STRING_LITERAL.finditer(text, 1):
        gap = text[end:match.start()].strip()
        if gap not in ("", ","):
            break
        try:
            items.append(ast.literal_eval(match.group()))
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            break
        end = match.end()
    rest = text[end:].lstrip(" ,\n")
    if rest and rest[0] in "'\"" and not rest.rstrip().endswith("]"):
        items.append(_unescape(rest[1:]))
    elif rest and rest.rstrip() not in ("]", ""):
        return items or None
    return items


def _unescape(fragment: str) -> str:
    for candidate in (fragment, fragment.rstrip("\\")):
        try:
            value = ast.literal_eval(f"'''{candidate}'''")
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            continue
        if isinstance(value, str):
            return value
    return fragment


def crash_line(traceback: Any) -> int | None:
    """1-based line of the target cell where the crash happened, from the first frame.

    >>> crash_line(["KeyError   Traceback (most recent call last)",
    ...             "Cell In[23], line 4\\n      3 x = 1\\n----> 4 y = d['k']\\n"])
    4
    >>> crash_line(["<ipython-input-21-4356> in <module>\\n      1 # c\\n----> 2 f()\\n"])
    2
    """
    return _crash_line(parse_traceback(traceback))


def _crash_line(frames: Sequence[str]) -> int | None:
    for frame in frames:
        if not _may_name_cell(frame):  # a quick test of what _CELL_FRAME needs, before it runs
            continue
        match = _CELL_FRAME.search(frame)
        if not match:
            continue
        head = frame[match.start():].split("\n", 1)[0]
        for pattern in (_CELL_LINE, _CELL_LINE_TAG):
            found = pattern.search(head)
            if found:
                return _line_number(found.group(1))
        arrow = _ARROW_LINE.search(frame, match.end())
        return _line_number(arrow.group(1)) if arrow else None
    return None


def _line_number(digits: str) -> int | None:
    """A line number from a traceback; None when it is too large to be one."""
    return int(digits) if len(digits) <= 9 else None

