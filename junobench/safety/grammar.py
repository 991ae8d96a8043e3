"""Values from data that reach a Dockerfile or a command line match their grammar.

A snapshot's ``environment.json`` names an image, a date, a Python version; its
requirement files name distributions and versions. Each is data: before it is written
into a Dockerfile or passed to a tool it must match the grammar of what it claims to be,
so that no newline, quote, ``;`` or option can turn it into a command.

- :func:`is_image_reference`: an OCI image reference (``python:3.10-slim``,
  ``ghcr.io/o/n:tag``, ``name@sha256:…``).
- :func:`is_iso_date`: an ISO 8601 date or an RFC 3339 timestamp (``2025-07-01``).
- :func:`is_environment_name`: a name of letters, digits, ``.``, ``_`` and ``-``.
- :func:`is_python_version`: ``3.N``.
- :func:`is_distribution_name` and :func:`is_version`: a PEP 508 name, a PEP 440 version.
- :func:`check`: one of these, or a :class:`JunoBenchError` naming the file and field.

>>> is_image_reference("python:3.10-slim"), is_image_reference("python:3.10\\nRUN id")
(True, False)
>>> is_iso_date("2025-07-01"), is_iso_date("2025-07-01; curl x")
(True, False)
"""

from __future__ import annotations

import datetime
import re
from collections.abc import Callable
from pathlib import Path

from junobench.errors import JunoBenchError

# The grammar of an OCI image reference (the distribution project's reference grammar):
# [host[:port]/]component(/component)*[:tag][@algorithm:hex].
_HOST_PART = r"(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])"
_HOST = rf"{_HOST_PART}(?:\.{_HOST_PART})*(?::[0-9]+)?"
_PATH_PART = r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
_TAG = r"[\w][\w.-]{0,127}"
_DIGEST = r"[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}"
_IMAGE = re.compile(rf"(?:{_HOST}/)?{_PATH_PART}(?:/{_PATH_PART})*(?::{_TAG})?(?:@{_DIGEST})?",
                    re.ASCII)
#: Longest image name (the part before the tag), as registries allow.
MAX_IMAGE_NAME = 255

_ISO = re.compile(r"(?P<y>[0-9]{4})-(?P<m>[0-9]{2})-(?P<d>[0-9]{2})"
                  r"(?:[T ](?P<H>[0-9]{2}):(?P<M>[0-9]{2})(?::(?P<S>[0-9]{2})(?:\.[0-9]{1,9})?)?"
                  r"(?:Z|[+-](?P<oH>[0-9]{2}):(?P<oM>[0-9]{2}))?)?", re.ASCII)
_NAME = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9._-]{0,98}[A-Za-z0-9])?", re.ASCII)
_PYTHON = re.compile(r"3\.[0-9]{1,3}", re.ASCII)
_DISTRIBUTION = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?", re.ASCII)


def is_image_reference(text: object) -> bool:
    """Whether ``text`` is an OCI image reference (no whitespace, no shell characters)."""
    if not isinstance(text, str) or not _IMAGE.fullmatch(text):
        return False
    name = text.split("@", 1)[0]
    last = name.rsplit("/", 1)[-1]
    if ":" in last:
        name = name[: len(name) - len(last) + last.index(":")]
    return len(name) <= MAX_IMAGE_NAME


def is_iso_date(text: object) -> bool:
    """Whether ``text`` is a calendar date ``YYYY-MM-DD`` or an RFC 3339 timestamp
    (``2025-07-01T00:00:00Z``) that exists."""
    match = _ISO.fullmatch(text) if isinstance(text, str) else None
    if match is None:
        return False
    try:
        datetime.date(int(match["y"]), int(match["m"]), int(match["d"]))
    except ValueError:
        return False
    limits = (("H", 24), ("M", 60), ("S", 60), ("oH", 24), ("oM", 60))
    return all(match[part] is None or int(match[part]) < limit for part, limit in limits)


def is_environment_name(text: object) -> bool:
    """Whether ``text`` is an environment name: 1 to 100 letters, digits, ``.``, ``_`` or
    ``-``, starting and ending with a letter or digit."""
    return isinstance(text, str) and _NAME.fullmatch(text) is not None


def is_python_version(text: object) -> bool:
    """Whether ``text`` is a Python 3 ``major.minor`` version (``3.10``)."""
    return isinstance(text, str) and _PYTHON.fullmatch(text) is not None


def is_distribution_name(text: object) -> bool:
    """Whether ``text`` is a PEP 508 distribution name."""
    return isinstance(text, str) and _DISTRIBUTION.fullmatch(text) is not None


def is_version(text: object) -> bool:
    """Whether ``text`` is a PEP 440 version (no wildcard, no spaces)."""
    from packaging.version import InvalidVersion, Version

    if not isinstance(text, str) or not text or text != text.strip() or len(text) > 100:
        return False
    try:
        Version(text)
    except InvalidVersion:
        return False
    return True


#: What each grammar is called in messages, and an example.
_GRAMMARS: dict[Callable[[object], bool], tuple[str, str]] = {
    is_image_reference: ("an image reference", "python:3.10-slim"),
    is_iso_date: ("an ISO date", "2025-07-01"),
    is_environment_name: ("a name of letters, digits, '.', '_' and '-'", "junobench-2025"),
    is_python_version: ("a Python version", "3.10"),
    is_distribution_name: ("a distribution name", "pandas"),
    is_version: ("a version", "2.1.4"),
}


def check(value: object, grammar: Callable[[object], bool], *, field: str,
          file: str | Path | None = None) -> str:
    """``value`` when it matches ``grammar`` (one of this module's predicates), else a
    :class:`JunoBenchError` naming ``file`` and ``field``."""
    if grammar(value):
        assert isinstance(value, str)
        return value
    what, example = _GRAMMARS.get(grammar, ("valid", ""))
    shown = repr(value) if len(repr(value)) <= 80 else repr(value)[:77] + "..."
    raise JunoBenchError(f"{field} must be {what}, not {shown}", file=file,
                         hint=f"e.g. {example}" if example else None)
