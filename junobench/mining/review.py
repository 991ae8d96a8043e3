"""Hand review of a mined corpus: a reproducible sample of figures in a sheet, its labels
read back beside the automatic ones, with agreement.

:func:`write_sheet` draws ``n`` figures at random (``seed``: the same corpus and seed give
the same sample) and writes them to an xlsx sheet, one row each: the figure's id, notebook
and cell, a thumbnail of its image, its code and the markdown before it; and empty columns
for the reviewer, ``kind``, ``purpose`` and ``stage``, with drop-down lists of the mapping's
purposes and the benchmark's pipeline stages. The automatic labels are not in the sheet
(the reviewer labels blind, as the annotation sheets of the diagnoses do,
:mod:`junobench.diagnosis.annotation`); they are in the mined corpus, keyed by the figure id.

:func:`read_review` reads a filled sheet back: each label beside the automatic one, and per
field the agreement of reviewer and mapping over the figures the reviewer labelled (raw
agreement and Cohen's κ, :mod:`junobench.diagnosis.agreement`).
"""

from __future__ import annotations

import functools
import io
import random
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from junobench import vocab
from junobench.data.tables import drop_down, review_rows, review_sheet, save_review_sheet, sheet_text
from junobench.errors import JunoBenchError
from junobench.mining.kinds import PURPOSES

SHEET = "Figures"
LISTS = "Lists"
COLUMNS: tuple[str, ...] = ("item", "figure", "notebook", "cell", "image", "code", "markdown", "kind", "purpose",
                            "stage", "comment")
#: The fields the reviewer labels, compared with the automatic ones.
FIELDS: tuple[str, ...] = ("kind", "purpose", "stage")
#: What the reviewer writes for "no stage" / "no kind": the automatic value is null.
NONE = "none"
THUMBNAIL = 240  # pixels, the longest side of a picture in the sheet
ROW_HEIGHT = 185  # points


def sample_ids(mined: str | Path, n: int, seed: int) -> list[str]:
    """``n`` figure ids drawn at random (all of them when there are fewer), in drawn order."""
    from junobench.mining.corpus import AGAIN, read_rows
    from junobench.mining.features import PARQUET
    from junobench.mining.write import read_manifest

    folder = Path(mined)
    read_manifest(folder, hint="give the folder `junobench mine --out` wrote")
    if n < 1:
        raise JunoBenchError(f"--sample must be at least 1, got {n}")
    ids: dict[str, int] = {}
    for number, row in enumerate(read_rows(folder, "figures", ["figure"], batch_size=65_536)):
        if ids.setdefault(row["figure"], number) != number:
            raise JunoBenchError(f"rows {ids[row['figure']]} and {number}: figure {row['figure'][:120]!r} twice",
                                 file=folder / PARQUET["figures"],
                                 hint=AGAIN)
    return random.Random(seed).sample(list(ids), min(n, len(ids)))


def write_sheet(mined: str | Path, sheet: str | Path, n: int, *, seed: int = 0) -> tuple[Path, int]:
    """Write the review sheet of ``n`` figures of the mined corpus ``mined`` (see the
    module's notes); returns its path and the number of figures in it."""
    sheet = Path(sheet)
    if sheet.suffix.lower() != ".xlsx":
        raise JunoBenchError("the review sheet is an .xlsx file", file=sheet)
    if sheet.exists() or sheet.is_symlink():
        raise JunoBenchError("exists already: a filled sheet would be lost", file=sheet,
                             hint="choose a new file name")
    chosen = sample_ids(mined, n, seed)
    rows = _figures(Path(mined), set(chosen))
    workbook, ws = review_sheet(SHEET, COLUMNS)
    lists = workbook.create_sheet(LISTS)
    choices = (kinds(), [*PURPOSES, NONE], [*vocab.PIPELINE_STAGES, NONE])  # of columns H, I, J
    for column, values in enumerate(choices, start=1):
        for row, value in enumerate(values, start=1):
            lists.cell(row=row, column=column, value=value)
    lists.sheet_state = "hidden"
    for number, figure_id in enumerate(chosen, start=1):
        found = rows[figure_id]
        ws.append([f"F{number:04d}", figure_id, found["notebook"], found["cell"], None, sheet_text(found["code"] or ""),
                   sheet_text(found["markdown"] or ""), None, None, None, None])
        line = number + 1
        ws.row_dimensions[line].height = ROW_HEIGHT
        thumbnail = _thumbnail(found)
        if thumbnail is not None:
            ws.add_image(thumbnail, f"E{line}")
        else:
            ws.cell(row=line, column=5, value=sheet_text(found["problem"] or found["text"] or found["mime"] or ""))
    for letter, source, values in zip("HIJ", "ABC", choices, strict=True):
        drop_down(ws, letter, f"{LISTS}!${source}$1:${source}${len(values)}")
    save_review_sheet(workbook, ws, sheet, (7, 30, 24, 6, 36, 50, 30, 18, 18, 20, 24))
    return sheet, len(chosen)


@functools.cache
def kinds() -> tuple[str, ...]:
    """The chart kinds a reviewer may give: the mapping's, and ``none`` (computed once:
    every row of a sheet read back is checked against them)."""
    from junobench.mining.kinds import chart_kinds

    return tuple(sorted({entry[0] if isinstance(entry, list) else entry["default"][0]
                   for table in chart_kinds().charts.values() for entry in table.values()} | {NONE}))


