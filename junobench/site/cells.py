"""A notebook as the site shows it: cells with highlighted code and safe outputs.

The notebook JSON of a ``cases`` record is read value by value (a field of an unexpected
type is shown as absent, never trusted); code is highlighted by Pygments (IPython's
lexer), Markdown rendered and terminal colours turned into HTML by nbconvert's filters,
and every fragment cleaned by :mod:`.sanitize`. Raster images become files named by
their content (:class:`Images`), SVG an ``<img>`` ``data:`` URI, JavaScript and widget
outputs text.

>>> nb = read_cells('{"cells": [{"cell_type": "code", "execution_count": 1, "source": "x = 1",'
...                 ' "outputs": [{"output_type": "stream", "name": "stdout", "text": "<b>"}]}]}')
>>> cell = nb[0]
>>> cell.kind, cell.count, cell.code_index, [str(o.html) for o in render_outputs(cell, Images())]
('code', 1, 0, ['<pre class="stream">&lt;b&gt;</pre>'])
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from markupsafe import Markup, escape

from junobench.safety.text import multiline
from junobench.site import sanitize

#: Characters of one text or HTML output shown; the rest is cut with a note (a page stays
#: small whatever a notebook printed).
MAX_OUTPUT_CHARS = 100_000
#: Outputs of one cell shown; the rest are counted.
MAX_OUTPUTS = 50
#: Characters of HTML the outputs of one page take (each output counted once, though a
#: page shows it in both views); past it, a cell's outputs are replaced by a note saying
#: so, the target cell's excepted. A page stays near 1 MB whatever a notebook printed.
PAGE_OUTPUT_CHARS = 200_000
_RASTER = ("image/png", "image/jpeg", "image/gif")


@dataclass(frozen=True)
class Cell:
    """One cell of a notebook, as read (``outputs`` the raw output objects)."""

    position: int
    kind: str
    source: str
    count: int | None = None
    code_index: int | None = None
    outputs: tuple[Mapping[str, Any], ...] = ()
    attachments: Mapping[str, Any] | None = None


@dataclass(frozen=True)
class Output:
    """One output as HTML, and what kind it is (``error``, ``image``, ``html``, …)."""

    kind: str
    html: Markup


@dataclass
class Images:
    """The raster images of a page, by the file name they get (``img/<digest>.<ext>``)."""

    #: How a page reaches the site's root (``../`` from ``cases/``).
    root: str = ""
    files: dict[str, bytes] = field(default_factory=dict)

    def add(self, data: bytes, mime: str) -> str:
        """Keep ``data``; the link to it from the page."""
        name = f"img/{hashlib.sha256(data).hexdigest()[:24]}.{sanitize.EXTENSIONS[mime]}"
        self.files.setdefault(name, data)
        return self.root + name


def read_cells(text: str | None) -> list[Cell]:
    """The cells of notebook JSON ``text`` (already validated as a notebook by the loader);
    an empty list for None."""
    if not text:
        return []
    data = json.loads(text)
    cells = data.get("cells") if isinstance(data, dict) else None
    out: list[Cell] = []
    code_index = 0
    for position, raw in enumerate(cells if isinstance(cells, list) else []):
        if not isinstance(raw, dict):
            continue
        kind = raw.get("cell_type") if raw.get("cell_type") in ("code", "markdown", "raw") else "raw"
        outputs = raw.get("outputs") if kind == "code" else None
        count = raw.get("execution_count")
        attachments = raw.get("attachments")
        out.append(Cell(
            position=position, kind=str(kind), source=multiline(raw.get("source")),
            count=count if type(count) is int else None,
            code_index=code_index if kind == "code" else None,
            outputs=tuple(o for o in outputs if isinstance(o, dict)) if isinstance(outputs, list) else (),
            attachments=attachments if isinstance(attachments, dict) else None,
        ))
        code_index += kind == "code"
    return out


# --------------------------------------------------------------------------- code


@lru_cache(maxsize=1)
def _highlighter() -> tuple[Any, Any]:
    """IPython's lexer (Python's where IPython is missing) and an HTML formatter."""
    from pygments.formatters import HtmlFormatter
    from pygments.lexers import get_lexer_by_name
    from pygments.util import ClassNotFound

    try:
        lexer = get_lexer_by_name("ipython3")
    except ClassNotFound:  # IPython's lexers not installed
        lexer = get_lexer_by_name("python3")
    return lexer, HtmlFormatter(nowrap=True)


def code_lines(source: str, *, markdown: bool = False) -> list[Markup]:
    """The lines of ``source`` highlighted by Pygments, one self-contained HTML fragment a
    line (Pygments closes its spans at each line end), so that lines can be marked."""
    if markdown:
        return [escape(line) for line in source.split("\n")]
    return list(_highlighted(source))


@lru_cache(maxsize=8192)
def _highlighted(source: str) -> tuple[Markup, ...]:
    """:func:`code_lines` of code, kept: a page shows most cells four times (two views,
    two notebooks)."""
    from pygments import highlight

    lexer, formatter = _highlighter()
    lines = highlight(source, lexer, formatter).split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    wanted = source.count("\n") + 1
    lines += [""] * (wanted - len(lines))  # Pygments drops trailing empty lines
    return tuple(Markup(line) for line in lines[:wanted])


# --------------------------------------------------------------------------- outputs


@dataclass
class Budget:
    """What is left of a page's :data:`PAGE_OUTPUT_CHARS`."""

    left: int = PAGE_OUTPUT_CHARS

    def spend(self, outputs: list[Output], *, always: bool = False) -> list[Output]:
        """``outputs`` when they fit (or ``always``), taken from what is left; else a note."""
        size = sum(len(output.html) for output in outputs)
        if always or size <= self.left:
            self.left = max(0, self.left - size)
            return outputs
        self.left = 0
        return [Output("note", Markup('<p class="note">{} outputs not shown ({:,} characters): the page '
                                      'already shows {:,} characters of outputs</p>').format(
            len(outputs), size, PAGE_OUTPUT_CHARS))]


