"""Verbs ``tasks``, ``detect`` and ``evaluate``: crash-detection tasks, detectors, scores."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from junobench.cli.common import (
    add_filters,
    add_format,
    add_model_options,
    add_source,
    dash_values,
    filters_from,
    model_options,
    status,
)


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from junobench.detection.names import (
        BREAKDOWNS,
        DEFAULT_RESAMPLES,
        DEFAULT_RUNS,
        DEFAULT_SEED,
        FORMATS,
        LAYOUTS,
        describe,
    )
    from junobench.detection.votes import DEFAULT_VOTE, VOTES

    parser = subparsers.add_parser(
        "tasks", help="write crash-detection tasks (the answers go to a separate file)",
        description="Write one crash-detection task per notebook: the executed cells in "
        "execution order and the target cell, comments stripped as in the papers. Tasks are "
        "blind: ids are keyed hashes, lines in id order, no labels; the ground truth (which "
        "maps ids back to notebooks, with the labels) goes to a separate file.")
    add_source(parser)
    add_filters(parser)
    parser.add_argument("--out", required=True, metavar="TASKS.jsonl", help="tasks file to write")
    parser.add_argument("--truth-out", metavar="FILE",
                        help="ground-truth file (default: TASKS.truth.jsonl beside --out)")
    parser.add_argument("--id-key", metavar="TEXT",
                        help="passphrase the blind ids are derived from, for task files whose "
                        "ids must match across runs (default: a fresh random key each time; "
                        "keep it secret from the detector)")
    _add_task_options(parser)
    parser.set_defaults(handler=_tasks)

    parser = subparsers.add_parser(
        "detect", help="run a crash detector (an LLM endpoint or the static baseline)",
        description="Ask a model behind an OpenAI-compatible chat-completions endpoint "
        "(vLLM, Ollama, llama.cpp server, hosted APIs) whether each target cell crashes, "
        "RUNS times per notebook, through the openai SDK (the detect extra), or run the static "
        "baseline. Resumes: tasks already in --out are skipped.")
    which = parser.add_mutually_exclusive_group(required=True)
    which.add_argument("--baseline", choices=("static", "pylint", "pyright"),
                       help="a detector without a model: the built-in static baseline, or a "
                       "static analyser run as CRANE-LLM ran it (the sa extra; a crash when "
                       "it reports an error CRANE-LLM kept)")
    parser.add_argument("--out", required=True, metavar="PRED.jsonl",
                        help="predictions file (appended to; existing instances are skipped)")
    parser.add_argument("--tasks", metavar="TASKS.jsonl",
                        help="tasks written by `junobench tasks` (default: build them from "
                        "--source and the filters)")
    parser.add_argument("--runs", type=int, default=DEFAULT_RUNS,
                        help=f"answers per notebook (default: {DEFAULT_RUNS})")
    add_source(parser)
    add_filters(parser)
    _add_task_options(parser, outputs=False)
    add_model_options(parser, endpoint=which)
    parser.set_defaults(handler=_detect)

    parser = subparsers.add_parser(
        "evaluate", help="score crash-detection predictions (precision, recall, F1, accuracy)",
        description="Score predictions against the labels, crash = positive class, each score "
        "with a 95%% case-bootstrap interval. With several PRED, score them side by side on "
        "the notebooks they all decided and test each pair (exact McNemar, paired bootstrap "
        "of the F1 difference). PRED is a file or folder in any published layout, recognised "
        "automatically: " + "; ".join(f"{name}: {describe(name)}" for name in LAYOUTS) + ".")
    parser.add_argument("predictions", metavar="PRED", nargs="*",
                        help="predictions file or folder (several to compare them)")
    parser.add_argument("--judgments", metavar="FILE",
                        help="score judged diagnoses end to end instead of predictions (a true "
                        "positive needs the crash detected and diagnosed correctly): every "
                        "setting of FILE, CRANE-LLM's results_summary.xlsx (sheet "
                        "Final_evaluation) or a judgments .jsonl/.csv; with the breakdown of "
                        "partially correct and reasoning-wrong diagnoses")
    dash_values(parser.add_argument("--setting", action="append", metavar="NAME",
                        help="with --judgments: score only this setting (repeatable, in order)"))
    parser.add_argument("--sheet", metavar="NAME",
                        help="with --judgments FILE.xlsx: the sheet to read (default: "
                        "Final_evaluation, else the first; CRANE-LLM's Detection_only sheet "
                        "gives detection-only scores)")
    parser.add_argument("--detection-only", metavar="FILE",
                        help="with --judgments: the same settings judged for detection alone "
                        "(CRANE-LLM's results_detection_only.xlsx); where FILE and it disagree on "
                        "whether a crash was detected is reported (as it is, unasked, between "
                        "the two sheets of CRANE-LLM's results_summary.xlsx)")
    dash_values(parser.add_argument("--name", action="append", metavar="NAME",
                                    help="name of each PRED in a comparison, in order (default: "
                                    "from the paths; a name may start with a dash: --name -RT)"))
    add_source(parser, default=None,
               help="snapshot directory, 'sample' (bundled), or Hub dataset repo id the labels "
               "come from (default: the ground truth of --truth, else PELAB-LiU/JunoBench); with "
               "--judgments, the notebooks they may name (default: the 222 of JunoBench as "
               "published)")
    parser.add_argument("--truth", action="append", metavar="TASKS.truth.jsonl",
                        help="ground-truth file written by `junobench tasks`: maps blind task "
                        "ids to notebooks and gives the labels when --source is not given "
                        "(repeatable)")
    parser.add_argument("--layout", choices=LAYOUTS,
                        help="read PRED in this layout instead of recognising it")
    add_filters(parser)
    parser.add_argument("--vote", choices=VOTES, default=DEFAULT_VOTE,
                        help="how runs become a decision: majority of the parsable runs (a tie "
                        "is no crash), the first parsable run, or every run scored (default: "
                        "majority)")
    parser.add_argument("--fallback", metavar="PRED2",
                        help="predictions to score notebooks that PRED lacks (as the "
                        "runtime-augmented paper did with its code-only answers; one PRED only)")
    parser.add_argument("--by", choices=tuple(BREAKDOWNS), default="library",
                        help="breakdown shown in table, csv, markdown and latex output (json "
                        "has the library and root-cause ones)")
    parser.add_argument("--resamples", type=int, default=DEFAULT_RESAMPLES,
                        help=f"case bootstraps behind each interval (default: {DEFAULT_RESAMPLES})")
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED,
                        help=f"seed of the bootstrap (default: {DEFAULT_SEED}; the same seed "
                        "gives the same intervals)")
    add_format(parser, choices=FORMATS)
    parser.add_argument("--plot", metavar="FILE.png",
                        help="also draw per-group bars with group sizes and accuracy intervals "
                        "(needs matplotlib; one PRED only)")
    parser.set_defaults(handler=_evaluate)


def _add_task_options(parser: argparse.ArgumentParser, *, outputs: bool = True) -> None:
    parser.add_argument("--keep-comments", action="store_true",
                        help="keep code comments (the papers stripped them)")
    parser.add_argument("--runtime-info", metavar="FILE.jsonl",
                        help="add runtime information written by `junobench runtime-info` "
                        "(the prompt shows it between the executed cells and the target cell)")
    parser.add_argument("--runtime-exclude", action="append", default=[], choices=("S", "R", "V"),
                        metavar="S|R|V", help="leave a category of runtime information out "
                        "(repeatable; for ablations from one extraction)")
    parser.add_argument("--crane-inputs", metavar="DIR",
                        help="make each task CRANE-LLM's published input for the notebook, as it "
                        "is (a folder such as llms/llms_inputs/executed_code_runinfo, with its "
                        "library subfolders): the prompt is then CRANE-LLM's, byte for byte")
    if outputs:
        parser.add_argument("--keep-outputs", action="store_true",
                            help="add the executed cells' text outputs (the papers left them "
                            "out; the target cell's outputs are never included)")


def _tasks(args: argparse.Namespace) -> int:
    from junobench.data.snapshot import refuse_writing_inside
    from junobench.detection.ids import key_from_text, new_key
    from junobench.detection.tasks import write_tasks

    refuse_writing_inside(args.out, args.source, what="the tasks file")
    if args.truth_out:
        refuse_writing_inside(args.truth_out, args.source, what="the ground-truth file")
    key = key_from_text(args.id_key) if args.id_key else new_key()
    tasks_, truths = _built_tasks(args, keep_outputs=args.keep_outputs, key=key)
    _report_runtime_info(args, tasks_)
    out, truth = write_tasks(tasks_, truths, args.out, args.truth_out)
    status(f"wrote {len(tasks_)} tasks to {out}")
    status(f"ground truth in {truth} (keep it away from the detector)")
    return 0


def _detect(args: argparse.Namespace) -> int:
    from junobench.detection.augment import with_runtime_info
    from junobench.detection.detect import detect, detect_static
    from junobench.detection.tasks import read_tasks
    from junobench.errors import JunoBenchError

    options = model_options(args)
    if args.tasks:
        if args.crane_inputs:
            raise JunoBenchError("--crane-inputs builds tasks; --tasks reads tasks already built",
                                 hint="use one of them (junobench tasks --crane-inputs DIR "
                                 "writes such a tasks file)")
        if filters_from(args):
            raise JunoBenchError("filters apply when tasks are built from --source, not to --tasks",
                                 hint="filter with `junobench tasks`, or drop --tasks")
        items = read_tasks(args.tasks)
        texts, style = _runtime(args)
        if texts is not None:
            items = with_runtime_info(items, texts, file=args.tasks, style=style)
    else:
        items, _ = _built_tasks(args)
    _report_runtime_info(args, items)
    if args.baseline in ("pylint", "pyright"):
        return _detect_analyser(args, items)
    if args.baseline:
        summary = detect_static(items, args.out)
        status(f"wrote {len(summary.written)} predictions of the {args.baseline} baseline "
               f"to {summary.out}")
        return 0

    def log(message: str) -> None:
        from tqdm.auto import tqdm

        tqdm.write(message, file=sys.stderr)

    summary = detect(items, args.out, runs=args.runs, log=log, **options)
    status(f"wrote {len(summary.written)} notebooks x {args.runs} runs to {summary.out}"
           + (f"; {len(summary.resumed)} were already there" if summary.resumed else ""))
    if summary.rejected:
        status(f"skipped {len(summary.rejected)} the server rejected (e.g. too long for the "
               f"model): {', '.join(sorted(summary.rejected))}")
    if summary.failed:
        print(f"failed {len(summary.failed)} after {args.retries} retries: "
              f"{', '.join(sorted(summary.failed))}", file=sys.stderr)
        print("run the same command again to retry them", file=sys.stderr)
        return 1
    return 0


def _detect_analyser(args: argparse.Namespace, items: list[dict[str, Any]]) -> int:
    from junobench.detection.analysers import detect_analyser

    annotations = None
    if args.runtime_info:
        from junobench.runtime import runtime_annotations

        annotations = runtime_annotations(args.runtime_info)
    summary = detect_analyser(items, args.out, args.baseline, timeout=args.timeout,
                              annotations=annotations,
                              log=None if args.no_progress else
                              lambda line: print(line, file=sys.stderr))
    status(f"wrote {len(summary.written)} predictions of {args.baseline} to {summary.out}"
           + (f"; {len(summary.resumed)} were already there" if summary.resumed else ""))
    return 0


def _built_tasks(args: argparse.Namespace, **options: Any
                 ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Tasks and ground truth built from --source, the filters and the task options."""
    from junobench.detection.tasks import tasks

    filters: dict[str, Any] = filters_from(args)  # label fields only: no keyword of tasks()
    texts, style = _runtime(args)
    return tasks(args.source, revision=args.revision, keep_comments=args.keep_comments,
                 runtime_info=texts, crane_inputs=args.crane_inputs, style=style, **options,
                 **filters)


