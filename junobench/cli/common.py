"""Options shared by several verbs: the snapshot source, label filters, output format, how
notebooks run (:func:`add_run_options`) and how a model is asked (:func:`add_model_options`)."""

from __future__ import annotations

import argparse
import contextlib
import sys
from collections.abc import Callable, Iterator
from typing import Any

from junobench.cli.config import configurable
from junobench.data.layout import DEFAULT_SOURCE
from junobench.data.licences import POLICY_MODES

#: CLI filter option → ``load()`` keyword (the record field it filters).
FILTER_OPTIONS: dict[str, str] = {
    "--library": "library",
    "--root-cause": "root_cause",
    "--crash-type": "crash_type",
    "--stage": "pipeline_stage",
    "--origin": "origin",
}


def status(message: str) -> None:
    """Print a status line (what a verb wrote and where, what it reused, how long it took)
    on stderr: stdout holds only the data a verb shows, or nothing."""
    print(message, file=sys.stderr)


def step_lines(args: argparse.Namespace) -> Callable[[str], None] | None:
    """Where a long verb reports each step as it starts: a line on stderr when stderr is a
    terminal (as the tqdm bars of verify, runtime-info and construct reproduce show), nothing
    when it is piped or ``--no-progress`` was given."""
    if getattr(args, "no_progress", False) or not _on_terminal(sys.stderr):
        return None
    return lambda step: status(f"... {step}")


def _on_terminal(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError, OSError):  # a closed or unusual stream
        return False


def dash_values(action: argparse.Action) -> argparse.Action:
    """Let ``action``'s values start with a dash: ``--name -RT`` reads ``-RT`` as the name
    (as ``--name=-RT`` does), unless ``-RT`` is an option of junobench."""
    action.dash_values = True  # type: ignore[attr-defined]
    return action


def add_source(parser: argparse.ArgumentParser, *, default: str | None = DEFAULT_SOURCE,
               help: str | None = None) -> None:
    """``--source S``: a local snapshot directory, ``sample``, or a Hub dataset repo id."""
    parser.add_argument(
        "--source",
        default=default,
        help=help or ("snapshot directory, 'sample' (bundled), or Hub dataset repo id"
                      + (f" (default: {default})" if default else "")),
    )
    parser.add_argument("--revision", default=None, help="Hub revision (branch, tag or commit)")


def add_skip_invalid(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--skip-invalid",
        action="store_true",
        help="build the valid cases and list the invalid ones instead of failing",
    )


def add_filters(parser: argparse.ArgumentParser) -> None:
    """Repeatable label filters; values of one option are OR-ed, options are AND-ed."""
    group = parser.add_argument_group("filters (repeatable; a case must match one value of each)")
    helps = {
        "--library": "case-id library prefix, e.g. torch, tensorflow, NBspecific",
        "--root-cause": "root cause, e.g. 'API misuse'",
        "--crash-type": "crash type, e.g. 'key error'",
        "--stage": "ML pipeline stage, e.g. training",
        "--origin": "the source field: where the case came from: 'labeled in empirical study' or 'newly sampled'",
    }
    for option, field in FILTER_OPTIONS.items():
        group.add_argument(option, dest=f"filter_{field}", action="append", metavar="VALUE",
                           help=helps[option])


def filters_from(args: argparse.Namespace) -> dict[str, list[str]]:
    """The filters given on the command line, as ``load()`` keywords."""
    out: dict[str, list[str]] = {}
    for field in FILTER_OPTIONS.values():
        values = getattr(args, f"filter_{field}", None)
        if values:
            out[field] = values
    return out


_CONFIGURED = ("defaults: junobench.toml (your ~/.config/junobench/, or the working directory's "
               "unless it is a snapshot's), then JUNOBENCH_<OPTION> variables; the command line wins")


def add_run_options(parser: argparse.ArgumentParser) -> None:
    """How and where notebooks run, as verify and runtime-info take it: the environment
    (``--env``, ``--pass-env``), the executor and the sandbox. Their defaults may come
    from a configuration file or ``JUNOBENCH_*`` variables (:mod:`junobench.cli.config`)."""
    add_env(parser)
    add_pass_env(parser)
    add_executor(parser)
    add_sandbox(parser)


