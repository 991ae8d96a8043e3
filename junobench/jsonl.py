"""JSONL files of one record per notebook instance (tasks, runtime information): reading
them, and :func:`write_jsonl`.

Each non-blank line is a JSON object with an ``instance`` id such as ``torch_7_fixed``,
at most once per file. Any problem is a :class:`~junobench.errors.JunoBenchError` naming
the file, the line and (when known) the instance.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from junobench import vocab
from junobench.errors import JunoBenchError
from junobench.safety.atomic import atomic_open
from junobench.safety.paths import MAX_TEXT_BYTES, read_regular


def write_jsonl(path: str | Path, rows: Iterable[Mapping[str, Any]]) -> Path:
    """Write rows as JSON Lines atomically (beside, then moved over ``path``)."""
    path = Path(path)
    with atomic_open(path) as handle:
        for row in rows:
            handle.write(json.dumps(row, ensure_ascii=False) + "\n")
    return path


def read_instance_records(path: str | Path, *, what: str, hint: str,
                          problem_of: Callable[[dict[str, Any]], str | None],
                          id_of: Callable[[dict[str, Any]], str | None] | None = None
                          ) -> list[dict[str, Any]]:
    """The records of ``path`` in file order; ``problem_of`` checks a record's own fields
    (after the instance id is checked) and returns what is wrong, or None.

    ``id_of`` replaces the instance check: it returns the record's id, or None when the
    record has none (for files keyed by another id, such as blind task ids)."""
    path = Path(path)
    try:
        text = read_regular(path, limit=MAX_TEXT_BYTES).decode("utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise JunoBenchError(f"cannot read the {what} ({error})", file=path, hint=hint) from None
    out: list[dict[str, Any]] = []
    seen: set[str] = set()
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except (ValueError, RecursionError) as error:
            raise JunoBenchError(f"line {number} is not valid JSON ({error})", file=path, hint=hint) from None
        if id_of is None:
            problem = _instance_problem(record)
            key = record.get("instance") if isinstance(record, dict) else None
        else:
            key = id_of(record) if isinstance(record, dict) else None
            problem = None if key is not None else "no id"
        problem = problem or problem_of(record)
        if problem or not isinstance(key, str):
            raise JunoBenchError(f"line {number}: {problem}", file=path, hint=hint,
                                 case=key if isinstance(key, str) else None)
        if key in seen:
            raise JunoBenchError(f"line {number}: instance {key!r} appears twice",
                                 file=path, hint=hint)
        seen.add(key)
        out.append(record)
    return out


def _instance_problem(record: Any) -> str | None:
    if not isinstance(record, dict):
        return "not a JSON object"
    instance = record.get("instance")
    if not isinstance(instance, str):
        return "no 'instance' string"
    try:
        vocab.split_instance(instance)
    except ValueError as error:
        return str(error)
    return None
