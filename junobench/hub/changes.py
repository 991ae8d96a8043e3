"""``junobench diff A B``: what changed from one version of the benchmark to another.

``A`` and ``B`` are any sources :func:`junobench.load` reads (snapshot directories, exports,
``"sample"``, Hub dataset repos at a revision). Cases are matched by their ``eid`` (the
crash's id, which a renumbering keeps), else by case id: a case of ``B`` whose eid ``A``
does not hold is *added*, the reverse *removed*, and a matched case under another id
*renamed*. For each matched case the diff lists the changed labels, diagnosis, crash
(exception, message, crash line, target cell), notebooks (their code cells, outputs and
metadata aside, and execution orders), input datasets (title, URL, licence,
modifications, and the files when both sides hold the data), requirements, and
input-data files (by sha256; compared only where both sides hold the data: an export
records its snapshot's digests, a Hub snapshot is read without its data).

>>> d = diff("sample", "sample")
>>> d.empty, d.summary()
(True, 'no change: 10 cases in both')
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from junobench.data.provenance import layout_order
from junobench.render import first_names
from junobench.safety.text import shortened

#: Label fields compared (record field → what the release notes call it).
LABELS: dict[str, str] = {
    "library_label": "library", "root_cause": "root cause", "crash_type": "crash type",
    "pipeline_stage": "pipeline stage", "ml_bug": "ML bug", "source": "origin",
}
#: Crash fields compared.
CRASH: dict[str, str] = {
    "exception": "exception", "evalue": "message", "crash_line": "crash line",
    "target_cell_index": "target cell", "notebook_url": "notebook URL",
}
NOTEBOOKS = ("original", "reproduced", "fixed")
FORMATS = ("table", "json", "markdown")


@dataclass
class CaseChange:
    """What changed in one case matched in both sources (empty lists: nothing)."""

    case_id: str
    old_id: str
    eid: str | None
    labels: dict[str, list[Any]] = field(default_factory=dict)   # field → [old, new]
    diagnosis: list[Any] | None = None                             # [old, new]
    crash: dict[str, list[Any]] = field(default_factory=dict)
    notebooks: dict[str, str] = field(default_factory=dict)        # version → what changed
    datasets: list[str] = field(default_factory=list)
    requirements: dict[str, list[str]] = field(default_factory=dict)
    data: dict[str, list[str]] = field(default_factory=dict)       # added / removed / changed

    @property
    def renamed(self) -> bool:
        return self.case_id != self.old_id

    @property
    def changed(self) -> bool:
        return bool(self.labels or self.diagnosis or self.crash or self.notebooks or self.datasets
                    or self.requirements or self.data)

    def lines(self) -> list[str]:
        """One line per change, in plain words."""
        out = [f"{LABELS[k]}: {_change(o, n)}" for k, (o, n) in self.labels.items()]
        if self.diagnosis:
            out.append(f"diagnosis: {word_diff(self.diagnosis[0], self.diagnosis[1])}")
        out += [f"{CRASH[k]}: {_change(o, n)}" for k, (o, n) in self.crash.items()]
        out += [f"{version} notebook: {what}" for version, what in self.notebooks.items()]
        out += [f"dataset {line}" for line in self.datasets]
        out += [f"requirements {what}: {', '.join(names)}" for what, names in self.requirements.items()]
        out += [f"data {what}: {', '.join(names)}" for what, names in self.data.items()]
        return out

    def to_dict(self) -> dict[str, Any]:
        return {"case_id": self.case_id, "old_id": self.old_id, "eid": self.eid, "labels": self.labels,
                "diagnosis": self.diagnosis, "crash": self.crash, "notebooks": self.notebooks,
                "datasets": self.datasets, "requirements": self.requirements, "data": self.data}


@dataclass
class SnapshotDiff:
    """The difference from ``old`` to ``new``."""

    old: str
    new: str
    old_cases: int
    new_cases: int
    added: list[dict[str, Any]] = field(default_factory=list)     # {case_id, eid, library_label, root_cause}
    removed: list[dict[str, Any]] = field(default_factory=list)
    changes: list[CaseChange] = field(default_factory=list)       # matched cases, renamed or changed
    notes: list[str] = field(default_factory=list)

    @property
    def renamed(self) -> list[CaseChange]:
        return [c for c in self.changes if c.renamed]

    @property
    def changed(self) -> list[CaseChange]:
        return [c for c in self.changes if c.changed]

    @property
    def empty(self) -> bool:
        return not (self.added or self.removed or self.changes)

    def summary(self) -> str:
        if self.empty:
            return f"no change: {self.new_cases} cases in both"
        parts = [f"{len(self.added)} added", f"{len(self.removed)} removed",
                 f"{len(self.renamed)} renamed", f"{len(self.changed)} changed"]
        return f"{', '.join(parts)} ({self.old_cases} → {self.new_cases} cases)"

    def to_dict(self) -> dict[str, Any]:
        return {"old": self.old, "new": self.new, "cases": {"old": self.old_cases, "new": self.new_cases},
                "summary": self.summary(), "added": self.added, "removed": self.removed,
                "renamed": [{"old_id": c.old_id, "case_id": c.case_id, "eid": c.eid} for c in self.renamed],
                "changed": [c.to_dict() for c in self.changed], "notes": self.notes}

    def table(self) -> str:
        """Plain text: one line per case, its changes indented below."""
        from junobench.safety.text import printable

        lines = [f"{self.old} → {self.new}: {self.summary()}"]
        lines += [f"  added    {c['case_id']}  ({_case_words(c)})" for c in self.added]
        lines += [f"  removed  {c['case_id']}  ({_case_words(c)})" for c in self.removed]
        lines += [f"  renamed  {c.old_id} → {c.case_id}" for c in self.renamed]
        for change in self.changed:
            lines.append(f"  changed  {change.case_id}")
            lines += [f"             {line}" for line in change.lines()]
        lines += [f"  note: {note}" for note in self.notes]
        return "\n".join(printable(line) for line in lines) + "\n"

    def markdown(self, *, heading: str | None = None, level: int = 2) -> str:
        """Release notes in Markdown (every value from the data escaped)."""
        from junobench.safety.text import markdown_text as md

        h = "#" * level
        out = [f"{h} {md(heading)}", ""] if heading else []
        out += [f"{md(self.summary())}.", ""]
        for title, cases in (("Added", self.added), ("Removed", self.removed)):
            if cases:
                out += [f"{h}# {title}", ""] + [f"- `{md(c['case_id'])}`: {md(_case_words(c))}" for c in cases] + [""]
        if self.renamed:
            out += [f"{h}# Renamed", ""]
            out += [f"- `{md(c.old_id)}` → `{md(c.case_id)}`" for c in self.renamed] + [""]
        if self.changed:
            out += [f"{h}# Changed", ""]
            for change in self.changed:
                out.append(f"- `{md(change.case_id)}`")
                out += [f"  - {md(line)}" for line in change.lines()]
            out.append("")
        if self.notes:
            out += [f"{h}# Notes", ""] + [f"- {md(n)}" for n in self.notes] + [""]
        return "\n".join(out)

    def render(self, fmt: str) -> str:
        if fmt == "json":
            return json.dumps(self.to_dict(), indent=2, ensure_ascii=False) + "\n"
        if fmt == "markdown":
            return self.markdown(heading=f"Changes from {self.old} to {self.new}")
        if fmt == "table":
            return self.table()
        raise ValueError(f"unknown format {fmt!r}")


def diff(old: str | Path, new: str | Path, *, old_revision: str | None = None,
         new_revision: str | None = None, cache_dir: str | Path | None = None,
         progress: Callable[[str], None] | None = None) -> SnapshotDiff:
    """The :class:`SnapshotDiff` from ``old`` to ``new`` (each a source :func:`junobench.load`
    reads, at its revision when it is a Hub repo); ``progress`` is told each step."""
    from junobench.loader import load

    step = progress or (lambda _: None)
    step(f"reading {old} and {new}")
    old_cases = load(old, "cases", revision=old_revision, cache_dir=cache_dir).to_list()
    new_cases = load(new, "cases", revision=new_revision, cache_dir=cache_dir).to_list()
    old_data = source_data_digests(old, revision=old_revision)
    new_data = source_data_digests(new, revision=new_revision)
    step(f"comparing {len(old_cases)} and {len(new_cases)} cases")
    return compare(old_cases, new_cases, old_data, new_data, old=str(old), new=str(new))


def compare(old_cases: Sequence[Mapping[str, Any]], new_cases: Sequence[Mapping[str, Any]],
            old_data: Mapping[str, Mapping[str, str]] | None = None,
            new_data: Mapping[str, Mapping[str, str]] | None = None, *,
            old: str = "A", new: str = "B") -> SnapshotDiff:
    """The diff of two lists of ``cases`` records (a pure function); ``old_data`` /
    ``new_data`` map case ids to their data files' sha256 (None: unknown)."""
    result = SnapshotDiff(old, new, len(old_cases), len(new_cases))
    pairs, added, removed = _match(old_cases, new_cases)
    result.added = [_case_summary(c) for c in added]
    result.removed = [_case_summary(c) for c in removed]
    unknown_data: list[str] = []
    records_only = old_data is None and new_data is None
    for a, b in pairs:
        a_data = None if old_data is None else old_data.get(a["case_id"])
        b_data = None if new_data is None else new_data.get(b["case_id"])
        # the datasets' file lists are what each side holds: compared only with the data
        change = _case_change(a, b, files=records_only or (a_data is not None and b_data is not None))
        if a_data is not None and b_data is not None:
            change.data = _data_change(a_data, b_data)
        elif (a_data is None) != (b_data is None) or (a_data is None and _has_data(b)):
            unknown_data.append(b["case_id"])
        if change.renamed or change.changed:
            result.changes.append(change)
    result.changes.sort(key=lambda c: layout_order(c.case_id))
    if unknown_data:
        result.notes.append(f"input-data files not compared for {len(unknown_data)} case(s) whose data one "
                            f"side does not hold: {first_names(sorted(unknown_data, key=layout_order), 8)}")
    return result


