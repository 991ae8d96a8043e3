"""JSON Lines: the one reader and the one writer of every ``.jsonl`` file junobench reads
or writes (tasks, ground truth, predictions, runtime information, judgments, judge labels).

Lines end at ``"\\n"`` only. The writer keeps text as it is (``ensure_ascii=False``), so a
value may hold U+2028, U+2029 or U+0085, which :meth:`str.splitlines` would take for line
ends; the reader never splits there, so every file written here reads back as written:

>>> import json
>>> text = json_line({"source": "s = 'a\\u2028b\\u0085c'"})
>>> [json.loads(line) for _, line in lines(text)] == [{"source": "s = 'a\\u2028b\\u0085c'"}]
True

Any problem is a :class:`~junobench.errors.JunoBenchError` naming the file, the line and
(when known) the instance.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from junobench import vocab
from junobench.errors import JunoBenchError
from junobench.safety.atomic import atomic_open, write_text
from junobench.safety.paths import MAX_TEXT_BYTES, read_regular


def json_line(row: Any) -> str:
    """One JSON Lines line (with its newline), text kept as it is."""
    return json.dumps(row, ensure_ascii=False) + "\n"


def write_jsonl(path: str | Path, rows: Iterable[Any]) -> Path:
    """Write rows as JSON Lines atomically (beside, then moved over ``path``)."""
    path = Path(path)
    with atomic_open(path) as handle:
        for row in rows:
            handle.write(json_line(row))
    return path


def lines(text: str) -> Iterator[tuple[int, str]]:
    """The non-blank lines of JSON Lines text with their numbers (from 1), split at
    ``"\\n"`` only."""
    for number, line in enumerate(text.split("\n"), start=1):
        if line.strip():
            yield number, line


def read_text(path: Path, *, what: str, hint: str | None = None) -> str:
    """A text file's content, bounded, a regular file only (no link followed); a byte-order
    mark that begins it (as Windows editors write UTF-8) is not part of the content."""
    try:
        return read_regular(path, limit=MAX_TEXT_BYTES).decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise JunoBenchError(f"cannot read the {what}: not UTF-8 text ({error.reason} at byte "
                             f"{error.start})", file=path, hint=hint) from None
    except OSError as error:
        raise JunoBenchError(f"cannot read the {what} ({error.strerror or error})", file=path,
                             hint=hint) from None


def read_jsonl(path: str | Path, *, what: str, hint: str | None = None,
               problem_of: Callable[[Any], str | None] = lambda record: None,
               loads: Callable[[str], Any] = json.loads, resume: bool = False
               ) -> list[tuple[int, Any]]:
    """The records of a JSON Lines file with their line numbers, in file order.

    ``problem_of`` says what is wrong with a record (or None); a line that is not JSON, or
    has a problem, fails naming the line. ``resume``: the file is one a writer appends to
    and may have been interrupted, so a last line cut short (no newline, not a good
    record) is dropped from the file, which is rewritten without it; a missing file has no
    records."""
    path = Path(path)
    if resume and not path.exists():
        return []
    text = read_text(path, what=what, hint=hint)
    out: list[tuple[int, Any]] = []
    last = text.count("\n") + 1
    for number, line in lines(text):
        try:
            record = loads(line)
            problem = problem_of(record)
            said = None if problem is None else f"line {number}: {problem}"
        except (ValueError, RecursionError) as error:
            said = f"line {number} is not valid JSON ({error})"
        if said is None:
            out.append((number, record))
            continue
        if resume and number == last:
            write_text(path, text[:text.rfind("\n") + 1])
            return out
        raise JunoBenchError(said, file=path, hint=hint)
    if resume and text and not text.endswith("\n"):
        write_text(path, text + "\n")  # appends start on a line of their own
    return out


def read_instance_records(path: str | Path, *, what: str, hint: str,
                          problem_of: Callable[[dict[str, Any]], str | None],
                          id_of: Callable[[dict[str, Any]], str | None] | None = None
                          ) -> list[dict[str, Any]]:
    """The records of ``path`` in file order, each a JSON object with an ``instance`` id
    (such as ``torch_7_fixed``) at most once per file; ``problem_of`` checks a record's own
    fields (after the instance id is checked) and returns what is wrong, or None.

    ``id_of`` replaces the instance check: it returns the record's id, or None when the
    record has none (for files keyed by another id, such as blind task ids)."""
    path = Path(path)
    out: list[dict[str, Any]] = []
    seen: set[str] = set()
    for number, record in read_jsonl(path, what=what, hint=hint):
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


def dict_problem(record: Any) -> str | None:
    """``problem_of`` for files of JSON objects."""
    return None if isinstance(record, Mapping) else "not a JSON object"
