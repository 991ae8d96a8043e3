"""Judgments of diagnoses, and end-to-end scores (detection and diagnosis) from them.

A judgment grades one detector's answer on one notebook in one *setting* (a model and its
inputs, such as ``gpt_5_crash_detection_code``) with one of :data:`OUTCOMES`:

- ``correct``: the detection is right and, on a crashing notebook, so is the diagnosis;
- ``partially correct``: crash detected, the diagnosis is right in part;
- ``reasoning wrong``: crash detected, for a wrong reason;
- ``wrong``: the detection is wrong.

CRANE-LLM reduces them to end-to-end scores (its Table 2(a)): only ``correct`` counts as
right, so on a reproduced (crashing) notebook ``correct`` is a true positive and any
other outcome a false negative; on a fixed notebook ``correct`` is a true negative and
``wrong`` a false positive (a fixed notebook has no crash to diagnose: the two diagnosis
outcomes are refused there). Table 3 counts the ``partially correct`` and ``reasoning
wrong`` diagnoses. The scores, intervals and paired tests are the detection ones
(:mod:`~junobench.detection.metrics`, :mod:`~junobench.detection.uncertainty`,
:mod:`~junobench.detection.compare`), applied to these decisions.

Judgments are read from

- CRANE-LLM's ``results/results_summary.xlsx`` (sheet ``Final_evaluation``), or any xlsx
  laid out the same way: a header ``instance, <setting>, …`` and one row per notebook;
  the table ends at the first row that does not name a notebook (the published sheet
  keeps summary formulas below);
- junobench's own files, one judgment per line or row (:func:`write_judgments`): JSON
  Lines ``{"instance": …, "setting": …, "judgment": …}``, or CSV with those columns.

>>> outcome("[Reasoning Wrong]"), outcome(" Partially  correct ")
('reasoning wrong', 'partially correct')
>>> decision("reproduced", "partially correct"), decision("fixed", "wrong")
(False, True)
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from junobench import jsonl, vocab
from junobench.errors import JunoBenchError
from junobench.safety.atomic import atomic_open
from junobench.safety.text import csv_cell, csv_value

CORRECT = "correct"
PARTIALLY_CORRECT = "partially correct"
REASONING_WRONG = "reasoning wrong"
WRONG = "wrong"
#: The four outcomes, best first.
OUTCOMES: tuple[str, ...] = (CORRECT, PARTIALLY_CORRECT, REASONING_WRONG, WRONG)
#: The outcomes that grade a diagnosis (a crash was detected).
DIAGNOSED: tuple[str, ...] = (CORRECT, PARTIALLY_CORRECT, REASONING_WRONG)
#: The sheet of CRANE-LLM's results_summary.xlsx that holds the final human judgments.
CRANE_SHEET = "Final_evaluation"
#: Its sheet of the same judgments of detection alone (correct or wrong).
DETECTION_SHEET = "Detection_only"
#: Columns of junobench's own judgments files.
FIELDS: tuple[str, ...] = ("instance", "setting", "judgment")
FORMATS: tuple[str, ...] = ("xlsx", "jsonl", "csv")

_SPACES = re.compile(r"\s+")
_NOTEBOOK_LIKE = re.compile(r"^\s*[A-Za-z][A-Za-z0-9]*_[0-9]+")
_NAMES = "instances are <case>_reproduced or <case>_fixed"
_HINT = ("judgments are one of: " + ", ".join(OUTCOMES)
         + "; see docs/diagnosis.md for the file formats")


def outcome(text: object) -> str | None:
    """The outcome a label names (``[Correct]``, ``Reasoning Wrong``, …), or None."""
    if not isinstance(text, str):
        return None
    label = _SPACES.sub(" ", text.strip().strip("[]").strip()).lower()
    return label if label in OUTCOMES else None


def decision(version: str, judged: str) -> bool:
    """The end-to-end decision (crash = True) a judgment stands for on a notebook of
    ``version``: right only when ``correct``."""
    crashes = version == "reproduced"
    return crashes if judged == CORRECT else not crashes


def detected(instance: str, judged: str) -> bool:
    """Whether a judgment says the detector found a crash in ``instance``: on a reproduced
    notebook any outcome but ``wrong``, on a fixed one ``wrong`` (the end-to-end and the
    detection-only judgments of one answer agree on this)."""
    return (judged != WRONG) if vocab.split_instance(instance)[1] == "reproduced" else judged == WRONG


@dataclass
class Judgments:
    """Judgments per setting (in file order), each ``{instance: outcome}``; ``where``:
    the row or line each notebook was first read from (for messages)."""

    settings: dict[str, dict[str, str]] = field(default_factory=dict)
    path: Path | None = None
    where: dict[str, str] = field(default_factory=dict)
    #: The workbook sheet they were read from.
    sheet: str | None = None

    @property
    def name(self) -> str:
        """How messages name them: the file (and sheet)."""
        shown = self.path.name if self.path is not None else "judgments"
        return f"{shown}, sheet {self.sheet}" if self.sheet else shown

    def add(self, setting: str, instance: str, judged: str, *, where: str = "") -> None:
        """Add one judgment; a :class:`JunoBenchError` names what is wrong with it."""
        problem = self.problem(setting, instance, judged)
        if problem is not None:
            text, hint = problem
            raise JunoBenchError(f"{where}{text}", file=self.path, hint=hint,
                                 case=instance if vocab.is_instance(instance) else None)
        self.settings.setdefault(setting, {})[instance] = judged
        if where:
            self.where.setdefault(instance, where.rstrip(": "))

    def problem(self, setting: str, instance: str, judged: str) -> tuple[str, str] | None:
        """What is wrong with adding this judgment, and the hint, or None."""
        if not setting:
            return "no setting name", "name the setting (model and inputs) of every judgment"
        if not vocab.is_instance(instance):
            return f"{instance!r} does not name a notebook", _NAMES
        if judged not in OUTCOMES:
            return f"{judged!r} is not a judgment", _HINT
        if vocab.split_instance(instance)[1] == "fixed" and judged not in (CORRECT, WRONG):
            return (f"setting {setting!r}: {judged!r} on a fixed notebook, which has no crash "
                    "to diagnose", "a fixed notebook's judgment is correct (no crash predicted) "
                    "or wrong")
        if instance in self.settings.get(setting, {}):
            return f"setting {setting!r} judges this notebook twice", "keep one judgment"
        return None

    def records(self) -> list[dict[str, str]]:
        return [{"instance": i, "setting": s, "judgment": j}
                for s, rows in self.settings.items() for i, j in rows.items()]

    def notebooks(self) -> list[str]:
        """Every notebook any setting judges, in file order."""
        return list(dict.fromkeys(i for rows in self.settings.values() for i in rows))

    def check_notebooks(self, known: Collection[str], benchmark: str) -> None:
        """Refuse notebooks outside ``known`` (the instances of ``benchmark``), naming
        every row or line that holds one."""
        unknown = [i for i in self.notebooks() if i not in known]
        if unknown:
            _refuse([(self.where.get(i, ""), f"{i!r} is not a notebook of {benchmark}")
                     for i in unknown], self.path, unknown[0],
                    "pass --source with the snapshot the judgments are of, or correct the name")


def _refuse(problems: Sequence[tuple[str, str]], path: Path | None, case: str | None,
            hint: str) -> None:
    """One error naming every ``(where, problem)``, the first eight in full."""
    shown = [f"{where}: {text}" if where else text for where, text in problems[:8]]
    rest = [where or "?" for where, _ in problems[8:]]
    more = f"; and {len(rest)} more ({', '.join(rest)})" if rest else ""
    lead = "" if len(problems) == 1 else f"{len(problems)} rows or lines are wrong: "
    raise JunoBenchError(lead + "; ".join(shown) + more, file=path,
                         case=case if len(problems) == 1 else None, hint=hint)


class _Rows:
    """Judgments read row by row, every row's problem kept to be named at the end."""

    def __init__(self, path: Path) -> None:
        self.out = Judgments(path=path)
        self.problems: list[tuple[str, str, str | None, str]] = []

    def add(self, where: str, setting: str, instance: str, label: Any) -> None:
        judged = outcome(label)
        found = ((f"{label!r} is not a judgment", _HINT) if judged is None
                 else self.out.problem(setting, instance, judged))
        if found is not None:
            self.fail(where, found[0], instance, found[1])
        else:
            assert judged is not None
            self.out.add(setting, instance, judged, where=f"{where}: ")

    def fail(self, where: str, problem: str, instance: str | None, hint: str) -> None:
        self.problems.append((where, problem, instance if instance and vocab.is_instance(instance)
                              else None, hint))

    def judgments(self, empty: str) -> Judgments:
        if self.problems:
            first = self.problems[0]
            _refuse([(w, p) for w, p, _, _ in self.problems], self.out.path, first[2],
                    first[3] if len({h for *_, h in self.problems}) == 1 else _HINT)
        if not self.out.settings:
            raise JunoBenchError(empty, file=self.out.path, hint=_HINT)
        return self.out


