"""Score crash-detection predictions against JunoBench's labels.

predictions (any layout) → runs parsed → vote per instance → confusion matrices → report.
:func:`score` is pure (labels and raw runs in, :class:`Report` out); :func:`evaluate` reads
the predictions and loads the labels from the ``notebooks`` config.

>>> labels = [{"instance": "torch_1_reproduced", "crash": True, "library": "torch",
...            "library_label": "torch", "root_cause": "API misuse"},
...           {"instance": "torch_1_fixed", "crash": False, "library": "torch",
...            "library_label": "torch", "root_cause": "API misuse"}]
>>> report = score(labels, {"torch_1_reproduced": ["TRUE", "FALSE", "TRUE"]})
>>> report.overall.tp, report.missing
(1, ['torch_1_fixed'])
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from junobench import vocab
from junobench.detection.layouts import read_predictions
from junobench.detection.metrics import Confusion, confusion, scores
from junobench.detection.names import BREAKDOWNS
from junobench.detection.predictions import Predictions, parse_run
from junobench.detection.uncertainty import (
    CONFIDENCE,
    DEFAULT_RESAMPLES,
    DEFAULT_SEED,
    METRICS,
    Interval,
    Scored,
    bootstrap,
    check_resamples,
    too_few_cases,
)
from junobench.detection.votes import DEFAULT_VOTE, check_vote, vote
from junobench.errors import JunoBenchError
from junobench.safety.text import shortened

#: Fields of a ``notebooks`` record that scoring needs.
LABEL_FIELDS: tuple[str, ...] = ("instance", "case_id", "version", "crash", "library",
                                 "library_label", "root_cause")
_EXCERPT = 80
#: Marks a group whose interval comes from too few cases to mean anything.
SMALL = "†"
SMALL_NOTE = ("† fewer than 3 cases: the case bootstrap can only repeat them, so the "
              "interval says little")


@dataclass(frozen=True, slots=True)
class UnparsableRun:
    """A run that could not be read (``run`` counts from 1)."""

    instance: str
    run: int
    output: str
    problem: str


@dataclass(frozen=True, slots=True)
class Decision:
    """One scored decision on one notebook (several per notebook with ``all-runs``)."""

    instance: str
    truth: bool
    decision: bool
    labels: Mapping[str, Any]


@dataclass
class Report:
    """What :func:`score` found; :meth:`to_dict` is the JSON report."""

    vote: str
    decisions: list[Decision]
    notebooks: int
    missing: list[str] = field(default_factory=list)
    undecided: list[str] = field(default_factory=list)
    unparsable: list[UnparsableRun] = field(default_factory=list)
    runs: int = 0
    predictions: str | None = None
    layout: str | None = None
    source: str | None = None
    #: Instances scored with the runs of the fallback predictions.
    filled: list[str] = field(default_factory=list)
    fallback: str | None = None
    #: Case bootstraps behind the intervals, and the generator's seed.
    resamples: int = DEFAULT_RESAMPLES
    seed: int = DEFAULT_SEED

    @property
    def overall(self) -> Confusion:
        return confusion_of(self.decisions)

    @property
    def evaluated(self) -> list[str]:
        """Instances with at least one decision, in label order."""
        return self.evaluated_in(self.decisions)

    @staticmethod
    def evaluated_in(decisions: Iterable[Decision]) -> list[str]:
        """Instances with at least one of ``decisions``."""
        return list(dict.fromkeys(d.instance for d in decisions))

    @property
    def missing_cases(self) -> list[str]:
        """Cases with a notebook without predictions."""
        return list(dict.fromkeys(vocab.split_instance(i)[0] for i in self.missing))

    def groups(self, by: str) -> dict[str, list[Decision]]:
        """Decisions per group of a label (see :data:`BREAKDOWNS`), in vocabulary order."""
        if by not in BREAKDOWNS:
            raise JunoBenchError(f"unknown breakdown {by!r}",
                                 hint=f"use one of {', '.join(BREAKDOWNS)}")
        name = BREAKDOWNS[by][0]
        found: dict[str, list[Decision]] = {}
        for decision in self.decisions:
            found.setdefault(str(decision.labels.get(name) or "(none)"), []).append(decision)
        order = _ORDER[by]
        return dict(sorted(found.items(), key=lambda kv: (order.get(kv[0], len(order)), kv[0])))

    def breakdown(self, by: str) -> dict[str, Confusion]:
        """Confusion matrices per group of a label, in vocabulary order."""
        return {group: confusion_of(decisions) for group, decisions in self.groups(by).items()}

    def intervals(self, decisions: Sequence[Decision] | None = None
                  ) -> dict[str, Interval | None]:
        """95% case-bootstrap intervals of the scores of ``decisions`` (default: all)."""
        chosen = self.decisions if decisions is None else decisions
        return bootstrap(scored(chosen), resamples=self.resamples, seed=self.seed)

    def breakdown_rows(self, by: str, *, intervals: bool = False) -> list[dict[str, Any]]:
        """One row per group: counts, scores, ``reproduced``/``fixed`` as ``correct/total``
        and, with ``intervals``, each score's 95% interval."""
        title = BREAKDOWNS[by][1]
        rows = []
        for group, decisions in self.groups(by).items():
            row = {title: group, **score_row(confusion_of(decisions))}
            if intervals:
                row["intervals"] = listed(self.intervals(decisions))
                cases = count_cases(decisions)
                row["cases"] = cases
                row["too_few_cases"] = too_few_cases(cases)
            rows.append(row)
        return rows

    def to_dict(self) -> dict[str, Any]:
        overall = scores(self.overall)
        return {
            **{k: overall[k] for k in ("precision", "recall", "f1", "accuracy",
                                       "tp", "fp", "tn", "fn", "n")},
            "intervals": listed(self.intervals()),
            "bootstrap": bootstrap_settings(self.resamples, self.seed),
            "notebooks": len(self.evaluated),
            "reproduced": {"correct": overall["reproduced_correct"],
                           "total": overall["reproduced_total"]},
            "fixed": {"correct": overall["fixed_correct"], "total": overall["fixed_total"]},
            "missing": self.missing,
            "missing_cases": self.missing_cases,
            "filled": self.filled,
            "undecided": self.undecided,
            "unparsable": {
                "count": len(self.unparsable),
                "runs": self.runs,
                "items": [{"instance": u.instance, "run": u.run, "output": u.output,
                           "problem": u.problem} for u in self.unparsable],
            },
            "vote": self.vote,
            "predictions": self.predictions,
            "layout": self.layout,
            "source": self.source,
            "fallback": self.fallback,
            "labelled_notebooks": self.notebooks,
            "by_library": self.breakdown_rows("library", intervals=True),
            "by_root_cause": self.breakdown_rows("root-cause", intervals=True),
        }

    def restricted(self, instances: Collection[str]) -> Report:
        """The same report scored on ``instances`` only (for side-by-side comparisons)."""
        keep = set(instances)
        return replace(self, decisions=[d for d in self.decisions if d.instance in keep])


