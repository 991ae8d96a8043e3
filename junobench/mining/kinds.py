"""The chart-kind mapping: which plotting call draws which kind of chart, for what purpose.

The mapping is data, ``chart_kinds.json`` beside this module (documented in
docs/mining.md, versioned: every change of what a call maps to changes its ``version``,
which the mined dataset's card and croissant.json record). :class:`ChartKinds` answers the
questions :mod:`.calls` asks of it:

- which library a resolved name belongs to (``matplotlib.pyplot.hist`` → ``matplotlib``,
  function ``hist``), by the longest module prefix;
- whether a library's function draws a chart (its kind and purpose), decorates one
  (``plt.title``), or is unknown to the mapping (named, never guessed);
- what a call returns (``plt.subplots`` → a figure and axes), so that ``ax.hist`` is known
  for matplotlib's;
- which code in a cell says what a figure is for (``history.history`` → training
  progress) and at which pipeline stage (:data:`junobench.vocab.PIPELINE_STAGES`).

>>> kinds = chart_kinds()
>>> kinds.library_of("matplotlib.pyplot.hist")
('matplotlib', 'hist')
>>> kinds.chart("seaborn", "catplot", {"kind": "box"})
('box plot', 'distribution')
>>> kinds.chart("sklearn", "ConfusionMatrixDisplay.from_predictions")
('confusion matrix', 'model evaluation')
"""

from __future__ import annotations

import fnmatch
import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from junobench import vocab
from junobench.errors import JunoBenchError

#: The mapping shipped with junobench.
MAPPING_FILE = Path(__file__).with_name("chart_kinds.json")
MAPPING_FORMAT = "junobench-chart-kinds/1"

#: The eight purposes a figure can serve (the mapping's ``purposes``, in this order).
PURPOSES: tuple[str, ...] = ("distribution", "relationship", "comparison", "composition", "model evaluation",
                             "training progress", "image samples", "other")

Chart = tuple[str, str]
#: Names whose library (and returned type) a :class:`ChartKinds` remembers (the same few
#: recur in every notebook).
_MEMO = 4096


@dataclass(frozen=True)
class EvidenceRule:
    """Code in a cell that says what a figure is for (``purpose``) or at which stage it is."""

    label: str
    calls: tuple[str, ...] = ()  # resolved names, fnmatch patterns
    methods: tuple[str, ...] = ()  # method names called on anything
    attributes: tuple[str, ...] = ()  # attribute names read
    keys: tuple[str, ...] = ()  # string subscripts (``h['val_loss']``)

    def matches(self, found: CellEvidence) -> str | None:
        """What in ``found`` matches this rule (``call sklearn.metrics.confusion_matrix``), or None."""
        if self.calls:
            pattern = _patterns(self.calls)
            hit = next((name for name in found.calls if pattern(name)), None)
            if hit is not None:
                return f"call {hit}"
        for what, names, wanted in (("method", found.methods, self.methods),
                                    ("attribute", found.attributes, self.attributes),
                                    ("key", found.keys, self.keys)):
            if wanted and not set(wanted).isdisjoint(names):
                hit = next(n for n in names if n in wanted)
                return f"{what} {hit}" if what != "key" else f"key {hit!r}"
        return None


@cache
def _patterns(patterns: tuple[str, ...]) -> Callable[[str], Any]:
    """One compiled matcher for a rule's fnmatch patterns."""
    return re.compile("|".join(fnmatch.translate(p) for p in patterns)).match


@dataclass
class CellEvidence:
    """Names a cell's code uses, in the order it uses them (what the evidence rules read)."""

    calls: list[str] = field(default_factory=list)
    methods: list[str] = field(default_factory=list)
    attributes: list[str] = field(default_factory=list)
    keys: list[str] = field(default_factory=list)


