"""Crash-detection tasks: what a detector sees for one notebook, and the answer kept apart.

A task is one ``notebooks`` record reduced to what a detector may see: an ``id``,
``executed_cells`` (the runs before the target, in execution order) and ``target_cell``.
As in both papers, comments are stripped from the code and cell outputs are left out
(``keep_comments`` / ``keep_outputs`` keep them; the target cell's outputs never appear,
nor does JunoBench's ``[reexecute]`` marker).

A task file is *blind*: ids are keyed hashes of the instance (:mod:`.ids`), the lines are
in id order, and no label is in it, so nothing but the code tells a reproduced notebook
from a fixed one or pairs the two notebooks of a case. The ground truth (``id``,
``instance``, ``crash``, ``exception``, ``diagnosis`` and the case's labels) goes to a
separate file, which is what maps answers back to notebooks.

Extension point: a task may carry ``runtime_info`` (text about the notebook's state before
the target cell runs, per instance); :mod:`junobench.detection.prompt` puts it between the executed
cells and the target cell. :func:`build_tasks` takes it as a mapping instance → text.

>>> strip_comments("import numpy as np  # arrays\\n# load\\nx = np.ones(3)\\n")
'import numpy as np\\nx = np.ones(3)\\n'
"""

from __future__ import annotations

import io
import json
import tokenize
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from junobench import vocab
from junobench.data.notebook import without_reexecute_marker
from junobench.detection import crane_inputs
from junobench.detection.crane_inputs import STYLE as crane_inputs_style
from junobench.detection.crane_inputs import read_documents as crane_documents
from junobench.detection.ids import blind_id, is_blind_id
from junobench.errors import JunoBenchError
from junobench.jsonl import read_instance_records, write_jsonl
from junobench.safety.atomic import check_file_target

#: The case's labels, kept in the ground-truth file (for breakdowns and filters).
CASE_LABELS: tuple[str, ...] = ("case_id", "version", "library", "library_label", "root_cause",
                                "crash_type", "pipeline_stage", "ml_bug", "source")
#: Fields of the ground-truth file.
TRUTH_FIELDS: tuple[str, ...] = ("id", "instance", "crash", "exception", "diagnosis",
                                 *CASE_LABELS)
TRUTH_SUFFIX = ".truth.jsonl"
_CELL_KEYS = ("code_cell_index", "execution_count", "source")
_OUTPUT_LIMIT = 2000


# --------------------------------------------------------------------------- code text


def strip_comments(source: str) -> str:
    """``source`` without comments: comment-only lines are dropped, trailing comments cut.

    Uses Python's tokenizer, so ``#`` inside strings stays; cells the tokenizer cannot
    read (IPython syntax such as ``!pip`` or ``%%time``) lose their comment-only lines only.
    """
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    except (tokenize.TokenError, SyntaxError):
        return _strip_comment_lines(source)
    lines = code_lines(source)
    cuts = {tok.start[0] - 1: tok.start[1] for tok in tokens if tok.type == tokenize.COMMENT}
    kept = []
    for number, line in enumerate(lines):
        if number not in cuts:
            kept.append(line)
            continue
        code = line[: cuts[number]].rstrip()
        if code:
            kept.append(code + ("\n" if line.endswith(("\n", "\r")) else ""))
    return _trim("".join(kept))


def code_lines(source: str) -> list[str]:
    """``source``'s lines with their ends, as Python's tokenizer counts them: a line ends at
    ``"\\n"`` only, never at U+2028, U+0085 or a form feed inside a string literal.

    >>> code_lines("s = 'a\\u2028b'  # note\\nx = 1")
    ["s = 'a\\u2028b'  # note\\n", 'x = 1']
    """
    return io.StringIO(source).readlines()


def _strip_comment_lines(source: str) -> str:
    return _trim("".join(line for line in code_lines(source)
                         if not line.lstrip().startswith("#")))


def _trim(text: str) -> str:
    """Without blank lines at the start and end (a final newline is kept)."""
    lines = [line.rstrip("\r\n") for line in code_lines(text)]
    while lines and not lines[0].strip():
        lines.pop(0)
    while lines and not lines[-1].strip():
        lines.pop()
    return "\n".join(lines) + ("\n" if lines and text.endswith(("\n", "\r")) else "")


