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

#: Modules under ``junobench.cli`` that add verbs.
VERB_MODULES: tuple[str, ...] = ("records", "stats", "site", "verify", "envs", "evaluate", "diagnosis", "runtime",
                                 "publish", "release", "construct", "mining")

#: The verbs by who uses them, in the order ``junobench --help`` lists them.
VERB_GROUPS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("research: the benchmark and crash detectors",
     ("ls", "show", "stats", "view", "build", "tasks", "detect", "evaluate", "annotate", "agreement",
      "judge")),
    ("run: the notebooks, in their pinned environments",
     ("checkout", "env", "verify", "runtime-info")),
    ("maintain: publish, rebuild and extend the benchmark",
     ("export", "check", "push", "diff", "release", "site", "validate", "construct", "mine", "figures")),
)


class _VerbsByUser(argparse.HelpFormatter):
    """``junobench --help``: the verbs under the heading of who uses them."""

    def _iter_indented_subactions(self, action: argparse.Action) -> Any:
        if not isinstance(action, argparse._SubParsersAction):
            yield from super()._iter_indented_subactions(action)
            return
        verbs = {choice.dest: choice for choice in action._get_subactions()}
        self._indent()
        for title, names in VERB_GROUPS:
            yield argparse.Action([], dest="", metavar=title)
            self._indent()
            yield from (verbs.pop(name) for name in names if name in verbs)
            self._dedent()
        yield from verbs.values()  # a verb in no group still shows
        self._dedent()


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
        (``junobench ls --bogus`` → see ``junobench ls --help``), and the names that start
        with a dash (``--name -RT``, the papers' name of a setting) taken as values of the
        options that accept them (:func:`~junobench.cli.common.dash_values`)."""
        argv = self._dash_values_joined(list(sys.argv[1:] if args is None else args))
        parsed, extra = self.parse_known_args(argv)
        if self._configure(parsed):
            parsed, extra = self.parse_known_args(argv)
        if extra:
            prog = getattr(parsed, "command_prog", self.prog)
            raise JunoBenchError(f"{prog}: unrecognized arguments: {' '.join(extra)}",
                                 hint=f"see `{prog} --help`")
        return parsed

    def _configure(self, parsed: argparse.Namespace) -> bool:
        """Set the defaults a configuration gives the options of the command ``parsed``
        ran (:mod:`junobench.cli.config`); whether it gave any."""
        from junobench.cli import config

        chosen = [p for p in _parsers(self) if p.prog == getattr(parsed, "command_prog", None)]
        options = config.options_of(chosen)
        if not options:
            return False
        defaults = config.configured(options, source=getattr(parsed, "source", None))
        for parser in chosen:
            parser.set_defaults(**defaults)
        return bool(defaults)

    def _dash_values_joined(self, args: list[str]) -> list[str]:
        """``--name -RT`` as ``--name=-RT`` where ``--name`` takes such values and ``-RT`` is
        no option: argparse would read it as one."""
        takes: set[str] = set()
        options: set[str] = set()
        for parser in _parsers(self):
            for action in parser._actions:
                options.update(action.option_strings)
                if getattr(action, "dash_values", False):
                    takes.update(action.option_strings)
        out: list[str] = []
        pending = iter(args)
        for arg in pending:
            out.append(arg)
            if arg == "--":
                out.extend(pending)
                break
            if arg in takes:
                value = next(pending, None)
                if value is None:
                    break
                if value.startswith("-") and value not in options and value != "--":
                    out[-1] = f"{arg}={value}"
                else:
                    out.append(value)
        return out


def _parsers(parser: argparse.ArgumentParser) -> list[argparse.ArgumentParser]:
    """``parser`` and every sub-command's parser below it."""
    found = [parser]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in dict.fromkeys(action.choices.values()):
                found += _parsers(sub)
    return found


def build_parser() -> Parser:
    parser = Parser(
        prog="junobench",
        description="JunoBench: real crashes in Python ML Jupyter notebooks.",
        formatter_class=_VerbsByUser,
        epilog="How notebooks run (sandbox, executor, environment) may be set once in "
        "junobench.toml or JUNOBENCH_* variables: see `junobench verify --help`.",
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
    except OSError as error:
        # What the system refused (a name too long, a full disk, no permission) on a path
        # the user gave: one line naming it, as for any bad input, not a traceback.
        print(f"error: {os_error_line(error)}", file=sys.stderr)
        return 1
    finally:
        sys.stdout, sys.stderr = stdout, stderr


def os_error_line(error: OSError) -> str:
    """What the system said of which file (a long name cut to 80 characters).

    >>> os_error_line(OSError(28, "No space left on device", "out/cases.parquet"))
    'out/cases.parquet: No space left on device'
    >>> len(os_error_line(OSError(36, "File name too long", "x" * 300)))
    100
    """
    from junobench.safety.text import shortened

    said = error.strerror or str(error) or type(error).__name__
    return f"{shortened(str(error.filename), 80)}: {said}" if error.filename is not None else said


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
