"""Judging a replay: a pure function of what ran (no kernel, no files).

A reproduced notebook passes when every run before the target succeeds and the target's
last run raises the recorded exception class; a fixed notebook passes when every run of
its order succeeds.

>>> log = RunLog(steps=(StepOutcome(0, "ok"), StepOutcome(2, "error", "KeyError", "'a'")),
...              planned=2)
>>> judge("reproduced", log, target=2, expected="KeyError")
Verdict(ok=True, reason='crashed at the target (code cell 2) with KeyError, as recorded', exception='KeyError', cell=2)
>>> judge("fixed", log, target=2).reason
"still crashes: the target (code cell 2) raised KeyError: 'a'"
"""

from __future__ import annotations

from dataclasses import dataclass

from junobench.safety.text import first_line

#: Status of one run of a cell.
OK, ERROR, TIMEOUT = "ok", "error", "timeout"
#: How a verdict on a notebook that ran out of memory starts.
OUT_OF_MEMORY = "out of memory"
#: How the failure of a replay starts whose notebook changed how its kernel runs code (an
#: input transformer, a trace function): later cells' outcomes are not trusted.
TAMPERED = "tampered"
#: Failures that are a limit of the sandbox, or a notebook that tampered with its kernel,
#: not a broken kernel (said as they are).
LIMITS = (OUT_OF_MEMORY, "too many processes", TAMPERED)


@dataclass(frozen=True, slots=True)
class StepOutcome:
    """One run of a code cell: ``ok``, ``error`` (with the exception) or ``timeout``."""

    code_cell_index: int
    status: str
    ename: str | None = None
    evalue: str | None = None


@dataclass(frozen=True, slots=True)
class RunLog:
    """What happened when a notebook's order was replayed.

    ``steps`` are the runs that happened, in order; the replay stops after the first run
    that is not ``ok``. ``planned`` is the length of the order. ``failure`` says why the
    kernel could not run the notebook at all (did not start, died); ``input_error`` that
    the task's files were refused before any kernel started (a link out of the case
    folder, a FIFO). ``timeout`` is the
    per-cell limit in seconds; the other fields are measurements the judge ignores, and
    ``notebook`` the replayed notebook with this replay's outputs (nbformat JSON), when
    the task asked to keep it (``verify --keep-outputs``).
    """

    steps: tuple[StepOutcome, ...]
    planned: int
    failure: str | None = None
    timeout: float | None = None
    seconds: float = 0.0
    kernel_seconds: float = 0.0
    kernel_pid: int | None = None
    input_error: str | None = None
    sandbox: str | None = None
    notebook: str | None = None


@dataclass(frozen=True, slots=True)
class Verdict:
    """The judgement of one notebook: ``ok``, a one-line ``reason``, and for a reproduced
    notebook the exception raised at the target and the code cell where the replay ended."""

    ok: bool
    reason: str
    exception: str | None = None
    cell: int | None = None


def judge(version: str, log: RunLog, *, target: int, expected: str | None = None) -> Verdict:
    """Verdict for the ``reproduced`` or ``fixed`` replay ``log`` of a case.

    ``target`` is the target's code-cell index; ``expected`` the recorded exception class
    of the reproduced notebook (compared case-insensitively, module prefixes ignored, so
    the published table's ``keyerror`` matches ``KeyError``).
    """
    if version == "reproduced":
        if expected is None:
            raise ValueError("judging a reproduced notebook needs the expected exception")
        return judge_reproduced(log, target=target, expected=expected)
    if version == "fixed":
        return judge_fixed(log, target=target)
    raise ValueError(f"unknown version {version!r} (reproduced or fixed)")


