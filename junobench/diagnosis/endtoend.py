"""End-to-end scores (detection and diagnosis) of judged settings: CRANE-LLM's Table 2(a)
and Table 3.

Each setting's judgments become one end-to-end decision per notebook
(:func:`~junobench.diagnosis.judgments.decision`: right only when ``correct``), scored
as detection is scored: the same confusion matrix and metrics (:mod:`~junobench.detection.metrics`), the same
case-bootstrap intervals (:mod:`~junobench.detection.uncertainty`), and, for several settings, the same paired
tests on the notebooks they all have (:mod:`~junobench.detection.compare`, Holm-adjusted over the pairs).
Table 3 counts, per setting, the detected crashes and their diagnoses by outcome.

>>> from junobench.diagnosis.judgments import Judgments
>>> j = Judgments({"s": {"torch_1_reproduced": "correct", "torch_1_fixed": "wrong",
...                      "torch_2_reproduced": "reasoning wrong", "torch_2_fixed": "correct"}})
>>> s = score_judgments(j, resamples=50)["s"]
>>> d = s.to_dict()
>>> d["tp"], d["fp"], d["tn"], d["fn"], d["precision"], d["reasoning_wrong"]
(1, 1, 1, 1, 0.5, 1)
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from junobench import vocab
from junobench.detection.evaluate import Decision, Report, flat_intervals, listed, score_cells
from junobench.detection.metrics import scores
from junobench.detection.names import FORMATS
from junobench.detection.uncertainty import DEFAULT_RESAMPLES, DEFAULT_SEED, check_resamples
from junobench.diagnosis.judgments import (
    CORRECT,
    DIAGNOSED,
    OUTCOMES,
    PARTIALLY_CORRECT,
    REASONING_WRONG,
    WRONG,
    Judgments,
    companion,
    decision,
    disagreements,
    read_judgments,
)
from junobench.errors import JunoBenchError

if TYPE_CHECKING:
    from junobench.detection.compare import Comparison

#: Keys of each setting's object in the JSON output, in order.
KEYS: tuple[str, ...] = ("tp", "fp", "tn", "fn", "precision", "recall", "f1", "accuracy",
                         "partially_correct", "reasoning_wrong")


@dataclass
class DiagnosisScore:
    """One setting's end-to-end scores: its decisions as a detection report, and the
    outcome counts behind them."""

    setting: str
    #: A detection report over the end-to-end decisions (``vote`` is ``judged``).
    report: Report
    #: Outcome → count over the setting's judged notebooks (Table 3 counts these).
    counts: dict[str, int]
    #: Outcome → count on reproduced (crashing) notebooks only.
    reproduced: dict[str, int]

    @property
    def partially_correct(self) -> int:
        return self.counts[PARTIALLY_CORRECT]

    @property
    def reasoning_wrong(self) -> int:
        return self.counts[REASONING_WRONG]

    @property
    def diagnoses(self) -> int:
        """Crashes detected: the diagnoses that needed a judgment."""
        return sum(self.reproduced[o] for o in DIAGNOSED)

    def to_dict(self) -> dict[str, Any]:
        values = scores(self.report.overall)
        out: dict[str, Any] = {k: values[k] for k in KEYS[:8]}
        out.update({
            "partially_correct": self.partially_correct,
            "reasoning_wrong": self.reasoning_wrong,
            "n": values["n"],
            "correct": self.counts[CORRECT],
            "wrong": self.counts[WRONG],
            "detected_crashes": self.diagnoses,
            "intervals": listed(self.report.intervals()),
            "by_library": self.report.breakdown_rows("library", intervals=True),
        })
        return out

    def table3_row(self) -> dict[str, Any]:
        """Table 3: the detected crashes and their diagnoses by outcome."""
        return {"setting": self.setting, "detected crashes": self.diagnoses,
                "correct": self.reproduced[CORRECT],
                "partially correct": self.reproduced[PARTIALLY_CORRECT],
                "reasoning wrong": self.reproduced[REASONING_WRONG]}


def labels_of(instance: str) -> dict[str, Any]:
    """The labels a judged notebook carries without a snapshot: its version and library."""
    labels = vocab.instance_labels(instance)
    return {"instance": instance, **labels, "crash": labels["version"] == "reproduced"}


def score_setting(setting: str, judged: Mapping[str, str], *,
                  resamples: int = DEFAULT_RESAMPLES, seed: int = DEFAULT_SEED) -> DiagnosisScore:
    """End-to-end scores of one setting's judgments ``{instance: outcome}``; notebooks are
    taken in sorted order, so that the intervals do not depend on the file's order."""
    check_resamples(resamples)
    decisions = []
    counts = dict.fromkeys(OUTCOMES, 0)
    reproduced = dict.fromkeys(OUTCOMES, 0)
    for instance, judgment in sorted(judged.items()):
        labels = labels_of(instance)
        truth = bool(labels["crash"])
        decisions.append(Decision(instance, truth, decision(labels["version"], judgment), labels))
        counts[judgment] += 1
        if truth:
            reproduced[judgment] += 1
    report = Report(vote="judged", decisions=decisions, notebooks=len(decisions),
                    predictions=setting, layout="judgments", resamples=resamples, seed=seed)
    return DiagnosisScore(setting, report, counts, reproduced)


