"""Verb ``stats``: label distributions, cross-tabulations by library, licences; plots."""

from __future__ import annotations

import argparse
import json

from junobench.cli.common import add_filters, add_skip_invalid, add_source, load_kwargs, status
from junobench.render import render


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "stats", help="label distributions, by-library cross-tabs, licences; plots",
        description="Count the cases by library cause, root cause, crash type and ML pipeline "
        "stage (and source, exception class, input-data licence and modification), with root "
        "cause and pipeline stage cross-tabulated by library. --plot DIR draws a bar chart per "
        "dimension as PNG and SVG (needs the plot extra).")
    add_source(parser)
    add_filters(parser)
    parser.add_argument("--format", choices=("table", "json", "csv"), default=None,
                        help="output format (default: table; with --plot: none, the files written "
                        "listed on stderr)")
    parser.add_argument("--plot", metavar="DIR", default=None,
                        help="write <dimension>.png and <dimension>.svg for the four dimensions into DIR")
    add_skip_invalid(parser)
    parser.set_defaults(handler=_stats)


def _stats(args: argparse.Namespace) -> int:
    from junobench.data.snapshot import refuse_writing_inside
    from junobench.stats import stats

    if args.plot:
        refuse_writing_inside(args.plot, args.source, what="the plot directory")
    result = stats(**load_kwargs(args))
    fmt = args.format or (None if args.plot else "table")
    if fmt == "json":
        print(json.dumps(result.to_dict(), indent=2, ensure_ascii=False))
    elif fmt == "csv":
        print(render(result.rows(), "csv", ("statistic", "value", "library", "count")), end="")
    elif fmt == "table":
        print(result.to_text(), end="")
    if args.plot:
        from junobench.plots import save_plots

        for path in save_plots(result, args.plot):
            status(f"wrote {path}")
    return 0