def markdown_cell(cell: Cell) -> Markup:
    """A Markdown cell rendered and cleaned."""
    return Markup(sanitize.markdown_html(cut_for_page(cell.source)[0], cell.attachments))


def render_outputs(cell: Cell, images: Images) -> list[Output]:
    """The outputs of a code cell as HTML, in order."""
    shown = [render_output(output, images) for output in cell.outputs[:MAX_OUTPUTS]]
    if len(cell.outputs) > MAX_OUTPUTS:
        shown.append(Output("note", Markup('<p class="note">{} more outputs not shown</p>').format(
            len(cell.outputs) - MAX_OUTPUTS)))
    return shown


def render_output(output: Mapping[str, Any], images: Images) -> Output:
    kind = output.get("output_type")
    if kind == "stream":
        text, note = cut_for_page(multiline(output.get("text")))
        css = "stream stderr" if output.get("name") == "stderr" else "stream"
        return Output("stream", Markup('<pre class="{}">{}</pre>').format(css, Markup(sanitize.ansi_html(text)))
                      + note)
    if kind == "error":
        return Output("error", error_html(output))
    if kind in ("execute_result", "display_data"):
        data = output.get("data")
        return mime_bundle(data if isinstance(data, dict) else {}, images)
    return Output("note", Markup('<p class="note">an output of unknown type {}</p>').format(
        str(kind)[:40]))


def error_html(output: Mapping[str, Any]) -> Markup:
    """An ``error`` output: its traceback with the terminal colours as HTML (or the
    exception line when there is no traceback)."""
    traceback = output.get("traceback")
    lines = [line for line in traceback if isinstance(line, str)] if isinstance(traceback, list) else []
    text = "\n".join(lines) if lines else f"{multiline(output.get('ename'))}: {multiline(output.get('evalue'))}"
    text, note = cut_for_page(text)
    return Markup('<pre class="traceback">{}</pre>').format(Markup(sanitize.ansi_html(text))) + note


def mime_bundle(data: Mapping[str, Any], images: Images) -> Output:
    """The richest safe view of a display bundle (nbconvert's order of preference)."""
    if "application/vnd.jupyter.widget-view+json" in data:
        shown = multiline(data.get("text/plain")) or json.dumps(
            data["application/vnd.jupyter.widget-view+json"], ensure_ascii=False)[:500]
        return _as_text("widget", "an interactive widget, shown as text (widgets run script)", shown)
    if "text/html" in data:
        html = multiline(data["text/html"])
        if len(html) <= MAX_OUTPUT_CHARS:  # (cut HTML would be broken HTML: a plainer view instead)
            return Output("html", Markup('<div class="html-output">{}</div>').format(
                Markup(sanitize.clean_html(html))))
    if "image/svg+xml" in data:
        svg = multiline(data["image/svg+xml"])
        if len(svg) <= 10 * MAX_OUTPUT_CHARS:
            return Output("image", Markup('<img class="output-image" alt="SVG output" src="{}">').format(
                sanitize.svg_data_uri(svg)))
    for mime in _RASTER:
        if mime in data:
            raw = sanitize.decode_image(data[mime])
            real = sanitize.image_kind(raw) if raw is not None else None
            if raw is not None and real is not None:
                return Output("image", Markup('<img class="output-image" alt="{} output" src="{}">')
                              .format(real, images.add(raw, real)))
            return Output("note", Markup('<p class="note">{} output that is not one (not shown)</p>')
                          .format(mime))
    if "text/markdown" in data:
        text, note = cut_for_page(multiline(data["text/markdown"]))
        return Output("markdown", Markup('<div class="markdown">{}</div>').format(
            Markup(sanitize.markdown_html(text))) + note)
    for mime in ("application/javascript", "text/javascript"):
        if mime in data:
            return _as_text("javascript", "JavaScript output, shown as text (not run)", multiline(data[mime]))
    if "text/latex" in data and "text/plain" not in data:
        return _as_text("latex", "LaTeX output", multiline(data["text/latex"]))
    if "application/json" in data and "text/plain" not in data:
        return _as_text("json", "JSON output", json.dumps(data["application/json"], indent=1,
                                                           ensure_ascii=False, default=str))
    if "text/plain" in data:
        text, note = cut_for_page(multiline(data["text/plain"]))
        return Output("text", Markup('<pre class="text-output">{}</pre>').format(
            Markup(sanitize.ansi_html(text))) + note)
    if "text/html" in data:
        return Output("note", Markup('<p class="note">an HTML output of {:,} characters (over the {:,} shown; '
                                     'not shown)</p>').format(len(multiline(data["text/html"])), MAX_OUTPUT_CHARS))
    kinds = ", ".join(sorted(str(k)[:40] for k in data)[:5]) or "nothing"
    return Output("note", Markup('<p class="note">an output of type {} (not shown)</p>').format(kinds))


def _as_text(kind: str, label: str, text: str) -> Output:
    text, note = cut_for_page(text)
    return Output(kind, Markup('<p class="note">{}</p><pre class="text-output">{}</pre>').format(label, text)
                  + note)


def cut_for_page(text: str) -> tuple[str, Markup]:
    """``text`` up to :data:`MAX_OUTPUT_CHARS`, and the note saying what was cut."""
    if len(text) <= MAX_OUTPUT_CHARS:
        return text, Markup("")
    return text[:MAX_OUTPUT_CHARS], Markup('<p class="note">… {:,} more characters not shown</p>').format(
        len(text) - MAX_OUTPUT_CHARS)