def cell_outputs(notebook_json: str | Mapping[str, Any], code_cell_index: int,
                 limit: int = _OUTPUT_LIMIT) -> str | None:
    """Text outputs of a code cell (streams, plain-text results, ``ename: evalue`` of errors),
    cut at ``limit`` characters; None when it has none."""
    data = json.loads(notebook_json) if isinstance(notebook_json, str) else notebook_json
    code = [c for c in data.get("cells", []) if c.get("cell_type") == "code"]
    if not 0 <= code_cell_index < len(code):
        return None
    parts: list[str] = []
    for output in code[code_cell_index].get("outputs", []):
        kind = output.get("output_type")
        if kind == "stream":
            parts.append(_join(output.get("text", "")))
        elif kind in ("execute_result", "display_data"):
            text = output.get("data", {}).get("text/plain")
            if text is not None:
                parts.append(_join(text))
        elif kind == "error":
            parts.append(f"{output.get('ename', '')}: {output.get('evalue', '')}")
    text = "\n".join(p.rstrip("\n") for p in parts if p.strip())
    if not text:
        return None
    return text if len(text) <= limit else text[:limit] + "\n…"


def _join(value: Any) -> str:
    return "".join(value) if isinstance(value, list) else str(value)


# --------------------------------------------------------------------------- tasks


def make_task(
    record: Mapping[str, Any],
    *,
    keep_comments: bool = False,
    outputs: Mapping[int, str] | None = None,
    runtime_info: str | None = None,
    task_id: str | None = None,
    style: str | None = None,
) -> dict[str, Any]:
    """The task of one ``notebooks`` record (see the module docstring); its ``id`` is
    ``task_id`` (default: the instance, a readable id); ``style`` ``"crane"``: its prompt is
    CRANE-LLM's document (:mod:`junobench.detection.crane_inputs`)."""
    target = record["target_cell"]

    def cell(run: Mapping[str, Any], *, with_output: bool) -> dict[str, Any]:
        out = {k: run.get(k) for k in _CELL_KEYS}
        source = without_reexecute_marker(run.get("source") or "")
        out["source"] = source if keep_comments else strip_comments(source)
        index = run.get("code_cell_index")
        if with_output and outputs and index is not None and index != target["code_cell_index"] \
                and outputs.get(index):
            out["outputs"] = outputs[index]
        return out

    task: dict[str, Any] = {"id": task_id or record["instance"]}
    if style is not None:
        if style != crane_inputs.STYLE:
            raise JunoBenchError(f"unknown prompt style {style!r}",
                                 hint=f"use {crane_inputs.STYLE!r} or none")
        task["style"] = style
    task["executed_cells"] = [cell(run, with_output=True) for run in record["executed_cells"]]
    task["target_cell"] = cell(target, with_output=False)
    if runtime_info is not None:
        task["runtime_info"] = runtime_info
    return task


def task_key(task: Mapping[str, Any]) -> str:
    """A task's id (``instance`` in task files written before ids were blind)."""
    return str(task.get("id") or task["instance"])


def truth_of(record: Mapping[str, Any], task_id: str | None = None) -> dict[str, Any]:
    """The answer of one ``notebooks`` record, with the case's labels."""
    row = {k: record.get(k) for k in TRUTH_FIELDS}
    row["id"] = task_id or record["instance"]
    return row


