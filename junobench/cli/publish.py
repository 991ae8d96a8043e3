"""Verbs ``export``, ``check`` and ``push``: publish the records to the Hugging Face Hub."""

from __future__ import annotations

import argparse
import sys

from junobench.cli.common import (
    add_licence_options,
    add_skip_invalid,
    add_source,
    licence_policy_from,
    status,
    step_lines,
)


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "export", help="write the records as parquet + dataset card (Hub layout)",
        description="Write the cases and notebooks records of a snapshot in the Hub layout: "
        "DIR/README.md (dataset card), DIR/<config>/test-00000-of-00001.parquet, "
        "DIR/croissant.json (Croissant 1.0 with RAI fields) and DIR/checksums.json. "
        "An earlier export in DIR is replaced only when the new one is complete.")
    add_source(parser)
    parser.add_argument("--out", required=True, metavar="DIR", help="the export directory")
    add_skip_invalid(parser)
    parser.add_argument("--repo-id", default=None,
                        help="the repo the card's loading examples name (default: PELAB-LiU/JunoBench)")
    parser.add_argument("--template", default=None, metavar="PATH",
                        help="card template (default: data_cards/junobench.md)")
    add_licence_options(parser)
    parser.add_argument("--no-progress", action="store_true", help="no step lines (shown on a terminal only)")
    parser.set_defaults(handler=_export)

    parser = subparsers.add_parser(
        "check", help="verify an export: checksums, card YAML, parquet schemas",
        description="Verify an export directory; print every problem with its file; exit 1 on any.")
    parser.add_argument("dir", metavar="DIR", help="the export directory")
    parser.add_argument("--no-progress", action="store_true", help="no step lines (shown on a terminal only)")
    parser.set_defaults(handler=_check)

    parser = subparsers.add_parser(
        "push", help="upload an export to a Hub dataset repo as one commit",
        description="Upload a checked export as one commit (creating the dataset repo if needed). "
        "The token comes from HF_TOKEN or `hf auth login`; it is never printed.")
    parser.add_argument("dir", metavar="DIR", help="the export directory")
    parser.add_argument("--repo-id", required=True, help="dataset repo, e.g. someone/junobench")
    parser.add_argument("--revision", default=None, help="branch to commit to (default: main)")
    parser.add_argument("--private", action="store_true", help="create the repo as private")
    parser.add_argument("--dry-run", action="store_true",
                        help="list the operations and send nothing")
    parser.add_argument("--message", default=None, help="commit message")
    parser.set_defaults(handler=_push)


def _export(args: argparse.Namespace) -> int:
    from junobench.hub.write_export import export

    result = export(args.source, args.out, revision=args.revision, skip_invalid=args.skip_invalid,
                    repo_id=args.repo_id, template=args.template, licences=licence_policy_from(args),
                    licence_policy=args.licence_policy, progress=step_lines(args))
    for warning in result.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    status(f"exported {result.rows['cases']} cases and {result.rows['notebooks']} notebooks to {result.out}")
    shown = {n: i for n, i in result.files.items() if not n.startswith("benchmark/")}
    for name, info in shown.items():
        status(f"  {name:<40} {info['size']:>12,} bytes  sha256 {info['sha256']}")
    if len(shown) < len(result.files):
        size = sum(i["size"] for n, i in result.files.items() if n not in shown)
        status(f"  benchmark/ (the case folders: {len(result.files) - len(shown)} files, {size:,} bytes)")
    return 0


def _check(args: argparse.Namespace) -> int:
    from junobench.hub.check import check

    step = step_lines(args)
    if step is not None:
        step(f"checking {args.dir}: the manifest's files (size and sha256), card, croissant.json, parquet")
    problems = check(args.dir)
    for problem in problems:
        print(f"error: {args.dir.rstrip('/')}/{problem}")
    if problems:
        print(f"{len(problems)} problem(s) in {args.dir}")
        return 1
    print(f"ok: {args.dir} (manifest, card, croissant.json and parquet schemas verified)")
    return 0


def _push(args: argparse.Namespace) -> int:
    from junobench.hub.push import push

    result = push(args.dir, args.repo_id, revision=args.revision, private=args.private,
                  dry_run=args.dry_run, commit_message=args.message)
    print(("dry run: would push " if result.dry_run else "pushed ")
          + f"{len(result.operations)} file(s) to dataset repo {result.repo_id} ({result.revision})")
    for step in result.steps:
        print(f"  - {step}")
    for op in result.operations:
        print(f"    add {op.path:<40} {op.size:>12,} bytes  sha256 {op.sha256}")
    if result.dry_run:
        print("nothing was sent")
    else:
        print(f"commit {result.commit_oid}: {result.commit_url}")
    return 0
