"""Helpers for tests that edit a copy of a snapshot or check that one was left alone."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path


def tree_digest(root: Path) -> dict[str, str]:
    """Every file under ``root`` with its sha256 (the bytes of a directory tree)."""
    return {p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


def edit_cell(snapshot: Path, case_id: str, version: str, code_index: int, source: str) -> None:
    """Replace the source of one code cell of a case's notebook."""
    path = snapshot / "benchmark" / case_id / f"{case_id}_{version}.ipynb"
    notebook = json.loads(path.read_text())
    code = [c for c in notebook["cells"] if c["cell_type"] == "code"]
    code[code_index]["source"] = source
    path.write_text(json.dumps(notebook, indent=1))


def variant(notebook: Path, dest: Path, note: str = "another case") -> Path:
    """A copy of ``notebook`` in the folder ``dest`` with one more code cell, never run (no
    execution count), of calls named after ``note``: the same behaviour, other code (neither
    a duplicate of the original nor a near-duplicate)."""
    data = json.loads(notebook.read_text(encoding="utf-8"))
    tag = re.sub(r"\W+", "_", note)
    data["cells"].append({"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [],
                          "source": "\n".join(f"notes.{tag}_{k}(step={k})" for k in range(80))})
    dest.mkdir(parents=True, exist_ok=True)
    path = dest / notebook.name
    path.write_text(json.dumps(data, indent=1), encoding="utf-8")
    return path
