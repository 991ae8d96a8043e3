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

import contextlib
import datetime
import hashlib
import json
import os
import shutil
import stat
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from junobench.envs.buildbox import build_sandbox
from junobench.envs.environment import Environment
from junobench.envs.installer import (
    current_python,
    find_python,
    inheriting,
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
from junobench.safety.atomic import move_aside, recover, write_text
from junobench.safety.grammar import is_environment_name
from junobench.safety.paths import read_regular

#: The manifest a junobench environment folder holds.
MANIFEST = "junobench-env.json"
#: Largest manifest read (bytes).
MAX_MANIFEST_BYTES = 1 << 20
#: The requirement file written into the environment (what was asked for).
REQUIREMENTS_FILE = "junobench-requirements.txt"
#: The environment's lock as given to the installer (its checked pins, written again).
CONSTRAINTS_FILE = "junobench-constraints.txt"
#: What a create's journal names as its writer.
JOURNAL_WRITER = "junobench env create"


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
            return path, version, note + ("" if version == env.python else " (results may differ from the benchmark's)")
        path, version = found, wanted
    if version != env.python:
        return path, version, f"Python {version} ({path}) is not the environment's Python {env.python}"
    return path, version, None


def _looks_like_version(text: str) -> bool:
    parts = text.split(".")
    return 1 < len(parts) <= 3 and all(p.isdigit() for p in parts)


def create_environment(
    dest: str | Path,
    selection: Selection,
    *,
    python: str | None = None,
    allow_build: bool = False,
    sandbox: str = "auto",
    progress: Callable[[str], None] | None = None,
) -> Created:
    """Make (or reuse) the environment of ``selection`` (:func:`junobench.selection.select`)
    at ``dest``; see the module docstring. Only wheels are installed unless ``allow_build``
    (a source distribution's build runs its code in the sandbox ``sandbox`` names:
    :func:`~junobench.envs.installer.run_build`, :mod:`junobench.envs.buildbox`; refused where
    none can run). Two creates into one ``dest`` do not overlap: the second fails with an
    error while the first holds the lock. ``progress`` is told each step as it starts (a
    reused environment has none)."""
    started = time.perf_counter()
    env = selection.environment
    dest = Path(dest).expanduser().absolute()
    interpreter, version, note = choose_python(env, python)
    key = selection_key(selection, version)
    with _building(dest):
        return _create(dest, selection, interpreter, version, note, key, started, allow_build, sandbox,
                       progress or (lambda step: None))


def _create(dest: Path, selection: Selection, interpreter: Path, version: str, note: str | None,
            key: str, started: float, allow_build: bool, sandbox: str,
            progress: Callable[[str], None]) -> Created:
    """:func:`create_environment` holding the lock of ``dest``."""
    env = selection.environment
    recover_environment(dest)
    existing = _existing(dest)
    if existing is not None and existing.get("key") == key and venv_python(dest).is_file() \
            and python_version(venv_python(dest)) == version:
        return Created(dest, venv_python(dest), selection.requirements, True, time.perf_counter() - started,
                       existing.get("python", {}).get("note"), existing.get("installer", ""),
                       selection.unpinned, existing)
    build = build_sandbox(sandbox) if allow_build else None  # before anything is made
    if not allow_build:
        _refuse_source_builds(selection)
    uv = uv_binary()
    installer = f"uv {run([uv, '--version'], what='uv').split()[1]}" if uv else "pip"
    journal = _journal(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    record: dict[str, Any] = {"writer": JOURNAL_WRITER, "dest": dest.name, "made": None, "emptied": None}
    _write_json(journal, record)
    old = move_aside(dest) if existing is not None else None  # see recover_environment
    try:
        existed = dest.is_dir() and not dest.is_symlink()
        if not existed:  # a kill before its identity is noted leaves an empty folder to remove
            record["making"] = True
            _write_json(journal, record)
        dest.mkdir(parents=True, exist_ok=True)
        info = dest.stat()
        record["made" if not existed else "emptied"] = [info.st_dev, info.st_ino]
        _write_json(journal, record)
        progress(f"making a virtual environment at {dest} (Python {version}, {installer})")
        venv = make_venv(dest, interpreter, uv)
        requirements = dest / REQUIREMENTS_FILE
        requirements.write_text("\n".join(selection.requirements) + "\n", encoding="utf-8")
        constraints = None
        if env.lock_text:  # the checked pins, written again: nothing else reaches the installer
            constraints = dest / CONSTRAINTS_FILE
            constraints.write_text(env.lock_text, encoding="utf-8")
        progress(f"installing {len(selection.requirements)} requirements with {installer}"
                 + (" (source builds allowed)" if allow_build else ""))
        install(venv, requirements, constraints, uv, exclude_newer=env.exclude_newer,
                allow_build=allow_build, require_hashes=env.hashed, sandbox=build)
        spec_name = f"junobench-{key[:8]}"
        progress(f"installing the kernelspec {spec_name}")
        run([str(venv), "-m", "ipykernel", "install", "--prefix", str(dest), "--name", spec_name,
             "--display-name", f"JunoBench ({env.name}, Python {version})"],
            what="installing the kernelspec")
        manifest = manifest_of(selection, key, used=version, executable=str(interpreter), note=note,
                               kernelspec=spec_name, installer=installer)
        manifest["seconds"] = round(time.perf_counter() - started, 1)
        _write_json(dest / MANIFEST, manifest)
    except BaseException:
        with contextlib.suppress(OSError):
            _undo(dest, record)
        if old is not None:
            old.rename(dest)
        journal.unlink(missing_ok=True)
        raise
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)
    journal.unlink(missing_ok=True)
    return Created(dest, venv, selection.requirements, False, time.perf_counter() - started, note,
                   installer, selection.unpinned, manifest)


def manifest_of(selection: Selection, key: str, *, used: str, executable: str, note: str | None,
                kernelspec: str, installer: str) -> dict[str, Any]:
    """The :data:`MANIFEST` of the environment of ``selection`` made with the interpreter
    ``executable`` (Python ``used``; ``note`` when it is not the environment's), whose
    reuse ``key`` is :func:`selection_key`'s, by ``installer``."""
    env = selection.environment
    return {
        "key": key,
        "environment": env.summary(),
        "python": {"wanted": env.python, "used": used, "executable": executable, "note": note},
        "requirements": selection.requirements,
        "cases": selection.cases,
        "whole": selection.whole,
        "unpinned": selection.unpinned,
        "kernelspec": kernelspec,
        "installer": installer,
        "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
    }


def needs_source_builds(selection: Selection) -> list[str]:
    """The pins of ``selection`` its environment's lock has no wheel for (its
    :data:`~junobench.envs.wheels.SOURCE_BUILDS`; every one for the whole environment, else
    those the selection pins): built from source, they run their build scripts (``env
    create --allow-build``; the image of ``env dockerfile`` builds them with a compiler)."""
    from packaging.requirements import InvalidRequirement, Requirement
    from packaging.utils import canonicalize_name

    from junobench.envs.wheels import read_source_builds

    listed = read_source_builds(selection.environment.folder) or []
    if selection.whole:
        return listed
    wanted = set()
    for line in selection.requirements:
        try:
            wanted.add(canonicalize_name(Requirement(line).name))
        except InvalidRequirement:
            continue
    return [pin for pin in listed if canonicalize_name(pin.partition("==")[0]) in wanted]


def _refuse_source_builds(selection: Selection) -> None:
    """Stop before anything is made when the selection pins a distribution its environment
    lists as having no wheel (building it runs its build script: ``--allow-build``)."""
    env = selection.environment
    builds = needs_source_builds(selection)
    if builds:
        raise JunoBenchError(f"{', '.join(builds)} ha{'s' if len(builds) == 1 else 've'} no wheel for "
                             f"Python {env.python} on {env.platform}: building from source runs "
                             "the distribution's build script",
                             hint="pass --allow-build to build, or leave out the cases that need it")


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


def _journal(dest: Path) -> Path:
    """The file beside ``dest`` that says an environment is being built there."""
    return dest.parent / f".{dest.name}.building"


@contextlib.contextmanager
def _building(dest: Path) -> Iterator[None]:
    """Hold the lock of ``dest`` (``flock`` on ``.<dest>.lock`` beside it, removed after)
    for the block; a :class:`JunoBenchError` at once when another create holds it."""
    import fcntl

    dest.parent.mkdir(parents=True, exist_ok=True)
    path = dest.parent / f".{dest.name}.lock"
    while True:
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)
        except OSError as error:
            raise JunoBenchError(f"cannot lock the environment folder ({error.strerror or error})",
                                 file=path) from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            raise JunoBenchError("another `env create` is making an environment here", file=dest,
                                 hint="wait for it to finish, or choose another folder") from None
        try:
            same = os.fstat(fd).st_ino == os.lstat(path).st_ino
        except FileNotFoundError:
            same = False  # the holder before us removed it: lock the new one
        if same:
            break
        os.close(fd)
    try:
        with inheriting(fd):  # a tool outliving a killed create keeps the folder locked
            yield
    finally:
        with contextlib.suppress(OSError):
            path.unlink()
        os.close(fd)


