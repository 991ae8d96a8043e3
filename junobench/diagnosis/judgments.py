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
from collections.abc import Iterable, Mapping
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
#: Columns of junobench's own judgments files.
FIELDS: tuple[str, ...] = ("instance", "setting", "judgment")
FORMATS: tuple[str, ...] = ("xlsx", "jsonl", "csv")

_SPACES = re.compile(r"\s+")
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


@dataclass
class Judgments:
    """Judgments per setting (in file order), each ``{instance: outcome}``."""

    settings: dict[str, dict[str, str]] = field(default_factory=dict)
    path: Path | None = None

    def add(self, setting: str, instance: str, judged: str, *, where: str = "") -> None:
        if not setting:
            raise JunoBenchError(f"{where}no setting name", file=self.path, case=instance,
                                 hint="name the setting (model and inputs) of every judgment")
        if not _names_notebook(instance):
            raise JunoBenchError(f"{where}{instance!r} does not name a notebook", file=self.path,
                                 hint="instances are <case>_reproduced or <case>_fixed")
        if judged not in OUTCOMES:
            raise JunoBenchError(f"{where}{judged!r} is not a judgment", file=self.path,
                                 case=instance, hint=_HINT)
        version = vocab.split_instance(instance)[1]
        if version == "fixed" and judged not in (CORRECT, WRONG):
            raise JunoBenchError(
                f"{where}setting {setting!r}: {judged!r} on a fixed notebook, which has no "
                "crash to diagnose", file=self.path, case=instance,
                hint="a fixed notebook's judgment is correct (no crash predicted) or wrong")
        rows = self.settings.setdefault(setting, {})
        if instance in rows:
            raise JunoBenchError(f"{where}setting {setting!r} judges this notebook twice",
                                 file=self.path, case=instance, hint="keep one judgment")
        rows[instance] = judged

    def records(self) -> list[dict[str, str]]:
        return [{"instance": i, "setting": s, "judgment": j}
                for s, rows in self.settings.items() for i, j in rows.items()]


# --------------------------------------------------------------------------- reading


def read_judgments(path: str | Path, *, sheet: str | None = None) -> Judgments:
    """Judgments from an xlsx sheet (default: ``Final_evaluation`` when the workbook has
    it, else its first sheet), a ``.jsonl`` or a ``.csv`` file."""
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


def read_sheet(path: Path, sheet: str | None = None) -> Judgments:
    """The notebook rows of a wide sheet: ``instance`` then one column per setting."""
    from python_calamine import CalamineError, CalamineWorkbook

    from junobench.safety.paths import require_regular

    try:
        require_regular(path)
        workbook = CalamineWorkbook.from_path(str(path))
        names = list(workbook.sheet_names)
        chosen = sheet if sheet is not None else (CRANE_SHEET if CRANE_SHEET in names else names[0])
        if chosen not in names:
            raise JunoBenchError(f"no sheet {chosen!r} (it has {', '.join(names)})", file=path)
        values = workbook.get_sheet_by_name(chosen).to_python()
    except (CalamineError, OSError, ValueError, IndexError) as error:
        raise JunoBenchError(f"cannot read the spreadsheet ({error})", file=path,
                             hint="save it again as .xlsx") from None
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
    out = Judgments(path=path)
    ended_at: int | None = None
    for number, row in enumerate(values[1:], start=2):
        first = row[0] if row else None
        instance = str(first).strip() if isinstance(first, str) else None
        if instance is None or not _names_notebook(instance):
            ended_at = ended_at or number
            continue
        if ended_at is not None:
            raise JunoBenchError(
                f"row {number} names a notebook below row {ended_at}, which ended the "
                "judgments", file=path, case=instance,
                hint="keep the notebook rows together, directly under the header")
        for index, setting in columns:
            cell = row[index] if index < len(row) else None
            if cell in (None, ""):
                continue
            judged = outcome(cell)
            if judged is None:
                raise JunoBenchError(f"row {number}, setting {setting!r}: {cell!r} is not a "
                                     "judgment", file=path, case=instance, hint=_HINT)
            out.add(setting, instance, judged, where=f"row {number}: ")
    if not out.settings:
        raise JunoBenchError("no judgments: no notebook row under the header", file=path,
                             hint="rows are named <case>_reproduced or <case>_fixed")
    return out


def _names_notebook(text: str) -> bool:
    try:
        case_id, version = vocab.split_instance(text)
    except ValueError:
        return False
    return vocab.is_case_id(case_id) and version in vocab.EVALUATED_VERSIONS


def _from_lines(path: Path) -> Judgments:
    out = Judgments(path=path)
    for number, record in jsonl.read_jsonl(path, what="judgments", hint=_HINT,
                                           problem_of=jsonl.dict_problem):
        _add_record(out, record, f"line {number}: ")
    if not out.settings:
        raise JunoBenchError("no judgments in the file", file=path, hint=_HINT)
    return out


def _from_csv(path: Path, text: str) -> Judgments:
    reader = csv.DictReader(io.StringIO(text))
    missing = [f for f in FIELDS if f not in (reader.fieldnames or [])]
    if missing:
        raise JunoBenchError(f"missing column(s) {', '.join(missing)}", file=path,
                             hint="a judgments CSV has the columns instance, setting, judgment")
    out = Judgments(path=path)
    for number, record in enumerate(reader, start=2):
        _add_record(out, {k: csv_value(v) if isinstance(v, str) else v for k, v in record.items()},
                    f"row {number}: ")
    if not out.settings:
        raise JunoBenchError("no judgments in the file", file=path, hint=_HINT)
    return out


def _add_record(out: Judgments, record: Mapping[str, Any], where: str) -> None:
    instance, setting, label = (record.get(f) for f in FIELDS)
    if not isinstance(instance, str) or not _names_notebook(instance.strip()):
        raise JunoBenchError(f"{where}instance {instance!r} does not name a notebook",
                             file=out.path, hint="instances are <case>_reproduced or <case>_fixed")
    if not isinstance(setting, str) or not setting.strip():
        raise JunoBenchError(f"{where}no setting", file=out.path, case=instance, hint=_HINT)
    judged = outcome(label)
    if judged is None:
        raise JunoBenchError(f"{where}{label!r} is not a judgment", file=out.path,
                             case=instance, hint=_HINT)
    out.add(setting.strip(), instance.strip(), judged, where=where)


# --------------------------------------------------------------------------- writing


def write_judgments(path: str | Path, judgments: Judgments | Iterable[Mapping[str, str]]) -> Path:
    """Write judgments atomically as JSON Lines (``.jsonl``) or CSV (``.csv``)."""
    path = Path(path)
    rows = judgments.records() if isinstance(judgments, Judgments) else [dict(r) for r in judgments]
    suffix = path.suffix.lower()
    if suffix not in (".jsonl", ".csv"):
        raise JunoBenchError("judgments are written as .jsonl or .csv", file=path)
    with atomic_open(path, "w", newline="") as handle:
        if suffix == ".jsonl":
            for row in rows:
                handle.write(jsonl.json_line({f: row[f] for f in FIELDS}))
        else:
            writer = csv.writer(handle, lineterminator="\n")
            writer.writerow(FIELDS)
            for row in rows:
                writer.writerow([csv_cell(row[f]) for f in FIELDS])
    return path
