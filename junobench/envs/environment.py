"""An environment as data: its Python version, published pins and full lock.

An environment is a folder holding ``environment.json`` (name, Python version, where each
fact came from), the requirement list it names (``requirements.in``: the published pins
plus the kernel) and, usually, a lock of every transitive dependency (``lock.txt``, made
by ``uv pip compile --universal --exclude-newer``). The package ships them under
``junobench/envs/<name>/``; a snapshot may carry its own under ``environment/``: a full
definition, or an ``environment.json`` that only names a packaged environment.

>>> env = packaged("junobench-2025")
>>> env.python, env.pin("pandas"), env.pin("sklearn") is None, env.pin("scikit-learn")
('3.10', '2.1.4', True, '1.2.2')
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import stat
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from packaging.markers import InvalidMarker, Marker
from packaging.utils import canonicalize_name

from junobench.envs.pins import Pin, lock_text, parse_pins
from junobench.errors import JunoBenchError
from junobench.safety.grammar import (
    check,
    is_environment_name,
    is_image_reference,
    is_iso_date,
    is_python_version,
)
from junobench.safety.paths import check_not_linked_out, link_inside

#: Where the packaged environments live (one folder each).
PACKAGE_ENVS = Path(__file__).resolve().parent
#: The environment a snapshot without its own declaration is run in.
DEFAULT_ENVIRONMENT = "junobench-2025"
#: A snapshot's own environment: this folder at its root.
SNAPSHOT_FOLDER = "environment"
SPEC_FILE = "environment.json"
#: Largest environment file read (bytes).
MAX_FILE_BYTES = 1 << 20

_PLATFORMS = {  # marker values of the platforms an environment can name
    "linux x86_64": {"sys_platform": "linux", "platform_system": "Linux", "os_name": "posix",
                     "platform_machine": "x86_64"},
    "linux aarch64": {"sys_platform": "linux", "platform_system": "Linux", "os_name": "posix",
                      "platform_machine": "aarch64"},
}


@dataclass(frozen=True)
class Environment:
    """One environment: ``requirements`` are the pins it was published with (canonical
    name → version; the kernel's open requirements are in ``kernel``), ``locked`` every
    distribution of its lock for its own Python and platform."""

    name: str
    python: str
    folder: Path
    requirements: dict[str, str]
    kernel: tuple[str, ...] = ()
    locked: dict[str, str] = field(default_factory=dict)
    lock_file: Path | None = None
    requirements_file: Path | None = None
    platform: str = "linux x86_64"
    exclude_newer: str | None = None
    base_image: str | None = None
    published_image: str | None = None
    title: str | None = None
    sources: dict[str, str] = field(default_factory=dict)
    origin: str = "package"  # "package" or the snapshot it came with
    digest: str = ""
    #: The lock as installers are given it: written again from its checked pins.
    lock_text: str = ""
    #: Whether every pin of the lock carries hashes (installs then check them).
    hashed: bool = False

    def pin(self, distribution: str) -> str | None:
        """The pinned version of a distribution (any spelling of its name), else None."""
        found = self.requirements.get(distribution) or self.locked.get(distribution)
        if found is not None:  # a canonical name (every key is one)
            return found
        key = canonicalize_name(distribution)
        return None if key == distribution else self.requirements.get(key) or self.locked.get(key)

    def pinned(self, distribution: str) -> str | None:
        """``name==version`` for a pinned distribution, else None."""
        version = self.pin(distribution)
        return None if version is None else f"{canonicalize_name(distribution)}=={version}"

    def summary(self) -> dict[str, Any]:
        """What reports record about the environment a case should run in."""
        return {"name": self.name, "python": self.python, "platform": self.platform,
                "exclude_newer": self.exclude_newer, "origin": self.origin, "digest": self.digest}


def available() -> list[str]:
    """Names of the packaged environments."""
    return sorted(p.parent.name for p in PACKAGE_ENVS.glob(f"*/{SPEC_FILE}"))


def packaged(name: str = DEFAULT_ENVIRONMENT) -> Environment:
    """A packaged environment by name."""
    folder = PACKAGE_ENVS / name
    if name not in available():
        raise JunoBenchError(f"no packaged environment {name!r}", file=folder,
                             hint=f"use one of {', '.join(available())}")
    return _read_cached(str(folder), "package", _stamp(folder))


def snapshot_environment(root: str | Path) -> Environment:
    """The environment of a snapshot: its ``environment/`` folder when it has one (a full
    definition, or one naming a packaged environment), else the packaged default."""
    folder = Path(root) / SNAPSHOT_FOLDER
    check_not_linked_out(folder, root)  # its files are read only inside the snapshot
    spec = folder / SPEC_FILE
    if not os.path.lexists(spec):
        return packaged()
    return _read_cached(str(folder), str(root), _stamp(folder))


def environment_files(root: str | Path) -> list[Path]:
    """The files that decide a snapshot's environment (for cache keys): its own
    ``environment/`` folder's entries, or that folder itself when it is a link out of the
    snapshot (recorded as the link, never listed or read through), then the packaged ones."""
    folder = Path(root) / SNAPSHOT_FOLDER
    if folder.is_symlink() and not link_inside(folder, Path(root)):
        own = [folder]
    else:
        own = sorted(folder.glob("*")) if folder.is_dir() else []
    return own + sorted((PACKAGE_ENVS / DEFAULT_ENVIRONMENT).glob("*"))


def own_files(root: str | Path) -> list[Path]:
    """The regular files of a snapshot's own environment declaration (``environment/``),
    sorted; links, and a folder that is a link, left out (what an export or a checkout
    carries)."""
    folder = Path(root) / SNAPSHOT_FOLDER
    if folder.is_symlink() or not folder.is_dir():
        return []
    return sorted(p for p in folder.iterdir() if p.is_file() and not p.is_symlink())


def _stamp(folder: Path) -> tuple[tuple[str, int, int], ...]:
    out = []
    for path in sorted(folder.glob("*")) if folder.is_dir() else []:
        try:
            info = path.lstat()
        except OSError:
            continue
        out.append((path.name, info.st_size, info.st_mtime_ns))
    return tuple(out)


@functools.lru_cache(maxsize=32)
def _read_cached(folder: str, origin: str, stamp: tuple[Any, ...]) -> Environment:
    return read_environment(folder, origin=origin)


def read_environment(folder: str | Path, *, origin: str = "package") -> Environment:
    """Read an environment folder; every problem is a :class:`JunoBenchError` naming the file."""
    folder = Path(folder)
    spec_path = folder / SPEC_FILE
    spec = _json_object(_read_text(spec_path, folder.parent), spec_path)
    if not isinstance(spec, dict):
        raise JunoBenchError("not a JSON object", file=spec_path,
                             hint="write the environment as {\"name\": …, \"python\": …}")
    name = check(_string(spec, "name", spec_path), is_environment_name, field="name", file=spec_path)
    if "requirements" not in spec:  # a reference to a packaged environment
        extra = sorted(set(spec) - {"name"})
        if extra:
            raise JunoBenchError(f"names packaged environment {name!r} but also sets "
                                 f"{', '.join(extra)}", file=spec_path,
                                 hint="either name a packaged environment or define one "
                                 "with python and requirements")
        if name not in available():
            raise JunoBenchError(f"no packaged environment {name!r}", file=spec_path,
                                 hint=f"use one of {', '.join(available())}, or define it "
                                 "with python and requirements")
        return packaged(name)
    python = _string(spec, "python", spec_path)
    if not is_python_version(python):
        raise JunoBenchError(f"python must be a version like 3.10, got {python!r}", file=spec_path)
    platform = spec.get("platform", "linux x86_64")
    if not isinstance(platform, str) or platform not in _PLATFORMS:
        raise JunoBenchError(f"unknown platform {platform!r}", file=spec_path,
                             hint=f"use one of {', '.join(_PLATFORMS)}")
    req_path = _member(folder, _string(spec, "requirements", spec_path), spec_path)
    req_text = _read_text(req_path, folder.parent)
    pins, kernel = parse_requirements(req_text, req_path)
    locked: dict[str, str] = {}
    lock_path = None
    lock_pins: list[Pin] = []
    if spec.get("lock") is not None:
        lock_path = _member(folder, _string(spec, "lock", spec_path), spec_path)
        lock_pins = parse_pins(_read_text(lock_path, folder.parent), lock_path, hashes=True)
        locked = _locked(lock_pins, lock_path, python, platform)
        for dist, version in pins.items():
            if locked.get(dist, version) != version:
                raise JunoBenchError(f"the lock has {dist}=={locked[dist]} but the requirements pin "
                                     f"{dist}=={version}", file=lock_path,
                                     hint="regenerate the lock (scripts/lock_environment.py)")
    for pin in parse_pins(req_text, req_path, open_requirements=True):
        if pin.version is None and pin.name not in locked:
            raise JunoBenchError(f"line {pin.line}: {str(pin)!r} is not a pin (name==version) and "
                                 "no lock pins it", file=req_path, hint="pin it, or name a lock that pins it")
    sources = spec.get("sources") or {}
    if not isinstance(sources, dict) or not all(isinstance(v, str) for v in sources.values()):
        raise JunoBenchError("sources must map each fact to where it came from (strings)",
                             file=spec_path)
    digest = hashlib.sha256()
    for path in (spec_path, req_path, lock_path):
        if path is not None:
            digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return Environment(
        name=name, python=python, folder=folder, requirements=pins, kernel=tuple(kernel),
        locked=locked, lock_file=lock_path, requirements_file=req_path, platform=platform,
        exclude_newer=_optional(spec, "exclude_newer", spec_path, is_iso_date),
        base_image=_optional(spec, "base_image", spec_path, is_image_reference) or f"python:{python}-slim",
        published_image=_optional(spec, "published_image", spec_path, is_image_reference),
        title=_optional(spec, "title", spec_path), sources=dict(sources), origin=origin,
        digest=digest.hexdigest()[:16], lock_text=lock_text(lock_pins),
        hashed=bool(lock_pins) and all(p.hashes for p in lock_pins),
    )


def parse_requirements(text: str, path: Path | str = "requirements.in") -> tuple[dict[str, str], list[str]]:
    """Pins (``name==version``: canonical name → version) and open requirements (kept as
    written, e.g. ``ipykernel>=6.20.0``; the lock must pin them) of a requirements file.
    Anything but a requirement (options, URLs, paths) is refused (:mod:`.pins`)."""
    pins: dict[str, str] = {}
    other: list[str] = []
    for pin in parse_pins(text, path, open_requirements=True):
        if pin.version is None:
            other.append(str(pin))
            continue
        if pin.name in pins:
            raise JunoBenchError(f"line {pin.line}: {pin.name} is pinned twice", file=path)
        pins[pin.name] = pin.version
    return pins, other


def parse_lock(text: str, path: Path | str = "lock.txt", *, python: str = "3.10",
               platform: str = "linux x86_64") -> dict[str, str]:
    """Canonical name → version of every distribution a lock installs for ``python`` on
    ``platform`` (entries whose markers exclude them are left out)."""
    return _locked(parse_pins(text, path, hashes=True), path, python, platform)


def _locked(pins: list[Pin], path: Path | str, python: str, platform: str) -> dict[str, str]:
    env = marker_environment(python, platform)
    out: dict[str, str] = {}
    for pin in pins:
        if pin.marker:
            try:
                if not Marker(pin.marker).evaluate(env):
                    continue
            except InvalidMarker as error:
                raise JunoBenchError(f"line {pin.line}: bad marker ({error})", file=path) from None
        assert pin.version is not None
        out[pin.name] = pin.version
    return out


def marker_environment(python: str, platform: str = "linux x86_64") -> dict[str, str]:
    """Marker values of CPython ``python`` on ``platform``."""
    return {"python_version": python, "python_full_version": f"{python}.0",
            "implementation_name": "cpython", "platform_python_implementation": "CPython",
            "platform_release": "", "platform_version": "", "implementation_version": f"{python}.0",
            **_PLATFORMS[platform]}


def _member(folder: Path, name: str, spec_path: Path) -> Path:
    """A file named by the spec: a plain name inside the environment folder."""
    if "/" in name or "\\" in name or name in ("", ".", "..") or name.startswith("."):
        raise JunoBenchError(f"{name!r} is not a file name inside the environment folder",
                             file=spec_path, hint="name a file beside environment.json")
    return folder / name


def _read_text(path: Path, root: Path) -> str:
    """The text of ``path``, a regular file, or a link to one inside the snapshot ``root``
    (or its Hub cache's blobs, where a snapshot in the Hugging Face cache links)."""
    try:
        info = path.stat() if link_inside(path, root) else path.lstat()
    except FileNotFoundError:
        raise JunoBenchError("file is missing", file=path) from None
    except OSError as error:
        raise JunoBenchError(f"cannot read ({error.strerror or error})", file=path) from None
    if not stat.S_ISREG(info.st_mode):
        raise JunoBenchError("not a regular file (links and special files are not read)", file=path)
    if info.st_size > MAX_FILE_BYTES:
        raise JunoBenchError(f"too large ({info.st_size:,} bytes; at most {MAX_FILE_BYTES:,})", file=path)
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise JunoBenchError("not UTF-8 text", file=path) from None
    except OSError as error:
        raise JunoBenchError(f"cannot read ({error.strerror or error})", file=path) from None


def _json_object(text: str, path: Path) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        raise JunoBenchError(f"not valid JSON ({error.msg} at line {error.lineno})",
                             file=path) from None
    except RecursionError:
        raise JunoBenchError("not valid JSON (nested too deeply)", file=path) from None


def _string(spec: Mapping[str, Any], key: str, path: Path) -> str:
    value = spec.get(key)
    if not isinstance(value, str) or not value.strip() or len(value) > 200:
        raise JunoBenchError(f"{key!r} must be a non-empty string", file=path)
    return value.strip()


def _optional(spec: Mapping[str, Any], key: str, path: Path,
              grammar: Callable[[object], bool] | None = None) -> str | None:
    value = spec.get(key)
    if value is not None and not isinstance(value, str):
        raise JunoBenchError(f"{key!r} must be a string", file=path)
    if value is not None and grammar is not None:
        check(value, grammar, field=key, file=path)
    return value

