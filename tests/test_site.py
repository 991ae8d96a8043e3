"""``junobench site`` / ``view``: the pages, their safety, incremental builds, the numbers.

The browser half (filters, clicks, no script from a notebook at run time) is in
tests/test_site_browser.py; here the built files are read."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import urllib.request
from html.parser import HTMLParser
from pathlib import Path

import pytest

pytest.importorskip("nh3", reason="the site needs the site extra")

from site_hostile import CASE, hostile_judgments, hostile_predictions, hostile_snapshot

from junobench.cli import main
from junobench.data.snapshot import sample_path
from junobench.errors import JunoBenchError
from junobench.site import site
from junobench.site.build import MANIFEST
from junobench.site.render import CSP

SAMPLE_CASES = ["NBspecific_1", "NBspecific_2", "matplotlib_1", "numpy_1", "pandas_1", "pandas_2",
                "seaborn_1", "sklearn_1", "sklearn_2", "statsmodels_1"]


class Page(HTMLParser):
    """Every element of a page: (tag, attributes), and its text."""

    def __init__(self, text: str) -> None:
        super().__init__(convert_charrefs=True)
        self.elements: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        self.elements.append((tag, dict(attrs)))

    def handle_startendtag(self, tag, attrs):
        self.elements.append((tag, dict(attrs)))

    def handle_data(self, data):
        self.text.append(data)

    def having(self, tag: str | None = None, **attrs: str) -> list[dict[str, str | None]]:
        return [a for t, a in self.elements if (tag is None or t == tag)
                and all(k in a and (v is None or v in (a[k] or "").split()) for k, v in attrs.items())]


def read(path: Path) -> Page:
    return Page(path.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def static_predictions(tmp_path_factory):
    """The static baseline's predictions of the sample, with their truth file."""
    from junobench.detection.detect import detect_static
    from junobench.detection.tasks import tasks, write_tasks

    folder = tmp_path_factory.mktemp("static")
    items, truths = tasks("sample")
    write_tasks(items, truths, folder / "tasks.jsonl")
    detect_static(items, folder / "static.jsonl")
    return folder / "static.jsonl", folder / "tasks.truth.jsonl"


@pytest.fixture(scope="module")
def sample_site(tmp_path_factory, static_predictions):
    out = tmp_path_factory.mktemp("site") / "site"
    predictions, truth = static_predictions
    summary = site("sample", out, [predictions], truth=truth, names=["static"])
    return out, summary


# --------------------------------------------------------------------------- pages


def test_every_case_has_a_page_with_its_target_cell_marked_and_the_fix_diffed(sample_site):
    out, _ = sample_site
    index = read(out / "index.html")
    linked = [a["href"] for a in index.having("a") if (a.get("href") or "").startswith("cases/")]
    assert linked == [f"cases/{case}.html" for case in SAMPLE_CASES]
    for k, case in enumerate(SAMPLE_CASES):
        page = read(out / "cases" / f"{case}.html")
        targets = page.having("div", **{"class": "target"})
        # the target cell in both views, on both sides (the fixed notebook's too)
        assert len(targets) >= 4, case
        assert any((a.get("id") or "").startswith("r-run-") for a in targets), case
        crash = page.having("span", **{"class": "crash"})
        assert crash, f"{case}: the crash line is not marked"
        changed = page.having("div", **{"class": "status-changed"})
        assert changed, f"{case}: no cell the fix changed"
        if case == "NBspecific_1":  # the fix runs the train/test split cell the crash skipped
            assert "the fix runs this cell" in " ".join(page.text)
        else:  # the fix edits code: its lines are marked on both sides
            assert page.having("span", **{"class": "del"}) or page.having("span", **{"class": "add"}), case
        previous = [a["href"] for a in page.having("a", rel="prev")]
        following = [a["href"] for a in page.having("a", rel="next")]
        assert previous == ([f"{SAMPLE_CASES[k - 1]}.html"] * 2 if k else [])
        assert following == ([f"{SAMPLE_CASES[k + 1]}.html"] * 2 if k + 1 < len(SAMPLE_CASES) else [])


def test_a_case_page_shows_labels_diagnosis_datasets_outputs_and_permalinks(sample_site):
    out, _ = sample_site
    text = (out / "cases" / "pandas_1.html").read_text(encoding="utf-8")
    page = Page(text)
    words = " ".join(page.text)
    for expected in ("data confusion", "key error", "data preparation", "KeyError",
                     "Column not found: survived", "column 'survived' does not exist",
                     "Ocean liner passenger list", "CC0: Public Domain", "pandas==2.1.4"):
        assert expected in words, expected
    # the data frame output, rendered as a table; execution counts; a permalink per cell
    assert page.having("table", **{"class": "dataframe"})
    assert "In [5]" in words
    ids = {a["id"] for a in page.having() if a.get("id")}
    permalinks = {a["href"][1:] for a in page.having("a", **{"class": "permalink"})}
    assert permalinks and permalinks <= ids
    assert {"r-run-5", "f-run-5", "r-cell-9", "f-cell-9"} <= ids
    # the traceback: the notebook's own, shown as HTML
    assert page.having("pre", **{"class": "traceback"})
    # markdown rendered (a heading from a markdown cell), code highlighted (Pygments classes)
    assert page.having("h1", id=None) and re.search(r'<span class="(?:kn|nn|n)">', text)


