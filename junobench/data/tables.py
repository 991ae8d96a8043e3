"""The snapshot's tables: ``benchmark_desc.xlsx`` (one row per case) and the optional
diagnosis table ``ground_truth_crash_prediction.xlsx`` (one row per notebook).

Read with calamine (fast, read-only); written with openpyxl. Column names are the
published ones; :data:`DESC_COLUMNS` maps them to record fields, once.

>>> DESC_COLUMNS["label_root_cause"]
'root_cause'
"""

from __future__ import annotations

import os
import re
import zipfile
import zlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from junobench import vocab
from junobench.data import layout
from junobench.errors import JunoBenchError, Problem
from junobench.safety.archives import Refusal, archive_members
from junobench.safety.atomic import atomic_path
from junobench.safety.paths import check_not_linked_out, require_regular
from junobench.safety.text import shortened

if TYPE_CHECKING:
    from openpyxl import Workbook
    from openpyxl.worksheet.worksheet import Worksheet
    from python_calamine import CalamineWorkbook

#: Published (and labelling-sheet) columns of benchmark_desc.xlsx → record field.
DESC_COLUMNS: dict[str, str] = {
    "nb_name": "case_id",
    "eid": "eid",
    "ename": "ename",
    "evalue": "evalue",
    "traceback": "traceback",
    "label_root_cause": "root_cause",
    "label_refined_exp_type": "crash_type",
    "label_ML_pipeline": "pipeline_stage",
    "label_if_ML_bug": "ml_bug",
    "NotebookUrl": "notebook_url",
    "Libs-cause": "libs_cause",
    "source": "source",
    "Dataset_note": "dataset_note",
    "fname": "fname",
}
#: Columns without which a case cannot be labelled.
DESC_REQUIRED: tuple[str, ...] = (
    "nb_name",
    "label_root_cause",
    "label_refined_exp_type",
    "label_ML_pipeline",
    "label_if_ML_bug",
    "NotebookUrl",
)
#: Per-dataset columns, numbered from 1: ``DatasetTitle_1``, ``DatasetLicenseName_1`` …
DATASET_COLUMNS: dict[str, str] = {
    "DatasetTitle": "title",
    "DatasetUrl": "url",
    "DatasetLicenseName": "license",
}
_DATASET_COLUMN = re.compile(r"^(DatasetTitle|DatasetUrl|DatasetLicenseName)_(\d+)$")

DIAGNOSIS_REQUIRED: tuple[str, ...] = ("instance", "diagnosis")
#: A snapshot table's required columns, and the hint when some are missing.
REQUIRED: dict[str, tuple[tuple[str, ...], str]] = {
    layout.DESC_TABLE: (DESC_REQUIRED, "use the published columns of benchmark_desc.xlsx"),
    layout.DIAGNOSIS_TABLE: (DIAGNOSIS_REQUIRED, "the diagnosis table has columns instance and diagnosis"),
}


@dataclass
class Table:
    """A sheet as header + rows of Python values (None for empty cells)."""

    path: Path
    columns: list[str]
    rows: list[list[Any]]

    def records(self) -> list[dict[str, Any]]:
        return [dict(zip(self.columns, row, strict=False)) for row in self.rows]

    def require(self, columns: Iterable[str], *, hint: str) -> None:
        _require(self.path, self.columns, columns, hint=hint)


def _require(path: Path, header: Sequence[str], columns: Iterable[str], *, hint: str) -> None:
    missing = [c for c in columns if c not in header]
    if missing:
        raise JunoBenchError(f"missing required column(s) {', '.join(map(repr, missing))}",
                             file=path, hint=hint)


def snapshot_sheet(root: str | Path, name: str) -> tuple[list[str], list[list[Any]]]:
    """The header and rows (see :func:`_read_sheet`) of the snapshot's table ``name``, a
    :data:`REQUIRED` one, refused when it cannot be read or lacks a required column."""
    path = Path(root) / name
    header, body = _read_sheet(path)
    columns, hint = REQUIRED[name]
    _require(path, header, columns, hint=hint)
    _refuse_repeated_columns(path, header)
    return header, body