def score_judgments(judgments: Judgments | str | Path, *, settings: Sequence[str] | None = None,
                    source: str | Path | None = None, revision: str | None = None,
                    resamples: int = DEFAULT_RESAMPLES, seed: int = DEFAULT_SEED
                    ) -> dict[str, DiagnosisScore]:
    """End-to-end scores of every setting of ``judgments`` (a file or read judgments), or
    of ``settings`` in that order. Every notebook judged must be one of ``source`` (a
    snapshot, ``sample`` or a Hub dataset, at ``revision``), by default one of the 222
    of JunoBench as published; another is refused, naming its row."""
    if not isinstance(judgments, Judgments):
        judgments = read_judgments(judgments)
    judgments.check_notebooks(*known_notebooks(source, revision))
    names = list(settings) if settings else list(judgments.settings)
    unknown = [n for n in names if n not in judgments.settings]
    if unknown:
        raise JunoBenchError(f"no setting {unknown[0]!r} in the judgments", file=judgments.path,
                             hint="its settings: " + ", ".join(judgments.settings))
    return {name: score_setting(name, judgments.settings[name], resamples=resamples, seed=seed)
            for name in names}


def known_notebooks(source: str | Path | None = None, revision: str | None = None
                    ) -> tuple[Collection[str], str]:
    """The notebooks judgments may name, and how messages call them: ``source``'s
    (loaded), else the 222 of JunoBench as published."""
    if source is None:
        return vocab.published_instances(), "JunoBench as published (222 notebooks)"
    from junobench.detection.evaluate import load_labels

    _, known = load_labels(source, revision=revision)
    return known, f"{source} ({len(known)} notebooks)"


def remarks(judgments: Judgments, detection_only: str | Path | None = None) -> list[str]:
    """Where ``judgments`` and its detection-only companion (``detection_only``, or the
    sheet beside it in the same workbook) disagree on whether a crash was detected: one
    remark per notebook, as ``evaluate --judgments`` warns and its JSON ``notes`` carry."""
    other = read_judgments(detection_only) if detection_only else companion(judgments)
    return disagreements(judgments, other) if other is not None else []


def notes(results: Mapping[str, DiagnosisScore]) -> list[str]:
    """What a reader of the scores must know: a setting without a crashing notebook has
    no recall and no F1 (n/a, not a score of 0)."""
    return [f"setting {name!r} judges no crashing (reproduced) notebook: its recall and F1 are "
            "undefined (n/a)" for name, result in results.items()
            if result.report.overall.positives == 0]


# --------------------------------------------------------------------------- output


