"""``junobench env create`` and ``env show``: a virtual environment with what cases need.

:func:`create_environment` makes a virtual environment holding exactly the pinned
requirements of the selected cases (or the whole environment) plus ``ipykernel``, every
other distribution held to the environment's lock, with ``uv`` (else ``venv`` + ``pip``),
and a kernelspec inside it (``share/jupyter/kernels/<name>``). It writes a manifest,
``junobench-env.json``, keyed on the requirement set and the interpreter: the same
selection reuses the environment; another selection replaces it (a folder that is not a
junobench environment is refused). When the environment's Python version cannot be found
on the machine, the interpreter used says so, and the manifest records it.

>>> from junobench.selection import select
>>> made = create_environment("envs/sample", select("sample"))  # doctest: +SKIP
>>> made.reused, made.requirements[:2], made.python_note          # doctest: +SKIP
(False, ['ipykernel==6.29.5', 'matplotlib==3.7.1'], None)
"""

from __future__ import annotations

import datetime
import hashlib
import json
import os
import shutil
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from junobench.envs.environment import Environment
from junobench.envs.installer import (
    current_python,
    find_python,
    install,
    installed_versions,
    interpreter_version,
    make_venv,
    python_version,
    run,
    uv_binary,
    venv_python,
)
from junobench.errors import JunoBenchError
from junobench.safety.atomic import OLD, recover, write_text

#: The manifest a junobench environment folder holds.
MANIFEST = "junobench-env.json"
#: The requirement file written into the environment (what was asked for).
REQUIREMENTS_FILE = "junobench-requirements.txt"


@dataclass
class Selection:
    """What an environment must hold: ``requirements`` (sorted ``name==version``, the
    kernel included), the cases they come from, and the imports left unpinned."""

    environment: Environment
    requirements: list[str]
    cases: list[str] = field(default_factory=list)
    unpinned: dict[str, list[str]] = field(default_factory=dict)
    whole: bool = False


@dataclass
class Created:
    """An environment folder after ``env create``."""

    path: Path
    python: Path
    requirements: list[str]
    reused: bool
    seconds: float
    python_note: str | None
    installer: str
    unpinned: dict[str, list[str]]
    manifest: dict[str, Any]


def kernel_requirements(env: Environment) -> list[str]:
    """The kernel's requirements, pinned from the lock where it pins them."""
    from packaging.requirements import Requirement

    out = []
    for line in env.kernel or ("ipykernel",):
        name = Requirement(line).name
        out.append(env.pinned(name) or line)
    return out


def selection_key(selection: Selection, python: str) -> str:
    """What decides reuse: the environment, the interpreter's version, the requirement set."""
    text = json.dumps([selection.environment.name, selection.environment.digest, python,
                       selection.requirements])
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def choose_python(env: Environment, python: str | None) -> tuple[Path, str, str | None]:
    """The interpreter for ``env`` (``python``: a version like 3.10 or a path; default the
    environment's version), its ``major.minor``, and a note when it is not the environment's."""
    if python is not None and not _looks_like_version(python):
        path = Path(python).expanduser()
        version = python_version(path)
        if version is None:
            raise JunoBenchError("not a Python interpreter that runs", file=path,
                                 hint="pass a version like 3.10 or the path of a python executable")
    else:
        wanted = python or env.python
        found = find_python(wanted)
        if found is None:
            path = current_python()
            version = python_version(path) or ""
            note = (f"Python {wanted} not found on this machine; using Python {version} ({path}) "
                    f"instead of the environment's {env.python}")
            if python is not None and python != env.python:
                note = f"Python {wanted} not found on this machine; using Python {version} ({path})"
            return path, version, note + _mismatch(version, env)
        path, version = found, wanted
    if version != env.python:
        return path, version, f"Python {version} ({path}) is not the environment's Python {env.python}"
    return path, version, None


def _mismatch(version: str, env: Environment) -> str:
    return "" if version == env.python else " (results may differ from the benchmark's)"


def _looks_like_version(text: str) -> bool:
    parts = text.split(".")
    return 1 < len(parts) <= 3 and all(p.isdigit() for p in parts)


