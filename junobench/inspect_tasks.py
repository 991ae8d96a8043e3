"""JunoBench's crash detection as an Inspect task: ``junobench/crash_detection``.

Installed with the ``inspect`` extra, the task is registered with Inspect (the
``inspect_ai`` entry point of this package), so any Inspect model provider runs the
papers' protocol::

    inspect eval junobench/crash_detection --model openai/gpt-4o-mini -T source=sample
    inspect eval junobench/crash_detection --model vllm/Qwen/Qwen2.5-Coder-32B-Instruct \\
        -T library=torch,pandas -T runs=5 --temperature 0.01

Each notebook is one sample whose input is the built-in prompt (:mod:`~junobench.detection.prompt`: system
message and user message, as ``junobench detect`` sends them) and whose target is
``true`` (crash, a reproduced notebook) or ``false`` (fixed). The sample id is the
instance; the model never sees it. ``runs`` is the number of epochs, as the papers asked
each model 5 times. The scorer reads each answer as the papers did
(:func:`~junobench.detection.predictions.parse_run`: the JSON object, a bare TRUE/FALSE,
nothing guessed), and the ``crash_majority`` reducer votes the epochs' detections into
one decision per notebook (:func:`~junobench.detection.votes.vote`: a tie is no crash,
as in the papers; a notebook without any parsable answer counts as wrong in Inspect's
accuracy and is left out of precision, recall and F1). Metrics: accuracy with its
standard error, and precision, recall and F1 with crash as the positive class.

With ``judge`` (an Inspect model name, or ``self``), every answer is also judged by
CRANE-LLM's LLM-judge protocol (:mod:`~junobench.diagnosis.inspect_judge`: ``judge_passes`` passes, the
ground-truth diagnosis from the sample's metadata), reduced over the epochs as CRANE-LLM
reduces its runs; its end-to-end accuracy and the partially correct and reasoning-wrong
counts are the judge scorer's metrics.

The log is a predictions file: ``junobench evaluate LOG.eval`` reads each sample's
answers per epoch as its runs and scores them with any vote, intervals and comparisons.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from inspect_ai import Epochs, Task, task
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.scorer import (
    CORRECT,
    INCORRECT,
    Metric,
    SampleScore,
    Score,
    Scorer,
    ScoreReducer,
    Target,
    accuracy,
    metric,
    score_reducer,
    scorer,
    stderr,
)
from inspect_ai.solver import TaskState, generate

from junobench.detection import prompt
from junobench.detection.metrics import Confusion, confusion
from junobench.detection.names import DEFAULT_RUNS
from junobench.detection.predictions import parse_run
from junobench.detection.tasks import CASE_LABELS, tasks
from junobench.detection.votes import vote
from junobench.diagnosis.inspect_judge import chat_messages, diagnosis_judge, reduce_judged
from junobench.diagnosis.judge import DEFAULT_REPEATS

#: Case labels copied into each sample's metadata (for Inspect's log viewer and analysis).
SAMPLE_LABELS: tuple[str, ...] = (*CASE_LABELS, "diagnosis")


@task
def crash_detection(
    source: str = "PELAB-LiU/JunoBench",
    library: str | Sequence[str] | None = None,
    root_cause: str | Sequence[str] | None = None,
    crash_type: str | Sequence[str] | None = None,
    stage: str | Sequence[str] | None = None,
    origin: str | Sequence[str] | None = None,
    runtime_info: str | None = None,
    runtime_exclude: str | Sequence[str] | None = None,
    keep_comments: bool = False,
    runs: int = DEFAULT_RUNS,
    revision: str | None = None,
    crane_inputs: str | None = None,
    judge: str | None = None,
    judge_passes: int = DEFAULT_REPEATS,
    judge_reverse: bool = False,
) -> Task:
    """Crash detection on JunoBench's reproduced and fixed notebooks.

    Args:
        source: snapshot directory, ``sample``, or Hub dataset repo id.
        library: library filter (comma-separated or a list), e.g. ``torch,pandas``.
        root_cause: root-cause filter, e.g. ``API misuse``.
        crash_type: crash-type filter, e.g. ``key error``.
        stage: ML pipeline stage filter, e.g. ``training``.
        origin: ``labeled in empirical study`` or ``newly sampled``.
        runtime_info: runtime-information file written by ``junobench runtime-info``
            (the prompt then has its Runtime Information section).
        runtime_exclude: runtime-information categories to leave out (``S``, ``R``, ``V``).
        keep_comments: keep code comments (the papers stripped them).
        runs: answers per notebook (epochs), voted by majority.
        revision: Hub revision of ``source``.
        crane_inputs: a folder of CRANE-LLM's published inputs: each prompt is the
            notebook's input as published (``junobench tasks --crane-inputs``).
        judge: also judge each answer's diagnosis with this model (``self``: the model
            under test), CRANE-LLM's protocol.
        judge_passes: judge passes per answer.
        judge_reverse: the reversed protocol (the answer before the ground truth).
    """
    from junobench.detection.augment import runtime_texts_for, task_style

    texts = runtime_texts_for(runtime_info, _values(runtime_exclude) or [])
    filters: dict[str, str | Iterable[str] | None] = {
        "library": _values(library), "root_cause": _values(root_cause),
        "crash_type": _values(crash_type), "pipeline_stage": _values(stage),
        "origin": _values(origin)}
    items, truths = tasks(source, keep_comments=keep_comments, runtime_info=texts,
                          revision=revision, crane_inputs=crane_inputs,
                          style=task_style(runtime_info), library=filters["library"],
                          root_cause=filters["root_cause"], crash_type=filters["crash_type"],
                          pipeline_stage=filters["pipeline_stage"], origin=filters["origin"])
    samples = [_sample(item, truth) for item, truth in zip(items, truths, strict=True)]
    return Task(
        dataset=MemoryDataset(samples, name="junobench", location=str(source)),
        solver=generate(),
        scorer=[crash_scorer()] + ([diagnosis_judge(judge, int(judge_passes),
                                                     bool(judge_reverse))] if judge else []),
        epochs=Epochs(int(runs), crash_majority()),
        metadata={"source": str(source), "filters": {k: v for k, v in filters.items() if v},
                  "runtime_info": runtime_info},
    )


def _values(value: str | Sequence[str] | None) -> list[str] | None:
    """A filter value from Inspect's ``-T`` (a comma-separated string) or from Python."""
    if value is None:
        return None
    if isinstance(value, str):
        return [part.strip() for part in value.split(",") if part.strip()] or None
    return [str(v) for v in value] or None


