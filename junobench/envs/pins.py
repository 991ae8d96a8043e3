"""Requirement files from a snapshot or an export are data: pins, nothing else.

A line of ``requirements.in`` or ``lock.txt`` is one ``name==version`` pin (a PEP 508
name, a PEP 440 version, optionally ``; marker``), continued with ``\\`` as pip writes
them; a lock's pins may carry ``--hash=sha256:…`` (all of them or none). Everything else
is refused with the file and line: option lines (``--index-url``, ``-r``, ``-e``,
``--find-links`` …), URLs and ``name @ url``, paths, VCS requirements, extras, wildcard
and range versions. A requirements file may hold open requirements (``ipykernel>=6.20``)
only where its lock pins them (checked by the environment's reader).

What junobench hands to an installer is written again from the parsed pins
(:func:`lock_text`), never copied from the file, so no option can ride along.

>>> [str(p) for p in parse_pins("pandas==2.1.4\\nnumpy==1.26.4 ; python_version < '3.12'")]
['pandas==2.1.4', 'numpy==1.26.4 ; python_version < "3.12"']
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

from junobench.errors import JunoBenchError
from junobench.safety.grammar import is_distribution_name, is_version

_HASH = re.compile(r"--hash[=:](sha256:[0-9a-f]{64}|sha384:[0-9a-f]{96}|sha512:[0-9a-f]{128})", re.ASCII)
#: A control character other than a tab (or DEL): never part of a requirement.
_CONTROL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")
_HINT = "one pin per line, e.g. pandas==2.1.4; a lock may add --hash=sha256:…"


@dataclass(frozen=True)
class Pin:
    """One requirement line read: ``version`` is None for an open requirement
    (``specifier`` holds it), which only a requirements file may have."""

    name: str
    version: str | None
    marker: str | None
    hashes: tuple[str, ...]
    line: int
    specifier: str = ""

    def __str__(self) -> str:
        spec = f"=={self.version}" if self.version is not None else self.specifier
        return f"{self.name}{spec}" + (f" ; {self.marker}" if self.marker else "")


def logical_lines(text: str) -> Iterator[tuple[int, str]]:
    """(first line number, text) of each logical line: comments removed (``#`` at the
    start or after a space), ``\\`` continuations joined, blank lines skipped."""
    start, parts = 0, list[str]()
    for number, raw in enumerate(text.splitlines(), start=1):
        line = _uncommented(raw)
        if not parts:
            start = number
        if line.endswith("\\"):
            parts.append(line[:-1])
            continue
        parts.append(line)
        joined = " ".join(p.strip() for p in parts).strip()
        parts = []
        if joined:
            yield start, joined
    if parts and (joined := " ".join(p.strip() for p in parts).strip()):
        yield start, joined


def _uncommented(line: str) -> str:
    if line.lstrip().startswith("#"):
        return ""
    match = re.search(r"\s#", line)
    return line[: match.start()].rstrip() if match else line.rstrip()


def parse_pins(text: str, path: Path | str = "requirements.txt", *, hashes: bool = False,
               open_requirements: bool = False) -> list[Pin]:
    """Every requirement of ``text`` as a :class:`Pin`; anything that is not a pin is a
    :class:`JunoBenchError` naming ``path`` and the line. ``hashes``: ``--hash`` options are
    allowed (a lock); ``open_requirements``: a version range without a URL is allowed
    (``ipykernel>=6.20.0``)."""
    pins = [_pin(number, line, path, hashes=hashes, open_requirements=open_requirements)
            for number, line in logical_lines(text)]
    if hashes and any(p.hashes for p in pins):
        bare = next((p for p in pins if not p.hashes), None)
        if bare is not None:
            raise JunoBenchError(f"line {bare.line}: {bare.name} has no --hash while other pins have "
                                 "them (a lock is hashed throughout or not at all)", file=path,
                                 hint="regenerate the lock (scripts/lock_environment.py)")
    return pins


def _pin(number: int, line: str, path: Path | str, *, hashes: bool, open_requirements: bool) -> Pin:
    def refuse(problem: str) -> JunoBenchError:
        shown = line if len(line) <= 80 else line[:77] + "..."
        return JunoBenchError(f"line {number}: {problem}: {shown!r}", file=path, hint=_HINT)

    if _CONTROL.search(line):
        raise refuse("a control character in a requirement")
    if line.startswith("-"):
        raise refuse("an option line is not a pin (index, link, file and editable "
                             "options are not taken from data)")
    requirement, *rest = re.split(r"\s+(?=-)", line, maxsplit=1)
    found: list[str] = []
    if rest:
        for token in rest[0].split():
            match = _HASH.fullmatch(token)
            if match is None or not hashes:
                raise refuse(f"the option {token.split('=')[0]!r} is not allowed here")
            found.append(match.group(1))
    if re.search(r"://|\s@|^@|@\s|\\|^[./~]", requirement) or requirement.startswith(("git+", "hg+", "svn+", "bzr+")):
        raise refuse("a URL, path or VCS requirement is not a pin")
    try:
        req = Requirement(requirement)
    except InvalidRequirement as error:
        reason = str(error).splitlines()[0] if str(error) else "unreadable"
        raise refuse(f"not a requirement ({reason})") from None
    if req.url is not None:
        raise refuse("a URL requirement is not a pin")
    if not is_distribution_name(req.name):
        raise refuse("not a distribution name")
    if req.extras:
        raise refuse("extras are not pinned (list each distribution on its own line)")
    marker = str(req.marker) if req.marker is not None else None
    specs = list(req.specifier)
    if len(specs) == 1 and specs[0].operator == "==" and is_version(specs[0].version):
        return Pin(canonicalize_name(req.name), specs[0].version, marker, tuple(found), number)
    if open_requirements and specs and not found:
        return Pin(canonicalize_name(req.name), None, marker, (), number, str(req.specifier))
    raise refuse("not a pin (name==version, one exact version)")


def lock_text(pins: list[Pin]) -> str:
    """A lock written again from its pins (what installers are given)."""
    lines = []
    for pin in pins:
        line = str(pin)
        if pin.hashes:
            line += "".join(f" \\\n    --hash={h}" for h in pin.hashes)
        lines.append(line)
    return "\n".join(lines) + ("\n" if lines else "")


def unhashed(text: str) -> str:
    """A lock written by :func:`lock_text` without its hashes (for pip, which would ask
    for a hash of every requirement once a constraint has one, and checks none of them)."""
    return lock_text([replace(pin, hashes=()) for pin in parse_pins(text, hashes=True)])