def source_data_digests(source: str | Path, *, revision: str | None = None) -> dict[str, dict[str, str]] | None:
    """Case id → {data file: sha256} of a source: an export's recorded digests, or a local
    snapshot's files (None for a source that records none)."""
    from junobench.data.export import is_export, read_manifest
    from junobench.data.release_files import data_digests
    from junobench.data.snapshot import hub_repo, resolve

    root = resolve(source, revision=revision)
    if is_export(root):
        recorded = read_manifest(root).get("data")
        return _checked_digests(recorded)
    if hub_repo(source) is not None:
        return None  # fetched without its data
    return data_digests(root)


def _checked_digests(value: Any) -> dict[str, dict[str, str]] | None:
    if not isinstance(value, dict):
        return None
    out: dict[str, dict[str, str]] = {}
    for case, files in value.items():
        if isinstance(case, str) and isinstance(files, dict) and all(
                isinstance(k, str) and isinstance(v, str) for k, v in files.items()):
            out[case] = dict(files)
    return out


# --------------------------------------------------------------------------- matching


def _match(old: Sequence[Mapping[str, Any]], new: Sequence[Mapping[str, Any]]
           ) -> tuple[list[tuple[Mapping[str, Any], Mapping[str, Any]]], list[Mapping[str, Any]],
                      list[Mapping[str, Any]]]:
    """Pairs of the same case, then the cases added and removed (see :func:`match_cases`)."""
    matched = match_cases(old, new)
    pairs = [(old[i], new[j]) for i, j in matched]
    taken_old, taken_new = {i for i, _ in matched}, {j for _, j in matched}
    added = [b for j, b in enumerate(new) if j not in taken_new]
    left = [a for i, a in enumerate(old) if i not in taken_old]
    key = layout_order
    return (sorted(pairs, key=lambda p: key(p[1]["case_id"])), sorted(added, key=lambda c: key(c["case_id"])),
            sorted(left, key=lambda c: key(c["case_id"])))


