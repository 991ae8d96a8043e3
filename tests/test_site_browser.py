"""The site in a real browser: the distribution's Chromium, driven by Playwright.

Filters, sorting, a case's target cell and diff, a click from the evaluation grid to a
case; no console error on any page; a hostile notebook runs no script, changes nothing
and loads nothing. Without Chromium (or Playwright) these tests are skipped with the
reason, unless ``JUNOBENCH_REQUIRE_BROWSER=1`` (set by CI), where that is a failure.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

pytest.importorskip("nh3", reason="the site needs the site extra")

from site_hostile import CASE, hostile_judgments, hostile_predictions, hostile_snapshot

from junobench.site import site

#: How Chromium is started: headless, no sandbox (root in CI), nothing fetched in the
#: background (updates, sync, safe browsing lists).
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
        "--disable-sync", "--no-first-run", "--disable-default-apps", "--disable-extensions"]


def _chromium() -> str | None:
    wanted = os.environ.get("JUNOBENCH_CHROMIUM")
    if wanted:
        return wanted if Path(wanted).is_file() else None
    return next((p for p in ("/usr/bin/chromium", shutil.which("chromium") or "",
                             shutil.which("chromium-browser") or "") if p and Path(p).is_file()), None)


def _unavailable(reason: str) -> None:
    if os.environ.get("JUNOBENCH_REQUIRE_BROWSER") == "1":
        pytest.fail(f"{reason} (JUNOBENCH_REQUIRE_BROWSER=1: the browser tests must run here)")
    pytest.skip(reason)


@pytest.fixture(scope="module")
def browser():
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _unavailable("Playwright is not installed (pip install -e '.[test]')")
    executable = _chromium()
    if executable is None:
        _unavailable("Chromium is not installed (apt-get install chromium, or set JUNOBENCH_CHROMIUM)")
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=executable, headless=True, args=ARGS)
        yield chromium
        chromium.close()


class Tab:
    """A page that records console messages, page errors, dialogs and every request."""

    def __init__(self, browser, root: Path) -> None:
        self.context = browser.new_context(viewport={"width": 1300, "height": 900}, java_script_enabled=True)
        self.page = self.context.new_page()
        self.root = root
        self.errors: list[str] = []
        self.requests: list[str] = []
        self.page.on("console", lambda m: self.errors.append(f"console {m.type}: {m.text}")
                     if m.type in ("error", "warning") else None)
        self.page.on("pageerror", lambda e: self.errors.append(f"page error: {e}"))
        self.page.on("dialog", lambda d: (self.errors.append(f"dialog: {d.message}"), d.dismiss()))
        self.page.on("request", lambda r: self.requests.append(r.url))

    def open(self, path: str) -> None:
        path, _, fragment = path.partition("#")
        self.page.goto((self.root / path).as_uri() + (f"#{fragment}" if fragment else ""))

    def outside(self) -> list[str]:
        """Requests to anything but the site's own files."""
        base = self.root.as_uri() + "/"
        return [url for url in self.requests if not url.startswith(base)]

    def close(self) -> None:
        self.context.close()


@pytest.fixture
def tab(browser, request):
    opened: list[Tab] = []

    def make(root: Path) -> Tab:
        opened.append(Tab(browser, root))
        return opened[-1]

    yield make
    for t in opened:
        t.close()


@pytest.fixture(scope="module")
def sample_site(tmp_path_factory):
    from junobench.detection.detect import detect_static
    from junobench.detection.tasks import tasks, write_tasks

    folder = tmp_path_factory.mktemp("browser")
    items, truths = tasks("sample")
    write_tasks(items, truths, folder / "tasks.jsonl")
    detect_static(items, folder / "static.jsonl")
    out = folder / "site"
    site("sample", out, [folder / "static.jsonl"], truth=folder / "tasks.truth.jsonl", names=["static"])
    return out