def _read_journal(journal: Path, dest: Path) -> dict[str, Any] | None:
    """The record of a create's journal, None when there is none; a file that is not a
    journal of ``env create`` for ``dest`` is an error (it is not ours to act on)."""
    if not os.path.lexists(journal):
        return None
    try:
        data = json.loads(read_regular(journal, limit=1 << 16).decode("utf-8")) \
            if not journal.is_symlink() else None
    except (OSError, ValueError):
        data = None
    if not isinstance(data, dict) or data.get("writer") != JOURNAL_WRITER or data.get("dest") != dest.name:
        raise JunoBenchError("is not a journal of `env create` for this folder; nothing was changed",
                             file=journal, hint="remove it if no `env create` is running, then try again")
    return data


def _identity(value: Any) -> tuple[int, int] | None:
    if isinstance(value, list) and len(value) == 2 and all(isinstance(v, int) for v in value):
        return value[0], value[1]
    return None


def _undo(dest: Path, record: Mapping[str, Any]) -> Path | None:
    """Remove what a create whose journal is ``record`` made at ``dest``: the folder it made
    (or the contents it put into a folder that was empty), only when ``dest`` is still that
    very folder. Returns ``dest`` when something was removed."""
    made, emptied = _identity(record.get("made")), _identity(record.get("emptied"))
    try:
        info = dest.lstat()
    except OSError:
        return None
    if made is None and emptied is None and record.get("making") is True:
        try:  # killed between making the folder and noting it: removed only while empty
            os.rmdir(dest)
        except OSError:
            return None
        return dest
    if not stat.S_ISDIR(info.st_mode) or (info.st_dev, info.st_ino) not in (made, emptied):
        return None  # not the folder this create made: never ours to remove
    if (info.st_dev, info.st_ino) == made:
        shutil.rmtree(dest)
    else:
        for child in list(dest.iterdir()):
            if child.is_dir() and not child.is_symlink():
                shutil.rmtree(child)
            else:
                child.unlink()
    return dest