def test_every_page_carries_the_policy_and_loads_nothing_from_elsewhere(sample_site):
    out, _ = sample_site
    pages = sorted(out.rglob("*.html"))
    assert len(pages) == 10 + 4  # cases, index, evaluation, a set's page, grid
    for path in pages:
        page = read(path)
        policy = page.having("meta", **{"http-equiv": "Content-Security-Policy"})
        assert [p["content"] for p in policy] == [CSP], path
        for attrs in page.having():
            for name in ("src", "href"):
                value = attrs.get(name) or ""
                if name == "src" or attrs.get("rel") == "stylesheet":
                    assert not re.match(r"[a-z]+:", value) or value.startswith("data:image/"), (path, value)
        scripts = page.having("script")
        assert [s.get("src") for s in scripts] == [("../" if path.parent.name != out.name else "")
                                                    + "assets/site.js"], path
    assert "default-src 'none'" in CSP and "script-src 'self'" in CSP


def test_distribution_charts_count_each_label(sample_site):
    out, _ = sample_site
    page = read(out / "index.html")
    bars = {(a["data-field"], a["data-value"]) for a in page.having("a", **{"class": "bar"})}
    assert ("library_label", "pandas") in bars and ("root_cause", "API misuse") in bars
    counts = re.findall(r'data-field="root_cause" data-value="([^"]+)">\s*<span class="bar-label">[^<]*</span>'
                        r'\s*<span class="bar-track">.*?</span></span>\s*<span class="bar-count" data-total="(\d+)"',
                        (out / "index.html").read_text(encoding="utf-8"), re.DOTALL)
    from junobench.stats import stats

    published = stats("sample").to_dict()["root_cause"]
    assert {value: int(n) for value, n in counts} == {k: v for k, v in published.items() if v}


# --------------------------------------------------------------------------- hostile input


@pytest.fixture(scope="module")
def hostile_site(tmp_path_factory):
    root = tmp_path_factory.mktemp("hostile")
    snapshot = hostile_snapshot(root)
    predictions = hostile_predictions(root / "hostile.jsonl")
    out = root / "site"
    site(snapshot, out, [predictions], names=["<img src=x onerror=window.pwned='name'>"],
         judgments=hostile_judgments(root / "judged.jsonl"))
    return out


DANGEROUS_TAGS = {"script", "iframe", "object", "embed", "meta", "base", "link", "style", "form",
                  "frame", "frameset", "svg", "math", "template", "noscript", "input", "button", "textarea"}
#: The site's own controls (the filters, the view switch): every other form element came
#: from data.
OURS = {("form", "filters"), ("input", "filter-text"), ("button", "filter-reset"), ("input", "changes-only")}


def test_a_hostile_notebook_leaves_no_script_no_handler_and_no_outside_url(hostile_site):
    for path in sorted(hostile_site.rglob("*.html")):
        text = path.read_text(encoding="utf-8")
        page = Page(text)
        head_end = text.index("</head>")
        ours = Page(text[:head_end])
        body = Page(text[head_end:])
        assert len(ours.having("script")) == 1, path
        assert not [t for t, a in body.elements if t in DANGEROUS_TAGS and (t, a.get("id")) not in OURS], path
        for tag, attrs in page.elements:
            for name, value in attrs.items():
                assert not name.startswith("on"), (path, tag, name)
                assert name not in ("srcdoc", "formaction", "xlink:href", "action"), (path, tag, name)
                if name in ("href", "src", "data", "cite", "poster"):
                    low = (value or "").strip().lower()
                    assert not low.startswith(("javascript:", "data:text", "vbscript:", "//")), (path, value)
                    assert "127.0.0.1:9" not in low, (path, value)
                if name == "style":
                    assert "url(" not in (value or ""), (path, value)
                if name in ("id", "name") and tag != "meta":
                    assert value != "pwned", (path, tag, name)


def test_hostile_text_is_shown_as_text(hostile_site):
    text = (hostile_site / "cases" / f"{CASE}.html").read_text(encoding="utf-8")
    words = " ".join(Page(text).text)
    # what the payloads said is on the page, as text a reader can see
    for shown in ("<script>window.pwned='stream'</script>", "window.pwned='javascript-output'",
                  "<script>window.pwned='diagnosis'</script>", "# </pre></div><script>window.pwned='source'</script>",
                  "<script>window.pwned='traceback'</script>", "<script>window.pwned='reasoning'</script>"):
        assert shown in words, shown
    grid = " ".join(read(hostile_site / "grid.html").text)
    assert "<img src=x onerror=window.pwned='name'>" in grid
    assert "<script>window.pwned='judged'</script><img src=x onerror=window.pwned='judged-img'>" in grid
    assert "an HTML output of 200,043 characters (over the 100,000 shown; not shown)" in words