def bootstrap_settings(resamples: int, seed: int) -> dict[str, Any]:
    """How intervals were drawn, as the JSON outputs state it."""
    return {"unit": "case", "resamples": resamples, "seed": seed, "confidence": CONFIDENCE,
            "method": "percentile"}


def count_cases(decisions: Iterable[Decision]) -> int:
    """Distinct cases among ``decisions`` (the bootstrap's unit)."""
    return len({vocab.split_instance(d.instance)[0] for d in decisions})


def scored(decisions: Iterable[Decision]) -> list[Scored]:
    """``(case, truth, decision)`` of each decision, for :mod:`.uncertainty`."""
    return [(vocab.split_instance(d.instance)[0], d.truth, d.decision) for d in decisions]


def listed(intervals: Mapping[str, Interval | None]) -> dict[str, list[float] | None]:
    """Intervals as the JSON outputs give them: lists, None where undefined."""
    return {name: None if bounds is None else list(bounds) for name, bounds in intervals.items()}


_ORDER: dict[str, dict[str, int]] = {
    "library": {vocab.library_label(lib): i for i, lib in enumerate(vocab.LIBRARIES)},
    "root-cause": {cause: i for i, cause in enumerate(vocab.ROOT_CAUSES)},
    "crash-type": {kind: i for i, kind in enumerate(vocab.CRASH_TYPES)},
    "stage": {stage: i for i, stage in enumerate(vocab.PIPELINE_STAGES)},
}


