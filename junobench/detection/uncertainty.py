"""How sure a score is: bootstrap intervals and paired tests between two detectors.

The unit of resampling is the *case*: a case's reproduced and fixed notebooks (and all
their runs under ``all-runs``) are drawn together, because they share code and a
detector's answers on them are not independent. Intervals are percentile intervals of
``resamples`` case bootstraps drawn from a seeded generator, so the same seed gives the
same interval. A resample in which a metric is undefined (no predicted crash: no
precision; no crashing notebook: no recall, no F1) is left out of that metric's interval.

Two detectors on the same notebooks are compared with an exact McNemar test on which
notebooks each got right (a two-sided binomial test on the discordant notebooks, scipy's
``binomtest``) and with a paired case bootstrap of the F1 difference (the same resampled
cases scored for both).

>>> pairs = [("a_1", True, True), ("a_1", False, False), ("b_2", True, False), ("b_2", False, False)]
>>> low, high = bootstrap(pairs, resamples=200, seed=1)["accuracy"]
>>> 0.0 <= low <= 0.75 <= high <= 1.0
True
>>> mcnemar([True, True, False, True], [False, True, False, False]).p_value
0.5
>>> holm([0.01, 0.04, 0.03])
[0.03, 0.06, 0.06]

With more than two detectors the pairs form a family of tests: :func:`holm` adjusts their
p-values (Holm's step-down method, which controls the family-wise error rate). A group of
fewer than :data:`MIN_CASES` cases has too few distinct resamples for its interval to
mean anything (:func:`too_few_cases`); reports flag such groups.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from junobench.detection.metrics import METRICS as METRICS  # scores with an interval
from junobench.detection.metrics import fractions, outcome
from junobench.detection.names import DEFAULT_RESAMPLES as DEFAULT_RESAMPLES
from junobench.detection.names import DEFAULT_SEED as DEFAULT_SEED
from junobench.errors import JunoBenchError

CONFIDENCE = 0.95
#: Fewest cases for which a case-bootstrap interval is reported without a warning.
MIN_CASES = 3

Interval = tuple[float, float]
#: One scored decision: (case id, truth, decision), crash = True.
Scored = tuple[str, bool, bool]
_Counts = NDArray[np.int64]
_Floats = NDArray[np.float64]


def case_counts(scored: Iterable[Scored]) -> tuple[list[str], _Counts]:
    """Cases in first-seen order and their ``[tp, fp, tn, fn]`` counts (one row per case)."""
    rows: dict[str, list[int]] = {}
    for case, truth, decision in scored:
        rows.setdefault(case, [0, 0, 0, 0])[outcome(truth, decision)] += 1
    return list(rows), np.array(list(rows.values()), dtype=np.int64).reshape(len(rows), 4)


def metric_values(counts: _Counts) -> dict[str, _Floats]:
    """Each metric of summed ``[..., 4]`` counts (NaN where undefined), by the formulas of
    :func:`junobench.detection.metrics.fractions`."""
    tp, fp, tn, fn = (counts[..., i].astype(np.float64) for i in range(4))
    with np.errstate(divide="ignore", invalid="ignore"):
        return {name: numerator / denominator
                for name, (numerator, denominator) in fractions(tp, fp, tn, fn).items()}


def resampled_counts(counts: _Counts, resamples: int, seed: int) -> _Counts:
    """Summed counts of ``resamples`` bootstrap draws of the cases (rows), ``[resamples, k]``
    for ``k`` columns of counts (4, or 8 for a pair of detectors drawn together)."""
    check_resamples(resamples)
    if len(counts) == 0:
        return np.zeros((resamples, counts.shape[-1]), dtype=np.int64)
    rng = np.random.default_rng(seed)
    draws = rng.integers(0, len(counts), size=(resamples, len(counts)))
    weights = np.zeros((resamples, len(counts)), dtype=np.int64)
    np.add.at(weights, (np.arange(resamples)[:, None], draws), 1)
    return weights @ counts


def check_resamples(resamples: int) -> None:
    if not 1 <= resamples <= 1_000_000:
        raise JunoBenchError(f"--resamples must be between 1 and 1000000, not {resamples}")


def percentile_interval(values: _Floats, confidence: float = CONFIDENCE) -> Interval | None:
    """The central ``confidence`` share of the defined values, or None when none is."""
    defined = values[~np.isnan(values)]
    if len(defined) == 0:
        return None
    tail = (1 - confidence) / 2 * 100
    low, high = np.percentile(defined, [tail, 100 - tail])
    return float(low), float(high)


def bootstrap(scored: Iterable[Scored], *, resamples: int = DEFAULT_RESAMPLES,
              seed: int = DEFAULT_SEED, confidence: float = CONFIDENCE
              ) -> dict[str, Interval | None]:
    """Percentile intervals of every metric over case bootstraps of ``scored``."""
    _, counts = case_counts(scored)
    values = metric_values(resampled_counts(counts, resamples, seed))
    return {name: percentile_interval(values[name], confidence) for name in METRICS}


@dataclass(frozen=True)
class McNemar:
    """Exact McNemar test: ``only_a`` notebooks only A got right, ``only_b`` only B."""

    only_a: int
    only_b: int
    p_value: float

    @property
    def discordant(self) -> int:
        return self.only_a + self.only_b


def mcnemar(correct_a: Sequence[bool], correct_b: Sequence[bool]) -> McNemar:
    """Exact two-sided McNemar test on paired right/wrong outcomes of the same notebooks."""
    from scipy.stats import binomtest

    try:
        pairs = list(zip(correct_a, correct_b, strict=True))
    except ValueError:
        raise ValueError("McNemar needs the same notebooks for both detectors") from None
    only_a = sum(1 for a, b in pairs if a and not b)
    only_b = sum(1 for a, b in pairs if b and not a)
    if only_a == only_b == 0:  # no discordant notebook: nothing tells the two apart
        return McNemar(0, 0, 1.0)
    p_value = float(binomtest(only_a, only_a + only_b, 0.5, alternative="two-sided").pvalue)
    return McNemar(only_a, only_b, p_value)  # (scipy's two-sided p is at most 1)


@dataclass(frozen=True)
class Difference:
    """A metric of A minus the same metric of B, with its paired bootstrap interval and the
    share of resamples on the other side of zero, doubled (a two-sided bootstrap p-value)."""

    metric: str
    estimate: float | None
    interval: Interval | None
    p_value: float | None


def paired_difference(scored_a: Iterable[Scored], scored_b: Iterable[Scored], *,
                      metric: str = "f1", resamples: int = DEFAULT_RESAMPLES,
                      seed: int = DEFAULT_SEED, confidence: float = CONFIDENCE) -> Difference:
    """Bootstrap of ``metric``(A) − ``metric``(B), drawing the same cases for both."""
    cases_a, counts_a = case_counts(scored_a)
    cases_b, counts_b = case_counts(scored_b)
    if cases_a != cases_b:
        order = {case: i for i, case in enumerate(cases_b)}
        if set(order) != set(cases_a):
            raise ValueError("a paired bootstrap needs the same cases for both detectors")
        counts_b = counts_b[[order[case] for case in cases_a]]
    both = np.concatenate([counts_a, counts_b], axis=1)  # resample the pairs together
    summed = resampled_counts(both, resamples, seed)
    summed_a, summed_b = np.hsplit(summed, 2)
    diff = metric_values(summed_a)[metric] - metric_values(summed_b)[metric]
    point = metric_values(counts_a.sum(axis=0))[metric] - metric_values(counts_b.sum(axis=0))[metric]
    estimate = None if np.isnan(point) else float(point)
    defined = diff[~np.isnan(diff)]
    p_value = None
    if len(defined):
        p_value = float(min(1.0, 2 * min(np.mean(defined <= 0), np.mean(defined >= 0))))
    return Difference(metric, estimate, percentile_interval(diff, confidence), p_value)


def holm(p_values: Sequence[float | None]) -> list[float | None]:
    """Holm-adjusted p-values, in the given order (None stays None and is not counted)."""
    present = sorted((p, i) for i, p in enumerate(p_values) if p is not None)
    out: list[float | None] = [None] * len(p_values)
    running = 0.0
    m = len(present)
    for rank, (p, i) in enumerate(present):
        running = max(running, min(1.0, (m - rank) * p))
        out[i] = running
    return out


def too_few_cases(cases: int) -> bool:
    """True when ``cases`` cases are too few for a case-bootstrap interval to mean
    anything (each resample can only repeat one or two cases)."""
    return cases < MIN_CASES
