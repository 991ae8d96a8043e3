"""Verb ``env``: make and inspect the pinned environments notebooks run in."""

from __future__ import annotations

import argparse
import sys

from junobench.cli.common import add_filters, add_source, filters_from, status, step_lines
from junobench.render import render


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "env", help="make and inspect the benchmark's pinned environments",
        description="The benchmark's notebooks crash in a pinned environment (Python 3.10, "
        "numpy 1.26.4, pandas 2.1.4, …). `env create` makes a virtual environment with what "
        "the selected cases need, at the pinned versions; verify, runtime-info and checkout "
        "take it with --env DIR.")
    from junobench.envs.buildbox import BUILD_SANDBOXES

    verbs = parser.add_subparsers(dest="env_verb", metavar="ACTION", required=True)

    create = verbs.add_parser(
        "create", help="make (or reuse) a virtual environment for some cases",
        description="Make a virtual environment at DIR holding exactly the pinned requirements "
        "of the selected cases (default: every case of the snapshot; --all: every pin of the "
        "environment) plus ipykernel, with uv (else pip), and a kernelspec inside it. The same "
        "selection reuses it; the environment's Python version is used when this machine has it.")
    create.add_argument("dir", metavar="DIR", help="the environment folder (new, empty, or made "
                        "by env create before)")
    create.add_argument("cases", nargs="*", metavar="CASE", help="case ids (default: every case)")
    add_source(create)
    add_filters(create)
    create.add_argument("--python", metavar="PY", help="a Python version (3.10) or interpreter path "
                        "(default: the environment's version)")
    create.add_argument("--all", action="store_true", dest="whole",
                        help="every pin of the environment, not only what the cases import")
    create.add_argument("--allow-build", action="store_true",
                        help="build source distributions where a pin has no wheel (their build "
                        "scripts run in a sandbox with the network on, seeing only the environment "
                        "folder; default: wheels only)")
    create.add_argument("--sandbox", choices=BUILD_SANDBOXES, default="auto",
                        help="--allow-build: where builds run; auto (default): bubblewrap, refused "
                        "where it cannot run; none: unconfined, with your user's rights")
    create.add_argument("--no-progress", action="store_true",
                        help="no step lines (shown on a terminal only)")
    create.set_defaults(handler=_create)

    docker = verbs.add_parser(
        "dockerfile", help="write a container build context that reproduces the environment",
        description="Write DIR/Dockerfile (FROM the official image of the environment's Python), "
        "DIR/requirements.txt (the selection's pins), DIR/lock.txt and the manifest --env reads: "
        "`docker build -t junobench-env DIR`, then inside it `junobench verify --env "
        "/opt/junobench-env`. The published image is named in the Dockerfile as the alternative.")
    docker.add_argument("cases", nargs="*", metavar="CASE", help="case ids (default: every case)")
    docker.add_argument("--out", required=True, metavar="DIR", help="the build context folder to write")
    add_source(docker, default=None)
    add_filters(docker)
    docker.add_argument("--all", action="store_true", dest="whole",
                        help="every pin of the environment, not only what the cases import")
    docker.add_argument("--junobench-version", metavar="V", default=None,
                        help="the junobench release the image installs (default: this one)")
    docker.set_defaults(handler=_dockerfile)

    show = verbs.add_parser("show", help="list what an environment holds against its pins",
                            description="Each requirement of the environment at DIR with the "
                            "version pinned and the version installed.")
    show.add_argument("dir", metavar="DIR")
    show.add_argument("--format", choices=("table", "json", "csv"), default="table")
    show.set_defaults(handler=_show)


def _create(args: argparse.Namespace) -> int:
    from junobench.envs.create import create_environment
    from junobench.selection import select

    if args.allow_build and args.sandbox == "none":
        print("warning: --sandbox none: build scripts run unconfined, with your user's rights over your "
              "files, network and credentials", file=sys.stderr)
    selection = select(args.source, args.cases or None, revision=args.revision, whole=args.whole,
                       filters=filters_from(args))
    made = create_environment(args.dir, selection, python=args.python, allow_build=args.allow_build,
                              sandbox=args.sandbox, progress=step_lines(args))
    if made.python_note:
        print(f"note: {made.python_note}", file=sys.stderr)
    for case, names in made.unpinned.items():
        print(f"note: {case} needs what the environment does not pin: {', '.join(names)}", file=sys.stderr)
    verb = "reused" if made.reused else f"created with {made.installer}"
    status(f"{verb}: {made.path} ({len(made.requirements)} requirements, "
           f"{made.manifest['environment']['name']}, Python {made.manifest['python']['used']}, "
           f"{made.seconds:.1f} s)")
    status(f"python: {made.python}")
    return 0


def _dockerfile(args: argparse.Namespace) -> int:
    from junobench.envs.dockerfile import write_context
    from junobench.selection import select

    selection = select(args.source, args.cases or None, revision=args.revision, whole=args.whole,
                       filters=filters_from(args))  # --all without --source reads no snapshot
    out = write_context(args.out, selection, junobench=args.junobench_version)
    status(f"wrote {out}/Dockerfile ({len(selection.requirements)} requirements, "
           f"{selection.environment.name}, {selection.environment.base_image}); "
           f"build it with `docker build -t junobench-env {out}`")
    return 0


def _show(args: argparse.Namespace) -> int:
    from junobench.envs.create import show_environment

    manifest, rows, version = show_environment(args.dir)
    table = [{"distribution": r.name, "pinned": r.pinned, "installed": r.installed, "status": r.status}
             for r in rows]
    if args.format == "table":
        env = manifest["environment"]
        print(f"environment {env['name']} ({env.get('origin', 'package')}), Python {version}"
              f" (the environment's: {manifest['python']['wanted']})")
        if manifest["python"].get("note"):
            print(f"note: {manifest['python']['note']}")
        if manifest.get("cases"):
            print(f"cases: {', '.join(manifest['cases'])}")
    print(render(table, args.format, ("distribution", "pinned", "installed", "status")), end="")
    return 0 if all(r.status == "ok" for r in rows) else 1