def match_cases(old: Sequence[Mapping[str, Any]], new: Sequence[Mapping[str, Any]]) -> list[tuple[int, int]]:
    """Index pairs ``(i, j)``: ``old[i]`` and ``new[j]`` are the same case.

    A case is the same across versions by its eid; where one side has none, by its content:
    the normalised code of its notebooks (:mod:`junobench.data.similarity`), at least
    :data:`~junobench.data.similarity.THRESHOLD` similar (the most similar first; the same
    case id breaks a tie). Two cases with different eids are never the same, and the case
    id alone never makes two cases the same, except for records that hold no code at all.
    """
    from junobench.data.similarity import THRESHOLD, case_similarity

    taken = _Pairs()
    _match_eids(old, new, taken)
    rest_old = [i for i in range(len(old)) if i not in taken.old]
    rest_new = [j for j in range(len(new)) if j not in taken.new]
    old_prints = {i: _prints(old[i]) for i in rest_old}
    new_prints = {j: _prints(new[j]) for j in rest_new}

    def candidates(olds: list[int], news: list[int]) -> list[tuple[float, bool, int, int]]:
        found = []
        for j in news:
            for i in olds:
                if _eid(old[i]) and _eid(new[j]):
                    continue  # two eids that differ: two cases
                value, version = case_similarity(old_prints[i], new_prints[j])
                if version is not None and value >= THRESHOLD:
                    found.append((-value, old[i]["case_id"] != new[j]["case_id"], i, j))
        return sorted(found)

    by_id = {old[i]["case_id"]: i for i in rest_old}
    same_id = [(by_id[new[j]["case_id"]], j) for j in rest_new if new[j]["case_id"] in by_id]
    found = candidates([i for i, _ in same_id], [j for _, j in same_id])
    taken.take_all(c for c in found if old[c[2]]["case_id"] == new[c[3]]["case_id"])  # the common case first
    taken.take_all(candidates([i for i in rest_old if i not in taken.old],
                              [j for j in rest_new if j not in taken.new]))
    for j in rest_new:  # records without code: the same case id, where neither has an eid
        same = by_id.get(new[j]["case_id"])
        if same is not None and not old_prints[same] and not new_prints[j] and not (_eid(old[same]) and _eid(new[j])):
            taken.take(same, j)
    return taken.pairs


