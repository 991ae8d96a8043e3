"""A snapshot whose notebook, tables and predictions hold hostile content, for the site's
tests: each payload, were it to run or load, would set ``window.pwned`` (to its own
name), change ``document.title``, or make a request to 127.0.0.1:9."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from junobench.data.snapshot import sample_path
from junobench.data.tables import read_table, write_table

CASE = "pandas_1"
LEAK = "http://127.0.0.1:9"

HTML_PAYLOADS = [
    "<script>window.pwned='html-script'</script>",
    "<img src=x onerror=\"window.pwned='img-onerror'\">",
    f"<img src=\"{LEAK}/leak.png\">",
    "<a id=\"jslink\" href=\"javascript:window.pwned='js-link'\">click me</a>",
    "<a href=\" JaVaScRiPt:window.pwned='js-link-case'\">click me too</a>",
    "<a href=\"data:text/html,<script>window.opener.pwned='data-link'</script>\">data link</a>",
    "<iframe srcdoc=\"<script>parent.pwned='iframe-srcdoc'</script>\"></iframe>",
    "<iframe src=\"javascript:parent.pwned='iframe-src'\"></iframe>",
    "<meta http-equiv=\"refresh\" content=\"0;url=javascript:window.pwned='meta-refresh'\">",
    "<svg onload=\"window.pwned='svg-inline'\"><script>window.pwned='svg-inline-script'</script>"
    "<a xlink:href=\"javascript:window.pwned='svg-link'\"><text>svg link</text></a></svg>",
    "<object data=\"javascript:window.pwned='object'\"></object><embed src=\"javascript:window.pwned='embed'\">",
    "<form action=\"javascript:window.pwned='form'\"><button id=\"formbutton\">go</button></form>",
    f"<style>@import url({LEAK}/import.css); body {{ background: url({LEAK}/bg.png) }}</style>",
    f"<div style=\"background-image: url({LEAK}/style.png); color: red\">styled</div>",
    f"<base href=\"{LEAK}/\">",
    "<b id=\"pwned\">an element named like the flag</b><img name=\"pwned\">",
    "<details open ontoggle=\"window.pwned='ontoggle'\"><summary>s</summary></details>",
    "<math><mtext><table><mglyph><style><img src=x onerror=\"window.pwned='mxss'\">",
    "<noscript><p title=\"</noscript><img src=x onerror=window.pwned='noscript'>\">",
    "<template><script>window.pwned='template'</script></template>",
    "<script>document.title='pwned'; fetch('" + LEAK + "/fetch')</script>",
    f"<link rel=\"stylesheet\" href=\"{LEAK}/link.css\"><link rel=\"prefetch\" href=\"{LEAK}/prefetch\">",
    "<table class=\"dataframe target cell\"><tr><td onclick=\"window.pwned='td'\">cell</td></tr></table>",
]
SVG = ("<svg xmlns=\"http://www.w3.org/2000/svg\" onload=\"window.pwned='svg-output'\">"
       "<script>window.pwned='svg-output-script'</script>"
       f"<image href=\"{LEAK}/svg-image.png\" width=\"10\" height=\"10\"/></svg>")


def hostile_outputs() -> list[dict]:
    """Outputs of every kind a notebook can hold, each carrying payloads."""
    return [
        {"output_type": "display_data", "metadata": {}, "data": {"text/html": "\n".join(HTML_PAYLOADS),
                                                                  "text/plain": "html"}},
        {"output_type": "display_data", "metadata": {}, "data": {"image/svg+xml": SVG}},
        {"output_type": "display_data", "metadata": {},
         "data": {"application/javascript": "window.pwned='javascript-output'; document.title='pwned'"}},
        {"output_type": "display_data", "metadata": {},
         "data": {"application/vnd.jupyter.widget-view+json": {"model_id": "x", "version_major": 2},
                  "text/html": "<script>window.pwned='widget-html'</script>"}},
        {"output_type": "display_data", "metadata": {},
         "data": {"text/markdown": "<script>window.pwned='markdown-output'</script>"
                                   "[md link](javascript:window.pwned='markdown-link') "
                                   f"![img]({LEAK}/markdown.png)"}},
        {"output_type": "display_data", "metadata": {},
         "data": {"image/png": "\"><script>window.pwned='png'</script>"}},
        {"output_type": "display_data", "metadata": {},
         "data": {"image/png": "PHNjcmlwdD53aW5kb3cucHduZWQ9J2Zha2UtcG5nJzwvc2NyaXB0Pg=="}},
        {"output_type": "stream", "name": "stdout",
         "text": "<script>window.pwned='stream'</script>\x1b[31m<img src=x onerror=window.pwned='ansi'>\x1b[0m"},
        {"output_type": "execute_result", "execution_count": 2, "metadata": {},
         "data": {"text/plain": "<script>window.pwned='plain'</script>",
                  "text/latex": "$\\href{javascript:window.pwned='latex'}{x}$"}},
    ]


def hostile_snapshot(root: Path) -> Path:
    """A copy of the sample whose ``pandas_1`` notebooks and tables hold payloads."""
    target = root / "hostile"
    shutil.copytree(sample_path(), target)
    for path in [target, *target.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)
    folder = target / "benchmark" / CASE
    for version in ("reproduced", "fixed"):
        path = folder / f"{CASE}_{version}.ipynb"
        notebook = json.loads(path.read_text(encoding="utf-8"))
        code = [cell for cell in notebook["cells"] if cell["cell_type"] == "code"]
        code[1]["outputs"] = hostile_outputs()
        markdown = next(cell for cell in notebook["cells"] if cell["cell_type"] == "markdown")
        markdown["source"] = ("# Heading <img src=x onerror=\"window.pwned='markdown-cell'\">\n"
                              "<script>window.pwned='markdown-cell-script'</script>\n"
                              "[link](javascript:window.pwned='markdown-cell-link') "
                              "![attached](attachment:a.png)\n")
        markdown["attachments"] = {"a.png": {"image/png": "\"onerror=\"window.pwned='attachment'"}}
        code[2]["source"] = ("# </pre></div><script>window.pwned='source'</script>\n"
                             + "".join(code[2]["source"]))
        if version == "reproduced":
            target_cell = next(c for c in code if any(o.get("output_type") == "error" for o in c["outputs"]))
            for output in target_cell["outputs"]:
                if output.get("output_type") == "error":
                    output["traceback"] = [*output["traceback"],
                                           "\x1b[0;31m<script>window.pwned='traceback'</script>\x1b[0m"]
        path.write_text(json.dumps(notebook), encoding="utf-8")
    _hostile_tables(target)
    return target


def _hostile_tables(target: Path) -> None:
    truth = read_table(target / "ground_truth_crash_prediction.xlsx")
    rows = truth.records()
    for row in rows:
        if row["instance"] == f"{CASE}_reproduced":
            row["diagnosis"] = "<script>window.pwned='diagnosis'</script><img src=x onerror=window.pwned='diag-img'>"
    write_table(target / "ground_truth_crash_prediction.xlsx", rows, truth.columns)
    desc = read_table(target / "benchmark_desc.xlsx")
    rows = desc.records()
    for row in rows:
        if row["nb_name"] == CASE:
            row["NotebookUrl"] = "javascript:window.pwned='notebook-url'"
            row["DatasetTitle_1"] = "<script>window.pwned='dataset-title'</script>"
            row["DatasetUrl_1"] = "javascript:window.pwned='dataset-url'"
    write_table(target / "benchmark_desc.xlsx", rows, desc.columns)


def hostile_predictions(path: Path) -> Path:
    """Predictions of every sample notebook whose reasoning holds payloads."""
    lines = []
    for case in ("NBspecific_1", "NBspecific_2", "matplotlib_1", "numpy_1", "pandas_1", "pandas_2",
                 "seaborn_1", "sklearn_1", "sklearn_2", "statsmodels_1"):
        for version in ("reproduced", "fixed"):
            runs = [{"reasoning": "<script>window.pwned='reasoning'</script>"
                                  "<img src=x onerror=window.pwned='reasoning-img'>", "detection": True},
                    "<script>window.pwned='raw-run'</script>"]
            lines.append(json.dumps({"instance": f"{case}_{version}", "runs": runs}))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path