def add_pass_env(parser: argparse.ArgumentParser) -> None:
    """``--pass-env NAME``: a credential-like variable the notebook kernels may see."""
    configurable(parser.add_argument(
        "--pass-env", action="append", default=[], metavar="NAME",
        help="let the kernels see this environment variable although it looks like a "
             "credential (*_TOKEN, *_KEY, *_SECRET, *PASSWORD*, HF_*, KAGGLE_*, ...: removed "
             "by default); repeatable"))


def add_sandbox(parser: argparse.ArgumentParser) -> None:
    """How notebook kernels are confined: ``--sandbox``, ``--network`` and the limits."""
    from junobench.envs.sandbox import DEFAULT_IMAGE, DEFAULT_MAX_OUTPUT, DEFAULT_MEMORY, DEFAULT_PROCESSES, SANDBOXES
    from junobench.envs.sandbox import format_size as size

    group = parser.add_argument_group("sandbox (every notebook runs confined)", _CONFIGURED)
    configurable(group.add_argument("--sandbox", choices=SANDBOXES, default="auto",
                       help="auto (default): bubblewrap where it runs, else refuse notebooks that are "
                       "not junobench's own sample; docker/podman: the image of `env dockerfile`; "
                       "none: unconfined, with your user's rights"))
    configurable(group.add_argument("--network", action=argparse.BooleanOptionalAction, default=False,
                       help="let the notebooks reach the network (default: none, loopback included)"))
    configurable(group.add_argument("--memory", metavar="SIZE", default=None,
                       help=f"memory of a notebook's processes together, e.g. 8GiB; 0: no limit "
                       f"(default: {size(DEFAULT_MEMORY)})"))
    configurable(group.add_argument("--max-processes", type=int, metavar="N", default=None,
                       help=f"processes and threads of a notebook; 0: no limit (default: {DEFAULT_PROCESSES})"))
    configurable(group.add_argument("--max-output", metavar="SIZE", default=None,
                       help=f"output kept per cell run, the rest cut and marked; 0: no limit "
                       f"(default: {size(DEFAULT_MAX_OUTPUT)})"))
    configurable(group.add_argument("--image", metavar="NAME", default=DEFAULT_IMAGE,
                       help=f"--sandbox docker|podman: the image (default: {DEFAULT_IMAGE}, as "
                       "`docker build -t junobench-env` of `env dockerfile`'s context makes it)"))


def sandbox_from(args: argparse.Namespace) -> Any:
    """The :class:`~junobench.envs.sandbox.Sandbox` the options of :func:`add_sandbox` say;
    ``--sandbox none`` prints its one warning line here."""
    import sys

    from junobench.envs.sandbox import Sandbox

    options: dict[str, Any] = {"kind": args.sandbox, "network": args.network, "image": args.image}
    if args.memory is not None:
        options["memory"] = _size_or_zero(args.memory)
    if args.max_processes is not None:
        options["processes"] = args.max_processes
    if args.max_output is not None:
        options["max_output"] = _size_or_zero(args.max_output)
    sandbox = Sandbox(**options)
    if not sandbox.confined:
        print("warning: --sandbox none: notebooks run unconfined, with your user's rights over your files, "
              "network and credentials", file=sys.stderr)
    return sandbox


def _size_or_zero(text: str) -> int:
    return 0 if text.strip() in ("0", "none") else parse_size(text)


def add_model_options(parser: argparse.ArgumentParser, *, endpoint: Any = None,
                      json_mode: bool = True) -> None:
    """How a model is asked (``detect --endpoint`` and ``judge``): the endpoint and the
    options of each request. ``endpoint``: the group ``--endpoint`` goes in (e.g. a
    mutually exclusive one), else the model group."""
    from junobench.detection.client import DEFAULT_API_KEY_ENV, DEFAULT_RETRIES, DEFAULT_TIMEOUT

    group = parser.add_argument_group("model requests (an OpenAI-compatible endpoint)")
    (endpoint or group).add_argument(
        "--endpoint", metavar="URL",
        help="base URL such as http://localhost:8000/v1 (or the full .../chat/completions URL)")
    group.add_argument("--model", help="model name the endpoint serves (with --endpoint)")
    group.add_argument("--temperature", type=float, help="sampling temperature (default: the server's)")
    group.add_argument("--max-tokens", type=int, help="answer length limit")
    if json_mode:
        group.add_argument("--json-mode", action="store_true",
                           help='ask the server for JSON output (response_format "json_object")')
    group.add_argument("--concurrency", type=int, default=1, help="requests in flight at once (default: 1)")
    group.add_argument("--api-key-env", default=DEFAULT_API_KEY_ENV, metavar="VAR",
                       help=f"environment variable holding the API key (default: {DEFAULT_API_KEY_ENV}; "
                       "unset means no key)")
    group.add_argument("--retries", type=int, default=DEFAULT_RETRIES,
                       help="retries of a failed request, with the SDK's exponential backoff "
                       f"(default: {DEFAULT_RETRIES})")
    group.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT,
                       help=f"seconds to wait for one answer (default: {DEFAULT_TIMEOUT:.0f})")
    group.add_argument("--no-progress", action="store_true", help="no progress bar")


