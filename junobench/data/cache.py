"""Where junobench keeps what it derives: prepared records and Arrow copies of exports."""

from __future__ import annotations

import os
from pathlib import Path


def cache_root(cache_dir: str | Path | None = None) -> Path:
    """Where prepared records live: ``cache_dir``, ``$JUNOBENCH_CACHE`` or ~/.cache/junobench."""
    if cache_dir is not None:
        return Path(cache_dir)
    env = os.environ.get("JUNOBENCH_CACHE")
    return Path(env) if env else Path.home() / ".cache" / "junobench"