def _figures(folder: Path, wanted: set[str]) -> dict[str, dict[str, Any]]:
    """The rows of the figures ``wanted``, read batch by batch (only those are kept)."""
    from junobench.mining.corpus import read_rows

    columns = ["figure", "notebook", "cell", "image", "mime", "text", "code", "markdown", "problem", *FIELDS]
    return {row["figure"]: row for row in read_rows(folder, "figures", columns, batch_size=200)
            if row["figure"] in wanted}


def _thumbnail(row: Mapping[str, Any]) -> Any:
    """The figure's image scaled down for the sheet (an openpyxl image), or None (none, or
    over :data:`~junobench.mining.visuals.MAX_PIXELS` pixels by its header: not decoded)."""
    from openpyxl.drawing.image import Image as SheetImage
    from PIL import Image

    from junobench.mining.visuals import MAX_PIXELS, image_size

    image = row.get("image") or {}
    data = image.get("bytes") if isinstance(image, dict) else None
    if not data or isinstance(image_size(data, MAX_PIXELS)[0], str):
        return None
    try:
        picture = Image.open(io.BytesIO(data))
        picture.thumbnail((THUMBNAIL, THUMBNAIL))
        buffer = io.BytesIO()
        picture.convert("RGBA").save(buffer, format="PNG")
    except Exception:  # a picture Pillow cannot draw is left out of the sheet, not fatal
        return None
    buffer.seek(0)
    return SheetImage(buffer)


@dataclass
class Review:
    """A filled sheet read back: each reviewed figure's labels beside the automatic ones,
    and per field the agreement over the figures the reviewer labelled."""

    labels: list[dict[str, Any]] = field(default_factory=list)
    agreement: dict[str, Any] = field(default_factory=dict)
    unlabelled: list[str] = field(default_factory=list)

    def rows(self) -> list[dict[str, Any]]:
        """One row per field: figures compared, agreed, raw agreement, κ."""
        return [{"field": name, **(value.to_dict() if value is not None else {"n": 0})}
                for name, value in self.agreement.items()]

    def to_dict(self) -> dict[str, Any]:
        return {"agreement": {k: (v.to_dict() if v is not None else None) for k, v in self.agreement.items()},
                "labels": self.labels, "unlabelled": self.unlabelled}


def read_review(mined: str | Path, sheet: str | Path) -> Review:
    """The labels of a filled review ``sheet`` of the mined corpus ``mined`` beside the
    automatic ones, with agreement per field (see the module's notes)."""
    from junobench.diagnosis.agreement import agreement
    from junobench.mining.write import read_manifest

    folder, sheet = Path(mined), Path(sheet)
    read_manifest(folder, hint="give the folder `junobench mine --out` wrote")
    rows = review_rows(sheet, SHEET, COLUMNS, refusal="not a review sheet of junobench figures (its header changed)",
                       hint="fill in the kind, purpose and stage columns of the sheet written by "
                            "`junobench figures --sample`")
    given: dict[str, dict[str, str | None]] = {}
    review = Review()
    index = {name: COLUMNS.index(name) for name in ("figure", *FIELDS)}
    for number, cells in rows:
        figure = cells[index["figure"]]
        if figure in (None, ""):
            continue
        if not isinstance(figure, str) or figure in given:
            raise JunoBenchError(f"row {number}: figure {figure!r} is not a figure id, or is there twice", file=sheet)
        labels = {name: _label(cells[index[name]], name, number, sheet) for name in FIELDS}
        if all(v is None for v in labels.values()):
            review.unlabelled.append(figure)
            continue
        given[figure] = labels
    automatic = _figures(folder, set(given))
    missing = sorted(set(given) - set(automatic))
    if missing:
        raise JunoBenchError(f"{len(missing)} figures of the sheet are not in the mined corpus "
                             f"({', '.join(missing[:3])})", file=sheet,
                             hint="read the sheet back against the corpus it was drawn from")
    pairs: dict[str, tuple[list[str], list[str]]] = {name: ([], []) for name in FIELDS}
    for figure, labels in given.items():
        entry: dict[str, Any] = {"figure": figure}
        for name in FIELDS:
            mine_value = automatic[figure][name] or NONE
            entry[name] = labels[name]
            entry[f"automatic {name}"] = mine_value
            if labels[name] is not None:
                pairs[name][0].append(labels[name] or NONE)
                pairs[name][1].append(mine_value)
        review.labels.append(entry)
    review.agreement = {name: agreement(*pairs[name]) if pairs[name][0] else None for name in FIELDS}
    return review


def _label(value: Any, name: str, number: int, sheet: Path) -> str | None:
    """A reviewer's label, checked against its field's vocabulary (None: left empty)."""
    if value in (None, ""):
        return None
    text = str(value).strip()
    allowed = {"kind": kinds(), "purpose": (*PURPOSES, NONE), "stage": (*vocab.PIPELINE_STAGES, NONE)}[name]
    if text not in allowed:
        shown = ", ".join(allowed) if len(allowed) <= 12 else f"{', '.join(allowed[:12])} … (the sheet's list)"
        raise JunoBenchError(f"row {number}: {name} {text[:60]!r} is not one of: {shown}", file=sheet)
    return text
