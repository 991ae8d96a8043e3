"""Verbs ``site`` and ``view``: the benchmark and evaluation results as a browsable site."""

from __future__ import annotations

import argparse
from typing import Any

from junobench.cli.common import add_filters, add_source, filters_from, status


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "site", help="write the benchmark (and evaluation results) as a static site",
        description="Write a static site: every case in a filterable table, a page per case "
        "(the reproduced and fixed notebooks side by side in execution order, the target cell "
        "marked, what the fix changed), and with PRED or --judgments the evaluation pages "
        "(the numbers of `junobench evaluate`) and the case x setting grid. Plain files: open "
        "DIR/index.html from disk or serve DIR from any static host. Rebuilding renders only "
        "the pages whose inputs changed. Needs the site extra.")
    parser.add_argument("--out", required=True, metavar="DIR",
                        help="directory to write (new, empty, or a site written before)")
    _add_inputs(parser)
    parser.set_defaults(handler=_site)

    parser = subparsers.add_parser(
        "view", help="build the site into the cache and serve it on 127.0.0.1",
        description="Build the site (as `junobench site`, incrementally, into the cache) and "
        "serve it on 127.0.0.1 until Ctrl-C. Needs the site extra.")
    from junobench.site.serve import DEFAULT_PORT

    parser.add_argument("--port", type=int, default=DEFAULT_PORT,
                        help=f"port to serve on (default: {DEFAULT_PORT}; 0: any free port)")
    parser.add_argument("--no-open", action="store_true", help="do not open a browser")
    parser.add_argument("--cache-dir", metavar="DIR",
                        help="cache to build the site in (default: $JUNOBENCH_CACHE or ~/.cache/junobench)")
    _add_inputs(parser)
    parser.set_defaults(handler=_view)


def _add_inputs(parser: argparse.ArgumentParser) -> None:
    from junobench.detection.names import DEFAULT_RESAMPLES, DEFAULT_SEED, LAYOUTS

    parser.add_argument("predictions", metavar="PRED", nargs="*",
                        help="predictions file or folder in any layout `junobench evaluate` reads "
                        "(several: side by side with paired tests)")
    parser.add_argument("--judgments", metavar="FILE",
                        help="judged diagnoses, as `junobench evaluate --judgments` reads them")
    parser.add_argument("--sheet", metavar="NAME", help="with --judgments FILE.xlsx: the sheet to read")
    parser.add_argument("--name", action="append", metavar="NAME",
                        help="name of each PRED, in order (default: from the paths)")
    add_source(parser)
    parser.add_argument("--truth", action="append", metavar="TASKS.truth.jsonl",
                        help="ground-truth file of blind task ids (repeatable)")
    parser.add_argument("--layout", choices=LAYOUTS, help="read PRED in this layout")
    parser.add_argument("--vote", choices=("majority", "first-valid", "all-runs"), default="majority",
                        help="how runs become a decision (default: majority)")
    parser.add_argument("--resamples", type=int, default=DEFAULT_RESAMPLES,
                        help=f"case bootstraps behind each interval (default: {DEFAULT_RESAMPLES})")
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED,
                        help=f"seed of the bootstrap (default: {DEFAULT_SEED})")
    parser.add_argument("--title", default="JunoBench", help="the site's title (default: JunoBench)")
    parser.add_argument("--figures", metavar="DIR",
                        help="a mined corpus (`junobench mine --out DIR`): a gallery of its figures, filterable "
                        "by kind, purpose, library and stage, each linking to its notebook and cell")
    add_filters(parser)


def _options(args: argparse.Namespace) -> dict[str, Any]:
    return {"judgments": args.judgments, "sheet": args.sheet, "names": args.name,
            "revision": args.revision, "truth": args.truth, "layout": args.layout, "vote": args.vote,
            "resamples": args.resamples, "seed": args.seed, "title": args.title, "figures": args.figures,
            **filters_from(args)}


def _site(args: argparse.Namespace) -> int:
    from junobench.site import site

    summary = site(args.source, args.out, args.predictions, **_options(args))
    status(f"wrote the site to {summary.out}: {len(summary.rendered)} pages rendered, "
           f"{len(summary.reused)} unchanged, in {summary.seconds:.1f} s")
    status(f"open {summary.out / 'index.html'}")
    return 0


def _view(args: argparse.Namespace) -> int:
    from junobench.site import view

    def ready(url: str, summary: Any) -> None:
        status(f"built the site in {summary.out}: {len(summary.rendered)} pages rendered, "
               f"{len(summary.reused)} unchanged")
        status(f"serving {url} (Ctrl-C to stop)")

    view(args.source, args.predictions, port=args.port, open_browser=not args.no_open,
         cache_dir=args.cache_dir, on_ready=ready, **_options(args))
    status("stopped")
    return 0