def test_bidirectional_overrides_are_shown_not_obeyed(hostile_site):
    """A right-to-left override or isolate in a notebook's code, output, Markdown or tables
    would make a line read other than it runs ("Trojan Source"): each is shown as a mark."""
    from junobench.safety.text import BIDI_CONTROLS

    for path in sorted(hostile_site.rglob("*.html")):
        assert not BIDI_CONTROLS.search(path.read_text(encoding="utf-8")), path
    words = " ".join(Page((hostile_site / "cases" / f"{CASE}.html").read_text(encoding="utf-8")).text)
    assert "user\u2039U+202E\u203a \u2039U+2066\u203a# admin\u2039U+2069\u203a" in words  # code and stream
    for shown in ("gnirts \u2039U+202E\u203a text", "\u2039U+202E\u203aabc", "CC0</i>\u2039U+202E\u203a",
                  "override: \u2039U+202E\u203a}; evil()"):
        assert shown in words, shown


def test_no_terminal_control_character_reaches_a_page(hostile_site):
    """Escape sequences (colours become spans; hyperlinks, titles and C1 controls are
    dropped) and other control characters are not written into a page."""
    control = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")
    for path in sorted(hostile_site.rglob("*.html")):
        found = control.search(path.read_text(encoding="utf-8"))
        assert found is None, (path, found)
    words = " ".join(Page((hostile_site / "cases" / f"{CASE}.html").read_text(encoding="utf-8")).text)
    assert "osc 8 link web link" in words and "truecolour" in words
    assert "'\u2039U+0007\u203a'" in words  # a control character in code is shown


def test_a_notebook_that_printed_megabytes_makes_a_page_under_a_megabyte(tmp_path):
    """Outputs are cut per output, per cell and per page (the target cell's never): the
    page stays under 1 MB and says what it leaves out."""
    snapshot = tmp_path / "snapshot"
    shutil.copytree(sample_path(), snapshot)
    for path in [snapshot, *snapshot.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)
    for version in ("reproduced", "fixed"):
        path = snapshot / "benchmark" / "pandas_2" / f"pandas_2_{version}.ipynb"
        notebook = json.loads(path.read_text(encoding="utf-8"))
        printed = [{"cell_type": "code", "execution_count": None, "metadata": {}, "source": f"print({k})",
                    "outputs": [{"output_type": "stream", "name": "stdout", "text": f"<{k}> " * 2_000},
                                {"output_type": "display_data", "metadata": {}, "data": {"image/png": _png(k)}}]}
                   for k in range(200)]
        notebook["cells"] = printed + notebook["cells"]
        path.write_text(json.dumps(notebook), encoding="utf-8")
    out = tmp_path / "site"
    site(snapshot, out)
    page = out / "cases" / "pandas_2.html"
    assert page.stat().st_size < 1_000_000
    text = page.read_text(encoding="utf-8")
    assert "outputs not shown" in text
    target = Page(text).having("div", **{"class": "target"})
    assert target and "Traceback" in " ".join(Page(text).text)  # the crash is shown, always
    shown = {a["src"].removeprefix("../") for page in (out / "cases").iterdir() for a in read(page).having("img")
             if (a["src"] or "").startswith("../img/")}
    assert len([s for s in shown if s in text]) > 1  # the images of the outputs shown
    assert {p.relative_to(out).as_posix() for p in (out / "img").iterdir()} == shown  # and no other


def _png(seed: int) -> str:
    import base64
    import io

    from PIL import Image

    buffer = io.BytesIO()
    Image.new("RGB", (2, 2), (seed % 256, seed // 256, 0)).save(buffer, "PNG")
    return base64.b64encode(buffer.getvalue()).decode()


def test_the_sanitizer_keeps_tables_text_and_web_links():
    from junobench.site.sanitize import clean_html

    html = ('<table class="dataframe"><thead><tr><th>a</th></tr></thead><tbody><tr><td>1</td></tr></tbody>'
            '</table><a href="https://www.kaggle.com/x">k</a><p style="color: red; position: fixed">p</p>')
    cleaned = clean_html(html)
    assert '<table class="dataframe">' in cleaned and "<td>1</td>" in cleaned
    assert 'href="https://www.kaggle.com/x"' in cleaned
    assert 'style="color:red"' in cleaned.replace(" ", "").replace(";", "") or "color: red" in cleaned
    assert "position" not in cleaned


# --------------------------------------------------------------------------- building


def test_an_unchanged_page_is_not_rendered_again(tmp_path, static_predictions):
    snapshot = tmp_path / "snapshot"
    shutil.copytree(sample_path(), snapshot)
    for path in [snapshot, *snapshot.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)
    out = tmp_path / "site"
    first = site(snapshot, out)
    assert first.reused == [] and "cases/pandas_1.html" in first.rendered
    inodes = {p: (out / p).stat().st_ino for p in first.files}
    second = site(snapshot, out)
    assert second.rendered == []
    assert {p: (out / p).stat().st_ino for p in second.files} == inodes  # the same files, linked
    # one case's reproduced notebook changes: its page alone is rendered again
    path = snapshot / "benchmark" / "sklearn_1" / "sklearn_1_reproduced.ipynb"
    notebook = json.loads(path.read_text(encoding="utf-8"))
    notebook["cells"].insert(0, {"cell_type": "markdown", "metadata": {}, "source": "A new note"})
    path.write_text(json.dumps(notebook), encoding="utf-8")
    third = site(snapshot, out)
    assert third.rendered == ["cases/sklearn_1.html"]
    assert "A new note" in (out / "cases" / "sklearn_1.html").read_text(encoding="utf-8")
    assert (out / "cases" / "pandas_1.html").stat().st_ino == inodes["cases/pandas_1.html"]
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".site.")]  # no leftovers


