"""Render rows as an aligned text table, JSON, CSV, a Markdown table or a LaTeX tabular."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from junobench.safety.text import csv_cell, markdown_text, printable
from junobench.utf8 import utf8_text


def render(rows: Sequence[Mapping[str, Any]], fmt: str, columns: Sequence[str] | None = None) -> str:
    """``rows`` in ``fmt`` (``table``, ``json``, ``csv``, ``markdown`` or ``latex``);
    ``columns`` picks and orders them. CSV text that a spreadsheet would take for a
    formula gets a leading ``'`` (:func:`junobench.safety.text.csv_cell`).

    >>> print(render([{"a": 1, "b": "x"}], "csv"), end="")
    a,b
    1,x
    """
    if fmt == "json":
        return json.dumps(list(rows), indent=2, ensure_ascii=False, default=str) + "\n"
    columns = list(columns) if columns is not None else _columns(rows)
    if fmt == "csv":
        buffer = io.StringIO()
        writer = csv.writer(buffer, lineterminator="\n")
        writer.writerow(columns)
        for row in rows:
            writer.writerow([csv_cell(_cell(row.get(c))) for c in columns])
        return buffer.getvalue()
    if fmt == "table":
        return table(rows, columns)
    if fmt == "markdown":
        return markdown(rows, columns)
    if fmt == "latex":
        return latex(rows, columns)
    raise ValueError(f"unknown format {fmt!r}")


def some(items: Sequence[str], limit: int = 8) -> str:
    """The first ``limit`` of ``items``, and how many more: how a note names cases.

    >>> some([f"torch_{n}" for n in range(1, 11)], 3)
    'torch_1, torch_2, torch_3, … (+7)'
    """
    shown = ", ".join(items[:limit])
    return shown + (f", … (+{len(items) - limit})" if len(items) > limit else "")


def first_names(names: Sequence[str], most: int) -> str:
    """The first ``most`` of ``names``, then `` …`` when there are more: :func:`some`
    without the count.

    >>> first_names(["pandas_1", "pandas_2", "torch_1"], 2)
    'pandas_1, pandas_2 …'
    """
    return ", ".join(names[:most]) + (" …" if len(names) > most else "")


def markdown(rows: Sequence[Mapping[str, Any]], columns: Sequence[str]) -> str:
    """A GitHub-flavoured Markdown table, numbers right-aligned. Headers and cells are
    text (:func:`~junobench.safety.text.markdown_text`): ``|``, Markdown markup and HTML
    (a model named ``<script>``) are escaped, line breaks and control characters dropped.

    >>> print(markdown([{"a": "x|y", "n": 2}], ["a", "n"]), end="")
    | a | n |
    |---|--:|
    | x\\|y | 2 |
    """
    escape = markdown_text
    numeric = [all(isinstance(row.get(c), (int, float)) for row in rows) and bool(rows)
               for c in columns]
    lines = ["| " + " | ".join(escape(c) for c in columns) + " |",
             "|" + "|".join("--:" if n else "---" for n in numeric) + "|"]
    lines += ["| " + " | ".join(escape(_cell(row.get(c))) for c in columns) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def latex(rows: Sequence[Mapping[str, Any]], columns: Sequence[str]) -> str:
    """A ``tabular`` fragment (booktabs rules) to ``\\input`` inside a paper's ``table``;
    LaTeX's special characters in cells and headers are escaped (pandas' ``to_latex``);
    what UTF-8 cannot encode (a name's undecodable byte) is escaped first
    (:func:`~junobench.utf8.utf8_text`), as a ``.tex`` file is UTF-8."""
    import pandas as pd

    frame = pd.DataFrame([[utf8_text(_cell(row.get(c))) for c in columns] for row in rows],
                         columns=[utf8_text(c) for c in columns])
    numeric = [all(isinstance(row.get(c), (int, float)) for row in rows) and bool(rows)
               for c in columns]
    text = frame.to_latex(index=False, escape=True,
                          column_format="".join("r" if n else "l" for n in numeric))
    return str(text)


def table(rows: Sequence[Mapping[str, Any]], columns: Sequence[str]) -> str:
    """A plain text table; every cell escaped for the terminal first (its columns line up)."""
    cells = [[printable(_cell(row.get(c))) for c in columns] for row in rows]
    widths = [max([len(c), *(len(r[i]) for r in cells)]) for i, c in enumerate(columns)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(columns, widths, strict=True)).rstrip()]
    lines.append("  ".join("-" * w for w in widths))
    lines += ["  ".join(v.ljust(w) for v, w in zip(r, widths, strict=True)).rstrip() for r in cells]
    return "\n".join(lines) + "\n"


def _columns(rows: Iterable[Mapping[str, Any]]) -> list[str]:
    seen: dict[str, None] = {}
    for row in rows:
        seen.update(dict.fromkeys(row))
    return list(seen)


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, (list, tuple)):
        return "; ".join(_cell(v) for v in value)
    if isinstance(value, float):
        return f"{value:.3f}"
    return str(value).replace("\n", " ")
