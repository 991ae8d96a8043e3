"""The sandbox source distributions are built in (``env create --allow-build``).

A build runs its package's code (``setup.py``, a build backend). It runs in the bubblewrap
sandbox of :mod:`junobench.envs.sandbox` with the network on (the installer fetches from
the user's index), the environment folder being made as the only writable folder besides a
private ``/tmp`` and an empty ``HOME``; read-only: the system folders, the installer (the uv
executable) and the target interpreter's prefixes. Nothing else of the user's home is seen
(``~/.netrc``, tokens, keys), nor the parent's ``/proc``; ``--die-with-parent``.

The installer sees the user's index settings only: the ``UV_*`` and ``PIP_*`` variables,
the proxy variables, and uv's/pip's configuration files (their folders bound read-only); a
build can read them too (an index password in them included). Other files those settings
name on this machine (a ``--find-links`` folder) are not bound.

The installer's cache is not used (``UV_NO_CACHE``, ``PIP_NO_CACHE_DIR``): the cache is
shared with every unconfined uv or pip run of the user, so a build that could write into it
could leave a wheel there that a later install outside the sandbox would trust. Each build
downloads what it needs again.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path

from junobench.envs.sandbox import INSTALL_BWRAP, Sandbox, bwrap_argv, bwrap_problem, confined_environ
from junobench.errors import JunoBenchError

#: What to do where no sandbox can run a build.
BUILD_HINT = f"{INSTALL_BWRAP}; --sandbox none builds unconfined, with your user's rights"
#: Sandboxes a build can run in (``auto``: bubblewrap, refused where it cannot run).
BUILD_SANDBOXES: tuple[str, ...] = ("auto", "bwrap", "none")
#: Variables of the user's that the installer gets (its settings, proxies, certificates).
INSTALLER_PREFIXES = ("UV_", "PIP_")
INSTALLER_VARIABLES = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY", "http_proxy", "https_proxy",
                       "all_proxy", "no_proxy", "SSL_CERT_FILE", "SSL_CERT_DIR", "REQUESTS_CA_BUNDLE")
#: The settings that would let a build reach the user's cache: replaced.
CACHE_VARIABLES = ("UV_CACHE_DIR", "PIP_CACHE_DIR")


def build_sandbox(kind: str) -> Sandbox:
    """The sandbox builds run in for ``--sandbox kind``: bubblewrap with the network on
    and no memory or task limit; ``auto`` refused where bubblewrap cannot run."""
    if kind not in BUILD_SANDBOXES:
        raise JunoBenchError(f"source distributions cannot be built in sandbox {kind!r}",
                             hint=f"use one of {', '.join(BUILD_SANDBOXES)}")
    if kind == "none":
        return Sandbox("none", network=True)
    if (problem := bwrap_problem()) is not None:
        raise JunoBenchError(f"no sandbox to run build scripts in: {problem}", hint=BUILD_HINT)
    return Sandbox("bwrap", network=True, memory=0, processes=0)


def build_argv(command: Sequence[str], sandbox: Sandbox, *, python: str, folder: str, runtime: str,
               env: Mapping[str, str], uid: int | None = None) -> tuple[list[str], dict[str, str] | None]:
    """The command line and environment running the install ``command`` (a build of
    packages into the environment ``folder`` of ``python``) in ``sandbox`` (see the module
    docstring; ``none``: as it is, the user's environment); ``runtime``: a folder of the
    caller's for the sandbox's identity files; ``uid``: the host uid the build runs as
    (root only: :func:`~junobench.envs.sandbox.sandbox_uid`, ``folder`` handed over to it)."""
    if sandbox.kind == "none":
        return list(command), None
    bound: list[str] = []
    if os.path.isabs(command[0]) and not Path(command[0]).is_relative_to(folder):
        tool = os.path.realpath(command[0])
        bound += ["--ro-bind", tool, tool]
        if tool != command[0]:
            bound += ["--ro-bind", tool, command[0]]
    settings = dict(installer_environ(env))
    for name, path, shown in config_files(env):
        bound += ["--ro-bind", shown, shown]
        if name:
            settings[name] = path
    argv = bwrap_argv(command, replace(sandbox, network=True), python=python, cwd=folder, writable=[folder],
                      runtime=runtime, fonts=False, uid=uid, extra=bound)
    return argv, settings


def installer_environ(env: Mapping[str, str]) -> dict[str, str]:
    """What of ``env`` the installer in the sandbox gets: the sandbox's usual variables, the
    installer's settings and proxies; never the user's cache."""
    kept = confined_environ(env, keep=[name for name in env
                                       if name.startswith(INSTALLER_PREFIXES) or name in INSTALLER_VARIABLES])
    for name in CACHE_VARIABLES:
        kept.pop(name, None)
    kept.update({"UV_NO_CACHE": "1", "PIP_NO_CACHE_DIR": "1"})
    return kept


def config_files(env: Mapping[str, str]) -> list[tuple[str, str, str]]:
    """uv's and pip's configuration files of the user that exist, each as (the variable
    that names it inside the sandbox, empty for one found at its own path; the file; what
    to bind read-only: the installer's own configuration folder, so that files kept beside
    the configuration (a constraints file) are seen, else the file alone)."""
    home = Path(env.get("HOME") or Path.home())
    config = Path(env.get("XDG_CONFIG_HOME") or home / ".config")
    found: list[tuple[str, str, str]] = []
    candidates: list[tuple[str, list[tuple[str | Path | None, bool]]]] = [
        ("UV_CONFIG_FILE", [(env.get("UV_CONFIG_FILE"), False), (config / "uv" / "uv.toml", True)]),
        ("PIP_CONFIG_FILE", [(env.get("PIP_CONFIG_FILE"), False), (config / "pip" / "pip.conf", True),
                             (home / ".pip" / "pip.conf", True)]),
        ("", [("/etc/uv/uv.toml", True), ("/etc/xdg/uv/uv.toml", True), ("/etc/pip.conf", False),
              ("/etc/xdg/pip/pip.conf", True)])]
    for name, paths in candidates:
        for path, folder in paths:
            if path and os.path.isfile(path) and not os.path.islink(path):
                file = os.path.abspath(path)
                found.append((name, file, os.path.dirname(file) if folder else file))
                if name:
                    break
    return found