def recover_environment(dest: str | Path) -> list[Path]:
    """Clean up after a create that was killed (a virtual environment is built in place,
    its paths being absolute): what its journal says it made at ``dest`` is removed, unless
    it finished, and the environment it was replacing, kept beside it, is put back. A
    folder the journal does not name (a user's own environment) is never removed, and a
    journal not written by ``env create`` is an error. Returns what was removed or restored."""
    dest = Path(dest).expanduser().absolute()
    journal = _journal(dest)
    touched: list[Path] = []
    record = _read_journal(journal, dest)
    if record is not None:
        finished = (dest / MANIFEST).is_file() and not (dest / MANIFEST).is_symlink()
        if not finished and (undone := _undo(dest, record)) is not None:
            touched.append(undone)
        journal.unlink()
    return touched + recover(dest, owned=lambda folder: (folder / MANIFEST).is_file())


def read_manifest(folder: str | Path) -> dict[str, Any]:
    """The manifest of an environment folder made by ``env create``: a regular file of at
    most :data:`MAX_MANIFEST_BYTES`, holding what its readers use (the environment's name,
    the Python versions, the requirements and cases as text)."""
    path = Path(folder) / MANIFEST
    try:
        if path.is_symlink():
            raise FileNotFoundError
        data = json.loads(read_regular(path, limit=MAX_MANIFEST_BYTES).decode("utf-8"))
    except (OSError, ValueError, RecursionError):
        raise JunoBenchError("not a junobench environment (no readable manifest)", file=path,
                             hint="make one with `junobench env create DIR`") from None
    problem = _manifest_problem(data)
    if problem is not None:
        raise JunoBenchError(f"not a junobench environment manifest ({problem})", file=path,
                             hint="make the environment again with `junobench env create DIR`")
    return cast(dict[str, Any], data)  # an object: _manifest_problem checked it


def _manifest_problem(data: Any) -> str | None:
    """What a manifest lacks of what its readers take from it, None when nothing."""
    if not isinstance(data, dict):
        return "not a JSON object"
    environment, python = data.get("environment"), data.get("python")
    if not isinstance(environment, dict) or not is_environment_name(environment.get("name")):
        return "no environment name"
    if not isinstance(python, dict) or not all(isinstance(python.get(k), str) for k in ("wanted", "used")) \
            or not isinstance(python.get("note"), (str, type(None))):
        return "python is not its versions as text"
    for key in ("requirements", "cases"):
        value = data.get(key, [])
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            return f"{key} is not a list of text"
    return None


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