def confusion_of(decisions: Iterable[Decision]) -> Confusion:
    """The confusion matrix of ``decisions``."""
    return confusion((d.truth, d.decision) for d in decisions)


def score_row(matrix: Confusion) -> dict[str, Any]:
    s = scores(matrix)
    return {
        "n": s["n"],
        "reproduced": f"{s['reproduced_correct']}/{s['reproduced_total']}",
        "fixed": f"{s['fixed_correct']}/{s['fixed_total']}",
        **{k: s[k] for k in ("tp", "fp", "tn", "fn", "precision", "recall", "f1", "accuracy")},
    }


# --------------------------------------------------------------------------- scoring


def score(
    labels: Sequence[Mapping[str, Any]],
    runs: Mapping[str, Sequence[Any]],
    vote_method: str = DEFAULT_VOTE,
    *,
    known: Collection[str] | None = None,
    origin: Mapping[str, str] | None = None,
) -> Report:
    """Score raw runs per instance against ``labels`` (``notebooks`` records).

    Instances of ``labels`` without runs are excluded and listed as missing; instances
    whose runs are all unparsable are listed as undecided and scored as no crash (the
    papers' rule: crash only when certain), so they stay in ``n``. A run for an
    instance outside ``known`` (default: the labelled ones) is an error naming it.
    Instances in ``known`` but not in ``labels`` (filtered out) are ignored.
    """
    check_vote(vote_method)
    by_instance = {str(row["instance"]): row for row in labels}
    known_ids = set(by_instance) if known is None else set(known) | set(by_instance)
    unknown = sorted(set(runs) - known_ids)
    if unknown:
        first = unknown[0]
        more = f" (and {len(unknown) - 1} more: {', '.join(unknown[1:6])})" if len(unknown) > 1 else ""
        raise JunoBenchError(
            f"predictions name instance {first!r}, which is not in JunoBench{more}",
            file=(origin or {}).get(first), case=first,
            hint="check the instance names against `junobench tasks`; predictions must come "
            "from the same benchmark version as --source")
    report = Report(vote=vote_method, decisions=[], notebooks=len(by_instance))
    for instance, row in by_instance.items():
        if instance not in runs:
            report.missing.append(instance)
            continue
        detections = []
        for number, raw in enumerate(runs[instance], start=1):
            verdict = parse_run(raw)
            report.runs += 1
            if not verdict.valid:
                report.unparsable.append(UnparsableRun(instance, number, _excerpt(raw),
                                                       verdict.problem or "unparsable"))
            detections.append(verdict.detection)
        decisions = vote(detections, vote_method)
        if not decisions and detections:
            # every run unparsable (NaN, an error marker, free text): still a notebook the
            # detector was asked about, scored by the "only if certain" rule as no crash
            report.undecided.append(instance)
            decisions = [False]
        truth = bool(row["crash"])
        report.decisions += [Decision(instance, truth, d, row) for d in decisions]
    return report


def _excerpt(raw: Any) -> str:
    text = raw if isinstance(raw, str) else repr(raw)
    text = " ".join(text.split())
    return shortened(text, _EXCERPT)


# --------------------------------------------------------------------------- I/O


def load_labels(source: str | Path, *, revision: str | None = None,
                **filters: str | Iterable[str] | None) -> tuple[list[dict[str, Any]], set[str]]:
    """``notebooks`` labels of ``source`` matching ``filters``, and every instance id."""
    from junobench.data.filters import apply_filters, normalise_filters
    from junobench.loader import load

    criteria = normalise_filters(filters)
    dataset = load(source, "notebooks", revision=revision)
    known = set(dataset["instance"])
    selected = apply_filters(dataset, criteria)
    columns = [c for c in (*LABEL_FIELDS, "pipeline_stage", "crash_type", "source")
               if c in selected.column_names]
    return selected.select_columns(columns).to_list(), known


