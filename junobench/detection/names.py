"""The names and defaults of crash-detection options: report formats, breakdowns,
prediction layouts (with a line on each), the runs per notebook and the bootstrap's
defaults, defined once here.

This module imports nothing, so that the CLI can offer them as ``choices`` and name them
in help texts without loading the scoring code (numpy, the readers).

>>> LAYOUTS[0], describe(CANONICAL)
('jsonl', 'JSON Lines: {"instance": ..., "runs": [...]} per line')
"""

from __future__ import annotations

#: Output formats of a report, a comparison and end-to-end scores.
FORMATS: tuple[str, ...] = ("table", "json", "csv", "markdown", "latex")

#: Breakdown name → (record field it groups by, column title).
BREAKDOWNS: dict[str, tuple[str, str]] = {
    "library": ("library_label", "library"),
    "root-cause": ("root_cause", "root cause"),
    "crash-type": ("crash_type", "crash type"),
    "stage": ("pipeline_stage", "pipeline stage"),
}

#: Answers asked per notebook (the papers asked each model 5 times).
DEFAULT_RUNS = 5

#: Case bootstraps behind each interval, and the seed that makes them repeatable.
DEFAULT_RESAMPLES = 2000
DEFAULT_SEED = 0

#: Layout name of the canonical format, as reported to the user.
CANONICAL = "jsonl"
INSTANCES = "instances"
CRANE_PARSED = "crane-parsed"
CONSTRUCT = "junobench-construct"
CASE_FOLDERS = "buggy/fixed"
INSPECT = "inspect"
#: The layout of CRANE-LLM's published analyser outputs.
CRANE_SA = "crane-sa"
#: Every layout, in the order ``--layout`` lists them.
LAYOUTS: tuple[str, ...] = (CANONICAL, INSTANCES, CRANE_PARSED, CONSTRUCT, CASE_FOLDERS, INSPECT,
                            CRANE_SA)

_DESCRIPTIONS: dict[str, str] = {
    CANONICAL: 'JSON Lines: {"instance": ..., "runs": [...]} per line',
    INSTANCES: "folder of <instance>.json (and other/<instance>.json): CRANE-LLM results_raw",
    CRANE_PARSED: "folder of <instance>.json with judge labels: CRANE-LLM results_parsed_<k>",
    CONSTRUCT: "results_buggy/ and results_fixed/ of crash_detection_results_<case>.json: "
               "JunoBench_construct",
    CASE_FOLDERS: "buggy/ and fixed/ folders of <case>.json",
    INSPECT: "an Inspect log (.eval or .json) of junobench/crash_detection",
    CRANE_SA: "<library>/<instance>.json lists of pylint or pyright messages: CRANE-LLM "
              "sas_outputs/results_raw/<analyser>/<setting>",
}


def describe(layout: str) -> str:
    """One line on a layout, for help texts."""
    return _DESCRIPTIONS[layout]
