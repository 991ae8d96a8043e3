"""``junobench <verb>``: argument parsing only; the logic lives in importable functions.

Each module in :data:`VERB_MODULES` defines ``register(subparsers)`` and binds a
handler with ``parser.set_defaults(handler=...)``; a handler returns the exit code.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from junobench.errors import JunoBenchError
from junobench.safety.text import EscapedStream

#: Modules under ``junobench.cli`` that add verbs, in the order ``--help`` lists them.
VERB_MODULES: tuple[str, ...] = ("records", "stats", "verify", "evaluate", "runtime", "publish",
                                 "construct")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="junobench",
        description="JunoBench: real crashes in Python ML Jupyter notebooks.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    subparsers = parser.add_subparsers(dest="verb", metavar="VERB", required=True)
    for name in VERB_MODULES:
        importlib.import_module(f"junobench.cli.{name}").register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    _quiet_libraries()
    # Everything printed shows control characters as escapes (a notebook's exception
    # message can hold ANSI sequences); stderr keeps carriage returns for progress bars.
    stdout, stderr = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = EscapedStream(stdout), EscapedStream(stderr, keep="\n\t\r")
    try:
        return int(args.handler(args) or 0)
    except JunoBenchError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    finally:
        sys.stdout, sys.stderr = stdout, stderr


def _quiet_libraries() -> None:
    """Our log lines as ``warning: …`` on stderr; no progress bars or logs from datasets."""
    import logging

    class StderrHandler(logging.Handler):  # looks sys.stderr up at each message
        def emit(self, record: logging.LogRecord) -> None:
            print(self.format(record), file=sys.stderr)

    logger = logging.getLogger("junobench")
    if not any(type(h).__name__ == "StderrHandler" for h in logger.handlers):
        handler = StderrHandler()
        handler.setFormatter(logging.Formatter("warning: %(message)s"))
        logger.addHandler(handler)
    import datasets

    datasets.disable_progress_bars()
    datasets.logging.set_verbosity_error()


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("junobench")
    except PackageNotFoundError:
        return "unknown"


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
