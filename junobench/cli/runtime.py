"""Verb ``runtime-info``: summarise the kernel state each target cell depends on."""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from typing import Any

from junobench.cli.common import (
    add_filters,
    add_run_options,
    add_source,
    executor_options,
    filters_from,
    interrupted_saying,
    report_stopped,
    sandbox_from,
    status,
)
from junobench.cli.signals import held
from junobench.errors import JunoBenchError


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "runtime-info", help="summarise the objects each target cell reads, from a kernel",
        description="For each notebook, in a fresh kernel working in a temporary copy of its "
        "case folder: run the executed cells in execution order, stop before the target cell "
        "(which never runs), and summarise the objects the target cell reads. Each field is "
        "tagged S (structure), R (representation) or V (values). Writes one JSON record per "
        "notebook; `junobench tasks --runtime-info FILE` puts them into the prompts.")
    parser.add_argument("cases", nargs="*", metavar="CASE",
                        help="case ids (default: every case of the snapshot)")
    add_source(parser)
    add_filters(parser)
    parser.add_argument("--version", choices=("reproduced", "fixed"), action="append",
                        dest="versions", help="only this version (repeatable; default: both)")
    parser.add_argument("--out", required=True, metavar="FILE.jsonl", help="records to write")
    parser.add_argument("--exclude", action="append", default=[], choices=("S", "R", "V"),
                        metavar="S|R|V", help="leave out a category of fields (repeatable): "
                        "S structure, R representation, V values")
    parser.add_argument("--jobs", "-j", type=int, default=None, metavar="N",
                        help="kernels running at once (default: number of cores)")
    parser.add_argument("--timeout", type=float, default=None, metavar="SEC",
                        help="time limit per cell run and for the inspection, in seconds "
                        "(default: 600)")
    parser.add_argument("--style", choices=("junobench", "crane"), default="junobench",
                        help="format of the summaries: junobench's fields tagged S/R/V "
                        "(default), or CRANE-LLM's (its field names, per-column semantic types, "
                        "execution_cell_source, __method__ entries; the prompt shows them as "
                        "CRANE-LLM did)")
    parser.add_argument("--signatures", action="store_true",
                        help="with --style crane: add callables' signatures (CRANE-LLM left "
                        "them out)")
    limits = parser.add_argument_group("size limits")
    limits.add_argument("--max-columns", type=int, metavar="N",
                        help="DataFrame columns described one by one (default: 20)")
    limits.add_argument("--max-object-chars", type=int, metavar="N",
                        help="JSON characters of one object's summary (default: 6000)")
    limits.add_argument("--max-notebook-chars", type=int, metavar="N",
                        help="JSON characters of all summaries of a notebook (default: 30000)")
    parser.add_argument("--fresh", action="store_true",
                        help="extract every notebook again, even those --out already has a record for")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    parser.add_argument("--format", choices=("text", "json"), default="text",
                        help="json: one document on stdout when the run ends, however it ends: every "
                        "notebook's status (ok, failed, skipped; interrupted or not run for a run "
                        "stopped early) and why the run stopped, if it did (default: status lines only)")
    add_run_options(parser)
    parser.set_defaults(handler=_runtime_info)


def _print_document(out: str, notebooks: dict[str, dict[str, Any]], stopped: str | None) -> None:
    """The ``--format json`` document, printed whole whatever signal comes meanwhile."""
    with held():
        print(json.dumps({"out": out, "notebooks": notebooks, "stopped": stopped}, indent=2, ensure_ascii=False),
              flush=True)


def _runtime_info(args: argparse.Namespace) -> int:
    from junobench.runtime import runtime_info
    from junobench.verify import DEFAULT_TIMEOUT

    options = {key: value for key, value in (("max_columns", args.max_columns),
                                             ("max_object_chars", args.max_object_chars),
                                             ("max_notebook_chars", args.max_notebook_chars))
               if value is not None}
    from junobench import vocab
    from junobench.verify.report import unfinished

    versions = args.versions or ("reproduced", "fixed")
    with interrupted_saying(f"{args.out} holds them"):
        try:
            records = runtime_info(
                args.cases or None, args.source, revision=args.revision, versions=versions, exclude=args.exclude,
                jobs=args.jobs, timeout=DEFAULT_TIMEOUT if args.timeout is None else args.timeout,
                options=options, filters=filters_from(args), out=args.out,
                progress=False if args.no_progress else None, env=args.env, executor=args.executor,
                executor_options=executor_options(args), resume=not args.fresh,
                pass_env=args.pass_env, style=args.style, signatures=args.signatures, sandbox=sandbox_from(args))
        except (KeyboardInterrupt, JunoBenchError) as stop:
            if args.format == "json":  # one stopped before it knew its notebooks: those named, not run
                why = "interrupted" if isinstance(stop, KeyboardInterrupt) else str(stop)
                state, problem = unfinished(why, began=False)
                named = {vocab.instance_id(case, version): {"status": state, "problem": problem}
                         for case in dict.fromkeys(args.cases) for version in dict.fromkeys(versions)}
                _print_document(args.out, getattr(stop, "states", named), why)
            raise
    if args.format == "json":
        _print_document(args.out, {r["instance"]: {"status": r["status"], "problem": r["problem"]} for r in records},
                        records.stopped)
    counts = Counter(r["status"] for r in records)
    capped = [r["instance"] for r in records
              if r["capped"] or any("truncated" in s for s in (r["objects"] or {}).values())]
    status(f"wrote {len(records)} records to {args.out}: "
           + ", ".join(f"{n} {s}" for s, n in counts.items()))
    if capped:
        print(f"size cap hit in {len(capped)}: {', '.join(capped)}", file=sys.stderr)
    for record in records:
        if record["status"] == "failed":
            print(f"{record['instance']}: {record['problem']}", file=sys.stderr)
        if record["imported_by_inspection"]:
            print(f"{record['instance']}: the inspection imported "
                  f"{', '.join(record['imported_by_inspection'])}", file=sys.stderr)
    if report_stopped(records.stopped, f"{args.out} holds every notebook"):
        return 1
    return 1 if counts.get("failed") else 0
