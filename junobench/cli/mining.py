"""Verbs ``mine`` and ``figures``: notebooks' text, code and figures as a dataset; its summaries."""

from __future__ import annotations

import argparse
import json
from collections import Counter

from junobench.cli.common import (
    add_env,
    add_executor,
    add_pass_env,
    add_sandbox,
    executor_options,
    parse_size,
    report_stopped,
    sandbox_from,
    status,
)
from junobench.render import render


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "mine", help="notebooks' text, code and figures as a dataset (parquet, card, croissant)",
        description="Mine notebooks into three configs: notebooks, cells and figures (each visual output with "
        "its image, the producing cell's code, the plotting calls found in it, the chart kind, purpose and "
        "pipeline stage, the markdown before it). INPUT: .ipynb files, folders of them, a snapshot ('sample', "
        "a snapshot folder, a Hub dataset id) or a listing (.xlsx naming notebooks, as `construct resample` "
        "writes it). Loadable with stock `datasets.load_dataset(OUT, 'figures')`.")
    parser.add_argument("inputs", nargs="+", metavar="INPUT", help="notebooks, folders, snapshots or listings")
    parser.add_argument("--out", required=True, metavar="DIR",
                        help="folder to write (new, empty, or an earlier mined corpus, which is replaced)")
    parser.add_argument("--revision", default=None, help="Hub revision of a snapshot input")
    parser.add_argument("--notebooks", metavar="DIR", help="a listing's notebooks folder (default: its folder)")
    parser.add_argument("--notebook-column", default="fname", metavar="NAME",
                        help="the listing's column naming the notebooks (default: fname)")
    parser.add_argument("--execute", action="store_true",
                        help="run the notebooks that have no outputs (sandboxed) and mine what they produce")
    parser.add_argument("--rerun", action="store_true",
                        help="run every notebook, its saved outputs replaced by the run's (implies --execute)")
    parser.add_argument("--data", metavar="DIR",
                        help="with --execute: input datasets, DIR/<slug>/ (or `construct download`'s layout), "
                        "given to each run in input/<slug>/ as on Kaggle")
    parser.add_argument("--jobs", "-j", type=int, default=None, metavar="N",
                        help="processes mining (and kernels running) at once (default: number of cores)")
    parser.add_argument("--timeout", type=float, default=None, metavar="SEC",
                        help="with --execute: time limit per cell run, in seconds (default: 600)")
    limits = parser.add_argument_group("bounds on what is read")
    limits.add_argument("--max-notebook-size", metavar="SIZE", default=None,
                        help="largest notebook file read (default: 256MiB)")
    limits.add_argument("--max-output-size", metavar="SIZE", default=None,
                        help="largest output read (an image, a specification; default: 32MiB)")
    limits.add_argument("--max-pixels", type=int, metavar="N", default=None,
                        help="most pixels of an image kept (default: 50000000)")
    parser.add_argument("--repo-id", default=None, metavar="OWNER/NAME",
                        help="the Hub repo the card's loading example names")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    add_env(parser)
    add_pass_env(parser)
    add_executor(parser)
    add_sandbox(parser)
    parser.set_defaults(handler=_mine)

    parser = subparsers.add_parser(
        "figures", help="summaries of a mined corpus; a sample for review; review labels read back",
        description="Tables of a folder `junobench mine` wrote: figures by kind, purpose, library, stage and MIME "
        "type, kinds by library and by stage, figures per notebook, unknown plotting calls, problems. "
        "--plot DIR draws them; --sample N --sheet FILE.xlsx draws a reproducible sample for hand review; "
        "--review FILE.xlsx reads a filled sheet back and gives the agreement of the labels with the "
        "automatic ones.")
    parser.add_argument("mined", metavar="DIR", help="a folder written by `junobench mine`")
    parser.add_argument("--format", choices=("table", "json", "csv"), default=None,
                        help="output format (default: table)")
    parser.add_argument("--plot", metavar="DIR", help="write the summaries as charts (PNG and SVG) into DIR")
    parser.add_argument("--sample", type=int, metavar="N", help="draw N figures for hand review (with --sheet)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the sample (default: 0)")
    parser.add_argument("--sheet", metavar="FILE.xlsx", help="with --sample: the review sheet to write")
    parser.add_argument("--review", metavar="FILE.xlsx",
                        help="a filled review sheet: the labels beside the automatic ones, with agreement")
    parser.set_defaults(handler=_figures)


