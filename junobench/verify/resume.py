"""Resuming a run from what it wrote: what already has a verdict is not run again.

``verify --report FILE``, ``runtime-info --out FILE`` and ``construct reproduce --out FILE``
write their results as they come. Rerunning the same command keeps each entry that has a
verdict and whose inputs are unchanged, and runs the rest: entries never reached,
infrastructure errors (a lost worker is not a verdict), and cases whose notebooks, data
or time limit changed since. The inputs are summarised by :func:`inputs_digest`, stored
with each entry.

>>> from junobench.data.snapshot import sample_path
>>> case = sample_path() / "benchmark" / "pandas_1"
>>> inputs_digest(case, timeout=600) == inputs_digest(case, timeout=600)
True
>>> inputs_digest(case, timeout=600) == inputs_digest(case, timeout=60)   # a new time limit
False
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from junobench.data.digests import ContentDigests
from junobench.errors import JunoBenchError
from junobench.verify.report import VERDICT_STATUSES, CaseResult


def inputs_digest(folder: str | Path, *, timeout: float | None, notebooks: Iterable[str] = (),
                  extra: str = "") -> str:
    """A digest of what a replay of ``folder`` depends on: the bytes of the ``notebooks``
    named (paths relative to it; default every ``.ipynb``), the relative path and sha256 of
    every other file (remembered by :mod:`junobench.data.digests`, so unchanged data is not
    read again), the ``timeout``, and ``extra`` (e.g. the kernel's environment)."""
    root = Path(folder)
    names = sorted(notebooks)
    digest = hashlib.sha256(f"timeout={timeout!r}\nextra={extra}\n".encode())
    try:
        files = sorted(_files(root))
        if not names:
            names = [name for name in files if name.endswith(".ipynb")]
        for name in names:
            digest.update(os.fsencode(f"notebook {name}\n"))  # a name's own bytes, UTF-8 or not
            digest.update((root / name).read_bytes())
        with ContentDigests() as contents:
            for name in files:
                if name not in names:
                    digest.update(os.fsencode(f"file {name} {contents.sha256(root / name)}\n"))
    except OSError as error:
        raise JunoBenchError(f"cannot read the case folder ({error})", file=root) from None
    return digest.hexdigest()


def _files(root: Path) -> Iterable[str]:
    for folder, _, names in os.walk(root):
        for name in names:
            yield (Path(folder) / name).relative_to(root).as_posix()


def earlier_results(path: str | Path) -> dict[str, Any]:
    """Case id → entry of an earlier verify report at ``path`` ({} when there is none); a
    file that is not a verify report is an error (it is not ours to replace). It is read
    as a regular file only (a FIFO never blocks), up to :data:`MAX_TEXT_BYTES`."""
    import json

    from junobench.safety.paths import MAX_TEXT_BYTES, read_regular

    file = Path(path)
    if not file.exists():
        return {}
    try:
        data = json.loads(read_regular(file, limit=MAX_TEXT_BYTES).decode("utf-8"))
    except (OSError, ValueError, RecursionError) as error:
        reason = "nested too deeply" if isinstance(error, RecursionError) else error
        raise JunoBenchError(f"cannot read the earlier report ({reason})", file=file,
                             hint="choose another --report, or remove the file to start afresh") from None
    cases = data.get("cases") if isinstance(data, dict) else None
    if not isinstance(cases, dict) or not all(isinstance(v, dict) for v in cases.values()):
        raise JunoBenchError("the file is not a verify report", file=file,
                             hint="choose another --report, or remove the file to start afresh")
    return cases


def kept_results(entries: Mapping[str, Any], digests: Mapping[str, str]) -> dict[str, CaseResult]:
    """The earlier results to keep: a verdict (not an infrastructure error) given for the
    same inputs (``digests``: case id → :func:`inputs_digest` now)."""
    kept = {}
    for case_id, digest in digests.items():
        entry = entries.get(case_id)
        if not entry or entry.get("inputs") != digest or entry.get("status") not in VERDICT_STATUSES:
            continue
        try:
            kept[case_id] = CaseResult.from_json(case_id, entry)
        except (KeyError, TypeError, ValueError):
            continue  # a damaged entry: run the case again
    return kept