def _refuse_repeated_columns(path: Path, header: Sequence[str]) -> None:
    """Refuse a header naming a column twice: which of the two holds the values is a guess
    (the case table read the last, the diagnosis table the first)."""
    first: dict[str, int] = {}
    for number, column in enumerate(header, start=1):
        if column and column in first:
            raise JunoBenchError(f"column {column!r} appears twice (columns {first[column]} and {number})",
                                 file=path, hint="keep one column of each name")
        first.setdefault(column, number)


def read_table(path: str | Path, *, sheet: int | str = 0, columns: Sequence[str] | None = None) -> Table:
    """Read one sheet of an xlsx file; the first row is the header. With ``columns``, only
    those of them that the sheet has are kept (in that order)."""
    path = Path(path)
    header, values = _read_sheet(path, sheet)
    keep = range(len(header)) if columns is None else [header.index(c) for c in columns if c in header]
    width = len(keep)
    rows = []
    for raw in values:
        size = len(raw)
        row = [_value(raw[i]) if i < size else None for i in keep]
        if row.count(None) != width:
            rows.append(row)
    return Table(path, [header[i] for i in keep], rows)


def snapshot_table(root: str | Path, name: str, *, columns: Sequence[str] | None = None) -> Table:
    """:func:`read_table` of the snapshot's own table ``name`` (relative to ``root``),
    refused when it is a link out of the snapshot: its files are read only inside it."""
    path = Path(root) / name
    check_not_linked_out(path, root)
    return read_table(path, columns=columns)


def _read_sheet(path: Path, sheet: int | str = 0) -> tuple[list[str], list[list[Any]]]:
    """A sheet's header (its row 1, trailing empty names dropped) and its rows below, from
    cell A1 as the sheet has them (``rows[n - 2]`` is row ``n``; see :func:`read_table`)."""
    from python_calamine import CalamineError

    try:
        workbook = open_workbook(path)
        worksheet = (workbook.get_sheet_by_index(sheet) if isinstance(sheet, int)
                     else workbook.get_sheet_by_name(sheet))
        values = worksheet.to_python(skip_empty_area=False)  # from A1: rows keep their numbers
    except FileNotFoundError:
        raise JunoBenchError("table not found", file=path, hint="check the snapshot layout") from None
    except (CalamineError, OSError, ValueError, IndexError) as error:
        raise JunoBenchError(f"cannot read the spreadsheet ({error})", file=path,
                             hint="save it again as .xlsx") from None
    if not values:
        raise JunoBenchError("the table is empty (no header row)", file=path)
    header = [_header(v) for v in values[0]]
    while header and header[-1] == "":
        header.pop()
    if not header and any(_value(v) is not None for row in values[1:] for v in row):
        raise JunoBenchError("row 1 is empty: the header must be the sheet's first row", file=path,
                             hint="delete the empty rows above the header (rows are named by their number)")
    del values[0]
    return header, values


def open_workbook(path: Path) -> CalamineWorkbook:
    """The spreadsheet reader's workbook of ``path``, opened only after the file is checked:
    a regular file (no FIFO, no device), a zip whose members are no decompression bomb, and
    sheets whose values span at most :data:`MAX_TABLE_CELLS` from A1 (the reader allocates
    that box before it gives a value, and aborts the process when it cannot). Every
    spreadsheet junobench reads is opened here."""
    from python_calamine import CalamineWorkbook

    require_regular(path)
    _check_spreadsheet(path)
    return CalamineWorkbook.from_path(str(path))