def summary_rows(results: Mapping[str, DiagnosisScore], *, percent: bool = False) -> list[dict[str, Any]]:
    """Table 2(a) with Table 3 beside it: per setting, n, each score with its 95% interval,
    and the partially correct and reasoning-wrong diagnoses."""
    rows = []
    for name, result in results.items():
        values = scores(result.report.overall)
        bounds = result.report.intervals()
        row: dict[str, Any] = {"setting": name, "n": values["n"],
                               **score_cells(values, bounds, percent=percent)}
        row["partially correct"] = result.partially_correct
        row["reasoning wrong"] = result.reasoning_wrong
        rows.append(row)
    return rows


def comparison_of(results: Mapping[str, DiagnosisScore]) -> Comparison | None:
    """The paired tests of several settings on the notebooks all of them judge (Holm over
    the pairs), or None for one setting."""
    from junobench.detection.compare import compare_reports

    if len(results) < 2:
        return None
    first = next(iter(results.values()))
    return compare_reports(list(results), [r.report for r in results.values()],
                           resamples=first.report.resamples, seed=first.report.seed)


def render_scores(results: Mapping[str, DiagnosisScore], fmt: str = "table",
                  remarks: Sequence[str] = ()) -> str:
    """End-to-end scores in ``fmt``, with the paired tests of several settings in every
    format. ``json``: ``settings`` (an object keyed by setting, :data:`KEYS` first,
    fractions at full precision), ``tests`` (each pair's McNemar and F1 difference, raw and
    Holm-adjusted), ``notebooks`` (how many every setting judges), ``excluded``,
    ``bootstrap`` and ``notes``; ``csv``: one row per setting with the intervals as
    ``<metric>_low``/``_high``, then one row per pair (``A vs B``); ``table``,
    ``markdown``, ``latex``: Table 2(a) with the intervals, Table 3, and the paired tests.
    ``remarks`` and :func:`notes` are added to the JSON's ``notes``."""
    import json

    from junobench.detection.compare import pair_csv_rows, pair_rows, paired_tests_note
    from junobench.detection.evaluate import bootstrap_settings
    from junobench.render import render

    if fmt not in FORMATS:
        raise JunoBenchError(f"unknown format {fmt!r}", hint="use " + ", ".join(FORMATS))
    if not results:
        raise JunoBenchError("no setting to show")
    comparison = comparison_of(results)
    first = next(iter(results.values())).report
    if fmt == "json":
        return json.dumps({
            "settings": {name: r.to_dict() for name, r in results.items()},
            "tests": [t.to_dict() for t in comparison.tests] if comparison else [],
            "notebooks": len(comparison.common) if comparison else first.overall.n,
            "excluded": comparison.excluded() if comparison else {},
            "bootstrap": bootstrap_settings(first.resamples, first.seed),
            "notes": [*notes(results), *remarks],
        }, indent=2, ensure_ascii=False) + "\n"
    if fmt == "csv":
        rows = []
        for name, result in results.items():
            data = result.to_dict()
            rows.append(flat_intervals({"setting": name, **{k: data[k] for k in (*KEYS, "n")},
                                        "intervals": data["intervals"]}))
        return render(rows + (pair_csv_rows(comparison) if comparison else []), "csv")
    sections = [
        ("End-to-end (a true positive needs the crash detected and diagnosed correctly); "
         "95% case-bootstrap intervals", render(summary_rows(results, percent=fmt == "latex"), fmt)),
        ("Diagnoses of the detected crashes", render([r.table3_row() for r in results.values()], fmt)),
    ]
    if comparison is not None:
        left_out = {n: len(x) for n, x in comparison.excluded().items() if x}
        sections.append((f"Paired tests on the {len(comparison.common)} notebooks every setting "
                         f"has ({paired_tests_note(comparison)})"
                         + "".join(f"; {n}: {k} notebooks left out" for n, k in left_out.items()),
                         render(pair_rows(comparison), fmt)))
    if fmt == "latex":  # titles as comments: one line each, whatever the setting names hold
        return "\n".join("% " + " ".join(title.split()) + f"\n{part}" for title, part in sections)
    return "\n".join(f"{title}\n\n{part}" for title, part in sections)
