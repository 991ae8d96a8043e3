"""A page per case: its labels, crash, diagnosis, datasets and requirements; the
reproduced and fixed notebooks side by side in execution order (or in notebook order),
aligned cell by cell with what the fix changed marked; the original notebook; each
detector's verdicts beside the ground truth; links to the previous and next case."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from markupsafe import Markup

from junobench import vocab
from junobench.safety.text import safe_url
from junobench.site import diff
from junobench.site.cells import (
    Budget,
    Cell,
    Images,
    Output,
    code_lines,
    markdown_cell,
    read_cells,
    render_outputs,
)
from junobench.site.pages import NavLink, Page
from junobench.site.render import render_page

#: Sides of the notebook view: id prefix and version.
SIDES: dict[str, str] = {"r": "reproduced", "f": "fixed", "o": "original"}


def nav(data: Any) -> list[NavLink]:
    return []


def case_path(case_id: str) -> str:
    """The site path of a case's page."""
    if not vocab.is_case_id(case_id):
        raise ValueError(f"{case_id!r} is not a case id")
    return f"cases/{case_id}.html"


def pages(data: Any) -> Iterable[Page]:
    ids = [case["case_id"] for case in data.cases]
    for k, case in enumerate(data.cases):
        neighbours = (ids[k - 1] if k else None, ids[k + 1] if k + 1 < len(ids) else None)
        detectors = data.evaluation.for_case(case["case_id"]) if data.evaluation is not None else None
        inputs = {"case": case, "neighbours": neighbours, "detectors": detectors, "title": data.title,
                  "evaluation": data.evaluation is not None}
        yield Page(case_path(case["case_id"]), inputs, partial(render_case, data, case, neighbours))


def render_case(data: Any, case: Mapping[str, Any], neighbours: tuple[str | None, str | None]
                ) -> dict[str, bytes]:
    """The case page and the images it shows."""
    images = Images(root="../")
    view = CaseView.of(case, images)
    detectors = detector_rows(data.evaluation, case["case_id"]) if data.evaluation is not None else []
    page = render_page("case.html.j2", root="../", title=f"{case['case_id']} · {data.title}", data=data,
                       case=case, view=view, previous=neighbours[0], next=neighbours[1],
                       notebook_url=safe_url(case.get("notebook_url")),
                       datasets=[dict(d, url=safe_url(d.get("url"))) for d in case.get("datasets") or []],
                       detectors=detectors)
    return {case_path(case["case_id"]): page, **images.files}


# --------------------------------------------------------------------------- notebooks


@dataclass
class CellView:
    """One cell (or one run of a cell) as shown: its id, label, lines and outputs."""

    id: str
    cell: Cell
    label: str
    lines: list[Markup] = field(default_factory=list)
    marks: dict[int, str] = field(default_factory=dict)
    markdown: Markup | None = None
    outputs: list[Output] = field(default_factory=list)
    target: bool = False
    status: str = "same"
    other: str | None = None  # the id of its counterpart on the other side
    #: What changed when the code did not: the fix runs the cell, or no longer does.
    note: str | None = None

    def line_class(self, number: int) -> str:
        return self.marks.get(number, "")


@dataclass
class RowView:
    status: str
    left: CellView | None
    right: CellView | None


@dataclass
class CaseView:
    """The notebooks of a case: runs in execution order and cells in notebook order, the
    reproduced and fixed versions aligned, and the original's cells."""

    runs: list[RowView]
    cells: list[RowView]
    original: list[CellView]
    changes: dict[str, int]
    changed_rows: list[RowView]
    missing: list[str]
    #: The id of the reproduced notebook's crashing run (None without one).
    target_id: str | None = None

    @classmethod
    def of(cls, case: Mapping[str, Any], images: Images) -> CaseView:
        notebooks = {version: read_cells(case.get(version)) for version in SIDES.values()}
        outputs: dict[tuple[str, int], list[Output]] = {}
        budget = Budget()
        target = case.get("target_cell_index")

        def outputs_of(side: str, cell: Cell) -> list[Output]:
            key = (side, cell.position)
            if key not in outputs:
                before = set(images.files)
                rendered = render_outputs(cell, images)
                outputs[key] = budget.spend(rendered, always=side != "o" and cell.code_index == target)
                if outputs[key] is not rendered:  # not shown: its images are not written either
                    for name in set(images.files) - before:
                        del images.files[name]
            return outputs[key]

        crash_line = case.get("crash_line")
        order = case.get("execution_order") or {}
        sides: dict[str, list[CellView]] = {}
        for side in ("r", "f"):
            cells = notebooks[SIDES[side]]
            by_code = {c.code_index: c for c in cells if c.code_index is not None}
            runs = order.get(SIDES[side]) or []
            last = {run["code_cell_index"]: step for step, run in enumerate(runs)}
            views = []
            for step, run in enumerate(runs):
                cell = by_code.get(run["code_cell_index"]) or Cell(-1, "code", run.get("source") or "",
                                                                   code_index=run["code_cell_index"])
                count = run.get("execution_count")
                view = CellView(f"{side}-run-{step + 1}", cell,
                                f"In [{count}]" if count is not None else "In [ ] (an earlier run)",
                                code_lines(cell.source),
                                target=step == len(runs) - 1 and cell.code_index == target)
                if last[run["code_cell_index"]] == step:
                    view.outputs = outputs_of(side, cell)
                if view.target and side == "r" and isinstance(crash_line, int):
                    view.marks[crash_line - 1] = "crash"
                views.append(view)
            sides[side] = views
        runs_rows = _aligned(sides["r"], sides["f"], key=lambda v: v.cell.source)
        cell_views = {side: [_cell_view(side, c, target, crash_line, outputs_of) for c in notebooks[SIDES[side]]]
                      for side in ("r", "f")}
        cell_rows = _aligned(cell_views["r"], cell_views["f"],
                             key=lambda v: (v.cell.kind, v.cell.source, v.cell.count is not None))
        original = [_cell_view("o", c, None, None, outputs_of) for c in notebooks["original"]]
        missing = [version for version in SIDES.values() if case.get(version) is None]
        target_id = next((v.id for v in reversed(sides["r"]) if v.target), None)
        return cls(runs_rows, cell_rows, original, diff.summary(row.status for row in cell_rows),
                   [row for row in cell_rows if row.status != "same"], missing, target_id)


