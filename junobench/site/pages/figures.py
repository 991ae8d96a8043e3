"""The gallery of a mined corpus (``junobench site --figures DIR``, a folder written by
``junobench mine``): its figures in a table filterable by kind, purpose, library and stage
(the cases' filters, bars and sorting), each linking to a page of its notebook at its cell:
the notebook's markdown and code cells, with the figures each cell drew.

The gallery shows the first :data:`MAX_FIGURES` figures of the corpus (it says so when
there are more); a notebook page is written for each notebook it shows. The corpus is
read from its parquet files batch by batch; its images are checked to be PNG, JPEG or GIF
by their first bytes before they become files of the site (:mod:`junobench.site.sanitize`).
"""

from __future__ import annotations

import hashlib
import itertools
from collections import Counter
from collections.abc import Iterable
from functools import partial
from pathlib import Path
from typing import Any

from junobench.mining.summary import NONE
from junobench.site import sanitize
from junobench.site.cells import Cell, Images, code_lines, cut_for_page, markdown_cell
from junobench.site.pages import NavLink, Page
from junobench.site.render import render_page

#: Figures shown in the gallery at most (a page stays small whatever the corpus' size).
MAX_FIGURES = 2000
#: The fields the gallery filters by (each its own title).
FIELDS: tuple[str, ...] = ("kind", "purpose", "library", "stage")
_COLUMNS = ["figure", "notebook", "case_id", "version", "cell", "output", "image", "mime", "width", "height",
            "kind", "purpose", "library", "stage", "problem", "calls"]


def nav(data: Any) -> list[NavLink]:
    return [NavLink("Figures", "figures/index.html")] if getattr(data, "figures", None) else []


def notebook_path(notebook: str) -> str:
    """The site path of a mined notebook's page (named by a digest of its id)."""
    return f"figures/nb/{hashlib.sha256(notebook.encode('utf-8')).hexdigest()[:20]}.html"


def pages(data: Any) -> Iterable[Page]:
    folder = getattr(data, "figures", None)
    if not folder:
        return
    from junobench.mining.write import read_manifest

    corpus = read_manifest(Path(folder), hint="give --figures the folder `junobench mine --out` wrote")
    digest = {name: entry["sha256"] for name, entry in corpus.items() if name.endswith(".parquet")}
    figures, total = _figures(Path(folder))
    yield Page("figures/index.html", {"corpus": digest, "limit": MAX_FIGURES},
               partial(gallery_page, data, figures, total))
    shown = list(dict.fromkeys(f["notebook"] for f in figures))
    cells = _cells(Path(folder), set(shown))
    for notebook in shown:
        own = [f for f in figures if f["notebook"] == notebook]
        yield Page(notebook_path(notebook), {"corpus": digest, "notebook": notebook, "limit": MAX_FIGURES},
                   partial(notebook_page, data, notebook, cells.get(notebook, []), own))


def _figures(folder: Path) -> tuple[list[dict[str, Any]], int]:
    """The first :data:`MAX_FIGURES` figures (with their images) and how many there are."""
    from junobench.mining.corpus import count_rows, read_rows

    found = list(itertools.islice(read_rows(folder, "figures", _COLUMNS, batch_size=200), MAX_FIGURES))
    return found, count_rows(folder, "figures")


def _cells(folder: Path, notebooks: set[str]) -> dict[str, list[dict[str, Any]]]:
    from junobench.mining.corpus import read_rows

    out: dict[str, list[dict[str, Any]]] = {}
    columns = ["notebook", "cell", "cell_type", "source", "execution_count"]
    for row in read_rows(folder, "cells", columns, batch_size=5000):
        if row["notebook"] in notebooks:
            out.setdefault(row["notebook"], []).append(row)
    return out


def _image(figure: dict[str, Any], images: Images) -> str | None:
    """The site link of a figure's image, when it is a PNG, JPEG or GIF (by its bytes) of
    at most :data:`~junobench.mining.visuals.MAX_PIXELS` pixels by its header (no browser
    is handed a decompression bomb)."""
    from junobench.mining.visuals import MAX_PIXELS, image_size

    data = (figure.get("image") or {}).get("bytes")
    kind = sanitize.image_kind(data) if isinstance(data, bytes) else None
    if not isinstance(data, bytes) or kind not in sanitize.EXTENSIONS:
        return None
    if isinstance(image_size(data, MAX_PIXELS)[0], str):  # a bomb, or not the image it starts like
        return None
    return images.add(data, kind)


def _row(figure: dict[str, Any], images: Images) -> dict[str, Any]:
    return {**{name: figure.get(name) or NONE for name in FIELDS},
            "figure": figure["figure"], "notebook": figure["notebook"], "cell": figure["cell"],
            "href": notebook_path(figure["notebook"]).removeprefix("figures/") + f"#cell-{figure['cell']}",
            "src": _image(figure, images), "mime": figure["mime"], "problem": figure.get("problem"),
            "calls": ", ".join(dict.fromkeys(c["text"] for c in figure.get("calls") or [] if c and c["text"]))}


def gallery_page(data: Any, figures: list[dict[str, Any]], total: int) -> dict[str, bytes]:
    images = Images(root="../")
    rows = [_row(f, images) for f in figures]
    dimensions = []
    for name in FIELDS:
        counts = Counter(row[name] for row in rows)
        dimensions.append({"field": name, "title": name, "counts": sorted(counts.items(), key=lambda kv: -kv[1]),
                           "most": max(counts.values(), default=0)})
    page = render_page("figures.html.j2", root="../", title=f"Figures · {data.title}", data=data, rows=rows,
                       total=total, dimensions=dimensions, folder=str(data.figures))
    return {"figures/index.html": page, **images.files}


def notebook_page(data: Any, notebook: str, cells: list[dict[str, Any]],
                  figures: list[dict[str, Any]]) -> dict[str, bytes]:
    images = Images(root="../../")
    by_cell: dict[int, list[dict[str, Any]]] = {}
    for figure in figures:
        by_cell.setdefault(figure["cell"], []).append(_row(figure, images))
    shown = []
    for cell in sorted(cells, key=lambda c: c["cell"]):
        kind = cell["cell_type"]
        view = Cell(cell["cell"], kind, cell["source"] or "", cell["execution_count"])
        source, cut = cut_for_page(view.source)  # a page stays small, and is highlighted in time, whatever the code
        shown.append({"id": f"cell-{cell['cell']}", "kind": kind, "count": cell["execution_count"],
                      "markdown": markdown_cell(view) if kind == "markdown" else None,
                      "lines": code_lines(source) if kind == "code" else [], "cut": cut,
                      "figures": by_cell.get(cell["cell"], [])})
    case = figures[0].get("case_id") if figures else None
    cases = {c["case_id"] for c in data.cases}
    page = render_page("notebook.html.j2", root="../../", title=f"{notebook} · {data.title}", data=data,
                       notebook=notebook, cells=shown, case=case if case in cases else None)
    return {notebook_path(notebook): page, **images.files}