def test_the_index_filters_sorts_and_counts(tab, sample_site):
    t = tab(sample_site)
    t.open("index.html")
    page = t.page
    rows = page.locator("#cases tbody tr")
    assert rows.count() == 10
    page.select_option('#filters select[data-field="library_label"]', "pandas")
    assert page.locator("#shown").inner_text() == "2"
    assert [r.inner_text().split()[0] for r in rows.all() if r.is_visible()] == ["pandas_1", "pandas_2"]
    assert "library_label=pandas" in page.url  # the filter is in the address: a link to it works
    page.fill("#filter-text", "append")
    assert page.locator("#shown").inner_text() == "1"
    page.click("#filter-reset")
    assert page.locator("#shown").inner_text() == "10"
    # a chart's bar filters by its value and the other charts count what is shown
    page.click('a.bar[data-field="root_cause"][data-value="data confusion"]')
    assert page.locator("#shown").inner_text() == "3"
    assert page.locator('a.bar[data-field="library_label"][data-value="pandas"] .bar-count').inner_text() == "1 / 2"
    page.click("#filter-reset")
    # sorting by exception, then back
    page.click("#cases thead th:nth-child(6)")
    exceptions = [r.locator("td:nth-child(6) code").inner_text() for r in rows.all()]
    assert exceptions == sorted(exceptions, key=str.lower)
    page.click("#cases thead th:nth-child(6)")
    assert [r.locator("td:nth-child(6) code").inner_text() for r in rows.all()] == sorted(
        exceptions, key=str.lower, reverse=True)
    # opening a link with a filter in it
    t.open("index.html#root_cause=API%20misuse")
    assert page.locator("#shown").inner_text() == "2"
    assert t.errors == [] and t.outside() == []


def test_a_case_shows_its_target_cell_and_what_the_fix_changed(tab, sample_site):
    t = tab(sample_site)
    t.open("index.html")
    page = t.page
    page.click("text=pandas_1")
    page.wait_for_url("**/cases/pandas_1.html")
    target = page.locator("#runs .side.left .cell.target")
    assert target.count() == 1 and target.is_visible()
    assert "target cell" in target.locator(".cell-head").inner_text()
    crash = target.locator(".line.crash")
    assert crash.count() == 1 and "survived" in crash.inner_text()
    assert "KeyError" in target.locator("pre.traceback").inner_text()
    # the fixed notebook beside it: the changed line, added on the right, removed on the left
    fixed = page.locator("#runs .side.right .cell.target")
    assert fixed.is_visible() and "Survived" in fixed.locator(".line.add").inner_text()
    assert "survived" in target.locator(".line.del").inner_text()
    assert target.bounding_box()["x"] < fixed.bounding_box()["x"]  # side by side
    # notebook order, then a permalink into the hidden view switches to it
    assert not page.locator("#cells").is_visible()
    page.click('.view-switch a[data-view="cells"]')
    assert page.locator("#cells").is_visible() and not page.locator("#runs").is_visible()
    assert page.locator("#cells .markdown h1").count() >= 1
    page.click('.view-switch a[data-view="runs"]')
    t.open("cases/pandas_1.html#f-cell-9")
    assert page.locator("#f-cell-9").is_visible() and "linked" in page.locator("#f-cell-9").get_attribute("class")
    page.check("#changes-only")
    assert page.locator("#cells .pair.status-same").first.is_hidden()
    assert page.locator("#cells .pair.status-changed").first.is_visible()
    page.click("a[rel=next] >> nth=0")
    page.wait_for_url("**/cases/pandas_2.html")
    assert t.errors == [] and t.outside() == []


def test_the_evaluation_grid_leads_to_the_case(tab, sample_site):
    t = tab(sample_site)
    t.open("evaluation.html")
    page = t.page
    assert page.locator("#detection-scores tr[data-set=set-1] td[data-key=f1]").inner_text().startswith("0.333")
    report = json.loads((sample_site / "evaluation" / "set-1.json").read_text(encoding="utf-8"))
    assert page.locator("#detection-scores tr[data-set=set-1] td[data-key=fn]").inner_text() == str(report["fn"])
    page.click("#detection-scores tr[data-set=set-1] td[data-key=fn] a")
    page.wait_for_url("**/grid.html#col=set-1&outcome=miss")
    shown = [r for r in page.locator("#grid tbody tr").all() if r.is_visible()]
    assert len(shown) == report["fn"] > 0  # a case per missed crash
    assert page.locator("#shown").inner_text() == str(report["fn"])
    assert "showing miss of static" in page.locator("#active-filter").inner_text()
    shown[0].locator("a.gridcell").click()
    page.wait_for_url("**/cases/*.html#det-set-1")
    row = page.locator("#det-set-1")
    assert row.is_visible() and "static" in row.inner_text() and "miss" in row.inner_text()
    page.locator("#det-set-1 details summary").first.click()
    assert page.locator("#det-set-1 .reasoning").first.is_visible()
    assert "Ground truth" in page.locator(".truth").inner_text()
    t.open("evaluation/set-1.html")
    assert page.locator("#by-library table").is_visible()
    assert t.errors == [] and t.outside() == []