# --------------------------------------------------------------------------- reading


def read_judgments(path: str | Path, *, sheet: str | None = None) -> Judgments:
    """Judgments from an xlsx sheet (default: ``Final_evaluation`` when the workbook has
    it, else its first sheet), a ``.jsonl`` or a ``.csv`` file. Every malformed row is
    named in one error."""
    path = Path(path)
    if not path.exists():
        raise JunoBenchError("no such judgments file", file=path, hint=_HINT)
    suffix = path.suffix.lower()
    if suffix == ".xlsx":
        return read_sheet(path, sheet)
    if sheet is not None:
        raise JunoBenchError("--sheet applies to xlsx files", file=path)
    if suffix == ".jsonl":
        return _from_lines(path)
    if suffix == ".csv":
        return _from_csv(path, jsonl.read_text(path, what="judgments").removeprefix("\ufeff"))
    raise JunoBenchError("unknown judgments format", file=path,
                         hint="pass an .xlsx (CRANE-LLM's layout), .jsonl or .csv file")


def sheet_values(path: Path, sheet: str | None = None) -> tuple[str, list[str], list[list[Any]]]:
    """A workbook's sheet (``sheet``, else ``Final_evaluation`` when it has one, else the
    first), its sheet names and its values from cell A1 (``values[n - 1]`` is row ``n``)."""
    from python_calamine import CalamineError

    from junobench.data.tables import open_workbook

    try:
        workbook = open_workbook(path)
        names = list(workbook.sheet_names)
        chosen = sheet if sheet is not None else (CRANE_SHEET if CRANE_SHEET in names else names[0])
        if chosen not in names:
            raise JunoBenchError(f"no sheet {chosen!r} (it has {', '.join(names)})", file=path)
        return chosen, names, workbook.get_sheet_by_name(chosen).to_python(skip_empty_area=False)
    except (CalamineError, OSError, ValueError, IndexError) as error:
        raise JunoBenchError(f"cannot read the spreadsheet ({error})", file=path,
                             hint="save it again as .xlsx") from None


