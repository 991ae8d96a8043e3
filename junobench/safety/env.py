"""Notebook kernels see no credentials: the environment they get is scrubbed.

A variable is credential-like when its name (case-insensitive) ends in ``TOKEN``, ``KEY``,
``SECRET`` (also ``…_TOKENS``, ``…_KEYS``, ``…_SECRETS``, ``…_KEY_ID``), contains
``PASSWORD``, ``PASSWD``, ``CREDENTIAL`` or ``AUTH``, or starts with ``HF_`` (the Hugging
Face client's settings and token), ``HUGGING_FACE_``, ``KAGGLE_``, ``AWS_``, ``OPENAI_``,
``ANTHROPIC_`` or ``GITHUB_``; ``SSH_AUTH_SOCK`` and ``GPG_AGENT_INFO`` too, as they hand
out keys. Such variables are removed unless named in ``keep`` (``--pass-env NAME``).

>>> sorted(scrub({"PATH": "/bin", "HF_TOKEN": "x", "OPENAI_API_KEY": "y", "HOME": "/h"}))
['HOME', 'PATH']
>>> sorted(scrub({"HF_TOKEN": "x", "DB_PASSWORD": "y"}, keep=["HF_TOKEN"]))
['HF_TOKEN']
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

_CREDENTIAL = re.compile(
    r"(TOKENS?|KEYS?|SECRETS?|KEY_ID)$|PASSWORD|PASSWD|CREDENTIAL|AUTH"
    r"|^(HF_|HUGGING_?FACE_|KAGGLE_|AWS_|OPENAI_|ANTHROPIC_|GITHUB_|GH_)"
    r"|^(SSH_AUTH_SOCK|GPG_AGENT_INFO)$",
    re.IGNORECASE,
)


def is_credential(name: str) -> bool:
    """Whether the variable ``name`` looks like it holds a credential."""
    return bool(_CREDENTIAL.search(name))


def scrub(env: Mapping[str, str], *, keep: Iterable[str] = ()) -> dict[str, str]:
    """``env`` without its credential-like variables, except those named in ``keep``."""
    kept = set(keep)
    return {name: value for name, value in env.items() if name in kept or not is_credential(name)}


def removed(env: Mapping[str, str], *, keep: Iterable[str] = ()) -> list[str]:
    """The names :func:`scrub` removes from ``env`` (sorted), for messages."""
    kept = set(keep)
    return sorted(name for name in env if name not in kept and is_credential(name))