def named_sheet(path: Path, sheet: str, *, hint: str | None = None) -> list[list[Any]]:
    """The values of the sheet named ``sheet`` of the workbook ``path`` (a regular file),
    from its cell A1 (empty rows and columns before the first value are kept, so that
    ``values[n - 1]`` is the sheet's row ``n``); an error naming the sheet when it cannot
    be read."""
    from python_calamine import CalamineError

    try:
        return open_workbook(path).get_sheet_by_name(sheet).to_python(skip_empty_area=False)
    except (CalamineError, OSError, ValueError, KeyError) as error:
        raise JunoBenchError(f"cannot read sheet {sheet!r} ({error})", file=path,
                             hint=hint) from None


#: Cap on an xlsx file's uncompressed size (its zip members' declared sizes): the reader
#: holds a sheet in memory about three times over. The reference table of 111 cases is
#: 0.4 MB; a hundred times as many cases, 36 MB.
MAX_TABLE_BYTES = 1 << 30


#: Cap on the cells of a sheet's box (from A1 to the last row and column holding a value):
#: the reader allocates a box of its cells, 32 bytes a cell, before it gives one value, and
#: aborts the process when it cannot (one value at XFD1048576 asks for 512 GiB); the rows
#: it gives are padded from A1. The reference table's box is 112 rows × 16 columns.
MAX_TABLE_CELLS = 1 << 24


def _check_spreadsheet(path: Path) -> None:
    """An xlsx file is a zip archive: its members are checked before the reader opens it
    (a decompression bomb is refused by its declared size and compression ratio, a sheet
    whose box passes :data:`MAX_TABLE_CELLS` by the cell references of its XML)."""
    if zipfile.is_zipfile(path):  # not a zip: the reader says what it is
        members = archive_members(path, max_bytes=MAX_TABLE_BYTES, refusal=_SPREADSHEET)
        try:
            with zipfile.ZipFile(path) as archive:
                for member in members:
                    if member.name.lower().endswith(".xml"):  # a sheet may sit anywhere its rels say
                        with archive.open(member.key) as xml:
                            _check_sheet_box(path, member.name, xml)
        except (zipfile.BadZipFile, zlib.error, EOFError) as error:
            raise JunoBenchError(f"{_SPREADSHEET.subject} is damaged or cut short ({error})", file=path,
                                 hint="save it again as .xlsx") from None


_SPREADSHEET = Refusal("the spreadsheet (an xlsx file is a zip archive)", "nothing was read")
#: A ``<row>`` or ``<c>`` (cell) start tag, any namespace prefix; no ``<`` or ``>`` inside,
#: so a scan never backtracks past the next tag.
_SHEET_TAG = re.compile(rb"<(?:[\w.-]+:)?(c|row)(?=[\s/>])([^<>]*)>")
_CELL_REF = re.compile(rb"""\sr\s*=\s*["']\$?([A-Za-z]*)\$?(\d*)["']""")
_XML_CHUNK = 1 << 20


def _check_sheet_box(path: Path, member: str, xml: IO[bytes]) -> None:
    """Refuse the spreadsheet ``path`` when the box from A1 to the last row and column
    holding a value in its XML member ``member`` passes :data:`MAX_TABLE_CELLS` (positions
    as the reader gives them: a cell's ``r`` reference, else one past the previous cell or
    row). From A1: the reader's box starts at the first value, but the rows it gives are
    padded from A1 (:func:`_read_sheet`)."""
    row = column = last_row = last_column = 0
    tail = b""
    while chunk := xml.read(_XML_CHUNK):
        text = tail + chunk
        start = text.rfind(b"<")
        cut = start if start != -1 and text.find(b">", start) == -1 else len(text)
        if len(text) - cut > _XML_CHUNK:
            raise _SPREADSHEET.error(path, member, "it holds a tag longer than 1 MiB")
        tail = text[cut:]
        for match in _SHEET_TAG.finditer(text, 0, cut):
            reference = _CELL_REF.search(match[2])
            letters, digits = reference.groups() if reference else (b"", b"")
            if len(digits) > 7 or len(letters) > 3:  # past row 1,048,576 or column XFD
                raise _SPREADSHEET.error(path, member, "a cell or row reference past the last row or "
                                         f"column a sheet has ({(letters + digits)[:20].decode()}…)")
            if match[1] == b"row":
                row, column = (int(digits) if digits else row + 1), 0
                continue
            column = _column_number(letters) if letters else column + 1
            row = int(digits) if digits else row
            if not match[2].endswith(b"/"):  # an empty cell is no value
                last_row, last_column = max(last_row, row), max(last_column, column)
        cells = last_row * last_column
        if cells > MAX_TABLE_CELLS:
            raise _SPREADSHEET.error(
                path, member, f"its values reach row {last_row:,} and column {last_column:,}: "
                f"{cells:,} cells from A1, past the cap of {MAX_TABLE_CELLS:,} (a value far "
                "from the table? delete it)")