def _files(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*")
            if p.is_file() and p.name != MANIFEST}


def test_a_rebuild_after_each_kind_of_change_equals_a_fresh_build(tmp_path):
    """A label, a dataset's licence, a diagnosis, the predictions, the judgments, a removed
    case: after each, the incremental site is byte for byte the one a new folder gets,
    and what the change shows on is rendered again."""
    from junobench.data.tables import read_table, write_table

    snapshot = tmp_path / "snapshot"
    shutil.copytree(sample_path(), snapshot)
    for path in [snapshot, *snapshot.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)
    predictions = tmp_path / "predictions.jsonl"
    predictions.write_text("".join(
        json.dumps({"instance": f"{case}_{version}", "runs": [{"detection": version == "reproduced",
                                                                "reasoning": f"{case} {version}"}]}) + "\n"
        for case in SAMPLE_CASES for version in ("reproduced", "fixed")), encoding="utf-8")
    judgments = tmp_path / "judgments.jsonl"
    judgments.write_text("".join(
        json.dumps({"instance": f"{case}_{version}", "setting": "s", "judgment": "correct"}) + "\n"
        for case in ("pandas_1", "sklearn_1") for version in ("reproduced", "fixed")), encoding="utf-8")
    out = tmp_path / "site"
    site(snapshot, out, [predictions], judgments=judgments)

    def rebuilt(change: str) -> set[str]:
        summary = site(snapshot, out, [predictions], judgments=judgments)
        fresh = tmp_path / f"fresh-{change.replace(' ', '-')}"
        site(snapshot, fresh, [predictions], judgments=judgments)
        assert _files(out) == _files(fresh), change
        return set(summary.rendered)

    def edit_table(name, key, column, value, match):
        table = read_table(snapshot / name)
        rows = table.records()
        for row in rows:
            if row[key] == match:
                row[column] = value
        write_table(snapshot / name, rows, table.columns)

    assert rebuilt("nothing") == set()
    edit_table("benchmark_desc.xlsx", "nb_name", "label_root_cause", "API misuse", "pandas_1")
    assert {"index.html", "cases/pandas_1.html", "grid.html", "evaluation/set-1.html"} <= rebuilt("a label")
    metadata = next((snapshot / "benchmark" / "sklearn_1" / "data").glob("*.metadata.json"))
    metadata.write_text(json.dumps(dict(json.loads(metadata.read_text(encoding="utf-8")), license="CC BY 4.0")),
                        encoding="utf-8")
    assert rebuilt("a licence") == {"cases/sklearn_1.html"}
    assert "CC BY 4.0" in (out / "cases" / "sklearn_1.html").read_text(encoding="utf-8")
    edit_table("ground_truth_crash_prediction.xlsx", "instance", "diagnosis", "a new diagnosis", "numpy_1_reproduced")
    assert rebuilt("a diagnosis") == {"cases/numpy_1.html"}
    predictions.write_text(predictions.read_text(encoding="utf-8").replace(
        '"detection": true, "reasoning": "seaborn_1 reproduced"', '"detection": false, "reasoning": "changed"'),
        encoding="utf-8")
    assert {"cases/seaborn_1.html", "evaluation.html", "grid.html"} <= rebuilt("the predictions")
    assert "cases/pandas_1.html" not in rebuilt("nothing again")
    judgments.write_text(judgments.read_text(encoding="utf-8").replace('"correct"', '"reasoning wrong"', 1),
                         encoding="utf-8")
    assert {"cases/pandas_1.html", "evaluation.html", "grid.html"} <= rebuilt("the judgments")
    shutil.rmtree(snapshot / "benchmark" / "numpy_1")
    for name, key in (("benchmark_desc.xlsx", "nb_name"), ("ground_truth_crash_prediction.xlsx", "instance")):
        table = read_table(snapshot / name)
        write_table(snapshot / name, [r for r in table.records() if r[key] and not r[key].startswith("numpy_1")],
                    table.columns)
    predictions.write_text("".join(line + "\n" for line in predictions.read_text(encoding="utf-8").splitlines()
                                   if "numpy_1" not in line), encoding="utf-8")
    changed = rebuilt("a removed case")
    assert {"index.html", "cases/matplotlib_1.html", "cases/pandas_1.html"} <= changed  # its neighbours' links
    assert not (out / "cases" / "numpy_1.html").exists()


def test_a_folder_holding_other_files_is_refused_and_kept(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "notes.txt").write_text("mine", encoding="utf-8")
    with pytest.raises(JunoBenchError, match="not a site written before"):
        site("sample", out)
    assert [p.name for p in out.iterdir()] == ["notes.txt"]
    built = tmp_path / "built"
    site("sample", built)
    (built / "cases" / "extra.html").write_text("mine", encoding="utf-8")
    with pytest.raises(JunoBenchError, match=r"files the site did not write: cases/extra\.html"):
        site("sample", built)
    assert (built / "cases" / "extra.html").read_text(encoding="utf-8") == "mine"
    (built / "cases" / "extra.html").unlink()
    # a link where the site wrote a folder or a file, or as the site itself, is refused
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "pandas_1.html").write_text("mine", encoding="utf-8")
    shutil.move(built / "cases", tmp_path / "cases")
    (built / "cases").symlink_to(elsewhere)
    with pytest.raises(JunoBenchError, match="files the site did not write: cases"):
        site("sample", built)
    assert (elsewhere / "pandas_1.html").read_text(encoding="utf-8") == "mine"
    link = tmp_path / "link"
    link.symlink_to(out)
    with pytest.raises(JunoBenchError, match="symbolic link"):
        site("sample", link)
    assert [p.name for p in out.iterdir()] == ["notes.txt"]