def model_options(args: argparse.Namespace) -> dict[str, Any]:
    """Keywords of :func:`~junobench.detection.detect.detect` and
    :func:`~junobench.diagnosis.judge.judge` from the options of :func:`add_model_options`."""
    from junobench.errors import JunoBenchError

    if args.endpoint and not args.model:
        raise JunoBenchError("--endpoint needs --model", hint="name the model the server serves")
    options = {"endpoint": args.endpoint, "model": args.model, "temperature": args.temperature,
               "max_tokens": args.max_tokens, "concurrency": args.concurrency,
               "api_key_env": args.api_key_env, "retries": args.retries, "timeout": args.timeout,
               "progress": not args.no_progress}
    if getattr(args, "json_mode", False):
        options["json_mode"] = True
    return options


def add_format(parser: argparse.ArgumentParser, *, choices: tuple[str, ...] = ("table", "json", "csv")) -> None:
    parser.add_argument("--format", choices=choices, default=choices[0], help="output format")


def load_kwargs(args: argparse.Namespace) -> dict[str, Any]:
    """Keywords for ``junobench.load`` from the shared options present on ``args``."""
    kwargs: dict[str, Any] = {"source": args.source, "revision": getattr(args, "revision", None)}
    if getattr(args, "skip_invalid", False):
        kwargs["skip_invalid"] = True
    kwargs.update(filters_from(args))
    return kwargs


def add_env(parser: argparse.ArgumentParser) -> None:
    """``--env DIR``: run kernels in an environment made by ``junobench env create``."""
    configurable(parser.add_argument("--env", metavar="DIR", default=None,
                        help="run the kernels in this environment (made by `junobench env create`); "
                        "default: junobench's own interpreter"))


def add_executor(parser: argparse.ArgumentParser) -> None:
    """Where notebooks run: ``--executor local|ray`` and the Ray options."""
    group = parser.add_argument_group("where the notebooks run", _CONFIGURED)
    configurable(group.add_argument("--executor", choices=("local", "ray"), default="local",
                       help="local kernels (default) or one Ray task per notebook"))
    configurable(group.add_argument("--ray-address", metavar="ADDR", help="Ray cluster to join (default: RAY_ADDRESS, "
                       "else a `ray start` instance on this machine, else a new local instance)"))
    configurable(group.add_argument("--cpus-per-notebook", type=float, metavar="N",
                       help="CPUs each notebook's Ray task asks for (default: 1)"))
    configurable(group.add_argument("--memory-per-notebook", metavar="SIZE",
                       help="memory each notebook's Ray task asks for, e.g. 4GiB or 500MB"))
    configurable(group.add_argument("--retries", type=int, metavar="N",
                       help="Ray: attempts after an infrastructure fault (a worker or node lost, "
                       "an environment that fails to build; default: 2)"))
    configurable(group.add_argument("--max-case-size", metavar="SIZE",
                       help="Ray: most bytes of files one notebook's replay may send to its worker "
                       "(default: 64GiB)"))
    configurable(group.add_argument("--liveness", type=float, metavar="SEC",
                       help="Ray: seconds a worker may go without answering the driver's pings (one every "
                       "2 s) before it is taken for frozen, killed and its notebook retried on another; "
                       "the head's silence is timed by it too (default: 30)"))
    configurable(group.add_argument("--build-envs", action=argparse.BooleanOptionalAction, default=False,
                       help="Ray: run each notebook in a runtime environment of its pinned "
                       "requirements, built on the worker with uv (cached per requirement set)"))