def judge_reproduced(log: RunLog, *, target: int, expected: str) -> Verdict:
    """The crash must happen at the target's last run, with the ``expected`` class."""
    problem = _interrupted(log, target)
    if problem is not None:
        return problem
    last = len(log.steps) - 1
    for position, step in enumerate(log.steps):
        if step.status == OK:
            continue
        where = _where(step.code_cell_index, target, first_run=position < log.planned - 1)
        if same_exception(step.ename, "MemoryError") and not same_exception(expected, "MemoryError"):
            return Verdict(False, f"{OUT_OF_MEMORY} at {where}: expected {expected}, got {_exc(step)}",
                           step.ename, step.code_cell_index)
        if position < log.planned - 1:
            return Verdict(False, f"crashed before the target: {where} raised {_exc(step)}",
                           step.ename, step.code_cell_index)
        if same_exception(step.ename, expected):
            return Verdict(True, f"crashed at {where} with {step.ename}, as recorded",
                           step.ename, step.code_cell_index)
        return Verdict(False, f"different exception at {where}: expected {expected}, "
                       f"got {_exc(step)}", step.ename, step.code_cell_index)
    if len(log.steps) < log.planned:
        return Verdict(False, f"incomplete replay: {len(log.steps)} of {log.planned} runs happened")
    cell = log.steps[last].code_cell_index if log.steps else target
    return Verdict(False, f"no crash: the target (code cell {target}) ran without error "
                   f"(expected {expected})", None, cell)


def judge_fixed(log: RunLog, *, target: int) -> Verdict:
    """Every run of the order must succeed."""
    problem = _interrupted(log, target)
    if problem is not None:
        return problem
    for position, step in enumerate(log.steps):
        if step.status != OK:
            where = _where(step.code_cell_index, target, first_run=position < log.planned - 1)
            if same_exception(step.ename, "MemoryError"):
                return Verdict(False, f"{OUT_OF_MEMORY} at {where}: {_exc(step)}", step.ename,
                               step.code_cell_index)
            return Verdict(False, f"still crashes: {where} raised {_exc(step)}",
                           step.ename, step.code_cell_index)
    if len(log.steps) < log.planned:
        return Verdict(False, f"incomplete replay: {len(log.steps)} of {log.planned} runs happened")
    return Verdict(True, f"all {log.planned} runs succeeded", None,
                   log.steps[-1].code_cell_index if log.steps else None)


def same_exception(got: str | None, expected: str) -> bool:
    """``KeyError`` matches ``keyerror`` and ``builtins.KeyError``."""
    if got is None:
        return False
    return got.rsplit(".", 1)[-1].lower() == expected.rsplit(".", 1)[-1].lower()


def _interrupted(log: RunLog, target: int) -> Verdict | None:
    """A verdict for a replay cut short by the kernel or the clock, else None."""
    if len(log.steps) > log.planned:
        return Verdict(False, f"inconsistent replay: {len(log.steps)} runs for an order of "
                       f"{log.planned}")
    for position, step in enumerate(log.steps):
        if step.status == TIMEOUT:
            limit = f" after {log.timeout:g}s" if log.timeout else ""
            where = _where(step.code_cell_index, target, first_run=position < log.planned - 1)
            return Verdict(False, f"timed out{limit} at {where}", None, step.code_cell_index)
    if log.input_error is not None:
        return Verdict(False, f"input error: {log.input_error}")
    if log.failure is not None:
        cell = log.steps[-1].code_cell_index if log.steps else None
        if log.failure.startswith(LIMITS):
            return Verdict(False, log.failure, None, cell)
        return Verdict(False, f"kernel failure: {log.failure}", None, cell)
    return None


def _where(index: int, target: int, *, first_run: bool) -> str:
    if index != target:
        return f"code cell {index}"
    return f"the first run of the target (code cell {index})" if first_run else (
        f"the target (code cell {index})")


def _exc(step: StepOutcome) -> str:
    value = first_line(step.evalue)
    if step.ename is None:  # an error junobench saw but could not read (a reply too large)
        return f"an error ({value})" if value else "an error"
    return f"{step.ename}: {value}" if value else str(step.ename)
