"""Judging a reproduction attempt of a sampled crash: a pure function of what ran.

A sampled crash (a row of the resampled table) names a notebook and the exception it
crashed with. ``construct reproduce`` replays the notebook in execution order up to its
crashing cell in a fresh kernel; :func:`classify` turns that replay's
:class:`~junobench.verify.judge.RunLog` into one of the :data:`OUTCOMES`, with a one-line
detail, for the labelling step. :func:`crash_cell` and :func:`reproduction_order` find
what to run from the notebook's error output and execution counts (also pure).

>>> from junobench.verify.judge import RunLog, StepOutcome
>>> log = RunLog(steps=(StepOutcome(0, "ok"), StepOutcome(3, "error", "KeyError", "'a'")),
...              planned=2, kernel_pid=1)
>>> classify(log, crash_cell=3, expected="keyerror").outcome
'same exception'
>>> classify(log, crash_cell=3, expected="ValueError").detail
"the crashing cell (code cell 3) raised KeyError: 'a' (recorded: ValueError)"
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from junobench.data.notebook import CodeCell, Step, execution_order
from junobench.safety.text import first_line
from junobench.verify.judge import OK, TIMEOUT, RunLog, StepOutcome, same_exception

#: The replay crashed at the crashing cell with the recorded exception class.
SAME = "same exception"
#: The crashing cell raised another exception class.
DIFFERENT = "different exception"
#: A cell before the crashing cell raised (not for want of data or a module).
EARLIER = "crashed earlier"
#: Every cell ran, the crashing cell included, without an error.
NO_CRASH = "no crash"
#: A cell ran past the time limit.
TIMED_OUT = "timeout"
#: A file the notebook reads is not there (``FileNotFoundError`` and the like).
MISSING_DATA = "missing data"
#: A module the notebook imports is not installed.
MISSING_MODULE = "missing module"
#: The kernel died while running a cell (a crash of the process, not an exception).
KERNEL_DIED = "kernel died"
#: Nothing ran: the notebook is absent or unreadable, has no crashing cell, or its files
#: were refused (an input error: a link out of its folder, a FIFO).
NOT_RUN = "not run"
#: The machinery failed (no kernel started, a worker lost) after its retries: no verdict.
INFRASTRUCTURE = "infrastructure error"
#: Not tried: its library had reproduced its quota of crashes already.
OVER_QUOTA = "over quota"

#: Every value of the ``reproduced`` column.
OUTCOMES: tuple[str, ...] = (SAME, DIFFERENT, EARLIER, NO_CRASH, TIMED_OUT, MISSING_DATA,
                             MISSING_MODULE, KERNEL_DIED, NOT_RUN, INFRASTRUCTURE, OVER_QUOTA)
#: Outcomes that are verdicts on the notebook (a rerun keeps them).
VERDICTS: frozenset[str] = frozenset(OUTCOMES) - {INFRASTRUCTURE, OVER_QUOTA}

_MODULE_ERRORS = ("ModuleNotFoundError",)
_DATA_ERRORS = ("FileNotFoundError",)
_NO_FILE = "no such file or directory"


@dataclass(frozen=True, slots=True)
class Reproduction:
    """How a reproduction attempt ended: an ``outcome`` of :data:`OUTCOMES`, a one-line
    ``detail``, the exception raised (if any) and the code cell where the replay ended."""

    outcome: str
    detail: str
    exception: str | None = None
    cell: int | None = None

    @property
    def reproduced(self) -> bool:
        return self.outcome == SAME


def classify(log: RunLog, *, crash_cell: int, expected: str) -> Reproduction:
    """The outcome of replaying a notebook's order up to ``crash_cell`` (a code-cell index),
    whose recorded exception class is ``expected`` (case and module prefix ignored).

    A missing module or data file wins over the other outcomes: a ``FileNotFoundError`` or
    ``ModuleNotFoundError`` before or at the crashing cell says why the notebook could not
    be judged, unless it is the recorded exception raised at the crashing cell itself.
    """
    if log.input_error is not None:
        return Reproduction(NOT_RUN, f"input error: {log.input_error}")
    if len(log.steps) > log.planned:
        return Reproduction(INFRASTRUCTURE, f"inconsistent replay: {len(log.steps)} runs for an "
                            f"order of {log.planned}")
    for position, step in enumerate(log.steps):
        if step.status == TIMEOUT:
            limit = f" after {log.timeout:g}s" if log.timeout else ""
            return Reproduction(TIMED_OUT, f"{_where(step, crash_cell, position, log.planned)} "
                                f"timed out{limit}", None, step.code_cell_index)
        if step.status == OK:
            continue
        where = _where(step, crash_cell, position, log.planned)
        at_crash = position == log.planned - 1
        if at_crash and same_exception(step.ename, expected):
            return Reproduction(SAME, f"{where} raised {_exc(step)}, as recorded",
                                step.ename, step.code_cell_index)
        recorded = f" (recorded: {expected})"
        if _is_missing_module(step):
            return Reproduction(MISSING_MODULE, f"{where} raised {_exc(step)}{recorded}",
                                step.ename, step.code_cell_index)
        if _is_missing_data(step):
            return Reproduction(MISSING_DATA, f"{where} raised {_exc(step)}{recorded}",
                                step.ename, step.code_cell_index)
        outcome = DIFFERENT if at_crash else EARLIER
        return Reproduction(outcome, f"{where} raised {_exc(step)}{recorded}", step.ename,
                            step.code_cell_index)
    if log.failure is not None:
        if log.kernel_pid is None:  # the kernel never started: not the notebook's doing
            return Reproduction(INFRASTRUCTURE, f"no kernel: {log.failure or 'it did not start'}")
        cell = log.steps[-1].code_cell_index if log.steps else None
        return Reproduction(KERNEL_DIED, log.failure or "the kernel died", None, cell)
    if len(log.steps) < log.planned:
        return Reproduction(INFRASTRUCTURE, f"incomplete replay: {len(log.steps)} of "
                            f"{log.planned} runs happened")
    return Reproduction(NO_CRASH, f"the crashing cell (code cell {crash_cell}) ran without "
                        f"error (recorded: {expected})", None, crash_cell)


def reexecution_order(code_cells: Sequence[CodeCell], steps: Sequence[Step]) -> list[Step] | None:
    """``steps`` (an order ending with the crashing cell) with the crashing cell run twice,
    when the notebook suggests it ran before its recorded run: the count just below its
    own is nowhere in the notebook (NBspecific_2 has no ``In[5]`` and crashed at
    ``In[6]``: the cell ran as 5, then failed as 6). None when it does not, or when the
    order already runs it twice (a ``[reexecute]`` cell)."""
    if not steps:
        return None
    last = steps[-1]
    if last.execution_count is None or last.execution_count < 2:
        return None
    if len(steps) > 1 and steps[-2].code_cell_index == last.code_cell_index:
        return None
    counts = {c.execution_count for c in code_cells if c.execution_count is not None}
    if last.execution_count - 1 in counts:
        return None
    return [*steps[:-1], Step(last.code_cell_index, None), last]


def reexecuted(verdict: Reproduction, count: int, first: Reproduction) -> Reproduction:
    """The verdict of a second try that ran the crashing cell twice (see
    :func:`reexecution_order`), saying so; when that try did not reproduce the crash either,
    the first verdict with what the second found."""
    why = f"In[{count - 1}] is missing, so the crashing cell ran twice (as a [reexecute] cell)"
    if verdict.outcome == SAME:
        return Reproduction(SAME, f"{verdict.detail}, on its second run: {why}",
                            verdict.exception, verdict.cell)
    return Reproduction(first.outcome, f"{first.detail}; run twice ({why}): {verdict.detail}",
                        first.exception, first.cell)


def crash_cell(code_cells: Sequence[CodeCell], ename: str | None = None,
               evalue: str | None = None) -> int | None:
    """Code-cell index of the cell whose error output is the sampled crash.

    Among the cells with an error output, those raising ``ename`` are preferred, and among
    them one whose message starts like ``evalue``; ties go to the first in execution order
    (cells without a count last). None when no cell has an error output.
    """
    crashed = [c for c in code_cells if c.error is not None]
    if ename:
        same = [c for c in crashed if c.error is not None and same_exception(c.error.ename, ename)]
        crashed = same or crashed
    if evalue and evalue.strip():
        head = evalue.strip().splitlines()[0][:80]
        same = [c for c in crashed if c.error is not None and c.error.evalue.strip().startswith(head)]
        crashed = same or crashed
    if not crashed:
        return None
    return min(crashed, key=lambda c: (c.execution_count if c.execution_count is not None
                                       else 1 << 62, c.index)).index


def reproduction_order(code_cells: Sequence[CodeCell], target: int) -> tuple[list[Step], bool]:
    """The runs up to and including ``target``: the recorded execution order
    (:func:`~junobench.data.notebook.execution_order`), or, in a notebook saved without
    any execution count, every code cell above the target in document order. The flag
    says whether the document order was used."""
    if any(c.execution_count is not None for c in code_cells):
        return execution_order(code_cells, target), False
    return [Step(c.index, None) for c in code_cells[: target + 1]], True


def _is_missing_module(step: StepOutcome) -> bool:
    name = (step.ename or "").rsplit(".", 1)[-1]
    return name in _MODULE_ERRORS or (name == "ImportError" and "no module named"
                                      in (step.evalue or "").lower())


def _is_missing_data(step: StepOutcome) -> bool:
    name = (step.ename or "").rsplit(".", 1)[-1]
    return name in _DATA_ERRORS or (name in ("OSError", "IOError") and _NO_FILE
                                    in (step.evalue or "").lower())


def _where(step: StepOutcome, crash: int, position: int, planned: int) -> str:
    if step.code_cell_index != crash:
        return f"code cell {step.code_cell_index}"
    if position < planned - 1:
        return f"the first run of the crashing cell (code cell {crash})"
    return f"the crashing cell (code cell {crash})"


def _exc(step: StepOutcome) -> str:
    value = first_line(step.evalue)
    return f"{step.ename}: {value[:200]}" if value else str(step.ename)
