"""The LLM judge of diagnoses, as CRANE-LLM ran it, and its agreement with the humans.

Protocol. Every run of a detector on a notebook is judged on its own: the judge model is
shown the ground truth (whether the target cell crashes and, if it does, the benchmark's
diagnosis) and then the run's answer (detection and reasoning), and answers with one
label: ``[Correct]``, ``[Partially correct]``, ``[Reasoning Wrong]`` or ``[Wrong]``
(:data:`LABELS`; an answer without one is kept as ``Cannot verify: …`` and not counted).
A notebook's labels of one judge pass are reduced by majority to one outcome, the
outcomes of the ``repeats`` passes (CRANE-LLM's ``results_parsed_1`` … ``_5``) again by
majority; a tie goes to the label seen first. The *reversed* protocol shows the answer
before the ground truth (CRANE-LLM's ``results_parsed_reversed_<k>``), to check that the
order does not sway the judge.

:func:`judge` asks a model behind an OpenAI-compatible endpoint through the ``openai`` SDK
(the ``detect`` extra), ``concurrency`` requests at a time, appending one line per
(notebook, pass) to a JSON Lines file that a second run resumes; :func:`judgments_from`
reduces such a file, :func:`read_judged_folders` CRANE-LLM's published folders, to
:class:`~junobench.diagnosis.judgments.Judgments`. :func:`judge_agreement` sets the
judge's judgments beside the humans' per model, with the published figures
(``llm_judge_statistics.xlsx``: mismatches ``F`` and accuracy, without and with runtime
information) beside them.

>>> parse_label("The diagnosis names the wrong column. [Partially correct]")
'partially correct'
>>> reduce_passes([["correct", "wrong", "correct"], ["wrong", "wrong", "correct"]])
'correct'
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from junobench import jsonl, vocab
from junobench.detection import client as models
from junobench.detection.client import Job, Summary
from junobench.diagnosis.judgments import OUTCOMES, Judgments, outcome
from junobench.errors import JunoBenchError

if TYPE_CHECKING:
    from openai import AsyncOpenAI

#: The labels the judge answers with, in CRANE-LLM's spelling.
LABELS: tuple[str, ...] = ("[Correct]", "[Partially correct]", "[Reasoning Wrong]", "[Wrong]")
DEFAULT_REPEATS = 5
#: The outcomes that apply to a fixed notebook; other labels on one are not counted.
FIXED_OUTCOMES: tuple[str, ...] = ("correct", "wrong")
UNVERIFIED = "Cannot verify: "
_LABEL = re.compile(r"\[\s*(" + "|".join(OUTCOMES) + r")\s*\]", re.IGNORECASE)
#: Folders of CRANE-LLM's judge passes (normal protocol), per judged tree.
PASS_FOLDER = re.compile(r"^results_parsed(_(\d+))?$")

SYSTEM = (
    "You judge a crash prediction for a Jupyter notebook cell against the ground truth. "
    "Answer with exactly one label:\n"
    "[Correct]: the prediction's detection matches the ground truth and, when the cell "
    "crashes, its explanation names the same cause as the ground-truth diagnosis;\n"
    "[Partially correct]: the cell crashes, the prediction detects it, and its explanation "
    "is right only in part;\n"
    "[Reasoning Wrong]: the cell crashes, the prediction detects it, but for a wrong reason;\n"
    "[Wrong]: the prediction's detection does not match the ground truth.\n"
    "When the cell does not crash, only [Correct] and [Wrong] apply. End your answer with "
    "the label."
)


def messages(truth: Mapping[str, Any], prediction: Mapping[str, Any], *,
             reverse: bool) -> list[dict[str, str]]:
    """The judge's request for one run: ground truth first (prediction first with
    ``reverse``)."""
    crash = bool(truth["crash"])
    truth_text = ("Ground truth: the target cell crashes.\nGround-truth diagnosis: "
                  + str(truth.get("diagnosis") or "(none given)") if crash
                  else "Ground truth: the target cell does not crash.")
    detection = prediction.get("detection")
    said = ("crashes" if detection is True else "does not crash" if detection is False
            else "(no detection given)")
    prediction_text = (f"Prediction: the target cell {said}.\nPredicted reasoning: "
                       + str(prediction.get("reasoning") or "(none given)"))
    parts = [prediction_text, truth_text] if reverse else [truth_text, prediction_text]
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": "\n\n".join(parts)}]


def answer_of(run: Any) -> dict[str, Any]:
    """What the judge is shown of one run (:func:`messages`): its detection and its
    reasoning, or the run's whole text when no reasoning can be read from it."""
    from junobench.detection.predictions import parse_run

    verdict = parse_run(run)
    return {"detection": verdict.detection,
            "reasoning": verdict.reasoning or (run if isinstance(run, str) else "")}


