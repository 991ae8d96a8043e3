"""CRANE-LLM's LLM judge as an Inspect scorer: ``diagnosis_judge``.

Run the crash-detection task with a judge (``-T judge=openai/gpt-5`` or any Inspect model;
``-T judge=self`` lets the detector judge itself) and every answer (one per epoch) is
judged ``judge_passes`` times with the protocol of :mod:`.judge` (the ground truth, then
the answer; ``-T judge_reverse=true`` for the reversed order). The epochs are reduced as
CRANE-LLM reduces its runs: per judge pass the majority over the epochs, then the
majority over the passes (:func:`~junobench.diagnosis.judge.reduce_passes`). The score's
value is the outcome (``correct``, ``partially correct``, ``reasoning wrong``, ``wrong``);
the metrics are the end-to-end accuracy (share ``correct``) and the partially correct and
reasoning-wrong counts. :func:`judgments_from_log` reads a log's reduced outcomes as
:class:`~junobench.diagnosis.judgments.Judgments` for ``evaluate --judgments``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from inspect_ai.model import ChatMessage, ChatMessageSystem, ChatMessageUser, get_model
from inspect_ai.scorer import Metric, SampleScore, Score, Scorer, Target, metric, scorer
from inspect_ai.solver import TaskState

from junobench.diagnosis.judge import (
    DEFAULT_REPEATS,
    answer_of,
    counted,
    majority,
    messages,
    parse_label,
    reduce_passes,
)
from junobench.diagnosis.judgments import CORRECT, PARTIALLY_CORRECT, REASONING_WRONG, Judgments
from junobench.errors import JunoBenchError

#: The scorer's name in Inspect logs.
NAME = "diagnosis_judge"
UNVERIFIED = "unverified"


def chat_messages(messages: Sequence[Mapping[str, str]]) -> list[ChatMessage]:
    """Chat-completions messages (``{"role": "system" or "user", "content"}``) as
    Inspect's."""
    kinds = {"system": ChatMessageSystem, "user": ChatMessageUser}
    return [kinds[message["role"]](content=message["content"]) for message in messages]


def _count(outcome: str) -> Metric:
    def compute(scores: list[SampleScore]) -> float:
        return float(sum(s.score.value == outcome for s in scores))

    return compute


@metric
def end_to_end_accuracy() -> Metric:
    """Share of notebooks judged ``correct`` (detection and diagnosis right)."""

    def compute(scores: list[SampleScore]) -> float:
        return sum(s.score.value == CORRECT for s in scores) / len(scores) if scores else 0.0

    return compute


@metric
def partially_correct() -> Metric:
    """Notebooks whose diagnosis was judged partially correct."""
    return _count(PARTIALLY_CORRECT)


@metric
def reasoning_wrong() -> Metric:
    """Notebooks whose crash was detected for a wrong reason."""
    return _count(REASONING_WRONG)


@scorer(metrics=[end_to_end_accuracy(), partially_correct(), reasoning_wrong()], name=NAME)
def diagnosis_judge(model: str | None = None, passes: int = DEFAULT_REPEATS,
                    reverse: bool = False) -> Scorer:
    """Judge one answer ``passes`` times with ``model`` (default: the model under test)."""

    async def score(state: TaskState, target: Target) -> Score:
        grader = get_model(None if model in (None, "", "self") else model)
        crash = target.text.strip().lower() == "true"
        truth = {"crash": crash, "diagnosis": (state.metadata or {}).get("diagnosis")}
        answer = answer_of(state.output.completion)
        labels: list[str | None] = []
        for _ in range(passes):
            reply = await grader.generate(chat_messages(messages(truth, answer, reverse=reverse)))
            labels.append(counted(parse_label(reply.completion), crash))
        judged = majority(labels)
        return Score(value=judged or UNVERIFIED, answer=judged,
                     metadata={"judge_labels": labels, "truth": crash})

    return score


def reduce_judged(scores: list[Score]) -> Score:
    """The epochs' judge labels reduced: per pass the majority over the epochs, then over
    the passes."""
    if not scores:
        return Score(value=UNVERIFIED, answer=None, metadata={"judge_labels": [], "truth": None})
    per_epoch: list[list[str | None]] = [list((s.metadata or {}).get("judge_labels") or [])
                                         for s in scores]
    passes = max(len(labels) for labels in per_epoch)
    by_pass = [[labels[p] if p < len(labels) else None for labels in per_epoch]
               for p in range(passes)]
    judged = reduce_passes(by_pass)
    return Score(value=judged or UNVERIFIED, answer=judged,
                 metadata={"judge_labels": by_pass, "truth": (scores[0].metadata or {}).get("truth")})


def judgments_from_log(path: str | Path, setting: str) -> Judgments:
    """The reduced outcomes of ``diagnosis_judge`` in an Inspect log, as ``setting``'s
    judgments (notebooks the judge could not judge are left out)."""
    from junobench.detection.layouts import eval_log

    log = eval_log(path, hint=None)
    reductions = [r for r in (log.reductions or []) if r.scorer == NAME]
    if not reductions:
        raise JunoBenchError(f"the log has no {NAME} scores", file=path,
                             hint="run the task with -T judge=MODEL")
    out = Judgments(path=Path(path))
    for sample in reductions[0].samples:
        value: Any = sample.value
        if isinstance(value, str) and value != UNVERIFIED:
            out.add(setting, str(sample.sample_id), value)
    return out
