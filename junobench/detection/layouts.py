"""Reading predictions in every published layout, recognised from what a path holds.

- ``jsonl``: canonical JSON Lines, ``{"instance": …, "runs": [...]}`` per line (what
  ``junobench detect`` writes);
- ``instances``: a folder of ``<instance>.json`` files, each a JSON list of runs, the small
  libraries possibly in ``other/``: the CRANE-LLM repository's
  ``llms/llms_outputs/results_raw/<model>/<setting>``;
- ``crane-parsed``: the same folders of the CRANE-LLM repository's
  ``results_parsed_<k>/<model>/<setting>``, one LLM-judge label per run (``[Correct]``,
  ``[Partially correct]``, ``[Reasoning Wrong]``, ``[Wrong]``), read back into the
  detection it judged (the detections of a judge run can differ from the raw runs'
  majority: see docs/diagnosis.md). The ``results_parsed_reversed_<k>`` folders hold the
  judge's labels under the reversed protocol (prediction shown before the ground truth), a
  check of the judge, not of the detector: they are refused here (read as a detector they
  would score a precision of 1.000); :mod:`.judge` reads them as judge labels;
- ``junobench-construct``: the JunoBench_construct repository's
  ``llms/detect_if_cell_crash/<model>``, ``results_buggy/`` and ``results_fixed/`` folders of
  ``crash_detection_results_<case>.json``;
- ``buggy/fixed``: ``buggy/`` (or ``reproduced/``) and ``fixed/`` folders of ``<case>.json``;
- ``crane-sa``: CRANE-LLM's static analysers' outputs, ``sas/sas_outputs/results_raw/
  <pylint|pyright>/<setting>``, library folders of ``<instance>.json`` lists of the kept
  messages (:mod:`junobench.detection.analysers`);
- ``inspect``: an Inspect evaluation log (``.eval`` or ``.json``) of the
  ``junobench/crash_detection`` task, each epoch a run.

A folder that holds several prediction sets (``results_raw/<model>`` with one folder per
setting, ``detect_if_cell_crash`` with one folder per model, a folder of Inspect logs)
is not guessed at: the error names the sets to pass instead.

>>> judged("[Partially correct]", "reproduced"), judged("[Correct]", "fixed")
(True, False)
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from junobench import vocab
from junobench.detection import analysers
from junobench.detection.names import (
    CANONICAL,
    CASE_FOLDERS,
    CONSTRUCT,
    CRANE_PARSED,
    CRANE_SA,
    INSPECT,
    INSTANCES,
    LAYOUTS,
)
from junobench.detection.names import describe as describe
from junobench.detection.predictions import (
    Predictions,
    check_instance,
    read_json_file,
    read_jsonl,
    read_per_instance,
    value_kind,
)
from junobench.errors import JunoBenchError
from junobench.safety.paths import MAX_TEXT_BYTES, open_regular, read_regular

#: Folder → notebook version, for the two case-folder layouts.
CONSTRUCT_FOLDERS: dict[str, str] = {"results_buggy": "reproduced", "results_fixed": "fixed"}
VERSION_FOLDERS: dict[str, str] = {"buggy": "reproduced", "reproduced": "reproduced",
                                   "fixed": "fixed"}
#: File-name prefix of the JunoBench_construct repository's outputs.
CONSTRUCT_PREFIX = "crash_detection_results_"
#: Subfolder in which the CRANE-LLM repository keeps the small libraries' files.
OTHER = "other"

_JUDGE = re.compile(r"^\s*\[?\s*(correct|partially correct|reasoning wrong|wrong)\s*\]?\s*$",
                    re.IGNORECASE)
#: Folders of the judge's labels under the reversed protocol.
REVERSED = re.compile(r"^results_parsed_reversed(_\d+)?$")
_JUDGE_FAILED = re.compile(r"^\s*cannot (verify|extract)", re.IGNORECASE)
_SEARCH_DEPTH = 4
_HINT_ANY = ("pass a .jsonl file, an Inspect log, or a folder in one of the layouts: "
             + ", ".join(LAYOUTS) + " (see --layout)")


def read_predictions(path: str | Path | Predictions, layout: str | None = None) -> Predictions:
    """Read predictions from ``path`` in ``layout`` (default: recognised from its content);
    predictions already read are returned as they are."""
    if isinstance(path, Predictions):
        return path
    path = Path(path)
    if not path.exists():
        raise JunoBenchError("no such predictions file or directory", file=path, hint=_HINT_ANY)
    if layout is None:
        path, layout = locate(path)
    if layout not in READERS:
        raise JunoBenchError(f"unknown layout {layout!r}", hint=f"use one of {', '.join(LAYOUTS)}")
    if layout in (CANONICAL, INSPECT) and not path.is_file():
        raise JunoBenchError(f"the {layout} layout is a file, not a folder", file=path,
                             hint=_HINT_ANY)
    if layout not in (CANONICAL, INSPECT) and not path.is_dir():
        raise JunoBenchError(f"the {layout} layout is a folder, not a file", file=path,
                             hint=_HINT_ANY)
    predictions = READERS[layout](path)
    if not predictions.runs:  # scored, it would say n/a everywhere and exit 0
        raise JunoBenchError("no predictions: not one notebook's run in it", file=path,
                             hint="run a detector first (junobench detect), or pass the file it wrote")
    return predictions


def locate(path: Path) -> tuple[Path, str]:
    """The prediction set at ``path`` and its layout: ``path`` itself, or the one set in a
    folder that holds exactly one (such as a model folder with one setting); an error
    naming the sets when it holds several."""
    if path.is_file():
        return path, INSPECT if _is_inspect_log(path) else CANONICAL
    if not path.is_dir():
        raise JunoBenchError("not a regular file or folder", file=path, hint=_HINT_ANY)
    own = _own_layout(path)
    if own is not None:
        return path, own
    sets = prediction_sets(path)
    if len(sets) == 1:
        return locate(sets[0])
    if not sets:
        raise JunoBenchError("not a predictions folder: no prediction files in any known layout",
                             file=path, hint=_HINT_ANY)
    shown = ", ".join(str(s) for s in sets[:8]) + (f", … ({len(sets) - 8} more)" if len(sets) > 8
                                                   else "")
    raise JunoBenchError(
        f"holds {len(sets)} prediction sets, not one: {shown}", file=path,
        hint="pass one of them, or several to compare them: junobench evaluate A B …")


def prediction_sets(folder: Path, depth: int = _SEARCH_DEPTH) -> list[Path]:
    """The folders and log files below ``folder`` that are one prediction set each."""
    found: list[Path] = []
    for child in sorted(folder.iterdir()):
        if child.is_symlink():
            continue
        if child.is_file() and child.suffix == ".eval":
            found.append(child)
        elif child.is_dir():
            if _own_layout(child, strict=True) is not None:
                found.append(child)
            elif depth > 1:
                found += prediction_sets(child, depth - 1)
    return found


def _own_layout(folder: Path, *, strict: bool = False) -> str | None:
    """The layout of a folder that is itself one prediction set, else None. A folder of
    ``.json`` files counts when one is named after a notebook (``strict``) or always (the
    folder the user named: its badly named files are then reported)."""
    if any((folder / name).is_dir() for name in CONSTRUCT_FOLDERS):
        return CONSTRUCT
    if any((folder / name).is_dir() for name in VERSION_FOLDERS):
        return CASE_FOLDERS
    if analysers.looks_like_outputs(folder):
        return CRANE_SA
    files = [f for f in _json_files(folder) if not strict or vocab.is_instance(f.stem)]
    if not files:
        return None
    return CRANE_PARSED if _looks_judged(files) else INSTANCES


def _json_files(folder: Path) -> list[Path]:
    """``*.json`` files of a folder of instance files: in it and in its ``other/``."""
    files = regular_files(folder, "*.json")
    other = folder / OTHER
    if other.is_dir() and not other.is_symlink():
        files += regular_files(other, "*.json")
    return sorted(files)


def regular_files(folder: Path, pattern: str) -> list[Path]:
    """The regular files of ``folder`` matching ``pattern``, sorted; a symbolic link among
    them is an error (predictions are read from the folder named, never through a link)."""
    found = []
    for path in sorted(folder.glob(pattern)):
        if path.is_symlink():
            raise JunoBenchError("is a symbolic link; predictions are read from regular files "
                                 "only", file=path, hint="copy the file into the folder")
        if path.is_file():
            found.append(path)
    return found


def _is_inspect_log(path: Path) -> bool:
    if path.suffix == ".eval":
        return True
    if path.suffix != ".json":
        return False
    try:
        with os.fdopen(open_regular(path), "rb") as handle:
            head = handle.read(4096)
    except OSError:
        return False
    return head.lstrip().startswith(b"{") and b'"eval"' in head


# --------------------------------------------------------------------------- folders of files


def read_instance_files(folder: Path) -> Predictions:
    """``<instance>.json`` files, in ``folder`` and its ``other/`` subfolder."""
    return _read_instance_files(folder, INSTANCES, lambda runs, instance: runs)


def read_crane_parsed(folder: Path) -> Predictions:
    """Judge labels per run, turned back into the detection each judged (see :func:`judged`).
    A folder under ``results_parsed_reversed_<k>`` is refused (see the module's notes)."""
    reversed_part = next((part for part in folder.resolve().parts if REVERSED.match(part)), None)
    if reversed_part is not None:
        raise JunoBenchError(
            f"{reversed_part} holds the LLM judge's labels under the reversed protocol (the "
            "prediction shown before the ground truth): a check of the judge, not detections; "
            "read as detections they score every fixed notebook right (precision 1.000)",
            file=folder, hint="score the raw runs (results_raw) or a results_parsed_<k> folder; "
            "the judge protocols are compared in docs/diagnosis.md")

    def convert(labels: list[Any], instance: str) -> list[Any]:
        version = vocab.split_instance(instance)[1]
        out: list[Any] = []
        for label in labels:
            detection = judged(label, version) if isinstance(label, str) else None
            out.append(label if detection is None else
                       {"detection": detection, "reasoning": f"judged {label.strip()}"})
        return out

    return _read_instance_files(folder, CRANE_PARSED, convert)


def judged(label: str, version: str) -> bool | None:
    """The detection an LLM-judge label implies on a notebook of ``version``, or None.

    The CRANE-LLM judge compares detections first: ``[Wrong]`` means the detection was
    wrong; on a crashing (reproduced) notebook ``[Correct]``, ``[Partially correct]`` and
    ``[Reasoning Wrong]`` all mean crash was detected (they grade the diagnosis); on a
    fixed notebook only ``[Correct]`` (no crash) is a valid label.
    """
    match = _JUDGE.match(label)
    if not match:
        return None
    verdict = match.group(1).lower()
    crashes = version == "reproduced"
    if verdict == "wrong":
        return not crashes
    if verdict == "correct":
        return crashes
    return True if crashes else None


def _looks_judged(files: list[Path]) -> bool:
    """True when the first file with string runs holds judge labels only."""
    for file in files[:20]:
        try:
            data = json.loads(read_regular(file, limit=MAX_TEXT_BYTES).decode("utf-8"))
        except (OSError, ValueError, RecursionError):
            continue
        if not isinstance(data, list) or not data:
            continue
        if not all(isinstance(x, str) for x in data):
            return False
        labels = [x for x in data if _JUDGE.match(x)]
        return bool(labels) and all(_JUDGE.match(x) or _JUDGE_FAILED.match(x) for x in data)
    return False


def _read_instance_files(folder: Path, layout: str,
                         convert: Callable[[list[Any], str], list[Any]]) -> Predictions:
    return read_per_instance(folder, layout, _json_files(folder),
                               lambda file, instance: convert(runs_file(file, instance), instance),
                               hint="name files <case>_reproduced.json or <case>_fixed.json")


def read_construct(folder: Path) -> Predictions:
    """``results_buggy/`` and ``results_fixed/`` of ``crash_detection_results_<case>.json``."""
    return _read_case_folders(folder, CONSTRUCT, CONSTRUCT_FOLDERS)


def read_case_folders(folder: Path) -> Predictions:
    """``buggy/`` (or ``reproduced/``) and ``fixed/`` folders of ``<case>.json`` files."""
    if (folder / "buggy").is_dir() and (folder / "reproduced").is_dir():
        raise JunoBenchError("both buggy/ and reproduced/ folders: which holds the reproduced "
                             "notebooks' runs?", file=folder, hint="keep one of them")
    return _read_case_folders(folder, CASE_FOLDERS, VERSION_FOLDERS)


def _read_case_folders(folder: Path, layout: str, folders: dict[str, str]) -> Predictions:
    out = Predictions(folder, layout)
    present = [name for name in folders if (folder / name).is_dir()]
    if not present:
        raise JunoBenchError(f"no {' or '.join(f'{n}/' for n in folders)} folder", file=folder,
                             hint=f"the {layout} layout keeps each version's runs in its folder")
    for name in present:
        version = folders[name]
        if (folder / name).is_symlink():
            raise JunoBenchError("is a symbolic link; predictions are read from regular files "
                                 "only", file=folder / name, hint="copy the folder instead")
        for file in regular_files(folder / name, "*.json"):
            case_id = file.stem.removeprefix(CONSTRUCT_PREFIX)
            if not vocab.is_case_id(case_id):
                raise JunoBenchError(
                    f"file name {file.name!r} does not name a case", file=file,
                    hint="name files <case>.json or crash_detection_results_<case>.json, "
                    "e.g. torch_7.json")
            instance = vocab.instance_id(case_id, version)
            out.claim_file(instance, file, keep="case and version")
            out.runs[instance] = runs_file(file, instance)
    return out


def runs_file(file: Path, instance: str) -> list[Any]:
    """The runs in one JSON file: a list, or a single run (object, string, boolean)."""
    data = read_json_file(file, instance, limit=MAX_TEXT_BYTES,
                          hint="each file holds a JSON list of the detector's runs")
    if isinstance(data, list):
        return data
    if isinstance(data, (dict, str, bool)):
        return [data]
    raise JunoBenchError(f"expected a JSON list of runs, found {value_kind(data)}", file=file,
                         case=instance, hint="each file holds a JSON list of the detector's runs")


# --------------------------------------------------------------------------- Inspect logs


def read_inspect_log(path: Path) -> Predictions:
    """An Inspect log of ``junobench/crash_detection``: each sample's completions, in epoch
    order, are its runs (a sample that failed counts as an unparsable run)."""
    log = eval_log(path)
    out = Predictions(path, INSPECT)
    epochs: dict[str, list[tuple[int, Any]]] = {}
    for sample in log.samples or []:
        instance = str(sample.id)
        check_instance(instance, path, "sample id: ", blind=True)
        if sample.error is not None:
            run: Any = f"[sample error: {sample.error.message}]"
        else:
            run = sample.output.completion if sample.output is not None else ""
        epochs.setdefault(instance, []).append((sample.epoch, run))
    for instance, runs in epochs.items():
        out.runs[instance] = [run for _, run in sorted(runs, key=lambda item: item[0])]
        out.origin[instance] = f"{path} (sample {instance})"
    if not out.runs:
        raise JunoBenchError("the Inspect log has no samples", file=path,
                             hint="the evaluation may not have finished; check `inspect view`")
    return out


def eval_log(path: str | Path, *, hint: str | None = "pass a log written by `inspect eval`"
             ) -> Any:
    """An Inspect log, read whole; an error naming ``path`` when it cannot be."""
    try:
        from inspect_ai.log import read_eval_log
    except ImportError:
        raise JunoBenchError("reading Inspect logs needs inspect_ai", file=path,
                             hint="pip install 'junobench[inspect]'") from None
    try:
        return read_eval_log(str(path))
    except Exception as error:  # Inspect raises many kinds on a damaged log
        raise JunoBenchError(f"not a readable Inspect log ({type(error).__name__}: {error})",
                             file=path, hint=hint) from None


READERS: dict[str, Callable[[Path], Predictions]] = {
    CANONICAL: read_jsonl,
    INSTANCES: read_instance_files,
    CRANE_PARSED: read_crane_parsed,
    CONSTRUCT: read_construct,
    CASE_FOLDERS: read_case_folders,
    INSPECT: read_inspect_log,
    CRANE_SA: analysers.read_outputs,
}
