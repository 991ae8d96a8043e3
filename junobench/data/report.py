"""What preparing the records of a snapshot found (:class:`BuildReport`): kept beside the
records, so that a warm load reports the same as the build did.

Light on purpose: reading records back from the cache (:mod:`junobench.data.prepared`)
reports with it without loading the parsing code.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from junobench.errors import Problem
from junobench.render import some as _ids


@dataclass
class BuildReport:
    """What preparing the records found: skipped cases with their problems, absences
    (cases without an original notebook or input data), case folders no table row
    names, and per case the imports its environment does not pin (``unpinned``).
    Written beside the records, so a warm load reports the same."""

    snapshot: Path | None = None
    fingerprint: str = ""
    skipped: list[str] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    absent: dict[str, list[str]] = field(default_factory=dict)
    unlisted_folders: list[str] = field(default_factory=list)
    unpinned: dict[str, list[str]] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"skipped": self.skipped, "problems": [p.to_dict() for p in self.problems],
                "absent": self.absent, "unlisted_folders": self.unlisted_folders,
                "unpinned": self.unpinned}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], *, snapshot: Path | None = None,
                  fingerprint: str = "") -> BuildReport:
        """The report of :meth:`to_dict`'s form (as stored beside records or in a manifest)."""
        return cls(snapshot, fingerprint, skipped=list(data.get("skipped", [])),
                   problems=[Problem(**p) for p in data.get("problems", [])],
                   absent={what: sorted(ids) for what, ids in data.get("absent", {}).items()},
                   unlisted_folders=list(data.get("unlisted_folders", [])),
                   unpinned={case: list(names) for case, names in data.get("unpinned", {}).items()})

    def summary(self) -> list[str]:
        """One line per kind of finding, for the log."""
        lines = []
        if self.skipped:
            lines.append(f"skipped {len(self.skipped)} invalid case(s): {_ids(self.skipped)}")
            lines += [f"  - {p}" for p in self.problems]
        for what, ids in sorted(self.absent.items()):
            lines.append(f"{what} not in snapshot for {len(ids)} case(s): {_ids(ids)}")
        if self.unlisted_folders:
            lines.append(f"case folder(s) without a table row, not loaded: "
                         f"{_ids(self.unlisted_folders)}")
        if self.unpinned:
            cases = sorted(self.unpinned, key=_case_order)
            lines.append(f"imports the environment does not pin, in {len(cases)} case(s): "
                         + _ids([f"{case} ({', '.join(self.unpinned[case])})" for case in cases]))
        return lines


def _case_order(case_id: str) -> tuple[str, int, str]:
    from junobench.data.cases import case_order  # the parsing code: only for this line

    return case_order(case_id)
