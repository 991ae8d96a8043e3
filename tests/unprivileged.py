"""Running a command as an unprivileged user from a test suite that runs as root (as CI does).

The user is ``nobody``. What the command needs from root's files (the interpreter, the
virtual environment, the checkout) must be readable by it; where it lies under a folder
that only root may enter (``/root`` is ``0700``), the command runs in a mount namespace of
its own in which that folder is an empty in-memory folder (``0755``) holding bind mounts
of just the needed paths, at their own paths. Nothing of the machine changes.
"""

from __future__ import annotations

import os
import pwd
import shlex
import stat
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path


def user() -> tuple[int, int]:
    """uid and gid of ``nobody``."""
    entry = pwd.getpwnam("nobody")
    return entry.pw_uid, entry.pw_gid


def needed() -> list[Path]:
    """What a junobench command needs: this interpreter, its virtual environment, its base
    installation and the checkout (an editable install imports from it)."""
    import junobench

    paths = {Path(sys.prefix), Path(sys.base_prefix), Path(os.path.realpath(sys.executable)).parent.parent,
             Path(junobench.__file__).resolve().parent.parent}
    return sorted(paths)


def _closed(folder: Path) -> bool:
    """Whether users other than the owner cannot enter ``folder``."""
    return not os.stat(folder).st_mode & stat.S_IXOTH


def as_user(command: Sequence[str], paths: Iterable[Path] = (), stash: Path | None = None) -> list[str]:
    """The command line that runs ``command`` as ``nobody``, ``paths`` (default:
    :func:`needed`) reachable; ``stash``: an empty folder for the mount namespace's use."""
    uid, gid = user()
    paths = list(paths) or needed()
    closed = sorted({parent for p in paths for parent in [p, *p.parents] if parent != Path("/") and _closed(parent)},
                    key=lambda p: len(p.parts))
    tops = [c for c in closed if not any(o in c.parents for o in closed)]
    lines = ["set -e"]
    for i, top in enumerate(tops):
        assert stash is not None, "a folder under a closed one is needed: give a stash"
        saved = stash / f"top{i}"
        lines += [f"mkdir -p {shlex.quote(str(saved))}",
                  f"mount --rbind {shlex.quote(str(top))} {shlex.quote(str(saved))}",
                  f"mount -t tmpfs -o mode=0755 tmpfs {shlex.quote(str(top))}"]
        for path in paths:
            if top in path.parents or path == top:
                inner = path.relative_to(top)
                lines += [f"mkdir -p {shlex.quote(str(top / inner))}",
                          f"mount --rbind {shlex.quote(str(saved / inner))} {shlex.quote(str(top / inner))}"]
    lines.append(f'exec setpriv --reuid={uid} --regid={gid} --clear-groups -- "$@"')
    return ["unshare", "--mount", "--propagation", "private", "sh", "-c", "\n".join(lines), "sh", *command]
