"""Options shared by several verbs: the snapshot source, label filters, output format."""

from __future__ import annotations

import argparse
from typing import Any

from junobench.data.snapshot import DEFAULT_SOURCE

#: CLI filter option → ``load()`` keyword (the record field it filters).
FILTER_OPTIONS: dict[str, str] = {
    "--library": "library",
    "--root-cause": "root_cause",
    "--crash-type": "crash_type",
    "--stage": "pipeline_stage",
    "--origin": "origin",
}


def add_source(parser: argparse.ArgumentParser, *, default: str | None = DEFAULT_SOURCE) -> None:
    """``--source S``: a local snapshot directory, ``sample``, or a Hub dataset repo id."""
    parser.add_argument(
        "--source",
        default=default,
        help="snapshot directory, 'sample' (bundled), or Hub dataset repo id"
        + (f" (default: {default})" if default else ""),
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


def add_pass_env(parser: argparse.ArgumentParser) -> None:
    """``--pass-env NAME``: a credential-like variable the notebook kernels may see."""
    parser.add_argument(
        "--pass-env", action="append", default=[], metavar="NAME",
        help="let the kernels see this environment variable although it looks like a "
             "credential (*_TOKEN, *_KEY, *_SECRET, *PASSWORD*, HF_*, KAGGLE_*, ...: removed "
             "by default); repeatable")


def add_format(parser: argparse.ArgumentParser, *, choices: tuple[str, ...] = ("table", "json", "csv")) -> None:
    parser.add_argument("--format", choices=choices, default=choices[0], help="output format")


def load_kwargs(args: argparse.Namespace) -> dict[str, Any]:
    """Keywords for ``junobench.load`` from the shared options present on ``args``."""
    kwargs: dict[str, Any] = {"source": args.source, "revision": getattr(args, "revision", None)}
    if getattr(args, "skip_invalid", False):
        kwargs["skip_invalid"] = True
    kwargs.update(filters_from(args))
    return kwargs
