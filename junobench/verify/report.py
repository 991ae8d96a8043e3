"""Per-case verdicts of ``verify``: status, table rows and the JSON report.

The JSON report is ``{"environment": {...}, "cases": {case_id: {"status", "reproduced":
{"ok", "reason", "exception", "cell"}, "fixed": {"ok", "reason"}, "seconds",
"mismatches", "inputs", "attempts", "faults", "sandbox"}}}``; ``status`` is ``passed``,
``failed``, ``timed out``, ``out of memory`` (a notebook past the sandbox's memory limit),
``skipped`` or ``infrastructure error`` (a replay lost to worker, node or
environment faults past its retries: no verdict, run again by a rerun); a run stopped
early (Ctrl-C, SIGTERM, a cluster it cannot join) writes every case too, those it did not
finish as ``interrupted`` (running when it stopped) or ``not run``, and says why in
``"stopped"``; ``attempts``
counts the tries of each notebook and ``faults`` says what went wrong with the failed
ones; ``inputs`` digests what the verdict depends on (:mod:`.resume`); ``sandbox`` says
where the case's notebooks ran (``bwrap, network off``, ``none, network on``);
``environment`` is what the kernels ran in (Python, each pinned package's installed
version, see :meth:`junobench.envs.check.KernelEnvironment.to_json`) and ``mismatches``
the pins a case needs that it did not meet (``pandas 3.1.1 where the benchmark pins
2.1.4``).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from junobench.errors import JunoBenchError
from junobench.safety.atomic import atomic_open
from junobench.verify.judge import OUT_OF_MEMORY, RunLog, Verdict

PASSED, FAILED, TIMED_OUT, SKIPPED = "passed", "failed", "timed out", "skipped"
INFRASTRUCTURE = "infrastructure error"
#: Statuses of the cases a stopped run did not finish: running when it stopped, or not reached.
INTERRUPTED, NOT_RUN = "interrupted", "not run"
#: Statuses that are verdicts (a rerun keeps them).
VERDICT_STATUSES = frozenset({PASSED, FAILED, TIMED_OUT, OUT_OF_MEMORY, SKIPPED})

#: Columns of the verdict table printed by ``junobench verify`` (``environment``: the pins a
#: failing case needs that the kernels' environment does not meet).
TABLE_COLUMNS: tuple[str, ...] = ("case_id", "status", "reproduced", "fixed", "environment", "sandbox", "seconds")


def unfinished(why: str, began: bool) -> tuple[str, str]:
    """The status of a case (or notebook) that a run stopped early (``why``) did not
    finish, and the reason: :data:`INTERRUPTED` when it had begun, else :data:`NOT_RUN`."""
    if began:
        return INTERRUPTED, f"the run stopped ({why}) while it ran"
    return NOT_RUN, f"the run stopped ({why}) before it"


@dataclass
class CaseResult:
    """The verdicts of one case and the replays they were judged from."""

    case_id: str
    reproduced: Verdict
    fixed: Verdict
    seconds: float = 0.0
    skipped: bool = False
    logs: dict[str, RunLog] = field(default_factory=dict)
    mismatches: list[str] = field(default_factory=list)
    attempts: dict[str, int] = field(default_factory=dict)
    faults: dict[str, list[str]] = field(default_factory=dict)
    infrastructure: bool = False
    inputs: str | None = None
    kept: bool = False  # taken from an earlier report, not run again
    sandbox: str | None = None  # where its notebooks ran (``bwrap, network off``)
    unfinished: str | None = None  # INTERRUPTED or NOT_RUN: a stopped run did not finish it

    @classmethod
    def left(cls, case_id: str, state: str, why: str) -> CaseResult:
        """A case a stopped run did not finish (``state`` and ``why``: :func:`unfinished`)."""
        verdict = Verdict(False, f"{state}: {why}")
        return cls(case_id, verdict, verdict, unfinished=state)

    @property
    def status(self) -> str:
        if self.unfinished is not None:
            return self.unfinished
        if self.infrastructure:
            return INFRASTRUCTURE
        if self.skipped:
            return SKIPPED
        if self.reproduced.ok and self.fixed.ok:
            return PASSED
        if any(v.reason.startswith("timed out") for v in (self.reproduced, self.fixed)):
            return TIMED_OUT
        if any(v.reason.startswith(OUT_OF_MEMORY) for v in (self.reproduced, self.fixed)):
            return OUT_OF_MEMORY
        return FAILED

    @property
    def passed(self) -> bool:
        return self.status == PASSED

    def to_json(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "reproduced": {"ok": self.reproduced.ok, "reason": self.reproduced.reason,
                           "exception": self.reproduced.exception, "cell": self.reproduced.cell},
            "fixed": {"ok": self.fixed.ok, "reason": self.fixed.reason},
            "seconds": round(self.seconds, 3),
            "mismatches": self.mismatches,
            "inputs": self.inputs,
            "attempts": self.attempts,
            "faults": self.faults,
            "sandbox": self.sandbox,
        }

    @classmethod
    def from_json(cls, case_id: str, entry: dict[str, Any]) -> CaseResult:
        """A result read back from a report (its replays' logs are not kept)."""
        reproduced, fixed = entry["reproduced"], entry["fixed"]
        return cls(case_id, Verdict(bool(reproduced["ok"]), str(reproduced["reason"]), reproduced.get("exception"),
                                    reproduced.get("cell")),
                   Verdict(bool(fixed["ok"]), str(fixed["reason"])), float(entry.get("seconds") or 0.0),
                   skipped=entry.get("status") == SKIPPED, mismatches=list(entry.get("mismatches") or []),
                   attempts=dict(entry.get("attempts") or {}), faults=dict(entry.get("faults") or {}),
                   infrastructure=entry.get("status") == INFRASTRUCTURE, inputs=entry.get("inputs"), kept=True,
                   sandbox=entry.get("sandbox"),
                   unfinished=entry["status"] if entry.get("status") in (INTERRUPTED, NOT_RUN) else None)

    def row(self) -> dict[str, Any]:
        failed = self.status in (FAILED, TIMED_OUT)
        return {"case_id": self.case_id, "status": self.status,
                "reproduced": self.reproduced.reason, "fixed": self.fixed.reason,
                "environment": self.mismatches if failed else [], "sandbox": self.sandbox or "",
                "seconds": self.seconds}


@dataclass
class VerifyReport:
    """All cases of one ``verify`` run, in the order they were asked for."""

    cases: list[CaseResult]
    seconds: float = 0.0
    jobs: int = 1
    environment: dict[str, Any] | None = None
    executor: str | None = None
    stopped: str | None = None  # why the run stopped early (a lost cluster): the rest are infrastructure errors

    @property
    def ok(self) -> bool:
        """True when every case passed (a skipped case does not pass)."""
        return bool(self.cases) and all(c.passed for c in self.cases) and self.stopped is None

    def __iter__(self) -> Iterator[CaseResult]:
        return iter(self.cases)

    def __len__(self) -> int:
        return len(self.cases)

    def __getitem__(self, case_id: str) -> CaseResult:
        for case in self.cases:
            if case.case_id == case_id:
                return case
        raise KeyError(case_id)

    def counts(self) -> dict[str, int]:
        return dict(Counter(case.status for case in self.cases))

    def summary(self) -> str:
        """``8 cases: 7 passed, 1 failed (41.2 s, local, 2 jobs)``, then where the kernels ran and
        what they did not meet of the environment."""
        parts = ", ".join(f"{n} {status}" for status, n in self.counts().items())
        kept = sum(case.kept for case in self)
        again = f"; {kept} kept from the report" if kept else ""
        text = f"{len(self.cases)} cases: {parts} ({self.seconds:.1f} s, {self.executor or f'{self.jobs} jobs'}{again})"
        env = self.environment
        if env:
            where = (f"{env.get('env_name') or 'the environment'} at {env['env_dir']}" if env.get("env_dir")
                     else "junobench's own interpreter")
            text += f"\nkernels ran in {where} (Python {env['python']})"
            unmet = ([env["python_mismatch"]] if env.get("python_mismatch") else []) + [
                f"{n} {p['installed'] or 'not installed'} (pinned {p['pinned']})"
                for n, p in env["packages"].items() if n in env.get("unmet", []) and p["installed"]]
            if unmet:
                text += f"; not as the benchmark pins: {', '.join(unmet[:8])}"
                text += f", … (+{len(unmet) - 8})" if len(unmet) > 8 else ""
        return text

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"environment": self.environment,
                "cases": {case.case_id: case.to_json() for case in self.cases}}
        if self.stopped is not None:
            data["stopped"] = self.stopped
        return data

    def rows(self) -> list[dict[str, Any]]:
        return [case.row() for case in self.cases]

    def write(self, path: str | Path) -> None:
        """Write the JSON report atomically (a failed write keeps the previous file)."""
        with atomic_open(path) as out:
            json.dump(self.to_json(), out, indent=2, ensure_ascii=False)
            out.write("\n")


class Interrupted(KeyboardInterrupt):
    """A run stopped by Ctrl-C (SIGINT, or SIGTERM and SIGHUP on the command line):
    ``report`` holds every case, those it did not finish ``interrupted`` or ``not run``."""

    def __init__(self, report: VerifyReport) -> None:
        super().__init__()
        self.report = report


class RunFailed(JunoBenchError):
    """A run that could not go on (a Ray cluster it cannot join): the error, and in
    ``report`` every case, those it did not finish ``interrupted`` or ``not run``."""

    def __init__(self, error: JunoBenchError, report: VerifyReport) -> None:
        problem = error.problem_
        super().__init__(problem.problem, file=problem.file, case=problem.case, hint=problem.hint)
        self.report = report
