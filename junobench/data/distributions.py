"""Distributions of a set of ``cases`` records: label counts, cross-tabulations by
library, licences. :func:`compute` is a pure function of the records; loading them from a
source is :func:`junobench.stats.stats`, drawing them :mod:`junobench.plots`, and the
dataset card's tables (:mod:`junobench.hub.card`) are counted here too.

>>> s = compute([{"case_id": "torch_1", "library": "torch", "root_cause": "API misuse",
...               "crash_type": "invalid argument", "pipeline_stage": "training",
...               "source": None, "dataset_note": None, "exception": "RuntimeError",
...               "datasets": []}])
>>> s.counts["library"], s.by_library["root_cause"]
({'torch': 1}, {'API misuse': {'torch': 1}})
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from junobench import vocab
from junobench.data.filters import FIELD_VALUES

#: The four label dimensions of the benchmark (``cases`` fields), as the paper's Figure 2.
DIMENSIONS: tuple[str, ...] = ("library", "root_cause", "crash_type", "pipeline_stage")
#: Dimensions cross-tabulated by library (Figure 2b and 2d are segmented by library).
SEGMENTED: tuple[str, ...] = ("root_cause", "pipeline_stage")
#: Readable names of the statistics.
TITLES: dict[str, str] = {
    "library": "Library cause",
    "root_cause": "Root cause",
    "crash_type": "Crash type",
    "pipeline_stage": "ML pipeline stage",
    "source": "Source",
    "exception": "Exception class",
    "license": "Input-dataset licence (datasets)",
    "modification": "Input-data modification (cases)",
    "dataset_note": "Dataset note (cases)",
}
#: The value counted for a case whose field is null.
NOT_RECORDED = "(not recorded)"

#: Field → its vocabulary, whose order breaks ties: the filters' and the modifications.
_VOCABULARIES: dict[str, Sequence[str]] = {**FIELD_VALUES, "modification": vocab.MODIFICATIONS}
#: ``cases`` fields that :func:`compute` reads.
FIELDS: tuple[str, ...] = (*DIMENSIONS, "source", "dataset_note", "exception", "datasets")


@dataclass
class Stats:
    """Counts over a set of cases.

    ``counts[name]`` maps each value to its number of cases (most frequent first; ties
    in vocabulary order) for the four :data:`DIMENSIONS`, ``exception``, and — only when
    some case records it — ``source``, ``modification`` (cases whose input data were
    downsampled / synthetic, from the dataset metadata files and the table's
    ``Dataset_note``) and ``dataset_note`` (the note's ``;``-separated parts, verbatim).
    ``counts["license"]`` counts distinct input datasets per licence.
    ``by_library[dim]`` maps each value of a :data:`SEGMENTED` dimension to its
    ``{library: count}`` (libraries in the order of ``counts["library"]``).
    """

    cases: int
    counts: dict[str, dict[str, int]] = field(default_factory=dict)
    by_library: dict[str, dict[str, dict[str, int]]] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """The JSON shape: ``cases``, one key per count, ``<dim>_by_library``."""
        out: dict[str, Any] = {"cases": self.cases, **self.counts}
        for dim, table in self.by_library.items():
            out[f"{dim}_by_library"] = table
        return out

    def rows(self) -> list[dict[str, Any]]:
        """Tidy rows ``{statistic, value, library, count}`` (``library`` set in cross-tabs)."""
        out: list[dict[str, Any]] = [{"statistic": "cases", "value": "", "library": "",
                                      "count": self.cases}]
        for name, counts in self.counts.items():
            out += [{"statistic": name, "value": v, "library": "", "count": n} for v, n in counts.items()]
        for dim, table in self.by_library.items():
            out += [{"statistic": f"{dim}_by_library", "value": v, "library": lib, "count": n}
                    for v, libs in table.items() for lib, n in libs.items()]
        return out

    def libraries(self) -> list[str]:
        """The libraries present, most cases first."""
        return list(self.counts.get("library", {}))

    def to_text(self) -> str:
        """Aligned text: one table per count (with shares), one matrix per cross-tab."""
        from junobench.render import table

        parts = [f"{self.cases} cases\n"]
        for name, counts in self.counts.items():
            unit = "datasets" if name == "license" else "cases"  # a case may have several parts
            total = (sum(counts.values()) if name == "license" else self.cases) or 1
            rows = [{name: v, unit: n, "share": f"{100 * n / total:.1f}%"} for v, n in counts.items()]
            columns = [name, unit, "share"]
            parts.append(f"{TITLES.get(name, name)}\n{table(rows, columns)}")
        libraries = self.libraries()
        for dim, matrix in self.by_library.items():
            rows = [{dim: v, **{lib: libs.get(lib, "") for lib in libraries},
                     "total": sum(libs.values())} for v, libs in matrix.items()]
            parts.append(f"{TITLES[dim]} by library\n{table(rows, [dim, *libraries, 'total'])}")
        return "\n".join(parts)


def compute(cases: Iterable[Mapping[str, Any]]) -> Stats:
    """The :class:`Stats` of ``cases`` records (only the :data:`FIELDS` are read)."""
    tally = _Tally()
    for case in cases:
        tally.add(case)
    counts = tally.counts()
    libraries = list(counts["library"])
    by_library = {
        dim: {value: {lib: tally.crosses[dim][value, lib] for lib in libraries
                      if tally.crosses[dim][value, lib]}
              for value in counts[dim]}
        for dim in SEGMENTED
    }
    return Stats(tally.cases, counts, by_library)


class _Tally:
    """What :func:`compute` counts, one case at a time."""

    def __init__(self) -> None:
        self.cases = 0
        self.counters: dict[str, Counter[str]] = {name: Counter()
                                                  for name in (*DIMENSIONS, "source", "exception")}
        self.crosses: dict[str, Counter[tuple[str, str]]] = {dim: Counter() for dim in SEGMENTED}
        self.modification: Counter[str] = Counter()
        self.notes: Counter[str] = Counter()
        self.licences: dict[tuple[str, str], str] = {}

    def add(self, case: Mapping[str, Any]) -> None:
        self.cases += 1
        for name, counter in self.counters.items():
            counter[_value(case.get(name))] += 1
        library = _value(case.get("library"))
        for dim, cross in self.crosses.items():
            cross[_value(case.get(dim)), library] += 1
        note = case.get("dataset_note") or ""
        self.notes.update(dict.fromkeys([p.strip() for p in note.split(";") if p.strip()], 1))
        datasets = case.get("datasets") or []
        self.modification.update({m for d in datasets for m in d.get("modifications") or []}
                                 | {kind for kind in vocab.MODIFICATIONS if kind in note.lower()})
        for d in datasets:
            title = d.get("title") or d.get("name") or ""
            if not vocab.is_no_data(title):
                self.licences[(title, d.get("url") or "")] = d.get("license") or NOT_RECORDED

    def counts(self) -> dict[str, dict[str, int]]:
        """Each dimension's counts, most frequent first; the source only when some case
        records it, modifications and dataset notes only when there are any."""
        counts = {name: _ordered(self.counters[name], name) for name in DIMENSIONS}
        if set(self.counters["source"]) - {NOT_RECORDED}:
            counts["source"] = _ordered(self.counters["source"], "source")
        counts["exception"] = _ordered(self.counters["exception"], "exception")
        counts["license"] = _ordered(Counter(self.licences.values()), "license")
        if self.modification:
            counts["modification"] = _ordered(self.modification, "modification")
        if self.notes:
            counts["dataset_note"] = _ordered(self.notes, "dataset_note")
        return counts


def _value(value: Any) -> str:
    return NOT_RECORDED if value is None or value == "" else str(value)


def _ordered(counter: Counter[str], name: str) -> dict[str, int]:
    """Most frequent first; ties in vocabulary order, then alphabetical; not recorded last."""
    known = {v: i for i, v in enumerate(_VOCABULARIES.get(name, ()))}

    def key(item: tuple[str, int]) -> tuple[bool, int, int, str]:
        value, count = item
        return value == NOT_RECORDED, -count, known.get(value, len(known)), value

    return dict(sorted(counter.items(), key=key))