def _match_eids(old: Sequence[Mapping[str, Any]], new: Sequence[Mapping[str, Any]], taken: _Pairs) -> None:
    """Pair the cases of the same eid (the one of the same case id first)."""
    by_eid: dict[str, list[int]] = {}
    for i, case in enumerate(old):
        if _eid(case):
            by_eid.setdefault(_eid(case), []).append(i)
    for j, case in enumerate(new):
        same = [i for i in by_eid.get(_eid(case) or "\0", []) if i not in taken.old]
        if same:
            taken.take(next((i for i in same if old[i]["case_id"] == case["case_id"]), same[0]), j)


class _Pairs:
    """Index pairs taken so far; an index is taken once."""

    def __init__(self) -> None:
        self.pairs: list[tuple[int, int]] = []
        self.old: set[int] = set()
        self.new: set[int] = set()

    def take(self, i: int, j: int) -> None:
        if i not in self.old and j not in self.new:
            self.pairs.append((i, j))
            self.old.add(i)
            self.new.add(j)

    def take_all(self, found: Iterable[tuple[float, bool, int, int]]) -> None:
        for _, _, i, j in found:
            self.take(i, j)


def _eid(case: Mapping[str, Any]) -> str:
    """The case's eid as compared (stripped, lower case; empty when it has none)."""
    value = str(case.get("eid") or "").strip().lower()
    return "" if value in ("none", "nan") else value