def _sample(item: dict[str, Any], truth: dict[str, Any]) -> Sample:
    return Sample(id=str(truth["instance"]), input=chat_messages(prompt.messages(item)),
                  target="true" if truth["crash"] else "false",
                  metadata={k: truth.get(k) for k in SAMPLE_LABELS})


# --------------------------------------------------------------------------- scoring


@score_reducer(name="crash_majority")
def crash_majority() -> ScoreReducer:
    """The epochs' detections voted into one (majority of the parsable answers; a tie is
    no crash), scored against the label; the judge's scores reduced by
    :func:`~junobench.diagnosis.inspect_judge.reduce_judged`."""

    def reduce(scores: list[Score]) -> Score:
        if scores and "judge_labels" in (scores[0].metadata or {}):
            return reduce_judged(scores)  # the judge's scores: CRANE-LLM's reduction
        detections = [d for s in scores for d in (s.metadata or {}).get("votes", [None])]
        truth = bool((scores[0].metadata or {}).get("truth")) if scores else False
        decided = vote(detections, "majority")
        return _score(truth, decided[0] if decided else None, detections,
                      explanation=f"{len(decided)} decision from {len(detections)} answers")

    return reduce


def _score(truth: bool, detection: bool | None, votes: list[bool | None], *,
           explanation: str | None) -> Score:
    return Score(value=CORRECT if detection is not None and detection == truth else INCORRECT,
                 answer=None if detection is None else str(detection).lower(),
                 explanation=explanation,
                 metadata={"truth": truth, "detection": detection, "votes": votes})


def _confusion(scores: Iterable[SampleScore]) -> Confusion:
    pairs = []
    for sample_score in scores:
        data = sample_score.score.metadata or {}
        if data.get("detection") is not None:
            pairs.append((bool(data.get("truth")), bool(data["detection"])))
    return confusion(pairs)


def _crash_score(name: str) -> Metric:
    def compute(scores: list[SampleScore]) -> float:
        return _confusion(scores).score(name) or 0.0

    return compute


@metric
def precision() -> Metric:
    """Crash precision of the decided notebooks."""
    return _crash_score("precision")


@metric
def recall() -> Metric:
    """Crash recall of the decided notebooks."""
    return _crash_score("recall")


@metric
def f1() -> Metric:
    """Crash F1 of the decided notebooks."""
    return _crash_score("f1")


@scorer(metrics=[accuracy(), stderr(), precision(), recall(), f1()])
def crash_scorer() -> Scorer:
    """One answer read as the papers read it: correct when its detection is the label."""

    async def score(state: TaskState, target: Target) -> Score:
        truth = target.text.strip().lower() == "true"
        verdict = parse_run(state.output.completion)
        return _score(truth, verdict.detection, [verdict.detection],
                      explanation=verdict.problem or verdict.reasoning)

    return score
