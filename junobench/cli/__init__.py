"""``junobench <verb>``: argument parsing only; the logic lives in importable functions.

Each module in :data:`VERB_MODULES` defines ``register(subparsers)`` and binds a
handler with ``parser.set_defaults(handler=...)``; a handler returns the exit code.

One exit rule: 0 on success, 1 on any error (bad input, and usage errors too, which
argparse would end with status 2), always reported as one ``error: …`` line on stderr.
A verb stopped by Ctrl-C, SIGTERM or SIGHUP (:mod:`.signals`) ends as Ctrl-C ends it, says
``interrupted`` and exits with 128 + the signal's number (130, 143, 129).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import signal
import sys
from collections.abc import Sequence
from typing import Any, NoReturn

import junobench
from junobench.cli.signals import stop_signals
from junobench.errors import JunoBenchError
from junobench.safety.text import EscapedStream

#: Modules under ``junobench.cli`` that add verbs, in the order ``--help`` lists them.
VERB_MODULES: tuple[str, ...] = ("records", "stats", "site", "verify", "envs", "evaluate", "diagnosis", "runtime",
                                 "publish", "release", "construct", "mining")


class Parser(argparse.ArgumentParser):
    """An argument parser whose usage errors are :class:`JunoBenchError`\\ s (exit status 1,
    one ``error:`` line), not argparse's exit with status 2. Sub-commands' parsers are of
    this class too (argparse makes them of their parent's class)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.set_defaults(command_prog=self.prog)  # the innermost command parsed wins

    def error(self, message: str) -> NoReturn:
        raise JunoBenchError(f"{self.prog}: {message}", hint=f"see `{self.prog} --help`")

    def parse(self, args: Sequence[str] | None = None) -> argparse.Namespace:
        """``parse_args``, with unrecognised arguments blamed on the command that was given
        (``junobench ls --bogus`` → see ``junobench ls --help``)."""
        parsed, extra = self.parse_known_args(args)
        if extra:
            prog = getattr(parsed, "command_prog", self.prog)
            raise JunoBenchError(f"{prog}: unrecognized arguments: {' '.join(extra)}",
                                 hint=f"see `{prog} --help`")
        return parsed


def build_parser() -> Parser:
    parser = Parser(
        prog="junobench",
        description="JunoBench: real crashes in Python ML Jupyter notebooks.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {junobench.__version__}")
    subparsers = parser.add_subparsers(dest="verb", metavar="VERB", required=True)
    for name in VERB_MODULES:
        importlib.import_module(f"junobench.cli.{name}").register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    # Everything printed shows control characters as escapes (a notebook's exception
    # message can hold ANSI sequences); stderr keeps carriage returns for progress bars.
    stdout, stderr = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = EscapedStream(stdout), EscapedStream(stderr, keep="\n\t\r")
    stop = None
    try:
        with stop_signals() as stop:
            args = parser.parse(argv)
            _quiet_libraries()
            return int(args.handler(args) or 0)
    except JunoBenchError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    except KeyboardInterrupt as interrupt:
        by = "" if stop is None or stop.signum == signal.SIGINT else f" by {stop.name}"
        _say(f"interrupted{by}{f' ({interrupt})' if str(interrupt) else ''}")
        return 130 if stop is None else stop.code
    except BrokenPipeError:
        # The reader went away (`junobench stats --format json | head`): that is its
        # choice, not an error. Whatever is still buffered goes nowhere, quietly.
        _silence_stdout(stdout)
        return 0
    finally:
        sys.stdout, sys.stderr = stdout, stderr


def _say(line: str) -> None:
    """A last line on stderr, unless stderr is gone (SIGHUP: the terminal closed)."""
    with contextlib.suppress(OSError, ValueError):
        print(line, file=sys.stderr)


def _silence_stdout(stdout: Any) -> None:
    """Point the stdout file descriptor at the null device, so that the interpreter's
    last flush at exit cannot fail on the closed pipe."""
    import os

    try:
        fileno = stdout.fileno()
    except (AttributeError, OSError, ValueError):  # not a real file (a test's capture)
        return
    null = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(null, fileno)
    finally:
        os.close(null)


def _quiet_libraries() -> None:
    """Our log lines as ``warning: …`` on stderr; no progress bars or logs from datasets.

    datasets is told through its environment variables (a value the user set wins), so
    that verbs which never load records do not import it; a process that imported it
    already (a test, a notebook calling :func:`main`) is told through its functions."""
    import logging
    import os

    class StderrHandler(logging.Handler):  # looks sys.stderr up at each message
        def emit(self, record: logging.LogRecord) -> None:
            print(self.format(record), file=sys.stderr)

    logger = logging.getLogger("junobench")
    if not any(type(h).__name__ == "StderrHandler" for h in logger.handlers):
        handler = StderrHandler()
        handler.setFormatter(logging.Formatter("warning: %(message)s"))
        logger.addHandler(handler)
    os.environ.setdefault("HF_DATASETS_DISABLE_PROGRESS_BARS", "1")
    os.environ.setdefault("DATASETS_VERBOSITY", "error")
    datasets = sys.modules.get("datasets")
    if datasets is not None:
        datasets.disable_progress_bars()
        datasets.logging.set_verbosity_error()


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