def _column_number(letters: bytes) -> int:
    """``b"A"`` → 1, ``b"AB"`` → 28 (a cell reference's column)."""
    number = 0
    for letter in letters.upper():
        number = number * 26 + letter - 64
    return number


#: Characters an xlsx cell holds (Excel's limit; openpyxl cuts longer text silently).
XLSX_CELL_LIMIT = 32767


def write_table(path: str | Path, rows: Sequence[Mapping[str, Any]], columns: Sequence[str], *,
                display: str | Path | None = None) -> None:
    """Write rows as a one-sheet xlsx, atomically (see :mod:`junobench.safety.atomic`).

    Text is written as text cells, never as formulas (a value ``=1+1`` reads back as
    ``=1+1``); characters XML cannot hold are written in the xlsx escape ``_xHHHH_``,
    which readers turn back into the character; lone surrogates become U+FFFD. A text
    longer than a cell holds (:data:`XLSX_CELL_LIMIT`, escapes counted) is refused, naming
    ``display`` (default ``path``), its row and column, rather than written cut.
    """
    from openpyxl import Workbook
    from openpyxl.cell import WriteOnlyCell

    def value_of(value: Any, column: str, number: int, row: Mapping[str, Any]) -> Any:
        value = _cell(value)
        if type(value) is not str:
            return value
        escaped = _xlsx_text(value)
        if len(escaped) > XLSX_CELL_LIMIT:
            case = stripped(row.get("nb_name")) or vocab.case_of_instance(stripped(row.get("instance")))
            raise JunoBenchError(f"row {number}, column {column!r}: {len(escaped):,} characters, more "
                                 f"than the {XLSX_CELL_LIMIT:,} a spreadsheet cell holds",
                                 file=display or path, case=case, hint="shorten it: nothing was written")
        return _Text(escaped)

    values = [[value_of(c, c, 1, {}) for c in columns],  # every cell checked before writing
              *([value_of(row.get(c), c, number, row) for c in columns]
                for number, row in enumerate(rows, start=2))]
    workbook = Workbook(write_only=True)
    sheet = workbook.create_sheet("Sheet1")

    def cell(value: Any) -> Any:
        if type(value) is not _Text:
            return value
        text = WriteOnlyCell(sheet, value=str(value))
        text.data_type = "s"  # text even when it starts with '=': never a formula
        return text

    for line in values:
        sheet.append([cell(v) for v in line])
    with atomic_path(path, suffix=".xlsx") as temporary:
        workbook.save(temporary)


class _Text(str):
    """A text cell's value, escaped for xlsx (:func:`write_table`)."""


_XLSX_ESCAPE = re.compile(r"_(x[0-9A-Fa-f]{4}_)")
_XLSX_ILLEGAL = re.compile(r"[\x00-\x08\x0b-\x1f]")  # CR too: XML would make it LF
_SURROGATE = re.compile(r"[\ud800-\udfff]")


def _xlsx_text(text: str) -> str:
    """``text`` as xlsx stores it: a literal ``_xHHHH_`` escaped as ``_x005F_xHHHH_``,
    control characters as ``_xHHHH_``, lone surrogates as U+FFFD."""
    if "_x" in text:
        text = _XLSX_ESCAPE.sub(r"_x005F_\1", text)
    text = _XLSX_ILLEGAL.sub(lambda m: f"_x{ord(m.group()):04X}_", text)
    return _SURROGATE.sub("\ufffd", text)