def _mine(args: argparse.Namespace) -> int:
    from junobench.mining import Limits, mine
    from junobench.mining.mine import DEFAULT_REPO_ID

    limits = Limits(**{key: value for key, value in (
        ("notebook_bytes", args.max_notebook_size and parse_size(args.max_notebook_size)),
        ("output_bytes", args.max_output_size and parse_size(args.max_output_size)),
        ("pixels", args.max_pixels)) if value})
    if args.max_pixels is not None and args.max_pixels < 1:
        from junobench.errors import JunoBenchError

        raise JunoBenchError(f"--max-pixels must be at least 1, got {args.max_pixels}")
    execute = args.execute or args.rerun
    options = executor_options(args)
    result = mine(args.inputs, args.out, notebooks=args.notebooks, notebook_column=args.notebook_column,
                  revision=args.revision, execute=execute, rerun=args.rerun, data=args.data, env=args.env,
                  executor=args.executor, executor_options=options, jobs=args.jobs, timeout=args.timeout,
                  pass_env=args.pass_env, sandbox=sandbox_from(args) if execute else None, limits=limits,
                  repo_id=args.repo_id or DEFAULT_REPO_ID,
                  progress=False if args.no_progress else None)
    rows = result.rows
    summary = result.summary
    status(f"wrote {rows['notebooks']} notebooks, {rows['cells']} cells and {rows['figures']} figures to "
           f"{result.out} in {result.seconds:.1f} s ({summary.figures_with_problems} figures and "
           f"{summary.notebooks_with_problems} notebooks with a problem)")
    if result.runs:
        counts = Counter(result.runs.values())
        status(f"ran {len(result.runs)} notebooks ({result.executor}; {result.sandbox}): "
               + ", ".join(f"{n} {s}" for s, n in sorted(counts.items())))
    return 1 if report_stopped(result.stopped, "the notebooks not run were mined as they are") else 0


def _figures(args: argparse.Namespace) -> int:
    from junobench.errors import JunoBenchError
    from junobench.mining.summary import summarise

    if (args.sample is None) != (args.sheet is None):
        raise JunoBenchError("--sample N and --sheet FILE.xlsx go together")
    if args.review:
        from junobench.mining.review import read_review

        review = read_review(args.mined, args.review)
        fmt = args.format or "table"
        if fmt == "json":
            print(json.dumps(review.to_dict(), indent=2, ensure_ascii=False))
        else:
            print(render(review.rows(), fmt), end="")
        return 0
    if args.sample is not None:
        from junobench.mining.review import write_sheet

        path, count = write_sheet(args.mined, args.sheet, args.sample, seed=args.seed)
        status(f"wrote {count} figures to review to {path} (seed {args.seed})")
        if args.format is None and args.plot is None:
            return 0
    summary = summarise(args.mined)
    fmt = args.format or (None if args.plot else "table")
    if fmt == "json":
        print(json.dumps(summary.to_dict(), indent=2, ensure_ascii=False))
    elif fmt == "csv":
        print(render(summary.rows(), "csv", ("statistic", "value", "group", "count")), end="")
    elif fmt == "table":
        print(summary.to_text(), end="")
    if args.plot:
        from junobench.mining.plots import save_summary_plots

        for path in save_summary_plots(summary, args.plot):
            status(f"wrote {path}")
    return 0
