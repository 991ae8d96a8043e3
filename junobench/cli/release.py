"""Verbs ``diff`` (what changed between two versions of the benchmark) and ``release``
(a new version of a snapshot to the Hub: export, changelog, card diff, commit and tag)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from junobench.cli.common import add_licence_options, licence_policy_from, step_lines


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from junobench.hub.changes import FORMATS

    parser = subparsers.add_parser(
        "diff", help="what changed from one version of the benchmark to another",
        description="Compare two sources (snapshot directories, exports, 'sample' or Hub dataset "
                    "repos): cases added, removed and renamed (matched by eid), and for each case "
                    "its labels, diagnosis, crash, notebooks (code cells, execution orders), input "
                    "datasets, requirements and data files (sha256). Exit code 0 either way.")
    parser.add_argument("old", metavar="A", help="the earlier version")
    parser.add_argument("new", metavar="B", help="the later version")
    parser.add_argument("--old-revision", default=None, metavar="REV", help="revision of A, a Hub repo")
    parser.add_argument("--new-revision", default=None, metavar="REV", help="revision of B, a Hub repo")
    parser.add_argument("--format", choices=FORMATS, default="table",
                        help="table (default), json, or markdown (release notes)")
    parser.add_argument("--no-progress", action="store_true", help="no step lines (shown on a terminal only)")
    parser.set_defaults(handler=_diff)

    parser = subparsers.add_parser(
        "release", help="publish a new version of a snapshot: export, changelog, card diff, commit, tag",
        description="Validate the snapshot, export it (card, parquet, croissant.json), compare it with "
                    "the release on the Hub (the repo at --revision, or --previous SOURCE), write the "
                    "changelog entry, show the card's diff against the Hub's, then push the export and "
                    "CHANGELOG.md as one commit and tag it v<VERSION>. The version is the snapshot's "
                    "VERSION file, or --version (then written into VERSION). --dry-run shows all of "
                    "it and sends nothing.")
    parser.add_argument("snapshot", help="the snapshot directory to release")
    parser.add_argument("--repo-id", "--repo", required=True, dest="repo_id",
                        help="dataset repo, e.g. someone/junobench")
    parser.add_argument("--version", default=None, help="the new version (MAJOR.MINOR.PATCH); "
                        "default: the snapshot's VERSION file")
    parser.add_argument("--revision", default="main", help="the branch released to (default: main)")
    parser.add_argument("--tag", default=None, help="the release's tag (default: v<VERSION>)")
    parser.add_argument("--previous", default=None, metavar="SOURCE",
                        help="compare with this source instead of the Hub repo at --revision")
    parser.add_argument("--out", default=None, metavar="DIR",
                        help="keep the export here (default: a temporary directory)")
    parser.add_argument("--date", default=None, help="the changelog entry's date (default: today, UTC)")
    parser.add_argument("--private", action="store_true", help="create the repo as private")
    parser.add_argument("--dry-run", action="store_true", help="show everything and send nothing")
    parser.add_argument("--require-verified", action="store_true",
                        help="refuse the release when a case's provenance records no passing verification "
                             "(default: a warning naming them; the card says so)")
    add_licence_options(parser)
    parser.add_argument("--no-progress", action="store_true", help="no step lines (shown on a terminal only)")
    parser.set_defaults(handler=_release)


def _diff(args: argparse.Namespace) -> int:
    from junobench.hub.changes import diff

    result = diff(args.old, args.new, old_revision=args.old_revision, new_revision=args.new_revision,
                  progress=step_lines(args))
    sys.stdout.write(result.render(args.format))
    return 0


def _release(args: argparse.Namespace) -> int:
    from junobench.hub.release import release

    result = release(args.snapshot, args.repo_id, version=args.version, revision=args.revision,
                     tag=args.tag, previous=args.previous, out=Path(args.out) if args.out else None,
                     date=args.date, private=args.private, dry_run=args.dry_run,
                     require_verified=args.require_verified, licences=licence_policy_from(args),
                     licence_policy=args.licence_policy, progress=step_lines(args))
    sys.stdout.write(result.report())
    return 0