def stripped(value: object) -> str | None:
    """A table cell's text without surrounding whitespace; None for an empty or missing cell.

    >>> stripped(" pandas_1 "), stripped("  "), stripped(None), stripped(3)
    ('pandas_1', None, None, '3')
    """
    if value is None:
        return None
    text = str(value).strip()
    return text or None


# --------------------------------------------------------------------------- review sheets


#: Characters kept of a text cell of a review sheet (Excel's cell holds 32,767).
SHEET_CELL_LIMIT = 32000


def sheet_text(value: str) -> str:
    """Text a review sheet's cell shows (a code cell, an answer): control characters but
    line breaks and tabs dropped, cut at :data:`SHEET_CELL_LIMIT` characters.

    >>> sheet_text("a\\x1b[31mb\\n")
    'a[31mb\\n'
    """
    clean = "".join(c for c in value if c in "\n\t" or ord(c) >= 32)
    return shortened(clean, SHEET_CELL_LIMIT)


def review_sheet(title: str, columns: Sequence[str]) -> tuple[Workbook, Worksheet]:
    """A new workbook whose one sheet, ``title``, has the header row ``columns``; the
    workbook and that sheet, to fill and then save with :func:`save_review_sheet`."""
    from openpyxl import Workbook

    workbook = Workbook()
    ws = workbook.create_sheet(title)
    workbook.remove(workbook.worksheets[0])
    ws.append(list(columns))
    return workbook, ws


def drop_down(ws: Worksheet, column: str, formula: str, **options: Any) -> None:
    """A drop-down list of the values ``formula`` gives (blank allowed) on the cells of
    ``column`` (a letter) below the header, down to the sheet's last row."""
    from openpyxl.worksheet.datavalidation import DataValidation

    rule = DataValidation(type="list", formula1=formula, allow_blank=True, **options)
    ws.add_data_validation(rule)
    if ws.max_row > 1:
        rule.add(f"{column}2:{column}{ws.max_row}")


def save_review_sheet(workbook: Workbook, ws: Worksheet, path: Path, widths: Sequence[float]) -> None:
    """Save a review sheet atomically (see :mod:`junobench.safety.atomic`): the text cells
    of its columns below the header stored as text (never as formulas), the columns A, B …
    ``widths`` wide, the header row frozen."""
    from openpyxl.utils import get_column_letter

    for cells in ws.iter_rows(min_row=2, max_col=len(widths)):
        for cell in cells:
            if isinstance(cell.value, str):
                cell.data_type = "s"  # text, never a formula
    for number, width in enumerate(widths, start=1):
        ws.column_dimensions[get_column_letter(number)].width = width
    ws.freeze_panes = "A2"
    with atomic_path(path, suffix=".xlsx") as temporary:
        workbook.save(temporary)


def review_rows(path: Path, sheet: str, columns: Sequence[str], *, refusal: str,
                hint: str) -> list[tuple[int, list[Any]]]:
    """The rows below the header of the sheet ``sheet`` of a filled review sheet ``path``,
    each with its number in the sheet (the header is row 1) and padded to ``columns``;
    ``refusal`` (with ``hint``) when its header does not start with ``columns``."""
    values = named_sheet(path, sheet)
    if not values or [str(c) for c in values[0][: len(columns)]] != list(columns):
        raise JunoBenchError(refusal, file=path, hint=hint)
    width = len(columns)
    return [(number, [*row, *[None] * (width - len(row))]) for number, row in enumerate(values[1:], start=2)]


# --------------------------------------------------------------------------- desc table


@dataclass
class DescRow:
    """One case's row of benchmark_desc.xlsx, with record field names."""

    case_id: str
    row_number: int
    fields: dict[str, Any]
    datasets: list[dict[str, str | None]] = field(default_factory=list)