def truth_labels(rows: Sequence[Mapping[str, Any]], **filters: str | Iterable[str] | None
                 ) -> tuple[list[dict[str, Any]], set[str]]:
    """Labels from ground-truth rows (:func:`~junobench.detection.tasks.read_truth`) matching
    ``filters``, and every instance id in them."""
    from junobench.data.filters import matches, normalise_filters

    criteria = normalise_filters(filters)
    known = {str(row["instance"]) for row in rows}
    return [dict(row) for row in rows if matches(row, criteria)], known


def resolve_ids(preds: Predictions, truth: Sequence[Mapping[str, Any]] | None
                ) -> tuple[dict[str, list[Any]], dict[str, str]]:
    """Runs and origins keyed by instance: blind task ids mapped through the ground truth."""
    blind = preds.blind
    if not blind:
        return dict(preds.runs), dict(preds.origin)
    if not truth:
        raise JunoBenchError(
            f"predictions name blind task ids ({blind[0]}, …): they need the ground-truth file",
            file=preds.origin.get(blind[0], str(preds.path)),
            hint="pass --truth TASKS.truth.jsonl, written beside the tasks file")
    to_instance = {str(row["id"]): str(row["instance"]) for row in truth}
    runs: dict[str, list[Any]] = {}
    origin: dict[str, str] = {}
    for key, key_runs in preds.runs.items():
        instance = to_instance.get(key, key)
        if key in blind and key not in to_instance:
            raise JunoBenchError(f"task id {key!r} is not in the ground-truth file",
                                 file=preds.origin.get(key), case=key,
                                 hint="pass the truth file written with these tasks")
        if instance in runs:
            raise JunoBenchError(f"{key!r} and another line both answer {instance}",
                                 file=preds.origin.get(key), case=instance,
                                 hint="keep one line per notebook")
        runs[instance] = key_runs
        origin[instance] = preds.origin.get(key, str(preds.path))
    return runs, origin


@dataclass
class Labels:
    """The labelled notebooks a run of ``evaluate`` scores against, and where they came from."""

    rows: list[dict[str, Any]]
    #: Every instance of the benchmark (also those filtered out).
    known: set[str]
    source: str
    #: Ground-truth rows, when given: they map blind task ids to instances.
    truth: list[dict[str, Any]] | None = None


def labels_for(source: str | Path | None = None, *,
               truth: str | Path | Sequence[str | Path] | None = None,
               revision: str | None = None, **filters: str | Iterable[str] | None) -> Labels:
    """Labels from ``source`` (a snapshot, ``sample`` or a Hub dataset), else from the
    ground-truth file(s) ``truth``, else from the Hub dataset; ``filters`` select notebooks."""
    from junobench.data.snapshot import DEFAULT_SOURCE
    from junobench.detection.tasks import read_truth

    truth_rows = read_truth(truth) if truth else None
    if source is None and truth_rows is not None:
        rows, known = truth_labels(truth_rows, **filters)
        named = ", ".join(str(t) for t in ([truth] if isinstance(truth, (str, Path)) else truth or []))
        return Labels(rows, known, named, truth_rows)
    chosen = source if source is not None else DEFAULT_SOURCE
    rows, known = load_labels(chosen, revision=revision, **filters)
    return Labels(rows, known, str(chosen), truth_rows)