def test_a_site_inside_the_snapshot_it_shows_is_refused(tmp_path, capsys):
    snapshot = tmp_path / "snapshot"
    shutil.copytree(sample_path(), snapshot)
    (tmp_path / "link").symlink_to(snapshot)
    before = sorted(p.relative_to(snapshot) for p in snapshot.rglob("*"))
    for source, out in ((snapshot, snapshot / "site"), (tmp_path / "link", snapshot / "benchmark" / "pandas_1" / "s"),
                        (snapshot, tmp_path / "link" / "site")):
        assert main(["site", "--source", str(source), "--out", str(out)]) == 1
        err = capsys.readouterr().err
        assert err.startswith(f"error: {out}: the site's directory is inside the snapshot"), err
        assert len(err.strip().splitlines()) == 1
    assert sorted(p.relative_to(snapshot) for p in snapshot.rglob("*")) == before


def test_a_failed_build_leaves_the_previous_site(tmp_path, monkeypatch):
    out = tmp_path / "site"
    site("sample", out)
    before = {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()}
    from junobench.site.pages import cases

    def broken(*args, **kwargs):
        raise RuntimeError("broken page")

    monkeypatch.setattr(cases, "render_case", broken)
    monkeypatch.setattr("junobench.site.build.code_digest", lambda: "another version")
    with pytest.raises(RuntimeError, match="broken page"):
        site("sample", out)
    assert {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()} == before
    assert not [p for p in tmp_path.iterdir() if p.name != "site"]