def build_tasks(
    records: Iterable[Mapping[str, Any]],
    *,
    keep_comments: bool = False,
    outputs: Mapping[str, Mapping[int, str]] | None = None,
    runtime_info: Mapping[str, str] | None = None,
    key: bytes | None = None,
    documents: Mapping[str, Mapping[str, Any]] | None = None,
    style: str | None = None,
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Tasks and ground truth of ``notebooks`` records. ``outputs``: instance → code-cell
    index → output text; ``runtime_info``: instance → text for the prompt; ``key``: blind
    ids under this key (:func:`junobench.detection.ids.blind_id`), in id order; without
    it ids are the instances, in record order. ``documents`` (instance → task, from
    :func:`junobench.detection.crane_inputs.read_documents`): each task is the notebook's
    CRANE-LLM input as published instead (every record needs one). ``style``: see
    :func:`make_task`."""
    tasks_, truths = [], []
    records = list(records)
    if documents is not None:
        _check_documents(records, documents)
    for record in records:
        instance = record["instance"]
        task_id = blind_id(instance, key) if key is not None else instance
        if documents is not None:
            tasks_.append({"id": task_id, **documents[instance]})
        else:
            tasks_.append(make_task(
                record, keep_comments=keep_comments,
                outputs=(outputs or {}).get(instance),
                runtime_info=(runtime_info or {}).get(instance),
                task_id=task_id, style=style,
            ))
        truths.append(truth_of(record, task_id))
    if key is not None:
        order = sorted(range(len(tasks_)), key=lambda i: tasks_[i]["id"])
        tasks_, truths = [tasks_[i] for i in order], [truths[i] for i in order]
    return tasks_, truths


def tasks(
    source: str | Path = "PELAB-LiU/JunoBench",
    *,
    keep_comments: bool = False,
    keep_outputs: bool = False,
    runtime_info: Mapping[str, str] | None = None,
    revision: str | None = None,
    key: bytes | None = None,
    crane_inputs: str | Path | None = None,
    style: str | None = None,
    **filters: str | Iterable[str] | None,
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Tasks and ground truth for the notebooks of ``source`` matching ``filters``
    (blind ids under ``key`` when given, see :func:`build_tasks`). ``crane_inputs``: a
    folder of CRANE-LLM's published inputs (such as ``llms/llms_inputs/
    executed_code_runinfo``); each task is then the notebook's input as published, so a
    prompt built from it is CRANE-LLM's (comments, outputs and runtime information are
    those of the input). ``style`` ``"crane"``: prompts in CRANE-LLM's form (for runtime
    information extracted with ``runtime-info --style crane``).

    >>> from junobench.detection.ids import new_key
    >>> tasks_, truth = tasks("sample", library="pandas", key=new_key())
    >>> [t["id"][:5] for t in tasks_]
    ['task-', 'task-', 'task-', 'task-']
    >>> sorted((answer["instance"], answer["crash"]) for answer in truth)  # doctest: +NORMALIZE_WHITESPACE
    [('pandas_1_fixed', False), ('pandas_1_reproduced', True),
     ('pandas_2_fixed', False), ('pandas_2_reproduced', True)]
    """
    import junobench

    if style == crane_inputs_style and keep_outputs:
        raise JunoBenchError("CRANE-LLM's prompts have no cell outputs",
                             hint="drop --keep-outputs, or use junobench's runtime-info style")
    documents = None
    if crane_inputs is not None:
        if keep_comments or keep_outputs or runtime_info is not None:
            raise JunoBenchError("tasks from CRANE-LLM inputs are those inputs as published: "
                                 "their comments, outputs and runtime information cannot be "
                                 "changed", file=crane_inputs,
                                 hint="drop --keep-comments, --keep-outputs and --runtime-info")
        documents = crane_documents(crane_inputs)
    records = junobench.load(source, "notebooks", revision=revision, **filters).to_list()
    outputs = notebook_outputs(source, records, revision=revision) if keep_outputs else None
    return build_tasks(records, keep_comments=keep_comments, outputs=outputs,
                       runtime_info=runtime_info, key=key, documents=documents, style=style)


def _check_documents(records: Sequence[Mapping[str, Any]],
                     documents: Mapping[str, Mapping[str, Any]]) -> None:
    missing = [r["instance"] for r in records if r["instance"] not in documents]
    if missing:
        shown = ", ".join(missing[:8]) + (f" and {len(missing) - 8} more" if len(missing) > 8
                                          else "")
        raise JunoBenchError(f"no CRANE-LLM input for {len(missing)} of the {len(records)} "
                             f"notebooks: {shown}",
                             hint="pass the folder holding every notebook's input, or select "
                             "the notebooks it has with the label filters")


def notebook_outputs(source: str | Path, records: Sequence[Mapping[str, Any]], *,
                     revision: str | None = None) -> dict[str, dict[int, str]]:
    """Output text of the executed cells of each record's notebook (from ``cases``)."""
    import junobench

    wanted = {r["case_id"] for r in records}
    cases = junobench.load(source, "cases", revision=revision)
    notebooks = {}
    for case in cases.select_columns(["case_id", "reproduced", "fixed"]):
        if case["case_id"] in wanted:
            notebooks[case["case_id"]] = case
    out: dict[str, dict[int, str]] = {}
    for record in records:
        text = notebooks.get(record["case_id"], {}).get(record["version"])
        if not text:
            continue
        cells = {}
        for run in record["executed_cells"]:
            found = cell_outputs(text, run["code_cell_index"])
            if found:
                cells[run["code_cell_index"]] = found
        out[record["instance"]] = cells
    return out


# --------------------------------------------------------------------------- files


def truth_path(tasks_path: str | Path) -> Path:
    """Default ground-truth file beside a tasks file: ``TASKS.jsonl`` → ``TASKS.truth.jsonl``."""
    path = Path(tasks_path)
    stem = path.name[: -len(".jsonl")] if path.name.endswith(".jsonl") else path.name
    return path.with_name(stem + TRUTH_SUFFIX)


def write_tasks(tasks_: Sequence[Mapping[str, Any]], truths: Sequence[Mapping[str, Any]],
                out: str | Path, truth_out: str | Path | None = None) -> tuple[Path, Path]:
    """Write the tasks file and the ground-truth file (default beside it)."""
    out = check_file_target(out)
    truth_file = check_file_target(truth_out if truth_out is not None else truth_path(out))
    if truth_file.resolve() == out.resolve():
        raise JunoBenchError("the ground truth must go to a different file than the tasks",
                             file=out, hint="pass another --truth-out")
    write_jsonl(truth_file, truths)
    write_jsonl(out, tasks_)
    return out, truth_file


def read_tasks(path: str | Path) -> list[dict[str, Any]]:
    """Tasks from a JSONL file written by :func:`write_tasks` (or by hand, same fields)."""
    return read_instance_records(path, what="tasks file", problem_of=_task_problem,
                                 id_of=_task_id, hint="write tasks with `junobench tasks --out FILE`")


def _task_id(task: dict[str, Any]) -> str | None:
    value = task.get("id", task.get("instance"))
    if not isinstance(value, str) or not value.strip() or len(value) > 200:
        return None
    return value


def _task_problem(task: dict[str, Any]) -> str | None:
    cells = task.get("executed_cells")
    if not isinstance(cells, list) or not all(_is_cell(c) for c in cells):
        return "'executed_cells' must be a list of {code_cell_index, execution_count, source}"
    if not _is_cell(task.get("target_cell")):
        return "'target_cell' must be {code_cell_index, execution_count, source}"
    if "runtime_info" in task and not isinstance(task["runtime_info"], (str, type(None))):
        return "'runtime_info' must be text"
    if task.get("style", crane_inputs.STYLE) != crane_inputs.STYLE:
        return f"'style' must be {crane_inputs.STYLE!r} (or absent)"
    if task.get("target_title", crane_inputs.TARGET) not in crane_inputs.TARGET_TITLES:
        return f"'target_title' must be one of {', '.join(crane_inputs.TARGET_TITLES)}"
    return None


def _is_cell(cell: Any) -> bool:
    return isinstance(cell, dict) and isinstance(cell.get("source"), str)


def read_truth(paths: str | Path | Sequence[str | Path]) -> list[dict[str, Any]]:
    """Ground-truth rows of one or more files written by :func:`write_tasks` (files written
    before ids were blind have no ``id`` and no labels: the instance stands in for both)."""
    rows: list[dict[str, Any]] = []
    by_id: dict[str, tuple[str, Path]] = {}
    for path in [paths] if isinstance(paths, (str, Path)) else paths:
        path = Path(path)
        for row in read_instance_records(path, what="ground-truth file", problem_of=_truth_problem,
                                         hint="pass the TASKS.truth.jsonl written by "
                                         "`junobench tasks`"):
            row = _complete_truth(row)
            seen = by_id.get(row["id"])
            if seen is not None and seen[0] != row["instance"]:
                raise JunoBenchError(f"id {row['id']!r} is {row['instance']} here but "
                                     f"{seen[0]} in {seen[1]}", file=path, case=row["instance"],
                                     hint="pass ground-truth files of different task files "
                                     "only if their ids differ")
            if seen is None:
                by_id[row["id"]] = (row["instance"], path)
                rows.append(row)
    return rows


def _truth_problem(row: dict[str, Any]) -> str | None:
    if not isinstance(row.get("crash"), bool):
        return "'crash' must be true or false"
    task_id = row.get("id", row["instance"])
    if not isinstance(task_id, str) or not (is_blind_id(task_id) or task_id == row["instance"]):
        return "'id' must be a blind task id (task-…) or the instance"
    return None


def _complete_truth(row: dict[str, Any]) -> dict[str, Any]:
    """Labels an older truth file lacks, from the instance id."""
    defaults = {"id": row["instance"], **vocab.instance_labels(row["instance"])}
    return {**{k: None for k in TRUTH_FIELDS}, **defaults,
            **{k: v for k, v in row.items() if v is not None}}