def evaluate(
    predictions: str | Path | Predictions,
    source: str | Path | None = None,
    *,
    vote: str = DEFAULT_VOTE,
    revision: str | None = None,
    fallback: str | Path | Predictions | None = None,
    layout: str | None = None,
    truth: str | Path | Sequence[str | Path] | None = None,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
    **filters: str | Iterable[str] | None,
) -> Report:
    """Score predictions (a path in any layout, or read :class:`Predictions`).

    Labels come from ``source`` (a snapshot, ``sample`` or a Hub dataset), else from the
    ground-truth file(s) ``truth``, else from the Hub dataset. ``truth`` also maps blind
    task ids back to notebooks. ``layout`` overrides the recognised layout. Intervals come
    from ``resamples`` case bootstraps seeded with ``seed``.

    ``fallback``: predictions whose runs stand in for notebooks that ``predictions`` lacks
    (the runtime-augmented paper scored notebooks without runtime information with the
    code-only answers); the report lists them as ``filled``.

    >>> from junobench.detection.detect import detect_static
    >>> from junobench.detection.tasks import tasks
    >>> _ = detect_static(tasks("sample")[0], "preds.jsonl")   # the static baseline's answers
    >>> report = evaluate("preds.jsonl", "sample")
    >>> round(report.to_dict()["f1"], 3), report.to_dict()["intervals"]["f1"][0] <= 1 / 3
    (0.333, True)
    """
    check_resamples(resamples)
    labels = labels_for(source, truth=truth, revision=revision, **filters)
    return score_predictions(predictions, labels, vote=vote, fallback=fallback, layout=layout,
                             resamples=resamples, seed=seed)


def score_predictions(
    predictions: str | Path | Predictions,
    labels: Labels,
    *,
    vote: str = DEFAULT_VOTE,
    fallback: str | Path | Predictions | None = None,
    layout: str | None = None,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
) -> Report:
    """:func:`evaluate` with the labels already loaded (:func:`labels_for`)."""
    check_resamples(resamples)
    preds = read_predictions(predictions, layout)
    runs, origin = resolve_ids(preds, labels.truth)
    filled: list[str] = []
    back = read_predictions(fallback) if fallback is not None else None
    if back is not None:
        back_runs, back_origin = resolve_ids(back, labels.truth)
        for instance, instance_runs in back_runs.items():
            if instance not in runs:
                runs[instance] = instance_runs
                origin[instance] = back_origin.get(instance, str(back.path))
                filled.append(instance)
    report = score(labels.rows, runs, vote, known=labels.known, origin=origin)
    labelled = {str(row["instance"]) for row in labels.rows}
    report.filled = [i for i in report.evaluated if i in set(filled) & labelled]
    report.predictions = str(preds.path)
    report.layout = preds.layout
    report.source = labels.source
    report.fallback = str(back.path) if back is not None else None
    report.resamples, report.seed = resamples, seed
    return report


def plot(report: Report, path: str | Path, by: str = "library") -> Path:
    """Bar chart per group (see :func:`figure`), written atomically to ``path``.
    Needs matplotlib (``pip install 'junobench[plot]'``)."""
    from junobench.plots import save_figure

    return save_figure(figure(report, by), path)


def figure(report: Report, by: str = "library", *, ax: Any = None) -> Any:
    """Bars per group: share of reproduced and of fixed notebooks judged correctly, and
    accuracy with its 95% case-bootstrap interval. Each group is labelled with its number
    of notebooks; the legend sits outside the axes, clear of the bars. A
    :class:`matplotlib.figure.Figure` (no pyplot state), or drawn into ``ax``."""
    from junobench.plots import grouped_bar_chart

    groups = report.groups(by)
    matrices = {name: confusion_of(decisions) for name, decisions in groups.items()}
    names = [f"{name}\n(n={len(report.evaluated_in(decisions))})" for name, decisions in groups.items()]
    accuracy = [m.accuracy or 0.0 for m in matrices.values()]
    bounds = [report.intervals(decisions)["accuracy"] for decisions in groups.values()]
    below = [max(0.0, a - (b or (a, a))[0]) for a, b in zip(accuracy, bounds, strict=True)]
    above = [max(0.0, (b or (a, a))[1] - a) for a, b in zip(accuracy, bounds, strict=True)]
    series = {
        "reproduced (crash detected)": [_share(m.tp, m.positives) for m in matrices.values()],
        "fixed (no crash)": [_share(m.tn, m.negatives) for m in matrices.values()],
        "accuracy (95% CI)": accuracy,
    }
    title = (f"Crash detection by {BREAKDOWNS[by][1]} (vote: {report.vote}, "
             f"accuracy {report.overall.accuracy or 0:.3f}, n={len(report.evaluated)} notebooks)")
    return grouped_bar_chart(series, names, errors={"accuracy (95% CI)": (below, above)},
                             title=title, ylabel="share correct", ylim=(0, 1.05), ax=ax)