class ChartKinds:
    """A parsed chart-kind mapping (see the module's notes)."""

    def __init__(self, data: Mapping[str, Any], *, source: str = str(MAPPING_FILE)) -> None:
        problem = _problem(data)
        if problem:
            raise JunoBenchError(f"not a chart-kind mapping: {problem}", file=source,
                                 hint="see docs/mining.md for its format")
        self.version: str = data["version"]
        self.libraries: dict[str, dict[str, Any]] = dict(data["libraries"])
        self._module_of = {module: name for name, spec in self.libraries.items() for module in spec["modules"]}
        self.charts: dict[str, dict[str, Any]] = {k: dict(v) for k, v in data["charts"].items()}
        self.decorations: dict[str, frozenset[str]] = {k: frozenset(v) for k, v in data["decorations"].items()}
        self.returns: dict[str, tuple[str, ...]] = {k: tuple(v) for k, v in data["returns"].items()}
        patterns = [(k, v) for k, v in self.returns.items() if "*" in k]
        self._return_patterns = sorted(patterns, key=lambda kv: -len(kv[0]))  # the most specific first
        evidence = data["evidence"]
        self.purpose_rules = tuple(_rule(r, "purpose") for r in evidence["purposes"])
        self.stage_rules = tuple(_rule(r, "stage") for r in evidence["stages"])
        self.purpose_stages: dict[str, str] = dict(evidence["purpose_stages"])
        self._libraries: dict[str, tuple[str, str] | None] = {}  # library_of's answers, at most _MEMO
        self._returned: dict[str, tuple[str, ...]] = {}  # the types of names matched by patterns, likewise

    # ------------------------------------------------------------------ names

    def library_of(self, name: str) -> tuple[str, str] | None:
        """``(library, function)`` of a resolved dotted name, by the longest module prefix of
        the mapping's libraries (plotly's synonyms applied); None for another library's."""
        try:
            return self._libraries[name]
        except KeyError:
            pass
        if len(self._libraries) >= _MEMO:
            self._libraries.clear()
        found = self._libraries[name] = self._library_of(name)
        return found

    def _library_of(self, name: str) -> tuple[str, str] | None:
        parts = name.split(".")
        for end in range(len(parts), 0, -1):
            library = self._module_of.get(".".join(parts[:end]) if end < len(parts) else name)
            if library is None:
                continue
            function = ".".join(parts[end:])
            for old, new in self.libraries[library].get("synonyms", {}).items():
                if function.startswith(old):
                    function = new + function[len(old):]
            return library, function
        return None

    def plotting(self, library: str) -> bool:
        """Whether every function of ``library`` that is neither a chart nor a decoration is
        an unknown plotting call (matplotlib, seaborn…), not just another function (pandas)."""
        return bool(self.libraries[library].get("plotting"))

    def chart(self, library: str, function: str, keywords: Mapping[str, str] | None = None) -> Chart | None:
        """``(kind, purpose)`` of ``library.function`` called with the constant string
        ``keywords`` it was given; None when it draws no chart the mapping knows. A method of
        a class is looked up as the class (``ConfusionMatrixDisplay.from_estimator``), a method
        of an object type as its own name first (``Axes.hist`` as ``hist``)."""
        table = self.charts.get(library)
        if not table:
            return None
        entry = table.get(function)
        if entry is None:
            parts = function.split(".")
            if len(parts) > 1 and parts[0][:1].isupper() and ".".join(parts[1:]) in table:
                entry = table[".".join(parts[1:])]  # Axes.hist → hist
            else:
                for end in range(len(parts) - 1, 0, -1):
                    if parts[end - 1][:1].isupper() and ".".join(parts[:end]) in table:
                        entry = table[".".join(parts[:end])]  # ConfusionMatrixDisplay.from_… → the class
                        break
        if entry is None:
            return None
        if isinstance(entry, dict):
            chosen = (keywords or {}).get(entry["keyword"])
            found = entry["kinds"].get(chosen) if chosen is not None else None
            chart = found or entry["default"]
            return chart[0], chart[1]
        return entry[0], entry[1]

    def decoration(self, library: str, function: str) -> bool:
        """Whether ``library.function`` decorates a chart (a title, a layout, ``show``)."""
        names = self.decorations.get(library, frozenset())
        head = function.split(".", 1)[0]
        return function in names or head in names or head.startswith(("set_", "get_"))

    def returned(self, name: str) -> tuple[str, ...]:
        """The object types a call of the resolved ``name`` returns (empty: not known)."""
        found = self.returns.get(name)
        if found is not None:
            return found
        try:
            return self._returned[name]
        except KeyError:
            pass
        if len(self._returned) >= _MEMO:
            self._returned.clear()
        found = self._returned[name] = self._matched_return(name)
        return found

    def _matched_return(self, name: str) -> tuple[str, ...]:
        for pattern, types in self._return_patterns:
            if fnmatch.fnmatchcase(name, pattern):
                return types
        return ()

    # ------------------------------------------------------------------ evidence

    def purpose_evidence(self, found: CellEvidence) -> tuple[str, str] | None:
        """``(purpose, what said it)`` of the first purpose rule the cell's code matches."""
        for rule in self.purpose_rules:
            what = rule.matches(found)
            if what is not None:
                return rule.label, what
        return None

    def stage(self, purpose: str | None, found: CellEvidence) -> tuple[str | None, str | None]:
        """``(stage, why)`` of a figure of ``purpose`` drawn by a cell that uses ``found``:
        a model-evaluation or training-progress figure is at that stage; a figure of data
        (distribution, relationship, comparison, composition, image samples) is data
        visualization; otherwise the first stage rule the cell matches says it; else none."""
        if purpose is not None and purpose in self.purpose_stages:
            return self.purpose_stages[purpose], f"a {purpose} figure"
        for rule in self.stage_rules:
            what = rule.matches(found)
            if what is not None:
                return rule.label, what
        return None, None