@pytest.fixture(scope="module")
def hostile_site(tmp_path_factory):
    root = tmp_path_factory.mktemp("hostile-browser")
    out = root / "site"
    site(hostile_snapshot(root), out, [hostile_predictions(root / "hostile.jsonl")],
         names=["<img src=x onerror=\"window.pwned='name'\">"], judgments=hostile_judgments(root / "judged.jsonl"))
    return out


def test_a_hostile_notebook_runs_no_script_in_the_page(tab, hostile_site):
    for path in (f"cases/{CASE}.html", "index.html", "evaluation.html", "grid.html", "evaluation/set-1.html"):
        t = tab(hostile_site)
        t.open(path)
        page = t.page
        title = page.title()
        page.wait_for_load_state("load")
        if path.startswith("cases/"):
            # click every link a notebook wrote, in both views, and open the details
            for view in ("runs", "cells"):
                page.click(f'.view-switch a[data-view="{view}"]')
                for link in page.locator(f"#{view} .output a, #{view} .markdown a").all():
                    if link.is_visible():
                        link.click(no_wait_after=True)
            page.evaluate("document.querySelectorAll('details').forEach(d => d.open = true)")
        page.wait_for_timeout(300)
        assert page.evaluate("typeof window.pwned") == "undefined", path
        assert page.evaluate("document.querySelectorAll('[id=pwned], [name=pwned]').length") == 0, path
        assert page.title() == title != "pwned", path  # (a setting's name may hold the word, as text)
        assert page.url.startswith((hostile_site / path).as_uri()), path  # no redirect
        assert t.outside() == [], path
        assert t.errors == [], path  # not even a refused load: nothing tried
        t.close()


@pytest.fixture(scope="module")
def reference_site(tmp_path_factory, reference_snapshot, qwen, crane_summary):
    out = tmp_path_factory.mktemp("browser-reference") / "site"
    site(reference_snapshot, out, [qwen], judgments=crane_summary)
    return out


def test_every_reference_case_shows_its_target_cell_in_the_browser(tab, reference_site):
    t = tab(reference_site)
    t.open("index.html")
    page = t.page
    assert page.locator("#shown").inner_text() == "111"
    page.select_option('#filters select[data-field="library_label"]', "tensorflow/keras")
    assert page.locator("#shown").inner_text() == "15"
    cases = [a.get_attribute("href") for a in page.locator("#cases tbody tr td:first-child a").all()]
    assert len(cases) == 111
    for href in cases:
        t.open(href)
        target = page.locator("#runs .side.left .cell.target")
        assert target.count() == 1 and target.is_visible(), href
        assert page.locator("#fix-summary").is_visible(), href
        assert page.locator("#runs .side.right .cell.target").is_visible(), href  # the fixed one beside it
    assert t.errors == [] and t.outside() == []


def test_the_reference_grid_leads_from_a_judged_setting_to_the_case(tab, reference_site):
    t = tab(reference_site)
    t.open("evaluation.html")
    page = t.page
    assert page.locator("#judged-scores tr[data-set=judged-5] th").inner_text() == "gpt_5_crash_detection_code"
    assert page.locator("#judged-scores tr[data-set=judged-5] td[data-key=precision]").inner_text() == (
        "0.750 [0.667, 0.829]")  # CRANE-LLM's Table 2(a): GPT-5 without runtime information
    page.click("text=Grid")
    page.wait_for_url("**/grid.html")
    cell = page.locator('#grid td[data-col="judged-5"] a.gridcell').first
    cell.click()
    page.wait_for_url("**/cases/*.html#det-judged-5")
    assert page.locator("#det-judged-5").is_visible() and "(judged)" in page.locator("#det-judged-5").inner_text()
    assert t.errors == [] and t.outside() == []
