"""Look at the benchmark: list cases (``ls``), show one case (``show``), build records.

>>> [row["case_id"] for row in ls("sample", library="pandas")]
['pandas_1', 'pandas_2']
>>> print(format_case(show("pandas_1", "sample")))  # doctest: +ELLIPSIS
pandas_1  (pandas)
...
Crash: KeyError: 'Column not found: survived', line 1 of the target cell
...
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from junobench.data.filters import apply_filters, normalise_filters
from junobench.data.report import BuildReport
from junobench.data.snapshot import DEFAULT_SOURCE, resolve
from junobench.errors import JunoBenchError
from junobench.loader import load, load_rows
from junobench.safety.text import first_line, printable

#: Columns of ``ls``'s table and CSV, in order (every one a ``cases`` field).
LS_COLUMNS: tuple[str, ...] = (
    "case_id", "library", "root_cause", "crash_type", "pipeline_stage", "exception", "source",
)
#: Fields of each ``ls`` row (its JSON output): the columns plus the case's requirements.
LS_FIELDS: tuple[str, ...] = (*LS_COLUMNS, "requirements")
_NOTEBOOK_TEXT = ("original", "reproduced", "fixed")


def ls(source: str | Path = DEFAULT_SOURCE, *, revision: str | None = None,
       skip_invalid: bool = False, datasets: bool = False, **filters: Any) -> list[dict[str, Any]]:
    """One dict per case (the :data:`LS_FIELDS`), in case order (library, number), filtered;
    with ``datasets``, also ``datasets``: each input dataset as ``title [licence]``."""
    columns = [*LS_FIELDS, "datasets"] if datasets else list(LS_FIELDS)
    rows = load_rows(source, "cases", columns, revision=revision, skip_invalid=skip_invalid, **filters)
    if not datasets:
        return rows
    for row in rows:
        row["datasets"] = [f"{d['title']} [{d['license'] or 'licence unknown'}]"
                           for d in row["datasets"] or ()]
    return rows


def show(case_id: str, source: str | Path = DEFAULT_SOURCE, *, revision: str | None = None,
         skip_invalid: bool = False) -> dict[str, Any]:
    """The whole ``cases`` record of one case."""
    cases = load(source, "cases", revision=revision, skip_invalid=skip_invalid)
    ids = cases["case_id"]
    if case_id not in ids:
        import difflib

        close = difflib.get_close_matches(case_id, list(ids), n=3)
        raise JunoBenchError(f"no case {case_id!r} in this snapshot", case=case_id,
                             hint=f"did you mean {', '.join(close)}?" if close else
                             "list the cases with `junobench ls`")
    record: dict[str, Any] = cases[list(ids).index(case_id)]
    return record


@dataclass
class BuildSummary:
    """What ``junobench build`` prepared."""

    snapshot: Path
    cases: int
    notebooks: int
    cache_files: list[str]
    report: BuildReport


def build_records(source: str | Path = DEFAULT_SOURCE, *, revision: str | None = None,
                  skip_invalid: bool = False, cache_dir: str | Path | None = None,
                  **filters: Any) -> BuildSummary:
    """Prepare both configs of a snapshot (reusing the cache when it is current)."""
    from junobench.data.build import prepare

    criteria = normalise_filters(filters)
    root = resolve(source, revision=revision)
    built, report = prepare(root, skip_invalid=skip_invalid, cache_dir=cache_dir)
    cases, notebooks = (apply_filters(built[c], criteria) for c in ("cases", "notebooks"))
    files = [f["filename"] for ds in (cases, notebooks) for f in ds.cache_files]
    return BuildSummary(root, len(cases), len(notebooks), files, report)


def format_case(case: dict[str, Any]) -> str:
    """A readable text view of a ``cases`` record."""
    out: list[str] = [f"{case['case_id']}  ({case['library_label']})", ""]
    labels = [
        ("root cause", case["root_cause"]), ("crash type", case["crash_type"]),
        ("pipeline stage", case["pipeline_stage"]), ("bug kind", case["ml_bug"]),
        ("source", case["source"]), ("notebook", case["notebook_url"]),
    ]
    out += [f"  {name:<15} {printable(value, keep='')}" for name, value in labels if value]
    line = f", line {case['crash_line']} of the target cell" if case["crash_line"] else ""
    out += ["", f"Crash: {case['exception']}: {first_line(case['evalue'])}{line}"]
    if case["diagnosis"]:
        out += ["", "Diagnosis:", *textwrap.wrap(case["diagnosis"], 88, initial_indent="  ",
                                                 subsequent_indent="  ")]
    out += ["", "Input datasets:"]
    if not case["datasets"]:
        out.append("  (none recorded)")
    for d in case["datasets"]:
        mods = f"; {', '.join(d['modifications'])}" if d["modifications"] else ""
        files = f"; files: {', '.join(d['files'])}" if d["files"] else "; files not in snapshot"
        out.append(printable(f"  - {d['title']} [{d['license'] or 'licence unknown'}{mods}]", keep=""))
        out.append(printable(f"    {d['url'] or 'no URL'}{files}", keep=""))
    out += ["", "Requirements (pinned by the snapshot's environment):"]
    out.append(textwrap.fill(", ".join(case["requirements"]), 88, initial_indent="  ",
                             subsequent_indent="  ") if case.get("requirements") else "  (none)")
    missing = [v for v in _NOTEBOOK_TEXT if case.get(v) is None]
    if missing:
        out += ["", f"Notebooks not in snapshot: {', '.join(missing)}"]
    out += ["", "Execution order of the reproduced notebook (the last run crashes):"]
    out += _runs(case["execution_order"]["reproduced"])
    fixed_target = case["execution_order"]["fixed"][-1]
    out += ["", f"Target cell in the fixed notebook (code cell {fixed_target['code_cell_index']}):"]
    out += [textwrap.indent(fixed_target["source"] or "(empty)", "    ")]
    return "\n".join(out) + "\n"


def _runs(runs: list[dict[str, Any]]) -> list[str]:
    lines = []
    for step, run in enumerate(runs, start=1):
        count = run["execution_count"]
        label = f"In [{count}]" if count is not None else "earlier run, count not recorded"
        target = "  <- target" if step == len(runs) else ""
        lines.append(f"  {step:>3}. code cell {run['code_cell_index']} ({label}){target}")
        lines.append(textwrap.indent(run["source"].rstrip() or "(empty)", "       "))
    return lines


def public_record(case: dict[str, Any], *, with_notebooks: bool = False) -> dict[str, Any]:
    """A case record for JSON output; the notebook texts only when asked for."""
    if with_notebooks:
        return dict(case)
    return {k: v for k, v in case.items() if k not in _NOTEBOOK_TEXT} | {
        f"has_{v}": case[v] is not None for v in _NOTEBOOK_TEXT
    }
