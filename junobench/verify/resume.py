"""Resuming a run from what it wrote: what already has a verdict is not run again.

``verify --report FILE``, ``runtime-info --out FILE`` and ``construct reproduce --out FILE``
write their results as they come. Rerunning the same command keeps each entry that has a
verdict and whose inputs are unchanged, and runs the rest: entries never reached,
infrastructure errors (a lost worker is not a verdict), and cases whose notebooks, data
or time limit changed since. The inputs are summarised by :func:`inputs_digest`, stored
with each entry.

>>> inputs_digest(sample_path() / "benchmark" / "pandas_1", timeout=600)[:12]   # doctest: +SKIP
'3f1c0a9e5b27'
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable
from pathlib import Path

from junobench.errors import JunoBenchError


def inputs_digest(folder: str | Path, *, timeout: float | None, notebooks: Iterable[str] = (),
                  extra: str = "") -> str:
    """A digest of what a replay of ``folder`` depends on: the bytes of the ``notebooks``
    named (paths relative to it; default every ``.ipynb``), the relative path and size of
    every other file, the ``timeout``, and ``extra`` (e.g. the kernel's environment)."""
    root = Path(folder)
    names = sorted(notebooks)
    digest = hashlib.sha256(f"timeout={timeout!r}\nextra={extra}\n".encode())
    try:
        files = sorted(_files(root))
        if not names:
            names = [name for name in files if name.endswith(".ipynb")]
        for name in names:
            digest.update(f"notebook {name}\n".encode())
            digest.update((root / name).read_bytes())
        for name in files:
            if name not in names:
                digest.update(f"file {name} {(root / name).stat().st_size}\n".encode())
    except OSError as error:
        raise JunoBenchError(f"cannot read the case folder ({error})", file=root) from None
    return digest.hexdigest()


def _files(root: Path) -> Iterable[str]:
    for folder, _, names in os.walk(root):
        for name in names:
            yield (Path(folder) / name).relative_to(root).as_posix()