def read_sheet(path: Path, sheet: str | None = None) -> Judgments:
    """The notebook rows of a wide sheet: ``instance`` then one column per setting.

    The table ends at the first row that neither names a notebook (nor starts like a case
    id, ``torch_7…``) nor holds a judgment: the published sheets' summary rows below it. A
    row with a misspelled or missing notebook name is an error, as is a notebook row below
    the end."""
    chosen, _, values = sheet_values(path, sheet)
    if not values or str(values[0][0]).strip() != "instance":
        raise JunoBenchError("the first column of the header row is not 'instance'", file=path,
                             hint="lay the sheet out as CRANE-LLM's Final_evaluation: instance, "
                             "then one column per setting")
    header = [str(v).strip() if v not in (None, "") else "" for v in values[0]]
    columns = [(i, name) for i, name in enumerate(header) if i and name]
    seen = [name for _, name in columns]
    twice = sorted({n for n in seen if seen.count(n) > 1})
    if twice:
        raise JunoBenchError(f"setting column {twice[0]!r} appears twice", file=path)
    rows = _Rows(path)
    ended_at: int | None = None
    for number, row in enumerate(values[1:], start=2):
        first = row[0] if row else None
        name = str(first).strip() if isinstance(first, str) else ""
        cells = [(setting, row[i]) for i, setting in columns if i < len(row) and row[i] not in (None, "")]
        if not vocab.is_instance(name):
            if not _looks_like_notebook(name) and not any(outcome(v) for _, v in cells):
                ended_at = ended_at or number
                continue
            rows.fail(f"row {number}", f"{first!r} does not name a notebook", None, _NAMES)
            continue
        if ended_at is not None:
            rows.fail(f"row {number}", f"names a notebook below row {ended_at}, which ended the "
                      "judgments", name, "keep the notebook rows together, directly under the header")
            continue
        for setting, cell in cells:
            rows.add(f"row {number}", setting, name, cell)
    rows.out.sheet = chosen
    return rows.judgments("no judgments: no notebook row under the header")


def _looks_like_notebook(text: str) -> bool:
    """A name meant for a notebook (it starts like a case id), though maybe misspelled:
    such a row is part of the table, never its end."""
    return bool(_NOTEBOOK_LIKE.search(text))