def _cell_view(side: str, cell: Cell, target: Any, crash_line: Any, outputs_of: Any) -> CellView:
    if cell.kind == "markdown":
        return CellView(f"{side}-cell-{cell.position + 1}", cell, "Markdown", code_lines(cell.source, markdown=True),
                        markdown=markdown_cell(cell))
    if cell.kind == "raw":
        return CellView(f"{side}-cell-{cell.position + 1}", cell, "Raw", code_lines(cell.source, markdown=True))
    label = f"In [{cell.count}]" if cell.count is not None else "In [ ] (did not run)"
    view = CellView(f"{side}-cell-{cell.position + 1}", cell, label, code_lines(cell.source),
                    outputs=outputs_of(side, cell), target=cell.code_index == target)
    if view.target and side == "r" and isinstance(crash_line, int):
        view.marks[crash_line - 1] = "crash"
    return view


def _aligned(left: Sequence[CellView], right: Sequence[CellView], *, key: Any) -> list[RowView]:
    """Rows of the two sides aligned (:func:`~junobench.site.diff.align`), changed pairs
    marked line by line, each cell linked to its counterpart."""
    rows = []
    for row in diff.align([key(v) for v in left], [key(v) for v in right]):
        a = left[row.left] if row.left is not None else None
        b = right[row.right] if row.right is not None else None
        if a is not None and b is not None:
            a.other, b.other = b.id, a.id
            if row.status == "changed" and a.cell.source == b.cell.source:
                ran = (a.cell.count is not None, b.cell.count is not None)
                if ran != (True, True) and ran[0] != ran[1]:
                    a.note = b.note = "the fix runs this cell" if ran[1] else "the fix does not run this cell"
            elif row.status == "changed":
                removed, added = diff.line_marks(a.cell.source, b.cell.source)
                for number, mark in removed.items():
                    a.marks[number] = (a.marks.get(number, "") + " " + mark).strip()
                for number, mark in added.items():
                    b.marks[number] = (b.marks.get(number, "") + " " + mark).strip()
        for view in (a, b):
            if view is not None:
                view.status = row.status
        rows.append(RowView(row.status, a, b))
    return rows


# --------------------------------------------------------------------------- detectors


def detector_rows(evaluation: Any, case_id: str) -> list[dict[str, Any]]:
    """Each setting's verdicts on the case's two notebooks: outcome, votes, runs."""
    rows = []
    for column in evaluation.sets:
        notebooks = []
        for version in vocab.EVALUATED_VERSIONS:
            instance = vocab.instance_id(case_id, version)
            runs = column.read_runs(instance)
            crash = sum(run.detection is True for run in runs)
            notebooks.append({
                "version": version, "outcome": column.outcome(instance), "runs": runs,
                "votes": {"crash": crash, "no crash": sum(run.detection is False for run in runs),
                          "unparsable": sum(run.detection is None for run in runs)},
                "decisions": column.decisions.get(instance, []),
            })
        rows.append({"kind": "predictions", "name": column.name, "slug": column.slug, "notebooks": notebooks})
    for judged in evaluation.judged:
        notebooks = [{"version": version, "outcome": judged.outcome(vocab.instance_id(case_id, version)),
                      "judgment": judged.judged.get(vocab.instance_id(case_id, version))}
                     for version in vocab.EVALUATED_VERSIONS]
        rows.append({"kind": "judged", "name": judged.name, "slug": judged.slug, "notebooks": notebooks})
    return rows