def _share(part: int, whole: int) -> float:
    return part / whole if whole else 0.0


# --------------------------------------------------------------------------- text report


def render_report(report: Report, fmt: str = "table", by: str = "library") -> str:
    """The report in ``fmt``: ``table`` (:func:`format_report`), ``json`` (full precision),
    ``csv`` (a row per group and ``all``, intervals as ``<metric>_low``/``_high``),
    ``markdown`` or ``latex`` (:func:`summary_rows`, percentages in LaTeX)."""
    import json

    from junobench.render import render

    if fmt == "json":
        return json.dumps(report.to_dict(), indent=2, ensure_ascii=False) + "\n"
    if fmt == "csv":
        rows = report.breakdown_rows(by, intervals=True)
        rows.append({BREAKDOWNS[by][1]: "all", **score_row(report.overall),
                     "intervals": listed(report.intervals())})
        return render([flat_intervals(row) for row in rows], "csv")
    if fmt in ("markdown", "latex"):
        rows = summary_rows(report, by, percent=fmt == "latex")
        return render(rows, fmt) + small_note(rows, fmt)
    if fmt == "table":
        return format_report(report, by)
    raise JunoBenchError(f"unknown format {fmt!r}",
                         hint="use table, json, csv, markdown or latex")


def flat_intervals(row: Mapping[str, Any]) -> dict[str, Any]:
    """A row with its intervals as ``<metric>_low`` / ``<metric>_high`` columns."""
    out = {k: v for k, v in row.items() if k != "intervals"}
    for metric, bounds in (row.get("intervals") or {}).items():
        out[f"{metric}_low"], out[f"{metric}_high"] = bounds if bounds else (None, None)
    return out


def format_report(report: Report, by: str = "library") -> str:
    """The report as text: provenance, exclusions, unparsable runs, scores, a breakdown."""
    from junobench.render import table

    overall = report.overall
    s = scores(overall)
    lines = []
    if report.predictions:
        lines.append(f"predictions  {report.predictions} ({report.layout} layout)")
    if report.source:
        lines.append(f"labels       {report.source} ({report.notebooks} notebooks)")
    lines.append(f"vote         {report.vote}")
    evaluated = len(report.evaluated)
    extra = f" ({overall.n} scored runs)" if report.vote == "all-runs" else ""
    lines.append(f"evaluated    {evaluated} notebooks{extra}")
    if report.filled:
        lines.append(f"filled       {len(report.filled)} notebooks scored with the runs of "
                     f"{report.fallback}: {_some(report.filled)}")
    if report.missing:
        lines.append(f"missing      {len(report.missing)} notebooks without predictions, excluded: "
                     f"{_describe_missing(report.missing)}")
    if report.undecided:
        lines.append(f"undecided    {len(report.undecided)} notebooks with no parsable run, "
                     f"scored as no crash: {_some(report.undecided)}")
    lines.append(f"unparsable   {len(report.unparsable)} of {report.runs} runs")
    for item in report.unparsable[:20]:
        lines.append(f"             {item.instance} run {item.run}: {item.output!r} ({item.problem})")
    if len(report.unparsable) > 20:
        lines.append(f"             … and {len(report.unparsable) - 20} more (see --format json)")
    lines.append("")
    lines.append(f"reproduced   {s['reproduced_correct']}/{s['reproduced_total']} correct "
                 "(crash detected)")
    lines.append(f"fixed        {s['fixed_correct']}/{s['fixed_total']} correct (no crash)")
    lines.append("  ".join(f"{k} {_fmt(s[k])}" for k in ("precision", "recall", "f1", "accuracy"))
                 + f"  (tp {s['tp']}, fp {s['fp']}, tn {s['tn']}, fn {s['fn']}; "
                 "crash = positive)")
    bounds = report.intervals()
    lines.append("95% CI       " + "  ".join(f"{k} {format_interval(bounds[k])}" for k in METRICS)
                 + f"  ({report.resamples} case bootstraps, seed {report.seed})")
    rows = []
    small = False
    for row in report.breakdown_rows(by, intervals=True):
        shown = {k: "n/a" if v is None else v for k, v in row.items()
                 if k not in ("intervals", "cases", "too_few_cases")}
        shown["f1 95% CI"] = format_interval(row["intervals"]["f1"]) + (
            SMALL if row["too_few_cases"] else "")
        small = small or row["too_few_cases"]
        rows.append(shown)
    if rows:
        lines += ["", f"by {BREAKDOWNS[by][1]}"]
        lines.append(table(rows, list(rows[0])).rstrip("\n"))
        if small:
            lines.append(SMALL_NOTE)
    return "\n".join(lines) + "\n"


