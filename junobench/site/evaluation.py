"""Evaluation results for the site: the numbers ``junobench evaluate`` prints, and the
per-notebook evidence behind them.

Nothing is scored here: each prediction set goes through
:func:`~junobench.detection.evaluate.score_predictions` with labels from
:func:`~junobench.detection.evaluate.labels_for` (what ``evaluate PRED`` does), several
sets through :func:`~junobench.detection.compare.compare_reports` on the notebooks they all
decided (``evaluate A B …``), judgments through
:func:`~junobench.diagnosis.endtoend.score_judgments` (``evaluate --judgments``). What
this module adds is the view per notebook: each setting's outcome on it (the grid), its
runs and their reasoning, and which notebooks every setting misses or only one gets.

>>> outcome_of(True, [True]), outcome_of(False, [True]), judged_outcome("reproduced", "reasoning wrong")
('hit', 'false alarm', 'wrong diagnosis')
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from junobench import vocab
from junobench.detection.compare import Comparison, compare_reports, unique_names
from junobench.detection.evaluate import Labels, Report, labels_for, resolve_ids, score_predictions
from junobench.detection.layouts import read_predictions
from junobench.detection.predictions import Predictions, Verdict, parse_run
from junobench.detection.uncertainty import DEFAULT_RESAMPLES, DEFAULT_SEED
from junobench.detection.votes import DEFAULT_VOTE
from junobench.diagnosis.endtoend import DiagnosisScore, score_judgments
from junobench.diagnosis.judgments import CORRECT, PARTIALLY_CORRECT, REASONING_WRONG, Judgments, read_judgments
from junobench.errors import JunoBenchError

#: Outcomes of one setting on one notebook, as the grid shows them.
RIGHT = frozenset({"hit", "no crash"})
#: Characters of one run's reasoning shown on a case page.
MAX_REASONING = 4000


def outcome_of(truth: bool, decisions: Sequence[bool]) -> str:
    """A detector's outcome on a notebook: ``hit`` / ``miss`` on a crashing one, ``no
    crash`` / ``false alarm`` on a fixed one (several decisions, as ``all-runs`` scores
    them: the majority, a tie counted wrong)."""
    right = sum(d == truth for d in decisions)
    correct = 2 * right > len(decisions)
    if truth:
        return "hit" if correct else "miss"
    return "no crash" if correct else "false alarm"


def judged_outcome(version: str, judgment: str) -> str:
    """A judged diagnosis as the grid shows it: ``hit`` (crash detected and diagnosed
    correctly), ``partial``, ``wrong diagnosis``, ``miss``; ``no crash`` / ``false alarm``
    on a fixed notebook."""
    if version == "reproduced":
        return {CORRECT: "hit", PARTIALLY_CORRECT: "partial", REASONING_WRONG: "wrong diagnosis"}.get(
            judgment, "miss")
    return "no crash" if judgment == CORRECT else "false alarm"


@dataclass(frozen=True)
class Run:
    """One run of a detector on a notebook, read."""

    detection: bool | None
    reasoning: str
    problem: str | None


@dataclass
class PredictionSet:
    """One set of predictions, scored as ``junobench evaluate PRED`` scores it."""

    name: str
    slug: str
    predictions: Predictions
    report: Report
    #: Raw runs per instance (blind ids mapped back).
    runs: dict[str, list[Any]]

    @cached_property
    def decisions(self) -> dict[str, list[bool]]:
        found: dict[str, list[bool]] = {}
        for decision in self.report.decisions:
            found.setdefault(decision.instance, []).append(decision.decision)
        return found

    def outcome(self, instance: str) -> str | None:
        """The outcome on ``instance`` (None: not decided, or not labelled)."""
        decisions = self.decisions.get(instance)
        if not decisions:
            return None
        return outcome_of(vocab.split_instance(instance)[1] == "reproduced", decisions)

    def read_runs(self, instance: str) -> list[Run]:
        """The runs on ``instance``, each parsed, its reasoning cut to a readable length."""
        out = []
        for raw in self.runs.get(instance, []):
            verdict: Verdict = parse_run(raw)
            text = verdict.reasoning if verdict.reasoning is not None else (
                raw if isinstance(raw, str) else repr(raw))
            if len(text) > MAX_REASONING:
                text = text[:MAX_REASONING] + f" … ({len(text) - MAX_REASONING:,} more characters)"
            out.append(Run(verdict.detection, text, verdict.problem))
        return out


@dataclass
class JudgedSetting:
    """One setting of the judgments, scored as ``evaluate --judgments`` scores it."""

    name: str
    slug: str
    judged: dict[str, str]

    def outcome(self, instance: str) -> str | None:
        judgment = self.judged.get(instance)
        return None if judgment is None else judged_outcome(vocab.split_instance(instance)[1], judgment)


@dataclass
class Evaluation:
    """Prediction sets and judgments, with their scores (intervals computed on demand)."""

    sets: list[PredictionSet]
    judgments: Judgments | None
    vote: str = DEFAULT_VOTE
    resamples: int = DEFAULT_RESAMPLES
    seed: int = DEFAULT_SEED
    labels: Labels | None = None
    judged: list[JudgedSetting] = field(default_factory=list)

    @cached_property
    def comparison(self) -> Comparison | None:
        """The sets side by side on the notebooks they all decided, with paired tests (as
        ``evaluate A B …``); None with fewer than two sets."""
        if len(self.sets) < 2:
            return None
        assert self.labels is not None
        return compare_reports([s.name for s in self.sets], [s.report for s in self.sets],
                               [str(row["instance"]) for row in self.labels.rows],
                               resamples=self.resamples, seed=self.seed)

    @cached_property
    def judged_scores(self) -> dict[str, DiagnosisScore]:
        """End-to-end scores per judged setting (as ``evaluate --judgments``)."""
        if self.judgments is None:
            return {}
        return score_judgments(self.judgments, resamples=self.resamples, seed=self.seed)

    def inputs(self) -> dict[str, Any]:
        """What the evaluation pages show depends on (digested into their keys)."""
        return {
            "vote": self.vote, "resamples": self.resamples, "seed": self.seed,
            "labels": None if self.labels is None else [self.labels.rows, self.labels.source],
            "sets": [[s.name, str(s.predictions.path), s.predictions.layout, s.runs] for s in self.sets],
            "judgments": None if self.judgments is None else [str(self.judgments.path),
                                                              self.judgments.settings],
        }

    def for_case(self, case_id: str) -> dict[str, Any]:
        """What a case page shows of the evaluation (its part of the page's key)."""
        instances = [vocab.instance_id(case_id, v) for v in ("reproduced", "fixed")]
        return {
            "sets": [[s.name, [[s.runs.get(i), s.outcome(i)] for i in instances]] for s in self.sets],
            "judged": [[j.name, [j.judged.get(i) for i in instances]] for j in self.judged],
        }

    def columns(self) -> list[tuple[str, list[PredictionSet] | list[JudgedSetting]]]:
        """The grid's families of columns: detection (prediction sets), end to end (judged)."""
        families: list[tuple[str, list[PredictionSet] | list[JudgedSetting]]] = [
            ("detection", self.sets), ("end to end (judged)", self.judged)]
        return [(title, settings) for title, settings in families if settings]


def missed_by_all(settings: Sequence[PredictionSet] | Sequence[JudgedSetting],
                  instances: Iterable[str]) -> list[str]:
    """Notebooks that every setting having them gets wrong (at least one has them)."""
    out = []
    for instance in instances:
        outcomes = [o for o in (s.outcome(instance) for s in settings) if o is not None]
        if outcomes and not any(o in RIGHT for o in outcomes):
            out.append(instance)
    return out


def only_one_gets(settings: Sequence[PredictionSet] | Sequence[JudgedSetting],
                  instances: Iterable[str]) -> dict[str, list[str]]:
    """Per setting, the notebooks it gets right and every other setting having them gets
    wrong (with a single setting, nothing: there is no other)."""
    found: dict[str, list[str]] = {s.name: [] for s in settings}
    if len(settings) < 2:
        return found
    for instance in instances:
        right = [s.name for s in settings if s.outcome(instance) in RIGHT]
        others = [s for s in settings if s.outcome(instance) is not None]
        if len(right) == 1 and len(others) > 1:
            found[right[0]].append(instance)
    return found


def evaluation(
    predictions: Sequence[str | Path],
    source: str | Path | None,
    *,
    judgments: str | Path | None = None,
    names: Sequence[str] | None = None,
    vote: str = DEFAULT_VOTE,
    revision: str | None = None,
    truth: str | Path | Sequence[str | Path] | None = None,
    layout: str | None = None,
    sheet: str | None = None,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
    **filters: Any,
) -> Evaluation | None:
    """Read and score what the evaluation pages show (None when there is nothing)."""
    if not predictions and judgments is None:
        return None
    if names and len(names) != len(predictions):
        raise JunoBenchError(f"{len(names)} names for {len(predictions)} prediction sets",
                             hint="give one --name per PRED, in order")
    result = Evaluation([], None, vote, resamples, seed)
    if predictions:
        labels = labels_for(source, truth=truth, revision=revision, **filters)
        result.labels = labels
        read = [read_predictions(p, layout) for p in predictions]
        shown = list(names) if names else unique_names([str(p.path) for p in read])
        if len(set(shown)) != len(shown):
            raise JunoBenchError("two prediction sets have the same name: " + ", ".join(shown),
                                 hint="name them with --name")
        for k, (name, preds) in enumerate(zip(shown, read, strict=True)):
            report = score_predictions(preds, labels, vote=vote, resamples=resamples, seed=seed)
            runs, _ = resolve_ids(preds, labels.truth)
            result.sets.append(PredictionSet(name, f"set-{k + 1}", preds, report, runs))
    if judgments is not None:
        result.judgments = read_judgments(judgments, sheet=sheet)
        result.judged = [JudgedSetting(name, f"judged-{k + 1}", dict(rows))
                         for k, (name, rows) in enumerate(result.judgments.settings.items())]
    return result