def test_a_killed_build_leaves_the_previous_site_and_its_leftover_is_removed_next_time(
        tmp_path, monkeypatch, caplog):
    """As ``kill -9`` leaves it: the staging folder half written beside the site (no
    cleanup ran). The site is the previous one; the next build removes the leftover."""
    snapshot = tmp_path / "snapshot"
    shutil.copytree(sample_path(), snapshot)
    for path in [snapshot, *snapshot.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)
    out = tmp_path / "site"
    site(snapshot, out)
    before = {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()}
    notebook = snapshot / "benchmark" / "pandas_1" / "pandas_1_reproduced.ipynb"
    cells = json.loads(notebook.read_text(encoding="utf-8"))
    cells["cells"].insert(0, {"cell_type": "markdown", "metadata": {}, "source": "A new note"})
    notebook.write_text(json.dumps(cells), encoding="utf-8")
    from junobench.safety import atomic
    from junobench.site import build

    write_pages = build.write_pages

    def killed(*args):
        write_pages(*args)
        raise KeyboardInterrupt  # stands for the kill once the pages are written: nothing else runs

    with monkeypatch.context() as patched:
        patched.setattr(build, "write_pages", killed)
        patched.setattr(atomic, "remove_tree", lambda folder: None)  # no cleanup under kill -9
        with pytest.raises(KeyboardInterrupt):
            site(snapshot, out)
    (leftover,) = [p for p in tmp_path.iterdir() if p.name.endswith(".partial")]
    assert (leftover / "cases" / "pandas_1.html").is_file()
    assert {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()} == before
    with caplog.at_level("WARNING"):
        summary = site(snapshot, out)
    assert summary.rendered == ["cases/pandas_1.html"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["site", "snapshot"]  # the leftover is gone
    assert not [r for r in caplog.records if r.levelname == "WARNING"], caplog.text
    # a folder named like a leftover that holds something else is kept, with a warning
    foreign = tmp_path / ".site.abcdefgh.partial"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("mine", encoding="utf-8")
    with caplog.at_level("WARNING"):
        site(snapshot, out)
    assert (foreign / "notes.txt").read_text(encoding="utf-8") == "mine" and "left as it is" in caplog.text


def test_a_manifest_naming_paths_outside_is_refused(tmp_path):
    out = tmp_path / "site"
    site("sample", out)
    manifest = json.loads((out / MANIFEST).read_text(encoding="utf-8"))
    manifest["pages"]["index.html"]["files"].append("../outside.txt")
    (out / MANIFEST).write_text(json.dumps(manifest), encoding="utf-8")
    (tmp_path / "outside.txt").write_text("keep", encoding="utf-8")
    with pytest.raises(JunoBenchError, match="manifest cannot be read"):
        site("sample", out)
    assert (tmp_path / "outside.txt").read_text(encoding="utf-8") == "keep"


# --------------------------------------------------------------------------- the numbers


def _cli_json(capsys, *args: str) -> str:
    capsys.readouterr()
    assert main(["evaluate", *args, "--format", "json"]) == 0
    return capsys.readouterr().out


def shown(value, bounds) -> str:
    """What the page must show for a score and its interval (from evaluate's JSON)."""
    if value is None:
        return "n/a"
    return f"{value:.3f} " + ("n/a" if bounds is None else f"[{bounds[0]:.3f}, {bounds[1]:.3f}]")


def cells(path: Path, table: str) -> dict[str, dict[str, str]]:
    """``data-set`` row → ``data-key`` cell → text, of the table ``#table``."""
    text = path.read_text(encoding="utf-8")
    body = text[text.index(f'id="{table}"'):]
    body = body[:body.index("</table>")]
    rows = {}
    for row in re.findall(r'<tr data-set="([^"]+)">(.*?)</tr>', body, re.DOTALL):
        rows[row[0]] = {k: re.sub(r"<[^>]+>", "", v).strip()
                        for k, v in re.findall(r'<td data-key="([^"]+)">(.*?)</td>', row[1], re.DOTALL)}
    return rows


def check_scores(row: dict[str, str], report: dict) -> None:
    for metric in ("precision", "recall", "f1", "accuracy"):
        assert row[metric] == shown(report[metric], report["intervals"][metric]), metric
    for count in ("tp", "fp", "tn", "fn"):
        if count in row:
            assert row[count] == str(report[count]), count


def test_the_sample_site_shows_the_numbers_of_evaluate(sample_site, static_predictions, capsys):
    out, _ = sample_site
    predictions, truth = static_predictions
    printed = _cli_json(capsys, str(predictions), "--source", "sample", "--truth", str(truth))
    assert (out / "evaluation" / "set-1.json").read_text(encoding="utf-8") == printed
    check_scores(cells(out / "evaluation.html", "detection-scores")["set-1"], json.loads(printed))


@pytest.fixture(scope="module")
def reference_site(tmp_path_factory, reference_snapshot, qwen, mistral, crane_summary, crane_llm_dir):
    runinfo = crane_llm_dir / "llms" / "llms_outputs" / "results_raw" / "Qwen_2_5_32B_Instruct" / \
        "crash_detection_code_runinfo"
    out = tmp_path_factory.mktemp("reference") / "site"
    predictions = [qwen, mistral, runinfo]
    summary = site(reference_snapshot, out, predictions, judgments=crane_summary)
    return out, summary, predictions


def test_the_reference_site_shows_all_111_cases_with_targets_and_diffs(reference_site, reference_snapshot):
    out, _, _ = reference_site
    from junobench import ls

    ids = [row["case_id"] for row in ls(reference_snapshot)]
    assert len(ids) == 111
    differing = 0
    for case in ids:
        path = out / "cases" / f"{case}.html"
        text = path.read_text(encoding="utf-8")
        page = Page(text)
        assert page.having("div", **{"class": "target"}), case
        assert any((a.get("id") or "").startswith("r-run-") for a in page.having("div", **{"class": "target"})), case
        assert page.having("span", **{"class": "crash"}) or "crash_line" not in text, case
        assert page.having("p", id="fix-summary"), case
        changed = page.having("div", **{"class": "status-changed"}) + page.having("div", **{"class": "status-added"}) \
            + page.having("div", **{"class": "status-removed"})
        if _fix_differs(reference_snapshot / "benchmark" / case, case):
            assert changed, f"{case}: no cell the fix changed"
            differing += 1
        else:  # (the reconstructed notebooks of some notebook-specific fixes differ in counts only)
            assert not changed and "0 cells changed, 0 added, 0 removed" in text, case
        assert len(page.having("tr", id=None)) and page.having("tr", id="det-set-1"), case
        assert path.stat().st_size < 1_000_000, case  # the reference notebooks hold no images
    assert differing > 90


def _fix_differs(folder: Path, case: str) -> bool:
    """Whether the fixed notebook's cells differ from the reproduced one's in kind, source
    or whether they ran (read from the files, apart from the site's code)."""
    def cells(version):
        notebook = json.loads((folder / f"{case}_{version}.ipynb").read_text(encoding="utf-8"))
        return [(c["cell_type"], "".join(c["source"]) if isinstance(c["source"], list) else c["source"],
                 c.get("execution_count") is not None) for c in notebook["cells"]]

    return cells("reproduced") != cells("fixed")


def test_the_reference_site_shows_the_numbers_of_evaluate(reference_site, reference_snapshot, crane_summary,
                                                          capsys):
    out, _, predictions = reference_site
    paths = [str(p) for p in predictions]
    for k, path in enumerate(paths, start=1):
        printed = _cli_json(capsys, path, "--source", str(reference_snapshot))
        assert (out / "evaluation" / f"set-{k}.json").read_text(encoding="utf-8") == printed
        report = json.loads(printed)
        check_scores(cells(out / "evaluation.html", "detection-scores")[f"set-{k}"], report)
        check_scores(cells(out / "evaluation" / f"set-{k}.html", "overall").get("", {}) or
                     _overall(out / "evaluation" / f"set-{k}.html"), report)
    qwen = json.loads((out / "evaluation" / "set-1.json").read_text(encoding="utf-8"))
    assert (round(qwen["precision"], 3), round(qwen["recall"], 3), round(qwen["f1"], 3)) == (0.724, 0.640, 0.679)
    compared = _cli_json(capsys, *paths, "--source", str(reference_snapshot))
    assert (out / "evaluation" / "comparison.json").read_text(encoding="utf-8") == compared
    for k, entry in enumerate(json.loads(compared)["sets"], start=1):
        check_scores(cells(out / "evaluation.html", "comparison-scores")[f"set-{k}"], entry)
    capsys.readouterr()
    assert main(["evaluate", "--judgments", str(crane_summary), "--format", "json"]) == 0
    judged = capsys.readouterr().out
    assert (out / "evaluation" / "judgments.json").read_text(encoding="utf-8") == judged
    rows = cells(out / "evaluation.html", "judged-scores")
    for k, (name, scores) in enumerate(json.loads(judged)["settings"].items(), start=1):
        check_scores(rows[f"judged-{k}"], scores)
        assert rows[f"judged-{k}"]["reasoning_wrong"] == str(scores["reasoning_wrong"]), name
    # the breakdowns of a set's page are evaluate --by's
    capsys.readouterr()
    assert main(["evaluate", paths[0], "--source", str(reference_snapshot), "--by", "stage",
                 "--format", "csv"]) == 0
    stages = {line.split(",")[0]: line.split(",") for line in capsys.readouterr().out.splitlines()[1:]}
    page = (out / "evaluation" / "set-1.html").read_text(encoding="utf-8")
    section = page[page.index('id="by-stage"'):]
    for stage, values in stages.items():
        if stage != "all":
            assert f"<tr><th>{stage}</th><td>{values[1]}</td>" in section, stage


def _overall(path: Path) -> dict[str, str]:
    text = path.read_text(encoding="utf-8")
    body = text[text.index('id="overall"'):]
    body = body[:body.index("</table>")]
    return {k: re.sub(r"<[^>]+>", "", v).strip()
            for k, v in re.findall(r'<td data-key="([^"]+)">(.*?)</td>', body, re.DOTALL)}


def test_the_site_shows_the_numbers_of_evaluate_for_the_other_layouts(tmp_path, reference_snapshot, qwen, mistral,
                                                                     crane_llm_dir, capsys):
    """JSON Lines, the CRANE-LLM judge's parsed labels, the JunoBench_construct tree and a
    static analyser's outputs: each set's numbers, and the sets side by side, are evaluate's."""
    from published_layouts import construct_tree

    from junobench.detection.layouts import read_predictions

    jsonl = tmp_path / "qwen.jsonl"
    read = read_predictions(qwen)
    jsonl.write_text("".join(json.dumps({"instance": i, "runs": runs}) + "\n" for i, runs in read.runs.items()),
                     encoding="utf-8")
    outputs = crane_llm_dir / "llms" / "llms_outputs"
    predictions = [jsonl, outputs / "results_parsed_1" / "gpt_5" / "crash_detection_code",
                   construct_tree(tmp_path / "construct", mistral),
                   crane_llm_dir / "sas" / "sas_outputs" / "results_raw" / "pylint" / "crash_detection_code"]
    out = tmp_path / "site"
    site(reference_snapshot, out, predictions)
    layouts = []
    for k, path in enumerate(predictions, start=1):
        printed = _cli_json(capsys, str(path), "--source", str(reference_snapshot))
        assert (out / "evaluation" / f"set-{k}.json").read_text(encoding="utf-8") == printed, path
        report = json.loads(printed)
        layouts.append(report["layout"])
        check_scores(cells(out / "evaluation.html", "detection-scores")[f"set-{k}"], report)
        check_scores(_overall(out / "evaluation" / f"set-{k}.html"), report)
    assert layouts == ["jsonl", "crane-parsed", "junobench-construct", "crane-sa"]
    compared = _cli_json(capsys, *map(str, predictions), "--source", str(reference_snapshot))
    assert (out / "evaluation" / "comparison.json").read_text(encoding="utf-8") == compared
    for k, entry in enumerate(json.loads(compared)["sets"], start=1):
        check_scores(cells(out / "evaluation.html", "comparison-scores")[f"set-{k}"], entry)


@pytest.mark.slow
def test_the_site_shows_the_numbers_of_evaluate_for_an_inspect_log(tmp_path, monkeypatch, capsys):
    """An Inspect log of the crash-detection task (run against the local chat server, a
    model wrong on some notebooks and some epochs): the site's numbers are evaluate's."""
    pytest.importorskip("inspect_ai", reason="reading Inspect logs needs the inspect extra")
    from chat_server import ChatServer, target_of
    from inspect_ai import eval as inspect_eval

    from junobench.inspect_tasks import crash_detection

    asked: dict[str, int] = {}

    def answer(body):
        user = body["messages"][-1]["content"]
        if "# Target Cell:" not in user:
            return "hello"
        number = asked[user] = asked.get(user, 0) + 1
        crash = len(target_of(body)) % 2 == 0  # right on some notebooks only
        if number == 2 and len(user) % 3 == 0:
            return "I cannot tell."  # an unparsable run
        return json.dumps({"reasoning": f"<b>run {number}</b>", "detection": crash})

    monkeypatch.setenv("INSPECT_DISPLAY", "none")
    with ChatServer(answer) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.url)
        monkeypatch.setenv("OPENAI_API_KEY", "test-key")
        (log,) = inspect_eval(crash_detection(source="sample", runs=3), model="openai/tiny",
                              log_dir=str(tmp_path / "logs"), display="none", **server.inspect_args)
    assert log.status == "success", log.error
    out = tmp_path / "site"
    site("sample", out, [log.location])
    printed = _cli_json(capsys, str(log.location), "--source", "sample")
    report = json.loads(printed)
    assert report["layout"] == "inspect" and report["unparsable"]["count"] > 0 and report["fn"] + report["fp"] > 0
    assert (out / "evaluation" / "set-1.json").read_text(encoding="utf-8") == printed
    check_scores(cells(out / "evaluation.html", "detection-scores")["set-1"], report)
    page = Page((out / "cases" / "pandas_1.html").read_text(encoding="utf-8"))
    assert "<b>run 1</b>" in " ".join(page.text)  # each epoch's reasoning, as text