def create_environment(
    dest: str | Path,
    selection: Selection,
    *,
    python: str | None = None,
) -> Created:
    """Make (or reuse) the environment of ``selection`` (:func:`junobench.selection.select`)
    at ``dest``; see the module docstring."""
    started = time.perf_counter()
    env = selection.environment
    dest = Path(dest).expanduser().absolute()
    interpreter, version, note = choose_python(env, python)
    key = selection_key(selection, version)
    recover_environment(dest)
    existing = _existing(dest)
    if existing is not None and existing.get("key") == key and venv_python(dest).is_file() \
            and python_version(venv_python(dest)) == version:
        return Created(dest, venv_python(dest), selection.requirements, True, time.perf_counter() - started,
                       existing.get("python", {}).get("note"), existing.get("installer", ""),
                       selection.unpinned, existing)
    uv = uv_binary()
    installer = f"uv {run([uv, '--version'], what='uv').split()[1]}" if uv else "pip"
    journal = _journal(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    write_text(journal, f"building {dest.name}; the environment it replaces is kept beside it\n")
    old = _move_aside(dest) if existing is not None else None
    try:
        dest.mkdir(parents=True, exist_ok=True)
        venv = make_venv(dest, interpreter, uv)
        requirements = dest / REQUIREMENTS_FILE
        requirements.write_text("\n".join(selection.requirements) + "\n", encoding="utf-8")
        install(venv, requirements, env.lock_file, uv, exclude_newer=env.exclude_newer)
        spec_name = f"junobench-{key[:8]}"
        run([str(venv), "-m", "ipykernel", "install", "--prefix", str(dest), "--name", spec_name,
             "--display-name", f"JunoBench ({env.name}, Python {version})"],
            what="installing the kernelspec")
        manifest = {
            "key": key,
            "environment": env.summary(),
            "python": {"wanted": env.python, "used": version, "executable": str(interpreter),
                       "note": note},
            "requirements": selection.requirements,
            "cases": selection.cases,
            "whole": selection.whole,
            "unpinned": selection.unpinned,
            "kernelspec": spec_name,
            "installer": installer,
            "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        }
        manifest["seconds"] = round(time.perf_counter() - started, 1)
        _write_json(dest / MANIFEST, manifest)
    except BaseException:
        shutil.rmtree(dest, ignore_errors=True)
        if old is not None:
            old.rename(dest)
        journal.unlink(missing_ok=True)
        raise
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)
    journal.unlink(missing_ok=True)
    return Created(dest, venv, selection.requirements, False, time.perf_counter() - started, note,
                   installer, selection.unpinned, manifest)


def _existing(dest: Path) -> dict[str, Any] | None:
    """The manifest of the junobench environment at ``dest``, None when ``dest`` is absent
    or empty; refuses anything else."""
    if not os.path.lexists(dest):
        return None
    if dest.is_symlink() or not dest.is_dir():
        raise JunoBenchError("exists and is not a directory", file=dest,
                             hint="choose a new folder for the environment")
    if not any(dest.iterdir()):
        return None
    try:
        return read_manifest(dest)
    except JunoBenchError:
        raise JunoBenchError("the folder is not empty and is not a junobench environment", file=dest,
                             hint="choose a new or empty folder; nothing in it was changed") from None


def _move_aside(dest: Path) -> Path:
    """Rename the environment at ``dest`` to a ``.old`` folder beside it (see
    :func:`recover_environment`)."""
    aside = Path(tempfile.mkdtemp(prefix=f".{dest.name}.", suffix=OLD, dir=dest.parent))
    aside.rmdir()
    dest.rename(aside)
    return aside


def _journal(dest: Path) -> Path:
    """The file beside ``dest`` that says an environment is being built there."""
    return dest.parent / f".{dest.name}.building"


def recover_environment(dest: str | Path) -> list[Path]:
    """Clean up after a create that was killed (a virtual environment is built in place,
    its paths being absolute): the half-built environment at ``dest`` is removed and the
    one it was replacing, kept beside it, is put back; a finished one keeps its place.
    Only folders holding a junobench environment's manifest are touched. Returns what was
    removed or restored."""
    dest = Path(dest).expanduser().absolute()
    journal = _journal(dest)
    touched: list[Path] = []
    if journal.is_file() and not journal.is_symlink():
        finished = (dest / MANIFEST).is_file() and not (dest / MANIFEST).is_symlink()
        if os.path.isdir(dest) and not os.path.islink(dest) and not finished \
                and (not any(dest.iterdir()) or (dest / "pyvenv.cfg").is_file()):  # what create makes
            shutil.rmtree(dest)
            touched.append(dest)
        journal.unlink()
    return touched + recover(dest, owned=lambda folder: (folder / MANIFEST).is_file())


def read_manifest(folder: str | Path) -> dict[str, Any]:
    """The manifest of an environment folder made by ``env create``."""
    path = Path(folder) / MANIFEST
    try:
        if path.is_symlink() or not path.is_file():
            raise FileNotFoundError
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        raise JunoBenchError("not a junobench environment (no readable manifest)", file=path,
                             hint="make one with `junobench env create DIR`") from None
    if not isinstance(data, dict) or not isinstance(data.get("environment"), dict) \
            or not isinstance(data.get("requirements"), list):
        raise JunoBenchError("not a junobench environment manifest", file=path,
                             hint="make the environment again with `junobench env create DIR`")
    return data


def _write_json(path: Path, data: Any) -> None:
    write_text(path, json.dumps(data, indent=2) + "\n")


@dataclass
class Installed:
    """One requirement of an environment against what is installed."""

    name: str
    pinned: str
    installed: str | None

    @property
    def status(self) -> str:
        if self.installed is None:
            return "missing"
        return "ok" if self.installed == self.pinned else "mismatch"


def show_environment(folder: str | Path) -> tuple[dict[str, Any], list[Installed], str]:
    """An environment's manifest, each requirement against the installed version, and the
    interpreter's full version."""
    folder = Path(folder).expanduser().absolute()
    manifest = read_manifest(folder)
    python = venv_python(folder)
    versions = installed_versions(python)
    rows = []
    for line in manifest["requirements"]:
        name, _, pinned = str(line).partition("==")
        rows.append(Installed(name, pinned, versions.get(name)))
    return manifest, rows, interpreter_version(python)
