"""Runtime-information files: reading them, dropping categories, and the prompt's text.

A file written by ``junobench runtime-info`` holds one JSON record per notebook
(:data:`~junobench.runtime.extract.RECORD_FIELDS`). :func:`runtime_texts` turns the usable
ones into the text that :mod:`junobench.detection.tasks` stores as a task's ``runtime_info`` and
:mod:`junobench.detection.prompt` places between the executed cells and the target cell.

>>> record = {"instance": "pandas_1_reproduced", "status": "ok", "undefined": ["X"],
...           "objects": {"df": {"S": {"shape": [3, 2]}, "R": {"type": "pandas.DataFrame"}}},
...           "environment": {"R": {"python": "3.11.7", "libraries": {"pandas": "3.1.1"}}}}
>>> print(runtime_text(record))
Objects the target cell uses, as they are in the kernel before it runs:
df: pandas.DataFrame
  shape: [3, 2]
Not defined in the kernel: X
Environment: Python 3.11.7; pandas 3.1.1
>>> print(runtime_text(record, exclude=["R"]))
Objects the target cell uses, as they are in the kernel before it runs:
df:
  shape: [3, 2]
Not defined in the kernel: X
"""

from __future__ import annotations

import copy
import functools
import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from junobench.errors import JunoBenchError
from junobench.jsonl import read_instance_records
from junobench.runtime import crane
from junobench.runtime.summarise import CATEGORIES
from junobench.safety.text import shortened

_HINT = "write it with `junobench runtime-info --out FILE.jsonl`"
_NESTED = ("column_values",)  # dict fields shown one entry per line


def read_runtime_info(path: str | Path) -> dict[str, dict[str, Any]]:
    """Records of a runtime-information file, by instance."""
    records = read_instance_records(path, what="runtime-information file", hint=_HINT,
                                    problem_of=_record_problem)
    return {record["instance"]: record for record in records}


def _record_problem(record: dict[str, Any]) -> str | None:
    if record.get("status") not in ("ok", "failed", "skipped"):
        return "'status' must be ok, failed or skipped"
    if not isinstance(record.get("objects", {}), dict):
        return "'objects' must map names to summaries"
    if record["status"] == "ok":
        fields = {k: record[k] for k in ("objects", "undefined", "environment", "capped", "annotations")
                  if k in record}
        return payload_problem({"objects": {}, "undefined": [], "environment": {}, **fields},
                               str(record.get("style") or ""))
    return None


#: The schema of what a kernel answers to the inspection (and of those fields of a record).
PAYLOAD_SCHEMA = Path(__file__).resolve().parent.parent / "schemas" / "runtime_payload.schema.json"


@functools.cache
def _payload_validators() -> tuple[Any, Any]:
    from jsonschema import Draft202012Validator

    schema = json.loads(PAYLOAD_SCHEMA.read_text())
    styled = copy.deepcopy(schema)
    styled["properties"]["objects"]["additionalProperties"] = {"$ref": "#/$defs/summary"}
    return Draft202012Validator(schema), Draft202012Validator(styled)


def payload_problem(payload: Any, style: str = "junobench") -> str | None:
    """What is wrong with ``payload``, a kernel's answer to the runtime-information
    inspection (:data:`PAYLOAD_SCHEMA`; summaries in junobench's ``style`` also must be S,
    R and V fields), or None; a value too deep to check is wrong too.

    >>> payload_problem([1])
    "the kernel's answer is not what the inspection returns: [1] is not of type 'object'"
    >>> payload_problem({"objects": {"df": {"R": {"type": "DataFrame"}}}, "undefined": [], "environment": {}})
    """
    plain, styled = _payload_validators()
    validator = plain if style == crane.STYLE else styled
    try:
        error = next(iter(sorted(validator.iter_errors(payload), key=lambda e: list(e.path))), None)
    except RecursionError:
        return "the kernel's answer is nested too deep"
    if error is None:
        return None
    where = "/".join(str(p) for p in error.absolute_path)
    return (f"the kernel's answer is not what the inspection returns{f' at {where}' if where else ''}: "
            f"{shortened(error.message, 201)}")


def drop_categories(record: Mapping[str, Any], exclude: Iterable[str]) -> dict[str, Any]:
    """A copy of ``record`` without the fields of the ``exclude`` categories (S, R, V)."""
    dropped = {c.upper() for c in exclude}
    unknown = sorted(dropped - set(CATEGORIES))
    if unknown:
        raise JunoBenchError(f"unknown runtime-information categor{'y' if len(unknown) == 1 else 'ies'} "
                             f"{', '.join(unknown)}", hint="use S, R or V")
    out = copy.deepcopy(dict(record))
    out["objects"] = {name: {k: v for k, v in summary.items() if k not in dropped}
                      for name, summary in (record.get("objects") or {}).items()}
    out["environment"] = {k: v for k, v in (record.get("environment") or {}).items() if k not in dropped}
    kept = [c for c in record.get("categories", CATEGORIES) if c not in dropped]
    out["categories"] = kept
    return out


