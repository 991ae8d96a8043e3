"""The pure half of ``construct reproduce``: the crashing cell, the order, the classification."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from junobench.construct.triage import (
    DIFFERENT,
    EARLIER,
    INFRASTRUCTURE,
    KERNEL_DIED,
    MISSING_DATA,
    MISSING_MODULE,
    NO_CRASH,
    OUTCOMES,
    SAME,
    TIMED_OUT,
    Reproduction,
    classify,
    crash_cell,
    reexecuted,
    reexecution_order,
    reproduction_order,
)
from junobench.data.notebook import CodeCell, ErrorOutput, Step
from junobench.verify.judge import RunLog, StepOutcome


def ok(cell: int) -> StepOutcome:
    return StepOutcome(cell, "ok")


def err(cell: int, ename: str, evalue: str = "boom") -> StepOutcome:
    return StepOutcome(cell, "error", ename, evalue)


def log(*steps: StepOutcome, planned: int = 3, failure: str | None = None, pid: int | None = 7,
        timeout: float | None = 30) -> RunLog:
    return RunLog(steps=steps, planned=planned, failure=failure, timeout=timeout, kernel_pid=pid)


@pytest.mark.parametrize(("steps", "expected", "outcome", "cell"), [
    ((ok(0), ok(1), err(4, "KeyError", "'a'")), "keyerror", SAME, 4),
    ((ok(0), ok(1), err(4, "builtins.KeyError")), "KeyError", SAME, 4),
    ((ok(0), ok(1), err(4, "TypeError")), "KeyError", DIFFERENT, 4),
    ((ok(0), err(1, "KeyError")), "KeyError", EARLIER, 1),  # same class, wrong place
    ((ok(0), ok(1), ok(4)), "KeyError", NO_CRASH, 4),
    ((ok(0), err(1, "ModuleNotFoundError", "No module named 'xgboost'")), "KeyError", MISSING_MODULE, 1),
    ((ok(0), ok(1), err(4, "ImportError", "No module named 'x.y'")), "ValueError", MISSING_MODULE, 4),
    ((err(0, "FileNotFoundError", "[Errno 2] No such file or directory: '../input/a.csv'"),), "KeyError",
     MISSING_DATA, 0),
    ((ok(0), err(1, "OSError", "[Errno 2] No such file or directory: 'x'")), "KeyError", MISSING_DATA, 1),
    ((ok(0), ok(1), err(4, "FileNotFoundError")), "FileNotFoundError", SAME, 4),  # the recorded crash itself
    ((ok(0), StepOutcome(1, "timeout")), "KeyError", TIMED_OUT, 1),
])
def test_classify(steps, expected, outcome, cell):
    verdict = classify(log(*steps), crash_cell=4, expected=expected)
    assert (verdict.outcome, verdict.cell) == (outcome, cell)
    assert verdict.reproduced == (outcome == SAME)
    assert "\n" not in verdict.detail


def test_classify_reexecuted_crash_cell():
    # A [reexecute] crashing cell runs twice: raising on the first run is crashing earlier.
    first = classify(log(ok(0), err(4, "KeyError"), planned=3), crash_cell=4, expected="KeyError")
    assert first.outcome == EARLIER and first.detail.startswith("the first run of the crashing cell")
    second = classify(log(ok(0), ok(4), err(4, "KeyError")), crash_cell=4, expected="KeyError")
    assert second.outcome == SAME


def test_classify_details_name_what_happened():
    different = classify(log(ok(0), ok(1), err(4, "TypeError", "unsupported operand\nmore")),
                         crash_cell=4, expected="KeyError")
    assert different.detail == ("the crashing cell (code cell 4) raised TypeError: unsupported operand "
                                "(recorded: KeyError)")
    timed = classify(log(StepOutcome(0, "timeout"), timeout=12), crash_cell=4, expected="KeyError")
    assert timed.detail == "code cell 0 timed out after 12s"


def test_kernel_death_and_machinery_failures_are_told_apart():
    died = classify(log(ok(0), failure="the kernel died while running code cell 1"), crash_cell=4,
                    expected="KeyError")
    assert died.outcome == KERNEL_DIED and died.cell == 0
    never = classify(log(failure="RuntimeError: kernel did not start", pid=None), crash_cell=4,
                     expected="KeyError")
    assert never.outcome == INFRASTRUCTURE
    assert classify(log(ok(0)), crash_cell=4, expected="KeyError").outcome == INFRASTRUCTURE  # incomplete
    too_many = classify(log(ok(0), ok(1), ok(2), ok(4)), crash_cell=4, expected="KeyError")
    assert too_many.outcome == INFRASTRUCTURE


@given(st.lists(st.tuples(st.integers(0, 5), st.sampled_from(["ok", "error", "timeout"]),
                          st.sampled_from([None, "KeyError", "ModuleNotFoundError", "OSError", ""]),
                          st.text(max_size=20)), max_size=6),
       st.integers(0, 6), st.one_of(st.none(), st.text(max_size=10)), st.one_of(st.none(), st.integers(1, 9)))
def test_classify_always_answers_with_an_outcome(steps, planned, failure, pid):
    outcomes = tuple(StepOutcome(c, s, e, v) for c, s, e, v in steps)
    verdict = classify(log(*outcomes, planned=planned, failure=failure, pid=pid), crash_cell=3, expected="KeyError")
    assert verdict.outcome in OUTCOMES and verdict.detail


def cell(index: int, count: int | None, ename: str | None = None, evalue: str = "") -> CodeCell:
    error = ErrorOutput(ename, evalue, ()) if ename else None
    return CodeCell(index, f"x{index} = {index}", count, error)


def test_crash_cell_prefers_the_recorded_exception_and_message():
    cells = [cell(0, 1), cell(1, 2, "ValueError", "bad"), cell(2, 3, "KeyError", "'b'"),
             cell(3, 4, "KeyError", "'a'")]
    assert crash_cell(cells) == 1  # first in execution order
    assert crash_cell(cells, "keyerror") == 2
    assert crash_cell(cells, "KeyError", "'a'") == 3
    assert crash_cell(cells, "IndexError") == 1  # no match: the first error output
    assert crash_cell([cell(0, 1), cell(1, None)]) is None


def test_reproduction_order_uses_counts_else_document_order():
    counted = [cell(0, 2), cell(1, 1), cell(2, None), cell(3, 3, "KeyError")]
    assert reproduction_order(counted, 3) == ([Step(1, 1), Step(0, 2), Step(3, 3)], False)
    uncounted = [cell(0, None), cell(1, None), cell(2, None, "KeyError"), cell(3, None)]
    assert reproduction_order(uncounted, 2) == ([Step(0, None), Step(1, None), Step(2, None)], True)


def _cells(*counts: int | None) -> list[CodeCell]:
    return [CodeCell(i, f"x{i}", count) for i, count in enumerate(counts)]


def test_a_gap_below_the_crashing_cell_s_count_gives_an_order_with_it_run_twice() -> None:
    cells = _cells(1, 2, 3, 4, 6, None)  # NBspecific_2: no In[5], the crash at In[6]
    steps = [Step(0, 1), Step(1, 2), Step(2, 3), Step(3, 4), Step(4, 6)]
    assert reexecution_order(cells, steps) == [*steps[:-1], Step(4, None), Step(4, 6)]
    assert reexecution_order(_cells(1, 2, 3), [Step(0, 1), Step(1, 2), Step(2, 3)]) is None
    assert reexecution_order(_cells(1, 3), [Step(0, 1), Step(1, None), Step(1, 3)]) is None  # twice already
    assert reexecution_order(_cells(None, None), [Step(0, None), Step(1, None)]) is None
    assert reexecution_order(_cells(1), [Step(0, 1)]) is None
    assert reexecution_order(_cells(), []) is None


def test_the_second_try_says_the_cell_ran_twice() -> None:
    first = Reproduction(NO_CRASH, "the crashing cell (code cell 4) ran without error")
    log = RunLog(steps=(ok(0), ok(4), err(4, "KeyError", "'x'")), planned=3, kernel_pid=1)
    again = classify(log, crash_cell=4, expected="keyerror")
    verdict = reexecuted(again, 6, first)
    assert verdict.outcome == SAME and verdict.exception == "KeyError"
    assert verdict.detail.endswith("on its second run: In[5] is missing, so the crashing cell ran "
                                   "twice (as a [reexecute] cell)")
    quiet = reexecuted(Reproduction(NO_CRASH, "still nothing"), 6, first)
    assert quiet.outcome == NO_CRASH and quiet.detail.startswith(first.detail)
    assert "run twice (In[5] is missing" in quiet.detail and quiet.detail.endswith("still nothing")
