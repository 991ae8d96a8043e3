"""What the fix changed: two sequences of cells aligned row by row, and each changed pair
diffed line by line (difflib's matching, the model nbdime and ``git diff`` share).

Cells are matched on their kind and source. A run of replaced cells pairs up position by
position (a changed cell); what is left over is a cell the fix added or removed.

>>> rows = align([("code", "a = 1"), ("code", "b = a[0]")], [("code", "a = 1"), ("code", "b = a")])
>>> [(r.status, r.left, r.right) for r in rows]
[('same', 0, 0), ('changed', 1, 1)]
>>> line_marks("x = 1\\ny = x[0]\\n", "x = 1\\ny = x\\n")
({1: 'del'}, {1: 'add'})
"""

from __future__ import annotations

import difflib
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Row:
    """One row of an alignment: an item of the left sequence, of the right, or both."""

    status: str  # same, changed, removed (left only), added (right only)
    left: int | None
    right: int | None


def align(left: Sequence[Hashable], right: Sequence[Hashable]) -> list[Row]:
    """Rows pairing ``left`` and ``right`` in order (see the module's doc)."""
    rows: list[Row] = []
    matcher = difflib.SequenceMatcher(None, list(left), list(right), autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            rows += [Row("same", i, j) for i, j in zip(range(i1, i2), range(j1, j2), strict=True)]
            continue
        paired = min(i2 - i1, j2 - j1)
        rows += [Row("changed", i1 + k, j1 + k) for k in range(paired)]
        rows += [Row("removed", i, None) for i in range(i1 + paired, i2)]
        rows += [Row("added", None, j) for j in range(j1 + paired, j2)]
    return rows


def line_marks(left: str, right: str) -> tuple[dict[int, str], dict[int, str]]:
    """Lines (0-based) the fix removed from ``left`` and added to ``right``."""
    a, b = left.split("\n"), right.split("\n")
    removed: dict[int, str] = {}
    added: dict[int, str] = {}
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        removed.update(dict.fromkeys(range(i1, i2), "del"))
        added.update(dict.fromkeys(range(j1, j2), "add"))
    return removed, added


def summary(statuses: Iterable[str]) -> dict[str, int]:
    """How many rows of each status (``changed``, ``added``, ``removed``, ``same``)."""
    counts = dict.fromkeys(("changed", "added", "removed", "same"), 0)
    for status in statuses:
        counts[status] += 1
    return counts