def runtime_text(record: Mapping[str, Any], *, exclude: Iterable[str] = ()) -> str:
    """The prompt text of one record: each object (type, then its S, R and V fields), the
    names the target cell reads that the kernel does not define, and library versions; a
    record in CRANE-LLM's style (``style: "crane"``) gives CRANE-LLM's text, the
    ``pprint``-ed summaries (:func:`junobench.runtime.crane.text`)."""
    exclude = list(exclude)
    if record.get("style") == crane.STYLE:
        unknown = sorted({c.upper() for c in exclude} - set(CATEGORIES))
        if unknown:
            raise JunoBenchError(f"unknown runtime-information categories {', '.join(unknown)}",
                                 hint="use S, R or V")
        summaries = {name: crane.decode(value)
                     for name, value in (record.get("objects") or {}).items()}
        return crane.text(crane.drop(summaries, exclude))
    if exclude:
        record = drop_categories(record, exclude)
    lines = ["Objects the target cell uses, as they are in the kernel before it runs:"]
    objects = record.get("objects") or {}
    if not objects:
        lines.append("(none: the target cell reads no variable of the kernel)")
    for name, summary in objects.items():
        lines.extend(_object_lines(name, summary))
    capped = record.get("capped")
    if capped and capped.get("omitted"):
        lines.append(f"Left out to keep this short: {', '.join(capped['omitted'])}")
    if record.get("undefined"):
        lines.append(f"Not defined in the kernel: {', '.join(record['undefined'])}")
    environment = (record.get("environment") or {}).get("R") or {}
    if environment:
        parts = [f"Python {environment['python']}"] if environment.get("python") else []
        parts += [f"{k} {v}" for k, v in (environment.get("libraries") or {}).items()]
        lines.append(f"Environment: {'; '.join(parts)}")
    return "\n".join(lines)


def _object_lines(name: str, summary: Mapping[str, Any]) -> list[str]:
    representation = dict(summary.get("R") or {})
    kind = representation.pop("type", None)
    lines = [f"{name}: {kind}" if kind else f"{name}:"]
    fields = [*(summary.get("S") or {}).items(), *representation.items(), *(summary.get("V") or {}).items()]
    for key, value in fields:
        if key == "attributes" and isinstance(value, dict):
            used = ", ".join(f"{a} ({how})" for a, how in value.items())
            lines.append(f"  attributes the target cell uses: {used}")
        elif key in _NESTED and isinstance(value, dict):
            lines.append(f"  {key}:")
            lines.extend(f"    {k}: {_json(v)}" for k, v in value.items())
        elif key == "value":
            lines.append(f"  {key}: {json.dumps(value, ensure_ascii=False)}")
        else:
            lines.append(f"  {key}: {_json(value)}")
    if summary.get("truncated"):
        lines.append(f"  (summary cut to {summary['truncated'].get('limit')} characters)")
    return lines


def _json(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def runtime_style(path: str | Path) -> str:
    """The style of a runtime-information file's records (``junobench`` or ``crane``); a
    file mixing them is an error."""
    styles = {str(record.get("style") or "junobench") for record in read_runtime_info(path).values()}
    if len(styles) > 1:
        raise JunoBenchError(f"records in several styles ({', '.join(sorted(styles))})", file=path,
                             hint="extract all notebooks of a file in one --style")
    return styles.pop() if styles else "junobench"


def runtime_annotations(path: str | Path) -> dict[str, dict[str, str]]:
    """Instance → {name: type} of the records of ``path`` extracted in CRANE-LLM's style
    (the names' types for the static analysers' annotations); an error for a file in
    junobench's style, whose records have none."""
    if runtime_style(path) != crane.STYLE:
        raise JunoBenchError("type annotations come from runtime information in CRANE-LLM's "
                             "style", file=path, hint="extract it with `junobench runtime-info "
                             "--style crane`")
    out: dict[str, dict[str, str]] = {}
    for instance, record in read_runtime_info(path).items():
        found = record.get("annotations")
        if record["status"] == "ok" and isinstance(found, dict):
            out[instance] = {str(k): str(v) for k, v in found.items()
                             if isinstance(k, str) and isinstance(v, str)}
    return out


def runtime_texts(path: str | Path, *, exclude: Iterable[str] = ()) -> dict[str, str]:
    """Instance → prompt text, for the records of ``path`` whose extraction succeeded."""
    exclude = list(exclude)
    return {instance: runtime_text(record, exclude=exclude)
            for instance, record in read_runtime_info(path).items() if record["status"] == "ok"}