def executor_options(args: argparse.Namespace) -> dict[str, Any]:
    """Keywords for ``make_executor`` beside the name and ``jobs`` (Ray options given)."""
    from junobench.errors import JunoBenchError

    options: dict[str, Any] = {}
    for option, key in (("ray_address", "address"), ("cpus_per_notebook", "cpus"),
                        ("retries", "retries"), ("liveness", "liveness")):
        value = getattr(args, option, None)
        if value is not None:
            options[key] = value
    if getattr(args, "memory_per_notebook", None) is not None:
        options["memory"] = parse_size(args.memory_per_notebook)
    if getattr(args, "max_case_size", None) is not None:
        options["max_case_size"] = parse_size(args.max_case_size)
    if getattr(args, "build_envs", False):
        options["build_envs"] = True
    if options and getattr(args, "executor", "local") != "ray":
        given = [k for k in ("ray_address", "cpus_per_notebook", "memory_per_notebook", "retries",
                             "max_case_size", "liveness", "build_envs")
                 if getattr(args, k, None) not in (None, False)]
        names = ", ".join(f"--{k.replace('_', '-')}" for k in given)
        raise JunoBenchError(f"{names} appl{'ies' if ',' not in names else 'y'} to --executor ray only")
    return options


_UNITS = {"": 1, "b": 1, "k": 10**3, "kb": 10**3, "m": 10**6, "mb": 10**6, "g": 10**9, "gb": 10**9,
          "t": 10**12, "tb": 10**12, "kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30, "tib": 1 << 40}


def parse_size(text: str) -> int:
    """``4GiB`` → 4294967296, ``500MB`` → 500000000, ``1024`` → 1024 (bytes)."""
    import re

    from junobench.errors import JunoBenchError

    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([A-Za-z]*)\s*", text)
    unit = match.group(2).lower() if match else ""
    if match is None or unit not in _UNITS:
        raise JunoBenchError(f"cannot read the size {text!r}", hint="write e.g. 4GiB, 500MB or 1000000")
    size = int(float(match.group(1)) * _UNITS[unit])
    if size <= 0:
        raise JunoBenchError(f"the size {text!r} is not positive")
    return size


def report_stopped(stopped: str | None, holds: str) -> bool:
    """Print the one ``error:`` line of a run that stopped early (``stopped``: why, e.g. a
    lost Ray cluster) on stderr, after what the verb printed; ``holds`` says where every case
    or notebook was written. True when the run stopped (the verb then exits 1)."""
    if stopped is None:
        return False
    print(f"error: {stopped} ({holds}; run the same command again to resume)", file=sys.stderr)
    return True


@contextlib.contextmanager
def interrupted_saying(holds: str) -> Iterator[None]:
    """Within the block, a run stopped by Ctrl-C, SIGTERM or SIGHUP whose KeyboardInterrupt
    says how far it came (``2 of 4 notebooks done``) ends saying, besides, where what finished
    was written (``holds``) and how to resume: ``interrupted by SIGTERM (2 of 4 notebooks
    done; out.jsonl holds them; run the same command again to resume)``."""
    try:
        yield
    except KeyboardInterrupt as stop:
        if not str(stop):
            raise
        raise KeyboardInterrupt(f"{stop}; {holds}; run the same command again to resume") from None


def add_licence_options(parser: argparse.ArgumentParser) -> None:
    """The licence policy of input data (as ``validate``'s): the allow-list and the mode."""
    parser.add_argument("--allow-licence", action="append", default=[], metavar="LICENCE",
                        help="also allow this input-dataset licence (SPDX id or name; repeatable)")
    parser.add_argument("--licences", default=None, metavar="FILE",
                        help="the allow-list: one licence a line, replacing the default list of open licences")
    parser.add_argument("--licence-policy", choices=POLICY_MODES, default="warn",
                        help="a data file whose licence is outside the allow-list or unknown is named in a "
                             "warning (default), refuses the export, or is not reported")


def licence_policy_from(args: argparse.Namespace) -> Any:
    """The :class:`~junobench.data.licences.LicencePolicy` of :func:`add_licence_options`."""
    from junobench.data.licences import LicencePolicy

    return LicencePolicy.from_options(args.allow_licence, args.licences)
