"""The front page: every case in a table (filters per label, free text, sortable columns,
the count shown) and the distribution of each label as bars."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from functools import partial
from typing import Any

from junobench import vocab
from junobench.safety.text import first_line
from junobench.site.pages import NavLink, Page
from junobench.site.render import render_page

#: The label dimensions: record field, title, vocabulary order.
DIMENSIONS: tuple[tuple[str, str, Sequence[str]], ...] = (
    ("library_label", "library", tuple(vocab.LIBRARY_LABELS[lib] for lib in vocab.LIBRARIES)),
    ("root_cause", "root cause", vocab.ROOT_CAUSES),
    ("crash_type", "crash type", vocab.CRASH_TYPES),
    ("pipeline_stage", "pipeline stage", vocab.PIPELINE_STAGES),
    ("source", "origin", vocab.ORIGINS),
)
#: Fields of a case shown in its row.
ROW_FIELDS: tuple[str, ...] = ("case_id", "library_label", "root_cause", "crash_type", "pipeline_stage",
                               "exception", "evalue", "source")


def nav(data: Any) -> list[NavLink]:
    return [NavLink("Cases", "index.html")]


def pages(data: Any) -> Iterable[Page]:
    rows = [{k: case.get(k) for k in ROW_FIELDS} | {"evalue": first_line(case.get("evalue"), 160)}
            for case in data.cases]
    inputs = {"rows": rows, "title": data.title, "source": data.source, "filters": data.filters,
              "evaluation": data.evaluation is not None}
    yield Page("index.html", inputs, partial(index_page, data, rows))


def index_page(data: Any, rows: list[dict[str, Any]]) -> dict[str, bytes]:
    return {"index.html": render_page("index.html.j2", root="", title=data.title, data=data, rows=rows,
                                      dimensions=distributions(rows), source=data.source,
                                      filters=data.filters)}


def distributions(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per label dimension present: its field, title and ``(value, count)`` in vocabulary
    order (values outside the vocabulary after it)."""
    out = []
    for name, title, order in DIMENSIONS:
        counts = Counter(str(row[name]) for row in rows if row.get(name))
        if not counts:
            continue
        rank = {value: k for k, value in enumerate(order)}
        values = sorted(counts, key=lambda v: (rank.get(v, len(rank)), v))
        out.append({"field": name, "title": title, "counts": [(v, counts[v]) for v in values],
                    "most": max(counts.values())})
    return out
