"""Crash-detection metrics, crash = positive class. Pure functions over (truth, decision) pairs.

Each score is defined once, in :func:`fractions`, as a numerator and a denominator of the
four counts; :class:`Confusion` divides them for one matrix, and
:func:`junobench.detection.uncertainty.metric_values` for arrays of bootstrap resamples.

>>> c = confusion([(True, True), (True, False), (False, False), (False, True)])
>>> c.tp, c.fn, c.tn, c.fp, c.accuracy
(1, 1, 1, 1, 0.5)
>>> scores(Confusion(tp=71, fp=27, tn=84, fn=40), digits=3)["f1"]
0.679
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

T = TypeVar("T")
K = TypeVar("K", bound=Hashable)
#: A count: one matrix's (int) or one per resample (an array).
N = TypeVar("N", int, "NDArray[np.float64]")

#: Scores, in report order.
METRICS: tuple[str, ...] = ("precision", "recall", "f1", "accuracy")
#: The four counts, in the order of :func:`outcome`'s index.
COUNTS: tuple[str, ...] = ("tp", "fp", "tn", "fn")


def outcome(truth: bool, decision: bool) -> int:
    """Index in :data:`COUNTS` of one ``(truth, decision)`` pair (``True`` is crash)."""
    if truth:
        return 0 if decision else 3
    return 1 if decision else 2


def fractions(tp: N, fp: N, tn: N, fn: N) -> dict[str, tuple[N, N]]:
    """Each score of :data:`METRICS` as ``(numerator, denominator)`` of the counts. F1,
    like recall, is undefined without a crashing notebook (its denominator is then 0):
    it would be 0 whatever the detector answered."""
    return {
        "precision": (tp, tp + fp),
        "recall": (tp, tp + fn),
        "f1": (2 * tp, (2 * tp + fp + fn) * (tp + fn > 0)),
        "accuracy": (tp + tn, tp + fp + tn + fn),
    }


@dataclass(frozen=True, slots=True)
class Confusion:
    """Counts of one confusion matrix."""

    tp: int = 0
    fp: int = 0
    tn: int = 0
    fn: int = 0

    def __add__(self, other: Confusion) -> Confusion:
        return Confusion(self.tp + other.tp, self.fp + other.fp, self.tn + other.tn,
                         self.fn + other.fn)

    @property
    def n(self) -> int:
        return self.tp + self.fp + self.tn + self.fn

    @property
    def positives(self) -> int:
        """Decisions on crashing (reproduced) notebooks."""
        return self.tp + self.fn

    @property
    def negatives(self) -> int:
        """Decisions on non-crashing (fixed) notebooks."""
        return self.tn + self.fp

    @property
    def precision(self) -> float | None:
        return self.score("precision")

    @property
    def recall(self) -> float | None:
        return self.score("recall")

    @property
    def f1(self) -> float | None:
        return self.score("f1")

    @property
    def accuracy(self) -> float | None:
        return self.score("accuracy")

    def score(self, metric: str) -> float | None:
        """One score of :data:`METRICS`, None when its denominator is zero."""
        numerator, denominator = fractions(self.tp, self.fp, self.tn, self.fn)[metric]
        return numerator / denominator if denominator else None


def confusion(pairs: Iterable[tuple[bool, bool]]) -> Confusion:
    """Count ``(truth, decision)`` pairs; ``True`` is crash."""
    counts = [0, 0, 0, 0]
    for truth, decision in pairs:
        counts[outcome(truth, decision)] += 1
    return Confusion(*counts)


def grouped(items: Iterable[T], key: Callable[[T], K],
            pair: Callable[[T], tuple[bool, bool]]) -> dict[K, Confusion]:
    """One confusion matrix per ``key(item)``, in first-seen order."""
    groups: dict[K, list[tuple[bool, bool]]] = {}
    for item in items:
        groups.setdefault(key(item), []).append(pair(item))
    return {name: confusion(pairs) for name, pairs in groups.items()}


def scores(c: Confusion, digits: int | None = None) -> dict[str, Any]:
    """Counts, scores (None when undefined; rounded to ``digits`` when given) and
    per-version correct counts."""
    return {
        "n": c.n,
        "tp": c.tp,
        "fp": c.fp,
        "tn": c.tn,
        "fn": c.fn,
        "precision": _round(c.precision, digits),
        "recall": _round(c.recall, digits),
        "f1": _round(c.f1, digits),
        "accuracy": _round(c.accuracy, digits),
        "reproduced_correct": c.tp,
        "reproduced_total": c.positives,
        "fixed_correct": c.tn,
        "fixed_total": c.negatives,
    }


def _round(value: float | None, digits: int | None) -> float | None:
    if value is None or digits is None:
        return value
    return round(value, digits)

