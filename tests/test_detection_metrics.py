"""The crash-detection metrics and their uncertainty, on hand-computed fixtures.

Every fixture is asymmetric (false positives and false negatives differ, the cases differ),
so that swapping two counts, two cases or two detectors changes the expected numbers.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from junobench.detection.metrics import (
    COUNTS,
    METRICS,
    Confusion,
    confusion,
    fractions,
    grouped,
    outcome,
    scores,
)
from junobench.detection.uncertainty import (
    bootstrap,
    case_counts,
    check_resamples,
    mcnemar,
    metric_values,
    paired_difference,
    percentile_interval,
    resampled_counts,
)
from junobench.errors import JunoBenchError

#: Three cases, a reproduced (crash) and a fixed notebook each: a and b are flagged both
#: times (tp + fp), c never (fn + tn). Totals tp 2, fp 2, tn 1, fn 1.
A = [("a_1", True, True), ("a_1", False, True), ("b_2", True, True), ("b_2", False, True),
     ("c_3", True, False), ("c_3", False, False)]
#: Another detector on the same cases, listed in another order: c flagged both times,
#: b missed, a right. Totals tp 2, fp 1, tn 2, fn 1.
B = [("c_3", True, True), ("c_3", False, True), ("b_2", True, False), ("b_2", False, False),
     ("a_1", True, True), ("a_1", False, False)]
#: numpy.random.default_rng(0).integers(0, 3, size=(4, 3)): the cases each of 4
#: resamples draws (0 = a, 1 = b, 2 = c).
DRAWS = [[2, 1, 1], [0, 0, 0], [0, 0, 0], [2, 1, 2]]


def f1(tp: int, fp: int, fn: int) -> float:
    return 2 * tp / (2 * tp + fp + fn)


def test_counts_of_an_asymmetric_detector() -> None:
    c = confusion((truth, decision) for _, truth, decision in A)
    assert (c.tp, c.fp, c.tn, c.fn, c.n) == (2, 2, 1, 1, 6)
    assert (c.positives, c.negatives) == (3, 3)  # tp + fn crashing, tn + fp fixed
    other = Confusion(tp=5, fp=3, tn=7, fn=1)
    assert (other.positives, other.negatives) == (6, 10)
    assert [outcome(True, True), outcome(False, True), outcome(False, False),
            outcome(True, False)] == [0, 1, 2, 3]
    assert COUNTS == ("tp", "fp", "tn", "fn")


def test_scores_by_hand() -> None:
    c = Confusion(tp=5, fp=3, tn=7, fn=1)
    assert c.precision == 5 / 8 and c.recall == 5 / 6 and c.accuracy == 12 / 16
    assert c.f1 == pytest.approx(10 / 14)
    row = scores(c, digits=2)
    assert (row["precision"], row["recall"], row["f1"], row["accuracy"]) == (0.62, 0.83, 0.71, 0.75)
    assert (row["reproduced_correct"], row["reproduced_total"]) == (5, 6)
    assert (row["fixed_correct"], row["fixed_total"]) == (7, 10)
    assert (row["n"], row["tp"], row["fp"], row["tn"], row["fn"]) == (16, 5, 3, 7, 1)
    assert scores(c)["precision"] == 5 / 8  # full precision without digits


def test_undefined_scores_are_none_not_zero() -> None:
    nothing_flagged = Confusion(tp=0, fp=0, tn=4, fn=2)
    assert nothing_flagged.precision is None and nothing_flagged.recall == 0.0
    assert nothing_flagged.f1 == 0.0 and nothing_flagged.accuracy == 4 / 6
    empty = Confusion()
    assert [empty.score(m) for m in METRICS] == [None] * 4
    assert scores(empty, digits=3)["f1"] is None


def test_matrices_add_and_group() -> None:
    total = Confusion(1, 2, 3, 4) + Confusion(10, 20, 30, 40)
    assert total == Confusion(11, 22, 33, 44)
    groups = grouped(A, lambda item: item[0], lambda item: (item[1], item[2]))
    assert list(groups) == ["a_1", "b_2", "c_3"]
    assert groups["c_3"] == Confusion(tp=0, fp=0, tn=1, fn=1)


def test_one_formula_for_a_matrix_and_for_arrays_of_resamples() -> None:
    counts = np.array([[5, 3, 7, 1], [0, 0, 4, 2], [2, 2, 1, 1]])
    values = metric_values(counts)
    for row, matrix in zip(counts, (Confusion(*map(int, r)) for r in counts), strict=True):
        for metric in METRICS:
            expected = matrix.score(metric)
            got = values[metric][list(counts.tolist()).index(row.tolist())]
            assert (np.isnan(got) if expected is None else got == pytest.approx(expected))
    num, den = fractions(Fraction(2), Fraction(2), Fraction(1), Fraction(1))["f1"]
    assert num / den == Fraction(4, 7)


def test_cases_are_counted_in_first_seen_order() -> None:
    cases, counts = case_counts(B)
    assert cases == ["c_3", "b_2", "a_1"]
    assert counts.tolist() == [[1, 1, 0, 0], [0, 0, 1, 1], [1, 0, 1, 0]]
    empty_cases, empty = case_counts([])
    assert empty_cases == [] and empty.shape == (0, 4)


def test_a_bootstrap_of_three_cases_by_hand() -> None:
    assert np.random.default_rng(0).integers(0, 3, size=(4, 3)).tolist() == DRAWS
    _, counts = case_counts(A)  # a [1, 1, 0, 0], b [1, 1, 0, 0], c [0, 0, 1, 1]
    # (c, b, b), (a, a, a), (a, a, a), (c, b, c), summed
    assert resampled_counts(counts, 4, 0).tolist() == [[2, 2, 1, 1], [3, 3, 0, 0],
                                                       [3, 3, 0, 0], [1, 1, 2, 2]]
    recall = sorted([2 / 3, 1.0, 1.0, 1 / 3])
    # the 2.5th and 97.5th percentiles of four values, interpolated between ranks
    low = recall[0] + 0.075 * (recall[1] - recall[0])
    high = recall[2] + 0.925 * (recall[3] - recall[2])
    intervals = bootstrap(A, resamples=4, seed=0)
    assert intervals["recall"] == pytest.approx((low, high))
    assert intervals["precision"] == (0.5, 0.5) and intervals["accuracy"] == (0.5, 0.5)
    f1s = sorted([f1(2, 2, 1), f1(3, 3, 0), f1(3, 3, 0), f1(1, 1, 2)])
    assert intervals["f1"] == pytest.approx((f1s[0] + 0.075 * (f1s[1] - f1s[0]),
                                             f1s[2] + 0.925 * (f1s[3] - f1s[2])))


def test_the_interval_leaves_half_the_rest_in_each_tail() -> None:
    values = np.array([0.0, 0.25, 0.5, 0.75, 1.0, np.nan])
    assert percentile_interval(values, confidence=0.5) == (0.25, 0.75)
    assert percentile_interval(values, confidence=0.0) == (0.5, 0.5)
    assert percentile_interval(np.array([np.nan, np.nan])) is None


def test_undefined_resamples_are_left_out_of_an_interval() -> None:
    # c alone has no flagged notebook: resamples of c only have no precision.
    scored = [("a_1", True, True), ("a_1", False, False), ("c_3", True, False),
              ("c_3", False, False)]
    low, high = bootstrap(scored, resamples=200, seed=1)["precision"]
    assert low == high == 1.0
    assert bootstrap([("c_3", True, False)], resamples=20)["precision"] is None


def test_a_paired_bootstrap_realigns_the_cases_and_doubles_the_smaller_tail() -> None:
    difference = paired_difference(A, B, resamples=4, seed=0)
    assert difference.metric == "f1"
    assert difference.estimate == pytest.approx(f1(2, 2, 1) - f1(2, 1, 1))  # 4/7 - 2/3
    # B's counts put in A's case order (a, b, c), then the draws of DRAWS for both
    diffs = [f1(2, 2, 1) - f1(1, 1, 2), f1(3, 3, 0) - f1(3, 0, 0), f1(3, 3, 0) - f1(3, 0, 0),
             f1(1, 1, 2) - f1(2, 2, 1)]
    assert difference.p_value == pytest.approx(2 * min(np.mean(np.array(diffs) <= 0),
                                                       np.mean(np.array(diffs) >= 0)))
    assert difference.p_value == 0.5  # 1 of 4 resamples above zero, doubled
    reverse = paired_difference(B, A, resamples=4, seed=0)  # the smaller tail below zero
    assert reverse.estimate == pytest.approx(-difference.estimate) and reverse.p_value == 0.5
    assert difference.interval == pytest.approx(
        (float(np.percentile(diffs, 2.5)), float(np.percentile(diffs, 97.5))))
    assert paired_difference(A, B, metric="accuracy", resamples=4, seed=0).estimate == \
        pytest.approx(3 / 6 - 4 / 6)
    with pytest.raises(ValueError, match="same cases"):
        paired_difference(A, B[:4], resamples=4)


def test_a_difference_with_no_defined_resample() -> None:
    never = [("a_1", True, False), ("a_1", False, False)]
    difference = paired_difference(never, never, metric="precision", resamples=10)
    assert difference.estimate is None and difference.interval is None
    assert difference.p_value is None


def test_mcnemar_counts_each_side_and_caps_p_at_one() -> None:
    a = [True, True, True, False, False]
    b = [False, False, True, True, False]
    test = mcnemar(a, b)
    assert (test.only_a, test.only_b, test.discordant) == (2, 1, 3)
    assert test.p_value == 1.0  # binomial(2 of 3, 1/2), two-sided, capped
    lopsided = mcnemar([True] * 6, [False] * 6)
    assert (lopsided.only_a, lopsided.only_b) == (6, 0)
    assert lopsided.p_value == pytest.approx(2 / 2**6)
    with pytest.raises(ValueError):
        mcnemar([True], [True, False])


def test_resamples_are_bounded() -> None:
    check_resamples(1)
    check_resamples(1_000_000)
    for bad in (0, 1_000_001):
        with pytest.raises(JunoBenchError, match="--resamples"):
            check_resamples(bad)
    assert resampled_counts(np.zeros((0, 4), dtype=np.int64), 3, 0).tolist() == [[0] * 4] * 3


def test_a_matrix_is_a_value() -> None:
    """Frozen and slotted: a matrix cannot be changed in place (a report's overall matrix
    is shared), compares and hashes by its counts, and carries no per-object dict."""
    from dataclasses import FrozenInstanceError

    c = Confusion(1, 2, 3, 4)
    with pytest.raises(FrozenInstanceError):
        c.tp = 9  # type: ignore[misc]
    assert {c: "x"}[Confusion(1, 2, 3, 4)] == "x"
    assert not hasattr(c, "__dict__")


def test_test_results_are_values() -> None:
    from dataclasses import FrozenInstanceError

    test = mcnemar([True, False], [False, False])
    difference = paired_difference(A, B, resamples=4, seed=0)
    for value, field in ((test, "p_value"), (difference, "estimate")):
        with pytest.raises(FrozenInstanceError):
            setattr(value, field, 0.0)
    assert test == mcnemar([True, False], [False, False]) and hash(test) == hash(
        mcnemar([True, False], [False, False]))


def test_two_cases_are_too_few_for_an_interval_three_are_not() -> None:
    from junobench.detection.uncertainty import too_few_cases

    assert [too_few_cases(n) for n in (0, 1, 2, 3, 4)] == [True, True, True, False, False]


def test_holm_by_hand() -> None:
    from junobench.detection.uncertainty import holm

    # sorted 0.01, 0.02, 0.04 of m = 3: 3 x 0.01, max(0.03, 2 x 0.02), max(0.04, 1 x 0.04)
    adjusted = holm([0.04, None, 0.01, 0.02])
    assert adjusted[1] is None
    assert adjusted[0] == pytest.approx(0.04) and adjusted[2] == pytest.approx(0.03)
    assert adjusted[3] == pytest.approx(0.04)
    assert holm([0.6, 0.9]) == [1.0, 1.0]  # capped at one
