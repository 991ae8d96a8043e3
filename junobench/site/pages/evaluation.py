"""Evaluation pages: the scores of each prediction set (``evaluation.html``, one page per
set with its breakdowns), the sets side by side with paired tests, judged diagnoses end
to end, and the case × setting grid (``grid.html``) whose cells link to the case pages.
Beside them, each set's report as ``junobench evaluate --format json`` writes it."""

from __future__ import annotations

import json
from collections.abc import Iterable
from functools import partial
from typing import Any

from junobench import vocab
from junobench.detection.compare import pair_rows
from junobench.detection.evaluate import SMALL, SMALL_NOTE
from junobench.detection.names import BREAKDOWNS
from junobench.detection.uncertainty import METRICS
from junobench.diagnosis.endtoend import comparison_of, remarks, render_scores
from junobench.diagnosis.endtoend import summary_rows as judged_rows
from junobench.site.evaluation import Evaluation, missed_by_all, only_one_gets
from junobench.site.pages import NavLink, Page
from junobench.site.render import render_page

#: Breakdowns shown on a set's page, in order.
SHOWN_BREAKDOWNS: tuple[str, ...] = ("library", "root-cause", "crash-type", "stage")


def nav(data: Any) -> list[NavLink]:
    if data.evaluation is None:
        return []
    return [NavLink("Evaluation", "evaluation.html"), NavLink("Grid", "grid.html")]


def pages(data: Any) -> Iterable[Page]:
    evaluation: Evaluation | None = data.evaluation
    if evaluation is None:
        return
    inputs = {"evaluation": evaluation.inputs(), "title": data.title,
              "cases": [case["case_id"] for case in data.cases]}
    yield Page("evaluation.html", inputs, partial(summary_page, data, evaluation))
    for column in evaluation.sets:
        yield Page(f"evaluation/{column.slug}.html", inputs, partial(set_page, data, column))
    yield Page("grid.html", inputs | {"labels": [_labels(case) for case in data.cases]},
               partial(grid_page, data, evaluation))


def summary_page(data: Any, evaluation: Evaluation) -> dict[str, bytes]:
    files: dict[str, bytes] = {}
    sets = []
    for column in evaluation.sets:
        scores = column.report.to_dict()
        files[f"evaluation/{column.slug}.json"] = (json.dumps(scores, indent=2, ensure_ascii=False) + "\n"
                                                   ).encode("utf-8")
        sets.append({"column": column, "scores": scores})
    comparison = evaluation.comparison
    compared = None
    if comparison is not None:
        as_dict = comparison.to_dict()
        files["evaluation/comparison.json"] = (json.dumps(as_dict, indent=2, ensure_ascii=False) + "\n"
                                               ).encode("utf-8")
        compared = {"notebooks": as_dict["notebooks"], "sets": list(zip(evaluation.sets, as_dict["sets"],
                                                                          strict=True)),
                    "excluded": as_dict["excluded"], "tests": pair_rows(comparison)}
    judged = None
    if evaluation.judged_scores:
        results = evaluation.judged_scores
        assert evaluation.judgments is not None
        files["evaluation/judgments.json"] = render_scores(
            results, "json", remarks(evaluation.judgments)).encode("utf-8")
        paired = comparison_of(results)
        judged = {"settings": list(zip(evaluation.judged, [r.to_dict() for r in results.values()], strict=True)),
                  "table3": [r.table3_row() for r in results.values()],
                  "rows": judged_rows(results),
                  "tests": pair_rows(paired) if paired is not None else [],
                  "path": str(evaluation.judgments.path)}
    files["evaluation.html"] = render_page(
        "evaluation.html.j2", root="", title=f"Evaluation · {data.title}", data=data, evaluation=evaluation,
        sets=sets, compared=compared, judged=judged, metrics=METRICS, small=SMALL)
    return files


def set_page(data: Any, column: Any) -> dict[str, bytes]:
    report = column.report
    breakdowns = [{"by": by, "title": BREAKDOWNS[by][1], "rows": report.breakdown_rows(by, intervals=True)}
                  for by in SHOWN_BREAKDOWNS]
    path = f"evaluation/{column.slug}.html"
    return {path: render_page("set.html.j2", root="../", title=f"{column.name} · {data.title}", data=data,
                              column=column, scores=report.to_dict(), breakdowns=breakdowns, metrics=METRICS,
                              small=SMALL, small_note=SMALL_NOTE)}


def grid_page(data: Any, evaluation: Evaluation) -> dict[str, bytes]:
    instances = [vocab.instance_id(case["case_id"], version) for case in data.cases
                 for version in vocab.EVALUATED_VERSIONS]
    families = [{"title": title, "columns": columns, "missed": missed_by_all(columns, instances),
                 "only": only_one_gets(columns, instances)} for title, columns in evaluation.columns()]
    return {"grid.html": render_page("grid.html.j2", root="", title=f"Grid · {data.title}", data=data,
                                     families=families, cases=data.cases, versions=vocab.EVALUATED_VERSIONS,
                                     split=vocab.split_instance)}


def _labels(case: dict[str, Any]) -> list[Any]:
    return [case.get(k) for k in ("library_label", "root_cause", "crash_type", "pipeline_stage", "source")]
