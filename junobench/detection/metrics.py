"""Crash-detection metrics, crash = positive class. Pure functions over (truth, decision) pairs.

>>> c = confusion([(True, True), (True, False), (False, False), (False, True)])
>>> c.tp, c.fn, c.tn, c.fp, c.accuracy
(1, 1, 1, 1, 0.5)
>>> scores(Confusion(tp=71, fp=27, tn=84, fn=40), digits=3)["f1"]
0.679
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

T = TypeVar("T")
K = TypeVar("K", bound=Hashable)

#: Digits shown in text reports (JSON keeps full precision).
DIGITS = 3


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
        return _ratio(self.tp, self.tp + self.fp)

    @property
    def recall(self) -> float | None:
        return _ratio(self.tp, self.tp + self.fn)

    @property
    def f1(self) -> float | None:
        return _ratio(2 * self.tp, 2 * self.tp + self.fp + self.fn)

    @property
    def accuracy(self) -> float | None:
        return _ratio(self.tp + self.tn, self.n)


def _ratio(numerator: int, denominator: int) -> float | None:
    return numerator / denominator if denominator else None


def confusion(pairs: Iterable[tuple[bool, bool]]) -> Confusion:
    """Count ``(truth, decision)`` pairs; ``True`` is crash."""
    tp = fp = tn = fn = 0
    for truth, decision in pairs:
        if truth and decision:
            tp += 1
        elif truth:
            fn += 1
        elif decision:
            fp += 1
        else:
            tn += 1
    return Confusion(tp, fp, tn, fn)


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


def summed(matrices: Mapping[Any, Confusion]) -> Confusion:
    total = Confusion()
    for matrix in matrices.values():
        total = total + matrix
    return total