def _from_lines(path: Path) -> Judgments:
    rows = _Rows(path)
    for number, record in jsonl.read_jsonl(path, what="judgments", hint=_HINT,
                                           problem_of=jsonl.dict_problem):
        _add_record(rows, record, f"line {number}")
    return rows.judgments("no judgments in the file")


def _from_csv(path: Path, text: str) -> Judgments:
    """Judgments of a CSV file's rows: lines may end in ``\\n``, ``\\r\\n`` or ``\\r``; a
    column named twice, a cell past the header's columns and a row the CSV reader refuses
    (a field over its size limit) are errors naming the row."""
    reader = csv.reader(io.StringIO(text, newline=""))
    hint = "a judgments CSV has the columns instance, setting, judgment"
    number = 0
    try:
        header = next(reader, [])
        missing = [f for f in FIELDS if f not in header]
        if missing:
            raise JunoBenchError(f"missing column(s) {', '.join(missing)}", file=path, hint=hint)
        twice = next((f for f in FIELDS if header.count(f) > 1), None)
        if twice is not None:
            raise JunoBenchError(f"column {twice!r} appears twice in the header", file=path,
                                 hint=hint)
        rows = _Rows(path)
        number = 1
        for number, cells in enumerate(reader, start=2):
            where = f"row {number}"
            if not cells:
                continue  # a blank line
            if any(cell.strip() for cell in cells[len(header):]):
                rows.fail(where, f"{len(cells)} cells, more than the header's {len(header)} "
                          "columns", None, hint)
                continue
            record = {name: csv_value(cell) for name, cell in zip(header, cells, strict=False)}
            _add_record(rows, record, where)
    except csv.Error as error:
        raise JunoBenchError(f"row {number + 1}: not readable as CSV ({error})", file=path,
                             hint=hint) from None
    return rows.judgments("no judgments in the file")


def _add_record(rows: _Rows, record: Mapping[str, Any], where: str) -> None:
    instance, setting, label = (record.get(f) for f in FIELDS)
    if not isinstance(instance, str) or not vocab.is_instance(instance.strip()):
        rows.fail(where, f"instance {instance!r} does not name a notebook", None, _NAMES)
    elif not isinstance(setting, str) or not setting.strip():
        rows.fail(where, "no setting", instance.strip(), _HINT)
    else:
        rows.add(where, setting.strip(), instance.strip(), label)


def companion(judgments: Judgments) -> Judgments | None:
    """The other of CRANE-LLM's two sheets in the workbook ``judgments`` were read from
    (``Detection_only`` beside ``Final_evaluation``, and the reverse), or None."""
    pair = {CRANE_SHEET: DETECTION_SHEET, DETECTION_SHEET: CRANE_SHEET}
    if judgments.path is None or judgments.sheet not in pair:
        return None
    other = pair[judgments.sheet]
    if other not in sheet_values(judgments.path, judgments.sheet)[1]:
        return None
    return read_sheet(judgments.path, other)


def disagreements(first: Judgments, second: Judgments) -> list[str]:
    """Where two judgments of the same answers (such as CRANE-LLM's ``Final_evaluation``
    and ``Detection_only`` sheets) disagree on whether the crash was detected: one note,
    naming the first eight (setting, notebook) pairs, or none."""
    found = [f"{setting} {instance} ({judged} / {other})"
             for setting, rows in first.settings.items()
             for instance, judged in rows.items()
             if (other := second.settings.get(setting, {}).get(instance)) is not None
             and detected(instance, judged) != detected(instance, other)]
    if not found:
        return []
    from junobench.render import some

    return [f"{first.name} and {second.name} disagree on whether the crash was detected in "
            f"{len(found)} judgment(s): {some(found)}"]


# --------------------------------------------------------------------------- writing


def write_judgments(path: str | Path, judgments: Judgments | Iterable[Mapping[str, str]]) -> Path:
    """Write judgments atomically as JSON Lines (``.jsonl``) or CSV (``.csv``)."""
    path = Path(path)
    rows = judgments.records() if isinstance(judgments, Judgments) else [dict(r) for r in judgments]
    suffix = path.suffix.lower()
    if suffix not in (".jsonl", ".csv"):
        raise JunoBenchError("judgments are written as .jsonl or .csv", file=path)
    if suffix == ".jsonl":
        return jsonl.write_jsonl(path, [{f: row[f] for f in FIELDS} for row in rows])
    with atomic_open(path, "w", newline="") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(FIELDS)
        for row in rows:
            writer.writerow([csv_cell(row[f]) for f in FIELDS])
    return path
