"""``verify --keep-outputs DIR``: each replayed notebook saved with its replay's outputs.

Every notebook a run replays is written to ``DIR/<case>/<case>_<version>.ipynb`` (the
snapshot's names), whichever executor ran it: the notebook as the replay left it, its
code cells holding what this replay printed and displayed and the execution counts it
gave (cells the replay did not reach hold nothing), and in its metadata
(``junobench.replay``) the runs in order with their status, and why the kernel failed
when it did. Each file appears whole or not at all; the paths are built from checked case
ids inside ``DIR``, and a link in ``DIR`` is never written through (a linked case folder
is refused, a linked file replaced). A replay that did not start (its files refused, no
kernel) has nothing to keep. What ``DIR`` holds besides these files is left as it is.

>>> saved_path(Path("out"), "pandas_1", "fixed").as_posix()
'out/pandas_1/pandas_1_fixed.ipynb'
"""

from __future__ import annotations

import json
import os
from dataclasses import replace
from pathlib import Path
from typing import Any

from junobench import vocab
from junobench.data import layout
from junobench.errors import JunoBenchError
from junobench.safety.atomic import write_text
from junobench.safety.paths import inside
from junobench.verify.executor import ReplayOutcome


def prepare_folder(folder: str | Path) -> Path:
    """``folder`` made ready to hold kept notebooks (created; refused when it is a file or
    a link): checked before any notebook runs."""
    path = Path(folder)
    if path.is_symlink():
        raise JunoBenchError("the folder for the kept notebooks is a symbolic link", file=path,
                             hint="give the real path of the folder")
    if path.exists() and not path.is_dir():
        raise JunoBenchError("exists and is not a folder", file=path,
                             hint="--keep-outputs names a folder (new, or one to add notebooks to)")
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise JunoBenchError(f"cannot make the folder ({error.strerror or error})", file=path) from None
    return path


def saved_path(folder: Path, case_id: str, version: str) -> Path:
    """Where the replay of ``case_id``'s ``version`` notebook is kept."""
    if not vocab.is_case_id(case_id):
        raise JunoBenchError(f"{case_id!r} is not a case id", file=folder)
    return inside(folder, case_id, layout.notebook_name(case_id, version))


def present(folder: Path, case_id: str, versions: tuple[str, ...]) -> bool:
    """Whether ``folder`` keeps a replay of every one of the case's ``versions``."""
    return all(saved_path(folder, case_id, v).is_file() and not saved_path(folder, case_id, v).is_symlink()
               for v in versions)


def keep(folder: Path, case_id: str, version: str, outcome: ReplayOutcome) -> ReplayOutcome:
    """Write the replayed notebook ``outcome`` carries (when it does) to its
    :func:`saved_path`; the outcome without it (a case's results stay small)."""
    log = outcome.log
    if log.notebook is None:
        return outcome
    path = saved_path(folder, case_id, version)
    case_folder = path.parent
    if os.path.islink(case_folder) or (case_folder.exists() and not case_folder.is_dir()):
        raise JunoBenchError("not a folder of kept notebooks (a link, or a file)", file=case_folder,
                             case=case_id, hint="move it away: kept notebooks are never written through links")
    case_folder.mkdir(exist_ok=True)
    notebook = json.loads(log.notebook)
    notebook.setdefault("metadata", {})["junobench"] = {"replay": _replay(case_id, version, outcome)}
    write_text(path, json.dumps(notebook, indent=1, ensure_ascii=False) + "\n")
    return replace(outcome, log=replace(log, notebook=None))


def _replay(case_id: str, version: str, outcome: ReplayOutcome) -> dict[str, Any]:
    log = outcome.log
    return {
        "instance": vocab.instance_id(case_id, version),
        "runs": [{"code_cell_index": s.code_cell_index, "status": s.status,
                  **({"ename": s.ename} if s.ename else {})} for s in log.steps],
        "planned": log.planned,
        "failure": log.failure,
        "sandbox": log.sandbox,
        "worker": outcome.worker,
    }