def _prints(case: Mapping[str, Any]) -> dict[str, frozenset[int]]:
    from junobench.data.similarity import case_prints

    return case_prints({version: code_cells(case.get(version)) for version in NOTEBOOKS})


def _case_summary(case: Mapping[str, Any]) -> dict[str, Any]:
    return {"case_id": case["case_id"], "eid": case.get("eid"), "library": case.get("library_label"),
            "root_cause": case.get("root_cause"), "crash_type": case.get("crash_type"),
            "exception": case.get("exception")}


def _case_words(summary: Mapping[str, Any]) -> str:
    parts = [summary.get("library"), summary.get("root_cause"), summary.get("crash_type"),
             summary.get("exception")]
    return ", ".join(str(p) for p in parts if p)


# --------------------------------------------------------------------------- one case


def _case_change(a: Mapping[str, Any], b: Mapping[str, Any], *, files: bool = True) -> CaseChange:
    change = CaseChange(b["case_id"], a["case_id"], b.get("eid") or a.get("eid"))
    change.labels = {k: [a.get(k), b.get(k)] for k in LABELS if a.get(k) != b.get(k)}
    if _words(a.get("diagnosis")) != _words(b.get("diagnosis")):
        change.diagnosis = [a.get("diagnosis"), b.get("diagnosis")]
    change.crash = {k: [a.get(k), b.get(k)] for k in CRASH if a.get(k) != b.get(k)}
    for version in NOTEBOOKS:
        what = _notebook_change(a.get(version), b.get(version))
        if version != "original":
            order = (a.get("execution_order") or {}).get(version)
            if what is None and _order(order) != _order((b.get("execution_order") or {}).get(version)):
                what = "execution order changed"
        if what:
            change.notebooks[version] = what
    change.datasets = _dataset_changes(a.get("datasets") or [], b.get("datasets") or [], files=files)
    old_req, new_req = set(a.get("requirements") or []), set(b.get("requirements") or [])
    change.requirements = {k: sorted(v) for k, v in (("added", new_req - old_req),
                                                     ("removed", old_req - new_req)) if v}
    return change


def _words(text: Any) -> str:
    return " ".join(str(text).split()) if text is not None else ""


def _order(order: Any) -> list[tuple[Any, Any]]:
    return [(c.get("code_cell_index"), c.get("execution_count")) for c in order or []]


def code_cells(notebook: str | None) -> list[str] | None:
    """The code cells' sources of a notebook's JSON text (None when it is not a notebook)."""
    if notebook is None:
        return None
    try:
        cells = json.loads(notebook).get("cells")
    except (ValueError, AttributeError, RecursionError):
        return None
    if not isinstance(cells, list):
        return None
    out = []
    for cell in cells:
        if isinstance(cell, dict) and cell.get("cell_type") == "code":
            source = cell.get("source", "")
            out.append("".join(map(str, source)) if isinstance(source, list) else str(source))
    return out


def _notebook_change(a: str | None, b: str | None) -> str | None:
    if a == b:  # the same text: nothing to parse
        return None
    if a is None:
        return "added"
    if b is None:
        return "removed"
    old, new = code_cells(a), code_cells(b)
    if old is None or new is None:
        return None if a == b else "changed (not readable as a notebook)"
    if old == new:
        return None
    edited, inserted, deleted = [], 0, 0
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, old, new, autojunk=False).get_opcodes():
        if tag == "replace":
            edited += list(range(j1, j2))
            inserted += max(0, (j2 - j1) - (i2 - i1))
            deleted += max(0, (i2 - i1) - (j2 - j1))
        elif tag == "insert":
            inserted += j2 - j1
        elif tag == "delete":
            deleted += i2 - i1
    parts = []
    if edited:
        parts.append(f"code cell{'s' if len(edited) > 1 else ''} {', '.join(map(str, edited))} edited")
    if inserted:
        parts.append(f"{inserted} code cell(s) added")
    if deleted:
        parts.append(f"{deleted} code cell(s) removed")
    return "; ".join(parts)


