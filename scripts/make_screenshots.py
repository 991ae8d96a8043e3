"""Regenerate the site's screenshots in docs/ (PNG), with the distribution's Chromium.

- ``docs/site_index.png``: the front page of the reference snapshot's site (111 cases);
- ``docs/site_case.png``: a case page (the bundled sample's ``pandas_1``: its notebooks
  carry outputs), scrolled to the notebooks side by side;
- ``docs/site_evaluation.png``: the evaluation page of the reference site with the Qwen
  and Mistral predictions and CRANE-LLM's judgments.

Usage::

    python scripts/make_screenshots.py [--reference DIR] [--chromium /usr/bin/chromium]
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
from pathlib import Path

from reference import REPO, reference_dir

from junobench.site import site

ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
        "--disable-sync", "--no-first-run", "--hide-scrollbars"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--reference", type=Path, default=reference_dir())
    parser.add_argument("--chromium", default="/usr/bin/chromium")
    parser.add_argument("--out", type=Path, default=REPO / "docs")
    args = parser.parse_args()
    os.chdir(REPO)  # the pages name the snapshot as given: relative to the checkout
    reference = Path(os.path.relpath(args.reference.absolute(), REPO))
    work = Path(tempfile.mkdtemp(prefix="junobench-screenshots-"))
    try:
        full = work / "reference"
        site(reference / "junobench-snapshot", full,
             [reference / "llm_outputs" / "qwen_2_5_32b_instruct" / "code",
              reference / "llm_outputs" / "mistral_small_3_1"],
             names=["qwen2.5-coder-32b (code)", "mistral-small-3.1"],
             judgments=reference / "crane_llm" / "results" / "results_summary.xlsx")
        sample = work / "sample"
        site("sample", sample)
        from playwright.sync_api import sync_playwright

        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=args.chromium, headless=True, args=ARGS)
            page = browser.new_page(viewport={"width": 1280, "height": 860}, device_scale_factor=1)
            # (page, element shown at the top: the case's target cell, changed by the fix)
            shots = [(full / "index.html", None, "site_index.png"),
                     (sample / "cases" / "pandas_1.html", "#runs .pair.status-changed", "site_case.png"),
                     (full / "evaluation.html", None, "site_evaluation.png")]
            for path, element, name in shots:
                page.goto(path.absolute().as_uri())
                page.wait_for_load_state("load")
                if element:
                    page.evaluate("(s) => { document.querySelector(s).scrollIntoView(); window.scrollBy(0, -140); }",
                                  element)
                page.screenshot(path=str(args.out / name))
                print(f"wrote {args.out / name}")
            browser.close()
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