def _fmt(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"


TITLES: dict[str, str] = {"precision": "Precision", "recall": "Recall", "f1": "F1",
                          "accuracy": "Accuracy"}


def summary_rows(report: Report, by: str = "library", *, percent: bool = False
                 ) -> list[dict[str, Any]]:
    """One row per group and one for all notebooks: ``n`` and each score with its 95%
    interval, as text (percentages with one decimal when ``percent``, as papers print)."""
    title = BREAKDOWNS[by][1]
    parts: list[tuple[str, Sequence[Decision]]] = [*report.groups(by).items(),
                                                    ("all", report.decisions)]
    rows = []
    for name, decisions in parts:
        values = scores(confusion_of(decisions))
        bounds = report.intervals(decisions)
        mark = SMALL if too_few_cases(count_cases(decisions)) else ""
        rows.append({title: name, "n": len(report.evaluated_in(decisions)),
                     **score_cells(values, bounds, percent=percent, mark=mark)})
    return rows


def score_cells(values: Mapping[str, float | None], bounds: Mapping[str, Interval | None], *,
                percent: bool = False, mark: str = "") -> dict[str, str]:
    """Each score of :data:`METRICS` with its 95% interval as text, under its title
    (``F1``, or ``F1 (%)`` with ``percent``); ``mark`` follows each defined interval."""
    return {TITLES[metric] + (" (%)" if percent else ""):
            with_interval(values[metric], bounds[metric], percent=percent)
            + (mark if bounds[metric] is not None else "") for metric in METRICS}


def small_note(rows: Sequence[Mapping[str, Any]], fmt: str) -> str:
    """The note under a table with flagged intervals (a comment in LaTeX), or nothing."""
    if not any(SMALL in str(v) for row in rows for v in row.values()):
        return ""
    return ("% " if fmt == "latex" else "\n") + SMALL_NOTE + "\n"


def with_interval(value: float | None, bounds: Sequence[float] | None, *,
                  percent: bool = False) -> str:
    """``0.679 [0.610, 0.742]``, or ``67.9 [61.0, 74.2]`` with ``percent``."""
    if value is None:
        return "n/a"
    scale, digits = (100.0, 1) if percent else (1.0, 3)
    return f"{value * scale:.{digits}f} {format_interval(bounds, scale, digits)}"


def format_interval(bounds: Sequence[float] | None, scale: float = 1.0, digits: int = 3) -> str:
    """``[low, high]`` with ``digits`` decimals (``scale`` 100 for percentages), or n/a."""
    if bounds is None:
        return "n/a"
    low, high = bounds
    return f"[{low * scale:.{digits}f}, {high * scale:.{digits}f}]"


def _describe_missing(missing: Sequence[str]) -> str:
    versions: dict[str, list[str]] = {}
    for instance in missing:
        case_id, version = vocab.split_instance(instance)
        versions.setdefault(case_id, []).append(version)
    both = [c for c, v in versions.items() if len(v) == 2]
    single = [vocab.instance_id(c, v[0]) for c, v in versions.items() if len(v) == 1]
    parts = []
    if both:
        parts.append(f"{_some(sorted(both))} (reproduced and fixed)")
    if single:
        parts.append(_some(sorted(single)))
    return "; ".join(parts)


def _some(items: Sequence[str], limit: int = 20) -> str:
    shown = ", ".join(items[:limit])
    return shown + (f", … ({len(items) - limit} more, see --format json)"
                    if len(items) > limit else "")
