"""Crash-detection predictions: raw runs per notebook, the canonical JSONL format, run parsing.

Canonical format: one JSON object per line, ``{"instance": "torch_7_reproduced", "runs":
[raw output, ...]}``; a raw output is whatever the detector answered (usually a string, or
an object ``{"reasoning": str, "detection": bool}``). ``instance`` may also be a blind task
id (``task-…``, see :mod:`junobench.detection.ids`), mapped back through the ground-truth
file. The published folder layouts are read by :mod:`junobench.detection.layouts`.

A run is parsed tolerantly by :func:`parse_run`; what cannot be read is reported as
unparsable, never guessed.

>>> parse_run('{"reasoning": "x is undefined", "detection": true}').detection
True
>>> parse_run('Sure! ```json\\n{"detection": false}\\n```').detection
False
>>> parse_run("FALSE").detection
False
>>> parse_run("[Error-skipping]").detection is None
True
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from junobench import jsonl, vocab
from junobench.detection.ids import is_blind_id
from junobench.detection.names import CANONICAL
from junobench.errors import JunoBenchError
from junobench.safety.paths import read_regular

_BARE = re.compile(r"^[\s\"'`*_\[(]*(true|false)[\s\"'`*_\])]*\.?\s*$", re.IGNORECASE)
_THINK_END = re.compile(r"</think(?:ing)?>", re.IGNORECASE)
_THINK_BLOCK = re.compile(r"<(think(?:ing)?)>.*?</\1>", re.IGNORECASE | re.DOTALL)


# --------------------------------------------------------------------------- runs


@dataclass(frozen=True, slots=True)
class Verdict:
    """One run read: ``detection`` is None when the output is unparsable (``problem`` says why)."""

    detection: bool | None
    reasoning: str | None = None
    problem: str | None = None

    @property
    def valid(self) -> bool:
        return self.detection is not None


def parse_run(raw: Any) -> Verdict:
    """Read one raw output: a ``{"detection": bool, "reasoning": str}`` object (also inside
    prose or a code fence, or as a JSON string), a boolean, or a bare ``TRUE``/``FALSE``.

    Reasoning models' ``<think>…</think>`` blocks are ignored. Anything else, including
    text with conflicting objects, is unparsable.
    """
    if isinstance(raw, bool):
        return Verdict(raw)
    if isinstance(raw, Mapping):
        return _from_object(raw)
    if not isinstance(raw, str):
        return Verdict(None, problem=f"a run must be text or an object, not {value_kind(raw)}")
    text = _strip_thinking(raw).strip()
    if not text:
        return Verdict(None, problem="empty output")
    bare = _BARE.match(text)
    if bare:
        return Verdict(bare.group(1).lower() == "true")
    try:
        whole = loads(text)
    except (ValueError, RecursionError):
        whole = None
    if isinstance(whole, (dict, bool)) or (isinstance(whole, str) and whole != text):
        return parse_run(whole)  # the whole output is JSON: an object, or an encoded string
    verdicts = [_from_object(o) for o in _objects(text)]
    repeated = next((v for v in verdicts if v.problem and "twice" in v.problem), None)
    if repeated is not None:
        return repeated
    found = [v for v in verdicts if v.valid]
    if not found:
        return Verdict(None, problem="no JSON object with a boolean 'detection' and not TRUE/FALSE")
    if len({v.detection for v in found}) > 1:
        return Verdict(None, problem="conflicting detections in one output")
    return found[0]


class _Repeated(dict):  # type: ignore[type-arg]
    """A JSON object that named some key more than once (``repeated`` holds them)."""

    repeated: frozenset[str] = frozenset()


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """``object_pairs_hook``: a dict, marked :class:`_Repeated` when a key comes twice."""
    out = dict(pairs)
    if len(out) == len(pairs):
        return out
    from collections import Counter

    marked = _Repeated(out)
    marked.repeated = frozenset(k for k, n in Counter(k for k, _ in pairs).items() if n > 1)
    return marked


def loads(text: str) -> Any:
    """``json.loads`` that keeps track of objects naming a key twice (the last one does not
    silently win: :func:`parse_run` calls an answer with two ``detection`` keys unparsable)."""
    return json.loads(text, object_pairs_hook=_pairs)


def repeated_keys(value: Any) -> frozenset[str]:
    """The keys an object read by :func:`loads` named more than once."""
    return value.repeated if isinstance(value, _Repeated) else frozenset()


def _from_object(obj: Mapping[str, Any]) -> Verdict:
    if "detection" in repeated_keys(obj):
        return Verdict(None, problem="'detection' given twice in one object")
    if "detection" not in obj:
        return Verdict(None, problem="object without a 'detection' field")
    value = obj["detection"]
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        value = value.strip().lower() == "true"
    if not isinstance(value, bool):
        return Verdict(None, problem=f"'detection' is {value_kind(value)}, not a boolean")
    reasoning = obj.get("reasoning")
    return Verdict(value, reasoning if isinstance(reasoning, str) else None)


def _objects(text: str) -> Iterator[Mapping[str, Any]]:
    """JSON objects embedded in ``text`` (in prose, code fences…), outermost only."""
    decoder = json.JSONDecoder(object_pairs_hook=_pairs)
    position = text.find("{")
    while position != -1:
        try:
            value, end = decoder.raw_decode(text, position)
        except (ValueError, RecursionError):
            position = text.find("{", position + 1)
            continue
        if isinstance(value, dict):
            yield value
        position = text.find("{", end)


def _strip_thinking(text: str) -> str:
    ends = list(_THINK_END.finditer(text))
    if ends:
        return text[ends[-1].end():]
    return _THINK_BLOCK.sub("", text)


def value_kind(value: Any) -> str:
    """How a JSON value is named in messages: ``null``, ``str``, ``list``…"""
    return "null" if value is None else type(value).__name__


# --------------------------------------------------------------------------- reading


@dataclass
class Predictions:
    """Raw runs per instance, read from ``path`` in ``layout``."""

    path: Path
    layout: str
    runs: dict[str, list[Any]] = field(default_factory=dict)
    #: Where each instance came from (file, or file:line), for error messages.
    origin: dict[str, str] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.runs)

    def claim_file(self, instance: str, file: Path, *, keep: str) -> None:
        """Record that ``instance``'s runs come from ``file``; a second file for it fails,
        naming both (``keep``: what there is to be one file per, e.g. "instance")."""
        if instance in self.runs:
            raise JunoBenchError(f"two files for instance {instance!r} (the other is "
                                 f"{self.origin[instance]})", file=file, case=instance,
                                 hint=f"keep one file per {keep}")
        self.origin[instance] = str(file)

    @property
    def blind(self) -> list[str]:
        """The blind task ids among the keys (they need the ground-truth file)."""
        return [key for key in self.runs if is_blind_id(key)]


def read_jsonl(path: str | Path) -> Predictions:
    """Canonical predictions: ``{"instance": str, "runs": [...]}`` per line (``instance``
an instance id or a blind task id)."""
    path = Path(path)
    out = Predictions(path, CANONICAL)
    for number, item in jsonl.read_jsonl(path, what="predictions", loads=loads,
                                         hint="each line must be one JSON object"):
        if repeated_keys(item) & {"instance", "runs"}:
            raise JunoBenchError(f"line {number} names {', '.join(sorted(repeated_keys(item)))} twice",
                                 file=path, hint="each line holds one instance and one list of runs")
        instance, runs = _canonical_item(item, path, number)
        if instance in out.runs:
            raise JunoBenchError(f"line {number}: instance {instance!r} appears twice "
                                 f"(first at {out.origin[instance]})", file=path, case=instance,
                                 hint="keep one line per instance")
        out.runs[instance] = runs
        out.origin[instance] = f"{path}:{number}"
    return out


def _canonical_item(item: Any, path: Path, number: int) -> tuple[str, list[Any]]:
    hint = 'each line must look like {"instance": "torch_7_reproduced", "runs": [...]}'
    if not isinstance(item, dict) or not isinstance(item.get("instance"), str):
        raise JunoBenchError(f"line {number} has no 'instance' string", file=path, hint=hint)
    instance = item["instance"]
    runs = item.get("runs")
    if not isinstance(runs, list):
        raise JunoBenchError(f"line {number}: 'runs' is {value_kind(runs)}, not a list", file=path,
                             case=instance, hint=hint)
    check_instance(instance, path, f"line {number}: ", blind=True)
    return instance, runs


def check_instance(instance: str, file: Path, prefix: str = "", *, hint: str | None = None,
                   blind: bool = False) -> None:
    """Raise a :class:`JunoBenchError` naming ``file`` unless ``instance`` is an instance id
    (or, with ``blind``, a blind task id)."""
    if not (blind and is_blind_id(instance)) and not vocab.is_instance(instance):
        raise JunoBenchError(f"{prefix}{instance!r} is not an instance id", file=file,
                             hint=hint or "instances look like torch_7_reproduced or "
                             "torch_7_fixed")


def read_json_file(file: Path, instance: str, *, hint: str, limit: int) -> Any:
    """The JSON value (read by :func:`loads`) of a file of ``instance``'s predictions, at
    most ``limit`` bytes; an error naming the file when it is not readable JSON."""
    try:
        return loads(read_regular(file, limit=limit).decode("utf-8"))
    except (ValueError, RecursionError) as error:
        raise JunoBenchError(f"not valid JSON ({error})", file=file, case=instance,
                             hint=hint) from None
    except OSError as error:
        raise JunoBenchError(f"cannot read ({error.strerror or error})", file=file,
                             case=instance) from None


def read_per_instance(folder: Path, layout: str, files: Iterable[Path],
                        read: Callable[[Path, str], list[Any]], *, hint: str) -> Predictions:
    """Predictions of a folder of one file per notebook, named ``<instance>.json``: each
    file's runs as ``read(file, instance)`` gives them; a name that is no instance id, or an
    instance with two files, fails naming the file (``hint``: how files are to be named)."""
    out = Predictions(folder, layout)
    for file in files:
        instance = file.stem
        check_instance(instance, file, "file name: ", hint=hint)
        out.claim_file(instance, file, keep="instance")
        out.runs[instance] = read(file, instance)
    return out


# --------------------------------------------------------------------------- writing


def jsonl_line(instance: str, runs: Sequence[Any]) -> str:
    """One canonical line (with its newline)."""
    return jsonl.json_line({"instance": instance, "runs": list(runs)})


def write_predictions(path: str | Path, items: Iterable[tuple[str, Sequence[Any]]]) -> Path:
    """Write canonical JSONL atomically (beside, then moved over ``path``)."""
    return jsonl.write_jsonl(path, ({"instance": i, "runs": list(r)} for i, r in items))
