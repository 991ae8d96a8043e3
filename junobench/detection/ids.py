"""Task ids: the name of a notebook in a task file, blind or readable.

A *readable* id is the instance itself (``torch_7_reproduced``): it tells the answer.
A *blind* id is a keyed hash of the instance (HMAC-SHA256 under a key that only the
writer of the task file holds), so nothing in it tells a reproduced notebook from a
fixed one, nor pairs the two notebooks of a case. The ground-truth file maps blind ids
back to instances.

>>> key = b"k" * 32
>>> blind_id("torch_7_reproduced", key) == blind_id("torch_7_reproduced", key)
True
>>> is_blind_id(blind_id("torch_7_fixed", key)), is_blind_id("torch_7_fixed")
(True, False)
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets

PREFIX = "task-"
_HEX = 16
_BLIND = re.compile(rf"^{PREFIX}[0-9a-f]{{{_HEX}}}$")


def new_key() -> bytes:
    """A fresh random key: ids that nobody can recompute."""
    return secrets.token_bytes(32)


def key_from_text(text: str) -> bytes:
    """A key from a passphrase, for task files whose ids must match across runs."""
    return hashlib.sha256(text.encode("utf-8")).digest()


def blind_id(instance: str, key: bytes) -> str:
    """``task-`` and 16 hex digits of HMAC-SHA256(key, instance)."""
    digest = hmac.new(key, instance.encode("utf-8"), hashlib.sha256).hexdigest()
    return PREFIX + digest[:_HEX]


def is_blind_id(text: str) -> bool:
    return bool(_BLIND.match(text))
