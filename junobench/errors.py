"""Errors for bad input: each names the file, the case and what to do.

The CLI prints a :class:`JunoBenchError` as one clear message and exits with code 1;
everything else is a bug and keeps its traceback.

>>> str(JunoBenchError("not valid JSON", file="benchmark/torch_1/torch_1_fixed.ipynb",
...                    case="torch_1", hint="re-export the notebook from Jupyter"))
'benchmark/torch_1/torch_1_fixed.ipynb: case torch_1: not valid JSON (re-export the notebook from Jupyter)'
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from junobench.utf8 import shortened, utf8_text

#: Characters of a case id a message shows, and of each end of a file's path; of its
#: problem and its hint (a 10,000-character id from a table is cut, not echoed whole).
_CASE_SHOWN = 80
_TEXT_SHOWN = 2000


@dataclass(frozen=True)
class Problem:
    """One thing wrong with one file of one case."""

    problem: str
    file: str | None = None
    case: str | None = None
    hint: str | None = None

    def __post_init__(self) -> None:
        # A file name may hold bytes that are not UTF-8 (Python keeps them as lone
        # surrogates): shown as \xNN, so that every message can be written as UTF-8.
        for name in ("problem", "file", "case", "hint"):
            value = getattr(self, name)
            if isinstance(value, str) and not value.isascii():
                object.__setattr__(self, name, utf8_text(value))

    def __str__(self) -> str:
        case = None if self.case is None else shortened(self.case, _CASE_SHOWN)
        file = None if self.file is None else shortened(self.file, 2 * _CASE_SHOWN, end=_CASE_SHOWN)
        where = [part for part in (file, f"case {case}" if case else None) if part]
        text = ": ".join([*where, shortened(self.problem, _TEXT_SHOWN, end=_TEXT_SHOWN // 2)])
        return f"{text} ({shortened(self.hint, _TEXT_SHOWN, end=_TEXT_SHOWN // 2)})" if self.hint else text

    def to_dict(self) -> dict[str, str | None]:
        return {"file": self.file, "case": self.case, "problem": self.problem, "hint": self.hint}


class JunoBenchError(Exception):
    """Bad input the user can fix. ``str()`` is the whole message."""

    def __init__(
        self,
        problem: str,
        *,
        file: str | Path | None = None,
        case: str | None = None,
        hint: str | None = None,
    ) -> None:
        self.problem_ = Problem(problem, None if file is None else str(file), case, hint)
        super().__init__(str(self.problem_))

    def __reduce__(self) -> tuple[Any, ...]:  # keep the fields across processes
        p = self.problem_
        return _rebuild_error, (type(self), p.problem, p.file, p.case, p.hint)

    @property
    def problems(self) -> list[Problem]:
        return [self.problem_]


class SnapshotError(JunoBenchError):
    """A snapshot with one or more invalid cases; lists all of them."""

    def __init__(self, problems: Iterable[Problem], *, root: str | Path | None = None) -> None:
        self._problems = list(problems)
        self.root = None if root is None else str(root)
        where = f" in {root}" if root is not None else ""
        lines = [f"{len(self._problems)} problem(s) found{where}:"]
        lines += [f"  - {p}" for p in self._problems]
        lines.append("Fix them, or pass --skip-invalid (skip_invalid=True) to build the other cases.")
        Exception.__init__(self, "\n".join(lines))
        self.problem_ = self._problems[0] if self._problems else Problem("invalid snapshot")

    @property
    def problems(self) -> list[Problem]:
        return list(self._problems)

    def __reduce__(self) -> tuple[Any, ...]:
        return _rebuild_snapshot_error, (type(self), self._problems, self.root)


def _rebuild_error(cls: type[JunoBenchError], problem: str, file: str | None, case: str | None,
                   hint: str | None) -> JunoBenchError:
    return cls(problem, file=file, case=case, hint=hint)


def _rebuild_snapshot_error(cls: type[SnapshotError], problems: list[Problem],
                            root: str | None) -> SnapshotError:
    return cls(problems, root=root)