def _dataset_changes(old: Sequence[Mapping[str, Any]], new: Sequence[Mapping[str, Any]], *,
                     files: bool = True) -> list[str]:
    def ident(d: Mapping[str, Any]) -> str:
        return str(d.get("name") or d.get("url") or d.get("title"))

    before, after = {ident(d): d for d in old}, {ident(d): d for d in new}
    lines = [f"{name!r} added ({after[name].get('license') or 'no licence'})" for name in after if name not in before]
    lines += [f"{name!r} removed" for name in before if name not in after]
    for name in after:
        if name not in before:
            continue
        a, b = before[name], after[name]
        for key in ("title", "url", "license"):
            if a.get(key) != b.get(key):
                lines.append(f"{name!r} {key}: {_short(a.get(key))} → {_short(b.get(key))}")
        for key in ("modifications", "files") if files else ("modifications",):
            gained = sorted(set(b.get(key) or []) - set(a.get(key) or []))
            lost = sorted(set(a.get(key) or []) - set(b.get(key) or []))
            if gained:
                lines.append(f"{name!r} {key} added: {', '.join(gained)}")
            if lost:
                lines.append(f"{name!r} {key} removed: {', '.join(lost)}")
    return lines


def _has_data(case: Mapping[str, Any]) -> bool:
    return any(d.get("files") for d in case.get("datasets") or [])


def _data_change(a: Mapping[str, str], b: Mapping[str, str]) -> dict[str, list[str]]:
    out = {"added": sorted(set(b) - set(a)), "removed": sorted(set(a) - set(b)),
           "changed": sorted(k for k in set(a) & set(b) if a[k] != b[k])}
    return {k: v for k, v in out.items() if v}


def _change(old: Any, new: Any, limit: int = 80) -> str:
    """``old → new``, or a :func:`word_diff` when either is longer than ``limit``."""
    if max(len(_words(old)), len(_words(new))) > limit:
        return word_diff(old, new)
    return f"{_short(old)} → {_short(new)}"


def word_diff(old: Any, new: Any, *, context: int = 6) -> str:
    """The words of ``new`` with what changed from ``old`` marked, ``[-removed-]
    {+added+}``, runs of more than ``2 * context`` unchanged words shortened to ``…``
    (so that an edit at the end of a long text shows).

    >>> word_diff("the column is read by a name", "the column is read by a wrong name")
    'the column is read by a {+wrong+} name'
    """
    a, b = _words(old).split(), _words(new).split()
    if not a:
        return f"{{+{' '.join(b)}+}}" if b else "(none)"
    if not b:
        return f"[-{' '.join(a)}-] (now none)"
    parts: list[str] = []
    opcodes = difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes()
    for number, (tag, i1, i2, j1, j2) in enumerate(opcodes):
        if tag == "equal":
            words = b[j1:j2]
            head = words[:context] if number > 0 else []
            tail = words[-context:] if number < len(opcodes) - 1 else []
            if len(words) > len(head) + len(tail) + 1:
                parts += [*head, "…", *tail]
            else:
                parts += words
            continue
        if i2 > i1:
            parts.append(f"[-{' '.join(a[i1:i2])}-]")
        if j2 > j1:
            parts.append(f"{{+{' '.join(b[j1:j2])}+}}")
    return " ".join(parts)


def _short(value: Any, limit: int = 80) -> str:
    text = "(none)" if value is None else " ".join(str(value).split())
    return shortened(text, limit)