def _rule(raw: Mapping[str, Any], key: str) -> EvidenceRule:
    return EvidenceRule(raw[key], *(tuple(raw.get(k, ())) for k in ("calls", "methods", "attributes", "keys")))


def _problem(data: Any) -> str | None:
    """What is wrong with the shape of a mapping, or None."""
    if not isinstance(data, dict) or data.get("format") != MAPPING_FORMAT:
        return f"its 'format' is not {MAPPING_FORMAT!r}"
    if not isinstance(data.get("version"), str) or not data["version"]:
        return "no 'version'"
    if tuple(data.get("purposes") or ()) != PURPOSES:
        return f"'purposes' must be {list(PURPOSES)}"
    for key in ("libraries", "charts", "decorations", "returns", "evidence"):
        if not isinstance(data.get(key), dict):
            return f"no {key!r} object"
    for library, table in data["charts"].items():
        if library not in data["libraries"]:
            return f"charts of {library!r}, a library not in 'libraries'"
        for function, entry in table.items():
            charts = [entry] if isinstance(entry, list) else [entry.get("default"), *entry.get("kinds", {}).values()] \
                if isinstance(entry, dict) else [None]
            for chart in charts:
                if not (isinstance(chart, list) and len(chart) == 2 and chart[1] in PURPOSES):
                    return f"{library}.{function}: {chart!r} is not [kind, one of the purposes]"
    evidence = data["evidence"]
    for rule in evidence.get("purposes", []):
        if rule.get("purpose") not in PURPOSES:
            return f"evidence purpose {rule.get('purpose')!r} is not one of the purposes"
    for rule in evidence.get("stages", []):
        if rule.get("stage") not in vocab.PIPELINE_STAGES:
            return f"evidence stage {rule.get('stage')!r} is not a pipeline stage of the benchmark"
    for purpose, stage in evidence.get("purpose_stages", {}).items():
        if purpose not in PURPOSES or stage not in vocab.PIPELINE_STAGES:
            return f"purpose_stages: {purpose!r} → {stage!r} is not a purpose and a pipeline stage"
    return None


def load_kinds(path: str | Path) -> ChartKinds:
    """The mapping in the file ``path`` (JSON), checked."""
    from junobench.safety.paths import read_regular

    try:
        data = json.loads(read_regular(path, limit=16 << 20).decode("utf-8"))
    except (OSError, ValueError, RecursionError) as error:
        raise JunoBenchError(f"cannot read the chart-kind mapping ({error})", file=path) from None
    return ChartKinds(data, source=str(path))


@cache
def chart_kinds() -> ChartKinds:
    """The mapping shipped with junobench (read once)."""
    return load_kinds(MAPPING_FILE)

