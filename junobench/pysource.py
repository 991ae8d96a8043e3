"""Notebook cells as Python: IPython magics and shell lines turned into Python text, and
the names an import binds. Shared by the static detector and the runtime name analysis.

>>> python_source("!pip install x\\nfiles = !ls\\nx = 1")[0]
'pass\\nfiles = None\\nx = 1'
"""

from __future__ import annotations

import ast
import re

#: Line magics that can define arbitrary names.
_OPEN_WORLD_MAGICS = re.compile(r"^\s*%\s*(run|store|load|macro|recall|rerun|paste|cpaste|autoreload"
                                r"|aimport|reset)\b")
#: Cell magics whose body is Python.
_PYTHON_CELL_MAGICS = frozenset({"time", "timeit", "capture", "prun", "memit", "debug"})
#: ``name = !cmd`` / ``name = %magic``: the magic's result bound to names.
_MAGIC_ASSIGN = re.compile(r"^(\s*)([A-Za-z_][\w.]*(?:\s*,\s*[A-Za-z_][\w.]*)*)\s*=\s*[!%]")


def imported_names(node: ast.Import | ast.ImportFrom) -> list[str]:
    """The names an import statement binds (``import a.b`` binds ``a``; ``*`` binds none
    that can be known)."""
    return [a.asname or a.name.split(".")[0] for a in node.names if a.name != "*"]


def python_source(cell: str) -> tuple[str | None, set[str], bool]:
    """IPython cell → Python text (magics and shell lines become ``pass``), names that
    magics assign, and whether a magic can define arbitrary names. None when the cell is
    not Python (a cell magic such as ``%%bash``)."""
    lines = cell.splitlines()
    assigned: set[str] = set()
    if "%" not in cell and "!" not in cell and "?" not in cell:
        return "\n".join(lines), assigned, False  # no magic, shell line or help: the cell as it is
    open_world = False
    first = next((i for i, line in enumerate(lines) if line.strip()), None)
    if first is not None and lines[first].lstrip().startswith("%%"):
        words = lines[first].lstrip()[2:].split()
        if not words or words[0] not in _PYTHON_CELL_MAGICS:
            return None, assigned, False
        if words[0] == "capture":
            assigned.update(w for w in words[1:] if not w.startswith("-"))
        lines[first] = ""
    out = []
    for line in lines:
        stripped = line.lstrip()
        indent = line[: len(line) - len(stripped)]
        magic = _MAGIC_ASSIGN.match(line)
        if magic:
            names = [n.strip() for n in magic.group(2).split(",")]
            assigned.update(n for n in names if n.isidentifier())
            out.append(f"{indent}{magic.group(2)} = None")
        elif stripped.startswith(("%", "!")) or (stripped.endswith("?") and "#" not in stripped):
            open_world = open_world or bool(_OPEN_WORLD_MAGICS.match(stripped))
            out.append(f"{indent}pass")
        else:
            out.append(line)
    return "\n".join(out), assigned, open_world