def _runtime(args: argparse.Namespace) -> tuple[dict[str, str] | None, str | None]:
    """The runtime-information texts for the tasks, and their style: ``crane`` when the
    runtime information is CRANE-LLM's (its tasks are CRANE-LLM's documents)."""
    from junobench.detection.augment import runtime_texts_for, task_style

    texts = runtime_texts_for(args.runtime_info, args.runtime_exclude)
    return texts, task_style(args.runtime_info)


def _report_runtime_info(args: argparse.Namespace, items: list[dict[str, Any]]) -> None:
    if not args.runtime_info:
        return
    from junobench.detection.augment import lacking_runtime_info

    missing = lacking_runtime_info(items)
    if missing:
        shown = ", ".join(missing[:10]) + (f" and {len(missing) - 10} more" if len(missing) > 10 else "")
        print(f"warning: {len(missing)} of {len(items)} tasks have no runtime information "
              f"(not in {args.runtime_info}, or its extraction failed): {shown}", file=sys.stderr)


def _evaluate(args: argparse.Namespace) -> int:
    from junobench.detection.evaluate import evaluate, plot, render_report
    from junobench.errors import JunoBenchError

    if args.judgments:
        return _judgments(args)
    if args.setting or args.sheet or args.detection_only:
        raise JunoBenchError("--setting, --sheet and --detection-only apply to --judgments FILE")
    if not args.predictions:
        raise JunoBenchError("junobench evaluate: the following arguments are required: PRED "
                             "(or --judgments FILE)", hint="see `junobench evaluate --help`")
    if len(args.predictions) > 1:
        for option in ("fallback", "plot"):
            if getattr(args, option):
                raise JunoBenchError(f"--{option} takes one PRED, not a comparison")
        return _compare(args)
    if args.name:
        raise JunoBenchError("--name names the sets of a comparison: pass several PRED")
    report = evaluate(args.predictions[0], args.source, vote=args.vote, revision=args.revision,
                      fallback=args.fallback, layout=args.layout, truth=args.truth,
                      resamples=args.resamples, seed=args.seed, **filters_from(args))
    print(render_report(report, args.format, args.by), end="")
    if args.plot:
        path = plot(report, args.plot, args.by)
        status(f"plot written to {path}")
    return 0


