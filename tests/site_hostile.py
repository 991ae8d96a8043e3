"""A snapshot whose notebook, tables and predictions hold hostile content, for the site's
tests: each payload, were it to run or load, would set ``window.pwned`` (to its own
name), change ``document.title``, or make a request to 127.0.0.1:9."""

from __future__ import annotations

import base64
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
#: More payloads, in an output of their own (in the list above, the mXSS payload's
#: unclosed ``<style>`` makes the sanitizer drop whatever follows it).
MORE_HTML_PAYLOADS = [
    f"<link rel=\"import\" href=\"{LEAK}/import.html\">",
    f"<div style=\"width: expression(window.pwned='expression'); background-color: url({LEAK}/bgc.png)\">css</div>",
    f"<div style=\"color: red; background-color: image-set(url({LEAK}/set.png) 1x)\">image-set</div>",
    f"<style>@font-face {{ font-family: x; src: url({LEAK}/font.woff) }} body {{ font-family: x }}</style>",
    "<a href=\"vbscript:msgbox(1)\">vbscript link</a>",
    "<a href=\"&#106;avascript:window.pwned='entity-link'\">entity link</a>",
    "<a href=\"java&#x09;script:window.pwned='tab-link'\">tab link</a>",
    "<svg><foreignObject><iframe srcdoc=\"<script>parent.pwned='foreign-object'</script>\"></iframe>"
    f"</foreignObject><use href=\"{LEAK}/use.svg#x\"/>"
    "<animate onbegin=\"window.pwned='animate'\" attributeName=\"x\" dur=\"1s\"/>"
    "<set attributeName=\"onmouseover\" to=\"window.pwned='set'\"/></svg>",
    "<math><maction actiontype=\"statusline\" xlink:href=\"javascript:window.pwned='maction'\">m</maction></math>",
    f"<img srcset=\"{LEAK}/srcset.png 1x\"><video poster=\"{LEAK}/poster.png\"><source src=\"{LEAK}/v.mp4\">"
    f"</video><audio src=\"{LEAK}/a.mp3\" autoplay></audio><track src=\"{LEAK}/t.vtt\">",
    f"<input type=\"image\" src=\"{LEAK}/input.png\"><table background=\"{LEAK}/table.png\"><tr>"
    f"<td background=\"{LEAK}/td.png\">legacy background</td></tr></table>",
    f"<a ping=\"{LEAK}/ping\" href=\"#top\" target=\"_blank\">ping</a>",
    f"<blockquote cite=\"{LEAK}/cite\">quote</blockquote><object data=\"{LEAK}/object.swf\"></object>"
    f"<embed src=\"{LEAK}/embed.swf\">",
    "<h1 id=\"filter-text\">clobbering the site's ids</h1><span id=\"shown\">999</span><p id=\"r-run-1\">x</p>",
    "<xmp><script>window.pwned='xmp'</script></xmp>",
    "<p>right-to-left override: \u202e}; evil() #</p>",
]
SVG = ("<svg xmlns=\"http://www.w3.org/2000/svg\" onload=\"window.pwned='svg-output'\">"
       "<script>window.pwned='svg-output-script'</script>"
       f"<image href=\"{LEAK}/svg-image.png\" width=\"10\" height=\"10\"/></svg>")


