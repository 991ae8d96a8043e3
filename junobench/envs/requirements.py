"""What a case needs: its notebooks' imports mapped to distributions, pinned by an environment.

Imports are read line by line from the code cells of every version of a case's notebooks
(``import a.b, c as d``, ``from a.b import c``, also indented and after ``;``), and so
are ``%pip install`` / ``!pip install`` / ``!python -m pip install`` lines. Relative
imports and the standard library need nothing. A module that sits in the case folder
(``helpers.py``, ``helpers/``) is local. Every other import is mapped to the distribution
that provides it (:data:`IMPORT_NAMES` for names that differ, else the distribution of
the same normalised name) and pinned from the environment; what the environment does not
pin is reported, never guessed.

>>> from junobench.envs.environment import packaged
>>> need = requirements_of(["import numpy as np\\nfrom sklearn.svm import SVC", "import os"],
...                        packaged("junobench-2025"))
>>> need.requirements, need.unpinned
(['numpy==1.26.4', 'scikit-learn==1.2.2'], [])
"""

from __future__ import annotations

import functools
import json
import os
import re
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

from junobench.envs.environment import Environment

_MAPPING_FILE = Path(__file__).resolve().parent / "import_names.json"

#: Standard-library modules removed from Python after 3.10 (still standard in the
#: benchmark's Python 3.10): PEP 594, distutils and imp.
REMOVED_STDLIB = frozenset({
    "aifc", "asynchat", "asyncore", "audioop", "cgi", "cgitb", "chunk", "crypt", "distutils",
    "imghdr", "imp", "lib2to3", "mailcap", "msilib", "nis", "nntplib", "ossaudiodev", "pipes",
    "smtpd", "sndhdr", "spwd", "sunau", "telnetlib", "uu", "xdrlib",
})
STDLIB = frozenset(sys.stdlib_module_names) | REMOVED_STDLIB

# An import statement, matched at the start of a statement (a line, or a part of a line
# after ';'): module names only, the names imported from a module are not modules of their own.
_IMPORT = re.compile(
    r"[ \t]*(?:from[ \t]+(?P<from>\.*[\w.]*)[ \t]+import\b|import[ \t]+(?P<import>[\w.]+(?:[ \t]+as[ \t]+\w+)?"
    r"(?:[ \t]*,[ \t]*[\w.]+(?:[ \t]+as[ \t]+\w+)?)*))"
)
# A pip install command, matched at the start of a line.
_PIP = re.compile(r"[ \t]*[!%][ \t]*(?:pip3?|python3?[ \t]+-m[ \t]+pip)[ \t]+install\b(?P<args>[^\n]*)")
#: pip options that take a value (the value is not a requirement).
_PIP_VALUE_OPTIONS = frozenset({"-r", "--requirement", "-c", "--constraint", "-e", "--editable",
                                "-i", "--index-url", "--extra-index-url", "-f", "--find-links",
                                "-t", "--target", "--prefix", "--root", "--platform",
                                "--python-version", "--implementation", "--abi", "--src",
                                "--upgrade-strategy", "--progress-bar", "--trusted-host",
                                "--cache-dir", "--log", "--proxy", "--timeout", "--retries"})


@dataclass(frozen=True)
class Import:
    """A module a notebook needs and where that need comes from (``import`` or ``pip``)."""

    module: str
    how: str = "import"


@dataclass
class Needs:
    """A case's requirements: ``requirements`` (sorted ``name==version``), ``unpinned``
    (what the environment does not pin, e.g. ``import clip``), ``local`` modules of the
    case folder, and the distribution each import resolved to."""

    requirements: list[str] = field(default_factory=list)
    unpinned: list[str] = field(default_factory=list)
    local: list[str] = field(default_factory=list)
    resolved: dict[str, str | None] = field(default_factory=dict)


def imports_of(source: str) -> list[Import]:
    """Top-level modules a cell imports or pip-installs, in order of appearance."""
    return [Import(module, how) for module, how in _imported(source)]


def _imported(source: str) -> Iterator[tuple[str, str]]:
    """``(module, how)`` of each import of :func:`imports_of`, without an object each:
    the imports, then the pip installs."""
    yield from _import_names(source)
    yield from _pip_names(source)


def _import_names(source: str) -> Iterator[tuple[str, str]]:
    """The imports of :func:`_imported`. Only the lines holding ``import`` are looked at,
    and the pattern is tried once at the start of each statement, not at every character."""
    match_import = _IMPORT.match
    for line in source.split("\n"):
        if "import" not in line:
            continue
        for statement in line.split(";") if ";" in line else (line,):
            match = match_import(statement)
            if match is None:
                continue
            module, names = match.groups()
            if module is not None:
                if module and module[0] != ".":
                    yield module, "import"
                continue
            for part in names.split(","):
                words = part.split()
                if words:
                    yield words[0], "import"