def read_desc(root: str | Path) -> tuple[list[DescRow], list[Problem]]:
    """Rows of a snapshot's benchmark_desc.xlsx and the row-level problems found.

    Raises for a missing table or missing required columns (nothing can be built);
    returns empty or duplicate case ids as problems.
    """
    path = Path(root) / layout.DESC_TABLE
    if not os.path.lexists(path):
        raise JunoBenchError("the case table is missing", file=path,
                             hint=f"a snapshot holds {layout.DESC_TABLE} beside benchmark/")
    check_not_linked_out(path, root)
    header, body = snapshot_sheet(root, layout.DESC_TABLE)
    position = {c: i for i, c in enumerate(header)}
    known = [(f, position[c]) for c, f in DESC_COLUMNS.items() if c in position]
    dataset_slots = sorted({int(m[2]) for c in header if (m := _DATASET_COLUMN.match(c))})
    slot_columns = [[(f, position.get(f"{c}_{slot}")) for c, f in DATASET_COLUMNS.items()]
                    for slot in dataset_slots]
    id_column = position["nb_name"]
    width = len(header)
    rows: list[DescRow] = []
    problems: list[Problem] = []
    seen: dict[str, int] = {}
    name = layout.DESC_TABLE
    # each cell read once, as text; rows numbered as in the sheet (the header is row 1)
    for number, values in enumerate(body, start=2):
        if len(values) < width:
            values = [*values, *[None] * (width - len(values))]
        case_id = _text(values[id_column])
        if case_id is None:
            if all(_value(v) is None for v in values[:width]):
                continue  # an empty row
            problems.append(Problem(f"row {number}: empty nb_name", name, None,
                                    "give every row its case id"))
            continue
        if case_id in seen:
            problems.append(Problem(f"duplicate case id (rows {seen[case_id]} and {number})",
                                    name, case_id, "keep one row per case"))
            continue
        seen[case_id] = number
        fields = {f: _text(values[i]) for f, i in known}
        datasets = []
        for slot in slot_columns:
            entry = {f: None if i is None else _text(values[i]) for f, i in slot}
            if any(v is not None for v in entry.values()):
                datasets.append(entry)
        rows.append(DescRow(case_id, number, fields, datasets))
    duplicates = {p.case for p in problems if p.case}
    return [r for r in rows if r.case_id not in duplicates], problems


def read_diagnoses(root: str | Path) -> dict[str, str]:
    """``instance`` → diagnosis from the optional diagnosis table (empty when absent)."""
    path = Path(root) / layout.DIAGNOSIS_TABLE
    if not os.path.lexists(path):
        return {}
    check_not_linked_out(path, root)
    header, body = snapshot_sheet(root, layout.DIAGNOSIS_TABLE)
    i, d = header.index("instance"), header.index("diagnosis")
    out: dict[str, str] = {}
    for row in body:
        if len(row) > max(i, d):
            instance, diagnosis = _text(row[i]), _text(row[d])
            if instance and diagnosis:
                out[instance] = diagnosis
    return out


# --------------------------------------------------------------------------- values


def _header(value: Any) -> str:
    return "" if value is None else str(value).strip()


def _value(value: Any) -> Any:
    if value == "" or value != value:  # an empty cell, or NaN
        return None
    return value


def _text(value: Any) -> str | None:
    """A cell as text: None for empty (or NaN); integral floats without '.0'."""
    if type(value) is str:
        return None if not value or value.isspace() else value
    if value is None:
        return None
    if isinstance(value, float):
        if value != value:
            return None
        if value.is_integer():
            return str(int(value))
    if isinstance(value, (datetime, date)):
        return value.isoformat()
    text = str(value)
    return text if text.strip() else None


def _cell(value: Any) -> Any:
    if value is None or isinstance(value, (str, int, float, bool, datetime, date)):
        return value
    return str(value)
