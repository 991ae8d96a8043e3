"""Static analysers as crash detectors, as CRANE-LLM ran them: pylint and pyright.

Each notebook is analysed as one Python file, CRANE-LLM's document of the task
(:func:`junobench.detection.crane_inputs.render_document` without runtime information:
the executed cells and the target cell, under ``#`` headings that are comments to the
analyser). Tasks read from CRANE-LLM's inputs with runtime type annotations (``junobench
tasks --crane-inputs sas/sas_inputs/executed_code_runinfo``) are analysed as published,
annotations included: that is CRANE-LLM's "+RT" setting of the analysers. Annotations
from junobench's own extraction (``runtime-info --style crane``) are written the same way
(:func:`annotate`).

The analyser's messages are kept when they are errors and not on CRANE-LLM's lists of
messages that do not foretell a crash (unresolved imports, members of C extensions the
analyser cannot see, IPython syntax, …: :data:`PYLINT_IGNORED_SYMBOLS` and the other
lists below). A notebook is predicted to crash when any message is kept — the rule behind
the published detection results, which CRANE-LLM's published raw outputs
(``sas/sas_outputs/results_raw``) reproduce exactly through the ``crane-sa`` layout.

The analysers run as their command-line programs (:data:`COMMANDS`, from the ``sa`` extra)
in a fresh temporary folder holding only the file, with their default settings; they
read the code, never run it.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from junobench import subprocesses
from junobench.detection import crane_inputs
from junobench.detection.names import CRANE_SA
from junobench.detection.predictions import (
    Predictions,
    jsonl_line,
    read_json_file,
    read_per_instance,
)
from junobench.errors import JunoBenchError

PYLINT = "pylint"
PYRIGHT = "pyright"
ANALYSERS: tuple[str, ...] = (PYLINT, PYRIGHT)
#: The command line of each analyser; the file to analyse is appended.
COMMANDS: dict[str, list[str]] = {
    PYLINT: [sys.executable, "-m", "pylint", "--output-format=json", "--rcfile", os.devnull],
    PYRIGHT: [sys.executable, "-m", "pyright", "--outputjson", "--pythonpath", sys.executable],
}
DEFAULT_TIMEOUT = 300.0

#: pylint symbols CRANE-LLM set aside: unresolved imports and IPython syntax.
PYLINT_IGNORED_SYMBOLS = frozenset({"no-name-in-module", "import-error", "syntax-error"})
#: pylint messages CRANE-LLM set aside: members of modules pylint cannot introspect.
PYLINT_IGNORED_MESSAGES = frozenset({
    "Module 'tensorflow' has no 'keras' member",
    "Module 'tensorflow._api.v2.distribute.cluster_resolver' has no 'TCPClusterResolver' member",
    "Module 'cv2' has no 'resize' member",
    "Module 'cv2' has no 'COLOR_BGR2GRAY' member",
    "Module 'cv2' has no 'COLOR_BGR2RGB' member",
    "Module 'cv2' has no 'IMREAD_COLOR' member",
    "Module 'cv2' has no 'cvtColor' member",
    "Module 'cv2' has no 'imread' member",
    "Module 'urllib' has no 'URLopener' member",
})
#: pyright rules CRANE-LLM set aside.
PYRIGHT_IGNORED_RULES = frozenset({"reportMissingImports", "reportPrivateImportUsage",
                                   "reportAssignmentType", "reportPossiblyUnboundVariable"})
#: Parts of pyright messages CRANE-LLM set aside (a message containing one is dropped).
PYRIGHT_IGNORED_FRAGMENTS: tuple[str, ...] = (
    '"keras" is not a known attribute of module "tensorflow"',
    '"keras" is unknown import symbol',
    "Expected expression",
    '"TCPClusterResolver" is not a known attribute of module '
    '"tensorflow._api.v2.distribute.cluster_resolver"',
    '"URLopener" is not a known attribute of module "urllib"',
    '"request" is not a known attribute of module "urllib"',
    '"utils" is not a known attribute of module "torch"',
    "could not be determined because it refers to itself",
    'Argument missing for parameter "self"',
)
#: The document's line when no cell ran; pyright's messages on it are not the code's.
_NO_CELL_LINE = crane_inputs.NONE_EXECUTED.strip()

Runner = Callable[[Sequence[str], Path, float], str]


def analysed_text(task: Mapping[str, Any]) -> str:
    """The Python file an analyser reads for a task: its CRANE-LLM document, code only."""
    return crane_inputs.render_document({k: v for k, v in task.items() if k != "runtime_info"})


# --------------------------------------------------------------------------- type annotations

_IMPORT_AS = re.compile(r"^import\s+(\w+(?:\.\w+)*)\s+as\s+(\w+)")
_IMPORT = re.compile(r"^import\s+(\w+(?:\.\w+)*)")
_BUILTIN_TYPES = frozenset({"str", "int", "float", "bool", "list", "dict", "tuple", "set",
                            "type", "function", "module", "NoneType", "object"})


def imported_modules(code: str) -> dict[str, str]:
    """Module → the name it goes by in ``code``, from its ``import M`` and ``import M as A``
    lines (as CRANE-LLM read them: ``from M import x`` makes no module usable by name)."""
    found: dict[str, str] = {}
    for line in code.splitlines():
        line = line.strip()
        match = _IMPORT_AS.match(line)
        if match:
            found[match.group(1)] = match.group(2)
            found.setdefault(match.group(1).split(".")[0], match.group(1).split(".")[0])
            continue
        match = _IMPORT.match(line)
        if match:
            module = match.group(1)
            found.setdefault(module, module)
            found.setdefault(module.split(".")[0], module.split(".")[0])
    return found


def annotated_target(target: str, types: Mapping[str, str], executed: str) -> str:
    """The target cell as CRANE-LLM gave it to the analysers with runtime information:
    ``import`` lines for the modules its annotations need that ``executed`` does not
    import, a blank line, one ``name: Type`` line per name (types written with the
    notebook's own module aliases: ``pd.DataFrame``), a blank line, then the code."""
    modules = imported_modules(executed)
    needed: set[str] = set()
    lines = []
    for name, dotted in types.items():
        if not name.isidentifier() or not all(p.isidentifier() for p in dotted.split(".")):
            continue
        kind = dotted
        if dotted not in _BUILTIN_TYPES and "." in dotted:
            match = max((m for m in modules if dotted.startswith(m + ".")), key=len, default=None)
            if match is not None:
                kind = modules[match] + dotted[len(match):]
            root = dotted.split(".")[0]
            if root not in modules and not any(m.startswith(root + ".") for m in modules):
                needed.add(root)
        lines.append(f"{name}: {kind}")
    head = [f"import {module}" for module in sorted(needed)] + ([""] if needed else [])
    return "\n".join([*head, *lines, "", target])


def annotate(task: Mapping[str, Any], types: Mapping[str, str]) -> dict[str, Any]:
    """``task`` with its target cell annotated (:func:`annotated_target`), under CRANE-LLM's
    heading ``# Annotated Target Code:``."""
    executed = "\n".join(str(c.get("source") or "") for c in task.get("executed_cells") or [])
    target = dict(task["target_cell"])
    target["source"] = annotated_target(str(target.get("source") or ""), types, executed)
    return {**task, "target_cell": target, "target_title": crane_inputs.ANNOTATED}


def pylint_messages(output: str, code: str) -> list[dict[str, Any]]:
    """pylint's JSON output as CRANE-LLM kept it: ``code_line`` (``"<n>: <the line>"``),
    ``message``, ``symbol``, ``type``, ``source``; output that is not a JSON list is no
    message (as CRANE-LLM read it)."""
    try:
        items = json.loads(output)
    except ValueError:
        return []
    lines = code.splitlines()
    out = []
    for item in items if isinstance(items, list) else []:
        if not isinstance(item, dict):
            continue
        line = _line_number(item.get("line"), 0)
        out.append({"code_line": f"{line}: {lines[line - 1] if 0 < line <= len(lines) else ''}",
                    "message": item.get("message"), "symbol": item.get("symbol"),
                    "type": item.get("type"), "source": PYLINT})
    return out


def pyright_messages(output: str, code: str) -> list[dict[str, Any]]:
    """pyright's ``--outputjson`` diagnostics as CRANE-LLM kept them: ``code_line``,
    ``message``, ``rule``, ``severity``, ``source`` (none on the "no cell" line)."""
    try:
        report = json.loads(output)
    except ValueError:
        return []
    lines = code.splitlines()
    out = []
    diagnostics = report.get("generalDiagnostics", []) if isinstance(report, dict) else []
    for item in diagnostics if isinstance(diagnostics, list) else []:
        if not isinstance(item, dict):
            continue
        span = item.get("range")
        start = span.get("start") if isinstance(span, dict) else None
        line = _line_number(start.get("line") if isinstance(start, dict) else None, -1)
        text = lines[line] if 0 <= line < len(lines) else ""
        if _NO_CELL_LINE in text:
            continue
        out.append({"code_line": f"{line + 1}: {text}", "message": item.get("message"),
                    "rule": item.get("rule"), "severity": item.get("severity"),
                    "source": PYRIGHT})
    return out


def _line_number(value: Any, default: int) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def crash_messages(messages: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The messages that predict a crash (CRANE-LLM's filter, see the module docstring)."""
    kept = []
    for item in messages:
        if item.get("source") == PYLINT:
            keep = (item.get("type") == "error"
                    and item.get("symbol") not in PYLINT_IGNORED_SYMBOLS
                    and item.get("message") not in PYLINT_IGNORED_MESSAGES)
        elif item.get("source") == PYRIGHT:
            message = str(item.get("message") or "")
            keep = (item.get("severity") == "error"
                    and item.get("rule") not in PYRIGHT_IGNORED_RULES
                    and not any(part in message for part in PYRIGHT_IGNORED_FRAGMENTS))
        else:
            keep = False
        if keep:
            kept.append(dict(item))
    return kept


def verdict(kept: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """One run in the papers' output format, with the kept messages beside it."""
    if not kept:
        return {"reasoning": "no error message", "detection": False, "messages": []}
    shown = "; ".join(f"line {m.get('code_line')}: {m.get('message')}" for m in kept[:5])
    more = f"; … ({len(kept) - 5} more)" if len(kept) > 5 else ""
    return {"reasoning": shown + more, "detection": True, "messages": list(kept)}


def run_command(command: Sequence[str], folder: Path, timeout: float) -> str:
    """Run an analyser in ``folder`` and return its standard output (its exit code says
    only whether it found something)."""
    try:
        done = subprocesses.run(list(command), cwd=folder, capture_output=True, text=True,
                                timeout=timeout, stdin=subprocess.DEVNULL)
    except FileNotFoundError:
        raise JunoBenchError(f"cannot run {command[0]}", hint="pip install 'junobench[sa]'") \
            from None
    except subprocess.TimeoutExpired:
        raise JunoBenchError(f"{Path(command[0]).name} {' '.join(command[1:3])} took longer "
                             f"than {timeout:g} s", hint="raise --timeout") from None
    if not done.stdout.strip() and done.returncode not in (0, 1):
        detail = " ".join(done.stderr.split())[-400:]
        raise JunoBenchError(f"{' '.join(command[:3])} failed (exit {done.returncode}): "
                             f"{detail}", hint="pip install 'junobench[sa]'")
    return done.stdout


def analyse(task: Mapping[str, Any], analyser: str, *, timeout: float = DEFAULT_TIMEOUT,
            runner: Runner = run_command) -> dict[str, Any]:
    """The run of ``analyser`` on one task: its crash-predicting messages and the verdict."""
    if analyser not in COMMANDS:
        raise JunoBenchError(f"unknown analyser {analyser!r}", hint=f"use one of {ANALYSERS}")
    code = analysed_text(task)
    with tempfile.TemporaryDirectory(prefix="junobench-sa-") as tmp:
        folder = Path(tmp)
        (folder / "notebook.py").write_text(code, encoding="utf-8")
        output = runner([*COMMANDS[analyser], "notebook.py"], folder, timeout)
    parse = pylint_messages if analyser == PYLINT else pyright_messages
    return verdict(crash_messages(parse(output, code)))


def detect_analyser(tasks: Sequence[Mapping[str, Any]], out: str | Path, analyser: str, *,
                    timeout: float = DEFAULT_TIMEOUT, runner: Runner = run_command,
                    log: Callable[[str], None] | None = None,
                    annotations: Mapping[str, Mapping[str, str]] | None = None) -> Any:
    """Analyse each task and append its line (one run) to ``out`` as soon as it is
    finished; tasks already in ``out`` are skipped, so an interrupted run resumes.
    ``annotations`` (task id → {name: type}, from ``runtime-info --style crane``)
    annotates the target cells as CRANE-LLM did for its "+RT" analysers. Returns a
    :class:`junobench.detection.client.Summary`."""
    from junobench.detection.detect import resume
    from junobench.detection.tasks import task_key

    if analyser not in COMMANDS:
        raise JunoBenchError(f"unknown analyser {analyser!r}", hint=f"use one of {ANALYSERS}")
    summary, done = resume(tasks, out)
    with summary.out.open("a", encoding="utf-8") as handle:
        for task in tasks:
            instance = task_key(task)
            if instance in done:
                continue
            if annotations is not None and instance in annotations:
                task = annotate(task, annotations[instance])
            run = analyse(task, analyser, timeout=timeout, runner=runner)
            handle.write(jsonl_line(instance, [run]))
            handle.flush()
            summary.written.append(instance)
            if log is not None:
                log(f"{instance}: {'crash' if run['detection'] else 'no crash'}")
    return summary


# --------------------------------------------------------------------------- published outputs

_SA_HINT = ("pass a folder of CRANE-LLM's analyser outputs as published: "
            "sas/sas_outputs/results_raw/<pylint|pyright>/<setting>")


def _output_files(folder: Path) -> list[Path]:
    """``<library>/<instance>.json`` files below ``folder`` (one level of subfolders); a
    link among them is an error (outputs are read from the folder named, never through
    a link)."""
    files: list[Path] = []
    for sub in sorted(folder.iterdir()):
        if sub.is_symlink():
            raise JunoBenchError("is a symbolic link; outputs are read from the folder named "
                                 "only", file=sub, hint="copy the files into the folder")
        if not sub.is_dir():
            continue
        for path in sorted(sub.glob("*.json")):
            if path.is_symlink():
                raise JunoBenchError("is a symbolic link; outputs are read from regular files "
                                     "only", file=path, hint="copy the file into the folder")
            files.append(path)
    return files


def _messages_file(file: Path, instance: str) -> list[Any]:
    data = read_json_file(file, instance, hint=_SA_HINT, limit=1 << 26)
    if not isinstance(data, list) or not all(_is_message(item) for item in data):
        raise JunoBenchError("not a list of analyser messages (objects with 'source' "
                             f"{' or '.join(ANALYSERS)} and 'message')", file=file,
                             case=instance, hint=_SA_HINT)
    return data


def _is_message(item: Any) -> bool:
    return isinstance(item, dict) and item.get("source") in ANALYSERS and "message" in item


def looks_like_outputs(folder: Path) -> bool:
    """True when ``folder`` holds no ``.json`` file itself and its subfolders' first
    non-empty ``<instance>.json`` is a list of analyser messages."""
    from junobench.safety.paths import read_regular

    if any(folder.glob("*.json")):
        return False
    try:
        files = _output_files(folder)[:400]
    except JunoBenchError:
        return False
    for file in files:
        try:
            data = json.loads(read_regular(file, limit=1 << 24).decode("utf-8"))
        except (OSError, ValueError, RecursionError):
            return False
        if isinstance(data, list) and data:
            return all(_is_message(item) for item in data)
    return False


def read_outputs(folder: Path) -> Predictions:
    """CRANE-LLM's published analyser outputs as predictions: per notebook one run, a crash
    when the list of kept messages is not empty (how the published results count them)."""
    out = read_per_instance(folder, CRANE_SA, _output_files(folder),
                              lambda file, instance: [verdict(_messages_file(file, instance))],
                              hint="name files <library>/<case>_reproduced.json or …_fixed.json")
    if not out.runs:
        raise JunoBenchError("no <library>/<instance>.json files", file=folder, hint=_SA_HINT)
    return out
