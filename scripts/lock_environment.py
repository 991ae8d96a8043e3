#!/usr/bin/env python3
"""Regenerate the lock of an environment: every transitive dependency of its pins,
resolved as of its ``exclude_newer`` date, for its Python version and newer, on every
platform (``uv pip compile --universal``); and, from the same resolution's wheel entries
(as a PEP 751 ``pylock.toml``), the distributions with no wheel for the environment's
Python and platform (``source_builds.txt``: ``env dockerfile`` gives their image a compiler).

    python scripts/lock_environment.py                      # the packaged junobench-2025
    python scripts/lock_environment.py path/to/environment  # a snapshot's own environment
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from junobench.envs.environment import DEFAULT_ENVIRONMENT, PACKAGE_ENVS, SPEC_FILE, read_environment
from junobench.envs.installer import compile_lock
from junobench.envs.wheels import source_builds, write_source_builds
from junobench.errors import JunoBenchError


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", nargs="?", type=Path, default=PACKAGE_ENVS / DEFAULT_ENVIRONMENT,
                        help=f"an environment folder (holding {SPEC_FILE})")
    args = parser.parse_args(argv)
    try:
        env = read_environment(args.folder)
        if env.lock_file is None or env.exclude_newer is None:
            raise JunoBenchError("the environment names no lock file or no exclude_newer date",
                                 file=args.folder / SPEC_FILE)
        assert env.requirements_file is not None
        lock = compile_lock(args.folder, env.requirements_file.name, env.lock_file.name, python=env.python,
                            exclude_newer=env.exclude_newer)
        locked = read_environment(args.folder).locked
        with tempfile.TemporaryDirectory() as scratch:
            shutil.copyfile(env.requirements_file, Path(scratch) / env.requirements_file.name)
            pylock = compile_lock(Path(scratch), env.requirements_file.name, "pylock.toml",
                                  python=env.python, exclude_newer=env.exclude_newer)
            builds = source_builds(pylock.read_text(encoding="utf-8"), python=env.python,
                                   platform=env.platform)
        written = write_source_builds(args.folder, builds, python=env.python, platform=env.platform)
    except JunoBenchError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    print(f"wrote {lock}: {len(locked)} distributions for Python {env.python} on {env.platform}")
    print(f"wrote {written}: {len(builds)} without a wheel ({', '.join(builds) or 'none'})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
