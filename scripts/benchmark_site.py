"""Benchmark: ``junobench site`` on the reference snapshot (111 cases, 222 notebooks) with
three prediction sets and CRANE-LLM's judgments, as a user builds it.

In one run, with the records cache warm (one load first):

- a cold build into a new folder (wall and CPU seconds; the load step and the scoring and
  pages step beside it), in this process and as ``junobench site`` in a new one (imports
  included) — the target is under 30 s on 2 cores;
- the same build again, nothing changed (every page reused);
- after one case's notebook changes (in a copy of the snapshot): how many pages are
  rendered again, and the time;
- the largest page and the site's size;
- the alternative: nbconvert's own HTML exporter (its ``lab`` template) on the same 222
  notebooks, each notebook once, without the diff, the evaluation or the sanitizing;
- in Chromium (the system's, through Playwright, when both are there): the index's 111
  rows filtered by a label, by free text, and sorted, timed in the page from the event to
  the page laid out again, beside the floor (the same rows only hidden and shown again,
  laid out) and a frame at 60 Hz (16.7 ms).

Prints the figures and the ratios. Usage::

    python scripts/benchmark_site.py [--reference DIR] [--repeat 3] [--no-alternative]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from reference import reference_dir

from junobench.site import site
from junobench.site.cells import _highlighted


def timed(function, *args, **kwargs):
    wall, cpu = time.perf_counter(), time.process_time()
    result = function(*args, **kwargs)
    return result, time.perf_counter() - wall, time.process_time() - cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--reference", type=Path, default=reference_dir())
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--no-alternative", action="store_true", help="skip nbconvert's exporter")
    args = parser.parse_args()
    reference = args.reference
    snapshot = reference / "junobench-snapshot"
    predictions = [reference / "llm_outputs" / "qwen_2_5_32b_instruct" / "code",
                   reference / "llm_outputs" / "mistral_small_3_1",
                   reference / "crane_llm" / "llms" / "llms_outputs" / "results_raw" / "Qwen_2_5_32B_Instruct"
                   / "crash_detection_code_runinfo"]
    judgments = reference / "crane_llm" / "results" / "results_summary.xlsx"
    work = Path(tempfile.mkdtemp(prefix="junobench-benchmark-site-"))
    try:
        from junobench.loader import load

        load(snapshot, "cases")  # the records cache, warm
        cold, warm = [], []
        for k in range(args.repeat):
            out = work / f"cold-{k}"
            _highlighted.cache_clear()  # cold: no highlighted code kept from the last build
            summary, wall, cpu = timed(site, snapshot, out, predictions, judgments=judgments)
            cold.append((wall, cpu, summary.timings))
            _, wall, cpu = timed(site, snapshot, out, predictions, judgments=judgments)
            warm.append((wall, cpu))
        largest = max(out.rglob("*.html"), key=lambda p: p.stat().st_size)
        largest_size = largest.stat().st_size
        total = sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
        copy = work / "snapshot"
        shutil.copytree(snapshot, copy)
        for path in [copy, *copy.rglob("*")]:
            path.chmod(0o755 if path.is_dir() else 0o644)
        site(copy, work / "edited", predictions, judgments=judgments)
        notebook = copy / "benchmark" / "torch_7" / "torch_7_fixed.ipynb"
        data = json.loads(notebook.read_text(encoding="utf-8"))
        data["cells"].append({"cell_type": "markdown", "metadata": {}, "source": "an edit"})
        notebook.write_text(json.dumps(data), encoding="utf-8")
        edited, edit_wall, edit_cpu = timed(site, copy, work / "edited", predictions, judgments=judgments)
        command = [sys.executable, "-m", "junobench", "site", "--source", str(snapshot), "--out",
                   str(work / "process"), *map(str, predictions), "--judgments", str(judgments)]
        start = time.perf_counter()
        subprocess.run(command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        process = time.perf_counter() - start
        alternative = None if args.no_alternative else nbconvert_alternative(snapshot)
        browser = index_in_browser(out)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    wall = statistics.median(w for w, _, _ in cold)
    cpu = statistics.median(c for _, c, _ in cold)
    load_s = statistics.median(t["load"] for _, _, t in cold)
    pages_s = statistics.median(t["pages"] for _, _, t in cold)
    warm_wall = statistics.median(w for w, _ in warm)
    print(f"reference snapshot: 111 cases, 222 notebooks; 3 prediction sets; {len(summary.files)} files; "
          f"{os.cpu_count()} cores; median of {args.repeat}")
    print(f"cold build           {wall:6.2f} s wall  {cpu:6.2f} s CPU   (target < 30 s on 2 cores)")
    print(f"  load, read         {load_s:6.2f} s   (records cache warm; predictions and judgments read)")
    print(f"  score and render   {pages_s:6.2f} s   ({len(summary.rendered)} pages; intervals drawn here)")
    print(f"junobench site, a new process (imports included): {process:6.2f} s wall")
    print(f"rebuild, unchanged   {warm_wall:6.2f} s wall   {wall / warm_wall:.1f}x faster than cold")
    print(f"rebuild, one case    {edit_wall:6.2f} s wall  {edit_cpu:6.2f} s CPU   rendered: "
          f"{', '.join(edited.rendered)}")
    print(f"largest page         {largest_size / 1e6:6.3f} MB ({largest.name}; limit 1 MB)")
    print(f"site                 {total / 1e6:6.2f} MB")
    if alternative is not None:
        seconds, notebooks = alternative
        print(f"nbconvert HTMLExporter, {notebooks} notebooks once each: {seconds:6.2f} s wall; "
              f"the whole site (4 views of each notebook pair, evaluation) takes {wall / seconds:.2f}x that")
    if browser is None:
        print("index in a browser: skipped (Playwright or /usr/bin/chromium missing)")
    else:
        floor = browser.pop("floor")
        for name, ms in browser.items():
            print(f"index, 111 rows, {name:<12} {ms:6.2f} ms in the page   {ms / floor:5.1f}x the floor "
                  f"({floor:.2f} ms: the rows hidden and shown)   {ms / (1000 / 60):5.2f} frames at 60 Hz")


#: In the page: each action's time from the event to the page laid out again (reading
#: ``offsetHeight`` forces the layout the browser would do before the next frame; median
#: of 25).
_TIMING_SCRIPT = """() => {
  const median = (xs) => xs.sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  const time = (act) => { const xs = []; for (let k = 0; k < 25; k++) { const t = performance.now();
    act(k); void document.body.offsetHeight; xs.push(performance.now() - t); } return median(xs); };
  const select = document.querySelector('#filters select[data-field="library_label"]');
  const text = document.getElementById("filter-text");
  const rows = Array.from(document.querySelectorAll("#cases tbody tr"));
  const values = Array.from(select.options).map((o) => o.value);
  const out = {};
  out["label filter"] = time((k) => { select.value = values[k % values.length];
    select.dispatchEvent(new Event("change")); });
  select.value = ""; select.dispatchEvent(new Event("change"));
  out["text filter"] = time((k) => { text.value = k % 2 ? "error" : "pandas";
    text.dispatchEvent(new Event("input")); });
  text.value = ""; text.dispatchEvent(new Event("input"));
  const header = document.querySelector("#cases thead th:nth-child(6)");
  out["sort"] = time(() => header.click());
  out["floor"] = time((k) => { rows.forEach((row, i) => { row.hidden = (i + k) % 2 === 0; }); });
  return out;
}"""


def index_in_browser(site_dir: Path) -> dict[str, float] | None:
    """The index's filters and sorting timed in Chromium (None without a browser)."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        return None
    if not Path("/usr/bin/chromium").is_file():
        return None
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path="/usr/bin/chromium", headless=True,
                                             args=["--no-sandbox", "--disable-gpu"])
        try:
            page = browser.new_page()
            page.goto((site_dir / "index.html").as_uri())
            page.wait_for_load_state("load")
            timings: dict[str, float] = page.evaluate(_TIMING_SCRIPT)
        finally:
            browser.close()
    return timings


def nbconvert_alternative(snapshot: Path) -> tuple[float, int]:
    """nbconvert's HTML exporter on every reproduced and fixed notebook (wall seconds)."""
    import nbformat
    from nbconvert import HTMLExporter

    exporter = HTMLExporter(template_name="lab")
    paths = sorted(snapshot.glob("benchmark/*/*_reproduced.ipynb")) + sorted(
        snapshot.glob("benchmark/*/*_fixed.ipynb"))
    start = time.perf_counter()
    for path in paths:
        exporter.from_notebook_node(nbformat.read(path, as_version=4))
    return time.perf_counter() - start, len(paths)


if __name__ == "__main__":
    main()