def _compare(args: argparse.Namespace) -> int:
    from junobench.detection.compare import compare, format_comparison

    comparison = compare(args.predictions, args.source, names=args.name, vote=args.vote,
                         revision=args.revision, truth=args.truth, layout=args.layout,
                         resamples=args.resamples, seed=args.seed, **filters_from(args))
    print(format_comparison(comparison, args.format), end="")
    return 0


def _judgments(args: argparse.Namespace) -> int:
    from junobench.diagnosis.endtoend import notes, remarks, render_scores, score_judgments
    from junobench.diagnosis.judgments import read_judgments
    from junobench.errors import JunoBenchError

    if args.predictions:
        raise JunoBenchError("--judgments scores judged diagnoses: pass it without PRED")
    for option in ("fallback", "plot", "name", "truth", "layout"):
        if getattr(args, option):
            raise JunoBenchError(f"--{option} does not apply to --judgments")
    if filters_from(args):
        raise JunoBenchError("filters do not apply to --judgments")
    judgments = read_judgments(args.judgments, sheet=args.sheet)
    disagreeing = remarks(judgments, args.detection_only)
    results = score_judgments(judgments, settings=args.setting, source=args.source,
                              revision=args.revision, resamples=args.resamples, seed=args.seed)
    for note in [*notes(results), *disagreeing]:
        print(f"warning: {note}", file=sys.stderr)
    print(render_scores(results, args.format, disagreeing), end="")
    return 0