def hostile_outputs() -> list[dict]:
    """Outputs of every kind a notebook can hold, each carrying payloads."""
    return [
        {"output_type": "display_data", "metadata": {}, "data": {"text/html": "\n".join(HTML_PAYLOADS),
                                                                  "text/plain": "html"}},
        {"output_type": "display_data", "metadata": {}, "data": {"text/html": "\n".join(MORE_HTML_PAYLOADS)}},
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
        {"output_type": "display_data", "metadata": {},
         "data": {"image/svg+xml": "<svg xmlns=\"http://www.w3.org/2000/svg\"><foreignObject width=\"9\" "
                                   "height=\"9\"><body xmlns=\"http://www.w3.org/1999/xhtml\"><iframe src=\""
                                   f"{LEAK}/foreign\"></iframe><script>parent.pwned='svg-foreign'</script></body>"
                                   f"</foreignObject><use href=\"{LEAK}/use.svg#x\"/>"
                                   "<a xlink:href=\"javascript:parent.pwned='svg-xlink'\"><text y=\"9\">t</text></a>"
                                   f"<style>@import url({LEAK}/svg.css);</style></svg>"}},
        {"output_type": "display_data", "metadata": {},  # PNG magic, then a page
         "data": {"image/png": base64.b64encode(b"\x89PNG\r\n\x1a\n<html><script>window.pwned='polyglot'"
                                                b"</script>").decode()}},
        {"output_type": "display_data", "metadata": {},
         "data": {"text/html": "<b>" + "x" * 200_000 + "</b><script>window.pwned='huge'</script>"}},
        {"output_type": "stream", "name": "stderr",
         "text": "\x1b]8;;javascript:window.pwned='osc8'\x1b\\osc 8 link\x1b]8;;\x1b\\ "
                 f"\x1b]8;;{LEAK}/osc8\x07web link\x1b]8;;\x07 \x1b]0;pwned\x07\x9b31m C1 "
                 "\x1b[38;2;255;0;0mtruecolour\x1b[0m user\u202e \u2066# admin\u2069\u2066"},
        {"output_type": "error", "ename": "<script>", "evalue": "<img src=x onerror=window.pwned='evalue'>",
         "traceback": ["\x1b]8;;javascript:window.pwned='osc8-traceback'\x07tb\x1b]8;;\x07", "\u202eabc"]},
        {"output_type": "unknown<script>window.pwned='kind'</script>", "data": {}},
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
                              "![attached](attachment:a.png)\n\n"
                              "<javascript:window.pwned='autolink'> [ref][r] [upper](JAVASCRIPT:window.pwned='up') "
                              "[data](data:text/html,<script>parent.pwned='md-data'</script>) [vb](vbscript:x) "
                              f"![remote]({LEAK}/md.png) <img src=\"attachment:svg.svg\"> "
                              "![svg](attachment:svg.svg)\n\n"
                              "[r]: javascript:window.pwned='reference'\n\n"
                              "$<img src=x onerror=\"window.pwned='math'\">$ "
                              "$$<script>window.pwned='math2'</script>$$\n\n"
                              "<iframe srcdoc=\"<script>parent.pwned='md-srcdoc'</script>\"></iframe>"
                              "<a href=\"javascript:window.pwned='md-raw'\">raw link</a> gnirts \u202e text\n")
        markdown["attachments"] = {
            "a.png": {"image/png": "\"onerror=\"window.pwned='attachment'"},
            "svg.svg": {"image/svg+xml": base64.b64encode(
                b"<svg xmlns='http://www.w3.org/2000/svg' onload='parent.pwned=1'/>").decode()}}
        code[2]["source"] = ("# </pre></div><script>window.pwned='source'</script>\n"
                             "access = 'user\u202e \u2066# admin\u2069\u2066'\n"
                             "bell = '\x07'\n"
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
            row["DatasetLicenseName_1"] = "<i onmouseover=\"window.pwned='licence'\">CC0</i>\u202e"
    write_table(target / "benchmark_desc.xlsx", rows, desc.columns)
    # the dataset's metadata file is what the records read where there is one
    meta = target / "benchmark" / CASE / "data" / "passengers.metadata.json"
    metadata = json.loads(meta.read_text(encoding="utf-8"))
    metadata.update(title="<script>window.pwned='metadata-title'</script>",
                    url="https://www.kaggle.com/\"><script>window.pwned='metadata-url'</script>",
                    license="<i onmouseover=\"window.pwned='licence'\">CC0</i>\u202e")
    meta.write_text(json.dumps(metadata), encoding="utf-8")


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


def hostile_judgments(path: Path) -> Path:
    """Judged diagnoses whose setting's name holds payloads."""
    name = "<script>window.pwned='judged'</script><img src=x onerror=window.pwned='judged-img'>"
    path.write_text("".join(json.dumps({"instance": f"{CASE}_{version}", "setting": name, "judgment": "correct"})
                            + "\n" for version in ("reproduced", "fixed")), encoding="utf-8")
    return path
