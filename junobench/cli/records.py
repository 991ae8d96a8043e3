"""Verbs ``ls``, ``show`` and ``build``: look at the records of a snapshot."""

from __future__ import annotations

import argparse
import json

from junobench.cli.common import add_filters, add_format, add_skip_invalid, add_source, load_kwargs, status
from junobench.render import render


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser("ls", help="list cases, filtered by label",
                                   description="List the cases of a snapshot.")
    add_source(parser)
    add_filters(parser)
    add_format(parser)
    add_skip_invalid(parser)
    parser.add_argument("--datasets", action="store_true",
                        help="add a column with each case's input datasets and licences")
    parser.set_defaults(handler=_ls)

    parser = subparsers.add_parser("show", help="show one case: labels, crash, order, datasets",
                                   description="Show one case in full.")
    parser.add_argument("case", help="case id, e.g. torch_7")
    add_source(parser)
    add_skip_invalid(parser)
    parser.add_argument("--format", choices=("text", "json"), default="text")
    parser.add_argument("--notebooks", action="store_true",
                        help="with --format json: include the notebook JSON texts")
    parser.set_defaults(handler=_show)

    parser = subparsers.add_parser("build", help="prepare the records (both configs) and report",
                                   description="Build and cache the cases and notebooks records "
                                   "of a snapshot; report skipped cases and absences.")
    add_source(parser)
    add_filters(parser)
    add_skip_invalid(parser)
    parser.set_defaults(handler=_build)


def _ls(args: argparse.Namespace) -> int:
    from junobench.browse import LS_COLUMNS, ls

    rows = ls(**load_kwargs(args), datasets=args.datasets)
    columns = [*LS_COLUMNS, "datasets"] if args.datasets else LS_COLUMNS
    print(render(rows, args.format, columns), end="")
    return 0


def _show(args: argparse.Namespace) -> int:
    from junobench.browse import format_case, public_record, show

    kwargs = load_kwargs(args)
    case = show(args.case, kwargs.pop("source"), **kwargs)
    if args.format == "json":
        print(json.dumps(public_record(case, with_notebooks=args.notebooks), indent=2,
                         ensure_ascii=False))
    else:
        print(format_case(case), end="")
    return 0


def _build(args: argparse.Namespace) -> int:
    from junobench.browse import build_records

    summary = build_records(**load_kwargs(args))
    status(f"snapshot   {summary.snapshot}")
    status(f"cases      {summary.cases}")
    status(f"notebooks  {summary.notebooks}")
    status(f"cache      {sorted({f.rsplit('/', 3)[0] for f in summary.cache_files})[0]}"
           if summary.cache_files else "cache      (empty)")
    for line in summary.report.summary():
        status(f"note       {line}")
    return 0
