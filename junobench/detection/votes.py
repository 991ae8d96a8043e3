"""Turning a detector's runs on one notebook into its decision(s).

- ``majority`` (default): crash when more than half of the parsable runs say crash; a tie
  counts as no crash (the papers' rule: when not certain, no crash).
- ``first-valid``: the first parsable run.
- ``all-runs``: every parsable run is scored on its own.

An instance whose runs are all unparsable gets no decision.

>>> vote([True, False, None, True], "majority"), vote([True, False], "majority")
([True], [False])
>>> vote([None, False, True], "first-valid"), vote([None, None], "first-valid")
([False], [])
>>> vote([True, None, False], "all-runs")
[True, False]
"""

from __future__ import annotations

from collections.abc import Sequence

from junobench.errors import JunoBenchError

VOTES: tuple[str, ...] = ("majority", "first-valid", "all-runs")
DEFAULT_VOTE = "majority"


def vote(detections: Sequence[bool | None], method: str = DEFAULT_VOTE) -> list[bool]:
    """The decisions ``method`` takes from one instance's runs (None = unparsable run)."""
    check_vote(method)
    valid = [d for d in detections if d is not None]
    if method == "majority":
        return [2 * sum(valid) > len(valid)] if valid else []
    return valid[:1] if method == "first-valid" else valid


def check_vote(method: str) -> None:
    """Refuse a ``method`` that is not one of :data:`VOTES`."""
    if method not in VOTES:
        raise JunoBenchError(f"unknown vote {method!r}", hint=f"use one of {', '.join(VOTES)}")