def counted(label: str | None, crash: bool) -> str | None:
    """``label`` when it applies to the notebook (on a fixed one only
    :data:`FIXED_OUTCOMES`: no crash, no diagnosis to grade), else None."""
    return label if crash or label in FIXED_OUTCOMES else None


def parse_label(text: str) -> str | None:
    """The outcome of a judge's answer: its last bracketed label, or None."""
    found = _LABEL.findall(text or "")
    return outcome(found[-1]) if found else None


def majority(labels: Iterable[str | None]) -> str | None:
    """The most frequent outcome among ``labels`` (unreadable ones left out), a tie to the
    one seen first; None when none is readable."""
    counts = Counter(label for label in labels if label is not None)
    return max(counts, key=counts.__getitem__) if counts else None  # (the first of the most)


def reduce_passes(passes: Sequence[Sequence[str | None]]) -> str | None:
    """One notebook's outcome: the majority of each pass's majority."""
    return majority(majority(labels) for labels in passes)


# --------------------------------------------------------------------------- published folders


def read_judged_folders(root: str | Path, *, passes: Sequence[str] | None = None) -> Judgments:
    """Judgments from CRANE-LLM's judged folders under ``root`` (its ``llms/llms_outputs``
    or ``sas/sas_outputs``): ``<pass>/<model>/<setting>/[…/]<instance>.json``, each a list
    of judge labels, for the passes named (default: every ``results_parsed[_<k>]``; the
    reversed protocol's folders, ``results_parsed_reversed[_<k>]``, only when named).
    Settings are named ``<model>_<setting>``, as in CRANE-LLM's sheets."""
    from junobench.detection.layouts import runs_file

    root = Path(root)
    if not root.is_dir():
        raise JunoBenchError("not a folder of judged outputs", file=root,
                             hint="pass CRANE-LLM's llms/llms_outputs or sas/sas_outputs")
    chosen = list(passes) if passes else sorted(
        (p.name for p in root.iterdir() if p.is_dir() and PASS_FOLDER.match(p.name)),
        key=lambda name: (len(name), name))
    if not chosen:
        raise JunoBenchError("no results_parsed[_<k>] folder", file=root,
                             hint="pass CRANE-LLM's llms/llms_outputs or sas/sas_outputs")
    labels: dict[str, dict[str, list[list[str | None]]]] = {}
    for name in chosen:
        folder = root / name
        if not folder.is_dir() or folder.is_symlink():
            raise JunoBenchError("no such pass folder", file=folder)
        for model in sorted(p for p in folder.iterdir() if p.is_dir() and not p.is_symlink()):
            for setting in sorted(p for p in model.iterdir() if p.is_dir() and not p.is_symlink()):
                key = f"{model.name}_{setting.name}"
                for file in _json_tree(setting):
                    instance = file.stem
                    if not vocab.is_instance(instance):
                        raise JunoBenchError("file name does not name a notebook", file=file,
                                             hint="<case>_reproduced.json or <case>_fixed.json")
                    runs = runs_file(file, instance)
                    read = [parse_label(r) if isinstance(r, str) else None for r in runs]
                    labels.setdefault(key, {}).setdefault(instance, []).append(read)
    return _reduced(labels, root)


def _json_tree(folder: Path) -> list[Path]:
    from junobench.detection.layouts import regular_files

    files = regular_files(folder, "*.json")
    for child in sorted(folder.iterdir()):
        if child.is_dir() and not child.is_symlink():
            files += _json_tree(child)
    return files


def _reduced(labels: Mapping[str, Mapping[str, list[list[str | None]]]], path: Path) -> Judgments:
    out = Judgments(path=path)
    for setting, notebooks in labels.items():
        for instance, passes in notebooks.items():
            crash = vocab.split_instance(instance)[1] == "reproduced"
            judged = reduce_passes([[counted(x, crash) for x in p] for p in passes])
            if judged is not None:
                out.add(setting, instance, judged)
    return out


# --------------------------------------------------------------------------- running the judge


