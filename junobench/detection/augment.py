"""Crash-detection tasks augmented with runtime information (``junobench runtime-info``).

One place for the rules that ``tasks``, ``detect`` and the Inspect task share: which
runtime-information texts to use (:func:`runtime_texts_for`), putting them into tasks read
from a file (:func:`with_runtime_info`: only tasks named by notebook can be matched, not
blind ones) and which tasks are left without (:func:`lacking_runtime_info`).

>>> items = [{"id": "numpy_1_fixed"}, {"id": "numpy_1_reproduced", "runtime_info": "old"}]
>>> augmented = with_runtime_info(items, {"numpy_1_fixed": "x: int"})
>>> [t.get("runtime_info") for t in augmented], lacking_runtime_info(augmented)
(['x: int', None], ['numpy_1_reproduced'])
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from junobench.detection.ids import is_blind_id
from junobench.detection.tasks import task_key
from junobench.errors import JunoBenchError


def runtime_texts_for(path: str | Path | None, exclude: Iterable[str] = ()
                      ) -> dict[str, str] | None:
    """Instance → prompt text of the runtime-information file ``path`` without the
    ``exclude`` categories; None without a file (then ``exclude`` is an error: it would
    silently do nothing)."""
    exclude = list(exclude)
    if not path:
        if exclude:
            raise JunoBenchError("--runtime-exclude needs --runtime-info FILE: there is no "
                                 "runtime information to leave categories out of",
                                 hint="runtime_exclude needs runtime_info in Python and Inspect")
        return None
    from junobench.runtime import runtime_texts

    return runtime_texts(path, exclude=exclude)


def task_style(path: str | Path | None) -> str | None:
    """``crane`` when the runtime-information file ``path`` is in CRANE-LLM's style (its
    tasks are then CRANE-LLM's documents), else None."""
    if not path:
        return None
    from junobench.runtime import runtime_style

    return "crane" if runtime_style(path) == "crane" else None


def with_runtime_info(items: Sequence[Mapping[str, Any]], texts: Mapping[str, str], *,
                      file: str | Path | None = None, style: str | None = None
                      ) -> list[dict[str, Any]]:
    """Copies of ``items`` (tasks read from ``file``) whose ``runtime_info`` is the text of
    their notebook in ``texts``, or absent when it has none, in ``style`` when given
    (:func:`task_style`). Blind tasks are refused: their ids do not name the notebook a
    text belongs to."""
    if any(is_blind_id(task_key(item)) for item in items):
        raise JunoBenchError("blind tasks are not named by notebook, so runtime information "
                             "cannot be matched to them", file=file,
                             hint="build the tasks with `junobench tasks --runtime-info`")
    out = []
    for item in items:
        task = {k: v for k, v in item.items() if k != "runtime_info"}
        if task_key(item) in texts:
            task["runtime_info"] = texts[task_key(item)]
        if style is not None:
            task["style"] = style
        out.append(task)
    return out


def lacking_runtime_info(items: Iterable[Mapping[str, Any]]) -> list[str]:
    """Ids of the tasks without runtime information (not in the file, or its extraction
    failed), in task order."""
    return [task_key(item) for item in items if not item.get("runtime_info")]
