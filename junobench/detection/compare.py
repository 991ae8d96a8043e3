"""Several prediction sets side by side, on the same notebooks, with paired tests.

Each set is scored as :func:`~junobench.detection.evaluate.evaluate` scores it, then all
are restricted to the notebooks that every set decided (a set that skipped a notebook
would otherwise be scored on an easier or harder sample); the excluded notebooks are
listed per set. Every metric gets its case-bootstrap interval, and every pair of sets an
exact McNemar test on the notebooks each got right and a paired bootstrap of the F1
difference (:mod:`.uncertainty`). With more than two sets the pairs are a family of
tests: each p-value is also given Holm-adjusted (:func:`~.uncertainty.holm`), in every
output format.

>>> unique_names(["runs/qwen/code", "runs/gpt/code", "runs/gpt/runinfo"])
['qwen/code', 'gpt/code', 'runinfo']
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from itertools import combinations
from pathlib import Path
from typing import Any

from junobench.detection.evaluate import (
    Report,
    bootstrap_settings,
    format_interval,
    labels_for,
    score_cells,
    score_predictions,
    scored,
)
from junobench.detection.metrics import scores
from junobench.detection.predictions import Predictions
from junobench.detection.uncertainty import (
    DEFAULT_RESAMPLES,
    DEFAULT_SEED,
    METRICS,
    Difference,
    McNemar,
    check_resamples,
    holm,
    mcnemar,
    paired_difference,
)
from junobench.detection.votes import DEFAULT_VOTE
from junobench.errors import JunoBenchError
from junobench.safety.text import markdown_text


@dataclass
class PairTest:
    """Set ``a`` against set ``b`` on the ``n`` shared notebooks."""

    a: str
    b: str
    n: int
    mcnemar: McNemar
    f1: Difference
    #: Holm-adjusted p-values over all pairs of the comparison (the raw ones with one pair).
    mcnemar_holm: float | None = None
    f1_holm: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "a": self.a, "b": self.b, "notebooks": self.n,
            "mcnemar": {"only_a_correct": self.mcnemar.only_a,
                        "only_b_correct": self.mcnemar.only_b,
                        "p_value": self.mcnemar.p_value, "p_holm": self.mcnemar_holm,
                        "exact": True},
            "f1_difference": {"estimate": self.f1.estimate,
                              "interval": None if self.f1.interval is None else list(self.f1.interval),
                              "p_value": self.f1.p_value, "p_holm": self.f1_holm},
        }


@dataclass
class Comparison:
    """Prediction sets scored on the notebooks they all decided."""

    names: list[str]
    #: Each set's own report (on everything it decided).
    reports: list[Report]
    #: Notebooks every set decided, in label order.
    common: list[str]
    resamples: int = DEFAULT_RESAMPLES
    seed: int = DEFAULT_SEED
    tests: list[PairTest] = field(default_factory=list)

    @property
    def scored(self) -> list[Report]:
        """The reports restricted to :attr:`common`."""
        return [report.restricted(self.common) for report in self.reports]

    def excluded(self) -> dict[str, list[str]]:
        """Per set, the notebooks it decided that are left out because another set did not."""
        keep = set(self.common)
        return {name: [i for i in report.evaluated if i not in keep]
                for name, report in zip(self.names, self.reports, strict=True)}

    def rows(self) -> list[dict[str, Any]]:
        """One row per set: counts, scores (full precision) and their intervals."""
        rows = []
        for name, report in zip(self.names, self.scored, strict=True):
            values = scores(report.overall)
            bounds = report.intervals()
            row: dict[str, Any] = {"setting": name, "n": values["n"]}
            for metric in METRICS:
                row[metric] = values[metric]
                low, high = bounds[metric] or (None, None)
                row[f"{metric}_low"], row[f"{metric}_high"] = low, high
            row.update({k: values[k] for k in ("tp", "fp", "tn", "fn")})
            rows.append(row)
        return rows

    def to_dict(self) -> dict[str, Any]:
        sets = []
        for name, report in zip(self.names, self.scored, strict=True):
            sets.append({"name": name, **report.to_dict()})
        return {
            "notebooks": len(self.common),
            "sets": sets,
            "excluded": self.excluded(),
            "tests": [test.to_dict() for test in self.tests],
            "bootstrap": bootstrap_settings(self.resamples, self.seed),
        }


def compare(
    predictions: Sequence[str | Path | Predictions],
    source: str | Path | None = None,
    *,
    names: Sequence[str] | None = None,
    vote: str = DEFAULT_VOTE,
    revision: str | None = None,
    truth: str | Path | Sequence[str | Path] | None = None,
    layout: str | None = None,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
    **filters: str | Iterable[str] | None,
) -> Comparison:
    """Score each prediction set, restrict all to the notebooks every set decided, and test
    every pair. Labels as in :func:`~junobench.detection.evaluate.evaluate`.

    >>> from junobench.detection.detect import detect_static
    >>> from junobench.detection.tasks import tasks
    >>> _ = detect_static(tasks("sample")[0], "static.jsonl")
    >>> c = compare(["static.jsonl", "static.jsonl"], "sample", names=["a", "b"], resamples=200)
    >>> len(c.common), c.tests[0].mcnemar.p_value, c.tests[0].f1.interval
    (20, 1.0, (0.0, 0.0))
    """
    if len(predictions) < 2:
        raise JunoBenchError("a comparison needs at least two prediction sets")
    if vote == "all-runs":
        raise JunoBenchError("--vote all-runs scores several decisions per notebook; a paired "
                             "comparison needs one", hint="use --vote majority or first-valid")
    check_resamples(resamples)
    labels = labels_for(source, truth=truth, revision=revision, **filters)
    reports = [score_predictions(p, labels, vote=vote, layout=layout, resamples=resamples,
                                 seed=seed) for p in predictions]
    shown = list(names) if names else unique_names([r.predictions or "?" for r in reports])
    return compare_reports(shown, reports, [str(row["instance"]) for row in labels.rows],
                           resamples=resamples, seed=seed)


def compare_reports(names: Sequence[str], reports: Sequence[Report],
                    order: Sequence[str] | None = None, *,
                    resamples: int = DEFAULT_RESAMPLES, seed: int = DEFAULT_SEED) -> Comparison:
    """Reports side by side on the notebooks every report decided, in ``order`` (default:
    the first report's), every pair tested, p-values Holm-adjusted over the pairs."""
    if len(names) != len(reports) or len(set(names)) != len(names):
        raise JunoBenchError("give one distinct name per prediction set",
                             hint=f"{len(reports)} sets, names: {', '.join(names)}")
    decided = [set(r.evaluated) for r in reports]
    first = reports[0].evaluated if reports else []
    common = [i for i in (first if order is None else order) if all(i in d for d in decided)]
    comparison = Comparison(list(names), list(reports), common, resamples, seed)
    restricted = comparison.scored
    for (i, a), (j, b) in combinations(enumerate(restricted), 2):
        comparison.tests.append(pair_test(names[i], a, names[j], b, resamples=resamples,
                                          seed=seed))
    adjusted_m = holm([t.mcnemar.p_value for t in comparison.tests])
    adjusted_f1 = holm([t.f1.p_value for t in comparison.tests])
    for k, test in enumerate(comparison.tests):  # (holm keeps the order and the length)
        test.mcnemar_holm, test.f1_holm = adjusted_m[k], adjusted_f1[k]
    return comparison


def pair_test(name_a: str, a: Report, name_b: str, b: Report, *,
              resamples: int = DEFAULT_RESAMPLES, seed: int = DEFAULT_SEED) -> PairTest:
    """McNemar and the paired F1 bootstrap of two reports on the same notebooks."""
    right_a = {d.instance: d.truth == d.decision for d in a.decisions}
    right_b = {d.instance: d.truth == d.decision for d in b.decisions}
    if set(right_a) != set(right_b):
        raise ValueError("pair_test needs reports on the same notebooks")
    order = list(right_a)
    test = mcnemar([right_a[i] for i in order], [right_b[i] for i in order])
    difference = paired_difference(scored(a.decisions), scored(b.decisions), resamples=resamples,
                                   seed=seed)
    return PairTest(name_a, name_b, len(order), test, difference)


def unique_names(paths: Sequence[str | Path]) -> list[str]:
    """Short names for prediction paths: the last part, with parents added until distinct."""
    parts = [Path(p).with_suffix("").parts if Path(p).suffix in (".jsonl", ".eval", ".json")
             else Path(p).parts for p in paths]
    depth = [1] * len(parts)
    while True:
        names = ["/".join(p[-depth[k]:]) for k, p in enumerate(parts)]
        clashes = {n for n in names if names.count(n) > 1}
        grown = False
        for k, name in enumerate(names):
            if name in clashes and depth[k] < len(parts[k]):
                depth[k] += 1
                grown = True
        if not clashes or not grown:
            return names


# --------------------------------------------------------------------------- output


def summary_rows(comparison: Comparison, *, percent: bool = False) -> list[dict[str, Any]]:
    """Rows for the text, Markdown and LaTeX tables: each score with its interval."""
    rows = []
    for name, report in zip(comparison.names, comparison.scored, strict=True):
        values = scores(report.overall)
        rows.append({"setting": name, "n": values["n"],
                     **score_cells(values, report.intervals(), percent=percent)})
    return rows


def pair_rows(comparison: Comparison) -> list[dict[str, Any]]:
    """One row per pair; with more than one pair, the Holm-adjusted p-values beside the raw."""
    family = len(comparison.tests) > 1
    rows = []
    for test in comparison.tests:
        f1 = test.f1
        row: dict[str, Any] = {
            "A": test.a, "B": test.b, "n": test.n,
            "only A right": test.mcnemar.only_a, "only B right": test.mcnemar.only_b,
            "McNemar p": _p(test.mcnemar.p_value),
        }
        if family:
            row["McNemar p (Holm)"] = _p(test.mcnemar_holm)
        row.update({
            "F1 A-B": "n/a" if f1.estimate is None else f"{f1.estimate:+.3f}",
            "F1 A-B 95% CI": format_interval(f1.interval),
            "bootstrap p": _p(f1.p_value),
        })
        if family:
            row["bootstrap p (Holm)"] = _p(test.f1_holm)
        rows.append(row)
    return rows


def pair_csv_rows(comparison: Comparison) -> list[dict[str, Any]]:
    """One CSV row per pair (``setting`` is ``A vs B``) with its test results, raw and
    Holm-adjusted, in columns of their own."""
    rows = []
    for test in comparison.tests:
        rows.append({"setting": f"{test.a} vs {test.b}", "n": test.n,
                     "mcnemar_only_a": test.mcnemar.only_a, "mcnemar_only_b": test.mcnemar.only_b,
                     "mcnemar_p": test.mcnemar.p_value, "mcnemar_p_holm": test.mcnemar_holm,
                     "f1_difference": test.f1.estimate,
                     "f1_difference_low": test.f1.interval[0] if test.f1.interval else None,
                     "f1_difference_high": test.f1.interval[1] if test.f1.interval else None,
                     "f1_difference_p": test.f1.p_value, "f1_difference_p_holm": test.f1_holm})
    return rows


def format_comparison(comparison: Comparison, fmt: str = "table") -> str:
    """The comparison in ``fmt``: ``table``, ``json``, ``csv``, ``markdown`` or ``latex``."""
    import json

    from junobench.render import render

    if fmt == "json":
        return json.dumps(comparison.to_dict(), indent=2, ensure_ascii=False) + "\n"
    if fmt == "csv":
        return render(comparison.rows() + pair_csv_rows(comparison), "csv")
    if fmt == "latex":
        text = render(summary_rows(comparison, percent=True), "latex")
        if comparison.tests:
            text += (f"\n% Paired tests: {paired_tests_note(comparison)}\n"
                     + render(pair_rows(comparison), "latex"))
        return text
    kind = "markdown" if fmt == "markdown" else "table"
    settings = (f"{len(comparison.common)} notebooks decided by every set; 95% intervals from "
                f"{comparison.resamples} case bootstraps (seed {comparison.seed})")
    parts = [render(summary_rows(comparison), kind)]
    excluded = {name: items for name, items in comparison.excluded().items() if items}
    notes = [settings] + [f"{name}: {len(items)} notebooks left out (another set did not decide "
                          f"them)" for name, items in excluded.items()]
    if comparison.tests:
        parts.append(render(pair_rows(comparison), kind))
    if kind == "markdown":  # the names are data: escaped like the tables' cells
        notes = [markdown_text(note) for note in notes]
    lead = "\n".join(notes) + "\n\n"
    tests_title = f"Paired tests ({paired_tests_note(comparison, count=True)})\n\n"
    return lead + parts[0] + ("\n" + tests_title + parts[1] if len(parts) > 1 else "")


def paired_tests_note(comparison: Comparison, *, count: bool = False) -> str:
    """What the paired tests are, and with several pairs that their p-values are
    Holm-adjusted over them (``count``: saying how many)."""
    note = "exact McNemar on notebooks right/wrong; paired case bootstrap of the F1 difference"
    if len(comparison.tests) < 2:
        return note
    return note + "; Holm-adjusted p-values over the " + (
        f"{len(comparison.tests)} " if count else "") + "pairs"


def _p(value: float | None) -> str:
    if value is None:
        return "n/a"
    return "<0.001" if value < 0.001 else f"{value:.3f}"
