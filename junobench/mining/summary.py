"""Summaries of a mined corpus: figures by kind, purpose, library and stage, kinds by
library and by stage, figures per notebook, problems; as tables, JSON, CSV or plots.

A :class:`Summary` counts rows as they go by: while ``mine`` writes them (for the card), or
read back from a mined corpus's parquet files by :func:`summarise` (the columns it needs
only, never the images). The ``junobench figures DIR`` verb prints it.

>>> s = Summary()
>>> s.add_figure({"kind": "histogram", "purpose": "distribution", "library": "seaborn",
...               "stage": "data visualization", "mime": "image/png", "problem": None, "unknown_calls": []})
>>> s.figures_by["kind"]
Counter({'histogram': 1})
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from junobench.errors import JunoBenchError

#: The figure fields counted one by one.
FIGURE_FIELDS: tuple[str, ...] = ("kind", "purpose", "library", "stage", "mime")
#: How a figure without a value of a field is counted.
NONE = "(none)"
_NUMBERS = re.compile(r"\d[\d,]*")
_PLACE = re.compile(r"^(?:row \d+: |cell \d+(?:, output \d+)?: )")


@dataclass
class Summary:
    """Counts of a mined corpus (see the module's notes)."""

    notebooks: int = 0
    cells: int = 0
    figures: int = 0
    figures_by: dict[str, Counter[str]] = field(default_factory=lambda: {f: Counter() for f in FIGURE_FIELDS})
    kind_by_library: dict[str, Counter[str]] = field(default_factory=dict)
    kind_by_stage: dict[str, Counter[str]] = field(default_factory=dict)
    per_notebook: Counter[int] = field(default_factory=Counter)
    unknown_calls: Counter[str] = field(default_factory=Counter)
    problems: Counter[str] = field(default_factory=Counter)
    execution: Counter[str] = field(default_factory=Counter)
    notebooks_with_problems: int = 0
    figures_with_problems: int = 0

    def add_notebook(self, row: Mapping[str, Any], cells: int) -> None:
        self.notebooks += 1
        self.cells += cells
        self.per_notebook[int(row.get("figures") or 0)] += 1
        problems = row.get("problems") or []
        if problems:
            self.notebooks_with_problems += 1
        for problem in problems:
            self.problems[problem_kind(problem)] += 1
        if row.get("execution"):
            self.execution[row["execution"]] += 1

    def add_figure(self, row: Mapping[str, Any]) -> None:
        self.figures += 1
        for name in FIGURE_FIELDS:
            self.figures_by[name][row.get(name) or NONE] += 1
        kind = row.get("kind") or NONE
        self.kind_by_library.setdefault(row.get("library") or NONE, Counter())[kind] += 1
        self.kind_by_stage.setdefault(row.get("stage") or NONE, Counter())[kind] += 1
        for call in row.get("unknown_calls") or []:
            self.unknown_calls[call.rsplit(" (", 1)[-1].rstrip(")")] += 1
        if row.get("problem"):
            self.figures_with_problems += 1
            self.problems[problem_kind(row["problem"])] += 1

    def add(self, other: Summary) -> None:
        """Add the counts of ``other`` (a batch's) to these, field by field: numbers,
        counters, and tables of counters."""
        for name in (f.name for f in fields(self)):
            mine, theirs = getattr(self, name), getattr(other, name)
            if isinstance(mine, int):
                setattr(self, name, mine + theirs)
            elif isinstance(mine, Counter):
                mine.update(theirs)
            else:
                for group, counts in theirs.items():
                    mine.setdefault(group, Counter()).update(counts)

    def to_dict(self) -> dict[str, Any]:
        return {
            "notebooks": self.notebooks, "cells": self.cells, "figures": self.figures,
            "figures_by": {k: dict(v.most_common()) for k, v in self.figures_by.items()},
            "kind_by_library": {k: dict(v.most_common()) for k, v in sorted(self.kind_by_library.items())},
            "kind_by_stage": {k: dict(v.most_common()) for k, v in sorted(self.kind_by_stage.items())},
            "figures_per_notebook": {str(k): v for k, v in sorted(self.per_notebook.items())},
            "unknown_calls": dict(self.unknown_calls.most_common()),
            "problems": dict(self.problems.most_common()),
            "execution": dict(self.execution.most_common()),
            "notebooks_with_problems": self.notebooks_with_problems,
            "figures_with_problems": self.figures_with_problems,
        }

    def rows(self) -> list[dict[str, Any]]:
        """Long form, one row a count: ``statistic, value, group, count`` (CSV)."""
        out: list[dict[str, Any]] = [{"statistic": name, "value": None, "group": None, "count": getattr(self, name)}
                                     for name in ("notebooks", "cells", "figures")]
        for name, counts in self.figures_by.items():
            out += [{"statistic": f"figures by {name}", "value": k, "group": None, "count": v}
                    for k, v in counts.most_common()]
        for statistic, table in (("kind by library", self.kind_by_library), ("kind by stage", self.kind_by_stage)):
            out += [{"statistic": statistic, "value": kind, "group": group, "count": count}
                    for group, counts in sorted(table.items()) for kind, count in counts.most_common()]
        out += [{"statistic": "figures per notebook", "value": str(k), "group": None, "count": v}
                for k, v in sorted(self.per_notebook.items())]
        for statistic, counts in (("unknown calls", self.unknown_calls), ("problems", self.problems),
                                  ("execution", self.execution)):
            out += [{"statistic": statistic, "value": k, "group": None, "count": v} for k, v in counts.most_common()]
        return out

    def to_text(self) -> str:
        """The tables, as ``junobench stats`` prints its own."""
        from junobench.render import render

        parts = [f"{self.notebooks:,} notebooks, {self.cells:,} cells, {self.figures:,} figures "
                 f"({self.figures_with_problems:,} with a problem; {self.notebooks_with_problems:,} notebooks "
                 "with a problem)\n"]
        for name, counts in self.figures_by.items():
            parts.append(f"\nfigures by {name}\n" + render([{name: k, "figures": v} for k, v in counts.most_common()],
                                                           "table"))
        for title, table in (("kind by library", self.kind_by_library), ("kind by stage", self.kind_by_stage)):
            kinds = [k for k, _ in sum(table.values(), Counter()).most_common()]
            rows = [{title.split()[-1]: group, **{k: counts.get(k, 0) for k in kinds}}
                    for group, counts in sorted(table.items(), key=lambda kv: -sum(kv[1].values()))]
            parts.append(f"\n{title}\n" + render(rows, "table"))
        parts.append("\nfigures per notebook\n" + render(
            [{"figures": k, "notebooks": v} for k, v in sorted(self.per_notebook.items())], "table"))
        for title, counts in (("unknown plotting calls", self.unknown_calls), ("problems", self.problems),
                              ("runs by junobench", self.execution)):
            if counts:
                parts.append(f"\n{title}\n" + render([{"what": k, "count": v} for k, v in counts.most_common()],
                                                     "table"))
        return "".join(parts)


def problem_kind(problem: str) -> str:
    """A problem without its place and numbers (``cell 3, output 0: 5000×5000 pixels…`` →
    ``N×N pixels…``), to count problems of a kind; cut at its first parenthesis."""
    text = _PLACE.sub("", problem).split(" (", 1)[0]
    return _NUMBERS.sub("N", text)[:120]


#: The columns :func:`summarise` reads of each config.
COLUMNS: dict[str, tuple[str, ...]] = {
    "notebooks": ("notebook", "figures", "cells", "problems", "execution"),
    "figures": ("kind", "purpose", "library", "stage", "mime", "problem", "unknown_calls"),
}


def summarise(folder: str | Path) -> Summary:
    """The :class:`Summary` of a mined corpus, read from its parquet files batch by batch."""
    from junobench.mining.corpus import read_rows
    from junobench.mining.write import read_manifest

    folder = Path(folder)
    read_manifest(folder, hint="give the folder `junobench mine --out` wrote")
    summary = Summary()
    try:
        for row in read_rows(folder, "notebooks", COLUMNS["notebooks"], batch_size=65_536):
            summary.add_notebook(row, row["cells"] or 0)
        for row in read_rows(folder, "figures", COLUMNS["figures"], batch_size=10_000):
            summary.add_figure(row)
    except (OSError, ValueError) as error:
        raise JunoBenchError(f"cannot read the mined corpus ({str(error)[:200]})", file=folder,
                             hint="mine it again") from None
    return summary