def _pip_names(source: str) -> Iterator[tuple[str, str]]:
    """The pip installs of :func:`_imported` (lines holding ``install``)."""
    for line in source.split("\n"):
        if "install" in line and (match := _PIP.match(line)) is not None:
            for name in pip_requirements(match.group("args")):
                yield name, "pip"


def pip_requirements(args: str) -> list[str]:
    """Distribution names a ``pip install`` command line asks for (options and their
    values, paths and URLs skipped)."""
    words = args.split("#", 1)[0].replace(";", " ").split()
    names: list[str] = []
    skip = False
    for word in words:
        if skip:
            skip = False
            continue
        if word.startswith("-"):
            skip = word in _PIP_VALUE_OPTIONS
            continue
        if any(c in word for c in "/\\:$") or word.startswith((".", "{")):
            continue
        try:
            names.append(Requirement(word.strip("'\"")).name)
        except InvalidRequirement:
            continue
    return names


@functools.cache
def import_names() -> dict[str, str | None]:
    """Import name → distribution, for names that differ (None: not on PyPI)."""
    data = json.loads(_MAPPING_FILE.read_text(encoding="utf-8"))
    return {k: v for k, v in data.items() if not k.startswith("_")}


def distribution_of(module: str) -> str | None:
    """The distribution that provides ``module`` (a dotted name): the mapping's longest
    matching key, else the top-level name, normalised. None for a hosted-platform module."""
    key = _mapped(module)
    return import_names()[key] if key is not None else canonicalize_name(module.split(".")[0])


def _mapped(module: str) -> str | None:
    """The longest dotted prefix of ``module`` that the mapping names, None when none does."""
    parts = module.split(".")
    mapping = import_names()
    return next((key for end in range(len(parts), 0, -1) if (key := ".".join(parts[:end])) in mapping), None)


def is_stdlib(module: str) -> bool:
    return module.split(".")[0] in STDLIB


def requirements_of(sources: Iterable[str], env: Environment, *,
                    local: Iterable[str] = ()) -> Needs:
    """What cells ``sources`` need from ``env``. ``local`` are the module names the case
    folder provides."""
    own = set(local)
    needs = Needs()
    pins: set[str] = set()
    unpinned: dict[str, None] = {}
    imports: list[tuple[str, str]] = []
    installs: list[tuple[str, str]] = []
    for cell in dict.fromkeys(sources):  # each distinct cell once; most import nothing
        if "import" in cell:
            imports += _import_names(cell)
        if "install" in cell:
            installs += _pip_names(cell)
    local_ = needs.local
    resolved = needs.resolved
    pin = env.pin
    for module, how in dict.fromkeys(imports + installs):  # each once, in order
        top, standard, dist, label = _resolved(module, how)
        if top is not None and (standard or top in own):
            if top in own and top not in local_:
                local_.append(top)
            continue
        resolved.setdefault(label, None)
        version = None if dist is None else pin(dist)
        if version is None:
            unpinned.setdefault(label, None)
            continue
        resolved[label] = dist
        pins.add(f"{dist}=={version}")
    needs.requirements = sorted(pins)
    needs.unpinned = sorted(unpinned)
    needs.local.sort()
    return needs


@functools.lru_cache(maxsize=4096)
def _resolved(module: str, how: str) -> tuple[str | None, bool, str | None, str]:
    """What an import needs: its top-level module (None for a pip install) and whether
    that is in the standard library; its distribution, canonical (None: not on PyPI); and
    how the report names the import."""
    if how == "pip":
        return None, False, canonicalize_name(module), f"pip install {module}"
    top = module.split(".", 1)[0]
    dist = distribution_of(module)
    return (top, top in STDLIB, None if dist is None else canonicalize_name(dist),
            f"import {_shown(module)}")


def _shown(module: str) -> str:
    """The part of a dotted module that decides its distribution (``google.colab``, ``torch``)."""
    return _mapped(module) or module.split(".")[0]


def local_modules(folder: str | Path, entries: Iterable[os.DirEntry[str]] | None = None
                  ) -> list[str]:
    """Module names a case folder provides (``x.py`` files and ``x/`` packages at its top);
    ``entries``: the folder's entries when the caller has listed it already."""
    out = []
    try:
        if entries is None:
            with os.scandir(folder) as found:
                entries = list(found)
        for entry in entries:
            name = entry.name
            if name.endswith(".py") and name[:-3].isidentifier():
                out.append(name[:-3])
            elif (name.isidentifier() and entry.is_dir(follow_symlinks=False)
                  and os.path.isfile(os.path.join(folder, name, "__init__.py"))):
                out.append(name)
    except OSError:
        return []
    return sorted(out)