def judge(
    predictions: str | Path | Any,
    truth: Mapping[str, Mapping[str, Any]],
    out: str | Path,
    *,
    setting: str,
    endpoint: str,
    model: str,
    truth_rows: Sequence[Mapping[str, Any]] | None = None,
    repeats: int = DEFAULT_REPEATS,
    reverse: bool = False,
    concurrency: int = 1,
    temperature: float | None = None,
    max_tokens: int | None = None,
    api_key_env: str = models.DEFAULT_API_KEY_ENV,
    retries: int = models.DEFAULT_RETRIES,
    timeout: float = models.DEFAULT_TIMEOUT,
    progress: bool = False,
    log: Callable[[str], None] | None = None,
    client: AsyncOpenAI | None = None,
) -> Summary:
    """Judge every run of ``predictions`` (any layout) ``repeats`` times; append
    ``{"setting", "instance", "pass", "labels"}`` lines to ``out`` (one per notebook and
    pass, keyed ``<instance> pass <k>`` in the summary; those already there are skipped).
    ``truth``: instance → ``{"crash", "diagnosis"}``; ``truth_rows`` (a ground-truth
    file's rows) map blind task ids to instances. The requests go as ``detect``'s do
    (:func:`junobench.detection.client.run_jobs`)."""
    from junobench.detection.evaluate import resolve_ids
    from junobench.detection.layouts import read_predictions
    from junobench.safety.atomic import check_append_target

    if repeats < 1:
        raise JunoBenchError("--repeats must be at least 1")
    if not setting.strip():
        raise JunoBenchError("name the setting the predictions are of (--setting)")
    where = models.Endpoint(endpoint, models.ChatSettings(model, temperature, max_tokens), concurrency,
                     api_key_env, retries, timeout)
    where.check()
    preds = read_predictions(predictions)
    resolved, origin = resolve_ids(preds, truth_rows)
    unknown = [i for i in resolved if i not in truth]
    if unknown:
        raise JunoBenchError("no ground truth for this notebook", case=unknown[0],
                             file=origin.get(unknown[0], str(preds.path)),
                             hint="pass the --source (or --truth) the predictions were made on")
    out = check_append_target(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    done = finished(out)
    summary = Summary(out)
    jobs: list[Job] = []
    for instance, runs in resolved.items():
        requests = [messages(truth[instance], answer_of(run), reverse=reverse) for run in runs]
        for number in range(1, repeats + 1):
            key = f"{instance} pass {number}"
            if (setting, instance, number) in done:
                summary.resumed.append(key)
            else:
                jobs.append(Job(key, requests))

    def line(job: Job, texts: list[str]) -> str:
        instance, _, number = job.key.rpartition(" pass ")
        return jsonl.json_line({"setting": setting, "instance": instance, "pass": int(number),
                                "labels": [_label_text(text) for text in texts]})

    models.run_jobs(jobs, out, where, line, summary, progress=progress, desc="judge", log=log,
                    client=client)
    return summary


def _label_text(text: str) -> str:
    """How a judge's answer is kept: its label, or what it said when it gave none."""
    label = parse_label(text)
    return LABELS[OUTCOMES.index(label)] if label else UNVERIFIED + " ".join(text.split())[:200]


def finished(out: Path) -> set[tuple[str, str, int]]:
    """(setting, instance, pass) already in a labels file (a cut-short last line is
    dropped from the file; any other broken line is an error)."""
    return set(_read_labels(out, repair=True))


def _read_labels(path: Path, *, repair: bool = False
                 ) -> dict[tuple[str, str, int], list[str | None]]:
    if not path.exists():
        return {}
    out: dict[tuple[str, str, int], list[str | None]] = {}
    first: dict[tuple[str, str, int], int] = {}
    for number, record in jsonl.read_jsonl(path, what="judge's labels", resume=repair,
                                           problem_of=_labels_problem,
                                           hint="pass another --out, or repair the file"):
        key = (record["setting"], record["instance"], record["pass"])
        if key in first:  # the last line must not silently win over the first
            raise JunoBenchError(f"line {number}: setting {key[0]!r}, pass {key[2]} judges this "
                                 f"notebook again (first at line {first[key]})", file=path,
                                 case=key[1], hint="keep one line per setting, notebook and pass")
        first[key] = number
        out[key] = [parse_label(x) if isinstance(x, str) else None for x in record["labels"]]
    return out


def _labels_problem(record: Any) -> str | None:
    try:
        if isinstance(record["setting"], str) and isinstance(record["instance"], str) \
                and isinstance(record["pass"], int) and not isinstance(record["pass"], bool) \
                and isinstance(record["labels"], list):
            vocab.split_instance(record["instance"])
            return None
    except (ValueError, KeyError, TypeError):
        pass
    return "not a judge's labels line"


def judgments_from(paths: str | Path | Sequence[str | Path]) -> Judgments:
    """The judgments of one or more labels files written by :func:`judge`."""
    labels: dict[str, dict[str, list[list[str | None]]]] = {}
    first: Path | None = None
    for path in [paths] if isinstance(paths, (str, Path)) else paths:
        path = Path(path)
        first = first or path
        if not path.exists():
            raise JunoBenchError("no such labels file", file=path)
        for (setting, instance, _), read in sorted(_read_labels(path).items()):
            labels.setdefault(setting, {}).setdefault(instance, []).append(read)
    return _reduced(labels, first or Path("."))


# --------------------------------------------------------------------------- against the humans


def _key(text: str) -> str:
    return re.sub(r"[^0-9a-z]", "", text.lower())


@dataclass(frozen=True)
class JudgeRow:
    """The judge against the humans on one model: per input (without runtime
    information, ``-RT``, and with, ``+RT``) the mismatches and the accuracy."""

    model: str
    mismatches: dict[str, int]
    accuracy: dict[str, float]
    notebooks: dict[str, int]


def judge_agreement(judge_judgments: Judgments, human: Judgments) -> list[JudgeRow]:
    """Per model, the judge's mismatches with the human judgments and its accuracy, over
    the notebooks the humans judged (one the judge could not judge, all its labels
    unreadable, is a mismatch, as CRANE-LLM counted it), for
    ``<model>_crash_detection_code`` (``-RT``) and ``…_runinfo`` (``+RT``); other settings
    count as ``-RT`` of themselves."""
    rows: dict[str, dict[str, dict[str, Any]]] = {}
    for setting, judged in judge_judgments.settings.items():
        if setting not in human.settings:
            continue
        people = human.settings[setting]
        shared = list(people)
        if not shared:
            continue
        kind = "+RT" if setting.endswith("_runinfo") else "-RT"
        model = setting.removesuffix("_runinfo").removesuffix("_crash_detection_code")
        wrong = sum(judged.get(i) != people[i] for i in shared)
        rows.setdefault(model, {})[kind] = {"F": wrong, "n": len(shared)}
    if not rows:
        raise JunoBenchError("the judge and the humans share no setting", file=human.path,
                             hint="judge settings: " + ", ".join(judge_judgments.settings))
    return [JudgeRow(model, {k: v["F"] for k, v in kinds.items()},
                     {k: (v["n"] - v["F"]) / v["n"] for k, v in kinds.items()},
                     {k: v["n"] for k, v in kinds.items()}) for model, kinds in rows.items()]


def read_judge_statistics(path: str | Path) -> dict[str, dict[str, Any]]:
    """CRANE-LLM's ``llm_judge_statistics.xlsx``: model → ``F (-RT)``, ``Accuracy (-RT)``,
    ``F (+RT)``, ``Accuracy (+RT)``."""
    from junobench.data.tables import read_table

    table = read_table(path)
    table.require(["LLM as a Judge", "F (-RT)", "Accuracy (-RT)"], hint="pass CRANE-LLM's "
                  "results/llm_judge_statistics.xlsx")
    def number(value: Any) -> Any:
        return int(value) if isinstance(value, float) and value.is_integer() else value

    return {str(r["LLM as a Judge"]): {k: number(v) for k, v in r.items()}
            for r in table.records() if r.get("LLM as a Judge")}


def side_by_side(rows: Sequence[JudgeRow], published: Mapping[str, Mapping[str, Any]] | None
                 ) -> list[dict[str, Any]]:
    """One row per model: measured mismatches and accuracy, and the published ones."""
    by_key = {_key(name): values for name, values in (published or {}).items()}
    out = []
    for row in rows:
        line: dict[str, Any] = {"model": row.model}
        theirs = by_key.get(_key(row.model), {})
        for kind in ("-RT", "+RT"):
            line[f"F ({kind})"] = row.mismatches.get(kind)
            line[f"accuracy ({kind})"] = row.accuracy.get(kind)
            if published is not None:
                line[f"published F ({kind})"] = theirs.get(f"F ({kind})")
                line[f"published accuracy ({kind})"] = theirs.get(f"Accuracy ({kind})")
        out.append(line)
    return out
