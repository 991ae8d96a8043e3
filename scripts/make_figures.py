"""Regenerate the README's figures from a snapshot's data (never drawn by hand).

    python scripts/make_figures.py                       # the reference snapshot → docs/
    python scripts/make_figures.py --source sample --out /tmp/figures --dimension crash_type

Needs the plot extra. Writes ``<dimension>.png`` for each ``--dimension`` (default:
root_cause, the chart the README shows).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from reference import reference_dir

from junobench.errors import JunoBenchError
from junobench.plots import save_plots
from junobench.stats import DIMENSIONS, stats

REPO = Path(__file__).resolve().parent.parent
REFERENCE = reference_dir() / "junobench-snapshot"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--source", default=str(REFERENCE), help="snapshot (default: %(default)s)")
    parser.add_argument("--out", default=str(REPO / "docs"), help="directory (default: %(default)s)")
    parser.add_argument("--dimension", action="append", choices=DIMENSIONS,
                        help="dimension to draw (repeatable; default: root_cause)")
    args = parser.parse_args(argv)
    try:
        result = stats(args.source)
        for path in save_plots(result, args.out, dimensions=args.dimension or ["root_cause"],
                               formats=["png"]):
            print(f"wrote {path}")
    except JunoBenchError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