def test_the_grid_lists_what_every_setting_misses(reference_site):
    out, _, _ = reference_site
    qwen = json.loads((out / "evaluation" / "set-1.json").read_text(encoding="utf-8"))
    page = (out / "grid.html").read_text(encoding="utf-8")
    # every grid cell links to its case page's detectors
    links = re.findall(r'<a class="gridcell" href="cases/([A-Za-z]+_\d+)\.html#det-(set-\d|judged-\d+)"', page)
    assert len(links) == 111 * (3 + 10)
    # set 1's column: as many misses as evaluate's false negatives
    column = re.findall(r'<td data-col="set-1">(.*?)</td>', page, re.DOTALL)
    assert sum(c.count('data-outcome="miss"') for c in column) == qwen["fn"]
    assert sum(c.count('data-outcome="false alarm"') for c in column) == qwen["fp"]
    missed = page[page.index("Missed by every setting"):]
    missed = missed[:missed.index("</p>")]
    for instance in re.findall(r">([A-Za-z]+_\d+_(?:reproduced|fixed))<", missed):
        for k in (1, 2, 3):
            cell = re.search(rf'{instance.rsplit("_", 1)[0]}\.html#det-set-{k}"[^>]*>(.*?)</a>', page, re.DOTALL)
            assert cell is not None


