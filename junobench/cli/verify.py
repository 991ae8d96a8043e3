"""Verbs ``checkout`` and ``verify``: copy cases into a new snapshot; run and judge them."""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING

from junobench.cli.common import (
    add_filters,
    add_run_options,
    add_source,
    executor_options,
    filters_from,
    report_stopped,
    sandbox_from,
    status,
    step_lines,
)
from junobench.cli.signals import held
from junobench.errors import JunoBenchError
from junobench.render import render

if TYPE_CHECKING:
    from junobench.verify.report import VerifyReport


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "checkout", help="copy cases into a new snapshot directory",
        description="Copy cases (notebooks, input data, dataset metadata and their rows of "
        "both tables) into a new snapshot at DIR, to edit or verify on their own.")
    parser.add_argument("cases", nargs="+", metavar="CASE", help="case ids, e.g. pandas_1")
    add_source(parser)
    parser.add_argument("--dest", required=True, metavar="DIR",
                        help="new snapshot directory (must not exist or be empty)")
    parser.add_argument("--env", metavar="ENV_DIR", default=None,
                        help="also make (or reuse) the cases' pinned environment there, as "
                        "`junobench env create ENV_DIR --source DIR` does")
    parser.add_argument("--python", metavar="PY", help="with --env: a Python version or interpreter")
    parser.add_argument("--no-progress", action="store_true",
                        help="with --env: no step lines (shown on a terminal only)")
    parser.set_defaults(handler=_checkout)

    parser = subparsers.add_parser(
        "verify", help="run cases: the reproduced notebook must crash, the fixed one not",
        description="For each case, in a fresh kernel working in a temporary copy of the case "
        "folder: replay the reproduced notebook's recorded order and require the recorded "
        "exception at the target cell; replay the fixed notebook and require every cell to "
        "succeed. Exit status 0 only when every case passes.")
    parser.add_argument("cases", nargs="*", metavar="CASE",
                        help="case ids (default: every case of the snapshot)")
    add_source(parser)
    add_filters(parser)
    parser.add_argument("--jobs", "-j", type=int, default=None, metavar="N",
                        help="kernels running at once (default: number of cores)")
    parser.add_argument("--timeout", type=float, default=None, metavar="SEC",
                        help="time limit per cell run, in seconds (default: 600)")
    parser.add_argument("--report", metavar="FILE", help="write the verdicts as JSON to FILE")
    parser.add_argument("--format", choices=("table", "json", "csv"), default="table",
                        help="verdicts on stdout (default: table)")
    parser.add_argument("--fresh", action="store_true",
                        help="run every case again, even those --report already has a verdict for")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    parser.add_argument("--keep-outputs", metavar="DIR",
                        help="save each replayed notebook with its outputs as DIR/<case>/<case>_<version>.ipynb")
    parser.add_argument("--record", action="store_true",
                        help="record each verdict in the case's provenance (benchmark/<case>/provenance.json "
                             "of a local snapshot): verified when it passes, where and with which versions")
    add_run_options(parser)
    parser.set_defaults(handler=_verify)


def _checkout(args: argparse.Namespace) -> int:
    from junobench.data.checkout import checkout

    dest = checkout(args.cases, args.source, args.dest, revision=args.revision)
    status(f"checked out {len(set(args.cases))} case(s) into {dest}")
    if args.env is not None:
        from junobench.envs.create import create_environment
        from junobench.selection import select

        made = create_environment(args.env, select(dest), python=args.python, progress=step_lines(args))
        if made.python_note:
            print(f"note: {made.python_note}", file=sys.stderr)
        status(f"{'reused' if made.reused else 'created'} environment {made.path} "
               f"({len(made.requirements)} requirements); verify with "
               f"`junobench verify --source {dest} --env {made.path}`")
    return 0


def _verify(args: argparse.Namespace) -> int:
    try:
        from junobench.verify import DEFAULT_TIMEOUT, verify

        if args.record:  # refused before any notebook runs
            from junobench.construct.transaction import editable_root

            editable_root(args.source)
        report = verify(
            args.cases or None, args.source, revision=args.revision, jobs=args.jobs,
            timeout=DEFAULT_TIMEOUT if args.timeout is None else args.timeout,
            report=args.report, progress=False if args.no_progress else None,
            filters=filters_from(args), env=args.env, executor=args.executor,
            executor_options=executor_options(args), resume=not args.fresh,
            pass_env=args.pass_env, sandbox=sandbox_from(args), keep_outputs=args.keep_outputs,
        )
    except (KeyboardInterrupt, JunoBenchError) as stop:
        # A run stopped early (report.Interrupted, report.RunFailed) shows every case, those
        # it did not finish as such, then says why; one stopped before it knew its cases
        # shows none (--format json: a document of the cases named, not run).
        stopped: VerifyReport | None = getattr(stop, "report", None)
        if stopped is not None:
            _show(stopped, args)
        elif args.format == "json":
            with held():
                print(json.dumps(_named_not_run(args.cases, str(stop) or "interrupted").to_json(), indent=2,
                                 ensure_ascii=False), flush=True)
        if stopped is not None and isinstance(stop, KeyboardInterrupt):
            raise KeyboardInterrupt(_unfinished(stopped, args)) from None
        raise
    _show(report, args)
    if args.record:
        from junobench.construct.provenance import record_verification

        recorded = record_verification(args.source, report)
        status(f"recorded in the provenance of {len(recorded)} case(s): " + ", ".join(recorded))
    if report_stopped(report.stopped, "the report holds every case"):
        return 1
    return 0 if report.ok else 1


def _show(report: VerifyReport, args: argparse.Namespace) -> None:
    """The verdicts on stdout in ``--format`` (a JSON document printed whole, whatever
    signal comes meanwhile), the summary on stderr."""
    from junobench.verify.report import TABLE_COLUMNS

    with held():
        if args.format == "json":
            print(json.dumps(report.to_json(), indent=2, ensure_ascii=False), flush=True)
        else:
            print(render(report.rows(), args.format, TABLE_COLUMNS), end="", flush=True)
        print(report.summary(), file=sys.stderr)


def _named_not_run(cases: list[str], why: str) -> VerifyReport:
    """The report of a run stopped (``why``) before it knew its cases: those named, not run."""
    from junobench.verify.report import CaseResult, VerifyReport, unfinished

    left = [CaseResult.left(case, *unfinished(why, began=False)) for case in dict.fromkeys(cases)]
    return VerifyReport(left, stopped=why)


def _unfinished(report: VerifyReport, args: argparse.Namespace) -> str:
    """``2 of 4 cases done; r.json holds every case; run the same command again to resume``."""
    from junobench.verify.report import INTERRUPTED, NOT_RUN

    counts = report.counts()
    done = len(report.cases) - counts.get(INTERRUPTED, 0) - counts.get(NOT_RUN, 0)
    text = f"{done} of {len(report.cases)} cases done"
    if args.report:
        text += f"; {args.report} holds every case; run the same command again to resume"
    return text