# --------------------------------------------------------------------------- the verbs


def test_site_verb_writes_the_site_and_says_where(tmp_path, capsys):
    assert main(["site", "--source", "sample", "--out", str(tmp_path / "s")]) == 0
    err = capsys.readouterr().err
    assert "wrote the site to" in err and (tmp_path / "s" / "index.html").is_file()
    assert main(["site", "--source", "sample", "--out", str(tmp_path / "s")]) == 0
    assert "0 pages rendered" in capsys.readouterr().err


def test_judgments_with_filters_are_refused_as_evaluate_refuses_them(tmp_path, capsys):
    judged = tmp_path / "judged.jsonl"
    judged.write_text('{"instance": "pandas_1_reproduced", "setting": "s", "judgment": "correct"}\n',
                      encoding="utf-8")
    assert main(["site", "--source", "sample", "--out", str(tmp_path / "s"), "--judgments", str(judged),
                 "--library", "pandas"]) == 1
    assert "filters do not apply to --judgments" in capsys.readouterr().err
    assert main(["site", "--source", "sample", "--out", str(tmp_path / "s"), "--judgments", str(judged)]) == 0
    assert "judged-1" in (tmp_path / "s" / "grid.html").read_text(encoding="utf-8")


def test_site_verb_names_bad_predictions(tmp_path, capsys):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"instance": "nope_1_reproduced", "runs": ["TRUE"]}\n', encoding="utf-8")
    assert main(["site", "--source", "sample", "--out", str(tmp_path / "s"), str(bad)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error:") and "nope_1_reproduced" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "s").exists()


def test_view_says_at_once_that_its_port_is_taken_or_not_a_port(tmp_path, capsys):
    import socket

    cache = tmp_path / "cache"
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        assert main(["view", "--source", "sample", "--port", str(port), "--no-open", "--cache-dir", str(cache)]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"error: cannot serve on 127.0.0.1:{port}") and "--port" in err
    assert len(err.strip().splitlines()) == 1
    assert not list(cache.rglob("index.html"))  # said before building anything
    for bad in ("70000", "-1"):
        assert main(["view", "--source", "sample", "--port", bad, "--no-open", "--cache-dir", str(cache)]) == 1
        err = capsys.readouterr().err
        assert err.startswith(f"error: {bad} is not a port number") and "Traceback" not in err


@pytest.mark.slow
@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_view_serves_the_sample_and_stops_on_ctrl_c(tmp_path, stop):
    env = dict(os.environ, JUNOBENCH_CACHE=str(tmp_path / "cache"))
    process = subprocess.Popen(
        [sys.executable, "-m", "junobench", "view", "--source", "sample", "--port", "0", "--no-open"],
        stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True, env=env)
    try:
        url = None
        lines = []
        for line in process.stderr:
            lines.append(line)
            found = re.search(r"serving (http://127\.0\.0\.1:\d+/index\.html)", line)
            if found:
                url = found.group(1)
                break
        assert url is not None, "".join(lines)
        with urllib.request.urlopen(url, timeout=30) as response:
            assert response.status == 200
            assert response.headers["Content-Security-Policy"] == CSP
            assert b"pandas_1" in response.read()
        with urllib.request.urlopen(url.replace("index.html", "cases/pandas_1.html"), timeout=30) as response:
            assert b"target cell" in response.read()
        process.send_signal(stop)
        rest = process.stderr.read()
        assert process.wait(timeout=60) == 0, rest
        assert "stopped" in rest and "Traceback" not in rest
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    with pytest.raises(OSError):
        urllib.request.urlopen(url, timeout=5)
